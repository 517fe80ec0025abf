"""scripts/check-prefixes: the build's static libraries (and libs3rdma's
object files) pass, and a library that gains a global symbol without its
module's prefix fails, naming the library, the symbol and its object file.
The bad libraries are copies of the build's libs3r_*.a and client objects in
tmp_path with one small object added (cc, ar)."""
import os
import shutil
import subprocess
import sys
from pathlib import Path

from s3r_itest import BINARY, REPO_ROOT

SCRIPT = REPO_ROOT / "scripts" / "check-prefixes"
BUILD = Path(os.environ.get("S3RDMA_BUILD") or Path(BINARY).parent).resolve()
LIBS = ["s3r_common", "s3r_storage", "s3r_rdma", "s3r_s3", "s3r_rdmafe", "s3r_http"]
CLIENT_OBJECTS = Path("CMakeFiles") / "s3rdma.dir" / "src" / "client"


def check(build):
    return subprocess.run([sys.executable, str(SCRIPT), str(build)],
                          capture_output=True, text=True)


def libs_copy(tmp_path):
    d = tmp_path / "build"
    d.mkdir()
    for lib in LIBS:
        shutil.copy(BUILD / f"lib{lib}.a", d / f"lib{lib}.a")
    shutil.copytree(BUILD / CLIENT_OBJECTS, d / CLIENT_OBJECTS)
    return d


def add_object(build, lib, name, code):
    """Compiles code as <name>.c.o (the member name CMake gives) into lib."""
    c = build / f"{name}.c"
    c.write_text(code)
    obj = build / f"{name}.c.o"
    subprocess.run(["cc", "-c", "-o", str(obj), str(c)], check=True)
    subprocess.run(["ar", "r", str(build / f"lib{lib}.a"), str(obj)], check=True,
                   capture_output=True)


def test_build_passes():
    p = check(BUILD)
    assert p.returncode == 0, p.stderr
    assert "check-prefixes: OK" in p.stdout


def test_unprefixed_global_fails(tmp_path):
    build = libs_copy(tmp_path)
    add_object(build, "s3r_storage", "stor_extra",
               "int stor_extra_count;\nstatic int hidden;\nint helper(void) { return hidden; }\n")
    p = check(build)
    assert p.returncode == 1
    assert "s3r_storage: helper (in stor_extra.c.o)" in p.stderr
    assert "stor_extra_count" not in p.stderr  # prefixed: fine
    assert "hidden" not in p.stderr            # static: not exported


def test_prefix_of_another_module_fails(tmp_path):
    build = libs_copy(tmp_path)
    # rdma_ is rdma's prefix: in the s3 library it is a misplaced name.
    add_object(build, "s3r_s3", "token_extra", "int rdma_token_extra(void) { return 1; }\n")
    p = check(build)
    assert p.returncode == 1
    assert "s3r_s3: rdma_token_extra (in token_extra.c.o)" in p.stderr


def test_common_names_follow_their_file(tmp_path):
    build = libs_copy(tmp_path)
    add_object(build, "s3r_common", "widget",
               "int widget_size(void) { return 1; }\nint gadget_size(void) { return 2; }\n")
    p = check(build)
    assert p.returncode == 1
    assert "s3r_common: gadget_size (in widget.c.o)" in p.stderr
    assert "widget_size" not in p.stderr


def test_client_internal_name_without_prefix_fails(tmp_path):
    build = libs_copy(tmp_path)
    # libs3rdma hides it (version script), but a bare global name in the
    # client says nothing of where it lives.
    c = tmp_path / "extra.c"
    c.write_text("int all_done;\nint s3c_all_done;\n")
    subprocess.run(["cc", "-c", "-o", str(build / CLIENT_OBJECTS / "extra.c.o"), str(c)],
                   check=True)
    p = check(build)
    assert p.returncode == 1
    assert "s3rdma: all_done (in extra.c.o)" in p.stderr
    assert "s3c_all_done" not in p.stderr
