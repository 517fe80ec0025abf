"""Edge cases real S3 tools depend on, with the status and error code AWS S3 gives:
conditional writes, re-creating a bucket, deleting one with uploads left, empty listings
and metadata, part numbers and copy ranges, retried completes."""
import hashlib
import xml.etree.ElementTree as ET

import pytest
from botocore.exceptions import ClientError

from s3r_itest import S3_NS, assert_error, client_error, new_bucket_name, raw_request

MiB = 1024 * 1024


def with_headers(client, op, headers):
    """Calls of op on client send these extra headers (this boto3 predates conditional writes)."""
    def add(request, **kwargs):
        for name, value in headers.items():
            request.headers[name] = value
    client.meta.events.register(f"before-sign.s3.{op}", add)
    return add


def without(client, op, handler):
    client.meta.events.unregister(f"before-sign.s3.{op}", handler)


def mpu(s3, bucket, key, parts):
    uid = s3.create_multipart_upload(Bucket=bucket, Key=key)["UploadId"]
    done = [{"PartNumber": i + 1,
             "ETag": s3.upload_part(Bucket=bucket, Key=key, UploadId=uid, PartNumber=i + 1,
                                    Body=p)["ETag"]} for i, p in enumerate(parts)]
    return uid, done


# ---- conditional writes -----------------------------------------------------------------

def test_put_if_none_match_star(s3, bucket):
    h = with_headers(s3, "PutObject", {"If-None-Match": "*"})
    try:
        s3.put_object(Bucket=bucket, Key="k", Body=b"first")
        with pytest.raises(ClientError) as ei:
            s3.put_object(Bucket=bucket, Key="k", Body=b"second")
        assert_error(ei, "PreconditionFailed", 412)
    finally:
        without(s3, "PutObject", h)
    assert s3.get_object(Bucket=bucket, Key="k")["Body"].read() == b"first"


def test_put_if_match(s3, bucket):
    etag = s3.put_object(Bucket=bucket, Key="k", Body=b"v1")["ETag"]
    h = with_headers(s3, "PutObject", {"If-Match": '"0123456789abcdef0123456789abcdef"'})
    try:
        with pytest.raises(ClientError) as ei:
            s3.put_object(Bucket=bucket, Key="k", Body=b"v2")
        assert_error(ei, "PreconditionFailed", 412)
        with pytest.raises(ClientError) as ei:
            s3.put_object(Bucket=bucket, Key="absent", Body=b"v2")
        assert_error(ei, "NoSuchKey", 404)
    finally:
        without(s3, "PutObject", h)
    h = with_headers(s3, "PutObject", {"If-Match": etag})
    try:
        s3.put_object(Bucket=bucket, Key="k", Body=b"v2")
    finally:
        without(s3, "PutObject", h)
    assert s3.get_object(Bucket=bucket, Key="k")["Body"].read() == b"v2"
    with pytest.raises(ClientError):
        s3.head_object(Bucket=bucket, Key="absent")


def test_complete_if_none_match_star(s3, bucket):
    s3.put_object(Bucket=bucket, Key="k", Body=b"existing")
    uid, parts = mpu(s3, bucket, "k", [b"part"])
    h = with_headers(s3, "CompleteMultipartUpload", {"If-None-Match": "*"})
    try:
        with pytest.raises(ClientError) as ei:
            s3.complete_multipart_upload(Bucket=bucket, Key="k", UploadId=uid,
                                         MultipartUpload={"Parts": parts})
        assert_error(ei, "PreconditionFailed", 412)
        # the upload is still there, and completes once the key is free
        s3.delete_object(Bucket=bucket, Key="k")
        s3.complete_multipart_upload(Bucket=bucket, Key="k", UploadId=uid,
                                     MultipartUpload={"Parts": parts})
    finally:
        without(s3, "CompleteMultipartUpload", h)
    assert s3.get_object(Bucket=bucket, Key="k")["Body"].read() == b"part"


def test_complete_if_match(s3, bucket):
    uid, parts = mpu(s3, bucket, "k", [b"part"])
    h = with_headers(s3, "CompleteMultipartUpload", {"If-Match": '"feedfacefeedfacefeedfacefeedface"'})
    try:
        with pytest.raises(ClientError) as ei:
            s3.complete_multipart_upload(Bucket=bucket, Key="k", UploadId=uid,
                                         MultipartUpload={"Parts": parts})
        assert_error(ei, "NoSuchKey", 404)
    finally:
        without(s3, "CompleteMultipartUpload", h)


# ---- buckets -------------------------------------------------------------------------------

def test_recreating_your_own_bucket_in_us_east_1(s3, bucket):
    s3.put_object(Bucket=bucket, Key="keep", Body=b"x")
    r = s3.create_bucket(Bucket=bucket)
    assert r["ResponseMetadata"]["HTTPStatusCode"] == 200
    assert [o["Key"] for o in s3.list_objects_v2(Bucket=bucket)["Contents"]] == ["keep"]


def test_another_owners_bucket_name(s3_user2, bucket):
    with pytest.raises(ClientError) as ei:
        s3_user2.create_bucket(Bucket=bucket)
    assert_error(ei, "BucketAlreadyExists", 409)


def test_recreating_your_own_bucket_elsewhere(make_server):
    from s3r_itest import boto_client
    srv = make_server(extra_args=("--region", "eu-west-1"))
    c = boto_client(srv, region_name="eu-west-1")
    name = new_bucket_name()
    cfg = {"LocationConstraint": "eu-west-1"}
    c.create_bucket(Bucket=name, CreateBucketConfiguration=cfg)
    with pytest.raises(ClientError) as ei:
        c.create_bucket(Bucket=name, CreateBucketConfiguration=cfg)
    assert_error(ei, "BucketAlreadyOwnedByYou", 409)


def test_delete_bucket_aborts_uploads_left(s3):
    name = new_bucket_name()
    s3.create_bucket(Bucket=name)
    mpu(s3, name, "a", [b"part"])
    s3.create_multipart_upload(Bucket=name, Key="b")
    s3.delete_bucket(Bucket=name)
    with pytest.raises(ClientError) as ei:
        s3.list_multipart_uploads(Bucket=name)
    assert_error(ei, "NoSuchBucket", 404)
    # a bucket with objects is still refused, and keeps its uploads
    s3.create_bucket(Bucket=name)
    s3.put_object(Bucket=name, Key="obj", Body=b"x")
    s3.create_multipart_upload(Bucket=name, Key="c")
    with pytest.raises(ClientError) as ei:
        s3.delete_bucket(Bucket=name)
    assert_error(ei, "BucketNotEmpty", 409)
    assert len(s3.list_multipart_uploads(Bucket=name)["Uploads"]) == 1
    s3.delete_object(Bucket=name, Key="obj")
    s3.delete_bucket(Bucket=name)


# ---- listings ------------------------------------------------------------------------------

def test_max_keys_zero(s3, bucket):
    s3.put_object(Bucket=bucket, Key="a", Body=b"x")
    r = s3.list_objects_v2(Bucket=bucket, MaxKeys=0)
    assert r["KeyCount"] == 0 and r["IsTruncated"] is False and "Contents" not in r
    r = s3.list_objects(Bucket=bucket, MaxKeys=0)
    assert r["IsTruncated"] is False and "Contents" not in r


def _xml(server, bucket, query):
    r = raw_request(server, "GET", f"/{bucket}", query=query)
    assert r.status == 200, r.body
    root = ET.fromstring(r.body)
    return lambda path: [e.text for e in root.findall("/".join(f"{S3_NS}{p}" for p in path.split("/")))]


def test_encoding_type_url_v1(server, s3, bucket):
    for k in ["a b/1", "a b/2", "c+d"]:
        s3.put_object(Bucket=bucket, Key=k, Body=b"x")
    f = _xml(server, bucket, [("encoding-type", "url"), ("delimiter", " "), ("prefix", "a"),
                              ("marker", "a !")])
    assert f("Prefix") == ["a"] and f("Delimiter") == ["%20"] and f("Marker") == ["a%20%21"]
    assert f("CommonPrefixes/Prefix") == ["a%20"]
    f = _xml(server, bucket, [("encoding-type", "url"), ("max-keys", "1"), ("delimiter", "/")])
    assert f("Contents/Key") == [] and f("CommonPrefixes/Prefix") == ["a%20b/"]
    assert f("NextMarker") == ["a%20b/"]


def test_encoding_type_url_v2(server, s3, bucket):
    s3.put_object(Bucket=bucket, Key="x y", Body=b"x")
    s3.put_object(Bucket=bucket, Key="z=1", Body=b"x")
    f = _xml(server, bucket, [("list-type", "2"), ("encoding-type", "url"), ("start-after", "x "),
                              ("max-keys", "1")])
    assert f("StartAfter") == ["x%20"] and f("Contents/Key") == ["x%20y"]
    token = f("NextContinuationToken")[0]
    f = _xml(server, bucket, [("list-type", "2"), ("encoding-type", "url"),
                              ("continuation-token", token)])
    assert f("Contents/Key") == ["z%3D1"] and f("ContinuationToken") == [token]


# ---- objects -------------------------------------------------------------------------------

def test_empty_user_metadata_value(s3, bucket):
    s3.put_object(Bucket=bucket, Key="k", Body=b"x", Metadata={"empty": "", "full": "v"})
    assert s3.head_object(Bucket=bucket, Key="k")["Metadata"] == {"empty": "", "full": "v"}


def test_part_number_errors(s3, bucket):
    s3.put_object(Bucket=bucket, Key="simple", Body=b"0123456789")
    with pytest.raises(ClientError) as ei:
        s3.head_object(Bucket=bucket, Key="simple", PartNumber=2)
    assert client_error(ei)[1] == 416
    uid, parts = mpu(s3, bucket, "mp", [b"a" * (5 * MiB), b"b"])
    s3.complete_multipart_upload(Bucket=bucket, Key="mp", UploadId=uid,
                                 MultipartUpload={"Parts": parts})
    with pytest.raises(ClientError) as ei:
        s3.get_object(Bucket=bucket, Key="mp", PartNumber=3)
    assert_error(ei, "InvalidPartNumber", 416)


def test_upload_part_copy_range_outside_source(s3, bucket):
    s3.put_object(Bucket=bucket, Key="src", Body=b"0123456789")
    uid = s3.create_multipart_upload(Bucket=bucket, Key="dst")["UploadId"]
    with pytest.raises(ClientError) as ei:
        s3.upload_part_copy(Bucket=bucket, Key="dst", UploadId=uid, PartNumber=1,
                            CopySource={"Bucket": bucket, "Key": "src"},
                            CopySourceRange="bytes=5-10")
    assert_error(ei, "InvalidRange", 400)
    r = s3.upload_part_copy(Bucket=bucket, Key="dst", UploadId=uid, PartNumber=1,
                            CopySource={"Bucket": bucket, "Key": "src"},
                            CopySourceRange="bytes=5-9")
    assert r["CopyPartResult"]["ETag"] == '"%s"' % hashlib.md5(b"56789").hexdigest()


def test_part_uploaded_twice_uses_the_last(s3, bucket):
    uid = s3.create_multipart_upload(Bucket=bucket, Key="k")["UploadId"]
    s3.upload_part(Bucket=bucket, Key="k", UploadId=uid, PartNumber=1, Body=b"first")
    etag = s3.upload_part(Bucket=bucket, Key="k", UploadId=uid, PartNumber=1,
                          Body=b"second")["ETag"]
    s3.complete_multipart_upload(Bucket=bucket, Key="k", UploadId=uid, MultipartUpload={
        "Parts": [{"PartNumber": 1, "ETag": etag}]})
    assert s3.get_object(Bucket=bucket, Key="k")["Body"].read() == b"second"


def test_retried_complete_answers_the_same(s3, bucket):
    uid, parts = mpu(s3, bucket, "k", [b"a" * (5 * MiB), b"tail"])
    first = s3.complete_multipart_upload(Bucket=bucket, Key="k", UploadId=uid,
                                         MultipartUpload={"Parts": parts})
    again = s3.complete_multipart_upload(Bucket=bucket, Key="k", UploadId=uid,
                                         MultipartUpload={"Parts": parts})
    assert again["ETag"] == first["ETag"]
    # other parts than those completed: the upload is gone
    with pytest.raises(ClientError) as ei:
        s3.complete_multipart_upload(Bucket=bucket, Key="k", UploadId=uid,
                                     MultipartUpload={"Parts": parts[:1]})
    assert_error(ei, "NoSuchUpload", 404)
