"""Object and bucket tagging as AWS S3 answers it: Put/Get/DeleteObjectTagging and
Put/Get/DeleteBucketTagging; x-amz-tagging on PUT, CreateMultipartUpload and POST forms;
CopyObject's x-amz-tagging-directive; x-amz-tagging-count on GET and HEAD; S3's limits and errors;
and tags read by bucket-policy conditions (s3:ExistingObjectTag, s3:RequestObjectTag).
Runs on either backend (S3RDMA_TEST_BACKEND=rados)."""
import json
import os
import subprocess

import pytest
from botocore.exceptions import ClientError

from s3r_itest import REGION, USERS, assert_error, raw_request
from test_s3_post_object import post_form

OWNER, OTHER = USERS[0], USERS[1]
ARN = "arn:aws:s3:::"


def tagset(d):
    return {"TagSet": [{"Key": k, "Value": v} for k, v in d.items()]}


def tags_of(s3, bucket, key):
    return {t["Key"]: t["Value"] for t in s3.get_object_tagging(Bucket=bucket, Key=key)["TagSet"]}


def status(resp):
    return resp["ResponseMetadata"]["HTTPStatusCode"]


# ---- object tagging ------------------------------------------------------------------------

def test_object_tagging_round_trip(s3, bucket):
    s3.put_object(Bucket=bucket, Key="k", Body=b"data")
    assert s3.get_object_tagging(Bucket=bucket, Key="k")["TagSet"] == []
    assert "TagCount" not in s3.get_object(Bucket=bucket, Key="k")
    want = {"team": "blue", "Cost Center": "a+b-c=d._:/@", "ünïcode": "日本語", "empty": ""}
    r = s3.put_object_tagging(Bucket=bucket, Key="k", Tagging=tagset(want))
    assert status(r) == 200
    assert tags_of(s3, bucket, "k") == want
    got = s3.get_object(Bucket=bucket, Key="k")
    assert got["TagCount"] == 4 and got["Body"].read() == b"data"
    head = s3.head_object(Bucket=bucket, Key="k")["ResponseMetadata"]["HTTPHeaders"]
    assert head["x-amz-tagging-count"] == "4"  # HEAD too, as S3 answers
    # Replacing the set replaces every tag; the bytes and metadata stay.
    s3.put_object_tagging(Bucket=bucket, Key="k", Tagging=tagset({"only": "1"}))
    assert tags_of(s3, bucket, "k") == {"only": "1"}
    r = s3.delete_object_tagging(Bucket=bucket, Key="k")
    assert status(r) == 204
    assert tags_of(s3, bucket, "k") == {}
    assert s3.get_object(Bucket=bucket, Key="k")["Body"].read() == b"data"
    # An empty TagSet clears them too.
    s3.put_object_tagging(Bucket=bucket, Key="k", Tagging=tagset({"x": "y"}))
    s3.put_object_tagging(Bucket=bucket, Key="k", Tagging={"TagSet": []})
    assert tags_of(s3, bucket, "k") == {}
    # A missing key: NoSuchKey to every tagging request.
    for call in (lambda: s3.get_object_tagging(Bucket=bucket, Key="none"),
                 lambda: s3.put_object_tagging(Bucket=bucket, Key="none", Tagging=tagset({"a": "b"})),
                 lambda: s3.delete_object_tagging(Bucket=bucket, Key="none")):
        with pytest.raises(ClientError) as e:
            call()
        assert_error(e, "NoSuchKey", 404)


def test_put_with_tagging_header(s3, bucket):
    s3.put_object(Bucket=bucket, Key="h", Body=b"x", Tagging="a=1&b=x%20y&c=&d")
    assert tags_of(s3, bucket, "h") == {"a": "1", "b": "x y", "c": "", "d": ""}
    assert s3.get_object(Bucket=bucket, Key="h")["TagCount"] == 4
    # An overwrite without tags has none: tags belong to the object written.
    s3.put_object(Bucket=bucket, Key="h", Body=b"y")
    assert tags_of(s3, bucket, "h") == {}


def limit_cases():
    eleven = {f"k{i}": "v" for i in range(11)}
    return [
        ("eleven", eleven, "BadRequest"),
        ("long key", {"k" * 129: "v"}, "InvalidTag"),
        ("long value", {"k": "v" * 257}, "InvalidTag"),
        ("bad char", {"k!": "v"}, "InvalidTag"),
        ("aws prefix", {"aws:owner": "v"}, "InvalidTag"),
    ]


def test_tag_sets_come_back_sorted_by_key(s3, bucket):
    """S3 (and radosgw) answer a tag set sorted by key, whatever order it was sent in:
    the x-amz-tagging header, a Tagging body, and a bucket's tags alike."""
    s3.put_object(Bucket=bucket, Key="h", Body=b"x", Tagging="foo=bar&bar&Zed=1&a%20b=2")
    assert s3.get_object_tagging(Bucket=bucket, Key="h")["TagSet"] == [
        {"Key": "Zed", "Value": "1"}, {"Key": "a b", "Value": "2"},
        {"Key": "bar", "Value": ""}, {"Key": "foo", "Value": "bar"}]
    sent = {"zz": "1", "mm": "2", "aa": "3"}
    s3.put_object_tagging(Bucket=bucket, Key="h", Tagging=tagset(sent))
    assert [t["Key"] for t in s3.get_object_tagging(Bucket=bucket, Key="h")["TagSet"]] == \
        ["aa", "mm", "zz"]
    s3.put_bucket_tagging(Bucket=bucket, Tagging=tagset(sent))
    assert [t["Key"] for t in s3.get_bucket_tagging(Bucket=bucket)["TagSet"]] == ["aa", "mm", "zz"]


@pytest.mark.parametrize("name,tags,code", limit_cases(), ids=[c[0] for c in limit_cases()])
def test_object_tag_limits(s3, bucket, name, tags, code):
    s3.put_object(Bucket=bucket, Key="k", Body=b"x", Tagging="keep=1")
    with pytest.raises(ClientError) as e:
        s3.put_object_tagging(Bucket=bucket, Key="k", Tagging=tagset(tags))
    assert_error(e, code, 400)
    # The header of a PUT is held to the same rules, and a refused PUT stores nothing.
    from urllib.parse import urlencode
    with pytest.raises(ClientError) as e:
        s3.put_object(Bucket=bucket, Key="k2", Body=b"x", Tagging=urlencode(tags))
    assert_error(e, code, 400)
    assert tags_of(s3, bucket, "k") == {"keep": "1"}
    with pytest.raises(ClientError) as e:
        s3.head_object(Bucket=bucket, Key="k2")
    assert e.value.response["ResponseMetadata"]["HTTPStatusCode"] == 404


def test_object_tag_limits_at_the_edge(s3, bucket):
    # 10 tags, a 128-character key and a 256-character value (characters, not bytes).
    tags = {f"k{i}": "v" for i in range(8)}
    tags["é" * 128] = "ü" * 256
    tags["x"] = ""
    s3.put_object(Bucket=bucket, Key="k", Body=b"x")
    s3.put_object_tagging(Bucket=bucket, Key="k", Tagging=tagset(tags))
    assert tags_of(s3, bucket, "k") == tags


def test_duplicate_keys(s3, server, bucket):
    s3.put_object(Bucket=bucket, Key="k", Body=b"x")
    body = (b"<Tagging><TagSet><Tag><Key>a</Key><Value>1</Value></Tag>"
            b"<Tag><Key>a</Key><Value>2</Value></Tag></TagSet></Tagging>")
    r = raw_request(server, "PUT", f"/{bucket}/k", query=[("tagging", None)], body=body)
    assert r.status == 400 and b"<Code>InvalidTag</Code>" in r.body, r.body
    with pytest.raises(ClientError) as e:
        s3.put_object(Bucket=bucket, Key="k", Body=b"x", Tagging="a=1&a=2")
    assert_error(e, "InvalidArgument", 400)
    with pytest.raises(ClientError) as e:  # an empty key (boto3 refuses to send one in XML)
        s3.put_object(Bucket=bucket, Key="k", Body=b"x", Tagging="=v")
    assert_error(e, "InvalidTag", 400)


@pytest.mark.parametrize("body", [
    b"<Tagging><TagSet><Tag><Key>a</Key></Tag></TagSet></Tagging>",
    b"<Tagging><TagSet><Tag><Value>1</Value></Tag></TagSet></Tagging>",
    b"<Tagging><TagSet><Tag><Key>a</Key><Key>b</Key><Value>1</Value></Tag></TagSet></Tagging>",
    b"<Tags><TagSet></TagSet></Tags>",
    b"<Tagging><TagSet><Tag><Key>a</Key><Value>1</Value></Tag></TagSet>",
])
def test_malformed_tagging_body(s3, server, bucket, body):
    s3.put_object(Bucket=bucket, Key="k", Body=b"x", Tagging="keep=1")
    r = raw_request(server, "PUT", f"/{bucket}/k", query=[("tagging", None)], body=body)
    assert r.status == 400 and b"<Code>MalformedXML</Code>" in r.body, r.body
    assert tags_of(s3, bucket, "k") == {"keep": "1"}


def test_copy_tagging_directive(s3, bucket):
    s3.put_object(Bucket=bucket, Key="src", Body=b"x", Tagging="a=1&b=2")
    src = {"Bucket": bucket, "Key": "src"}
    s3.copy_object(Bucket=bucket, Key="default", CopySource=src)
    assert tags_of(s3, bucket, "default") == {"a": "1", "b": "2"}
    s3.copy_object(Bucket=bucket, Key="copy", CopySource=src, TaggingDirective="COPY",
                   Tagging="ignored=1")
    assert tags_of(s3, bucket, "copy") == {"a": "1", "b": "2"}
    s3.copy_object(Bucket=bucket, Key="repl", CopySource=src, TaggingDirective="REPLACE",
                   Tagging="c=3")
    assert tags_of(s3, bucket, "repl") == {"c": "3"}
    s3.copy_object(Bucket=bucket, Key="none", CopySource=src, TaggingDirective="REPLACE")
    assert tags_of(s3, bucket, "none") == {}
    # Metadata REPLACE keeps the source's tags unless the tags are replaced too.
    s3.copy_object(Bucket=bucket, Key="meta", CopySource=src, MetadataDirective="REPLACE",
                   Metadata={"m": "1"})
    assert tags_of(s3, bucket, "meta") == {"a": "1", "b": "2"}
    with pytest.raises(ClientError) as e:
        s3.copy_object(Bucket=bucket, Key="bad", CopySource=src, TaggingDirective="MOVE")
    assert_error(e, "InvalidArgument", 400)
    with pytest.raises(ClientError) as e:
        s3.copy_object(Bucket=bucket, Key="bad", CopySource=src, TaggingDirective="REPLACE",
                       Tagging="aws:x=1")
    assert_error(e, "InvalidTag", 400)


def test_multipart_upload_tags(s3, bucket):
    up = s3.create_multipart_upload(Bucket=bucket, Key="mp", Tagging="phase=train&epoch=3")
    p = s3.upload_part(Bucket=bucket, Key="mp", UploadId=up["UploadId"], PartNumber=1,
                       Body=b"part")
    s3.complete_multipart_upload(Bucket=bucket, Key="mp", UploadId=up["UploadId"],
                                 MultipartUpload={"Parts": [{"PartNumber": 1,
                                                             "ETag": p["ETag"]}]})
    assert tags_of(s3, bucket, "mp") == {"phase": "train", "epoch": "3"}
    with pytest.raises(ClientError) as e:
        s3.create_multipart_upload(Bucket=bucket, Key="mp2", Tagging="k!=1")
    assert_error(e, "InvalidTag", 400)


def test_post_form_tagging(server, s3, bucket):
    doc = ("<Tagging><TagSet><Tag><Key>src</Key><Value>browser</Value></Tag>"
           "</TagSet></Tagging>")
    p = s3.generate_presigned_post(bucket, "form", Fields={"tagging": doc},
                                   Conditions=[{"tagging": doc}])
    r = post_form(server, bucket, p["fields"], file_data=b"formdata")
    assert r.status_code == 204, r.text
    assert tags_of(s3, bucket, "form") == {"src": "browser"}
    bad = doc.replace("src", "aws:src")
    p = s3.generate_presigned_post(bucket, "form2", Fields={"tagging": bad},
                                   Conditions=[{"tagging": bad}])
    r = post_form(server, bucket, p["fields"], file_data=b"formdata")
    assert r.status_code == 400 and b"<Code>InvalidTag</Code>" in r.content, r.text


# ---- bucket tagging ------------------------------------------------------------------------

def test_bucket_tagging_round_trip(s3, bucket):
    with pytest.raises(ClientError) as e:
        s3.get_bucket_tagging(Bucket=bucket)
    assert_error(e, "NoSuchTagSet", 404)
    want = {f"k{i}": f"v{i}" for i in range(50)}
    r = s3.put_bucket_tagging(Bucket=bucket, Tagging=tagset(want))
    assert status(r) == 204
    got = {t["Key"]: t["Value"] for t in s3.get_bucket_tagging(Bucket=bucket)["TagSet"]}
    assert got == want
    r = s3.delete_bucket_tagging(Bucket=bucket)
    assert status(r) == 204
    with pytest.raises(ClientError) as e:
        s3.get_bucket_tagging(Bucket=bucket)
    assert_error(e, "NoSuchTagSet", 404)


def test_bucket_tagging_errors(s3, s3_user2, bucket):
    with pytest.raises(ClientError) as e:
        s3.put_bucket_tagging(Bucket=bucket, Tagging=tagset({f"k{i}": "v" for i in range(51)}))
    assert_error(e, "InvalidTag", 400)
    with pytest.raises(ClientError) as e:
        s3.put_bucket_tagging(Bucket=bucket, Tagging=tagset({"aws:x": "v"}))
    assert_error(e, "InvalidTag", 400)
    with pytest.raises(ClientError) as e:
        s3.put_bucket_tagging(Bucket=bucket, Tagging=tagset({"k": "v" * 257}))
    assert_error(e, "InvalidTag", 400)
    for call in (lambda: s3_user2.put_bucket_tagging(Bucket=bucket, Tagging=tagset({"a": "b"})),
                 lambda: s3_user2.get_bucket_tagging(Bucket=bucket),
                 lambda: s3_user2.delete_bucket_tagging(Bucket=bucket)):
        with pytest.raises(ClientError) as e:
            call()
        assert_error(e, "AccessDenied", 403)


# ---- policy conditions on tags -------------------------------------------------------------

def set_policy(s3, bucket, *statements):
    s3.put_bucket_policy(Bucket=bucket, Policy=json.dumps(
        {"Version": "2012-10-17", "Statement": list(statements)}))


def test_policy_existing_object_tag(s3, s3_user2, bucket):
    s3.put_object(Bucket=bucket, Key="blue", Body=b"b", Tagging="team=blue")
    s3.put_object(Bucket=bucket, Key="red", Body=b"r", Tagging="team=red")
    s3.put_object(Bucket=bucket, Key="plain", Body=b"p")
    set_policy(s3, bucket, {
        "Effect": "Allow", "Principal": {"AWS": [OTHER[0]]},
        "Action": ["s3:GetObject", "s3:GetObjectTagging"], "Resource": ARN + bucket + "/*",
        "Condition": {"StringEquals": {"s3:ExistingObjectTag/team": "blue"}}})
    try:
        assert s3_user2.get_object(Bucket=bucket, Key="blue")["Body"].read() == b"b"
        assert tags_of(s3_user2, bucket, "blue") == {"team": "blue"}
        for key in ("red", "plain"):
            with pytest.raises(ClientError) as e:
                s3_user2.get_object(Bucket=bucket, Key=key)
            assert_error(e, "AccessDenied", 403)
        # Retagging the object changes the decision.
        s3.put_object_tagging(Bucket=bucket, Key="red", Tagging=tagset({"team": "blue"}))
        assert s3_user2.get_object(Bucket=bucket, Key="red")["Body"].read() == b"r"
    finally:
        s3.delete_bucket_policy(Bucket=bucket)


def test_policy_request_object_tag(s3, s3_user2, bucket):
    s3.put_object(Bucket=bucket, Key="obj", Body=b"o")
    set_policy(s3, bucket, {
        "Effect": "Allow", "Principal": {"AWS": [OTHER[0]]},
        "Action": ["s3:PutObject", "s3:PutObjectTagging"], "Resource": ARN + bucket + "/*",
        "Condition": {"StringEquals": {"s3:RequestObjectTag/team": "blue"}}})
    try:
        s3_user2.put_object(Bucket=bucket, Key="new", Body=b"n", Tagging="team=blue")
        with pytest.raises(ClientError) as e:
            s3_user2.put_object(Bucket=bucket, Key="new2", Body=b"n", Tagging="team=red")
        assert_error(e, "AccessDenied", 403)
        with pytest.raises(ClientError) as e:
            s3_user2.put_object(Bucket=bucket, Key="new3", Body=b"n")
        assert_error(e, "AccessDenied", 403)
        # PutObjectTagging: the condition reads the body's tags.
        r = s3_user2.put_object_tagging(Bucket=bucket, Key="obj",
                                        Tagging=tagset({"team": "blue"}))
        assert status(r) == 200
        with pytest.raises(ClientError) as e:
            s3_user2.put_object_tagging(Bucket=bucket, Key="obj", Tagging=tagset({"team": "red"}))
        assert_error(e, "AccessDenied", 403)
        assert tags_of(s3, bucket, "obj") == {"team": "blue"}
    finally:
        s3.delete_bucket_policy(Bucket=bucket)


# ---- lifecycle filters ---------------------------------------------------------------------

def test_lifecycle_tag_filter(s3, bucket):
    """A rule filtered by a tag expires (x-amz-expiration) the objects carrying it only."""
    s3.put_bucket_lifecycle_configuration(Bucket=bucket, LifecycleConfiguration={"Rules": [
        {"ID": "tmp", "Status": "Enabled", "Filter": {"Tag": {"Key": "class", "Value": "tmp"}},
         "Expiration": {"Days": 3}}]})
    s3.put_object(Bucket=bucket, Key="t", Body=b"x", Tagging="class=tmp")
    s3.put_object(Bucket=bucket, Key="k", Body=b"x", Tagging="class=keep")
    s3.put_object(Bucket=bucket, Key="n", Body=b"x")
    assert 'rule-id="tmp"' in s3.head_object(Bucket=bucket, Key="t").get("Expiration", "")
    assert "Expiration" not in s3.head_object(Bucket=bucket, Key="k")
    assert "Expiration" not in s3.head_object(Bucket=bucket, Key="n")
    # Retagging the object moves it into the rule.
    s3.put_object_tagging(Bucket=bucket, Key="n", Tagging=tagset({"class": "tmp"}))
    assert "Expiration" in s3.head_object(Bucket=bucket, Key="n")


# ---- awscli ----------------------------------------------------------------------------------

@pytest.mark.skipif(not os.path.exists("/usr/bin/aws"), reason="awscli not installed")
def test_awscli_tagging(server, s3, bucket, tmp_path):
    env = dict(os.environ, HOME=str(tmp_path), AWS_ACCESS_KEY_ID=OWNER[0],
               AWS_SECRET_ACCESS_KEY=OWNER[1], AWS_DEFAULT_REGION=REGION, AWS_PAGER="",
               AWS_CONFIG_FILE=str(tmp_path / "none"),
               AWS_SHARED_CREDENTIALS_FILE=str(tmp_path / "none"),
               AWS_EC2_METADATA_DISABLED="true", NO_PROXY="127.0.0.1", no_proxy="127.0.0.1")
    env.pop("AWS_CA_BUNDLE", None)
    aws = ["/usr/bin/aws", "--endpoint-url", server.endpoint, "--no-cli-pager", "s3api"]

    def run(*args):
        p = subprocess.run(aws + list(args), env=env, capture_output=True, timeout=120,
                           stdin=subprocess.DEVNULL)
        return p.returncode, p.stdout.decode(), p.stderr.decode()

    s3.put_object(Bucket=bucket, Key="cli", Body=b"x")
    rc, out, err = run("put-object-tagging", "--bucket", bucket, "--key", "cli", "--tagging",
                       '{"TagSet":[{"Key":"env","Value":"prod"}]}')
    assert rc == 0, err
    rc, out, err = run("get-object-tagging", "--bucket", bucket, "--key", "cli")
    assert rc == 0, err
    assert json.loads(out)["TagSet"] == [{"Key": "env", "Value": "prod"}]
    rc, out, err = run("put-bucket-tagging", "--bucket", bucket, "--tagging",
                       '{"TagSet":[{"Key":"aws:no","Value":"x"}]}')
    assert rc != 0 and "InvalidTag" in err, err
