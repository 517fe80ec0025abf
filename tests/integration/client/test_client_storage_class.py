"""s3r_put_opts_t.storage_class from the CLI (cp --storage-class) against a real s3rdmad
(the Python surface: tests/integration/python/test_storage_class.py); and a program built
against the options struct before it grew (s3r_object_put@S3RDMA_0, called by s3r_driver
put-v0 with the struct right before an unmapped page) still works."""
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from s3r_itest import REPO_ROOT, USERS, RdmaServer, boto_client, empty_bucket  # noqa: E402

BUILD = Path(os.environ.get("S3RDMA_BUILD", REPO_ROOT / "build"))
AK, SK = USERS[0]


@pytest.fixture(scope="module")
def srv(tmp_path_factory):
    s = RdmaServer(tmp_path_factory.mktemp("sclass"), "sclass", {}).start()
    yield s
    s.stop()


@pytest.fixture
def bucket(srv):
    s3 = boto_client(srv)
    b = "sclass-" + uuid.uuid4().hex[:12]
    s3.create_bucket(Bucket=b)
    yield b
    empty_bucket(s3, b)
    s3.delete_bucket(Bucket=b)


def test_cli_cp_storage_class(srv, bucket, tmp_path):
    src = tmp_path / "f"
    src.write_bytes(b"cli body")
    env = dict(os.environ, AWS_ACCESS_KEY_ID=AK, AWS_SECRET_ACCESS_KEY=SK,
               AWS_ENDPOINT_URL=srv.endpoint, HOME=str(tmp_path))
    p = subprocess.run([str(BUILD / "s3rdma"), "-q", "cp", "--storage-class", "STANDARD_IA",
                        str(src), f"s3://{bucket}/k"], env=env, capture_output=True, timeout=60)
    assert p.returncode == 0, p.stderr
    head = boto_client(srv).head_object(Bucket=bucket, Key="k")
    assert head["StorageClass"] == "STANDARD_IA" and head["ContentLength"] == 8


def test_put_through_the_old_options_layout(srv, bucket):
    """s3r_object_put@S3RDMA_0 reads s3r_put_opts_t as it was before storage_class: the
    struct ends right before an unmapped page, so reading the new field would fault."""
    env = dict(srv.client_env(), S3R_ENDPOINT=srv.endpoint, S3R_RDMA_ENDPOINT=srv.rdma_endpoint)
    p = subprocess.run([str(BUILD / "tests" / "s3r_driver"), "put-v0", bucket, "v0"], env=env,
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, (p.returncode, p.stdout, p.stderr)
    head = boto_client(srv).head_object(Bucket=bucket, Key="v0")
    assert head["ContentType"] == "application/x-v0" and head["ContentLength"] == 2
    assert "StorageClass" not in head
