"""rdma.poll: the server's progress threads serve in both modes (adaptive, the default,
and busy), and so does a client that waits for its native calls without ever
sleeping (S3R_RDMA_POLL=busy); a bad client value is refused with a clear message.
Bad server values are in test_server_config.py. No timing is asserted: the
figures are bench/gaps'.

Runs under UCX's default transports and UCX_TLS=tcp (client and server alike).
"""
import subprocess
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from s3r_itest import UCX_ENVS, RdmaServer, boto_client  # noqa: E402
from test_native import DRIVER, _parse  # noqa: E402

MiB = 1024 * 1024
SIZES = [1, 4096, 64 * 1024 + 1, MiB + 1]


@pytest.fixture(params=[(ucx, mode) for ucx in UCX_ENVS for mode in ("adaptive", "busy")],
                ids=lambda p: f"{p[0]}-{p[1]}")
def psrv(request, tmp_path):
    ucx, mode = request.param
    # One progress thread: a busy one takes a core for as long as the server runs.
    s = RdmaServer(tmp_path, f"poll-{mode}", UCX_ENVS[ucx],
                   extra_args=["--rdma-poll", mode, "--rdma-workers", "1"]).start()
    s.ucx, s.mode = ucx, mode
    yield s
    s.stop()


@pytest.fixture
def pbucket(psrv):
    s3 = boto_client(psrv)
    s3.create_bucket(Bucket="poll")
    yield "poll"
    for o in s3.list_objects_v2(Bucket="poll").get("Contents", []):
        s3.delete_object(Bucket="poll", Key=o["Key"])
    s3.delete_bucket(Bucket="poll")


def native_only(srv, client_poll, *args):
    """s3r_driver over native only (HTTP endpoint dead, no fallback), the client's
    S3R_RDMA_POLL set to client_poll (None: unset). (returncode, RESULT, out, err)."""
    env = srv.client_env()
    env["S3R_ENDPOINT"] = "http://127.0.0.1:1"
    if client_poll is not None:
        env["S3R_RDMA_POLL"] = client_poll
    p = subprocess.run([str(DRIVER), "--transport", "native", "--no-fallback", *map(str, args)],
                       env=env, capture_output=True, text=True, timeout=120)
    return p.returncode, _parse(p.stdout), p.stdout, p.stderr


@pytest.mark.parametrize("client", [None, "adaptive", "busy"])
def test_native_serves_in_each_poll_mode(psrv, pbucket, client):
    """put, get, head, delete of each size over native only, with the server's
    progress threads in psrv.mode and the client waiting in its default or named mode."""
    assert f"(poll {psrv.mode})" in psrv.srv.log_text()
    rc, r, out, err = native_only(psrv, client, "roundtrip", pbucket, *SIZES)
    assert rc == 0, (out, err)
    assert r["errors"] == 0 and r["native_ops"] >= 4 * len(SIZES), (r, err)
    assert r["http_ops"] == 0 and r["token_ops"] == 0 and r["fallbacks"] == 0, r


def test_bad_client_poll_mode_is_refused(tmp_path):
    s = RdmaServer(tmp_path, "poll-bad", UCX_ENVS["ucx-default"]).start()
    try:
        s3 = boto_client(s)
        s3.create_bucket(Bucket="pollbad")
        rc, r, out, err = native_only(s, "spin", "roundtrip", "pollbad", 4096)
        assert rc != 0 and r.get("native_ops") == 0, (out, err)
        assert "S3R_RDMA_POLL=spin: expected busy or adaptive" in out + err, (out, err)
        s3.delete_bucket(Bucket="pollbad")
    finally:
        s.stop()


def _thread_states(pid):
    """{tid: (name, state letter)} of the process's threads, from /proc."""
    out = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            name = (task / "comm").read_text().strip()
            stat = (task / "stat").read_text()
        except OSError:
            continue  # the thread ended meanwhile
        out[task.name] = (name, stat[stat.rindex(")") + 2])
    return out


def test_busy_server_spins_only_its_progress_threads(tmp_path):
    """rdma.poll busy gives one core to each progress thread (rdma.workers) and no
    more: once the writes are done, the native executors (s3r-native) sleep, as in
    adaptive, while the progress thread keeps polling. Sampled from the threads'
    states in /proc: a polling thread is always running or runnable (R), a sleeping
    one waits (S). The progress thread's samples show the sampling sees a spinner."""
    s = RdmaServer(tmp_path, "poll-busy-cores", UCX_ENVS["ucx-default"],
                   extra_args=["--rdma-poll", "busy", "--rdma-workers", "1"]).start()
    try:
        s3 = boto_client(s)
        s3.create_bucket(Bucket="pollcores")
        # Bodies above the inline limit go to the executors.
        rc, r, out, err = native_only(s, None, "roundtrip", "pollcores", MiB + 1, MiB + 1)
        assert rc == 0 and r["native_ops"] >= 8, (out, err)
        time.sleep(0.5)  # far past any executor's polling window (200 us)
        pid = s.srv.proc.pid
        running = {}
        for _ in range(40):
            for tid, (name, state) in _thread_states(pid).items():
                if name in ("s3r-native", "s3r-progress"):
                    seen = running.setdefault(tid, [name, 0, 0])
                    seen[1] += 1
                    seen[2] += state == "R"
            time.sleep(0.02)
        progress = [v for v in running.values() if v[0] == "s3r-progress"]
        native = [v for v in running.values() if v[0] == "s3r-native"]
        assert len(progress) == 1 and native, running
        assert progress[0][2] >= progress[0][1] // 2, running
        assert all(v[2] <= v[1] // 4 for v in native), running
        s3.delete_bucket(Bucket="pollcores")
    finally:
        s.stop()
