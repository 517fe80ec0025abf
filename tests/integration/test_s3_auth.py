"""Authentication, presigned URLs, error format, request ids, unsupported operations."""
import time
import urllib.error
import urllib.request

import pytest
from botocore.exceptions import ClientError

from s3r_itest import (USERS, amz_now, assert_error, error_fields, presign_url,
                       raw_request, sha256_hex, sign_headers, uri_encode)


def http(method, url, data=None, headers=None):
    req = urllib.request.Request(url, data=data, method=method, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            return resp.status, dict(resp.headers), resp.read()
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), e.read()


def code_of(body):
    return error_fields(body)[1].get("Code")


# ----------------------------------------------------------------- presigned

def test_presigned_get_put_boto3(s3, bucket):
    s3.put_object(Bucket=bucket, Key="pre/get me", Body=b"presigned-get")
    url = s3.generate_presigned_url("get_object", Params={"Bucket": bucket, "Key": "pre/get me"},
                                    ExpiresIn=300)
    status, headers, body = http("GET", url)
    assert status == 200 and body == b"presigned-get"
    url = s3.generate_presigned_url("put_object", Params={"Bucket": bucket, "Key": "pre/put"},
                                    ExpiresIn=300)
    status, _, body = http("PUT", url, data=b"presigned-put")
    assert status == 200, body
    assert s3.get_object(Bucket=bucket, Key="pre/put")["Body"].read() == b"presigned-put"
    # with response overrides inside the signature
    url = s3.generate_presigned_url("get_object", ExpiresIn=300, Params={
        "Bucket": bucket, "Key": "pre/get me", "ResponseContentType": "text/x-pre"})
    status, headers, body = http("GET", url)
    assert status == 200 and headers.get("Content-Type") == "text/x-pre"


def test_presigned_head_and_tamper(server, s3, bucket):
    s3.put_object(Bucket=bucket, Key="pt", Body=b"x")
    path = f"/{bucket}/pt"
    url = presign_url(server.host, "GET", path, *USERS[0], expires=60)
    assert http("GET", url)[0] == 200
    # the signature covers the method
    status, _, body = http("DELETE", url)
    assert status == 403 and code_of(body) == "SignatureDoesNotMatch", body
    # and the path
    status, _, body = http("GET", url.replace("/pt?", "/px?"))
    assert status == 403 and code_of(body) == "SignatureDoesNotMatch", body
    # a flipped signature
    tampered = url[:-1] + ("0" if url[-1] != "0" else "1")
    status, _, body = http("GET", tampered)
    assert status == 403 and code_of(body) == "SignatureDoesNotMatch", body
    # wrong secret
    status, _, body = http("GET", presign_url(server.host, "GET", path, USERS[0][0], "nope", expires=60))
    assert status == 403 and code_of(body) == "SignatureDoesNotMatch", body
    assert s3.get_object(Bucket=bucket, Key="pt")["Body"].read() == b"x"


def test_presigned_expired(server, s3, bucket):
    s3.put_object(Bucket=bucket, Key="exp", Body=b"x")
    url = presign_url(server.host, "GET", f"/{bucket}/exp", *USERS[0], expires=60,
                      amz_date=amz_now(-120))
    status, _, body = http("GET", url)
    assert status == 403 and code_of(body) == "AccessDenied", body
    # boto3-made URL with 1 s expiry
    url = s3.generate_presigned_url("get_object", Params={"Bucket": bucket, "Key": "exp"}, ExpiresIn=1)
    time.sleep(2.1)
    status, _, body = http("GET", url)
    assert status == 403, body


def test_presigned_expires_limits(server, s3, bucket):
    s3.put_object(Bucket=bucket, Key="lim", Body=b"x")
    ok = presign_url(server.host, "GET", f"/{bucket}/lim", *USERS[0], expires=604800)
    assert http("GET", ok)[0] == 200
    for bad in (604801, -5):  # 0 is an expired URL (test_s3_presigned.py)
        url = presign_url(server.host, "GET", f"/{bucket}/lim", *USERS[0], expires=bad)
        status, _, body = http("GET", url)
        assert status == 400 and code_of(body) == "AuthorizationQueryParametersError", (bad, body)


def test_presigned_put_wrong_user_bucket(server, bucket):
    url = presign_url(server.host, "PUT", f"/{bucket}/intruder", *USERS[1], expires=60)
    status, _, body = http("PUT", url, data=b"x")
    assert status == 403 and code_of(body) == "AccessDenied", body


# ----------------------------------------------------------------- header auth errors

def test_bad_secret(make_client, bucket):
    c = make_client((USERS[0][0], "wrong-secret-wrong-secret"))
    with pytest.raises(ClientError) as ei:
        c.list_objects_v2(Bucket=bucket)
    assert_error(ei, "SignatureDoesNotMatch", 403)
    with pytest.raises(ClientError) as ei:
        c.put_object(Bucket=bucket, Key="x", Body=b"x")
    assert_error(ei, "SignatureDoesNotMatch", 403)


def test_unknown_access_key(make_client):
    c = make_client(("AKNOSUCHUSER", "whatever-whatever"))
    with pytest.raises(ClientError) as ei:
        c.list_buckets()
    assert_error(ei, "InvalidAccessKeyId", 403)


def test_anonymous_denied(server, s3, bucket):
    s3.put_object(Bucket=bucket, Key="anon", Body=b"x", ACL="private")
    for method, path in (("GET", "/"), ("GET", f"/{bucket}"), ("GET", f"/{bucket}/anon"),
                         ("PUT", f"/{bucket}/anon2"), ("DELETE", f"/{bucket}/anon"),
                         ("PUT", "/anon-new-bucket-xyz")):
        r = raw_request(server, method, path, user=None, body=b"x" if method == "PUT" else b"")
        assert r.status == 403 and r.error_code() == "AccessDenied", (method, path, r)
    r = raw_request(server, "HEAD", f"/{bucket}/anon", user=None)
    assert r.status == 403 and r.body == b""
    assert s3.get_object(Bucket=bucket, Key="anon")["Body"].read() == b"x"
    with pytest.raises(ClientError):
        s3.head_object(Bucket=bucket, Key="anon2")


def test_clock_skew(server, bucket):
    for skew in (-20 * 60, 20 * 60):
        r = raw_request(server, "GET", f"/{bucket}", amz_date=amz_now(skew))
        assert r.status == 403 and r.error_code() == "RequestTimeTooSkewed", (skew, r)
    r = raw_request(server, "GET", f"/{bucket}", amz_date=amz_now(-5 * 60))
    assert r.status == 200, r


def test_malformed_authorization(server, bucket):
    for auth, code in (("AWS4-HMAC-SHA256 garbage", "AuthorizationHeaderMalformed"),
                       ("AWS AKTESTUSER1", "AuthorizationHeaderMalformed"),  # SigV2, no ':'
                       ("Bearer x", "AuthorizationHeaderMalformed"),
                       ("AWS4-HMAC-SHA256 Credential=AKTESTUSER1/20200101/us-east-1/s3/aws4_request, "
                        "SignedHeaders=host, Signature=zz", "AuthorizationHeaderMalformed")):
        r = raw_request(server, "GET", f"/{bucket}", sign=False,
                        headers={"Authorization": auth, "x-amz-date": amz_now(),
                                 "x-amz-content-sha256": "UNSIGNED-PAYLOAD"})
        assert r.status == 400 and r.error_code() == code, (auth, r)


def test_signed_header_tampered(server, s3, bucket):
    """A header in SignedHeaders changed after signing."""
    from s3r_itest import sign_headers
    import http.client
    headers = {"Host": server.host, "x-amz-meta-a": "1"}
    sign_headers("PUT", f"/{bucket}/tamper", [], headers, "UNSIGNED-PAYLOAD", *USERS[0])
    headers["x-amz-meta-a"] = "2"
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    conn.request("PUT", f"/{bucket}/tamper", body=b"x", headers=headers)
    resp = conn.getresponse()
    body = resp.read()
    conn.close()
    assert resp.status == 403 and code_of(body) == "SignatureDoesNotMatch", body
    with pytest.raises(ClientError):
        s3.head_object(Bucket=bucket, Key="tamper")


# ----------------------------------------------------------------- unsigned x-amz-* headers

UNSIGNED_MSG = "There were headers present in the request which were not signed"


def send(server, method, path, headers, body=b""):
    """Sends headers exactly as given (no signing, no Host added)."""
    import http.client
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
    try:
        conn.putrequest(method, path, skip_host=True, skip_accept_encoding=True)
        if method in ("PUT", "POST"):
            headers = {**headers, "Content-Length": str(len(body))}
        for k, v in headers.items():
            conn.putheader(k, v)
        conn.endheaders()
        if body:
            conn.send(body)
        resp = conn.getresponse()
        return resp.status, {k.lower(): v for k, v in resp.getheaders()}, resp.read()
    finally:
        conn.close()


def send_url(server, method, url, headers, body=b""):
    path = url.split(server.host, 1)[1]
    return send(server, method, path, {"Host": server.host, **headers}, body)


def assert_headers_not_signed(status, body, names):
    assert status == 403, body
    fields = error_fields(body)[1]
    assert fields["Code"] == "AccessDenied", body
    assert fields["Message"] == UNSIGNED_MSG, body
    assert sorted(fields.get("HeadersNotSigned", "").replace(" ", "").split(",")) == sorted(names), body


def test_unsigned_amz_header_refused_header_auth(server, s3, bucket):
    """Header auth: an x-amz-meta-* header added outside SignedHeaders is refused, not stored."""
    path = f"/{bucket}/unsigned-meta"
    headers = {"Host": server.host, "x-amz-meta-signed": "1"}
    sign_headers("PUT", path, [], headers, sha256_hex(b"x"), *USERS[0])
    headers["x-amz-meta-foo"] = "forged"
    status, _, body = send(server, "PUT", path, headers, b"x")
    assert_headers_not_signed(status, body, ["x-amz-meta-foo"])
    with pytest.raises(ClientError):
        s3.head_object(Bucket=bucket, Key="unsigned-meta")
    # Upper-case names are the same headers; each unsigned one is named once.
    headers = {"Host": server.host}
    sign_headers("GET", f"/{bucket}", [], headers, sha256_hex(b""), *USERS[0])
    headers["X-Amz-Copy-Source"] = f"{bucket}/x"
    headers["X-AMZ-META-B"] = "2"
    status, _, body = send(server, "GET", f"/{bucket}", headers)
    assert_headers_not_signed(status, body, ["x-amz-copy-source", "x-amz-meta-b"])
    # Control: the same header, signed, is accepted and stored.
    headers = {"Host": server.host, "x-amz-meta-foo": "signed"}
    sign_headers("PUT", path, [], headers, sha256_hex(b"x"), *USERS[0])
    status, _, body = send(server, "PUT", path, headers, b"x")
    assert status == 200, body
    assert s3.head_object(Bucket=bucket, Key="unsigned-meta")["Metadata"] == {"foo": "signed"}


def test_presigned_put_unsigned_copy_source_refused(server, s3, bucket):
    """A presigned PUT replayed with an added x-amz-copy-source must not become a copy of
    an object the URL never named."""
    s3.put_object(Bucket=bucket, Key="private-object", Body=b"top secret")
    url = presign_url(server.host, "PUT", f"/{bucket}/presigned-dest", *USERS[0], expires=300)
    status, _, body = send_url(server, "PUT", url,
                               {"x-amz-copy-source": f"{bucket}/private-object"})
    assert_headers_not_signed(status, body, ["x-amz-copy-source"])
    with pytest.raises(ClientError):
        s3.head_object(Bucket=bucket, Key="presigned-dest")
    # The URL itself still does what it was signed for.
    status, _, body = send_url(server, "PUT", url, {}, b"uploaded")
    assert status == 200, body
    assert s3.get_object(Bucket=bucket, Key="presigned-dest")["Body"].read() == b"uploaded"


def test_presigned_put_unsigned_meta_refused(server, s3, bucket):
    url = presign_url(server.host, "PUT", f"/{bucket}/presigned-meta", *USERS[0], expires=300)
    status, _, body = send_url(server, "PUT", url, {"x-amz-meta-x": "forged"}, b"data")
    assert_headers_not_signed(status, body, ["x-amz-meta-x"])
    with pytest.raises(ClientError):
        s3.head_object(Bucket=bucket, Key="presigned-meta")
    # Control: a URL signed over x-amz-meta-x accepts it (and only with that value).
    url = presign_url(server.host, "PUT", f"/{bucket}/presigned-meta", *USERS[0], expires=300,
                      signed_headers={"x-amz-meta-x": "granted"})
    status, _, body = send_url(server, "PUT", url, {"x-amz-meta-x": "other"}, b"data")
    assert status == 403 and code_of(body) == "SignatureDoesNotMatch", body
    status, _, body = send_url(server, "PUT", url, {"x-amz-meta-x": "granted"}, b"data")
    assert status == 200, body
    assert s3.head_object(Bucket=bucket, Key="presigned-meta")["Metadata"] == {"x": "granted"}


def test_presigned_get_signed_headers_only(server, s3, bucket):
    """A presigned GET with no extra headers works; x-amz-content-sha256 may be sent unsigned
    (its value is the payload hash, bound separately, and a presigned request takes it from the
    query); any other unsigned x-amz-* header is refused."""
    s3.put_object(Bucket=bucket, Key="pg", Body=b"presigned body")
    url = presign_url(server.host, "GET", f"/{bucket}/pg", *USERS[0], expires=300)
    status, _, body = send_url(server, "GET", url, {})
    assert status == 200 and body == b"presigned body", body
    status, _, body = send_url(server, "GET", url, {"x-amz-content-sha256": "UNSIGNED-PAYLOAD"})
    assert status == 200 and body == b"presigned body", body
    status, _, body = send_url(server, "GET", url, {"x-amz-checksum-mode": "ENABLED"})
    assert_headers_not_signed(status, body, ["x-amz-checksum-mode"])
    status, _, body = send_url(server, "GET", url, {"x-amz-security-token": "t"})
    assert_headers_not_signed(status, body, ["x-amz-security-token"])


# ----------------------------------------------------------------- error format, request ids

def test_error_xml_format(server, bucket):
    r = raw_request(server, "GET", f"/{bucket}/no/such key")
    assert r.status == 404
    assert r.headers.get("content-type", "").startswith("application/xml")
    tag, fields = error_fields(r.body)
    assert tag == "Error"
    assert fields["Code"] == "NoSuchKey"
    assert fields["Message"]
    assert fields["Resource"] in (f"/{bucket}/no/such key", f"/{bucket}/" + uri_encode("no/such key", False))
    assert fields["RequestId"]
    assert r.headers.get("x-amz-request-id") == fields["RequestId"]
    assert fields.get("Key", "no/such key") == "no/such key"
    r2 = raw_request(server, "GET", f"/{bucket}/no/such key")
    assert r2.headers["x-amz-request-id"] != r.headers["x-amz-request-id"]


def test_error_no_such_bucket_format(server):
    r = raw_request(server, "GET", "/no-such-bucket-zzz/k")
    tag, fields = error_fields(r.body)
    assert r.status == 404 and fields["Code"] == "NoSuchBucket"
    assert fields.get("BucketName", "no-such-bucket-zzz") == "no-such-bucket-zzz"


def test_request_id_on_every_response(server, s3, bucket):
    s3.put_object(Bucket=bucket, Key="rid", Body=b"x")
    for method, path, q in (("GET", "/", ()), ("GET", f"/{bucket}", ()), ("HEAD", f"/{bucket}", ()),
                            ("GET", f"/{bucket}/rid", ()), ("HEAD", f"/{bucket}/rid", ()),
                            ("HEAD", f"/{bucket}/missing", ()), ("DELETE", f"/{bucket}/missing", ()),
                            ("GET", f"/{bucket}", [("location", "")]),
                            ("GET", f"/{bucket}", [("uploads", "")])):
        r = raw_request(server, method, path, query=q)
        assert r.headers.get("x-amz-request-id"), (method, path, r)
        assert r.status < 500, (method, path, r)
    r = raw_request(server, "GET", f"/{bucket}/rid", user=None)
    assert r.headers.get("x-amz-request-id")


@pytest.mark.parametrize("method,sub", [("GET", "logging"), ("PUT", "inventory"),
                                        ("GET", "notification"), ("PUT", "analytics"),
                                        ("PUT", "replication"), ("GET", "website")])
def test_unsupported_bucket_subresource(server, bucket, method, sub):
    body = b"<x/>" if method == "PUT" else b""
    r = raw_request(server, method, f"/{bucket}", query=[(sub, "")], body=body)
    assert r.status == 501 and r.error_code() == "NotImplemented", (sub, r)
    assert r.headers.get("x-amz-request-id")


def test_unsupported_object_subresource(server, s3, bucket):
    s3.put_object(Bucket=bucket, Key="o", Body=b"x")
    r = raw_request(server, "GET", f"/{bucket}/o", query=[("torrent", "")])
    assert r.status == 501 and r.error_code() == "NotImplemented", r
    # ?legal-hold is object lock's (test_s3_object_lock.py): refused on a bucket without it
    r = raw_request(server, "PUT", f"/{bucket}/o", query=[("legal-hold", "")],
                    body=b"<LegalHold><Status>ON</Status></LegalHold>")
    assert r.status == 400 and r.error_code() == "InvalidRequest", r
    # the object was not overwritten by the subresource's body
    assert s3.get_object(Bucket=bucket, Key="o")["Body"].read() == b"x"


def test_unknown_method(server, bucket):
    r = raw_request(server, "PATCH", f"/{bucket}/o", body=b"x")
    assert r.status == 405 and r.error_code() == "MethodNotAllowed", r


def test_stats_endpoint_requires_signature(server):
    """GET /_s3rdma/stats goes through SigV4 like everything else: anonymous (or badly signed)
    -> 403, any configured user -> 200 JSON."""
    import json
    r = raw_request(server, "GET", "/_s3rdma/stats", user=None)
    assert r.status == 403 and r.error_code() == "AccessDenied", r
    assert b"rdma_sessions" not in r.body
    r = raw_request(server, "GET", "/_s3rdma/stats", user=(USERS[0][0], "wrong-secret-wrong"))
    assert r.status == 403 and r.error_code() == "SignatureDoesNotMatch", r
    r = raw_request(server, "GET", "/_s3rdma/stats", user=("AKNOSUCHUSER", "whatever"))
    assert r.status == 403 and r.error_code() == "InvalidAccessKeyId", r
    for user in USERS:
        r = raw_request(server, "GET", "/_s3rdma/stats", user=user)
        assert r.status == 200, r
        assert r.headers["content-type"] == "application/json"
        js = json.loads(r.body)
        assert js.get("rdma_sessions") == 0 and js["http_requests"] >= 1
    # A presigned URL for it works too, and so does botocore's own signer.
    status, _, body = http("GET", presign_url(server.host, "GET", "/_s3rdma/stats", *USERS[1],
                                              expires=60))
    assert status == 200 and "http_inflight" in json.loads(body), body
    from botocore.auth import S3SigV4Auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials
    req = AWSRequest(method="GET", url=f"{server.endpoint}/_s3rdma/stats")
    S3SigV4Auth(Credentials(*USERS[0]), "s3", "us-east-1").add_auth(req)
    status, _, body = http("GET", req.url, headers=dict(req.headers))
    assert status == 200 and "http_inflight" in json.loads(body), body
