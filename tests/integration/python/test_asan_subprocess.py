"""ASan pass only (see conftest.py): runs this directory's tests in a child pytest with
the ASan runtime preloaded, since CPython cannot load an ASan libs3rdma otherwise."""
import os
import subprocess
import sys
from pathlib import Path

from conftest import ASAN_RUNTIME

HERE = Path(__file__).resolve().parent


def test_python_package_under_asan():
    env = dict(os.environ, LD_PRELOAD=ASAN_RUNTIME)
    # CPython itself is not instrumented; its allocations are not ours to judge.
    env["ASAN_OPTIONS"] = env.get("ASAN_OPTIONS", "detect_leaks=0") + ":detect_leaks=0"
    p = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                        "-x", str(HERE)], env=env, capture_output=True, text=True,
                       timeout=1500)
    assert p.returncode == 0, f"child pytest under ASan failed:\n{p.stdout[-20000:]}\n" \
                              f"{p.stderr[-5000:]}"
    assert " passed" in p.stdout and "test_asan_subprocess" not in p.stdout
