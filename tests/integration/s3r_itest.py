"""Helpers shared by the s3rdmad integration tests.

- Server: starts/stops a real s3rdmad process on a free port with a temp data dir.
- A small, explicit SigV4 signer (header auth, presigned query auth, aws-chunked
  signed streaming) so tests can craft requests botocore never sends: skewed
  dates, tampered chunk signatures, trailers, virtual-host Host headers.
  test_s3_sigv4_selfcheck.py checks it against botocore's own signer.
- raw_request(): send one signed (or unsigned) request with http.client.
"""
import base64
import datetime
import hashlib
import hmac
import http.client
import json
import os
import signal
import socket
import struct
import subprocess
import time
import urllib.parse
import uuid
import xml.etree.ElementTree as ET
import zlib
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
BINARY = os.environ.get("S3RDMAD", str(REPO_ROOT / "build" / "s3rdmad"))
REGION = "us-east-1"

USERS = [
    ("AKTESTUSER1", "secret1secret1secret1"),
    ("AKTESTUSER2", "secret2secret2secret2"),
]

EMPTY_SHA256 = hashlib.sha256(b"").hexdigest()
S3_NS = "{http://s3.amazonaws.com/doc/2006-03-01/}"


# --------------------------------------------------------------------------
# A Ceph cluster for the RADOS backend (scripts/ceph-dev)
# --------------------------------------------------------------------------

CEPH_DEV = REPO_ROOT / "scripts" / "ceph-dev"
# S3RDMA_TEST_BACKEND=rados: the session `server` runs on a test cluster.
TEST_BACKEND = os.environ.get("S3RDMA_TEST_BACKEND", "local")


def ceph_missing():
    """The Ceph binaries scripts/ceph-dev needs that are not installed (a list)."""
    import shutil
    return [b for b in ("ceph-mon", "ceph-osd", "ceph", "monmaptool") if not shutil.which(b)]


class CephCluster:
    """A throwaway single-node cluster (scripts/ceph-dev) with pools for gateways."""

    def __init__(self, path, pools=("s3rdma",)):
        self.path = Path(path)
        self.pools = list(pools)
        self.conf = None

    def start(self):
        out = subprocess.run([str(CEPH_DEV), "start", str(self.path), *self.pools],
                             capture_output=True, text=True, timeout=300)
        if out.returncode != 0:
            raise RuntimeError(f"ceph-dev start failed:\n{out.stdout}\n{out.stderr}")
        self.conf = out.stdout.strip().splitlines()[-1]
        return self

    def stop(self):
        subprocess.run([str(CEPH_DEV), "stop", str(self.path)], capture_output=True, timeout=120)

    def gateway_args(self, pool="s3rdma", gc_grace=10, index_shards=4):
        """s3rdmad flags that put its store on this cluster. A short GC grace: the OSD
        keeps everything in RAM, and no test's reader lives that long. Buckets get a
        sharded index (4 shards) unless told otherwise, so every S3 test of the RADOS
        pass goes through the sharded path (1: one index object, as before shards)."""
        return ["--storage-backend", "rados", "--storage-rados-conf", self.conf,
                "--storage-rados-pool", pool, "--storage-rados-gc-grace", str(gc_grace),
                "--storage-rados-index-shards", str(index_shards)]

    def rados(self, *args, pool="s3rdma", input=None):
        """Runs the rados CLI on pool; returns its stdout (bytes)."""
        out = subprocess.run(["rados", "-c", self.conf, "-p", pool, *args], input=input,
                             capture_output=True, timeout=60)
        if out.returncode != 0:
            raise RuntimeError(f"rados {' '.join(args)}: {out.stderr.decode(errors='replace')}")
        return out.stdout

    def create_pool(self, pool):
        """A new pool of size 1 (for a test that counts what is in its pool)."""
        for args in (["osd", "pool", "create", pool, "8", "8"],
                     ["osd", "pool", "set", pool, "size", "1", "--yes-i-really-mean-it"]):
            out = subprocess.run(["ceph", "-c", self.conf, *args], capture_output=True,
                                 text=True, timeout=60)
            if out.returncode != 0:
                raise RuntimeError(f"ceph {' '.join(args)}: {out.stderr}")
        deadline = time.monotonic() + 60
        while True:  # writable once its placement groups are active
            try:
                self.rados("put", ".probe", "-", pool=pool, input=b"x")
                self.rados("rm", ".probe", pool=pool)
                return pool
            except RuntimeError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.3)

    def osd_pid(self):
        return int((self.path / "run" / "osd.0.pid").read_text())

    def pieces(self, pool="s3rdma"):
        """Names of the data pieces in pool (<32 hex>.<8 hex>)."""
        import re
        names = self.rados("ls", pool=pool).decode().split()
        return sorted(n for n in names if re.fullmatch(r"[0-9a-f]{32}\.[0-9a-f]{8}", n))


# --------------------------------------------------------------------------
# Server process
# --------------------------------------------------------------------------

def free_port():
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def clean_env(extra=None):
    """os.environ without the server's, the client library's and UCX's settings, plus extra:
    what a test hands an s3rdmad or an RDMA client so the caller's shell cannot steer it."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("S3RDMA_", "UCX_", "RDMA_", "SPT_", "S3R_"))}
    env.update(extra or {})
    return env


def write_config(path, users=USERS, durability="relaxed", extra=""):
    lines = [f"durability: {durability}", f"region: {REGION}"]
    if users:
        lines.append("users:")
        # (access key, secret key[, display name or None[, e-mail address]])
        for ak, sk, *more in users:
            lines.append(f"  - access_key: {ak}")
            lines.append(f"    secret_key: {sk}")
            for field, value in zip(["display_name", "email"], more):
                if value is not None:
                    lines.append(f"    {field}: {value}")
    lines.append("rdma:")
    lines.append("  enabled: false")
    Path(path).write_text("\n".join(lines) + "\n" + extra)


class ServerStartError(Exception):
    pass


class Server:
    """One s3rdmad process. Its stdout+stderr go to log_path."""

    # Live servers, so the pytest hook can attach their logs to failed tests.
    live = []

    def __init__(self, data_dir, config_path, log_path, durability=None,
                 extra_args=(), env=None, rdma_enabled=False):
        self.data_dir = Path(data_dir)
        self.config_path = Path(config_path)
        self.log_path = Path(log_path)
        self.durability = durability
        self.extra_args = list(extra_args)
        self.env = env
        self.rdma_enabled = rdma_enabled
        self.proc = None
        self.port = None
        self._log = None

    @property
    def endpoint(self):
        return f"http://127.0.0.1:{self.port}"

    @property
    def host(self):
        return f"127.0.0.1:{self.port}"

    def start(self, timeout=30.0, port=None):
        if not os.path.exists(BINARY):
            raise ServerStartError(f"server binary not found: {BINARY} (set S3RDMAD)")
        last_err = None
        for attempt in range(3):
            self.port = port if (port and attempt == 0) else free_port()
            args = [BINARY, "--data", str(self.data_dir), "--listen", f"127.0.0.1:{self.port}",
                    "--config", str(self.config_path), "--region", REGION,
                    "--rdma-enabled", "true" if self.rdma_enabled else "false",
                    "--log-level", "info"]
            if self.rdma_enabled and not any(a == "--rdma-listen" for a in self.extra_args):
                args += ["--rdma-listen", f"127.0.0.1:{free_port()}"]
            if self.durability:
                args += ["--durability", self.durability]
            # "{port}" in an extra argument is this attempt's port (a listener the
            # test names itself, e.g. ":{port}", moves with the retry too).
            args += [a.replace("{port}", str(self.port)) for a in self.extra_args]
            if self.env is None:
                env = {k: v for k, v in os.environ.items() if not k.startswith("S3RDMA_")}
            else:
                env = dict(self.env)
            self._log = open(self.log_path, "ab")
            self._log.write(("\n=== start: " + " ".join(args) + "\n").encode())
            self._log.flush()
            self.proc = subprocess.Popen(args, stdout=self._log, stderr=subprocess.STDOUT,
                                         stdin=subprocess.DEVNULL, env=env)
            Server.live.append(self)
            try:
                self._wait_ready(timeout)
                return self
            except ServerStartError as e:
                last_err = e
                if self.proc.poll() is None:
                    self.proc.kill()
                    self.proc.wait()
                self._forget()
                if "in use" not in self.log_text().lower():
                    break
        raise ServerStartError(f"{last_err}\n--- server log ---\n{self.log_tail()}")

    def _wait_ready(self, timeout):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise ServerStartError(f"s3rdmad exited early with {self.proc.returncode}")
            try:
                # Any HTTP answer means it is serving (unsigned, this one is a 403).
                conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=2)
                conn.request("GET", "/_s3rdma/stats")
                resp = conn.getresponse()
                resp.read()
                conn.close()
                return
            except (OSError, http.client.HTTPException):
                time.sleep(0.05)
        raise ServerStartError("s3rdmad did not become ready in time")

    def _forget(self):
        if self in Server.live:
            Server.live.remove(self)
        if self._log:
            self._log.close()
            self._log = None

    def stop(self, sig=signal.SIGTERM, timeout=30.0):
        """Signals the server and returns its exit code (None if it had to be killed)."""
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                self._forget()
                return None
        rc = self.proc.returncode
        self._forget()
        return rc

    def kill9(self):
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()
        self._forget()

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def log_text(self):
        try:
            return self.log_path.read_text(errors="replace")
        except OSError:
            return ""

    def log_tail(self, n=200):
        return "\n".join(self.log_text().splitlines()[-n:])

    def stats(self, user=USERS[0]):
        """GET /_s3rdma/stats, signed as user (the page answers configured users only)."""
        r = raw_request(self, "GET", "/_s3rdma/stats", user=user, timeout=5)
        return r.status, r.body


# --------------------------------------------------------------------------
# SigV4
# --------------------------------------------------------------------------

def sha256_hex(data):
    return hashlib.sha256(data).hexdigest()


def _hmac(key, msg):
    return hmac.new(key, msg.encode() if isinstance(msg, str) else msg, hashlib.sha256).digest()


def signing_key(secret, date, region=REGION, service="s3"):
    k = _hmac(("AWS4" + secret).encode(), date)
    k = _hmac(k, region)
    k = _hmac(k, service)
    return _hmac(k, "aws4_request")


def amz_now(offset_s=0):
    t = datetime.datetime.utcnow() + datetime.timedelta(seconds=offset_s)
    return t.strftime("%Y%m%dT%H%M%SZ")


def uri_encode(s, encode_slash=True):
    safe = "-_.~" if encode_slash else "-_.~/"
    return urllib.parse.quote(s, safe=safe)


def canonical_query(query):
    """query: list of (name, value) already *decoded*; value None means 'name' only."""
    items = []
    for k, v in query:
        items.append((uri_encode(k), uri_encode("" if v is None else v)))
    items.sort()
    return "&".join(f"{k}={v}" for k, v in items)


def query_string(query):
    parts = []
    for k, v in query:
        if v is None:
            parts.append(uri_encode(k))
        else:
            parts.append(f"{uri_encode(k)}={uri_encode(v)}")
    return "&".join(parts)


def canonical_request(method, path, query, headers, signed, payload_hash):
    lower = {k.lower(): " ".join(str(v).strip().split()) for k, v in headers.items()}
    canon_headers = "".join(f"{h}:{lower[h]}\n" for h in signed)
    return "\n".join([method, path, canonical_query(query), canon_headers, ";".join(signed),
                      payload_hash])


def sign_headers(method, path, query, headers, payload_hash, access, secret,
                 amz_date=None, region=REGION, signed_extra=()):
    """Adds x-amz-date, x-amz-content-sha256 and Authorization to headers (in place).
    path: the URI-encoded path as sent. Signs host, x-amz-*, content-type, content-md5 and
    any header named in signed_extra. Returns (signature, scope, signing key)."""
    amz_date = amz_date or amz_now()
    headers["x-amz-date"] = amz_date
    headers["x-amz-content-sha256"] = payload_hash
    signed = sorted({k.lower() for k in headers
                     if k.lower() in ("host", "content-type", "content-md5")
                     or k.lower().startswith("x-amz-")
                     or k.lower() in {s.lower() for s in signed_extra}})
    creq = canonical_request(method, path, query, headers, signed, payload_hash)
    date = amz_date[:8]
    scope = f"{date}/{region}/s3/aws4_request"
    sts = "\n".join(["AWS4-HMAC-SHA256", amz_date, scope, sha256_hex(creq.encode())])
    key = signing_key(secret, date, region)
    sig = hmac.new(key, sts.encode(), hashlib.sha256).hexdigest()
    headers["Authorization"] = (f"AWS4-HMAC-SHA256 Credential={access}/{scope}, "
                                f"SignedHeaders={';'.join(signed)}, Signature={sig}")
    return sig, scope, key


def presign_url(host, method, path, access, secret, expires=3600, amz_date=None,
                extra_query=(), region=REGION, signed_headers=None):
    """Returns a presigned http URL (path must already be URI-encoded). signed_headers: a
    dict of headers (besides host) the URL is signed over; the caller must send them."""
    amz_date = amz_date or amz_now()
    date = amz_date[:8]
    scope = f"{date}/{region}/s3/aws4_request"
    headers = {"host": host, **{k.lower(): v for k, v in (signed_headers or {}).items()}}
    signed = sorted(headers)
    query = list(extra_query) + [
        ("X-Amz-Algorithm", "AWS4-HMAC-SHA256"),
        ("X-Amz-Credential", f"{access}/{scope}"),
        ("X-Amz-Date", amz_date),
        ("X-Amz-Expires", str(expires)),
        ("X-Amz-SignedHeaders", ";".join(signed)),
    ]
    creq = canonical_request(method, path, query, headers, signed, "UNSIGNED-PAYLOAD")
    sts = "\n".join(["AWS4-HMAC-SHA256", amz_date, scope, sha256_hex(creq.encode())])
    sig = hmac.new(signing_key(secret, date, region), sts.encode(), hashlib.sha256).hexdigest()
    query.append(("X-Amz-Signature", sig))
    return f"http://{host}{path}?{query_string(query)}"


# --------------------------------------------------------------------------
# aws-chunked bodies
# --------------------------------------------------------------------------

def chunk_signature(key, amz_date, scope, prev_sig, data):
    sts = "\n".join(["AWS4-HMAC-SHA256-PAYLOAD", amz_date, scope, prev_sig, EMPTY_SHA256,
                     sha256_hex(data)])
    return hmac.new(key, sts.encode(), hashlib.sha256).hexdigest()


def signed_chunked_body(chunks, key, amz_date, scope, seed_sig, tamper_chunk=None):
    """chunks: list of bytes (the final empty chunk is added). tamper_chunk: index of a
    chunk whose signature is replaced by a wrong one."""
    out = bytearray()
    prev = seed_sig
    for i, data in enumerate(list(chunks) + [b""]):
        sig = chunk_signature(key, amz_date, scope, prev, data)
        prev = sig
        if tamper_chunk == i:
            sig = ("0" if sig[0] != "0" else "1") + sig[1:]
        out += f"{len(data):x};chunk-signature={sig}\r\n".encode() + data + b"\r\n"
    return bytes(out)


def signed_chunked_trailer_body(chunks, key, amz_date, scope, seed_sig, trailers,
                                tamper_trailer=False):
    """STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER: signed chunks, then the trailer headers
    and x-amz-trailer-signature over "name:value\\n" lines chained to the final chunk's."""
    out = bytearray()
    prev = seed_sig
    for data in list(chunks) + [b""]:
        sig = chunk_signature(key, amz_date, scope, prev, data)
        prev = sig
        out += f"{len(data):x};chunk-signature={sig}\r\n".encode() + data
        if data:
            out += b"\r\n"
    canon = "".join(f"{n}:{v}\n" for n, v in trailers)
    sts = "\n".join(["AWS4-HMAC-SHA256-TRAILER", amz_date, scope, prev, sha256_hex(canon.encode())])
    tsig = hmac.new(key, sts.encode(), hashlib.sha256).hexdigest()
    if tamper_trailer:
        tsig = ("0" if tsig[0] != "0" else "1") + tsig[1:]
    for n, v in trailers:
        out += f"{n}:{v}\r\n".encode()
    out += f"x-amz-trailer-signature:{tsig}\r\n\r\n".encode()
    return bytes(out)


def signed_chunked_length(sizes):
    n = 0
    for s in list(sizes) + [0]:
        n += len(f"{s:x}") + len(";chunk-signature=") + 64 + 2 + s + 2
    return n


def unsigned_trailer_body(chunks, trailers):
    out = bytearray()
    for data in chunks:
        out += f"{len(data):x}\r\n".encode() + data + b"\r\n"
    out += b"0\r\n"
    for name, value in trailers:
        out += f"{name}:{value}\r\n".encode()
    out += b"\r\n"
    return bytes(out)


def crc32_b64(data):
    return base64.b64encode(struct.pack(">I", zlib.crc32(data) & 0xFFFFFFFF)).decode()


def _reflected_crc(poly, width):
    """A table-driven reflected CRC of `width` bits (init and xorout all
    ones), `poly` given reflected: CRC32C and CRC-64/NVME as S3 names them."""
    mask = (1 << width) - 1
    table = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ poly if c & 1 else c >> 1
        table.append(c)

    def crc(data):
        c = mask
        for b in data:
            c = table[(c ^ b) & 0xFF] ^ (c >> 8)
        return c ^ mask
    return crc


crc32c = _reflected_crc(0x82F63B78, 32)
assert crc32c(b"123456789") == 0xE3069283  # the CRC catalogue's check value


def crc32c_b64(data):
    return base64.b64encode(struct.pack(">I", crc32c(data))).decode()


def sha256_b64(data):
    return base64.b64encode(hashlib.sha256(data).digest()).decode()


def sha1_b64(data):
    return base64.b64encode(hashlib.sha1(data).digest()).decode()


# CRC-64/NVME: polynomial 0xAD93D23594C93659 (reflected 0x9A6C9329AC4BC9B5).
crc64nvme = _reflected_crc(0x9A6C9329AC4BC9B5, 64)
assert crc64nvme(b"123456789") == 0xAE8B14860A799888  # AWS's documented check value


def crc64nvme_b64(data):
    return base64.b64encode(struct.pack(">Q", crc64nvme(data))).decode()


def md5_b64(data):
    return base64.b64encode(hashlib.md5(data).digest()).decode()


# The checksums current AWS SDKs send: algorithm -> (boto3 response field,
# base64 function, header / trailer name).
CHECKSUMS = {"CRC32": ("ChecksumCRC32", crc32_b64, "x-amz-checksum-crc32"),
             "CRC32C": ("ChecksumCRC32C", crc32c_b64, "x-amz-checksum-crc32c"),
             "SHA256": ("ChecksumSHA256", sha256_b64, "x-amz-checksum-sha256"),
             "SHA1": ("ChecksumSHA1", sha1_b64, "x-amz-checksum-sha1"),
             "CRC64NVME": ("ChecksumCRC64NVME", crc64nvme_b64, "x-amz-checksum-crc64nvme")}


# --------------------------------------------------------------------------
# Raw requests
# --------------------------------------------------------------------------

class RawResponse:
    def __init__(self, status, reason, headers, body):
        self.status = status
        self.reason = reason
        self.headers = headers  # lower-case name -> value
        self.body = body

    def xml(self):
        return ET.fromstring(self.body)

    def error_code(self):
        try:
            root = ET.fromstring(self.body)
        except ET.ParseError:
            return None
        el = root.find("Code")
        if el is None:
            el = root.find(S3_NS + "Code")
        return el.text if el is not None else None

    def __repr__(self):
        return f"<RawResponse {self.status} {self.headers} {self.body[:500]!r}>"


def raw_request(server, method, path, query=(), headers=None, body=b"", user=USERS[0],
                sign=True, payload_hash=None, amz_date=None, host=None, timeout=30,
                signed_extra=(), source=None):
    """Sends one request to server. path is the decoded path ('/bucket/key'); it is
    URI-encoded here. query: list of (name, value-or-None). user=None or sign=False:
    anonymous. payload_hash: default sha256 of body. source: the local address to send
    from (any of 127/8)."""
    headers = dict(headers or {})
    host = host or server.host
    headers.setdefault("Host", host)
    enc_path = uri_encode(path, encode_slash=False)
    if sign and user is not None:
        if payload_hash is None:
            payload_hash = sha256_hex(body)
        sign_headers(method, enc_path, list(query), headers, payload_hash, user[0], user[1],
                     amz_date=amz_date, signed_extra=signed_extra)
    url = enc_path
    qs = query_string(list(query))
    if qs:
        url += "?" + qs
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=timeout,
                                      source_address=(source, 0) if source else None)
    try:
        conn.putrequest(method, url, skip_host=True, skip_accept_encoding=True)
        if "Content-Length" not in headers and "content-length" not in headers and (
                body or method in ("PUT", "POST")):
            headers["Content-Length"] = str(len(body))
        for k, v in headers.items():
            conn.putheader(k, v)
        conn.endheaders()
        if body:
            conn.send(body)
        resp = conn.getresponse()
        data = resp.read()
        return RawResponse(resp.status, resp.reason,
                           {k.lower(): v for k, v in resp.getheaders()}, data)
    finally:
        conn.close()


def error_fields(body):
    root = ET.fromstring(body)
    return root.tag, {child.tag: (child.text or "") for child in root}


def _recv_until(sock, buf, done):
    """Appends what sock sends to buf until done(buf), EOF, a timeout or a reset."""
    try:
        while not done(buf):
            d = sock.recv(65536)
            if not d:
                break
            buf += d
    except (socket.timeout, ConnectionResetError):
        pass
    return buf


def recv_http_response(sock, timeout=10.0):
    """Reads one HTTP response head (+ body by Content-Length) from a raw socket.
    Returns (status or None if the connection closed first, raw bytes)."""
    sock.settimeout(timeout)
    buf = _recv_until(sock, b"", lambda b: b"\r\n\r\n" in b)
    if not buf.startswith(b"HTTP/1."):
        return None, buf
    head, _, rest = buf.partition(b"\r\n\r\n")
    status = int(head.split(b" ")[1])
    clen = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            clen = int(value.strip())
    rest = _recv_until(sock, rest, lambda b: len(b) >= clen)
    return status, head + b"\r\n\r\n" + rest


def stats_json(server, user=USERS[0]):
    status, body = server.stats(user)
    return status, json.loads(body)


# --------------------------------------------------------------------------
# An s3rdmad with its RDMA session port (the client-library tests)
# --------------------------------------------------------------------------

# The two UCX transport settings every RDMA test runs under.
UCX_ENVS = {"ucx-default": {}, "ucx-tcp": {"UCX_TLS": "tcp"}}


class RdmaServer:
    """An s3rdmad (relaxed durability unless told) with its RDMA session port on a free
    port, run under ucx_env; env_extra is added to the server's environment only."""

    def __init__(self, tmp, name, ucx_env, rdma=True, env_extra=None, extra_args=(),
                 users=USERS, durability="relaxed"):
        tmp = Path(tmp)
        d = tmp / f"{name}-data"
        d.mkdir(parents=True, exist_ok=True)
        cfg = tmp / f"{name}.yaml"
        write_config(cfg, users=users)
        self.rdma_port = free_port()
        self.ucx_env = ucx_env
        self.srv = Server(d, cfg, tmp / f"{name}.log", durability=durability,
                          extra_args=["--rdma-listen", f"127.0.0.1:{self.rdma_port}",
                                      *extra_args],
                          env=clean_env({**ucx_env, **(env_extra or {})}), rdma_enabled=rdma)

    def start(self):
        self.srv.start()
        return self

    def stop(self):
        """Stops the server; it must have been alive and must exit 0."""
        alive = self.srv.alive()
        rc = self.srv.stop()
        assert alive, f"s3rdmad died\n{self.srv.log_tail()}"
        assert rc == 0, f"s3rdmad exit code {rc}\n{self.srv.log_tail()}"

    @property
    def endpoint(self):
        return self.srv.endpoint

    @property
    def port(self):
        return self.srv.port

    @property
    def rdma_endpoint(self):
        return f"127.0.0.1:{self.rdma_port}"

    def client_env(self, user=USERS[0]):
        """The environment libs3rdma test programs read endpoints and keys from."""
        return clean_env({**self.ucx_env, "S3R_ENDPOINT": self.endpoint,
                          "S3R_RDMA_ENDPOINT": self.rdma_endpoint,
                          "S3R_ACCESS_KEY": user[0], "S3R_SECRET_KEY": user[1]})

    def sessions(self):
        status, js = stats_json(self.srv)
        assert status == 200
        return js["rdma_sessions"]


# --------------------------------------------------------------------------
# boto3 helpers
# --------------------------------------------------------------------------

def boto_client(server, user=USERS[0], addressing="path", **cfg):
    """A boto3 S3 client for server (anything with .endpoint and .port), SigV4, no retries
    (botocore's "max_attempts" counts retries after the first attempt: total_max_attempts is
    the one that means every request is sent once, so a 5xx reaches the test)."""
    import boto3
    import botocore.config
    params = dict(signature_version="s3v4", region_name=REGION,
                  retries={"total_max_attempts": 1, "mode": "standard"},
                  connect_timeout=5, read_timeout=60,
                  s3={"addressing_style": addressing})
    params.update(cfg)
    endpoint = server.endpoint if addressing == "path" else f"http://localhost:{server.port}"
    return boto3.session.Session().client(
        "s3", endpoint_url=endpoint, aws_access_key_id=user[0], aws_secret_access_key=user[1],
        region_name=REGION, config=botocore.config.Config(**params))


def native_call(srv, op, bucket, key, args=(), user=USERS[0]):
    """One native request through tests/s3r_native_call (the opcode op of
    docs/protocol.md §4.2; key "-" for none; args as that tool takes them:
    "?name=value" query parameters, "Header=value", "@file" for a body).
    Returns {"status", "headers" (lower-case names), "code" (None without an
    error), "body" (b"" without one)}."""
    tool = Path(os.environ.get("S3RDMA_BUILD", REPO_ROOT / "build")) / "tests" / "s3r_native_call"
    p = subprocess.run([tool, "127.0.0.1", str(srv.rdma_port), *user, str(op), bucket, key,
                        *args], env=srv.client_env(), capture_output=True, text=True,
                       timeout=120)
    assert p.returncode == 0, (p.stdout, p.stderr)
    out = {"headers": {}, "code": None, "body": b""}
    for line in p.stdout.splitlines():
        word, _, rest = line.partition(" ")
        if word == "status":
            out["status"] = int(rest)
        elif word == "header":
            name, _, value = rest.partition(": ")
            out["headers"][name.lower()] = value
        elif word == "code":
            out["code"] = rest
        elif word == "body":
            out["body"] = bytes.fromhex(rest)
    return out


def walk_listing(s3, bucket, pause=None, **kw):
    """Every key and common prefix of a ListObjectsV2, a page at a time, following
    continuation tokens; pause() runs between pages. Returns (keys, prefixes)."""
    got, prefixes, token = [], [], None
    while True:
        args = dict(kw, **({"ContinuationToken": token} if token else {}))
        r = s3.list_objects_v2(Bucket=bucket, **args)
        got += [o["Key"] for o in r.get("Contents", [])]
        prefixes += [p["Prefix"] for p in r.get("CommonPrefixes", [])]
        if not r["IsTruncated"]:
            return got, prefixes
        token = r["NextContinuationToken"]
        if pause:
            pause()


def empty_bucket(client, name):
    """Deletes every object of bucket name the way third-party cleanup does (Terraform's
    force_destroy, mc rm --versions, s3-tests): ListObjectVersions pages, DeleteObjects with
    each VersionId. Uploads left behind go with the bucket (DeleteBucket aborts them)."""
    for page in client.get_paginator("list_object_versions").paginate(Bucket=name):
        objs = [{"Key": v["Key"], "VersionId": v["VersionId"]}
                for v in page.get("Versions", []) + page.get("DeleteMarkers", [])]
        if objs:
            r = client.delete_objects(Bucket=name, Delete={"Objects": objs, "Quiet": True})
            assert not r.get("Errors"), r["Errors"]


def new_bucket_name(prefix="it"):
    return f"{prefix}-{uuid.uuid4().hex[:20]}"


def client_error(excinfo):
    """(code, http status) of a botocore ClientError."""
    e = excinfo.value
    return e.response.get("Error", {}).get("Code"), e.response["ResponseMetadata"]["HTTPStatusCode"]


def assert_error(excinfo, code, status):
    got = client_error(excinfo)
    assert got == (code, status), f"expected {code} {status}, got {got}: {excinfo.value.response}"
