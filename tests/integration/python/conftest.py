"""Fixtures for the tests of the Python package (python/, `s3rdma`).

The package is installed the way its README says: `pip install ./python` into a fresh
`/usr/bin/python3 -m venv --system-site-packages`, built against $S3RDMA_BUILD (default
build/). The venv's site-packages then goes on this process's sys.path, so the tests
below import that installed copy; test_venv.py also runs the venv's own interpreter.

ASan pass: when $S3RDMA_BUILD's libs3rdma is built with -fsanitize=address, CPython can
only load it with the ASan runtime preloaded (LD_PRELOAD; it must come first in the
process). This pytest process was started without it, so here only
test_asan_subprocess.py is collected: it reruns each file of this directory in a child
pytest with LD_PRELOAD set (one test per file, all on one venv it installs once and
passes in $S3RDMA_TEST_VENV), and fails with the child's output if anything there fails.
Without ASan that file is skipped at collection and the tests run in-process.

rsrv      one s3rdmad with its RDMA session port (UCX default transports) and public
          /metrics, session-wide
rbucket   a fresh bucket on it (emptied and removed afterwards)
client    a factory: client(transport="native", **settings) -> s3rdma.Client (closed at
          teardown)
boto      a boto3 client for rsrv
"""
import atexit
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from s3r_itest import (REPO_ROOT, USERS, RdmaServer, boto_client, empty_bucket,  # noqa: E402
                       new_bucket_name)

BUILD = Path(os.environ.get("S3RDMA_BUILD") or REPO_ROOT / "build").resolve()
PKG = REPO_ROOT / "python"


def asan_runtime():
    """The ASan runtime libs3rdma needs, or None when it is not an ASan build."""
    out = subprocess.run(["ldd", str(BUILD / "libs3rdma.so")], capture_output=True,
                         text=True).stdout
    m = re.search(r"libasan\.so\S*\s*=>\s*(\S+)", out)
    return m.group(1) if m else None


def _asan_loaded():
    with open("/proc/self/maps") as f:
        return "libasan" in f.read()


ASAN_RUNTIME = asan_runtime()
RERUN_UNDER_ASAN = ASAN_RUNTIME is not None and not _asan_loaded()


def pytest_ignore_collect(collection_path, config):
    name = collection_path.name
    if not name.startswith("test_"):
        return None
    if RERUN_UNDER_ASAN:
        return name != "test_asan_subprocess.py"
    return True if name == "test_asan_subprocess.py" else None


def install_venv(dest: Path) -> Path:
    """Creates a venv at dest and pip-installs python/ into it (offline, against BUILD).
    The source is copied first so no build state from another build tree is reused.
    Returns the venv's site-packages."""
    src = dest.parent / "s3rdma-src"
    shutil.copytree(PKG, src, ignore=shutil.ignore_patterns("build", "*.egg-info",
                                                            "__pycache__", "*.so"))
    subprocess.run(["/usr/bin/python3", "-m", "venv", "--system-site-packages", str(dest)],
                   check=True)
    env = dict(os.environ, S3RDMA_BUILD=str(BUILD), S3RDMA_INCLUDE=str(REPO_ROOT / "include"),
               PIP_NO_INDEX="1", PIP_DISABLE_PIP_VERSION_CHECK="1")
    env.pop("LD_PRELOAD", None)  # the compiler must not run with ASan preloaded
    p = subprocess.run([str(dest / "bin" / "pip"), "install", "-q", str(src)], env=env,
                       capture_output=True, text=True)
    assert p.returncode == 0, f"pip install ./python failed:\n{p.stdout}\n{p.stderr}"
    return venv_site(dest)


def venv_site(venv: Path) -> Path:
    """The site-packages of a venv made by install_venv."""
    site = list(venv.glob("lib/python3*/site-packages"))
    assert len(site) == 1, site
    return site[0]


VENV = None
if not RERUN_UNDER_ASAN:
    if os.environ.get("S3RDMA_TEST_VENV"):  # test_asan_subprocess.py's child: its venv
        VENV = Path(os.environ["S3RDMA_TEST_VENV"])
    else:
        _tmp = Path(tempfile.mkdtemp(prefix="s3rdma-py-"))
        atexit.register(shutil.rmtree, _tmp, True)
        VENV = _tmp / "venv"
        install_venv(VENV)
    sys.path.insert(0, str(venv_site(VENV)))


@pytest.fixture(scope="session")
def venv():
    return VENV


@pytest.fixture(scope="session")
def rsrv(tmp_path_factory):
    s = RdmaServer(tmp_path_factory.mktemp("pysrv"), "py", {},  # metrics: the bytes' path
                   extra_args=["--metrics-enabled", "true", "--metrics-auth", "public"]).start()
    yield s
    s.stop()


@pytest.fixture(scope="session")
def boto(rsrv):
    return boto_client(rsrv)


@pytest.fixture
def rbucket(boto):
    name = new_bucket_name("py")
    boto.create_bucket(Bucket=name)
    yield name
    empty_bucket(boto, name)
    boto.delete_bucket(Bucket=name)


@pytest.fixture
def client(rsrv):
    import s3rdma
    made = []

    def factory(transport="native", user=USERS[0], **kw):
        kw.setdefault("quiet", True)
        c = s3rdma.Client(endpoint=rsrv.endpoint, rdma_endpoint=rsrv.rdma_endpoint,
                          access_key=user[0], secret_key=user[1], transport=transport, **kw)
        made.append(c)
        return c
    yield factory
    for c in made:
        c.close()


TRANSPORTS = ["http", "token", "native"]
# stats counter that must grow when an object moves over each transport
OPS_COUNTER = {"http": "http_ops", "token": "token_ops", "native": "native_ops"}
