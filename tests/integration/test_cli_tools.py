"""Real S3 command-line tools against s3rdmad: awscli, s3cmd, rclone.
Each does mb / cp (a small file and a 20 MB file, which goes multipart) / ls / get-and-compare / rm / rb."""
import hashlib
import os
import shutil
import subprocess

import pytest

from s3r_itest import REGION, USERS, new_bucket_name

AK, SK = USERS[0]
BIG = 20 * 1024 * 1024


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("cli-files")
    small = d / "small.txt"
    small.write_bytes(b"hello from the cli test\n" * 10)
    big = d / "big.bin"
    big.write_bytes(os.urandom(BIG))
    return small, big


def clean_env(home):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("AWS_", "RCLONE_", "S3CMD")) and k not in ("HTTP_PROXY", "HTTPS_PROXY",
                                                                         "http_proxy", "https_proxy")}
    env["HOME"] = str(home)
    env["PATH"] = "/usr/bin:/bin:" + env.get("PATH", "")
    env["NO_PROXY"] = env["no_proxy"] = "127.0.0.1,localhost"
    return env


def run(args, env, timeout=180, check=True):
    p = subprocess.run(args, env=env, capture_output=True, timeout=timeout, stdin=subprocess.DEVNULL)
    if check and p.returncode != 0:
        raise AssertionError(f"{' '.join(map(str, args))} -> {p.returncode}\n"
                             f"stdout: {p.stdout.decode(errors='replace')[-3000:]}\n"
                             f"stderr: {p.stderr.decode(errors='replace')[-3000:]}")
    return p


def sha(path):
    return hashlib.sha256(open(path, "rb").read()).hexdigest()


def check_server_side(s3, bucket, small, big, small_key="small.txt", big_key="big.bin", mp=True):
    h = s3.head_object(Bucket=bucket, Key=small_key)
    assert h["ContentLength"] == small.stat().st_size
    h = s3.head_object(Bucket=bucket, Key=big_key)
    assert h["ContentLength"] == BIG
    if mp:
        assert "-" in h["ETag"], f"expected a multipart ETag, got {h['ETag']}"
    body = s3.get_object(Bucket=bucket, Key=big_key)["Body"].read()
    assert hashlib.sha256(body).hexdigest() == sha(big)


# ----------------------------------------------------------------- awscli

def test_awscli(server, s3, files, tmp_path):
    if not os.path.exists("/usr/bin/aws"):
        pytest.skip("/usr/bin/aws not installed")
    small, big = files
    env = clean_env(tmp_path)
    env.update(AWS_ACCESS_KEY_ID=AK, AWS_SECRET_ACCESS_KEY=SK, AWS_DEFAULT_REGION=REGION,
               AWS_CONFIG_FILE=str(tmp_path / "aws-config"),
               AWS_SHARED_CREDENTIALS_FILE=str(tmp_path / "aws-creds"),
               AWS_PAGER="", AWS_EC2_METADATA_DISABLED="true")
    (tmp_path / "aws-config").write_text("[default]\nregion = us-east-1\ns3 =\n"
                                         "  multipart_threshold = 8MB\n  multipart_chunksize = 8MB\n")
    aws = ["/usr/bin/aws", "--endpoint-url", server.endpoint, "--no-cli-pager"]
    b = new_bucket_name("awscli")
    run(aws + ["s3", "mb", f"s3://{b}"], env)
    run(aws + ["s3", "cp", str(small), f"s3://{b}/small.txt"], env)
    run(aws + ["s3", "cp", str(big), f"s3://{b}/big.bin"], env)
    out = run(aws + ["s3", "ls", f"s3://{b}/"], env).stdout.decode()
    assert "small.txt" in out and "big.bin" in out and str(BIG) in out, out
    out = run(aws + ["s3", "ls"], env).stdout.decode()
    assert b in out
    check_server_side(s3, b, small, big)
    run(aws + ["s3", "cp", f"s3://{b}/big.bin", str(tmp_path / "big.out")], env)
    assert sha(tmp_path / "big.out") == sha(big)
    run(aws + ["s3", "cp", f"s3://{b}/small.txt", str(tmp_path / "small.out")], env)
    assert (tmp_path / "small.out").read_bytes() == small.read_bytes()
    # s3api
    out = run(aws + ["s3api", "head-object", "--bucket", b, "--key", "small.txt"], env).stdout.decode()
    assert '"ContentLength": %d' % small.stat().st_size in out, out
    # sync a directory, then remove recursively
    d = tmp_path / "syncdir"
    (d / "sub").mkdir(parents=True)
    for i in range(5):
        (d / "sub" / f"f{i}").write_bytes(os.urandom(100 + i))
    run(aws + ["s3", "sync", str(d), f"s3://{b}/sync/"], env)
    assert s3.list_objects_v2(Bucket=b, Prefix="sync/")["KeyCount"] == 5
    run(aws + ["s3", "rm", f"s3://{b}/small.txt"], env)
    run(aws + ["s3", "rm", "--recursive", f"s3://{b}/"], env)
    assert s3.list_objects_v2(Bucket=b)["KeyCount"] == 0
    run(aws + ["s3", "rb", f"s3://{b}"], env)
    assert b not in [x["Name"] for x in s3.list_buckets()["Buckets"]]


# ----------------------------------------------------------------- s3cmd

def test_s3cmd(server, s3, files, tmp_path):
    if not os.path.exists("/usr/bin/s3cmd"):
        pytest.skip("/usr/bin/s3cmd not installed")
    small, big = files
    env = clean_env(tmp_path)
    cfg = tmp_path / "s3cfg"
    cfg.write_text(
        "[default]\n"
        f"access_key = {AK}\nsecret_key = {SK}\n"
        f"host_base = {server.host}\nhost_bucket = {server.host}\n"
        "use_https = False\nsignature_v2 = False\n"
        f"bucket_location = {REGION}\n"
        "multipart_chunk_size_mb = 5\n"
        "check_ssl_certificate = False\n")
    s3cmd = ["/usr/bin/s3cmd", "-c", str(cfg), "--no-ssl", f"--host={server.host}",
             f"--host-bucket={server.host}", f"--access_key={AK}", f"--secret_key={SK}",
             f"--region={REGION}"]
    b = new_bucket_name("s3cmd")
    run(s3cmd + ["mb", f"s3://{b}"], env)
    run(s3cmd + ["put", str(small), f"s3://{b}/small.txt"], env)
    run(s3cmd + ["put", str(big), f"s3://{b}/big.bin"], env)
    out = run(s3cmd + ["ls", f"s3://{b}/"], env).stdout.decode()
    assert "small.txt" in out and "big.bin" in out, out
    out = run(s3cmd + ["ls"], env).stdout.decode()
    assert b in out
    check_server_side(s3, b, small, big)
    run(s3cmd + ["get", f"s3://{b}/big.bin", str(tmp_path / "big.out")], env)
    assert sha(tmp_path / "big.out") == sha(big)
    run(s3cmd + ["get", f"s3://{b}/small.txt", str(tmp_path / "small.out")], env)
    assert (tmp_path / "small.out").read_bytes() == small.read_bytes()
    out = run(s3cmd + ["info", f"s3://{b}/small.txt"], env).stdout.decode()
    assert "small.txt" in out
    run(s3cmd + ["cp", f"s3://{b}/small.txt", f"s3://{b}/copy.txt"], env)
    assert s3.get_object(Bucket=b, Key="copy.txt")["Body"].read() == small.read_bytes()
    run(s3cmd + ["del", f"s3://{b}/small.txt"], env)
    run(s3cmd + ["del", "--recursive", "--force", f"s3://{b}/"], env)
    assert s3.list_objects_v2(Bucket=b)["KeyCount"] == 0
    run(s3cmd + ["rb", f"s3://{b}"], env)
    assert b not in [x["Name"] for x in s3.list_buckets()["Buckets"]]


# ----------------------------------------------------------------- rclone

def test_rclone(server, s3, files, tmp_path):
    if not shutil.which("rclone", path="/usr/bin"):
        pytest.skip("/usr/bin/rclone not installed")
    small, big = files
    env = clean_env(tmp_path)  # AWS_CA_BUNDLE must not be set: rclone fails on it
    assert "AWS_CA_BUNDLE" not in env
    cfg = tmp_path / "rclone.conf"
    cfg.write_text(
        "[s3r]\ntype = s3\nprovider = Other\nenv_auth = false\n"
        f"access_key_id = {AK}\nsecret_access_key = {SK}\n"
        f"endpoint = {server.endpoint}\nregion = {REGION}\nforce_path_style = true\n")
    rc = ["/usr/bin/rclone", "--config", str(cfg), "--retries", "1", "--low-level-retries", "1",
          "--s3-upload-cutoff", "5M", "--s3-chunk-size", "5M"]
    b = new_bucket_name("rclone")
    run(rc + ["mkdir", f"s3r:{b}"], env)
    assert b in [x["Name"] for x in s3.list_buckets()["Buckets"]]
    run(rc + ["copyto", str(small), f"s3r:{b}/small.txt"], env)
    run(rc + ["copyto", str(big), f"s3r:{b}/big.bin"], env)
    out = run(rc + ["lsl", f"s3r:{b}"], env).stdout.decode()
    assert "small.txt" in out and "big.bin" in out and str(BIG) in out, out
    check_server_side(s3, b, small, big)
    run(rc + ["copyto", f"s3r:{b}/big.bin", str(tmp_path / "big.out")], env)
    assert sha(tmp_path / "big.out") == sha(big)
    run(rc + ["copyto", f"s3r:{b}/small.txt", str(tmp_path / "small.out")], env)
    assert (tmp_path / "small.out").read_bytes() == small.read_bytes()
    # rclone's own integrity check (size + md5 / ETag)
    run(rc + ["check", str(files[0].parent), f"s3r:{b}"], env)
    run(rc + ["deletefile", f"s3r:{b}/small.txt"], env)
    out = run(rc + ["lsf", f"s3r:{b}"], env).stdout.decode()
    assert out.split() == ["big.bin"], out
    run(rc + ["purge", f"s3r:{b}"], env)
    assert b not in [x["Name"] for x in s3.list_buckets()["Buckets"]]
