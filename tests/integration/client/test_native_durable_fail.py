"""fsync mode, a native PUT whose commit-log flush fails (docs/architecture.md, "Durable
later"): the client gets a 500 InternalError, and the access log and the request metrics
record that 500, not the 200 the reply was made with before the flush.

The flush fails for real: the data directory is an ext4 file system on a loop device whose
backing file lies, sparse, on a small tmpfs. Once the server is up, the tmpfs is filled: a
PUT's commit-log record still goes into ext4's page cache (ext4 has room), but the flush
that writes it to the device finds no room under it, and fdatasync fails (ENOSPC). Needs
root (mount, losetup); skipped without.
"""
import json
import os
import shutil
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from s3r_itest import UCX_ENVS, RdmaServer, boto_client  # noqa: E402
from test_client_lib import DRIVER  # noqa: E402

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or not all(shutil.which(t) for t in ("losetup", "mkfs.ext4", "mount")),
    reason="needs root, losetup and mkfs.ext4 (a loop-mounted ext4 on a tmpfs)")


def run(*args):
    return subprocess.run(list(map(str, args)), check=True, capture_output=True, text=True).stdout


@pytest.fixture
def failing_disk(tmp_path):
    """An empty ext4 mount point, and a function that fills the tmpfs under it (from then
    on, writing back blocks the device never held before fails)."""
    under, top = tmp_path / "under", tmp_path / "top"
    under.mkdir()
    top.mkdir()
    dev = None
    try:
        try:
            run("mount", "-t", "tmpfs", "-o", "size=48m", "tmpfs", under)
            img = under / "disk.img"
            with open(img, "wb") as f:
                f.truncate(256 << 20)
            dev = run("losetup", "-f", "--show", img).strip()
            # Inode tables and journal written now, not lazily later: the fill must
            # leave ext4's own metadata writable, so that what fails is the file's data.
            run("mkfs.ext4", "-q", "-E", "lazy_itable_init=0,lazy_journal_init=0", dev)
            run("mount", dev, top)
        except subprocess.CalledProcessError as e:
            # Root without mounts or loop devices (a container): nothing to test on.
            pytest.skip(f"no loop-mounted ext4 here: {' '.join(e.cmd)}: {e.stderr.strip()}")

        def fill():
            with open(under / "filler", "wb") as f:
                chunk = b"\xff" * (1 << 20)
                try:
                    while True:
                        f.write(chunk)
                        f.flush()
                except OSError:
                    pass

        yield top, fill
    finally:
        subprocess.run(["umount", "-l", str(top)], capture_output=True)
        if dev:
            subprocess.run(["losetup", "-d", dev], capture_output=True)
        subprocess.run(["umount", "-l", str(under)], capture_output=True)


def requests_total(rs):
    """s3rdma_requests_total of native PutObjects, by status class."""
    with urllib.request.urlopen(f"{rs.endpoint}/metrics", timeout=10) as r:
        page = r.read().decode()
    return {s.labels["status"]: s.value for fam in text_string_to_metric_families(page)
            for s in fam.samples if s.name == "s3rdma_requests_total"
            and s.labels["op"] == "PutObject" and s.labels["transport"] == "native"}


def test_native_put_whose_flush_fails_is_logged_500(tmp_path, failing_disk):
    assert DRIVER.exists(), f"{DRIVER} not built"
    top, fill = failing_disk
    log = tmp_path / "access.json"
    rs = RdmaServer(tmp_path, "flushfail", UCX_ENVS["ucx-default"], durability="fsync",
                    extra_args=["--log-access", str(log), "--metrics-enabled", "true",
                                "--metrics-auth", "public"])
    rs.srv.data_dir = top / "data"
    rs.start()
    try:
        boto_client(rs).create_bucket(Bucket="flushfail")
        fill()
        p = subprocess.run([str(DRIVER), "--transport", "native", "--no-fallback", "put",
                            "flushfail", "k", "4096", "7"], env=rs.client_env(),
                           capture_output=True, text=True, timeout=60)
        out = p.stdout + p.stderr
        assert p.returncode != 0 and "http_status=500" in out and "code=InternalError" in out, \
            f"the PUT whose flush failed was not answered 500:\n{out}\n{rs.srv.log_tail()}"
        assert "fdatasync" in rs.srv.log_text(), "the commit log's flush did not fail"

        def put_line():
            lines = [json.loads(x) for x in log.read_text().splitlines() if x.strip()]
            return [x for x in lines if x["op"] == "PutObject"]
        deadline = time.monotonic() + 10
        while not put_line() and time.monotonic() < deadline:
            time.sleep(0.05)
        puts = put_line()
        assert len(puts) == 1, puts
        assert puts[0]["status"] == 500 and puts[0]["error"] == "InternalError", puts[0]
        assert puts[0]["transport"] == "native" and puts[0]["key"] == "k"
        assert requests_total(rs) == {"5xx": 1.0}
        rs.stop()  # exits 0 (under ASan: with nothing leaked on the way)
    finally:
        if rs.srv.alive():
            rs.srv.kill9()
