"""Crash consistency: concurrent PUTs and overwrites, `kill -9` of the server mid-flight,
restart on the same data dir, then check that

  * every acknowledged write survives: per key, the object is the last acknowledged version
    or a version whose PUT was still in flight (or overlapped it) -- never an older one,
  * no partial object is visible: every listed object's bytes are exactly one version that a
    client sent, and its size matches,
  * no orphan files remain: after restart the number of files under DATA/.s3rdma/objects
    equals the number of (single-part) objects too large to be kept inline.

Object files live at DATA/.s3rdma/objects/ab/cd/<id> (src/storage/local/local_files.c);
objects of at most `storage.inline_max` bytes (16 KiB by default) have none: their bytes are
in the index record. The concurrent PUTs mix sizes on both sides of it, so the same keys are
overwritten inline -> file and file -> inline while the server is killed.
"""
import hashlib
import http.client
import os
import random
import re
import signal
import socket
import struct
import threading
import time
from pathlib import Path

import pytest

from s3r_itest import USERS, crc32c_b64, md5_b64, raw_request, sign_headers, uri_encode

BUCKET = "crash-bucket"
INLINE_MAX = 16 * 1024  # storage.inline_max's default (docs/storage.md)


def files_of(size, parts=0):
    """Object files an object of this size (and parts, for a multipart one) has."""
    return parts if parts else (1 if size > INLINE_MAX else 0)


class Version:
    __slots__ = ("key", "digest", "size", "start", "end", "state")

    def __init__(self, key, digest, size):
        self.key, self.digest, self.size = key, digest, size
        self.start = time.monotonic()
        self.end = None
        self.state = "inflight"  # -> acked | failed (clean error reply) | unknown (connection died)


class History:
    def __init__(self):
        self.lock = threading.Lock()
        self.versions = {}  # key -> [Version]

    def begin(self, key, data):
        v = Version(key, hashlib.sha256(data).hexdigest(), len(data))
        with self.lock:
            self.versions.setdefault(key, []).append(v)
        return v

    def acked(self):
        """How many writes were acknowledged so far."""
        return sum(1 for vs in self.versions.values() for v in vs if v.state == "acked")

    def allowed(self, key):
        """(must_exist, set of allowed digests)."""
        vs = self.versions.get(key, [])
        acked = [v for v in vs if v.state == "acked"]
        maybe = {v.digest for v in vs if v.state in ("unknown", "inflight")}
        if not acked:
            return False, maybe
        last = max(acked, key=lambda v: v.end)
        ok = {v.digest for v in acked if v.end >= last.start} | maybe
        return True, ok


def kill_and_join(srv, stop, threads):
    """kill -9 the server mid-run, then stop the writer threads; none may hang."""
    srv.kill9()
    stop.set()
    for t in threads:
        t.join(60)
    assert not any(t.is_alive() for t in threads), "writer threads hung after the kill"


def put(conn, host, key, data, check="md5"):
    """check: the body's integrity header, Content-MD5 ("md5") or x-amz-checksum-crc32c
    ("crc32c": with etag: fast, no MD5 at all on the server)."""
    path = uri_encode(f"/{BUCKET}/{key}", encode_slash=False)
    headers = {"Host": host, "Content-Length": str(len(data))}
    if check == "md5":
        headers["Content-MD5"] = md5_b64(data)
    else:
        headers["x-amz-checksum-crc32c"] = crc32c_b64(data)
    sign_headers("PUT", path, [], headers, "UNSIGNED-PAYLOAD", *USERS[0])
    conn.request("PUT", path, body=data, headers=headers)
    resp = conn.getresponse()
    resp.read()
    return resp.status


def get(port, host, key):
    path = uri_encode(f"/{BUCKET}/{key}", encode_slash=False)
    headers = {"Host": host}
    sign_headers("GET", path, [], headers, "UNSIGNED-PAYLOAD", *USERS[0])
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    conn.request("GET", path, headers=headers)
    resp = conn.getresponse()
    body = resp.read()
    conn.close()
    return resp.status, body


def make_data(key, seq, rnd):
    size = rnd.choice([1, 100, 4096, 65536, 300_000, 1_000_000]) + rnd.randrange(0, 1000)
    head = f"{key}|{seq}|".encode()
    return head + os.urandom(max(0, size - len(head)))


def make_small_data(key, seq, rnd):
    """Objects kept inline (at most 16 KiB): no file, so concurrent PUTs' commits are the
    whole write and share LMDB write transactions (storage.md, "Group commit")."""
    size = rnd.choice([1, 100, 4096, 16384]) - rnd.randrange(0, 64)
    head = f"{key}|{seq}|".encode()
    return head + os.urandom(max(0, size - len(head)))


def writer(srv, hist, keys, stop, seed, errors, maker=make_data):
    rnd = random.Random(seed)
    conn = None
    seq = 0
    while not stop.is_set():
        key = rnd.choice(keys)
        seq += 1
        data = maker(key, f"{seed}.{seq}", rnd)
        v = hist.begin(key, data)
        try:
            if conn is None:
                conn = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=30)
            status = put(conn, srv.host, key, data, getattr(srv, "body_check", "md5"))
            v.end = time.monotonic()
            if status == 200:
                v.state = "acked"
            else:
                v.state = "failed"
                if not stop.is_set():
                    errors.append(f"PUT {key} -> {status}")
        except (OSError, http.client.HTTPException):
            v.state = "unknown"
            if conn is not None:
                conn.close()
            conn = None
            if not stop.is_set():
                time.sleep(0.01)
    if conn is not None:
        conn.close()


def slow_writer(srv, hist, key, stop):
    """Streams a big body slowly so the kill lands in the middle of it."""
    data = os.urandom(8 * 1024 * 1024)
    v = hist.begin(key, data)
    path = f"/{BUCKET}/{key}"
    headers = {"Host": srv.host, "Content-Length": str(len(data))}
    sign_headers("PUT", path, [], headers, "UNSIGNED-PAYLOAD", *USERS[0])
    head = "\r\n".join([f"PUT {path} HTTP/1.1"] + [f"{k}: {v}" for k, v in headers.items()])
    try:
        with socket.create_connection(("127.0.0.1", srv.port), timeout=30) as s:
            s.sendall(head.encode() + b"\r\n\r\n")
            for i in range(0, len(data), 64 * 1024):
                if stop.is_set():
                    raise OSError("stopped")
                s.sendall(data[i:i + 64 * 1024])
                time.sleep(0.02)
            resp = s.recv(100)
            v.end = time.monotonic()
            v.state = "acked" if resp.startswith(b"HTTP/1.1 200") else "failed"
    except OSError:
        v.state = "unknown"


def list_all(port, host):
    import xml.etree.ElementTree as ET
    from s3r_itest import S3_NS, query_string
    keys, token = [], None
    while True:
        q = [("list-type", "2"), ("max-keys", "1000")]
        if token:
            q.append(("continuation-token", token))
        headers = {"Host": host}
        sign_headers("GET", f"/{BUCKET}", q, headers, "UNSIGNED-PAYLOAD", *USERS[0])
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        conn.request("GET", f"/{BUCKET}?" + query_string(q), headers=headers)
        resp = conn.getresponse()
        body = resp.read()
        conn.close()
        assert resp.status == 200, body
        root = ET.fromstring(body)
        for c in root.findall(S3_NS + "Contents"):
            keys.append((c.find(S3_NS + "Key").text, int(c.find(S3_NS + "Size").text)))
        if root.find(S3_NS + "IsTruncated").text != "true":
            return keys
        token = root.find(S3_NS + "NextContinuationToken").text


def count_object_files(data_dir):
    root = os.path.join(data_dir, ".s3rdma", "objects")
    n = 0
    names = []
    for dirpath, _dirs, files in os.walk(root):
        for f in files:
            n += 1
            names.append(os.path.join(dirpath, f))
    return n, names


def verify(srv, hist):
    listed = list_all(srv.port, srv.host)
    listed_keys = {k for k, _ in listed}
    problems = []
    for key, size in listed:
        if key not in hist.versions:
            problems.append(f"unknown key listed: {key!r}")
            continue
        status, body = get(srv.port, srv.host, key)
        if status != 200:
            problems.append(f"listed {key!r} but GET -> {status}")
            continue
        if len(body) != size:
            problems.append(f"{key!r}: listed size {size} but GET returned {len(body)} bytes")
        digest = hashlib.sha256(body).hexdigest()
        written = {v.digest for v in hist.versions[key]}
        if digest not in written:
            problems.append(f"{key!r}: bytes ({len(body)}) are not any version a client sent "
                            f"(partial or mixed object)")
            continue
        must, ok = hist.allowed(key)
        if digest not in ok:
            problems.append(f"{key!r}: holds an older version; an acknowledged later write was lost")
    for key in hist.versions:
        must, _ = hist.allowed(key)
        if must and key not in listed_keys:
            problems.append(f"{key!r}: acknowledged but missing after restart")
    nfiles, names = count_object_files(srv.data_dir)
    want = sum(files_of(size) for _, size in listed)
    if nfiles != want:
        problems.append(f"{nfiles} files under .s3rdma/objects for {len(listed)} objects, {want} "
                        f"of them in files (orphans or missing files): {names[:10]}")
    return listed, problems


def load_and_kill(srv, hist, keys_per_thread, shared_keys, threads=6, duration=1.5, cycle=0,
                  maker=make_data):
    stop = threading.Event()
    errors = []
    ts = []
    for t in range(threads):
        keys = [f"t{t}/k{i}" for i in range(keys_per_thread)] + shared_keys
        ts.append(threading.Thread(target=writer, args=(srv, hist, keys, stop, cycle * 100 + t, errors,
                                                        maker), daemon=True))
    ts.append(threading.Thread(target=slow_writer, args=(srv, hist, f"slow/c{cycle}", stop), daemon=True))
    for t in ts:
        t.start()
    time.sleep(duration)
    acked_before = hist.acked()
    kill_and_join(srv, stop, ts)
    return acked_before, errors


@pytest.mark.parametrize("durability,etag,cycles",
                         [("fsync", "md5", 3), ("relaxed", "md5", 2), ("fsync", "fast", 2)])
def test_kill9_during_concurrent_puts(make_server, durability, etag, cycles):
    srv = make_server(durability=durability, extra_args=("--etag", etag))
    srv.body_check = "crc32c" if etag == "fast" else "md5"
    status = _create_bucket(srv)
    assert status == 200
    hist = History()
    shared = [f"shared/{i}" for i in range(4)]
    for cycle in range(cycles):
        acked, errors = load_and_kill(srv, hist, keys_per_thread=8, shared_keys=shared, cycle=cycle)
        assert not errors, errors[:10]
        assert acked >= 20, f"only {acked} PUTs acknowledged before the kill: load too light"
        slow = hist.versions[f"slow/c{cycle}"][0]
        assert slow.state == "unknown", "the slow upload should have been cut by the kill"
        in_flight = sum(1 for vs in hist.versions.values() for v in vs if v.state == "unknown")
        assert in_flight >= 2, "the kill should land while PUTs are in flight"
        srv.start()
        listed, problems = verify(srv, hist)
        assert not problems, "\n".join(problems[:30])
        assert len(listed) > 0
        assert f"slow/c{cycle}" not in {k for k, _ in listed}, "a cut-off upload became visible"
        if etag == "fast":
            # The CRC32C stored with each fast-ETag record matches the bytes it names.
            for key, _ in listed[:20]:
                r = raw_request(srv, "GET", f"/{BUCKET}/{key}",
                                headers={"x-amz-checksum-mode": "ENABLED"})
                assert r.headers.get("etag", "").endswith('-1"'), (key, r.headers)
                assert r.headers.get("x-amz-checksum-crc32c") == crc32c_b64(r.body), key
    # clean shutdown after all that (exit code checked by make_server)
    assert srv.stop(signal.SIGTERM) == 0


def stage_power_loss(data_dir):
    """What the OS losing its page cache does to the index after a kill -9, as the store's
    open does it after a reboot (src/storage/local/local_restore.c): data.mdb's two meta pages go back
    to those saved in index/restore's newest slot, so the index is its last restore point
    and every commit after it is gone from it. The server must be stopped."""
    index = Path(data_dir) / ".s3rdma" / "index"
    raw = (index / "restore").read_bytes()
    stride = 4096 + 2 * 65536
    slots = []
    for i in (0, 1):
        head = raw[i * stride:i * stride + 32]
        if len(head) == 32 and head[:8] == b"s3rRSTR1":
            seq, txnid, psize = struct.unpack_from("<QQI", head, 8)
            slots.append((seq, txnid, psize, i))
    seq, txnid, psize, i = max(slots)
    metas = raw[i * stride + 4096:i * stride + 4096 + 2 * psize]
    with open(index / "data.mdb", "r+b") as f:
        rolled_back = f.read(2 * psize) != metas
        f.seek(0)
        f.write(metas)
    return rolled_back


def test_kill9_during_grouped_small_puts(make_server):
    """fsync mode, 16 connections PUTting small (inline) objects over shared keys: their
    commits share LMDB write transactions and records of the commit log (index/wal). kill
    -9 mid-run, twice; the second time the index also loses what its last restore point
    does not hold (a staged power loss): after each restart every acknowledged PUT is
    there (or a newer one of its key), whole -- the second time through the commit log,
    which the open applies again over the restore point."""
    srv = make_server(durability="fsync")
    assert _create_bucket(srv) == 200
    hist = History()
    shared = [f"shared/{i}" for i in range(8)]
    for cycle in range(2):
        acked, errors = load_and_kill(srv, hist, keys_per_thread=4, shared_keys=shared,
                                      threads=16, cycle=cycle, maker=make_small_data)
        assert not errors, errors[:10]
        assert acked >= 20, f"only {acked} PUTs acknowledged before the kill: load too light"
        if cycle == 1:
            assert stage_power_loss(srv.data_dir), "no commit after the restore point"
        srv.start()
        listed, problems = verify(srv, hist)
        assert not problems, "\n".join(problems[:30])
        assert len(listed) > 0
    assert srv.stop(signal.SIGTERM) == 0


def test_kill9_during_multipart_and_deletes(make_server, s3_factory_for):
    """Deletes and multipart completes racing a kill -9: the index and files stay consistent."""
    srv = make_server(durability="fsync")
    s3 = s3_factory_for(srv)
    s3.create_bucket(Bucket=BUCKET)
    part = os.urandom(5 * 1024 * 1024)
    for i in range(3):
        uid = s3.create_multipart_upload(Bucket=BUCKET, Key=f"mp{i}")["UploadId"]
        e1 = s3.upload_part(Bucket=BUCKET, Key=f"mp{i}", UploadId=uid, PartNumber=1, Body=part)["ETag"]
        e2 = s3.upload_part(Bucket=BUCKET, Key=f"mp{i}", UploadId=uid, PartNumber=2, Body=b"tail")["ETag"]
        s3.complete_multipart_upload(Bucket=BUCKET, Key=f"mp{i}", UploadId=uid, MultipartUpload={
            "Parts": [{"PartNumber": 1, "ETag": e1}, {"PartNumber": 2, "ETag": e2}]})
    for i in range(40):
        s3.put_object(Bucket=BUCKET, Key=f"d{i}", Body=os.urandom(2000))
    stop = threading.Event()

    def deleter():
        for i in range(40):
            if stop.is_set():
                return
            try:
                s3.delete_object(Bucket=BUCKET, Key=f"d{i}")
            except Exception:  # noqa: BLE001
                return

    t = threading.Thread(target=deleter, daemon=True)
    t.start()
    time.sleep(0.05)
    srv.kill9()
    stop.set()
    t.join(30)
    srv.start()
    s3 = s3_factory_for(srv)
    for i in range(3):
        body = s3.get_object(Bucket=BUCKET, Key=f"mp{i}")["Body"].read()
        assert body == part + b"tail"
    resp = s3.list_objects_v2(Bucket=BUCKET)
    nfiles, names = count_object_files(srv.data_dir)
    # each multipart object here has 2 part files; the simple ones (2000 bytes) are inline
    want = sum(files_of(o["Size"], 2 if o["Key"].startswith("mp") else 0)
               for o in resp.get("Contents", []))
    assert want == 6 and nfiles == want, (nfiles, want, names[:10])


def mpu_writer(s3, hist, part1s, keys, stop, seed, errors):
    """Multipart uploads of 2 parts (5 MiB + a tail), each part with x-amz-checksum-crc32c
    and no Content-MD5: under etag: fast the server hashes no MD5 at all. part1s: key ->
    the SHA-256s of the first parts sent."""
    from botocore.exceptions import ClientError
    rnd = random.Random(seed)
    seq = 0
    while not stop.is_set():
        key = rnd.choice(keys)
        seq += 1
        parts = [make_data(key, f"{seed}.{seq}", rnd)[:64] + os.urandom(5 * 1024 * 1024),
                 os.urandom(rnd.randrange(1, 200_000))]
        v = hist.begin(key, b"".join(parts))
        with hist.lock:
            part1s.setdefault(key, set()).add(hashlib.sha256(parts[0]).hexdigest())
        try:
            uid = s3.create_multipart_upload(Bucket=BUCKET, Key=key)["UploadId"]
            done = []
            for n, p in enumerate(parts, 1):
                e = s3.upload_part(Bucket=BUCKET, Key=key, UploadId=uid, PartNumber=n, Body=p,
                                   ChecksumAlgorithm="CRC32C")["ETag"]
                done.append({"PartNumber": n, "ETag": e})
            s3.complete_multipart_upload(Bucket=BUCKET, Key=key, UploadId=uid,
                                         MultipartUpload={"Parts": done})
            v.end = time.monotonic()
            v.state = "acked"
        except ClientError as e:
            v.end = time.monotonic()
            v.state = "failed"
            if not stop.is_set():
                errors.append(f"multipart {key}: {e}")
        except Exception:  # noqa: BLE001 (the connection died with the server)
            v.state = "unknown"
            if not stop.is_set():
                time.sleep(0.01)


def slow_part(srv, s3, key, stop, state):
    """Streams an 8 MiB UploadPart but its last 512 KiB, then trickles those at 8 KiB/s
    (above the server's minimum body rate) until stop (set after the kill), so the kill
    always lands in the middle of it."""
    uid = s3.create_multipart_upload(Bucket=BUCKET, Key=key)["UploadId"]
    state["upload"] = uid
    data = os.urandom(8 * 1024 * 1024)
    path = f"/{BUCKET}/{key}"
    query = [("partNumber", "1"), ("uploadId", uid)]
    headers = {"Host": srv.host, "Content-Length": str(len(data)),
               "x-amz-checksum-crc32c": crc32c_b64(data)}
    sign_headers("PUT", path, query, headers, "UNSIGNED-PAYLOAD", *USERS[0])
    head = "\r\n".join([f"PUT {path}?partNumber=1&uploadId={uid} HTTP/1.1"] +
                        [f"{k}: {v}" for k, v in headers.items()])
    try:
        with socket.create_connection(("127.0.0.1", srv.port), timeout=30) as sock:
            sock.sendall(head.encode() + b"\r\n\r\n")
            tail = len(data) - 512 * 1024
            sock.sendall(data[:tail])
            while tail < len(data) and not stop.wait(0.5):
                sock.sendall(data[tail:tail + 4096])
                tail += 4096
            sock.sendall(data[tail:])
            reply = sock.recv(100)
        if reply:
            state["reply"] = reply
        else:
            state["cut"] = True
    except OSError:
        state["cut"] = True


def test_kill9_during_fast_multipart(make_server, s3_factory_for):
    """etag: fast, fsync: kill -9 mid-UploadPart and mid-Complete. After restart every
    completed upload is one a client sent, whole (never a mix of parts), none acknowledged
    is lost, its ETag is multipart-shaped; the uploads left behind list their parts with
    fast ETags and CRC32Cs, complete or abort cleanly, and no part file is orphaned."""
    srv = make_server(durability="fsync", extra_args=("--etag", "fast"))
    s3 = s3_factory_for(srv)
    s3.create_bucket(Bucket=BUCKET)
    hist = History()
    stop = threading.Event()
    errors = []
    slow, part1s = {}, {}
    # An acknowledged part of an upload the kill leaves open must survive it.
    left = os.urandom(5 * 1024 * 1024 + 1)
    left_id = s3.create_multipart_upload(Bucket=BUCKET, Key="left")["UploadId"]
    left_etag = s3.upload_part(Bucket=BUCKET, Key="left", UploadId=left_id, PartNumber=1,
                               Body=left, ChecksumAlgorithm="CRC32C")["ETag"]
    hist.begin("left", left)
    part1s["left"] = {hashlib.sha256(left).hexdigest()}
    ts = [threading.Thread(target=mpu_writer, args=(s3_factory_for(srv), hist, part1s,
                                                    [f"m{t}/{i}" for i in range(2)] + ["shared"],
                                                    stop, t, errors), daemon=True)
          for t in range(3)]
    ts.append(threading.Thread(target=slow_part, args=(srv, s3_factory_for(srv), "slowpart",
                                                       stop, slow), daemon=True))
    for t in ts:
        t.start()
    deadline = time.monotonic() + 45  # the slow part lasts 64 s
    # until a few uploads are acknowledged and others are mid-flight
    while time.monotonic() < deadline and hist.acked() < 4:
        time.sleep(0.05)
    time.sleep(0.2)
    acked = hist.acked()
    kill_and_join(srv, stop, ts)
    assert not errors, errors[:10]
    assert acked >= 4, f"only {acked} multipart uploads acknowledged before the kill"
    assert slow.get("cut") and "reply" not in slow, "the kill should cut the slow UploadPart"
    in_flight = sum(1 for vs in hist.versions.values() for v in vs if v.state == "unknown")
    assert in_flight >= 1, "the kill should land while uploads are in flight"

    srv.start()
    s3 = s3_factory_for(srv)
    listed = list_all(srv.port, srv.host)
    problems = []
    for key, size in listed:
        if key not in hist.versions:
            problems.append(f"unknown key listed: {key!r}")
            continue
        g = s3.get_object(Bucket=BUCKET, Key=key)
        body = g["Body"].read()
        if not re.fullmatch(r'"[0-9a-f]{32}-2"', g["ETag"]):
            problems.append(f"{key!r}: ETag {g['ETag']}")
        digest = hashlib.sha256(body).hexdigest()
        if len(body) != size or digest not in {v.digest for v in hist.versions[key]}:
            problems.append(f"{key!r}: its bytes are no upload a client sent (mixed or partial)")
        elif digest not in hist.allowed(key)[1]:
            problems.append(f"{key!r}: holds an older upload; an acknowledged one was lost")
    for key in hist.versions:
        if hist.allowed(key)[0] and key not in {k for k, _ in listed}:
            problems.append(f"{key!r}: acknowledged but missing after restart")
    assert not problems, "\n".join(problems[:30])
    # The uploads the kill cut: their committed parts are listed with fast ETags and
    # CRC32Cs; one whose part 1 is there completes with it alone, the others abort.
    segs = {k: 2 for k, _ in listed}
    ups = s3.list_multipart_uploads(Bucket=BUCKET).get("Uploads", [])
    assert {slow["upload"], left_id} <= {u["UploadId"] for u in ups}
    assert s3.list_parts(Bucket=BUCKET, Key="left", UploadId=left_id)["Parts"][0]["ETag"] == \
        left_etag
    for u in ups:
        key, uid = u["Key"], u["UploadId"]
        parts = s3.list_parts(Bucket=BUCKET, Key=key, UploadId=uid).get("Parts", [])
        for p in parts:
            assert re.fullmatch(r'"[0-9a-f]{32}-1"', p["ETag"]) and p.get("ChecksumCRC32C"), p
        if parts and parts[0]["PartNumber"] == 1:
            s3.complete_multipart_upload(Bucket=BUCKET, Key=key, UploadId=uid, MultipartUpload={
                "Parts": [{"PartNumber": 1, "ETag": parts[0]["ETag"]}]})
            body = s3.get_object(Bucket=BUCKET, Key=key)["Body"].read()
            assert hashlib.sha256(body).hexdigest() in part1s[key], key
            segs[key] = 1
        else:
            s3.abort_multipart_upload(Bucket=BUCKET, Key=key, UploadId=uid)
    nfiles, names = count_object_files(srv.data_dir)
    assert nfiles == sum(segs.values()), (nfiles, segs, names[:10])
    assert srv.stop(signal.SIGTERM) == 0


@pytest.fixture
def s3_factory_for():
    import boto3
    import botocore.config

    def make(srv):
        return boto3.session.Session().client(
            "s3", endpoint_url=srv.endpoint, aws_access_key_id=USERS[0][0],
            aws_secret_access_key=USERS[0][1], region_name="us-east-1",
            config=botocore.config.Config(signature_version="s3v4", retries={"max_attempts": 1},
                                          s3={"addressing_style": "path"}))
    return make


def _create_bucket(srv):
    headers = {"Host": srv.host, "Content-Length": "0"}
    sign_headers("PUT", f"/{BUCKET}", [], headers, "UNSIGNED-PAYLOAD", *USERS[0])
    conn = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=10)
    conn.request("PUT", f"/{BUCKET}", headers=headers)
    resp = conn.getresponse()
    resp.read()
    conn.close()
    return resp.status


def test_sigterm_under_load_exits_cleanly(make_server):
    """SIGTERM while PUTs are in flight: exit code 0 and every acknowledged PUT is there."""
    srv = make_server(durability="fsync")
    assert _create_bucket(srv) == 200
    hist = History()
    stop = threading.Event()
    errors = []
    ts = [threading.Thread(target=writer, args=(srv, hist, [f"g{t}/{i}" for i in range(5)], stop, 900 + t,
                                                errors), daemon=True) for t in range(4)]
    for t in ts:
        t.start()
    time.sleep(1.0)
    rc = srv.stop(signal.SIGTERM)
    stop.set()
    for t in ts:
        t.join(60)
    assert rc == 0
    srv.start()
    _, problems = verify(srv, hist)
    assert not problems, "\n".join(problems[:30])


def test_planted_orphans_removed_on_restart(make_server):
    """Files in the objects dir that no index entry references (a crash between writing the
    file and committing it) are removed at start; referenced files are kept."""
    srv = make_server(durability="fsync")
    assert _create_bucket(srv) == 200
    conn = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=10)
    # Large enough for files of their own (smaller objects are kept inline).
    for i in range(5):
        assert put(conn, srv.host, f"keep{i}", os.urandom(INLINE_MAX + 1000 + i)) == 200
    assert put(conn, srv.host, "inline", b"small") == 200
    conn.close()
    n_before, names = count_object_files(srv.data_dir)
    assert n_before == 5, names
    srv.kill9()
    objdir = os.path.join(srv.data_dir, ".s3rdma", "objects")
    shard = os.path.dirname(names[0])
    planted = [os.path.join(shard, "0" * 32), os.path.join(objdir, "ff", "ee", "f" * 32)]
    os.makedirs(os.path.dirname(planted[1]), exist_ok=True)
    for p in planted:
        with open(p, "wb") as f:
            f.write(b"half-written garbage")
    srv.start()
    for p in planted:
        assert not os.path.exists(p), f"orphan {p} survived the restart"
    n_after, names = count_object_files(srv.data_dir)
    assert n_after == 5, names
    for i in range(5):
        status, body = get(srv.port, srv.host, f"keep{i}")
        assert status == 200 and len(body) == INLINE_MAX + 1000 + i
    assert get(srv.port, srv.host, "inline") == (200, b"small")


def test_no_garbage_files_after_normal_operations(make_server, s3_factory_for):
    """Overwrites, deletes, DeleteObjects, aborted uploads, parts left out of a Complete,
    copies and a failed (bad Content-MD5) PUT leave no unreferenced files behind."""
    srv = make_server(durability="relaxed")
    s3 = s3_factory_for(srv)
    s3.create_bucket(Bucket=BUCKET)
    for i in range(10):
        s3.put_object(Bucket=BUCKET, Key=f"o{i}", Body=os.urandom(1000))
    for i in range(5):
        s3.put_object(Bucket=BUCKET, Key=f"o{i}", Body=os.urandom(2000))  # overwrite
    s3.delete_object(Bucket=BUCKET, Key="o9")
    s3.delete_objects(Bucket=BUCKET, Delete={"Objects": [{"Key": "o8"}, {"Key": "o7"}]})
    s3.copy_object(Bucket=BUCKET, Key="copy", CopySource={"Bucket": BUCKET, "Key": "o1"})
    part = os.urandom(5 * 1024 * 1024)
    # an upload completed with parts 1 and 3 of 1..3 (part 2 must be dropped)
    uid = s3.create_multipart_upload(Bucket=BUCKET, Key="mp")["UploadId"]
    e = {n: s3.upload_part(Bucket=BUCKET, Key="mp", UploadId=uid, PartNumber=n, Body=part)["ETag"]
         for n in (1, 2, 3)}
    s3.upload_part(Bucket=BUCKET, Key="mp", UploadId=uid, PartNumber=1, Body=part)  # same part twice
    s3.complete_multipart_upload(Bucket=BUCKET, Key="mp", UploadId=uid, MultipartUpload={
        "Parts": [{"PartNumber": 1, "ETag": e[1]}, {"PartNumber": 3, "ETag": e[3]}]})
    # an aborted upload
    uid = s3.create_multipart_upload(Bucket=BUCKET, Key="ab")["UploadId"]
    s3.upload_part(Bucket=BUCKET, Key="ab", UploadId=uid, PartNumber=1, Body=b"x" * 1000)
    s3.abort_multipart_upload(Bucket=BUCKET, Key="ab", UploadId=uid)
    # a multipart object overwritten by a simple one
    uid = s3.create_multipart_upload(Bucket=BUCKET, Key="mp2")["UploadId"]
    e1 = s3.upload_part(Bucket=BUCKET, Key="mp2", UploadId=uid, PartNumber=1, Body=part)["ETag"]
    e2 = s3.upload_part(Bucket=BUCKET, Key="mp2", UploadId=uid, PartNumber=2, Body=b"t")["ETag"]
    s3.complete_multipart_upload(Bucket=BUCKET, Key="mp2", UploadId=uid, MultipartUpload={
        "Parts": [{"PartNumber": 1, "ETag": e1}, {"PartNumber": 2, "ETag": e2}]})
    s3.put_object(Bucket=BUCKET, Key="mp2", Body=b"simple now")
    # a PUT refused for a bad Content-MD5
    conn = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=10)
    path = f"/{BUCKET}/badmd5"
    headers = {"Host": srv.host, "Content-Length": "5", "Content-MD5": md5_b64(b"other")}
    sign_headers("PUT", path, [], headers, "UNSIGNED-PAYLOAD", *USERS[0])
    conn.request("PUT", path, body=b"hello", headers=headers)
    assert conn.getresponse().status == 400
    conn.close()

    objs = s3.list_objects_v2(Bucket=BUCKET)["Contents"]
    assert sorted(o["Key"] for o in objs) == sorted([f"o{i}" for i in range(7)] + ["copy", "mp", "mp2"])
    expected = 0
    for o in objs:
        h = s3.head_object(Bucket=BUCKET, Key=o["Key"], PartNumber=1)
        expected += files_of(o["Size"], h.get("PartsCount", 0))
    assert expected == 2  # mp's two parts; every other object is small enough to be inline
    # relaxed mode unlinks dropped files at its next sync point (about once a
    # second), once the commits that dropped them are durable
    deadline = time.monotonic() + 10
    while True:
        n, names = count_object_files(srv.data_dir)
        if n == expected or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    assert n == expected, (n, expected, names)
    # and the same after a restart (nothing for the orphan sweep to find, nothing lost)
    assert srv.stop() == 0
    srv.start()
    n2, _ = count_object_files(srv.data_dir)
    assert n2 == expected
    s3 = s3_factory_for(srv)
    assert s3.get_object(Bucket=BUCKET, Key="mp")["Body"].read() == part + part


def test_kill9_during_versioned_puts_and_deletes(make_server, s3_factory_for):
    """A versioned bucket under concurrent PUTs (inline and file sizes) and DELETEs
    (delete markers) when the server is killed: every acknowledged version and delete
    marker is there after the restart, byte for byte, and every object file left is one
    a version references (docs/storage.md, "Versioning")."""
    from botocore.exceptions import BotoCoreError, ClientError
    srv = make_server(durability="fsync")
    s3 = s3_factory_for(srv)
    s3.create_bucket(Bucket=BUCKET)
    s3.put_bucket_versioning(Bucket=BUCKET, VersioningConfiguration={"Status": "Enabled"})
    acked = {}  # version id -> sha256 of its bytes, or "marker"
    lock = threading.Lock()
    stop = threading.Event()

    def worker(seed):
        rnd = random.Random(seed)
        c = s3_factory_for(srv)
        while not stop.is_set():
            key = f"v{rnd.randrange(4)}"
            try:
                if rnd.random() < 0.2:
                    r = c.delete_object(Bucket=BUCKET, Key=key)
                    entry = (key, r["VersionId"], "marker")
                else:
                    data = os.urandom(rnd.choice([100, 3000, INLINE_MAX + 5000, 200_000]))
                    r = c.put_object(Bucket=BUCKET, Key=key, Body=data)
                    entry = (key, r["VersionId"], hashlib.sha256(data).hexdigest())
            except (ClientError, BotoCoreError, OSError):
                return  # the kill
            with lock:
                acked[entry[1]] = entry

    ts = [threading.Thread(target=worker, args=(i,), daemon=True) for i in range(4)]
    for t in ts:
        t.start()
    deadline = time.monotonic() + 20
    while len(acked) < 40 and time.monotonic() < deadline:
        time.sleep(0.02)
    srv.kill9()
    stop.set()
    for t in ts:
        t.join(30)
    assert len(acked) >= 40, f"only {len(acked)} versioned writes acknowledged before the kill"
    srv.start()
    s3 = s3_factory_for(srv)
    listed = {}
    for page in s3.get_paginator("list_object_versions").paginate(Bucket=BUCKET):
        for v in page.get("Versions", []):
            listed[v["VersionId"]] = (v["Key"], v["Size"])
        for m in page.get("DeleteMarkers", []):
            listed[m["VersionId"]] = (m["Key"], None)
    for vid, (key, _, digest) in acked.items():
        assert vid in listed, f"acknowledged version {key}@{vid} lost"
        if digest == "marker":
            assert listed[vid][1] is None
        else:
            got = s3.get_object(Bucket=BUCKET, Key=key, VersionId=vid)["Body"].read()
            assert hashlib.sha256(got).hexdigest() == digest
    nfiles, names = count_object_files(srv.data_dir)
    want = sum(files_of(size) for _key, size in listed.values() if size is not None)
    assert nfiles == want, (nfiles, want, names[:10])
