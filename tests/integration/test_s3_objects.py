"""Object operations: put/get/head/delete, ranges, conditionals, overrides, copy."""
import datetime
import gzip
import hashlib
import os

import pytest
from botocore.exceptions import ClientError

from s3r_itest import assert_error, client_error, raw_request

UTC = datetime.timezone.utc


def md5_etag(data):
    return '"' + hashlib.md5(data).hexdigest() + '"'


# ----------------------------------------------------------------- put / head / get

def test_put_get_head_roundtrip_with_headers(s3, bucket):
    body = gzip.compress(os.urandom(3000))
    expires = datetime.datetime(2035, 1, 2, 3, 4, 5, tzinfo=UTC)
    put = s3.put_object(Bucket=bucket, Key="docs/file.bin", Body=body,
                        ContentType="application/x-test", CacheControl="max-age=60",
                        ContentDisposition='attachment; filename="f.bin"',
                        ContentEncoding="gzip", ContentLanguage="en-GB", Expires=expires,
                        Metadata={"Color": "blue", "a-b": "x y z"})
    assert put["ETag"] == md5_etag(body)
    assert put["ResponseMetadata"]["HTTPHeaders"].get("x-amz-request-id")
    for resp in (s3.head_object(Bucket=bucket, Key="docs/file.bin"),
                 s3.get_object(Bucket=bucket, Key="docs/file.bin")):
        assert resp["ContentLength"] == len(body)
        assert resp["ETag"] == md5_etag(body)
        assert resp["ContentType"] == "application/x-test"
        assert resp["CacheControl"] == "max-age=60"
        assert resp["ContentDisposition"] == 'attachment; filename="f.bin"'
        assert resp["ContentEncoding"] == "gzip"
        assert resp["ContentLanguage"] == "en-GB"
        assert resp["Expires"] == expires
        assert resp["Metadata"] == {"color": "blue", "a-b": "x y z"}
        assert abs((resp["LastModified"] - datetime.datetime.now(UTC)).total_seconds()) < 120
        assert resp["ResponseMetadata"]["HTTPHeaders"].get("x-amz-request-id")
    got = s3.get_object(Bucket=bucket, Key="docs/file.bin")
    assert got["Body"].read() == body


def test_put_default_content_type_and_empty_object(s3, bucket):
    s3.put_object(Bucket=bucket, Key="empty", Body=b"")
    h = s3.head_object(Bucket=bucket, Key="empty")
    assert h["ContentLength"] == 0
    assert h["ETag"] == md5_etag(b"")
    assert s3.get_object(Bucket=bucket, Key="empty")["Body"].read() == b""


def test_overwrite_replaces_object_and_metadata(s3, bucket):
    s3.put_object(Bucket=bucket, Key="k", Body=b"one", Metadata={"v": "1"}, ContentType="a/b")
    s3.put_object(Bucket=bucket, Key="k", Body=b"second", Metadata={"w": "2"})
    got = s3.get_object(Bucket=bucket, Key="k")
    assert got["Body"].read() == b"second"
    assert got["Metadata"] == {"w": "2"}
    assert got["ContentType"] != "a/b"


def test_large_object_roundtrip(s3, bucket):
    body = os.urandom(9 * 1024 * 1024 + 17)
    s3.put_object(Bucket=bucket, Key="big", Body=body)  # botocore sends Expect: 100-continue
    got = s3.get_object(Bucket=bucket, Key="big")["Body"].read()
    assert hashlib.sha256(got).digest() == hashlib.sha256(body).digest()


def test_metadata_limits(s3, bucket):
    s3.put_object(Bucket=bucket, Key="okmeta", Body=b"x", Metadata={"k": "v" * 1900})
    assert s3.head_object(Bucket=bucket, Key="okmeta")["Metadata"]["k"] == "v" * 1900
    with pytest.raises(ClientError) as ei:
        s3.put_object(Bucket=bucket, Key="bigmeta", Body=b"x", Metadata={"big": "x" * 2100})
    assert_error(ei, "MetadataTooLarge", 400)
    with pytest.raises(ClientError) as ei:
        s3.put_object(Bucket=bucket, Key="bigmeta2", Body=b"x",
                      Metadata={f"m{i}": "y" * 100 for i in range(25)})
    assert_error(ei, "MetadataTooLarge", 400)
    with pytest.raises(ClientError) as ei:
        s3.head_object(Bucket=bucket, Key="bigmeta")
    assert client_error(ei)[1] == 404


@pytest.mark.parametrize("acl", ["private", "public-read", "bucket-owner-full-control"])
def test_put_canned_acl_accepted(s3, bucket, acl):
    s3.put_object(Bucket=bucket, Key=f"acl-{acl}", Body=b"acl", ACL=acl)
    assert s3.get_object(Bucket=bucket, Key=f"acl-{acl}")["Body"].read() == b"acl"


def test_get_missing_key(s3, bucket):
    with pytest.raises(ClientError) as ei:
        s3.get_object(Bucket=bucket, Key="nope")
    assert_error(ei, "NoSuchKey", 404)
    with pytest.raises(ClientError) as ei:
        s3.head_object(Bucket=bucket, Key="nope")
    assert client_error(ei)[1] == 404


def test_special_keys(s3, bucket):
    keys = ["a b/c+d=e&f?g#h", "dots/../../etc/passwd", "..", "x/./y", "tab\tkey",
            "é/日本語/🎉", "trailing/", "%2F%00percent", "semi;colon,comma",
            "xml&<>\"'chars", "/leading-slash", "double//slash", "~user/$dollar@at!bang*star(paren)"]
    for i, k in enumerate(keys):
        s3.put_object(Bucket=bucket, Key=k, Body=f"v{i}".encode())
    for i, k in enumerate(keys):
        assert s3.get_object(Bucket=bucket, Key=k)["Body"].read() == f"v{i}".encode(), k
    listed = [o["Key"] for o in s3.list_objects_v2(Bucket=bucket)["Contents"]]
    assert listed == sorted(keys, key=lambda k: k.encode())
    listed = [o["Key"] for o in s3.list_objects(Bucket=bucket)["Contents"]]
    assert listed == sorted(keys, key=lambda k: k.encode())
    resp = s3.delete_objects(Bucket=bucket, Delete={"Objects": [{"Key": k} for k in keys]})
    assert sorted(d["Key"] for d in resp["Deleted"]) == sorted(keys)
    assert s3.list_objects_v2(Bucket=bucket)["KeyCount"] == 0


# ----------------------------------------------------------------- ranges

@pytest.fixture
def obj1000(s3, bucket):
    body = os.urandom(1000)
    s3.put_object(Bucket=bucket, Key="r", Body=body)
    return bucket, body


@pytest.mark.parametrize("rng,start,end", [
    ("bytes=0-9", 0, 9),
    ("bytes=100-199", 100, 199),
    ("bytes=990-", 990, 999),
    ("bytes=-10", 990, 999),
    ("bytes=995-5000", 995, 999),
    ("bytes=0-0", 0, 0),
    ("bytes=-5000", 0, 999),
])
def test_get_range(s3, obj1000, rng, start, end):
    bucket, body = obj1000
    got = s3.get_object(Bucket=bucket, Key="r", Range=rng)
    assert got["ResponseMetadata"]["HTTPStatusCode"] == 206
    assert got["ContentRange"] == f"bytes {start}-{end}/1000"
    assert got["ContentLength"] == end - start + 1
    assert got["Body"].read() == body[start:end + 1]


@pytest.mark.parametrize("rng", ["bytes=1000-", "bytes=1000-1010", "bytes=5000-6000"])
def test_get_range_unsatisfiable(s3, obj1000, rng):
    bucket, _ = obj1000
    with pytest.raises(ClientError) as ei:
        s3.get_object(Bucket=bucket, Key="r", Range=rng)
    assert_error(ei, "InvalidRange", 416)
    assert ei.value.response["ResponseMetadata"]["HTTPHeaders"].get("content-range") == "bytes */1000"


def test_get_range_on_head(s3, obj1000):
    bucket, _ = obj1000
    h = s3.head_object(Bucket=bucket, Key="r", Range="bytes=10-19")
    assert h["ResponseMetadata"]["HTTPStatusCode"] == 206
    assert h["ContentLength"] == 10
    assert h["ResponseMetadata"]["HTTPHeaders"]["content-range"] == "bytes 10-19/1000"


def test_get_accept_ranges_header(s3, obj1000):
    bucket, _ = obj1000
    assert s3.get_object(Bucket=bucket, Key="r")["AcceptRanges"] == "bytes"


# ----------------------------------------------------------------- conditionals

def _cond(fn, **kw):
    try:
        return fn(**kw)["ResponseMetadata"]["HTTPStatusCode"]
    except ClientError as e:
        return e.response["ResponseMetadata"]["HTTPStatusCode"], e.response["Error"]["Code"]


def test_conditional_get_and_head(s3, obj1000):
    bucket, body = obj1000
    etag = md5_etag(body)
    lm = s3.head_object(Bucket=bucket, Key="r")["LastModified"]
    past = lm - datetime.timedelta(days=1)
    future = lm + datetime.timedelta(days=1)
    for fn in (s3.get_object, s3.head_object):
        k = dict(Bucket=bucket, Key="r")
        assert _cond(fn, IfMatch=etag, **k) == 200
        assert _cond(fn, IfMatch="*", **k) == 200
        r = _cond(fn, IfMatch='"0123456789abcdef0123456789abcdef"', **k)
        assert r[0] == 412 and (fn == s3.head_object or r[1] == "PreconditionFailed"), r
        r = _cond(fn, IfNoneMatch=etag, **k)
        assert r[0] == 304, r
        assert _cond(fn, IfNoneMatch='"0123456789abcdef0123456789abcdef"', **k) == 200
        assert _cond(fn, IfModifiedSince=past, **k) == 200
        assert _cond(fn, IfModifiedSince=lm, **k)[0] == 304  # not modified since its own mtime
        assert _cond(fn, IfUnmodifiedSince=future, **k) == 200
        r = _cond(fn, IfUnmodifiedSince=past, **k)
        assert r[0] == 412, r
        # If-Match true + If-Unmodified-Since false -> 200 (RFC 7232 precedence)
        assert _cond(fn, IfMatch=etag, IfUnmodifiedSince=past, **k) == 200
        # If-None-Match false + If-Modified-Since true -> 304
        assert _cond(fn, IfNoneMatch=etag, IfModifiedSince=past, **k)[0] == 304


def test_conditional_get_304_has_etag_no_body(server, s3, obj1000):
    bucket, body = obj1000
    r = raw_request(server, "GET", f"/{bucket}/r", headers={"If-None-Match": md5_etag(body)})
    assert r.status == 304, r
    assert r.body == b""
    assert r.headers.get("etag") == md5_etag(body)


# ----------------------------------------------------------------- overrides

def test_response_header_overrides(s3, obj1000):
    bucket, body = obj1000
    got = s3.get_object(Bucket=bucket, Key="r", ResponseContentType="text/plain",
                        ResponseContentDisposition="inline; filename=x.txt",
                        ResponseCacheControl="no-store", ResponseContentEncoding="identity",
                        ResponseContentLanguage="de",
                        ResponseExpires=datetime.datetime(2031, 5, 6, tzinfo=UTC))
    assert got["ContentType"] == "text/plain"
    assert got["ContentDisposition"] == "inline; filename=x.txt"
    assert got["CacheControl"] == "no-store"
    assert got["ContentEncoding"] == "identity"
    assert got["ContentLanguage"] == "de"
    assert got["Expires"] == datetime.datetime(2031, 5, 6, tzinfo=UTC)
    assert got["Body"].read() == body


# ----------------------------------------------------------------- delete

def test_delete_object(s3, bucket):
    s3.put_object(Bucket=bucket, Key="d", Body=b"x")
    r = s3.delete_object(Bucket=bucket, Key="d")
    assert r["ResponseMetadata"]["HTTPStatusCode"] == 204
    with pytest.raises(ClientError) as ei:
        s3.head_object(Bucket=bucket, Key="d")
    assert client_error(ei)[1] == 404
    r = s3.delete_object(Bucket=bucket, Key="d")  # missing key: still 204
    assert r["ResponseMetadata"]["HTTPStatusCode"] == 204
    r = s3.delete_object(Bucket=bucket, Key="never-existed")
    assert r["ResponseMetadata"]["HTTPStatusCode"] == 204


def test_delete_objects(s3, bucket):
    for i in range(5):
        s3.put_object(Bucket=bucket, Key=f"del/{i}", Body=b"x")
    resp = s3.delete_objects(Bucket=bucket, Delete={
        "Objects": [{"Key": "del/0"}, {"Key": "del/1"}, {"Key": "missing"}], "Quiet": False})
    assert sorted(d["Key"] for d in resp["Deleted"]) == ["del/0", "del/1", "missing"]
    assert not resp.get("Errors")
    resp = s3.delete_objects(Bucket=bucket, Delete={
        "Objects": [{"Key": "del/2"}, {"Key": "del/3"}], "Quiet": True})
    assert not resp.get("Deleted")
    assert not resp.get("Errors")
    left = [o["Key"] for o in s3.list_objects_v2(Bucket=bucket).get("Contents", [])]
    assert left == ["del/4"]


def test_delete_objects_malformed_xml(server, s3, bucket):
    s3.put_object(Bucket=bucket, Key="keep", Body=b"x")
    import base64
    for body in (b"<Delete><Object><Key>keep</Key></Object>",  # unterminated
                 b"this is not xml",
                 b"<Delete><Object><Key>keep</Key></Object></Delete><extra/>"):
        md5 = base64.b64encode(hashlib.md5(body).digest()).decode()
        r = raw_request(server, "POST", f"/{bucket}", query=[("delete", "")], body=body,
                        headers={"Content-MD5": md5, "Content-Type": "application/xml"})
        assert r.status == 400 and r.error_code() == "MalformedXML", r
    assert s3.get_object(Bucket=bucket, Key="keep")["Body"].read() == b"x"


def test_delete_objects_other_user(s3, s3_user2, bucket):
    s3.put_object(Bucket=bucket, Key="mine", Body=b"x")
    with pytest.raises(ClientError) as ei:
        s3_user2.delete_objects(Bucket=bucket, Delete={"Objects": [{"Key": "mine"}]})
    assert_error(ei, "AccessDenied", 403)
    s3.head_object(Bucket=bucket, Key="mine")


@pytest.mark.parametrize("versioning", [False, True], ids=["unversioned", "versioned"])
def test_conditional_delete(server, s3, bucket, versioning):
    """DeleteObject with If-Match, as S3 answers it on general purpose buckets: judged
    on the current version; a key with none (absent, or a delete marker on top) is
    404 NoSuchKey, another ETag 412; with a version id, or the directory buckets'
    size and time conditions, 501."""
    if versioning:
        s3.put_bucket_versioning(Bucket=bucket,
                                 VersioningConfiguration={"Status": "Enabled"})

    def delete(key, **headers):
        return raw_request(server, "DELETE", f"/{bucket}/{key}", headers=headers)

    for value in ("*", '"0123456789abcdef0123456789abcdef"'):
        r = delete("k", **{"If-Match": value})
        assert (r.status, r.error_code()) == (404, "NoSuchKey"), r
    etag = s3.put_object(Bucket=bucket, Key="k", Body=b"one")["ETag"]
    r = delete("k", **{"If-Match": '"0123456789abcdef0123456789abcdef"'})
    assert (r.status, r.error_code()) == (412, "PreconditionFailed"), r
    assert s3.get_object(Bucket=bucket, Key="k")["Body"].read() == b"one"
    r = delete("k", **{"x-amz-if-match-size": "3"})
    assert (r.status, r.error_code()) == (501, "NotImplemented"), r
    assert delete("k", **{"If-Match": etag}).status == 204
    r = delete("k", **{"If-Match": "*"})  # gone, or a delete marker on top
    assert (r.status, r.error_code()) == (404, "NoSuchKey"), r
    s3.put_object(Bucket=bucket, Key="k", Body=b"two")
    assert delete("k", **{"If-Match": "*"}).status == 204
    with pytest.raises(ClientError) as ei:
        s3.head_object(Bucket=bucket, Key="k")
    assert client_error(ei)[1] == 404
    if versioning:
        r = s3.put_object(Bucket=bucket, Key="v", Body=b"x")
        resp = raw_request(server, "DELETE", f"/{bucket}/v",
                           query=[("versionId", r["VersionId"])],
                           headers={"If-Match": r["ETag"]})
        assert (resp.status, resp.error_code()) == (501, "NotImplemented"), resp
        assert s3.get_object(Bucket=bucket, Key="v")["Body"].read() == b"x"


def test_conditional_delete_objects(server, s3, bucket):
    """DeleteObjects' per-object <ETag>: each entry judged as DeleteObject's If-Match."""
    import base64
    etag = s3.put_object(Bucket=bucket, Key="a", Body=b"a")["ETag"]
    s3.put_object(Bucket=bucket, Key="b", Body=b"b")
    s3.put_object(Bucket=bucket, Key="c", Body=b"c")
    body = ("<Delete>"
            f"<Object><Key>a</Key><ETag>{etag}</ETag></Object>"
            "<Object><Key>b</Key><ETag>&quot;0123456789abcdef0123456789abcdef&quot;</ETag></Object>"
            "<Object><Key>missing</Key><ETag>*</ETag></Object>"
            "<Object><Key>c</Key><Size>1</Size></Object>"
            "</Delete>").encode()
    md5 = base64.b64encode(hashlib.md5(body).digest()).decode()
    r = raw_request(server, "POST", f"/{bucket}", query=[("delete", "")], body=body,
                    headers={"Content-MD5": md5, "Content-Type": "application/xml"})
    assert r.status == 200, r
    text = r.body.decode()
    assert "<Deleted><Key>a</Key></Deleted>" in text, text
    assert "<Error><Key>b</Key><Code>PreconditionFailed</Code>" in text, text
    assert "<Error><Key>missing</Key><Code>NoSuchKey</Code>" in text, text
    assert "<Error><Key>c</Key><Code>NotImplemented</Code>" in text, text
    left = [o["Key"] for o in s3.list_objects_v2(Bucket=bucket).get("Contents", [])]
    assert left == ["b", "c"]


# ----------------------------------------------------------------- copy

def test_copy_object_metadata_directive(s3, bucket):
    body = os.urandom(4096)
    s3.put_object(Bucket=bucket, Key="src", Body=body, ContentType="image/x-src",
                  Metadata={"orig": "1"}, CacheControl="max-age=5")
    r = s3.copy_object(Bucket=bucket, Key="dst-copy", CopySource={"Bucket": bucket, "Key": "src"})
    assert r["CopyObjectResult"]["ETag"] == md5_etag(body)
    h = s3.head_object(Bucket=bucket, Key="dst-copy")
    assert h["Metadata"] == {"orig": "1"}
    assert h["ContentType"] == "image/x-src"
    assert h["CacheControl"] == "max-age=5"
    assert s3.get_object(Bucket=bucket, Key="dst-copy")["Body"].read() == body

    s3.copy_object(Bucket=bucket, Key="dst-replace", CopySource={"Bucket": bucket, "Key": "src"},
                   MetadataDirective="REPLACE", Metadata={"new": "2"}, ContentType="text/x-new")
    h = s3.head_object(Bucket=bucket, Key="dst-replace")
    assert h["Metadata"] == {"new": "2"}
    assert h["ContentType"] == "text/x-new"
    assert s3.get_object(Bucket=bucket, Key="dst-replace")["Body"].read() == body

    # COPY directive ignores new metadata given with the request.
    s3.copy_object(Bucket=bucket, Key="dst-copy2", CopySource={"Bucket": bucket, "Key": "src"},
                   MetadataDirective="COPY", Metadata={"ignored": "x"})
    assert s3.head_object(Bucket=bucket, Key="dst-copy2")["Metadata"] == {"orig": "1"}


def test_copy_onto_itself(s3, bucket):
    s3.put_object(Bucket=bucket, Key="self", Body=b"same", Metadata={"a": "1"})
    with pytest.raises(ClientError) as ei:
        s3.copy_object(Bucket=bucket, Key="self", CopySource={"Bucket": bucket, "Key": "self"})
    assert_error(ei, "InvalidRequest", 400)
    s3.copy_object(Bucket=bucket, Key="self", CopySource={"Bucket": bucket, "Key": "self"},
                   MetadataDirective="REPLACE", Metadata={"b": "2"})
    got = s3.get_object(Bucket=bucket, Key="self")
    assert got["Metadata"] == {"b": "2"}
    assert got["Body"].read() == b"same"


def test_copy_cross_bucket_and_special_key(server, s3, bucket):
    from s3r_itest import empty_bucket, new_bucket_name
    other = new_bucket_name()
    s3.create_bucket(Bucket=other)
    try:
        key = "dir/a b+c%d é.txt"
        s3.put_object(Bucket=bucket, Key=key, Body=b"cross")
        s3.copy_object(Bucket=other, Key="copied/" + key, CopySource={"Bucket": bucket, "Key": key})
        assert s3.get_object(Bucket=other, Key="copied/" + key)["Body"].read() == b"cross"
        # CopySource as a string (botocore URL-encodes it)
        s3.copy_object(Bucket=other, Key="copied2", CopySource=f"{bucket}/{key}")
        assert s3.get_object(Bucket=other, Key="copied2")["Body"].read() == b"cross"
        # x-amz-copy-source with a leading slash, URL-encoded, sent as is
        import urllib.parse
        r = raw_request(server, "PUT", f"/{other}/copied3",
                        headers={"x-amz-copy-source": "/" + bucket + "/" + urllib.parse.quote(key)})
        assert r.status == 200 and b"CopyObjectResult" in r.body, r
        assert s3.get_object(Bucket=other, Key="copied3")["Body"].read() == b"cross"
    finally:
        empty_bucket(s3, other)
        s3.delete_bucket(Bucket=other)


def test_copy_source_missing(s3, bucket):
    with pytest.raises(ClientError) as ei:
        s3.copy_object(Bucket=bucket, Key="d", CopySource={"Bucket": bucket, "Key": "nope"})
    assert_error(ei, "NoSuchKey", 404)


def test_copy_conditionals(s3, bucket):
    s3.put_object(Bucket=bucket, Key="c", Body=b"cond")
    etag = md5_etag(b"cond")
    lm = s3.head_object(Bucket=bucket, Key="c")["LastModified"]
    past, future = lm - datetime.timedelta(days=1), lm + datetime.timedelta(days=1)
    src = {"Bucket": bucket, "Key": "c"}
    s3.copy_object(Bucket=bucket, Key="ok1", CopySource=src, CopySourceIfMatch=etag)
    s3.copy_object(Bucket=bucket, Key="ok2", CopySource=src, CopySourceIfNoneMatch='"00"')
    s3.copy_object(Bucket=bucket, Key="ok3", CopySource=src, CopySourceIfModifiedSince=past)
    s3.copy_object(Bucket=bucket, Key="ok4", CopySource=src, CopySourceIfUnmodifiedSince=future)
    bad = [dict(CopySourceIfMatch='"0123456789abcdef0123456789abcdef"'),
           dict(CopySourceIfNoneMatch=etag),
           dict(CopySourceIfModifiedSince=lm),
           dict(CopySourceIfUnmodifiedSince=past)]
    for i, kw in enumerate(bad):
        with pytest.raises(ClientError) as ei:
            s3.copy_object(Bucket=bucket, Key=f"bad{i}", CopySource=src, **kw)
        assert_error(ei, "PreconditionFailed", 412)
        with pytest.raises(ClientError):
            s3.head_object(Bucket=bucket, Key=f"bad{i}")
    for k in ("ok1", "ok2", "ok3", "ok4"):
        assert s3.get_object(Bucket=bucket, Key=k)["Body"].read() == b"cond"


def test_copy_from_other_users_bucket_denied(s3, s3_user2, bucket):
    from s3r_itest import empty_bucket, new_bucket_name
    s3.put_object(Bucket=bucket, Key="secret", Body=b"s")
    b2 = new_bucket_name()
    s3_user2.create_bucket(Bucket=b2)
    try:
        with pytest.raises(ClientError) as ei:
            s3_user2.copy_object(Bucket=b2, Key="stolen", CopySource={"Bucket": bucket, "Key": "secret"})
        assert_error(ei, "AccessDenied", 403)
    finally:
        empty_bucket(s3_user2, b2)
        s3_user2.delete_bucket(Bucket=b2)


def test_other_user_object_access_denied(s3, s3_user2, bucket):
    s3.put_object(Bucket=bucket, Key="private", Body=b"p")
    for call in (lambda: s3_user2.get_object(Bucket=bucket, Key="private"),
                 lambda: s3_user2.put_object(Bucket=bucket, Key="private", Body=b"overwrite"),
                 lambda: s3_user2.delete_object(Bucket=bucket, Key="private"),
                 lambda: s3_user2.list_objects_v2(Bucket=bucket),
                 lambda: s3_user2.list_objects(Bucket=bucket),
                 lambda: s3_user2.create_multipart_upload(Bucket=bucket, Key="m")):
        with pytest.raises(ClientError) as ei:
            call()
        assert_error(ei, "AccessDenied", 403)
    with pytest.raises(ClientError) as ei:
        s3_user2.head_object(Bucket=bucket, Key="private")
    assert client_error(ei)[1] == 403
    assert s3.get_object(Bucket=bucket, Key="private")["Body"].read() == b"p"


def test_copy_multipart_source(s3, bucket):
    part = os.urandom(5 * 1024 * 1024)
    uid = s3.create_multipart_upload(Bucket=bucket, Key="mp-src")["UploadId"]
    e1 = s3.upload_part(Bucket=bucket, Key="mp-src", UploadId=uid, PartNumber=1, Body=part)["ETag"]
    e2 = s3.upload_part(Bucket=bucket, Key="mp-src", UploadId=uid, PartNumber=2, Body=b"end")["ETag"]
    s3.complete_multipart_upload(Bucket=bucket, Key="mp-src", UploadId=uid, MultipartUpload={
        "Parts": [{"PartNumber": 1, "ETag": e1}, {"PartNumber": 2, "ETag": e2}]})
    s3.copy_object(Bucket=bucket, Key="mp-copy", CopySource={"Bucket": bucket, "Key": "mp-src"})
    assert s3.get_object(Bucket=bucket, Key="mp-copy")["Body"].read() == part + b"end"
    # deleting the source leaves the copy intact
    s3.delete_object(Bucket=bucket, Key="mp-src")
    got = s3.get_object(Bucket=bucket, Key="mp-copy", Range="bytes=5242878-5242882")["Body"].read()
    assert got == part[-2:] + b"end"


def test_readers_never_see_a_mix(s3, make_client, bucket):
    """GETs racing overwrites of the same key see one whole version, never a mix or a prefix."""
    import threading
    size = 2 * 1024 * 1024
    s3.put_object(Bucket=bucket, Key="race", Body=b"A" * size)
    stop = threading.Event()
    bad = []

    def writer():
        c = make_client()
        i = 0
        while not stop.is_set():
            fill = bytes([ord("A") + i % 26])
            c.put_object(Bucket=bucket, Key="race", Body=fill * (size + i % 7))
            i += 1

    t = threading.Thread(target=writer, daemon=True)
    t.start()
    try:
        c = make_client()
        for _ in range(25):
            body = c.get_object(Bucket=bucket, Key="race")["Body"].read()
            if not (size <= len(body) < size + 7 and body.count(body[:1]) == len(body)):
                bad.append((len(body), body[:1], len(set(body))))
            body = c.get_object(Bucket=bucket, Key="race", Range="bytes=1000000-1000999")["Body"].read()
            if len(set(body)) != 1 or len(body) != 1000:
                bad.append(("range", len(body), len(set(body))))
    finally:
        stop.set()
        t.join(30)
    assert not bad, bad[:5]
