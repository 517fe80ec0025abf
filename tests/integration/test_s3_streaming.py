"""aws-chunked bodies (signed streaming, unsigned payload with trailer) and Expect: 100-continue,
crafted by hand: botocore does not send these over plain HTTP."""
import os
import socket

import pytest
from botocore.exceptions import ClientError

from s3r_itest import (USERS, amz_now, crc32_b64, crc32c_b64, raw_request, recv_http_response,
                       sha256_hex, sign_headers, signed_chunked_body, signed_chunked_length,
                       signed_chunked_trailer_body, unsigned_trailer_body, uri_encode)


def put_signed_streaming(server, bucket, key, chunks, tamper_chunk=None, mutate=None,
                         decoded_length=None, user=USERS[0], extra_headers=None):
    sizes = [len(c) for c in chunks]
    amz_date = amz_now()
    path = uri_encode(f"/{bucket}/{key}", encode_slash=False)
    headers = {"Host": server.host, "Content-Encoding": "aws-chunked",
               "x-amz-decoded-content-length": str(sum(sizes) if decoded_length is None else decoded_length),
               "Content-Length": str(signed_chunked_length(sizes))}
    headers.update(extra_headers or {})
    sig, scope, key_bytes = sign_headers("PUT", path, [], headers, "STREAMING-AWS4-HMAC-SHA256-PAYLOAD",
                                         user[0], user[1], amz_date=amz_date,
                                         signed_extra=("content-encoding", "content-length"))
    body = signed_chunked_body(chunks, key_bytes, amz_date, scope, sig, tamper_chunk=tamper_chunk)
    if mutate:
        body = mutate(body)
    return raw_request(server, "PUT", f"/{bucket}/{key}", headers=headers, body=body, sign=False)


def test_signed_streaming_put(server, s3, bucket):
    chunks = [os.urandom(65536), os.urandom(65536), os.urandom(100)]
    r = put_signed_streaming(server, bucket, "stream/ok", chunks, extra_headers={"Content-Type": "text/x-s"})
    assert r.status == 200, r
    got = s3.get_object(Bucket=bucket, Key="stream/ok")
    body = got["Body"].read()
    assert body == b"".join(chunks)
    assert got["ContentLength"] == sum(map(len, chunks))
    assert "ContentEncoding" not in got, got  # aws-chunked is a transfer encoding, not stored
    assert got["ContentType"] == "text/x-s"


def test_signed_streaming_single_and_large_chunks(server, s3, bucket):
    chunks = [os.urandom(1 << 20), os.urandom(3 << 20)]
    r = put_signed_streaming(server, bucket, "stream/large", chunks)
    assert r.status == 200, r
    assert s3.get_object(Bucket=bucket, Key="stream/large")["Body"].read() == b"".join(chunks)
    r = put_signed_streaming(server, bucket, "stream/empty", [])
    assert r.status == 200, r
    assert s3.get_object(Bucket=bucket, Key="stream/empty")["Body"].read() == b""


@pytest.mark.parametrize("tamper", [0, 1, 2])
def test_signed_streaming_tampered_signature(server, s3, bucket, tamper):
    chunks = [b"a" * 8192, b"b" * 100]
    key = f"stream/tampered{tamper}"
    r = put_signed_streaming(server, bucket, key, chunks, tamper_chunk=tamper)
    assert r.status == 403 and r.error_code() == "SignatureDoesNotMatch", r
    with pytest.raises(ClientError) as ei:
        s3.head_object(Bucket=bucket, Key=key)
    assert ei.value.response["ResponseMetadata"]["HTTPStatusCode"] == 404


def test_signed_streaming_tampered_data(server, s3, bucket):
    chunks = [b"a" * 8192, b"b" * 100]

    def flip(body):
        i = body.index(b"aaaa")
        return body[:i] + b"X" + body[i + 1:]

    r = put_signed_streaming(server, bucket, "stream/data-tampered", chunks, mutate=flip)
    assert r.status == 403 and r.error_code() == "SignatureDoesNotMatch", r
    with pytest.raises(ClientError):
        s3.head_object(Bucket=bucket, Key="stream/data-tampered")


def test_signed_streaming_wrong_decoded_length(server, s3, bucket):
    r = put_signed_streaming(server, bucket, "stream/len", [b"x" * 100], decoded_length=50)
    assert r.status == 400, r
    with pytest.raises(ClientError):
        s3.head_object(Bucket=bucket, Key="stream/len")


def test_signed_streaming_malformed_framing(server, s3, bucket):
    def broken(body):  # same length, CRLF after the first size line replaced
        return body.replace(b"\r\n", b"XX", 1)

    r = put_signed_streaming(server, bucket, "stream/framing", [b"x" * 100], mutate=broken)
    assert r.status == 400 and r.error_code() == "IncompleteBody", r
    with pytest.raises(ClientError):
        s3.head_object(Bucket=bucket, Key="stream/framing")


# ----------------------------------------------------------------- signed payload + trailer

def put_signed_trailer(server, bucket, key, chunks, value, tamper_trailer=False,
                       name="x-amz-checksum-crc32"):
    amz_date = amz_now()
    path = uri_encode(f"/{bucket}/{key}", encode_slash=False)
    headers = {"Host": server.host, "Content-Encoding": "aws-chunked",
               "x-amz-decoded-content-length": str(sum(map(len, chunks))),
               "x-amz-trailer": name}
    sig, scope, key_bytes = sign_headers("PUT", path, [], headers,
                                         "STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER", *USERS[0],
                                         amz_date=amz_date, signed_extra=("content-encoding",))
    body = signed_chunked_trailer_body(chunks, key_bytes, amz_date, scope, sig,
                                       [(name, value)], tamper_trailer=tamper_trailer)
    headers["Content-Length"] = str(len(body))
    return raw_request(server, "PUT", f"/{bucket}/{key}", headers=headers, body=body, sign=False)


def test_signed_streaming_with_trailer(server, s3, bucket):
    chunks = [os.urandom(65536), os.urandom(777)]
    data = b"".join(chunks)
    r = put_signed_trailer(server, bucket, "strailer/ok", chunks, crc32_b64(data))
    assert r.status == 200, r
    h = s3.head_object(Bucket=bucket, Key="strailer/ok", ChecksumMode="ENABLED")
    assert h.get("ChecksumCRC32") == crc32_b64(data)
    assert s3.get_object(Bucket=bucket, Key="strailer/ok")["Body"].read() == data


def test_signed_streaming_trailer_tampered(server, s3, bucket):
    data = os.urandom(1000)
    r = put_signed_trailer(server, bucket, "strailer/sig", [data], crc32_b64(data), tamper_trailer=True)
    assert r.status == 403 and r.error_code() == "SignatureDoesNotMatch", r
    r = put_signed_trailer(server, bucket, "strailer/ck", [data], crc32_b64(b"other"))
    assert r.status == 400, r
    for k in ("strailer/sig", "strailer/ck"):
        with pytest.raises(ClientError):
            s3.head_object(Bucket=bucket, Key=k)


# ----------------------------------------------------------------- unsigned payload + trailer

def put_trailer(server, bucket, key, chunks, trailer_name, trailer_value, declared=None):
    body = unsigned_trailer_body(chunks, [(trailer_name, trailer_value)])
    headers = {"Content-Encoding": "aws-chunked",
               "x-amz-decoded-content-length": str(sum(map(len, chunks))),
               "x-amz-trailer": declared or trailer_name}
    return raw_request(server, "PUT", f"/{bucket}/{key}", headers=headers, body=body,
                       payload_hash="STREAMING-UNSIGNED-PAYLOAD-TRAILER",
                       signed_extra=("content-encoding",))


def test_unsigned_trailer_crc32(server, s3, bucket):
    chunks = [os.urandom(70000), os.urandom(12345)]
    data = b"".join(chunks)
    r = put_trailer(server, bucket, "trailer/ok", chunks, "x-amz-checksum-crc32", crc32_b64(data))
    assert r.status == 200, r
    h = s3.head_object(Bucket=bucket, Key="trailer/ok", ChecksumMode="ENABLED")
    assert h.get("ChecksumCRC32") == crc32_b64(data)
    assert h["ContentLength"] == len(data)
    assert s3.get_object(Bucket=bucket, Key="trailer/ok")["Body"].read() == data


def test_unsigned_trailer_crc32c(server, s3, bucket):
    data = os.urandom(5000)
    r = put_trailer(server, bucket, "trailer/c", [data], "x-amz-checksum-crc32c", crc32c_b64(data))
    assert r.status == 200, r
    h = s3.head_object(Bucket=bucket, Key="trailer/c", ChecksumMode="ENABLED")
    assert h.get("ChecksumCRC32C") == crc32c_b64(data)


def test_unsigned_trailer_wrong_checksum(server, s3, bucket):
    data = os.urandom(5000)
    r = put_trailer(server, bucket, "trailer/bad", [data], "x-amz-checksum-crc32",
                    crc32_b64(data + b"!"))
    assert r.status == 400 and r.error_code() == "BadDigest", r
    with pytest.raises(ClientError):
        s3.head_object(Bucket=bucket, Key="trailer/bad")


def test_unsigned_trailer_missing_trailer(server, s3, bucket):
    data = b"abc" * 100
    body = unsigned_trailer_body([data], [])
    headers = {"Content-Encoding": "aws-chunked", "x-amz-decoded-content-length": str(len(data)),
               "x-amz-trailer": "x-amz-checksum-crc32"}
    r = raw_request(server, "PUT", f"/{bucket}/trailer/missing", headers=headers, body=body,
                    payload_hash="STREAMING-UNSIGNED-PAYLOAD-TRAILER")
    assert r.status == 400, r
    with pytest.raises(ClientError):
        s3.head_object(Bucket=bucket, Key="trailer/missing")


def test_unsigned_trailer_upload_part(server, s3, bucket):
    uid = s3.create_multipart_upload(Bucket=bucket, Key="trailer/mp")["UploadId"]
    data = os.urandom(3000)
    body = unsigned_trailer_body([data], [("x-amz-checksum-crc32", crc32_b64(data))])
    r = raw_request(server, "PUT", f"/{bucket}/trailer/mp",
                    query=[("partNumber", "1"), ("uploadId", uid)],
                    headers={"Content-Encoding": "aws-chunked",
                             "x-amz-decoded-content-length": str(len(data)),
                             "x-amz-trailer": "x-amz-checksum-crc32"},
                    body=body, payload_hash="STREAMING-UNSIGNED-PAYLOAD-TRAILER")
    assert r.status == 200, r
    import hashlib
    assert r.headers["etag"] == '"' + hashlib.md5(data).hexdigest() + '"'
    s3.complete_multipart_upload(Bucket=bucket, Key="trailer/mp", UploadId=uid, MultipartUpload={
        "Parts": [{"PartNumber": 1, "ETag": r.headers["etag"]}]})
    assert s3.get_object(Bucket=bucket, Key="trailer/mp")["Body"].read() == data


# ----------------------------------------------------------------- Expect: 100-continue

def _signed_head(server, method, path, body, headers, user=USERS[0]):
    headers = dict(headers)
    headers["Host"] = server.host
    headers["Content-Length"] = str(len(body))
    sign_headers(method, uri_encode(path, False), [], headers, sha256_hex(body), user[0], user[1])
    lines = [f"{method} {uri_encode(path, False)} HTTP/1.1"] + [f"{k}: {v}" for k, v in headers.items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def test_expect_100_continue(server, s3, bucket):
    body = os.urandom(200_000)
    head = _signed_head(server, "PUT", f"/{bucket}/expect", body, {"Expect": "100-continue"})
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as sock:
        sock.sendall(head)
        status, raw = recv_http_response(sock)
        assert status == 100, raw
        sock.sendall(body)
        status, raw = recv_http_response(sock)
        assert status == 200, raw
    assert s3.get_object(Bucket=bucket, Key="expect")["Body"].read() == body


def test_expect_100_continue_denied_early(server, s3, bucket):
    """A request that will be refused should get its final status without the body being sent
    (a 100 first is tolerated), and nothing is stored."""
    body = os.urandom(50_000)
    head = _signed_head(server, "PUT", f"/{bucket}/expect-denied", body, {"Expect": "100-continue"},
                        user=USERS[1])
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as sock:
        sock.sendall(head)
        status, raw = recv_http_response(sock)
        if status == 100:
            sock.sendall(body)
            status, raw = recv_http_response(sock)
        assert status == 403, raw
    with pytest.raises(ClientError):
        s3.head_object(Bucket=bucket, Key="expect-denied")


def test_http_chunked_transfer_encoding(server, s3, bucket):
    """Plain HTTP/1.1 chunked transfer encoding with UNSIGNED-PAYLOAD."""
    data = os.urandom(30000)
    headers = {"Host": server.host, "Transfer-Encoding": "chunked"}
    path = f"/{bucket}/te-chunked"
    sign_headers("PUT", path, [], headers, "UNSIGNED-PAYLOAD", *USERS[0])
    head = "\r\n".join([f"PUT {path} HTTP/1.1"] + [f"{k}: {v}" for k, v in headers.items()])
    body = b""
    for i in range(0, len(data), 7000):
        piece = data[i:i + 7000]
        body += f"{len(piece):x}\r\n".encode() + piece + b"\r\n"
    body += b"0\r\n\r\n"
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as sock:
        sock.sendall(head.encode() + b"\r\n\r\n" + body)
        status, raw = recv_http_response(sock)
    assert status == 200, raw
    assert s3.get_object(Bucket=bucket, Key="te-chunked")["Body"].read() == data


@pytest.mark.parametrize("sent,stored", [
    ("aws-chunked", None),
    ("aws-chunked, gzip", "gzip"),
    ("aws-chunked,gzip", "gzip"),
    ("gzip, aws-chunked", "gzip"),
    ("deflate, aws-chunked, gzip", "deflate, gzip"),
    ("AWS-Chunked , br", "br"),
])
def test_content_encoding_stored_without_aws_chunked(server, s3, bucket, sent, stored):
    """S3 drops the aws-chunked coding from Content-Encoding and stores the rest as sent."""
    r = put_signed_streaming(server, bucket, "enc", [b"data"],
                             extra_headers={"Content-Encoding": sent})
    assert r.status == 200, r
    got = s3.head_object(Bucket=bucket, Key="enc")
    assert got.get("ContentEncoding") == stored, got


@pytest.mark.parametrize("sent", ["deflate, gzip", "gzip,  br", "identity"])
def test_content_encoding_kept_exactly(s3, bucket, sent):
    s3.put_object(Bucket=bucket, Key="enc", Body=b"x", ContentEncoding=sent)
    assert s3.head_object(Bucket=bucket, Key="enc")["ContentEncoding"] == sent
