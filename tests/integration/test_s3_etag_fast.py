"""etag: fast (docs/storage.md, "ETags"): a PutObject's integrity comes from
CRC32C, its ETag is opaque and shaped as a one-part multipart ETag
("<32 hex>-1"), and no MD5 is computed unless Content-MD5 is sent (then it is
verified and is the ETag). Objects written over HTTP, the token path and the
native protocol read back byte for byte through boto3, awscli, s3cmd and
rclone, each with its own integrity check on; the tools' own uploads pass
their post-upload ETag checks. Parts are hashed as PutObjects are (fast ETags
unless Content-MD5 is sent) and a completed upload's ETag stays "<32 hex>-N":
multipart uploads from every writer pass each tool's checks and read back."""
import hashlib
import os
import re
import subprocess
import uuid
from pathlib import Path

import pytest
from botocore.exceptions import ClientError

from s3r_itest import (REGION, REPO_ROOT, UCX_ENVS, USERS, RdmaServer, boto_client,
                       client_error, crc32c_b64, md5_b64, raw_request)

BUILD = Path(os.environ.get("S3RDMA_BUILD", REPO_ROOT / "build"))
CLI = BUILD / "s3rdma"
AK, SK = USERS[0]
FAST = re.compile(r'^"[0-9a-f]{32}-1"$')
MiB = 1024 * 1024


@pytest.fixture(scope="module")
def fsrv(tmp_path_factory):
    s = RdmaServer(tmp_path_factory.mktemp("etagfast"), "etagfast", UCX_ENVS["ucx-default"],
                   extra_args=["--etag", "fast"]).start()
    yield s
    s.stop()


@pytest.fixture(scope="module")
def s3(fsrv):
    return boto_client(fsrv)


@pytest.fixture(scope="module")
def bucket(s3):
    b = "ef-" + uuid.uuid4().hex[:10]
    s3.create_bucket(Bucket=b)
    return b


def tool_env(home):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("AWS_", "RCLONE_", "S3CMD")) and k.lower() not in
           ("http_proxy", "https_proxy")}
    env.update(HOME=str(home), PATH="/usr/bin:/bin:" + env.get("PATH", ""),
               NO_PROXY="127.0.0.1,localhost", no_proxy="127.0.0.1,localhost")
    return env


def run(args, env, timeout=180):
    p = subprocess.run([str(a) for a in args], env=env, capture_output=True, timeout=timeout,
                       stdin=subprocess.DEVNULL)
    assert p.returncode == 0, (args, p.returncode, p.stdout[-2000:], p.stderr[-3000:])
    return p


class Tools:
    """awscli, s3cmd and rclone configured for one server, in their own HOME."""

    def __init__(self, srv, home):
        self.env = tool_env(home)
        self.env.update(AWS_ACCESS_KEY_ID=AK, AWS_SECRET_ACCESS_KEY=SK, AWS_DEFAULT_REGION=REGION,
                        AWS_CONFIG_FILE=str(home / "aws-config"),
                        AWS_SHARED_CREDENTIALS_FILE=str(home / "aws-creds"), AWS_PAGER="",
                        AWS_EC2_METADATA_DISABLED="true")
        (home / "aws-config").write_text("[default]\nregion = us-east-1\n")
        self.aws = ["/usr/bin/aws", "--endpoint-url", srv.endpoint, "--no-cli-pager"]
        host = f"127.0.0.1:{srv.port}"
        (home / "s3cfg").write_text(
            f"[default]\naccess_key = {AK}\nsecret_key = {SK}\nhost_base = {host}\n"
            f"host_bucket = {host}\nuse_https = False\nsignature_v2 = False\n"
            f"bucket_location = {REGION}\n")
        self.s3cmd = ["/usr/bin/s3cmd", "-c", home / "s3cfg", "--no-ssl", f"--host={host}",
                      f"--host-bucket={host}"]
        (home / "rclone.conf").write_text(
            "[s3r]\ntype = s3\nprovider = Other\nenv_auth = false\n"
            f"access_key_id = {AK}\nsecret_access_key = {SK}\n"
            f"endpoint = {srv.endpoint}\nregion = {REGION}\nforce_path_style = true\n")
        self.rclone = ["/usr/bin/rclone", "--config", home / "rclone.conf", "--retries", "1",
                       "--low-level-retries", "1"]

    def put(self, tool, src, bucket, key):
        if tool == "awscli":
            run(self.aws + ["s3", "cp", src, f"s3://{bucket}/{key}"], self.env)
        elif tool == "s3cmd":
            # s3cmd compares a single-part upload's ETag with its MD5 unless
            # the ETag has a '-': an MD5-looking opaque ETag would fail here.
            run(self.s3cmd + ["put", src, f"s3://{bucket}/{key}"], self.env)
        else:
            run(self.rclone + ["copyto", src, f"s3r:{bucket}/{key}"], self.env)

    def get(self, tool, bucket, key, dst):
        if tool == "awscli":
            run(self.aws + ["s3", "cp", f"s3://{bucket}/{key}", dst], self.env)
        elif tool == "s3cmd":
            # s3cmd checks a downloaded object's MD5 against a plain ETag and
            # fails on a mismatch; "<hex>-1" tells it there is none to check.
            run(self.s3cmd + ["get", "--force", f"s3://{bucket}/{key}", dst], self.env)
        else:
            run(self.rclone + ["copyto", f"s3r:{bucket}/{key}", dst], self.env)
            # rclone's check, reading both sides byte for byte.
            run(self.rclone + ["check", "--download", Path(dst).parent,
                               f"s3r:{bucket}/{key.rsplit('/', 1)[0]}",
                               "--include", Path(dst).name], self.env)


def native_put(srv, transport, src, bucket, key):
    env = srv.client_env()
    env.update(AWS_ACCESS_KEY_ID=AK, AWS_SECRET_ACCESS_KEY=SK)
    run([CLI, "--endpoint", srv.endpoint, "--rdma-endpoint", srv.rdma_endpoint, "--transport",
         transport, "--no-fallback", "put", src, f"s3://{bucket}/{key}"], env)


def check_fast(s3, bucket, key, body):
    """The object is body, with a fast ETag and its CRC32C stored."""
    h = s3.head_object(Bucket=bucket, Key=key, ChecksumMode="ENABLED")
    assert FAST.match(h["ETag"]), h["ETag"]
    assert h["ContentLength"] == len(body)
    assert h.get("ChecksumCRC32C") == crc32c_b64(body)
    g = s3.get_object(Bucket=bucket, Key=key, ChecksumMode="ENABLED")
    assert g.get("ChecksumCRC32C") == crc32c_b64(body)
    assert g["Body"].read() == body  # botocore validates the CRC32C while reading
    return h["ETag"]


def test_put_gets_fast_etag_and_crc32c(s3, bucket):
    body = os.urandom(3 * MiB + 17)  # chunks past the MD5 offload size too
    # This botocore sends Content-MD5 with a PutObject unless another
    # checksum is asked for.
    r = s3.put_object(Bucket=bucket, Key="boto", Body=body, ChecksumAlgorithm="CRC32C")
    assert FAST.match(r["ETag"]), r["ETag"]
    assert r["ETag"] != '"' + hashlib.md5(body).hexdigest() + '"'
    assert r.get("ChecksumCRC32C") == crc32c_b64(body)
    assert check_fast(s3, bucket, "boto", body) == r["ETag"]
    # Every write gets its own ETag, so If-Match tells writes apart.
    r2 = s3.put_object(Bucket=bucket, Key="boto", Body=body, ChecksumAlgorithm="CRC32C")
    assert FAST.match(r2["ETag"]) and r2["ETag"] != r["ETag"]
    with pytest.raises(ClientError) as ei:
        s3.get_object(Bucket=bucket, Key="boto", IfMatch=r["ETag"])
    assert client_error(ei)[1] == 412
    assert s3.get_object(Bucket=bucket, Key="boto", IfMatch=r2["ETag"])["Body"].read() == body
    # Another checksum asked for comes as well.
    r = s3.put_object(Bucket=bucket, Key="sha", Body=b"abc", ChecksumAlgorithm="SHA256")
    assert FAST.match(r["ETag"]) and r.get("ChecksumSHA256") and r.get("ChecksumCRC32C")


def test_content_md5_is_still_verified(fsrv, s3, bucket):
    body = b"verified anyway" * 1000
    r = s3.put_object(Bucket=bucket, Key="md5", Body=body, ContentMD5=md5_b64(body))
    assert r["ETag"] == '"' + hashlib.md5(body).hexdigest() + '"'
    r = raw_request(fsrv.srv, "PUT", f"/{bucket}/md5bad", body=body,
                    headers={"Content-MD5": md5_b64(b"other")})
    assert r.status == 400 and r.error_code() == "BadDigest", r
    r = raw_request(fsrv.srv, "PUT", f"/{bucket}/crcbad", body=body,
                    headers={"x-amz-checksum-crc32c": crc32c_b64(b"other")})
    assert r.status == 400 and r.error_code() == "BadDigest", r
    for k in ("md5bad", "crcbad"):
        with pytest.raises(ClientError) as ei:
            s3.head_object(Bucket=bucket, Key=k)
        assert client_error(ei)[1] == 404


MPU = re.compile(r'^"[0-9a-f]{32}-[0-9]+"$')


def etag_bytes(etag):
    """The 16 bytes an MD5 or fast part ETag spells (docs/storage.md, "ETags")."""
    return bytes.fromhex(etag.strip('"')[:32])


def test_multipart_parts_get_fast_etags(s3, bucket):
    """A part sent without Content-MD5 gets CRC32C and a fast ETag, not an MD5; one sent
    with Content-MD5 gets its verified MD5, as a PutObject does. The object's ETag is
    multipart-shaped either way, S3's md5-of-md5s when every part has an MD5."""
    parts = [os.urandom(5 * MiB), os.urandom(5 * MiB + 3), os.urandom(1000)]
    uid = s3.create_multipart_upload(Bucket=bucket, Key="mpu", ChecksumAlgorithm="CRC32C")[
        "UploadId"]
    done = []
    for n, p in enumerate(parts, 1):
        # This botocore sends Content-MD5 with a part unless another checksum is asked for.
        r = s3.upload_part(Bucket=bucket, Key="mpu", UploadId=uid, PartNumber=n, Body=p,
                           ChecksumAlgorithm="CRC32C")
        assert FAST.match(r["ETag"]), r["ETag"]
        assert r["ETag"] != '"' + hashlib.md5(p).hexdigest() + '"'
        assert r.get("ChecksumCRC32C") == crc32c_b64(p)
        done.append({"PartNumber": n, "ETag": r["ETag"], "ChecksumCRC32C": crc32c_b64(p)})
    listed = s3.list_parts(Bucket=bucket, Key="mpu", UploadId=uid)["Parts"]
    assert [(x["ETag"], x["Size"], x.get("ChecksumCRC32C")) for x in listed] == [
        (d["ETag"], len(p), crc32c_b64(p)) for d, p in zip(done, parts)]
    # The part's MD5 is not its ETag: Complete refuses it, and the upload stays.
    wrong = [{"PartNumber": 1, "ETag": '"' + hashlib.md5(parts[0]).hexdigest() + '"'}] + done[1:]
    with pytest.raises(ClientError) as ei:
        s3.complete_multipart_upload(Bucket=bucket, Key="mpu", UploadId=uid,
                                     MultipartUpload={"Parts": wrong})
    assert client_error(ei)[:2] == ("InvalidPart", 400)
    r = s3.complete_multipart_upload(Bucket=bucket, Key="mpu", UploadId=uid,
                                     MultipartUpload={"Parts": done})
    want = hashlib.md5(b"".join(etag_bytes(d["ETag"]) for d in done)).hexdigest() + "-3"
    assert r["ETag"] == f'"{want}"'
    assert r["ETag"] != '"' + hashlib.md5(b"".join(
        hashlib.md5(p).digest() for p in parts)).hexdigest() + '-3"'
    # A Complete retried after its answer was lost gets the same ETag again.
    r2 = s3.complete_multipart_upload(Bucket=bucket, Key="mpu", UploadId=uid,
                                      MultipartUpload={"Parts": done})
    assert r2["ETag"] == r["ETag"]
    h = s3.head_object(Bucket=bucket, Key="mpu")
    assert h["ETag"] == r["ETag"] and h["ContentLength"] == sum(map(len, parts))
    assert s3.get_object(Bucket=bucket, Key="mpu")["Body"].read() == b"".join(parts)

    # Parts with Content-MD5 (botocore's default): verified, and their MD5s are the
    # ETags, so the object's is S3's md5-of-md5s (rclone checks it against its own).
    uid = s3.create_multipart_upload(Bucket=bucket, Key="mpu5")["UploadId"]
    done = []
    for n, p in enumerate(parts[::2], 1):
        r = s3.upload_part(Bucket=bucket, Key="mpu5", UploadId=uid, PartNumber=n, Body=p)
        assert r["ETag"] == '"' + hashlib.md5(p).hexdigest() + '"'
        done.append({"PartNumber": n, "ETag": r["ETag"]})
    with pytest.raises(ClientError) as ei:
        s3.upload_part(Bucket=bucket, Key="mpu5", UploadId=uid, PartNumber=3, Body=b"x",
                       ContentMD5=md5_b64(b"y"))
    assert client_error(ei)[:2] == ("BadDigest", 400)
    r = s3.complete_multipart_upload(Bucket=bucket, Key="mpu5", UploadId=uid,
                                     MultipartUpload={"Parts": done})
    want = hashlib.md5(b"".join(hashlib.md5(p).digest() for p in parts[::2])).hexdigest()
    assert r["ETag"] == f'"{want}-2"'
    # An MD5 part and a fast one: the object's ETag covers both.
    uid = s3.create_multipart_upload(Bucket=bucket, Key="mixed")["UploadId"]
    e1 = s3.upload_part(Bucket=bucket, Key="mixed", UploadId=uid, PartNumber=1,
                        Body=parts[0])["ETag"]
    e2 = s3.upload_part(Bucket=bucket, Key="mixed", UploadId=uid, PartNumber=2, Body=b"fast",
                        ChecksumAlgorithm="CRC32C")["ETag"]
    assert e1 == '"' + hashlib.md5(parts[0]).hexdigest() + '"' and FAST.match(e2), (e1, e2)
    r = s3.complete_multipart_upload(Bucket=bucket, Key="mixed", UploadId=uid, MultipartUpload={
        "Parts": [{"PartNumber": 1, "ETag": e1}, {"PartNumber": 2, "ETag": e2}]})
    want = hashlib.md5(etag_bytes(e1) + etag_bytes(e2)).hexdigest()
    assert r["ETag"] == f'"{want}-2"'
    assert s3.get_object(Bucket=bucket, Key="mixed")["Body"].read() == parts[0] + b"fast"


@pytest.mark.skipif(not all(os.path.exists(t) for t in
                            ("/usr/bin/aws", "/usr/bin/s3cmd", "/usr/bin/rclone")),
                    reason="awscli, s3cmd and rclone are needed")
def test_every_path_reads_back_through_every_tool(fsrv, s3, bucket, tmp_path):
    tools = Tools(fsrv, tmp_path)
    src = tmp_path / "src"
    src.mkdir()
    written = {}
    for how in ("http", "token", "native", "awscli", "s3cmd", "rclone"):
        body = os.urandom(2 * MiB + len(how))  # single part for every tool
        f = src / how
        f.write_bytes(body)
        key = f"w/{how}"
        if how == "http":
            s3.put_object(Bucket=bucket, Key=key, Body=body, ChecksumAlgorithm="CRC32C")
        elif how in ("token", "native"):
            native_put(fsrv, how, f, bucket, key)
        else:
            tools.put(how, f, bucket, key)
        written[key] = body
    for key, body in written.items():
        # A tool that sends Content-MD5 gets its MD5 as the ETag (awscli 1.45 and rclone
        # 1.60 here); s3cmd sends none, gets a fast ETag and its own post-upload check
        # (skipped for a '-' ETag) passes.
        h = s3.head_object(Bucket=bucket, Key=key)
        md5 = '"' + hashlib.md5(body).hexdigest() + '"'
        if key.split("/")[1] in ("http", "token", "native", "s3cmd"):
            assert FAST.match(h["ETag"]), (key, h["ETag"])
        assert FAST.match(h["ETag"]) or h["ETag"] == md5, (key, h["ETag"])
        if FAST.match(h["ETag"]):
            check_fast(s3, bucket, key, body)
        for tool in ("awscli", "s3cmd", "rclone"):
            dst = tmp_path / tool / key.rsplit("/", 1)[1]  # rclone check matches names
            dst.parent.mkdir(exist_ok=True)
            if dst.exists():
                dst.unlink()
            tools.get(tool, bucket, key, dst)
            assert dst.read_bytes() == body, (tool, key)


def md5_of_md5s(body, part):
    chunks = [body[i:i + part] for i in range(0, len(body), part)]
    return '"' + hashlib.md5(b"".join(hashlib.md5(c).digest() for c in chunks)).hexdigest() + \
        f'-{len(chunks)}"'


@pytest.mark.skipif(not all(os.path.exists(t) for t in
                            ("/usr/bin/aws", "/usr/bin/s3cmd", "/usr/bin/rclone")),
                    reason="awscli, s3cmd and rclone are needed")
def test_multipart_uploads_read_back_through_every_tool(fsrv, s3, bucket, tmp_path):
    """Multipart uploads in 5 MiB parts under etag: fast from every writer: the tools'
    own checks of part and object ETags pass (s3cmd compares each part's ETag with its
    MD5 unless it has a '-'; rclone, told to, compares the object's with its md5-of-md5s;
    it sends Content-MD5 with each part, so its parts keep MD5 ETags), and every object
    reads back byte for byte through every tool."""
    tools = Tools(fsrv, tmp_path)
    (tmp_path / "aws-mp").write_text("[default]\nregion = us-east-1\ns3 =\n"
                                     "  multipart_threshold = 5MB\n  multipart_chunksize = 5MB\n")
    aws_env = dict(tools.env, AWS_CONFIG_FILE=str(tmp_path / "aws-mp"))
    src = tmp_path / "src"
    src.mkdir()
    written = {}
    for how in ("token", "native", "awscli", "s3cmd", "rclone"):
        # past the CLI's multipart threshold (16 MiB): 4 parts of 5 MiB at most
        body = os.urandom(16 * MiB + 1 + len(how))
        f = src / how
        f.write_bytes(body)
        key = f"mp/{how}"
        if how in ("token", "native"):
            env = fsrv.client_env()
            env.update(AWS_ACCESS_KEY_ID=AK, AWS_SECRET_ACCESS_KEY=SK)
            run([CLI, "--endpoint", fsrv.endpoint, "--rdma-endpoint", fsrv.rdma_endpoint,
                 "--transport", how, "--no-fallback", "--part-size", "5MiB", "put", f,
                 f"s3://{bucket}/{key}"], env)
        elif how == "awscli":  # Content-MD5 with every part (2.9 has no --checksum-algorithm)
            run(tools.aws + ["s3", "cp", f, f"s3://{bucket}/{key}"], aws_env)
        elif how == "s3cmd":
            run(tools.s3cmd + ["--multipart-chunk-size-mb=5", "put", f, f"s3://{bucket}/{key}"],
                tools.env)
        else:
            run(tools.rclone + ["--s3-upload-cutoff", "5M", "--s3-chunk-size", "5M",
                                "--s3-use-multipart-etag", "true", "copyto", f,
                                f"s3r:{bucket}/{key}"], tools.env)
        written[key] = body
    for key, body in written.items():
        how = key.split("/")[1]
        etag = s3.head_object(Bucket=bucket, Key=key)["ETag"]
        assert MPU.match(etag) and etag.endswith('-4"'), (key, etag)
        # Parts sent with Content-MD5 keep MD5 ETags (awscli, rclone); the others
        # (libs3rdma, s3cmd) got fast ETags, so the object's is no md5-of-md5s.
        if how in ("awscli", "rclone"):
            assert etag == md5_of_md5s(body, 5 * MiB), (key, etag)
        else:
            assert etag != md5_of_md5s(body, 5 * MiB), (key, etag)
        assert s3.get_object(Bucket=bucket, Key=key)["Body"].read() == body, key
        for tool in ("awscli", "s3cmd", "rclone"):
            dst = tmp_path / tool / how
            dst.parent.mkdir(exist_ok=True)
            if dst.exists():
                dst.unlink()
            tools.get(tool, bucket, key, dst)
            assert dst.read_bytes() == body, (tool, key)
