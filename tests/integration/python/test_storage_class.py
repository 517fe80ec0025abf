"""put_object / upload_file(..., storage_class=): S3's x-amz-storage-class on a single PUT
and a multipart upload, native and HTTP, against a real s3rdmad; a bad name refused
before anything is sent, one the server does not know refused by it."""
import os

import pytest

MiB = 1024 * 1024


@pytest.mark.parametrize("transport", ["native", "http"])
def test_put_object_storage_class(client, boto, rbucket, transport, tmp_path):
    from s3rdma.errors import InvalidArgument, S3Error  # installed when this runs
    c = client(transport, multipart_threshold=8 * MiB, part_size=5 * MiB)
    c.put_object(rbucket, "one", b"x" * 1000, storage_class="STANDARD_IA")
    c.put_object(rbucket, "multi", os.urandom(11 * MiB), storage_class="GLACIER")
    path = tmp_path / "f"
    path.write_bytes(b"y" * 10)
    c.upload_file(path, rbucket, "file", storage_class="ONEZONE_IA")
    c.put_object(rbucket, "plain", b"z")
    assert boto.head_object(Bucket=rbucket, Key="one")["StorageClass"] == "STANDARD_IA"
    assert boto.head_object(Bucket=rbucket, Key="multi")["StorageClass"] == "GLACIER"
    assert boto.head_object(Bucket=rbucket, Key="file")["StorageClass"] == "ONEZONE_IA"
    assert "StorageClass" not in boto.head_object(Bucket=rbucket, Key="plain")
    listed = {o["Key"]: o["StorageClass"]
              for o in boto.list_objects_v2(Bucket=rbucket)["Contents"]}
    assert listed == {"one": "STANDARD_IA", "multi": "GLACIER", "file": "ONEZONE_IA",
                      "plain": "STANDARD"}
    with pytest.raises(InvalidArgument, match="storage class"):
        c.put_object(rbucket, "bad", b"x", storage_class="standard\r\nx-amz-acl: public-read")
    with pytest.raises(S3Error, match="InvalidStorageClass"):
        c.put_object(rbucket, "unknown", b"x", storage_class="NO_SUCH_CLASS")
    keys = {o["Key"] for o in boto.list_objects_v2(Bucket=rbucket)["Contents"]}
    assert "bad" not in keys and "unknown" not in keys


def test_torch_s3client_put_object_storage_class(rsrv, boto, rbucket):
    """s3torchconnector's S3Client.put_object(bucket, key, storage_class=...) names the
    class of the object its writer makes, small (one PUT) or large (multipart)."""
    pytest.importorskip("torch")
    from s3rdma.torch import S3ClientConfig
    from s3rdma.torch._s3client import S3Client
    from s3r_itest import USERS
    s3 = S3Client(endpoint=rsrv.endpoint, s3client_config=S3ClientConfig(
        transport="native", rdma_endpoint=rsrv.rdma_endpoint, access_key=USERS[0][0],
        secret_key=USERS[0][1], part_size=5 * MiB))
    for key, size in (("small", 1000), ("large", 12 * MiB)):
        with s3.put_object(rbucket, key, storage_class="STANDARD_IA") as w:
            w.write(os.urandom(size))
        assert boto.head_object(Bucket=rbucket, Key=key)["StorageClass"] == "STANDARD_IA"
