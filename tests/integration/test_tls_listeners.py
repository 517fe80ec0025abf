"""The listeners: HTTPS (tls.cert/tls.key/tls.listen) driven by boto3, awscli and libs3rdma
with certificate verification on, TLS 1.2+ only, certificate reload on SIGHUP (new
connections get the new certificate, an open keep-alive connection keeps working, a bad
file keeps the old one), `listen: off`, the `:PORT` and `[v6]:PORT` forms and the URLs the
server prints, the x-s3rdma-rdma-endpoint advertisement (and libs3rdma finding the session
port by it), rdma.required, and `--version` of every binary (docs/operations.md
"Listeners and TLS")."""
import http.client
import json
import os
import re
import shutil
import signal
import socket
import ssl
import subprocess
import time
from pathlib import Path

import boto3
import botocore.config
import pytest
from botocore.exceptions import SSLError

from s3r_itest import (BINARY, REGION, USERS, Server, ServerStartError, clean_env, free_port,
                       new_bucket_name, raw_request, write_config)

BUILD = Path(os.environ.get("S3RDMA_BUILD", Path(BINARY).parent))
DRIVER = BUILD / "tests" / "s3r_driver"


# --------------------------------------------------------------------------
# Certificates (openssl CLI)
# --------------------------------------------------------------------------

def make_cert(d, name, cn):
    """A self-signed P-256 certificate for 127.0.0.1, ::1 and localhost: (cert, key) paths."""
    cert, key = d / f"{name}.crt", d / f"{name}.key"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                    "ec_paramgen_curve:P-256", "-nodes", "-days", "2", "-subj", f"/CN={cn}",
                    "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1,IP:::1",
                    "-keyout", str(key), "-out", str(cert)],
                   check=True, capture_output=True, timeout=60)
    return cert, key


@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    """Two certificates (CN first / second) and a CA bundle trusting both."""
    d = tmp_path_factory.mktemp("certs")
    a = make_cert(d, "first", "s3rdma-first")
    b = make_cert(d, "second", "s3rdma-second")
    bundle = d / "bundle.pem"
    bundle.write_bytes(a[0].read_bytes() + b[0].read_bytes())
    return {"first": a, "second": b, "bundle": bundle}


# --------------------------------------------------------------------------
# A server with an HTTPS listener
# --------------------------------------------------------------------------

class TlsServer(Server):
    """s3rdmad with HTTPS on tls_port; ready once its HTTPS listener answers."""

    def __init__(self, tmp, name, cert, key, extra_args=(), env_extra=None, rdma=False,
                 tls_host="127.0.0.1"):
        tmp = Path(tmp)
        data = tmp / f"{name}-data"
        data.mkdir(parents=True, exist_ok=True)
        cfg = tmp / f"{name}.yaml"
        write_config(cfg)
        self.tls_host, self.tls_port = tls_host, free_port()
        self.cert, self.key = Path(cert), Path(key)
        # The files the server reads: copies, so a test can replace them.
        self.cert_file, self.key_file = tmp / f"{name}-server.crt", tmp / f"{name}-server.key"
        shutil.copy(cert, self.cert_file)
        shutil.copy(key, self.key_file)
        env = clean_env({"S3RDMA_TLS_CERT": str(self.cert_file),
                         "S3RDMA_TLS_KEY": str(self.key_file),
                         "S3RDMA_TLS_LISTEN": f"[{tls_host}]:{self.tls_port}" if ":" in tls_host
                         else f"{tls_host}:{self.tls_port}", **(env_extra or {})})
        super().__init__(data, cfg, tmp / f"{name}.log", durability="relaxed",
                         extra_args=extra_args, env=env, rdma_enabled=rdma)

    @property
    def https_endpoint(self):
        return f"https://127.0.0.1:{self.tls_port}"

    def _wait_ready(self, timeout):
        deadline = time.monotonic() + timeout
        ctx = ssl.create_default_context()
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE  # readiness only; the tests verify
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise ServerStartError(f"s3rdmad exited early with {self.proc.returncode}")
            try:
                conn = http.client.HTTPSConnection(self.tls_host, self.tls_port, timeout=2,
                                                   context=ctx)
                conn.request("GET", "/_s3rdma/stats")
                conn.getresponse().read()
                conn.close()
                return
            except (OSError, http.client.HTTPException):
                time.sleep(0.05)
        raise ServerStartError("s3rdmad's HTTPS listener did not become ready in time")


@pytest.fixture
def tls_server(tmp_path, certs):
    servers = []

    def factory(name="tls", cert="first", **kw):
        c, k = certs[cert]
        srv = TlsServer(tmp_path, name, c, k, **kw)
        servers.append(srv)
        srv.start()
        return srv

    yield factory
    for srv in servers:
        if srv.proc is not None and srv.proc.returncode is None:
            alive = srv.alive()
            rc = srv.stop()
            assert alive and rc == 0, f"s3rdmad exit code {rc}\n{srv.log_tail()}"


def boto(endpoint, verify):
    return boto3.session.Session().client(
        "s3", endpoint_url=endpoint, aws_access_key_id=USERS[0][0],
        aws_secret_access_key=USERS[0][1], region_name=REGION, verify=verify,
        config=botocore.config.Config(signature_version="s3v4", retries={"max_attempts": 1},
                                      connect_timeout=5, read_timeout=30,
                                      s3={"addressing_style": "path"}))


def peer_cn(sock):
    """The CN of the certificate an ssl socket's server presented."""
    cert = sock.getpeercert()
    return dict(x[0] for x in cert["subject"])["commonName"]


def tls_context(cafile):
    ctx = ssl.create_default_context(cafile=str(cafile))
    return ctx


def signed_get(conn, path="/_s3rdma/stats", host="127.0.0.1"):
    """A signed GET on an open http.client connection (keep-alive); (status, headers)."""
    from s3r_itest import EMPTY_SHA256, sign_headers
    headers = {"Host": host}
    sign_headers("GET", path, [], headers, EMPTY_SHA256, USERS[0][0], USERS[0][1])
    conn.request("GET", path, headers=headers)
    r = conn.getresponse()
    r.read()
    return r.status, {k.lower(): v for k, v in r.getheaders()}


# --------------------------------------------------------------------------
# HTTPS with boto3, awscli and libs3rdma, verification on
# --------------------------------------------------------------------------

def test_https_boto3_verified(tls_server, certs):
    srv = tls_server()
    s3 = boto(srv.https_endpoint, str(certs["first"][0]))
    b = new_bucket_name("tls")
    s3.create_bucket(Bucket=b)
    body = os.urandom(1024 * 1024 + 17)
    s3.put_object(Bucket=b, Key="k", Body=body)
    assert s3.get_object(Bucket=b, Key="k")["Body"].read() == body
    # Small objects (one buffer with the head over TLS), ranges, HEAD.
    small = os.urandom(4096)
    s3.put_object(Bucket=b, Key="small", Body=small)
    assert s3.get_object(Bucket=b, Key="small")["Body"].read() == small
    assert s3.get_object(Bucket=b, Key="small", Range="bytes=10-99")["Body"].read() == small[10:100]
    assert s3.get_object(Bucket=b, Key="k", Range="bytes=1000-")["Body"].read() == body[1000:]
    assert s3.head_object(Bucket=b, Key="small")["ContentLength"] == 4096
    # The same server over plain HTTP sees the object: one request handling, two listeners.
    plain = boto(srv.endpoint, None)
    assert plain.head_object(Bucket=b, Key="k")["ContentLength"] == len(body)
    # Verification is really on: a CA that did not sign the server's certificate fails.
    with pytest.raises(SSLError):
        boto(srv.https_endpoint, str(certs["second"][0])).list_buckets()


def test_https_awscli_verified(tls_server, certs, tmp_path):
    srv = tls_server()
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}  # AWS_CA_BUNDLE too
    env.update(AWS_ACCESS_KEY_ID=USERS[0][0], AWS_SECRET_ACCESS_KEY=USERS[0][1],
               AWS_DEFAULT_REGION=REGION, HOME=str(tmp_path), AWS_PAGER="",
               AWS_CONFIG_FILE=str(tmp_path / "none"), AWS_EC2_METADATA_DISABLED="true",
               PATH="/usr/bin:/bin")
    aws = ["/usr/bin/aws", "--endpoint-url", srv.https_endpoint, "--no-cli-pager"]
    b = new_bucket_name("tlscli")
    f = tmp_path / "f.bin"
    f.write_bytes(os.urandom(300_000))

    def run(args, ca, check=True):
        p = subprocess.run(aws + ["--ca-bundle", str(ca)] + args, env=env, capture_output=True,
                           text=True, timeout=120, stdin=subprocess.DEVNULL)
        assert not check or p.returncode == 0, p
        return p

    ca = certs["first"][0]
    run(["s3", "mb", f"s3://{b}"], ca)
    run(["s3", "cp", str(f), f"s3://{b}/f.bin"], ca)
    run(["s3", "cp", f"s3://{b}/f.bin", str(tmp_path / "back.bin")], ca)
    assert (tmp_path / "back.bin").read_bytes() == f.read_bytes()
    assert "f.bin" in run(["s3", "ls", f"s3://{b}/"], ca).stdout
    p = run(["s3", "ls"], certs["second"][0], check=False)
    assert p.returncode != 0 and "SSL" in p.stderr, p


def test_secure_transport_condition_and_awscli_policy(tls_server, certs, tmp_path):
    """aws:SecureTransport is true on the HTTPS listener only: a policy that denies
    insecure requests refuses the plain listener and serves HTTPS. The policy goes in and
    out through awscli's s3api, as a user would set it."""
    srv = tls_server()
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env.update(AWS_ACCESS_KEY_ID=USERS[0][0], AWS_SECRET_ACCESS_KEY=USERS[0][1],
               AWS_DEFAULT_REGION=REGION, HOME=str(tmp_path), AWS_PAGER="",
               AWS_CONFIG_FILE=str(tmp_path / "none"), AWS_EC2_METADATA_DISABLED="true",
               PATH="/usr/bin:/bin")
    ca = str(certs["first"][0])
    tls, plain = boto(srv.https_endpoint, ca), boto(srv.endpoint, None)
    b = new_bucket_name("sectr")
    tls.create_bucket(Bucket=b)
    tls.put_object(Bucket=b, Key="k", Body=b"v")
    doc = {"Version": "2012-10-17", "Statement": [
        {"Sid": "tls-only", "Effect": "Deny", "Principal": "*", "Action": "s3:GetObject",
         "Resource": f"arn:aws:s3:::{b}/*", "Condition": {"Bool": {"aws:SecureTransport": "false"}}}]}
    aws = ["/usr/bin/aws", "--endpoint-url", srv.https_endpoint, "--no-cli-pager", "--ca-bundle",
           ca, "s3api"]

    def run(*args):
        p = subprocess.run(aws + list(args), env=env, capture_output=True, text=True,
                           timeout=120, stdin=subprocess.DEVNULL)
        return p

    p = run("put-bucket-policy", "--bucket", b, "--policy", json.dumps(doc))
    assert p.returncode == 0, p
    p = run("get-bucket-policy", "--bucket", b)
    assert p.returncode == 0 and json.loads(json.loads(p.stdout)["Policy"]) == doc, p
    p = run("put-bucket-policy", "--bucket", b, "--policy", "{")
    assert p.returncode != 0 and "MalformedPolicy" in p.stderr, p
    assert tls.get_object(Bucket=b, Key="k")["Body"].read() == b"v"
    with pytest.raises(botocore.exceptions.ClientError) as e:
        plain.get_object(Bucket=b, Key="k")
    assert e.value.response["Error"]["Code"] == "AccessDenied"
    assert run("delete-bucket-policy", "--bucket", b).returncode == 0
    assert plain.get_object(Bucket=b, Key="k")["Body"].read() == b"v"
    tls.delete_object(Bucket=b, Key="k")
    tls.delete_bucket(Bucket=b)


def test_https_s3rdma_cli_verified(tls_server, certs, tmp_path):
    """Our CLI over https://, its CA from --ca-bundle or AWS_CA_BUNDLE; a wrong CA fails."""
    srv = tls_server()
    cli = str(BUILD / "s3rdma")
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env.update(AWS_ACCESS_KEY_ID=USERS[0][0], AWS_SECRET_ACCESS_KEY=USERS[0][1],
               HOME=str(tmp_path), AWS_ENDPOINT_URL=srv.https_endpoint)
    b = new_bucket_name("tlsown")
    f = tmp_path / "f.bin"
    f.write_bytes(os.urandom(100_000))

    def run(args, extra_env=None):
        return subprocess.run([cli, "-q", "--transport", "http"] + args,
                              env=dict(env, **(extra_env or {})), capture_output=True, text=True,
                              timeout=60, stdin=subprocess.DEVNULL)

    ca, wrong = str(certs["first"][0]), str(certs["second"][0])
    assert run(["--ca-bundle", ca, "mb", f"s3://{b}"]).returncode == 0
    p = run(["cp", str(f), f"s3://{b}/f.bin"], {"AWS_CA_BUNDLE": ca})
    assert p.returncode == 0, p
    assert run(["--ca-bundle", ca, "get", f"s3://{b}/f.bin", str(tmp_path / "back")]
               ).returncode == 0
    assert (tmp_path / "back").read_bytes() == f.read_bytes()
    p = run(["--ca-bundle", wrong, "ls", f"s3://{b}/"])
    assert p.returncode != 0 and p.stderr, p


def test_token_and_native_over_https_find_the_session_port(tls_server, certs):
    """libs3rdma over https:// with verification (ca_bundle), no rdma_endpoint configured:
    it learns the session port from x-s3rdma-rdma-endpoint and moves the bytes by RDMA."""
    srv = tls_server(rdma=True)
    env = clean_env({"S3R_ENDPOINT": srv.https_endpoint, "S3R_CA_BUNDLE": str(certs["bundle"]),
                     "S3R_ACCESS_KEY": USERS[0][0], "S3R_SECRET_KEY": USERS[0][1]})
    b = new_bucket_name("tlstok")
    boto(srv.https_endpoint, str(certs["bundle"])).create_bucket(Bucket=b)
    for transport, counter in (("token", "token_ops"), ("native", "native_ops")):
        p = subprocess.run([str(DRIVER), "--transport", transport, "--no-fallback", "roundtrip",
                            b, "4096", "2097152"], env=env, capture_output=True, text=True,
                           timeout=120)
        assert p.returncode == 0, (p.stdout, p.stderr)
        fields = dict(kv.split("=", 1) for kv in
                      re.search(r"^RESULT (.*)$", p.stdout, re.M).group(1).split())
        assert int(fields[counter]) > 0 and fields["fallbacks"] == "0", fields
    # Without a CA the library refuses the server (verification on).
    env.pop("S3R_CA_BUNDLE")
    p = subprocess.run([str(DRIVER), "--transport", "http", "roundtrip", b, "10"], env=env,
                       capture_output=True, text=True, timeout=60)
    assert p.returncode != 0


def test_tls_versions(tls_server, certs):
    srv = tls_server()
    for top, expected in ((ssl.TLSVersion.TLSv1_2, "TLSv1.2"), (None, "TLSv1.3")):
        ctx = tls_context(certs["first"][0])
        if top:
            ctx.maximum_version = top
        with socket.create_connection(("127.0.0.1", srv.tls_port), timeout=5) as raw:
            with ctx.wrap_socket(raw, server_hostname="127.0.0.1") as s:
                assert s.version() == expected
    # TLS 1.1 offered alone (the client's own floor lowered): the server refuses it.
    ctx = tls_context(certs["first"][0])
    ctx.set_ciphers("DEFAULT:@SECLEVEL=0")
    ctx.minimum_version = ssl.TLSVersion.TLSv1
    ctx.maximum_version = ssl.TLSVersion.TLSv1_1
    with socket.create_connection(("127.0.0.1", srv.tls_port), timeout=5) as raw:
        with pytest.raises((ssl.SSLError, ConnectionResetError)):
            ctx.wrap_socket(raw, server_hostname="127.0.0.1")


# --------------------------------------------------------------------------
# Certificate reload on SIGHUP
# --------------------------------------------------------------------------

def wait_log(srv, text, timeout=10):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if srv.log_text().count(text):
            return
        time.sleep(0.05)
    raise AssertionError(f"'{text}' not logged\n{srv.log_tail(30)}")


def test_sighup_reloads_the_certificate_keeping_open_connections(tls_server, certs):
    srv = tls_server(cert="first")
    ctx = tls_context(certs["bundle"])
    old = http.client.HTTPSConnection("127.0.0.1", srv.tls_port, timeout=10, context=ctx)
    assert signed_get(old)[0] == 200
    old_sock = old.sock
    assert peer_cn(old_sock) == "s3rdma-first"

    # New files in place, then SIGHUP.
    shutil.copy(certs["second"][0], srv.cert_file)
    shutil.copy(certs["second"][1], srv.key_file)
    srv.proc.send_signal(signal.SIGHUP)
    wait_log(srv, "tls: reloaded")

    new = http.client.HTTPSConnection("127.0.0.1", srv.tls_port, timeout=10, context=ctx)
    assert signed_get(new)[0] == 200
    assert peer_cn(new.sock) == "s3rdma-second"
    # The connection opened before the reload is the same one and still serves.
    for _ in range(3):
        assert signed_get(old)[0] == 200
    assert old.sock is old_sock and peer_cn(old.sock) == "s3rdma-first"
    old.close()
    new.close()

    # A key that does not match the certificate: the reload is refused, the current
    # certificate stays, and the server keeps serving.
    shutil.copy(certs["first"][1], srv.key_file)
    srv.proc.send_signal(signal.SIGHUP)
    wait_log(srv, "does not belong to the certificate")
    wait_log(srv, "still serving the certificate loaded before")
    again = http.client.HTTPSConnection("127.0.0.1", srv.tls_port, timeout=10, context=ctx)
    assert signed_get(again)[0] == 200
    assert peer_cn(again.sock) == "s3rdma-second"
    again.close()
    assert srv.alive()


def test_bad_certificate_files_refuse_to_start(tmp_path, certs):
    junk = tmp_path / "junk.pem"
    junk.write_text("not a certificate\n")
    for cert, key, message in ((junk, certs["first"][1], "no usable PEM certificate"),
                               (certs["first"][0], junk, "no usable PEM private key"),
                               (certs["first"][0], certs["second"][1], "does not belong"),
                               (tmp_path / "absent.pem", certs["first"][1], "cannot read")):
        r = subprocess.run([BINARY, "--data", str(tmp_path / "d"), "--listen",
                            f"127.0.0.1:{free_port()}", "--rdma-enabled", "false",
                            "--tls-cert", str(cert), "--tls-key", str(key), "--tls-listen",
                            f"127.0.0.1:{free_port()}"], env=clean_env(), capture_output=True,
                           text=True, timeout=20)
        assert r.returncode == 1 and message in r.stdout + r.stderr, r


# --------------------------------------------------------------------------
# Listener forms, HTTP off, printed URLs
# --------------------------------------------------------------------------

def banner(srv):
    return srv.log_text()


def test_http_off_serves_https_only(tls_server, certs):
    srv = tls_server(extra_args=["--listen", "off"])
    assert "plain HTTP off" in banner(srv)
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", srv.port), timeout=2).close()
    s3 = boto(srv.https_endpoint, str(certs["first"][0]))
    s3.list_buckets()
    # The try-it line points at the HTTPS endpoint.
    assert f"--endpoint-url https://127.0.0.1:{srv.tls_port}" in banner(srv)


def test_port_only_listens_on_every_address(make_server):
    srv = make_server(extra_args=["--listen", ":{port}"], start=False)
    srv.start()  # --listen 127.0.0.1:PORT first; ":PORT" after it wins
    port = srv.port
    assert f"endpoint:    http://127.0.0.1:{port} (listening on every address)" in banner(srv)
    for host, family in (("127.0.0.1", socket.AF_INET), ("::1", socket.AF_INET6)):
        conn = http.client.HTTPConnection(host, port, timeout=5)
        assert signed_get(conn, host=f"{host}:{port}" if family == socket.AF_INET
                          else f"[{host}]:{port}")[0] == 200
        conn.close()


def test_v6_listeners_and_urls(tls_server, certs):
    http_port = free_port()
    srv = tls_server(extra_args=["--listen", f"[::1]:{http_port}"], tls_host="::1")
    tls_port = srv.tls_port
    text = banner(srv)
    assert f"endpoint:    http://[::1]:{http_port}\n" in text, text
    assert f"https:       https://[::1]:{tls_port} " in text, text
    s3 = boto(f"https://[::1]:{tls_port}", str(certs["first"][0]))
    s3.list_buckets()
    s3 = boto(f"http://[::1]:{http_port}", None)
    s3.list_buckets()


# --------------------------------------------------------------------------
# The RDMA session port: required, advertised
# --------------------------------------------------------------------------

def test_rdma_port_that_cannot_open_stops_the_start(make_server):
    blocker = socket.socket()
    blocker.bind(("127.0.0.1", 0))
    blocker.listen(1)
    taken = blocker.getsockname()[1]
    try:
        srv = make_server(rdma_enabled=True, extra_args=["--rdma-listen", f"127.0.0.1:{taken}"],
                          start=False)
        with pytest.raises(ServerStartError):
            srv.start()
        assert srv.proc.returncode == 1
        assert f"the RDMA session port 127.0.0.1:{taken} could not be opened" in srv.log_text()
        srv.proc = None  # already gone

        srv = make_server(name="optional", rdma_enabled=True,
                          extra_args=["--rdma-listen", f"127.0.0.1:{taken}",
                                      "--rdma-required", "false"])
        assert "rdma.required: false" in srv.log_text()
        r = raw_request(srv, "GET", "/_s3rdma/stats")
        assert r.status == 200 and json.loads(r.body)["rdma_enabled"] is False
        assert "x-s3rdma-rdma-endpoint" not in r.headers
    finally:
        blocker.close()


def test_rdma_endpoint_is_advertised(make_server):
    rport = free_port()
    srv = make_server(rdma_enabled=True, extra_args=["--rdma-listen", f"127.0.0.1:{rport}"])
    r = raw_request(srv, "GET", "/_s3rdma/stats")
    assert r.headers.get("x-s3rdma-rdma-endpoint") == f"127.0.0.1:{rport}"
    # Anonymous requests are not told.
    r = raw_request(srv, "GET", "/", user=None)
    assert r.status == 403 and "x-s3rdma-rdma-endpoint" not in r.headers

    # Listening on every address: the address the client reached, per connection.
    for attempt in range(5):  # a port free_port() gave may be taken meanwhile: try others
        rport2, hport = free_port(), free_port()
        srv2 = make_server(name=f"any{attempt}", rdma_enabled=True,
                           extra_args=["--listen", f":{hport}", "--rdma-listen", f":{rport2}"],
                           start=False)
        try:
            srv2.start(port=hport)  # --listen 127.0.0.1:PORT first; ":PORT" after it wins
            break
        except ServerStartError:
            srv2.proc = None
            if "Address already in use" not in srv2.log_text() or attempt == 4:
                raise
    adv_bucket = new_bucket_name("adv")
    boto(f"http://127.0.0.1:{hport}", None).create_bucket(Bucket=adv_bucket)
    for host, shown in (("127.0.0.1", f"127.0.0.1:{rport2}"), ("::1", f"[::1]:{rport2}")):
        conn = http.client.HTTPConnection(host, hport, timeout=5)
        status, headers = signed_get(conn, host=f"{shown.rsplit(':', 1)[0]}:{hport}")
        conn.close()
        assert status == 200 and headers.get("x-s3rdma-rdma-endpoint") == shown, headers
        # What was named works: libs3rdma, given only the HTTP endpoint, moves bytes by RDMA.
        url_host = host if ":" not in host else f"[{host}]"
        env = clean_env({"S3R_ENDPOINT": f"http://{url_host}:{hport}",
                         "S3R_ACCESS_KEY": USERS[0][0], "S3R_SECRET_KEY": USERS[0][1]})
        p = subprocess.run([str(DRIVER), "--transport", "token", "--no-fallback", "roundtrip",
                            adv_bucket, "65536"], env=env, capture_output=True,
                           text=True, timeout=120)
        assert p.returncode == 0 and " token_ops=0 " not in p.stdout, (p.stdout, p.stderr)

    # rdma.advertise names what a client should use (behind NAT, say) verbatim.
    srv3 = make_server(name="adv", rdma_enabled=True,
                       extra_args=["--rdma-advertise", "rdma.example.net:19100"])
    r = raw_request(srv3, "GET", "/_s3rdma/stats")
    assert r.headers.get("x-s3rdma-rdma-endpoint") == "rdma.example.net:19100"


# --------------------------------------------------------------------------
# --version
# --------------------------------------------------------------------------

def test_every_binary_prints_one_version():
    env = dict(os.environ, PKG_CONFIG_PATH=str(BUILD / "pkgconfig"))
    pc = subprocess.run(["pkg-config", "--modversion", "s3rdma"], env=env, capture_output=True,
                        text=True, check=True).stdout.strip()
    header = (Path(__file__).resolve().parents[2] / "include" / "s3rdma.h").read_text()
    parts = [re.search(rf"#define S3RDMA_VERSION_{p}\s+(\d+)", header).group(1)
             for p in ("MAJOR", "MINOR", "PATCH")]
    assert pc == ".".join(parts)
    for name in ("s3rdmad", "s3rdma", "s3rdma-bench"):
        binary = BINARY if name == "s3rdmad" else str(BUILD / name)
        r = subprocess.run([binary, "--version"], capture_output=True, text=True, timeout=10,
                           env=clean_env())
        assert r.returncode == 0 and r.stdout == f"{name} {pc}\n", (name, r)
