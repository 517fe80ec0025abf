"""s3rdmad settings: precedence flag > environment > config file > default, and clear
refusals of bad settings."""
import os
import subprocess
import time

import boto3
import botocore.config
import pytest

from s3r_itest import BINARY, USERS, free_port


def start(tmp_path, config_text, args=(), env_extra=None):
    cfg = tmp_path / "config.yaml"
    cfg.write_text(config_text)
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("S3RDMA_")}
    env.update(env_extra or {})
    proc = subprocess.Popen([BINARY, "--data", str(tmp_path / "data"), "--listen",
                             f"127.0.0.1:{port}", "--config", str(cfg), "--rdma-enabled", "false",
                             *args], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    return proc, port


def location_of(port, region):
    s3 = boto3.session.Session().client(
        "s3", endpoint_url=f"http://127.0.0.1:{port}", aws_access_key_id=USERS[0][0],
        aws_secret_access_key=USERS[0][1], region_name=region,
        config=botocore.config.Config(signature_version="s3v4", retries={"max_attempts": 1},
                                      s3={"addressing_style": "path"}))
    deadline = time.monotonic() + 10
    while True:
        try:
            s3.create_bucket(Bucket="cfg-bucket")
            break
        except Exception:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)
    return s3.get_bucket_location(Bucket="cfg-bucket")["LocationConstraint"]


USERS_YAML = f"users:\n  - access_key: {USERS[0][0]}\n    secret_key: {USERS[0][1]}\n"


@pytest.mark.parametrize("layer", ["file", "env", "flag"])
def test_precedence(tmp_path, layer):
    text = USERS_YAML + "region: file-region-1\n"
    env = {"S3RDMA_REGION": "env-region-1"} if layer in ("env", "flag") else {}
    args = ["--region", "flag-region-1"] if layer == "flag" else []
    proc, port = start(tmp_path, text, args, env)
    try:
        assert location_of(port, f"{layer}-region-1") == f"{layer}-region-1"
    finally:
        proc.terminate()
        assert proc.wait(timeout=20) == 0


@pytest.mark.parametrize("text,args,message", [
    ("durability: sometimes\n", [], "durability must be"),
    ("no_such_setting: 1\n", [], "unknown setting 'no_such_setting'"),
    ("rdma:\n  colour: blue\n", [], "unknown setting 'rdma.colour'"),
    ("users:\n  - access_key: a\n", [], "each user needs"),
    ("region: [1, 2\n", [], "config.yaml"),
    ("", ["--listen", "nowhere"], "HOST:PORT"),
    ("", ["--rdma-chunk", "3"], "rdma.chunk must be a size"),
    ("log_level: loud\n", [], "log_level must be 'error', 'warn', 'info' or 'debug'"),
    ("", ["--bogus-flag"], "usage"),
    ("http:\n  colour: blue\n", [], "unknown setting 'http.colour'"),
    ("http:\n  max_connections: 0\n", [], "http.max_connections must be a whole number from 1"),
    ("", ["--http-max-connections-per-ip", "-1"], "http.max_connections_per_ip must be"),
    ("", ["--http-head-timeout", "10s"], "http.head_timeout must be"),
    ("", ["--http-min-body-rate", "fast"], "http.min_body_rate must be"),
    ("", ["--http-body-rate-window", "0"], "http.body_rate_window must be"),
    ("", ["--http-idle-timeout", "0"], "http.idle_timeout must be"),
    # where a bad value came from is named
    ("durability: sometimes\n", [], "config.yaml)"),
    ("", ["--rdma-chunk", "3"], "(from --rdma-chunk)"),
    # typed settings added with the listeners
    ("", ["--rdma-staging", "4MiB", "--rdma-chunk", "4MiB"], "rdma.staging (4194304 bytes) must "
     "hold at least two rdma.chunk"),
    ("", ["--rdma-required", "maybe"], "rdma.required must be true or false"),
    ("", ["--listen", "::1:9000"], "listen must be HOST:PORT, [V6]:PORT or :PORT, or off"),
    ("", ["--listen", "[::1]"], "listen must be HOST:PORT"),
    ("", ["--listen", "127.0.0.1:65536"], "listen must be HOST:PORT"),
    ("", ["--tls-listen", "off"], "tls.listen must be HOST:PORT, [V6]:PORT or :PORT, not 'off'"),
    ("", ["--rdma-listen", "nowhere"], "rdma.listen must be HOST:PORT"),
    ("", ["--rdma-trusted-uids", "1,2,"], "rdma.trusted_uids must be a comma-separated list"),
    ("", ["--rdma-poll", "sometimes"], "rdma.poll must be 'adaptive' or 'busy', not 'sometimes'"),
    ("rdma:\n  poll: spin\n", [], "rdma.poll must be 'adaptive' or 'busy', not 'spin'"),
    ("", ["--tls-cert", "c.pem"], "tls.cert and tls.key go together"),
    ("tls:\n  key: k.pem\n", [], "tls.cert and tls.key go together"),
    ("", ["--listen", "off"], "listen is off and HTTPS is not configured"),
    ("tls:\n  colour: blue\n", [], "unknown setting 'tls.colour'"),
])
def test_bad_settings_are_refused(tmp_path, text, args, message):
    cfg = tmp_path / "config.yaml"
    cfg.write_text(text)
    env = {k: v for k, v in os.environ.items() if not k.startswith("S3RDMA_")}
    r = subprocess.run([BINARY, "--data", str(tmp_path / "data"), "--config", str(cfg),
                        "--listen", f"127.0.0.1:{free_port()}", *args],
                       env=env, capture_output=True, text=True, timeout=20)
    assert r.returncode == 2, r
    assert message in r.stderr, r.stderr
    assert not (tmp_path / "data").exists()


def test_help_lists_every_setting():
    r = subprocess.run([BINARY, "--help"], capture_output=True, text=True, timeout=10)
    assert r.returncode == 0
    for flag in ("--data", "--listen", "--config", "--durability", "--region", "--rdma-enabled",
                 "--rdma-listen", "--rdma-port", "--rdma-max-sessions", "--rdma-staging",
                 "--http-max-connections", "--http-max-connections-per-ip",
                 "--http-idle-timeout", "--http-head-timeout", "--http-min-body-rate",
                 "--http-body-rate-window", "--tls-cert", "--tls-key", "--tls-listen",
                 "--rdma-required", "--rdma-advertise", "--rdma-poll", "S3RDMA_RDMA_POLL",
                 "S3RDMA_TLS_CERT"):
        assert flag in r.stdout, flag
    assert "S3RDMA_ROOT_USER" in r.stdout
