"""Fixtures for the tests of the Python package (python/, `s3rdma`).

The package is installed the way its README says: `pip install ./python` into a fresh
`/usr/bin/python3 -m venv --system-site-packages`, built against $S3RDMA_BUILD (default
build/). The venv's site-packages then goes on this process's sys.path, so the tests
below import that installed copy; test_venv.py also runs the venv's own interpreter.

The install (1-3 minutes under load) happens once per process, when the first test of
this directory is about to run (pytest_runtest_setup), not at collection: under xdist
every worker collects every file, and a worker that runs no test from here must not pay
for it. Until then sys.modules["s3rdma"] is a stand-in (_DeferredPackage), so a test
module's top-level `import s3rdma` collects without the package; the hook rebinds that
name to the installed package before the test runs. A test module must therefore not use
s3rdma at its top level beyond `import s3rdma` (no `from s3rdma... import` there: bind
such names in a fixture, see test_torch.py).

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
import importlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
import types
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


_venv = None


def ensure_venv() -> Path:
    """The venv this process imports s3rdma from, with its site-packages first on sys.path:
    test_asan_subprocess.py's $S3RDMA_TEST_VENV in its child pytest, otherwise one made
    by install_venv on the first call (removed at exit)."""
    global _venv
    if _venv is None:
        if os.environ.get("S3RDMA_TEST_VENV"):
            venv = Path(os.environ["S3RDMA_TEST_VENV"])
        else:
            tmp = Path(tempfile.mkdtemp(prefix="s3rdma-py-"))
            atexit.register(shutil.rmtree, tmp, True)
            venv = tmp / "venv"
            install_venv(venv)
        sys.path.insert(0, str(venv_site(venv)))
        if "fsspec" in sys.modules:  # imported at collection: it reads entry points
            sys.modules["fsspec"].process_entries()  # once, so s3rdma:// is added here
        _venv = venv
    return _venv


def import_installed():
    """The installed s3rdma package (installing it first), in place of the stand-in."""
    ensure_venv()
    if isinstance(sys.modules.get("s3rdma"), _DeferredPackage):
        del sys.modules["s3rdma"]
    return importlib.import_module("s3rdma")


class _DeferredPackage(types.ModuleType):
    """sys.modules["s3rdma"] until import_installed: lets `import s3rdma` at a test
    module's top level collect without the package. Reading a public attribute (or
    __file__, __path__, __version__) installs and forwards to the real package or its
    submodule; names with a leading underscore are absent, so collection's introspection
    (pytest reads _pytestfixturefunction off every global) installs nothing."""

    def __getattr__(self, name):
        if name.startswith("_") and name not in ("__file__", "__path__", "__version__"):
            raise AttributeError(name)
        real = import_installed()
        try:
            return getattr(real, name)
        except AttributeError:
            return importlib.import_module(f"s3rdma.{name}")


if not RERUN_UNDER_ASAN and "s3rdma" not in sys.modules:
    sys.modules["s3rdma"] = _DeferredPackage("s3rdma")


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    """Installs the package before the first test of this directory runs (on this worker
    only) and points the test module's `s3rdma` at it."""
    if RERUN_UNDER_ASAN:
        return
    real = import_installed()
    module = getattr(item, "module", None)
    if module is not None and isinstance(vars(module).get("s3rdma"), _DeferredPackage):
        module.s3rdma = real


@pytest.fixture(scope="session")
def venv():
    return ensure_venv()


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
