"""The versions API of an unversioned bucket and canned ACLs, as AWS S3 answers them.

Every object of a bucket that never had versioning is its one version, "null"
(versioned buckets: test_s3_versioning.py). ACLs are canned
(private, public-read, public-read-write, authenticated-read, and for objects
bucket-owner-read / bucket-owner-full-control): anonymous and other users'
requests are allowed exactly where the ACL grants it."""
import socket
import xml.etree.ElementTree as ET

import botocore
import pytest
from botocore.exceptions import ClientError

from s3r_itest import (S3_NS, USERS, assert_error, boto_client, client_error, error_fields,
                       recv_http_response, sign_headers, uri_encode,
                       new_bucket_name, raw_request)

ALL_USERS = "http://acs.amazonaws.com/groups/global/AllUsers"
AUTH_USERS = "http://acs.amazonaws.com/groups/global/AuthenticatedUsers"
AWS_VERSION_ID = "3HL4kqtJlcpXroDTDmJ-rmSpXd3dIbrH"  # AWS's shape, 32 URL-safe characters


@pytest.fixture(scope="module")
def anon(server):
    return boto_client(server, signature_version=botocore.UNSIGNED)


def grants_of(acl):
    """{(grantee, permission)}: grantee the user ID or the group URI."""
    return {(g["Grantee"].get("ID") or g["Grantee"].get("URI"), g["Permission"])
            for g in acl["Grants"]}


# ---- ListObjectVersions -----------------------------------------------------------------

def test_list_object_versions_shows_every_object_as_null_latest(s3, bucket):
    for k in ["a", "b/1", "b/2", "c"]:
        s3.put_object(Bucket=bucket, Key=k, Body=k.encode())
    r = s3.list_object_versions(Bucket=bucket)
    assert [v["Key"] for v in r["Versions"]] == ["a", "b/1", "b/2", "c"]
    for v in r["Versions"]:
        assert v["VersionId"] == "null" and v["IsLatest"] is True
        assert v["Size"] == len(v["Key"]) and v["Owner"]["ID"] == USERS[0][0]
        assert v["ETag"].startswith('"')
    assert "DeleteMarkers" not in r and r["IsTruncated"] is False

    r = s3.list_object_versions(Bucket=bucket, Delimiter="/")
    assert [v["Key"] for v in r["Versions"]] == ["a", "c"]
    assert [p["Prefix"] for p in r["CommonPrefixes"]] == ["b/"]
    r = s3.list_object_versions(Bucket=bucket, Prefix="b/")
    assert [v["Key"] for v in r["Versions"]] == ["b/1", "b/2"]


def test_list_object_versions_pages_with_key_and_version_markers(s3, bucket):
    keys = [f"k{i:02d}" for i in range(7)]
    for k in keys:
        s3.put_object(Bucket=bucket, Key=k, Body=b"x")
    seen, kw = [], {}
    while True:
        r = s3.list_object_versions(Bucket=bucket, MaxKeys=3, **kw)
        seen += [v["Key"] for v in r.get("Versions", [])]
        if not r["IsTruncated"]:
            break
        assert r["NextKeyMarker"] == seen[-1] and r["NextVersionIdMarker"] == "null"
        kw = {"KeyMarker": r["NextKeyMarker"], "VersionIdMarker": r["NextVersionIdMarker"]}
    assert seen == keys
    # paginators (what cleanup tools use) walk it the same way
    pages = s3.get_paginator("list_object_versions").paginate(
        Bucket=bucket, PaginationConfig={"PageSize": 2})
    assert [v["Key"] for p in pages for v in p.get("Versions", [])] == keys


def test_list_object_versions_marker_and_encoding_errors(server, s3, bucket):
    s3.put_object(Bucket=bucket, Key="a b+c", Body=b"x")
    r = raw_request(server, "GET", f"/{bucket}",
                    query=[("versions", None), ("version-id-marker", "null")])
    assert r.status == 400 and error_fields(r.body)[1]["Code"] == "InvalidArgument"
    r = raw_request(server, "GET", f"/{bucket}",
                    query=[("versions", None), ("encoding-type", "url"),
                           ("key-marker", "a b"), ("prefix", "a ")])
    assert r.status == 200, r.body
    root = ET.fromstring(r.body)
    assert root.findtext(f"{S3_NS}Version/{S3_NS}Key") == "a%20b%2Bc"
    assert root.findtext(f"{S3_NS}KeyMarker") == "a%20b"
    assert root.findtext(f"{S3_NS}Prefix") == "a%20"
    assert root.findtext(f"{S3_NS}EncodingType") == "url"


def test_versioning_configuration(s3, bucket):
    """A bucket that never had versioning (test_s3_versioning.py turns it on)."""
    r = s3.get_bucket_versioning(Bucket=bucket)
    assert "Status" not in r and "MFADelete" not in r


def test_version_id_null_acts_on_the_object(s3, bucket):
    s3.put_object(Bucket=bucket, Key="k", Body=b"data")
    r = s3.get_object(Bucket=bucket, Key="k", VersionId="null")
    assert r["Body"].read() == b"data" and r["VersionId"] == "null"
    assert s3.head_object(Bucket=bucket, Key="k", VersionId="null")["ContentLength"] == 4
    r = s3.copy_object(Bucket=bucket, Key="k2", CopySource={"Bucket": bucket, "Key": "k",
                                                             "VersionId": "null"})
    assert r["CopySourceVersionId"] == "null"
    assert s3.get_object(Bucket=bucket, Key="k2")["Body"].read() == b"data"
    r = s3.delete_object(Bucket=bucket, Key="k", VersionId="null")
    assert r["ResponseMetadata"]["HTTPStatusCode"] == 204 and r["VersionId"] == "null"
    with pytest.raises(ClientError) as ei:
        s3.head_object(Bucket=bucket, Key="k")
    assert client_error(ei)[1] == 404


@pytest.mark.parametrize("vid,code,status", [
    (AWS_VERSION_ID, "NoSuchVersion", 404),
    ("0f8fad5b-d9cb-469f-a165-70867728950e", "NoSuchVersion", 404),
    ("not-a-version", "InvalidArgument", 400),
])
def test_other_version_ids(s3, bucket, vid, code, status):
    s3.put_object(Bucket=bucket, Key="k", Body=b"data")
    with pytest.raises(ClientError) as ei:
        s3.get_object(Bucket=bucket, Key="k", VersionId=vid)
    assert_error(ei, code, status)
    with pytest.raises(ClientError) as ei:
        s3.head_object(Bucket=bucket, Key="k", VersionId=vid)
    assert client_error(ei)[1] == status
    if code == "NoSuchVersion":  # a delete of a version that is not there succeeds (AWS)
        r = s3.delete_object(Bucket=bucket, Key="k", VersionId=vid)
        assert r["ResponseMetadata"]["HTTPStatusCode"] == 204 and r["VersionId"] == vid
    else:
        with pytest.raises(ClientError) as ei:
            s3.delete_object(Bucket=bucket, Key="k", VersionId=vid)
        assert_error(ei, code, status)
    with pytest.raises(ClientError) as ei:
        s3.copy_object(Bucket=bucket, Key="k2",
                       CopySource={"Bucket": bucket, "Key": "k", "VersionId": vid})
    assert_error(ei, code, status)
    # nothing was touched
    assert s3.get_object(Bucket=bucket, Key="k")["Body"].read() == b"data"


def test_delete_objects_with_version_ids(s3, bucket):
    for k in ["a", "b", "c"]:
        s3.put_object(Bucket=bucket, Key=k, Body=b"x")
    r = s3.delete_objects(Bucket=bucket, Delete={"Objects": [
        {"Key": "a", "VersionId": "null"}, {"Key": "b"}, {"Key": "c", "VersionId": AWS_VERSION_ID}]})
    deleted = {d["Key"]: d.get("VersionId") for d in r["Deleted"]}
    assert deleted == {"a": "null", "b": None, "c": AWS_VERSION_ID} and "Errors" not in r
    assert [o["Key"] for o in s3.list_objects_v2(Bucket=bucket)["Contents"]] == ["c"]


def test_bypass_governance_retention_is_accepted(s3, bucket):
    s3.put_object(Bucket=bucket, Key="k", Body=b"x")
    s3.delete_object(Bucket=bucket, Key="k", VersionId="null", BypassGovernanceRetention=True)
    s3.put_object(Bucket=bucket, Key="k", Body=b"x")
    r = s3.delete_objects(Bucket=bucket, BypassGovernanceRetention=True,
                          Delete={"Objects": [{"Key": "k", "VersionId": "null"}]})
    assert [d["Key"] for d in r["Deleted"]] == ["k"]


def test_cleanup_the_way_third_party_tools_do(s3):
    """ListObjectVersions + DeleteObjects(VersionId) + DeleteBucket, with an upload left over."""
    name = new_bucket_name()
    s3.create_bucket(Bucket=name)
    for i in range(5):
        s3.put_object(Bucket=name, Key=f"d/{i}", Body=b"x")
    s3.create_multipart_upload(Bucket=name, Key="pending")
    for page in s3.get_paginator("list_object_versions").paginate(Bucket=name):
        objs = [{"Key": v["Key"], "VersionId": v["VersionId"]}
                for v in page.get("Versions", []) + page.get("DeleteMarkers", [])]
        if objs:
            r = s3.delete_objects(Bucket=name, Delete={"Objects": objs, "Quiet": True})
            assert not r.get("Errors")
    s3.delete_bucket(Bucket=name)
    with pytest.raises(ClientError) as ei:
        s3.head_bucket(Bucket=name)
    assert client_error(ei)[1] == 404


# ---- configurations nobody set ----------------------------------------------------------

@pytest.mark.parametrize("call,code", [
    ("get_bucket_policy", "NoSuchBucketPolicy"),
    ("get_bucket_cors", "NoSuchCORSConfiguration"),
    ("get_bucket_tagging", "NoSuchTagSet"),
    ("get_bucket_lifecycle_configuration", "NoSuchLifecycleConfiguration"),
    ("get_object_lock_configuration", "ObjectLockConfigurationNotFoundError"),
    ("get_bucket_encryption", "ServerSideEncryptionConfigurationNotFoundError"),
])
def test_absent_bucket_configurations(s3, s3_user2, bucket, call, code):
    with pytest.raises(ClientError) as ei:
        getattr(s3, call)(Bucket=bucket)
    assert_error(ei, code, 404)
    with pytest.raises(ClientError) as ei:
        getattr(s3_user2, call)(Bucket=bucket)
    assert_error(ei, "AccessDenied", 403)


def test_absent_configurations_delete_and_put(s3, bucket):
    assert s3.delete_bucket_policy(Bucket=bucket)["ResponseMetadata"]["HTTPStatusCode"] == 204
    assert s3.delete_bucket_cors(Bucket=bucket)["ResponseMetadata"]["HTTPStatusCode"] == 204
    # CORS and lifecycle rules are kept (test_s3_cors.py, test_s3_lifecycle.py).
    assert s3.delete_bucket_lifecycle(Bucket=bucket)["ResponseMetadata"]["HTTPStatusCode"] == 204
    # Policies are kept (test_s3_policy.py): an empty one is malformed.
    with pytest.raises(ClientError) as ei:
        s3.put_bucket_policy(Bucket=bucket, Policy='{"Version": "2012-10-17", "Statement": []}')
    assert_error(ei, "MalformedPolicy", 400)
    s3.put_object(Bucket=bucket, Key="k", Body=b"x")
    assert s3.get_object_tagging(Bucket=bucket, Key="k")["TagSet"] == []


# ---- ACLs ----------------------------------------------------------------------------------

def test_default_acls_name_the_owner(s3, bucket):
    owner = s3.list_buckets()["Owner"]
    acl = s3.get_bucket_acl(Bucket=bucket)
    assert acl["Owner"] == owner
    assert grants_of(acl) == {(owner["ID"], "FULL_CONTROL")}
    s3.put_object(Bucket=bucket, Key="k", Body=b"x")
    acl = s3.get_object_acl(Bucket=bucket, Key="k")
    assert acl["Owner"] == owner and grants_of(acl) == {(owner["ID"], "FULL_CONTROL")}


def test_private_bucket_refuses_anonymous_and_others(s3, s3_user2, anon, bucket):
    s3.put_object(Bucket=bucket, Key="k", Body=b"x")
    for client in (anon, s3_user2):
        for call in (lambda c: c.get_object(Bucket=bucket, Key="k"),
                     lambda c: c.list_objects_v2(Bucket=bucket),
                     lambda c: c.put_object(Bucket=bucket, Key="n", Body=b"x"),
                     lambda c: c.get_bucket_acl(Bucket=bucket)):
            with pytest.raises(ClientError) as ei:
                call(client)
            assert_error(ei, "AccessDenied", 403)
        # a missing key is no hint either
        with pytest.raises(ClientError) as ei:
            client.get_object(Bucket=bucket, Key="missing")
        assert_error(ei, "AccessDenied", 403)
    with pytest.raises(ClientError) as ei:
        anon.list_buckets()
    assert_error(ei, "AccessDenied", 403)


def test_public_read_bucket_lists_but_objects_keep_their_acl(s3, anon, s3_user2):
    name = new_bucket_name()
    s3.create_bucket(Bucket=name, ACL="public-read")
    try:
        assert (ALL_USERS, "READ") in grants_of(s3.get_bucket_acl(Bucket=name))
        s3.put_object(Bucket=name, Key="private", Body=b"p")
        s3.put_object(Bucket=name, Key="public", Body=b"P", ACL="public-read")
        assert [o["Key"] for o in anon.list_objects(Bucket=name)["Contents"]] == [
            "private", "public"]
        assert anon.head_bucket(Bucket=name)["ResponseMetadata"]["HTTPStatusCode"] == 200
        assert anon.get_object(Bucket=name, Key="public")["Body"].read() == b"P"
        with pytest.raises(ClientError) as ei:
            anon.get_object(Bucket=name, Key="private")
        assert_error(ei, "AccessDenied", 403)
        # may list, so a missing key is a 404
        with pytest.raises(ClientError) as ei:
            anon.get_object(Bucket=name, Key="missing")
        assert_error(ei, "NoSuchKey", 404)
        with pytest.raises(ClientError) as ei:
            anon.put_object(Bucket=name, Key="new", Body=b"x")
        assert_error(ei, "AccessDenied", 403)
        with pytest.raises(ClientError) as ei:
            s3_user2.delete_object(Bucket=name, Key="public")
        assert_error(ei, "AccessDenied", 403)
    finally:
        s3.delete_objects(Bucket=name, Delete={"Objects": [{"Key": "private"}, {"Key": "public"}]})
        s3.delete_bucket(Bucket=name)


def test_public_object_in_a_private_bucket(server, s3, anon, bucket):
    s3.put_object(Bucket=bucket, Key="shared", Body=b"dataset", ACL="public-read")
    assert anon.get_object(Bucket=bucket, Key="shared")["Body"].read() == b"dataset"
    r = raw_request(server, "GET", f"/{bucket}/shared", user=None)
    assert r.status == 200 and r.body == b"dataset"
    with pytest.raises(ClientError) as ei:
        anon.list_objects_v2(Bucket=bucket)
    assert_error(ei, "AccessDenied", 403)
    # the ACL goes back to private
    s3.put_object_acl(Bucket=bucket, Key="shared", ACL="private")
    with pytest.raises(ClientError) as ei:
        anon.get_object(Bucket=bucket, Key="shared")
    assert_error(ei, "AccessDenied", 403)


def test_authenticated_read(s3, s3_user2, anon, bucket):
    s3.put_object(Bucket=bucket, Key="k", Body=b"x", ACL="authenticated-read")
    assert (AUTH_USERS, "READ") in grants_of(s3.get_object_acl(Bucket=bucket, Key="k"))
    assert s3_user2.get_object(Bucket=bucket, Key="k")["Body"].read() == b"x"
    with pytest.raises(ClientError) as ei:
        anon.get_object(Bucket=bucket, Key="k")
    assert_error(ei, "AccessDenied", 403)
    # reading the data is not reading the ACL
    with pytest.raises(ClientError) as ei:
        s3_user2.get_object_acl(Bucket=bucket, Key="k")
    assert_error(ei, "AccessDenied", 403)


def test_public_read_write_bucket_takes_anonymous_writes(s3, anon, s3_user2):
    name = new_bucket_name()
    s3.create_bucket(Bucket=name)
    s3.put_bucket_acl(Bucket=name, ACL="public-read-write")
    try:
        assert {(ALL_USERS, "READ"), (ALL_USERS, "WRITE")} <= grants_of(
            s3.get_bucket_acl(Bucket=name))
        anon.put_object(Bucket=name, Key="drop", Body=b"anon")
        # an anonymous writer's object belongs to the bucket owner
        assert s3.get_object(Bucket=name, Key="drop")["Body"].read() == b"anon"
        s3_user2.put_object(Bucket=name, Key="u2", Body=b"two")
        acl = s3_user2.get_object_acl(Bucket=name, Key="u2")
        assert acl["Owner"]["ID"] == USERS[1][0]
        # another user's private object: the bucket owner may delete it, not read it
        with pytest.raises(ClientError) as ei:
            s3.get_object(Bucket=name, Key="u2")
        assert_error(ei, "AccessDenied", 403)
        s3_user2.put_object(Bucket=name, Key="u2full", Body=b"2",
                            ACL="bucket-owner-full-control")
        assert s3.get_object(Bucket=name, Key="u2full")["Body"].read() == b"2"
        assert grants_of(s3.get_object_acl(Bucket=name, Key="u2full")) == {
            (USERS[1][0], "FULL_CONTROL"), (USERS[0][0], "FULL_CONTROL")}
        anon.delete_object(Bucket=name, Key="drop")
        # the bucket itself stays its owner's
        with pytest.raises(ClientError) as ei:
            anon.delete_bucket(Bucket=name)
        assert_error(ei, "AccessDenied", 403)
        with pytest.raises(ClientError) as ei:
            s3_user2.put_bucket_acl(Bucket=name, ACL="private")
        assert_error(ei, "AccessDenied", 403)
    finally:
        s3.delete_objects(Bucket=name, Delete={"Objects": [{"Key": "u2"}, {"Key": "u2full"}]})
        s3.delete_bucket(Bucket=name)


def test_acl_bodies_that_are_canned_acls(server, s3, anon, bucket):
    s3.put_object(Bucket=bucket, Key="k", Body=b"x")
    acl = s3.get_object_acl(Bucket=bucket, Key="k")
    grants = acl["Grants"] + [{"Grantee": {"Type": "Group", "URI": ALL_USERS},
                               "Permission": "READ"}]
    s3.put_object_acl(Bucket=bucket, Key="k",
                      AccessControlPolicy={"Owner": acl["Owner"], "Grants": grants})
    assert anon.get_object(Bucket=bucket, Key="k")["Body"].read() == b"x"
    s3.put_bucket_acl(Bucket=bucket, AccessControlPolicy={
        "Owner": acl["Owner"], "Grants": acl["Grants"] + [
            {"Grantee": {"Type": "Group", "URI": AUTH_USERS}, "Permission": "READ"}]})
    assert (AUTH_USERS, "READ") in grants_of(s3.get_bucket_acl(Bucket=bucket))
    # any other grant list is kept as given (test_s3_acl_grants.py has the rest)
    s3.put_object_acl(Bucket=bucket, Key="k", AccessControlPolicy={
        "Owner": acl["Owner"], "Grants": [
            {"Grantee": {"Type": "CanonicalUser", "ID": USERS[1][0]}, "Permission": "READ"}]})
    with pytest.raises(ClientError) as ei:
        anon.get_object(Bucket=bucket, Key="k")
    assert_error(ei, "AccessDenied", 403)
    s3.put_object_acl(Bucket=bucket, Key="k", GrantRead=f"uri={ALL_USERS}")
    assert anon.get_object(Bucket=bucket, Key="k")["Body"].read() == b"x"
    r = raw_request(server, "PUT", f"/{bucket}/k", query=[("acl", None)],
                    body=b"<AccessControlPolicy><oops></AccessControlPolicy>")
    assert r.status == 400 and error_fields(r.body)[1]["Code"] == "MalformedACLError"
    with pytest.raises(ClientError) as ei:
        s3.put_object(Bucket=bucket, Key="bad", Body=b"x", ACL="no-such-acl")
    assert_error(ei, "InvalidArgument", 400)


def test_copy_and_multipart_take_their_own_acl(s3, anon, bucket):
    s3.put_object(Bucket=bucket, Key="src", Body=b"x", ACL="public-read")
    s3.copy_object(Bucket=bucket, Key="copy", CopySource={"Bucket": bucket, "Key": "src"})
    with pytest.raises(ClientError) as ei:
        anon.get_object(Bucket=bucket, Key="copy")  # a copy is private unless asked
    assert_error(ei, "AccessDenied", 403)
    s3.copy_object(Bucket=bucket, Key="copy", ACL="public-read",
                   CopySource={"Bucket": bucket, "Key": "src"})
    assert anon.get_object(Bucket=bucket, Key="copy")["Body"].read() == b"x"
    uid = s3.create_multipart_upload(Bucket=bucket, Key="mp", ACL="public-read")["UploadId"]
    etag = s3.upload_part(Bucket=bucket, Key="mp", UploadId=uid, PartNumber=1,
                          Body=b"part")["ETag"]
    s3.complete_multipart_upload(Bucket=bucket, Key="mp", UploadId=uid, MultipartUpload={
        "Parts": [{"PartNumber": 1, "ETag": etag}]})
    assert anon.get_object(Bucket=bucket, Key="mp")["Body"].read() == b"part"


# ---- authorization before the body --------------------------------------------------------

def put_acl_head(server, path, user, length):
    """The head of a PUT path?acl announcing length body bytes with Expect: 100-continue,
    signed by user (UNSIGNED-PAYLOAD) or anonymous (user None)."""
    enc = uri_encode(path, encode_slash=False)
    headers = {"Host": server.host, "Content-Length": str(length),
               "Expect": "100-continue"}
    if user:
        sign_headers("PUT", enc, [("acl", None)], headers, "UNSIGNED-PAYLOAD", *user)
    return ("\r\n".join([f"PUT {enc}?acl HTTP/1.1"] + [f"{k}: {v}" for k, v in headers.items()])
            + "\r\n\r\n").encode()


@pytest.mark.parametrize("who", ["anonymous", "other-user"])
def test_put_object_acl_is_refused_before_its_body(server, s3, bucket, who):
    """PutObjectAcl authorizes in its begin step, as every operation with an XML body: a
    requester who may not change the ACL gets its error from the request head alone (no
    100 Continue, no body buffered), for a missing bucket and for another's private one."""
    s3.put_object(Bucket=bucket, Key="k", Body=b"x")
    user = None if who == "anonymous" else USERS[1]
    for path, code, status in ((f"/{bucket}-missing/k", "NoSuchBucket", 404),
                               (f"/{bucket}/k", "AccessDenied", 403),
                               (f"/{bucket}/missing", "AccessDenied", 403)):
        with socket.create_connection(("127.0.0.1", server.port), timeout=10) as sock:
            sock.sendall(put_acl_head(server, path, user, 1 << 20))
            got, raw = recv_http_response(sock, timeout=10)
        assert got == status and f"<Code>{code}</Code>".encode() in raw, (path, raw[:400])
    assert s3.get_object_acl(Bucket=bucket, Key="k")["Grants"][0]["Permission"] == "FULL_CONTROL"


# ---- no existence oracle: 404 vs 403 for a missing key --------------------------------------

# Every request that looks a key up: (method, query, headers). A missing key is 404 NoSuchKey
# only to a requester who may list the bucket; 403 AccessDenied to the others.
KEY_LOOKUPS = [
    ("GET", [], {}),
    ("HEAD", [], {}),
    ("GET", [("acl", None)], {}),
    ("PUT", [("acl", None)], {"x-amz-acl": "private"}),
    ("GET", [("tagging", None)], {}),
    ("PUT", [("tagging", None)], {}),
    ("DELETE", [("tagging", None)], {}),
]


@pytest.mark.parametrize("method,query,headers", KEY_LOOKUPS,
                         ids=[m + "".join("?" + q for q, _ in qs) for m, qs, _ in KEY_LOOKUPS])
def test_missing_key_is_403_to_who_may_not_list(server, s3, method, query, headers):
    private, listable = new_bucket_name(), new_bucket_name()
    s3.create_bucket(Bucket=private)
    s3.create_bucket(Bucket=listable, ACL="public-read")
    try:
        for bucket, want in ((private, 403), (listable, 404)):
            for user in (None, USERS[1]):
                r = raw_request(server, method, f"/{bucket}/missing", query=query,
                                headers=dict(headers), user=user)
                assert r.status == want, (bucket, user, r)
                if method != "HEAD":
                    assert r.error_code() == ("AccessDenied" if want == 403 else "NoSuchKey"), r
        r = raw_request(server, method, f"/{private}/missing", query=query, headers=dict(headers))
        assert r.status == 404, r  # the owner may list
    finally:
        s3.delete_bucket(Bucket=private)
        s3.delete_bucket(Bucket=listable)


def test_missing_copy_source_is_403_to_who_may_not_list(s3, s3_user2, bucket):
    """CopyObject and UploadPartCopy read their source like a GET: a stranger's missing
    source key in a private bucket is AccessDenied, not NoSuchKey."""
    mine = new_bucket_name()
    s3_user2.create_bucket(Bucket=mine)
    try:
        with pytest.raises(ClientError) as ei:
            s3_user2.copy_object(Bucket=mine, Key="c", CopySource=f"{bucket}/missing")
        assert_error(ei, "AccessDenied", 403)
        up = s3_user2.create_multipart_upload(Bucket=mine, Key="m")["UploadId"]
        with pytest.raises(ClientError) as ei:
            s3_user2.upload_part_copy(Bucket=mine, Key="m", UploadId=up, PartNumber=1,
                                      CopySource=f"{bucket}/missing")
        assert_error(ei, "AccessDenied", 403)
        s3_user2.abort_multipart_upload(Bucket=mine, Key="m", UploadId=up)
        with pytest.raises(ClientError) as ei:
            s3.copy_object(Bucket=bucket, Key="c", CopySource=f"{bucket}/missing")
        assert_error(ei, "NoSuchKey", 404)
    finally:
        s3_user2.delete_bucket(Bucket=mine)
