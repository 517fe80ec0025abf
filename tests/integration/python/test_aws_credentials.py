"""Credentials libs3rdma's s3r_aws_settings_load gets from elsewhere than the shared files'
keys, as the AWS CLI does: a profile's credential_process (a real script, run) and a
container's credentials endpoint (AWS_CONTAINER_CREDENTIALS_FULL_URI, a real HTTP server
of the test's own, with AWS_CONTAINER_AUTHORIZATION_TOKEN / _FILE); their place in the
chain; the clear errors for each way they go wrong; and a Client that signs with the keys
found, against a real s3rdmad. The CLI resolves through the same function (test_cli.py
covers its wiring)."""
import http.server
import json
import os
import stat
import threading

import pytest

import s3rdma
from s3r_itest import USERS

AK, SK = USERS[0]


@pytest.fixture
def aws(tmp_path, monkeypatch):
    """A clean AWS environment, HOME in tmp_path; returns a writer of ~/.aws/config."""
    for k in list(os.environ):
        if k.startswith("AWS_") or k.startswith("S3RDMA_") and k != "S3RDMA_BUILD":
            monkeypatch.delenv(k)
    monkeypatch.setenv("HOME", str(tmp_path))
    (tmp_path / ".aws").mkdir()

    def write(conf, credentials=None):
        (tmp_path / ".aws" / "config").write_text(conf)
        if credentials is not None:
            (tmp_path / ".aws" / "credentials").write_text(credentials)
    return write


def script(tmp_path, body, name="creds.sh"):
    """An executable shell script; returns its path."""
    p = tmp_path / name
    p.write_text("#!/bin/sh\n" + body)
    p.chmod(p.stat().st_mode | stat.S_IXUSR)
    return p


def process_doc(**kw):
    doc = {"Version": 1, "AccessKeyId": AK, "SecretAccessKey": SK}
    doc.update(kw)
    return json.dumps({k: v for k, v in doc.items() if v is not None})


@pytest.mark.parametrize("transport", ["http", "native"])
def test_credential_process_keys_sign_requests(aws, tmp_path, rsrv, rbucket, transport):
    """The script's keys (and session token) are the profile's; a Client signs with them
    (natively: opens its session with them); the arguments reach the script as the shell
    splits them."""
    out = tmp_path / "args"
    sh = script(tmp_path, f'printf "%s|" "$@" > {out}\n'
                f"cat <<'EOF'\n{process_doc(SessionToken='TOK', Expiration='2099-01-01T00:00:00Z')}\nEOF\n")
    aws(f"[default]\ncredential_process = {sh} --role 'a b'\n")
    s = s3rdma.config.aws_settings()
    assert (s["access_key"], s["secret_key"], s["session_token"]) == (AK, SK, "TOK")
    assert out.read_text() == "--role|a b|"
    with s3rdma.Client(endpoint=rsrv.endpoint, rdma_endpoint=rsrv.rdma_endpoint,
                       transport=transport, fallback=False, quiet=True) as c:
        c.put_object(rbucket, "k", b"signed by the process's keys")
        assert c.get_object(rbucket, "k") == b"signed by the process's keys"
        assert c.stats()[f"{transport}_ops"] >= 2


def test_a_client_runs_the_credential_process_once(aws, tmp_path, rsrv, rbucket):
    """A Client whose keys come from a credential_process runs it once (the program may
    be slow or prompt), not once to find where the keys come from and again to load them;
    settings read without keys name the program without running it."""
    runs = tmp_path / "runs"
    sh = script(tmp_path, f"echo run >> {runs}\n"
                f"cat <<'EOF'\n{process_doc(Expiration='2099-01-01T00:00:00Z')}\nEOF\n")
    aws(f"[default]\ncredential_process = {sh}\n")
    assert s3rdma.config.aws_settings(keys=False)["keys_from"] == "credential_process"
    assert not runs.exists()
    with s3rdma.Client(endpoint=rsrv.endpoint, transport="http", quiet=True) as c:
        c.put_object(rbucket, "once", b"x")
    assert runs.read_text() == "run\n"


def test_credential_process_place_in_the_chain(aws, tmp_path, monkeypatch):
    """The AWS CLI's order: the environment's keys, then the credentials file's, then
    credential_process, then the config file's keys."""
    sh = script(tmp_path, f"echo '{process_doc(AccessKeyId='FROMPROC')}'\n")
    aws(f"[default]\ncredential_process = {sh}\naws_access_key_id = CONF\n"
        "aws_secret_access_key = CONFSK\n")
    assert s3rdma.config.aws_settings()["access_key"] == "FROMPROC"
    aws(f"[default]\ncredential_process = {sh}\n", "[default]\naws_access_key_id = CRED\n"
        "aws_secret_access_key = CREDSK\n")
    assert s3rdma.config.aws_settings()["access_key"] == "CRED"
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "ENV")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "ENVSK")
    assert s3rdma.config.aws_settings()["access_key"] == "ENV"


@pytest.mark.parametrize("body,why", [
    ("echo nope >&2; exit 3\n", "exited with status 3"),
    ("kill -9 $$\n", "exited with status 137"),  # the shell reports its child's signal
    ("echo 'not json'\n", "not a JSON object"),
    ("echo '[1]'\n", "not a JSON object"),
    (f"echo '{process_doc(Version=2)}'\n", '"Version": 1 is required'),
    (f"echo '{process_doc(Version=None)}'\n", '"Version": 1 is required'),
    (f"echo '{process_doc(SecretAccessKey=None)}'\n", '"SecretAccessKey" must be'),
    (f"echo '{process_doc(AccessKeyId=7)}'\n", '"AccessKeyId" and "SecretAccessKey" must'),
    (f"echo '{process_doc(Expiration='tomorrow')}'\n", "is not an ISO 8601 UTC time"),
    (f"echo '{process_doc(Expiration='2001-01-01T00:00:00Z')}'\n", "have expired"),
    ("head -c 70000 /dev/zero | tr '\\0' ' '\n", "over 64 KiB"),
], ids=["exit", "signal", "text", "array", "version2", "noversion", "nosecret", "badtype",
        "badexpiry", "expired", "huge"])
def test_credential_process_errors_are_clear(aws, tmp_path, body, why):
    sh = script(tmp_path, body)
    aws(f"[default]\ncredential_process = {sh}\n")
    with pytest.raises(ValueError, match=why) as e:
        s3rdma.config.aws_settings()
    assert "credential_process" in str(e.value) and str(sh) in str(e.value)


def test_credential_process_missing_program(aws, tmp_path):
    aws(f"[default]\ncredential_process = {tmp_path}/absent --flag\n")
    with pytest.raises(ValueError, match="exited with status 127"):
        s3rdma.config.aws_settings()


class _Creds(http.server.BaseHTTPRequestHandler):
    """A container credentials endpoint: answers with .doc, keeps each request's path
    and Authorization header."""
    doc, status, seen = "", 200, []

    def do_GET(self):
        self.seen.append((self.path, self.headers.get("Authorization")))
        body = self.doc.encode()
        self.send_response(self.status)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *a):
        pass


@pytest.fixture
def creds_server():
    _Creds.doc, _Creds.status, _Creds.seen = "", 200, []
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Creds)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{srv.server_address[1]}", _Creds
    srv.shutdown()
    srv.server_close()


def container_doc(**kw):
    doc = {"AccessKeyId": AK, "SecretAccessKey": SK, "Token": "CTOK",
           "Expiration": "2099-01-01T00:00:00Z", "RoleArn": "ignored"}
    doc.update(kw)
    return json.dumps({k: v for k, v in doc.items() if v is not None})


def test_container_credentials(aws, monkeypatch, tmp_path, creds_server, rsrv, rbucket):
    url, h = creds_server
    h.doc = container_doc()
    aws("[default]\n")
    monkeypatch.setenv("AWS_CONTAINER_CREDENTIALS_FULL_URI", f"{url}/v2/credentials?id=1")
    monkeypatch.setenv("AWS_CONTAINER_AUTHORIZATION_TOKEN", "secret-token")
    s = s3rdma.config.aws_settings()
    assert (s["access_key"], s["secret_key"], s["session_token"]) == (AK, SK, "CTOK")
    assert h.seen == [("/v2/credentials?id=1", "secret-token")]
    tok = tmp_path / "token"
    tok.write_text("from-the-file\n")
    monkeypatch.setenv("AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE", str(tok))  # the file wins
    with s3rdma.Client(endpoint=rsrv.endpoint, transport="http", quiet=True) as c:
        c.put_object(rbucket, "c", b"container keys")
    assert h.seen[-1] == ("/v2/credentials?id=1", "from-the-file")
    # keys in the profile come first: the endpoint is not asked
    aws("[default]\naws_access_key_id = PROF\naws_secret_access_key = PROFSK\n")
    n = len(h.seen)
    assert s3rdma.config.aws_settings()["access_key"] == "PROF" and len(h.seen) == n


@pytest.mark.parametrize("case,why", [
    ("status", "HTTP 403"),
    ("json", "not a JSON object"),
    ("nokey", '"AccessKeyId" and "SecretAccessKey" must'),
    ("expired", "have expired"),
    ("remote", "must be on this host"),
    ("scheme", "is not an http:// or https:// URL"),
    ("refused", "container credentials from http://127.0.0.1:1/"),
    ("badtoken", "line break"),
    ("relative", "must start with '/'"),
])
def test_container_errors_are_clear(aws, monkeypatch, tmp_path, creds_server, case, why):
    url, h = creds_server
    aws("[default]\n")
    h.doc = {"json": "{nope", "nokey": container_doc(AccessKeyId=None),
             "expired": container_doc(Expiration="2001-01-01T00:00:00Z")}.get(
                 case, container_doc())
    h.status = 403 if case == "status" else 200
    full = {"remote": "http://192.0.2.1/creds", "scheme": "ftp://127.0.0.1/x",
            "refused": "http://127.0.0.1:1/"}.get(case, url + "/creds")
    monkeypatch.setenv("AWS_CONTAINER_CREDENTIALS_FULL_URI", full)
    if case == "badtoken":
        tok = tmp_path / "tok"
        tok.write_text("a\nb")
        monkeypatch.setenv("AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE", str(tok))
    if case == "relative":
        monkeypatch.setenv("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "creds")
    with pytest.raises(ValueError, match=why):
        s3rdma.config.aws_settings()
    if case == "remote":
        assert h.seen == []  # nothing was sent


@pytest.fixture
def rotating(tmp_path):
    """A credential_process handing out the keys in tmp_path/keys ("AK SK"), expiring
    `expires_in` seconds after each run (tmp_path/expires_in), counting its runs in
    tmp_path/runs; `fail` (a file) makes it exit 1. Returns (keys, runs, expires_in, fail)."""
    keys, runs, exp, fail = (tmp_path / n for n in ("keys", "runs", "expires_in", "fail"))
    keys.write_text(f"{AK} {SK}")
    exp.write_text("200")
    runs.write_text("")
    sh = script(tmp_path, f"""echo run >> {runs}
[ -e {fail} ] && {{ echo 'vault locked' >&2; exit 1; }}
read ak sk < {keys}
when=$(date -u -d "+$(cat {exp}) seconds" +%Y-%m-%dT%H:%M:%SZ)
printf '{{"Version": 1, "AccessKeyId": "%s", "SecretAccessKey": "%s", "Expiration": "%s"}}' \\
    "$ak" "$sk" "$when"
""")
    return sh, keys, runs, exp, fail


def nruns(runs):
    return len(runs.read_text().split())


def test_expiring_keys_are_reloaded_before_expiration(aws, rotating, rsrv, rbucket):
    """Keys expiring within 5 minutes are loaded again by the next signed request (the
    AWS SDKs refresh them so): new keys in the program's output are used at once."""
    sh, keys, runs, _, _ = rotating
    aws(f"[default]\ncredential_process = {sh}\n")
    with s3rdma.Client(endpoint=rsrv.endpoint, transport="http", quiet=True) as c:
        base = nruns(runs)  # the settings' load and the client's own
        c.put_object(rbucket, "k", b"v")
        assert nruns(runs) == base + 1
        keys.write_text("AKNOTAUSER0000000000 nosuchsecret")
        with pytest.raises(s3rdma.AccessDenied) as e:
            c.get_object(rbucket, "k")  # signed with the keys just loaded
        assert e.value.code == "InvalidAccessKeyId"
        keys.write_text(f"{AK} {SK}")
        assert c.get_object(rbucket, "k") == b"v"


def test_expiring_keys_open_a_native_session(aws, rotating, rsrv, rbucket):
    """The session's handshake takes the keys as a signature does, reloading them first
    when due (with the session lock held: the program is spawned, no fork handler runs)."""
    sh, _, runs, _, _ = rotating
    aws(f"[default]\ncredential_process = {sh}\n")
    with s3rdma.Client(endpoint=rsrv.endpoint, rdma_endpoint=rsrv.rdma_endpoint,
                       transport="native", fallback=False, quiet=True) as c:
        base = nruns(runs)
        c.put_object(rbucket, "n", b"native")
        assert c.get_object(rbucket, "n") == b"native"
        assert c.stats()["native_ops"] >= 2 and nruns(runs) > base


def test_keys_far_from_expiry_are_not_reloaded(aws, rotating, rsrv, rbucket):
    sh, _, runs, exp, _ = rotating
    exp.write_text("3600")
    aws(f"[default]\ncredential_process = {sh}\n")
    with s3rdma.Client(endpoint=rsrv.endpoint, transport="http", quiet=True) as c:
        base = nruns(runs)
        for i in range(3):
            c.put_object(rbucket, f"k{i}", b"v")
        assert nruns(runs) == base


def test_failed_reload_keeps_the_keys(aws, rotating, rsrv, rbucket, capfd):
    """A reload that fails keeps the keys the client has (they are still valid) and is
    not tried again for 10 s; it says so on stderr (unless quiet)."""
    sh, _, runs, _, fail = rotating
    aws(f"[default]\ncredential_process = {sh}\n")
    with s3rdma.Client(endpoint=rsrv.endpoint, transport="http") as c:
        fail.write_text("")
        base = nruns(runs)
        c.put_object(rbucket, "a", b"1")
        c.put_object(rbucket, "b", b"2")
        assert nruns(runs) == base + 1
        assert c.get_object(rbucket, "b") == b"2"
    err = capfd.readouterr().err
    assert "reloading the keys before they expire failed" in err
    assert "exited with status 1" in err and "vault locked" in err


def test_explicit_keys_are_never_reloaded(aws, rotating, rsrv, rbucket):
    """Keys passed as arguments are the caller's: the program is never run, not even to
    resolve the other settings."""
    sh, _, runs, _, _ = rotating
    aws(f"[default]\ncredential_process = {sh}\n")
    with s3rdma.Client(endpoint=rsrv.endpoint, access_key=AK, secret_key=SK,
                       transport="http", quiet=True) as c:
        c.put_object(rbucket, "k", b"v")
    assert nruns(runs) == 0


def test_clients_that_need_no_keys_run_no_program(aws, tmp_path, rsrv, rbucket, boto):
    """A failing credential_process in the profile does not stop a client that has its
    keys, an anonymous one, or s3rdma.torch's transport lookup."""
    sh = script(tmp_path, "echo 'vault locked' >&2\nexit 1\n")
    aws(f"[default]\ncredential_process = {sh}\ns3rdma_transport = http\n")
    with pytest.raises(ValueError, match="exited with status 1"):
        s3rdma.Client(endpoint=rsrv.endpoint)
    boto.put_object(Bucket=rbucket, Key="pub", Body=b"p", ACL="public-read")
    with s3rdma.Client(endpoint=rsrv.endpoint, unsigned=True, quiet=True) as c:
        assert c.get_object(rbucket, "pub") == b"p"
    with s3rdma.Client(endpoint=rsrv.endpoint, access_key=AK, secret_key=SK,
                       transport="http", quiet=True) as c:
        assert c.get_object(rbucket, "pub") == b"p"
    assert s3rdma.config.aws_settings(keys=False)["transport"] == "http"
