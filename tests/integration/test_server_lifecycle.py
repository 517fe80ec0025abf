"""Server start-up and shutdown: generated credentials, root user from the environment,
signals, stats endpoint, data persisting across a clean restart."""
import os
import re
import signal
import stat

import boto3
import botocore.config
import pytest
from botocore.exceptions import ClientError

from s3r_itest import REGION, USERS, stats_json


def client(srv, ak, sk):
    return boto3.session.Session().client(
        "s3", endpoint_url=srv.endpoint, aws_access_key_id=ak, aws_secret_access_key=sk,
        region_name=REGION,
        config=botocore.config.Config(signature_version="s3v4", retries={"max_attempts": 1},
                                      s3={"addressing_style": "path"}))


def parse_credentials(text):
    """Finds an access key and a secret key in the credentials file, whatever its syntax
    (YAML, INI, JSON or KEY=VALUE)."""
    ak = re.search(r"access[_ -]?key(?:[_ -]?id)?\"?\s*[:=]\s*\"?([A-Za-z0-9+/=_-]+)", text, re.I)
    sk = re.search(r"secret(?:[_ -]?access)?[_ -]?key\"?\s*[:=]\s*\"?([A-Za-z0-9+/=_-]+)", text, re.I)
    assert ak and sk, f"cannot find keys in credentials file:\n{text}"
    return ak.group(1), sk.group(1)


def clean_env():
    return {k: v for k, v in os.environ.items() if not k.startswith("S3RDMA_")}


def test_generated_credentials(make_server):
    srv = make_server(users=[], env=clean_env(), name="gen")
    cred = srv.data_dir / ".s3rdma" / "credentials"
    assert cred.exists(), "no credentials file written on first start without users"
    assert stat.S_IMODE(cred.stat().st_mode) == 0o600
    text = cred.read_text()
    ak, sk = parse_credentials(text)
    assert ak in srv.log_text() and sk in srv.log_text(), "generated keys not printed at start-up"
    # The embedded default has an SSE-S3 master key of its own, as S3 always has SSE-S3.
    key = srv.data_dir / ".s3rdma" / "sse-master.key"
    assert stat.S_IMODE(key.stat().st_mode) == 0o600
    key_text = key.read_text()
    c = client(srv, ak, sk)
    c.create_bucket(Bucket="gen-bucket")
    c.put_object(Bucket="gen-bucket", Key="k", Body=b"persist")
    c.put_object(Bucket="gen-bucket", Key="sse", Body=b"sealed", ServerSideEncryption="AES256")
    c.put_bucket_encryption(Bucket="gen-bucket", ServerSideEncryptionConfiguration={
        "Rules": [{"ApplyServerSideEncryptionByDefault": {"SSEAlgorithm": "AES256"}}]})
    assert srv.stop() == 0
    # second start reuses the same keys and sees the data
    srv.start()
    assert cred.read_text() == text and key.read_text() == key_text
    c = client(srv, ak, sk)
    assert c.get_object(Bucket="gen-bucket", Key="k")["Body"].read() == b"persist"
    got = c.get_object(Bucket="gen-bucket", Key="sse")
    assert got["Body"].read() == b"sealed" and got["ServerSideEncryption"] == "AES256"
    # the test users from other tests do not exist here
    with pytest.raises(ClientError) as ei:
        client(srv, *USERS[0]).list_buckets()
    assert ei.value.response["Error"]["Code"] == "InvalidAccessKeyId"


def test_root_user_from_env(make_server):
    env = clean_env()
    env["S3RDMA_ROOT_USER"] = "ROOTUSERKEY"
    env["S3RDMA_ROOT_PASSWORD"] = "rootpassword-rootpassword"
    srv = make_server(env=env, name="root")
    root = client(srv, "ROOTUSERKEY", "rootpassword-rootpassword")
    root.create_bucket(Bucket="root-bucket")
    assert "root-bucket" in [b["Name"] for b in root.list_buckets()["Buckets"]]
    # config users still work, and do not see root's bucket
    u1 = client(srv, *USERS[0])
    assert "root-bucket" not in [b["Name"] for b in u1.list_buckets()["Buckets"]]
    with pytest.raises(ClientError) as ei:
        client(srv, "ROOTUSERKEY", "wrong-password-wrong").list_buckets()
    assert ei.value.response["Error"]["Code"] == "SignatureDoesNotMatch"
    assert not (srv.data_dir / ".s3rdma" / "credentials").exists()


def test_sigint_exits_zero_and_data_persists(make_server):
    srv = make_server(name="sigint")
    c = client(srv, *USERS[0])
    c.create_bucket(Bucket="sigint-bucket")
    c.put_object(Bucket="sigint-bucket", Key="a/b", Body=b"x" * 1000, Metadata={"m": "v"})
    assert srv.stop(signal.SIGINT) == 0
    srv.start()
    c = client(srv, *USERS[0])
    got = c.get_object(Bucket="sigint-bucket", Key="a/b")
    assert got["Body"].read() == b"x" * 1000 and got["Metadata"] == {"m": "v"}
    # bucket ownership survives the restart too
    with pytest.raises(ClientError) as ei:
        client(srv, *USERS[1]).get_object(Bucket="sigint-bucket", Key="a/b")
    assert ei.value.response["Error"]["Code"] == "AccessDenied"


def test_stats_json(make_server):
    srv = make_server(name="stats")
    status, js = stats_json(srv)
    assert status == 200
    assert isinstance(js, dict)
    assert js["rdma_sessions"] == 0


def test_second_server_on_same_data_dir_refused(make_server):
    first = make_server(name="first")
    second = make_server(name="second", data_dir=first.data_dir, start=False)
    from s3r_itest import ServerStartError
    with pytest.raises(ServerStartError):
        second.start(timeout=5)
    assert second.proc.returncode not in (None, 0)
    assert first.alive()
