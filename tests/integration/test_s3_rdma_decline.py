"""The HTTP side of the RDMA token path (docs/protocol.md §3) as a plain S3 client sees it: with no
usable RDMA session the server declines an s3r1 token with 501 NotImplemented, never pretends
success (no x-amz-rdma-reply), and authorization / existence errors come before any decline. Tokens of other
S3-RDMA implementations (NVIDIA cuObject's DC and RC descriptors) are declined the way their
clients fall back: a PUT with 501, a GET with the object in the body, both x-amz-rdma-reply: 501."""
import base64
import os

import pytest

from s3r_itest import USERS, new_bucket_name, raw_request

FAKE_TOKEN = "s3r1." + base64.urlsafe_b64encode(os.urandom(48)).decode().rstrip("=")


def token_put(server, bucket, key, token=FAKE_TOKEN, user=USERS[0], size=4096):
    headers = {"x-amz-rdma-token": token, "x-amz-decoded-content-length": str(size)}
    return raw_request(server, "PUT", f"/{bucket}/{key}", headers=headers, body=b"",
                       payload_hash="UNSIGNED-PAYLOAD", user=user)


def token_get(server, bucket, key, token=FAKE_TOKEN, user=USERS[0]):
    return raw_request(server, "GET", f"/{bucket}/{key}", headers={"x-amz-rdma-token": token},
                       payload_hash="UNSIGNED-PAYLOAD", user=user)


@pytest.fixture(params=[False, True], ids=["rdma-off", "rdma-on-no-session"])
def rdma_server(request, make_server):
    srv = make_server(rdma_enabled=request.param, name="rdma" if request.param else "nordma")
    return srv


def _mk_bucket(srv):
    name = new_bucket_name("tok")
    assert raw_request(srv, "PUT", f"/{name}").status == 200
    return name


def test_token_put_declined(rdma_server):
    srv = rdma_server
    b = _mk_bucket(srv)
    r = token_put(srv, b, "tok-obj")
    assert r.status == 501 and r.error_code() == "NotImplemented", r
    assert "x-amz-rdma-reply" not in r.headers, r
    assert raw_request(srv, "HEAD", f"/{b}/tok-obj").status == 404
    # the same PUT re-sent with a body works
    r = raw_request(srv, "PUT", f"/{b}/tok-obj", body=b"x" * 4096)
    assert r.status == 200


def test_token_get_declined_or_inline(rdma_server):
    srv = rdma_server
    b = _mk_bucket(srv)
    data = os.urandom(3000)
    assert raw_request(srv, "PUT", f"/{b}/obj", body=data).status == 200
    r = token_get(srv, b, "obj")
    assert r.status == 501, r
    assert "x-amz-rdma-reply" not in r.headers, r
    if r.body.startswith(b"<?xml"):
        assert r.error_code() == "NotImplemented", r
    else:
        assert r.body == data  # a declined GET may carry the object


def test_token_errors_before_decline(rdma_server):
    srv = rdma_server
    b = _mk_bucket(srv)
    r = token_get(srv, b, "missing")
    # docs/protocol.md §3: a client never mistakes a 404 for a decline, RDMA on or off
    assert r.status == 404 and r.error_code() == "NoSuchKey", r
    r = token_get(srv, b, "missing", user=USERS[1])
    assert r.status == 403 and r.error_code() == "AccessDenied", r
    r = token_put(srv, b, "intruder", user=USERS[1])
    assert r.status == 403 and r.error_code() == "AccessDenied", r
    r = token_get(srv, "no-such-bucket-tok", "k")
    assert r.status == 404 and r.error_code() == "NoSuchBucket", r


def test_token_get_conditions_before_decline(rdma_server):
    """The token is taken up only when the object is about to be sent (docs/protocol.md §3):
    a failed condition or an unsatisfiable range answers as over HTTP, RDMA on or off."""
    srv = rdma_server
    b = _mk_bucket(srv)
    assert raw_request(srv, "PUT", f"/{b}/obj", body=b"z" * 100).status == 200
    etag = raw_request(srv, "HEAD", f"/{b}/obj").headers["etag"]
    for headers, status in (({"If-None-Match": etag}, 304), ({"If-Match": '"0"'}, 412),
                            ({"Range": "bytes=500-600"}, 416)):
        r = raw_request(srv, "GET", f"/{b}/obj", headers={"x-amz-rdma-token": FAKE_TOKEN, **headers},
                        payload_hash="UNSIGNED-PAYLOAD")
        assert r.status == status, (headers, r)
        assert "x-amz-rdma-reply" not in r.headers, r


def test_token_must_be_signed(make_server):
    srv = make_server(rdma_enabled=True, name="rdma-signed")
    b = _mk_bucket(srv)
    assert raw_request(srv, "PUT", f"/{b}/obj", body=b"abc").status == 200
    # sign the request, then add the token header afterwards: it is not in SignedHeaders
    import http.client
    from s3r_itest import sign_headers
    headers = {"Host": srv.host}
    sign_headers("GET", f"/{b}/obj", [], headers, "UNSIGNED-PAYLOAD", *USERS[0])
    headers["x-amz-rdma-token"] = FAKE_TOKEN
    conn = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=10)
    conn.request("GET", f"/{b}/obj", headers=headers)
    resp = conn.getresponse()
    body = resp.read()
    conn.close()
    assert resp.status == 403 and b"<Code>AccessDenied</Code>" in body, (resp.status, body)
    assert resp.getheader("x-amz-rdma-reply") is None


# NVIDIA cuObject descriptors: "%016lx:%08x:%08x:%04x:%06x:%01x:%032x" (addr:size:rkey:lid:dctn:
# has_gid:gid), older clients appending ":addr:size"; and the 88-hex-digit RC form.
CUOBJ_DC = "00007f3a5c000000:00001000:0001a2b3:0001:00abcd:1:fe800000000000000000000000000001"
FOREIGN_TOKENS = {
    "cuobj-dc": CUOBJ_DC,
    "cuobj-dc-appended": CUOBJ_DC + ":00007f3a5c000000:0000000000001000",
    "cuobj-rc": os.urandom(44).hex(),
}


@pytest.mark.parametrize("token", list(FOREIGN_TOKENS.values()), ids=list(FOREIGN_TOKENS))
def test_foreign_token_put_declined(rdma_server, token):
    srv = rdma_server
    b = _mk_bucket(srv)
    r = token_put(srv, b, "cu-obj", token=token)
    assert r.status == 501 and r.error_code() == "NotImplemented", r
    assert r.headers.get("x-amz-rdma-reply") == "501", r
    assert b"serves s3r1 tokens only" in r.body, r
    assert raw_request(srv, "HEAD", f"/{b}/cu-obj").status == 404
    # the client's fallback: the same PUT with its body
    assert raw_request(srv, "PUT", f"/{b}/cu-obj", body=b"y" * 4096).status == 200


@pytest.mark.parametrize("token", list(FOREIGN_TOKENS.values()), ids=list(FOREIGN_TOKENS))
def test_foreign_token_get_served_inline(rdma_server, token):
    srv = rdma_server
    b = _mk_bucket(srv)
    data = os.urandom(5000)
    assert raw_request(srv, "PUT", f"/{b}/obj", body=data).status == 200
    r = token_get(srv, b, "obj", token=token)
    assert r.status == 200 and r.body == data, r
    assert r.headers.get("x-amz-rdma-reply") == "501", r
    assert "x-amz-rdma-bytes-transferred" not in r.headers, r
    r = raw_request(srv, "GET", f"/{b}/obj", headers={"x-amz-rdma-token": token,
                                                      "Range": "bytes=100-199"},
                    payload_hash="UNSIGNED-PAYLOAD")
    assert r.status == 206 and r.body == data[100:200], r
    assert r.headers.get("x-amz-rdma-reply") == "501", r
    # errors keep their meaning: a missing key is a 404, another user's bucket 403
    r = token_get(srv, b, "missing", token=token)
    assert r.status == 404 and r.error_code() == "NoSuchKey", r
    r = token_get(srv, b, "obj", token=token, user=USERS[1])
    assert r.status == 403 and r.error_code() == "AccessDenied", r


def test_foreign_token_upload_part_declined(rdma_server):
    srv = rdma_server
    b = _mk_bucket(srv)
    r = raw_request(srv, "POST", f"/{b}/mp", query=[("uploads", None)])
    upload_id = r.xml().find("{http://s3.amazonaws.com/doc/2006-03-01/}UploadId").text
    r = raw_request(srv, "PUT", f"/{b}/mp", query=[("partNumber", "1"), ("uploadId", upload_id)],
                    headers={"x-amz-rdma-token": CUOBJ_DC,
                             "x-amz-decoded-content-length": "4096"},
                    payload_hash="UNSIGNED-PAYLOAD")
    assert r.status == 501 and r.headers.get("x-amz-rdma-reply") == "501", r
