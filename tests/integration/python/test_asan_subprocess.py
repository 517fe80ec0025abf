"""ASan pass only (see conftest.py): runs each file of this directory in a child pytest
with the ASan runtime preloaded, since CPython cannot load an ASan libs3rdma otherwise.
One test per file, so CI's xdist workers share them out (tests/integration/s3r_xdist.py);
the children share one venv, installed once per worker."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ASAN_RUNTIME, install_venv

HERE = Path(__file__).resolve().parent
FILES = sorted(p.name for p in HERE.glob("test_*.py") if p.name != Path(__file__).name)


@pytest.fixture(scope="session")
def asan_venv(tmp_path_factory):
    venv = tmp_path_factory.mktemp("asan-py") / "venv"
    install_venv(venv)
    return venv


@pytest.mark.parametrize("name", FILES)
def test_python_package_under_asan(asan_venv, name):
    env = dict(os.environ, LD_PRELOAD=ASAN_RUNTIME, S3RDMA_TEST_VENV=str(asan_venv))
    # CPython itself is not instrumented; its allocations are not ours to judge.
    env["ASAN_OPTIONS"] = env.get("ASAN_OPTIONS", "detect_leaks=0") + ":detect_leaks=0"
    p = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                        "-x", str(HERE / name)], env=env, capture_output=True, text=True,
                       timeout=1500)
    assert p.returncode == 0, f"child pytest under ASan failed:\n{p.stdout[-20000:]}\n" \
                              f"{p.stderr[-5000:]}"
    # A file whose tests all skip (torch missing) skips here as in the release pass.
    assert (" passed" in p.stdout or " skipped" in p.stdout) \
        and "test_asan_subprocess" not in p.stdout
