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
