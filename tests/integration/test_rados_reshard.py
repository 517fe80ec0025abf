"""Online resharding of a RADOS bucket's index (`s3rdmad reshard BUCKET SHARDS`,
docs/storage.md "Online resharding"), on the session's Ceph cluster:

- while two gateways write, delete and race If-None-Match writes into the bucket, and a
  paged listing is walked across it, the bucket moves from 2 index shards to 8 (then to 3):
  no request fails, exactly one conditional writer wins each key, the walk that crossed it
  returns exactly the keys, and afterwards each key sits on the shard FNV-1a names in the
  new generation, whose objects alone remain;
- listings (prefix, delimiter, start-after, continuation) of the resharded bucket equal
  those of an unsharded bucket and of the local backend holding the same keys;
- a reshard killed after each of its steps (debug.rados_crash_at) leaves a bucket that
  reads right, is finished by the next run, and loses nothing acknowledged meanwhile;
- a run stopped past its lock's lapse, between reading an old shard and writing the new
  ones, and finished meanwhile by another run: its writes fail (the new shards name the
  other run), so the changes acknowledged meanwhile survive, and it exits with an error;
- a versioned bucket's versions and delete markers move with their keys;
- a runner killed once it has fenced the old shards, with writers running: the writers
  finish the reshard themselves once its lock lapses, and none fails;
- a runner killed during the bulk copy, with writers running: with no operator action a
  gateway resumes the reshard from the registry of reshards under way once its lock lapses,
  every key is listed once and read back, and a registry entry whose bucket is gone is
  dropped;
- a ListObjectVersions page whose shards a reshard removes between two of its batches
  answers the complete page from the new ones, but fails when the bucket was deleted and
  made again meanwhile.
"""
import concurrent.futures as cf
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
from s3r_itest import BINARY, boto_client, walk_listing as walk  # noqa: E402

STATIC = sorted({f"s/{d}/{i:03d}" for d in ("a", "b/c", "b/d", "z") for i in range(40)} |
                {"s/top", "s/b/", "s/b0", "s/\u00e9t\u00e9/x"})


@pytest.fixture
def pool(ceph_cluster):
    return ceph_cluster.create_pool("r" + uuid.uuid4().hex[:10])


def gateway(make_server, cluster, pool, name, shards):
    return make_server(name=name, extra_args=cluster.gateway_args(pool=pool, gc_grace=1,
                                                                  index_shards=shards))


def reshard(cluster, pool, tmp_path, bucket, shards, crash_at=None):
    """Runs s3rdmad reshard; returns the finished process."""
    data = tmp_path / "reshard-data"
    data.mkdir(exist_ok=True)
    args = [BINARY, "reshard", bucket, str(shards), "--data", str(data),
            *cluster.gateway_args(pool=pool)]
    if crash_at:
        args += ["--debug-rados-crash-at", crash_at]
    return subprocess.run(args, capture_output=True, text=True, timeout=120)


def fnv1a_shard(key, n):
    h = 0xcbf29ce484222325
    for byte in key.encode(errors="surrogateescape"):
        h = ((h ^ byte) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    return h % n


def index_names(cluster, pool):
    return [n for n in cluster.rados("ls", pool=pool).decode().split()
            if n.startswith("s3rdma.index.")]


def index_objects(cluster, pool):
    names = index_names(cluster, pool)
    # Version entries (0xFE ...) and the tombstone or marks (0xFF ...) are not UTF-8.
    return {n: sorted(k for k in cluster.rados("listomapkeys", n, pool=pool)
                      .decode(errors="surrogateescape").splitlines()) for n in names}


LISTINGS = [dict(Prefix="s/"), dict(Prefix="s/", MaxKeys=7), dict(Prefix="s/b/", MaxKeys=3),
            dict(Prefix="s/", StartAfter="s/b/c/017", MaxKeys=9),
            dict(Prefix="s/", Delimiter="/", MaxKeys=2),
            dict(Prefix="s/b/", Delimiter="/", MaxKeys=1)]


def put_static(s3, bucket):
    with cf.ThreadPoolExecutor(8) as ex:
        list(ex.map(lambda k: s3.put_object(Bucket=bucket, Key=k, Body=k.encode()), STATIC))


def two_gateways_with_bucket(make_server, cluster, pool, prefix):
    """Two gateways of 2-shard buckets, their clients, and a new bucket (named prefix +
    random hex) made through the first and holding put_static's keys."""
    ga = gateway(make_server, cluster, pool, "gwa", 2)
    gb = gateway(make_server, cluster, pool, "gwb", 2)
    sa, sb = boto_client(ga), boto_client(gb)
    bucket = prefix + uuid.uuid4().hex[:8]
    sa.create_bucket(Bucket=bucket)
    put_static(sa, bucket)
    return ga, gb, sa, sb, bucket


def if_none_match(s3):
    s3.meta.events.register("before-sign.s3.PutObject",
                            lambda request, **kw: request.headers.__setitem__(
                                "If-None-Match", "*"))
    return s3


class Load:
    """Writers through both gateways while a reshard runs: plain PUTs and DELETEs of their
    own keys, and If-None-Match PUTs racing on shared keys (each racer on either gateway).
    Records what was acknowledged and every failure."""

    def __init__(self, gws, bucket, tag):
        self.gws, self.bucket, self.tag = gws, bucket, tag
        self.live, self.errors, self.won = {}, [], {}
        self.ops = 0
        self.stop = threading.Event()
        self.lock = threading.Lock()
        self.threads = [threading.Thread(target=self.writer, args=(w,)) for w in range(4)] + \
                       [threading.Thread(target=self.racer, args=(w,)) for w in range(4)]

    def writer(self, w):
        s3 = boto_client(self.gws[w % 2])
        i = 0
        while not self.stop.is_set():
            k = f"{self.tag}w{w}/{i:05d}"
            try:
                s3.put_object(Bucket=self.bucket, Key=k, Body=k.encode())
                with self.lock:
                    self.live[k] = k.encode()
                    self.ops += 1
                if i % 3 == 0:
                    s3.delete_object(Bucket=self.bucket, Key=k)
                    with self.lock:
                        del self.live[k]
            except Exception as e:  # noqa: BLE001 - every failure is a test failure
                self.errors.append(f"{k}: {e!r}")
            i += 1

    def racer(self, w):
        s3 = if_none_match(boto_client(self.gws[w % 2]))
        i = 0
        while not self.stop.is_set():
            k = f"{self.tag}once/{i:05d}"
            try:
                s3.put_object(Bucket=self.bucket, Key=k, Body=f"{w}".encode())
                with self.lock:
                    assert k not in self.won, f"{k}: a second If-None-Match writer won"
                    self.won[k] = f"{w}".encode()
            except ClientError as e:
                if e.response["Error"]["Code"] != "PreconditionFailed":
                    self.errors.append(f"{k}: {e!r}")
            except Exception as e:  # noqa: BLE001
                self.errors.append(f"{k}: {e!r}")
            i += 1
            if i % 10 == 0:
                time.sleep(0.01)

    def wait_ops(self, n, timeout=60):
        """Until the writers have made n more PUTs (boto clients take a while to start)."""
        deadline, start = time.monotonic() + timeout, self.ops
        while self.ops < start + n and not self.errors:
            assert time.monotonic() < deadline, "the writers are stuck"
            time.sleep(0.02)

    def __enter__(self):
        for t in self.threads:
            t.start()
        self.wait_ops(40)
        return self

    def __exit__(self, *exc):
        self.wait_ops(40)
        self.stop.set()
        for t in self.threads:
            t.join()

    def check(self, s3):
        assert self.errors == []
        assert self.live, "the writers wrote nothing"
        keys = walk(s3, self.bucket, Prefix=self.tag)[0]
        assert keys == sorted(set(self.live) | set(self.won), key=lambda k: k.encode())
        for k in list(self.live)[::7] + list(self.won)[::7]:
            want = self.live.get(k, self.won.get(k))
            assert s3.get_object(Bucket=self.bucket, Key=k)["Body"].read() == want, k


def test_online_reshard_under_load_matches_unsharded_and_local(ceph_cluster, pool,
                                                               make_server, tmp_path):
    ga = gateway(make_server, ceph_cluster, pool, "gwa", 2)
    gb = gateway(make_server, ceph_cluster, pool, "gwb", 1)
    local = make_server(name="local")
    sa, sb, sl = boto_client(ga), boto_client(gb), boto_client(local)
    bucket, flat = "rsh-" + uuid.uuid4().hex[:8], "flat-" + uuid.uuid4().hex[:8]
    sa.create_bucket(Bucket=bucket)  # 2 shards
    sb.create_bucket(Bucket=flat)  # 1 index object
    sl.create_bucket(Bucket=bucket)
    for s3, b in ((sa, bucket), (sb, flat), (sl, bucket)):
        put_static(s3, b)

    # A walk of 7-key pages that starts before the reshard and ends after it.
    crossing = {}
    started = threading.Event()

    def slow_walk():
        started.set()
        crossing["got"] = walk(sb, bucket, pause=lambda: time.sleep(0.05), Prefix="s/",
                               MaxKeys=7)

    with Load([ga, gb], bucket, "1-") as load:
        walker = threading.Thread(target=slow_walk)
        walker.start()
        started.wait()
        time.sleep(0.3)
        r = reshard(ceph_cluster, pool, tmp_path, bucket, 8)
        assert r.returncode == 0, r.stderr
        # Listings while writers still run, through both gateways' stale caches.
        for s3 in (sa, sb):
            assert walk(s3, bucket, Prefix="s/")[0] == STATIC
        walker.join()
    load.check(sa)
    load.check(sb)
    assert crossing["got"] == (STATIC, [])

    # Only the new generation's 8 objects remain, each key where FNV-1a puts it.
    idx = index_objects(ceph_cluster, pool)
    mine = {n: k for n, k in idx.items() if n.count(".") > 2}  # not the flat bucket's
    assert len(mine) == 8 and all(".g1." in n for n in mine), sorted(mine)
    for n, keys in mine.items():
        s = int(n.rsplit(".", 1)[1])
        assert all(fnv1a_shard(k, 8) == s for k in keys), n
        assert not any(k.startswith("\udcff") for k in keys), n  # no tombstone, no mark

    # The same listings from the resharded bucket, the unsharded one and the local backend.
    for kw in LISTINGS:
        want = walk(sl, bucket, **kw)
        assert walk(sa, bucket, **kw) == want, kw
        assert walk(sb, flat, **kw) == want, kw

    # Down to 3 shards (generation 2) under load again.
    with Load([ga, gb], bucket, "2-") as load2:
        r = reshard(ceph_cluster, pool, tmp_path, bucket, 3)
        assert r.returncode == 0, r.stderr
    load2.check(sb)
    for kw in LISTINGS:
        assert walk(sb, bucket, **kw) == walk(sl, bucket, **kw), kw
    assert sorted(n.split(".", 3)[3] for n in index_objects(ceph_cluster, pool)
                  if n.count(".") > 2) == ["g2.0", "g2.1", "g2.2"]


def test_writers_finish_a_reshard_whose_runner_died_at_the_fence(ceph_cluster, pool,
                                                                   make_server, tmp_path):
    """The runner is killed after fencing the old shards (and copying their last marked
    keys): writes to the bucket wait, then once its lock lapses (10 s) a waiting writer
    takes the lock and finishes the reshard with the runner's code. No write fails (they
    answered 503 after 20 s until 2026-11-27, until an operator ran the command again), and
    no operator runs it: the new generation alone remains."""
    ga, gb, sa, sb, bucket = two_gateways_with_bucket(make_server, ceph_cluster, pool, "rst-")
    with Load([ga, gb], bucket, "t-") as load:
        r = reshard(ceph_cluster, pool, tmp_path, bucket, 5, crash_at="reshard-fenced")
        assert r.returncode != 0, "the runner did not reach its crash point"
        deadline = time.monotonic() + 60
        while not all(".g1." in n for n in ceph_cluster.rados("ls", pool=pool).decode().split()
                      if n.startswith("s3rdma.index.")):
            assert time.monotonic() < deadline and not load.errors, load.errors[:3]
            time.sleep(0.2)
    load.check(sa)
    load.check(sb)
    assert walk(sb, bucket, Prefix="s/")[0] == STATIC
    names = list(index_objects(ceph_cluster, pool))
    assert len(names) == 5 and all(".g1." in n for n in names), names
    # A waiting writer or a gateway's resume thread (rs_reshard_resume), whichever takes the
    # lapsed lock first.
    assert any("this gateway finishes the reshard" in g.log_text() or
               "this gateway resumes it" in g.log_text() for g in (ga, gb))


def new_generation_only(cluster, pool, shards):
    names = index_names(cluster, pool)
    return len(names) == shards and all(".g1." in n for n in names)


def test_gateways_resume_a_reshard_whose_runner_died_in_the_copy(ceph_cluster, pool,
                                                                 make_server, tmp_path):
    """The runner is killed (SIGKILL) during the bulk copy, after its first batch of 1,000
    entries reached the new shards and before its second, while two gateways write. No one
    runs the command again: a gateway finds the reshard in s3rdma.reshards, takes the lock
    once it lapses and finishes the run under a new token. Until 2026-11-27 the bucket stayed
    tracked (every write marking its key) until an operator re-ran s3rdmad reshard."""
    ga, gb, sa, sb, bucket = two_gateways_with_bucket(make_server, ceph_cluster, pool, "rsr-")
    bulk = [f"bulk/{i:05d}" for i in range(1200)]
    with cf.ThreadPoolExecutor(8) as ex:
        list(ex.map(lambda k: sa.put_object(Bucket=bucket, Key=k, Body=k.encode()), bulk))
    data = tmp_path / "reshard-data"
    data.mkdir(exist_ok=True)
    with Load([ga, gb], bucket, "t-") as load:
        a = subprocess.Popen([BINARY, "reshard", bucket, "6", "--data", str(data),
                              *ceph_cluster.gateway_args(pool=pool),
                              "--debug-rados-crash-at", "reshard-batch-read=stop"],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            for batch in range(2):  # the first batch goes on to the new shards
                deadline = time.monotonic() + 60
                while not stopped(a):
                    assert time.monotonic() < deadline and a.poll() is None, \
                        "the run did not reach its stop point"
                    time.sleep(0.05)
                if batch == 0:
                    os.kill(a.pid, signal.SIGCONT)
        finally:
            a.kill()
            a.wait()
        deadline = time.monotonic() + 90
        while not new_generation_only(ceph_cluster, pool, 6):
            assert time.monotonic() < deadline, "no gateway resumed the reshard"
            assert not load.errors, load.errors[:3]
            time.sleep(0.2)
    load.check(sa)
    load.check(sb)
    keys = walk(sb, bucket)[0]
    assert len(keys) == len(set(keys))
    assert [k for k in keys if k.startswith("s/")] == STATIC
    assert [k for k in keys if k.startswith("bulk/")] == bulk
    for k in bulk[::37]:
        assert sa.get_object(Bucket=bucket, Key=k)["Body"].read() == k.encode(), k
    sb.put_object(Bucket=bucket, Key="after", Body=b"after")
    assert sa.get_object(Bucket=bucket, Key="after")["Body"].read() == b"after"
    names = list(index_objects(ceph_cluster, pool))
    assert len(names) == 6 and all(".g1." in n for n in names), names
    assert any("this gateway resumes it" in g.log_text() for g in (ga, gb))
    assert ceph_cluster.rados("listomapkeys", "s3rdma.reshards", pool=pool) == b""

    # An entry whose bucket is gone (deleted after a run that ended before dropping it):
    # dropped by the next look, nothing else touched.
    ceph_cluster.rados("setomapval", "s3rdma.reshards", "00000000000000ab",
                       "0123456789abcdefno-such-bucket", pool=pool)
    deadline = time.monotonic() + 30
    while ceph_cluster.rados("listomapkeys", "s3rdma.reshards", pool=pool) != b"":
        assert time.monotonic() < deadline, "the stale registry entry stayed"
        time.sleep(0.2)
    assert walk(sa, bucket, Prefix="bulk/")[0] == bulk


@pytest.mark.parametrize("step", ["reshard-copied", "reshard-fenced", "reshard-removed"])
def test_reshard_killed_at_each_step_is_finished_by_the_next_run(ceph_cluster, pool,
                                                                 make_server, tmp_path, step):
    ga = gateway(make_server, ceph_cluster, pool, "gwa", 4)
    sa = boto_client(ga)
    bucket = "rsk-" + uuid.uuid4().hex[:8]
    sa.create_bucket(Bucket=bucket)
    put_static(sa, bucket)
    before = walk(sa, bucket, Prefix="s/", MaxKeys=50)
    r = reshard(ceph_cluster, pool, tmp_path, bucket, 16, crash_at=step)
    assert r.returncode != 0, "the runner did not reach its crash point"
    # Reads and listings are right whatever the step (the old shards, or the new ones once
    # the old are gone).
    assert walk(sa, bucket, Prefix="s/", MaxKeys=50) == before
    assert sa.get_object(Bucket=bucket, Key="s/top")["Body"].read() == b"s/top"
    # A write meanwhile: it lands at once (tracked shards), or waits for the run that
    # finishes the reshard (fenced shards).
    done = {}
    writer = threading.Thread(target=lambda: done.setdefault(
        "r", sa.put_object(Bucket=bucket, Key="s/during", Body=b"during")))
    writer.start()
    time.sleep(0.5)
    r = reshard(ceph_cluster, pool, tmp_path, bucket, 16)
    assert r.returncode == 0, r.stderr
    writer.join(timeout=30)
    assert "r" in done
    assert sa.get_object(Bucket=bucket, Key="s/during")["Body"].read() == b"during"
    assert walk(sa, bucket, Prefix="s/")[0] == sorted(STATIC + ["s/during"],
                                                      key=lambda k: k.encode())
    names = [n for n in index_objects(ceph_cluster, pool)]
    assert len(names) == 16 and all(".g1." in n for n in names), names
    # The bucket deletes cleanly afterwards.
    for k in STATIC + ["s/during"]:
        sa.delete_object(Bucket=bucket, Key=k)
    sa.delete_bucket(Bucket=bucket)
    assert index_objects(ceph_cluster, pool) == {}


def test_a_run_taken_over_while_stopped_loses_no_write(ceph_cluster, pool, make_server,
                                                       tmp_path):
    """A run stops (debug.rados_crash_at reshard-batch-read=stop) after reading an old
    shard's keys and before writing them to the new shards; its lock lapses, a second run
    finishes the reshard, and a client overwrites and deletes keys of that batch on the new
    shards. When the first run goes on, its writes fail on the second run's token: both
    acknowledged changes survive, and the run exits with an error and changes nothing
    more (until 2026-11-27 it wrote the old entries back: the overwrite and the delete were
    lost, and it exited 0)."""
    ga = gateway(make_server, ceph_cluster, pool, "gwa", 2)
    sa = boto_client(ga)
    bucket = "rso-" + uuid.uuid4().hex[:8]
    sa.create_bucket(Bucket=bucket)
    put_static(sa, bucket)
    # Keys of old shard 0, the one the first run reads first.
    first = [k for k in STATIC if fnv1a_shard(k, 2) == 0]
    over, gone = first[0], first[1]
    data = tmp_path / "reshard-data"
    data.mkdir(exist_ok=True)
    a = subprocess.Popen([BINARY, "reshard", bucket, "4", "--data", str(data),
                          *ceph_cluster.gateway_args(pool=pool),
                          "--debug-rados-crash-at", "reshard-batch-read=stop"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while not stopped(a):
            assert time.monotonic() < deadline and a.poll() is None, \
                "the run did not reach its stop point"
            time.sleep(0.05)
        # The second run waits for the first one's lock to lapse (10 s), then finishes.
        r = reshard(ceph_cluster, pool, tmp_path, bucket, 4)
        assert r.returncode == 0, r.stderr
        sa.put_object(Bucket=bucket, Key=over, Body=b"after the reshard")
        sa.delete_object(Bucket=bucket, Key=gone)
    finally:
        os.kill(a.pid, signal.SIGCONT)
    _, err = a.communicate(timeout=60)
    assert sa.get_object(Bucket=bucket, Key=over)["Body"].read() == b"after the reshard"
    with pytest.raises(ClientError) as e:
        sa.head_object(Bucket=bucket, Key=gone)
    assert e.value.response["Error"]["Code"] in ("404", "NoSuchKey")
    assert a.returncode != 0, err
    assert "another run took this one over" in err, err
    assert walk(sa, bucket, Prefix="s/")[0] == sorted(set(STATIC) - {gone},
                                                      key=lambda k: k.encode())
    names = list(index_objects(ceph_cluster, pool))
    assert len(names) == 4 and all(".g1." in n for n in names), names


def test_reshard_moves_versions_with_their_keys(ceph_cluster, pool, make_server, tmp_path):
    """A versioned bucket: every version and delete marker moves with its key, and
    ListObjectVersions, GET by version id and a delete of a version answer as before."""
    ga = gateway(make_server, ceph_cluster, pool, "gwa", 2)
    sa = boto_client(ga)
    bucket = "rsv-" + uuid.uuid4().hex[:8]
    sa.create_bucket(Bucket=bucket)
    sa.put_bucket_versioning(Bucket=bucket, VersioningConfiguration={"Status": "Enabled"})
    ids = {}
    for k in ("a", "b/x", "b/y", "c", "\u00e9"):
        for j in range(3):
            ids.setdefault(k, []).append(
                sa.put_object(Bucket=bucket, Key=k, Body=f"{k}{j}".encode())["VersionId"])
    sa.delete_object(Bucket=bucket, Key="c")  # a delete marker on top

    def versions():
        r = sa.list_object_versions(Bucket=bucket)
        return ([(v["Key"], v["VersionId"], v["IsLatest"]) for v in r.get("Versions", [])],
                [(d["Key"], d["VersionId"]) for d in r.get("DeleteMarkers", [])])
    before = versions()
    r = reshard(ceph_cluster, pool, tmp_path, bucket, 7)
    assert r.returncode == 0, r.stderr
    assert versions() == before
    for k, vs in ids.items():
        for j, vid in enumerate(vs):
            got = sa.get_object(Bucket=bucket, Key=k, VersionId=vid)["Body"].read()
            assert got == f"{k}{j}".encode()
    sa.delete_object(Bucket=bucket, Key="a", VersionId=ids["a"][2])
    assert sa.get_object(Bucket=bucket, Key="a")["Body"].read() == b"a1"
    with pytest.raises(ClientError):
        sa.get_object(Bucket=bucket, Key="c")
    names = [n for n in index_objects(ceph_cluster, pool)]
    assert len(names) == 7 and all(".g1." in n for n in names), names


def stopped(proc):
    """True when proc (a child of this process) reports a stop (debug.rados_crash_at
    step=stop, SIGSTOP) not reported before."""
    pid, status = os.waitpid(proc.pid, os.WUNTRACED | os.WNOHANG)
    return pid == proc.pid and os.WIFSTOPPED(status)


def listing_held_at_a_batch(gateway, fetch):
    """Runs fetch() (a listing through gateway, started with --debug-rados-crash-at
    list-batch=stop) on a thread until the gateway stops between two batches of a page.
    Returns the thread and a dict that gets "r" (fetch's result) or "e" (its exception)."""
    got = {}

    def run():
        try:
            got["r"] = fetch()
        except Exception as e:  # noqa: BLE001 - the caller checks it
            got["e"] = e
    lister = threading.Thread(target=run)
    lister.start()
    deadline = time.monotonic() + 30
    while not stopped(gateway.proc):
        assert time.monotonic() < deadline and lister.is_alive(), \
            f"the listing did not reach a second batch: {got}"
        time.sleep(0.05)
    return lister, got


@pytest.mark.parametrize("runner", ["finished", "killed-after-removing"])
def test_versions_page_crosses_the_removal_of_its_shards(ceph_cluster, pool, make_server,
                                                         tmp_path, runner):
    """A ListObjectVersions page stops between two batches of one shard (the gateway stops
    itself at list-batch: a shard of 16 holds 93 entries a batch, and one key has 120
    versions), a reshard removes the old shards meanwhile (and names the new ones in the
    record, or is killed just before that), then the page goes on: it is complete and in
    order, read from the new shards (it answered 500 until 2026-11-27)."""
    ga = make_server(name="gwa", extra_args=ceph_cluster.gateway_args(pool=pool, gc_grace=1,
                                                                      index_shards=16)
                     + ["--debug-rados-crash-at", "list-batch=stop"])
    sa = boto_client(ga)
    bucket = "rsl-" + uuid.uuid4().hex[:8]
    sa.create_bucket(Bucket=bucket)
    sa.put_bucket_versioning(Bucket=bucket, VersioningConfiguration={"Status": "Enabled"})
    versions = {}  # key -> version ids, oldest first
    for k in ["a", "b", "many", "n/1", "z"]:
        for j in range(120 if k == "many" else 2):
            versions.setdefault(k, []).append(
                sa.put_object(Bucket=bucket, Key=k, Body=f"{k}{j}".encode())["VersionId"])
    marker = sa.delete_object(Bucket=bucket, Key="b")["VersionId"]
    want = ([(k, vid, i == 0 and k != "b") for k in sorted(versions)
             for i, vid in enumerate(reversed(versions[k]))], [("b", marker, True)])

    def page():
        r = sa.list_object_versions(Bucket=bucket)
        return ([(v["Key"], v["VersionId"], v["IsLatest"]) for v in r["Versions"]],
                [(d["Key"], d["VersionId"], d["IsLatest"]) for d in r["DeleteMarkers"]])
    lister, got = listing_held_at_a_batch(ga, page)
    r = reshard(ceph_cluster, pool, tmp_path, bucket, 4,
                crash_at="reshard-removed" if runner != "finished" else None)
    assert (r.returncode == 0) == (runner == "finished"), r.stderr
    os.kill(ga.proc.pid, signal.SIGCONT)
    lister.join(60)
    assert "e" not in got, got["e"]
    assert got["r"] == want
    if runner != "finished":
        assert reshard(ceph_cluster, pool, tmp_path, bucket, 4).returncode == 0
    names = list(index_objects(ceph_cluster, pool))
    assert len(names) == 4 and all(".g1." in n for n in names), names


def test_versions_page_does_not_go_on_in_a_bucket_made_again(ceph_cluster, pool, make_server):
    """A ListObjectVersions page stops between two batches of one shard (as above); on
    another gateway every version is deleted, the bucket is deleted and made again with
    another key. The page fails: it does not go on with the new bucket's keys after the
    old one's (it did until 2026-11-27: its index objects gone, the listing was placed
    afresh on whatever bucket had the name)."""
    args = ceph_cluster.gateway_args(pool=pool, gc_grace=1, index_shards=16)
    ga = make_server(name="gwa", extra_args=args + ["--debug-rados-crash-at", "list-batch=stop"])
    gb = make_server(name="gwb", extra_args=args)
    sa, sb = boto_client(ga), boto_client(gb)
    bucket = "rsd-" + uuid.uuid4().hex[:8]
    sa.create_bucket(Bucket=bucket)
    sa.put_bucket_versioning(Bucket=bucket, VersioningConfiguration={"Status": "Enabled"})
    vids = [sa.put_object(Bucket=bucket, Key="many", Body=b"x")["VersionId"] for _ in range(120)]
    lister, got = listing_held_at_a_batch(ga, lambda: [
        (v["Key"], v["VersionId"])
        for v in sa.list_object_versions(Bucket=bucket).get("Versions", [])])
    try:
        for i in range(0, len(vids), 100):
            sb.delete_objects(Bucket=bucket, Delete={
                "Objects": [{"Key": "many", "VersionId": v} for v in vids[i:i + 100]]})
        sb.delete_bucket(Bucket=bucket)
        sb.create_bucket(Bucket=bucket)
        sb.put_object(Bucket=bucket, Key="new", Body=b"y")
    finally:
        os.kill(ga.proc.pid, signal.SIGCONT)
    lister.join(60)
    assert "e" in got, f"the page went on in the new bucket: {got.get('r', [])[-3:]}"
