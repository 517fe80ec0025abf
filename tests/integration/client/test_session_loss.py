"""The RDMA session dies between two operations of a live client (the server restarts):
with fallback on the client carries on (a new session, or HTTP), with fallback off it either
opens a new session or fails with a clear RDMA status; never wrong bytes, never a hang."""
import re
import subprocess
import uuid

import pytest

from s3r_itest import UCX_ENVS, RdmaServer
from test_client_lib import DRIVER, boto, pattern

SIZE = 4 * 1024 * 1024


@pytest.fixture(params=list(UCX_ENVS))
def lsrv(request, tmp_path):
    s = RdmaServer(tmp_path, "loss", UCX_ENVS[request.param]).start()
    yield s
    s.stop()  # the server must still be alive, and exit 0 on SIGTERM


def start_twice(srv, bucket, fallback):
    env = srv.client_env()
    args = [str(DRIVER), "--transport", "token"] + ([] if fallback else ["--no-fallback"])
    p = subprocess.Popen(args + ["twice", bucket, "k", str(SIZE)], env=env, text=True,
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    line = p.stdout.readline()
    assert line.startswith("PAUSED rc=0"), (line, p.stderr.read() if p.poll() is not None else "")
    return p


def finish(p):
    out, err = p.communicate("go\n", timeout=120)
    m = re.search(r"^RESULT (.*)$", out, re.M)
    assert m, (out, err)
    fields = dict(kv.split("=", 1) for kv in m.group(1).split())
    return p.returncode, fields, err


def restart(srv, rdma):
    port = srv.srv.port
    assert srv.srv.stop() == 0, srv.srv.log_tail()
    srv.srv.rdma_enabled = rdma
    srv.srv.start(port=port)
    assert srv.srv.port == port


def lose_session(lsrv, fallback, rdma):
    """A driver puts+gets version 1, the server restarts (with or without RDMA), the driver
    puts+gets version 2. Returns (returncode, RESULT fields, stderr); asserts that the key
    holds, byte for byte, version 2 if the driver succeeded and version 1 if it did not."""
    bucket = "loss-" + uuid.uuid4().hex[:10]
    boto(lsrv).create_bucket(Bucket=bucket)
    p = start_twice(lsrv, bucket, fallback)
    restart(lsrv, rdma=rdma)
    rc, f, err = finish(p)
    body = boto(lsrv).get_object(Bucket=bucket, Key="k")["Body"].read()
    want = 2 if rc == 0 else 1
    assert body == pattern(SIZE, want), f"the stored object is not version {want}, whole ({f})"
    return rc, f, err


@pytest.mark.parametrize("fallback", [True, False], ids=["fallback", "no-fallback"])
def test_session_lost_server_back_with_rdma(lsrv, fallback):
    rc, f, err = lose_session(lsrv, fallback, rdma=True)
    if fallback:
        assert rc == 0, (f, err)
    else:
        # A new session is the only way to succeed without fallback.
        assert rc == 0 or f["status"].startswith("S3R_ERR_RDMA"), (f, err)
        if rc == 0:
            assert int(f["http_ops"]) == 0 and int(f["token_ops"]) >= 4, f


@pytest.mark.parametrize("fallback", [True, False], ids=["fallback", "no-fallback"])
def test_session_lost_server_back_without_rdma(lsrv, fallback):
    rc, f, err = lose_session(lsrv, fallback, rdma=False)
    if fallback:
        assert rc == 0, (f, err)
        assert int(f["fallbacks"]) >= 1 and int(f["http_ops"]) >= 2, f
    else:
        assert rc != 0, f
        assert f["status"].startswith("S3R_ERR_RDMA"), (f, err)
        assert int(f["http_ops"]) == 0, f
