"""fsync mode, native PUTs many in flight: a PUT's reply waits for the commit-log flush that
makes it durable, but no executor thread waits for it (docs/architecture.md, "Durable
later"). Whatever that path does, an acknowledged PUT must survive the server's kill -9 right
after the acknowledgements, also when the index then loses what its last restore point does
not hold (a staged power loss: the commit log, applied again at open, must hold every
acknowledged PUT).

SESSIONS `s3r_driver --transport native --no-fallback async BUCKET N SIZE` run at once, each
on its own session and bucket with N PUTs in flight (all acknowledged, then read back), with
rdma.native_threads 2 so that held replies far outnumber the executors; then kill -9, the
staged power loss, a restart, and every object is read back byte for byte over HTTP.
"""
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from s3r_itest import UCX_ENVS, RdmaServer, boto_client  # noqa: E402
from test_client_lib import DRIVER, pattern  # noqa: E402
from test_crash import stage_power_loss  # noqa: E402

SESSIONS = 4
N = 48  # PUTs in flight per session (under rdma.max_native_per_session, 64)
SIZE = 4096  # inline in the index record and in the request


def driver(srv, *args):
    return subprocess.Popen([str(DRIVER), "--transport", "native", "--no-fallback",
                             *map(str, args)], env=srv.client_env(), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def test_native_fsync_puts_in_flight_survive_kill9(tmp_path):
    assert DRIVER.exists(), f"{DRIVER} not built"
    rs = RdmaServer(tmp_path, "durable", UCX_ENVS["ucx-default"], durability="fsync",
                    extra_args=["--rdma-native-threads", "2"]).start()
    buckets = [f"durable-{i}" for i in range(SESSIONS)]
    s3 = boto_client(rs)
    for b in buckets:
        s3.create_bucket(Bucket=b)
    procs = [driver(rs, "async", b, N, SIZE) for b in buckets]
    for p in procs:
        out, err = p.communicate(timeout=300)
        assert p.returncode == 0, f"driver failed: {p.returncode}\n{err}\n{out}"
    rs.srv.kill9()
    stage_power_loss(rs.srv.data_dir)
    rs.start()
    s3 = boto_client(rs)
    for b in buckets:
        keys = sorted(o["Key"] for o in s3.list_objects_v2(Bucket=b).get("Contents", []))
        assert keys == sorted(f"async/{i}" for i in range(N)), b
        for i in range(N):
            body = s3.get_object(Bucket=b, Key=f"async/{i}")["Body"].read()
            assert body == pattern(SIZE, 100 + i), f"{b}/async/{i}"
    rs.stop()
