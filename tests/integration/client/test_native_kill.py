"""Native sessions killed with requests in flight never crash, wedge or leak the
server.

One s3rdmad per UCX setting (the default transports: a same-host session gets
its own worker on shared memory; UCX_TLS=tcp: sessions share the net worker).
ROUNDS times: `s3r_driver --transport native hammer BUCKET 4 SIZE` (4 threads,
each looping a synchronous PUT and GET with 4 asynchronous GETs in flight, so
up to 20 native requests are outstanding at any moment) prints RUNNING once
every thread has done a round; after a random delay of up to 50 ms it gets
SIGKILL. The HTTP endpoint the victims are given is dead, so everything they
do is native. Afterwards: the server is alive, its session count returns to
0, an HTTP PUT/GET (boto3) and a native round trip work and are byte-exact,
no object is torn, and VmRSS growth between the warm-up (after WARMUP kills)
and the end stays under RSS_GROWTH_MAX (measured as test_resilience.py does).
"""
import os
import random
import select
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from s3r_itest import REPO_ROOT, UCX_ENVS, boto_client, free_port  # noqa: E402
from test_resilience import Srv, fmt_rss, quiet_rss, vm_rss  # noqa: E402

BUILD = Path(os.environ.get("S3RDMA_BUILD", REPO_ROOT / "build"))
DRIVER = BUILD / "tests" / "s3r_driver"
MiB = 1024 * 1024
ROUNDS = int(os.environ.get("S3R_NATIVE_KILL_ROUNDS", "100"))
WARMUP = 10
SIZE = 200000  # above the 64 KiB inline limit: bodies move by RDMA in both directions
THREADS = 4
# A leaked session worker (several MiB under the default transports), a leaked
# 200 KB body or staging chunk per request, or leaked reply messages would
# cross this many times over in 90 kills; the slack covers allocator arenas.
RSS_GROWTH_MAX = 24 * MiB
SHMEM_GROWTH_MAX = 4 * MiB
RUNNING_TIMEOUT_S = 30


def pattern(n, seed):
    import numpy as np
    i = np.arange(n, dtype=np.uint64)
    return ((i * np.uint64(31) + np.uint64(seed * 7) + (i >> np.uint64(8)))
            & np.uint64(0xFF)).astype(np.uint8).tobytes()


def hammer(srv, bucket, dead):
    env = srv.client_env()
    env["S3R_ENDPOINT"] = dead
    return subprocess.Popen([str(DRIVER), "--transport", "native", "--no-fallback", "hammer",
                             bucket, str(THREADS), str(SIZE)], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True)


def wait_running(p):
    """The victim's first line, or None if it printed nothing within the timeout."""
    r, _, _ = select.select([p.stdout], [], [], RUNNING_TIMEOUT_S)
    return p.stdout.readline() if r else None


def run(args, env, timeout=120):
    p = subprocess.run([str(DRIVER), *map(str, args)], env=env, capture_output=True, text=True,
                       timeout=timeout)
    return p.returncode, p.stdout, p.stderr


@pytest.mark.parametrize("ucx", list(UCX_ENVS))
def test_kill9_native_sessions_mid_request(ucx, tmp_path):
    assert DRIVER.exists(), f"{DRIVER} not built"
    t_start = time.monotonic()
    srv = Srv(tmp_path, UCX_ENVS[ucx])
    srv.srv.start()
    pid = srv.srv.proc.pid
    dead = f"http://127.0.0.1:{free_port()}"
    p = None
    try:
        bucket = "nk-" + uuid.uuid4().hex[:12]
        s3 = boto_client(srv)
        s3.create_bucket(Bucket=bucket)
        rng = random.Random(f"s3rdma-native-{ucx}")
        warm = None
        rss_max = 0
        for i in range(ROUNDS):
            p = hammer(srv, bucket, dead)
            line = wait_running(p)
            if line != "RUNNING\n":
                p.kill()
                p.wait()
                pytest.fail(f"round {i}: victim said {line!r} (None: nothing in "
                            f"{RUNNING_TIMEOUT_S} s)\n{p.stderr.read()}\n"
                            f"server log:\n{srv.srv.log_tail(40)}")
            time.sleep(rng.uniform(0.0, 0.05))
            p.send_signal(signal.SIGKILL)
            rc = p.wait(30)
            err = p.stderr.read()
            p.stdout.close()
            p.stderr.close()
            # The hammer only stops by failing: anything but the kill is a failed request.
            assert rc == -signal.SIGKILL, f"round {i}: victim exited {rc} before the kill\n{err}"
            p = None
            assert srv.srv.alive(), f"s3rdmad died in round {i}\n{srv.srv.log_tail()}"
            rss_max = max(rss_max, vm_rss(pid))
            if i + 1 == WARMUP:
                assert srv.wait_sessions(0) == 0
                warm = quiet_rss(pid)
        n = srv.wait_sessions(0)
        assert n == 0, f"rdma_sessions {n}, not 0, after the last victim"
        end = quiet_rss(pid)
        assert srv.srv.alive(), srv.srv.log_tail()

        # The server still serves HTTP ...
        data = os.urandom(3 * MiB + 1)
        s3.put_object(Bucket=bucket, Key="after/http", Body=data)
        assert s3.get_object(Bucket=bucket, Key="after/http")["Body"].read() == data
        # ... and native (nothing but native: the HTTP endpoint is dead).
        env = srv.client_env()
        env["S3R_ENDPOINT"] = dead
        rc, out, err = run(["--transport", "native", "--no-fallback", "roundtrip", bucket,
                            1, SIZE, 3 * MiB], env)
        assert rc == 0, out + err
        assert "http_ops=0 " in out and "native_ops=" in out and "native_ops=0 " not in out, out
        rc, out, err = run(["--transport", "native", "--no-fallback", "async", bucket, 16, SIZE],
                           env)
        assert rc == 0, out + err
        # What the killed PUTs left under their keys is whole: one complete
        # version (the hammer writes seed id*1000 + round; the size is fixed).
        for t in range(THREADS):
            key = f"hammer/t{t}"
            body = s3.get_object(Bucket=bucket, Key=key)["Body"].read()
            assert len(body) == SIZE, (key, len(body))
            seeds = [t * 1000 + k for k in range(256)]
            assert any(body == pattern(SIZE, sd) for sd in seeds), f"{key} is torn"
        assert srv.wait_sessions(0) == 0
        final = quiet_rss(pid)
        log = srv.srv.log_text()
        print(f"\n[{ucx}] {ROUNDS} native sessions killed mid-request in "
              f"{time.monotonic() - t_start:.1f} s; VmRSS after {WARMUP} kills {fmt_rss(warm)}, "
              f"after {ROUNDS} {fmt_rss(end)} (growth {(end['VmRSS'] - warm['VmRSS']) / MiB:+.1f} "
              f"MiB), max {rss_max / MiB:.1f} MiB, after the checks {final['VmRSS'] / MiB:.1f} "
              f"MiB; server log: {log.count('session up')} sessions up")
        assert "session leaked" not in log
        assert end["VmRSS"] - warm["VmRSS"] < RSS_GROWTH_MAX, (warm, end)
        # No dead client's shared memory stays attached (it did: ~0.16 MiB a kill).
        assert end["RssShmem"] - warm["RssShmem"] < SHMEM_GROWTH_MAX, (warm, end)
        assert final["VmRSS"] - warm["VmRSS"] < RSS_GROWTH_MAX, (warm, final)
    finally:
        if p is not None and p.poll() is None:
            p.kill()
            p.wait()
        alive = srv.srv.alive()
        rc = srv.srv.stop()
    assert alive, f"s3rdmad died\n{srv.srv.log_tail()}"
    assert rc == 0, f"s3rdmad exit code {rc}\n{srv.srv.log_tail()}"
