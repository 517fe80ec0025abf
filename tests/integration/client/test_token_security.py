"""x-amz-rdma-token security at the HTTP level (docs/protocol.md §2, §3).

A real session holds a malloc()ed buffer registered as one region (exactly the
buffer): build/tests/s3r_tokhelper `hold` prints its token (s3r_rdma_token, the
public API) and keeps the session open, and can dump its buffer so we see what
the server wrote. Python decodes the token ("s3r1." + base64url of session id
16 B, u32 region id, u64 addr, u64 len, big-endian), modifies it and sends
hand-signed token requests (SigV4 over x-amz-rdma-token, UNSIGNED-PAYLOAD,
Content-Length: 0, x-amz-decoded-content-length for PUT):

- another user's session: 403 AccessDenied;
- a span outside the region, or an unknown region: 4xx (not 5xx, not 200), the
  buffer is not written, nothing is stored, the server keeps serving;
- a forged / closed session id: decline, 501 NotImplemented;
- a PUT whose decoded length exceeds the token's len: 4xx, nothing stored;
- a GET whose object is bigger than the buffer: 400 + x-amz-rdma-bytes-needed.
(A token outside SignedHeaders -> 403 is test_client_lib.py's.)
Runs under UCX's default transports and UCX_TLS=tcp.
"""
import base64
import os
import struct
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from s3r_itest import (REPO_ROOT, UCX_ENVS, USERS, RdmaServer, raw_request,  # noqa: E402
                       stats_json)

# scripts/run-tests points S3RDMA_BUILD at build/ or build-asan/.
HELPER = Path(os.environ.get("S3RDMA_BUILD", REPO_ROOT / "build")) / "tests" / "s3r_tokhelper"
BUF = 64 * 1024


def pattern(n, seed, base_word=0):
    """s3r_tokhelper's fill: little-endian u64 words (seed << 40) | index."""
    words = (n + 7) // 8
    return b"".join(struct.pack("<Q", (seed << 40) | (base_word + i))
                    for i in range(words))[:n]


# ---------------------------------------------------------------------------
# Tokens
# ---------------------------------------------------------------------------

def decode(token):
    assert token.startswith("s3r1.") and len(token) == 53, token
    b64 = token[5:]
    raw = base64.urlsafe_b64decode(b64 + "=" * (-len(b64) % 4))
    assert len(raw) == 36
    sid = raw[:16]
    region, addr, length = struct.unpack(">IQQ", raw[16:])
    return sid, region, addr, length


def encode(sid, region, addr, length):
    raw = sid + struct.pack(">IQQ", region, addr, length)
    tok = "s3r1." + base64.urlsafe_b64encode(raw).decode().rstrip("=")
    assert len(tok) == 53
    return tok


def test_token_codec_roundtrip():
    sid = bytes(range(16))
    t = encode(sid, 7, 0x7F0011223344, 4096)
    assert decode(t) == (sid, 7, 0x7F0011223344, 4096)


# ---------------------------------------------------------------------------
# Server, holder, requests
# ---------------------------------------------------------------------------

@pytest.fixture(scope="module", params=list(UCX_ENVS))
def tsrv(request, tmp_path_factory):
    assert HELPER.exists(), f"{HELPER} not built (make build)"
    s = RdmaServer(tmp_path_factory.mktemp("toksec"), "toksec", UCX_ENVS[request.param]).start()
    yield s
    s.stop()


class Holder:
    """s3r_tokhelper hold: a live session with one registered buffer."""

    def __init__(self, srv, user=USERS[0], size=BUF, seed=1):
        self.size, self.seed = size, seed
        self.p = subprocess.Popen([str(HELPER), "hold", str(size), str(seed)],
                                  env=srv.client_env(user), stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        line = self.p.stdout.readline()
        if not line.startswith("TOKEN "):
            self.p.kill()
            raise AssertionError(f"holder: {line!r} {self.p.stderr.read()}")
        self.token = line.split()[1]
        self.sid, self.region, self.addr, self.len = decode(self.token)
        assert self.len == size

    def buf(self, off=0, n=None):
        n = self.size - off if n is None else n
        self.p.stdin.write(f"hex {off} {n}\n")
        self.p.stdin.flush()
        line = self.p.stdout.readline()
        assert line.startswith("HEX "), line
        return bytes.fromhex(line[4:].strip())

    def refill(self, seed):
        self.p.stdin.write(f"fill {seed}\n")
        self.p.stdin.flush()
        assert self.p.stdout.readline() == "filled\n"
        self.seed = seed

    def close(self):
        if self.p.poll() is None:
            self.p.stdin.close()
            assert self.p.wait(30) == 0, self.p.stderr.read()
        self.p.stdout.close()
        self.p.stderr.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if exc[0] is not None and self.p.poll() is None:
            self.p.kill()
            self.p.wait()
        self.close()


def token_put(srv, bucket, key, token, size, user=USERS[0]):
    headers = {"x-amz-rdma-token": token, "x-amz-decoded-content-length": str(size),
               "Content-Length": "0"}
    return raw_request(srv.srv, "PUT", f"/{bucket}/{key}", headers=headers, body=b"",
                       payload_hash="UNSIGNED-PAYLOAD", user=user)


def token_get(srv, bucket, key, token, user=USERS[0], rng=None):
    headers = {"x-amz-rdma-token": token}
    if rng:
        headers["Range"] = rng
    return raw_request(srv.srv, "GET", f"/{bucket}/{key}", headers=headers,
                       payload_hash="UNSIGNED-PAYLOAD", user=user)


def http_put(srv, bucket, key, data, user=USERS[0]):
    r = raw_request(srv.srv, "PUT", f"/{bucket}/{key}", body=data, user=user)
    assert r.status == 200, r
    return r


def http_get(srv, bucket, key, user=USERS[0]):
    return raw_request(srv.srv, "GET", f"/{bucket}/{key}", user=user)


def mkbucket(srv, user=USERS[0]):
    name = "ts-" + uuid.uuid4().hex[:12]
    r = raw_request(srv.srv, "PUT", f"/{name}", user=user)
    assert r.status == 200, r
    return name


def assert_absent(srv, bucket, key, user=USERS[0]):
    r = raw_request(srv.srv, "HEAD", f"/{bucket}/{key}", user=user)
    assert r.status == 404, f"{key} was stored by a rejected PUT: {r}"


def assert_rejected(r, statuses, code=None):
    assert r.status in statuses, r
    assert "x-amz-rdma-reply" not in r.headers, r
    assert "x-amz-rdma-bytes-transferred" not in r.headers, r
    if code is not None:
        assert r.error_code() == code, r


def assert_server_ok(srv, holder, bucket):
    """The server is alive and the holder's genuine token still works both ways."""
    assert srv.srv.alive(), srv.srv.log_tail()
    key = "ok-" + uuid.uuid4().hex[:8]
    r = token_put(srv, bucket, key, holder.token, 1000)
    assert r.status == 200 and r.headers.get("x-amz-rdma-reply") == "200", r
    got = http_get(srv, bucket, key)
    assert got.status == 200 and got.body == holder.buf(0, 1000), got
    r = raw_request(srv.srv, "DELETE", f"/{bucket}/{key}")
    assert r.status == 204, r
    status, js = stats_json(srv.srv)
    assert status == 200 and js["rdma_sessions"] >= 1, js


# ---------------------------------------------------------------------------
# Tests
# ---------------------------------------------------------------------------

def test_genuine_token_and_subspans(tsrv):
    """Controls: the token works, and a sub-span of the region is honoured
    exactly (the server writes where the token says, nowhere else)."""
    b = mkbucket(tsrv)
    obj = os.urandom(300)
    http_put(tsrv, b, "src", obj)
    with Holder(tsrv, seed=3) as h:
        orig = h.buf()
        assert orig == pattern(BUF, 3)
        sub = encode(h.sid, h.region, h.addr + 1000, 300)
        r = token_get(tsrv, b, "src", sub)
        assert r.status == 200 and r.headers.get("x-amz-rdma-reply") == "200", r
        assert r.headers.get("x-amz-rdma-bytes-transferred") == "300", r
        assert r.body == b"", r
        assert h.buf() == orig[:1000] + obj + orig[1300:]
        # The last byte of the region, alone.
        last = encode(h.sid, h.region, h.addr + BUF - 1, 1)
        r = token_put(tsrv, b, "last-byte", last, 1)
        assert r.status == 200 and r.headers.get("x-amz-rdma-reply") == "200", r
        assert http_get(tsrv, b, "last-byte").body == orig[-1:]
        # A PUT shorter than the token stores exactly the first N bytes.
        r = token_put(tsrv, b, "short", h.token, 777)
        assert r.status == 200 and r.headers.get("x-amz-rdma-reply") == "200", r
        assert http_get(tsrv, b, "short").body == orig[:777]
        assert_server_ok(tsrv, h, b)


def test_other_users_session_is_403(tsrv):
    """The session was authenticated by user 2; user 1 signs the request."""
    b1 = mkbucket(tsrv, USERS[0])
    b2 = mkbucket(tsrv, USERS[1])
    http_put(tsrv, b1, "obj", b"secret of user 1" * 10, USERS[0])
    with Holder(tsrv, user=USERS[1], seed=5) as h2, Holder(tsrv, user=USERS[0], seed=6) as h1:
        orig = h2.buf()
        r = token_put(tsrv, b1, "stolen", h2.token, 4096, USERS[0])
        assert_rejected(r, (403,), "AccessDenied")
        assert_absent(tsrv, b1, "stolen")
        r = token_get(tsrv, b1, "obj", h2.token, USERS[0])
        assert_rejected(r, (403,), "AccessDenied")
        assert h2.buf() == orig, "the server wrote into another user's buffer"
        # Also a sub-span and a copy with user 1's own region id: still 403.
        r = token_get(tsrv, b1, "obj", encode(h2.sid, h1.region, h2.addr, 160), USERS[0])
        assert_rejected(r, (403,), "AccessDenied")
        assert h2.buf() == orig
        # And the other way round: user 2 cannot use user 1's session on its own bucket.
        r = token_put(tsrv, b2, "stolen", h1.token, 4096, USERS[1])
        assert_rejected(r, (403,), "AccessDenied")
        assert_absent(tsrv, b2, "stolen", USERS[1])
        # Control: the owner of the session can use it.
        r = token_put(tsrv, b2, "own", h2.token, 4096, USERS[1])
        assert r.status == 200 and r.headers.get("x-amz-rdma-reply") == "200", r
        got = http_get(tsrv, b2, "own", USERS[1])
        assert got.status == 200 and got.body == orig[:4096]
        assert_server_ok(tsrv, h1, b1)


def _out_of_region(h):
    A, L, R = h.addr, h.len, h.region
    M = (1 << 64) - 1
    return {
        "starts-1-before": (R, A - 1, L),
        "ends-1-after": (R, A + 1, L),
        "len+1": (R, A, L + 1),
        "first-byte-after": (R, A + L, 1),
        "1MiB-after": (R, A + L + (1 << 20), 16),
        "addr-0": (R, 0, 16),
        "below-region": (R, A - 4096, 4096),
        "len-2^63": (R, A, 1 << 63),
        "len-max-minus-addr": (R, A, M - A),
        "addr-max": (R, M, 1),          # addr + len wraps past 2^64
        "wraps": (R, A, M),             # addr + len wraps past 2^64
        "unknown-region": ((R + 1) & 0xFFFFFFFF, A, 16),
        "region-0xffffffff": (0xFFFFFFFF, A, 16),
    }


OOR_CASES = ["starts-1-before", "ends-1-after", "len+1", "first-byte-after", "1MiB-after",
             "addr-0", "below-region", "len-2^63", "len-max-minus-addr",
             "unknown-region", "region-0xffffffff"]
WRAP_CASES = ["addr-max", "wraps"]


def test_out_of_region_is_4xx(tsrv):
    """Every span outside the region (and every unknown region) is a client error:
    no 5xx, no 200, the buffer untouched, nothing stored, the server unharmed."""
    b = mkbucket(tsrv)
    obj = os.urandom(16)
    http_put(tsrv, b, "small", obj)
    with Holder(tsrv, seed=9) as h:
        orig = h.buf()
        cases = _out_of_region(h)
        assert sorted(cases) == sorted(OOR_CASES + WRAP_CASES)
        _check_out_of_region(tsrv, b, h, orig, {n: cases[n] for n in OOR_CASES})


def test_wrapping_span_is_4xx(tsrv):
    b = mkbucket(tsrv)
    http_put(tsrv, b, "small", os.urandom(16))
    with Holder(tsrv, seed=14) as h:
        orig = h.buf()
        cases = _out_of_region(h)
        _check_out_of_region(tsrv, b, h, orig, {n: cases[n] for n in WRAP_CASES})


def _check_out_of_region(tsrv, b, h, orig, cases):
    """PUT and GET with each token: 4xx, no reply header, nothing stored, buffer
    untouched, server alive; then the genuine token still works."""
    bad = []
    for name in cases:
        region, addr, length = cases[name]
        tok = encode(h.sid, region, addr, length)
        key = f"oor-{name}"
        rp = token_put(tsrv, b, key, tok, 1)
        rg = token_get(tsrv, b, "small", tok)
        for what, r in (("PUT", rp), ("GET", rg)):
            if not (400 <= r.status < 500) or "x-amz-rdma-reply" in r.headers:
                bad.append(f"{name} {what}: {r.status} {r.error_code()} "
                           f"{r.headers.get('x-amz-rdma-reply')}")
        assert raw_request(tsrv.srv, "HEAD", f"/{b}/{key}").status == 404, \
            f"{name}: a rejected PUT stored {key}"
        assert h.buf() == orig, f"{name}: the server wrote into the buffer"
        assert tsrv.srv.alive(), f"{name}: s3rdmad died\n{tsrv.srv.log_tail()}"
    assert_server_ok(tsrv, h, b)
    assert not bad, "out-of-region tokens not answered with a 4xx:\n" + "\n".join(bad)


def test_out_of_region_is_invalid_argument(tsrv):
    """docs/protocol.md §2: span outside the region / unknown region -> 400
    InvalidArgument (checked on the cases that are well-formed tokens)."""
    b = mkbucket(tsrv)
    http_put(tsrv, b, "small", b"0123456789abcdef")
    with Holder(tsrv, seed=10) as h:
        cases = _out_of_region(h)
        for name in ("starts-1-before", "ends-1-after", "len+1", "first-byte-after",
                     "unknown-region"):
            tok = encode(h.sid, *cases[name])
            assert_rejected(token_put(tsrv, b, f"inv-{name}", tok, 1), (400,), "InvalidArgument")
            assert_rejected(token_get(tsrv, b, "small", tok), (400,), "InvalidArgument")
        assert_server_ok(tsrv, h, b)


def test_forged_or_dead_session_is_declined(tsrv):
    b = mkbucket(tsrv)
    obj = os.urandom(2000)
    http_put(tsrv, b, "obj", obj)
    h = Holder(tsrv, seed=11)
    try:
        orig = h.buf()
        flipped = bytes([h.sid[0] ^ 1]) + h.sid[1:]
        for name, sid in (("random", os.urandom(16)), ("one-bit", flipped),
                          ("zero", bytes(16))):
            tok = encode(sid, h.region, h.addr, h.len)
            r = token_put(tsrv, b, f"forged-{name}", tok, 100)
            assert_rejected(r, (501,), "NotImplemented")
            assert_absent(tsrv, b, f"forged-{name}")
            r = token_get(tsrv, b, "obj", tok)
            assert r.status == 501 and "x-amz-rdma-reply" not in r.headers, r
            if r.body and not r.body.startswith(b"<?xml"):
                assert r.body == obj  # a declined GET may carry the object
            assert h.buf() == orig
        assert_server_ok(tsrv, h, b)
        token = h.token
    finally:
        h.close()
    # The session is gone with its client: its own token is now declined too.
    r = token_put(tsrv, b, "after-close", token, 100)
    assert_rejected(r, (501,), "NotImplemented")
    assert_absent(tsrv, b, "after-close")
    assert http_get(tsrv, b, "obj").body == obj


def test_put_longer_than_token_is_4xx(tsrv):
    b = mkbucket(tsrv)
    with Holder(tsrv, seed=12) as h:
        for n in (h.len + 1, h.len + 4096, 1 << 40):
            r = token_put(tsrv, b, f"long-{n}", h.token, n)
            assert_rejected(r, range(400, 500))
            assert_absent(tsrv, b, f"long-{n}")
        sub = encode(h.sid, h.region, h.addr + 8, 100)
        r = token_put(tsrv, b, "long-sub", sub, 101)
        assert_rejected(r, range(400, 500))
        assert_absent(tsrv, b, "long-sub")
        # Exactly the token's length is fine.
        r = token_put(tsrv, b, "exact", sub, 100)
        assert r.status == 200 and r.headers.get("x-amz-rdma-reply") == "200", r
        assert http_get(tsrv, b, "exact").body == pattern(BUF, 12)[8:108]
        # A PUT over an existing object with too long a length leaves it as it was.
        r = token_put(tsrv, b, "exact", sub, 101)
        assert_rejected(r, range(400, 500))
        assert http_get(tsrv, b, "exact").body == pattern(BUF, 12)[8:108]
        assert_server_ok(tsrv, h, b)


def test_get_bigger_than_buffer_says_bytes_needed(tsrv):
    b = mkbucket(tsrv)
    obj = os.urandom(BUF + 1)
    http_put(tsrv, b, "big", obj)
    with Holder(tsrv, seed=13) as h:
        orig = h.buf()
        r = token_get(tsrv, b, "big", h.token)
        assert_rejected(r, (400,))
        assert r.headers.get("x-amz-rdma-bytes-needed") == str(BUF + 1), r
        assert h.buf() == orig
        sub = encode(h.sid, h.region, h.addr + 64, 1000)
        r = token_get(tsrv, b, "big", sub)
        assert_rejected(r, (400,))
        assert r.headers.get("x-amz-rdma-bytes-needed") == str(BUF + 1), r
        # A range: what is needed is the range's length.
        r = token_get(tsrv, b, "big", sub, rng="bytes=10-1010")
        assert_rejected(r, (400,))
        assert r.headers.get("x-amz-rdma-bytes-needed") == "1001", r
        assert h.buf() == orig
        # A range that fits goes through, into the sub-span only.
        r = token_get(tsrv, b, "big", sub, rng="bytes=10-1009")
        assert r.status == 206 and r.headers.get("x-amz-rdma-reply") == "206", r
        assert r.headers.get("x-amz-rdma-bytes-transferred") == "1000", r
        assert h.buf() == orig[:64] + obj[10:1010] + orig[1064:]
        h.refill(13)
        assert_server_ok(tsrv, h, b)
