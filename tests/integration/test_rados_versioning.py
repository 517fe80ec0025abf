"""Bucket versioning on the RADOS backend across gateways (docs/storage.md, "Versioning on
RADOS"), on the session's single-node Ceph cluster (the `ceph_cluster` fixture skips only
when Ceph is not installed). The S3 answers themselves are test_s3_versioning.py's, which
runs against RADOS in the S3RDMA_TEST_BACKEND=rados pass; here:

- versioned PUTs and DELETEs racing through two gateways on a 4-shard index: every
  acknowledged version and delete marker is listed exactly once, in each key's commit
  order, with one latest per key, and reads back by its id through either gateway;
  ListObjectVersions pages merge the shards in key order; removing every version by id,
  racing through both, leaves no index entry and (after the GC grace) no data piece;
- kill -9 of a gateway during versioned PUTs, deletes (markers) and removals by id:
  nothing acknowledged is lost, nothing removed comes back, each key keeps one latest,
  and once every version is removed and a gateway has started (its sweep), the pool holds
  no data piece at all.
"""
import concurrent.futures as cf
import sys
import threading
import time
import uuid
from pathlib import Path

import pytest
from botocore.exceptions import ClientError

sys.path.insert(0, str(Path(__file__).resolve().parent))
from s3r_itest import boto_client  # noqa: E402
from test_rados import body, index_objects, pool, wait_no_pieces  # noqa: E402,F401

KiB = 1024


def versioned_gateway(make_server, cluster, pool, name):
    """A gateway on pool, buckets with 4 index shards, GC grace 1 s."""
    return make_server(name=name, extra_args=cluster.gateway_args(pool=pool, gc_grace=1))


def all_versions(s3, bucket, page=None):
    """Every (key, version id, is latest, is marker) of bucket, in listing order, a page of
    `page` entries at a time (None: the server's default)."""
    out, kw = [], {}
    while True:
        r = s3.list_object_versions(Bucket=bucket, **kw, **({"MaxKeys": page} if page else {}))
        entries = [(v["Key"], v["VersionId"], v["IsLatest"], False, v["LastModified"])
                   for v in r.get("Versions", [])]
        entries += [(m["Key"], m["VersionId"], m["IsLatest"], True, m["LastModified"])
                    for m in r.get("DeleteMarkers", [])]
        # boto3 splits a page into its two kinds; the page's own order is by key, then
        # newest first, which the version ids' first 16 hex digits (the order) give.
        entries.sort(key=lambda e: (e[0].encode(), -int(e[1][:16], 16)))
        out += [e[:4] for e in entries]
        if not r["IsTruncated"]:
            return out
        kw = {"KeyMarker": r["NextKeyMarker"], "VersionIdMarker": r["NextVersionIdMarker"]}


def remove_all_versions(clients, bucket):
    """Every version and marker removed by id, the work split across clients, concurrently."""
    entries = all_versions(clients[0], bucket)

    def rm(i):
        key, vid = entries[i][:2]
        clients[i % len(clients)].delete_object(Bucket=bucket, Key=key, VersionId=vid)
    with cf.ThreadPoolExecutor(4) as ex:
        list(ex.map(rm, range(len(entries))))


def test_versions_race_across_gateways(ceph_cluster, pool, make_server):
    a = versioned_gateway(make_server, ceph_cluster, pool, "va")
    b = versioned_gateway(make_server, ceph_cluster, pool, "vb")
    clients = [boto_client(a), boto_client(b)]
    bucket = "vrace-" + uuid.uuid4().hex[:8]
    clients[0].create_bucket(Bucket=bucket)
    clients[1].put_bucket_versioning(Bucket=bucket,
                                     VersioningConfiguration={"Status": "Enabled"})
    # "e\x01" and "e\x02x" sort between "e" and "f" only through the entries' escape.
    keys = ["hot", "b/1", "b/2", "c\u00e9", "e", "e\x01", "e\x02x", "f"]
    acked = []  # (key, version id, data or None for a marker)
    lock = threading.Lock()

    def writer(w):
        s3 = boto_client([a, b][w % 2])
        for j in range(10):
            key = keys[0] if j % 2 == 0 else keys[(w + j) % len(keys)]
            if j % 5 == 4:
                r = s3.delete_object(Bucket=bucket, Key=key)
                assert r["DeleteMarker"] is True
                got = (key, r["VersionId"], None)
            else:
                data = body(1000 * w + j, 3 * KiB + 17 * w + j)
                got = (key, s3.put_object(Bucket=bucket, Key=key, Body=data)["VersionId"], data)
            with lock:
                acked.append(got)
    with cf.ThreadPoolExecutor(4) as ex:
        list(ex.map(writer, range(4)))

    listed = all_versions(clients[0], bucket)
    assert listed == all_versions(clients[1], bucket)
    assert listed == all_versions(clients[1], bucket, page=3)  # pages merge the shards
    assert sorted(e[1] for e in listed) == sorted(x[1] for x in acked)
    assert len({x[1] for x in acked}) == len(acked)
    by_id = {x[1]: x for x in acked}
    for key in keys:
        mine = [e for e in listed if e[0] == key]
        assert [e[2] for e in mine] == [True] + [False] * (len(mine) - 1), mine
        assert [e[3] for e in mine] == [by_id[e[1]][2] is None for e in mine]
        latest = mine[0]
        if latest[3]:
            with pytest.raises(ClientError) as e:
                clients[1].get_object(Bucket=bucket, Key=key)
            assert e.value.response["Error"]["Code"] == "NoSuchKey"
        else:
            r = clients[1].get_object(Bucket=bucket, Key=key)
            assert r["VersionId"] == latest[1] and r["Body"].read() == by_id[latest[1]][2]
    for i, (key, vid, data) in enumerate(acked):
        if data is not None:
            r = clients[i % 2].get_object(Bucket=bucket, Key=key, VersionId=vid)
            assert r["Body"].read() == data, (key, vid)
    # A plain listing shows the keys whose latest is an object, as each gateway sees them.
    live = sorted((k for k in keys if not [e for e in listed if e[0] == k][0][3]),
                  key=str.encode)
    for s3 in clients:
        assert [o["Key"] for o in s3.list_objects_v2(Bucket=bucket).get("Contents", [])] == live

    remove_all_versions(clients, bucket)
    assert all_versions(clients[0], bucket) == []
    clients[0].delete_bucket(Bucket=bucket)
    assert index_objects(ceph_cluster, pool) == {}
    assert wait_no_pieces(ceph_cluster, pool) == []


def test_kill9_during_versioned_writes(ceph_cluster, pool, make_server):
    a = versioned_gateway(make_server, ceph_cluster, pool, "ka")
    b = versioned_gateway(make_server, ceph_cluster, pool, "kb")
    sb = boto_client(b)
    bucket = "vkill-" + uuid.uuid4().hex[:8]
    sb.create_bucket(Bucket=bucket)
    sb.put_bucket_versioning(Bucket=bucket, VersioningConfiguration={"Status": "Enabled"})
    # Acknowledged: vid -> (key, data); vids. A removal cut by the kill may or may not
    # have happened: its version is in `maybe`.
    puts, markers, removed, maybe = {}, set(), set(), set()
    lock = threading.Lock()
    stop = threading.Event()

    def load(w):
        s3 = boto_client(a, read_timeout=10, connect_timeout=2)
        mine = []  # this worker's acknowledged object versions, (key, vid)
        i = 0
        while not stop.is_set():
            key = f"k{(w + i) % 4}"
            try:
                if i % 6 == 5:
                    vid = s3.delete_object(Bucket=bucket, Key=key)["VersionId"]
                    with lock:
                        markers.add(vid)
                elif i % 6 == 3 and mine:
                    k, vid = mine.pop(0)
                    with lock:
                        maybe.add(vid)
                    s3.delete_object(Bucket=bucket, Key=k, VersionId=vid)
                    with lock:
                        maybe.discard(vid)
                        removed.add(vid)
                else:
                    data = body(w * 100000 + i, [900, 70 * KiB, 4 * 1024 * KiB + 5][i % 3])
                    vid = s3.put_object(Bucket=bucket, Key=key, Body=data)["VersionId"]
                    mine.append((key, vid))
                    with lock:
                        puts[vid] = (key, data)
            except Exception:
                return
            i += 1
    threads = [threading.Thread(target=load, args=(w,)) for w in range(3)]
    for t in threads:
        t.start()
    deadline = time.monotonic() + 30
    while len(puts) + len(markers) < 24 and time.monotonic() < deadline:
        time.sleep(0.05)
    a.kill9()
    stop.set()
    for t in threads:
        t.join(30)
    assert len(puts) >= 12 and markers and removed, (len(puts), markers, removed)

    listed = all_versions(sb, bucket)
    ids = {e[1] for e in listed}
    for vid, (key, data) in puts.items():
        if vid in removed:
            assert vid not in ids, (key, vid)
            continue
        if vid in maybe and vid not in ids:
            continue
        assert vid in ids, (key, vid)
        assert sb.get_object(Bucket=bucket, Key=key, VersionId=vid)["Body"].read() == data
    assert markers <= ids
    for key in {e[0] for e in listed}:
        assert [e[2] for e in listed if e[0] == key].count(True) == 1, key

    # Recovery: every version removed through B (its data to B's GC log), then a gateway
    # starts and sweeps what the killed one left half-written: not one piece remains.
    remove_all_versions([sb], bucket)
    sb.delete_bucket(Bucket=bucket)
    assert index_objects(ceph_cluster, pool) == {}
    time.sleep(2)
    make_server(name="kc", extra_args=ceph_cluster.gateway_args(pool=pool, gc_grace=1) + [
        "--storage-rados-full-sweep", "true"])
    assert wait_no_pieces(ceph_cluster, pool) == []
