"""libs3rdma across fork() (docs/client.md, "Fork"): a client used in a forked child never
touches the parent's RDMA session, the child's requests work (over HTTP: UCX cannot run in a
process forked from one that started it) or fail at once with a clear error, and the parent's
session keeps working, with no new handshake.

The C side is `s3r_driver fork` (tests/client/s3r_driver.c): put+get+verify natively, an
asynchronous GET left in flight, fork; the child waits for that GET (the parent's request:
lost to it), put+get+verify with the inherited client and with a new one; the parent settles
its GET, waits for the child and put+get+verify again. Runs under UCX's default transports
and UCX_TLS=tcp, with s3r_buf_alloc buffers and plain ones.
"""
import re
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_native import DRIVER, _parse, boto, driver_env, nsrv  # noqa: E402,F401

MiB = 1024 * 1024


@pytest.fixture
def fb(nsrv):
    name = "fork-" + uuid.uuid4().hex[:12]
    boto(nsrv).create_bucket(Bucket=name)
    yield name
    s3 = boto(nsrv)
    for o in s3.list_objects_v2(Bucket=name).get("Contents", []):
        s3.delete_object(Bucket=name, Key=o["Key"])
    s3.delete_bucket(Bucket=name)


def fork_run(srv, bucket, *opts, size=MiB + 5):
    p = subprocess.run([str(DRIVER), "--transport", "native", *opts, "fork", bucket, str(size)],
                       env=driver_env(srv), capture_output=True, text=True, timeout=120)
    child = re.search(r"^CHILD (.*)$", p.stdout, re.M)
    fields = dict(kv.split("=", 1) for kv in child.group(1).split()) if child else {}
    return p, fields, _parse(p.stdout)


@pytest.mark.parametrize("alloc", [[], ["--alloc"]], ids=["plain", "alloc"])
def test_forked_child_works_and_parent_keeps_its_session(nsrv, fb, alloc):
    sessions_before = nsrv.sessions()
    p, child, parent = fork_run(nsrv, fb, *alloc)
    assert p.returncode == 0, f"{p.stdout}\n{p.stderr}"
    assert "FORK child_rc=0" in p.stdout, p.stdout
    # The child: everything verified, its requests over HTTP (fallback), the pending GET of
    # the parent reported lost or redone over HTTP, never waited for on the parent's session.
    assert child["inherited"] == "S3R_OK" and child["new"] == "S3R_OK", (child, p.stderr)
    assert int(child["http_ops"]) > 0, child
    # The parent: one session from start to end, native all along, no fallback.
    assert parent["sessions"] == 1 and parent["fallbacks"] == 0, parent
    assert parent["native_ops"] >= 6 and parent["http_ops"] == 0, parent
    assert nsrv.sessions() == sessions_before, "the parent's session leaked on the server"
    # the bytes the server stored, as another client reads them
    s3 = boto(nsrv)
    for key in ("fork-parent", "fork-child", "fork-new"):
        assert s3.head_object(Bucket=fb, Key=key)["ContentLength"] == MiB + 5


def test_forked_child_without_fallback_fails_at_once(nsrv, fb):
    p, child, parent = fork_run(nsrv, fb, "--no-fallback")
    # The child's calls fail with RDMA_UNAVAILABLE naming fork; they do not hang (the run
    # would time out) and the parent is unaffected.
    assert child["inherited"] == "S3R_ERR_RDMA_UNAVAILABLE", (child, p.stderr)
    assert child["new"] == "S3R_ERR_RDMA_UNAVAILABLE", (child, p.stderr)
    assert "forked from process" in p.stderr and "started UCX" in p.stderr, p.stderr
    assert "FORK child_rc=1" in p.stdout, p.stdout
    assert parent["sessions"] == 1 and parent["fallbacks"] == 0, parent
    assert "parent" not in p.stderr.replace("parent process before fork", ""), p.stderr
