"""Crash leftovers on RADOS by intent log (docs/storage.md, "Crash leftovers: the intent log"),
on the session's Ceph cluster (scripts/ceph-dev), each test in a pool of its own:

- a gateway killed (debug.rados_crash_at, SIGKILL) at each step of a PUT, an overwrite, a part
  upload, a Complete and a delete: once a live gateway has recovered the dead one's intent log (its lease
  lapsed), every acknowledged object reads back whole, each key holds its old or its new
  object (never a mix), and after everything is deleted the pool holds no piece: nothing was
  left unreferenced. No gateway restarts, so no start sweep takes part;
- a slow writer on a live gateway, whose first piece is older than the GC grace when another
  gateway starts (its start sweep) and recovers logs, completes its PUT intact.
"""
import http.client
import os
import signal
import sys
import threading
import time
import uuid
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from s3r_itest import boto_client, empty_bucket  # noqa: E402

MiB = 1024 * 1024
# Seconds: recovery starts 1 to 1.5 leases after a gateway dies. The lease must be more than
# twice the op timeout (the gateway refuses to start otherwise); 4 s keeps a cluster call
# under CI load well inside its timeout, and 9 s bounds the wait for a recovery.
OP_TIMEOUT = 4
LEASE = 9


@pytest.fixture
def pool(ceph_cluster):
    return ceph_cluster.create_pool("i" + uuid.uuid4().hex[:10])


def gateway(make_server, cluster, pool, name, crash_at=None):
    args = cluster.gateway_args(pool=pool, gc_grace=1) + [
        "--storage-rados-lease", str(LEASE), "--storage-rados-op-timeout", str(OP_TIMEOUT)]
    if crash_at:
        args += ["--debug-rados-crash-at", crash_at]
    return make_server(name=name, extra_args=args)


def body(tag, size):
    seed = tag.encode() * 7 + b"|"
    return (seed * (size // len(seed) + 1))[:size]


def registered(cluster, pool):
    """The gateway ids in the pool's registry."""
    return set(cluster.rados("listomapkeys", "s3rdma.gateways", pool=pool).decode().split())


def wait_until(cond, timeout=90, what="condition", detail=lambda: ""):
    deadline = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < deadline, f"timed out waiting for {what} {detail()}"
        time.sleep(0.3)


def dies(call):
    """Runs call against a gateway that kills itself during it: no answer comes."""
    try:
        call()
    except Exception:
        return
    pytest.fail("the gateway answered: its crash point was not reached")


# The steps of each write (debug.rados_crash_at), with object sizes of one piece (small) and
# of several (the pieces go before the commit, logged without a key first).
PUT_STEPS = ["put-intent", "put-pieces", "put-switch"]
COMPLETE_STEPS = ["complete-intent", "complete-claim", "complete-switch"]


def test_kill9_at_every_step_leaves_nothing_and_loses_nothing(ceph_cluster, pool, make_server):
    live = gateway(make_server, ceph_cluster, pool, "live")
    s3 = boto_client(live)
    bucket = "crash-" + uuid.uuid4().hex[:8]
    s3.create_bucket(Bucket=bucket)
    # (step, what): the writes to cut short, each by a gateway of its own
    cases = [(step, (size, overwrite)) for step in PUT_STEPS
             for size, overwrite in ((4096, False), (4096, True), (9 * MiB, False))]
    cases += [("part-pieces", (4096, True)), ("part-pieces", (6 * MiB, False))]
    cases += [(step, None) for step in COMPLETE_STEPS]
    cases += [("delete-intent", 4096), ("delete-switch", 9 * MiB)]
    # Every doomed gateway is up (its start sweep done) before the first crash, so only the
    # recovery of intent logs can clean up after them.
    dead = [gateway(make_server, ceph_cluster, pool, f"d{i}", crash_at=step)
            for i, (step, _) in enumerate(cases)]
    for d in dead:
        wait_until(lambda: "start sweep done" in d.log_text(), what="a start sweep")
    allowed = {}  # key -> the bytes it may hold after recovery
    uploads = {}  # upload id -> the step its Complete was cut short at
    for n, ((step, what), d) in enumerate(zip(cases, dead)):
        key = f"{step}/{n}"
        client = boto_client(d)
        if step.startswith("put-"):
            size, overwrite = what
            old = body(f"old{n}", size) if overwrite else None
            if overwrite:
                s3.put_object(Bucket=bucket, Key=key, Body=old)
            new = body(f"new{n}", size)
            dies(lambda: client.put_object(Bucket=bucket, Key=key, Body=new))
            allowed[key] = {old, new} if step == "put-switch" else {old}
        elif step.startswith("delete-"):
            # A delete killed before its switch (the object stays) or after it, before its
            # blob went to the GC log (the object is gone, and so must its pieces be).
            old = body(f"old{n}", what)
            s3.put_object(Bucket=bucket, Key=key, Body=old)
            dies(lambda: client.delete_object(Bucket=bucket, Key=key))
            allowed[key] = {old} if step == "delete-intent" else {None}
        elif step == "part-pieces":
            # A part killed before it is recorded, replacing a recorded one or not.
            size, replace = what
            up = s3.create_multipart_upload(Bucket=bucket, Key=key)["UploadId"]
            first = body(f"p{n}", 5 * MiB)
            etag = s3.upload_part(Bucket=bucket, Key=key, UploadId=up, PartNumber=1,
                                  Body=first)["ETag"]
            dies(lambda: client.upload_part(Bucket=bucket, Key=key, UploadId=up,
                                            PartNumber=1 if replace else 2,
                                            Body=body(f"q{n}", size)))
            # The acknowledged part is still there and completes the upload.
            d.proc.wait(30)
            s3.complete_multipart_upload(Bucket=bucket, Key=key, UploadId=up, MultipartUpload={
                "Parts": [{"PartNumber": 1, "ETag": etag}]})
            allowed[key] = {first}
        else:
            old = body(f"old{n}", 4096)
            s3.put_object(Bucket=bucket, Key=key, Body=old)
            up = s3.create_multipart_upload(Bucket=bucket, Key=key)["UploadId"]
            parts = [body(f"c{n}.{i}", 5 * MiB) for i in range(2)]
            etags = [s3.upload_part(Bucket=bucket, Key=key, UploadId=up, PartNumber=i + 1,
                                    Body=p)["ETag"] for i, p in enumerate(parts)]
            # Part 3 is uploaded but left out of the Complete.
            s3.upload_part(Bucket=bucket, Key=key, UploadId=up, PartNumber=3, Body=b"x" * 1000)
            dies(lambda: client.complete_multipart_upload(
                Bucket=bucket, Key=key, UploadId=up, MultipartUpload={
                    "Parts": [{"PartNumber": i + 1, "ETag": e} for i, e in enumerate(etags)]}))
            allowed[key] = {old, b"".join(parts)} if step == "complete-switch" else {old}
            uploads[up] = step
        d.proc.wait(30)
    # The live gateway recovers every dead one's log once its lease lapsed.
    wait_until(lambda: len(registered(ceph_cluster, pool)) == 1, what="recovery")
    for key, ok in allowed.items():
        try:
            got = s3.get_object(Bucket=bucket, Key=key)["Body"].read()
        except s3.exceptions.NoSuchKey:
            got = None  # a new key whose PUT died before its switch
        assert got in ok, key
    # A Complete cut short before its claim leaves the upload open.
    open_ups = {u["UploadId"] for u in s3.list_multipart_uploads(Bucket=bucket).get("Uploads", [])}
    for up, step in uploads.items():
        assert (up in open_ups) == (step == "complete-intent"), step
    empty_bucket(s3, bucket)
    s3.delete_bucket(Bucket=bucket)  # and the open uploads with it
    # Nothing unreferenced is left: once the GC log drains, no piece remains.
    wait_until(lambda: not ceph_cluster.pieces(pool), what="the pool to empty",
               detail=lambda: ceph_cluster.pieces(pool))
    assert "recovered the intent log of dead gateway" in live.log_text()


def test_slow_writer_survives_another_gateways_start_and_recovery(ceph_cluster, pool,
                                                                  make_server):
    """A PUT whose first piece is older than gc_grace when another gateway starts: the new
    gateway's start sweep and its recovery leave it alone (before the intent log, the sweep
    removed the piece and the PUT's object lost its first 4 MiB)."""
    a = gateway(make_server, ceph_cluster, pool, "slow")
    s3 = boto_client(a)
    bucket = "slow-" + uuid.uuid4().hex[:8]
    s3.create_bucket(Bucket=bucket)
    data = body("slow", 9 * MiB)
    url = s3.generate_presigned_url("put_object", Params={"Bucket": bucket, "Key": "k"},
                                    ExpiresIn=600)
    path = url.split(str(a.port), 1)[1]
    conn = http.client.HTTPConnection("127.0.0.1", a.port, timeout=120)
    conn.putrequest("PUT", path, skip_accept_encoding=True)
    conn.putheader("Content-Length", str(len(data)))
    conn.endheaders()
    conn.send(data[:5 * MiB])
    # The first piece is in the cluster; the writer now pauses longer than the grace.
    wait_until(lambda: ceph_cluster.pieces(pool), what="the first piece")
    time.sleep(2)
    b = gateway(make_server, ceph_cluster, pool, "starter")
    wait_until(lambda: "start sweep done" in b.log_text(), what="b's start sweep")
    # And at least one recovery pass of b has looked at a's (live) log: a pass every half
    # lease, on a collector tick (at most 1 s apart).
    time.sleep(LEASE / 2 + 1.5)
    conn.send(data[5 * MiB:])
    resp = conn.getresponse()
    resp.read()
    assert resp.status == 200
    got = boto_client(b).get_object(Bucket=bucket, Key="k")["Body"].read()
    assert got == data
    assert len(registered(ceph_cluster, pool)) == 2


def test_lease_outlives_a_start_sweep_longer_than_itself(ceph_cluster, pool, make_server):
    """A start sweep that takes longer than the lease (debug.rados_sweep_page_ms stands in for
    a pool of millions of pieces): the gateway keeps its lease and its id, and writes during
    the sweep succeed. Before the lease had a thread of its own, the collector renewed it only
    after the sweep: writes got 503 once the lease was half old, and the gateway went on under
    a new id while others could recover its log."""
    lease, op_timeout = 6, 2
    args = ceph_cluster.gateway_args(pool=pool, gc_grace=1) + [
        "--storage-rados-lease", str(lease), "--storage-rados-op-timeout", str(op_timeout),
        "--debug-rados-sweep-page-ms", str((lease + 1) * 1000),
        "--storage-rados-full-sweep", "true"]
    g = make_server(name="sweeper", extra_args=args)
    ids = registered(ceph_cluster, pool)
    assert len(ids) == 1
    s3 = boto_client(g)
    bucket = "sweep-" + uuid.uuid4().hex[:8]
    s3.create_bucket(Bucket=bucket)
    failed, n = [], 0
    while "start sweep done" not in g.log_text():
        try:
            s3.put_object(Bucket=bucket, Key=f"k{n}", Body=body(f"k{n}", 4096))
        except Exception as e:  # noqa: BLE001: every failure is the finding
            failed.append((n, str(e)))
        n += 1
        time.sleep(0.3)
    assert not failed, f"writes failed during the start sweep: {failed[:3]}"
    # A renewal after the sweep (at most a second later) finds the lease still held.
    time.sleep(1.5)
    log = g.log_text()
    assert "lease lapsed" not in log and "not fresh" not in log
    assert registered(ceph_cluster, pool) == ids
    for k in range(n):
        assert s3.get_object(Bucket=bucket, Key=f"k{k}")["Body"].read() == body(f"k{k}", 4096)
    empty_bucket(s3, bucket)


def stopped(proc):
    """True when proc (a child of this process) reports a stop (debug.rados_crash_at
    step=stop, SIGSTOP) not reported before."""
    pid, status = os.waitpid(proc.pid, os.WUNTRACED | os.WNOHANG)
    return pid == proc.pid and os.WIFSTOPPED(status)


def remove_every_version(s3, bucket):
    for page in s3.get_paginator("list_object_versions").paginate(Bucket=bucket):
        for v in page.get("Versions", []) + page.get("DeleteMarkers", []):
            s3.delete_object(Bucket=bucket, Key=v["Key"], VersionId=v["VersionId"])


def test_kill9_after_switches_that_drop_blobs(ceph_cluster, pool, make_server):
    """The writes that relied on the start sweep until 2026-11-26 name what they drop in an
    intent before their switch: a gateway killed after the switch, before the GC log write,
    leaves nothing once a live gateway recovered its log (no gateway restarts, so no sweep).
    - an overwrite whose first switch lost a race to another writer: its retry drops that
      writer's blob (the gateway stops at put-pieces twice, the test overwrites in between);
    - a version removed by id, and a null version replaced while versioning is suspended
      (version-switch);
    - an abort, killed after its claim (abort-claim);
    - a bucket delete, killed once its open uploads' records are gone, before their parts
      (bucket-uploads);
    - a Complete over an existing object (put-switch: after its switch, before its GC log)."""
    live = gateway(make_server, ceph_cluster, pool, "live")
    s3 = boto_client(live)
    plain, vers, susp = ("drop-" + uuid.uuid4().hex[:8] + s for s in ("p", "v", "s"))
    for b in (plain, vers, susp):
        s3.create_bucket(Bucket=b)
    s3.put_bucket_versioning(Bucket=vers, VersioningConfiguration={"Status": "Enabled"})
    s3.put_bucket_versioning(Bucket=susp, VersioningConfiguration={"Status": "Suspended"})
    steps = ["put-pieces=stop,put-switch", "version-switch", "version-switch", "abort-claim",
             "put-switch", "bucket-uploads"]
    dead = [gateway(make_server, ceph_cluster, pool, f"d{i}", crash_at=step)
            for i, step in enumerate(steps)]
    for d in dead:
        wait_until(lambda: "start sweep done" in d.log_text(), what="a start sweep")
    expect = {}  # (bucket, key) -> bytes

    # A retried overwrite.
    d = dead[0]
    s3.put_object(Bucket=plain, Key="race", Body=body("old", 4096))
    t = threading.Thread(target=dies, args=(lambda: boto_client(d).put_object(
        Bucket=plain, Key="race", Body=body("new", 4096)),))
    t.start()
    wait_until(lambda: stopped(d.proc), what="the first switch")
    s3.put_object(Bucket=plain, Key="race", Body=body("mid", 4096))  # wins the race
    os.kill(d.proc.pid, signal.SIGCONT)
    # Its compare fails on the new record: the retry reaches put-pieces again.
    wait_until(lambda: stopped(d.proc), what="the retried switch")
    os.kill(d.proc.pid, signal.SIGCONT)
    t.join(60)
    expect[(plain, "race")] = body("new", 4096)

    # A version removed by id.
    v1 = s3.put_object(Bucket=vers, Key="v", Body=body("v1", 4096))["VersionId"]
    s3.put_object(Bucket=vers, Key="v", Body=body("v2", 4096))
    dies(lambda: boto_client(dead[1]).delete_object(Bucket=vers, Key="v", VersionId=v1))
    expect[(vers, "v")] = body("v2", 4096)

    # A null version replaced while suspended.
    s3.put_object(Bucket=susp, Key="n", Body=body("n1", 4096))
    dies(lambda: boto_client(dead[2]).put_object(Bucket=susp, Key="n", Body=body("n2", 4096)))
    expect[(susp, "n")] = body("n2", 4096)

    # An abort.
    up = s3.create_multipart_upload(Bucket=plain, Key="ab")["UploadId"]
    s3.upload_part(Bucket=plain, Key="ab", UploadId=up, PartNumber=1, Body=body("ab", 5 * MiB))
    dies(lambda: boto_client(dead[3]).abort_multipart_upload(Bucket=plain, Key="ab",
                                                             UploadId=up))

    # A Complete over an existing object.
    s3.put_object(Bucket=plain, Key="c", Body=body("c-old", 4096))
    up2 = s3.create_multipart_upload(Bucket=plain, Key="c")["UploadId"]
    etag = s3.upload_part(Bucket=plain, Key="c", UploadId=up2, PartNumber=1,
                          Body=body("c-new", 1000))["ETag"]
    dies(lambda: boto_client(dead[4]).complete_multipart_upload(
        Bucket=plain, Key="c", UploadId=up2,
        MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": etag}]}))
    expect[(plain, "c")] = body("c-new", 1000)

    # A bucket delete with an upload still open; the delete is retried through the live one.
    gone = "drop-" + uuid.uuid4().hex[:8] + "b"
    s3.create_bucket(Bucket=gone)
    up3 = s3.create_multipart_upload(Bucket=gone, Key="open")["UploadId"]
    s3.upload_part(Bucket=gone, Key="open", UploadId=up3, PartNumber=1, Body=body("b", 1000))
    dies(lambda: boto_client(dead[5]).delete_bucket(Bucket=gone))
    s3.delete_bucket(Bucket=gone)

    for d in dead:
        d.proc.wait(30)
    wait_until(lambda: len(registered(ceph_cluster, pool)) == 1, what="recovery")
    for (b, key), data in expect.items():
        assert s3.get_object(Bucket=b, Key=key)["Body"].read() == data, (b, key)
    vs = s3.list_object_versions(Bucket=vers).get("Versions", [])
    assert [v["VersionId"] for v in vs if v["VersionId"] == v1] == []
    assert not s3.list_multipart_uploads(Bucket=plain).get("Uploads")
    for b in (plain, vers, susp):
        remove_every_version(s3, b)
        s3.delete_bucket(Bucket=b)
    wait_until(lambda: not ceph_cluster.pieces(pool), what="the pool to empty",
               detail=lambda: ceph_cluster.pieces(pool))
