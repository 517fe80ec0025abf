"""The native protocol (whole S3 operations as messages on the RDMA session)
against a real s3rdmad, cross-checked with HTTP (boto3 and libs3rdma's HTTP
transport) on the same objects.

Runs under UCX's default transports and UCX_TLS=tcp (the `ucx` parameter;
client and server get the same setting): --transport native is honoured under
both (only AUTO treats a TCP-only session differently, test_client_lib.py).

"Native never touches the HTTP endpoint": every native-only run here gets an
HTTP endpoint nobody listens on (DEAD) and --no-fallback, and must still
succeed with http_ops == 0.

The C side is build/tests/s3r_driver (tests/client/s3r_driver.c) and
build/s3rdma, from $S3RDMA_BUILD (scripts/run-tests: build/ or build-asan/).
"""
import hashlib
import os
import re
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from s3r_itest import (REPO_ROOT, UCX_ENVS, USERS, RdmaServer, boto_client,  # noqa: E402
                       clean_env, free_port)

BUILD = Path(os.environ.get("S3RDMA_BUILD", REPO_ROOT / "build"))
DRIVER = BUILD / "tests" / "s3r_driver"
CLI = BUILD / "s3rdma"
MiB = 1024 * 1024
PART = 5 * MiB  # --part-size: objects above it go multipart


def pattern(n, seed, base=0):
    """The driver's byte pattern: b[i] = (i*31 + seed*7 + (i>>8)) & 0xff."""
    import numpy as np
    i = np.arange(base, base + n, dtype=np.uint64)
    return ((i * np.uint64(31) + np.uint64(seed * 7) + (i >> np.uint64(8)))
            & np.uint64(0xFF)).astype(np.uint8).tobytes()


@pytest.fixture(scope="module", params=list(UCX_ENVS))
def nsrv(request, tmp_path_factory):
    s = RdmaServer(tmp_path_factory.mktemp("native"), "native", UCX_ENVS[request.param]).start()
    s.ucx = request.param
    # An HTTP endpoint nobody listens on, for the native-only runs.
    s.dead = f"http://127.0.0.1:{free_port()}"
    yield s
    s.stop()


@pytest.fixture(scope="module", params=list(UCX_ENVS))
def csrv(request, tmp_path_factory):
    """A second server for the concurrency tests, so that a server they wedge does
    not take the cross-checks down with it."""
    s = RdmaServer(tmp_path_factory.mktemp("nconc"), "nconc", UCX_ENVS[request.param]).start()
    s.ucx = request.param
    s.dead = f"http://127.0.0.1:{free_port()}"
    yield s
    s.stop()


def boto(srv, user=USERS[0]):
    return boto_client(srv, user=user)


@pytest.fixture
def nb(nsrv):
    """A fresh bucket of user 1 (created over HTTP), emptied and deleted afterwards."""
    yield from _bucket(nsrv)


@pytest.fixture
def cb(csrv):
    yield from _bucket(csrv)


def _bucket(srv):
    name = "nt-" + uuid.uuid4().hex[:12]
    boto(srv).create_bucket(Bucket=name)
    yield name
    s3 = boto(srv)
    try:
        for up in s3.list_multipart_uploads(Bucket=name).get("Uploads", []):
            s3.abort_multipart_upload(Bucket=name, Key=up["Key"], UploadId=up["UploadId"])
        for page in s3.get_paginator("list_objects_v2").paginate(Bucket=name):
            for o in page.get("Contents", []):
                s3.delete_object(Bucket=name, Key=o["Key"])
        s3.delete_bucket(Bucket=name)
    except Exception:
        pass


def _parse(stdout):
    m = re.search(r"^RESULT (.*)$", stdout, re.M)
    fields = dict(kv.split("=", 1) for kv in m.group(1).split()) if m else {}
    for k in list(fields):
        if fields[k].lstrip("-").isdigit():
            fields[k] = int(fields[k])
    return fields


def driver_env(srv, user=USERS[0], endpoint=None):
    assert DRIVER.exists(), f"{DRIVER} not built"
    e = srv.client_env(user)
    if endpoint:
        e["S3R_ENDPOINT"] = endpoint
    return e


def drive(srv, *args, user=USERS[0], endpoint=None, check=True, timeout=300):
    """Runs s3r_driver; returns (returncode, RESULT fields, stdout, stderr)."""
    p = subprocess.run([str(DRIVER), *map(str, args)], env=driver_env(srv, user, endpoint),
                       capture_output=True, text=True, timeout=timeout)
    r = _parse(p.stdout)
    if check:
        assert p.returncode == 0, f"driver {args} failed: {p.returncode}\n{p.stderr}\n{p.stdout}"
    return p.returncode, r, p.stdout, p.stderr


def native(srv, *args, check=True, **kw):
    """A native-only run: HTTP endpoint dead, no fallback. On success nothing went
    over HTTP (nor by token) and nothing fell back."""
    rc, r, out, err = drive(srv, "--transport", "native", "--no-fallback", *args,
                            endpoint=srv.dead, check=check, **kw)
    assert r.get("http_ops") == 0 and r.get("token_ops") == 0 and r.get("fallbacks") == 0, \
        (args, r, err)
    assert r.get("sessions") == 1, (args, r, err)
    return rc, r, out, err


def http(srv, *args, check=True, **kw):
    return drive(srv, "--transport", "http", *args, check=check, **kw)


def head_lines(out):
    """The driver's `head` output as (dict of HEAD fields, dict of metadata)."""
    m = re.search(r"^HEAD (.*)$", out, re.M)
    assert m, out
    h = dict(kv.split("=", 1) for kv in m.group(1).split())
    meta = dict(line[5:].split("=", 1) for line in out.splitlines() if line.startswith("META "))
    return h, meta


def ls_lines(out):
    objs, pres, trunc, nxt = [], [], None, None
    for line in out.splitlines():
        f = line.split(" ")
        if f[0] == "OBJ":
            key = "" if f[1] == "-" else bytes.fromhex(f[1]).decode()
            objs.append((key, int(f[2]), f[3], int(f[4])))
        elif f[0] == "PRE":
            pres.append("" if f[1] == "-" else bytes.fromhex(f[1]).decode())
        elif f[0] == "TRUNCATED":
            trunc = f[1] == "1"
        elif f[0] == "NEXT":
            nxt = f[1]
    return objs, pres, trunc, nxt


def boto_put_mpu(s3, bucket, key, data, part, **kw):
    up = s3.create_multipart_upload(Bucket=bucket, Key=key, **kw)
    parts = []
    for i, off in enumerate(range(0, len(data), part)):
        r = s3.upload_part(Bucket=bucket, Key=key, UploadId=up["UploadId"], PartNumber=i + 1,
                           Body=data[off:off + part])
        parts.append({"ETag": r["ETag"], "PartNumber": i + 1})
    s3.complete_multipart_upload(Bucket=bucket, Key=key, UploadId=up["UploadId"],
                                 MultipartUpload={"Parts": parts})


def mpu_etag(data, part):
    md5s = [hashlib.md5(data[o:o + part]).digest() for o in range(0, len(data), part)]
    return f'"{hashlib.md5(b"".join(md5s)).hexdigest()}-{len(md5s)}"'


# ---------------------------------------------------------------------------
# Round trips, native only
# ---------------------------------------------------------------------------

NSIZES = [1, 4096, 64 * 1024, 64 * 1024 + 1, MiB + 1, 20 * MiB]


@pytest.mark.parametrize("how", ["plain", "files", "alloc"])
def test_native_roundtrip(nsrv, nb, how):
    """put, get, head, get_alloc, delete of each size (20 MiB goes multipart) over
    native only; buffers plain malloc, through files, or from s3r_buf_alloc."""
    extra = {"plain": [], "files": ["--files"], "alloc": ["--alloc"]}[how]
    _, r, _, _ = native(nsrv, *extra, "--part-size", 8 * MiB, "roundtrip", nb, *NSIZES)
    assert r["errors"] == 0 and r["native_ops"] >= 5 * len(NSIZES), r
    assert boto(nsrv).list_objects_v2(Bucket=nb).get("KeyCount") == 0


@pytest.fixture(scope="module", params=list(UCX_ENVS))
def fsrv(request, tmp_path_factory):
    """A server in durability fsync: there every native PUT runs on an executor thread
    and its reply leaves through the progress thread (in relaxed mode, nsrv's, a PUT
    with a small inline body runs on the progress thread itself)."""
    s = RdmaServer(tmp_path_factory.mktemp("nfsync"), "nfsync", UCX_ENVS[request.param])
    s.srv.durability = "fsync"
    s.start()
    s.ucx = request.param
    s.dead = f"http://127.0.0.1:{free_port()}"
    yield s
    s.stop()


@pytest.fixture
def fb(fsrv):
    yield from _bucket(fsrv)


def test_native_roundtrip_fsync(fsrv, fb):
    """put, get, head, get_alloc, delete over native only in fsync mode, bodies inline
    (up to 16 KiB, and the first size past it) and by RDMA."""
    sizes = [1, 4096, 16 * 1024, 16 * 1024 + 1, 64 * 1024 + 1]
    _, r, _, _ = native(fsrv, "roundtrip", fb, *sizes)
    assert r["errors"] == 0 and r["native_ops"] >= 5 * len(sizes), r
    assert boto(fsrv).list_objects_v2(Bucket=fb).get("KeyCount") == 0


@pytest.mark.parametrize("transport", ["native", "token", "http"])
def test_parallel_parts(nsrv, nb, tmp_path, transport):
    """s3r_object_put of a multipart-sized body with parts_in_flight 1 (one after another),
    4 (the default) and more than there are parts: the same bytes and the same
    md5-of-md5s ETag each time, over each transport."""
    s3 = boto(nsrv)
    data = os.urandom(6 * PART + 12345)  # 7 parts
    src = tmp_path / "src"
    src.write_bytes(data)
    for n in (1, 4, 64):
        key = f"par/{transport}/{n}"
        drive(nsrv, "--transport", transport, "--no-fallback", "--part-size", PART,
              "--parts-in-flight", n, "--mode", "buf", "store", nb, key, src)
        o = s3.get_object(Bucket=nb, Key=key)
        assert o["ETag"] == mpu_etag(data, PART) and o["Body"].read() == data, (n, o["ETag"])


@pytest.mark.parametrize("transport", ["native", "http"])
def test_caller_parts_in_flight_by_number(nsrv, nb, tmp_path, transport):
    """s3r_multipart_part_at from 3 threads at once, last part first: the object is the
    parts in number order, with the md5-of-md5s ETag of that order."""
    s3 = boto(nsrv)
    data = os.urandom(6 * PART + 12345)  # 7 parts
    src = tmp_path / "src"
    src.write_bytes(data)
    key = f"numbered/{transport}"
    drive(nsrv, "--transport", transport, "--no-fallback", "--part-size", PART,
          "--parts-in-flight", 3, "--mode", "parts", "store", nb, key, src)
    o = s3.get_object(Bucket=nb, Key=key)
    assert o["ETag"] == mpu_etag(data, PART) and o["Body"].read() == data


def test_native_zero_byte_object(nsrv, nb):
    """A 0-byte object: PUT (buffer, file and async), GET, get_alloc over native."""
    native(nsrv, "roundtrip", nb, 0)
    native(nsrv, "--files", "roundtrip", nb, 0)
    native(nsrv, "async", nb, 2, 0)
    assert boto(nsrv).head_object(Bucket=nb, Key="async/0")["ContentLength"] == 0


def test_native_bytes_count_payload(nsrv, nb):
    """native_bytes counts object payload (s3rdma.h: "bytes = object payload
    moved"), as token_bytes does: put + get + get_alloc of each size, nothing for
    HEAD/DELETE or the XML of a multipart upload."""
    sizes = [4096, MiB + 1]
    _, r, _, _ = native(nsrv, "roundtrip", nb, *sizes)
    assert r["native_bytes"] == 3 * sum(sizes), r
    _, r, _, _ = native(nsrv, "--part-size", PART, "roundtrip", nb, 12 * MiB)
    assert r["native_bytes"] == 3 * 12 * MiB, r


def test_native_threads_share_one_client(csrv, cb):
    _, r, _, _ = native(csrv, "threads", cb, 8, 6, 300000)
    assert r["errors"] == 0 and r["native_ops"] == 8 * 6 * 3, r


def test_native_many_clients(csrv, cb):
    """8 driver processes (8 sessions) at once, each with 4 threads (each process
    in a bucket of its own: the threads verb's keys are the same in every process)."""
    s3 = boto(csrv)
    buckets = [f"{cb}-{i}" for i in range(8)]
    for b in buckets:
        s3.create_bucket(Bucket=b)
    procs = []
    for i, b in enumerate(buckets):
        args = [str(DRIVER), "--transport", "native", "--no-fallback", "threads", b, "4", "4",
                str(100000 + i * 7919)]
        procs.append(subprocess.Popen(args, env=driver_env(csrv, endpoint=csrv.dead),
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    for p in procs:
        out, err = p.communicate(timeout=300)
        r = _parse(out)
        assert p.returncode == 0, err
        assert r["native_ops"] == 4 * 4 * 3 and r["http_ops"] == 0 and r["sessions"] == 1, r
    deadline = time.monotonic() + 20
    while csrv.sessions() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert csrv.sessions() == 0
    for b in buckets:
        s3.delete_bucket(Bucket=b)


@pytest.mark.parametrize("n,size,alloc", [(48, 100000, False), (16, MiB + 1, False),
                                          (32, 3000, True)])
def test_native_async(csrv, cb, n, size, alloc):
    """One thread, n PUTs in flight then n GETs in flight, waited for one by
    one, then n GETs again reaped with s3r_op_wait_any (async verb)."""
    args = ["--alloc"] if alloc else []
    _, r, _, _ = native(csrv, *args, "async", cb, n, size)
    assert r["native_ops"] == 3 * n and r["native_bytes"] == 3 * n * size, r
    s3 = boto(csrv)
    for i in (0, n - 1):
        o = s3.get_object(Bucket=cb, Key=f"async/{i}")
        assert o["ContentType"] == "application/x-async"
        assert o["Body"].read() == pattern(size, 100 + i)


# ---------------------------------------------------------------------------
# Written native, read over HTTP; written over HTTP, read native
# ---------------------------------------------------------------------------

XSIZES = [1, 4096, 70000, MiB + 1, 12 * MiB + 5]  # the last one multipart (PART)


@pytest.mark.parametrize("mode", ["buf", "file", "async"])
def test_native_put_read_by_boto(nsrv, nb, tmp_path, mode):
    s3 = boto(nsrv)
    for size in XSIZES:
        if mode == "async" and size > PART:
            continue  # asynchronous PUTs are single requests
        data = os.urandom(size)
        src = tmp_path / f"src-{size}"
        src.write_bytes(data)
        key = f"n/{mode}/{size}"
        native(nsrv, "--part-size", PART, "--mode", mode, "--content-type", "text/x-native",
               "--meta", "seed=42", "--meta", "color=Blue", "store", nb, key, src)
        o = s3.get_object(Bucket=nb, Key=key)
        assert o["Body"].read() == data
        assert o["ContentType"] == "text/x-native"
        assert o["Metadata"] == {"seed": "42", "color": "Blue"}
        want_etag = (mpu_etag(data, PART) if size > PART
                     else f'"{hashlib.md5(data).hexdigest()}"')
        assert o["ETag"] == want_etag
        # The same object seen by a native HEAD.
        _, _, out, _ = native(nsrv, "head", nb, key)
        h, meta = head_lines(out)
        assert int(h["size"]) == size and h["etag"] == want_etag
        assert h["ctype"] == "text/x-native" and meta == {"seed": "42", "color": "Blue"}
        assert int(h["mtime"]) == int(o["LastModified"].timestamp())
        # And the same bytes stored over HTTP by libs3rdma get the same ETag.
        http(nsrv, "--part-size", PART, "--mode", "buf", "store", nb, key + ".http", src)
        assert s3.head_object(Bucket=nb, Key=key + ".http")["ETag"] == want_etag


@pytest.mark.parametrize("mpu", [False, True])
def test_boto_put_read_native(nsrv, nb, tmp_path, mpu):
    s3 = boto(nsrv)
    size = 12 * MiB + 3 if mpu else 3 * MiB + 3
    data = os.urandom(size)
    key = "b/obj with spaces/é"
    kw = dict(ContentType="application/x-boto", Metadata={"seed": "7", "who": "boto"})
    if mpu:
        boto_put_mpu(s3, nb, key, data, PART, **kw)
    else:
        s3.put_object(Bucket=nb, Key=key, Body=data, **kw)
    bh = s3.head_object(Bucket=nb, Key=key)
    _, _, out, _ = native(nsrv, "head", nb, key)
    h, meta = head_lines(out)
    assert int(h["size"]) == size and h["etag"] == bh["ETag"]
    assert h["ctype"] == "application/x-boto" and meta == {"seed": "7", "who": "boto"}
    assert int(h["mtime"]) == int(bh["LastModified"].timestamp())
    dst = tmp_path / "dst"
    for mode in ("buf", "alloc", "sized", "file", "async"):
        native(nsrv, "--mode", mode, "fetch", nb, key, dst)
        assert dst.read_bytes() == data, mode
        dst.unlink()
    # Ranges: small (inline reply), large (RDMA-written), across a part boundary,
    # to the end; each compared with boto3's answer for the same range.
    ranges = [(0, 1), (1000, 5000), (7, 2 * MiB), (size - 10, 0), (size // 2, 0)]
    if mpu:
        ranges.append((PART - 100, 200))
    for start, n in ranges:
        end = size - 1 if n == 0 else start + n - 1
        want = s3.get_object(Bucket=nb, Key=key, Range=f"bytes={start}-{end}")["Body"].read()
        assert want == data[start:end + 1]
        for mode in ("buf", "alloc", "sized", "file", "async"):
            args = ["--range", f"{start}:{n}", "--mode", mode]
            if mode in ("buf", "async"):
                args += ["--bufsize", end + 1 - start]
            native(nsrv, *args, "fetch", nb, key, dst)
            assert dst.read_bytes() == want, (start, n, mode)
            dst.unlink()


def test_native_copy(nsrv, nb, tmp_path):
    s3 = boto(nsrv)
    data = os.urandom(2 * MiB + 11)
    s3.put_object(Bucket=nb, Key="src", Body=data, ContentType="image/x-c",
                  Metadata={"seed": "3"})
    other = "nt-" + uuid.uuid4().hex[:12]
    native(nsrv, "mb", other)
    try:
        native(nsrv, "copy", nb, "src", other, "dst/copied")
        native(nsrv, "copy", nb, "src", nb, "src-copy")
        for b, k in ((other, "dst/copied"), (nb, "src-copy")):
            o = s3.get_object(Bucket=b, Key=k)
            assert o["Body"].read() == data
            assert o["ContentType"] == "image/x-c" and o["Metadata"] == {"seed": "3"}
            assert o["ETag"] == f'"{hashlib.md5(data).hexdigest()}"'
            _, _, out, _ = native(nsrv, "head", b, k)
            h, meta = head_lines(out)
            assert h["etag"] == o["ETag"] and meta == {"seed": "3"}
        # A copy of an object written over native, read natively.
        native(nsrv, "put", nb, "pat", 70000, 9)
        native(nsrv, "copy", nb, "pat", nb, "pat2")
        native(nsrv, "get", nb, "pat2", 70000, 9)
        _, _, out, _ = native(nsrv, "head", nb, "pat2")
        h, meta = head_lines(out)
        assert h["ctype"] == "application/x-test" and meta == {"seed": "9"}
    finally:
        native(nsrv, "rm", other, "dst/copied")
        native(nsrv, "rb", other)


def test_native_buckets(nsrv):
    s3 = boto(nsrv)
    name = "nt-" + uuid.uuid4().hex[:12]
    native(nsrv, "mb", name)
    s3.head_bucket(Bucket=name)
    native(nsrv, "hb", name)
    _, _, out, _ = native(nsrv, "lb")
    mine = {ln.split()[1]: int(ln.split()[2]) for ln in out.splitlines()
            if ln.startswith("BUCKET ")}
    theirs = {b["Name"]: int(b["CreationDate"].timestamp()) for b in s3.list_buckets()["Buckets"]}
    assert mine == theirs and name in mine
    # Another user's listing over native does not show user 1's buckets.
    _, _, out, _ = native(nsrv, "lb", user=USERS[1])
    assert name not in out
    native(nsrv, "rb", name)
    rc, r, _, _ = native(nsrv, "hb", name, check=False)
    assert rc == 1 and r["status"] == "S3R_ERR_NO_SUCH_BUCKET"
    assert name not in [b["Name"] for b in s3.list_buckets()["Buckets"]]
    # Created over HTTP, deleted over native, and the other way round.
    s3.create_bucket(Bucket=name)
    native(nsrv, "rb", name)
    native(nsrv, "mb", name)
    s3.delete_bucket(Bucket=name)


# ---------------------------------------------------------------------------
# Listings
# ---------------------------------------------------------------------------

LIST_KEYS = ["a/1", "a/2", "a/3", "a/b/4", "a/b/5", "a/c/6", "b/x", "b/y", "c", "d e/f",
             "é/ü", "z/", "zz", "a%2F", "a+b"]


def _boto_page(s3, bucket, prefix, delim, start_after, max_keys, token=None):
    kw = {"Bucket": bucket}
    if prefix:
        kw["Prefix"] = prefix
    if delim:
        kw["Delimiter"] = delim
    if start_after:
        kw["StartAfter"] = start_after
    if max_keys:
        kw["MaxKeys"] = max_keys
    if token:
        kw["ContinuationToken"] = token
    r = s3.list_objects_v2(**kw)
    objs = [(o["Key"], o["Size"], o["ETag"], int(o["LastModified"].timestamp()))
            for o in r.get("Contents", [])]
    pres = [p["Prefix"] for p in r.get("CommonPrefixes", [])]
    return objs, pres, r["IsTruncated"], r.get("NextContinuationToken")


def test_native_listing_matches_boto(nsrv, nb):
    s3 = boto(nsrv)
    for i, k in enumerate(LIST_KEYS):
        s3.put_object(Bucket=nb, Key=k, Body=b"x" * i)
    d = lambda v: v if v else "-"  # noqa: E731
    cases = [("", "", "", 0), ("", "/", "", 0), ("a/", "/", "", 0), ("a/", "", "", 0),
             ("a", "/", "", 0), ("", "", "b/x", 0), ("", "/", "a/", 0), ("a/", "", "", 2),
             ("", "/", "", 3), ("é", "/", "", 0), ("nope", "", "", 0), ("", "b", "", 0)]
    for prefix, delim, sa, mk in cases:
        want = _boto_page(s3, nb, prefix, delim, sa, mk)
        _, _, out, _ = native(nsrv, "ls", nb, d(prefix), d(delim), d(sa), mk, 0)
        got = ls_lines(out)
        assert got[:3] == want[:3], (prefix, delim, sa, mk)
        assert (got[3] is None) == (want[3] is None)
        # Pagination: native follows its own tokens; the pages equal boto3's.
        # Each side's token also works on the other side.
        if mk:
            btoken, ntoken, pages = want[3], got[3], 1
            while btoken:
                want = _boto_page(s3, nb, prefix, delim, sa, mk, btoken)
                _, _, out, _ = native(nsrv, "ls", nb, d(prefix), d(delim), d(sa), mk, 0, ntoken)
                got = ls_lines(out)
                assert got[:3] == want[:3], (prefix, delim, sa, mk, pages)
                _, _, out, _ = native(nsrv, "ls", nb, d(prefix), d(delim), d(sa), mk, 0, btoken)
                assert ls_lines(out)[:3] == want[:3]
                btoken, ntoken, pages = want[3], got[3], pages + 1
                assert (btoken is None) == (ntoken is None)
                assert pages < 20
            assert pages > 1
    # all_pages in pages of 2 equals boto3's paginator.
    every = []
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=nb,
                                                             PaginationConfig={"PageSize": 2}):
        every += [(o["Key"], o["Size"], o["ETag"], int(o["LastModified"].timestamp()))
                  for o in page.get("Contents", [])]
    _, _, out, _ = native(nsrv, "ls", nb, "-", "-", "-", 2, 1)
    objs, pres, trunc, nxt = ls_lines(out)
    assert objs == every and len(every) == len(LIST_KEYS) and not trunc and nxt is None
    # Several pages in one native request (x-s3rdma-pages): s3r_object_list_pages
    # of 3 pages of 2 keys from every start equals boto3's pages 1-3 from there,
    # and its token goes on where they end; the server answered in one request.
    for prefix, delim, sa in (("", "", ""), ("", "/", ""), ("a/", "/", ""), ("", "", "b/x")):
        btoken, ntoken = None, None
        while True:
            want_objs, want_pres, trunc = [], [], False
            for _ in range(3):
                o, p, trunc, btoken = _boto_page(s3, nb, prefix, delim, sa, 2, btoken)
                want_objs += o
                want_pres += p
                if not trunc:
                    break
            _, res, out, _ = native(nsrv, "ls", nb, d(prefix), d(delim), d(sa), 2, 3,
                                    *([ntoken] if ntoken else []))
            objs, pres, ntrunc, ntoken = ls_lines(out)
            assert (objs, pres, ntrunc) == (want_objs, want_pres, trunc), (prefix, delim, sa)
            assert res["native_ops"] == 1 and res["http_ops"] == 0, res
            if not trunc:
                assert ntoken is None
                break
    # The driver's own listing checks, over native.
    empty = "nt-" + uuid.uuid4().hex[:12]
    s3.create_bucket(Bucket=empty)
    try:
        native(nsrv, "list", empty)
    finally:
        s3.delete_bucket(Bucket=empty)


# ---------------------------------------------------------------------------
# Errors: the same status, HTTP status and S3 code as over HTTP
# ---------------------------------------------------------------------------

def _error_cases(nb, other):
    """(user index, driver args) that must fail; `other` is a bucket of user 2."""
    return [
        (0, ["get", nb, "no/such/key", 10, 1]),
        (0, ["head", nb, "no/such/key"]),
        (0, ["copy", nb, "no/such/key", nb, "dst"]),
        (0, ["get", "no-such-bucket-nt", "k", 10, 1]),
        (0, ["put", "no-such-bucket-nt", "k", 10, 1]),
        (0, ["hb", "no-such-bucket-nt"]),
        (0, ["rb", "no-such-bucket-nt"]),
        (0, ["ls", "no-such-bucket-nt", "-", "-", "-", 0, 0]),
        (0, ["mb", other]),              # BucketAlreadyExists (user 2's)
        (0, ["mb", "Bad_Name"]),         # InvalidBucketName
        (0, ["mb", "ab"]),
        (0, ["rb", nb]),                 # BucketNotEmpty
        (0, ["--range", "99999:5", "get", nb, "obj", 10, 1]),  # InvalidRange
        # user 2 against user 1's bucket and object
        (1, ["get", nb, "obj", 10, 1]),
        (1, ["head", nb, "obj"]),
        (1, ["put", nb, "obj", 10, 2]),
        (1, ["rm", nb, "obj"]),
        (1, ["copy", nb, "obj", other, "stolen"]),
        (1, ["ls", nb, "-", "-", "-", 0, 0]),
        (1, ["hb", nb]),
        (1, ["rb", nb]),
    ]


def test_native_errors_match_http(nsrv, nb):
    s3 = boto(nsrv)
    s3.put_object(Bucket=nb, Key="obj", Body=pattern(10, 1))
    other = "nt-" + uuid.uuid4().hex[:12]
    boto(nsrv, USERS[1]).create_bucket(Bucket=other)
    try:
        seen = set()
        for u, args in _error_cases(nb, other):
            user = USERS[u]
            rc_h, rh, _, eh = http(nsrv, *args, user=user, check=False)
            rc_n, rn, _, en = native(nsrv, *args, user=user, check=False)
            assert rc_h == 1 and rc_n == 1, (u, args, eh, en)
            assert rn["transport"] == "native", (args, rn)
            assert (rn["status"], rn["http_status"], rn["code"]) == \
                (rh["status"], rh["http_status"], rh["code"]), (u, args, rh, rn)
            seen.add((rn["status"], rn["code"]))
        for want in [("S3R_ERR_NO_SUCH_KEY", "NoSuchKey"), ("S3R_ERR_NO_SUCH_BUCKET", "NoSuchBucket"),
                     ("S3R_ERR_BUCKET_EXISTS", "BucketAlreadyExists"),
                     ("S3R_ERR_INVALID_ARG", "InvalidBucketName"),
                     ("S3R_ERR_BUCKET_NOT_EMPTY", "BucketNotEmpty"),
                     ("S3R_ERR_INVALID_RANGE", "InvalidRange"),
                     ("S3R_ERR_ACCESS_DENIED", "AccessDenied")]:
            assert want in seen, want
        # Nothing of user 1's changed hands or went away.
        assert s3.get_object(Bucket=nb, Key="obj")["Body"].read() == pattern(10, 1)
        assert "Contents" not in boto(nsrv, USERS[1]).list_objects_v2(Bucket=other)
        # The driver's own error checks, over native.
        native(nsrv, "errors", nb)
    finally:
        boto(nsrv, USERS[1]).delete_bucket(Bucket=other)


@pytest.mark.parametrize("bufsize", [1000, 100000])
def test_native_buffer_too_small(nsrv, nb, bufsize):
    """A 3 MiB object into a smaller buffer (one that would take the reply inline,
    and one with an out region): S3R_ERR_BUFFER_TOO_SMALL naming the bytes
    needed, as over HTTP."""
    http(nsrv, "put", nb, "big", 3 * MiB, 5)
    for run in (http, native):
        rc, r, _, err = run(nsrv, "--bufsize", bufsize, "get", nb, "big", 3 * MiB, 5,
                            check=False)
        assert rc == 1 and r["status"] == "S3R_ERR_BUFFER_TOO_SMALL", (run.__name__, err)
        assert r["needed"] == 3 * MiB, (run.__name__, r, err)
    rc, r, _, err = native(nsrv, "--bufsize", bufsize, "--range", "10:200000", "get", nb, "big",
                           3 * MiB, 5, check=False)
    assert rc == 1 and r["status"] == "S3R_ERR_BUFFER_TOO_SMALL" and r["needed"] == 200000, \
        (r, err)


@pytest.mark.parametrize("inline", [0, 1])
def test_native_errors_reach_a_client_that_takes_nothing_inline(nsrv, nb, inline):
    """A client may ask for no reply body inline (native_inline 0 or 1) and give a
    one-byte out span: its errors still reach it, because an error's body travels
    inline whatever was asked. Regression: the server answered the reply it could
    not send with an error reply that did not fit either, and so on until its
    stack overflowed (any session could take the server down with a GET of a
    missing key)."""
    rc, r, _, err = native(nsrv, "--native-inline", inline, "--bufsize", 1, "get", nb, "nope",
                           10, 1, check=False)
    assert rc == 1 and (r["status"], r["http_status"], r["code"]) == \
        ("S3R_ERR_NO_SUCH_KEY", 404, "NoSuchKey"), (r, err)
    # A body that fits neither: the answer names the bytes needed, as before.
    http(nsrv, "put", nb, "big", 100000, 4)
    rc, r, _, err = native(nsrv, "--native-inline", inline, "--bufsize", 1, "get", nb, "big",
                           100000, 4, check=False)
    assert rc == 1 and r["status"] == "S3R_ERR_BUFFER_TOO_SMALL" and r["needed"] == 100000, \
        (r, err)
    native(nsrv, "--native-inline", inline, "get", nb, "big", 100000, 4)
    assert nsrv.srv.alive(), nsrv.srv.log_tail()


@pytest.mark.parametrize("meta", ["evil=x\r\ncontent-length: 1", "evil=x\ny", "evil=\x01",
                                  "ev\x7fil=x"])
def test_native_params_obey_the_field_syntax(nsrv, nb, meta):
    """A native header param is held to HTTP's field syntax before any handler runs:
    metadata with CR/LF or another control character is 400 InvalidArgument and
    nothing is stored. Regression: it was stored, and came back raw in other
    readers' native replies, where libs3rdma read "content-length: 1" as a reply
    header of its own (another tenant's HEAD reported a wrong size)."""
    rc, r, _, err = native(nsrv, "--meta", meta, "put", nb, "k", 100, 3, check=False)
    assert rc == 1 and (r["http_status"], r["code"]) == (400, "InvalidArgument"), (r, err)
    assert "Contents" not in boto(nsrv).list_objects_v2(Bucket=nb)


# ---------------------------------------------------------------------------
# The CLI
# ---------------------------------------------------------------------------

def ncli(srv, *args, check=None, endpoint=None):
    env = clean_env(srv.ucx_env)
    env.update({"AWS_ACCESS_KEY_ID": USERS[0][0], "AWS_SECRET_ACCESS_KEY": USERS[0][1]})
    p = subprocess.run([str(CLI), "--endpoint", endpoint or srv.dead, "--rdma-endpoint",
                        srv.rdma_endpoint, "--transport", "native", "--no-fallback",
                        *map(str, args)], env=env, capture_output=True, timeout=300)
    if check is not None:
        assert p.returncode == check, (args, p.returncode, p.stdout, p.stderr)
    return p


def test_cli_native(nsrv, tmp_path):
    b = "nc-" + uuid.uuid4().hex[:10]
    src = tmp_path / "src.bin"
    src.write_bytes(os.urandom(12 * MiB + 3))
    ncli(nsrv, "mb", f"s3://{b}", check=0)
    ncli(nsrv, "--part-size", PART, "--content-type", "text/x-t", "--meta", "k=v", "put", src,
         f"s3://{b}/d/f", check=0)
    small = tmp_path / "small"
    small.write_bytes(b"hello native")
    ncli(nsrv, "put", small, f"s3://{b}/s", check=0)
    out = ncli(nsrv, "ls", f"s3://{b}", check=0).stdout.decode()
    assert "PRE d/" in out and " s\n" in out
    out = ncli(nsrv, "ls", f"s3://{b}/d/", check=0).stdout.decode()
    assert str(12 * MiB + 3) in out
    assert b in ncli(nsrv, "ls", check=0).stdout.decode().split()
    out = ncli(nsrv, "stat", f"s3://{b}/d/f", check=0).stdout.decode()
    assert "text/x-t" in out and "k=v" in out and str(12 * MiB + 3) in out
    o = boto(nsrv).get_object(Bucket=b, Key="d/f")
    assert o["Body"].read() == src.read_bytes() and o["Metadata"] == {"k": "v"}
    dst = tmp_path / "dst.bin"
    ncli(nsrv, "get", f"s3://{b}/d/f", dst, check=0)
    assert dst.read_bytes() == src.read_bytes()
    assert ncli(nsrv, "get", f"s3://{b}/s", "-", check=0).stdout == b"hello native"
    ncli(nsrv, "cp", f"s3://{b}/d/f", f"s3://{b}/copy", check=0)
    assert ncli(nsrv, "get", f"s3://{b}/copy", "-", check=0).stdout == src.read_bytes()
    p = ncli(nsrv, "rb", f"s3://{b}", check=1)
    assert b"not empty" in p.stderr
    for k in ("d/f", "copy", "s"):
        ncli(nsrv, "rm", f"s3://{b}/{k}", check=0)
    p = ncli(nsrv, "get", f"s3://{b}/copy", tmp_path / "none", check=3)
    assert b"NoSuchKey" in p.stderr or b"no such key" in p.stderr
    ncli(nsrv, "rb", f"s3://{b}", check=0)
    ncli(nsrv, "stat", f"s3://{b}/x", check=3)
    boto(nsrv).create_bucket(Bucket=b)  # the name is free again
    boto(nsrv).delete_bucket(Bucket=b)
