"""Listings on the RADOS backend that go on from the page before (docs/storage.md, "Parked
listings"): a page of a walk takes back the entries the page before read from each index
shard past its end, but only while that shard's object is unchanged since, so a write
acknowledged between two pages of a walk is on the next page, whichever gateway took it.
(Listings against the local backend and across reshards: test_rados.py,
test_rados_reshard.py.)
"""
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from s3r_itest import REPO_ROOT, boto_client  # noqa: E402

BINARY = os.environ.get("S3RDMAD", str(REPO_ROOT / "build" / "s3rdmad"))


@pytest.fixture
def pool(ceph_cluster):
    return ceph_cluster.create_pool("t" + uuid.uuid4().hex[:10])


def page(s3, bucket, token=None, max_keys=20):
    """One ListObjectsV2 page under k/: [(key, size)], the next token (None at the end)."""
    r = s3.list_objects_v2(Bucket=bucket, Prefix="k/", MaxKeys=max_keys,
                           **({"ContinuationToken": token} if token else {}))
    got = [(o["Key"], o["Size"]) for o in r.get("Contents", [])]
    return got, r.get("NextContinuationToken") if r["IsTruncated"] else None


def test_a_walk_shows_writes_made_between_its_pages(ceph_cluster, pool, make_server, tmp_path):
    """Four shards of 50 keys: the first page of 20 reads every shard to its end (a batch
    is 328 entries), so without the shard-version check the rest of the walk would come
    from what that first read saw. Between pages, through the other gateway and then
    through the walking one: a key added inside the next page (one right after the page
    before's last key, ahead of every held entry), one deleted from it, one
    overwritten with a new size, one added past every key (on a shard read to its end).
    Every later page shows exactly the bucket as it is when that page is asked for; and a
    reshard between two pages (the held entries' shard objects removed) loses nothing."""
    args = dict(pool=pool, gc_grace=1, index_shards=4)
    s1 = boto_client(make_server(name="gw1", extra_args=ceph_cluster.gateway_args(**args)))
    s2 = boto_client(make_server(name="gw2", extra_args=ceph_cluster.gateway_args(**args)))
    bucket = "plist-" + uuid.uuid4().hex[:8]
    s1.create_bucket(Bucket=bucket)
    now = {f"k/{i:03d}": 1 for i in range(200)}
    for k in now:
        s1.put_object(Bucket=bucket, Key=k, Body=b"x")

    def expect_after(key, n=20):
        return [(k, now[k]) for k in sorted(now) if k > key][:n]

    got, token = page(s1, bucket)
    assert got == expect_after("")
    walked = list(got)

    # Through the other gateway: the walking one has nothing to tell it.
    s2.put_object(Bucket=bucket, Key="k/0305", Body=b"new")
    # Right after the page's last key: before every shard's held head.
    s2.put_object(Bucket=bucket, Key="k/0195", Body=b"a")
    s2.delete_object(Bucket=bucket, Key="k/025")
    s2.put_object(Bucket=bucket, Key="k/031", Body=b"1234567")
    s2.put_object(Bucket=bucket, Key="k/2", Body=b"zz")
    now.update({"k/0305": 3, "k/0195": 1, "k/031": 7, "k/2": 2})
    del now["k/025"]
    got, token = page(s1, bucket, token)
    assert got == expect_after(walked[-1][0])
    walked += got

    # Through the walking gateway itself.
    s1.delete_object(Bucket=bucket, Key="k/045")
    s1.put_object(Bucket=bucket, Key="k/0455", Body=b"four")
    del now["k/045"]
    now["k/0455"] = 4
    got, token = page(s1, bucket, token)
    assert got == expect_after(walked[-1][0])
    walked += got

    # A reshard to 2 shards removes the 4 objects the parked listing read.
    data = tmp_path / "reshard-data"
    data.mkdir()
    r = subprocess.run([BINARY, "reshard", bucket, "2", "--data", str(data),
                        *ceph_cluster.gateway_args(pool=pool)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    s2.delete_object(Bucket=bucket, Key="k/061")
    del now["k/061"]
    got, token = page(s1, bucket, token)
    assert got == expect_after(walked[-1][0])
    walked += got

    while token:
        got, token = page(s1, bucket, token)
        walked += got
    assert walked == sorted(now.items())
