"""Bucket policies as AWS S3 answers them: Put/Get/DeleteBucketPolicy and
GetBucketPolicyStatus, validation (MalformedPolicy), and the decision every request goes
through (an explicit Deny wins, then an Allow of the policy or the ACL), with conditions.

The policy matrix at the end checks each decision over HTTP (boto3) and over the native
RDMA protocol (s3r_driver --transport native) against one server: the same decision,
the same error code, whatever carried the request."""
import json
import os
import re
import subprocess
import uuid
from pathlib import Path

import botocore
import pytest
from botocore.exceptions import ClientError

from s3r_itest import (REPO_ROOT, UCX_ENVS, USERS, RdmaServer, Server, assert_error,
                       boto_client, client_error, empty_bucket, free_port, raw_request,
                       write_config)

OWNER, OTHER = USERS[0], USERS[1]
ARN = "arn:aws:s3:::"


def policy(bucket, *statements):
    return json.dumps({"Version": "2012-10-17", "Statement": list(statements)})


def stmt(effect, actions, resources, principal="*", condition=None, **extra):
    s = {"Effect": effect, "Principal": principal, "Action": actions, "Resource": resources}
    if condition:
        s["Condition"] = condition
    s.update(extra)
    return s


@pytest.fixture(scope="module")
def anon(server):
    return boto_client(server, signature_version=botocore.UNSIGNED)


@pytest.fixture
def pbucket(s3, bucket):
    """The fresh bucket, its policy removed afterwards so that cleanup is the owner's."""
    yield bucket
    s3.delete_bucket_policy(Bucket=bucket)


def denied(fn, *a, **kw):
    with pytest.raises(ClientError) as e:
        fn(*a, **kw)
    assert_error(e, "AccessDenied", 403)


# ---- Put / Get / Delete / Status ---------------------------------------------------------

def test_policy_round_trip_and_status(s3, pbucket):
    b = pbucket
    with pytest.raises(ClientError) as e:
        s3.get_bucket_policy(Bucket=b)
    assert_error(e, "NoSuchBucketPolicy", 404)
    with pytest.raises(ClientError) as e:
        s3.get_bucket_policy_status(Bucket=b)
    assert_error(e, "NoSuchBucketPolicy", 404)
    doc = {"Version": "2012-10-17", "Id": "p1", "Statement": [
        {"Sid": "read", "Effect": "Allow", "Principal": "*", "Action": "s3:GetObject",
         "Resource": f"{ARN}{b}/*"}]}
    r = s3.put_bucket_policy(Bucket=b, Policy=json.dumps(doc, indent=2))
    assert r["ResponseMetadata"]["HTTPStatusCode"] == 204
    got = s3.get_bucket_policy(Bucket=b)
    assert json.loads(got["Policy"]) == doc
    assert s3.get_bucket_policy_status(Bucket=b)["PolicyStatus"]["IsPublic"] is True
    # Narrowed to an address range: no longer public.
    doc["Statement"][0]["Condition"] = {"IpAddress": {"aws:SourceIp": "10.0.0.0/8"}}
    s3.put_bucket_policy(Bucket=b, Policy=json.dumps(doc))
    assert s3.get_bucket_policy_status(Bucket=b)["PolicyStatus"]["IsPublic"] is False
    r = s3.delete_bucket_policy(Bucket=b)
    assert r["ResponseMetadata"]["HTTPStatusCode"] == 204
    with pytest.raises(ClientError) as e:
        s3.get_bucket_policy(Bucket=b)
    assert_error(e, "NoSuchBucketPolicy", 404)
    s3.delete_bucket_policy(Bucket=b)  # nothing to delete: still 204


MALFORMED = [
    ("not json", "first byte must be '{'"),
    ("[]", "first byte must be '{'"),
    (json.dumps({"Version": "2012-10-17"}), "Missing required field Statement"),
    (json.dumps({"Version": "2012-10-17", "Statement": []}), "Statement is empty"),
    (json.dumps({"Version": "1999-01-01", "Statement": [stmt("Allow", "s3:GetObject", ARN + "B/*")]}),
     "valid version"),
    (json.dumps({"Statement": [{"Principal": "*", "Action": "s3:GetObject",
                                "Resource": ARN + "B/*"}]}), "Missing required field Effect"),
    (json.dumps({"Statement": [stmt("Maybe", "s3:GetObject", ARN + "B/*")]}), "Invalid effect"),
    (json.dumps({"Statement": [{"Effect": "Allow", "Action": "s3:GetObject",
                                "Resource": ARN + "B/*"}]}), "Missing required field Principal"),
    (json.dumps({"Statement": [{"Effect": "Allow", "Principal": "*",
                                "Resource": ARN + "B/*"}]}), "Missing required field Action"),
    (json.dumps({"Statement": [{"Effect": "Allow", "Principal": "*",
                                "Action": "s3:GetObject"}]}), "Missing required field Resource"),
    (json.dumps({"Statement": [stmt("Allow", "s3:GetObjekt", ARN + "B/*")]}),
     "Policy has invalid action"),
    (json.dumps({"Statement": [stmt("Allow", "iam:PassRole", ARN + "B/*")]}),
     "Policy has invalid action"),
    (json.dumps({"Statement": [stmt("Allow", "s3:GetObject", ARN + "someone-else/*")]}),
     "Policy has invalid resource"),
    (json.dumps({"Statement": [stmt("Allow", "s3:GetObject", "arn:aws:sqs:::q")]}),
     "Policy has invalid resource"),
    (json.dumps({"Statement": [stmt("Allow", "s3:GetObject", ARN + "B/*",
                                    principal={"Bogus": "x"})]}), "Invalid principal"),
    (json.dumps({"Statement": [stmt("Allow", "s3:GetObject", ARN + "B/*",
                                    condition={"StringEqualz": {"s3:prefix": "a"}})]}),
     "Invalid Condition type : StringEqualz"),
    (json.dumps({"Statement": [stmt("Allow", "s3:GetObject", ARN + "B/*",
                                    condition={"StringEquals": {"s3:nonsense": "a"}})]}),
     "invalid condition key"),
    (json.dumps({"Statement": [stmt("Allow", "s3:GetObject", ARN + "B/*",
                                    condition={"IpAddress": {"aws:SourceIp": "300.1.1.1/8"}})]}),
     "Invalid IP address"),
    (json.dumps({"Statement": [stmt("Allow", "s3:GetObject", ARN + "B/*", Bogus=1)]}),
     "Unknown field Bogus"),
    ('{"Statement": [], "Statement": []}', "first byte must be '{'"),
    # IAM: "NotPrincipal must be used with Deny. Using it with Allow is not supported."
    (json.dumps({"Statement": [{"Effect": "Allow", "NotPrincipal": {"AWS": "AKNOBODY"},
                                "Action": "s3:ListBucket", "Resource": ARN + "B/*"}]}),
     "NotPrincipal must be used with"),
]


@pytest.mark.parametrize("doc,message", MALFORMED)
def test_malformed_policies_are_refused_with_aws_messages(s3, bucket, doc, message):
    with pytest.raises(ClientError) as e:
        s3.put_bucket_policy(Bucket=bucket, Policy=doc.replace(ARN + "B/", f"{ARN}{bucket}/"))
    assert_error(e, "MalformedPolicy", 400)
    assert message in e.value.response["Error"]["Message"]
    with pytest.raises(ClientError) as e:
        s3.get_bucket_policy(Bucket=bucket)
    assert_error(e, "NoSuchBucketPolicy", 404)


def test_policy_size_limit(s3, pbucket):
    pad = "x" * 100
    sts = [stmt("Allow", "s3:GetObject", f"{ARN}{pbucket}/{pad}{i}") for i in range(200)]
    doc = policy(pbucket, *sts)
    assert len(doc) > 20 * 1024
    with pytest.raises(ClientError) as e:
        s3.put_bucket_policy(Bucket=pbucket, Policy=doc)
    assert_error(e, "MalformedPolicy", 400)
    s3.put_bucket_policy(Bucket=pbucket, Policy=policy(pbucket, *sts[:50]))


# ---- who may change the policy -------------------------------------------------------------

def test_only_the_owner_manages_the_policy_and_a_deny_cannot_lock_it_out(s3, s3_user2, pbucket):
    b = pbucket
    s3.put_object(Bucket=b, Key="k", Body=b"v")
    doc = policy(b, stmt("Allow", "s3:*", [f"{ARN}{b}", f"{ARN}{b}/*"]))
    s3.put_bucket_policy(Bucket=b, Policy=doc)
    # s3:* granted to everyone, but the policy actions stay the owner's.
    assert s3_user2.get_object(Bucket=b, Key="k")["Body"].read() == b"v"
    denied(s3_user2.get_bucket_policy, Bucket=b)
    denied(s3_user2.put_bucket_policy, Bucket=b, Policy=doc)
    denied(s3_user2.delete_bucket_policy, Bucket=b)
    # Deny everything to everyone: the owner loses the objects but keeps the policy.
    s3.put_bucket_policy(Bucket=b, Policy=policy(b, stmt("Deny", "s3:*",
                                                         [f"{ARN}{b}", f"{ARN}{b}/*"])))
    denied(s3.get_object, Bucket=b, Key="k")
    denied(s3.list_objects_v2, Bucket=b)
    assert json.loads(s3.get_bucket_policy(Bucket=b)["Policy"])["Statement"][0]["Effect"] == "Deny"
    s3.delete_bucket_policy(Bucket=b)
    assert s3.get_object(Bucket=b, Key="k")["Body"].read() == b"v"


# ---- evaluation -----------------------------------------------------------------------------

def test_anonymous_access_through_the_policy_and_deny_over_acl(s3, anon, pbucket):
    b = pbucket
    s3.put_object(Bucket=b, Key="pub/a", Body=b"a")
    s3.put_object(Bucket=b, Key="priv/a", Body=b"p", ACL="public-read")
    denied(anon.get_object, Bucket=b, Key="pub/a")
    assert anon.get_object(Bucket=b, Key="priv/a")["Body"].read() == b"p"  # the ACL's grant
    s3.put_bucket_policy(Bucket=b, Policy=policy(
        b, stmt("Allow", "s3:GetObject", f"{ARN}{b}/pub/*"),
        stmt("Deny", "s3:GetObject", f"{ARN}{b}/priv/*")))
    assert anon.get_object(Bucket=b, Key="pub/a")["Body"].read() == b"a"
    denied(anon.get_object, Bucket=b, Key="priv/a")  # explicit Deny beats the public-read ACL
    denied(anon.list_objects_v2, Bucket=b)            # ListBucket is not granted
    denied(anon.put_object, Bucket=b, Key="pub/b", Body=b"x")
    # A missing key: AccessDenied without s3:ListBucket, NoSuchKey with it.
    denied(anon.get_object, Bucket=b, Key="pub/none")
    s3.put_bucket_policy(Bucket=b, Policy=policy(
        b, stmt("Allow", "s3:GetObject", f"{ARN}{b}/pub/*"),
        stmt("Allow", "s3:ListBucket", f"{ARN}{b}")))
    with pytest.raises(ClientError) as e:
        anon.get_object(Bucket=b, Key="pub/none")
    assert_error(e, "NoSuchKey", 404)


def test_principals_by_access_key_and_arn_and_not_principal(s3, s3_user2, anon, pbucket):
    b = pbucket
    s3.put_object(Bucket=b, Key="k", Body=b"v")
    for who in [OTHER[0], f"arn:aws:iam::123456789012:user/{OTHER[0]}", [OTHER[0], "AKNOBODY"]]:
        s3.put_bucket_policy(Bucket=b, Policy=policy(
            b, stmt("Allow", "s3:GetObject", f"{ARN}{b}/k", principal={"AWS": who})))
        assert s3_user2.get_object(Bucket=b, Key="k")["Body"].read() == b"v"
        denied(anon.get_object, Bucket=b, Key="k")
    # NotPrincipal with Deny: everyone but user 2 is refused, the owner included.
    s3.put_bucket_policy(Bucket=b, Policy=json.dumps({"Statement": [
        {"Effect": "Allow", "Principal": "*", "Action": "s3:GetObject", "Resource": f"{ARN}{b}/k"},
        {"Effect": "Deny", "NotPrincipal": {"AWS": OTHER[0]}, "Action": "s3:GetObject",
         "Resource": f"{ARN}{b}/k"}]}))
    assert s3_user2.get_object(Bucket=b, Key="k")["Body"].read() == b"v"
    denied(s3.get_object, Bucket=b, Key="k")
    denied(anon.get_object, Bucket=b, Key="k")


def test_not_action_and_not_resource(s3, s3_user2, pbucket):
    b = pbucket
    s3.put_object(Bucket=b, Key="open/k", Body=b"v")
    s3.put_object(Bucket=b, Key="closed/k", Body=b"v")
    s3.put_bucket_policy(Bucket=b, Policy=json.dumps({"Statement": [
        {"Effect": "Allow", "Principal": "*", "NotAction": ["s3:Delete*", "s3:Put*"],
         "NotResource": f"{ARN}{b}/closed/*"}]}))
    assert s3_user2.get_object(Bucket=b, Key="open/k")["Body"].read() == b"v"
    assert [o["Key"] for o in s3_user2.list_objects_v2(Bucket=b)["Contents"]] == \
        ["closed/k", "open/k"]
    denied(s3_user2.get_object, Bucket=b, Key="closed/k")
    denied(s3_user2.put_object, Bucket=b, Key="open/new", Body=b"x")
    denied(s3_user2.delete_object, Bucket=b, Key="open/k")


def test_conditions(s3, s3_user2, pbucket):
    b = pbucket
    s3.put_object(Bucket=b, Key="a/1", Body=b"1")
    s3.put_object(Bucket=b, Key="b/1", Body=b"1")

    def put(*sts):
        s3.put_bucket_policy(Bucket=b, Policy=policy(b, *sts))

    bucket_arn, objs = f"{ARN}{b}", f"{ARN}{b}/*"
    # s3:prefix with StringLike, s3:max-keys with a numeric bound.
    put(stmt("Allow", "s3:ListBucket", bucket_arn, principal={"AWS": OTHER[0]},
             condition={"StringLike": {"s3:prefix": "a/*"},
                        "NumericLessThanEquals": {"s3:max-keys": "10"}}))
    assert [o["Key"] for o in s3_user2.list_objects_v2(Bucket=b, Prefix="a/", MaxKeys=5)
            ["Contents"]] == ["a/1"]
    denied(s3_user2.list_objects_v2, Bucket=b, Prefix="b/", MaxKeys=5)
    denied(s3_user2.list_objects_v2, Bucket=b, Prefix="a/", MaxKeys=11)
    denied(s3_user2.list_objects_v2, Bucket=b)  # no prefix: the key is missing
    # s3:delimiter
    put(stmt("Allow", "s3:ListBucket", bucket_arn, condition={"StringEquals": {"s3:delimiter": "/"}}))
    assert s3_user2.list_objects_v2(Bucket=b, Delimiter="/")["CommonPrefixes"]
    denied(s3_user2.list_objects_v2, Bucket=b)
    # aws:SourceIp: the tests come from 127.0.0.1
    put(stmt("Allow", "s3:GetObject", objs, condition={"IpAddress": {"aws:SourceIp": "127.0.0.0/8"}}))
    assert s3_user2.get_object(Bucket=b, Key="a/1")["Body"].read() == b"1"
    put(stmt("Allow", "s3:GetObject", objs),
        stmt("Deny", "s3:GetObject", objs, condition={"NotIpAddress": {"aws:SourceIp": ["10.0.0.0/8", "::1/128"]}}))
    denied(s3_user2.get_object, Bucket=b, Key="a/1")
    # aws:SecureTransport: plain HTTP is not secure
    put(stmt("Allow", "s3:GetObject", objs),
        stmt("Deny", "s3:*", objs, condition={"Bool": {"aws:SecureTransport": "false"}}))
    denied(s3_user2.get_object, Bucket=b, Key="a/1")
    denied(s3.get_object, Bucket=b, Key="a/1")
    # aws:CurrentTime with dates
    put(stmt("Allow", "s3:GetObject", objs,
             condition={"DateGreaterThan": {"aws:CurrentTime": "2020-01-01T00:00:00Z"},
                        "DateLessThan": {"aws:CurrentTime": "2999-01-01"}}))
    assert s3_user2.get_object(Bucket=b, Key="a/1")["Body"].read() == b"1"
    put(stmt("Allow", "s3:GetObject", objs,
             condition={"DateGreaterThan": {"aws:CurrentTime": "2999-01-01T00:00:00Z"}}))
    denied(s3_user2.get_object, Bucket=b, Key="a/1")
    # aws:username, case folded; ...IfExists; ForAnyValue
    put(stmt("Allow", "s3:GetObject", objs,
             condition={"StringEqualsIgnoreCase": {"aws:username": OTHER[0].lower()}}))
    assert s3_user2.get_object(Bucket=b, Key="a/1")["Body"].read() == b"1"
    put(stmt("Allow", "s3:GetObject", objs,
             condition={"StringEqualsIfExists": {"s3:x-amz-server-side-encryption": "AES256"},
                        "ForAnyValue:StringEquals": {"aws:username": [OTHER[0], "x"]}}))
    assert s3_user2.get_object(Bucket=b, Key="a/1")["Body"].read() == b"1"
    # s3:x-amz-acl on PutObject: user 2 may write only giving the owner full control
    put(stmt("Allow", "s3:PutObject", objs, principal={"AWS": OTHER[0]},
             condition={"StringEquals": {"s3:x-amz-acl": "bucket-owner-full-control"}}))
    denied(s3_user2.put_object, Bucket=b, Key="up", Body=b"x")
    s3_user2.put_object(Bucket=b, Key="up", Body=b"x", ACL="bucket-owner-full-control")
    assert s3.get_object(Bucket=b, Key="up")["Body"].read() == b"x"
    # s3:x-amz-server-side-encryption, Null: a Deny of uploads without the header
    put(stmt("Allow", "s3:PutObject", objs, principal={"AWS": OTHER[0]}),
        stmt("Deny", "s3:PutObject", objs,
             condition={"Null": {"s3:x-amz-server-side-encryption": "true"}}))
    denied(s3_user2.put_object, Bucket=b, Key="up2", Body=b"x")


def test_missing_object_is_404_when_the_policy_lets_its_key_be_listed(s3, s3_user2, pbucket):
    """HEAD/GET of a missing object: 404 for a requester allowed s3:ListBucket, 403
    otherwise; with an s3:prefix condition the key is the prefix asked about, as S3
    decides it."""
    b = pbucket
    s3.put_bucket_policy(Bucket=b, Policy=policy(b, stmt(
        "Allow", "s3:ListBucket", ARN + b, condition={"StringLike": {"s3:prefix": "public/*"}})))
    with pytest.raises(ClientError) as e:
        s3_user2.head_object(Bucket=b, Key="public/missing")
    assert client_error(e)[1] == 404
    with pytest.raises(ClientError) as e:
        s3_user2.get_object(Bucket=b, Key="public/missing")
    assert_error(e, "NoSuchKey", 404)
    with pytest.raises(ClientError) as e:
        s3_user2.head_object(Bucket=b, Key="private/missing")
    assert client_error(e)[1] == 403
    # The listing itself is still decided on its own prefix.
    assert s3_user2.list_objects_v2(Bucket=b, Prefix="public/x")["KeyCount"] == 0
    denied(s3_user2.list_objects_v2, Bucket=b, Prefix="private/")


def test_sse_c_algorithm_condition_key(s3, pbucket):
    """s3:x-amz-server-side-encryption-customer-algorithm is a condition key S3 knows: a
    policy requiring SSE-C is accepted and refuses a PUT without it."""
    b = pbucket
    s3.put_bucket_policy(Bucket=b, Policy=policy(b, stmt(
        "Deny", "s3:PutObject", f"{ARN}{b}/*",
        condition={"Null": {"s3:x-amz-server-side-encryption-customer-algorithm": "true"}})))
    denied(s3.put_object, Bucket=b, Key="plain", Body=b"x")


def test_referer_condition(s3, server, pbucket):
    """aws:Referer is the request's Referer header (a client sets it: it selects, it
    does not secure): an anonymous read allowed only for one site's pages."""
    b = pbucket
    s3.put_object(Bucket=b, Key="k", Body=b"v")
    s3.put_bucket_policy(Bucket=b, Policy=policy(b, stmt(
        "Allow", "s3:GetObject", f"{ARN}{b}/*",
        condition={"StringLike": {"aws:Referer": "http://www.example.com/*"}})))
    for referer, status in (("http://www.example.com/index.html", 200),
                            ("http://example.com/", 403), (None, 403)):
        headers = {"Referer": referer} if referer else {}
        r = raw_request(server, "GET", f"/{b}/k", headers=headers, user=None)
        assert r.status == status, (referer, r)


def test_source_ip_on_a_dual_stack_listener(tmp_path):
    """A server listening on every address (':PORT': IPv6 with IPv4 clients as
    v4-mapped addresses) gives an IPv4 client its IPv4 address as aws:SourceIp,
    so IPv4 ranges in a policy match it as on AWS."""
    write_config(tmp_path / "c.yaml")
    srv = Server(tmp_path / "d", tmp_path / "c.yaml", tmp_path / "s.log",
                 extra_args=["--listen", ":{port}"])
    srv.start()
    try:
        s3 = boto_client(srv)
        s3.create_bucket(Bucket="dual")
        s3.put_object(Bucket="dual", Key="k", Body=b"v")
        s3.put_bucket_policy(Bucket="dual", Policy=policy("dual", stmt(
            "Allow", "s3:GetObject", f"{ARN}dual/*",
            condition={"IpAddress": {"aws:SourceIp": "127.0.0.0/8"}})))
        anon = boto_client(srv, signature_version=botocore.UNSIGNED)
        assert anon.get_object(Bucket="dual", Key="k")["Body"].read() == b"v"
    finally:
        srv.stop()


def test_delete_objects_decides_key_by_key(s3, s3_user2, pbucket):
    b = pbucket
    for k in ["keep/1", "tmp/1", "tmp/2"]:
        s3.put_object(Bucket=b, Key=k, Body=b"x")
    s3.put_bucket_policy(Bucket=b, Policy=policy(
        b, stmt("Allow", "s3:DeleteObject", f"{ARN}{b}/tmp/*", principal={"AWS": OTHER[0]}),
        stmt("Deny", "s3:DeleteObject", f"{ARN}{b}/keep/*")))
    r = s3_user2.delete_objects(Bucket=b, Delete={"Objects": [{"Key": k} for k in
                                                              ["keep/1", "tmp/1", "tmp/2"]]})
    assert sorted(d["Key"] for d in r["Deleted"]) == ["tmp/1", "tmp/2"]
    assert [(e["Key"], e["Code"]) for e in r["Errors"]] == [("keep/1", "AccessDenied")]
    # the Deny binds the owner too
    r = s3.delete_objects(Bucket=b, Delete={"Objects": [{"Key": "keep/1"}]})
    assert [(e["Key"], e["Code"]) for e in r["Errors"]] == [("keep/1", "AccessDenied")]
    assert s3.get_object(Bucket=b, Key="keep/1")["Body"].read() == b"x"


def test_conditional_deletes_by_policy(server, s3, pbucket):
    """A conditional delete naming an ETag also takes s3:GetObject, and a policy can
    require the condition with s3:if-match, as AWS documents."""
    b = pbucket
    etag = s3.put_object(Bucket=b, Key="k", Body=b"x")["ETag"]
    s3.put_bucket_policy(Bucket=b, Policy=policy(
        b, stmt("Allow", "s3:DeleteObject", f"{ARN}{b}/*", principal={"AWS": OTHER[0]}),
        stmt("Deny", "s3:DeleteObject", f"{ARN}{b}/*",
             condition={"Null": {"s3:if-match": "true"}})))

    def delete(user, **headers):
        return raw_request(server, "DELETE", f"/{b}/k", headers=headers, user=user)

    for user in (OWNER, OTHER):  # no If-Match: the Deny
        r = delete(user)
        assert (r.status, r.error_code()) == (403, "AccessDenied"), r
    r = delete(OTHER, **{"If-Match": etag})  # an ETag, without s3:GetObject
    assert (r.status, r.error_code()) == (403, "AccessDenied"), r
    assert s3.get_object(Bucket=b, Key="k")["Body"].read() == b"x"
    assert delete(OTHER, **{"If-Match": "*"}).status == 204
    s3.put_object(Bucket=b, Key="k", Body=b"y")
    assert delete(OWNER, **{"If-Match": s3.head_object(Bucket=b, Key="k")["ETag"]}).status == 204


def test_copy_source_is_read_through_the_source_policy(s3, s3_user2, pbucket):
    b = pbucket
    mine = "pc-" + uuid.uuid4().hex[:12]
    s3_user2.create_bucket(Bucket=mine)
    try:
        s3.put_object(Bucket=b, Key="src", Body=b"copy me")
        denied(s3_user2.copy_object, Bucket=mine, Key="dst", CopySource={"Bucket": b, "Key": "src"})
        s3.put_bucket_policy(Bucket=b, Policy=policy(
            b, stmt("Allow", "s3:GetObject", f"{ARN}{b}/src", principal={"AWS": OTHER[0]})))
        s3_user2.copy_object(Bucket=mine, Key="dst", CopySource={"Bucket": b, "Key": "src"})
        assert s3_user2.get_object(Bucket=mine, Key="dst")["Body"].read() == b"copy me"
    finally:
        empty_bucket(s3_user2, mine)
        s3_user2.delete_bucket(Bucket=mine)


# ---- the matrix: one decision whatever carried the request -----------------------------------

BUILD = Path(os.environ.get("S3RDMA_BUILD", REPO_ROOT / "build"))
DRIVER = BUILD / "tests" / "s3r_driver"


@pytest.fixture(scope="module", params=list(UCX_ENVS))
def msrv(request, tmp_path_factory):
    s = RdmaServer(tmp_path_factory.mktemp("policy"), "policy", UCX_ENVS[request.param]).start()
    s.dead = f"http://127.0.0.1:{free_port()}"
    yield s
    s.stop()


def driver(srv, user, *args):
    """(ok, S3 error code) of one s3r_driver call over the native protocol only."""
    env = srv.client_env(user)
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
    """The bytes s3r_driver writes and checks: b[i] = (i*31 + seed*7 + (i>>8)) & 0xff."""
    return bytes((i * 31 + seed * 7 + (i >> 8)) & 0xFF for i in range(n))


def http_call(s3, action, b, key):
    try:
        if action == "get":
            s3.get_object(Bucket=b, Key=key)["Body"].read()
        elif action == "head":
            s3.head_object(Bucket=b, Key=key)
        elif action == "put":
            s3.put_object(Bucket=b, Key=key, Body=pattern())
        elif action == "rm":
            s3.delete_object(Bucket=b, Key=key)
        elif action == "ls":
            s3.list_objects_v2(Bucket=b, Prefix=key)
        return True, None
    except ClientError as e:
        code = client_error_code(e)
        return False, code


def client_error_code(e):
    code = e.response.get("Error", {}).get("Code")
    # HEAD carries no body: botocore names the error by its status
    return {"403": "AccessDenied", "404": "NoSuchKey"}.get(code, code)


def native_call(srv, user, action, b, key):
    if action == "get":
        return driver(srv, user, "get", b, key, 10, 1)
    if action == "head":
        return driver(srv, user, "head", b, key)
    if action == "put":
        return driver(srv, user, "put", b, key, 10, 1)
    if action == "rm":
        return driver(srv, user, "rm", b, key)
    return driver(srv, user, "ls", b, key, "-", "-", 0, 0)


# The policy of the matrix: user 2 reads and lists shared/, writes drop/ (only giving the
# owner full control is not checkable over native: no ACL header there, so plain), is
# refused secret/ even though its ACL is public-read; a Deny of deletes under shared/
# binds the owner too; everything is refused from outside 127.0.0.0/8.
def matrix_policy(b):
    return policy(
        b,
        stmt("Allow", ["s3:GetObject"], f"{ARN}{b}/shared/*", principal={"AWS": OTHER[0]}),
        stmt("Allow", "s3:ListBucket", f"{ARN}{b}", principal={"AWS": [OTHER[0]]},
             condition={"StringLike": {"s3:prefix": ["shared/*"]}}),
        stmt("Allow", "s3:PutObject", f"{ARN}{b}/drop/*",
             principal={"AWS": f"arn:aws:iam::000000000000:user/{OTHER[0]}"}),
        stmt("Deny", "s3:GetObject", f"{ARN}{b}/secret/*", principal={"AWS": OTHER[0]}),
        stmt("Deny", "s3:DeleteObject", f"{ARN}{b}/shared/*"),
        stmt("Deny", "s3:*", [f"{ARN}{b}", f"{ARN}{b}/*"],
             condition={"NotIpAddress": {"aws:SourceIp": ["127.0.0.0/8", "::1/128"]}}),
    )


# (user, action, key or prefix, allowed, error code when refused)
MATRIX = [
    (OWNER, "get", "shared/o", True, None),
    (OWNER, "ls", "", True, None),
    (OWNER, "put", "shared/new", True, None),
    (OWNER, "rm", "shared/o", False, "AccessDenied"),   # the Deny binds the owner
    (OWNER, "rm", "drop/x", True, None),
    (OTHER, "get", "shared/o", True, None),
    (OTHER, "head", "shared/o", True, None),
    (OTHER, "get", "shared/none", False, "NoSuchKey"),  # may list shared/: 404
    (OTHER, "get", "other/none", False, "AccessDenied"),  # may not list other/: 403
    (OTHER, "ls", "shared/", True, None),
    (OTHER, "ls", "", False, "AccessDenied"),
    (OTHER, "ls", "secret/", False, "AccessDenied"),
    (OTHER, "get", "secret/o", False, "AccessDenied"),  # public-read ACL, denied by policy
    (OTHER, "get", "other/o", False, "AccessDenied"),
    (OTHER, "put", "drop/x", True, None),
    (OTHER, "put", "shared/x", False, "AccessDenied"),
    (OTHER, "rm", "shared/o", False, "AccessDenied"),
    (OTHER, "rm", "drop/x", False, "AccessDenied"),
]


def test_policy_matrix_http_and_native_agree(msrv):
    assert DRIVER.exists(), f"{DRIVER} not built"
    owner = boto_client(msrv, user=OWNER)
    clients = {OWNER: owner, OTHER: boto_client(msrv, user=OTHER)}
    b = "pm-" + uuid.uuid4().hex[:12]
    owner.create_bucket(Bucket=b)
    try:
        def reset():
            for k in ["shared/o", "other/o", "drop/x"]:
                owner.put_object(Bucket=b, Key=k, Body=pattern())
            owner.put_object(Bucket=b, Key="secret/o", Body=pattern(), ACL="public-read")

        reset()
        owner.put_bucket_policy(Bucket=b, Policy=matrix_policy(b))
        for user, action, key, allowed, code in MATRIX:
            for carrier in ["http", "native"]:
                got = (http_call(clients[user], action, b, key) if carrier == "http"
                       else native_call(msrv, user, action, b, key))
                assert got == (allowed, code), (carrier, user[0], action, key, got)
                if allowed and action in ("put", "rm"):
                    owner.delete_bucket_policy(Bucket=b)
                    reset()
                    owner.put_bucket_policy(Bucket=b, Policy=matrix_policy(b))
        # Without the policy the same requests are the ACLs' alone.
        owner.delete_bucket_policy(Bucket=b)
        assert http_call(clients[OTHER], "get", b, "shared/o")[0] is False
        assert native_call(msrv, OTHER, "get", b, "shared/o")[0] is False
        assert native_call(msrv, OTHER, "get", b, "secret/o") == (True, None)
    finally:
        owner.delete_bucket_policy(Bucket=b)
        empty_bucket(owner, b)
        owner.delete_bucket(Bucket=b)


def test_policy_changes_under_concurrent_requests(s3, server, pbucket):
    """Requests that race policy changes see the old or the new policy, whole: 200 or 403,
    never an error of the server's (the parsed-policy cache swaps entries under them)."""
    import threading
    b = pbucket
    s3.put_object(Bucket=b, Key="k", Body=b"v")
    anon = boto_client(server, signature_version=botocore.UNSIGNED)
    seen, stop = [], threading.Event()

    def reader():
        while not stop.is_set():
            try:
                anon.get_object(Bucket=b, Key="k")["Body"].read()
                seen.append(200)
            except ClientError as e:
                seen.append(e.response["ResponseMetadata"]["HTTPStatusCode"])

    threads = [threading.Thread(target=reader) for _ in range(3)]
    for t in threads:
        t.start()
    try:
        for i in range(30):
            effect = "Allow" if i % 2 == 0 else "Deny"
            s3.put_bucket_policy(Bucket=b, Policy=policy(b, stmt(effect, "s3:GetObject",
                                                                 f"{ARN}{b}/*")))
    finally:
        stop.set()
        for t in threads:
            t.join()
    assert seen and set(seen) <= {200, 403}, sorted(set(seen))
