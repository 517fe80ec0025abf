"""Checksums: x-amz-checksum-* (every algorithm current AWS SDKs send: CRC32, CRC32C,
CRC64NVME, SHA1, SHA256; as a header and as an aws-chunked trailer), Content-MD5,
x-amz-content-sha256. Over HTTP; tests/integration/client/test_checksums_rdma.py holds the
token and native paths to the same checks."""
import base64
import hashlib
import os

import botocore.httpchecksum
import pytest
from botocore.exceptions import ClientError

from s3r_itest import CHECKSUMS, client_error, crc32_b64, md5_b64, raw_request
from test_s3_streaming import put_signed_trailer, put_trailer

ALGOS = CHECKSUMS


@pytest.mark.parametrize("algo", list(ALGOS))
def test_put_with_checksum_algorithm(s3, bucket, algo):
    if algo.lower() not in botocore.httpchecksum._CHECKSUM_CLS:
        pytest.skip(f"this botocore cannot send {algo} (the raw tests below do)")
    field, fn, _ = ALGOS[algo]
    body = os.urandom(100_000)
    r = s3.put_object(Bucket=bucket, Key=f"ck-{algo}", Body=body, ChecksumAlgorithm=algo)
    assert r.get(field) == fn(body)
    h = s3.head_object(Bucket=bucket, Key=f"ck-{algo}", ChecksumMode="ENABLED")
    assert h.get(field) == fn(body)
    g = s3.get_object(Bucket=bucket, Key=f"ck-{algo}", ChecksumMode="ENABLED")
    assert g.get(field) == fn(body)
    assert g["Body"].read() == body  # botocore also validates the checksum while reading


@pytest.mark.parametrize("algo", list(ALGOS))
def test_wrong_checksum_rejected(server, s3, bucket, algo):
    _, fn, header = ALGOS[algo]
    body = b"payload for checksum" * 50
    wrong = fn(b"something else")
    r = raw_request(server, "PUT", f"/{bucket}/bad-{algo}", body=body, headers={header: wrong})
    assert r.status == 400 and r.error_code() == "BadDigest", r
    with pytest.raises(ClientError) as ei:
        s3.head_object(Bucket=bucket, Key=f"bad-{algo}")
    assert client_error(ei)[1] == 404
    # and the right one is accepted, stored, and returned
    r = raw_request(server, "PUT", f"/{bucket}/good-{algo}", body=body, headers={header: fn(body)})
    assert r.status == 200, r
    assert r.headers.get(header) == fn(body)
    r = raw_request(server, "HEAD", f"/{bucket}/good-{algo}", headers={"x-amz-checksum-mode": "ENABLED"})
    assert r.headers.get(header) == fn(body)


@pytest.mark.parametrize("algo", list(ALGOS))
def test_sdk_checksum_algorithm_is_computed(server, bucket, algo):
    """x-amz-sdk-checksum-algorithm without a value: the server computes it and answers it."""
    _, fn, header = ALGOS[algo]
    body = os.urandom(5000)
    r = raw_request(server, "PUT", f"/{bucket}/sdk-{algo}", body=body,
                    headers={"x-amz-sdk-checksum-algorithm": algo})
    assert r.status == 200 and r.headers.get(header) == fn(body), r


@pytest.mark.parametrize("how", ["unsigned", "signed"])
@pytest.mark.parametrize("algo", list(ALGOS))
def test_trailer_checksum(server, s3, bucket, algo, how):
    """Each algorithm as an aws-chunked trailer (STREAMING-UNSIGNED-PAYLOAD-TRAILER and
    STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER): verified, stored, returned; a wrong value
    is 400 BadDigest and stores nothing."""
    _, fn, name = ALGOS[algo]
    chunks = [os.urandom(65536), os.urandom(999)]
    data = b"".join(chunks)

    def put(key, value):
        if how == "unsigned":
            return put_trailer(server, bucket, key, chunks, name, value)
        return put_signed_trailer(server, bucket, key, chunks, value, name=name)

    r = put(f"tr-{how}-{algo}", fn(data))
    assert r.status == 200 and r.headers.get(name) == fn(data), r
    r = raw_request(server, "HEAD", f"/{bucket}/tr-{how}-{algo}",
                    headers={"x-amz-checksum-mode": "ENABLED"})
    assert r.headers.get(name) == fn(data), r
    assert s3.get_object(Bucket=bucket, Key=f"tr-{how}-{algo}")["Body"].read() == data
    r = put(f"trbad-{how}-{algo}", fn(b"other"))
    assert r.status == 400 and r.error_code() == "BadDigest", r
    assert raw_request(server, "HEAD", f"/{bucket}/trbad-{how}-{algo}").status == 404


def test_malformed_checksum_value(server, bucket):
    r = raw_request(server, "PUT", f"/{bucket}/malformed-ck", body=b"abc",
                    headers={"x-amz-checksum-crc32": "not base64!!"})
    assert r.status == 400, r


def test_checksum_not_returned_without_mode(s3, bucket):
    s3.put_object(Bucket=bucket, Key="nomode", Body=b"abc", ChecksumAlgorithm="CRC32")
    h = s3.head_object(Bucket=bucket, Key="nomode")
    assert "ChecksumCRC32" not in h


def test_checksum_not_returned_for_a_range(s3, bucket):
    """A range is not the object: S3 sends no checksum with it, and SDKs that check a GET's
    checksum (the AWS SDKs since 2025 by default) would fail the range against the whole
    object's. The whole object still gets it."""
    body = os.urandom(10_000)
    s3.put_object(Bucket=bucket, Key="ranged", Body=body, ChecksumAlgorithm="CRC32")
    g = s3.get_object(Bucket=bucket, Key="ranged", Range="bytes=10-99", ChecksumMode="ENABLED")
    assert g["Body"].read() == body[10:100]
    assert "ChecksumCRC32" not in g and "ChecksumType" not in g, g
    assert s3.get_object(Bucket=bucket, Key="ranged", ChecksumMode="ENABLED")["ChecksumCRC32"] == \
        crc32_b64(body)


def test_content_md5(s3, server, bucket):
    body = b"md5 me" * 100
    r = s3.put_object(Bucket=bucket, Key="md5ok", Body=body, ContentMD5=md5_b64(body))
    assert r["ETag"] == '"' + hashlib.md5(body).hexdigest() + '"'
    r = raw_request(server, "PUT", f"/{bucket}/md5bad", body=body,
                    headers={"Content-MD5": md5_b64(b"other")})
    assert r.status == 400 and r.error_code() == "BadDigest", r
    r = raw_request(server, "PUT", f"/{bucket}/md5inv", body=body,
                    headers={"Content-MD5": "not-an-md5"})
    assert r.status == 400 and r.error_code() == "InvalidDigest", r
    r = raw_request(server, "PUT", f"/{bucket}/md5short", body=body,
                    headers={"Content-MD5": base64.b64encode(b"short").decode()})
    assert r.status == 400 and r.error_code() == "InvalidDigest", r
    for k in ("md5bad", "md5inv", "md5short"):
        with pytest.raises(ClientError):
            s3.head_object(Bucket=bucket, Key=k)


def test_content_md5_on_upload_part(s3, server, bucket):
    uid = s3.create_multipart_upload(Bucket=bucket, Key="mpmd5")["UploadId"]
    r = raw_request(server, "PUT", f"/{bucket}/mpmd5", query=[("partNumber", "1"), ("uploadId", uid)],
                    body=b"part", headers={"Content-MD5": md5_b64(b"trap")})
    assert r.status == 400 and r.error_code() == "BadDigest", r
    assert not s3.list_parts(Bucket=bucket, Key="mpmd5", UploadId=uid).get("Parts")
    s3.abort_multipart_upload(Bucket=bucket, Key="mpmd5", UploadId=uid)


def test_content_sha256_mismatch(server, s3, bucket):
    body = b"signed payload"
    r = raw_request(server, "PUT", f"/{bucket}/shabad", body=body,
                    payload_hash=hashlib.sha256(b"different").hexdigest())
    assert r.status == 400 and r.error_code() == "XAmzContentSHA256Mismatch", r
    with pytest.raises(ClientError):
        s3.head_object(Bucket=bucket, Key="shabad")


def test_unsigned_payload(server, s3, bucket):
    r = raw_request(server, "PUT", f"/{bucket}/unsigned", body=b"unsigned body",
                    payload_hash="UNSIGNED-PAYLOAD")
    assert r.status == 200, r
    assert s3.get_object(Bucket=bucket, Key="unsigned")["Body"].read() == b"unsigned body"


def test_checksum_on_upload_part(s3, bucket):
    uid = s3.create_multipart_upload(Bucket=bucket, Key="mpck", ChecksumAlgorithm="CRC32")["UploadId"]
    data = b"x" * 1000
    r = s3.upload_part(Bucket=bucket, Key="mpck", UploadId=uid, PartNumber=1, Body=data,
                       ChecksumAlgorithm="CRC32")
    assert r.get("ChecksumCRC32") == crc32_b64(data)
    s3.abort_multipart_upload(Bucket=bucket, Key="mpck", UploadId=uid)
