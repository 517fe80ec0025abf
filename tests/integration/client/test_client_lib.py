"""libs3rdma and the s3rdma CLI against a real s3rdmad (RDMA enabled).

The C side runs as build/tests/s3r_driver (tests/client/s3r_driver.c) and
build/s3rdma. RDMA tests run under UCX's default transports and under
UCX_TLS=tcp (the `ucx` parameter; client and server get the same setting).
The token path needs the server's RDMA layer: if it is missing these tests
fail, they are never skipped.
"""
import contextlib
import os
import re
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from s3r_itest import (REPO_ROOT, UCX_ENVS, USERS, RdmaServer, boto_client,  # noqa: E402
                       clean_env, free_port, sign_headers, stats_json, uri_encode)

try:
    import numpy as np
except ImportError:  # pragma: no cover
    np = None

BUILD = REPO_ROOT / "build"
DRIVER = BUILD / "tests" / "s3r_driver"
CLI = BUILD / "s3rdma"
MiB = 1024 * 1024


def pattern(n, seed, base=0):
    """The driver's byte pattern: b[i] = (i*31 + seed*7 + (i>>8)) & 0xff."""
    if np is not None:
        i = np.arange(base, base + n, dtype=np.uint64)
        return ((i * np.uint64(31) + np.uint64(seed * 7) + (i >> np.uint64(8)))
                & np.uint64(0xFF)).astype(np.uint8).tobytes()
    return bytes(((i * 31 + seed * 7 + (i >> 8)) & 0xFF) for i in range(base, base + n))


def _driver_env(server, endpoint=None, rdma_endpoint=None):
    """The environment s3r_driver reads its endpoints and credentials from."""
    assert DRIVER.exists(), f"{DRIVER} not built (cmake --build build --target s3r_driver)"
    e = server.client_env()
    e.update({"S3R_ENDPOINT": endpoint or server.endpoint,
              "S3R_RDMA_ENDPOINT": rdma_endpoint or server.rdma_endpoint})
    return e


def run_driver(server, *args, env=None, endpoint=None, rdma_endpoint=None, timeout=300,
               check=True):
    """Runs s3r_driver; returns (returncode, RESULT fields, stderr)."""
    e = _driver_env(server, endpoint, rdma_endpoint)
    e.update(env or {})
    p = subprocess.run([str(DRIVER), *map(str, args)], env=e, capture_output=True, text=True,
                       timeout=timeout)
    m = re.search(r"^RESULT (.*)$", p.stdout, re.M)
    fields = dict(kv.split("=", 1) for kv in m.group(1).split()) if m else {}
    for k in list(fields):
        if fields[k].isdigit():
            fields[k] = int(fields[k])
    if check:
        assert p.returncode == 0, f"driver {args} failed: {p.returncode}\n{p.stderr}\n{p.stdout}"
    return p.returncode, fields, p.stderr


@contextlib.contextmanager
def held_token(server, size=4096):
    """Runs `s3r_driver token SIZE`: yields the token while the driver keeps its
    session (and the registered buffer) alive."""
    p = subprocess.Popen([str(DRIVER), "token", str(size)], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         env=_driver_env(server))
    try:
        line = p.stdout.readline()
        assert line.startswith("TOKEN s3r1."), line + p.stderr.read()
        yield line.split()[1]
    finally:
        p.stdin.close()
        p.wait(30)


def boto(server):
    return boto_client(server)


@pytest.fixture(scope="module", params=list(UCX_ENVS))
def rsrv(request, tmp_path_factory):
    s = RdmaServer(tmp_path_factory.mktemp("rdma"), "rdma", UCX_ENVS[request.param]).start()
    s.ucx = request.param
    yield s
    s.stop()


def auto_is_native(server):
    """What AUTO means under the server's (and client's) UCX setting: with UCX's
    default transports a same-host session has shared memory, so AUTO carries
    every operation natively; under UCX_TLS=tcp the session is TCP-only, where
    emulated RDMA is slower than HTTP, and AUTO carries everything over HTTP
    (the size rule applies only when no session can be had)."""
    assert server.ucx in ("ucx-default", "ucx-tcp"), server.ucx
    return server.ucx == "ucx-default"


@pytest.fixture
def rbucket(rsrv):
    name = "cl-" + uuid.uuid4().hex[:12]
    boto(rsrv).create_bucket(Bucket=name)
    yield name
    s3 = boto(rsrv)
    try:
        for page in s3.get_paginator("list_objects_v2").paginate(Bucket=name):
            for o in page.get("Contents", []):
                s3.delete_object(Bucket=name, Key=o["Key"])
        s3.delete_bucket(Bucket=name)
    except Exception:
        pass


SIZES = [0, 1, 4096, MiB + 1, 64 * MiB]


# ---------------------------------------------------------------------------
# Round trips
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("transport", ["http", "token", "auto"])
def test_roundtrip_sizes(rsrv, rbucket, transport):
    _, r, _ = run_driver(rsrv, "--transport", transport, "roundtrip", rbucket, *SIZES)
    assert r["fallbacks"] == 0 and r["errors"] == 0
    if transport == "http":
        assert r["token_ops"] == 0 and r["native_ops"] == 0
    elif transport == "token":
        # Every data operation went by RDMA; 64 MiB went multipart (8 MiB parts).
        assert r["http_ops"] == 0 and r["token_ops"] > 0 and r["native_ops"] == 0
        assert r["token_bytes"] == 3 * sum(SIZES)
    elif auto_is_native(rsrv):
        assert r["native_ops"] > 0 and r["http_ops"] == 0 and r["token_ops"] == 0, r
    else:
        assert r["http_ops"] > 0 and r["token_ops"] == 0 and r["native_ops"] == 0, r


def test_auto_picks_by_object_size(rsrv, rbucket):
    """AUTO (threshold 1 MiB): under the default transports native whatever the
    size, all five operations of the round trip (put, get, head, get_alloc,
    delete); under UCX_TLS=tcp (a TCP-only session) HTTP whatever the size:
    put, get and get_alloc counted under http."""
    _, r, _ = run_driver(rsrv, "--transport", "auto", "roundtrip", rbucket, 4096)
    if auto_is_native(rsrv):
        assert r["native_ops"] == 5 and r["http_ops"] == 0 and r["token_ops"] == 0, r
    else:
        assert r["http_ops"] == 3 and r["token_ops"] == 0 and r["native_ops"] == 0, r
    _, r, _ = run_driver(rsrv, "--transport", "auto", "roundtrip", rbucket, 2 * MiB)
    if auto_is_native(rsrv):
        assert r["native_ops"] == 5 and r["http_ops"] == 0 and r["token_ops"] == 0, r
    else:
        assert r["http_ops"] == 3 and r["token_ops"] == 0 and r["native_ops"] == 0, r


@pytest.mark.parametrize("transport", ["http", "token"])
def test_roundtrip_files_and_registered_buffers(rsrv, rbucket, transport):
    run_driver(rsrv, "--transport", transport, "--files", "roundtrip", rbucket, 0, 5, 20 * MiB)
    _, r, _ = run_driver(rsrv, "--transport", transport, "--alloc", "roundtrip", rbucket,
                         1, 2 * MiB)
    assert r["fallbacks"] == 0


@pytest.mark.parametrize("size", [0, 4096, MiB + 1, 20 * MiB])
def test_token_put_boto_get(rsrv, rbucket, size):
    run_driver(rsrv, "--transport", "token", "--part-size", 8 * MiB, "put", rbucket, "x", size, 3)
    body = boto(rsrv).get_object(Bucket=rbucket, Key="x")["Body"].read()
    assert len(body) == size and body == pattern(size, 3)


@pytest.mark.parametrize("size", [0, 4096, MiB + 1, 20 * MiB])
def test_boto_put_token_get(rsrv, rbucket, size):
    boto(rsrv).put_object(Bucket=rbucket, Key="y", Body=pattern(size, 9))
    _, r, _ = run_driver(rsrv, "--transport", "token", "get", rbucket, "y", size, 9)
    assert r["token_ops"] == 1 and r["http_ops"] == 0


def test_token_range_get(rsrv, rbucket):
    run_driver(rsrv, "--transport", "http", "put", rbucket, "r", 3 * MiB, 5)
    _, r, _ = run_driver(rsrv, "--transport", "token", "--range", "1000:5000", "get", rbucket,
                         "r", 3 * MiB, 5)
    assert r["token_bytes"] == 5000
    run_driver(rsrv, "--transport", "token", "--files", "--range", f"7:{3 * MiB - 7}", "get",
               rbucket, "r", 3 * MiB, 5)


@pytest.mark.parametrize("transport", ["http", "token", "auto"])
def test_get_sized(rsrv, rbucket, transport, tmp_path):
    """s3r_object_get_sized: one allocator call, for exactly the body's size (over HTTP
    the Content-Length of the one response), and the body in that buffer; whole objects
    and ranges, an empty one included."""
    dst = tmp_path / "dst"
    for size in (0, 4096, 3 * MiB + 3):
        run_driver(rsrv, "--transport", "http", "put", rbucket, "s", size, 4)
        _, r, _ = run_driver(rsrv, "--transport", transport, "--mode", "sized", "fetch",
                             rbucket, "s", dst)
        assert dst.read_bytes() == pattern(size, 4), size
        assert r["errors"] == 0 and r["fallbacks"] == 0
        if size > 10:
            run_driver(rsrv, "--transport", transport, "--mode", "sized", "--range",
                       f"3:{size // 2}", "fetch", rbucket, "s", dst)
            assert dst.read_bytes() == pattern(size, 4)[3:3 + size // 2], size


@pytest.mark.parametrize("transport", ["http", "token"])
def test_buffer_too_small(rsrv, rbucket, transport):
    run_driver(rsrv, "--transport", "http", "put", rbucket, "big", 3 * MiB, 5)
    rc, r, err = run_driver(rsrv, "--transport", transport, "--bufsize", 1000, "get", rbucket,
                            "big", 3 * MiB, 5, check=False)
    assert rc == 1, err
    assert r["status"] == "S3R_ERR_BUFFER_TOO_SMALL", err
    assert r["needed"] == 3 * MiB


@pytest.mark.parametrize("transport", ["http", "token", "auto"])
def test_threads_share_one_client(rsrv, rbucket, transport):
    _, r, _ = run_driver(rsrv, "--transport", transport, "--threshold", 64 * 1024, "threads",
                         rbucket, 8, 6, 300000)
    assert r["errors"] == 0
    if transport == "http":
        assert r["token_ops"] == 0 and r["native_ops"] == 0
    elif transport == "auto" and auto_is_native(rsrv):
        # put, get and delete of every op, all native
        assert r["native_ops"] == 8 * 6 * 3 and r["token_ops"] == 0 and r["http_ops"] == 0, r
        assert r["sessions"] == 1
    elif transport == "auto":
        # a TCP-only session: every put and get over HTTP
        assert r["http_ops"] == 8 * 6 * 2 and r["token_ops"] == 0 and r["native_ops"] == 0, r
        assert r["sessions"] == 1
    else:
        assert r["token_ops"] == 8 * 6 * 2 and r["native_ops"] == 0 and r["sessions"] == 1, r


def test_list_and_errors(rsrv, rbucket):
    run_driver(rsrv, "--transport", "http", "list", rbucket)
    run_driver(rsrv, "--transport", "http", "errors", rbucket)
    # Over the token path a 404 is a 404, never a decline: with fallback off
    # the driver would see RDMA_DECLINED, with it on a fallback would count.
    run_driver(rsrv, "--transport", "token", "--no-fallback", "errors", rbucket)
    _, r, _ = run_driver(rsrv, "--transport", "token", "errors", rbucket)
    assert r["fallbacks"] == 0 and r["token_ops"] > 0


def test_session_visible_in_server_stats(rsrv):
    with held_token(rsrv):
        assert stats_json(rsrv.srv)[1]["rdma_sessions"] >= 1


# ---------------------------------------------------------------------------
# The token must be signed
# ---------------------------------------------------------------------------

def _token_put(server, bucket, key, token, size, sign_token):
    import http.client
    path = uri_encode(f"/{bucket}/{key}", encode_slash=False)
    headers = {"Host": server.srv.host, "Content-Length": "0",
               "x-amz-decoded-content-length": str(size)}
    if sign_token:
        headers["x-amz-rdma-token"] = token
    sign_headers("PUT", path, [], headers, "UNSIGNED-PAYLOAD", USERS[0][0], USERS[0][1])
    if not sign_token:
        headers["x-amz-rdma-token"] = token  # added after signing: not in SignedHeaders
    conn = http.client.HTTPConnection("127.0.0.1", server.srv.port, timeout=30)
    try:
        conn.putrequest("PUT", path, skip_host=True, skip_accept_encoding=True)
        for k, v in headers.items():
            conn.putheader(k, v)
        conn.endheaders()
        resp = conn.getresponse()
        return resp.status, {k.lower(): v for k, v in resp.getheaders()}, resp.read()
    finally:
        conn.close()


def test_token_outside_signed_headers_is_403(rsrv, rbucket):
    with held_token(rsrv) as token:
        status, hdrs, body = _token_put(rsrv, rbucket, "unsigned-token", token, 4096, False)
        assert status == 403, (status, body)
        assert "x-amz-rdma-reply" not in hdrs
        # Control: the same token, signed, is accepted.
        status, hdrs, body = _token_put(rsrv, rbucket, "signed-token", token, 4096, True)
        assert status == 200 and "x-amz-rdma-reply" in hdrs, (status, hdrs, body)
    s3 = boto(rsrv)
    assert s3.head_object(Bucket=rbucket, Key="signed-token")["ContentLength"] == 4096
    with pytest.raises(Exception):
        s3.head_object(Bucket=rbucket, Key="unsigned-token")


# ---------------------------------------------------------------------------
# Fallback
# ---------------------------------------------------------------------------

@pytest.fixture(scope="module", params=list(UCX_ENVS))
def norsrv(request, tmp_path_factory):
    """A server with RDMA disabled (no session port, tokens declined)."""
    s = RdmaServer(tmp_path_factory.mktemp("nordma"), "nordma", UCX_ENVS[request.param],
                   rdma=False).start()
    yield s
    s.stop()


def _mkbucket(server):
    name = "fb-" + uuid.uuid4().hex[:12]
    boto(server).create_bucket(Bucket=name)
    return name


@pytest.mark.parametrize("op", ["put", "get"])
def test_rdma_disabled_fallback(norsrv, op):
    b = _mkbucket(norsrv)
    boto(norsrv).put_object(Bucket=b, Key="k", Body=pattern(2 * MiB, 4))
    _, r, err = run_driver(norsrv, "--transport", "token", op, b, "k", 2 * MiB, 4)
    assert r["fallbacks"] >= 1 and r["token_ops"] == 0 and r["http_ops"] == 1
    assert "falling back to HTTP" in err
    rc, r, err = run_driver(norsrv, "--transport", "token", "--no-fallback", op, b, "k",
                            2 * MiB, 4, check=False)
    assert rc == 1 and r["status"] == "S3R_ERR_RDMA_UNAVAILABLE", err
    assert r["fallbacks"] == 0 and r["http_ops"] == 0


def test_session_port_down(rsrv, rbucket):
    dead = f"127.0.0.1:{free_port()}"
    _, r, _ = run_driver(rsrv, "--transport", "token", "roundtrip", rbucket, 4096,
                         rdma_endpoint=dead)
    assert r["token_ops"] == 0 and r["fallbacks"] >= 1
    rc, r, err = run_driver(rsrv, "--transport", "token", "--no-fallback", "put", rbucket, "k",
                            4096, 1, rdma_endpoint=dead, check=False)
    assert rc == 1 and r["status"] == "S3R_ERR_RDMA_UNAVAILABLE", err
    # RDMA_FALLBACK_ENABLED overrides the config.
    rc, r, err = run_driver(rsrv, "--transport", "token", "put", rbucket, "k", 4096, 1,
                            rdma_endpoint=dead, env={"RDMA_FALLBACK_ENABLED": "false"},
                            check=False)
    assert rc == 1 and r["status"] == "S3R_ERR_RDMA_UNAVAILABLE", err


@pytest.mark.parametrize("op", ["put", "get"])
def test_decline_501(rsrv, norsrv, op):
    """Session on the RDMA server, HTTP to the RDMA-disabled one: the token is
    declined with 501, which is the fallback path proper."""
    b = _mkbucket(norsrv)
    boto(norsrv).put_object(Bucket=b, Key="k", Body=pattern(2 * MiB, 4))
    args = ("--transport", "token", op, b, "k", 2 * MiB, 4)
    _, r, err = run_driver(rsrv, *args, endpoint=norsrv.endpoint)
    assert r["sessions"] == 1 and r["fallbacks"] == 1 and r["http_ops"] == 1, err
    rc, r, err = run_driver(rsrv, "--no-fallback", *args, endpoint=norsrv.endpoint, check=False)
    assert rc == 1 and r["status"] == "S3R_ERR_RDMA_DECLINED", err
    assert r["http_ops"] == 0


def test_env_overrides(rsrv, rbucket):
    # SPT_RDMA_ENABLED=0: everything over HTTP, whatever the transport (AUTO and
    # NATIVE too, under either UCX setting: no session is even opened).
    for transport in ("token", "auto", "native"):
        _, r, _ = run_driver(rsrv, "--transport", transport, "roundtrip", rbucket, 2 * MiB,
                             env={"SPT_RDMA_ENABLED": "0"})
        assert r["token_ops"] == 0 and r["native_ops"] == 0 and r["sessions"] == 0, r
        assert r["http_ops"] == 3, r
    # RDMA_THRESHOLD_BYTES=0 (TOKEN's threshold) is parsed and accepted; with a
    # session up AUTO is native (default transports) or HTTP (TCP-only) anyway.
    _, r, _ = run_driver(rsrv, "--transport", "auto", "roundtrip", rbucket, 1,
                         env={"RDMA_THRESHOLD_BYTES": "0"})
    if auto_is_native(rsrv):
        assert r["native_ops"] == 5 and r["token_ops"] == 0 and r["http_ops"] == 0, r
    else:
        assert r["http_ops"] == 3 and r["token_ops"] == 0 and r["native_ops"] == 0, r
    # ... and with the threshold at work (no session can be had: a closed
    # session port), 0 sends even 1 byte by token first, which falls back.
    _, r, _ = run_driver(rsrv, "--transport", "auto", "roundtrip", rbucket, 1,
                         env={"RDMA_THRESHOLD_BYTES": "0"},
                         rdma_endpoint=f"127.0.0.1:{free_port()}")
    assert r["fallbacks"] > 0 and r["http_ops"] == 3 and r["token_ops"] == 0, r
    # And a threshold above the object: AUTO under TCP goes HTTP, native regardless.
    _, r, _ = run_driver(rsrv, "--transport", "auto", "roundtrip", rbucket, 4096,
                         env={"RDMA_THRESHOLD_BYTES": "1MB"})
    if auto_is_native(rsrv):
        assert r["native_ops"] == 5 and r["token_ops"] == 0 and r["http_ops"] == 0, r
    else:
        assert r["http_ops"] == 3 and r["token_ops"] == 0 and r["native_ops"] == 0, r
    rc, r, _ = run_driver(rsrv, "roundtrip", rbucket, 1, env={"RDMA_TIMEOUT_MS": "soon"},
                          check=False)
    assert rc == 1 and r["status"] == "S3R_ERR_INVALID_ARG"


# ---------------------------------------------------------------------------
# CLI
# ---------------------------------------------------------------------------

def cli(server, *args, transport="auto", check=None):
    env = clean_env(server.ucx_env)
    env.update({"AWS_ACCESS_KEY_ID": USERS[0][0], "AWS_SECRET_ACCESS_KEY": USERS[0][1]})
    p = subprocess.run([str(CLI), "--endpoint", server.endpoint, "--rdma-endpoint",
                        server.rdma_endpoint, "--transport", transport, *map(str, args)],
                       env=env, capture_output=True, timeout=300)
    if check is not None:
        assert p.returncode == check, (p.returncode, p.stdout, p.stderr)
    return p


@pytest.mark.parametrize("transport", ["http", "token"])
def test_cli(rsrv, tmp_path, transport):
    b = "cli-" + uuid.uuid4().hex[:10]
    src = tmp_path / "src.bin"
    src.write_bytes(pattern(20 * MiB + 3, 2))
    cli(rsrv, "mb", f"s3://{b}", transport=transport, check=0)
    cli(rsrv, "--content-type", "text/x-t", "--meta", "k=v", "put", src, f"s3://{b}/d/f",
        transport=transport, check=0)
    out = cli(rsrv, "ls", f"s3://{b}", transport=transport, check=0).stdout.decode()
    assert "PRE d/" in out
    out = cli(rsrv, "ls", f"s3://{b}/d/", transport=transport, check=0).stdout.decode()
    assert str(20 * MiB + 3) in out
    assert b in cli(rsrv, "ls", transport=transport, check=0).stdout.decode().split()
    out = cli(rsrv, "stat", f"s3://{b}/d/f", transport=transport, check=0).stdout.decode()
    assert "text/x-t" in out and "k=v" in out and str(20 * MiB + 3) in out
    dst = tmp_path / "dst.bin"
    cli(rsrv, "get", f"s3://{b}/d/f", dst, transport=transport, check=0)
    assert dst.read_bytes() == src.read_bytes()
    cli(rsrv, "cp", f"s3://{b}/d/f", f"s3://{b}/copy", transport=transport, check=0)
    out = cli(rsrv, "get", f"s3://{b}/copy", "-", transport=transport, check=0).stdout
    assert out == src.read_bytes()
    p = cli(rsrv, "rb", f"s3://{b}", transport=transport, check=1)
    assert b"not empty" in p.stderr
    cli(rsrv, "rm", f"s3://{b}/d/f", transport=transport, check=0)
    cli(rsrv, "rm", f"s3://{b}/copy", transport=transport, check=0)
    p = cli(rsrv, "get", f"s3://{b}/copy", tmp_path / "none", transport=transport, check=3)
    assert b"NoSuchKey" in p.stderr or b"no such key" in p.stderr
    assert not (tmp_path / "none").exists()
    cli(rsrv, "rb", f"s3://{b}", transport=transport, check=0)
    cli(rsrv, "stat", f"s3://{b}/x", transport=transport, check=3)


def test_endpoint_failover(rsrv, rbucket):
    """Several HTTP endpoints: a refused connection moves on to the next."""
    dead = f"http://127.0.0.1:{free_port()}"
    _, r, _ = run_driver(rsrv, "--transport", "http", "roundtrip", rbucket, 4096, MiB + 1,
                         endpoint=f"{dead},{rsrv.endpoint}")
    assert r["errors"] == 0


def test_cli_bad_config(rsrv):
    env = clean_env({"AWS_ACCESS_KEY_ID": "a", "AWS_SECRET_ACCESS_KEY": "b",
                      "RDMA_THRESHOLD_BYTES": "lots"})
    p = subprocess.run([str(CLI), "--endpoint", rsrv.endpoint, "ls"], capture_output=True,
                       env=env)
    assert p.returncode == 2 and b"RDMA_THRESHOLD_BYTES" in p.stderr, p.stderr
    p = subprocess.run([str(CLI), "--endpoint", "ftp://x", "ls"], capture_output=True, env=env)
    assert p.returncode == 2 and b"endpoint" in p.stderr, p.stderr


def test_cli_usage(rsrv):
    p = subprocess.run([str(CLI), "--help"], capture_output=True)
    assert p.returncode == 0 and b"usage" in p.stdout
    cli(rsrv, "frobnicate", check=2)
    cli(rsrv, "put", "only-one-arg", check=2)
    cli(rsrv, "mb", "not-a-url", check=2)
    cli(rsrv, "--part-size", "8Mx", "ls", check=2)
    p = subprocess.run([str(CLI), "--transport", "pigeon", "ls"], capture_output=True)
    assert p.returncode == 2
    env = clean_env()
    env.pop("AWS_ACCESS_KEY_ID", None)
    env.pop("AWS_SECRET_ACCESS_KEY", None)
    p = subprocess.run([str(CLI), "ls"], capture_output=True, env=env)
    assert p.returncode == 2 and b"credentials" in p.stderr
    # Wrong secret: access denied, exit 4.
    env = clean_env({"AWS_ACCESS_KEY_ID": USERS[0][0], "AWS_SECRET_ACCESS_KEY": "wrong-secret"})
    p = subprocess.run([str(CLI), "--endpoint", rsrv.endpoint, "ls"], capture_output=True,
                       env=env)
    assert p.returncode == 4, p.stderr


def test_exports():
    p = subprocess.run([str(REPO_ROOT / "scripts" / "check-exports")], capture_output=True,
                       text=True)
    assert p.returncode == 0, p.stdout + p.stderr


def test_pkg_config():
    env = dict(os.environ, PKG_CONFIG_PATH=str(BUILD / "pkgconfig"))
    p = subprocess.run(["pkg-config", "--cflags", "--libs", "s3rdma"], capture_output=True,
                       text=True, env=env)
    assert p.returncode == 0, p.stderr
    assert "-ls3rdma" in p.stdout and str(REPO_ROOT / "include") in p.stdout
