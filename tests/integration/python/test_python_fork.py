"""s3rdma.Client across fork (python/README.md, "Fork"): a client used before the fork, then
the child of os.fork() and multiprocessing workers with the start methods fork, spawn and
forkserver, each using a new client and (when forked) the inherited one, with PUT and GET
checked byte for byte for bytes, bytearray and allocate_buffer memory; then the parent again,
on the same session. Under UCX's default transports and UCX_TLS=tcp; forkcheck.py runs in a
process of its own with the UCX setting in its environment.

Forked children cannot start UCX (docs/client.md, "Fork"): their requests go over HTTP (the
fallback). Spawned and forkserver workers are fresh processes and get native sessions.
"""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import USERS, RdmaServer, boto_client, empty_bucket, new_bucket_name

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from s3r_itest import UCX_ENVS  # noqa: E402

HERE = Path(__file__).resolve().parent


@pytest.fixture(scope="module", params=list(UCX_ENVS))
def fsrv(request, tmp_path_factory):
    s = RdmaServer(tmp_path_factory.mktemp("pyfork"), "pyfork", UCX_ENVS[request.param]).start()
    s.ucx = request.param
    yield s
    s.stop()


@pytest.fixture
def fbucket(fsrv):
    s3 = boto_client(fsrv)
    name = new_bucket_name("pyfork")
    s3.create_bucket(Bucket=name)
    yield name
    empty_bucket(s3, name)
    s3.delete_bucket(Bucket=name)


@pytest.mark.parametrize("mode", ["os.fork", "fork", "spawn", "forkserver"])
def test_client_across_fork(fsrv, fbucket, venv, mode):
    env = fsrv.client_env(USERS[0])
    for k in ("LD_PRELOAD", "ASAN_OPTIONS"):  # the ASan pass: the child needs them too
        if k in os.environ:
            env[k] = os.environ[k]
    python = str(venv / "bin" / "python") if venv else sys.executable
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if "site-packages" in p)
    sessions_before = fsrv.sessions()
    p = subprocess.run([python, str(HERE / "forkcheck.py"), mode, fbucket], env=env,
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, f"{p.stdout}\n{p.stderr}"
    rep = json.loads(p.stdout.strip().splitlines()[-1])
    # The parent: one session before and after the fork, native, nothing fell back.
    ps = rep["parent_stats"]
    assert ps["rdma_sessions"] == 1 and ps["fallbacks"] == 0 and ps["native_ops"] > 0, ps
    assert fsrv.sessions() == sessions_before, "a session was left open on the server"
    for child in rep["children"]:
        ns = child["new_stats"]
        if mode in ("os.fork", "fork"):
            # no UCX in a forked child: the bytes went over HTTP
            assert ns["rdma_sessions"] == 0 and ns["http_ops"] > 0, child
            assert child["inherited_stats"]["http_ops"] > 0, child
        else:
            # a fresh process: a native session of its own
            assert ns["rdma_sessions"] == 1 and ns["native_ops"] > 0, child
            assert ns["fallbacks"] == 0, child
