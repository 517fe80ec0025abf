"""Lifecycle configurations as AWS S3 answers them: Put/Get/DeleteBucketLifecycleConfiguration
round trips in every filter shape, the errors S3 gives for invalid rules (boto3 and raw XML),
who may set them, and the x-amz-expiration header on PUT, GET and HEAD replies."""
import email.utils
import time

import pytest
from botocore.exceptions import ClientError

from s3r_itest import assert_error, boto_client, new_bucket_name, raw_request

DAY = 86400


def rules_of(s3, bucket):
    return s3.get_bucket_lifecycle_configuration(Bucket=bucket)["Rules"]


def put_rules(s3, bucket, rules):
    s3.put_bucket_lifecycle_configuration(Bucket=bucket,
                                          LifecycleConfiguration={"Rules": rules})


def test_lifecycle_absent_then_round_trip_then_deleted(s3, bucket):
    with pytest.raises(ClientError) as e:
        s3.get_bucket_lifecycle_configuration(Bucket=bucket)
    assert_error(e, "NoSuchLifecycleConfiguration", 404)
    rules = [
        {"ID": "logs", "Filter": {"Prefix": "logs/"}, "Status": "Enabled",
         "Expiration": {"Days": 30}},
        {"ID": "tmp-tagged", "Filter": {"Tag": {"Key": "tmp", "Value": "yes"}},
         "Status": "Disabled", "Expiration": {"Days": 1}},
        {"ID": "big", "Filter": {"And": {"Prefix": "ckpt/", "Tags": [
            {"Key": "a", "Value": "1"}, {"Key": "b", "Value": ""}],
            "ObjectSizeGreaterThan": 1024, "ObjectSizeLessThan": 1 << 30}},
         "Status": "Enabled", "NoncurrentVersionExpiration": {
             "NoncurrentDays": 7, "NewerNoncurrentVersions": 3}},
        {"ID": "uploads", "Filter": {}, "Status": "Enabled",
         "AbortIncompleteMultipartUpload": {"DaysAfterInitiation": 2}},
        {"ID": "dated", "Filter": {"ObjectSizeLessThan": 10}, "Status": "Enabled",
         "Expiration": {"Date": "2031-01-01T00:00:00Z"}},
        {"ID": "markers", "Filter": {"Prefix": ""}, "Status": "Enabled",
         "Expiration": {"ExpiredObjectDeleteMarker": True}},
    ]
    put_rules(s3, bucket, rules)
    got = rules_of(s3, bucket)
    assert [r["ID"] for r in got] == [r["ID"] for r in rules]
    assert got[0]["Filter"] == {"Prefix": "logs/"} and got[0]["Expiration"] == {"Days": 30}
    assert got[1]["Filter"] == {"Tag": {"Key": "tmp", "Value": "yes"}}
    assert got[1]["Status"] == "Disabled"
    assert got[2]["Filter"]["And"] == rules[2]["Filter"]["And"]
    assert got[2]["NoncurrentVersionExpiration"] == {"NoncurrentDays": 7,
                                                     "NewerNoncurrentVersions": 3}
    assert got[3]["AbortIncompleteMultipartUpload"] == {"DaysAfterInitiation": 2}
    assert got[4]["Expiration"]["Date"].year == 2031
    assert got[5]["Expiration"] == {"ExpiredObjectDeleteMarker": True}
    # A new configuration replaces the old one whole.
    put_rules(s3, bucket, rules[:1])
    assert [r["ID"] for r in rules_of(s3, bucket)] == ["logs"]
    s3.delete_bucket_lifecycle(Bucket=bucket)
    with pytest.raises(ClientError) as e:
        s3.get_bucket_lifecycle_configuration(Bucket=bucket)
    assert_error(e, "NoSuchLifecycleConfiguration", 404)
    # Deleting what is not there: 204, as S3.
    s3.delete_bucket_lifecycle(Bucket=bucket)


def test_lifecycle_legacy_prefix_rule(server, s3, bucket):
    xml = (b"<LifecycleConfiguration><Rule><ID>old</ID><Prefix>x/</Prefix>"
           b"<Status>Enabled</Status><Expiration><Days>3</Days></Expiration></Rule>"
           b"</LifecycleConfiguration>")
    r = raw_request(server, "PUT", f"/{bucket}", query=[("lifecycle", None)], body=xml)
    assert r.status == 200, r.body
    got = rules_of(s3, bucket)
    assert got[0]["Prefix"] == "x/" and "Filter" not in got[0]


@pytest.mark.parametrize("rule, code", [
    ({"ID": "x" * 256, "Filter": {}, "Status": "Enabled", "Expiration": {"Days": 1}},
     "InvalidArgument"),
    ({"ID": "a", "Filter": {}, "Status": "Enabled", "Expiration": {"Days": 0}},
     "InvalidArgument"),
    ({"ID": "a", "Filter": {}, "Status": "Enabled",
      "Expiration": {"Date": "2031-01-01T10:00:00Z"}}, "InvalidArgument"),
    ({"ID": "a", "Filter": {}, "Status": "Enabled",
      "NoncurrentVersionExpiration": {"NoncurrentDays": 0}}, "InvalidArgument"),
    ({"ID": "a", "Filter": {}, "Status": "Enabled",
      "NoncurrentVersionExpiration": {"NoncurrentDays": 1, "NewerNoncurrentVersions": 101}},
     "InvalidArgument"),
    ({"ID": "a", "Filter": {}, "Status": "Enabled",
      "AbortIncompleteMultipartUpload": {"DaysAfterInitiation": 0}}, "InvalidArgument"),
    ({"ID": "a", "Filter": {"Tag": {"Key": "k", "Value": "v"}}, "Status": "Enabled",
      "AbortIncompleteMultipartUpload": {"DaysAfterInitiation": 1}}, "InvalidRequest"),
    ({"ID": "a", "Filter": {"And": {"Tags": [{"Key": "k", "Value": "1"},
                                             {"Key": "k", "Value": "2"}]}},
      "Status": "Enabled", "Expiration": {"Days": 1}}, "InvalidRequest"),
    ({"ID": "a", "Filter": {}, "Status": "Enabled"}, "InvalidRequest"),
    ({"ID": "a", "Filter": {"And": {"ObjectSizeGreaterThan": 10, "ObjectSizeLessThan": 10}},
      "Status": "Enabled", "Expiration": {"Days": 1}}, "InvalidArgument"),
    ({"ID": "a", "Filter": {}, "Status": "Enabled",
      "Transitions": [{"Days": 1, "StorageClass": "GLACIER"}]}, "NotImplemented"),
    # A transition is checked as S3 checks it before it is refused as not implemented:
    # a faulty one, or a fault elsewhere in its rule, gets S3's 400 (ceph s3-tests'
    # test_lifecycle_transition_set_invalid_date).
    ({"ID": "a", "Filter": {}, "Status": "Enabled",
      "Transitions": [{"Date": "2031-01-01T10:00:00Z", "StorageClass": "GLACIER"}]},
     "InvalidArgument"),
    ({"ID": "a", "Filter": {}, "Status": "Enabled",
      "Transitions": [{"Days": 1, "StorageClass": "STANDARD"}]}, "MalformedXML"),
    ({"ID": "a", "Filter": {}, "Status": "Enabled",
      "NoncurrentVersionTransitions": [{"NoncurrentDays": 1, "StorageClass": "GLACIER",
                                        "NewerNoncurrentVersions": 101}]}, "InvalidArgument"),
    ({"ID": "a", "Filter": {}, "Status": "Enabled", "Expiration": {"Days": 0},
      "Transitions": [{"Days": 1, "StorageClass": "GLACIER"}]}, "InvalidArgument"),
])
def test_lifecycle_invalid_rules(s3, bucket, rule, code):
    with pytest.raises(ClientError) as e:
        put_rules(s3, bucket, [rule])
    assert e.value.response["Error"]["Code"] == code
    assert e.value.response["ResponseMetadata"]["HTTPStatusCode"] == (
        501 if code == "NotImplemented" else 400)
    # Nothing was kept.
    with pytest.raises(ClientError) as e:
        s3.get_bucket_lifecycle_configuration(Bucket=bucket)
    assert_error(e, "NoSuchLifecycleConfiguration", 404)


def test_lifecycle_transition_refused_after_the_other_rules_are_checked(s3, bucket):
    """A valid transition in one rule and a fault in a later one: S3's 400 for the fault,
    not 501 for the transition."""
    with pytest.raises(ClientError) as e:
        put_rules(s3, bucket, [
            {"ID": "t", "Filter": {}, "Status": "Enabled",
             "Transitions": [{"Days": 30, "StorageClass": "GLACIER"}]},
            {"ID": "bad", "Filter": {}, "Status": "Enabled",
             "Expiration": {"Date": "2031-01-01T10:00:00Z"}}])
    assert_error(e, "InvalidArgument", 400)


def test_lifecycle_same_id_twice(s3, bucket):
    rule = {"ID": "same", "Filter": {"Prefix": "a"}, "Status": "Enabled",
            "Expiration": {"Days": 1}}
    with pytest.raises(ClientError) as e:
        put_rules(s3, bucket, [rule, dict(rule, Filter={"Prefix": "b"})])
    assert_error(e, "InvalidArgument", 400)


def test_lifecycle_rules_without_id_are_given_one(s3, bucket):
    """S3 names a rule sent without an ID; the name is kept, and x-amz-expiration's
    rule-id gives it."""
    put_rules(s3, bucket, [
        {"Filter": {"Prefix": "a/"}, "Status": "Enabled", "Expiration": {"Days": 3}},
        {"Filter": {"Prefix": "b/"}, "Status": "Enabled", "Expiration": {"Days": 5}},
        {"ID": "mine", "Filter": {"Prefix": "c/"}, "Status": "Enabled",
         "Expiration": {"Days": 7}}])
    got = rules_of(s3, bucket)
    ids = [r["ID"] for r in got]
    assert ids[2] == "mine" and ids[0] != ids[1]
    assert all(len(i) == 32 and int(i, 16) >= 0 for i in ids[:2])
    assert [r["ID"] for r in rules_of(s3, bucket)] == ids  # stored, not made per read
    r = s3.put_object(Bucket=bucket, Key="a/k", Body=b"x")
    assert f'rule-id="{ids[0]}"' in r["Expiration"]
    s3.delete_bucket_lifecycle(Bucket=bucket)


@pytest.mark.parametrize("body", [
    b"not xml",
    b"<LifecycleConfiguration></LifecycleConfiguration>",
    b"<LifecycleConfiguration><Rule><ID>a</ID><Filter/><Status>On</Status>"
    b"<Expiration><Days>1</Days></Expiration></Rule></LifecycleConfiguration>",
    b"<LifecycleConfiguration><Rule><ID>a</ID><Filter/><Expiration><Days>1</Days>"
    b"</Expiration></Rule></LifecycleConfiguration>",
    b"<LifecycleConfiguration><Rule><ID>a</ID><Prefix>p</Prefix><Filter/>"
    b"<Status>Enabled</Status><Expiration><Days>1</Days></Expiration></Rule>"
    b"</LifecycleConfiguration>",
    b"<LifecycleConfiguration><Rule><ID>a</ID><Filter><Prefix>p</Prefix>"
    b"<ObjectSizeLessThan>5</ObjectSizeLessThan></Filter><Status>Enabled</Status>"
    b"<Expiration><Days>1</Days></Expiration></Rule></LifecycleConfiguration>",
    b"<LifecycleConfiguration><Rule><ID>a</ID><Filter/><Status>Enabled</Status>"
    b"<Expiration><Days>1</Days><Date>2031-01-01T00:00:00Z</Date></Expiration></Rule>"
    b"</LifecycleConfiguration>",
    b"<LifecycleConfiguration><Rule><ID>a</ID><Filter/><Status>Enabled</Status>"
    b"<Expiration><Days>1</Days><Days>2</Days></Expiration></Rule>"
    b"</LifecycleConfiguration>",
    b"<LifecycleConfiguration><Rule><ID>a</ID><Filter/><Status>Enabled</Status>"
    b"<Expiration><Days><b>1</b></Days></Expiration></Rule></LifecycleConfiguration>",
])
def test_lifecycle_malformed(server, s3, bucket, body):
    r = raw_request(server, "PUT", f"/{bucket}", query=[("lifecycle", None)], body=body)
    assert r.status == 400, r.body
    assert r.error_code() == "MalformedXML"


def test_lifecycle_only_the_owner(s3, s3_user2, bucket):
    with pytest.raises(ClientError) as e:
        put_rules(s3_user2, bucket, [{"ID": "a", "Filter": {}, "Status": "Enabled",
                                      "Expiration": {"Days": 1}}])
    assert_error(e, "AccessDenied", 403)
    for call in (s3_user2.get_bucket_lifecycle_configuration, s3_user2.delete_bucket_lifecycle):
        with pytest.raises(ClientError) as e:
            call(Bucket=bucket)
        assert_error(e, "AccessDenied", 403)


def expiry(resp):
    """(date, rule id) of an x-amz-expiration header, or None."""
    h = resp["ResponseMetadata"]["HTTPHeaders"].get("x-amz-expiration")
    if h is None:
        return None
    date = h.split('expiry-date="')[1].split('"')[0]
    rule = h.split('rule-id="')[1].split('"')[0]
    return email.utils.parsedate_to_datetime(date).timestamp(), rule


def test_expiration_header(s3, bucket):
    tomorrow = (int(time.time()) // DAY + 1) * DAY
    put_rules(s3, bucket, [
        {"ID": "short", "Filter": {"Prefix": "logs/"}, "Status": "Enabled",
         "Expiration": {"Days": 2}},
        {"ID": "long", "Filter": {}, "Status": "Enabled", "Expiration": {"Days": 30}},
        {"ID": "off", "Filter": {}, "Status": "Disabled", "Expiration": {"Days": 1}},
        {"ID": "small", "Filter": {"ObjectSizeLessThan": 3}, "Status": "Enabled",
         "Expiration": {"Date": time.strftime("%Y-%m-%dT00:00:00Z", time.gmtime(tomorrow))}},
    ])
    before = time.time()
    put = s3.put_object(Bucket=bucket, Key="logs/a", Body=b"12345")
    t, rule = expiry(put)
    assert rule == "short"
    # The write time plus two days, rounded up to the next midnight UTC.
    assert t % DAY == 0 and before + 2 * DAY <= t <= time.time() + 3 * DAY
    for resp in (s3.get_object(Bucket=bucket, Key="logs/a"),
                 s3.head_object(Bucket=bucket, Key="logs/a")):
        assert expiry(resp) == (t, "short")
    other = s3.put_object(Bucket=bucket, Key="data/b", Body=b"12345")
    assert expiry(other)[1] == "long"
    # The earliest matching rule decides: the date, tomorrow, before 30 days.
    tiny = s3.put_object(Bucket=bucket, Key="data/c", Body=b"1")
    assert expiry(tiny) == (tomorrow, "small")
    s3.delete_bucket_lifecycle(Bucket=bucket)
    assert expiry(s3.head_object(Bucket=bucket, Key="logs/a")) is None


def test_expiration_header_tag_rules_need_tags(s3, bucket):
    put_rules(s3, bucket, [{"ID": "tagged", "Filter": {"Tag": {"Key": "t", "Value": "1"}},
                            "Status": "Enabled", "Expiration": {"Days": 1}}])
    assert expiry(s3.put_object(Bucket=bucket, Key="k", Body=b"x")) is None


def test_create_multipart_upload_names_its_abort_date(s3, bucket):
    put_rules(s3, bucket, [
        {"ID": "slow", "Filter": {}, "Status": "Enabled",
         "AbortIncompleteMultipartUpload": {"DaysAfterInitiation": 7}},
        {"ID": "fast", "Filter": {"Prefix": "tmp/"}, "Status": "Enabled",
         "AbortIncompleteMultipartUpload": {"DaysAfterInitiation": 1}},
    ])
    before = time.time()
    r = s3.create_multipart_upload(Bucket=bucket, Key="tmp/x")
    assert r["AbortRuleId"] == "fast"
    t = r["AbortDate"].timestamp()
    assert t % DAY == 0 and before + DAY <= t <= time.time() + 2 * DAY
    assert s3.create_multipart_upload(Bucket=bucket, Key="data/x")["AbortRuleId"] == "slow"
    s3.delete_bucket_lifecycle(Bucket=bucket)
    assert "AbortRuleId" not in s3.create_multipart_upload(Bucket=bucket, Key="tmp/y")


def test_headers_count_real_days_with_a_short_runner_day(make_server):
    """lifecycle.day_seconds shortens the runner's day only: x-amz-expiration and the
    abort date still name the date S3 would (a real day after the write, rounded up to
    midnight UTC), as radosgw does with its debug interval."""
    srv = make_server(extra_args=["--lifecycle-day-seconds", "2"])
    s3 = boto_client(srv)
    bucket = new_bucket_name()
    s3.create_bucket(Bucket=bucket)
    put_rules(s3, bucket, [
        {"ID": "exp", "Filter": {"Prefix": "e/"}, "Status": "Enabled",
         "Expiration": {"Days": 30}},
        {"ID": "abort", "Filter": {"Prefix": "u/"}, "Status": "Enabled",
         "AbortIncompleteMultipartUpload": {"DaysAfterInitiation": 30}},
    ])
    before = time.time()
    t, rule = expiry(s3.put_object(Bucket=bucket, Key="e/a", Body=b"x"))
    assert rule == "exp"
    assert t % DAY == 0 and before + 30 * DAY <= t <= time.time() + 31 * DAY
    assert expiry(s3.head_object(Bucket=bucket, Key="e/a")) == (t, "exp")
    r = s3.create_multipart_upload(Bucket=bucket, Key="u/b")
    a = r["AbortDate"].timestamp()
    assert r["AbortRuleId"] == "abort"
    assert a % DAY == 0 and before + 30 * DAY <= a <= time.time() + 31 * DAY
    s3.abort_multipart_upload(Bucket=bucket, Key="u/b", UploadId=r["UploadId"])
    s3.delete_object(Bucket=bucket, Key="e/a")
    s3.delete_bucket_lifecycle(Bucket=bucket)
    s3.delete_bucket(Bucket=bucket)


def wait_for(cond, timeout=30):
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.2)
    return True


def test_runner_aborts_incomplete_uploads(make_server):
    """With a 2-second day the runner (a pass every second) aborts the uploads an enabled
    AbortIncompleteMultipartUpload rule names once they are a day old, and no other."""
    srv = make_server(extra_args=["--lifecycle-day-seconds", "2"])
    s3 = boto_client(srv)
    bucket = new_bucket_name()
    s3.create_bucket(Bucket=bucket)
    old = s3.create_multipart_upload(Bucket=bucket, Key="tmp/a")["UploadId"]
    keep = s3.create_multipart_upload(Bucket=bucket, Key="keep/b")["UploadId"]
    s3.upload_part(Bucket=bucket, Key="tmp/a", UploadId=old, PartNumber=1, Body=b"x" * 100)
    put_rules(s3, bucket, [
        {"ID": "tmp", "Filter": {"Prefix": "tmp/"}, "Status": "Enabled",
         "AbortIncompleteMultipartUpload": {"DaysAfterInitiation": 1}},
        {"ID": "off", "Filter": {"Prefix": "keep/"}, "Status": "Disabled",
         "AbortIncompleteMultipartUpload": {"DaysAfterInitiation": 1}},
    ])

    def uploads():
        return {u["UploadId"] for u in s3.list_multipart_uploads(Bucket=bucket).get("Uploads", [])}
    assert wait_for(lambda: old not in uploads()), srv.log_tail()
    assert keep in uploads()
    with pytest.raises(ClientError) as e:
        s3.list_parts(Bucket=bucket, Key="tmp/a", UploadId=old)
    assert_error(e, "NoSuchUpload", 404)
    assert "upload " + old + " aborted (rule \"tmp\")" in srv.log_tail(200)


def test_runner_expires_current_objects(make_server):
    """A 2-second day: an Expiration rule deletes the objects it names once a day old; others
    stay."""
    srv = make_server(extra_args=["--lifecycle-day-seconds", "2"])
    s3 = boto_client(srv)
    bucket = new_bucket_name()
    s3.create_bucket(Bucket=bucket)
    s3.put_object(Bucket=bucket, Key="logs/a", Body=b"x" * 10)
    s3.put_object(Bucket=bucket, Key="keep/b", Body=b"y")
    put_rules(s3, bucket, [{"ID": "logs", "Filter": {"Prefix": "logs/"}, "Status": "Enabled",
                            "Expiration": {"Days": 1}}])

    def keys():
        return {o["Key"] for o in s3.list_objects_v2(Bucket=bucket).get("Contents", [])}
    assert wait_for(lambda: "logs/a" not in keys()), srv.log_tail()
    assert "keep/b" in keys()
    assert 'logs/a expired (rule "logs")' in srv.log_tail(200)


def test_runner_days_rule_removes_expired_object_delete_markers(make_server):
    """A 2-second day, a versioned bucket: an Expiration rule with Days also removes a delete
    marker left as its key's only version once the marker is that many days old, as S3 does
    (no ExpiredObjectDeleteMarker needed); a marker over a version stays."""
    srv = make_server(extra_args=["--lifecycle-day-seconds", "2"])
    s3 = boto_client(srv)
    bucket = new_bucket_name()
    s3.create_bucket(Bucket=bucket)
    s3.put_bucket_versioning(Bucket=bucket, VersioningConfiguration={"Status": "Enabled"})
    v = s3.put_object(Bucket=bucket, Key="logs/solo", Body=b"s")["VersionId"]
    s3.delete_object(Bucket=bucket, Key="logs/solo")
    s3.delete_object(Bucket=bucket, Key="logs/solo", VersionId=v)  # the marker left alone
    s3.put_object(Bucket=bucket, Key="logs/over", Body=b"o")
    s3.delete_object(Bucket=bucket, Key="logs/over")  # a marker over a version
    put_rules(s3, bucket, [{"ID": "logs", "Filter": {"Prefix": "logs/"}, "Status": "Enabled",
                            "Expiration": {"Days": 1}}])

    def markers():
        r = s3.list_object_versions(Bucket=bucket)
        return {m["Key"] for m in r.get("DeleteMarkers", [])}
    assert wait_for(lambda: "logs/solo" not in markers()), srv.log_tail()
    assert 'logs/solo version' in srv.log_tail(200)
    assert markers() == {"logs/over"}


def test_runner_in_a_versioned_bucket(make_server):
    """Expiration puts a delete marker on top; NoncurrentVersionExpiration then removes the
    old versions (keeping NewerNoncurrentVersions of them), and ExpiredObjectDeleteMarker the
    marker left alone: in the end the key has no version at all, except the kept one."""
    srv = make_server(extra_args=["--lifecycle-day-seconds", "2"])
    s3 = boto_client(srv)
    bucket = new_bucket_name()
    s3.create_bucket(Bucket=bucket)
    s3.put_bucket_versioning(Bucket=bucket, VersioningConfiguration={"Status": "Enabled"})
    for body in (b"v1", b"v2", b"v3"):
        s3.put_object(Bucket=bucket, Key="k", Body=body)
    s3.put_object(Bucket=bucket, Key="gone", Body=b"g1")
    s3.delete_object(Bucket=bucket, Key="gone")  # a marker over one version
    solo = s3.put_object(Bucket=bucket, Key="solo", Body=b"s")["VersionId"]
    s3.delete_object(Bucket=bucket, Key="solo")  # a marker...
    s3.delete_object(Bucket=bucket, Key="solo", VersionId=solo)  # ...left alone
    put_rules(s3, bucket, [
        {"ID": "cur", "Filter": {"Prefix": "k"}, "Status": "Enabled", "Expiration": {"Days": 1}},
        {"ID": "old", "Filter": {}, "Status": "Enabled",
         "NoncurrentVersionExpiration": {"NoncurrentDays": 1, "NewerNoncurrentVersions": 1}},
        {"ID": "markers", "Filter": {}, "Status": "Enabled",
         "Expiration": {"ExpiredObjectDeleteMarker": True}},
    ])

    def versions(key):
        r = s3.list_object_versions(Bucket=bucket, Prefix=key)
        return ([v for v in r.get("Versions", []) if v["Key"] == key],
                [m for m in r.get("DeleteMarkers", []) if m["Key"] == key])
    # k: a marker on top of v3; then v1 and v2 beyond the one newest noncurrent kept go.
    assert wait_for(lambda: (lambda v, m: len(m) == 1 and len(v) == 1)(*versions("k")),
                    timeout=40), (versions("k"), srv.log_tail())
    kept = versions("k")[0][0]
    assert s3.get_object(Bucket=bucket, Key="k", VersionId=kept["VersionId"])["Body"].read() == b"v3"
    # solo: the marker left alone goes.
    assert wait_for(lambda: versions("solo") == ([], []), timeout=40), srv.log_tail()
    # gone: NewerNoncurrentVersions 1 keeps g1, so its marker is not alone and stays; k's
    # marker has v3 under it and stays too.
    v, m = versions("gone")
    assert len(v) == 1 and len(m) == 1
    assert len(versions("k")[1]) == 1
