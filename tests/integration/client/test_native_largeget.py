"""Large native GETs and PUTs into caller memory libs3rdma did not allocate (malloc'd
buffers: what Python's bytearray, NumPy and torch hand it), byte for byte, and the
path the bytes took on the server (s3rdma_rdma_bytes_total{path}).

On a same-host shared-memory session (UCX's default transports here) the server can
map only UCX-allocated client memory; libs3rdma stands a bounce buffer of its own
(s3r_buf_alloc memory) in for the caller's malloc'd buffer, so every byte goes
through the mapped path and none through staging chunks and UCX's software RMA.
Under UCX_TLS=tcp nothing can be mapped: the bytes take the staged path, as before.

The C side is build/tests/s3r_driver (tests/client/s3r_driver.c).
"""
import os
import re
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from s3r_itest import REPO_ROOT, UCX_ENVS, RdmaServer  # noqa: E402

BUILD = Path(os.environ.get("S3RDMA_BUILD", REPO_ROOT / "build"))
DRIVER = BUILD / "tests" / "s3r_driver"
MiB = 1024 * 1024


@pytest.fixture(scope="module", params=list(UCX_ENVS))
def lsrv(request, tmp_path_factory):
    s = RdmaServer(tmp_path_factory.mktemp("largeget"), "largeget", UCX_ENVS[request.param],
                   extra_args=["--metrics-enabled", "true", "--metrics-auth", "public"]).start()
    s.ucx = request.param
    yield s
    s.stop()


def drive(srv, *args):
    assert DRIVER.exists(), f"{DRIVER} not built"
    p = subprocess.run([str(DRIVER), "--transport", "native", "--no-fallback",
                        *map(str, args)], env=srv.client_env(), capture_output=True,
                       text=True, timeout=300)
    assert p.returncode == 0, f"driver {args} failed: {p.returncode}\n{p.stderr}\n{p.stdout}"
    m = re.search(r"^RESULT (.*)$", p.stdout, re.M)
    return dict(kv.split("=", 1) for kv in m.group(1).split())


def moved(srv):
    """{path: bytes} from the server's s3rdma_rdma_bytes_total."""
    with urllib.request.urlopen(f"{srv.endpoint}/metrics", timeout=30) as r:
        text = r.read().decode()
    return {m.group(1): int(m.group(2))
            for m in re.finditer(r'^s3rdma_rdma_bytes_total\{path="(\w+)"\} (\d+)$', text,
                                 re.M)}


@pytest.fixture(scope="module")
def lbucket(lsrv):
    drive(lsrv, "mb", "largeget")
    return "largeget"


# Sizes: just above the inline limit, one staging chunk and a bit, several chunks.
@pytest.mark.parametrize("size", [64 * 1024 + 1, MiB + 3, 9 * MiB + 5])
def test_get_into_malloc_buffer(lsrv, lbucket, size):
    drive(lsrv, "put", lbucket, f"k{size}", size, 7)
    before = moved(lsrv)
    r = drive(lsrv, "get", lbucket, f"k{size}", size, 7)  # verifies every byte
    assert int(r["native_bytes"]) == size
    # A buffer larger than the object: the body is the object, nothing beyond.
    drive(lsrv, "--bufsize", size + 4096, "get", lbucket, f"k{size}", size, 7)
    after = moved(lsrv)
    staged = after["staged"] - before["staged"]
    mapped = after["mapped"] - before["mapped"]
    if lsrv.ucx == "ucx-tcp":
        assert staged == 2 * size and mapped == 0
    else:
        assert staged == 0 and mapped == 2 * size


def test_get_into_buffer_too_small(lsrv, lbucket):
    drive(lsrv, "put", lbucket, "small-buf", 3 * MiB, 9)
    p = subprocess.run([str(DRIVER), "--transport", "native", "--no-fallback", "--bufsize",
                        str(2 * MiB), "get", lbucket, "small-buf", str(3 * MiB), "9"],
                       env=lsrv.client_env(), capture_output=True, text=True, timeout=300)
    assert p.returncode != 0
    assert f"needed={3 * MiB}" in p.stderr, p.stderr


def test_put_from_malloc_buffer(lsrv, lbucket):
    size = 3 * MiB + 11
    before = moved(lsrv)
    drive(lsrv, "put", lbucket, "put-malloc", size, 5)
    after = moved(lsrv)
    drive(lsrv, "--alloc", "get", lbucket, "put-malloc", size, 5)
    if lsrv.ucx == "ucx-tcp":
        assert after["staged"] - before["staged"] == size
    else:
        assert after["staged"] == before["staged"]
        assert after["mapped"] - before["mapped"] == size


@pytest.mark.parametrize("in_flight", [1, 3])
def test_put_parts_from_malloc_buffer(lsrv, lbucket, in_flight):
    """Multipart parts above the bounce buffer's body limit (5 MiB parts) from a malloc'd
    body are copied into kept mapped memory over shared memory: every byte the mapped
    path, none through UCX's software RMA (which made parts from Python 2-3x slower than
    one PUT: docs/benchmarks.md, "Large objects from Python, quieter")."""
    size = 2 * 5 * MiB + 3 * MiB + 11  # the last part under the limit: the bounce buffer
    before = moved(lsrv)
    drive(lsrv, "--part-size", 5 * MiB, "--parts-in-flight", in_flight, "put", lbucket,
          f"parts{in_flight}", size, 6)
    after = moved(lsrv)
    drive(lsrv, "--alloc", "get", lbucket, f"parts{in_flight}", size, 6)  # every byte
    if lsrv.ucx == "ucx-tcp":
        assert after["staged"] - before["staged"] == size
    else:
        assert after["staged"] == before["staged"]
        assert after["mapped"] - before["mapped"] == size


def test_get_registered_buffer_unchanged(lsrv, lbucket):
    """s3r_buf_alloc memory is written in place, without the bounce buffer."""
    size = 2 * MiB + 1
    drive(lsrv, "put", lbucket, "reg", size, 3)
    before = moved(lsrv)
    drive(lsrv, "--alloc", "get", lbucket, "reg", size, 3)
    after = moved(lsrv)
    path = "staged" if lsrv.ucx == "ucx-tcp" else "mapped"
    assert after[path] - before[path] == size
