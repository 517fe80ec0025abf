"""Presigned POST (browser form uploads): the form made by boto3's generate_presigned_post, sent
as multipart/form-data, stores the file with its fields' metadata; the policy's expiration and
conditions, the signature and the form itself are checked with the status and code S3 gives."""
import base64
import datetime
import hashlib
import hmac
import json
import os
import xml.etree.ElementTree as ET

import pytest
import requests

from s3r_itest import REGION, USERS, signing_key


def post_form(server, bucket, fields, file_data=b"hello", filename="f.txt", after=None,
              file_field="file", host=None):
    """POSTs fields (in order) then the file part, then the `after` fields."""
    files = [(k, (None, v)) for k, v in fields.items()]
    if file_data is not None:
        files.append((file_field, (filename, file_data, "application/octet-stream")))
    files += [(k, (None, v)) for k, v in (after or {}).items()]
    headers = {"Host": host} if host else {}
    return requests.post(f"{server.endpoint}/{bucket}", files=files, headers=headers,
                         allow_redirects=False, timeout=30)


def error_code(resp):
    root = ET.fromstring(resp.content)
    return root.findtext("Code"), root.findtext("Message")


def own_policy(conditions, expires_in=300, user=USERS[0], amz_date=None, region=REGION,
               expiration=None):
    """A policy and its SigV4 fields, made here (boto3 refuses to make the broken ones)."""
    now = datetime.datetime.now(datetime.timezone.utc)
    amz_date = amz_date or now.strftime("%Y%m%dT%H%M%SZ")
    cred = f"{user[0]}/{amz_date[:8]}/{region}/s3/aws4_request"
    exp = expiration or (now + datetime.timedelta(seconds=expires_in)).strftime(
        "%Y-%m-%dT%H:%M:%S.000Z")
    conds = list(conditions) + [{"x-amz-algorithm": "AWS4-HMAC-SHA256"},
                                {"x-amz-credential": cred}, {"x-amz-date": amz_date}]
    policy = base64.b64encode(json.dumps({"expiration": exp, "conditions": conds}).encode())
    sig = hmac.new(signing_key(user[1], amz_date[:8], region), policy,
                   hashlib.sha256).hexdigest()
    return {"x-amz-algorithm": "AWS4-HMAC-SHA256", "x-amz-credential": cred,
            "x-amz-date": amz_date, "policy": policy.decode(), "x-amz-signature": sig}


def test_boto3_presigned_post(server, s3, bucket):
    p = s3.generate_presigned_post(bucket, "up/${filename}", ExpiresIn=300)
    data = os.urandom(100000)
    r = post_form(server, bucket, p["fields"], file_data=data, filename="photo.jpg")
    assert r.status_code == 204, r.text
    assert r.headers["ETag"] == '"%s"' % hashlib.md5(data).hexdigest()
    assert r.headers["Location"] == f"{server.endpoint}/{bucket}/up/photo.jpg"
    got = s3.get_object(Bucket=bucket, Key="up/photo.jpg")
    assert got["Body"].read() == data
    assert got["ContentType"] == "binary/octet-stream"


def test_post_fields_metadata_and_201(server, s3, bucket):
    fields = {"Content-Type": "image/png", "x-amz-meta-owner": "alice",
              "Cache-Control": "max-age=60", "success_action_status": "201", "acl": "private"}
    conds = [{"Content-Type": "image/png"}, ["starts-with", "$x-amz-meta-owner", ""],
             ["eq", "$Cache-Control", "max-age=60"], {"success_action_status": "201"},
             {"acl": "private"}]
    p = s3.generate_presigned_post(bucket, "meta key+x", Fields=fields, Conditions=conds)
    r = post_form(server, bucket, p["fields"], file_data=b"png")
    assert r.status_code == 201, r.text
    root = ET.fromstring(r.content)
    assert root.tag == "PostResponse"
    assert root.findtext("Bucket") == bucket and root.findtext("Key") == "meta key+x"
    assert root.findtext("ETag") == '"%s"' % hashlib.md5(b"png").hexdigest()
    assert root.findtext("Location") == f"{server.endpoint}/{bucket}/meta%20key%2Bx"
    got = s3.head_object(Bucket=bucket, Key="meta key+x")
    assert got["ContentType"] == "image/png"
    assert got["Metadata"] == {"owner": "alice"}
    assert got["CacheControl"] == "max-age=60"


@pytest.mark.parametrize("status,expected", [("200", 200), ("204", 204), ("999", 204)])
def test_post_success_action_status(server, s3, bucket, status, expected):
    p = s3.generate_presigned_post(bucket, "st", Fields={"success_action_status": status},
                                   Conditions=[{"success_action_status": status}])
    r = post_form(server, bucket, p["fields"])
    assert r.status_code == expected and r.content == b"", r.text


def test_post_success_action_redirect(server, s3, bucket):
    url = "https://example.com/done?x=1"
    p = s3.generate_presigned_post(bucket, "r/k", Fields={"success_action_redirect": url},
                                   Conditions=[{"success_action_redirect": url}])
    r = post_form(server, bucket, p["fields"], file_data=b"abc")
    assert r.status_code == 303, r.text
    etag = hashlib.md5(b"abc").hexdigest()
    assert r.headers["Location"] == (f"{url}&bucket={bucket}&key=r%2Fk&etag=%22{etag}%22")


def test_post_virtual_host_location(server, s3, bucket):
    p = s3.generate_presigned_post(bucket, "vh", ExpiresIn=300)
    host = f"{bucket}.localhost:{server.port}"
    r = requests.post(f"http://127.0.0.1:{server.port}/",
                      files=[*[(k, (None, v)) for k, v in p["fields"].items()],
                             ("file", ("a", b"v"))],
                      headers={"Host": host}, timeout=30)
    assert r.status_code == 204, r.text
    assert r.headers["Location"] == f"http://{host}/vh"


def test_post_fields_after_file_ignored(server, s3, bucket):
    p = s3.generate_presigned_post(bucket, "after", ExpiresIn=300)
    r = post_form(server, bucket, p["fields"], after={"x-amz-meta-late": "1"})
    assert r.status_code == 204, r.text
    assert s3.head_object(Bucket=bucket, Key="after")["Metadata"] == {}


def test_post_empty_file(server, s3, bucket):
    p = s3.generate_presigned_post(bucket, "empty", ExpiresIn=300)
    r = post_form(server, bucket, p["fields"], file_data=b"")
    assert r.status_code == 204, r.text
    assert s3.get_object(Bucket=bucket, Key="empty")["Body"].read() == b""


def test_post_large_file_streams(server, s3, bucket):
    data = os.urandom(24 << 20)
    p = s3.generate_presigned_post(bucket, "big", ExpiresIn=300)
    r = post_form(server, bucket, p["fields"], file_data=data)
    assert r.status_code == 204, r.text
    assert s3.head_object(Bucket=bucket, Key="big")["ETag"] == \
        '"%s"' % hashlib.md5(data).hexdigest()


# ------------------------------------------------------------------ errors

def assert_post_error(r, status, code, message=None):
    got = error_code(r)
    assert r.status_code == status and got[0] == code, (r.status_code, r.text)
    if message is not None:
        assert got[1] == message, r.text


def test_post_policy_expired(server, s3, bucket):
    past = (datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(seconds=5))
    fields = own_policy([{"bucket": bucket}, {"key": "exp"}],
                        expiration=past.strftime("%Y-%m-%dT%H:%M:%SZ"))
    r = post_form(server, bucket, {"key": "exp", **fields})
    assert_post_error(r, 403, "AccessDenied", "Invalid according to Policy: Policy expired.")
    assert_absent(s3, bucket, "exp")


@pytest.mark.parametrize("cond,field", [
    ({"key": "other"}, {}),
    (["starts-with", "$key", "uploads/"], {}),
    (["eq", "$Content-Type", "image/png"], {"Content-Type": "text/plain"}),
    ({"bucket": "another-bucket"}, {}),
    ({"x-amz-meta-a": "1"}, {"x-amz-meta-a": "2"}),
])
def test_post_condition_failed(server, s3, bucket, cond, field):
    fields = own_policy([{"bucket": bucket}, ["starts-with", "$key", ""], cond])
    r = post_form(server, bucket, {"key": "cond", **field, **fields})
    code, msg = error_code(r)
    assert r.status_code == 403 and code == "AccessDenied", r.text
    assert msg.startswith("Invalid according to Policy: Policy Condition failed: "), msg
    assert_absent(s3, bucket, "cond")


def test_post_extra_field(server, s3, bucket):
    fields = own_policy([{"bucket": bucket}, {"key": "extra"}])
    r = post_form(server, bucket, {"key": "extra", "x-amz-meta-sneaky": "1", **fields})
    assert_post_error(r, 403, "AccessDenied",
                      "Invalid according to Policy: Extra input fields: x-amz-meta-sneaky")
    # x-ignore-* fields need no condition
    r = post_form(server, bucket, {"key": "extra", "x-ignore-me": "1", **fields})
    assert r.status_code == 204, r.text


def test_post_bad_signature(server, s3, bucket):
    fields = own_policy([{"bucket": bucket}, {"key": "sig"}])
    fields["x-amz-signature"] = "0" * 64
    assert_post_error(post_form(server, bucket, {"key": "sig", **fields}), 403,
                      "SignatureDoesNotMatch")
    fields = own_policy([{"bucket": bucket}, {"key": "sig"}], user=(USERS[0][0], "wrong-secret"))
    assert_post_error(post_form(server, bucket, {"key": "sig", **fields}), 403,
                      "SignatureDoesNotMatch")
    # the policy changed after signing
    fields = own_policy([{"bucket": bucket}, {"key": "sig"}])
    fields["policy"] = base64.b64encode(json.dumps(
        {"expiration": "2099-01-01T00:00:00Z", "conditions": []}).encode()).decode()
    assert_post_error(post_form(server, bucket, {"key": "sig", **fields}), 403,
                      "SignatureDoesNotMatch")
    fields = own_policy([{"bucket": bucket}, {"key": "sig"}], user=("AKNOSUCH", "x"))
    assert_post_error(post_form(server, bucket, {"key": "sig", **fields}), 403,
                      "InvalidAccessKeyId")
    assert_absent(s3, bucket, "sig")


def test_post_other_users_bucket(server, s3, bucket):
    fields = own_policy([{"bucket": bucket}, {"key": "intruder"}], user=USERS[1])
    assert_post_error(post_form(server, bucket, {"key": "intruder", **fields}), 403,
                      "AccessDenied")
    fields = own_policy([{"bucket": "no-such-bucket-post"}, {"key": "k"}])
    assert_post_error(post_form(server, "no-such-bucket-post", {"key": "k", **fields}), 404,
                      "NoSuchBucket")
    assert_absent(s3, bucket, "intruder")


def test_post_wrong_region(server, bucket):
    fields = own_policy([{"bucket": bucket}, {"key": "k"}], region="eu-west-1")
    r = post_form(server, bucket, {"key": "k", **fields})
    assert_post_error(r, 400, "AuthorizationQueryParametersError")
    assert ET.fromstring(r.content).findtext("Region") == REGION


@pytest.mark.parametrize("missing", ["key", "policy", "x-amz-signature", "x-amz-credential",
                                     "x-amz-date", "x-amz-algorithm"])
def test_post_missing_field(server, s3, bucket, missing):
    form = {"key": "miss", **own_policy([{"bucket": bucket}, {"key": "miss"}])}
    del form[missing]
    assert_post_error(post_form(server, bucket, form), 400, "InvalidArgument",
                      f"Bucket POST must contain a field named '{missing}'.  If it is "
                      "specified, please check the order of the fields.")
    assert_absent(s3, bucket, "miss")


def test_post_fields_after_file_do_not_count(server, s3, bucket):
    """The key sent after the file is not there when the file starts: S3's order rule."""
    fields = own_policy([{"bucket": bucket}, {"key": "late"}])
    r = post_form(server, bucket, fields, after={"key": "late"})
    assert_post_error(r, 400, "InvalidArgument")


def test_post_no_file(server, s3, bucket):
    fields = own_policy([{"bucket": bucket}, {"key": "nofile"}])
    r = post_form(server, bucket, {"key": "nofile", **fields}, file_data=None)
    assert_post_error(r, 400, "InvalidArgument",
                      "POST requires exactly one file upload per request.")


def test_post_anonymous(server, s3, bucket):
    assert_post_error(post_form(server, bucket, {"key": "anon"}), 403, "AccessDenied")
    assert_absent(s3, bucket, "anon")
    # a bucket open to everyone's writes takes an unsigned form, as S3 does
    s3.put_bucket_acl(Bucket=bucket, ACL="public-read-write")
    r = post_form(server, bucket, {"key": "anon/${filename}", "acl": "public-read"},
                  file_data=b"dropped")
    assert r.status_code == 204, r.text
    assert s3.get_object(Bucket=bucket, Key="anon/f.txt")["Body"].read() == b"dropped"
    acl = s3.get_object_acl(Bucket=bucket, Key="anon/f.txt")
    assert any(g["Grantee"].get("URI", "").endswith("/AllUsers") for g in acl["Grants"])
    s3.put_bucket_acl(Bucket=bucket, ACL="private")


@pytest.mark.parametrize("size,code", [(99, "EntityTooSmall"), (1001, "EntityTooLarge"),
                                       (300000, "EntityTooLarge")])
def test_post_content_length_range(server, s3, bucket, size, code):
    p = s3.generate_presigned_post(bucket, "range", Conditions=[["content-length-range", 100, 1000]])
    r = post_form(server, bucket, p["fields"], file_data=b"x" * size)
    assert_post_error(r, 400, code)
    assert_absent(s3, bucket, "range")
    r = post_form(server, bucket, p["fields"], file_data=b"x" * 1000)
    assert r.status_code == 204, r.text


def test_post_bad_policy_document(server, s3, bucket):
    fields = own_policy([{"bucket": bucket}])
    for doc in (b"not json", json.dumps({"conditions": []}).encode(),
                json.dumps({"expiration": "2099-01-01T00:00:00Z"}).encode(),
                json.dumps({"expiration": "tomorrow", "conditions": []}).encode(),
                json.dumps({"expiration": "2099-01-01T00:00:00Z", "conditions": [{}]}).encode()):
        policy = base64.b64encode(doc)
        sig = hmac.new(signing_key(USERS[0][1], fields["x-amz-date"][:8]), policy,
                       hashlib.sha256).hexdigest()
        form = {"key": "bad", **fields, "policy": policy.decode(), "x-amz-signature": sig}
        assert_post_error(post_form(server, bucket, form), 400, "InvalidPolicyDocument")


def test_post_not_multipart(server, bucket):
    r = requests.post(f"{server.endpoint}/{bucket}", data={"key": "x"}, timeout=30)
    assert_post_error(r, 412, "PreconditionFailed")
    assert ET.fromstring(r.content).findtext("Condition") == \
        "Bucket POST must be of the enclosure-type multipart/form-data"


def test_post_fields_too_large(server, s3, bucket):
    fields = own_policy([{"bucket": bucket}, {"key": "big-fields"}])
    r = post_form(server, bucket, {"key": "big-fields", "x-ignore-pad": "p" * (80 << 10),
                                   **fields})
    assert_post_error(r, 400, "MaxPostPreDataLengthExceeded")


def assert_absent(s3, bucket, key):
    from botocore.exceptions import ClientError
    with pytest.raises(ClientError) as ei:
        s3.head_object(Bucket=bucket, Key=key)
    assert ei.value.response["ResponseMetadata"]["HTTPStatusCode"] == 404


@pytest.mark.parametrize("name,second", [
    ("x-amz-meta-a", "x-amz-meta-a"),
    ("x-amz-meta-a", "X-Amz-Meta-A"),
    ("Content-Type", "content-type"),
    ("acl", "acl"),
])
def test_post_repeated_field_refused(server, s3, bucket, name, second):
    """The policy judges one value per field: a field given twice is 400 InvalidArgument (it
    used to pass the policy with its first copy while every copy of x-amz-meta-* was stored,
    and Content-Type or acl took the first)."""
    fields = own_policy([{"bucket": bucket}, {"key": "dup"}, {name: "private"}])
    files = [("key", (None, "dup")), (name, (None, "private")), (second, (None, "public-read")),
             *[(k, (None, v)) for k, v in fields.items()], ("file", ("f", b"x"))]
    r = requests.post(f"{server.endpoint}/{bucket}", files=files, timeout=30)
    assert_post_error(r, 400, "InvalidArgument")
    assert_absent(s3, bucket, "dup")
