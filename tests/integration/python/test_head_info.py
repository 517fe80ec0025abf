"""What head_object and the listings tell, against boto3's answers for the same objects:
the storage class (HEAD, ListObjectsV2, ListObjectVersions), the stored Content-* headers,
Expires and checksums, over each transport; and the same through
s3rdma.torch's S3Client and the fsspec filesystem (whose dicts use boto3's
``StorageClass``)."""
import pytest

TRANSPORTS = ["http", "native"]


@pytest.fixture
def objects(boto, rbucket):
    """cold: GLACIER with every stored header and a SHA-256 checksum; plain: STANDARD,
    nothing else. (The session's server has no SSE-S3 key: encryption is the field left
    to test_s3_sse.py's server, and here must read None as boto3 has none.)"""
    boto.put_object(Bucket=rbucket, Key="cold", Body=b"x" * 100, StorageClass="GLACIER",
                    ContentEncoding="identity", ContentDisposition='attachment; filename="c"',
                    ContentLanguage="en-GB", CacheControl="max-age=60",
                    Expires="Wed, 21 Oct 2037 07:28:00 GMT", ChecksumAlgorithm="SHA256")
    boto.put_object(Bucket=rbucket, Key="plain", Body=b"y")
    return rbucket


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_head_object_fields_match_boto3(client, objects, boto, transport):
    c = client(transport)
    want = boto.head_object(Bucket=objects, Key="cold", ChecksumMode="ENABLED")
    raw = want["ResponseMetadata"]["HTTPHeaders"]
    h = c.head_object(objects, "cold")
    assert (h.size, h.etag, h.storage_class) == \
        (want["ContentLength"], want["ETag"], want["StorageClass"]) == (100, h.etag, "GLACIER")
    assert (h.content_encoding, h.content_disposition, h.content_language, h.cache_control) \
        == (want["ContentEncoding"], want["ContentDisposition"], want["ContentLanguage"],
            want["CacheControl"])
    assert h.expires == raw["expires"] == "Wed, 21 Oct 2037 07:28:00 GMT"
    assert h.checksum_sha256 == want["ChecksumSHA256"]
    assert h.checksum_type == raw["x-amz-checksum-type"]
    assert h.server_side_encryption is None and "ServerSideEncryption" not in want
    p = c.head_object(objects, "plain")
    # S3 names no class for STANDARD; the object has the CRC32C every PutObject of
    # boto3 (and libs3rdma) sends, and no other stored header
    assert p.storage_class is None and "StorageClass" not in boto.head_object(
        Bucket=objects, Key="plain")
    assert (p.content_encoding, p.cache_control, p.expires, p.checksum_sha256,
            p.server_side_encryption) == (None,) * 5


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_listings_carry_storage_class(client, objects, boto, transport):
    c = client(transport)
    got = {o.key: o.storage_class for page in c.list_objects(objects) for o in page.objects}
    want = {o["Key"]: o["StorageClass"]
            for o in boto.list_objects_v2(Bucket=objects)["Contents"]}
    assert got == want == {"cold": "GLACIER", "plain": "STANDARD"}
    boto.delete_object(Bucket=objects, Key="plain")  # no versioning: gone
    vers = [(v.key, v.storage_class) for page in c.list_object_versions(objects)
            for v in page.versions]
    assert vers == [("cold", "GLACIER")]


def test_versioned_listing_delete_marker_has_no_class(client, objects, boto):
    boto.put_bucket_versioning(Bucket=objects, VersioningConfiguration={"Status": "Enabled"})
    boto.put_object(Bucket=objects, Key="cold", Body=b"z", StorageClass="STANDARD_IA")
    boto.delete_object(Bucket=objects, Key="plain")
    c = client("http")
    got = {(v.key, v.delete_marker): v.storage_class
           for page in c.list_object_versions(objects) for v in page.versions
           if v.version_id != "null"}
    assert got == {("cold", False): "STANDARD_IA", ("plain", True): None}


def test_torch_s3client_and_fsspec_storage_class(rsrv, objects, monkeypatch):
    """s3torchconnector's S3Client.head_object / list_objects give storage_class, as its
    HeadObjectResult and ObjectInfo do; fsspec's info and ls give boto3's StorageClass."""
    pytest.importorskip("torch")
    fsspec = pytest.importorskip("fsspec")
    from s3rdma.torch import S3ClientConfig
    from s3rdma.torch._s3client import S3Client
    from s3r_itest import USERS
    cfg = S3ClientConfig(access_key=USERS[0][0], secret_key=USERS[0][1], transport="http")
    s3 = S3Client("us-east-1", endpoint=rsrv.endpoint, s3client_config=cfg)
    assert s3.head_object(objects, "cold").storage_class == "GLACIER"
    page = next(iter(s3.list_objects(objects)))
    assert {o.key: o.storage_class for o in page.object_info} == {"cold": "GLACIER",
                                                                  "plain": "STANDARD"}
    fs = fsspec.filesystem("s3rdma", endpoint=rsrv.endpoint, access_key=USERS[0][0],
                           secret_key=USERS[0][1], transport="http", quiet=True,
                           skip_instance_cache=True)
    assert fs.info(f"{objects}/cold")["StorageClass"] == "GLACIER"
    assert fs.info(f"{objects}/plain")["StorageClass"] == "STANDARD"
    assert {e["name"].split("/")[-1]: e["StorageClass"] for e in fs.ls(objects)} == \
        {"cold": "GLACIER", "plain": "STANDARD"}
