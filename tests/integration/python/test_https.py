"""The package over an https:// endpoint: ca_bundle= (or AWS_CA_BUNDLE) verifies it, a wrong
CA is refused."""
import subprocess

import pytest
import s3rdma
from s3r_itest import USERS, free_port


def self_signed(d, name):
    cert, key = d / f"{name}.pem", d / f"{name}.key"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                    "ec_paramgen_curve:prime256v1", "-nodes", "-days", "2", "-subj",
                    "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1", "-keyout",
                    str(key), "-out", str(cert)], check=True, capture_output=True)
    return cert, key


def test_https_with_a_ca_bundle(make_server, tmp_path, monkeypatch):
    cert, key = self_signed(tmp_path, "good")
    other, _ = self_signed(tmp_path, "other")
    port = free_port()
    make_server(extra_args=("--tls-cert", str(cert), "--tls-key", str(key),
                            "--tls-listen", f"127.0.0.1:{port}"))
    ep = f"https://127.0.0.1:{port}"
    monkeypatch.delenv("AWS_CA_BUNDLE", raising=False)
    with s3rdma.Client(endpoint=ep, access_key=USERS[0][0], secret_key=USERS[0][1],
                       transport="http", ca_bundle=str(cert), quiet=True) as c:
        c.create_bucket("pytls")
        c.put_object("pytls", "k", b"over tls")
        assert c.get_object("pytls", "k") == b"over tls"
    monkeypatch.setenv("AWS_CA_BUNDLE", str(cert))
    with s3rdma.Client(endpoint=ep, access_key=USERS[0][0], secret_key=USERS[0][1],
                       transport="http", quiet=True) as c:
        assert c.get_object("pytls", "k") == b"over tls"
    monkeypatch.setenv("AWS_CA_BUNDLE", str(other))
    with s3rdma.Client(endpoint=ep, access_key=USERS[0][0], secret_key=USERS[0][1],
                       transport="http", quiet=True) as c:
        with pytest.raises(s3rdma.S3Error):
            c.get_object("pytls", "k")
