"""Observability: GET /metrics (Prometheus text format, parsed by prometheus_client's
parser), /health/live and /health/ready, and the access log in both formats
(docs/operations.md, "Observability").

Counters move after the reply is sent (the request is counted and logged when it is
released), so checks wait for them with a deadline instead of reading once.
"""
import http.client
import json
import os
import re
import subprocess
import time
import uuid

import pytest
from prometheus_client.parser import text_string_to_metric_families

from s3r_itest import REPO_ROOT, USERS, boto_client, clean_env, free_port, raw_request

DRIVER = REPO_ROOT / "build" / "tests" / "s3r_driver"
TOKEN = "metrics-token-" + "x" * 24


def wait_until(check, what, timeout=15.0):
    """Calls check() until it returns a true value (returned) or timeout passes."""
    deadline = time.monotonic() + timeout
    while True:
        v = check()
        if v:
            return v
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def get(server, path, headers=None, method="GET"):
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    try:
        conn.request(method, path, headers=headers or {})
        r = conn.getresponse()
        return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read()
    finally:
        conn.close()


def scrape(server, token=TOKEN):
    """The /metrics page parsed: {(name, frozenset(labels)): value}."""
    status, headers, body = get(server, "/metrics", {"Authorization": f"Bearer {token}"})
    assert status == 200, body
    assert headers["content-type"].startswith("text/plain; version=0.0.4")
    out = {}
    for fam in text_string_to_metric_families(body.decode()):
        for s in fam.samples:
            out[(s.name, frozenset(s.labels.items()))] = s.value
    return out


def value(m, name, **labels):
    return m.get((name, frozenset(labels.items())), 0)


def metrics_server(make_server, rdma=False, extra=()):
    cfg = f"metrics:\n  enabled: true\n  token: {TOKEN}\n"
    args = list(extra)
    if rdma:
        args += ["--rdma-listen", f"127.0.0.1:{free_port()}"]
    return make_server(config_extra=cfg, rdma_enabled=rdma, extra_args=args,
                       env=clean_env() if rdma else None)


def run_driver(srv, transport, *args):
    rdma = srv.extra_args[srv.extra_args.index("--rdma-listen") + 1]
    env = clean_env({"S3R_ENDPOINT": srv.endpoint, "S3R_RDMA_ENDPOINT": rdma,
                     "S3R_ACCESS_KEY": USERS[0][0], "S3R_SECRET_KEY": USERS[0][1]})
    p = subprocess.run([str(DRIVER), "--transport", transport, "--no-fallback", *map(str, args)],
                       env=env, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, f"driver {transport} {args}: {p.stderr}\n{p.stdout}"


# ---------------------------------------------------------------------------
# /metrics
# ---------------------------------------------------------------------------

def test_metrics_move_with_each_transport(make_server, tmp_path):
    """HTTP (boto3), the token path and native (the libs3rdma driver): each moves its
    own requests, bytes and latency series; errors, sessions and storage move too."""
    assert DRIVER.exists(), f"{DRIVER} not built"
    log = tmp_path / "access.log"
    srv = metrics_server(make_server, rdma=True, extra=["--log-access", str(log)])
    s3 = boto_client(srv)
    bucket = "obs-" + uuid.uuid4().hex[:8]
    s3.create_bucket(Bucket=bucket)
    m0 = scrape(srv)
    assert value(m0, "s3rdma_storage_objects") == 0
    assert value(m0, "s3rdma_rdma_enabled") == 1

    s3.put_object(Bucket=bucket, Key="h", Body=b"a" * 4096)
    assert s3.get_object(Bucket=bucket, Key="h")["Body"].read() == b"a" * 4096
    with pytest.raises(s3.exceptions.NoSuchKey):
        s3.get_object(Bucket=bucket, Key="missing")
    # roundtrip = PUT, GET, HEAD, DELETE of 4096 bytes over the one transport
    run_driver(srv, "token", "roundtrip", bucket, 4096)
    run_driver(srv, "native", "roundtrip", bucket, 4096)

    def moved():
        m = scrape(srv)
        ok = all(value(m, "s3rdma_requests_total", op=op, transport=t, status="2xx") >= 1
                 for op in ("PutObject", "GetObject") for t in ("http", "token", "native"))
        return m if ok and value(m, "s3rdma_errors_total", code="NoSuchKey") >= 1 else None

    m = wait_until(moved, "requests of every transport in /metrics")
    for t in ("http", "token", "native"):
        assert value(m, "s3rdma_received_bytes_total", transport=t) >= 4096, t
        assert value(m, "s3rdma_sent_bytes_total", transport=t) >= 4096, t
        assert value(m, "s3rdma_received_bytes_total", transport=t) > \
            value(m0, "s3rdma_received_bytes_total", transport=t)
    assert value(m, "s3rdma_requests_total", op="GetObject", transport="http",
                 status="4xx") >= 1
    assert value(m, "s3rdma_requests_total", op="HeadObject", transport="native",
                 status="2xx") >= 1
    assert value(m, "s3rdma_request_duration_seconds_count", op="GetObject") >= 4
    assert value(m, "s3rdma_request_duration_seconds_bucket", op="GetObject", le="+Inf") == \
        value(m, "s3rdma_request_duration_seconds_count", op="GetObject")
    assert value(m, "s3rdma_rdma_sessions_opened_total") >= 2
    assert value(m, "s3rdma_token_declines_total", reason="session") == 0
    # the driver deleted its objects; "h" remains
    assert value(m, "s3rdma_storage_objects") == 1
    assert value(m, "s3rdma_storage_bytes") == 4096
    # The RDMA pools at rest: every family present, nothing held.
    for name in ("s3rdma_rdma_staging_chunks_busy", "s3rdma_rdma_staging_chunks_quarantined",
                 "s3rdma_rdma_transfers_stalled_total", "s3rdma_native_replies_sending",
                 "s3rdma_native_replies_sending_bytes"):
        assert (name, frozenset()) in m, name
        assert value(m, name) == 0, name

    # Native and token requests are in the access log too.
    def logged():
        lines = [json.loads(x) for x in log.read_text().splitlines()]
        kinds = {(x["op"], x["transport"]) for x in lines if x["status"] < 300}
        want = {(op, t) for op in ("PutObject", "GetObject") for t in ("http", "token", "native")}
        return lines if want <= kinds else None
    lines = wait_until(logged, "every transport in the access log")
    native = [x for x in lines if x["transport"] == "native" and x["op"] == "GetObject"]
    assert native[0]["bytes_out"] == 4096 and native[0]["access_key"] == USERS[0][0]
    assert native[0]["remote"] != "-"


def test_metrics_token_decline_counted(make_server):
    """A token request on a server without RDMA is declined (501): counted by reason."""
    srv = metrics_server(make_server)
    s3 = boto_client(srv)
    s3.create_bucket(Bucket="dec")
    s3.put_object(Bucket="dec", Key="k", Body=b"x")
    r = raw_request(srv, "GET", "/dec/k", headers={"x-amz-rdma-token": "s3r1.bogus"},
                    payload_hash="UNSIGNED-PAYLOAD")
    assert r.status == 501
    r = raw_request(srv, "GET", "/dec/k", headers={"x-amz-rdma-token": "1:2:3:4:5"},
                    payload_hash="UNSIGNED-PAYLOAD")
    assert r.status == 200 and r.headers["x-amz-rdma-reply"] == "501"
    m = wait_until(lambda: (lambda m: m if value(m, "s3rdma_token_fallbacks_total") else None)(
        scrape(srv)), "the fallback counted")
    assert value(m, "s3rdma_token_declines_total", reason="disabled") == 1
    assert value(m, "s3rdma_token_declines_total", reason="foreign") == 1
    assert value(m, "s3rdma_token_fallbacks_total") == 1
    assert value(m, "s3rdma_errors_total", code="NotImplemented") == 1


def test_metrics_auth_modes(make_server):
    srv = metrics_server(make_server)
    assert get(srv, "/metrics", {"Authorization": f"Bearer {TOKEN}"})[0] == 200
    for bad in (None, f"Bearer {TOKEN}x", f"Bearer {TOKEN[:-1]}", f"bearer {TOKEN}", TOKEN,
                "Bearer "):
        status, _, body = get(srv, "/metrics", {"Authorization": bad} if bad else {})
        assert status == 403, (bad, body)
        assert b"<Code>AccessDenied</Code>" in body

    public = make_server(config_extra="metrics:\n  enabled: true\n  auth: public\n",
                         name="public")
    status, _, body = get(public, "/metrics")
    assert status == 200 and b"# TYPE s3rdma_requests_total counter" in body

    # Off (the default): /metrics is an ordinary S3 path, the bucket "metrics".
    off = make_server(name="off")
    status, _, body = get(off, "/metrics")
    assert status == 404 and b"<Code>NoSuchBucket</Code>" in body
    status, _, body = get(off, "/metrics", {"Authorization": f"Bearer {TOKEN}"})
    assert status in (400, 403) and b"# TYPE" not in body


@pytest.mark.parametrize("args, message", [
    (["--metrics-enabled", "true"], "metrics auth 'bearer' needs metrics.token"),
    (["--metrics-enabled", "yes"], "metrics.enabled must be true or false, not 'yes' (from --metrics-enabled)"),
    (["--metrics-auth", "basic"], "metrics.auth must be 'bearer' or 'public', not 'basic'"),
    (["--log-access-format", "xml"], "log.access_format must be 'json' or 'common', not 'xml'"),
])
def test_observability_config_errors(make_server, args, message):
    srv = make_server(extra_args=args, start=False)
    p = subprocess.run([os.environ.get("S3RDMAD", str(REPO_ROOT / "build" / "s3rdmad")),
                        "--data", str(srv.data_dir), "--config", str(srv.config_path),
                        "--listen", f"127.0.0.1:{free_port()}", *args],
                       capture_output=True, text=True, timeout=30, env=clean_env())
    assert p.returncode == 2 and message in p.stderr, p.stderr


# ---------------------------------------------------------------------------
# health
# ---------------------------------------------------------------------------

def test_health_live_and_ready(make_server):
    srv = make_server()
    for path in ("/health/live", "/health/ready"):
        status, headers, body = get(srv, path)
        assert (status, body) == (200, b"ok\n")
        assert headers["cache-control"] == "no-store"
        status, _, body = get(srv, path, method="HEAD")
        assert (status, body) == (200, b"")
    # Unauthenticated and tiny; other methods are S3's (bucket "health", key "live").
    status, _, body = get(srv, "/health/live", method="DELETE")
    assert status in (403, 404) and b"<Error>" in body
    # Virtual-host style: the path is a key of the bucket the Host names.
    assert get(srv, "/health/live", {"Host": f"nobucket.localhost:{srv.port}"})[0] == 404


def test_metrics_index_bytes_follow_the_index(make_server):
    """s3rdma_storage_index_bytes is what the index holds of its disk: it grows as
    records are written and, in fsync mode (LMDB writes data.mdb page by page, no
    sparse map), it is data.mdb's length."""
    srv = make_server(durability="fsync",
                      config_extra=f"metrics:\n  enabled: true\n  token: {TOKEN}\n")
    s3 = boto_client(srv)
    s3.create_bucket(Bucket="idx")
    page = os.sysconf("SC_PAGESIZE")
    data_mdb = srv.data_dir / ".s3rdma" / "index" / "data.mdb"
    before = value(scrape(srv), "s3rdma_storage_index_bytes")
    assert before > 0 and before % page == 0
    assert before == data_mdb.stat().st_size
    for i in range(64):  # 4 KiB inline records: two overflow pages each
        s3.put_object(Bucket="idx", Key=f"k{i:02d}", Body=os.urandom(4096))
    after = value(scrape(srv), "s3rdma_storage_index_bytes")
    assert after >= before + 64 * 4096
    assert after == data_mdb.stat().st_size


def test_health_ready_503_without_object_directory(make_server):
    """Ready needs the store: with its object directory gone it answers 503, live 200."""
    srv = make_server()
    objects = srv.data_dir / ".s3rdma" / "objects"
    for d in sorted(objects.rglob("*"), reverse=True):  # only empty shard directories
        d.rmdir()
    objects.rmdir()
    status, _, body = get(srv, "/health/ready")
    assert (status, body) == (503, b"not ready\n")
    assert get(srv, "/health/live")[0] == 200
    srv.kill9()


# ---------------------------------------------------------------------------
# the access log
# ---------------------------------------------------------------------------

ODD_KEY = "dir/a\nb\tc\x01d\"e\\f g\x7fh\u00e9"


def sample_requests(srv):
    """A sample of operations, errors among them, and a key with control characters.
    Returns {request id: (op, status, error code or None)}."""
    s3 = boto_client(srv)
    out = {}

    def rid(resp):
        return resp["ResponseMetadata"]["RequestId"]
    out[rid(s3.create_bucket(Bucket="logb"))] = ("CreateBucket", 200, None)
    out[rid(s3.put_object(Bucket="logb", Key=ODD_KEY, Body=b"z" * 100))] = \
        ("PutObject", 200, None)
    out[rid(s3.get_object(Bucket="logb", Key=ODD_KEY))] = ("GetObject", 200, None)
    out[rid(s3.list_objects_v2(Bucket="logb"))] = ("ListObjects", 200, None)
    try:
        s3.get_object(Bucket="logb", Key="nope")
    except s3.exceptions.NoSuchKey as e:
        out[e.response["ResponseMetadata"]["RequestId"]] = ("GetObject", 404, "NoSuchKey")
    try:
        s3.delete_bucket(Bucket="logb")
    except s3.exceptions.ClientError as e:
        out[e.response["ResponseMetadata"]["RequestId"]] = \
            ("DeleteBucket", 409, "BucketNotEmpty")
    out[rid(s3.delete_object(Bucket="logb", Key=ODD_KEY))] = ("DeleteObject", 204, None)
    r = raw_request(srv, "GET", "/logb/x", user=None)  # anonymous
    out[r.headers["x-amz-request-id"]] = ("GetObject", 403, "AccessDenied")
    return out


def logged_lines(log, want):
    """The log's lines once every request of want has its line (a line is written after
    the reply is sent, so it may trail the client's answer; other requests may be logged
    too, the server's start-up probe among them)."""
    def done():
        data = log.read_bytes() if log.exists() else b""
        if all(rid.encode() in data for rid in want):
            return data.split(b"\n")[:-1]
        return None
    return wait_until(done, "the access log lines")


def test_access_log_json(make_server, tmp_path):
    log = tmp_path / "access.json"
    srv = make_server(config_extra=f"log:\n  access: {log}\n  access_format: json\n")
    want = sample_requests(srv)
    lines = logged_lines(log, want)
    recs = {}
    for raw in lines:
        assert all(b >= 0x20 for b in raw), raw  # control characters escaped
        rec = json.loads(raw.decode("utf-8"))
        recs[rec["request_id"]] = rec
    for rid, (op, status, code) in want.items():
        rec = recs[rid]
        assert (rec["op"], rec["status"], rec["error"]) == (op, status, code), rec
        assert rec["transport"] == "http" and re.fullmatch(r"127\.0\.0\.1:\d+", rec["remote"])
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", rec["time"])
        assert isinstance(rec["duration_us"], int)
    put = next(r for r in recs.values() if r["op"] == "PutObject")
    assert (put["bucket"], put["key"], put["bytes_in"], put["bytes_out"]) == \
        ("logb", ODD_KEY, 100, 0)
    assert put["access_key"] == USERS[0][0] and put["method"] == "PUT"
    got = next(r for r in recs.values() if r["op"] == "GetObject" and r["status"] == 200)
    assert got["bytes_out"] == 100
    anon = [r for r in recs.values() if r["status"] == 403]
    assert anon[0]["access_key"] is None


def test_access_log_common(make_server, tmp_path):
    log = tmp_path / "access.log"
    srv = make_server(config_extra=f"log:\n  access: {log}\n  access_format: common\n")
    want = sample_requests(srv)
    line_re = re.compile(
        r'(?P<remote>127\.0\.0\.1:\d+) - (?P<ak>\S+) \[\d\d/\w{3}/\d{4}:\d\d:\d\d:\d\d\.\d{3} '
        r'\+0000\] "(?P<method>[A-Z]+) (?P<resource>[^"]*)" (?P<status>\d{3}) (?P<out>\d+) '
        r'(?P<op>\S+) (?P<in>\d+) (?P<dur>\d+) (?P<transport>http|token|native) '
        r'(?P<rid>[0-9A-F]{16}) (?P<error>\S+)')
    lines = logged_lines(log, want)
    recs = {}
    for raw in lines:
        assert all(b >= 0x20 for b in raw), raw
        m = line_re.fullmatch(raw.decode("utf-8"))
        assert m, raw
        recs[m["rid"]] = m
    for rid, (op, status, code) in want.items():
        m = recs[rid]
        assert (m["op"], int(m["status"]), m["error"]) == (op, status, code or "-")
    put = next(m for m in recs.values() if m["op"] == "PutObject")
    assert put["resource"] == r"/logb/dir/a\x0ab\x09c\x01d\x22e\x5cf g\x7fh" + "\u00e9"
    assert (put["ak"], put["in"], put["out"]) == (USERS[0][0], "100", "0")
    assert next(m for m in recs.values() if m["status"] == "403")["ak"] == "-"


def test_access_log_reopens_on_sighup(make_server, tmp_path):
    """logrotate moves the file away and sends SIGHUP: the lines go on in a new file at the
    configured path (before the signal, they still reach the moved one)."""
    import signal
    log = tmp_path / "access.log"
    srv = make_server(config_extra=f"log:\n  access: {log}\n  access_format: json\n")
    s3 = boto_client(srv)
    s3.list_buckets()
    wait_until(lambda: log.exists() and log.read_bytes().count(b"\n") >= 1, "the first line")
    moved = tmp_path / "access.log.1"
    log.rename(moved)
    s3.create_bucket(Bucket="rotated")
    wait_until(lambda: b'"CreateBucket"' in moved.read_bytes(), "a line in the moved file")
    srv.proc.send_signal(signal.SIGHUP)
    wait_until(lambda: log.exists(), "the reopened file")
    s3.head_bucket(Bucket="rotated")
    wait_until(lambda: b'"HeadBucket"' in log.read_bytes(), "a line in the new file")
    assert b'"HeadBucket"' not in moved.read_bytes()
