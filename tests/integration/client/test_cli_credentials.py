"""The s3rdma CLI with keys from a profile's credential_process (a real script) and from a
container credentials endpoint (a real local HTTP server), resolved by libs3rdma's
s3r_aws_settings_load against a real s3rdmad; -v names the source; the program runs (the
endpoint is asked) once; a failing program stops the CLI with exit 2 and says why."""
import http.server
import json
import os
import stat
import subprocess
import sys
import threading
import uuid
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from s3r_itest import REPO_ROOT, USERS, RdmaServer, boto_client, clean_env, empty_bucket  # noqa: E402

BUILD = Path(os.environ.get("S3RDMA_BUILD", REPO_ROOT / "build"))
CLI = BUILD / "s3rdma"
AK, SK = USERS[0]


@pytest.fixture(scope="module")
def srv(tmp_path_factory):
    s = RdmaServer(tmp_path_factory.mktemp("creds"), "creds", {}).start()
    yield s
    s.stop()


@pytest.fixture
def bucket(srv):
    s3 = boto_client(srv)
    b = "creds-" + uuid.uuid4().hex[:12]
    s3.create_bucket(Bucket=b)
    s3.put_object(Bucket=b, Key="k", Body=b"owner's")
    yield b
    empty_bucket(s3, b)
    s3.delete_bucket(Bucket=b)


def env_for(srv, home, **extra):
    env = {k: v for k, v in clean_env().items() if not k.startswith("AWS_")}
    env.update(HOME=str(home), AWS_ENDPOINT_URL=srv.endpoint, **extra)
    return env


def run(args, env):
    return subprocess.run([str(CLI), *map(str, args)], env=env, capture_output=True,
                          timeout=60, stdin=subprocess.DEVNULL)


def credential_process_profile(home):
    """home/.aws/config whose default profile's credential_process is a script that
    prints the first user's keys and notes each run in a file: (script, runs file)."""
    sh = home / "creds.sh"
    runs = home / "runs"
    sh.write_text(f"#!/bin/sh\necho run >> {runs}\necho '" + json.dumps(
        {"Version": 1, "AccessKeyId": AK, "SecretAccessKey": SK}) + "'\n")
    sh.chmod(sh.stat().st_mode | stat.S_IXUSR)
    (home / ".aws").mkdir()
    (home / ".aws" / "config").write_text(f"[default]\ncredential_process = {sh}\n")
    return sh, runs


def test_cli_credential_process(srv, bucket, tmp_path):
    sh, runs = credential_process_profile(tmp_path)
    p = run(["-v", "get", f"s3://{bucket}/k", "-"], env_for(srv, tmp_path))
    assert p.returncode == 0 and p.stdout == b"owner's", p.stderr
    assert f"access key {AK} (from credential_process)".encode() in p.stderr
    # run once: the client loads the keys (and would again before an Expiration); the
    # settings' resolution only learns that they come from the program
    assert runs.read_text() == "run\n"
    sh.write_text("#!/bin/sh\necho 'vault is locked' >&2\nexit 5\n")
    p = run(["get", f"s3://{bucket}/k", "-"], env_for(srv, tmp_path))
    assert p.returncode == 2 and not p.stdout
    assert b"vault is locked" in p.stderr  # the program's own stderr passes through
    assert f'credential_process "{sh}" exited with status 5'.encode() in p.stderr
    # keys on the command line, or none wanted: the program is not run
    for flags in (["--access-key", AK, "--secret-key", SK], ["--no-sign-request"]):
        p = run([*flags, "ls", f"s3://{bucket}"], env_for(srv, tmp_path))
        assert b"vault is locked" not in p.stderr, (flags, p.stderr)
        assert p.returncode == (0 if flags[0] == "--access-key" else 4), (flags, p.stderr)


def test_cli_half_a_key_pair_runs_no_credential_process(srv, bucket, tmp_path):
    """--access-key without --secret-key: a program's secret belongs to the program's own
    key, so it is not run for it (as Python's Client, s3r_aws_settings_load_static_keys):
    no credentials, exit 2."""
    _, runs = credential_process_profile(tmp_path)
    p = run(["--access-key", AK, "ls", f"s3://{bucket}"], env_for(srv, tmp_path))
    assert p.returncode == 2 and b"no credentials" in p.stderr, p.stderr
    assert not runs.exists()


def test_cli_container_credentials(srv, bucket, tmp_path):
    seen = []

    class H(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            seen.append(self.headers.get("Authorization"))
            body = json.dumps({"AccessKeyId": AK, "SecretAccessKey": SK, "Token": "T",
                               "Expiration": "2099-01-01T00:00:00Z"}).encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *a):
            pass
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        env = env_for(srv, tmp_path, AWS_CONTAINER_CREDENTIALS_FULL_URI=
                      f"http://127.0.0.1:{httpd.server_address[1]}/creds",
                      AWS_CONTAINER_AUTHORIZATION_TOKEN="tok")
        p = run(["-v", "get", f"s3://{bucket}/k", "-"], env)
        assert p.returncode == 0 and p.stdout == b"owner's", p.stderr
        # asked once, by the client, which keeps the keys' Expiration and reloads them
        # before it; the settings' resolution only learns where they come from
        assert f"access key {AK} (from container)".encode() in p.stderr
        assert seen == ["tok"]
    finally:
        httpd.shutdown()
        httpd.server_close()
