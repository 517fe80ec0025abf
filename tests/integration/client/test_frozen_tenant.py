"""One tenant's frozen client must not stall the others (issue 17, item 5; docs/limits.md).

Tenant A (USERS[0]) runs s3rdma-bench with many large token GETs and native GETs in
flight and is stopped with SIGSTOP mid-transfer: over TCP a stopped process cannot
serve the RDMA its transfers need (UCX emulates RMA with messages its worker must
answer); over the default transports a same-host session's RDMA is done by the server
itself (shared memory, CMA), so nothing stalls there. Meanwhile tenant B (USERS[1])
does native GETs and token PUTs: every one must succeed (no 503 SlowDown, no error).
With A still stopped, A's transfers fail after rdma.stall_ms and give back their
transfer handles (the transfers-in-flight gauge drops to 0). Then A is killed and the
session count returns to 0.

No timing assertions: B's latencies, frozen and not, are printed for the record
(docs/limits.md has a measured run).
"""
import json
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from s3r_itest import (REPO_ROOT, UCX_ENVS, USERS, RdmaServer, boto_client,  # noqa: E402
                       write_config)

BUILD = Path(os.environ.get("S3RDMA_BUILD", REPO_ROOT / "build"))
BENCH = BUILD / "s3rdma-bench"
MiB = 1024 * 1024
TOKEN = "frozen-tenant-metrics-token"
STALL_MS = 1000


def metric(srv, name):
    """One unlabelled sample of the /metrics page."""
    import http.client
    conn = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=10)
    try:
        conn.request("GET", "/metrics", headers={"Authorization": f"Bearer {TOKEN}"})
        r = conn.getresponse()
        body = r.read().decode()
        assert r.status == 200, body
    finally:
        conn.close()
    for line in body.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    raise AssertionError(f"{name} not on /metrics")


def wait_for(pred, timeout, what):
    deadline = time.monotonic() + timeout
    while True:
        v = pred()
        if v:
            return v
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def bench(srv, user, args, json_path=None):
    cmd = [str(BENCH), "run", *args, "--endpoints", f"127.0.0.1:{srv.port}",
           "--access-key", user[0], "--secret-key", user[1], "--use-rdma",
           "--rdma-endpoint", srv.rdma_endpoint]
    if json_path:
        cmd += ["--json", str(json_path)]
    return cmd


def run_b(srv, tmp, tag):
    """Tenant B's work: native GETs of 64 KiB and token PUTs of 1 MiB, 2 threads each,
    a fixed number of operations. Returns (get, put) summaries from the JSON reports."""
    out = {}
    for kind, args in (("get", ["read", "--transport", "native", "--object-size", "64KiB",
                                "--seed-objects", "16", "--prefix", f"b-get-{tag}/", "--ops", "400"]),
                       ("put", ["write", "--transport", "token", "--object-size", "1MiB",
                                "--seed-objects", "4", "--prefix", f"b-put-{tag}/", "--ops", "60"])):
        js = tmp / f"b-{kind}-{tag}.json"
        p = subprocess.run(bench(srv, USERS[1], ["--bucket", srv.b_bucket, "--threads", "2", *args],
                                 js), env=srv.client_env(USERS[1]), capture_output=True,
                           text=True, timeout=300)
        assert p.returncode == 0, f"tenant B {kind} ({tag}): {p.stderr}\n{p.stdout}"
        rep = json.loads(js.read_text())
        out[kind] = rep
    return out


def summary(rep):
    """ops, errors, p50 and p99 (us) of a one-operation s3rdma-bench JSON report."""
    ops = rep["operations"] if "operations" in rep else rep
    (name, x), = [(k, v) for k, v in ops.items() if isinstance(v, dict) and "ops" in v]
    return x["ops"], x["errors"], x["latency_us"]["p50"], x["latency_us"]["p99"]


@pytest.mark.parametrize("ucx", list(UCX_ENVS))
def test_frozen_tenant(ucx, tmp_path):
    assert BENCH.exists(), f"{BENCH} not built"
    srv = RdmaServer(tmp_path, "frozen", UCX_ENVS[ucx],
                     extra_args=["--rdma-stall-ms", str(STALL_MS)])
    write_config(tmp_path / "frozen.yaml",
                 extra=f"metrics:\n  enabled: true\n  token: {TOKEN}\n")
    srv.start()
    a_proc = None
    try:
        a_bucket = "frozen-a-" + uuid.uuid4().hex[:8]
        srv.b_bucket = "frozen-b-" + uuid.uuid4().hex[:8]
        boto_client(srv, USERS[0]).create_bucket(Bucket=a_bucket)
        boto_client(srv, USERS[1]).create_bucket(Bucket=srv.b_bucket)

        base = run_b(srv, tmp_path, "alone")

        # Tenant A: 48 threads of 2 MiB token GETs and 24 of native GETs, more than
        # the server's 64 transfer handles, stopped while transfers are in flight.
        a_cmds = [bench(srv, USERS[0], ["read", "--bucket", a_bucket, "--prefix", f"a-{t}/",
                                        "--object-size", "2MiB", "--seed-objects", "8",
                                        "--threads", str(n), "--duration", "120s", "--transport",
                                        t])
                  for t, n in (("token", 48), ("native", 24))]
        a_proc = [subprocess.Popen(c, env=srv.client_env(USERS[0]), stdout=subprocess.DEVNULL,
                                   stderr=subprocess.DEVNULL) for c in a_cmds]
        # (Over shared memory the server copies in place: transfers are over in
        # microseconds and seldom seen in flight.)
        busy = 24 if ucx == "ucx-tcp" else 1
        wait_for(lambda: metric(srv, "s3rdma_rdma_transfers_in_flight") >= busy, 60,
                 "tenant A's transfers")
        for p in a_proc:
            p.send_signal(signal.SIGSTOP)
        frozen_at = time.monotonic()

        frozen = run_b(srv, tmp_path, "frozen")
        for tag, res in (("alone", base), ("frozen", frozen)):
            for kind in ("get", "put"):
                ops, errors, p50, p99 = summary(res[kind])
                print(f"\n[{ucx}] tenant B {kind} ({tag}): {ops} ops, {errors} errors, "
                      f"p50 {p50:.0f} us, p99 {p99:.0f} us", end="")
                assert errors == 0, f"tenant B {kind} ({tag}): {errors} errors"

        # A's stalled transfers fail after the stall deadline and give back their
        # handles, A still stopped.
        wait_for(lambda: metric(srv, "s3rdma_rdma_transfers_in_flight") == 0,
                 30 + STALL_MS / 1000, "the frozen tenant's transfers to end")
        print(f"\n[{ucx}] transfers in flight back to 0 "
              f"{time.monotonic() - frozen_at:.1f} s after the freeze")
        assert srv.srv.alive()
    finally:
        for p in a_proc or []:
            p.send_signal(signal.SIGKILL)
            p.wait(30)
    wait_for(lambda: srv.sessions() == 0, 30, "the sessions to close")
    assert metric(srv, "s3rdma_rdma_transfers_in_flight") == 0
    srv.stop()
