"""The s3rdma CLI (build/s3rdma, docs/cli.md) against a real s3rdmad with RDMA on: every verb,
aws s3's path rules, recursion, stdin/stdout, sync, presign, the AWS environment and profiles
and their precedence, transfer lines, the progress bar (only on a terminal), exit codes, bad
arguments, and NoSuchBucket vs NoSuchKey over each transport."""
import os
import pty
import re
import subprocess
import urllib.request
import uuid
from pathlib import Path

import pytest

from s3r_itest import (REPO_ROOT, USERS, RdmaServer, boto_client, clean_env, empty_bucket,
                       free_port)

BUILD = Path(os.environ.get("S3RDMA_BUILD", REPO_ROOT / "build"))
CLI = BUILD / "s3rdma"
AK, SK = USERS[0]
MiB = 1024 * 1024


@pytest.fixture(scope="module")
def srv(tmp_path_factory):
    s = RdmaServer(tmp_path_factory.mktemp("cli"), "cli", {}).start()
    yield s
    s.stop()


@pytest.fixture(scope="module")
def s3(srv):
    return boto_client(srv)


def base_env(home, **extra):
    """No AWS_* or S3RDMA_* from the caller; HOME is a temp dir (no ~/.aws)."""
    env = {k: v for k, v in clean_env().items() if not k.startswith("AWS_")}
    env["HOME"] = str(home)
    env.update({k: str(v) for k, v in extra.items()})
    return env


def run(args, env, check=None, cwd=None, input=None):
    p = subprocess.run([str(CLI), *map(str, args)], env=env, capture_output=True, timeout=120,
                       cwd=cwd, input=input, stdin=None if input is not None else subprocess.DEVNULL)
    if check is not None:
        assert p.returncode == check, (args, p.returncode, p.stdout, p.stderr)
    return p


@pytest.fixture
def env(srv, tmp_path):
    """The usual way in: endpoint and keys from the AWS variables."""
    return base_env(tmp_path / "home", AWS_ENDPOINT_URL=srv.endpoint, AWS_ACCESS_KEY_ID=AK,
                    AWS_SECRET_ACCESS_KEY=SK, S3RDMA_RDMA_ENDPOINT=srv.rdma_endpoint)


@pytest.fixture
def bucket(srv, env):
    b = "cli-" + uuid.uuid4().hex[:12]
    run(["mb", f"s3://{b}"], env, check=0)
    yield b
    run(["rb", "--force", f"s3://{b}"], env)


def keys(s3, b):
    return sorted(o["Key"] for o in s3.list_objects_v2(Bucket=b).get("Contents", []))


# ----------------------------------------------------------------- no configuration needed

def test_help_and_version_need_no_credentials(tmp_path):
    env = base_env(tmp_path)
    for args in (["help"], ["--help"], ["-h"]):
        p = run(args, env, check=0)
        assert b"usage: s3rdma" in p.stdout and b"presign" in p.stdout and b"exit codes" in p.stdout
    for args in (["cp", "--help"], ["help", "cp"], ["cp", "a", "b", "-h"]):
        p = run(args, env, check=0)
        assert p.stdout.startswith(b"usage: s3rdma cp SOURCE DESTINATION"), p.stdout
    hdr = (REPO_ROOT / "include" / "s3rdma.h").read_text()
    ver = ".".join(re.search(rf"#define S3RDMA_VERSION_{x} (\d+)", hdr).group(1)
                   for x in ("MAJOR", "MINOR", "PATCH"))
    assert run(["--version"], env, check=0).stdout == f"s3rdma {ver}\n".encode()
    assert b"usage" in run([], env, check=2).stderr
    assert b"unknown verb" in run(["frobnicate"], env, check=2).stderr
    assert b"unknown verb" in run(["help", "frobnicate"], env, check=2).stderr
    p = run(["ls"], env, check=2)  # a real verb does need credentials, and says where to put them
    assert b"no credentials" in p.stderr and b"AWS_ACCESS_KEY_ID" in p.stderr


@pytest.mark.parametrize("args,msg", [
    (["cp", "s3://b/k"], b"SOURCE and DESTINATION"),
    (["cp", "a", "b"], b"must be an s3:// URL"),
    (["cp", "s3://b/dir/", "x"], b"add --recursive"),
    (["rm", "s3://b/dir/"], b"add --recursive"),
    (["mb", "not-a-url"], b"s3://BUCKET"),
    (["mb", "s3://b/k"], b"without a key"),
    (["ls", "s3://"], b"s3://BUCKET"),
    (["stat", "s3://b/"], b"not a prefix"),
    (["put", "s3://b/k", "f"], b"want FILE"),
    (["get", "s3://b/k", "s3://c/k"], b"want s3://BUCKET/KEY"),
    (["sync", "a", "b"], b"either way round"),
    (["mv", "-", "s3://b/k"], b"stdin"),
    (["cp", "-", "s3://b/dir/"], b"not a prefix"),
    (["presign", "s3://b/k", "--expires-in", "0"], b"604800"),
    (["--part-size", "8Mx", "ls"], b"bad size"),
    (["--meta", "novalue", "ls"], b"NAME=VALUE"),
    (["--bogus", "ls"], b"--help"),
    (["--transport", "pigeon", "ls"], b"want http, token, native or auto"),
    (["--endpoint-url", "ftp://x", "ls"], b"endpoint"),
    (["--version-id", "v", "put", "f", "s3://b/k"], b"--version-id names one object"),
    (["--version-id", "v", "-r", "rm", "s3://b/p/"], b"--version-id names one object"),
    (["--versions", "get", "s3://b/k"], b"--versions is an option of ls"),
    (["--versions", "ls"], b"--versions lists one bucket"),
    (["--version-id=", "get", "s3://b/k"], b"want a version id"),
])
def test_bad_arguments_exit_2(env, args, msg):
    p = run(args, env, check=2)
    assert msg in p.stderr, p.stderr
    assert p.stdout == b""


# ----------------------------------------------------------------- endpoint, keys, profiles

def test_endpoint_and_keys_from_the_environment(srv, tmp_path, bucket):
    home = tmp_path / "h"
    dead = f"http://127.0.0.1:{free_port()}"
    keys_env = dict(AWS_ACCESS_KEY_ID=AK, AWS_SECRET_ACCESS_KEY=SK)
    # AWS_ENDPOINT_URL is used; AWS_ENDPOINT_URL_S3 wins over it; the flag wins over both.
    assert bucket in run(["ls"], base_env(home, AWS_ENDPOINT_URL=srv.endpoint, **keys_env),
                         check=0).stdout.decode().split()
    run(["ls"], base_env(home, AWS_ENDPOINT_URL=dead, AWS_ENDPOINT_URL_S3=srv.endpoint,
                         **keys_env), check=0)
    p = run(["ls"], base_env(home, AWS_ENDPOINT_URL=srv.endpoint, AWS_ENDPOINT_URL_S3=dead,
                             **keys_env), check=1)
    assert b"could not connect" in p.stderr and b"hint: is s3rdmad running" in p.stderr
    run(["--endpoint-url", srv.endpoint, "ls"],
        base_env(home, AWS_ENDPOINT_URL_S3=dead, **keys_env), check=0)
    # No endpoint anywhere: the default (whatever answers there, if anything), and -v says so.
    p = run(["-v", "ls"], base_env(home, **keys_env))
    assert b"endpoint http://127.0.0.1:9000 (from default)" in p.stderr, p.stderr
    p = run(["-v", "ls"], base_env(home, AWS_ENDPOINT_URL=srv.endpoint, **keys_env), check=0)
    assert f"endpoint {srv.endpoint} (from AWS_ENDPOINT_URL)".encode() in p.stderr, p.stderr
    # Flags beat the environment's keys.
    env = base_env(home, AWS_ENDPOINT_URL=srv.endpoint, AWS_ACCESS_KEY_ID=AK,
                   AWS_SECRET_ACCESS_KEY="wrong")
    assert b"hint: check the access key" in run(["ls"], env, check=4).stderr
    run(["--access-key", AK, "--secret-key", SK, "ls"], env, check=0)
    # A region the server does not serve is refused; the right one by flag wins over env.
    env = base_env(home, AWS_ENDPOINT_URL=srv.endpoint, AWS_REGION="eu-west-9", **keys_env)
    assert run(["ls"], env).returncode != 0
    run(["--region", "us-east-1", "ls"], env, check=0)
    # AWS_REGION wins over AWS_DEFAULT_REGION.
    env.update(AWS_REGION="us-east-1", AWS_DEFAULT_REGION="eu-west-9")
    run(["ls"], env, check=0)


def write_profiles(home, cred_text, conf_text):
    aws = home / ".aws"
    aws.mkdir(parents=True, exist_ok=True)
    (aws / "credentials").write_text(cred_text)
    (aws / "config").write_text(conf_text)


def test_profiles_and_precedence(srv, tmp_path, bucket):
    home = tmp_path / "h"
    dead = f"http://127.0.0.1:{free_port()}"
    write_profiles(home,
                   f"[default]\naws_access_key_id = {AK}\naws_secret_access_key = {SK}\n"
                   f"[dev]\naws_access_key_id={AK}\naws_secret_access_key={SK}\n"
                   f"[badkeys]\naws_access_key_id = {AK}\naws_secret_access_key = nope\n",
                   f"[default]\nendpoint_url = {srv.endpoint}\nregion = us-east-1\n"
                   f"# a comment\n[profile dev]\nendpoint_url = {srv.endpoint}\n"
                   f"s3 =\n  endpoint_url = {dead}\n"
                   f"[profile badkeys]\nendpoint_url = {srv.endpoint}\n"
                   f"[profile deadend]\nendpoint_url = {dead}\n")
    # The default profile: keys from credentials, endpoint from config.
    p = run(["-v", "ls"], base_env(home), check=0)
    assert bucket in p.stdout.decode().split()
    assert b"endpoint " + srv.endpoint.encode() + b" (from profile default" in p.stderr
    # --profile and AWS_PROFILE pick [profile x] / [x]; nested blocks are not top-level keys.
    run(["--profile", "dev", "ls"], base_env(home), check=0)
    run(["ls"], base_env(home, AWS_PROFILE="dev"), check=0)
    run(["ls"], base_env(home, AWS_PROFILE="badkeys"), check=4)
    # The environment beats the profile: endpoint and keys.
    run(["ls"], base_env(home, AWS_PROFILE="deadend", AWS_ENDPOINT_URL=srv.endpoint,
                         AWS_ACCESS_KEY_ID=AK, AWS_SECRET_ACCESS_KEY=SK), check=0)
    run(["ls"], base_env(home, AWS_PROFILE="badkeys", AWS_ACCESS_KEY_ID=AK,
                         AWS_SECRET_ACCESS_KEY=SK), check=0)
    run(["ls"], base_env(home, AWS_ENDPOINT_URL=dead), check=1)
    # ... except that --profile on the command line beats the environment's keys (as aws).
    run(["--profile", "dev", "ls"], base_env(home, AWS_ACCESS_KEY_ID=AK,
                                             AWS_SECRET_ACCESS_KEY="wrong"), check=0)
    run(["--profile", "badkeys", "ls"], base_env(home, AWS_ACCESS_KEY_ID=AK,
                                                 AWS_SECRET_ACCESS_KEY=SK), check=4)
    # A profile named on purpose must exist.
    for args, env in ((["--profile", "nope", "ls"], base_env(home)),
                      (["ls"], base_env(home, AWS_PROFILE="nope"))):
        p = run(args, env, check=2)
        assert b'profile "nope"' in p.stderr and b"not found" in p.stderr
    # AWS_SHARED_CREDENTIALS_FILE and AWS_CONFIG_FILE move the files, as for the AWS CLI.
    other = tmp_path / "other"
    write_profiles(other, f"[x]\naws_access_key_id = {AK}\naws_secret_access_key = {SK}\n",
                   f"[profile x]\nendpoint_url = {srv.endpoint}\n")
    env = base_env(home, AWS_SHARED_CREDENTIALS_FILE=other / ".aws" / "credentials",
                   AWS_CONFIG_FILE=other / ".aws" / "config")
    run(["--profile", "x", "ls"], env, check=0)
    run(["--profile", "dev", "ls"], env, check=2)


def test_profile_endpoints_and_malformed_files(srv, tmp_path, bucket):
    """The shared files as libs3rdma reads them for every client (s3r_aws_settings_load):
    a profile's services section, AWS_IGNORE_CONFIGURED_ENDPOINT_URLS, and a file that does
    not parse stopping the CLI with the file and line rather than being half read."""
    home = tmp_path / "h"
    dead = f"http://127.0.0.1:{free_port()}"
    write_profiles(home, f"[default]\naws_access_key_id = {AK}\naws_secret_access_key = {SK}\n",
                   f"[default]\nendpoint_url = {dead}\nservices = here\n"
                   f"[services here]\ns3 =\n  endpoint_url = {srv.endpoint}\n")
    p = run(["-v", "ls"], base_env(home), check=0)
    assert bucket in p.stdout.decode().split()
    assert f"endpoint {srv.endpoint} (from profile default".encode() in p.stderr, p.stderr
    p = run(["-v", "ls"], base_env(home, AWS_IGNORE_CONFIGURED_ENDPOINT_URLS="true"))
    assert b"endpoint http://127.0.0.1:9000 (from default)" in p.stderr, p.stderr
    # A line the AWS CLI cannot parse either: exit 2 with the file and the line.
    (home / ".aws" / "config").write_text(f"[default]\nendpoint_url = {srv.endpoint}\n"
                                          "region us-east-1\n")
    p = run(["ls"], base_env(home), check=2)
    assert f"{home / '.aws' / 'config'}:3: ".encode() in p.stderr, p.stderr
    (home / ".aws" / "credentials").write_bytes(b"[default]\n[default]\n\xff")
    p = run(["ls"], base_env(home), check=2)
    assert f"{home / '.aws' / 'credentials'}:2: a section given twice".encode() in p.stderr


# ----------------------------------------------------------------- verbs and path rules

def test_cp_put_get_path_rules(env, s3, bucket, tmp_path):
    f = tmp_path / "f.txt"
    f.write_bytes(b"hello cli\n")
    # put into a prefix: the file's base name is appended (not a key "dir/")
    p = run(["put", f, f"s3://{bucket}/dir/"], env, check=0)
    assert p.stdout == f"upload: {f} to s3://{bucket}/dir/f.txt\n".encode()
    run(["cp", f, f"s3://{bucket}"], env, check=0)
    run(["cp", f, f"s3://{bucket}/named"], env, check=0)
    assert keys(s3, bucket) == ["dir/f.txt", "f.txt", "named"]
    # get into ., into an existing directory, into a directory-to-be (trailing /), to a file
    work = tmp_path / "work"
    (work / "existing").mkdir(parents=True)
    p = run(["get", f"s3://{bucket}/dir/f.txt"], env, check=0, cwd=work)
    assert p.stdout == f"download: s3://{bucket}/dir/f.txt to ./f.txt\n".encode()
    assert (work / "f.txt").read_bytes() == f.read_bytes()
    run(["cp", f"s3://{bucket}/named", "existing"], env, check=0, cwd=work)
    run(["cp", f"s3://{bucket}/named", "new/sub/"], env, check=0, cwd=work)
    run(["get", f"s3://{bucket}/named", "plain.out"], env, check=0, cwd=work)
    for path in ("existing/named", "new/sub/named", "plain.out"):
        assert (work / path).read_bytes() == f.read_bytes(), path
    # stdin and stdout
    data = os.urandom(3 * MiB + 5)
    p = run(["cp", "-", f"s3://{bucket}/stdin.bin"], env, check=0, input=data)
    assert s3.get_object(Bucket=bucket, Key="stdin.bin")["Body"].read() == data
    p = run(["cp", f"s3://{bucket}/stdin.bin", "-"], env, check=0)
    assert p.stdout == data
    assert run(["get", f"s3://{bucket}/named", "-"], env, check=0).stdout == f.read_bytes()
    # s3 -> s3 is a server-side copy; into a prefix it keeps the base name
    p = run(["cp", f"s3://{bucket}/named", f"s3://{bucket}/copies/"], env, check=0)
    assert p.stdout == f"copy: s3://{bucket}/named to s3://{bucket}/copies/named\n".encode()
    assert s3.get_object(Bucket=bucket, Key="copies/named")["Body"].read() == f.read_bytes()
    # content type and metadata travel with an upload
    run(["--content-type", "text/x-cli", "--meta", "a=b", "put", f, f"s3://{bucket}/m"], env,
        check=0)
    out = run(["stat", f"s3://{bucket}/m"], env, check=0).stdout.decode()
    assert "Content-Type:  text/x-cli" in out and "Meta:          a=b" in out
    assert f"Size:          {len(f.read_bytes())}" in out
    # mv moves, local files included
    g = tmp_path / "g.txt"
    g.write_bytes(b"move me")
    assert run(["mv", g, f"s3://{bucket}/moved/"], env, check=0).stdout.startswith(b"move: ")
    assert not g.exists()
    run(["mv", f"s3://{bucket}/moved/g.txt", f"s3://{bucket}/moved2"], env, check=0)
    run(["mv", f"s3://{bucket}/moved2", tmp_path / "back.txt"], env, check=0)
    assert (tmp_path / "back.txt").read_bytes() == b"move me"
    assert "moved2" not in keys(s3, bucket) and "moved/g.txt" not in keys(s3, bucket)
    # -q: no lines
    assert run(["-q", "cp", f, f"s3://{bucket}/quiet"], env, check=0).stdout == b""


def test_recursive_ls_rm_rb(env, s3, bucket, tmp_path):
    src = tmp_path / "tree"
    (src / "a" / "b").mkdir(parents=True)
    files = {"top.txt": b"1", "a/x.txt": b"22", "a/b/y.txt": b"333"}
    for rel, data in files.items():
        (src / rel).write_bytes(data)
    p = run(["cp", "--recursive", src, f"s3://{bucket}/t"], env, check=0)
    assert len(p.stdout.splitlines()) == 3
    assert keys(s3, bucket) == sorted("t/" + k for k in files)
    run(["put", src / "top.txt", f"s3://{bucket}/t2"], env, check=0)  # not under t/
    # ls with the delimiter: PRE lines and names relative to the prefix's directory
    out = run(["ls", f"s3://{bucket}"], env, check=0).stdout.decode().splitlines()
    assert re.fullmatch(r" {27}PRE t/", out[0]), out
    assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d +1 t2", out[1]), out
    out = run(["ls", f"s3://{bucket}/t/a/"], env, check=0).stdout.decode().splitlines()
    assert out[0].endswith(" PRE b/") and out[1].endswith(" 2 x.txt") and len(out) == 2, out
    out = run(["ls", f"s3://{bucket}/t/a"], env, check=0).stdout.decode().splitlines()
    assert out == [" " * 27 + "PRE a/"], out
    out = run(["ls", "-r", f"s3://{bucket}"], env, check=0).stdout.decode()
    assert [line.split()[-1] for line in out.splitlines()] == sorted(
        ["t/" + k for k in files] + ["t2"])
    # download the tree back (to a directory that does not exist yet)
    run(["cp", "-r", f"s3://{bucket}/t/", tmp_path / "back"], env, check=0)
    for rel, data in files.items():
        assert (tmp_path / "back" / rel).read_bytes() == data
    # s3 -> s3 recursive
    run(["cp", "-r", f"s3://{bucket}/t/a", f"s3://{bucket}/c/"], env, check=0)
    assert [k for k in keys(s3, bucket) if k.startswith("c/")] == ["c/b/y.txt", "c/x.txt"]
    # rm --recursive s3://b/t deletes t/ only, not t2
    p = run(["rm", "--recursive", f"s3://{bucket}/t"], env, check=0)
    assert sorted(p.stdout.decode().splitlines()) == sorted(
        f"delete: s3://{bucket}/t/{k}" for k in files)
    assert keys(s3, bucket) == ["c/b/y.txt", "c/x.txt", "t2"]
    run(["rm", f"s3://{bucket}/t2"], env, check=0)
    # rb refuses a bucket with objects (exit 1, says what to do); --force empties it first
    p = run(["rb", f"s3://{bucket}"], env, check=1)
    assert b"BucketNotEmpty" in p.stderr and b"rb --force" in p.stderr
    p = run(["rb", "--force", f"s3://{bucket}"], env, check=0)
    assert p.stdout.decode().splitlines()[-1] == f"remove_bucket: s3://{bucket}"
    assert bucket not in [b["Name"] for b in s3.list_buckets()["Buckets"]]


def test_sync_both_ways_copies_only_changes(env, s3, bucket, tmp_path):
    d = tmp_path / "d"
    (d / "sub").mkdir(parents=True)
    (d / "one").write_bytes(b"1")
    (d / "sub" / "two").write_bytes(b"22")
    url = f"s3://{bucket}/sync/"
    assert len(run(["sync", d, url], env, check=0).stdout.splitlines()) == 2
    assert run(["sync", d, url], env, check=0).stdout == b""  # nothing changed
    (d / "one").write_bytes(b"111")  # size differs
    p = run(["sync", d, url], env, check=0)
    assert p.stdout == f"upload: {d}/one to s3://{bucket}/sync/one\n".encode()
    back = tmp_path / "back"
    assert len(run(["sync", url, back], env, check=0).stdout.splitlines()) == 2
    assert (back / "one").read_bytes() == b"111" and (back / "sub" / "two").read_bytes() == b"22"
    assert run(["sync", url, back], env, check=0).stdout == b""
    s3.put_object(Bucket=bucket, Key="sync/sub/two", Body=b"changed")
    p = run(["sync", url, back], env, check=0)
    assert p.stdout == f"download: s3://{bucket}/sync/sub/two to {back}/sub/two\n".encode()
    assert (back / "sub" / "two").read_bytes() == b"changed"


def test_presign(env, bucket, tmp_path):
    run(["cp", "-", f"s3://{bucket}/p k"], env, check=0, input=b"presigned body")
    url = run(["presign", f"s3://{bucket}/p k", "--expires-in", "300"], env,
              check=0).stdout.decode().strip()
    assert "X-Amz-Expires=300" in url and "X-Amz-Signature=" in url
    with urllib.request.urlopen(url, timeout=10) as r:
        assert r.read() == b"presigned body"
    tampered = url.replace("X-Amz-Expires=300", "X-Amz-Expires=301")
    with pytest.raises(urllib.error.HTTPError) as e:
        urllib.request.urlopen(tampered, timeout=10)
    assert e.value.code == 403


# ----------------------------------------------------------------- output and errors

def test_progress_only_on_a_terminal(env, bucket, tmp_path):
    big = tmp_path / "big"
    big.write_bytes(os.urandom(6 * MiB))
    p = run(["put", big, f"s3://{bucket}/big"], env, check=0)  # stderr is a pipe
    assert p.stderr == b"" and p.stdout == f"upload: {big} to s3://{bucket}/big\n".encode()
    # stderr on a pseudo-terminal: the bar is drawn (the last report is always drawn)
    master, slave = pty.openpty()
    proc = subprocess.Popen([str(CLI), "get", f"s3://{bucket}/big", tmp_path / "big.out"],
                            env=env, stdout=subprocess.PIPE, stderr=slave,
                            stdin=subprocess.DEVNULL)
    os.close(slave)
    err = b""
    while True:
        try:
            chunk = os.read(master, 4096)
        except OSError:
            break
        if not chunk:
            break
        err += chunk
    out, _ = proc.communicate(timeout=60)
    os.close(master)
    assert proc.returncode == 0
    assert b"100%" in err and b"6.0 MiB / 6.0 MiB" in err and b"ETA" in err, err
    assert out.endswith(b"download: s3://%s/big to %s\n" % (bucket.encode(),
                                                             str(tmp_path / "big.out").encode()))
    assert (tmp_path / "big.out").read_bytes() == big.read_bytes()
    # -q: no bar even on a terminal
    master, slave = pty.openpty()
    proc = subprocess.Popen([str(CLI), "-q", "get", f"s3://{bucket}/big", tmp_path / "q.out"],
                            env=env, stdout=subprocess.PIPE, stderr=slave,
                            stdin=subprocess.DEVNULL)
    os.close(slave)
    out, _ = proc.communicate(timeout=60)
    try:
        rest = os.read(master, 4096)
    except OSError:
        rest = b""
    os.close(master)
    assert proc.returncode == 0 and out == b"" and rest == b""


@pytest.mark.parametrize("transport", ["http", "token", "native"])
def test_not_found_names_the_cause_on_every_transport(env, bucket, tmp_path, transport):
    run(["cp", "-", f"s3://{bucket}/present"], env, check=0, input=b"x" * 100)
    t = ["--transport", transport, "--no-fallback"]
    missing = "nob-" + uuid.uuid4().hex[:10]
    for verb_args in (["get", f"s3://{missing}/k", tmp_path / "o"],
                      ["get", f"s3://{missing}/k", "-"],
                      ["stat", f"s3://{missing}/k"]):
        p = run(t + verb_args, env, check=3)
        assert b"NoSuchBucket" in p.stderr and b"s3rdma mb" in p.stderr, (verb_args, p.stderr)
    for verb_args in (["get", f"s3://{bucket}/nokey", tmp_path / "o"],
                      ["get", f"s3://{bucket}/nokey", "-"],
                      ["stat", f"s3://{bucket}/nokey"]):
        p = run(t + verb_args, env, check=3)
        assert b"NoSuchKey" in p.stderr and b"NoSuchBucket" not in p.stderr, (verb_args, p.stderr)
    assert not (tmp_path / "o").exists()  # a failed download leaves no file
    # -v names the transport that carried the transfer
    p = run(t + ["-v", "get", f"s3://{bucket}/present", tmp_path / "ok"], env, check=0)
    assert f"download s3://{bucket}/present: via {transport}\n".encode() in p.stderr, p.stderr
    p = run(t + ["-v", "ls", f"s3://{bucket}"], env, check=0)
    via = "native" if transport == "native" else "http"  # listings never use the token path
    assert f"ls s3://{bucket}: via {via}\n".encode() in p.stderr, p.stderr
    p = run(t + ["--stats", "put", tmp_path / "nofile", f"s3://{bucket}/k"], env, check=3)
    assert b"no such file" in p.stderr and b"stats: http_ops=" in p.stderr



@pytest.mark.parametrize("transport", ["http", "token", "native"])
def test_versions_ls_get_rm_stat(env, s3, bucket, tmp_path, transport):
    """ls --versions, get/stat/rm --version-id against boto3's view of the bucket."""
    s3.put_bucket_versioning(Bucket=bucket, VersioningConfiguration={"Status": "Enabled"})
    t = ["--transport", transport, "--no-fallback"]
    try:
        for body in (b"first", b"second!"):
            run(t + ["cp", "-", f"s3://{bucket}/d/k"], env, check=0, input=body)
        v1, v2 = [v["VersionId"] for v in
                  reversed(s3.list_object_versions(Bucket=bucket)["Versions"])]
        p = run(t + ["get", f"s3://{bucket}/d/k", "-", "--version-id", v1], env, check=0)
        assert p.stdout == b"first"
        run(t + ["get", f"s3://{bucket}/d/k", tmp_path / "o", "--version-id", v1], env, check=0)
        assert (tmp_path / "o").read_bytes() == b"first"
        p = run(t + ["stat", f"s3://{bucket}/d/k", "--version-id", v1], env, check=0)
        assert f"VersionId:     {v1}\n".encode() in p.stdout and b"Size:          5\n" in p.stdout
        # rm writes a delete marker; ls --versions shows all three, newest first
        p = run(t + ["rm", f"s3://{bucket}/d/k"], env, check=0)
        marker = s3.list_object_versions(Bucket=bucket)["DeleteMarkers"][0]["VersionId"]
        assert f"(delete marker {marker})".encode() in p.stdout, p.stdout
        p = run(t + ["ls", "--versions", f"s3://{bucket}/d/"], env, check=0)
        lines = p.stdout.decode().splitlines()
        assert [ln.split()[2:] for ln in lines] == [["DELETE", marker, "k", "(latest)"],
                                                    ["7", v2, "k"], ["5", v1, "k"]], lines
        p = run(t + ["ls", "--versions", f"s3://{bucket}"], env, check=0)
        assert p.stdout.decode().split() == ["PRE", "d/"]
        p = run(t + ["ls", "--versions", "--recursive", f"s3://{bucket}"], env, check=0)
        assert [ln.split()[4] for ln in p.stdout.decode().splitlines()] == ["d/k"] * 3
        # rm --version-id removes a version for good
        run(t + ["rm", f"s3://{bucket}/d/k", "--version-id", v2], env, check=0)
        run(t + ["rm", f"s3://{bucket}/d/k", "--version-id", marker], env, check=0)
        assert [v["VersionId"] for v in s3.list_object_versions(Bucket=bucket)["Versions"]] \
            == [v1]
        assert s3.get_object(Bucket=bucket, Key="d/k")["Body"].read() == b"first"
        p = run(t + ["get", f"s3://{bucket}/d/k", "-", "--version-id", v2], env, check=3)
        assert b"NoSuchVersion" in p.stderr, p.stderr
    finally:
        empty_bucket(s3, bucket)
