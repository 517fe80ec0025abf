"""Fixtures for the s3rdmad integration tests.

server        one s3rdmad for the whole session (relaxed durability, RDMA off, two users);
              SIGTERM at the end and its exit code must be 0.
make_server   factory for tests that need their own server (crash, lifecycle); each one
              is stopped at teardown (SIGTERM, exit code 0 asserted unless the test
              already stopped or killed it).
s3, s3_user2  boto3 clients (path-style) for user 1 / user 2.
s3_virtual    boto3 client with virtual-host addressing (bucket.localhost:PORT; *.localhost
              is resolved to 127.0.0.1 inside this process).
make_client   factory: make_client(user=USERS[0], addressing="path", **config_kwargs).
bucket        a fresh empty bucket owned by user 1 (deleted with its contents afterwards).
On a failed test, what the live servers logged during that test is attached to the report.
"""
import os
import socket
from pathlib import Path

import pytest

from s3r_itest import (BINARY, TEST_BACKEND, USERS, CephCluster, Server,  # noqa: E402
                       boto_client, ceph_missing, empty_bucket, new_bucket_name,
                       write_config)

# --------------------------------------------------------------------------
# *.localhost -> 127.0.0.1 (glibc here does not resolve subdomains of localhost)
# --------------------------------------------------------------------------
_orig_getaddrinfo = socket.getaddrinfo


def _getaddrinfo(host, *args, **kwargs):
    if isinstance(host, str) and host.endswith(".localhost"):
        host = "127.0.0.1"
    return _orig_getaddrinfo(host, *args, **kwargs)


socket.getaddrinfo = _getaddrinfo
# Never send test traffic through a proxy.
for _v in ("NO_PROXY", "no_proxy"):
    os.environ[_v] = "127.0.0.1,localhost,.localhost"


# --------------------------------------------------------------------------
# CI's pytest-xdist order: whole files, longest first, the RADOS files on one worker
# (s3r_xdist.py). Only with --dist loadfile; optional so pytest without xdist still runs.
# --------------------------------------------------------------------------
@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    if config.getvalue("dist") != "loadfile":
        return None
    import s3r_xdist
    return s3r_xdist.Scheduler(config, log)


# --------------------------------------------------------------------------
# Server logs on failure
# --------------------------------------------------------------------------
@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    item._s3r_log_offsets = {}
    for srv in Server.live:
        try:
            item._s3r_log_offsets[str(srv.log_path)] = srv.log_path.stat().st_size
        except OSError:
            pass


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    rep = outcome.get_result()
    if rep.failed:
        seen = set()
        offsets = getattr(item, "_s3r_log_offsets", {})
        for srv in list(Server.live) + list(getattr(item, "_s3r_servers", [])):
            p = str(srv.log_path)
            if p in seen:
                continue
            seen.add(p)
            try:
                data = srv.log_path.read_bytes()[offsets.get(p, 0):]
            except OSError:
                continue
            text = data.decode(errors="replace")
            lines = text.splitlines()[-150:]
            rep.sections.append((f"s3rdmad log {p} ({rep.when})", "\n".join(lines)))


# --------------------------------------------------------------------------
# Servers
# --------------------------------------------------------------------------
def _require_binary():
    if not os.path.exists(BINARY):
        pytest.fail(f"s3rdmad binary not found at {BINARY}: run `make build` or set S3RDMAD")


_SESSION = {}


@pytest.fixture(autouse=True)
def _session_server_watchdog():
    """If the shared server died during a test, that test errors with the server's last words,
    and the server is restarted (same data dir and port) so later tests still run."""
    yield
    srv = _SESSION.get("server")
    if srv is None or srv.alive():
        return
    rc = srv.proc.returncode
    tail = srv.log_tail(120)
    srv._forget()
    _SESSION["deaths"] = _SESSION.get("deaths", 0) + 1
    srv.start(port=srv.port)
    pytest.fail(f"s3rdmad died during this test (exit code {rc}); restarted it.\n{tail}")


@pytest.fixture(scope="session")
def ceph_cluster(tmp_path_factory):
    """One single-node Ceph cluster for the session (scripts/ceph-dev), pools s3rdma and
    s3rdma2. Skips only when the Ceph binaries are not installed."""
    missing = ceph_missing()
    if missing:
        pytest.skip(f"Ceph not installed ({', '.join(missing)} missing): scripts/install-deps")
    cluster = CephCluster(tmp_path_factory.mktemp("ceph") / "cluster", ("s3rdma", "s3rdma2"))
    cluster.start()
    yield cluster
    cluster.stop()


@pytest.fixture(scope="session")
def server(tmp_path_factory, request):
    """The session's s3rdmad: on the local backend, or (S3RDMA_TEST_BACKEND=rados) on
    ceph_cluster's pool s3rdma."""
    _require_binary()
    base = tmp_path_factory.mktemp("s3rdmad")
    data = base / "data"
    data.mkdir()
    cfg = base / "config.yaml"
    write_config(cfg)
    extra = []
    if TEST_BACKEND == "rados":
        extra = request.getfixturevalue("ceph_cluster").gateway_args()
    elif TEST_BACKEND != "local":
        pytest.fail(f"S3RDMA_TEST_BACKEND must be local or rados, not {TEST_BACKEND!r}")
    srv = Server(data, cfg, base / "server.log", durability="relaxed", extra_args=extra)
    srv.start()
    _SESSION["server"] = srv
    yield srv
    _SESSION.pop("server", None)
    alive = srv.alive()
    rc = srv.stop()
    assert alive, f"s3rdmad died during the session\n{srv.log_tail()}"
    # (a death during the session already failed the test it happened in: see the watchdog)
    assert rc == 0, f"s3rdmad exited with {rc} on SIGTERM\n{srv.log_tail()}"


@pytest.fixture
def make_server(tmp_path, request):
    _require_binary()
    servers = []
    request.node._s3r_servers = servers

    def factory(durability="relaxed", users=USERS, data_dir=None, env=None, extra_args=(),
                config_extra="", start=True, name=None, rdma_enabled=False):
        name = name or f"srv{len(servers)}"
        d = Path(data_dir) if data_dir else tmp_path / f"{name}-data"
        d.mkdir(parents=True, exist_ok=True)
        cfg = tmp_path / f"{name}-config.yaml"
        write_config(cfg, users=users, durability=durability, extra=config_extra)
        srv = Server(d, cfg, tmp_path / f"{name}.log", durability=durability,
                     extra_args=extra_args, env=env, rdma_enabled=rdma_enabled)
        servers.append(srv)
        if start:
            srv.start()
        return srv

    yield factory
    problems = []
    for srv in servers:
        if srv.proc is None or srv.proc.returncode is not None:
            continue  # never started, or the test already stopped / killed it
        rc = srv.stop()
        if rc != 0:
            problems.append(f"{srv.log_path}: exit code {rc} on SIGTERM\n{srv.log_tail(50)}")
    assert not problems, "\n".join(problems)


# --------------------------------------------------------------------------
# boto3 clients
# --------------------------------------------------------------------------
@pytest.fixture(scope="session")
def make_client(server):
    def factory(user=USERS[0], addressing="path", srv=None, **cfg):
        return boto_client(srv or server, user, addressing, **cfg)
    return factory


@pytest.fixture(scope="session")
def s3(make_client):
    return make_client(USERS[0])


@pytest.fixture(scope="session")
def s3_user2(make_client):
    return make_client(USERS[1])


@pytest.fixture(scope="session")
def s3_virtual(make_client):
    return make_client(USERS[0], addressing="virtual")


@pytest.fixture
def bucket(s3):
    name = new_bucket_name()
    s3.create_bucket(Bucket=name)
    yield name
    try:
        empty_bucket(s3, name)
        s3.delete_bucket(Bucket=name)
    except Exception:
        pass
