"""scripts/check-layers: the real tree passes, and a tree with a deliberately
wrong include (or a README without its "May depend on" line) fails, naming
the file, the line and the README. The bad trees are small copies in
tmp_path: the script reads only src/*/README.md and src/**/*.[ch]."""
import shutil
import subprocess
import sys

from s3r_itest import REPO_ROOT

SCRIPT = REPO_ROOT / "scripts" / "check-layers"


def check(root=None):
    cmd = [sys.executable, str(SCRIPT)] + ([str(root)] if root else [])
    return subprocess.run(cmd, capture_output=True, text=True)


def tree(tmp_path):
    """A copy of every module's README, with one well-layered file each."""
    for readme in sorted((REPO_ROOT / "src").glob("*/README.md")):
        d = tmp_path / "src" / readme.parent.name
        d.mkdir(parents=True)
        shutil.copy(readme, d / "README.md")
    (tmp_path / "src" / "s3" / "ok.c").write_text(
        '#include <stdio.h>\n#include "common/log.h"\n#include "storage/storage.h"\n'
        '#include "s3/s3_util.h"\n')
    # S3 over RDMA is rdmafe's: it sees both contracts.
    (tmp_path / "src" / "rdmafe" / "ok.c").write_text(
        '#include "rdma/rdma_server.h"\n#include "s3/s3_request.h"\n#include "rdmafe/rdmafe.h"\n')
    (tmp_path / "src" / "storage" / "ok.c").write_text('#include "common/buf.h"\n')
    return tmp_path


def test_real_tree_passes():
    p = check()
    assert p.returncode == 0, p.stderr
    assert "check-layers: OK" in p.stdout


def test_well_layered_copy_passes(tmp_path):
    p = check(tree(tmp_path))
    assert p.returncode == 0, p.stderr


def test_upward_include_fails(tmp_path):
    root = tree(tmp_path)
    # storage sits below s3: it may not include an s3 header.
    (root / "src" / "storage" / "bad.c").write_text('#include "common/log.h"\n\n#include "s3/s3_util.h"\n')
    p = check(root)
    assert p.returncode == 1
    assert 'src/storage/bad.c:3: includes "s3/s3_util.h"' in p.stderr
    assert "src/storage/README.md" in p.stderr


def test_header_past_the_contract_fails(tmp_path):
    root = tree(tmp_path)
    # s3 may use storage only through storage.h; rdmafe may use rdma only
    # through its server contract and wire constants.
    (root / "src" / "s3" / "bad.c").write_text('#include "storage/local/local_internal.h"\n')
    (root / "src" / "rdmafe" / "bad.c").write_text(
        '#include "rdma/rdma_server.h"\n#include "rdma/rdma_server_internal.h"\n')
    p = check(root)
    assert p.returncode == 1
    assert 'src/s3/bad.c:1: includes "storage/local/local_internal.h"' in p.stderr
    assert 'src/rdmafe/bad.c:2: includes "rdma/rdma_server_internal.h"' in p.stderr
    assert "src/rdmafe/bad.c:1" not in p.stderr


def test_s3_includes_no_rdma_header(tmp_path):
    # The S3 layer knows no transport: an rdma include in s3 fails, its
    # contract header included.
    root = tree(tmp_path)
    (root / "src" / "s3" / "bad.c").write_text(
        '#include "common/log.h"\n#include "rdma/rdma_server.h"\n#include "rdma/rdma_wire.h"\n')
    p = check(root)
    assert p.returncode == 1
    assert ('src/s3/bad.c:2: includes "rdma/rdma_server.h": s3 may never depend on rdma'
            in p.stderr)
    assert 'src/s3/bad.c:3: includes "rdma/rdma_wire.h"' in p.stderr
    assert "src/s3/bad.c:1" not in p.stderr


def test_readme_cannot_allow_a_forbidden_edge(tmp_path):
    # A README that lets s3 depend on rdma (as s3's did before src/rdmafe)
    # fails by itself, and its rdma include still fails.
    root = tree(tmp_path)
    readme = root / "src" / "s3" / "README.md"
    readme.write_text("# src/s3\n\nMay depend on: `src/common`, `src/storage` (through "
                      "`storage.h` only) and `src/rdma/rdma_server.h`.\n")
    (root / "src" / "s3" / "bad.c").write_text('#include "rdma/rdma_server.h"\n')
    p = check(root)
    assert p.returncode == 1
    assert ('src/s3/README.md: "May depend on" names rdma, which s3 may never depend on'
            in p.stderr)
    assert 'src/s3/bad.c:1: includes "rdma/rdma_server.h"' in p.stderr


def test_client_never_uses_storage(tmp_path):
    root = tree(tmp_path)
    (root / "src" / "client" / "bad.h").write_text('#include "storage/storage.h"\n')
    p = check(root)
    assert p.returncode == 1
    assert 'src/client/bad.h:1: includes "storage/storage.h"' in p.stderr


def test_readme_without_the_line_fails(tmp_path):
    root = tree(tmp_path)
    (root / "src" / "rdma" / "README.md").write_text("# src/rdma\n\nNo dependency line.\n")
    p = check(root)
    assert p.returncode == 1
    assert 'src/rdma/README.md: no "May depend on" sentence' in p.stderr
