"""CORS as AWS S3 answers it: Put/Get/DeleteBucketCors and their errors (boto3), the
unauthenticated OPTIONS preflight on bucket and object paths, and the Access-Control-*
headers on actual requests that carry a matching Origin (signed, presigned, anonymous,
errors included) (raw HTTP)."""
import http.client
import urllib.parse

import pytest
import requests
from botocore.exceptions import ClientError

from s3r_itest import assert_error, error_fields as _error_fields, raw_request

def error_fields(body):
    return _error_fields(body)[1]


VARY = "Origin, Access-Control-Request-Headers, Access-Control-Request-Method"

RULES = [
    {"ID": "app", "AllowedOrigins": ["https://app.example.com", "https://*.example.org"],
     "AllowedMethods": ["GET", "PUT"], "AllowedHeaders": ["x-amz-*", "Content-Type"],
     "ExposeHeaders": ["ETag", "x-amz-request-id"], "MaxAgeSeconds": 3000},
    {"AllowedOrigins": ["*"], "AllowedMethods": ["HEAD"]},
]


@pytest.fixture
def cbucket(s3, bucket):
    s3.put_bucket_cors(Bucket=bucket, CORSConfiguration={"CORSRules": RULES})
    s3.put_object(Bucket=bucket, Key="dir/obj", Body=b"hello")
    return bucket


def put_raw(server, bucket, xml):
    return raw_request(server, "PUT", f"/{bucket}", query=[("cors", None)],
                       body=xml.encode())


def preflight(server, path, origin="https://app.example.com", method="GET", headers=None):
    h = {}
    if origin is not None:
        h["Origin"] = origin
    if method is not None:
        h["Access-Control-Request-Method"] = method
    if headers is not None:
        h["Access-Control-Request-Headers"] = headers
    return raw_request(server, "OPTIONS", path, headers=h, sign=False)


def cors_headers(r):
    return {k: v for k, v in r.headers.items() if k.startswith("access-control-") or k == "vary"}


# ---- Put / Get / Delete -----------------------------------------------------------------

def test_cors_round_trip(s3, bucket):
    with pytest.raises(ClientError) as e:
        s3.get_bucket_cors(Bucket=bucket)
    assert_error(e, "NoSuchCORSConfiguration", 404)
    r = s3.put_bucket_cors(Bucket=bucket, CORSConfiguration={"CORSRules": RULES})
    assert r["ResponseMetadata"]["HTTPStatusCode"] == 200
    got = s3.get_bucket_cors(Bucket=bucket)["CORSRules"]
    assert got == RULES
    r = s3.delete_bucket_cors(Bucket=bucket)
    assert r["ResponseMetadata"]["HTTPStatusCode"] == 204
    with pytest.raises(ClientError) as e:
        s3.get_bucket_cors(Bucket=bucket)
    assert_error(e, "NoSuchCORSConfiguration", 404)


def test_cors_put_errors(s3, server, bucket):
    with pytest.raises(ClientError) as e:
        s3.put_bucket_cors(Bucket=bucket, CORSConfiguration={"CORSRules": [
            {"AllowedOrigins": ["*"], "AllowedMethods": ["PATCH"]}]})
    assert_error(e, "InvalidRequest", 400)
    assert "Unsupported method is PATCH" in e.value.response["Error"]["Message"]
    with pytest.raises(ClientError) as e:
        s3.put_bucket_cors(Bucket=bucket, CORSConfiguration={"CORSRules": [
            {"AllowedOrigins": ["https://*.*.example.com"], "AllowedMethods": ["GET"]}]})
    assert_error(e, "InvalidRequest", 400)
    with pytest.raises(ClientError) as e:
        s3.put_bucket_cors(Bucket=bucket, CORSConfiguration={"CORSRules": [
            {"AllowedOrigins": ["*"], "AllowedMethods": ["GET"], "AllowedHeaders": ["*-*-*"]}]})
    assert_error(e, "InvalidRequest", 400)
    rule = {"AllowedOrigins": ["*"], "AllowedMethods": ["GET"]}
    with pytest.raises(ClientError) as e:
        s3.put_bucket_cors(Bucket=bucket, CORSConfiguration={"CORSRules": [rule] * 101})
    assert_error(e, "MalformedXML", 400)
    s3.put_bucket_cors(Bucket=bucket, CORSConfiguration={"CORSRules": [rule] * 100})
    assert len(s3.get_bucket_cors(Bucket=bucket)["CORSRules"]) == 100
    bad = [
        "<CORSConfiguration><CORSRule><AllowedMethod>GET</AllowedMethod></CORSRule>"
        "</CORSConfiguration>",                                        # no AllowedOrigin
        "<CORSConfiguration><CORSRule><AllowedOrigin>*</AllowedOrigin></CORSRule>"
        "</CORSConfiguration>",                                        # no AllowedMethod
        "<CORSConfiguration></CORSConfiguration>",                     # no rule
        "<Other><CORSRule/></Other>",                                  # wrong root
        "<CORSConfiguration><CORSRule>",                               # not XML
        "<CORSConfiguration><CORSRule><AllowedOrigin>*</AllowedOrigin><AllowedMethod>GET"
        "</AllowedMethod><MaxAgeSeconds>soon</MaxAgeSeconds></CORSRule></CORSConfiguration>",
        # a line break would end up in a response header
        "<CORSConfiguration><CORSRule><AllowedOrigin>*</AllowedOrigin><AllowedMethod>GET"
        "</AllowedMethod><ExposeHeader>a&#10;Set-Cookie: x</ExposeHeader></CORSRule>"
        "</CORSConfiguration>",
    ]
    for xml in bad:
        r = put_raw(server, bucket, xml)
        assert (r.status, error_fields(r.body)["Code"]) == (400, "MalformedXML"), xml
    # Over 64 KiB: refused, even with valid rules.
    big = "<CORSConfiguration><CORSRule><AllowedOrigin>*</AllowedOrigin>" + \
        "<AllowedMethod>GET</AllowedMethod>" * 2000 + "</CORSRule></CORSConfiguration>"
    r = put_raw(server, bucket, big)
    assert (r.status, error_fields(r.body)["Code"]) == (400, "MalformedXML")
    # The last good configuration is intact.
    assert len(s3.get_bucket_cors(Bucket=bucket)["CORSRules"]) == 100


def test_cors_config_is_owner_only(s3_user2, cbucket):
    for call in (lambda: s3_user2.get_bucket_cors(Bucket=cbucket),
                 lambda: s3_user2.delete_bucket_cors(Bucket=cbucket),
                 lambda: s3_user2.put_bucket_cors(Bucket=cbucket, CORSConfiguration={
                     "CORSRules": [{"AllowedOrigins": ["*"], "AllowedMethods": ["GET"]}]})):
        with pytest.raises(ClientError) as e:
            call()
        assert_error(e, "AccessDenied", 403)


# ---- preflight ----------------------------------------------------------------------------

def test_preflight_allowed(server, cbucket):
    for path in (f"/{cbucket}", f"/{cbucket}/dir/obj", f"/{cbucket}/no/such/key"):
        r = preflight(server, path, headers="X-Amz-Date, content-type")
        assert r.status == 200, (path, r.body)
        assert cors_headers(r) == {
            "access-control-allow-origin": "https://app.example.com",
            "access-control-allow-methods": "GET, PUT",
            "access-control-allow-headers": "x-amz-date, content-type",
            "access-control-expose-headers": "ETag, x-amz-request-id",
            "access-control-max-age": "3000",
            "access-control-allow-credentials": "true",
            "vary": VARY,
        }
    # A wildcard origin pattern; then the any-origin rule: "*", no credentials.
    r = preflight(server, f"/{cbucket}/dir/obj", origin="https://a.b.example.org", method="PUT")
    assert r.status == 200
    assert r.headers["access-control-allow-origin"] == "https://a.b.example.org"
    r = preflight(server, f"/{cbucket}/dir/obj", origin="http://elsewhere", method="HEAD")
    assert r.status == 200
    assert cors_headers(r) == {"access-control-allow-origin": "*",
                               "access-control-allow-methods": "HEAD", "vary": VARY}


def test_preflight_virtual_host(server, cbucket):
    r = raw_request(server, "OPTIONS", "/dir/obj", sign=False,
                    host=f"{cbucket}.localhost:{server.port}",
                    headers={"Origin": "https://app.example.com",
                             "Access-Control-Request-Method": "PUT"})
    assert r.status == 200, r
    assert r.headers["access-control-allow-origin"] == "https://app.example.com"


def test_preflight_refused(server, bucket, cbucket):
    not_allowed = [
        dict(origin="https://evil.example.com"),                     # origin
        dict(method="DELETE"),                                       # method
        dict(headers="x-amz-date, authorization"),                   # a header
        dict(origin="https://APP.example.com"),                      # origins are exact
        dict(headers=", ".join(["x-amz-meta-abc"] * 600)),           # too long to echo
    ]
    for kw in not_allowed:
        r = preflight(server, f"/{cbucket}/dir/obj", **kw)
        f = error_fields(r.body)
        assert (r.status, f["Code"]) == (403, "AccessForbidden"), kw
        assert f["Message"].startswith("CORSResponse: This CORS request is not allowed.")
        assert "access-control-allow-origin" not in r.headers
    # No configuration, no bucket.
    s_bucket = bucket + "-none"
    for path, msg in ((f"/{bucket}x", "CORSResponse: Bucket not found"),
                      (f"/{s_bucket}", "CORSResponse: Bucket not found")):
        r = preflight(server, path)
        assert (r.status, error_fields(r.body)["Code"]) == (403, "AccessForbidden")
        assert error_fields(r.body)["Message"] == msg


def test_preflight_without_configuration(s3, server, bucket):
    r = preflight(server, f"/{bucket}/k")
    assert (r.status, error_fields(r.body)["Code"]) == (403, "AccessForbidden")
    assert error_fields(r.body)["Message"] == "CORSResponse: CORS is not enabled for this bucket."


def test_preflight_bad_request(server, cbucket):
    r = preflight(server, f"/{cbucket}/dir/obj", origin=None)
    assert (r.status, error_fields(r.body)["Code"]) == (400, "BadRequest")
    assert error_fields(r.body)["Message"] == \
        "Insufficient information. Origin request header needed."
    for method, shown in ((None, "null"), ("PATCH", "PATCH")):
        r = preflight(server, f"/{cbucket}/dir/obj", method=method)
        assert (r.status, error_fields(r.body)["Code"]) == (400, "BadRequest")
        assert error_fields(r.body)["Message"] == \
            f"Invalid Access-Control-Request-Method: {shown}"


# ---- actual requests ------------------------------------------------------------------------

def test_actual_request_headers(server, cbucket):
    origin = {"Origin": "https://app.example.com"}
    r = raw_request(server, "GET", f"/{cbucket}/dir/obj", headers=origin)
    assert r.status == 200 and r.body == b"hello"
    assert cors_headers(r) == {
        "access-control-allow-origin": "https://app.example.com",
        "access-control-allow-methods": "GET, PUT",
        "access-control-expose-headers": "ETag, x-amz-request-id",
        "access-control-max-age": "3000",
        "access-control-allow-credentials": "true",
        "vary": VARY,
    }
    # An error reply to an allowed origin carries them too.
    r = raw_request(server, "GET", f"/{cbucket}/missing", headers=origin)
    assert r.status == 404
    assert r.headers["access-control-allow-origin"] == "https://app.example.com"
    # Anonymous and refused: the browser still learns why.
    r = raw_request(server, "GET", f"/{cbucket}/dir/obj", headers=origin, sign=False)
    assert r.status == 403
    assert r.headers["access-control-allow-origin"] == "https://app.example.com"
    # HEAD matches only the any-origin rule.
    r = raw_request(server, "HEAD", f"/{cbucket}/dir/obj", headers=origin)
    assert r.status == 200
    assert r.headers["access-control-allow-origin"] == "*"
    # No rule for this origin and method, or no Origin at all: no CORS headers.
    for headers, method in (({"Origin": "https://evil.example.com"}, "GET"),
                            (origin, "DELETE"), ({}, "GET")):
        r = raw_request(server, method, f"/{cbucket}/dir/obj", headers=headers)
        assert not cors_headers(r), (headers, method)


def test_presigned_request_headers(s3, server, cbucket):
    url = s3.generate_presigned_url("get_object", Params={"Bucket": cbucket, "Key": "dir/obj"},
                                    ExpiresIn=300)
    u = urllib.parse.urlsplit(url)
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=30)
    try:
        conn.request("GET", f"{u.path}?{u.query}", headers={"Origin": "https://x.example.org"})
        resp = conn.getresponse()
        assert resp.status == 200 and resp.read() == b"hello"
        assert resp.getheader("Access-Control-Allow-Origin") == "https://x.example.org"
        assert resp.getheader("Vary") == VARY
    finally:
        conn.close()


def test_delete_cors_stops_headers(s3, server, cbucket):
    s3.delete_bucket_cors(Bucket=cbucket)
    r = raw_request(server, "GET", f"/{cbucket}/dir/obj",
                    headers={"Origin": "https://app.example.com"})
    assert r.status == 200 and not cors_headers(r)
    r = preflight(server, f"/{cbucket}/dir/obj")
    assert r.status == 403


def test_presigned_post_form_headers(s3, server, bucket):
    """A browser's form upload (the page on another origin) reads its answer only with CORS."""
    s3.put_bucket_cors(Bucket=bucket, CORSConfiguration={"CORSRules": [
        {"AllowedOrigins": ["https://upload.example.com"], "AllowedMethods": ["POST"],
         "ExposeHeaders": ["ETag", "Location"]}]})
    p = s3.generate_presigned_post(bucket, "up/${filename}", ExpiresIn=300)
    files = [(k, (None, v)) for k, v in p["fields"].items()]
    files.append(("file", ("photo.jpg", b"jpeg", "application/octet-stream")))
    r = requests.post(f"{server.endpoint}/{bucket}", files=files, timeout=30,
                      headers={"Origin": "https://upload.example.com"})
    assert r.status_code == 204, r.text
    assert r.headers["Access-Control-Allow-Origin"] == "https://upload.example.com"
    assert r.headers["Access-Control-Expose-Headers"] == "ETag, Location"
    assert s3.get_object(Bucket=bucket, Key="up/photo.jpg")["Body"].read() == b"jpeg"
