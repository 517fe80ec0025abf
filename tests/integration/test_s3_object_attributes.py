"""GetObjectAttributes (GET /bucket/key?attributes), as S3 answers it: the attributes
x-amz-object-attributes names (ETag unquoted, Checksum with its type, ObjectParts of a
multipart object paged by x-amz-max-parts / x-amz-part-number-marker, StorageClass,
ObjectSize), the errors S3 gives, and the same answer on both backends."""
import pytest
from botocore.exceptions import ClientError

from s3r_itest import crc32_b64, raw_request, sha256_b64

MIB = 1024 * 1024
ALL = ["ETag", "Checksum", "ObjectParts", "StorageClass", "ObjectSize"]


def _code(ei):
    e = ei.value.response
    return e["ResponseMetadata"]["HTTPStatusCode"], e["Error"]["Code"]


def test_single_part_object(s3, bucket):
    body = b"A" * 1024
    etag = s3.put_object(Bucket=bucket, Key="k", Body=body, ChecksumAlgorithm="SHA256",
                         ChecksumSHA256=sha256_b64(body))["ETag"].strip('"')
    r = s3.get_object_attributes(Bucket=bucket, Key="k", ObjectAttributes=ALL)
    assert r["ETag"] == etag and r["ObjectSize"] == 1024 and r["StorageClass"] == "STANDARD"
    assert r["Checksum"]["ChecksumSHA256"] == sha256_b64(body)
    assert "ObjectParts" not in r and "VersionId" not in r and "DeleteMarker" not in r
    assert r["LastModified"] == s3.head_object(Bucket=bucket, Key="k")["LastModified"]


def test_only_what_is_asked(s3, server, bucket):
    s3.put_object(Bucket=bucket, Key="k", Body=b"foo", ChecksumAlgorithm="CRC32")
    r = s3.get_object_attributes(Bucket=bucket, Key="k", ObjectAttributes=["ObjectSize"])
    assert r["ObjectSize"] == 3
    assert not {"ETag", "Checksum", "StorageClass", "ObjectParts"} & set(r)
    r = raw_request(server, "GET", f"/{bucket}/k", query=[("attributes", None)],
                    headers={"x-amz-object-attributes": " Checksum ,ETag"})
    assert r.status == 200, r
    assert b"<ChecksumCRC32>" + crc32_b64(b"foo").encode() in r.body
    assert b"<ChecksumType>FULL_OBJECT</ChecksumType>" in r.body
    assert b"<ObjectSize>" not in r.body and b"<ETag>" in r.body


def test_object_without_checksum_has_no_checksum_element(s3, server, bucket):
    raw_request(server, "PUT", f"/{bucket}/k", body=b"x")  # no checksum sent
    r = s3.get_object_attributes(Bucket=bucket, Key="k", ObjectAttributes=ALL)
    assert "Checksum" not in r and r["ObjectSize"] == 1


def _multipart(s3, bucket, key, sizes):
    uid = s3.create_multipart_upload(Bucket=bucket, Key=key)["UploadId"]
    parts = [{"PartNumber": i + 1,
              "ETag": s3.upload_part(Bucket=bucket, Key=key, UploadId=uid, PartNumber=i + 1,
                                     Body=bytes([65 + i]) * n)["ETag"]}
             for i, n in enumerate(sizes)]
    return s3.complete_multipart_upload(Bucket=bucket, Key=key, UploadId=uid,
                                        MultipartUpload={"Parts": parts})["ETag"].strip('"')


def test_multipart_object_parts(s3, bucket):
    sizes = [5 * MIB, 5 * MIB, 7]
    etag = _multipart(s3, bucket, "k", sizes)
    r = s3.get_object_attributes(Bucket=bucket, Key="k", ObjectAttributes=ALL)
    assert r["ETag"] == etag and r["ObjectSize"] == sum(sizes)
    op = r["ObjectParts"]
    assert op["TotalPartsCount"] == 3 and op["IsTruncated"] is False
    assert [(p["PartNumber"], p["Size"]) for p in op["Parts"]] == [(1, 5 * MIB), (2, 5 * MIB),
                                                                    (3, 7)]


def test_multipart_parts_paging(s3, bucket):
    _multipart(s3, bucket, "k", [5 * MIB, 5 * MIB, 5 * MIB, 3])
    r = s3.get_object_attributes(Bucket=bucket, Key="k", ObjectAttributes=["ObjectParts"],
                                 MaxParts=1, PartNumberMarker=2)["ObjectParts"]
    assert r["MaxParts"] == 1 and r["PartNumberMarker"] == 2 and r["IsTruncated"] is True
    assert r["NextPartNumberMarker"] == 3 and r["TotalPartsCount"] == 4
    assert [(p["PartNumber"], p["Size"]) for p in r["Parts"]] == [(3, 5 * MIB)]
    r = s3.get_object_attributes(Bucket=bucket, Key="k", ObjectAttributes=["ObjectParts"],
                                 MaxParts=10, PartNumberMarker=3)["ObjectParts"]
    assert r["IsTruncated"] is False and [p["PartNumber"] for p in r["Parts"]] == [4]


@pytest.mark.parametrize("names,why", [
    (None, "missing or empty"), ("", "missing or empty"), ("ETag,Colour", "Invalid attribute"),
    ("etag", "Invalid attribute")])
def test_bad_attribute_names(server, s3, bucket, names, why):
    s3.put_object(Bucket=bucket, Key="k", Body=b"x")
    headers = {} if names is None else {"x-amz-object-attributes": names}
    r = raw_request(server, "GET", f"/{bucket}/k", query=[("attributes", None)], headers=headers)
    assert r.status == 400 and r.error_code() == "InvalidArgument" and why.encode() in r.body, r


@pytest.mark.parametrize("header", ["x-amz-max-parts", "x-amz-part-number-marker"])
def test_bad_part_paging(server, s3, bucket, header):
    s3.put_object(Bucket=bucket, Key="k", Body=b"x")
    r = raw_request(server, "GET", f"/{bucket}/k", query=[("attributes", None)],
                    headers={"x-amz-object-attributes": "ObjectParts", header: "-1"})
    assert r.status == 400 and r.error_code() == "InvalidArgument", r


def test_missing_object_and_access(s3, s3_user2, bucket):
    with pytest.raises(ClientError) as ei:
        s3.get_object_attributes(Bucket=bucket, Key="absent", ObjectAttributes=ALL)
    assert _code(ei) == (404, "NoSuchKey")
    s3.put_object(Bucket=bucket, Key="k", Body=b"x")
    with pytest.raises(ClientError) as ei:
        s3_user2.get_object_attributes(Bucket=bucket, Key="k", ObjectAttributes=ALL)
    assert _code(ei) == (403, "AccessDenied")
    s3.put_object(Bucket=bucket, Key="pub", Body=b"x", ACL="public-read")
    assert s3_user2.get_object_attributes(Bucket=bucket, Key="pub",
                                          ObjectAttributes=["ObjectSize"])["ObjectSize"] == 1


def test_version_null(s3, bucket):
    s3.put_object(Bucket=bucket, Key="k", Body=b"xy")
    r = s3.get_object_attributes(Bucket=bucket, Key="k", VersionId="null",
                                 ObjectAttributes=["ObjectSize"])
    assert r["VersionId"] == "null" and r["ObjectSize"] == 2
