"""Bucket operations over boto3 (path-style and virtual-host style)."""
import pytest
from botocore.exceptions import ClientError

from s3r_itest import (USERS, assert_error, boto_client, client_error, empty_bucket,
                       new_bucket_name, raw_request)


def test_create_list_head_delete_bucket(s3):
    name = new_bucket_name()
    resp = s3.create_bucket(Bucket=name)
    assert resp["ResponseMetadata"]["HTTPStatusCode"] == 200
    names = [b["Name"] for b in s3.list_buckets()["Buckets"]]
    assert name in names
    assert names == sorted(names)
    created = [b for b in s3.list_buckets()["Buckets"] if b["Name"] == name][0]["CreationDate"]
    assert created.year >= 2024
    assert s3.head_bucket(Bucket=name)["ResponseMetadata"]["HTTPStatusCode"] == 200
    s3.delete_bucket(Bucket=name)
    assert name not in [b["Name"] for b in s3.list_buckets()["Buckets"]]
    with pytest.raises(ClientError) as ei:
        s3.head_bucket(Bucket=name)
    assert client_error(ei)[1] == 404


def test_list_buckets_owner(s3):
    resp = s3.list_buckets()
    assert "Owner" in resp and resp["Owner"].get("ID")


@pytest.mark.parametrize("name", [
    "ab",                     # too short
    "a" * 64,                 # too long
    "UpperCase-bucket",       # upper case
    "under_score-bucket",     # underscore
    "-leading-dash",
    "trailing-dash-",
    "double..dot",
    "192.168.10.12",          # IP address form
])
def test_create_bucket_invalid_name(s3, name):
    with pytest.raises(ClientError) as ei:
        s3.create_bucket(Bucket=name)
    assert_error(ei, "InvalidBucketName", 400)


def test_create_bucket_invalid_chars_raw(server):
    r = raw_request(server, "PUT", "/bad!name")
    assert r.status == 400 and r.error_code() == "InvalidBucketName", r


def test_bucket_name_limits_ok(s3):
    for name in ("a" * 63, "abc", "a.b-c.d1"):
        s3.create_bucket(Bucket=name)
        s3.head_bucket(Bucket=name)
        s3.delete_bucket(Bucket=name)


def test_create_bucket_already_owned_by_you(s3, bucket):
    # us-east-1 (this server's region) answers the owner 200, contents untouched
    s3.put_object(Bucket=bucket, Key="k", Body=b"x")
    assert s3.create_bucket(Bucket=bucket)["ResponseMetadata"]["HTTPStatusCode"] == 200
    assert s3.get_object(Bucket=bucket, Key="k")["Body"].read() == b"x"


def test_create_bucket_already_exists_other_user(s3_user2, bucket):
    with pytest.raises(ClientError) as ei:
        s3_user2.create_bucket(Bucket=bucket)
    assert_error(ei, "BucketAlreadyExists", 409)


def test_create_bucket_with_canned_acl(s3):
    name = new_bucket_name()
    s3.create_bucket(Bucket=name, ACL="private")
    s3.delete_bucket(Bucket=name)


def test_list_buckets_per_user(s3, s3_user2, bucket):
    assert bucket in [b["Name"] for b in s3.list_buckets()["Buckets"]]
    assert bucket not in [b["Name"] for b in s3_user2.list_buckets()["Buckets"]]


def test_head_bucket_other_user_forbidden(s3_user2, bucket):
    with pytest.raises(ClientError) as ei:
        s3_user2.head_bucket(Bucket=bucket)
    assert client_error(ei)[1] == 403


def test_delete_bucket_not_empty(s3, bucket):
    s3.put_object(Bucket=bucket, Key="x", Body=b"1")
    with pytest.raises(ClientError) as ei:
        s3.delete_bucket(Bucket=bucket)
    assert_error(ei, "BucketNotEmpty", 409)
    s3.head_bucket(Bucket=bucket)
    assert s3.get_object(Bucket=bucket, Key="x")["Body"].read() == b"1"


def test_delete_missing_bucket(s3):
    with pytest.raises(ClientError) as ei:
        s3.delete_bucket(Bucket=new_bucket_name("missing"))
    assert_error(ei, "NoSuchBucket", 404)


def test_delete_other_users_bucket_forbidden(s3, s3_user2, bucket):
    with pytest.raises(ClientError) as ei:
        s3_user2.delete_bucket(Bucket=bucket)
    assert_error(ei, "AccessDenied", 403)
    s3.head_bucket(Bucket=bucket)


def test_get_bucket_location(s3, bucket):
    resp = s3.get_bucket_location(Bucket=bucket)
    assert resp["ResponseMetadata"]["HTTPStatusCode"] == 200
    # us-east-1 is reported as an empty LocationConstraint by S3.
    assert resp.get("LocationConstraint") is None, resp


def test_create_bucket_location_constraint(s3):
    """The server's own region may be named; another region is refused as S3's
    region endpoints refuse it, and no bucket is made."""
    here = new_bucket_name("loc")
    s3.create_bucket(Bucket=here, CreateBucketConfiguration={"LocationConstraint": "us-east-1"})
    assert s3.get_bucket_location(Bucket=here).get("LocationConstraint") is None
    s3.delete_bucket(Bucket=here)
    elsewhere = new_bucket_name("loc")
    with pytest.raises(ClientError) as ei:
        s3.create_bucket(Bucket=elsewhere,
                         CreateBucketConfiguration={"LocationConstraint": "eu-west-1"})
    assert_error(ei, "IllegalLocationConstraintException", 400)
    assert "eu-west-1" in ei.value.response["Error"]["Message"]
    with pytest.raises(ClientError) as ei:
        s3.head_bucket(Bucket=elsewhere)
    assert ei.value.response["ResponseMetadata"]["HTTPStatusCode"] == 404


def test_object_ops_on_missing_bucket(s3):
    name = new_bucket_name("missing")
    with pytest.raises(ClientError) as ei:
        s3.put_object(Bucket=name, Key="k", Body=b"x")
    assert_error(ei, "NoSuchBucket", 404)
    with pytest.raises(ClientError) as ei:
        s3.get_object(Bucket=name, Key="k")
    assert_error(ei, "NoSuchBucket", 404)
    with pytest.raises(ClientError) as ei:
        s3.list_objects_v2(Bucket=name)
    assert_error(ei, "NoSuchBucket", 404)


# ---------------------------------------------------------------- virtual host

def test_virtual_host_style_roundtrip(s3_virtual, s3):
    name = new_bucket_name("vh")
    s3_virtual.create_bucket(Bucket=name)
    try:
        s3_virtual.put_object(Bucket=name, Key="dir/obj.txt", Body=b"virtual", ContentType="text/x-v")
        # Seen the same through a path-style client.
        got = s3.get_object(Bucket=name, Key="dir/obj.txt")
        assert got["Body"].read() == b"virtual"
        assert got["ContentType"] == "text/x-v"
        got = s3_virtual.get_object(Bucket=name, Key="dir/obj.txt", Range="bytes=1-3")
        assert got["Body"].read() == b"irt"
        keys = [o["Key"] for o in s3_virtual.list_objects_v2(Bucket=name)["Contents"]]
        assert keys == ["dir/obj.txt"]
        s3_virtual.head_bucket(Bucket=name)
        assert name in [b["Name"] for b in s3_virtual.list_buckets()["Buckets"]]
        s3_virtual.delete_object(Bucket=name, Key="dir/obj.txt")
    finally:
        empty_bucket(s3, name)
        s3_virtual.delete_bucket(Bucket=name)
    with pytest.raises(ClientError):
        s3.head_bucket(Bucket=name)


def test_virtual_host_raw_host_header(server, s3, bucket):
    """A request to 127.0.0.1 whose Host header names the bucket as a subdomain."""
    s3.put_object(Bucket=bucket, Key="k1", Body=b"via-host-header")
    host = f"{bucket}.localhost:{server.port}"
    r = raw_request(server, "GET", "/k1", host=host)
    assert r.status == 200, r
    assert r.body == b"via-host-header"
    r = raw_request(server, "PUT", "/k2", host=host, body=b"second")
    assert r.status == 200, r
    assert s3.get_object(Bucket=bucket, Key="k2")["Body"].read() == b"second"
    # Other user through the virtual host: still denied.
    r = raw_request(server, "GET", "/k1", host=host, user=USERS[1])
    assert r.status == 403 and r.error_code() == "AccessDenied", r


def test_buckets_per_user_are_bounded(make_server):
    """One access key owns at most max_buckets_per_user buckets (AWS's quota,
    TooManyBuckets): a tenant cannot fill the bucket namespace or make every
    other tenant's ListBuckets read an unbounded number of records. Re-creating a
    bucket one owns, deleting one and creating another, and another user's
    buckets are unaffected."""
    srv = make_server(config_extra="max_buckets_per_user: 2\n")
    s3, s3b = boto_client(srv), boto_client(srv, user=USERS[1])
    for name in ("quota-a", "quota-b"):
        s3.create_bucket(Bucket=name)
    with pytest.raises(ClientError) as ei:
        s3.create_bucket(Bucket="quota-c")
    assert_error(ei, "TooManyBuckets", 400)
    assert "quota-c" not in [b["Name"] for b in s3.list_buckets()["Buckets"]]
    s3.create_bucket(Bucket="quota-a")  # us-east-1: re-creating one's own bucket is a 200
    s3b.create_bucket(Bucket="quota-other")
    with pytest.raises(ClientError) as ei:
        s3b.create_bucket(Bucket="quota-a")
    assert_error(ei, "BucketAlreadyExists", 409)
    s3.delete_bucket(Bucket="quota-b")
    s3.create_bucket(Bucket="quota-c")
