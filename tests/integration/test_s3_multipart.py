"""Multipart uploads."""
import hashlib
import os

import pytest
from botocore.exceptions import ClientError

from s3r_itest import TEST_BACKEND, assert_error, client_error, raw_request

MiB = 1024 * 1024


def mpu_etag(parts):
    digest = hashlib.md5(b"".join(hashlib.md5(p).digest() for p in parts)).hexdigest()
    return f'"{digest}-{len(parts)}"'


def upload_parts(s3, bucket, key, upload_id, parts, start=1):
    out = []
    for i, data in enumerate(parts, start):
        r = s3.upload_part(Bucket=bucket, Key=key, UploadId=upload_id, PartNumber=i, Body=data)
        assert r["ETag"] == '"' + hashlib.md5(data).hexdigest() + '"'
        out.append({"PartNumber": i, "ETag": r["ETag"]})
    return out


@pytest.fixture(scope="module")
def parts3():
    return [os.urandom(5 * MiB), os.urandom(5 * MiB), os.urandom(1234)]


def test_multipart_roundtrip(s3, bucket, parts3):
    key = "mp/obj"
    up = s3.create_multipart_upload(Bucket=bucket, Key=key, ContentType="video/x-test",
                                    Metadata={"mk": "mv"})
    uid = up["UploadId"]
    assert up["Bucket"] == bucket and up["Key"] == key and uid
    done = upload_parts(s3, bucket, key, uid, parts3)
    # nothing visible before Complete
    with pytest.raises(ClientError) as ei:
        s3.head_object(Bucket=bucket, Key=key)
    assert client_error(ei)[1] == 404
    r = s3.complete_multipart_upload(Bucket=bucket, Key=key, UploadId=uid,
                                     MultipartUpload={"Parts": done})
    assert r["ETag"] == mpu_etag(parts3)
    assert r["Key"] == key and r["Bucket"] == bucket
    whole = b"".join(parts3)
    h = s3.head_object(Bucket=bucket, Key=key)
    assert h["ContentLength"] == len(whole)
    assert h["ETag"] == mpu_etag(parts3)
    assert h["ETag"].endswith('-3"')
    assert h["ContentType"] == "video/x-test"
    assert h["Metadata"] == {"mk": "mv"}
    got = s3.get_object(Bucket=bucket, Key=key)["Body"].read()
    assert hashlib.sha256(got).digest() == hashlib.sha256(whole).digest()
    # a range across the part boundary
    off = 5 * MiB - 10
    got = s3.get_object(Bucket=bucket, Key=key, Range=f"bytes={off}-{off + 19}")["Body"].read()
    assert got == whole[off:off + 20]
    # partNumber reads
    r = s3.get_object(Bucket=bucket, Key=key, PartNumber=2)
    assert r["ResponseMetadata"]["HTTPStatusCode"] == 206
    assert r["PartsCount"] == 3
    assert r["ContentLength"] == 5 * MiB
    assert r["ContentRange"] == f"bytes {5 * MiB}-{10 * MiB - 1}/{len(whole)}"
    assert r["Body"].read() == parts3[1]
    r = s3.head_object(Bucket=bucket, Key=key, PartNumber=3)
    assert r["ContentLength"] == 1234 and r["PartsCount"] == 3
    with pytest.raises(ClientError) as ei:
        s3.get_object(Bucket=bucket, Key=key, PartNumber=4)
    assert client_error(ei)[:2] == ("InvalidPartNumber", 416)
    # the upload is gone
    ups = s3.list_multipart_uploads(Bucket=bucket).get("Uploads", [])
    assert uid not in [u["UploadId"] for u in ups]
    # listed with the multipart ETag
    o = s3.list_objects_v2(Bucket=bucket, Prefix=key)["Contents"][0]
    assert o["ETag"] == mpu_etag(parts3) and o["Size"] == len(whole)


def test_part_number_on_simple_object(s3, bucket):
    s3.put_object(Bucket=bucket, Key="simple", Body=b"0123456789")
    r = s3.get_object(Bucket=bucket, Key="simple", PartNumber=1)
    assert r["Body"].read() == b"0123456789"
    with pytest.raises(ClientError) as ei:
        s3.get_object(Bucket=bucket, Key="simple", PartNumber=2)
    assert client_error(ei)[:2] == ("InvalidPartNumber", 416)


def test_single_small_part_is_fine(s3, bucket):
    uid = s3.create_multipart_upload(Bucket=bucket, Key="one")["UploadId"]
    done = upload_parts(s3, bucket, "one", uid, [b"tiny"])
    r = s3.complete_multipart_upload(Bucket=bucket, Key="one", UploadId=uid,
                                     MultipartUpload={"Parts": done})
    assert r["ETag"] == mpu_etag([b"tiny"])
    assert s3.get_object(Bucket=bucket, Key="one")["Body"].read() == b"tiny"


def test_entity_too_small(s3, bucket):
    uid = s3.create_multipart_upload(Bucket=bucket, Key="small")["UploadId"]
    done = upload_parts(s3, bucket, "small", uid, [b"a" * 1024, b"b" * 1024])
    with pytest.raises(ClientError) as ei:
        s3.complete_multipart_upload(Bucket=bucket, Key="small", UploadId=uid,
                                     MultipartUpload={"Parts": done})
    assert_error(ei, "EntityTooSmall", 400)
    with pytest.raises(ClientError):
        s3.head_object(Bucket=bucket, Key="small")
    s3.abort_multipart_upload(Bucket=bucket, Key="small", UploadId=uid)


def test_invalid_part_and_order(s3, bucket):
    key = "inv"
    uid = s3.create_multipart_upload(Bucket=bucket, Key=key)["UploadId"]
    p1, p2 = os.urandom(5 * MiB), b"tail"
    done = upload_parts(s3, bucket, key, uid, [p1, p2])
    bad_etag = [done[0], {"PartNumber": 2, "ETag": '"0123456789abcdef0123456789abcdef"'}]
    missing = [done[0], {"PartNumber": 7, "ETag": done[1]["ETag"]}]
    for parts in (bad_etag, missing):
        with pytest.raises(ClientError) as ei:
            s3.complete_multipart_upload(Bucket=bucket, Key=key, UploadId=uid,
                                         MultipartUpload={"Parts": parts})
        assert_error(ei, "InvalidPart", 400)
    with pytest.raises(ClientError) as ei:
        s3.complete_multipart_upload(Bucket=bucket, Key=key, UploadId=uid,
                                     MultipartUpload={"Parts": [done[1], done[0]]})
    assert_error(ei, "InvalidPartOrder", 400)
    # the upload survives the failed completes
    r = s3.complete_multipart_upload(Bucket=bucket, Key=key, UploadId=uid,
                                     MultipartUpload={"Parts": done})
    assert r["ETag"] == mpu_etag([p1, p2])
    assert s3.get_object(Bucket=bucket, Key=key)["Body"].read() == p1 + p2


def test_complete_subset_and_part_overwrite(s3, bucket):
    key = "subset"
    uid = s3.create_multipart_upload(Bucket=bucket, Key=key)["UploadId"]
    a, b, c = os.urandom(5 * MiB), os.urandom(5 * MiB), b"end"
    upload_parts(s3, bucket, key, uid, [a, os.urandom(5 * MiB), c])
    r = s3.upload_part(Bucket=bucket, Key=key, UploadId=uid, PartNumber=2, Body=b)  # overwrite
    parts = s3.list_parts(Bucket=bucket, Key=key, UploadId=uid)["Parts"]
    assert [p["PartNumber"] for p in parts] == [1, 2, 3]
    assert parts[1]["ETag"] == r["ETag"] == '"' + hashlib.md5(b).hexdigest() + '"'
    # complete with parts 1 and 3 only (non-contiguous numbers are fine)
    done = [{"PartNumber": 1, "ETag": parts[0]["ETag"]}, {"PartNumber": 3, "ETag": parts[2]["ETag"]}]
    r = s3.complete_multipart_upload(Bucket=bucket, Key=key, UploadId=uid,
                                     MultipartUpload={"Parts": done})
    assert r["ETag"] == mpu_etag([a, c])
    assert s3.get_object(Bucket=bucket, Key=key)["Body"].read() == a + c


def test_no_such_upload_and_abort(s3, bucket):
    bogus = "0" * 32
    with pytest.raises(ClientError) as ei:
        s3.upload_part(Bucket=bucket, Key="k", UploadId=bogus, PartNumber=1, Body=b"x")
    assert_error(ei, "NoSuchUpload", 404)
    with pytest.raises(ClientError) as ei:
        s3.list_parts(Bucket=bucket, Key="k", UploadId=bogus)
    assert_error(ei, "NoSuchUpload", 404)
    with pytest.raises(ClientError) as ei:
        s3.complete_multipart_upload(Bucket=bucket, Key="k", UploadId=bogus,
                                     MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": '"a"'}]})
    assert_error(ei, "NoSuchUpload", 404)
    uid = s3.create_multipart_upload(Bucket=bucket, Key="k")["UploadId"]
    upload_parts(s3, bucket, "k", uid, [b"data"])
    # upload id for another key
    with pytest.raises(ClientError) as ei:
        s3.upload_part(Bucket=bucket, Key="other", UploadId=uid, PartNumber=1, Body=b"x")
    assert_error(ei, "NoSuchUpload", 404)
    r = s3.abort_multipart_upload(Bucket=bucket, Key="k", UploadId=uid)
    assert r["ResponseMetadata"]["HTTPStatusCode"] == 204
    with pytest.raises(ClientError) as ei:
        s3.list_parts(Bucket=bucket, Key="k", UploadId=uid)
    assert_error(ei, "NoSuchUpload", 404)
    with pytest.raises(ClientError) as ei:
        s3.upload_part(Bucket=bucket, Key="k", UploadId=uid, PartNumber=2, Body=b"x")
    assert_error(ei, "NoSuchUpload", 404)
    with pytest.raises(ClientError):
        s3.head_object(Bucket=bucket, Key="k")


@pytest.mark.parametrize("num", [0, 10001])
def test_invalid_part_number(server, s3, bucket, num):
    uid = s3.create_multipart_upload(Bucket=bucket, Key="pn")["UploadId"]
    r = raw_request(server, "PUT", f"/{bucket}/pn",
                    query=[("partNumber", str(num)), ("uploadId", uid)], body=b"x")
    assert r.status == 400 and r.error_code() == "InvalidArgument", r
    s3.abort_multipart_upload(Bucket=bucket, Key="pn", UploadId=uid)


def test_list_parts_pagination(s3, bucket):
    uid = s3.create_multipart_upload(Bucket=bucket, Key="lp")["UploadId"]
    datas = [bytes([i]) * (100 + i) for i in range(1, 6)]
    upload_parts(s3, bucket, "lp", uid, datas)
    r = s3.list_parts(Bucket=bucket, Key="lp", UploadId=uid, MaxParts=2)
    assert [p["PartNumber"] for p in r["Parts"]] == [1, 2]
    assert [p["Size"] for p in r["Parts"]] == [101, 102]
    assert r["IsTruncated"] is True
    assert r["NextPartNumberMarker"] == 2
    r = s3.list_parts(Bucket=bucket, Key="lp", UploadId=uid, PartNumberMarker=2)
    assert [p["PartNumber"] for p in r["Parts"]] == [3, 4, 5]
    assert r["IsTruncated"] is False
    for p, d in zip(r["Parts"], datas[2:]):
        assert p["ETag"] == '"' + hashlib.md5(d).hexdigest() + '"'
        assert p["LastModified"]
    s3.abort_multipart_upload(Bucket=bucket, Key="lp", UploadId=uid)


def all_upload_pages(s3, bucket, size, **kw):
    """Every upload ListMultipartUploads gives, size a page, following its markers."""
    got, markers = [], {}
    while True:
        r = s3.list_multipart_uploads(Bucket=bucket, MaxUploads=size, **kw, **markers)
        page = [(u["Key"], u["UploadId"]) for u in r.get("Uploads", [])]
        assert len(page) <= size
        got += page
        if not r["IsTruncated"]:
            return got
        assert page and (r["NextKeyMarker"], r["NextUploadIdMarker"]) == page[-1]
        markers = {"KeyMarker": r["NextKeyMarker"], "UploadIdMarker": r["NextUploadIdMarker"]}


def test_list_multipart_uploads_pages_in_key_order(s3, bucket):
    """Pages of every size walk the uploads in (key, upload id) order, several uploads of
    one key split across pages included, with and without a prefix, from a key marker."""
    keys = ["m/k%02d" % i for i in range(9, -1, -1)] + ["m/k05", "m/k05", "n/x", "l"]
    made = sorted((k, s3.create_multipart_upload(Bucket=bucket, Key=k)["UploadId"])
                  for k in keys)
    try:
        for size in (1, 2, 3, 5, 1000):
            assert all_upload_pages(s3, bucket, size) == made
            assert all_upload_pages(s3, bucket, size, Prefix="m/") == [
                u for u in made if u[0].startswith("m/")]
        r = s3.list_multipart_uploads(Bucket=bucket, KeyMarker="m/k05", MaxUploads=3)
        assert [u["Key"] for u in r["Uploads"]] == ["m/k06", "m/k07", "m/k08"]
        r = s3.list_multipart_uploads(Bucket=bucket, KeyMarker="a", Prefix="n/")
        assert [u["Key"] for u in r["Uploads"]] == ["n/x"]
        r = s3.list_multipart_uploads(Bucket=bucket, KeyMarker="m/z", Prefix="m/")
        assert not r.get("Uploads") and r["IsTruncated"] is False
    finally:
        for k, uid in made:
            s3.abort_multipart_upload(Bucket=bucket, Key=k, UploadId=uid)
    assert not s3.list_multipart_uploads(Bucket=bucket).get("Uploads")


@pytest.mark.skipif(TEST_BACKEND != "rados", reason="the RADOS backend's key index")
def test_rados_uploads_of_an_older_bucket_get_their_key_index(request, s3, bucket):
    """A bucket whose uploads object predates the key index (no s3rdma.upkeys xattr, no
    '~' entries) gets it built the first time its uploads are listed."""
    cluster = request.getfixturevalue("ceph_cluster")
    made = sorted((k, s3.create_multipart_upload(Bucket=bucket, Key=k)["UploadId"])
                  for k in ("b", "a", "c"))
    oid = next(o for o in cluster.rados("ls").decode().split()
               if o.startswith("s3rdma.uploads.") and
               made[0][1].encode() in cluster.rados("listomapkeys", o))
    for key in cluster.rados("listomapkeys", oid).split(b"\n"):
        if key.startswith(b"~"):
            cluster.rados("rmomapkey", oid, key.decode("latin-1"))
    cluster.rados("rmxattr", oid, "s3rdma.upkeys")
    assert all_upload_pages(s3, bucket, 2) == made
    assert cluster.rados("getxattr", oid, "s3rdma.upkeys") == b"1"
    for k, uid in made:
        s3.abort_multipart_upload(Bucket=bucket, Key=k, UploadId=uid)
    assert not [k for k in cluster.rados("listomapkeys", oid).split(b"\n") if k]


def test_uploads_name_their_initiator_and_owner(s3, s3_user2, bucket):
    """ListMultipartUploads and ListParts show who initiated each upload, not the bucket's
    owner (ceph s3-tests' test_list_multipart_upload_owner); where object ownership gives the
    object to the bucket owner (BucketOwnerPreferred with bucket-owner-full-control), Owner
    is the bucket owner and Initiator still the user who created the upload, as S3 shows."""
    s3.put_bucket_acl(Bucket=bucket, ACL="public-read-write")
    mine = s3.create_multipart_upload(Bucket=bucket, Key="k1")["UploadId"]
    theirs = s3_user2.create_multipart_upload(Bucket=bucket, Key="k2")["UploadId"]
    s3.put_bucket_ownership_controls(Bucket=bucket, OwnershipControls={
        "Rules": [{"ObjectOwnership": "BucketOwnerPreferred"}]})
    given = s3_user2.create_multipart_upload(Bucket=bucket, Key="k3",
                                             ACL="bucket-owner-full-control")["UploadId"]
    want = {"k1": ("AKTESTUSER1", "AKTESTUSER1"), "k2": ("AKTESTUSER2", "AKTESTUSER2"),
            "k3": ("AKTESTUSER2", "AKTESTUSER1")}  # key: (Initiator, Owner)
    for client in (s3, s3_user2):
        ups = client.list_multipart_uploads(Bucket=bucket)["Uploads"]
        assert {u["Key"]: (u["Initiator"]["ID"], u["Owner"]["ID"]) for u in ups} == want
    for key, uid in (("k1", mine), ("k2", theirs), ("k3", given)):
        r = s3.list_parts(Bucket=bucket, Key=key, UploadId=uid)
        assert (r["Initiator"]["ID"], r["Owner"]["ID"]) == want[key]
    # The object a completed upload becomes is owned as its upload said.
    part = s3_user2.upload_part(Bucket=bucket, Key="k3", UploadId=given, PartNumber=1,
                                Body=b"x")["ETag"]
    s3_user2.complete_multipart_upload(Bucket=bucket, Key="k3", UploadId=given,
                                       MultipartUpload={"Parts": [{"PartNumber": 1,
                                                                   "ETag": part}]})
    assert s3.get_object_acl(Bucket=bucket, Key="k3")["Owner"]["ID"] == "AKTESTUSER1"
    s3.delete_object(Bucket=bucket, Key="k3")
    s3.abort_multipart_upload(Bucket=bucket, Key="k1", UploadId=mine)
    s3_user2.abort_multipart_upload(Bucket=bucket, Key="k2", UploadId=theirs)
    s3.delete_bucket_ownership_controls(Bucket=bucket)


def test_list_multipart_uploads(s3, bucket):
    ids = {}
    for key in ("u/a", "u/b", "v/c"):
        ids[key] = s3.create_multipart_upload(Bucket=bucket, Key=key)["UploadId"]
    second_a = s3.create_multipart_upload(Bucket=bucket, Key="u/a")["UploadId"]
    assert second_a != ids["u/a"]
    r = s3.list_multipart_uploads(Bucket=bucket)
    got = [(u["Key"], u["UploadId"]) for u in r["Uploads"]]
    assert sorted(got) == sorted([(k, v) for k, v in ids.items()] + [("u/a", second_a)])
    assert [k for k, _ in got] == sorted(k for k, _ in got)
    for u in r["Uploads"]:
        assert u["Initiated"]
    r = s3.list_multipart_uploads(Bucket=bucket, Prefix="u/")
    assert sorted(u["Key"] for u in r["Uploads"]) == ["u/a", "u/a", "u/b"]
    r = s3.list_multipart_uploads(Bucket=bucket, Delimiter="/")
    assert sorted(p["Prefix"] for p in r.get("CommonPrefixes", [])) == ["u/", "v/"]
    r = s3.list_multipart_uploads(Bucket=bucket, MaxUploads=2)
    assert len(r["Uploads"]) == 2 and r["IsTruncated"] is True
    r2 = s3.list_multipart_uploads(Bucket=bucket, KeyMarker=r["NextKeyMarker"],
                                   UploadIdMarker=r["NextUploadIdMarker"])
    assert len(r2["Uploads"]) == 2 and r2["IsTruncated"] is False
    for key, uid in list(ids.items()) + [("u/a", second_a)]:
        s3.abort_multipart_upload(Bucket=bucket, Key=key, UploadId=uid)
    assert not s3.list_multipart_uploads(Bucket=bucket).get("Uploads")


def test_upload_part_copy(s3, bucket, parts3):
    src = b"".join(parts3)
    s3.put_object(Bucket=bucket, Key="copy-src", Body=src)
    uid = s3.create_multipart_upload(Bucket=bucket, Key="copy-dst")["UploadId"]
    r1 = s3.upload_part_copy(Bucket=bucket, Key="copy-dst", UploadId=uid, PartNumber=1,
                             CopySource={"Bucket": bucket, "Key": "copy-src"},
                             CopySourceRange=f"bytes=0-{5 * MiB - 1}")
    first = src[:5 * MiB]
    assert r1["CopyPartResult"]["ETag"] == '"' + hashlib.md5(first).hexdigest() + '"'
    second = src[100:100 + 5 * MiB]
    r2 = s3.upload_part_copy(Bucket=bucket, Key="copy-dst", UploadId=uid, PartNumber=2,
                             CopySource={"Bucket": bucket, "Key": "copy-src"},
                             CopySourceRange=f"bytes=100-{100 + 5 * MiB - 1}")
    assert r2["CopyPartResult"]["ETag"] == '"' + hashlib.md5(second).hexdigest() + '"'
    r3 = s3.upload_part(Bucket=bucket, Key="copy-dst", UploadId=uid, PartNumber=3, Body=b"!!")
    s3.complete_multipart_upload(Bucket=bucket, Key="copy-dst", UploadId=uid, MultipartUpload={
        "Parts": [{"PartNumber": 1, "ETag": r1["CopyPartResult"]["ETag"]},
                  {"PartNumber": 2, "ETag": r2["CopyPartResult"]["ETag"]},
                  {"PartNumber": 3, "ETag": r3["ETag"]}]})
    got = s3.get_object(Bucket=bucket, Key="copy-dst")["Body"].read()
    assert got == first + second + b"!!"
    # whole-object part copy, and an out-of-range copy range
    uid = s3.create_multipart_upload(Bucket=bucket, Key="copy-dst2")["UploadId"]
    r = s3.upload_part_copy(Bucket=bucket, Key="copy-dst2", UploadId=uid, PartNumber=1,
                            CopySource={"Bucket": bucket, "Key": "copy-src"})
    assert r["CopyPartResult"]["ETag"] == '"' + hashlib.md5(src).hexdigest() + '"'
    with pytest.raises(ClientError) as ei:
        s3.upload_part_copy(Bucket=bucket, Key="copy-dst2", UploadId=uid, PartNumber=2,
                            CopySource={"Bucket": bucket, "Key": "copy-src"},
                            CopySourceRange=f"bytes={len(src)}-{len(src) + 10}")
    assert client_error(ei) == ("InvalidRange", 400)
    s3.abort_multipart_upload(Bucket=bucket, Key="copy-dst2", UploadId=uid)


def test_complete_malformed_xml(server, s3, bucket):
    uid = s3.create_multipart_upload(Bucket=bucket, Key="mx")["UploadId"]
    upload_parts(s3, bucket, "mx", uid, [b"abc"])
    for body in (b"<CompleteMultipartUpload><Part><PartNumber>1</PartNumber>",
                 b"garbage", b"",
                 b"<CompleteMultipartUpload></CompleteMultipartUpload>",
                 b"<CompleteMultipartUpload><Part><PartNumber>x</PartNumber><ETag>a</ETag></Part>"
                 b"</CompleteMultipartUpload>"):
        r = raw_request(server, "POST", f"/{bucket}/mx", query=[("uploadId", uid)], body=body)
        assert r.status == 400, (body, r)
        assert r.error_code() in ("MalformedXML", "InvalidPart", "InvalidArgument"), (body, r)
    with pytest.raises(ClientError):
        s3.head_object(Bucket=bucket, Key="mx")
    # still usable
    assert s3.list_parts(Bucket=bucket, Key="mx", UploadId=uid)["Parts"][0]["Size"] == 3
    s3.abort_multipart_upload(Bucket=bucket, Key="mx", UploadId=uid)


def test_boto3_managed_multipart_transfer(s3, bucket, tmp_path):
    """boto3's transfer manager: concurrent parts, then download with ranged GETs."""
    from boto3.s3.transfer import TransferConfig
    src = tmp_path / "src.bin"
    data = os.urandom(13 * MiB + 5)
    src.write_bytes(data)
    cfg = TransferConfig(multipart_threshold=5 * MiB, multipart_chunksize=5 * MiB, max_concurrency=4)
    s3.upload_file(str(src), bucket, "managed", Config=cfg)
    h = s3.head_object(Bucket=bucket, Key="managed")
    assert h["ETag"].endswith('-3"') and h["ContentLength"] == len(data)
    dst = tmp_path / "dst.bin"
    s3.download_file(bucket, "managed", str(dst), Config=cfg)
    assert dst.read_bytes() == data
