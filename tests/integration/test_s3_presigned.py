"""Presigned-URL validity and the signing region, answered as S3 answers them: an expired URL
is 403 AccessDenied "Request has expired" (with X-Amz-Expires, Expires and ServerTime), a
malformed or out-of-range X-Amz-Expires is 400 AuthorizationQueryParametersError, for GET and
PUT alike; a request signed for another region is told the server's region."""
import urllib.error
import urllib.request

import pytest

from s3r_itest import (REGION, USERS, amz_now, error_fields, presign_url, raw_request,
                       sha256_hex, sign_headers)


def http(method, url, data=None):
    req = urllib.request.Request(url, data=data, method=method)
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            return resp.status, resp.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def error_of(body):
    return error_fields(body)[1]


@pytest.fixture
def obj(s3, bucket):
    s3.put_object(Bucket=bucket, Key="pre", Body=b"presigned")
    return f"/{bucket}/pre"


@pytest.mark.parametrize("method", ["GET", "PUT"])
def test_expired_url(server, s3, obj, method):
    url = presign_url(server.host, method, obj, *USERS[0], expires=60, amz_date=amz_now(-120))
    status, body = http(method, url, data=b"new" if method == "PUT" else None)
    err = error_of(body)
    assert status == 403 and err["Code"] == "AccessDenied", body
    assert err["Message"] == "Request has expired", body
    assert err["X-Amz-Expires"] == "60", body
    # Expires is X-Amz-Date + 60 s, ServerTime about two minutes later
    assert err["Expires"] < err["ServerTime"], body
    assert s3.get_object(Bucket=obj.split("/")[1], Key="pre")["Body"].read() == b"presigned"


@pytest.mark.parametrize("method", ["GET", "PUT"])
def test_zero_expires_is_expired(server, obj, method):
    url = presign_url(server.host, method, obj, *USERS[0], expires=0)
    status, body = http(method, url, data=b"new" if method == "PUT" else None)
    err = error_of(body)
    assert status == 403 and err["Code"] == "AccessDenied", body
    assert err["Message"] == "Request has expired", body


@pytest.mark.parametrize("method", ["GET", "PUT"])
@pytest.mark.parametrize("expires,message", [
    ("604801", "X-Amz-Expires must be less than a week (in seconds); that is, the given "
               "X-Amz-Expires must be less than 604800 seconds"),
    ("-5", "X-Amz-Expires must be non-negative"),
    ("abc", "X-Amz-Expires should be a number"),
    ("", "X-Amz-Expires should be a number"),
    ("60s", "X-Amz-Expires should be a number"),
    ("+60", "X-Amz-Expires should be a number"),
])
def test_malformed_expires(server, obj, method, expires, message):
    url = presign_url(server.host, method, obj, *USERS[0], expires=expires)
    status, body = http(method, url, data=b"new" if method == "PUT" else None)
    err = error_of(body)
    assert status == 400 and err["Code"] == "AuthorizationQueryParametersError", body
    assert err["Message"] == message, body


def test_week_is_the_limit(server, obj):
    assert http("GET", presign_url(server.host, "GET", obj, *USERS[0], expires=604800)) == \
        (200, b"presigned")


def test_wrong_region_header_auth(server, bucket):
    headers = {"Host": server.host}
    sign_headers("GET", f"/{bucket}", [], headers, sha256_hex(b""), *USERS[0],
                 region="eu-west-1")
    r = raw_request(server, "GET", f"/{bucket}", headers=headers, sign=False)
    err = error_of(r.body)
    assert r.status == 400 and err["Code"] == "AuthorizationHeaderMalformed", r
    assert err["Message"] == ("The authorization header is malformed; the region 'eu-west-1' is "
                              f"wrong; expecting '{REGION}'"), r
    assert err["Region"] == REGION, r


def test_wrong_region_presigned(server, obj):
    url = presign_url(server.host, "GET", obj, *USERS[0], expires=60, region="eu-west-1")
    status, body = http("GET", url)
    err = error_of(body)
    assert status == 400 and err["Code"] == "AuthorizationQueryParametersError", body
    assert err["Message"] == ("Error parsing the X-Amz-Credential parameter; the region "
                              f"'eu-west-1' is wrong; expecting '{REGION}'"), body
    assert err["Region"] == REGION, body


def test_boto3_wrong_region_learns_the_right_one(server, bucket):
    """botocore reads <Region> from the error and re-signs for it: the call succeeds."""
    import boto3
    c = boto3.session.Session().client(
        "s3", endpoint_url=server.endpoint, region_name="eu-west-1",
        aws_access_key_id=USERS[0][0], aws_secret_access_key=USERS[0][1])
    assert c.list_objects_v2(Bucket=bucket)["KeyCount"] == 0
