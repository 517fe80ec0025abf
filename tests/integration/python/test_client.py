"""s3rdma.Client against a real s3rdmad: every method, each transport, errors."""
import asyncio
import io
import mmap
import os
import re
import subprocess
import sys
import threading
import urllib.request

import numpy as np
import pytest
import s3rdma
from conftest import OPS_COUNTER, TRANSPORTS, USERS

MiB = 1024 * 1024

try:  # python3-torch (Debian): a test dependency, optional for the package
    import torch as TORCH
except ImportError:
    TORCH = None


def payload(n, seed=0):
    return np.random.default_rng(seed).integers(0, 256, n, dtype=np.uint8).tobytes()


def moved(rsrv):
    """{path: bytes} from s3rdmad's s3rdma_rdma_bytes_total: "mapped" (read or written in
    place in client memory the server maps) or "staged" (UCX's RMA from staging chunks)."""
    with urllib.request.urlopen(f"{rsrv.endpoint}/metrics", timeout=30) as r:
        text = r.read().decode()
    return {m.group(1): int(m.group(2))
            for m in re.finditer(r'^s3rdma_rdma_bytes_total\{path="(\w+)"\} (\d+)$', text,
                                 re.M)}


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("size", [0, 1, 4096, MiB + 3, 64 * MiB])
def test_roundtrip_sizes(client, rbucket, boto, transport, size):
    c = client(transport)
    data = payload(size, size)
    c.put_object(rbucket, "obj", data)
    before = c.stats()[OPS_COUNTER[transport]]
    assert c.get_object(rbucket, "obj") == data
    buf = bytearray(size + 10)
    assert c.get_object_into(rbucket, "obj", buf) == size
    assert buf[:size] == data
    assert c.stats()[OPS_COUNTER[transport]] >= before + (1 if transport != "native" else 2)
    # the bytes the server stored, read by another client
    assert boto.get_object(Bucket=rbucket, Key="obj")["Body"].read() == data


@pytest.mark.parametrize("transport", TRANSPORTS + ["auto"])
def test_get_object_sizes_at_the_bounds(client, rbucket, boto, transport):
    """get_object() -> bytes around each size where the path changes: the native inline
    reply (16 KiB), the binding's first try (1 MiB, then one GET straight into a bytes
    object of the size the server names), whole and ranged, ranges past the end."""
    c = client(transport)
    for size in (0, 1, 16 * 1024 - 1, 16 * 1024, 16 * 1024 + 1, MiB - 1, MiB, MiB + 1,
                 3 * MiB + 5):
        data = payload(size, size)
        boto.put_object(Bucket=rbucket, Key="b", Body=data)
        assert c.get_object(rbucket, "b") == data, size
        if size < 2:
            continue  # a range must start inside the object (416 otherwise)
        assert c.get_object(rbucket, "b", range=(1, None)) == data[1:], size
        for stop in (size // 2, size + 2 * MiB):  # past the end: what there is
            assert c.get_object(rbucket, "b", range=(0, stop)) == data[:stop], (size, stop)


PEAK_CHILD = r"""
import sys
import s3rdma
endpoint, rdma_endpoint, ak, sk, transport, bucket = sys.argv[1:7]


def high_water():
    # This process's peak resident memory in bytes (VmHWM: unlike ru_maxrss, not
    # inherited across exec from the process that started it).
    with open("/proc/self/status") as f:
        return next(int(l.split()[1]) * 1024 for l in f if l.startswith("VmHWM:"))


c = s3rdma.Client(endpoint=endpoint, rdma_endpoint=rdma_endpoint, access_key=ak,
                  secret_key=sk, transport=transport, quiet=True)
c.get_object(bucket, "small")  # connections, sessions and pools made before the baseline
before = high_water()
body = c.get_object(bucket, "big")
after = high_water()
print(len(body), body[:4096].hex(), after - before)
"""


@pytest.mark.parametrize("transport", ["http", "token"])
def test_get_object_lands_in_its_bytes(rsrv, rbucket, boto, transport):
    """get_object() over HTTP or the token path writes the body straight into the bytes
    object it returns (HTTP: made from the response's Content-Length): the process's peak
    memory grows by the object once, not twice (a library buffer, then a copy). Measured
    in a fresh process, whose high-water mark this test's own data cannot have raised."""
    size = 48 * MiB
    data = payload(size, 5)
    boto.put_object(Bucket=rbucket, Key="big", Body=data)
    boto.put_object(Bucket=rbucket, Key="small", Body=b"x" * 4096)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    user = USERS[0]
    out = subprocess.run([sys.executable, "-c", PEAK_CHILD, rsrv.endpoint, rsrv.rdma_endpoint,
                          user[0], user[1], transport, rbucket], env=env, capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    n, head, grew = out.stdout.split()
    assert int(n) == size and bytes.fromhex(head) == data[:4096]
    assert int(grew) < size * 3 // 2, f"peak memory grew by {int(grew) / MiB:.0f} MiB"


def _vm_flags(addr):
    """The VmFlags of the mapping of this process that holds addr."""
    with open("/proc/self/smaps") as f:
        inside = False
        for line in f:
            head = line.split()[0]
            if "-" in head and not head.endswith(":"):
                lo, hi = (int(x, 16) for x in head.split("-"))
                inside = lo <= addr < hi
            elif inside and head == "VmFlags:":
                return line.split()[1:]
    raise AssertionError(f"no mapping holds {addr:#x}")


@pytest.mark.skipif(not os.path.isdir("/sys/kernel/mm/transparent_hugepage"),
                    reason="kernel without transparent huge pages")
@pytest.mark.parametrize("transport", TRANSPORTS)
def test_get_into_fresh_memory_asks_for_huge_pages(client, rbucket, transport):
    """get_object_into a large buffer whose memory is not there yet (as torch.empty's
    storage) asks for huge pages over it before the body arrives (NumPy's own policy
    for its arrays), and leaves memory already in use as it is."""
    import ctypes
    c = client(transport)
    data = payload(12 * MiB, 8)
    c.put_object(rbucket, "hp", data)
    huge = 2 * MiB
    for fresh in (True, False):
        m = mmap.mmap(-1, 16 * MiB)  # anonymous; untouched until written
        if not fresh:
            m.write(b"\1" * len(m))
        base = ctypes.addressof(ctypes.c_char.from_buffer(m))
        aligned = (base + huge - 1) // huge * huge
        assert c.get_object_into(rbucket, "hp", m) == len(data)
        assert m[:len(data)] == data
        assert ("hg" in _vm_flags(aligned)) == fresh, fresh
        m.close()


def test_parts_in_flight_setting(client, rbucket, boto):
    """parts_in_flight reaches libs3rdma: a 20 MiB body in 5 MiB parts, 3 at a time,
    stored byte for byte as a 4-part upload."""
    c = client("native", part_size=5 * MiB, multipart_threshold=5 * MiB, parts_in_flight=3)
    assert c.parts_in_flight == 3
    data = payload(20 * MiB, 7)
    c.put_object(rbucket, "par", data)
    assert boto.get_object(Bucket=rbucket, Key="par")["Body"].read() == data
    assert c.head_object(rbucket, "par").etag.strip('"').endswith("-4")
    with pytest.raises(ValueError):
        client("native", parts_in_flight=0)


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_ranges(client, rbucket, transport):
    c = client(transport)
    data = payload(100_000, 1)
    c.put_object(rbucket, "r", data)
    assert c.get_object(rbucket, "r", range=(10, 20)) == data[10:20]
    assert c.get_object(rbucket, "r", range="bytes=5-9") == data[5:10]
    assert c.get_object(rbucket, "r", range=(99_990, None)) == data[99_990:]
    buf = bytearray(50_000)
    assert c.get_object_into(rbucket, "r", buf, range=(50_000, 100_000)) == 50_000
    assert buf == data[50_000:]
    with pytest.raises(s3rdma.InvalidRange):
        c.get_object(rbucket, "r", range=(200_000, 200_010))
    assert c.get_object(rbucket, "r", range="bytes=99999-") == data[99_999:]
    for bad in [(5, 5), (-1, 3), "bytes=x-3", "5-2"]:
        with pytest.raises(ValueError):
            c.get_object(rbucket, "r", range=bad)


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("size", [3 * MiB, 2 * 5 * MiB + 4100], ids=["3MiB", "10MiB+4100"])
def test_get_into_buffer_kinds(client, rbucket, transport, size):
    """GET into and PUT from every kind of Python buffer, byte for byte: 3 MiB (one PUT;
    a native GET through the bounce buffer) and above 4 MiB and the multipart threshold
    (a multipart PUT of 5 MiB parts from the caller's memory, and a GET landing in it:
    the caller's buffer mapped by the server, or registered per call over token)."""
    c = client(transport, multipart_threshold=5 * MiB, part_size=5 * MiB)
    data = payload(size, 2)
    c.put_object(rbucket, "b", data)
    targets = {
        "bytearray": bytearray(len(data)),
        "memoryview": memoryview(bytearray(len(data) + 7))[7:],
        "mmap": mmap.mmap(-1, len(data)),
        "numpy": np.empty(len(data), np.uint8),
        "numpy-float32": np.empty(len(data) // 4, np.float32),
        "registered": c.allocate_buffer(len(data)),
    }
    if TORCH is not None:  # no buffer protocol: moved through tensor.numpy(), same memory
        targets["torch"] = TORCH.empty(len(data), dtype=TORCH.uint8)
        targets["torch-float32"] = TORCH.empty(len(data) // 4, dtype=TORCH.float32)

    def raw(t):
        return bytes(memoryview(t.numpy() if TORCH is not None and
                                isinstance(t, TORCH.Tensor) else t).cast("B"))
    for name, t in targets.items():
        assert c.get_object_into(rbucket, "b", t) == len(data), name
        assert raw(t) == data, name
    # and PUT from each of them (and from bytes)
    targets["bytes"] = data
    for name, t in targets.items():
        c.put_object(rbucket, f"from-{name}", t)
        assert c.get_object(rbucket, f"from-{name}") == data, name
    # batches take every kind too
    kinds = [n for n in targets if n != "bytes"]
    got = c.get_objects(rbucket, [f"from-{n}" for n in kinds], [targets[n] for n in kinds])
    assert got == [len(data)] * len(kinds)
    for n in kinds:
        assert raw(targets[n]) == data, n


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_buffer_too_small(client, rbucket, transport):
    c = client(transport)
    c.put_object(rbucket, "big", payload(100_000))
    with pytest.raises(s3rdma.BufferTooSmall) as e:
        c.get_object_into(rbucket, "big", bytearray(1000))
    assert e.value.needed_bytes == 100_000


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_stats_errors_leave_out_get_objects_first_try(client, rbucket, transport):
    """A native get_object() of more than 1 MiB first tries a pooled 1 MiB block and is
    answered "buffer too small" with the size, then reads the object: stats()' errors
    counts real failures only, and the redone first tries in get_retries."""
    c = client(transport)
    c.put_object(rbucket, "big", payload(2 * MiB + 5))
    before = c.stats()
    assert c.get_object(rbucket, "big") == payload(2 * MiB + 5)
    after = c.stats()
    assert after["errors"] == before["errors"], (before, after)
    assert after["get_retries"] - before["get_retries"] == (transport == "native")
    with pytest.raises(s3rdma.NoSuchKey):
        c.get_object(rbucket, "absent")
    with pytest.raises(s3rdma.BufferTooSmall):  # the caller's buffer: a real error
        c.get_object_into(rbucket, "big", bytearray(1000))
    assert c.stats()["errors"] == before["errors"] + 2


def test_readonly_buffer_refused(client, rbucket):
    c = client()
    c.put_object(rbucket, "k", b"abc")
    with pytest.raises(TypeError):
        c.get_object_into(rbucket, "k", b"xxx")
    with pytest.raises(TypeError):
        c.put_object(rbucket, "k", "text is not bytes")


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_head_copy_delete(client, rbucket, boto, transport):
    c = client(transport)
    c.put_object(rbucket, "src", b"x" * 1234, metadata={"owner": "alice", "n": "1"},
                 content_type="text/plain")
    h = c.head_object(rbucket, "src")
    assert (h.size, h.content_type, h.metadata) == (1234, "text/plain",
                                                   {"owner": "alice", "n": "1"})
    assert h.etag == boto.head_object(Bucket=rbucket, Key="src")["ETag"]
    c.copy_object(rbucket, "src", rbucket, "dst")
    assert c.head_object(rbucket, "dst").metadata == {"owner": "alice", "n": "1"}
    assert c.get_object(rbucket, "dst") == b"x" * 1234
    c.delete_object(rbucket, "src")
    with pytest.raises(s3rdma.NoSuchKey) as e:
        c.head_object(rbucket, "src")
    assert e.value.http_status == 404
    res = c.delete_objects(rbucket, ["dst", "never-there"])
    assert "dst" in res.deleted
    with pytest.raises(s3rdma.NoSuchKey):
        c.get_object(rbucket, "dst")


def test_put_leaves_no_part_registration(client, rbucket):
    """A multipart put_object from a Python buffer over the token path registers each
    part with the RDMA session; when it returns, every one of them is dropped (Python
    may free the buffer, and a stale registration would serve the next buffer at those
    addresses): the same PUT again registers every part again."""
    c = client("token", multipart_threshold=8 * MiB, part_size=8 * MiB)
    data = bytearray(os.urandom(32 * MiB))
    r0 = c.stats()["regions_registered"]
    c.put_object(rbucket, "k", data)
    r1 = c.stats()["regions_registered"]
    c.put_object(rbucket, "k", data)
    r2 = c.stats()["regions_registered"]
    assert r1 - r0 >= 2, (r0, r1)
    assert r2 - r1 >= len(data) // (8 * MiB), (r0, r1, r2)  # every part registers again


def test_native_put_parts_from_every_buffer(client, rsrv, rbucket):
    """A native multipart put_object of parts above 4 MiB (the bounce buffer's body
    limit) from each kind of Python buffer stores the object byte for byte, and over
    this suite's same-host shared-memory session (UCX's default transports) the server
    reads every part in place from memory it maps: the parts are copied into the
    client's kept scratch buffers, none crosses UCX's software RMA (s3rdmad's
    s3rdma_rdma_bytes_total{path="staged"} does not move), and no part of the caller's
    buffer is registered."""
    c = client("native", multipart_threshold=5 * MiB, part_size=5 * MiB, parts_in_flight=3)
    data = payload(3 * 5 * MiB + 3 * MiB + 7, 11)  # the last part through the bounce buffer
    bodies = {"bytes": data, "bytearray": bytearray(data),
              "memoryview": memoryview(bytearray(b"x" + data))[1:],
              "numpy": np.frombuffer(data, np.uint8).copy()}
    if TORCH is not None:
        bodies["torch"] = TORCH.frombuffer(bytearray(data), dtype=TORCH.uint8)
    c.put_object(rbucket, "warm", data)  # the session and its scratch buffers
    for name, body in bodies.items():
        r0, m0 = c.stats()["regions_registered"], moved(rsrv)
        c.put_object(rbucket, f"from-{name}", body)
        r1, m1 = c.stats()["regions_registered"], moved(rsrv)
        assert c.get_object(rbucket, f"from-{name}") == data, name
        if os.environ.get("UCX_TLS"):
            continue  # not the shared-memory session this test is about: bytes only
        assert m1["staged"] == m0["staged"], (name, m0, m1)
        assert m1["mapped"] - m0["mapped"] == len(data), (name, m0, m1)
        assert r1 == r0, (name, r0, r1)


def test_native_single_put_above_scratch_limit(client, rsrv, rbucket):
    """A single native PutObject of a body above the scratch buffers' limit (64 MiB,
    S3C_STAGE_BODY_MAX) from a caller's buffer stores it byte for byte, and over this
    suite's same-host shared-memory session the server reads it in place from the
    client's kept bounce buffer (the body copied in once), not through UCX's software
    RMA (s3rdma_rdma_bytes_total{path="staged"} does not move): that path cost the
    client and the server's progress thread a core each for a third of the speed."""
    size = 64 * MiB + 4097
    c = client("native", multipart_threshold=size)
    data = payload(size, 12)
    bodies = {"bytes": data, "numpy": np.frombuffer(data, np.uint8).copy()}
    if TORCH is not None:
        bodies["torch"] = TORCH.frombuffer(bytearray(data), dtype=TORCH.uint8)
    for name, body in bodies.items():
        m0 = moved(rsrv)
        c.put_object(rbucket, f"one-{name}", body)
        m1 = moved(rsrv)
        assert c.get_object(rbucket, f"one-{name}") == data, name
        if os.environ.get("UCX_TLS"):
            continue  # not the shared-memory session this test is about: bytes only
        assert m1["staged"] == m0["staged"], (name, m0, m1)
        assert m1["mapped"] - m0["mapped"] == size, (name, m0, m1)


def test_native_single_put_and_gets_share_the_bounce_buffer(client, rbucket):
    """Large single PUTs (their body in the client's one bounce buffer) on one thread and
    GETs into bytearrays (their reply through the same bounce buffer) on another, on one
    client: a call that finds the buffer taken goes without it, and every byte is right."""
    size = 64 * MiB + 1
    c = client("native", multipart_threshold=size)
    big = payload(size, 13)
    small = payload(3 * MiB, 14)
    c.put_object(rbucket, "small", small)
    errors = []

    def getter():
        try:
            buf = bytearray(len(small))
            for _ in range(30):
                assert c.get_object_into(rbucket, "small", buf) == len(small)
                assert buf == small
        except Exception as e:  # noqa: BLE001 (reported below)
            errors.append(e)
    t = threading.Thread(target=getter)
    t.start()
    for i in range(3):
        c.put_object(rbucket, f"big{i}", bytearray(big))
    t.join()
    assert errors == []
    for i in range(3):
        assert c.get_object(rbucket, f"big{i}") == big


@pytest.mark.parametrize("transport", ["http", "native"])
def test_delete_objects_batches(client, rsrv, rbucket, boto, transport):
    """delete_objects sends DeleteObjects, 1000 keys per request: 1,203 keys
    (XML's special characters, non-ASCII, a key with a control character
    that no XML 1.0 body can carry) go in two requests plus that one key's
    own DELETE; a key the server refuses (over S3's 1,024 bytes) comes back
    in errors, with S3's code, and nothing else is left."""
    from s3r_itest import stats_json
    c = client(transport)
    keys = [f"k/{i:04d}" for i in range(1200)] + ["a&b<c>'\"d", "caf\u00e9/\u00fc", "ctl\x01key"]
    for k in keys:
        boto.put_object(Bucket=rbucket, Key=k, Body=b"x")
    too_long = "L" * 1025
    before = stats_json(rsrv.srv)[1]["http_requests"]
    res = c.delete_objects(rbucket, keys + [too_long])
    after = stats_json(rsrv.srv)[1]["http_requests"]
    assert sorted(res.deleted) == sorted(keys)
    assert list(res.errors) == [too_long]
    assert res.errors[too_long].code == "KeyTooLongError"
    assert boto.list_objects_v2(Bucket=rbucket).get("KeyCount") == 0
    if transport == "http":
        # two DeleteObjects, one DELETE, and the stats request itself
        assert after - before <= 4, after - before


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("size", [10, 12 * MiB])
def test_put_if_none_match(client, rbucket, boto, transport, size):
    """Create-only PUTs (a single PUT, and a multipart upload whose Complete carries
    the condition): the first creates, a second is refused with 412 and changes
    nothing, whether from a buffer or a file object."""
    c = client(transport, multipart_threshold=5 * MiB, part_size=5 * MiB)
    first, second = os.urandom(size), os.urandom(size)
    c.put_object(rbucket, "k", first, if_none_match=True)
    for body in (second, io.BytesIO(second)):
        with pytest.raises(s3rdma.PreconditionFailed) as e:
            c.put_object(rbucket, "k", body, if_none_match=True)
        assert e.value.http_status == 412
    assert boto.get_object(Bucket=rbucket, Key="k")["Body"].read() == first
    assert "Uploads" not in boto.list_multipart_uploads(Bucket=rbucket)
    c.put_object(rbucket, "k", second)  # unconditional still overwrites
    assert c.get_object(rbucket, "k") == second


@pytest.mark.parametrize("transport", ["http", "native"])
def test_list_objects_pages(client, rbucket, transport):
    c = client(transport)
    keys = [f"d{i // 3}/k{i}" for i in range(7)] + ["top"]
    c.put_objects(rbucket, {k: k.encode() for k in keys})
    pages = list(c.list_objects(rbucket, page_size=3))
    assert [len(p.objects) for p in pages] == [3, 3, 2]
    assert sorted(o.key for p in pages for o in p.objects) == sorted(keys)
    assert all(o.size == len(o.key) for p in pages for o in p.objects)
    [page] = list(c.list_objects(rbucket, delimiter="/"))
    assert [o.key for o in page.objects] == ["top"]
    assert page.prefixes == ["d0/", "d1/", "d2/"]
    [page] = list(c.list_objects(rbucket, prefix="d1/"))
    assert [o.key for o in page.objects] == ["d1/k3", "d1/k4", "d1/k5"]


@pytest.mark.parametrize("transport", ["http", "native"])
def test_buckets_and_errors(client, transport):
    c = client(transport)
    name = f"pyb-{transport}-{os.getpid()}"
    c.create_bucket(name)
    assert name in [b.name for b in c.list_buckets()]
    assert c.bucket_exists(name)
    c.create_bucket(name)  # its owner's re-create: 200 in us-east-1, as S3 answers
    with pytest.raises(s3rdma.BucketAlreadyExists) as e:
        client(transport, user=USERS[1]).create_bucket(name)
    assert e.value.http_status == 409 and e.value.code == "BucketAlreadyExists"
    c.put_object(name, "k", b"v")
    with pytest.raises(s3rdma.BucketNotEmpty):
        c.delete_bucket(name)
    c.delete_object(name, "k")
    c.delete_bucket(name)
    assert not c.bucket_exists(name)
    with pytest.raises(s3rdma.NoSuchBucket) as e:
        c.put_object(name, "k", b"v")
    assert (e.value.code, e.value.http_status) == ("NoSuchBucket", 404)
    assert e.value.request_id
    with pytest.raises(s3rdma.NoSuchBucket):
        list(c.list_objects(name))


def test_access_denied(client, rbucket):
    c = client("http", user=(USERS[0][0], "wrong-secret"))
    with pytest.raises(s3rdma.AccessDenied) as e:
        c.get_object(rbucket, "k")
    assert e.value.http_status == 403 and isinstance(e.value, s3rdma.S3Error)
    other = client("native", user=USERS[1])
    with pytest.raises(s3rdma.AccessDenied):
        other.put_object(rbucket, "k", b"v")


def test_bad_settings():
    with pytest.raises(ValueError):
        s3rdma.Client(endpoint="http://127.0.0.1:1", access_key="a", secret_key="b",
                      transport="carrier-pigeon")
    with pytest.raises(TypeError):
        s3rdma.Client(endpoint="http://127.0.0.1:1", access_key="a", secret_key="b",
                      no_such_setting=1)
    with pytest.raises(s3rdma.InvalidArgument):
        s3rdma.Client(endpoint="not a url", access_key="a", secret_key="b")


def test_connection_refused_is_connection_error(rsrv):
    from s3r_itest import free_port
    c = s3rdma.Client(endpoint=f"http://127.0.0.1:{free_port()}", access_key="a",
                      secret_key="b", transport="http")
    with pytest.raises(s3rdma.ConnectionFailed) as e:
        c.list_buckets()
    assert isinstance(e.value, ConnectionError)
    c.close()


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_put_file_objects(client, rbucket, tmp_path, transport):
    c = client(transport)
    data = payload(20 * MiB + 5, 3)  # above the multipart threshold
    c.put_object(rbucket, "stream", io.BytesIO(data))
    assert c.get_object(rbucket, "stream") == data
    p = tmp_path / "f"
    p.write_bytes(data[:3 * MiB])
    with open(p, "rb") as f:
        f.seek(100)  # a file object is sent from its position
        c.put_object(rbucket, "file", f)
        assert f.tell() == 3 * MiB
    assert c.get_object(rbucket, "file") == data[100:3 * MiB]
    c.put_object(rbucket, "empty", io.BytesIO(b""))
    assert c.get_object(rbucket, "empty") == b""


@pytest.mark.parametrize("transport", ["token", "native"])
def test_upload_download_file_progress(client, rbucket, tmp_path, boto, transport):
    c = client(transport)
    data = payload(21 * MiB, 4)
    src, dst = tmp_path / "src", tmp_path / "dst"
    src.write_bytes(data)
    seen = []
    c.upload_file(src, rbucket, "f", callback=seen.append, metadata={"m": "1"})
    assert sum(seen) == len(data) and len(seen) == 3  # 8 + 8 + 5 MiB parts
    assert boto.head_object(Bucket=rbucket, Key="f")["ETag"].endswith('-3"')
    seen = []
    assert c.download_file(rbucket, "f", dst, callback=seen.append) == len(data)
    assert sum(seen) == len(data) and len(seen) == 3
    assert dst.read_bytes() == data
    # small files go as one PUT
    src.write_bytes(b"tiny")
    c.upload_file(src, rbucket, "t")
    c.download_file(rbucket, "t", dst)
    assert dst.read_bytes() == b"tiny"
    # failures: nothing left behind
    with pytest.raises(s3rdma.NoSuchKey):
        c.download_file(rbucket, "missing", tmp_path / "nope")
    assert not (tmp_path / "nope").exists()
    src.write_bytes(data)
    with pytest.raises(s3rdma.NoSuchBucket):
        c.upload_file(src, "no-such-bucket-py", "f")
    assert boto.list_multipart_uploads(Bucket=rbucket).get("Uploads", []) == []


@pytest.mark.parametrize("size", [5, 3 * MiB])
def test_boto3_interop(client, rbucket, boto, size):
    c = client("native")
    data = payload(size, 5)
    boto.put_object(Bucket=rbucket, Key="by-boto", Body=data, Metadata={"who": "boto"},
                    ContentType="application/x-test")
    assert c.get_object(rbucket, "by-boto") == data
    h = c.head_object(rbucket, "by-boto")
    assert (h.metadata, h.content_type) == ({"who": "boto"}, "application/x-test")
    c.put_object(rbucket, "by-s3rdma", data, metadata={"who": "s3rdma"})
    r = boto.get_object(Bucket=rbucket, Key="by-s3rdma")
    assert r["Body"].read() == data and r["Metadata"] == {"who": "s3rdma"}


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_threads_share_a_client(client, rbucket, transport):
    c = client(transport)
    errors = []

    def worker(t):
        try:
            for i in range(15):
                data = payload(1000 + 7000 * i, t * 100 + i)
                c.put_object(rbucket, f"t{t}/{i}", data)
                assert c.get_object(rbucket, f"t{t}/{i}") == data
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)
    threads = [threading.Thread(target=worker, args=(t,)) for t in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_batches(client, rbucket, transport):
    c = client(transport)
    items = {f"b{i}": payload(100 + 997 * i, i) for i in range(150)}  # > one window of 64
    assert c.put_objects(rbucket, items) == [len(v) for v in items.values()]
    keys = list(items)
    bufs = [bytearray(len(items[k])) for k in keys]
    assert c.get_objects(rbucket, keys, bufs) == [len(b) for b in bufs]
    assert [bytes(b) for b in bufs] == list(items.values())
    got = c.get_objects(rbucket, keys[:5])
    assert [bytes(b) for b in got] == [items[k] for k in keys[:5]]
    res = c.get_objects(rbucket, ["b1", "missing", "b2"],
                        [bytearray(5000), bytearray(10), bytearray(5000)],
                        return_exceptions=True)
    assert res[0] == len(items["b1"]) and res[2] == len(items["b2"])
    assert isinstance(res[1], s3rdma.NoSuchKey)
    with pytest.raises(s3rdma.BufferTooSmall):
        c.get_objects(rbucket, ["b100"], [bytearray(10)])
    with pytest.raises(ValueError):
        c.get_objects(rbucket, ["b1", "b2"], [bytearray(10)])


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_batch_of_ranges(client, rbucket, transport):
    """get_objects with ranges: 70 ranges of one object (more than one window of 64),
    each with its own start and length, cut by both range forms and one to the end,
    land byte for byte in slices of one registered block and in plain buffers; a range
    past the end fails alone, with its own status; ranges without buffers, or not one per key, are refused."""
    c = client(transport)
    data = payload(3 * MiB + 5, 21)
    c.put_object(rbucket, "r", data)
    spans = [(i * 45_000 + i % 7, i * 45_000 + i % 7 + 1 + (i * 311) % 40_000)
             for i in range(70)]
    block = c.allocate_buffer(sum(b - a for a, b in spans) + len(data))
    views, off = [], 0
    for a, b in spans:
        views.append(block[off:off + b - a])
        off += b - a
    ranges = list(spans)
    ranges[3] = f"bytes={spans[3][0]}-{spans[3][1] - 1}"
    views.append(block[off:off + len(data) - MiB])  # the tail, to the end
    ranges.append((MiB, None))
    assert c.get_objects(rbucket, ["r"] * len(views), views, ranges=ranges) == \
        [len(v) for v in views]
    for v, (a, b) in zip(views, spans + [(MiB, len(data))]):
        assert bytes(v) == data[a:b]
    plain = [bytearray(10), bytearray(10), bytearray(10)]
    res = c.get_objects(rbucket, ["r"] * 3, plain,
                        ranges=[(0, 10), (len(data) + 10, len(data) + 20), (len(data) - 10, None)],
                        return_exceptions=True)
    assert res[0] == 10 and plain[0] == data[:10]
    # each failure keeps its own details, though the calls after it (here a success)
    # ran before it was waited for
    assert isinstance(res[1], s3rdma.InvalidRange) and res[1].http_status == 416
    assert res[2] == 10 and plain[2] == data[-10:]
    with pytest.raises(ValueError):
        c.get_objects(rbucket, ["r"], ranges=[(0, 10)])
    with pytest.raises(ValueError):
        c.get_objects(rbucket, ["r", "r"], [bytearray(10)] * 2, ranges=[(0, 10)])


def test_futures_and_asyncio(client, rbucket):
    c = client("native")
    futs = [c.put_object_async(rbucket, f"f{i}", payload(4096, i)) for i in range(20)]
    assert [f.result() for f in futs] == [None] * 20
    futs = [c.get_object_async(rbucket, f"f{i}") for i in range(20)]
    assert [f.result() for f in futs] == [payload(4096, i) for i in range(20)]
    buf = bytearray(4096)
    assert c.get_object_into_async(rbucket, "f3", buf).result() == 4096
    assert buf == payload(4096, 3)
    with pytest.raises(s3rdma.NoSuchKey):
        c.get_object_async(rbucket, "nope").result()

    async def main():
        return await asyncio.gather(*(asyncio.wrap_future(c.get_object_async(rbucket, f"f{i}"))
                                      for i in range(5)))
    assert asyncio.run(main()) == [payload(4096, i) for i in range(5)]


def test_registered_buffer_and_close(client, rbucket):
    c = client("native")
    buf = c.allocate_buffer(2 * MiB)
    arr = np.frombuffer(buf, np.uint8)
    arr[:] = 7
    before = c.stats()["regions_registered"]
    c.put_object(rbucket, "reg", buf)
    assert c.get_object_into(rbucket, "reg", buf) == 2 * MiB
    assert c.stats()["regions_registered"] == before  # no registration per call
    with pytest.raises(ValueError):
        c.allocate_buffer(0)
    with c:
        pass
    assert c.closed
    with pytest.raises(ValueError):
        c.get_object(rbucket, "reg")
    assert arr.sum() == 7 * 2 * MiB  # the memory outlives close() while a view holds it
    del arr, buf


def test_rdma_client_alias_and_aws_settings(rsrv, rbucket, tmp_path, monkeypatch):
    for k in list(os.environ):
        if k.startswith("AWS_"):
            monkeypatch.delenv(k)
    monkeypatch.setenv("HOME", str(tmp_path))
    (tmp_path / ".aws").mkdir()
    (tmp_path / ".aws" / "credentials").write_text(
        f"[default]\naws_access_key_id = nobody\naws_secret_access_key = x\n"
        f"[py]\naws_access_key_id = {USERS[0][0]}\naws_secret_access_key = {USERS[0][1]}\n")
    (tmp_path / ".aws" / "config").write_text(
        f"[profile py]\nregion = us-east-1\ns3 =\n    endpoint_url = {rsrv.endpoint}\n")
    monkeypatch.setenv("AWS_PROFILE", "py")
    with s3rdma.Client(rdma_endpoint=rsrv.rdma_endpoint, transport="http") as c:
        c.put_object(rbucket, "prof", b"from a profile")
    monkeypatch.setenv("AWS_PROFILE", "absent")
    with pytest.raises(ValueError):
        s3rdma.Client()
    monkeypatch.delenv("AWS_PROFILE")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", USERS[0][0])
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", USERS[0][1])
    monkeypatch.setenv("AWS_ENDPOINT_URL", rsrv.endpoint)
    with s3rdma.RDMAClient(endpoint=rsrv.rdma_endpoint, transport="native") as c:
        assert c.get_object(rbucket, "prof") == b"from a profile"
        assert c.stats()["native_ops"] == 1 and c.stats()["http_ops"] == 0
    monkeypatch.delenv("AWS_ACCESS_KEY_ID")
    (tmp_path / ".aws" / "credentials").unlink()  # no [default] profile to fall back on
    with pytest.raises(ValueError, match="credentials"):
        s3rdma.Client()


def test_help_is_useful():
    doc = s3rdma.Client.__doc__ + s3rdma.Client.get_object_into.__doc__
    assert "rdma_threshold" in doc and "no intermediate copy" in doc
