"""Details third-party clients and conformance suites trip on (issue 20), each answered as S3
does: ListBuckets pagination (max-buckets, continuation-token, prefix), the Prefix of a
ListObjects (v1) listing returned as sent even under encoding-type=url, and a
CompleteMultipartUpload list naming a re-uploaded part twice. Runs on both backends
(S3RDMA_TEST_BACKEND=rados)."""
import uuid
import xml.etree.ElementTree as ET

import pytest
from botocore.exceptions import ClientError

from s3r_itest import S3_NS, USERS, raw_request

MIB = 1024 * 1024


def _names(root, path):
    return [e.text for e in root.findall("/".join(f"{S3_NS}{p}" for p in path.split("/")))]


# ---- ListBuckets pagination ---------------------------------------------------------------

def _list_buckets(server, **query):
    r = raw_request(server, "GET", "/", query=[(k.replace("_", "-"), v) for k, v in query.items()])
    assert r.status == 200, r
    root = ET.fromstring(r.body)
    return (_names(root, "Buckets/Bucket/Name"), root.findtext(f"{S3_NS}ContinuationToken"),
            root.findtext(f"{S3_NS}Prefix"))


@pytest.fixture
def three_buckets(s3):
    pfx = f"lb-{uuid.uuid4().hex[:10]}-"
    names = [pfx + s for s in ("a", "b", "c")]
    for n in names:
        s3.create_bucket(Bucket=n)
    yield pfx, names
    for n in names:
        s3.delete_bucket(Bucket=n)


def test_list_buckets_pages(server, three_buckets):
    pfx, names = three_buckets
    got, token, prefix = _list_buckets(server, prefix=pfx, max_buckets="2")
    assert got == names[:2] and token and prefix == pfx
    assert names[1] not in token  # opaque, not a bucket name
    got, token2, _ = _list_buckets(server, prefix=pfx, max_buckets="2", continuation_token=token)
    assert got == names[2:] and token2 is None  # the last page carries no token
    # a page that holds exactly what remains carries no token either (as S3 answers)
    got, token, _ = _list_buckets(server, prefix=pfx, max_buckets="3")
    assert got == names and token is None
    got, token, _ = _list_buckets(server, prefix=pfx, max_buckets="1", continuation_token=None)
    assert got == names[:1] and token


def test_list_buckets_prefix_only(server, three_buckets):
    pfx, names = three_buckets
    got, token, prefix = _list_buckets(server, prefix=pfx + "b")
    assert got == [names[1]] and token is None and prefix == pfx + "b"
    got, _, prefix = _list_buckets(server)  # no prefix sent: no Prefix element, every bucket
    assert set(names) <= set(got) and prefix is None


def test_list_buckets_other_users_buckets_never_count(server, three_buckets):
    pfx, _ = three_buckets
    r = raw_request(server, "GET", "/", query=[("prefix", pfx)], user=USERS[1])
    assert r.status == 200 and _names(ET.fromstring(r.body), "Buckets/Bucket/Name") == []


@pytest.mark.parametrize("value", ["0", "10001", "-1", "x", ""])
def test_list_buckets_bad_max_buckets(server, value):
    r = raw_request(server, "GET", "/", query=[("max-buckets", value)])
    assert r.status == 400 and r.error_code() == "InvalidArgument", r


def test_list_buckets_bad_token(server):
    r = raw_request(server, "GET", "/", query=[("continuation-token", "!!not base64!!")])
    assert r.status == 400 and r.error_code() == "InvalidArgument", r


# ---- ListObjects: the Prefix element --------------------------------------------------------

def test_list_objects_v1_prefix_returned_as_sent(server, s3, bucket):
    for k in ("foo/bar", "foo/baz", "quux"):
        s3.put_object(Bucket=bucket, Key=k, Body=b"x")
    # botocore asks for encoding-type=url and decodes no v1 Prefix: S3 returns it as sent
    resp = s3.list_objects(Bucket=bucket, Prefix="\n")
    assert resp["Prefix"] == "\n" and "Contents" not in resp and "CommonPrefixes" not in resp
    resp = s3.list_objects(Bucket=bucket, Prefix="foo/", Delimiter="/")
    assert resp["Prefix"] == "foo/" and [c["Key"] for c in resp["Contents"]] == ["foo/bar", "foo/baz"]
    resp = s3.list_objects_v2(Bucket=bucket, Prefix="\n", StartAfter="\n", Delimiter="\n")
    assert resp["Prefix"] == "\n" and resp["StartAfter"] == "\n" and resp["Delimiter"] == "\n"
    assert resp["KeyCount"] == 0


@pytest.mark.parametrize("url", [False, True])
def test_list_objects_prefix_raw_and_encoded(server, bucket, url):
    enc = [("encoding-type", "url")] if url else []
    q = [("prefix", "\n"), ("delimiter", "\n"), ("marker", "\n")] + enc
    root = ET.fromstring(raw_request(server, "GET", f"/{bucket}", query=q).body)
    # v1: Prefix as sent whatever the encoding; Delimiter and Marker encoded when asked
    assert root.findtext(f"{S3_NS}Prefix") == "\n"
    assert root.findtext(f"{S3_NS}Delimiter") == ("%0A" if url else "\n")
    assert root.findtext(f"{S3_NS}Marker") == ("%0A" if url else "\n")
    q = [("list-type", "2"), ("prefix", "\n"), ("delimiter", "\n"), ("start-after", "\n")] + enc
    root = ET.fromstring(raw_request(server, "GET", f"/{bucket}", query=q).body)
    for tag in ("Prefix", "Delimiter", "StartAfter"):  # v2 encodes each of them when asked
        assert root.findtext(f"{S3_NS}{tag}") == ("%0A" if url else "\n"), tag


# ---- CompleteMultipartUpload: the last upload of a part number counts --------------------------

def _upload(s3, bucket, key):
    return s3.create_multipart_upload(Bucket=bucket, Key=key)["UploadId"]


def _part(s3, bucket, key, uid, num, body):
    return s3.upload_part(Bucket=bucket, Key=key, UploadId=uid, PartNumber=num,
                          Body=body)["ETag"].strip('"')


def test_resent_part_listed_twice_counts_once(s3, bucket):
    """ceph s3-tests' resend_first_finishes_last: part 1 is sent twice, the second upload
    finishes first, so the client's list names part 1 twice, the upload that finished last
    (and is the part) listed last."""
    uid = _upload(s3, bucket, "k")
    early = _part(s3, bucket, "k", uid, 1, b"B" * 8)
    last = _part(s3, bucket, "k", uid, 1, b"A" * 8)
    parts = [{"ETag": early, "PartNumber": 1}, {"ETag": last, "PartNumber": 1}]
    s3.complete_multipart_upload(Bucket=bucket, Key="k", UploadId=uid,
                                 MultipartUpload={"Parts": parts})
    assert s3.get_object(Bucket=bucket, Key="k")["Body"].read() == b"A" * 8


def test_resent_part_among_others(s3, bucket):
    uid = _upload(s3, bucket, "k")
    p1 = _part(s3, bucket, "k", uid, 1, b"1" * (5 * MIB))
    p2 = _part(s3, bucket, "k", uid, 2, b"2" * 10)
    p1b = _part(s3, bucket, "k", uid, 1, b"3" * (5 * MIB))  # re-sent, finishing after part 2
    parts = [{"ETag": p1, "PartNumber": 1}, {"ETag": p1b, "PartNumber": 1},
             {"ETag": p2, "PartNumber": 2}]
    etag = s3.complete_multipart_upload(Bucket=bucket, Key="k", UploadId=uid,
                                        MultipartUpload={"Parts": parts})["ETag"]
    assert etag.strip('"').endswith("-2")
    assert s3.get_object(Bucket=bucket, Key="k")["Body"].read() == b"3" * (5 * MIB) + b"2" * 10


def test_listed_twice_last_listing_must_be_the_part(s3, bucket):
    uid = _upload(s3, bucket, "k")
    early = _part(s3, bucket, "k", uid, 1, b"B" * 8)
    last = _part(s3, bucket, "k", uid, 1, b"A" * 8)
    for parts, code in (
            # the last listing names the replaced upload: that part is gone
            ([{"ETag": last, "PartNumber": 1}, {"ETag": early, "PartNumber": 1}], "InvalidPart"),
            # a lower number after a higher one is still out of order
            ([{"ETag": last, "PartNumber": 2}, {"ETag": last, "PartNumber": 1}],
             "InvalidPartOrder")):
        with pytest.raises(ClientError) as ei:
            s3.complete_multipart_upload(Bucket=bucket, Key="k", UploadId=uid,
                                         MultipartUpload={"Parts": parts})
        assert ei.value.response["Error"]["Code"] == code
        assert ei.value.response["ResponseMetadata"]["HTTPStatusCode"] == 400
    s3.abort_multipart_upload(Bucket=bucket, Key="k", UploadId=uid)


# ---- conditional writes, as AWS answers them ---------------------------------------------------
# If-None-Match takes only "*" on a write (another value: 501 NotImplemented, as AWS answers,
# where radosgw and ceph s3-tests compare it with the ETag); If-Match takes the current ETag
# (quoted or not) or "*"; a missing key with If-Match is 404 NoSuchKey. CopyObject judges its
# destination by them too (its source by x-amz-copy-source-if-*).

def _put(server, bucket, key, headers, body=b"x"):
    r = raw_request(server, "PUT", f"/{bucket}/{key}", headers=headers, body=body)
    return r.status, r.error_code()


def _copy(server, bucket, key, headers):
    r = raw_request(server, "PUT", f"/{bucket}/{key}",
                    headers={"x-amz-copy-source": f"/{bucket}/src", **headers})
    return r.status, r.error_code()


def _body(s3, bucket, key):
    return s3.get_object(Bucket=bucket, Key=key)["Body"].read()


@pytest.mark.parametrize("write", ["put", "copy"])
def test_conditional_write_table(server, s3, bucket, write):
    s3.put_object(Bucket=bucket, Key="src", Body=b"source")
    do = (lambda h: _put(server, bucket, "k", h, b"new")) if write == "put" else \
        (lambda h: _copy(server, bucket, "k", h))
    new = b"new" if write == "put" else b"source"
    # the key is empty
    assert do({"If-Match": "*"}) == (404, "NoSuchKey")
    assert do({"If-Match": '"0123456789abcdef0123456789abcdef"'}) == (404, "NoSuchKey")
    assert do({"If-None-Match": "*"}) == (200, None)
    assert _body(s3, bucket, "k") == new
    # the key holds an object
    etag = s3.put_object(Bucket=bucket, Key="k", Body=b"old")["ETag"]
    assert do({"If-None-Match": "*"}) == (412, "PreconditionFailed")
    assert do({"If-None-Match": etag}) == (501, "NotImplemented")
    assert do({"If-Match": '"0123456789abcdef0123456789abcdef"'}) == (412, "PreconditionFailed")
    assert _body(s3, bucket, "k") == b"old"  # nothing refused changed it
    assert do({"If-Match": etag.strip('"')}) == (200, None)
    assert _body(s3, bucket, "k") == new
    assert do({"If-Match": "*"}) == (200, None)


def test_conditional_complete_table(s3, bucket):
    def complete(headers, body=b"part"):
        uid = s3.create_multipart_upload(Bucket=bucket, Key="k")["UploadId"]
        etag = s3.upload_part(Bucket=bucket, Key="k", UploadId=uid, PartNumber=1,
                              Body=body)["ETag"]

        def add(request, **kwargs):
            for name, value in headers.items():
                request.headers[name] = value
        s3.meta.events.register("before-sign.s3.CompleteMultipartUpload", add)
        try:
            return s3.complete_multipart_upload(
                Bucket=bucket, Key="k", UploadId=uid,
                MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": etag}]})["ETag"], None
        except ClientError as e:
            s3.abort_multipart_upload(Bucket=bucket, Key="k", UploadId=uid)
            return None, (e.response["ResponseMetadata"]["HTTPStatusCode"],
                          e.response["Error"]["Code"])
        finally:
            s3.meta.events.unregister("before-sign.s3.CompleteMultipartUpload", add)

    assert complete({"If-Match": "*"})[1] == (404, "NoSuchKey")
    assert complete({"If-Match": '"badbadbadbadbadbadbadbadbadbadba"'})[1] == (404, "NoSuchKey")
    etag, err = complete({"If-None-Match": "*"})
    assert err is None
    assert complete({"If-None-Match": "*"})[1] == (412, "PreconditionFailed")
    assert complete({"If-None-Match": etag})[1] == (501, "NotImplemented")
    assert complete({"If-Match": '"badbadbadbadbadbadbadbadbadbadba"'})[1] == \
        (412, "PreconditionFailed")
    etag2, err = complete({"If-Match": etag}, b"second")
    assert err is None and _body(s3, bucket, "k") == b"second"
    assert complete({"If-Match": etag})[1] == (412, "PreconditionFailed")  # replaced since
    assert complete({"If-Match": "*"}, b"third")[1] is None
    assert _body(s3, bucket, "k") == b"third"


def test_unknown_query_parameters_are_ignored(server, s3, bucket):
    """A parameter S3 does not know is ignored, as S3 ignores it (a POST form's
    success_action_redirect to the bucket's URL appends bucket, key and etag);
    a sub-resource S3 has and s3rdmad does not is 501."""
    s3.put_object(Bucket=bucket, Key="k", Body=b"v")
    q = [("bucket", bucket), ("key", "k"), ("etag", '"x"'), ("foo", None)]
    r = raw_request(server, "GET", f"/{bucket}", query=q)
    assert r.status == 200 and b"<ListBucketResult" in r.body, r
    r = raw_request(server, "GET", f"/{bucket}/k", query=q)
    assert r.status == 200 and r.body == b"v", r
    r = raw_request(server, "GET", f"/{bucket}", query=[("website", None)])
    assert r.status == 501 and r.error_code() == "NotImplemented", r
