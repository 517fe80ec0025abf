"""Object lock as AWS S3 answers it (boto3 and raw requests): buckets created with object
lock (versioning Enabled, never Suspended), Put/GetObjectLockConfiguration with its default
retention rule, per-version retention (GOVERNANCE and COMPLIANCE) and legal hold on PUT,
CopyObject, CreateMultipartUpload and by Put/GetObjectRetention and Put/GetObjectLegalHold,
the x-amz-object-lock-* headers of HEAD and GET, and every refusal: deletes of protected
versions (DeleteObject and DeleteObjects by version id), shortening or removing retention
without x-amz-bypass-governance-retention and its permission, lock headers on a bucket
without object lock, a locking PUT without Content-MD5 or a checksum. The lifecycle runner
never removes a protected version.

Object lock needs versioning: where the backend answers 501 for it (RADOS, until versioning
lands there), CreateBucket with object lock answers 501 too and these tests skip."""
import datetime
import json
import re

import pytest
from botocore.exceptions import ClientError

from s3r_itest import (USERS, assert_error, boto_client, crc32c_b64, error_fields, md5_b64,
                       new_bucket_name, raw_request)

UTC = datetime.timezone.utc
FAR = datetime.datetime(2140, 1, 1, tzinfo=UTC)
LATER = datetime.datetime(2140, 1, 3, tzinfo=UTC)
RULE_GOV_1D = {"ObjectLockEnabled": "Enabled",
               "Rule": {"DefaultRetention": {"Mode": "GOVERNANCE", "Days": 1}}}


def skip_without_versioning(s3):
    """Skips where the backend answers 501 to versioning itself (object lock needs it);
    anywhere else object lock must work."""
    name = new_bucket_name("ver")
    s3.create_bucket(Bucket=name)
    try:
        s3.put_bucket_versioning(Bucket=name, VersioningConfiguration={"Status": "Enabled"})
    except ClientError as e:
        if e.response["ResponseMetadata"]["HTTPStatusCode"] == 501:
            pytest.skip("this backend has no versioning, so no object lock (501)")
        raise
    finally:
        s3.delete_bucket(Bucket=name)


def create_lock_bucket(s3):
    """A new bucket with object lock (a skip where the backend has no versioning)."""
    skip_without_versioning(s3)
    name = new_bucket_name("lock")
    s3.create_bucket(Bucket=name, ObjectLockEnabledForBucket=True)
    return name


def test_no_lock_without_versioning(s3):
    """Where the backend answers 501 to versioning, CreateBucket with object lock answers
    501 too and leaves no bucket behind."""
    name = new_bucket_name("ver")
    s3.create_bucket(Bucket=name)
    try:
        s3.put_bucket_versioning(Bucket=name, VersioningConfiguration={"Status": "Enabled"})
        pytest.skip("this backend has versioning: object lock is tested below")
    except ClientError as e:
        assert e.response["ResponseMetadata"]["HTTPStatusCode"] == 501, e.response
    finally:
        s3.delete_bucket(Bucket=name)
    name = new_bucket_name("lock")
    with pytest.raises(ClientError) as e:
        s3.create_bucket(Bucket=name, ObjectLockEnabledForBucket=True)
    assert_error(e, "NotImplemented", 501)
    with pytest.raises(ClientError) as e:
        s3.head_bucket(Bucket=name)
    assert e.value.response["ResponseMetadata"]["HTTPStatusCode"] == 404


@pytest.fixture
def lock_bucket(s3):
    return create_lock_bucket(s3)


def gov(until=FAR):
    return {"Mode": "GOVERNANCE", "RetainUntilDate": until}


def test_bucket_created_with_object_lock(s3, lock_bucket):
    assert s3.get_bucket_versioning(Bucket=lock_bucket)["Status"] == "Enabled"
    assert s3.get_object_lock_configuration(Bucket=lock_bucket)["ObjectLockConfiguration"] == {
        "ObjectLockEnabled": "Enabled"}
    with pytest.raises(ClientError) as e:
        s3.put_bucket_versioning(Bucket=lock_bucket,
                                 VersioningConfiguration={"Status": "Suspended"})
    assert_error(e, "InvalidBucketState", 409)
    assert s3.get_bucket_versioning(Bucket=lock_bucket)["Status"] == "Enabled"
    for conf in (RULE_GOV_1D, {"ObjectLockEnabled": "Enabled",
                               "Rule": {"DefaultRetention": {"Mode": "COMPLIANCE", "Years": 1}}}):
        s3.put_object_lock_configuration(Bucket=lock_bucket, ObjectLockConfiguration=conf)
        got = s3.get_object_lock_configuration(Bucket=lock_bucket)["ObjectLockConfiguration"]
        assert got == conf
    # A configuration without a rule removes the default retention; lock stays enabled.
    s3.put_object_lock_configuration(Bucket=lock_bucket,
                                     ObjectLockConfiguration={"ObjectLockEnabled": "Enabled"})
    assert s3.get_object_lock_configuration(Bucket=lock_bucket)["ObjectLockConfiguration"] == {
        "ObjectLockEnabled": "Enabled"}


@pytest.mark.parametrize("retention,code", [
    ({"Mode": "GOVERNANCE", "Days": 1, "Years": 1}, "MalformedXML"),
    ({"Mode": "GOVERNANCE", "Days": 0}, "InvalidRetentionPeriod"),
    ({"Mode": "GOVERNANCE", "Years": -1}, "InvalidRetentionPeriod"),
    ({"Mode": "GOVERNANCE", "Days": 36501}, "InvalidRetentionPeriod"),
    ({"Mode": "abc", "Years": 1}, "MalformedXML"),
    ({"Mode": "governance", "Years": 1}, "MalformedXML"),
    ({"Mode": "GOVERNANCE"}, "MalformedXML"),
])
def test_lock_configuration_refusals(s3, lock_bucket, retention, code):
    conf = {"ObjectLockEnabled": "Enabled", "Rule": {"DefaultRetention": retention}}
    with pytest.raises(ClientError) as e:
        s3.put_object_lock_configuration(Bucket=lock_bucket, ObjectLockConfiguration=conf)
    assert_error(e, code, 400)


def test_lock_configuration_malformed_bodies(server, s3, lock_bucket):
    for doc in (b"<ObjectLockConfiguration><ObjectLockEnabled>Disabled</ObjectLockEnabled>"
                b"</ObjectLockConfiguration>",
                b"<ObjectLockConfiguration/>", b"<x"):
        r = raw_request(server, "PUT", f"/{lock_bucket}", query=[("object-lock", None)], body=doc)
        assert r.status == 400 and error_fields(r.body)[1]["Code"] == "MalformedXML", r.body
    assert s3.get_object_lock_configuration(Bucket=lock_bucket)["ObjectLockConfiguration"] == {
        "ObjectLockEnabled": "Enabled"}


def test_lock_configuration_on_a_bucket_without_lock(s3, s3_user2, bucket):
    with pytest.raises(ClientError) as e:
        s3.get_object_lock_configuration(Bucket=bucket)
    assert_error(e, "ObjectLockConfigurationNotFoundError", 404)
    # Not versioned, then Suspended: S3 enables object lock only on an Enabled bucket.
    with pytest.raises(ClientError) as e:
        s3.put_object_lock_configuration(Bucket=bucket, ObjectLockConfiguration=RULE_GOV_1D)
    assert_error(e, "InvalidBucketState", 409)
    skip_without_versioning(s3)
    s3.put_bucket_versioning(Bucket=bucket, VersioningConfiguration={"Status": "Suspended"})
    with pytest.raises(ClientError) as e:
        s3.put_object_lock_configuration(Bucket=bucket, ObjectLockConfiguration=RULE_GOV_1D)
    assert_error(e, "InvalidBucketState", 409)
    s3.put_bucket_versioning(Bucket=bucket, VersioningConfiguration={"Status": "Enabled"})
    # Only the owner.
    with pytest.raises(ClientError) as e:
        s3_user2.put_object_lock_configuration(Bucket=bucket, ObjectLockConfiguration=RULE_GOV_1D)
    assert_error(e, "AccessDenied", 403)
    s3.put_object_lock_configuration(Bucket=bucket, ObjectLockConfiguration=RULE_GOV_1D)
    assert s3.get_object_lock_configuration(Bucket=bucket)["ObjectLockConfiguration"] == \
        RULE_GOV_1D
    with pytest.raises(ClientError) as e:
        s3.put_bucket_versioning(Bucket=bucket, VersioningConfiguration={"Status": "Suspended"})
    assert_error(e, "InvalidBucketState", 409)
    vid = s3.put_object(Bucket=bucket, Key="k", Body=b"x")["VersionId"]
    assert s3.get_object_retention(Bucket=bucket, Key="k")["Retention"]["Mode"] == "GOVERNANCE"
    s3.delete_object(Bucket=bucket, Key="k", VersionId=vid, BypassGovernanceRetention=True)


def test_lock_operations_need_a_lock_bucket(s3, bucket):
    s3.put_object(Bucket=bucket, Key="k", Body=b"x")
    calls = [
        lambda: s3.put_object_retention(Bucket=bucket, Key="k", Retention=gov()),
        lambda: s3.get_object_retention(Bucket=bucket, Key="k"),
        lambda: s3.put_object_legal_hold(Bucket=bucket, Key="k", LegalHold={"Status": "ON"}),
        lambda: s3.get_object_legal_hold(Bucket=bucket, Key="k"),
        lambda: s3.put_object(Bucket=bucket, Key="k2", Body=b"x", ObjectLockMode="GOVERNANCE",
                              ObjectLockRetainUntilDate=FAR),
        lambda: s3.put_object(Bucket=bucket, Key="k2", Body=b"x", ObjectLockLegalHoldStatus="ON"),
        lambda: s3.create_multipart_upload(Bucket=bucket, Key="k2", ObjectLockLegalHoldStatus="ON"),
        lambda: s3.copy_object(Bucket=bucket, Key="k2", CopySource={"Bucket": bucket, "Key": "k"},
                               ObjectLockLegalHoldStatus="ON"),
    ]
    for call in calls:
        with pytest.raises(ClientError) as e:
            call()
        assert_error(e, "InvalidRequest", 400)
    assert "Contents" in s3.list_objects_v2(Bucket=bucket, Prefix="k")
    assert s3.list_objects_v2(Bucket=bucket, Prefix="k2").get("KeyCount") == 0


def test_put_with_lock_headers_and_protected_deletes(s3, lock_bucket):
    r = s3.put_object(Bucket=lock_bucket, Key="k", Body=b"abc", ObjectLockMode="GOVERNANCE",
                      ObjectLockRetainUntilDate=FAR, ObjectLockLegalHoldStatus="ON")
    vid = r["VersionId"]
    for h in (s3.head_object(Bucket=lock_bucket, Key="k"),
              s3.get_object(Bucket=lock_bucket, Key="k", VersionId=vid)):
        assert h["ObjectLockMode"] == "GOVERNANCE"
        assert h["ObjectLockRetainUntilDate"] == FAR
        assert h["ObjectLockLegalHoldStatus"] == "ON"
    assert s3.get_object_legal_hold(Bucket=lock_bucket, Key="k")["LegalHold"] == {"Status": "ON"}
    # The legal hold holds even with the bypass.
    with pytest.raises(ClientError) as e:
        s3.delete_object(Bucket=lock_bucket, Key="k", VersionId=vid,
                         BypassGovernanceRetention=True)
    assert_error(e, "AccessDenied", 403)
    s3.put_object_legal_hold(Bucket=lock_bucket, Key="k", VersionId=vid,
                             LegalHold={"Status": "OFF"})
    assert s3.get_object_legal_hold(Bucket=lock_bucket, Key="k")["LegalHold"] == {"Status": "OFF"}
    # GOVERNANCE retention: refused without the bypass.
    with pytest.raises(ClientError) as e:
        s3.delete_object(Bucket=lock_bucket, Key="k", VersionId=vid)
    assert_error(e, "AccessDenied", 403)
    # A delete without a version id only puts a marker on top, as in S3.
    d = s3.delete_object(Bucket=lock_bucket, Key="k")
    assert d["DeleteMarker"] is True
    s3.delete_object(Bucket=lock_bucket, Key="k", VersionId=d["VersionId"])
    assert s3.get_object(Bucket=lock_bucket, Key="k")["Body"].read() == b"abc"
    with pytest.raises(ClientError) as e:
        s3.delete_object(Bucket=lock_bucket, Key="k", VersionId=vid)
    assert_error(e, "AccessDenied", 403)
    r = s3.delete_object(Bucket=lock_bucket, Key="k", VersionId=vid,
                         BypassGovernanceRetention=True)
    assert r["ResponseMetadata"]["HTTPStatusCode"] == 204
    assert "Versions" not in s3.list_object_versions(Bucket=lock_bucket, Prefix="k")


def test_compliance_is_for_no_one(s3, lock_bucket):
    vid = s3.put_object(Bucket=lock_bucket, Key="c", Body=b"x", ObjectLockMode="COMPLIANCE",
                        ObjectLockRetainUntilDate=FAR)["VersionId"]
    with pytest.raises(ClientError) as e:
        s3.delete_object(Bucket=lock_bucket, Key="c", VersionId=vid,
                         BypassGovernanceRetention=True)
    assert_error(e, "AccessDenied", 403)
    for retention in ({"Mode": "COMPLIANCE", "RetainUntilDate": FAR - datetime.timedelta(1)},
                      gov(LATER), {}):
        with pytest.raises(ClientError) as e:
            s3.put_object_retention(Bucket=lock_bucket, Key="c", Retention=retention,
                                    BypassGovernanceRetention=True)
        assert_error(e, "AccessDenied", 403)
    # Extending is always allowed.
    s3.put_object_retention(Bucket=lock_bucket, Key="c",
                            Retention={"Mode": "COMPLIANCE", "RetainUntilDate": LATER})
    assert s3.get_object_retention(Bucket=lock_bucket, Key="c")["Retention"] == {
        "Mode": "COMPLIANCE", "RetainUntilDate": LATER}


def test_governance_retention_changes(s3, lock_bucket):
    v1 = s3.put_object(Bucket=lock_bucket, Key="g", Body=b"1")["VersionId"]
    v2 = s3.put_object(Bucket=lock_bucket, Key="g", Body=b"2")["VersionId"]
    with pytest.raises(ClientError) as e:
        s3.get_object_retention(Bucket=lock_bucket, Key="g")
    assert_error(e, "NoSuchObjectLockConfiguration", 404)
    with pytest.raises(ClientError) as e:
        s3.get_object_legal_hold(Bucket=lock_bucket, Key="g")
    assert_error(e, "NoSuchObjectLockConfiguration", 404)
    # By version id: the noncurrent v1, the latest v2 untouched.
    s3.put_object_retention(Bucket=lock_bucket, Key="g", VersionId=v1, Retention=gov())
    assert s3.get_object_retention(Bucket=lock_bucket, Key="g", VersionId=v1)["Retention"] == gov()
    with pytest.raises(ClientError) as e:
        s3.get_object_retention(Bucket=lock_bucket, Key="g", VersionId=v2)
    assert_error(e, "NoSuchObjectLockConfiguration", 404)
    s3.put_object_retention(Bucket=lock_bucket, Key="g", VersionId=v1, Retention=gov(LATER))
    for retention in (gov(), {"Mode": "COMPLIANCE", "RetainUntilDate": LATER}, {}):
        with pytest.raises(ClientError) as e:
            s3.put_object_retention(Bucket=lock_bucket, Key="g", VersionId=v1, Retention=retention)
        assert_error(e, "AccessDenied", 403)
    assert s3.get_object_retention(Bucket=lock_bucket, Key="g",
                                   VersionId=v1)["Retention"] == gov(LATER)
    s3.put_object_retention(Bucket=lock_bucket, Key="g", VersionId=v1, Retention=gov(),
                            BypassGovernanceRetention=True)
    assert s3.get_object_retention(Bucket=lock_bucket, Key="g", VersionId=v1)["Retention"] == gov()
    # Removed with the bypass: then the version is free.
    s3.put_object_retention(Bucket=lock_bucket, Key="g", VersionId=v1, Retention={},
                            BypassGovernanceRetention=True)
    with pytest.raises(ClientError) as e:
        s3.get_object_retention(Bucket=lock_bucket, Key="g", VersionId=v1)
    assert_error(e, "NoSuchObjectLockConfiguration", 404)
    s3.delete_object(Bucket=lock_bucket, Key="g", VersionId=v1)
    # A date in the past, a malformed body, an unknown version, a marker.
    past = datetime.datetime(2001, 1, 1, tzinfo=UTC)
    with pytest.raises(ClientError) as e:
        s3.put_object_retention(Bucket=lock_bucket, Key="g", Retention=gov(past))
    assert_error(e, "InvalidArgument", 400)
    with pytest.raises(ClientError) as e:
        s3.put_object_retention(Bucket=lock_bucket, Key="g",
                                Retention={"Mode": "governance", "RetainUntilDate": FAR})
    assert_error(e, "MalformedXML", 400)
    with pytest.raises(ClientError) as e:
        s3.put_object_legal_hold(Bucket=lock_bucket, Key="g", LegalHold={"Status": "abc"})
    assert_error(e, "MalformedXML", 400)
    with pytest.raises(ClientError) as e:
        s3.put_object_retention(Bucket=lock_bucket, Key="g", VersionId="0" * 16 + "f" * 16,
                                Retention=gov())
    assert_error(e, "NoSuchVersion", 404)
    marker = s3.delete_object(Bucket=lock_bucket, Key="g")["VersionId"]
    with pytest.raises(ClientError) as e:
        s3.put_object_retention(Bucket=lock_bucket, Key="g", VersionId=marker, Retention=gov())
    assert_error(e, "MethodNotAllowed", 405)


@pytest.mark.parametrize("headers,message", [
    ({"x-amz-object-lock-mode": "GOVERNANCE"}, "must both be supplied"),
    ({"x-amz-object-lock-retain-until-date": "2140-01-01T00:00:00Z"}, "must both be supplied"),
    ({"x-amz-object-lock-mode": "WORM",
      "x-amz-object-lock-retain-until-date": "2140-01-01T00:00:00Z"}, "wormMode"),
    ({"x-amz-object-lock-mode": "GOVERNANCE",
      "x-amz-object-lock-retain-until-date": "2001-01-01T00:00:00Z"}, "in the future"),
    ({"x-amz-object-lock-mode": "GOVERNANCE",
      "x-amz-object-lock-retain-until-date": "tomorrow"}, "ISO 8601"),
    ({"x-amz-object-lock-legal-hold": "on"}, "Legal Hold"),
])
def test_invalid_lock_headers(server, s3, lock_bucket, headers, message):
    body = b"abc"
    headers = dict(headers, **{"Content-MD5": md5_b64(body)})
    r = raw_request(server, "PUT", f"/{lock_bucket}/k", headers=headers, body=body)
    assert r.status == 400, r.body
    fields = error_fields(r.body)[1]
    assert fields["Code"] == "InvalidArgument" and message in fields["Message"], r.body
    assert "Versions" not in s3.list_object_versions(Bucket=lock_bucket, Prefix="k")


def test_locking_put_needs_content_md5_or_a_checksum(server, s3, lock_bucket):
    body = b"abc"
    lock = {"x-amz-object-lock-mode": "GOVERNANCE",
            "x-amz-object-lock-retain-until-date": "2140-01-01T00:00:00Z"}
    # x-amz-checksum-mode names no checksum of the body
    for headers in (lock, {"x-amz-object-lock-legal-hold": "OFF"},
                    dict(lock, **{"x-amz-checksum-mode": "ENABLED"})):
        r = raw_request(server, "PUT", f"/{lock_bucket}/k", headers=headers, body=body)
        assert r.status == 400, r.body
        fields = error_fields(r.body)[1]
        assert fields["Code"] == "InvalidRequest" and "Content-MD5" in fields["Message"]
    assert "Versions" not in s3.list_object_versions(Bucket=lock_bucket, Prefix="k")
    # Without lock parameters and without a default rule: no such need.
    r = raw_request(server, "PUT", f"/{lock_bucket}/plain", body=body)
    assert r.status == 200, r.body
    r = raw_request(server, "PUT", f"/{lock_bucket}/k",
                    headers=dict(lock, **{"Content-MD5": md5_b64(body)}), body=body)
    assert r.status == 200, r.body
    # A default retention makes every PUT a locking one.
    s3.put_object_lock_configuration(Bucket=lock_bucket, ObjectLockConfiguration=RULE_GOV_1D)
    r = raw_request(server, "PUT", f"/{lock_bucket}/d", body=body)
    assert r.status == 400 and error_fields(r.body)[1]["Code"] == "InvalidRequest", r.body
    r = raw_request(server, "PUT", f"/{lock_bucket}/d", body=body,
                    headers={"x-amz-checksum-crc32": "NSRBwg=="})
    assert r.status == 200, r.body


def test_default_retention_copy_and_multipart(s3, lock_bucket):
    s3.put_object_lock_configuration(Bucket=lock_bucket, ObjectLockConfiguration=RULE_GOV_1D)
    before = datetime.datetime.now(UTC).replace(microsecond=0)
    vid = s3.put_object(Bucket=lock_bucket, Key="d", Body=b"x")["VersionId"]
    after = datetime.datetime.now(UTC)
    r = s3.get_object_retention(Bucket=lock_bucket, Key="d", VersionId=vid)["Retention"]
    assert r["Mode"] == "GOVERNANCE"
    assert before + datetime.timedelta(days=1) <= r["RetainUntilDate"] <= \
        after + datetime.timedelta(days=1)
    # Explicit headers win over the default.
    s3.put_object(Bucket=lock_bucket, Key="e", Body=b"x", ObjectLockMode="COMPLIANCE",
                  ObjectLockRetainUntilDate=FAR)
    assert s3.head_object(Bucket=lock_bucket, Key="e")["ObjectLockMode"] == "COMPLIANCE"
    # A copy gets its own lock (the default here), never its source's.
    s3.copy_object(Bucket=lock_bucket, Key="e2", CopySource={"Bucket": lock_bucket, "Key": "e"})
    assert s3.get_object_retention(Bucket=lock_bucket, Key="e2")["Retention"]["Mode"] == \
        "GOVERNANCE"
    s3.copy_object(Bucket=lock_bucket, Key="e3", CopySource={"Bucket": lock_bucket, "Key": "e"},
                   ObjectLockLegalHoldStatus="ON")
    assert s3.head_object(Bucket=lock_bucket, Key="e3")["ObjectLockLegalHoldStatus"] == "ON"
    # Multipart: the lock named at create is the object's.
    up = s3.create_multipart_upload(Bucket=lock_bucket, Key="m", ObjectLockMode="GOVERNANCE",
                                    ObjectLockRetainUntilDate=FAR, ObjectLockLegalHoldStatus="ON")
    etag = s3.upload_part(Bucket=lock_bucket, Key="m", UploadId=up["UploadId"], PartNumber=1,
                          Body=b"abc")["ETag"]
    done = s3.complete_multipart_upload(Bucket=lock_bucket, Key="m", UploadId=up["UploadId"],
                                        MultipartUpload={"Parts": [{"ETag": etag,
                                                                    "PartNumber": 1}]})
    h = s3.head_object(Bucket=lock_bucket, Key="m")
    assert (h["ObjectLockMode"], h["ObjectLockRetainUntilDate"], h["ObjectLockLegalHoldStatus"]) \
        == ("GOVERNANCE", FAR, "ON")
    s3.put_object_legal_hold(Bucket=lock_bucket, Key="m", LegalHold={"Status": "OFF"})
    with pytest.raises(ClientError) as e:
        s3.delete_object(Bucket=lock_bucket, Key="m", VersionId=done["VersionId"])
    assert_error(e, "AccessDenied", 403)
    s3.delete_object(Bucket=lock_bucket, Key="m", VersionId=done["VersionId"],
                     BypassGovernanceRetention=True)


def test_delete_objects_with_protected_versions(s3, lock_bucket):
    v1 = s3.put_object(Bucket=lock_bucket, Key="a", Body=b"1")["VersionId"]
    v2 = s3.put_object(Bucket=lock_bucket, Key="b", Body=b"2")["VersionId"]
    s3.put_object_retention(Bucket=lock_bucket, Key="a", Retention=gov())
    r = s3.delete_objects(Bucket=lock_bucket, Delete={"Objects": [
        {"Key": "a", "VersionId": v1}, {"Key": "b", "VersionId": v2}]})
    assert [(d["Key"], d["VersionId"]) for d in r["Deleted"]] == [("b", v2)]
    assert [(e["Key"], e["VersionId"], e["Code"]) for e in r["Errors"]] == [
        ("a", v1, "AccessDenied")]
    # Without version ids: delete markers, which lock never refuses.
    r = s3.delete_objects(Bucket=lock_bucket, Delete={"Objects": [{"Key": "a"}]})
    assert r["Deleted"][0]["DeleteMarker"] is True
    r = s3.delete_objects(Bucket=lock_bucket, BypassGovernanceRetention=True,
                          Delete={"Objects": [{"Key": "a", "VersionId": v1}]})
    assert [(d["Key"], d["VersionId"]) for d in r["Deleted"]] == [("a", v1)]
    assert not r.get("Errors")


def test_bypass_needs_the_permission(server, s3, lock_bucket):
    """The bypass header counts only for a requester holding s3:BypassGovernanceRetention:
    the bucket's owner, or whom a policy grants it."""
    other = boto_client(server, user=USERS[1])
    arn = "arn:aws:s3:::" + lock_bucket
    other_principal = {"AWS": [USERS[1][0]]}

    def grant(actions):
        s3.put_bucket_policy(Bucket=lock_bucket, Policy=json.dumps({
            "Version": "2012-10-17", "Statement": [{
                "Effect": "Allow", "Principal": other_principal, "Action": actions,
                "Resource": [arn, arn + "/*"]}]}))
    grant(["s3:PutObject", "s3:DeleteObject", "s3:PutObjectRetention"])
    vid = other.put_object(Bucket=lock_bucket, Key="p", Body=b"x", ObjectLockMode="GOVERNANCE",
                           ObjectLockRetainUntilDate=FAR)["VersionId"]
    with pytest.raises(ClientError) as e:
        other.delete_object(Bucket=lock_bucket, Key="p", VersionId=vid,
                            BypassGovernanceRetention=True)
    assert_error(e, "AccessDenied", 403)
    with pytest.raises(ClientError) as e:
        other.put_object_retention(Bucket=lock_bucket, Key="p", VersionId=vid, Retention={},
                                   BypassGovernanceRetention=True)
    assert_error(e, "AccessDenied", 403)
    grant(["s3:PutObject", "s3:DeleteObject", "s3:BypassGovernanceRetention"])
    r = other.delete_object(Bucket=lock_bucket, Key="p", VersionId=vid,
                            BypassGovernanceRetention=True)
    assert r["ResponseMetadata"]["HTTPStatusCode"] == 204


def test_lifecycle_never_expires_a_protected_version(make_server):
    """A 2-second day: NoncurrentVersionExpiration removes the free noncurrent version and
    keeps the one under retention; expiring the current version only puts a marker on top."""
    import time
    srv = make_server(extra_args=["--lifecycle-day-seconds", "2"])
    s3 = boto_client(srv)
    bucket = create_lock_bucket(s3)
    held = s3.put_object(Bucket=bucket, Key="k", Body=b"1", ObjectLockMode="GOVERNANCE",
                         ObjectLockRetainUntilDate=FAR)["VersionId"]
    free = s3.put_object(Bucket=bucket, Key="k", Body=b"2")["VersionId"]
    s3.put_object(Bucket=bucket, Key="k", Body=b"3")
    s3.put_bucket_lifecycle_configuration(Bucket=bucket, LifecycleConfiguration={"Rules": [
        {"ID": "old", "Filter": {}, "Status": "Enabled",
         "NoncurrentVersionExpiration": {"NoncurrentDays": 1}}]})

    def version_ids():
        r = s3.list_object_versions(Bucket=bucket, Prefix="k")
        return [v["VersionId"] for v in r.get("Versions", [])]
    def kept():  # a pass that met the protected version and left it
        return re.search(r"[1-9][0-9]* kept by object lock", srv.log_tail(200))
    deadline = time.monotonic() + 40
    while free in version_ids() or not kept():
        assert time.monotonic() < deadline, (version_ids(), srv.log_tail())
        time.sleep(0.2)
    assert held in version_ids()
    assert s3.get_object(Bucket=bucket, Key="k", VersionId=held)["Body"].read() == b"1"


def test_upload_part_of_a_locked_object_needs_integrity(server, s3, lock_bucket):
    """As S3: every UploadPart of an upload whose object will be locked (lock headers at
    CreateMultipartUpload, or the bucket's default retention) carries Content-MD5 or a
    checksum, else 400 InvalidRequest and no part is stored; an upload into the same bucket
    that locks nothing, and UploadPartCopy, need none."""
    def part(key, upload_id, n, headers=None):
        return raw_request(server, "PUT", f"/{lock_bucket}/{key}",
                           query=[("partNumber", str(n)), ("uploadId", upload_id)],
                           headers=headers or {}, body=b"part")

    locked = s3.create_multipart_upload(Bucket=lock_bucket, Key="lk", ObjectLockMode="GOVERNANCE",
                                        ObjectLockRetainUntilDate=FAR)["UploadId"]
    r = part("lk", locked, 1)
    assert (r.status, r.error_code()) == (400, "InvalidRequest"), r
    assert b"Content-MD5 OR x-amz-checksum-" in r.body
    assert s3.list_parts(Bucket=lock_bucket, Key="lk", UploadId=locked).get("Parts", []) == []
    assert part("lk", locked, 1, {"Content-MD5": md5_b64(b"part")}).status == 200
    r = part("lk", locked, 3, {"x-amz-checksum-crc32c": crc32c_b64(b"part")})
    assert r.status == 200, r
    # the legal hold alone locks too
    held = s3.create_multipart_upload(Bucket=lock_bucket, Key="lh",
                                      ObjectLockLegalHoldStatus="ON")["UploadId"]
    assert part("lh", held, 1).status == 400
    # nothing locked: no integrity asked (the bucket has no default retention yet)
    free = s3.create_multipart_upload(Bucket=lock_bucket, Key="fr")["UploadId"]
    assert part("fr", free, 1).status == 200
    # a default retention locks every new upload's object
    s3.put_object_lock_configuration(Bucket=lock_bucket, ObjectLockConfiguration=RULE_GOV_1D)
    dflt = s3.create_multipart_upload(Bucket=lock_bucket, Key="df")["UploadId"]
    assert part("df", dflt, 1).status == 400
    # UploadPartCopy carries no body: nothing to check
    s3.put_object(Bucket=lock_bucket, Key="src", Body=b"source", ContentMD5=md5_b64(b"source"))
    s3.upload_part_copy(Bucket=lock_bucket, Key="df", UploadId=dflt, PartNumber=2,
                        CopySource={"Bucket": lock_bucket, "Key": "src"})
    for key, up in (("lk", locked), ("lh", held), ("fr", free), ("df", dflt)):
        s3.abort_multipart_upload(Bucket=lock_bucket, Key=key, UploadId=up)
