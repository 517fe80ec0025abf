"""Slow and greedy HTTP clients cannot take the server away from others.

libmicrohttpd's idle timeout restarts with every byte, so on its own a client trickling a
request holds a connection (and its thread) for ever. s3rdmad closes a connection whose
request head is not complete within http.head_timeout, or whose body arrives slower than
http.min_body_rate; it caps connections per client address (http.max_connections_per_ip)
and polls with poll(), not select(), so more than 1024 descriptors work.

The settings are given through S3RDMA_* variables, so a server that does not know them
still starts and the tests show what it does with such clients.
"""
import http.client
import resource
import socket
import threading
import time

import pytest

from s3r_itest import (USERS, clean_env, raw_request, recv_http_response, sign_headers,
                       uri_encode)


def _closed_within(sock, seconds, trickle=None, every=1.0):
    """Waits up to `seconds` for the server to close sock (EOF or reset), sending one byte of
    `trickle` every `every` seconds meanwhile. Returns the seconds it took, or None if the
    connection was still open. Data the server sends is read and dropped."""
    t0 = time.monotonic()
    next_send = t0 + every
    pos = 0
    while True:
        now = time.monotonic()
        if now - t0 >= seconds:
            return None
        sock.settimeout(max(0.01, min(next_send, t0 + seconds) - now))
        try:
            if not sock.recv(65536):
                return time.monotonic() - t0
        except socket.timeout:
            pass
        except (ConnectionResetError, BrokenPipeError):
            return time.monotonic() - t0
        if trickle is not None and time.monotonic() >= next_send:
            next_send += every
            try:
                sock.sendall(trickle[pos % len(trickle):pos % len(trickle) + 1])
            except (ConnectionResetError, BrokenPipeError):
                return time.monotonic() - t0
            pos += 1


def _connect(srv, source="127.0.0.1", timeout=5):
    return socket.create_connection(("127.0.0.1", srv.port), timeout=timeout,
                                    source_address=(source, 0))


def _stats_from(srv, source):
    """The stats page, signed (it answers configured users only), sent from source."""
    import json
    r = raw_request(srv, "GET", "/_s3rdma/stats", source=source, timeout=30)
    return r.status, json.loads(r.body) if r.status == 200 else r.body


@pytest.mark.parametrize("keepalive", [False, True], ids=["first-request", "keep-alive"])
def test_slowloris_head_is_closed_at_the_head_deadline(make_server, keepalive):
    """A request head trickled one byte a second is cut at http.head_timeout (2 s here),
    on a fresh connection (deadline from accept) and on a kept-alive one (deadline from the
    first byte of the next request)."""
    srv = make_server(env=clean_env({"S3RDMA_HTTP_HEAD_TIMEOUT": "2"}))
    s = _connect(srv)
    try:
        if keepalive:
            s.sendall(b"GET /_s3rdma/stats HTTP/1.1\r\nHost: x\r\n\r\n")
            status, _ = recv_http_response(s, timeout=10)
            assert status == 403  # anonymous: answered, and the connection kept alive
            time.sleep(3)  # idle between requests is the idle timeout's business, not the head's
        s.sendall(b"GET /_s3rdma/stats HTTP/1.1\r\nHost: x\r\n")
        took = _closed_within(s, 12, trickle=b"X-Slow: " + b"a" * 64, every=1.0)
    finally:
        s.close()
    assert took is not None, "a connection trickling its request head was still open after 12 s"
    status, js = _stats_from(srv, "127.0.0.1")
    assert status == 200 and js["http_closed_slow_head"] >= 1, js


def test_idle_keepalive_outlives_the_head_deadline(make_server):
    """The head deadline does not shorten idle keep-alive: a connection silent for longer than
    it between two requests still serves the second one."""
    srv = make_server(env=clean_env({"S3RDMA_HTTP_HEAD_TIMEOUT": "1"}))
    conn = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=10)
    try:
        socks = []
        for _ in range(2):
            conn.request("GET", "/_s3rdma/stats")  # anonymous: 403, kept alive
            resp = conn.getresponse()
            resp.read()
            assert resp.status == 403
            socks.append(conn.sock)
            time.sleep(2.5)
        assert socks[0] is socks[1], "the client had to reconnect"
    finally:
        conn.close()


def _signed_put_head(srv, bucket, key, length):
    path = "/" + uri_encode(f"{bucket}/{key}", encode_slash=False)
    headers = {"Host": srv.host, "Content-Length": str(length)}
    sign_headers("PUT", path, [], headers, "UNSIGNED-PAYLOAD", USERS[0][0], USERS[0][1])
    head = f"PUT {path} HTTP/1.1\r\n" + "".join(f"{k}: {v}\r\n" for k, v in headers.items())
    return (head + "\r\n").encode()


def test_slow_body_is_closed_below_the_min_rate(make_server, make_client):
    """A PUT whose body trickles at ~2 B/s (min rate 1 KiB/s over 2 s windows) is cut, and
    nothing is stored."""
    srv = make_server(env=clean_env({"S3RDMA_HTTP_MIN_BODY_RATE": "1KiB",
                                     "S3RDMA_HTTP_BODY_RATE_WINDOW": "2"}))
    s3 = make_client(srv=srv)
    s3.create_bucket(Bucket="slow")
    s = _connect(srv)
    try:
        s.sendall(_signed_put_head(srv, "slow", "trickled", 100000))
        took = _closed_within(s, 12, trickle=b"z" * 100, every=0.5)
    finally:
        s.close()
    assert took is not None, "a body trickling at 2 B/s was still being received after 12 s"
    with pytest.raises(Exception) as ei:
        s3.head_object(Bucket="slow", Key="trickled")
    assert "404" in str(ei.value)
    status, js = _stats_from(srv, "127.0.0.1")
    assert status == 200 and js["http_closed_slow_body"] >= 1, js


def test_body_above_the_min_rate_is_stored(make_server, make_client):
    """A body sent in pauses but above the minimum rate, for longer than one window, is
    stored (the rate is averaged, pauses are fine)."""
    srv = make_server(env=clean_env({"S3RDMA_HTTP_MIN_BODY_RATE": "1KiB",
                                     "S3RDMA_HTTP_BODY_RATE_WINDOW": "1"}))
    s3 = make_client(srv=srv)
    s3.create_bucket(Bucket="steady")
    body = bytes(range(256)) * 48  # 12 KiB in 6 pieces over 3 s: 4 KiB/s
    s = _connect(srv)
    try:
        s.sendall(_signed_put_head(srv, "steady", "paced", len(body)))
        for i in range(0, len(body), 2048):
            time.sleep(0.5)
            s.sendall(body[i:i + 2048])
        status, raw = recv_http_response(s, timeout=15)
    finally:
        s.close()
    assert status == 200, raw
    assert s3.get_object(Bucket="steady", Key="paced")["Body"].read() == body


def test_per_ip_connection_limit(make_server):
    """With http.max_connections_per_ip 4, a fifth connection from the same address is closed
    unanswered, while other addresses are served and a freed slot can be used again."""
    srv = make_server(env=clean_env({"S3RDMA_HTTP_MAX_CONNECTIONS_PER_IP": "4"}))
    held = []
    try:
        for _ in range(4):
            s = _connect(srv, "127.0.0.3")
            s.sendall(b"GET /_s3rdma/stats HTTP/1.1\r\nHost: x\r\n")  # half a head, held open
            held.append(s)
        time.sleep(0.3)
        extra = _connect(srv, "127.0.0.3")
        try:
            try:
                extra.sendall(b"GET /_s3rdma/stats HTTP/1.1\r\nHost: x\r\n\r\n")
            except (ConnectionResetError, BrokenPipeError):
                pass
            status, raw = recv_http_response(extra, timeout=5)
        finally:
            extra.close()
        assert status is None, f"a 5th connection from one address was answered: {raw[:200]!r}"

        status, js = _stats_from(srv, "127.0.0.2")
        assert status == 200, js
        r = raw_request(srv, "GET", "/", timeout=10)  # signed, from 127.0.0.1
        assert r.status == 200, r

        held.pop().close()
        deadline = time.monotonic() + 10
        while True:  # the server notices the close and frees the slot
            try:
                status, js = _stats_from(srv, "127.0.0.3")
                break
            except (OSError, http.client.HTTPException):
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)
        assert status == 200
    finally:
        for s in held:
            s.close()


def test_many_trickling_connections_do_not_lock_out_others(make_server, make_client):
    """1100 connections (55 from each of 20 addresses, under the default per-address limit)
    trickle request heads; a signed request from yet another address is still answered, and
    the server holds every one of the 1100 (more than 1024 descriptors)."""
    n_addr, per_addr = 20, 55
    want = n_addr * per_addr
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < want + 200:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, want + 1000), hard))
    srv = make_server(env=clean_env({"S3RDMA_HTTP_HEAD_TIMEOUT": "120"}))
    s3 = make_client(srv=srv, read_timeout=60)
    socks = []
    stop = threading.Event()

    def trickle():
        while not stop.wait(1.0):
            for s in list(socks):
                try:
                    s.send(b"a")
                except OSError:
                    pass

    t = threading.Thread(target=trickle, daemon=True)
    try:
        for i in range(want):
            try:
                s = _connect(srv, f"127.0.0.{10 + i % n_addr}", timeout=10)
                s.setblocking(False)
                s.send(b"GET /_s3rdma/stats HTTP/1.1\r\nHost: x\r\nX-Slow: ")
            except OSError as e:
                pytest.fail(f"connection {i} failed: {e!r}")
            socks.append(s)
        t.start()
        time.sleep(1.5)
        s3.create_bucket(Bucket="busy")
        s3.put_object(Bucket="busy", Key="k", Body=b"still here")
        assert s3.get_object(Bucket="busy", Key="k")["Body"].read() == b"still here"
        status, js = _stats_from(srv, "127.0.0.2")
        assert status == 200
        assert js["http_connections"] >= want, js
    finally:
        stop.set()
        if t.is_alive():
            t.join(5)
        for s in socks:
            s.close()


def _answered(srv, source):
    """Whether a connection from source gets an answer while the caller holds others."""
    s = _connect(srv, source)
    try:
        try:
            s.sendall(b"GET /_s3rdma/stats HTTP/1.1\r\nHost: x\r\n\r\n")
        except (ConnectionResetError, BrokenPipeError):
            return False
        status, _ = recv_http_response(s, timeout=5)
        return status is not None  # anonymous: 403 is an answer
    finally:
        s.close()


@pytest.mark.parametrize("how", ["file", "flag"])
def test_http_settings_from_file_and_flag(make_server, how):
    """http.max_connections_per_ip from the YAML http: section, and the flag over it."""
    srv = make_server(config_extra="http:\n  max_connections_per_ip: 1\n",
                      extra_args=["--http-max-connections-per-ip", "2"] if how == "flag" else [])
    allowed = 1 if how == "file" else 2
    held = []
    try:
        for _ in range(allowed):
            held.append(_connect(srv, "127.0.0.4"))
            held[-1].sendall(b"GET / HTTP/1.1\r\n")
        time.sleep(0.3)
        assert not _answered(srv, "127.0.0.4")
        held.pop().close()
        deadline = time.monotonic() + 10
        while not _answered(srv, "127.0.0.4"):
            assert time.monotonic() < deadline, "the freed slot was never reusable"
            time.sleep(0.1)
    finally:
        for s in held:
            s.close()
