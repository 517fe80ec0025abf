"""libs3rdma's PutObject carries x-amz-checksum-crc32c, computed on the client, on every
transport (as AWS SDKs send a CRC on every PUT). Object lock refuses a PUT that locks its
version without an integrity header (400 InvalidRequest, as S3 does), so without it
s3rdma.Client cannot PUT into a bucket with a default retention at all."""
import sys
from pathlib import Path

import numpy as np
import pytest
from conftest import OPS_COUNTER, TRANSPORTS

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from s3r_itest import crc32c_b64, new_bucket_name  # noqa: E402

DEFAULT_RETENTION = {"ObjectLockEnabled": "Enabled",
                     "Rule": {"DefaultRetention": {"Mode": "GOVERNANCE", "Days": 1}}}


@pytest.fixture
def retention_bucket(boto):
    """A bucket created with object lock and a default GOVERNANCE retention of a day;
    emptied afterwards by bypassing the retention (the owner may)."""
    name = new_bucket_name("pylock")
    boto.create_bucket(Bucket=name, ObjectLockEnabledForBucket=True)
    boto.put_object_lock_configuration(Bucket=name, ObjectLockConfiguration=DEFAULT_RETENTION)
    yield name
    for page in boto.get_paginator("list_object_versions").paginate(Bucket=name):
        objs = [{"Key": v["Key"], "VersionId": v["VersionId"]}
                for v in page.get("Versions", []) + page.get("DeleteMarkers", [])]
        if objs:
            r = boto.delete_objects(Bucket=name, Delete={"Objects": objs, "Quiet": True},
                                    BypassGovernanceRetention=True)
            assert not r.get("Errors"), r["Errors"]
    boto.delete_bucket(Bucket=name)


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("size", [0, 256 * 1024 + 3])
def test_put_into_default_retention_bucket(client, boto, retention_bucket, transport, size):
    c = client(transport)
    data = np.random.default_rng(size).integers(0, 256, size, dtype=np.uint8).tobytes()
    before = c.stats()[OPS_COUNTER[transport]]
    c.put_object(retention_bucket, "locked", data)
    if size:  # the PUT went over the transport asked for (an empty body goes over HTTP)
        assert c.stats()[OPS_COUNTER[transport]] > before
    assert c.get_object(retention_bucket, "locked") == data
    head = boto.head_object(Bucket=retention_bucket, Key="locked", ChecksumMode="ENABLED")
    # the default retention applied, and the checksum the server verified and kept is
    # the body's CRC32C
    assert head["ObjectLockMode"] == "GOVERNANCE"
    assert head["ChecksumCRC32C"] == crc32c_b64(data)
    attrs = boto.get_object_attributes(Bucket=retention_bucket, Key="locked",
                                       ObjectAttributes=["Checksum"])
    assert attrs["Checksum"]["ChecksumCRC32C"] == crc32c_b64(data)


def test_put_checksum_off(client, boto, retention_bucket):
    """put_checksum=False sends no checksum: the server keeps none, and the PUT into a
    bucket with a default retention is refused as S3 refuses it."""
    import s3rdma
    c = client("native", put_checksum=False)
    with pytest.raises(s3rdma.S3Error) as e:
        c.put_object(retention_bucket, "locked", b"x" * 4096)
    assert e.value.code == "InvalidRequest" and e.value.http_status == 400
    boto.put_object_lock_configuration(Bucket=retention_bucket,
                                       ObjectLockConfiguration={"ObjectLockEnabled": "Enabled"})
    c.put_object(retention_bucket, "free", b"x" * 4096)
    head = boto.head_object(Bucket=retention_bucket, Key="free", ChecksumMode="ENABLED")
    assert "ChecksumCRC32C" not in head


def composite_crc32c(data, part_size):
    """S3's COMPOSITE checksum of a multipart object: the CRC32C of the parts' CRC32Cs,
    "-N" after it."""
    import base64
    parts = [data[i:i + part_size] for i in range(0, len(data), part_size)]
    raw = b"".join(base64.b64decode(crc32c_b64(p)) for p in parts)
    return f"{crc32c_b64(raw)}-{len(parts)}"


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_multipart_into_default_retention_bucket(client, boto, retention_bucket, transport,
                                                 tmp_path):
    """A multipart upload declares CRC32C at CreateMultipartUpload, sends each part's
    CRC32C and lists them in Complete, as AWS SDKs do: the server, which asks integrity of
    every part of a locked object, takes it, and keeps the composite checksum. Both the
    library's own parallel parts (put_object from memory) and the caller-driven upload
    (a stream through s3r_multipart_*)."""
    c = client(transport, multipart_threshold="5MiB", part_size="5MiB")
    data = np.random.default_rng(7).integers(0, 256, 11 * 1024 * 1024 + 5,
                                             dtype=np.uint8).tobytes()
    c.put_object(retention_bucket, "mp", data)
    p = tmp_path / "f"
    p.write_bytes(data)
    with open(p, "rb") as f:
        c.put_object(retention_bucket, "stream", _Stream(f))
    for key in ("mp", "stream"):
        assert c.get_object(retention_bucket, key) == data
        head = boto.head_object(Bucket=retention_bucket, Key=key, ChecksumMode="ENABLED")
        assert head["ObjectLockMode"] == "GOVERNANCE"
        assert head["ChecksumCRC32C"] == composite_crc32c(data, 5 * 1024 * 1024), key
    # without checksums a part of a locked object is refused, as S3 refuses it
    import s3rdma
    off = client(transport, multipart_threshold="5MiB", part_size="5MiB", put_checksum=False)
    with pytest.raises(s3rdma.S3Error) as e:
        off.put_object(retention_bucket, "nock", data)
    assert (e.value.code, e.value.http_status) == ("InvalidRequest", 400)


class _Stream:
    """A file object that is not a regular file to the client (no fileno): read in parts
    through s3r_multipart_*."""

    def __init__(self, f):
        self.f = f

    def read(self, n=-1):
        return self.f.read(n)
