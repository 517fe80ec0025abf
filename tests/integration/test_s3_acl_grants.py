"""Explicit ACL grants, as AWS S3 answers them: x-amz-grant-* headers on CreateBucket,
PutObject, CopyObject, CreateMultipartUpload, PutBucketAcl and PutObjectAcl (and POST
form fields);
AccessControlPolicy bodies with any grantee (a user by canonical id or by a configured
e-mail address, the AllUsers, AuthenticatedUsers and LogDelivery groups); each permission's effect for another user
and for anonymous requests; owners' display names from the configuration; every
refusal with S3's status and code; the bucket's public-access block and ownership
controls over grants; awscli's grant options; and the native RDMA path deciding the
same as HTTP (s3r_driver --transport native)."""
import json
import os
import re
import subprocess
from pathlib import Path

import botocore
import pytest
from botocore.exceptions import ClientError

from s3r_itest import (REPO_ROOT, TEST_BACKEND, UCX_ENVS, USERS, RdmaServer, ServerStartError,
                       assert_error, boto_client, clean_env, empty_bucket, free_port,
                       new_bucket_name, raw_request)

OWNER, OTHER = USERS[0], USERS[1]
AK1, AK2 = OWNER[0], OTHER[0]
OWNER_NAME = "Owner One"
OTHER_EMAIL = "other@example.com"
ALL_USERS = "http://acs.amazonaws.com/groups/global/AllUsers"
AUTH_USERS = "http://acs.amazonaws.com/groups/global/AuthenticatedUsers"
LOG_DELIVERY = "http://acs.amazonaws.com/groups/s3/LogDelivery"
DRIVER = Path(os.environ.get("S3RDMA_BUILD", REPO_ROOT / "build")) / "tests" / "s3r_driver"


def backend_args(request):
    """The session's backend (S3RDMA_TEST_BACKEND=rados: its test cluster's pool)."""
    return request.getfixturevalue("ceph_cluster").gateway_args() if TEST_BACKEND == "rados" else ()


@pytest.fixture(scope="module")
def srv(request, tmp_path_factory):
    s = RdmaServer(tmp_path_factory.mktemp("acl"), "acl", UCX_ENVS["ucx-default"],
                   users=[(*OWNER, OWNER_NAME), (*OTHER, None, OTHER_EMAIL)],
                   extra_args=backend_args(request)).start()
    s.dead = f"http://127.0.0.1:{free_port()}"
    yield s
    s.stop()


@pytest.fixture(scope="module")
def own(srv):
    return boto_client(srv, OWNER)


@pytest.fixture(scope="module")
def other(srv):
    return boto_client(srv, OTHER)


@pytest.fixture(scope="module")
def anon(srv):
    return boto_client(srv, signature_version=botocore.UNSIGNED)


@pytest.fixture
def b(own):
    name = new_bucket_name("acl")
    own.create_bucket(Bucket=name)
    yield name
    own.delete_bucket_ownership_controls(Bucket=name)
    own.delete_public_access_block(Bucket=name)
    own.put_bucket_acl(Bucket=name, ACL="private")  # the owner's implicit WRITE_ACP
    empty_bucket(own, name)
    own.delete_bucket(Bucket=name)


def user(id_, perm):
    return {"Grantee": {"Type": "CanonicalUser", "ID": id_}, "Permission": perm}


def group(uri, perm):
    return {"Grantee": {"Type": "Group", "URI": uri}, "Permission": perm}


def policy(*grants, owner=AK1):
    return {"Owner": {"ID": owner}, "Grants": list(grants)}


def grants_of(r):
    """The grant list of a Get*Acl answer as comparable tuples."""
    out = []
    for g in r["Grants"]:
        ge = g["Grantee"]
        out.append((ge["Type"], ge.get("ID") or ge.get("URI"), ge.get("DisplayName"),
                    g["Permission"]))
    return sorted(out)


def ok(fn, *a, **kw):
    try:
        r = fn(*a, **kw)
        if "Body" in r:
            r["Body"].read()
        return True
    except ClientError as e:
        code = e.response.get("Error", {}).get("Code")
        assert code in ("AccessDenied", "403"), e.response
        return False


def refused(code, status, fn, *a, **kw):
    with pytest.raises(ClientError) as e:
        fn(*a, **kw)
    assert_error(e, code, status)


# ---- owners and display names ------------------------------------------------------------

def test_default_acl_shows_the_configured_display_name(srv, own, other, b):
    r = own.get_bucket_acl(Bucket=b)
    assert r["Owner"] == {"ID": AK1, "DisplayName": OWNER_NAME}
    assert grants_of(r) == [("CanonicalUser", AK1, OWNER_NAME, "FULL_CONTROL")]
    # A user without display_name shows its access key, as before.
    own.put_object(Bucket=b, Key="k", Body=b"x", GrantRead=f"id={AK2}")
    r = own.get_object_acl(Bucket=b, Key="k")
    assert grants_of(r) == [("CanonicalUser", AK2, AK2, "READ")]
    assert own.list_buckets()["Owner"] == {"ID": AK1, "DisplayName": OWNER_NAME}
    assert other.list_buckets()["Owner"] == {"ID": AK2, "DisplayName": AK2}
    c = own.list_objects_v2(Bucket=b, FetchOwner=True)["Contents"][0]
    assert c["Owner"] == {"ID": AK1, "DisplayName": OWNER_NAME}


def test_group_grants_are_listed_first(own, b):
    """S3 defines no order for a grant list; s3rdmad lists group grants before user
    grants, as radosgw does (clients written against it index the list)."""
    own.put_bucket_acl(Bucket=b, ACL="public-read-write")
    got = [(g["Grantee"]["Type"], g["Permission"]) for g in own.get_bucket_acl(Bucket=b)["Grants"]]
    assert got == [("Group", "READ"), ("Group", "WRITE"), ("CanonicalUser", "FULL_CONTROL")]
    own.put_bucket_acl(Bucket=b, ACL="private")


@pytest.mark.parametrize("display_name, email", [('"bad\\tname"', None), ('""', None),
                                                 (None, "no-at-sign"), (None, '"a b@c"')])
def test_bad_display_name_or_email_stops_the_server(make_server, display_name, email):
    srv = make_server(users=[(*OWNER, display_name, email)], start=False)
    with pytest.raises(ServerStartError):
        srv.start()
    log = srv.log_tail()
    assert "a user's display_name must be" in log or "a user's email must be" in log, log


# ---- each permission's effect --------------------------------------------------------------

# What OTHER may do on the bucket with one permission granted:
# (list objects, write an object, read the ACL, write the ACL).
BUCKET_EFFECTS = {
    "READ": (True, False, False, False),
    "WRITE": (False, True, False, False),
    "READ_ACP": (False, False, True, False),
    "WRITE_ACP": (False, False, False, True),
    "FULL_CONTROL": (True, True, True, True),
}


@pytest.mark.parametrize("perm", list(BUCKET_EFFECTS))
def test_each_bucket_permission(own, other, b, perm):
    own.put_bucket_acl(Bucket=b, AccessControlPolicy=policy(user(AK1, "FULL_CONTROL"),
                                                            user(AK2, perm)))
    r = own.get_bucket_acl(Bucket=b)
    assert grants_of(r) == sorted([("CanonicalUser", AK1, OWNER_NAME, "FULL_CONTROL"),
                                   ("CanonicalUser", AK2, AK2, perm)])
    got = (ok(other.list_objects_v2, Bucket=b),
           ok(other.put_object, Bucket=b, Key="w", Body=b"x"),
           ok(other.get_bucket_acl, Bucket=b),
           ok(other.put_bucket_acl, Bucket=b,
              AccessControlPolicy=policy(user(AK1, "FULL_CONTROL"), user(AK2, perm))))
    assert got == BUCKET_EFFECTS[perm]
    # Never an owner's operation.
    refused("AccessDenied", 403, other.delete_bucket, Bucket=b)


# What OTHER may do on an object with one permission granted:
# (read it, read its ACL, write its ACL); WRITE means nothing on an object.
OBJECT_EFFECTS = {
    "READ": (True, False, False),
    "WRITE": (False, False, False),
    "READ_ACP": (False, True, False),
    "WRITE_ACP": (False, False, True),
    "FULL_CONTROL": (True, True, True),
}


@pytest.mark.parametrize("perm", list(OBJECT_EFFECTS))
def test_each_object_permission(own, other, b, perm):
    own.put_object(Bucket=b, Key="o", Body=b"data")
    pol = policy(user(AK1, "FULL_CONTROL"), user(AK2, perm))
    own.put_object_acl(Bucket=b, Key="o", AccessControlPolicy=pol)
    got = (ok(other.get_object, Bucket=b, Key="o"),
           ok(other.get_object_acl, Bucket=b, Key="o"),
           ok(other.put_object_acl, Bucket=b, Key="o", AccessControlPolicy=pol))
    assert got == OBJECT_EFFECTS[perm]
    refused("AccessDenied", 403, other.delete_object, Bucket=b, Key="o")


def test_owner_keeps_acp_only_with_no_grants(own, other, b):
    own.put_object(Bucket=b, Key="mine", Body=b"x")
    own.put_bucket_acl(Bucket=b, AccessControlPolicy=policy())
    assert own.get_bucket_acl(Bucket=b)["Grants"] == []
    own.get_object(Bucket=b, Key="mine")["Body"].read()  # the object's own ACL
    refused("AccessDenied", 403, own.put_object, Bucket=b, Key="new", Body=b"x")
    refused("AccessDenied", 403, own.list_objects_v2, Bucket=b)
    own.put_bucket_acl(Bucket=b, ACL="private")  # implicit WRITE_ACP
    own.put_object(Bucket=b, Key="new", Body=b"x")


# ---- groups and anonymous requests ---------------------------------------------------------

def test_all_users_auth_users_and_log_delivery(own, other, anon, b):
    own.put_object(Bucket=b, Key="pub", Body=b"p", GrantRead=f'uri="{ALL_USERS}"')
    own.put_object(Bucket=b, Key="auth", Body=b"a", GrantRead=f"uri={AUTH_USERS}")
    own.put_object(Bucket=b, Key="log", Body=b"l", GrantRead=f"uri={LOG_DELIVERY}",
                   GrantFullControl=f"id={AK1}")
    assert anon.get_object(Bucket=b, Key="pub")["Body"].read() == b"p"
    assert other.get_object(Bucket=b, Key="pub")["Body"].read() == b"p"
    assert not ok(anon.get_object, Bucket=b, Key="auth")
    assert other.get_object(Bucket=b, Key="auth")["Body"].read() == b"a"
    assert not ok(anon.get_object, Bucket=b, Key="log")
    assert not ok(other.get_object, Bucket=b, Key="log")
    assert grants_of(own.get_object_acl(Bucket=b, Key="log")) == sorted([
        ("CanonicalUser", AK1, OWNER_NAME, "FULL_CONTROL"), ("Group", LOG_DELIVERY, None, "READ")])
    # The owner's own object without a grant to itself: only its ACL is left to it.
    assert grants_of(own.get_object_acl(Bucket=b, Key="pub")) == [
        ("Group", ALL_USERS, None, "READ")]
    assert ok(own.get_object, Bucket=b, Key="pub")  # through AllUsers' READ
    # A bucket writable by everyone through a group grant.
    own.put_bucket_acl(Bucket=b, GrantWrite=f"uri={ALL_USERS}", GrantFullControl=f"id={AK1}")
    anon.put_object(Bucket=b, Key="from-anon", Body=b"z")
    own.put_bucket_acl(Bucket=b, GrantRead=f"uri={AUTH_USERS}", GrantFullControl=f"id={AK1}")
    assert not ok(anon.list_objects_v2, Bucket=b)
    assert ok(other.list_objects_v2, Bucket=b)
    assert not ok(anon.put_object, Bucket=b, Key="again", Body=b"z")


# ---- grant headers on every operation that takes them --------------------------------------

def test_grant_headers_on_create_bucket(own, other):
    name = new_bucket_name("aclc")
    own.create_bucket(Bucket=name, GrantRead=f'id="{AK2}"', GrantWriteACP=f"id={AK2}",
                      GrantFullControl=f"id={AK1}")
    try:
        assert grants_of(own.get_bucket_acl(Bucket=name)) == sorted([
            ("CanonicalUser", AK1, OWNER_NAME, "FULL_CONTROL"),
            ("CanonicalUser", AK2, AK2, "READ"), ("CanonicalUser", AK2, AK2, "WRITE_ACP")])
        assert ok(other.list_objects_v2, Bucket=name)
        assert not ok(other.put_object, Bucket=name, Key="k", Body=b"x")
        assert ok(other.put_bucket_acl, Bucket=name, ACL="private")
        assert not ok(other.list_objects_v2, Bucket=name)
    finally:
        own.delete_bucket(Bucket=name)


def test_grants_by_configured_email_address(own, other, b):
    own.put_object(Bucket=b, Key="k", Body=b"x",
                   GrantRead=f'emailAddress="{OTHER_EMAIL.upper()}"')
    assert other.get_object(Bucket=b, Key="k")["Body"].read() == b"x"
    own.put_bucket_acl(Bucket=b, AccessControlPolicy=policy(
        user(AK1, "FULL_CONTROL"),
        {"Grantee": {"Type": "AmazonCustomerByEmail", "EmailAddress": OTHER_EMAIL},
         "Permission": "WRITE"}))
    # Kept, and shown, as a grant to the user the address names.
    assert grants_of(own.get_bucket_acl(Bucket=b)) == sorted([
        ("CanonicalUser", AK1, OWNER_NAME, "FULL_CONTROL"), ("CanonicalUser", AK2, AK2, "WRITE")])
    other.put_object(Bucket=b, Key="w", Body=b"x")


def test_grant_headers_on_put_copy_and_multipart(own, other, b):
    own.put_object(Bucket=b, Key="src", Body=b"source", GrantRead=f"id={AK2}, id={AK1}",
                   GrantReadACP=f"id={AK2}")
    assert other.get_object(Bucket=b, Key="src")["Body"].read() == b"source"
    other.get_object_acl(Bucket=b, Key="src")
    # A copy takes the request's grants, never its source's.
    own.copy_object(Bucket=b, Key="copy", CopySource={"Bucket": b, "Key": "src"},
                    GrantFullControl=f"id={AK2}")
    assert grants_of(own.get_object_acl(Bucket=b, Key="copy")) == [
        ("CanonicalUser", AK2, AK2, "FULL_CONTROL")]
    other.put_object_acl(Bucket=b, Key="copy", ACL="public-read")
    own.copy_object(Bucket=b, Key="plain", CopySource={"Bucket": b, "Key": "src"})
    assert not ok(other.get_object, Bucket=b, Key="plain")
    up = own.create_multipart_upload(Bucket=b, Key="mpu", GrantRead=f"id={AK2}",
                                     GrantFullControl=f"id={AK1}")
    p = own.upload_part(Bucket=b, Key="mpu", UploadId=up["UploadId"], PartNumber=1, Body=b"m")
    own.complete_multipart_upload(Bucket=b, Key="mpu", UploadId=up["UploadId"],
                                  MultipartUpload={"Parts": [{"PartNumber": 1,
                                                              "ETag": p["ETag"]}]})
    assert other.get_object(Bucket=b, Key="mpu")["Body"].read() == b"m"
    assert grants_of(own.get_object_acl(Bucket=b, Key="mpu")) == sorted([
        ("CanonicalUser", AK1, OWNER_NAME, "FULL_CONTROL"), ("CanonicalUser", AK2, AK2, "READ")])


def test_grant_fields_of_a_post_form(srv, own, other, b):
    import requests
    g = f'id="{AK2}"'
    p = own.generate_presigned_post(b, "posted", Fields={"x-amz-grant-read": g},
                                    Conditions=[{"x-amz-grant-read": g}])
    files = [(k, (None, v)) for k, v in p["fields"].items()] + [
        ("file", ("f", b"form", "application/octet-stream"))]
    r = requests.post(f"{srv.endpoint}/{b}", files=files, timeout=30)
    assert r.status_code == 204, r.text
    assert other.get_object(Bucket=b, Key="posted")["Body"].read() == b"form"
    assert grants_of(own.get_object_acl(Bucket=b, Key="posted")) == [
        ("CanonicalUser", AK2, AK2, "READ")]


def test_acl_change_keeps_the_object(own, b):
    own.put_object(Bucket=b, Key="k", Body=b"bytes", ContentType="text/x-acl")
    before = own.head_object(Bucket=b, Key="k")
    own.put_object_acl(Bucket=b, Key="k", GrantRead=f"id={AK2}", GrantFullControl=f"id={AK1}")
    after = own.head_object(Bucket=b, Key="k")
    assert (after["ETag"], after["ContentType"]) == (before["ETag"], "text/x-acl")
    # A body equal to a canned ACL's grants reads back as that canned ACL's grants.
    own.put_object_acl(Bucket=b, Key="k", AccessControlPolicy=policy(
        user(AK1, "FULL_CONTROL"), group(ALL_USERS, "READ")))
    assert grants_of(own.get_object_acl(Bucket=b, Key="k")) == sorted([
        ("CanonicalUser", AK1, OWNER_NAME, "FULL_CONTROL"), ("Group", ALL_USERS, None, "READ")])


# ---- refusals --------------------------------------------------------------------------------

def test_refusals_of_grant_headers(own, b):
    own.put_object(Bucket=b, Key="k", Body=b"x")
    both = dict(ACL="public-read", GrantRead=f"id={AK2}")
    refused("InvalidRequest", 400, own.put_object, Bucket=b, Key="n", Body=b"x", **both)
    refused("InvalidRequest", 400, own.put_object_acl, Bucket=b, Key="k", **both)
    refused("InvalidRequest", 400, own.put_bucket_acl, Bucket=b, **both)
    refused("InvalidRequest", 400, own.create_bucket, Bucket=new_bucket_name("aclx"), **both)
    refused("InvalidRequest", 400, own.create_multipart_upload, Bucket=b, Key="m", **both)
    for bad, code in [("id=NOSUCHUSER", "InvalidArgument"),
                      ('uri="http://acs.amazonaws.com/groups/global/Nobody"', "InvalidArgument"),
                      ("name=x", "InvalidArgument"), ("id", "InvalidArgument"),
                      ('id="unterminated', "InvalidArgument"),
                      ("emailAddress=someone@example.com", "UnresolvableGrantByEmailAddress")]:
        refused(code, 400, own.put_object, Bucket=b, Key="n", Body=b"x", GrantRead=bad)
        refused(code, 400, own.put_object_acl, Bucket=b, Key="k", GrantWrite=bad)
        refused(code, 400, own.put_bucket_acl, Bucket=b, GrantReadACP=bad)
    with pytest.raises(ClientError):
        own.head_object(Bucket=b, Key="n")  # nothing was written
    # S3's limit: 100 grants.
    ids = ", ".join([f"id={AK2}"] * 100)
    own.put_object_acl(Bucket=b, Key="k", GrantRead=ids)
    assert len(own.get_object_acl(Bucket=b, Key="k")["Grants"]) == 100
    refused("InvalidArgument", 400, own.put_object_acl, Bucket=b, Key="k",
            GrantRead=ids, GrantWrite=f"id={AK2}")


def test_refusals_of_policy_bodies(srv, own, b):
    own.put_object(Bucket=b, Key="k", Body=b"x")
    for fn, kw in [(own.put_bucket_acl, {}), (own.put_object_acl, {"Key": "k"})]:
        refused("InvalidArgument", 400, fn, Bucket=b, **kw,
                AccessControlPolicy=policy(user("NOSUCHUSER", "READ")))
        refused("UnresolvableGrantByEmailAddress", 400, fn, Bucket=b, **kw,
                AccessControlPolicy=policy({"Grantee": {"Type": "AmazonCustomerByEmail",
                                                        "EmailAddress": "a@example.com"},
                                            "Permission": "READ"}))
        refused("InvalidArgument", 400, fn, Bucket=b, **kw,
                AccessControlPolicy=policy(group(ALL_USERS + "x", "READ")))
        refused("MalformedACLError", 400, fn, Bucket=b, **kw,
                AccessControlPolicy=policy(user(AK2, "EVERYTHING")))
        refused("AccessDenied", 403, fn, Bucket=b, **kw,
                AccessControlPolicy=policy(user(AK2, "READ"), owner=AK2))
        refused("MalformedACLError", 400, fn, Bucket=b, **kw,
                AccessControlPolicy=policy(*[user(AK2, "READ")] * 101))
    body = (f'<AccessControlPolicy><Owner><ID>{AK1}</ID></Owner><AccessControlList><Grant>'
            f'<Grantee xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" '
            f'xsi:type="CanonicalUser"><ID>{AK2}</ID></Grantee><Permission>READ</Permission>'
            f'</Grant></AccessControlList></AccessControlPolicy>').encode()
    r = raw_request(srv.srv, "PUT", f"/{b}", query=[("acl", "")], body=body,
                    headers={"x-amz-grant-read": f"id={AK2}"})
    assert (r.status, r.error_code()) == (400, "UnexpectedContent"), r
    r = raw_request(srv.srv, "PUT", f"/{b}", query=[("acl", "")], body=body)
    assert r.status == 200, r
    assert grants_of(own.get_bucket_acl(Bucket=b)) == [("CanonicalUser", AK2, AK2, "READ")]


# ---- the bucket's controls over grants ---------------------------------------------------------

def test_public_access_block_applies_to_grants(own, other, anon, b):
    own.put_object(Bucket=b, Key="pub", Body=b"p", GrantRead=f"uri={ALL_USERS}")
    own.put_object(Bucket=b, Key="k", Body=b"x")
    flags = {"BlockPublicAcls": True, "IgnorePublicAcls": False, "BlockPublicPolicy": False,
             "RestrictPublicBuckets": False}
    own.put_public_access_block(Bucket=b, PublicAccessBlockConfiguration=flags)
    for g in [f"uri={ALL_USERS}", f"uri={AUTH_USERS}"]:
        refused("AccessDenied", 403, own.put_object, Bucket=b, Key="n", Body=b"x", GrantRead=g)
        refused("AccessDenied", 403, own.put_object_acl, Bucket=b, Key="k", GrantRead=g)
        refused("AccessDenied", 403, own.put_bucket_acl, Bucket=b, GrantRead=g)
    refused("AccessDenied", 403, own.put_object_acl, Bucket=b, Key="k",
            AccessControlPolicy=policy(user(AK1, "FULL_CONTROL"), group(AUTH_USERS, "WRITE")))
    own.put_object_acl(Bucket=b, Key="k", GrantRead=f"id={AK2}")  # not public: fine
    assert anon.get_object(Bucket=b, Key="pub")["Body"].read() == b"p"  # set before
    own.put_public_access_block(Bucket=b, PublicAccessBlockConfiguration=dict(
        flags, BlockPublicAcls=False, IgnorePublicAcls=True))
    assert not ok(anon.get_object, Bucket=b, Key="pub")
    assert not ok(other.get_object, Bucket=b, Key="pub")
    assert ok(other.get_object, Bucket=b, Key="k")  # a user's grant still counts
    own.delete_public_access_block(Bucket=b)
    assert ok(anon.get_object, Bucket=b, Key="pub")


def test_bucket_owner_enforced_disables_grants(own, other, b):
    own.put_object(Bucket=b, Key="k", Body=b"x", GrantRead=f"id={AK2}")
    own.put_bucket_ownership_controls(Bucket=b, OwnershipControls={
        "Rules": [{"ObjectOwnership": "BucketOwnerEnforced"}]})
    assert not ok(other.get_object, Bucket=b, Key="k")  # ACLs are off
    refused("AccessControlListNotSupported", 400, own.put_object, Bucket=b, Key="n", Body=b"x",
            GrantRead=f"id={AK2}")
    refused("AccessControlListNotSupported", 400, own.put_object_acl, Bucket=b, Key="k",
            GrantRead=f"id={AK2}")
    refused("AccessControlListNotSupported", 400, own.put_bucket_acl, Bucket=b,
            AccessControlPolicy=policy(user(AK1, "FULL_CONTROL"), user(AK2, "READ")))
    own.put_bucket_acl(Bucket=b, AccessControlPolicy=policy(user(AK1, "FULL_CONTROL")))
    refused("InvalidBucketAclWithObjectOwnership", 400, own.create_bucket,
            Bucket=new_bucket_name("acle"), GrantRead=f"id={AK2}",
            ObjectOwnership="BucketOwnerEnforced")


# ---- awscli ----------------------------------------------------------------------------------

def test_awscli_grants(srv, own, b, tmp_path):
    if not os.path.exists("/usr/bin/aws"):
        pytest.skip("/usr/bin/aws not installed")
    env = clean_env({"HOME": str(tmp_path), "AWS_ACCESS_KEY_ID": AK1,
                     "AWS_SECRET_ACCESS_KEY": OWNER[1], "AWS_DEFAULT_REGION": "us-east-1",
                     "AWS_CONFIG_FILE": str(tmp_path / "c"),
                     "AWS_SHARED_CREDENTIALS_FILE": str(tmp_path / "k"), "AWS_PAGER": "",
                     "AWS_EC2_METADATA_DISABLED": "true"})
    aws = ["/usr/bin/aws", "--endpoint-url", srv.endpoint, "--no-cli-pager", "--output", "json"]

    def run(*args, check=True):
        p = subprocess.run(aws + list(args), env=env, capture_output=True, text=True,
                           timeout=120, stdin=subprocess.DEVNULL)
        assert (p.returncode == 0) == check, (args, p.returncode, p.stdout, p.stderr)
        return p

    src = tmp_path / "f"
    src.write_bytes(b"via awscli")
    run("s3", "cp", str(src), f"s3://{b}/cli", "--grants", f"read=id={AK2}",
        f"full=id={AK1}")
    run("s3api", "put-object-acl", "--bucket", b, "--key", "cli", "--grant-read",
        f"id={AK2},uri={AUTH_USERS}", "--grant-full-control", f"id={AK1}")
    got = json.loads(run("s3api", "get-object-acl", "--bucket", b, "--key", "cli").stdout)
    assert got["Owner"] == {"ID": AK1, "DisplayName": OWNER_NAME}
    assert grants_of(got) == sorted([("CanonicalUser", AK1, OWNER_NAME, "FULL_CONTROL"),
                                     ("CanonicalUser", AK2, AK2, "READ"),
                                     ("Group", AUTH_USERS, None, "READ")])
    (tmp_path / "p.json").write_text(json.dumps(policy(user(AK1, "FULL_CONTROL"),
                                                       user(AK2, "WRITE"))))
    run("s3api", "put-bucket-acl", "--bucket", b, "--access-control-policy",
        f"file://{tmp_path / 'p.json'}")
    assert ("CanonicalUser", AK2, AK2, "WRITE") in grants_of(own.get_bucket_acl(Bucket=b))
    p = run("s3api", "put-bucket-acl", "--bucket", b, "--grant-read", "id=NOSUCHUSER",
            check=False)
    assert "InvalidArgument" in p.stderr, p.stderr


# ---- the native path decides the same ----------------------------------------------------------

def driver(srv, usr, *args):
    """(ok, S3 error code) of one s3r_driver call over the native protocol only."""
    env = srv.client_env(usr)
    env["S3R_ENDPOINT"] = srv.dead
    p = subprocess.run([str(DRIVER), "--transport", "native", "--no-fallback", *map(str, args)],
                       env=env, capture_output=True, text=True, timeout=120)
    m = re.search(r"^RESULT (.*)$", p.stdout, re.M)
    fields = dict(kv.split("=", 1) for kv in m.group(1).split()) if m else {}
    assert p.returncode in (0, 1), (args, p.returncode, p.stderr, p.stdout)
    if p.returncode == 0:
        return True, None
    assert fields.get("transport") == "native", (args, fields, p.stderr)
    return False, fields.get("code")


def pattern(n=10, seed=1):
    """The bytes s3r_driver writes and checks."""
    return bytes((i * 31 + seed * 7 + (i >> 8)) & 0xFF for i in range(n))


@pytest.fixture(scope="module", params=list(UCX_ENVS))
def nsrv(request, tmp_path_factory):
    """A server per UCX setting for the native path (the module's srv uses the default)."""
    s = RdmaServer(tmp_path_factory.mktemp("aclnative"), "aclnative", UCX_ENVS[request.param],
                   users=[(*OWNER, OWNER_NAME), OTHER], extra_args=backend_args(request)).start()
    s.dead = f"http://127.0.0.1:{free_port()}"
    yield s
    s.stop()


def test_native_path_decides_grants_as_http(nsrv):
    srv, own, other = nsrv, boto_client(nsrv, OWNER), boto_client(nsrv, OTHER)
    b = new_bucket_name("aclnat")
    own.create_bucket(Bucket=b)
    own.put_object(Bucket=b, Key="granted", Body=pattern(), GrantRead=f"id={AK2}")
    own.put_object(Bucket=b, Key="auth", Body=pattern(), GrantRead=f"uri={AUTH_USERS}")
    own.put_object(Bucket=b, Key="plain", Body=pattern())
    for key, allowed in [("granted", True), ("auth", True), ("plain", False)]:
        assert ok(other.get_object, Bucket=b, Key=key) is allowed
        assert driver(srv, OTHER, "get", b, key, 10, 1) == (
            (True, None) if allowed else (False, "AccessDenied"))
    # Bucket grants: WRITE lets the other user put over native too; READ lists.
    assert driver(srv, OTHER, "put", b, "n1", 10, 1) == (False, "AccessDenied")
    assert driver(srv, OTHER, "ls", b, "-", "-", "-", 0, 0) == (False, "AccessDenied")
    own.put_bucket_acl(Bucket=b, GrantWrite=f"id={AK2}", GrantRead=f"id={AK2}",
                       GrantFullControl=f"id={AK1}")
    assert driver(srv, OTHER, "put", b, "n1", 10, 1) == (True, None)
    assert driver(srv, OTHER, "ls", b, "-", "-", "-", 0, 0) == (True, None)
    assert ok(other.put_object, Bucket=b, Key="n2", Body=b"x")
    # The owner without a grant to itself: denied on both paths alike.
    own.put_bucket_acl(Bucket=b, GrantRead=f"id={AK2}")
    assert driver(srv, OWNER, "put", b, "n3", 10, 1) == (False, "AccessDenied")
    assert not ok(own.put_object, Bucket=b, Key="n3", Body=b"x")
    assert driver(srv, OTHER, "put", b, "n3", 10, 1) == (False, "AccessDenied")
