"""The s3rdma CLI never writes or deletes a local file outside the directory it was told to
write into (issue 17, item 3): keys whose local name has a '..' or '.' segment, starts with
'/' or '\\', or does so with '\\' as the separator are skipped with a warning naming the key,
the rest are copied, and the command exits 1. A moved key that was skipped keeps its
source. The keys are stored verbatim (boto3 sends them as they are; the listing proves it)."""
import os
from pathlib import Path

import pytest

from test_cli import bucket, env, keys, run, s3, srv  # noqa: F401 (fixtures)

GOOD = {"data/ok.txt": b"ok", "data/sub/deep.txt": b"deep", "data/..x": b"dots in a name"}
# key -> why the CLI refuses it (a word of its warning)
HOSTILE = {
    "data/../../escaped.txt": "'..'",        # dl/../../escaped.txt: two levels above dl
    "data/sub/../../../up.txt": "'..'",
    "data//abs.txt": "absolute",             # "/abs.txt" below the prefix
    "data/a\\..\\..\\..\\bs.txt": "'..'",    # '\\' is a separator too
    "data/\\root.txt": "absolute",
    "data/./dot.txt": "'.'",
}


def snapshot(root: Path):
    """Every file and directory under root, with file contents."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for n in dirnames:
            out[os.path.relpath(os.path.join(dirpath, n), root)] = None
        for n in filenames:
            p = os.path.join(dirpath, n)
            out[os.path.relpath(p, root)] = Path(p).read_bytes()
    return out


@pytest.fixture
def loaded(s3, bucket):  # noqa: F811
    for k, v in {**GOOD, **HOSTILE}.items():
        s3.put_object(Bucket=bucket, Key=k, Body=v if k in GOOD else b"evil")
    assert set(keys(s3, bucket)) == set(GOOD) | set(HOSTILE)  # stored verbatim
    return bucket


def check_refused(p, bucket, hostile=HOSTILE):
    err = p.stderr.decode()
    assert p.returncode == 1, (p.returncode, p.stdout, err)
    for k, why in hostile.items():
        line = next((ln for ln in err.splitlines() if f"s3://{bucket}/{k}:" in ln), None)
        assert line is not None and "skipping" in line and why in line, (k, err)


def expected_dl(prefix="data/"):
    want = {"dl": None}
    for k, v in GOOD.items():
        rel = k[len(prefix):]
        parts = rel.split("/")
        for i in range(1, len(parts)):
            want[os.path.join("dl", *parts[:i])] = None
        want[os.path.join("dl", rel)] = v
    return want


@pytest.mark.parametrize("verb", ["cp", "mv"])
def test_recursive_download_stays_inside(env, s3, loaded, tmp_path, verb):  # noqa: F811
    work = tmp_path / "a" / "b"
    work.mkdir(parents=True)
    before = snapshot(tmp_path)
    p = run([verb, "--recursive", f"s3://{loaded}/data/", "dl"], env, cwd=work)
    check_refused(p, loaded)
    after = snapshot(tmp_path)
    new = {k: v for k, v in after.items() if k not in before}
    assert new == {os.path.join("a", "b", k): v for k, v in expected_dl().items()}
    # mv deleted the sources it copied and none of the ones it skipped
    left = set(keys(s3, loaded))
    assert left == (set(HOSTILE) if verb == "mv" else set(GOOD) | set(HOSTILE))


def test_recursive_download_of_the_whole_bucket(env, s3, bucket, tmp_path):  # noqa: F811
    """Keys at the bucket's top: a leading '/' or '\\' is an absolute path."""
    for k in ("/abs.txt", "\\win.txt", "../up.txt", "top.txt"):
        s3.put_object(Bucket=bucket, Key=k, Body=b"x")
    work = tmp_path / "w"
    work.mkdir()
    p = run(["cp", "-r", f"s3://{bucket}", "dl"], env, cwd=work)
    check_refused(p, bucket, {"/abs.txt": "absolute", "\\win.txt": "absolute",
                              "../up.txt": "'..'"})
    assert snapshot(tmp_path) == {"w": None, "w/dl": None, "w/dl/top.txt": b"x"}


def test_sync_down_stays_inside(env, s3, loaded, tmp_path):  # noqa: F811
    work = tmp_path / "a" / "b"
    work.mkdir(parents=True)
    p = run(["sync", f"s3://{loaded}/data/", "dl"], env, cwd=work)
    check_refused(p, loaded)
    assert snapshot(tmp_path) == {"a": None, "a/b": None,
                                  **{os.path.join("a", "b", k): v
                                     for k, v in expected_dl().items()}}


def test_get_into_a_directory_checks_the_base_name(env, s3, bucket, tmp_path):  # noqa: F811
    """get/cp of one key into a directory names the file after the key's base name, which
    obeys the same rule ('\\' separates there too)."""
    k = "in\\..\\..\\x.txt"
    s3.put_object(Bucket=bucket, Key=k, Body=b"x")
    (tmp_path / "dl").mkdir()
    p = run(["get", f"s3://{bucket}/{k}", "dl/"], env, cwd=tmp_path)
    check_refused(p, bucket, {k: "'..'"})
    assert snapshot(tmp_path) == {"dl": None}
    # a file named explicitly is the user's choice: no rule applies
    run(["get", f"s3://{bucket}/{k}", "dl/named.txt"], env, cwd=tmp_path, check=0)
    assert snapshot(tmp_path) == {"dl": None, "dl/named.txt": b"x"}
