"""Bucket versioning as AWS S3 answers it (boto3): PutBucketVersioning and
GetBucketVersioning, version ids on every write while enabled, the "null" version
while suspended, GET/HEAD/DELETE/CopyObject by versionId, delete markers,
ListObjectVersions and DeleteObjects with versions, multipart uploads as versions.
Runs on both backends (S3RDMA_TEST_BACKEND=rados: docs/storage.md, "Versioning on
RADOS")."""
import xml.etree.ElementTree as ET

import pytest
from botocore.exceptions import ClientError

from s3r_itest import S3_NS, assert_error, client_error, error_fields, raw_request


def enable(s3, bucket, status="Enabled"):
    s3.put_bucket_versioning(Bucket=bucket, VersioningConfiguration={"Status": status})


def body(s3, bucket, key, vid=None):
    kw = {"VersionId": vid} if vid else {}
    return s3.get_object(Bucket=bucket, Key=key, **kw)["Body"].read()


def test_versioning_configuration(server, s3, s3_user2, bucket):
    assert "Status" not in s3.get_bucket_versioning(Bucket=bucket)
    enable(s3, bucket)
    assert s3.get_bucket_versioning(Bucket=bucket)["Status"] == "Enabled"
    enable(s3, bucket, "Suspended")
    assert s3.get_bucket_versioning(Bucket=bucket)["Status"] == "Suspended"
    s3.put_bucket_versioning(Bucket=bucket, VersioningConfiguration={
        "Status": "Enabled", "MFADelete": "Disabled"})
    assert s3.get_bucket_versioning(Bucket=bucket)["Status"] == "Enabled"
    # MFA delete needs MFA devices: refused, nothing changes
    with pytest.raises(ClientError) as ei:
        s3.put_bucket_versioning(Bucket=bucket, MFA="123456 000000", VersioningConfiguration={
            "Status": "Suspended", "MFADelete": "Enabled"})
    assert_error(ei, "NotImplemented", 501)
    assert s3.get_bucket_versioning(Bucket=bucket)["Status"] == "Enabled"
    for doc in [b"<VersioningConfiguration><Status>On</Status></VersioningConfiguration>",
                b"<VersioningConfiguration></VersioningConfiguration>"]:
        r = raw_request(server, "PUT", f"/{bucket}", query=[("versioning", None)], body=doc)
        assert r.status == 400, r.body
        assert error_fields(r.body)[1]["Code"] == "IllegalVersioningConfigurationException"
    r = raw_request(server, "PUT", f"/{bucket}", query=[("versioning", None)], body=b"<x")
    assert r.status == 400 and error_fields(r.body)[1]["Code"] == "MalformedXML"
    # only the owner
    with pytest.raises(ClientError) as ei:
        s3_user2.put_bucket_versioning(Bucket=bucket,
                                       VersioningConfiguration={"Status": "Suspended"})
    assert client_error(ei)[1] == 403
    assert s3.get_bucket_versioning(Bucket=bucket)["Status"] == "Enabled"


def test_versions_of_a_key(s3, bucket):
    s3.put_object(Bucket=bucket, Key="k", Body=b"before")  # the null version
    enable(s3, bucket)
    v1 = s3.put_object(Bucket=bucket, Key="k", Body=b"one")["VersionId"]
    v2 = s3.put_object(Bucket=bucket, Key="k", Body=b"two")["VersionId"]
    assert v1 != v2 and "null" not in (v1, v2)
    r = s3.get_object(Bucket=bucket, Key="k")
    assert r["Body"].read() == b"two" and r["VersionId"] == v2
    assert body(s3, bucket, "k", v1) == b"one"
    assert body(s3, bucket, "k", "null") == b"before"
    h = s3.head_object(Bucket=bucket, Key="k", VersionId=v1)
    assert h["ContentLength"] == 3 and h["VersionId"] == v1
    # an id of this server's shape that names nothing
    with pytest.raises(ClientError) as ei:
        s3.get_object(Bucket=bucket, Key="k", VersionId="0" * 31 + "9")
    assert_error(ei, "NoSuchVersion", 404)
    # CopyObject of an old version becomes the newest
    r = s3.copy_object(Bucket=bucket, Key="k",
                       CopySource={"Bucket": bucket, "Key": "k", "VersionId": v1})
    assert r["CopySourceVersionId"] == v1 and r["VersionId"] not in (v1, v2)
    assert body(s3, bucket, "k") == b"one"
    vs = s3.list_object_versions(Bucket=bucket)["Versions"]
    assert [(v["VersionId"], v["IsLatest"]) for v in vs] == [
        (r["VersionId"], True), (v2, False), (v1, False), ("null", False)]
    assert [v["Size"] for v in vs] == [3, 3, 3, 6]


def test_delete_markers(server, s3, bucket):
    enable(s3, bucket)
    v1 = s3.put_object(Bucket=bucket, Key="k", Body=b"data")["VersionId"]
    r = s3.delete_object(Bucket=bucket, Key="k")
    assert r["ResponseMetadata"]["HTTPStatusCode"] == 204 and r["DeleteMarker"] is True
    marker = r["VersionId"]
    assert marker not in ("null", v1)
    # the latest is a marker: 404 with x-amz-delete-marker
    r = raw_request(server, "GET", f"/{bucket}/k")
    assert r.status == 404 and error_fields(r.body)[1]["Code"] == "NoSuchKey"
    assert r.headers["x-amz-delete-marker"] == "true"
    assert r.headers["x-amz-version-id"] == marker
    r = raw_request(server, "HEAD", f"/{bucket}/k")
    assert r.status == 404 and r.headers["x-amz-delete-marker"] == "true"
    # the marker by id: 405
    r = raw_request(server, "GET", f"/{bucket}/k", query=[("versionId", marker)])
    assert r.status == 405 and error_fields(r.body)[1]["Code"] == "MethodNotAllowed"
    assert r.headers["x-amz-delete-marker"] == "true" and "last-modified" in r.headers
    r = raw_request(server, "HEAD", f"/{bucket}/k", query=[("versionId", marker)])
    assert r.status == 405
    # a copy from the marker
    with pytest.raises(ClientError) as ei:
        s3.copy_object(Bucket=bucket, Key="c", CopySource={"Bucket": bucket, "Key": "k"})
    assert_error(ei, "NoSuchKey", 404)
    with pytest.raises(ClientError) as ei:
        s3.copy_object(Bucket=bucket, Key="c",
                       CopySource={"Bucket": bucket, "Key": "k", "VersionId": marker})
    assert_error(ei, "InvalidRequest", 400)
    # the old version is still there, and listings agree
    assert body(s3, bucket, "k", v1) == b"data"
    assert "Contents" not in s3.list_objects_v2(Bucket=bucket)
    r = s3.list_object_versions(Bucket=bucket)
    assert [(m["VersionId"], m["IsLatest"]) for m in r["DeleteMarkers"]] == [(marker, True)]
    assert [(v["VersionId"], v["IsLatest"]) for v in r["Versions"]] == [(v1, False)]
    # the bucket is not empty while it holds versions
    with pytest.raises(ClientError) as ei:
        s3.delete_bucket(Bucket=bucket)
    assert_error(ei, "BucketNotEmpty", 409)
    # deleting the marker brings the object back
    r = s3.delete_object(Bucket=bucket, Key="k", VersionId=marker)
    assert r["DeleteMarker"] is True and r["VersionId"] == marker
    assert body(s3, bucket, "k") == b"data"
    # deleting a version that does not exist succeeds, as AWS answers (idempotent)
    r = s3.delete_object(Bucket=bucket, Key="k", VersionId=marker)
    assert r["ResponseMetadata"]["HTTPStatusCode"] == 204 and r["VersionId"] == marker
    assert "DeleteMarker" not in r and body(s3, bucket, "k") == b"data"
    # deleting the current version by id: gone, no marker
    r = s3.delete_object(Bucket=bucket, Key="k", VersionId=v1)
    assert r["VersionId"] == v1 and "DeleteMarker" not in r
    assert s3.list_object_versions(Bucket=bucket).get("Versions") is None


def test_suspended_replaces_the_null_version(s3, bucket):
    enable(s3, bucket)
    v1 = s3.put_object(Bucket=bucket, Key="k", Body=b"kept")["VersionId"]
    enable(s3, bucket, "Suspended")
    r = s3.put_object(Bucket=bucket, Key="k", Body=b"null-1")
    assert "VersionId" not in r or r["VersionId"] == "null"
    s3.put_object(Bucket=bucket, Key="k", Body=b"null-2")
    vs = s3.list_object_versions(Bucket=bucket)["Versions"]
    assert [(v["VersionId"], v["IsLatest"]) for v in vs] == [("null", True), (v1, False)]
    assert body(s3, bucket, "k") == b"null-2" and body(s3, bucket, "k", v1) == b"kept"
    r = s3.get_object(Bucket=bucket, Key="k")
    assert r["VersionId"] == "null"
    # a delete while suspended: a null delete marker replaces the null version
    r = s3.delete_object(Bucket=bucket, Key="k")
    assert r["DeleteMarker"] is True and r["VersionId"] == "null"
    r = s3.list_object_versions(Bucket=bucket)
    assert [m["VersionId"] for m in r["DeleteMarkers"]] == ["null"]
    assert [v["VersionId"] for v in r["Versions"]] == [v1]


def test_suspended_write_replaces_an_older_null_version(s3, bucket):
    """The null version is not the latest (a version came after it): a write while
    suspended removes it from the history and becomes the latest null version."""
    s3.put_object(Bucket=bucket, Key="k", Body=b"before")  # the null version
    enable(s3, bucket)
    v1 = s3.put_object(Bucket=bucket, Key="k", Body=b"one")["VersionId"]
    enable(s3, bucket, "Suspended")
    s3.put_object(Bucket=bucket, Key="k", Body=b"after")
    vs = s3.list_object_versions(Bucket=bucket)["Versions"]
    assert [(v["VersionId"], v["IsLatest"], v["Size"]) for v in vs] == [
        ("null", True, 5), (v1, False, 3)]
    assert body(s3, bucket, "k", "null") == b"after" and body(s3, bucket, "k", v1) == b"one"
    # removing the null version by id: the one before becomes the latest
    s3.delete_object(Bucket=bucket, Key="k", VersionId="null")
    assert body(s3, bucket, "k") == b"one"


def test_list_object_versions_pages(s3, bucket):
    enable(s3, bucket)
    want = []
    for k in ["a", "b/1", "b/2", "c"]:
        ids = [s3.put_object(Bucket=bucket, Key=k, Body=b"x")["VersionId"] for _ in range(3)]
        want += [(k, v) for v in reversed(ids)]
    dm = s3.delete_object(Bucket=bucket, Key="c")["VersionId"]
    want.insert(9, ("c", dm))
    seen, kw = [], {}
    while True:
        r = s3.list_object_versions(Bucket=bucket, MaxKeys=4, **kw)
        page = sorted(r.get("Versions", []) + r.get("DeleteMarkers", []),
                      key=lambda v: [x[1] for x in want].index(v["VersionId"]))
        seen += [(v["Key"], v["VersionId"]) for v in page]
        if not r["IsTruncated"]:
            break
        assert (r["NextKeyMarker"], r["NextVersionIdMarker"]) == seen[-1]
        kw = {"KeyMarker": r["NextKeyMarker"], "VersionIdMarker": r["NextVersionIdMarker"]}
    assert seen == want
    # a key marker alone resumes after every version of that key
    r = s3.list_object_versions(Bucket=bucket, KeyMarker="b/1")
    assert [v["Key"] for v in r["Versions"]][:3] == ["b/2"] * 3
    # delimiter and prefix as ListObjects has them
    r = s3.list_object_versions(Bucket=bucket, Delimiter="/")
    assert [p["Prefix"] for p in r["CommonPrefixes"]] == ["b/"]
    assert {v["Key"] for v in r["Versions"]} == {"a", "c"}
    r = s3.list_object_versions(Bucket=bucket, Prefix="b/", MaxKeys=2)
    assert [v["Key"] for v in r["Versions"]] == ["b/1", "b/1"] and r["IsTruncated"]


def test_list_object_versions_xml(server, s3, bucket):
    enable(s3, bucket)
    s3.put_object(Bucket=bucket, Key="a b", Body=b"x")
    s3.delete_object(Bucket=bucket, Key="a b")
    r = raw_request(server, "GET", f"/{bucket}",
                    query=[("versions", None), ("encoding-type", "url")])
    assert r.status == 200, r.body
    root = ET.fromstring(r.body)
    children = [c.tag.replace(S3_NS, "") for c in root if c.tag.endswith(("Version",
                                                                           "DeleteMarker"))]
    assert children == ["DeleteMarker", "Version"]
    dm = root.find(f"{S3_NS}DeleteMarker")
    assert dm.findtext(f"{S3_NS}Key") == "a%20b" and dm.findtext(f"{S3_NS}IsLatest") == "true"
    assert dm.find(f"{S3_NS}Size") is None and dm.find(f"{S3_NS}Owner") is not None


def test_delete_objects_with_versions(s3, bucket):
    enable(s3, bucket)
    va = s3.put_object(Bucket=bucket, Key="a", Body=b"x")["VersionId"]
    s3.put_object(Bucket=bucket, Key="b", Body=b"y")
    r = s3.delete_objects(Bucket=bucket, Delete={"Objects": [
        {"Key": "a", "VersionId": va}, {"Key": "b"},
        {"Key": "c", "VersionId": "0" * 31 + "1"}]})
    deleted = {d["Key"]: d for d in r["Deleted"]}
    assert deleted["a"]["VersionId"] == va and "DeleteMarker" not in deleted["a"]
    assert deleted["b"]["DeleteMarker"] is True and deleted["b"]["DeleteMarkerVersionId"]
    assert deleted["c"]["VersionId"] == "0" * 31 + "1" and "Errors" not in r
    mv = deleted["b"]["DeleteMarkerVersionId"]
    r = s3.delete_objects(Bucket=bucket, Delete={"Objects": [{"Key": "b", "VersionId": mv}]})
    assert r["Deleted"][0]["DeleteMarker"] is True
    assert r["Deleted"][0]["DeleteMarkerVersionId"] == mv
    assert body(s3, bucket, "b") == b"y"


def test_multipart_upload_becomes_a_version(s3, bucket):
    enable(s3, bucket)
    v1 = s3.put_object(Bucket=bucket, Key="m", Body=b"small")["VersionId"]
    uid = s3.create_multipart_upload(Bucket=bucket, Key="m")["UploadId"]
    part = b"p" * (5 * 1024 * 1024)
    e1 = s3.upload_part(Bucket=bucket, Key="m", UploadId=uid, PartNumber=1, Body=part)["ETag"]
    e2 = s3.upload_part(Bucket=bucket, Key="m", UploadId=uid, PartNumber=2, Body=b"t")["ETag"]
    r = s3.complete_multipart_upload(Bucket=bucket, Key="m", UploadId=uid, MultipartUpload={
        "Parts": [{"PartNumber": 1, "ETag": e1}, {"PartNumber": 2, "ETag": e2}]})
    v2 = r["VersionId"]
    assert v2 not in ("null", v1)
    assert body(s3, bucket, "m") == part + b"t"
    assert body(s3, bucket, "m", v1) == b"small"
    h = s3.head_object(Bucket=bucket, Key="m", VersionId=v2, PartNumber=2)
    assert h["ContentLength"] == 1 and h["VersionId"] == v2


def test_unversioned_bucket_answers_unchanged(server, s3, bucket):
    """No x-amz-version-id on writes or reads of a bucket that never had versioning."""
    r = s3.put_object(Bucket=bucket, Key="k", Body=b"x")
    assert "VersionId" not in r
    r = raw_request(server, "GET", f"/{bucket}/k")
    assert r.status == 200 and "x-amz-version-id" not in r.headers
    r = s3.delete_object(Bucket=bucket, Key="k")
    assert "VersionId" not in r and "DeleteMarker" not in r
    assert s3.list_object_versions(Bucket=bucket).get("Versions") is None


def test_delete_marker_headers_need_access(server, s3, bucket):
    """Another user learns nothing about a private bucket's delete markers."""
    enable(s3, bucket)
    s3.put_object(Bucket=bucket, Key="k", Body=b"x")
    marker = s3.delete_object(Bucket=bucket, Key="k")["VersionId"]
    from s3r_itest import USERS
    for q in ([], [("versionId", marker)]):
        r = raw_request(server, "GET", f"/{bucket}/k", query=q, user=USERS[1])
        assert r.status == 403, (q, r.status, r.body)
        assert "x-amz-delete-marker" not in r.headers and "x-amz-version-id" not in r.headers


def test_object_acl_by_version(s3, bucket):
    enable(s3, bucket)
    v1 = s3.put_object(Bucket=bucket, Key="k", Body=b"1", ACL="public-read")["VersionId"]
    v2 = s3.put_object(Bucket=bucket, Key="k", Body=b"2")["VersionId"]
    grants = s3.get_object_acl(Bucket=bucket, Key="k", VersionId=v1)["Grants"]
    assert any(g["Permission"] == "READ" for g in grants)
    assert len(s3.get_object_acl(Bucket=bucket, Key="k")["Grants"]) == 1
    s3.put_object_acl(Bucket=bucket, Key="k", VersionId=v2, ACL="public-read")
    # An older version's ACL changes too, as in S3, and only that version's.
    r = s3.put_object_acl(Bucket=bucket, Key="k", VersionId=v1, ACL="private")
    assert r["ResponseMetadata"]["HTTPHeaders"]["x-amz-version-id"] == v1
    assert len(s3.get_object_acl(Bucket=bucket, Key="k", VersionId=v1)["Grants"]) == 1
    grants = s3.get_object_acl(Bucket=bucket, Key="k", VersionId=v2)["Grants"]
    assert any(g["Permission"] == "READ" for g in grants)
    assert s3.get_object(Bucket=bucket, Key="k", VersionId=v1)["Body"].read() == b"1"
    with pytest.raises(ClientError) as ei:
        s3.get_object_acl(Bucket=bucket, Key="k", VersionId="0" * 31 + "5")
    assert_error(ei, "NoSuchVersion", 404)


def test_object_attributes_by_version(s3, bucket):
    enable(s3, bucket)
    v1 = s3.put_object(Bucket=bucket, Key="k", Body=b"one")["VersionId"]
    v2 = s3.put_object(Bucket=bucket, Key="k", Body=b"three")["VersionId"]
    r = s3.get_object_attributes(Bucket=bucket, Key="k", ObjectAttributes=["ObjectSize"])
    assert r["VersionId"] == v2 and r["ObjectSize"] == 5
    r = s3.get_object_attributes(Bucket=bucket, Key="k", VersionId=v1,
                                 ObjectAttributes=["ObjectSize"])
    assert r["VersionId"] == v1 and r["ObjectSize"] == 3


def test_object_tagging_by_version(s3, bucket):
    """PutObjectTagging and DeleteObjectTagging with versionId change that version only,
    as in S3; the reply names it once."""
    enable(s3, bucket)
    v1 = s3.put_object(Bucket=bucket, Key="k", Body=b"1")["VersionId"]
    v2 = s3.put_object(Bucket=bucket, Key="k", Body=b"2", Tagging="now=2")["VersionId"]
    r = s3.put_object_tagging(Bucket=bucket, Key="k", VersionId=v1,
                              Tagging={"TagSet": [{"Key": "old", "Value": "1"}]})
    assert r["VersionId"] == v1
    assert r["ResponseMetadata"]["HTTPHeaders"]["x-amz-version-id"] == v1  # once
    assert s3.get_object_tagging(Bucket=bucket, Key="k", VersionId=v1)["TagSet"] == [
        {"Key": "old", "Value": "1"}]
    assert s3.get_object_tagging(Bucket=bucket, Key="k")["TagSet"] == [
        {"Key": "now", "Value": "2"}]
    s3.delete_object_tagging(Bucket=bucket, Key="k", VersionId=v1)
    assert s3.get_object_tagging(Bucket=bucket, Key="k", VersionId=v1)["TagSet"] == []
    assert s3.get_object_tagging(Bucket=bucket, Key="k", VersionId=v2)["TagSet"] == [
        {"Key": "now", "Value": "2"}]
