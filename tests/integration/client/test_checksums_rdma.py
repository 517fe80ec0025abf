"""The token path and the native protocol hold a PUT's body to the checks HTTP makes
(tests/integration/test_s3_checksums.py): every x-amz-checksum-* algorithm current AWS
SDKs send (CRC32, CRC32C, CRC64NVME, SHA1, SHA256), and Content-MD5, are verified over the
bytes the server pulled by RDMA (or took inline), stored and returned; a mismatch is
400 BadDigest (as AWS answers) and stores nothing.

Token PUTs come from a live session holding a registered buffer (s3r_tokhelper hold, the
client tests' Holder) and a hand-signed HTTP request; native ones from
build/tests/s3r_native_put (tests/attack/s3r_native_put.c), which sends the headers given,
with the body inline or as a region span. Runs under UCX's default transports and
UCX_TLS=tcp."""
import functools
import hashlib
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from client.test_token_security import HELPER, Holder  # noqa: E402
from s3r_itest import (CHECKSUMS, REPO_ROOT, UCX_ENVS, USERS, RdmaServer, md5_b64,  # noqa: E402
                       raw_request)

BUILD = Path(os.environ.get("S3RDMA_BUILD", REPO_ROOT / "build"))
NATIVE_PUT = BUILD / "tests" / "s3r_native_put"
SIZE = 2 * 1024 * 1024 + 5  # several RDMA chunks, past the MD5 offload size


@pytest.fixture(scope="module", params=list(UCX_ENVS))
def srv(request, tmp_path_factory):
    assert HELPER.exists() and NATIVE_PUT.exists(), "build the tests first"
    s = RdmaServer(tmp_path_factory.mktemp("ckrdma"), "ckrdma", UCX_ENVS[request.param]).start()
    s.bucket = "ck-" + uuid.uuid4().hex[:10]
    assert raw_request(s.srv, "PUT", f"/{s.bucket}").status == 200
    yield s
    s.stop()


@pytest.fixture(scope="module")
def holder(srv):
    with Holder(srv, size=SIZE, seed=3) as h:
        h.data = h.buf(0, SIZE)
        yield h


class Reply:
    def __init__(self, status, headers, code):
        self.status, self.headers, self.code = status, headers, code

    def __repr__(self):
        return f"<{self.status} {self.code} {self.headers}>"


def token_put(srv, holder, key, headers):
    h = {"x-amz-rdma-token": holder.token, "x-amz-decoded-content-length": str(SIZE),
         "Content-Length": "0", **headers}
    r = raw_request(srv.srv, "PUT", f"/{srv.bucket}/{key}", headers=h, body=b"",
                    payload_hash="UNSIGNED-PAYLOAD")
    assert r.status != 200 or r.headers.get("x-amz-rdma-reply") == "200", r
    return Reply(r.status, {k.lower(): v for k, v in r.headers.items()},
                 r.error_code() if r.status >= 300 else None)


def native_put(srv, body_file, key, how, headers):
    p = subprocess.run([NATIVE_PUT, "127.0.0.1", str(srv.rdma_port), *USERS[0], srv.bucket, key,
                        body_file, how, *(f"{k}={v}" for k, v in headers.items())],
                       env=srv.client_env(), capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, (p.stdout, p.stderr)
    status, hdrs, code = None, {}, None
    for line in p.stdout.splitlines():
        word, _, rest = line.partition(" ")
        if word == "status":
            status = int(rest)
        elif word == "header":
            name, _, value = rest.partition(": ")
            hdrs[name.lower()] = value
        elif word == "code":
            code = rest
    return Reply(status, hdrs, code)


PATHS = ["token", "native-region", "native-inline"]


@functools.lru_cache(maxsize=None)
def checksum(algo, body):
    """The base64 checksum (the pure-Python CRCs take a while over megabytes: once each)."""
    return CHECKSUMS[algo][1](body)


@pytest.fixture
def put(srv, holder, tmp_path):
    """put(path, key, headers) -> Reply, with the holder's bytes as the body (the first
    64 KiB of them inline, where a native message cannot carry more)."""
    big = tmp_path / "body"
    big.write_bytes(holder.data)
    small = tmp_path / "small"
    small.write_bytes(holder.data[:65536])

    def go(path, key, headers):
        if path == "token":
            return token_put(srv, holder, key, headers), holder.data
        if path == "native-region":
            return native_put(srv, big, key, "region", headers), holder.data
        return native_put(srv, small, key, "inline", headers), holder.data[:65536]
    return go


def stored(srv, key, header=None):
    r = raw_request(srv.srv, "HEAD", f"/{srv.bucket}/{key}",
                    headers={"x-amz-checksum-mode": "ENABLED"})
    return r.status, r.headers.get(header) if header else None


@pytest.mark.parametrize("algo", list(CHECKSUMS))
@pytest.mark.parametrize("path", PATHS)
def test_checksum_header_verified(srv, put, path, algo):
    header = CHECKSUMS[algo][2]
    fn = functools.partial(checksum, algo)
    key = f"{path}-{algo}"
    # The right value (computed by the client over the bytes it sends).
    body = put(path, "probe", {})[1]
    r, _ = put(path, key, {header: fn(body)})
    assert r.status == 200 and r.headers.get(header) == fn(body), r
    assert stored(srv, key, header) == (200, fn(body))
    got = raw_request(srv.srv, "GET", f"/{srv.bucket}/{key}")
    assert got.status == 200 and got.body == body
    # A wrong value: refused, nothing stored.
    r, _ = put(path, key + "-bad", {header: fn(b"other bytes")})
    assert r.status == 400 and r.code == "BadDigest", r
    assert stored(srv, key + "-bad")[0] == 404
    # Asked for by name (x-amz-sdk-checksum-algorithm): computed and answered.
    r, _ = put(path, key + "-sdk", {"x-amz-sdk-checksum-algorithm": algo})
    assert r.status == 200 and r.headers.get(header) == fn(body), r


@pytest.mark.parametrize("path", PATHS)
def test_content_md5_verified(srv, put, path):
    body = put(path, "probe", {})[1]
    r, _ = put(path, f"{path}-md5", {"Content-MD5": md5_b64(body)})
    assert r.status == 200 and r.headers.get("etag") == f'"{hashlib.md5(body).hexdigest()}"', r
    r, _ = put(path, f"{path}-md5-bad", {"Content-MD5": md5_b64(b"other")})
    assert r.status == 400 and r.code == "BadDigest", r
    assert stored(srv, f"{path}-md5-bad")[0] == 404
