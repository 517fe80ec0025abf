"""A full filesystem under a relaxed-mode store (docs/storage.md, "The writable map"):
relaxed mode writes the index through a shared map of data.mdb, and a store into a page
the filesystem cannot back kills the process with SIGBUS. The server must instead refuse
the writes (500 InternalError), keep every acknowledged object, stay up, and take writes
again once there is room.

The filesystem is a small tmpfs mounted for the test (needs root; skipped without).
"""
import os
import shutil
import subprocess

import pytest
from botocore.exceptions import ClientError

from s3r_itest import boto_client

pytestmark = pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("mount"),
                                reason="needs root to mount a small tmpfs")


@pytest.fixture
def small_fs(tmp_path):
    mnt = tmp_path / "small"
    mnt.mkdir()
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64m", "tmpfs", str(mnt)],
                       capture_output=True, text=True)
    if r.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {r.stderr.strip()}")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], capture_output=True)


def fill(path):
    """Writes path until the filesystem is full (unbuffered: every byte that fits lands)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        for size in (1 << 20, 4096):
            chunk = b"\xff" * size
            try:
                while os.write(fd, chunk) == size:
                    pass
            except OSError:
                pass
    finally:
        os.close(fd)


def test_relaxed_index_on_a_full_filesystem_refuses_writes_and_stays_up(make_server, small_fs):
    srv = make_server(durability="relaxed", data_dir=small_fs / "data")
    s3 = boto_client(srv)
    s3.create_bucket(Bucket="full")
    kept = {}
    for i in range(16):
        kept[f"before/{i:02d}"] = os.urandom(4096)
        s3.put_object(Bucket="full", Key=f"before/{i:02d}", Body=kept[f"before/{i:02d}"])

    filler = small_fs / "filler"
    fill(filler)
    # Inline 4 KiB objects under new keys: each commit takes new index pages, so the
    # index's file must grow into the full filesystem. Far more than the pages made
    # ready ahead of the commits before the fill.
    refused = 0
    for i in range(3000):
        key, body = f"during/{i:04d}", os.urandom(4096)
        try:
            s3.put_object(Bucket="full", Key=key, Body=body)
            kept[key] = body
        except ClientError as e:
            assert e.response["ResponseMetadata"]["HTTPStatusCode"] == 500
            assert e.response["Error"]["Code"] == "InternalError"
            refused += 1
            if refused == 20:
                break
    assert refused == 20, "the index never ran out of room: the test did not fill the disk"
    assert srv.alive(), srv.log_tail(40)
    assert "no room for the index to grow" in srv.log_path.read_text()

    for key, body in kept.items():
        assert s3.get_object(Bucket="full", Key=key)["Body"].read() == body, key

    filler.unlink()
    s3.put_object(Bucket="full", Key="after", Body=b"room again")
    assert s3.get_object(Bucket="full", Key="after")["Body"].read() == b"room again"
    for key, body in kept.items():
        assert s3.get_object(Bucket="full", Key=key)["Body"].read() == body, key
