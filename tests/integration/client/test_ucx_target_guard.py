"""s3rdmad is never the target of RMA (docs/security.md, src/server/ucx_guard.c).

UCX emulates one-sided operations with active messages, and the target's
UCX writes or reads whatever address the peer's message names. An
authenticated client that opens its own UCX endpoint to the server's worker
(the address WELCOME gives it) and posts a put or get with an rkey the server
never gave must not touch the server's memory: the attack client aims at an
unmapped address, which an unguarded server dereferences and dies on.
Runs under UCX's default transports and UCX_TLS=tcp.
"""
import os
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from s3r_itest import REPO_ROOT, UCX_ENVS, USERS, RdmaServer, boto_client  # noqa: E402

ATTACK = Path(os.environ.get("S3RDMA_BUILD", REPO_ROOT / "build")) / "tests" / "s3r_swrma_attack"


@pytest.fixture(params=sorted(UCX_ENVS), scope="module")
def srv(request, tmp_path_factory):
    s = RdmaServer(tmp_path_factory.mktemp("guard"), "guard", UCX_ENVS[request.param]).start()
    yield s
    s.stop()


@pytest.mark.parametrize("op", ["put", "get"])
def test_software_rma_at_the_server_is_refused(srv, op):
    assert ATTACK.exists(), f"{ATTACK} is not built"
    ak, sk = USERS[0]
    env = {**os.environ, **srv.ucx_env}
    p = subprocess.run([str(ATTACK), "127.0.0.1", str(srv.rdma_port), ak, sk, op, "10"],
                       env=env, capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    assert "sent" in p.stdout, p.stdout
    # The server is alive, still serves, and says what it refused.
    assert srv.srv.alive(), srv.srv.log_tail()
    s3 = boto_client(srv)
    s3.list_buckets()
    assert "dropped an inbound UCX software-RMA" in srv.srv.log_path.read_text(errors="replace")
