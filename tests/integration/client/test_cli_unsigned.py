"""The s3rdma CLI's --no-sign-request (the AWS CLI's flag: anonymous requests, for public
buckets) and what libs3rdma's anonymous mode does under it, against a real s3rdmad with
RDMA on: public objects and listings served, private ones AccessDenied with a hint that
says the request was anonymous, writes into a public-read-write bucket (single and
multipart), no RDMA transport, no presigned URL; the message when no credentials are found
at all; and `stat`'s StorageClass line."""
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from s3r_itest import REPO_ROOT, USERS, RdmaServer, boto_client, clean_env, empty_bucket  # noqa: E402

BUILD = Path(os.environ.get("S3RDMA_BUILD", REPO_ROOT / "build"))
CLI = BUILD / "s3rdma"
MiB = 1024 * 1024


@pytest.fixture(scope="module")
def srv(tmp_path_factory):
    s = RdmaServer(tmp_path_factory.mktemp("anon"), "anon", {}).start()
    yield s
    s.stop()


@pytest.fixture(scope="module")
def s3(srv):
    return boto_client(srv)


@pytest.fixture
def bucket(s3):
    b = "anon-" + uuid.uuid4().hex[:12]
    s3.create_bucket(Bucket=b, ACL="public-read")
    s3.put_object(Bucket=b, Key="public.txt", Body=b"for everyone", ACL="public-read",
                  StorageClass="GLACIER")
    s3.put_object(Bucket=b, Key="private.txt", Body=b"for the owner")
    yield b
    empty_bucket(s3, b)
    s3.delete_bucket(Bucket=b)


def env_for(srv, tmp_path, keys=True):
    """Endpoint from AWS_ENDPOINT_URL; the owner's keys in the environment unless told
    otherwise (so a 403 under --no-sign-request shows they went unused)."""
    env = {k: v for k, v in clean_env().items() if not k.startswith("AWS_")}
    env.update(HOME=str(tmp_path), AWS_ENDPOINT_URL=srv.endpoint,
               S3RDMA_RDMA_ENDPOINT=srv.rdma_endpoint)
    if keys:
        env.update(AWS_ACCESS_KEY_ID=USERS[0][0], AWS_SECRET_ACCESS_KEY=USERS[0][1])
    return env


def run(args, env, check=None):
    p = subprocess.run([str(CLI), *map(str, args)], env=env, capture_output=True, timeout=120,
                       stdin=subprocess.DEVNULL)
    if check is not None:
        assert p.returncode == check, (args, p.returncode, p.stdout, p.stderr)
    return p


def test_no_sign_request_reads_public_only(srv, bucket, tmp_path):
    env = env_for(srv, tmp_path)
    assert run(["--no-sign-request", "get", f"s3://{bucket}/public.txt", "-"], env,
               check=0).stdout == b"for everyone"
    ls = run(["--no-sign-request", "ls", f"s3://{bucket}"], env, check=0).stdout
    assert b"public.txt" in ls and b"private.txt" in ls
    p = run(["--no-sign-request", "get", f"s3://{bucket}/private.txt", "-"], env, check=4)
    assert b"AccessDenied" in p.stderr and b"anonymous (--no-sign-request)" in p.stderr
    p = run(["-v", "--no-sign-request", "stat", f"s3://{bucket}/public.txt"], env, check=0)
    assert b"requests go unsigned" in p.stderr
    assert b"StorageClass:  GLACIER" in p.stdout
    # the owner's keys (in the environment) open what --no-sign-request does not
    assert run(["get", f"s3://{bucket}/private.txt", "-"], env, check=0).stdout == \
        b"for the owner"
    p = run(["stat", f"s3://{bucket}/private.txt"], env, check=0)
    assert b"StorageClass:  STANDARD" in p.stdout


def test_no_sign_request_writes_public_read_write(srv, s3, bucket, tmp_path):
    s3.put_bucket_acl(Bucket=bucket, ACL="public-read-write")
    env = env_for(srv, tmp_path, keys=False)
    big = tmp_path / "big"
    big.write_bytes(os.urandom(20 * MiB + 3))  # multipart at the default 8 MiB parts
    run(["--no-sign-request", "put", big, f"s3://{bucket}/big"], env, check=0)
    assert s3.get_object(Bucket=bucket, Key="big")["Body"].read() == big.read_bytes()


@pytest.mark.parametrize("transport", ["native", "token"])
def test_no_sign_request_refuses_rdma(srv, bucket, tmp_path, transport):
    """The server opens RDMA sessions for access keys only."""
    env = env_for(srv, tmp_path)
    p = run(["--no-sign-request", "--transport", transport, "get",
             f"s3://{bucket}/public.txt", "-"], env, check=2)
    assert f"transport {transport} needs credentials".encode() in p.stderr
    env["S3RDMA_TRANSPORT"] = "auto"
    assert run(["--no-sign-request", "--rdma-threshold", "0", "--stats", "get",
                f"s3://{bucket}/public.txt", "-"], env, check=0).stdout == b"for everyone"


def test_no_sign_request_presign_refused(srv, bucket, tmp_path):
    p = run(["--no-sign-request", "presign", f"s3://{bucket}/public.txt"],
            env_for(srv, tmp_path), check=2)
    assert b"drop --no-sign-request" in p.stderr and not p.stdout


def test_no_credentials_names_no_sign_request(srv, bucket, tmp_path):
    p = run(["get", f"s3://{bucket}/public.txt", "-"], env_for(srv, tmp_path, keys=False),
            check=2)
    assert b"no credentials" in p.stderr and b"--no-sign-request" in p.stderr
    assert run(["--no-sign-request", "get", f"s3://{bucket}/public.txt", "-"],
               env_for(srv, tmp_path, keys=False), check=0).stdout == b"for everyone"
