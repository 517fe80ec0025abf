"""A hostile authenticated native client cannot crash or stall the server
(docs/security.md, issue 17).

tests/attack/s3r_native_hostile opens an honest RDMA session and sends every
native opcode with each required field missing in turn (bucket, key, each
param, the body, a GET's out span), empty or given twice, with unexpected
fields (a bucket, key or body where none is taken, unknown and misplaced
params), with out spans valid, one byte long, past the registered region and in
an unknown region, bodies by region inside and past it, each under
reply_inline_max 0, 1 and 16384. Every request must get a reply (an error one
naming its S3 error code) and after each the server must still answer a
HeadBucket and a byte-exact GetObject.
Runs under UCX's default transports and UCX_TLS=tcp.
"""
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from s3r_itest import REPO_ROOT, UCX_ENVS, USERS, RdmaServer, boto_client  # noqa: E402

HOSTILE = Path(os.environ.get("S3RDMA_BUILD", REPO_ROOT / "build")) / "tests" / "s3r_native_hostile"
OPCODES = ["PutObject", "GetObject", "HeadObject", "DeleteObject", "DeleteObjects", "ListObjects",
           "CopyObject", "CreateBucket", "DeleteBucket", "HeadBucket", "ListBuckets",
           "CreateMultipartUpload", "UploadPart", "CompleteMultipartUpload",
           "AbortMultipartUpload", "ListParts", "ListMultipartUploads", "UploadPartCopy",
           "GetBucketLocation", "ListObjectVersions"]
# The configuration opcodes (21-50) and the subresource each needs.
CONFIG_OPCODES = {
    "GetObjectTagging": "tagging", "PutObjectTagging": "tagging",
    "DeleteObjectTagging": "tagging", "GetObjectRetention": "retention",
    "PutObjectRetention": "retention", "GetObjectLegalHold": "legal-hold",
    "PutObjectLegalHold": "legal-hold", "GetObjectAcl": "acl", "PutObjectAcl": "acl",
    "GetBucketVersioning": "versioning", "PutBucketVersioning": "versioning",
    "GetBucketLifecycleConfiguration": "lifecycle", "PutBucketLifecycleConfiguration": "lifecycle",
    "DeleteBucketLifecycle": "lifecycle", "GetObjectLockConfiguration": "object-lock",
    "PutObjectLockConfiguration": "object-lock", "GetBucketTagging": "tagging",
    "PutBucketTagging": "tagging", "DeleteBucketTagging": "tagging", "GetBucketPolicy": "policy",
    "PutBucketPolicy": "policy", "DeleteBucketPolicy": "policy", "GetBucketCors": "cors",
    "PutBucketCors": "cors", "DeleteBucketCors": "cors", "GetBucketEncryption": "encryption",
    "PutBucketEncryption": "encryption", "DeleteBucketEncryption": "encryption",
    "GetBucketAcl": "acl", "PutBucketAcl": "acl"}


# One server per UCX setting and test: a server the test kills fails that test
# alone (its teardown), not the next setting's.
@pytest.fixture(params=sorted(UCX_ENVS))
def srv(request, tmp_path):
    s = RdmaServer(tmp_path, "hostile", UCX_ENVS[request.param]).start()
    yield s
    s.stop()


def test_every_opcode_with_fields_missing_or_unexpected(srv):
    assert HOSTILE.exists(), f"{HOSTILE} is not built"
    ak, sk = USERS[0]
    bucket = "hostile-" + uuid.uuid4().hex[:12]
    env = {**os.environ, **srv.ucx_env}
    p = subprocess.run([str(HOSTILE), "127.0.0.1", str(srv.rdma_port), ak, sk, bucket],
                       env=env, capture_output=True, text=True, timeout=600)
    lines = p.stdout.splitlines()
    fails = [ln for ln in lines if "FAIL" in ln]
    assert p.returncode == 0, ("\n".join(fails[:20]) + "\n" + "\n".join(lines[-3:]) + "\n"
                               + p.stderr + "\nserver log:\n" + srv.srv.log_tail(40))
    assert not fails
    # Every opcode was tried, each under the three reply_inline_max values.
    for name in OPCODES + list(CONFIG_OPCODES):
        for rim in (0, 1, 16384):
            assert any(f" {name} " in ln and f"rim={rim}:" in ln for ln in lines), (name, rim)
    assert lines[-1].endswith(" failed") and " 0 failed" in lines[-1], lines[-1]
    # A copy without its source is refused before the handler, as the opcode's
    # declaration says (regression: the handler dereferenced the absent
    # x-amz-copy-source and the server died).
    for name in ("CopyObject", "UploadPartCopy"):
        for rim in (0, 1, 16384):
            case = f" {name} no-param:x-amz-copy-source rim={rim}: "
            got = [ln for ln in lines if case in ln]
            assert got and got[0].endswith(": 400 InvalidArgument"), (case, got)
    # Over HTTP x-amz-copy-source makes a PUT a copy: on any other opcode it is
    # refused, never ignored.
    for name in ("PutObject", "UploadPart", "GetObject", "DeleteObject"):
        case = f" {name} extra-copy-source rim=16384: "
        got = [ln for ln in lines if case in ln]
        assert got and got[0].endswith(": 400 InvalidArgument"), (case, got)
    # A configuration opcode is held to its row before its handler runs: without its
    # subresource, with it twice, with a key where it takes none (or none where it needs
    # one), a body where it takes none, it is refused with S3's error.
    for name, sub in CONFIG_OPCODES.items():
        for case, want in ((f"no-param:{sub}", "400 InvalidArgument"),
                           (f"dup-param:{sub}", "400 InvalidArgument"),
                           ("extra-params", "400 InvalidArgument"),
                           ("extra-copy-source", "400 InvalidArgument"),
                           ("extra-upload-id", "400 InvalidArgument"),
                           ("no-bucket", "400 InvalidRequest"),
                           ("no-key" if name.startswith(("GetObject", "PutObject",
                                                         "DeleteObject"))
                            and "Lock" not in name else "extra-key", "400 InvalidRequest")):
            got = [ln for ln in lines if f" {name} {case} rim=16384: " in ln]
            assert got and got[0].endswith(": " + want), (name, case, got)
        if name.startswith(("Get", "Delete")):
            got = [ln for ln in lines if f" {name} extra-body rim=16384: " in ln]
            assert got and got[0].endswith(": 400 InvalidRequest"), (name, got)
        elif name not in ("PutObjectAcl", "PutBucketAcl"):
            got = [ln for ln in lines if f" {name} no-body rim=16384: " in ln]
            assert got and got[0].endswith(": 400 MalformedXML"), (name, got)
    # The server lives and HTTP still works.
    assert srv.srv.alive(), srv.srv.log_tail()
    s3 = boto_client(srv)
    assert s3.head_object(Bucket=bucket, Key="known")["ContentLength"] == 100000
