"""s3rdmad gateways on the RADOS backend (docs/storage.md, "The RADOS backend"), on the
session's single-node Ceph cluster (scripts/ceph-dev; the `ceph_cluster` fixture skips only
when Ceph is not installed):

- the token path and the native path against a RADOS-backed gateway (the HTTP S3 files run
  against RADOS in scripts/run-tests' S3RDMA_TEST_BACKEND=rados pass);
- two gateways on one pool: objects written through one read back byte-exact through the
  other, listings agree, a multipart upload started on one completes on the other,
  concurrent overwrites of one key through both leave exactly one written version, and
  racing If-None-Match writes let exactly one win;
- a GET that began before an overwrite and a delete returns the old bytes whole;
- kill -9 of a gateway under load: every acknowledged object reads back intact through the
  other, and once everything is deleted and a gateway has started (its sweep) and drained
  the GC log, the pool holds no data pieces at all;
- a gateway whose OSD stops answering replies 503 SlowDown, and serves again once it is back.
"""
import concurrent.futures as cf
import hashlib
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import pytest
from botocore.exceptions import ClientError

sys.path.insert(0, str(Path(__file__).resolve().parent))
from s3r_itest import (REPO_ROOT, UCX_ENVS, USERS, RdmaServer, boto_client,  # noqa: E402
                       walk_listing)

MiB = 1024 * 1024
BUILD = Path(os.environ.get("S3RDMA_BUILD", REPO_ROOT / "build"))
DRIVER = BUILD / "tests" / "s3r_driver"


def result(stdout):
    """The fields of s3r_driver's RESULT line (numbers as int)."""
    line = next(x for x in stdout.splitlines() if x.startswith("RESULT "))
    fields = dict(kv.split("=", 1) for kv in line.split()[1:])
    return {k: int(v) if v.lstrip("-").isdigit() else v for k, v in fields.items()}


def gateway(make_server, cluster, pool, name, grace=1):
    return make_server(name=name, extra_args=cluster.gateway_args(pool=pool, gc_grace=grace))


def body(i, size):
    """Distinct, checkable bytes for object i."""
    seed = hashlib.sha256(f"{i}".encode()).digest()
    return (seed * (size // len(seed) + 1))[:size]


def delete_all(s3, bucket):
    for up in s3.list_multipart_uploads(Bucket=bucket).get("Uploads", []):
        s3.abort_multipart_upload(Bucket=bucket, Key=up["Key"], UploadId=up["UploadId"])
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket):
        for o in page.get("Contents", []):
            s3.delete_object(Bucket=bucket, Key=o["Key"])
    s3.delete_bucket(Bucket=bucket)


def wait_no_pieces(cluster, pool, timeout=60):
    deadline = time.monotonic() + timeout
    while True:
        left = cluster.pieces(pool)
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.5)


@pytest.fixture
def pool(ceph_cluster):
    return ceph_cluster.create_pool("t" + uuid.uuid4().hex[:10])


def test_two_gateways_share_objects_and_listings(ceph_cluster, pool, make_server):
    a = gateway(make_server, ceph_cluster, pool, "gwa")
    b = gateway(make_server, ceph_cluster, pool, "gwb")
    sa, sb = boto_client(a), boto_client(b)
    bucket = "two-" + uuid.uuid4().hex[:8]
    sa.create_bucket(Bucket=bucket)
    assert bucket in [x["Name"] for x in sb.list_buckets()["Buckets"]]
    sizes = [0, 1, 4096, 4 * MiB, 4 * MiB + 3, 9 * MiB + 1]
    keys = {}
    for i, size in enumerate(sizes):
        key = f"dir{i % 2}/obj-{i}"
        sa.put_object(Bucket=bucket, Key=key, Body=body(i, size), ContentType="text/x-test",
                      Metadata={"idx": str(i)})
        keys[key] = body(i, size)
    for key, data in keys.items():
        got = sb.get_object(Bucket=bucket, Key=key)
        assert got["Body"].read() == data, key
        assert got["ContentType"] == "text/x-test" and got["ContentLength"] == len(data)
    # A range across a piece boundary, through the other gateway.
    rng = sb.get_object(Bucket=bucket, Key="dir1/obj-5", Range=f"bytes={4 * MiB - 5}-{4 * MiB + 9}")
    assert rng["Body"].read() == keys["dir1/obj-5"][4 * MiB - 5:4 * MiB + 10]

    def listing(s3, **kw):
        r = s3.list_objects_v2(Bucket=bucket, **kw)
        return ([(o["Key"], o["Size"], o["ETag"]) for o in r.get("Contents", [])],
                [p["Prefix"] for p in r.get("CommonPrefixes", [])])
    for kw in ({}, {"Delimiter": "/"}, {"Prefix": "dir1/"}, {"StartAfter": "dir0/obj-2"},
               {"MaxKeys": 2}):
        assert listing(sa, **kw) == listing(sb, **kw), kw
    assert len(listing(sb)[0]) == len(sizes)

    # Overwrite on B, delete on B: A sees both at once.
    sb.put_object(Bucket=bucket, Key="dir0/obj-0", Body=b"replaced")
    assert sa.get_object(Bucket=bucket, Key="dir0/obj-0")["Body"].read() == b"replaced"
    sb.delete_object(Bucket=bucket, Key="dir1/obj-1")
    with pytest.raises(ClientError) as e:
        sa.head_object(Bucket=bucket, Key="dir1/obj-1")
    assert e.value.response["Error"]["Code"] in ("404", "NoSuchKey")

    # A multipart upload started on A, parts through both, completed on B.
    up = sa.create_multipart_upload(Bucket=bucket, Key="mpu", Metadata={"m": "1"})
    p1, p2 = body(100, 5 * MiB), body(101, 3 * MiB + 7)
    e1 = sa.upload_part(Bucket=bucket, Key="mpu", UploadId=up["UploadId"], PartNumber=1,
                        Body=p1)["ETag"]
    assert [u["UploadId"] for u in sb.list_multipart_uploads(Bucket=bucket)["Uploads"]] == \
        [up["UploadId"]]
    e2 = sb.upload_part(Bucket=bucket, Key="mpu", UploadId=up["UploadId"], PartNumber=2,
                        Body=p2)["ETag"]
    assert [p["PartNumber"] for p in
            sa.list_parts(Bucket=bucket, Key="mpu", UploadId=up["UploadId"])["Parts"]] == [1, 2]
    sb.complete_multipart_upload(Bucket=bucket, Key="mpu", UploadId=up["UploadId"],
                                 MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": e1},
                                                            {"PartNumber": 2, "ETag": e2}]})
    got = sa.get_object(Bucket=bucket, Key="mpu")
    assert got["Body"].read() == p1 + p2 and got["Metadata"] == {"m": "1"}
    assert got["ETag"].endswith('-2"')

    delete_all(sb, bucket)
    assert bucket not in [x["Name"] for x in sa.list_buckets()["Buckets"]]
    with pytest.raises(ClientError) as e:
        sa.get_object(Bucket=bucket, Key="mpu")
    assert e.value.response["Error"]["Code"] == "NoSuchBucket"
    # Re-created through B under the same name: A, which read the old bucket, sees the new.
    sb.create_bucket(Bucket=bucket)
    sb.put_object(Bucket=bucket, Key="again", Body=b"second life")
    assert sa.get_object(Bucket=bucket, Key="again")["Body"].read() == b"second life"
    assert [o["Key"] for o in sa.list_objects_v2(Bucket=bucket)["Contents"]] == ["again"]
    delete_all(sa, bucket)
    # Everything deleted: once the GC log drains (grace 1 s) no piece is left.
    assert wait_no_pieces(ceph_cluster, pool) == []


def test_bucket_policy_change_applies_on_every_gateway_at_once(ceph_cluster, pool, make_server):
    """Each gateway caches parsed policies by the bucket record's configuration generation,
    which every request reads: a change through one gateway binds the other's very next
    request, with no invalidation message."""
    import json
    import botocore
    a = gateway(make_server, ceph_cluster, pool, "gwa")
    b = gateway(make_server, ceph_cluster, pool, "gwb")
    sa, anon_b = boto_client(a), boto_client(b, signature_version=botocore.UNSIGNED)
    bucket = "pol-" + uuid.uuid4().hex[:8]
    sa.create_bucket(Bucket=bucket)
    sa.put_object(Bucket=bucket, Key="k", Body=b"v")

    def put(effect):
        sa.put_bucket_policy(Bucket=bucket, Policy=json.dumps({"Statement": [
            {"Effect": effect, "Principal": "*", "Action": "s3:GetObject",
             "Resource": f"arn:aws:s3:::{bucket}/*"}]}))

    def anon_get():
        try:
            return anon_b.get_object(Bucket=bucket, Key="k")["Body"].read()
        except ClientError as e:
            return e.response["Error"]["Code"]

    for _ in range(2):
        put("Allow")
        assert anon_get() == b"v"  # gateway b parses and caches it
        assert anon_get() == b"v"
        put("Deny")
        assert anon_get() == "AccessDenied"
    sa.delete_bucket_policy(Bucket=bucket)
    assert anon_get() == "AccessDenied"  # back to the private ACL
    sa.delete_object(Bucket=bucket, Key="k")
    sa.delete_bucket(Bucket=bucket)


def test_two_gateways_concurrent_overwrites(ceph_cluster, pool, make_server):
    a = gateway(make_server, ceph_cluster, pool, "gwa")
    b = gateway(make_server, ceph_cluster, pool, "gwb")
    clients = [boto_client(a), boto_client(b)]
    bucket = "race-" + uuid.uuid4().hex[:8]
    clients[0].create_bucket(Bucket=bucket)
    versions = {}

    def writer(w):
        s3 = boto_client([a, b][w % 2])
        for j in range(8):
            data = body(1000 * w + j, 64 * 1024 + w * 4099 + j)
            versions[hashlib.md5(data).hexdigest()] = data
            s3.put_object(Bucket=bucket, Key="hot", Body=data)
    with cf.ThreadPoolExecutor(4) as ex:
        list(ex.map(writer, range(4)))
    got = [c.get_object(Bucket=bucket, Key="hot") for c in clients]
    data = got[0]["Body"].read()
    assert data == got[1]["Body"].read()
    assert hashlib.md5(data).hexdigest() in versions and versions[hashlib.md5(data).hexdigest()] == data
    assert got[0]["ETag"].strip('"') == hashlib.md5(data).hexdigest()

    # If-None-Match: * racing through both gateways: exactly one write wins.
    results = []
    lock = threading.Lock()

    def cond_put(w):
        s3 = boto_client([a, b][w % 2])
        s3.meta.events.register("before-sign.s3.PutObject",
                                lambda request, **kw: request.headers.__setitem__(
                                    "If-None-Match", "*"))
        try:
            s3.put_object(Bucket=bucket, Key="once", Body=body(w, 1000 + w))
            r = "ok"
        except ClientError as e:
            r = e.response["Error"]["Code"]
        with lock:
            results.append((w, r))
    with cf.ThreadPoolExecutor(6) as ex:
        list(ex.map(cond_put, range(6)))
    winners = [w for w, r in results if r == "ok"]
    assert len(winners) == 1, results
    assert all(r == "PreconditionFailed" for w, r in results if w not in winners), results
    assert clients[1].get_object(Bucket=bucket, Key="once")["Body"].read() == \
        body(winners[0], 1000 + winners[0])
    delete_all(clients[1], bucket)
    assert wait_no_pieces(ceph_cluster, pool) == []


def test_reader_keeps_its_snapshot(ceph_cluster, pool, make_server):
    """A GET that started before an overwrite and a delete (through the other gateway)
    returns the old bytes whole: replaced data stays until the GC grace has passed."""
    a = gateway(make_server, ceph_cluster, pool, "gwa", grace=30)
    b = gateway(make_server, ceph_cluster, pool, "gwb", grace=30)
    sa, sb = boto_client(a), boto_client(b)
    bucket = "snap-" + uuid.uuid4().hex[:8]
    sa.create_bucket(Bucket=bucket)
    old = body(7, 24 * MiB + 5)
    sa.put_object(Bucket=bucket, Key="big", Body=old)
    resp = sa.get_object(Bucket=bucket, Key="big")
    stream = resp["Body"]
    head = stream.read(MiB)
    sb.put_object(Bucket=bucket, Key="big", Body=b"new")
    assert sb.get_object(Bucket=bucket, Key="big")["Body"].read() == b"new"
    sb.delete_object(Bucket=bucket, Key="big")
    time.sleep(2.5)  # the collectors drain due GC log entries about once a second
    rest = stream.read()
    assert head + rest == old
    delete_all(sb, bucket)


def test_kill9_gateway_mid_load(ceph_cluster, pool, make_server):
    a = gateway(make_server, ceph_cluster, pool, "gwa")
    b = gateway(make_server, ceph_cluster, pool, "gwb")
    sa, sb = boto_client(a, read_timeout=10), boto_client(b)
    bucket = "kill-" + uuid.uuid4().hex[:8]
    sb.create_bucket(Bucket=bucket)
    acked = {}
    stop = threading.Event()

    def load(w):
        s3 = boto_client(a, read_timeout=10, connect_timeout=2)
        i = 0
        while not stop.is_set():
            key = f"w{w}/{i}"
            data = body(w * 100000 + i, [1000, 300 * 1024, 5 * MiB + 11][i % 3])
            try:
                if i % 7 == 6:  # a multipart upload, maybe cut short by the kill
                    up = s3.create_multipart_upload(Bucket=bucket, Key=key)
                    e1 = s3.upload_part(Bucket=bucket, Key=key, UploadId=up["UploadId"],
                                        PartNumber=1, Body=body(i, 5 * MiB))["ETag"]
                    s3.complete_multipart_upload(
                        Bucket=bucket, Key=key, UploadId=up["UploadId"],
                        MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": e1}]})
                    data = body(i, 5 * MiB)
                else:
                    s3.put_object(Bucket=bucket, Key=key, Body=data)
            except Exception:
                return
            acked[key] = data
            i += 1
    threads = [threading.Thread(target=load, args=(w,)) for w in range(3)]
    for t in threads:
        t.start()
    deadline = time.monotonic() + 30
    while len(acked) < 12 and time.monotonic() < deadline:
        time.sleep(0.05)
    a.kill9()
    stop.set()
    for t in threads:
        t.join(30)
    assert len(acked) >= 12
    for key, data in acked.items():
        assert sb.get_object(Bucket=bucket, Key=key)["Body"].read() == data, key
    listed = {o["Key"] for p in sb.get_paginator("list_objects_v2").paginate(Bucket=bucket)
              for o in p.get("Contents", [])}
    assert set(acked) <= listed
    delete_all(sb, bucket)
    # What the deletes dropped goes through B's GC log (grace 1 s); what the killed gateway
    # left half-written is named by its intent log (recovered by B once its lease lapsed) or
    # referenced by nothing, and a gateway started with the operator's full sweep removes
    # it once it is older than the grace.
    time.sleep(2)
    make_server(name="gwc", extra_args=ceph_cluster.gateway_args(pool=pool, gc_grace=1) + [
        "--storage-rados-full-sweep", "true"])
    assert wait_no_pieces(ceph_cluster, pool) == []


@pytest.mark.skipif(not DRIVER.exists(), reason="tests/s3r_driver not built")
def test_token_and_native_paths_on_rados(ceph_cluster, tmp_path):
    """libs3rdma's token path and native path against a RADOS-backed gateway, cross-checked
    with boto3 over HTTP."""
    srv = RdmaServer(tmp_path, "rdma-rados", UCX_ENVS["ucx-default"],
                     extra_args=ceph_cluster.gateway_args()).start()
    try:
        s3 = boto_client(srv)
        bucket = "rdma-" + uuid.uuid4().hex[:8]
        s3.create_bucket(Bucket=bucket)
        sizes = ["1", "4096", str(MiB + 1), str(20 * MiB)]
        for transport in ("token", "native"):
            p = subprocess.run([str(DRIVER), "--transport", transport, "--no-fallback",
                                "--part-size", str(8 * MiB), "roundtrip", bucket, *sizes],
                               env=srv.client_env(), capture_output=True, text=True,
                               timeout=300)
            assert p.returncode == 0, (transport, p.stdout, p.stderr)
            r = result(p.stdout)
            assert r[f"{transport}_ops"] >= 2 * len(sizes) and r["errors"] == 0, (transport, r)
        # Written over the token path, read over HTTP (and the other way round).
        for transport in ("token", "native"):
            p = subprocess.run([str(DRIVER), "--transport", transport, "--no-fallback",
                                "put", bucket, f"x-{transport}", str(6 * MiB), "5"],
                               env=srv.client_env(), capture_output=True, text=True,
                               timeout=300)
            assert p.returncode == 0, (transport, p.stdout, p.stderr)
            assert s3.head_object(Bucket=bucket, Key=f"x-{transport}")["ContentLength"] == 6 * MiB
        delete_all(s3, bucket)
    finally:
        srv.stop()


def test_cluster_loss_answers_503_and_recovers(ceph_cluster, make_server):
    """The OSD stops answering (SIGSTOP): requests fail with 503 SlowDown after the op
    timeout (2 s here) instead of hanging or crashing the gateway; SIGCONT: it serves again.
    The pause stays well under the OSD's read lease (16 s), past which Ceph itself holds
    the placement groups back for a while even from fresh clients."""
    g = make_server(name="gw", extra_args=[*ceph_cluster.gateway_args(pool="s3rdma"),
                                           "--storage-rados-op-timeout", "2"])
    s3 = boto_client(g, read_timeout=60)
    bucket = "loss-" + uuid.uuid4().hex[:8]
    s3.create_bucket(Bucket=bucket)
    s3.put_object(Bucket=bucket, Key="k", Body=b"before")
    osd = ceph_cluster.osd_pid()
    os.kill(osd, signal.SIGSTOP)
    try:
        with pytest.raises(ClientError) as e:
            s3.put_object(Bucket=bucket, Key="k2", Body=b"during")
        assert e.value.response["ResponseMetadata"]["HTTPStatusCode"] == 503
        assert e.value.response["Error"]["Code"] == "SlowDown"
        assert g.alive()
    finally:
        os.kill(osd, signal.SIGCONT)
    deadline = time.monotonic() + 120
    while True:
        try:
            s3.put_object(Bucket=bucket, Key="k3", Body=b"after")
            break
        except ClientError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.5)
    assert s3.get_object(Bucket=bucket, Key="k")["Body"].read() == b"before"
    assert s3.get_object(Bucket=bucket, Key="k3")["Body"].read() == b"after"
    delete_all(s3, bucket)


def test_backend_settings_are_checked(tmp_path):
    """Bad backend settings stop s3rdmad at start with a clear message; a cluster that
    does not answer makes it exit (after the op timeout) instead of hanging."""
    from s3r_itest import BINARY, write_config
    cfg = tmp_path / "c.yaml"
    write_config(cfg)
    base = [BINARY, "--data", str(tmp_path / "d"), "--listen", "127.0.0.1:0", "--config",
            str(cfg), "--rdma-enabled", "false"]
    cases = [(["--storage-backend", "s3"], "storage.backend must be 'local' or 'rados', not 's3'"),
             (["--storage-backend", "rados"], "needs storage.rados.pool"),
             (["--storage-backend", "rados", "--storage-rados-pool", "p",
               "--storage-rados-op-timeout", "0"],
              "storage.rados.op_timeout must be a whole number from 1 to 3600, not '0'"),
             (["--storage-backend", "rados", "--storage-rados-pool", "p",
               "--storage-rados-gc-grace", "soon"],
              "storage.rados.gc_grace must be a whole number from 0 to 604800, not 'soon'"),
             (["--storage-backend", "rados", "--storage-rados-pool", "p",
               "--storage-rados-index-shards", "257"],
              "storage.rados.index_shards must be a whole number from 1 to 256, not '257'"),
             (["--storage-backend", "rados", "--storage-rados-pool", "p",
               "--storage-rados-index-shards", "0"],
              "storage.rados.index_shards must be a whole number from 1 to 256, not '0'"),
             (["--storage-backend", "rados", "--storage-rados-pool", "p",
               "--storage-rados-lease", "20", "--storage-rados-op-timeout", "10"],
              "storage.rados.lease (20 s) must be more than twice storage.rados.op_timeout "
              "(10 s)"),
             (["--storage-backend", "rados", "--storage-rados-pool", "p",
               "--storage-rados-lease", "5"],
              "storage.rados.lease (5 s) must be more than twice storage.rados.op_timeout "
              "(10 s)")]
    for args, msg in cases:
        p = subprocess.run(base + args, capture_output=True, text=True, timeout=30)
        assert p.returncode != 0 and msg in p.stderr, (args, p.returncode, p.stderr)
    dead = tmp_path / "dead.conf"
    port = __import__("s3r_itest").free_port()
    dead.write_text(f"[global]\nmon host = [v2:127.0.0.1:{port}]\nauth client required = none\n"
                    "ms client mode = crc\nms mon client mode = crc\n")
    p = subprocess.run(base + ["--storage-backend", "rados", "--storage-rados-pool", "p",
                               "--storage-rados-conf", str(dead), "--storage-rados-op-timeout",
                               "2"], capture_output=True, text=True, timeout=60)
    assert p.returncode == 1 and "cannot open the store" in p.stderr, (p.returncode, p.stderr)


def test_lifecycle_runs_on_one_gateway(ceph_cluster, pool, make_server):
    """Two gateways on one pool, each with a lifecycle runner (a 2-second day, a pass every
    second): one holds the lease and aborts every expired upload, each exactly once; the
    other never acts while the holder lives."""
    args = ceph_cluster.gateway_args(pool=pool, gc_grace=1) + ["--lifecycle-day-seconds", "2"]
    a = make_server(name="lca", extra_args=args)
    b = make_server(name="lcb", extra_args=args)
    sa = boto_client(a)
    bucket = "lc-" + uuid.uuid4().hex[:8]
    sa.create_bucket(Bucket=bucket)
    ids = [sa.create_multipart_upload(Bucket=bucket, Key=f"tmp/{i}")["UploadId"]
           for i in range(6)]
    sa.put_bucket_lifecycle_configuration(Bucket=bucket, LifecycleConfiguration={"Rules": [
        {"ID": "tmp", "Filter": {"Prefix": "tmp/"}, "Status": "Enabled",
         "AbortIncompleteMultipartUpload": {"DaysAfterInitiation": 1}}]})
    deadline = time.monotonic() + 60
    while sa.list_multipart_uploads(Bucket=bucket).get("Uploads"):
        assert time.monotonic() < deadline, a.log_tail() + b.log_tail()
        time.sleep(0.3)
    logs = [srv.log_tail(500) for srv in (a, b)]
    counts = [[log.count(f"upload {u} aborted") for u in ids] for log in logs]
    # Every upload aborted once, all by the same gateway.
    assert [x + y for x, y in zip(*counts)] == [1] * len(ids), counts
    assert sorted(sum(c) for c in counts) == [0, len(ids)], counts
    delete_all(sa, bucket)


def fnv1a_shard(key, n):
    """The shard of n that holds key: FNV-1a 64 of its bytes, modulo n (docs/storage.md)."""
    h = 0xcbf29ce484222325
    for byte in key.encode():
        h = ((h ^ byte) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    return h % n


def index_objects(cluster, pool):
    """The pool's bucket index objects: {name: sorted omap keys}."""
    names = [n for n in cluster.rados("ls", pool=pool).decode().split()
             if n.startswith("s3rdma.index.")]
    return {n: sorted(cluster.rados("listomapkeys", n, pool=pool).decode().splitlines())
            for n in names}


def test_sharded_index_places_lists_and_deletes(ceph_cluster, pool, make_server):
    """A bucket created with 4 index shards: each key lands on the shard its FNV-1a hash
    names (so on several shard objects), listings merge the shards in key order (pages,
    prefix, delimiter, start-after, continuation) exactly as a sorted list would, and the
    bucket refuses deletion while any shard holds a key, then goes with all its shards.
    A gateway configured for 1 shard reads and writes the bucket through its record's
    count, and a bucket it creates keeps the single, unsharded index object."""
    g4 = make_server(name="gw4", extra_args=ceph_cluster.gateway_args(pool=pool, gc_grace=1,
                                                                     index_shards=4))
    g1 = make_server(name="gw1", extra_args=ceph_cluster.gateway_args(pool=pool, gc_grace=1,
                                                                     index_shards=1))
    s4, s1 = boto_client(g4), boto_client(g1)
    bucket = "shd-" + uuid.uuid4().hex[:8]
    s4.create_bucket(Bucket=bucket)
    keys = sorted({f"{d}/{i:03d}" for d in ("a", "b/c", "b/d", "z") for i in range(12)} |
                  {"top", "b/", "b0", "\u00e9t\u00e9/x"})
    for i, k in enumerate(keys):
        (s4 if i % 2 else s1).put_object(Bucket=bucket, Key=k, Body=k.encode())

    idx = index_objects(ceph_cluster, pool)
    shards = sorted(n for n in idx if n.count(".") == 3)
    assert len(shards) == 4 and len(idx) == 4, idx.keys()
    base = shards[0][:-2]
    assert shards == [f"{base}.{s}" for s in range(4)]
    for s in range(4):
        on = idx[f"{base}.{s}"]
        assert on == sorted(k for k in keys if fnv1a_shard(k, 4) == s), s
        assert on, f"shard {s} is empty: the keys are not spread"

    def walk(s3, **kw):
        return walk_listing(s3, bucket, **kw)

    enc = sorted(keys, key=lambda k: k.encode())
    for s3 in (s4, s1):
        assert walk(s3) == (enc, [])
        assert walk(s3, MaxKeys=5) == (enc, [])
        assert walk(s3, MaxKeys=3, Prefix="b/") == ([k for k in enc if k.startswith("b/")], [])
        assert walk(s3, StartAfter="b/c/005", MaxKeys=4) == ([k for k in enc if k > "b/c/005"],
                                                             [])
        # The delimiter skips each common prefix with a seek across every shard.
        assert walk(s3, Delimiter="/", MaxKeys=2) == (["b0", "top"],
                                                      ["a/", "b/", "z/", "\u00e9t\u00e9/"])
        assert walk(s3, Delimiter="/", Prefix="b/", MaxKeys=1) == (["b/"], ["b/c/", "b/d/"])
        assert [c["Key"] for c in s3.list_objects(Bucket=bucket, Marker="z/010")["Contents"]] \
            == [k for k in enc if k > "z/010"]

    # Conditional writes are judged on the key's shard.
    cond = boto_client(g1)
    cond.meta.events.register("before-sign.s3.PutObject",
                              lambda request, **kw: request.headers.__setitem__(
                                  "If-None-Match", "*"))
    with pytest.raises(ClientError) as e:
        cond.put_object(Bucket=bucket, Key="top", Body=b"x")
    assert e.value.response["Error"]["Code"] == "PreconditionFailed"
    cond.put_object(Bucket=bucket, Key="new", Body=b"new")
    keys.append("new")

    # Not empty while any shard holds a key: down to the last key, whichever shard it is on.
    last = keys[-1]
    for k in keys[:-1]:
        s4.delete_object(Bucket=bucket, Key=k)
    with pytest.raises(ClientError) as e:
        s1.delete_bucket(Bucket=bucket)
    assert e.value.response["Error"]["Code"] == "BucketNotEmpty"
    assert s4.get_object(Bucket=bucket, Key=last)["Body"].read() == last.encode()
    s4.put_object(Bucket=bucket, Key=last, Body=b"still writable")
    s1.delete_object(Bucket=bucket, Key=last)
    s1.delete_bucket(Bucket=bucket)
    assert index_objects(ceph_cluster, pool) == {}
    # Re-created under the same name with 1 shard: the gateway that cached the 4-shard
    # bucket finds its index gone, looks the name up afresh and reads the new one.
    s1.create_bucket(Bucket=bucket)
    s1.put_object(Bucket=bucket, Key="again", Body=b"1")
    assert [o["Key"] for o in s4.list_objects_v2(Bucket=bucket)["Contents"]] == ["again"]
    assert s4.get_object(Bucket=bucket, Key="again")["Body"].read() == b"1"
    delete_all(s4, bucket)

    # A bucket created with 1 shard has today's single index object, whoever serves it.
    one = "one-" + uuid.uuid4().hex[:8]
    s1.create_bucket(Bucket=one)
    for k in ("x", "y", "z"):
        s4.put_object(Bucket=one, Key=k, Body=b"1")
    idx = index_objects(ceph_cluster, pool)
    assert list(idx.values()) == [["x", "y", "z"]]
    assert list(idx)[0].count(".") == 2
    assert [o["Key"] for o in s4.list_objects_v2(Bucket=one)["Contents"]] == ["x", "y", "z"]
    delete_all(s4, one)
    assert wait_no_pieces(ceph_cluster, pool) == []
