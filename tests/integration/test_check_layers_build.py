"""The build enforces the layers: each target's include path holds only the
headers of the modules it links (their contract headers), plus its own
module's, so a wrong include fails at compile time, not only in
scripts/check-layers (test_check_layers.py).

Each case compiles a one-line probe with the exact command the build uses for
a real file of a module (from the build's compile_commands.json): what that
file could include, the probe can, and nothing more. A probe that must fail
is checked to fail on the missing header (not on some other error), and each
module has a control probe that compiles, so the command itself is sound.

Needs a configured build (S3RDMA_BUILD, default build/); configuring alone is
enough, nothing is linked."""
import json
import os
import shlex
import subprocess
from pathlib import Path

import pytest

from s3r_itest import BINARY

BUILD = Path(os.environ.get("S3RDMA_BUILD") or Path(BINARY).parent).resolve()


def compile_command(source):
    """The build's compile command for the file whose path ends in source."""
    db = json.loads((BUILD / "compile_commands.json").read_text())
    hits = [e for e in db if e["file"].endswith("/" + source)]
    assert len(hits) == 1, f"{source}: {len(hits)} entries in compile_commands.json"
    return hits[0]


def probe(tmp_path, source, header):
    """Compiles `#include "header"` with the flags the build gives source."""
    entry = compile_command(source)
    args = shlex.split(entry["command"])
    c = tmp_path / "probe.c"
    c.write_text(f'#include "{header}"\nint layer_probe;\n')
    out, skip = [], 0
    for a in args:
        if skip:
            skip -= 1
            continue
        if a in ("-o", "-c", "-MF", "-MT"):
            skip = 1
            continue
        if a in ("-MD", "-MMD"):
            continue
        out.append(a)
    out += ["-o", str(tmp_path / "probe.o"), "-c", str(c)]
    return subprocess.run(out, cwd=entry["directory"], capture_output=True, text=True)


# (a file of the target, a header it may include, headers it may not)
CASES = [
    # storage sits on common only.
    ("src/storage/stor_api.c", "storage/local/local_internal.h",
     ["s3/s3_util.h", "s3/s3_server.h", "rdma/rdma_server.h", "http/http_server.h"]),
    # rdma sits on common only.
    ("src/rdma/rdma_session.c", "common/log.h",
     ["storage/storage.h", "s3/s3_request.h"]),
    # s3 sees storage through its contract only, no transport: neither rdma
    # (not even its contract) nor http nor rdmafe.
    ("src/s3/ops_object.c", "storage/storage.h",
     ["storage/local/local_internal.h", "storage/rados/rados_internal.h",
      "rdma/rdma_server.h", "rdma/rdma_wire.h", "rdma/rdma_server_internal.h",
      "http/http_server.h", "rdmafe/rdmafe.h"]),
    ("src/s3/token.c", "s3/s3_request.h", ["rdma/rdma_server.h", "rdmafe/rdma_error.h"]),
    # rdmafe joins the s3 and rdma contracts, no internals of either.
    ("src/rdmafe/native.c", "rdma/rdma_server.h",
     ["rdma/rdma_server_internal.h", "s3/acl.h", "http/http_server.h"]),
    # s3rdmad sees rdmafe's contract, not its internals.
    ("src/server/main.c", "rdmafe/rdmafe.h", ["rdmafe/rdma_error.h", "s3/acl.h"]),
    # http sees the s3 contract, not its internals, and no transport module
    # (the header names it shares with libs3rdma are common/proto_headers.h's).
    ("src/http/http_router.c", "s3/s3_request.h",
     ["s3/acl.h", "storage/local/local_internal.h", "rdma/rdma_wire.h", "rdma/rdma_server.h"]),
    # libs3rdma: common and the rdma client contract, never storage or s3.
    ("src/client/client.c", "rdma/rdma_client.h",
     ["storage/storage.h", "s3/s3_server.h", "rdma/rdma_server_internal.h"]),
    # tools and programs over libs3rdma: include/s3rdma.h, nothing of src/.
    ("src/tools/cli_main.c", "s3rdma.h",
     ["common/log.h", "client/client_internal.h", "rdma/rdma_client.h"]),
    ("src/tools/bench/main.c", "s3rdma.h", ["common/clock.h", "storage/storage.h"]),
    ("tests/client/s3r_driver.c", "s3rdma.h", ["common/log.h", "tools/cli.h"]),
    # a unit test of storage links storage only.
    ("tests/unit/storage/test_storage.c", "storage/local/local_syncer.h",
     ["s3/s3_util.h", "rdma/rdma_wire.h"]),
]


@pytest.mark.parametrize("source,good,bad", CASES, ids=[c[0] for c in CASES])
def test_target_sees_only_what_it_links(tmp_path, source, good, bad):
    p = probe(tmp_path, source, good)
    assert p.returncode == 0, f"control probe {good} for {source} failed:\n{p.stderr}"
    for header in bad:
        p = probe(tmp_path, source, header)
        assert p.returncode != 0, f"{source}'s target can include {header}"
        assert f"{header}: No such file or directory" in p.stderr, p.stderr


def test_storage_source_with_an_s3_include_fails(tmp_path):
    """The case the issue names: a real storage source (a copy of stor_api.c
    under tmp/src/storage/) with one added include of an s3 header stops
    compiling under the build's command for it; without that line it
    compiles."""
    entry = compile_command("src/storage/stor_api.c")
    src = Path(entry["file"]).read_text()
    bad = tmp_path / "src" / "storage"
    bad.mkdir(parents=True)
    (bad / "stor_api.c").write_text('#include "s3/s3_util.h"\n' + src)
    args = [a if a != entry["file"] else str(bad / "stor_api.c")
            for a in shlex.split(entry["command"])]
    args = [a for a in args if a not in ("-MD", "-MMD")]
    i = args.index("-o")
    args[i + 1] = str(tmp_path / "stor_api.o")
    p = subprocess.run(args, cwd=entry["directory"], capture_output=True, text=True)
    assert p.returncode != 0
    assert "s3/s3_util.h: No such file or directory" in p.stderr, p.stderr
    # The same file without the wrong line compiles with the same command.
    (bad / "stor_api.c").write_text(src)
    p = subprocess.run(args, cwd=entry["directory"], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
