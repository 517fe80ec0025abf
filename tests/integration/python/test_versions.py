"""Object versions through s3rdma.Client (libs3rdma) over each transport, held to
boto3's view of the same bucket: the version ids PUT, multipart Complete, CopyObject and
DELETE return, GET/HEAD of a version by id, DELETE of a version, delete markers, and
ListObjectVersions with its paging (docs/client.md "Versions")."""
import pytest
import s3rdma
from conftest import TRANSPORTS

MiB = 1024 * 1024


@pytest.fixture
def vbucket(rbucket, boto):
    boto.put_bucket_versioning(Bucket=rbucket,
                               VersioningConfiguration={"Status": "Enabled"})
    return rbucket


def boto_versions(boto, bucket, prefix=""):
    """(versions, delete markers) as boto3 lists them: [(key, version_id, is_latest,
    size)] and [(key, version_id, is_latest)], each in the listing's order."""
    vers, markers = [], []
    for page in boto.get_paginator("list_object_versions").paginate(Bucket=bucket,
                                                                     Prefix=prefix):
        vers += [(v["Key"], v["VersionId"], v["IsLatest"], v["Size"])
                 for v in page.get("Versions", [])]
        markers += [(d["Key"], d["VersionId"], d["IsLatest"])
                    for d in page.get("DeleteMarkers", [])]
    return vers, markers


def ours(pages):
    """The same split of s3rdma's pages (which keep both kinds in one list)."""
    entries = [v for p in pages for v in p.versions]
    return ([(v.key, v.version_id, v.is_latest, v.size) for v in entries if not v.delete_marker],
            [(v.key, v.version_id, v.is_latest) for v in entries if v.delete_marker])


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_versions_round_trip_as_boto_sees_them(client, vbucket, boto, transport):
    c = client(transport)
    v1 = c.put_object(vbucket, "k", b"one")
    v2 = c.put_object(vbucket, "k", b"two-two")
    assert v1 and v2 and v1 != v2
    assert {v["VersionId"] for v in boto.list_object_versions(Bucket=vbucket)["Versions"]} \
        == {v1, v2}
    # GET and HEAD by version, into bytes and into a buffer
    assert c.get_object(vbucket, "k") == b"two-two"
    assert c.get_object(vbucket, "k", version_id=v1) == b"one"
    assert c.get_object(vbucket, "k", range=(1, 3), version_id=v1) == b"ne"
    buf = bytearray(16)
    assert c.get_object_into(vbucket, "k", buf, version_id=v1) == 3 and buf[:3] == b"one"
    h = c.head_object(vbucket, "k", version_id=v1)
    assert (h.size, h.version_id) == (3, v1)
    assert c.head_object(vbucket, "k").version_id == v2
    # a copy of the old version becomes the newest
    v3 = c.copy_object(vbucket, "k", vbucket, "k", src_version_id=v1)
    assert v3 not in (None, v1, v2)
    assert boto.get_object(Bucket=vbucket, Key="k")["Body"].read() == b"one"
    assert boto.head_object(Bucket=vbucket, Key="k")["VersionId"] == v3
    # DELETE writes a delete marker; the versions stay
    d = c.delete_object(vbucket, "k")
    assert d.delete_marker and d.version_id
    with pytest.raises(s3rdma.NoSuchKey):
        c.get_object(vbucket, "k")
    assert c.get_object(vbucket, "k", version_id=v2) == b"two-two"
    with pytest.raises(s3rdma.S3Error) as e:
        c.get_object(vbucket, "k", version_id=d.version_id)
    assert e.value.code == "MethodNotAllowed"
    mine = [v for p in c.list_object_versions(vbucket) for v in p.versions]
    assert [(v.delete_marker, v.is_latest) for v in mine] == [(True, True), (False, False),
                                                             (False, False), (False, False)]
    assert ours(c.list_object_versions(vbucket)) == boto_versions(boto, vbucket)
    # DELETE by version: the marker, then a version, removed for good
    d2 = c.delete_object(vbucket, "k", version_id=d.version_id)
    assert (d2.version_id, d2.delete_marker) == (d.version_id, True)
    d3 = c.delete_object(vbucket, "k", version_id=v2)
    assert (d3.version_id, d3.delete_marker) == (v2, False)
    assert c.get_object(vbucket, "k") == b"one"
    assert ours(c.list_object_versions(vbucket)) == boto_versions(boto, vbucket)
    assert [v[1] for v in ours(c.list_object_versions(vbucket))[0]] == [v3, v1]
    with pytest.raises(s3rdma.S3Error) as e:
        c.get_object(vbucket, "k", version_id=v2)
    assert e.value.code == "NoSuchVersion"


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_multipart_and_stream_return_their_version(client, vbucket, boto, transport, tmp_path):
    c = client(transport, multipart_threshold="5MiB", part_size="5MiB")
    data = bytes(range(256)) * (11 * MiB // 256)
    vid = c.put_object(vbucket, "big", data)
    assert vid == boto.head_object(Bucket=vbucket, Key="big")["VersionId"]
    p = tmp_path / "f"
    p.write_bytes(data[:6 * MiB])
    with open(p, "rb") as f:
        vid2 = c.put_object(vbucket, "big", f)
    assert vid2 not in (None, vid)
    assert boto.head_object(Bucket=vbucket, Key="big")["VersionId"] == vid2
    assert c.get_object(vbucket, "big", version_id=vid) == data


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_list_object_versions_pages(client, vbucket, boto, transport):
    c = client(transport)
    for i in range(4):
        for k in ("a/x", "a/y", "b z", "c\n"):
            c.put_object(vbucket, k, b"%d" % i)
    c.delete_object(vbucket, "a/y")
    want = boto_versions(boto, vbucket)
    assert (len(want[0]), len(want[1])) == (16, 1)
    for size in (1, 3, 1000):
        pages = list(c.list_object_versions(vbucket, page_size=size))
        assert ours(pages) == want, size
        assert all(len(p.versions) <= size for p in pages)
        assert len(pages) >= 17 // size
    # a delimiter: common prefixes, as boto3 sees them
    page = next(c.list_object_versions(vbucket, delimiter="/"))
    b = boto.list_object_versions(Bucket=vbucket, Delimiter="/")
    assert page.prefixes == [p["Prefix"] for p in b["CommonPrefixes"]] == ["a/"]
    assert sorted(v.key for v in page.versions) == ["b z"] * 4 + ["c\n"] * 4
    # resuming from the markers of a page
    first = next(c.list_object_versions(vbucket, page_size=5))
    last = first.versions[-1]
    rest = ours(c.list_object_versions(vbucket, key_marker=last.key,
                                       version_id_marker=last.version_id))
    head = ours([first])
    assert (head[0] + rest[0], head[1] + rest[1]) == want


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_unversioned_bucket_names_no_version(client, rbucket, transport):
    c = client(transport)
    assert c.put_object(rbucket, "k", b"x") is None
    assert c.head_object(rbucket, "k").version_id is None
    assert c.get_object(rbucket, "k", version_id="null") == b"x"
    d = c.delete_object(rbucket, "k")
    assert (d.version_id, d.delete_marker) == (None, False)
    v = list(c.list_object_versions(rbucket))
    assert v[0].versions == []


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_configuration_documents(client, rbucket, boto, transport):
    """get/put/delete of object tagging, bucket versioning, lifecycle and more through
    libs3rdma's s3r_subresource_* (native opcodes 21-50 on the native transport), as boto3
    sees them; S3's errors come through with their codes."""
    c = client(transport)
    before = c.stats()["native_ops"]
    c.put_bucket_config(rbucket, "versioning",
                        b"<VersioningConfiguration><Status>Enabled</Status>"
                        b"</VersioningConfiguration>")
    assert boto.get_bucket_versioning(Bucket=rbucket)["Status"] == "Enabled"
    assert b"<Status>Enabled</Status>" in c.get_bucket_config(rbucket, "versioning")
    v1 = c.put_object(rbucket, "k", b"1")
    v2 = c.put_object(rbucket, "k", b"2")
    tags = (b"<Tagging><TagSet><Tag><Key>team</Key><Value>vision</Value></Tag></TagSet>"
            b"</Tagging>")
    c.put_object_config(rbucket, "k", "tagging", tags)
    assert boto.get_object_tagging(Bucket=rbucket, Key="k")["TagSet"] == [
        {"Key": "team", "Value": "vision"}]
    assert b"<Key>team</Key>" in c.get_object_config(rbucket, "k", "tagging", version_id=v2)
    assert b"<Key>team</Key>" not in c.get_object_config(rbucket, "k", "tagging",
                                                         version_id=v1)
    c.delete_object_config(rbucket, "k", "tagging")
    assert boto.get_object_tagging(Bucket=rbucket, Key="k")["TagSet"] == []
    with pytest.raises(s3rdma.S3Error) as e:
        c.get_bucket_config(rbucket, "lifecycle")
    assert (e.value.code, e.value.http_status) == ("NoSuchLifecycleConfiguration", 404)
    c.put_bucket_config(rbucket, "lifecycle",
                        b"<LifecycleConfiguration><Rule><ID>old</ID><Filter><Prefix>tmp/"
                        b"</Prefix></Filter><Status>Enabled</Status><Expiration><Days>3</Days>"
                        b"</Expiration></Rule></LifecycleConfiguration>")
    rules = boto.get_bucket_lifecycle_configuration(Bucket=rbucket)["Rules"]
    assert [(r["ID"], r["Expiration"]["Days"]) for r in rules] == [("old", 3)]
    assert b"<ID>old</ID>" in c.get_bucket_config(rbucket, "lifecycle")
    c.delete_bucket_config(rbucket, "lifecycle")
    with pytest.raises(boto.exceptions.ClientError) as ce:
        boto.get_bucket_lifecycle_configuration(Bucket=rbucket)
    assert ce.value.response["Error"]["Code"] == "NoSuchLifecycleConfiguration"
    with pytest.raises(s3rdma.S3Error) as e:
        c.put_bucket_config(rbucket, "versioning", b"<VersioningConfiguration><Status>")
    assert e.value.http_status == 400
    # a bucket made without object lock: retention and legal hold are refused as S3 does
    with pytest.raises(s3rdma.S3Error) as e:
        c.get_object_config(rbucket, "k", "legal-hold")
    assert e.value.http_status == 400
    with pytest.raises(ValueError):
        c.get_bucket_config(rbucket, "retention")
    with pytest.raises(s3rdma.S3Error) as e:
        c.delete_bucket_config(rbucket, "versioning")  # S3 has no such DELETE
    assert e.value.status == "S3R_ERR_UNSUPPORTED"
    if transport == "native":
        assert c.stats()["native_ops"] >= before + 11  # the calls that succeeded


def test_retention_and_legal_hold_documents(client, boto):
    """Object lock's per-version documents over native, read back by boto3."""
    import datetime
    from s3r_itest import new_bucket_name
    b = new_bucket_name("pylock")
    boto.create_bucket(Bucket=b, ObjectLockEnabledForBucket=True)
    c = client("native")
    vid = c.put_object(b, "k", b"locked")
    c.put_object_config(b, "k", "legal-hold", b"<LegalHold><Status>ON</Status></LegalHold>",
                        version_id=vid)
    assert boto.get_object_legal_hold(Bucket=b, Key="k")["LegalHold"]["Status"] == "ON"
    until = (datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(days=1)) \
        .strftime("%Y-%m-%dT%H:%M:%SZ")
    c.put_object_config(b, "k", "retention", (
        "<Retention><Mode>GOVERNANCE</Mode><RetainUntilDate>" + until +
        "</RetainUntilDate></Retention>").encode())
    r = boto.get_object_retention(Bucket=b, Key="k")["Retention"]
    assert r["Mode"] == "GOVERNANCE"
    assert b"<Mode>GOVERNANCE</Mode>" in c.get_object_config(b, "k", "retention")
    with pytest.raises(s3rdma.AccessDenied):
        c.delete_object(b, "k", version_id=vid)
    c.put_object_config(b, "k", "legal-hold", b"<LegalHold><Status>OFF</Status></LegalHold>")
    assert b"OFF" in c.get_object_config(b, "k", "legal-hold")
