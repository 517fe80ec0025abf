"""A token PUT (x-amz-rdma-token) signed with a real payload hash: x-amz-content-sha256 is the
hex SHA-256 of the bytes the server pulls by RDMA (the HTTP body is empty), and the server
checks it against them, as it checks an HTTP body's: a match stores the object, a mismatch is
400 XAmzContentSHA256Mismatch and stores nothing. (Until this was fixed, the hash was taken of
the empty HTTP body, and every such PUT failed.)

A real session holds a registered buffer: build/tests/s3r_tokhelper `hold` (the client tests'
Holder) prints its token and keeps the session open."""
import hashlib
import uuid

import pytest

from client.test_token_security import HELPER, Holder
from s3r_itest import UCX_ENVS, RdmaServer, raw_request


@pytest.fixture(scope="module")
def tsrv(tmp_path_factory):
    assert HELPER.exists(), f"{HELPER} not built"
    s = RdmaServer(tmp_path_factory.mktemp("tokhash"), "tokhash", UCX_ENVS["ucx-tcp"]).start()
    yield s
    s.stop()


def token_put(srv, bucket, key, token, size, payload_hash):
    headers = {"x-amz-rdma-token": token, "x-amz-decoded-content-length": str(size),
               "Content-Length": "0"}
    return raw_request(srv.srv, "PUT", f"/{bucket}/{key}", headers=headers, body=b"",
                       payload_hash=payload_hash)


def test_token_put_checks_a_signed_payload_hash_against_the_pulled_bytes(tsrv):
    bucket = "th-" + uuid.uuid4().hex[:12]
    assert raw_request(tsrv.srv, "PUT", f"/{bucket}").status == 200
    with Holder(tsrv, seed=5) as h:
        data = h.buf(0, 1000)
        good = hashlib.sha256(data).hexdigest()
        r = token_put(tsrv, bucket, "signed", h.token, 1000, good)
        assert r.status == 200 and r.headers.get("x-amz-rdma-reply") == "200", r
        got = raw_request(tsrv.srv, "GET", f"/{bucket}/signed")
        assert got.status == 200 and got.body == data, got
        # A hash of other bytes (here: of the empty HTTP body) is refused, nothing stored.
        for wrong in (hashlib.sha256(b"").hexdigest(), hashlib.sha256(data[:999]).hexdigest()):
            r = token_put(tsrv, bucket, "wrong", h.token, 1000, wrong)
            assert r.status == 400 and r.error_code() == "XAmzContentSHA256Mismatch", r
            assert raw_request(tsrv.srv, "HEAD", f"/{bucket}/wrong").status == 404
