"""The bucket-level controls over ACLs and policies, as AWS S3 answers them:
PublicAccessBlock (BlockPublicAcls, IgnorePublicAcls, BlockPublicPolicy,
RestrictPublicBuckets) and OwnershipControls (ObjectWriter, BucketOwnerPreferred,
BucketOwnerEnforced)."""
import json

import botocore
import pytest
from botocore.exceptions import ClientError

from s3r_itest import USERS, assert_error, boto_client, raw_request

OWNER, OTHER = USERS[0], USERS[1]
ALL_OFF = {"BlockPublicAcls": False, "IgnorePublicAcls": False, "BlockPublicPolicy": False,
           "RestrictPublicBuckets": False}


@pytest.fixture(scope="module")
def anon(server):
    return boto_client(server, signature_version=botocore.UNSIGNED)


def public_policy(b):
    return json.dumps({"Version": "2012-10-17", "Statement": [
        {"Effect": "Allow", "Principal": "*", "Action": "s3:GetObject",
         "Resource": f"arn:aws:s3:::{b}/*"}]})


def denied(fn, *a, **kw):
    with pytest.raises(ClientError) as e:
        fn(*a, **kw)
    assert_error(e, "AccessDenied", 403)


@pytest.fixture
def cbucket(s3, bucket):
    yield bucket
    s3.delete_bucket_policy(Bucket=bucket)
    s3.delete_public_access_block(Bucket=bucket)
    s3.delete_bucket_ownership_controls(Bucket=bucket)


# ---- PublicAccessBlock -----------------------------------------------------------------

def test_public_access_block_round_trip(s3, s3_user2, cbucket):
    b = cbucket
    with pytest.raises(ClientError) as e:
        s3.get_public_access_block(Bucket=b)
    assert_error(e, "NoSuchPublicAccessBlockConfiguration", 404)
    cfg = dict(ALL_OFF, BlockPublicAcls=True, RestrictPublicBuckets=True)
    r = s3.put_public_access_block(Bucket=b, PublicAccessBlockConfiguration=cfg)
    assert r["ResponseMetadata"]["HTTPStatusCode"] == 200
    assert s3.get_public_access_block(Bucket=b)["PublicAccessBlockConfiguration"] == cfg
    denied(s3_user2.get_public_access_block, Bucket=b)
    denied(s3_user2.put_public_access_block, Bucket=b, PublicAccessBlockConfiguration=ALL_OFF)
    assert s3.delete_public_access_block(Bucket=b)["ResponseMetadata"]["HTTPStatusCode"] == 204
    with pytest.raises(ClientError) as e:
        s3.get_public_access_block(Bucket=b)
    assert_error(e, "NoSuchPublicAccessBlockConfiguration", 404)


@pytest.mark.parametrize("body", [b"<Nope/>", b"not xml",
                                  b"<PublicAccessBlockConfiguration><BlockPublicAcls>maybe"
                                  b"</BlockPublicAcls></PublicAccessBlockConfiguration>"])
def test_public_access_block_malformed(server, cbucket, body):
    r = raw_request(server, "PUT", f"/{cbucket}", query=[("publicAccessBlock", "")], body=body)
    assert r.status == 400 and r.error_code() == "MalformedXML", r


def test_block_public_acls(s3, cbucket):
    b = cbucket
    s3.put_object(Bucket=b, Key="k", Body=b"x")
    s3.put_public_access_block(Bucket=b, PublicAccessBlockConfiguration=dict(
        ALL_OFF, BlockPublicAcls=True))
    for acl in ["public-read", "public-read-write", "authenticated-read"]:
        denied(s3.put_object, Bucket=b, Key="n", Body=b"x", ACL=acl)
        denied(s3.put_object_acl, Bucket=b, Key="k", ACL=acl)
        denied(s3.put_bucket_acl, Bucket=b, ACL=acl)
        denied(s3.copy_object, Bucket=b, Key="c", CopySource={"Bucket": b, "Key": "k"}, ACL=acl)
        denied(s3.create_multipart_upload, Bucket=b, Key="m", ACL=acl)
    s3.put_object(Bucket=b, Key="n", Body=b"x", ACL="private")
    s3.put_object_acl(Bucket=b, Key="k", ACL="bucket-owner-read")


def test_ignore_public_acls(s3, anon, cbucket):
    b = cbucket
    s3.put_object(Bucket=b, Key="k", Body=b"x", ACL="public-read")
    assert anon.get_object(Bucket=b, Key="k")["Body"].read() == b"x"
    s3.put_public_access_block(Bucket=b, PublicAccessBlockConfiguration=dict(
        ALL_OFF, IgnorePublicAcls=True))
    denied(anon.get_object, Bucket=b, Key="k")
    assert s3.get_object(Bucket=b, Key="k")["Body"].read() == b"x"
    s3.delete_public_access_block(Bucket=b)
    assert anon.get_object(Bucket=b, Key="k")["Body"].read() == b"x"


def test_block_public_policy_and_restrict_public_buckets(s3, s3_user2, anon, cbucket):
    b = cbucket
    s3.put_object(Bucket=b, Key="k", Body=b"x")
    s3.put_bucket_policy(Bucket=b, Policy=public_policy(b))
    assert anon.get_object(Bucket=b, Key="k")["Body"].read() == b"x"
    s3.put_public_access_block(Bucket=b, PublicAccessBlockConfiguration=dict(
        ALL_OFF, RestrictPublicBuckets=True))
    denied(anon.get_object, Bucket=b, Key="k")
    denied(s3_user2.get_object, Bucket=b, Key="k")
    assert s3.get_object(Bucket=b, Key="k")["Body"].read() == b"x"
    # A non-public policy still grants under RestrictPublicBuckets.
    s3.put_bucket_policy(Bucket=b, Policy=json.dumps({"Statement": [
        {"Effect": "Allow", "Principal": {"AWS": OTHER[0]}, "Action": "s3:GetObject",
         "Resource": f"arn:aws:s3:::{b}/*"}]}))
    assert s3_user2.get_object(Bucket=b, Key="k")["Body"].read() == b"x"
    s3.put_public_access_block(Bucket=b, PublicAccessBlockConfiguration=dict(
        ALL_OFF, BlockPublicPolicy=True))
    with pytest.raises(ClientError) as e:
        s3.put_bucket_policy(Bucket=b, Policy=public_policy(b))
    assert_error(e, "AccessDenied", 403)
    assert "Principal" in s3.get_bucket_policy(Bucket=b)["Policy"]
    assert OTHER[0] in s3.get_bucket_policy(Bucket=b)["Policy"]  # unchanged


# ---- OwnershipControls ------------------------------------------------------------------

def ownership(s3, b, rule):
    r = s3.put_bucket_ownership_controls(Bucket=b, OwnershipControls={
        "Rules": [{"ObjectOwnership": rule}]})
    assert r["ResponseMetadata"]["HTTPStatusCode"] == 200


def test_ownership_controls_round_trip(s3, s3_user2, server, cbucket):
    b = cbucket
    with pytest.raises(ClientError) as e:
        s3.get_bucket_ownership_controls(Bucket=b)
    assert_error(e, "OwnershipControlsNotFoundError", 404)
    for rule in ["BucketOwnerEnforced", "BucketOwnerPreferred", "ObjectWriter"]:
        ownership(s3, b, rule)
        got = s3.get_bucket_ownership_controls(Bucket=b)["OwnershipControls"]
        assert got == {"Rules": [{"ObjectOwnership": rule}]}
    denied(s3_user2.get_bucket_ownership_controls, Bucket=b)
    denied(s3_user2.delete_bucket_ownership_controls, Bucket=b)
    r = raw_request(server, "PUT", f"/{b}", query=[("ownershipControls", "")],
                    body=b"<OwnershipControls><Rule><ObjectOwnership>Mine</ObjectOwnership>"
                         b"</Rule></OwnershipControls>")
    assert r.status == 400 and r.error_code() == "MalformedXML", r
    assert s3.delete_bucket_ownership_controls(Bucket=b)["ResponseMetadata"][
        "HTTPStatusCode"] == 204
    with pytest.raises(ClientError) as e:
        s3.get_bucket_ownership_controls(Bucket=b)
    assert_error(e, "OwnershipControlsNotFoundError", 404)


def open_to_user2(s3, b):
    s3.put_bucket_policy(Bucket=b, Policy=json.dumps({"Statement": [
        {"Effect": "Allow", "Principal": {"AWS": OTHER[0]}, "Action": "s3:PutObject",
         "Resource": f"arn:aws:s3:::{b}/*"}]}))


def test_bucket_owner_enforced_disables_acls(s3, s3_user2, cbucket):
    b = cbucket
    open_to_user2(s3, b)
    ownership(s3, b, "BucketOwnerEnforced")
    for call in [lambda: s3.put_object(Bucket=b, Key="k", Body=b"x", ACL="public-read"),
                 lambda: s3.put_object(Bucket=b, Key="k", Body=b"x", ACL="private"),
                 lambda: s3.put_bucket_acl(Bucket=b, ACL="public-read"),
                 lambda: s3.create_multipart_upload(Bucket=b, Key="m", ACL="authenticated-read")]:
        with pytest.raises(ClientError) as e:
            call()
        assert_error(e, "AccessControlListNotSupported", 400)
    s3.put_object(Bucket=b, Key="k", Body=b"x")
    with pytest.raises(ClientError) as e:
        s3.put_object_acl(Bucket=b, Key="k", ACL="public-read")
    assert_error(e, "AccessControlListNotSupported", 400)
    s3.put_object(Bucket=b, Key="k2", Body=b"x", ACL="bucket-owner-full-control")
    # user 2's object belongs to the bucket's owner: its writer cannot read it back.
    s3_user2.put_object(Bucket=b, Key="theirs", Body=b"y")
    assert s3.get_object(Bucket=b, Key="theirs")["Body"].read() == b"y"
    denied(s3_user2.get_object, Bucket=b, Key="theirs")


def test_bucket_owner_preferred_and_object_writer(s3, s3_user2, cbucket):
    b = cbucket
    open_to_user2(s3, b)
    ownership(s3, b, "BucketOwnerPreferred")
    s3_user2.put_object(Bucket=b, Key="given", Body=b"y", ACL="bucket-owner-full-control")
    s3_user2.put_object(Bucket=b, Key="kept", Body=b"z")
    assert s3.get_object_acl(Bucket=b, Key="given")["Owner"]["ID"] == OWNER[0]
    denied(s3.get_object_acl, Bucket=b, Key="kept")  # user 2's own, private
    denied(s3_user2.get_object, Bucket=b, Key="given")
    assert s3_user2.get_object(Bucket=b, Key="kept")["Body"].read() == b"z"
    ownership(s3, b, "ObjectWriter")
    s3_user2.put_object(Bucket=b, Key="w", Body=b"w", ACL="bucket-owner-full-control")
    assert s3_user2.get_object(Bucket=b, Key="w")["Body"].read() == b"w"
    assert s3.get_object(Bucket=b, Key="w")["Body"].read() == b"w"



def test_bucket_owner_enforced_needs_a_private_bucket_acl(s3, cbucket):
    """BucketOwnerEnforced turns ACLs off: S3 refuses it while the bucket's ACL
    grants anything beyond the owner's full control."""
    b = cbucket
    for acl in ("public-read", "authenticated-read"):
        s3.put_bucket_acl(Bucket=b, ACL=acl)
        with pytest.raises(ClientError) as e:
            ownership(s3, b, "BucketOwnerEnforced")
        assert_error(e, "InvalidBucketAclWithObjectOwnership", 400)
    s3.put_bucket_acl(Bucket=b, GrantRead=f"id={OTHER[0]}")
    with pytest.raises(ClientError) as e:
        ownership(s3, b, "BucketOwnerEnforced")
    assert_error(e, "InvalidBucketAclWithObjectOwnership", 400)
    ownership(s3, b, "ObjectWriter")  # the others stay allowed
    s3.put_bucket_acl(Bucket=b, ACL="private")
    ownership(s3, b, "BucketOwnerEnforced")


def test_list_parts_names_the_object_owner_to_be(s3, s3_user2, cbucket):
    """ListParts' Owner: the initiator under ObjectWriter, the bucket owner where ownership
    gives it the objects (BucketOwnerEnforced); Initiator: who created the upload, either
    way (AWS's Initiator "identifies who initiated the multipart upload")."""
    b = cbucket
    s3.put_bucket_policy(Bucket=b, Policy=json.dumps({"Statement": [
        {"Effect": "Allow", "Principal": {"AWS": OTHER[0]},
         "Action": ["s3:PutObject", "s3:ListMultipartUploadParts", "s3:AbortMultipartUpload"],
         "Resource": f"arn:aws:s3:::{b}/*"}]}))
    for rule, want in (("ObjectWriter", OTHER[0]), ("BucketOwnerEnforced", OWNER[0])):
        ownership(s3, b, rule)
        up = s3_user2.create_multipart_upload(Bucket=b, Key="m")["UploadId"]
        r = s3_user2.list_parts(Bucket=b, Key="m", UploadId=up)
        assert (r["Owner"]["ID"], r["Initiator"]["ID"]) == (want, OTHER[0]), rule
        s3_user2.abort_multipart_upload(Bucket=b, Key="m", UploadId=up)


def test_create_bucket_with_object_ownership(s3, server):
    from s3r_itest import new_bucket_name
    b = new_bucket_name("own")
    s3.create_bucket(Bucket=b, ObjectOwnership="BucketOwnerEnforced")
    try:
        got = s3.get_bucket_ownership_controls(Bucket=b)["OwnershipControls"]
        assert got == {"Rules": [{"ObjectOwnership": "BucketOwnerEnforced"}]}
        with pytest.raises(ClientError) as e:
            s3.put_object(Bucket=b, Key="k", Body=b"x", ACL="public-read")
        assert_error(e, "AccessControlListNotSupported", 400)
        # Re-creating one's own bucket (us-east-1: 200, the ACL reset) goes through
        # the bucket's controls too.
        with pytest.raises(ClientError) as e:
            s3.create_bucket(Bucket=b, ACL="public-read")
        assert_error(e, "AccessControlListNotSupported", 400)
        s3.delete_bucket_ownership_controls(Bucket=b)
        s3.put_public_access_block(Bucket=b, PublicAccessBlockConfiguration=dict(
            ALL_OFF, BlockPublicAcls=True))
        denied(s3.create_bucket, Bucket=b, ACL="public-read")
        assert s3.get_bucket_acl(Bucket=b)["Grants"][0]["Permission"] == "FULL_CONTROL"
        assert len(s3.get_bucket_acl(Bucket=b)["Grants"]) == 1
    finally:
        s3.delete_bucket(Bucket=b)
    with pytest.raises(ClientError) as e:
        s3.create_bucket(Bucket=b, ACL="public-read", ObjectOwnership="BucketOwnerEnforced")
    assert_error(e, "InvalidBucketAclWithObjectOwnership", 400)
    r = raw_request(server, "PUT", f"/{b}", headers={"x-amz-object-ownership": "Mine"})
    assert r.status == 400 and r.error_code() == "InvalidArgument", r
    s3.create_bucket(Bucket=b, ObjectOwnership="ObjectWriter")
    try:
        got = s3.get_bucket_ownership_controls(Bucket=b)["OwnershipControls"]
        assert got == {"Rules": [{"ObjectOwnership": "ObjectWriter"}]}
    finally:
        s3.delete_bucket(Bucket=b)


# ---- x-amz-expected-bucket-owner ------------------------------------------------------

def test_expected_bucket_owner(s3, s3_user2, anon, bucket):
    """A request naming another bucket owner is denied, whatever the ACLs allow
    (x-amz-expected-bucket-owner; x-amz-source-expected-bucket-owner for a copy's
    source), and nothing is written; the right owner changes nothing."""
    s3.put_bucket_acl(Bucket=bucket, ACL="public-read-write")
    s3.put_object(Bucket=bucket, Key="k", Body=b"v")
    owner, wrong = OWNER[0], OWNER[0] + "x"
    assert s3.get_object(Bucket=bucket, Key="k", ExpectedBucketOwner=owner)["Body"].read() == b"v"
    for client in (s3, s3_user2, anon):
        denied(client.list_objects, Bucket=bucket, ExpectedBucketOwner=wrong)
        denied(client.put_object, Bucket=bucket, Key="new", Body=b"x", ExpectedBucketOwner=wrong)
        denied(client.get_object, Bucket=bucket, Key="k", ExpectedBucketOwner=wrong)
    denied(s3.copy_object, Bucket=bucket, Key="copy", CopySource={"Bucket": bucket, "Key": "k"},
           ExpectedSourceBucketOwner=wrong)
    s3.copy_object(Bucket=bucket, Key="copy", CopySource={"Bucket": bucket, "Key": "k"},
                   ExpectedSourceBucketOwner=owner, ExpectedBucketOwner=owner)
    keys = [o["Key"] for o in s3.list_objects_v2(Bucket=bucket)["Contents"]]
    assert keys == ["copy", "k"]
    s3.put_bucket_acl(Bucket=bucket, ACL="private")
