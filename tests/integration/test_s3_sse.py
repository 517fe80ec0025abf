"""Server-side encryption at rest as AWS S3 answers it: SSE-C (customer keys on every
request, key MD5 checked, copy-source keys), SSE-S3 (server master keys from
sse.master_key_file), SSE-KMS through the built-in local keyring (sse.kms_keyring_file),
bucket default encryption (Put/Get/DeleteBucketEncryption); multipart uploads; ranged GETs; the bytes on disk are never the plaintext; and the native RDMA
protocol reading and writing the same encrypted objects (s3r_driver, both UCX settings)."""
import base64
import hashlib
import os
import re
import subprocess

import pytest
from botocore.exceptions import ClientError

from s3r_itest import (UCX_ENVS, USERS, RdmaServer, assert_error, boto_client, free_port,
                       raw_request)

BUILD = os.environ.get("S3RDMA_BUILD", "build")
DRIVER = os.path.join(BUILD, "tests", "s3r_driver")

KEY_A = "customer-key-A-0123456789abcdef!"  # 32 bytes: boto3 takes the raw key as text
KEY_B = "customer-key-B-0123456789abcdef!"


def sse_c(key=KEY_A, prefix=""):
    """boto3's SSE-C parameters (CopySource* with prefix="CopySource"); boto3 sends the
    key base64-encoded with its MD5."""
    return {f"{prefix}SSECustomerAlgorithm": "AES256", f"{prefix}SSECustomerKey": key}


def key_md5(key=KEY_A):
    return base64.b64encode(hashlib.md5(key.encode()).digest()).decode()


def raw_sse_c(key=KEY_A.encode(), md5_of=None, alg="AES256", prefix="x-amz-"):
    h = {f"{prefix}server-side-encryption-customer-algorithm": alg,
         f"{prefix}server-side-encryption-customer-key": base64.b64encode(key).decode(),
         f"{prefix}server-side-encryption-customer-key-MD5":
             base64.b64encode(hashlib.md5(md5_of or key).digest()).decode()}
    return {k: v for k, v in h.items() if v is not None}


def plaintext(n, tag):
    """Recognisable bytes: any 64-byte window of them found on disk is a leak."""
    unit = (f"PLAINTEXT-{tag}-" * 8).encode()
    return (unit * (n // len(unit) + 1))[:n]


def file_holds(path, needle, chunk=1 << 20):
    """Whether the file holds needle, reading only its data: the index of a relaxed
    server is a sparse file the size of LMDB's map (1 TiB), mostly holes."""
    fd = os.open(path, os.O_RDONLY)
    try:
        size, off = os.fstat(fd).st_size, 0
        while off < size:
            try:
                off = os.lseek(fd, off, os.SEEK_DATA)
            except OSError:  # ENXIO: no data after off
                return False
            end = os.lseek(fd, off, os.SEEK_HOLE)
            tail = b""
            while off < end:
                block = tail + os.pread(fd, min(chunk, end - off), off)
                if needle in block:
                    return True
                off += len(block) - len(tail)
                tail = block[-(len(needle) - 1):]
        return False
    finally:
        os.close(fd)


def disk_holds(data_dir, needle):
    """Whether any file under data_dir (object files and the index) holds needle. A
    file the server unlinks while the walk runs (a relaxed sync point dropping an
    overwritten object's file) holds nothing any more."""
    for root, _, files in os.walk(data_dir):
        for f in files:
            try:
                if file_holds(os.path.join(root, f), needle):
                    return True
            except FileNotFoundError:
                pass
    return False


@pytest.fixture(scope="module")
def master_key_file(tmp_path_factory):
    p = tmp_path_factory.mktemp("sse-keys") / "master.keys"
    p.write_text("# SSE-S3 master keys\n" + os.urandom(32).hex() + "\n")
    p.chmod(0o600)
    return p


@pytest.fixture(scope="module")
def keyring_file(tmp_path_factory):
    """SSE-KMS's local keyring: "alpha" (the default key) and "beta"."""
    p = tmp_path_factory.mktemp("sse-kms") / "keyring"
    p.write_text(f"alpha {os.urandom(32).hex()}\nbeta {os.urandom(32).hex()}\n")
    p.chmod(0o600)
    return p


def sse_server(tmp, name, ucx_env, keys, keyring):
    return RdmaServer(tmp, name, ucx_env, extra_args=[
        "--sse-master-key-file", str(keys), "--sse-kms-keyring-file", str(keyring),
        "--sse-c-over-plain-http", "true"]).start()


@pytest.fixture(scope="module")
def ssrv(tmp_path_factory, master_key_file, keyring_file):
    s = sse_server(tmp_path_factory.mktemp("sse"), "sse", UCX_ENVS["ucx-default"],
                   master_key_file, keyring_file)
    yield s
    s.stop()


@pytest.fixture(scope="module")
def es3(ssrv):
    return boto_client(ssrv)


@pytest.fixture
def ebucket(es3):
    name = "sse-" + os.urandom(6).hex()
    es3.create_bucket(Bucket=name)
    yield name
    for o in es3.list_objects_v2(Bucket=name).get("Contents", []):
        es3.delete_object(Bucket=name, Key=o["Key"])
    es3.delete_bucket(Bucket=name)


# ---- SSE-C ----------------------------------------------------------------------------------

@pytest.mark.parametrize("size", [100, 3 * 1024 * 1024 + 5])
def test_sse_c_round_trip_and_disk(es3, ssrv, ebucket, size):
    data = plaintext(size, f"c{size}")
    r = es3.put_object(Bucket=ebucket, Key="k", Body=data, **sse_c())
    assert r["SSECustomerAlgorithm"] == "AES256"
    assert r["SSECustomerKeyMD5"] == key_md5()
    got = es3.get_object(Bucket=ebucket, Key="k", **sse_c())
    assert got["Body"].read() == data and got["SSECustomerAlgorithm"] == "AES256"
    h = es3.head_object(Bucket=ebucket, Key="k", **sse_c())
    assert h["ContentLength"] == size
    # Ranged GETs decrypt at any offset, block-aligned or not.
    for a, b in ((0, 0), (1, 17), (15, 16), (size - 33, size - 1), (size // 2, size // 2 + 4099)):
        part = es3.get_object(Bucket=ebucket, Key="k", Range=f"bytes={a}-{b}", **sse_c())
        assert part["Body"].read() == data[a:b + 1], (a, b)
    # Neither the bytes nor the key are on disk.
    assert not disk_holds(ssrv.srv.data_dir, data[:64])
    assert not disk_holds(ssrv.srv.data_dir, KEY_A.encode())
    # The check: a plain object of the same shape is found on disk.
    es3.put_object(Bucket=ebucket, Key="plain", Body=plaintext(size, f"p{size}"))
    assert disk_holds(ssrv.srv.data_dir, plaintext(size, f"p{size}")[:64])


def test_sse_c_refusals(es3, ssrv, ebucket):
    es3.put_object(Bucket=ebucket, Key="k", Body=b"secret", **sse_c())
    es3.put_object(Bucket=ebucket, Key="plain", Body=b"plain")
    # No key: 400 InvalidRequest, on GET and HEAD.
    with pytest.raises(ClientError) as e:
        es3.get_object(Bucket=ebucket, Key="k")
    assert_error(e, "InvalidRequest", 400)
    with pytest.raises(ClientError) as e:
        es3.head_object(Bucket=ebucket, Key="k")
    assert e.value.response["ResponseMetadata"]["HTTPStatusCode"] == 400
    # Another key: 403 AccessDenied.
    with pytest.raises(ClientError) as e:
        es3.get_object(Bucket=ebucket, Key="k", **sse_c(KEY_B))
    assert_error(e, "AccessDenied", 403)
    # A key for a plain object: 400.
    with pytest.raises(ClientError) as e:
        es3.get_object(Bucket=ebucket, Key="plain", **sse_c())
    assert_error(e, "InvalidRequest", 400)
    path = f"/{ebucket}/n"
    cases = [
        (raw_sse_c(md5_of=KEY_B.encode()), "InvalidArgument"),             # MD5 of another key
        (raw_sse_c(key=b"short"), "InvalidArgument"),            # not 256 bits
        (raw_sse_c(alg="AES128"), "InvalidEncryptionAlgorithmError"),
        ({k: v for k, v in raw_sse_c().items() if not k.endswith("algorithm")}, "InvalidArgument"),
        ({k: v for k, v in raw_sse_c().items() if not k.endswith("MD5")}, "InvalidArgument"),
        ({**raw_sse_c(), "x-amz-server-side-encryption": "AES256"}, "InvalidArgument"),
    ]
    for headers, code in cases:
        r = raw_request(ssrv.srv, "PUT", path, headers=headers, body=b"x")
        assert r.status == 400 and r.error_code() == code, (headers, r)
    with pytest.raises(ClientError) as e:
        es3.head_object(Bucket=ebucket, Key="n")
    assert e.value.response["ResponseMetadata"]["HTTPStatusCode"] == 404
    # GetObjectAttributes of an SSE-C object needs its key too.
    with pytest.raises(ClientError) as e:
        es3.get_object_attributes(Bucket=ebucket, Key="k", ObjectAttributes=["ObjectSize"])
    assert_error(e, "InvalidRequest", 400)
    # (boto3 sends no SSE-C key with this call: raw, signed.)
    r = raw_request(ssrv.srv, "GET", f"/{ebucket}/k", query=[("attributes", None)],
                    headers={"x-amz-object-attributes": "ObjectSize", **raw_sse_c()})
    assert r.status == 200 and b"<ObjectSize>6</ObjectSize>" in r.body, r


def test_sse_c_copy(es3, ssrv, ebucket):
    data = plaintext(70000, "copy")
    es3.put_object(Bucket=ebucket, Key="src", Body=data, **sse_c())
    src = {"Bucket": ebucket, "Key": "src"}
    # Without the source's key: 400; with another: 403.
    with pytest.raises(ClientError) as e:
        es3.copy_object(Bucket=ebucket, Key="dst", CopySource=src)
    assert_error(e, "InvalidRequest", 400)
    with pytest.raises(ClientError) as e:
        es3.copy_object(Bucket=ebucket, Key="dst", CopySource=src, **sse_c(KEY_B, "CopySource"))
    assert_error(e, "AccessDenied", 403)
    # Re-keyed copy, and a copy to SSE-S3, and a copy to plain: each reads back.
    es3.copy_object(Bucket=ebucket, Key="rekeyed", CopySource=src, **sse_c(KEY_A, "CopySource"),
                    **sse_c(KEY_B))
    assert es3.get_object(Bucket=ebucket, Key="rekeyed", **sse_c(KEY_B))["Body"].read() == data
    es3.copy_object(Bucket=ebucket, Key="managed", CopySource=src, ServerSideEncryption="AES256",
                    **sse_c(KEY_A, "CopySource"))
    got = es3.get_object(Bucket=ebucket, Key="managed")
    assert got["Body"].read() == data and got["ServerSideEncryption"] == "AES256"
    es3.copy_object(Bucket=ebucket, Key="plain", CopySource=src, **sse_c(KEY_A, "CopySource"))
    got = es3.get_object(Bucket=ebucket, Key="plain")
    assert got["Body"].read() == data and "ServerSideEncryption" not in got


# ---- SSE-S3, default encryption, KMS ----------------------------------------------------------

def test_sse_s3_round_trip_and_disk(es3, ssrv, ebucket):
    data = plaintext(2 * 1024 * 1024 + 3, "s3")
    r = es3.put_object(Bucket=ebucket, Key="k", Body=data, ServerSideEncryption="AES256")
    assert r["ServerSideEncryption"] == "AES256"
    got = es3.get_object(Bucket=ebucket, Key="k")
    assert got["Body"].read() == data and got["ServerSideEncryption"] == "AES256"
    assert es3.head_object(Bucket=ebucket, Key="k")["ServerSideEncryption"] == "AES256"
    part = es3.get_object(Bucket=ebucket, Key="k", Range="bytes=1000001-1000100")
    assert part["Body"].read() == data[1000001:1000101]
    assert not disk_holds(ssrv.srv.data_dir, data[:64])
    # An SSE-S3 object takes no customer key.
    with pytest.raises(ClientError) as e:
        es3.get_object(Bucket=ebucket, Key="k", **sse_c())
    assert_error(e, "InvalidRequest", 400)
    with pytest.raises(ClientError) as e:
        es3.put_object(Bucket=ebucket, Key="x", Body=b"x", ServerSideEncryption="AES512")
    assert_error(e, "InvalidArgument", 400)
    with pytest.raises(ClientError) as e:
        es3.put_object(Bucket=ebucket, Key="x", Body=b"x", ServerSideEncryption="aws:kms:dsse")
    assert_error(e, "NotImplemented", 501)
    # A read names no server-side key: the write-side headers are refused (S3's answer).
    for headers in ({"x-amz-server-side-encryption": "AES256"},
                    {"x-amz-server-side-encryption": "aws:kms",
                     "x-amz-server-side-encryption-aws-kms-key-id": "k1"}):
        for method in ("GET", "HEAD"):
            r = raw_request(ssrv.srv, method, f"/{ebucket}/k", headers=headers)
            assert r.status == 400, (method, headers, r)
            if method == "GET":
                assert r.error_code() == "InvalidArgument", r


def test_sse_kms_local_keyring(es3, ssrv, ebucket):
    data = plaintext(100000, "kms")
    r = es3.put_object(Bucket=ebucket, Key="d", Body=data, ServerSideEncryption="aws:kms")
    assert r["ServerSideEncryption"] == "aws:kms" and r["SSEKMSKeyId"] == "alpha"
    for key_id in ("beta", "arn:aws:kms:us-east-1:000000000000:key/beta"):
        r = es3.put_object(Bucket=ebucket, Key="b", Body=data, ServerSideEncryption="aws:kms",
                           SSEKMSKeyId=key_id)
        assert r["SSEKMSKeyId"] == "beta"
    got = es3.get_object(Bucket=ebucket, Key="b", Range="bytes=5-99999")
    assert got["Body"].read() == data[5:] and got["SSEKMSKeyId"] == "beta"
    assert es3.head_object(Bucket=ebucket, Key="d")["ServerSideEncryption"] == "aws:kms"
    assert not disk_holds(ssrv.srv.data_dir, data[:64])
    with pytest.raises(ClientError) as e:
        es3.put_object(Bucket=ebucket, Key="x", Body=b"x", ServerSideEncryption="aws:kms",
                       SSEKMSKeyId="gamma")
    assert_error(e, "KMS.NotFoundException", 400)
    r = raw_request(ssrv.srv, "PUT", f"/{ebucket}/x", body=b"x",
                    headers={"x-amz-server-side-encryption-aws-kms-key-id": "beta"})
    assert r.status == 400 and r.error_code() == "InvalidArgument", r
    # A bucket default naming a keyring key.
    es3.put_bucket_encryption(Bucket=ebucket, ServerSideEncryptionConfiguration={"Rules": [
        {"ApplyServerSideEncryptionByDefault": {"SSEAlgorithm": "aws:kms",
                                                "KMSMasterKeyID": "beta"}}]})
    rule = es3.get_bucket_encryption(Bucket=ebucket)["ServerSideEncryptionConfiguration"][
        "Rules"][0]["ApplyServerSideEncryptionByDefault"]
    assert rule == {"SSEAlgorithm": "aws:kms", "KMSMasterKeyID": "beta"}
    r = es3.put_object(Bucket=ebucket, Key="dflt", Body=data)
    assert r["ServerSideEncryption"] == "aws:kms" and r["SSEKMSKeyId"] == "beta"
    assert es3.get_object(Bucket=ebucket, Key="dflt")["Body"].read() == data
    with pytest.raises(ClientError) as e:
        es3.put_bucket_encryption(Bucket=ebucket, ServerSideEncryptionConfiguration={"Rules": [
            {"ApplyServerSideEncryptionByDefault": {"SSEAlgorithm": "aws:kms",
                                                    "KMSMasterKeyID": "gamma"}}]})
    assert_error(e, "KMS.NotFoundException", 400)


def test_bucket_default_encryption(es3, ssrv, ebucket):
    with pytest.raises(ClientError) as e:
        es3.get_bucket_encryption(Bucket=ebucket)
    assert_error(e, "ServerSideEncryptionConfigurationNotFoundError", 404)
    cfg = {"Rules": [{"ApplyServerSideEncryptionByDefault": {"SSEAlgorithm": "AES256"}}]}
    r = es3.put_bucket_encryption(Bucket=ebucket, ServerSideEncryptionConfiguration=cfg)
    assert r["ResponseMetadata"]["HTTPStatusCode"] == 200
    rule = es3.get_bucket_encryption(Bucket=ebucket)["ServerSideEncryptionConfiguration"][
        "Rules"][0]
    assert rule["ApplyServerSideEncryptionByDefault"]["SSEAlgorithm"] == "AES256"
    data = plaintext(5000, "default")
    r = es3.put_object(Bucket=ebucket, Key="d", Body=data)
    assert r["ServerSideEncryption"] == "AES256"
    assert es3.get_object(Bucket=ebucket, Key="d")["Body"].read() == data
    assert not disk_holds(ssrv.srv.data_dir, data[:64])
    # SSE-C overrides the default.
    es3.put_object(Bucket=ebucket, Key="c", Body=b"c", **sse_c())
    assert es3.get_object(Bucket=ebucket, Key="c", **sse_c())["Body"].read() == b"c"
    kms = {"Rules": [{"ApplyServerSideEncryptionByDefault": {"SSEAlgorithm": "aws:kms:dsse"}}]}
    with pytest.raises(ClientError) as e:
        es3.put_bucket_encryption(Bucket=ebucket, ServerSideEncryptionConfiguration=kms)
    assert_error(e, "NotImplemented", 501)
    r = es3.delete_bucket_encryption(Bucket=ebucket)
    assert r["ResponseMetadata"]["HTTPStatusCode"] == 204
    assert "ServerSideEncryption" not in es3.put_object(Bucket=ebucket, Key="p", Body=b"p")


# ---- multipart uploads ----------------------------------------------------------------------

MiB = 1024 * 1024


def upload(s3, bucket, key, parts, create_extra, part_extra, copy_source=None):
    up = s3.create_multipart_upload(Bucket=bucket, Key=key, **create_extra)
    done = []
    for i, body in enumerate(parts, 1):
        if body is None:  # this part copied from copy_source
            r = s3.upload_part_copy(Bucket=bucket, Key=key, UploadId=up["UploadId"], PartNumber=i,
                                    CopySource=copy_source, **part_extra)
            done.append({"PartNumber": i, "ETag": r["CopyPartResult"]["ETag"]})
        else:
            r = s3.upload_part(Bucket=bucket, Key=key, UploadId=up["UploadId"], PartNumber=i,
                               Body=body, **part_extra)
            done.append({"PartNumber": i, "ETag": r["ETag"]})
    return up, s3.complete_multipart_upload(Bucket=bucket, Key=key, UploadId=up["UploadId"],
                                            MultipartUpload={"Parts": done})


@pytest.mark.parametrize("mode", ["sse-s3", "sse-c"])
def test_multipart_encrypted(es3, ssrv, ebucket, mode):
    create = {"ServerSideEncryption": "AES256"} if mode == "sse-s3" else sse_c()
    part = {} if mode == "sse-s3" else sse_c()
    read = {} if mode == "sse-s3" else sse_c()
    src = plaintext(5 * MiB + 100, f"mpsrc-{mode}")
    es3.put_object(Bucket=ebucket, Key="src", Body=src, ServerSideEncryption="AES256")
    p1, p2 = plaintext(5 * MiB + 3, f"mp1-{mode}"), plaintext(777777, f"mp2-{mode}")
    up, done = upload(es3, ebucket, "mp", [p1, None, p2], create, part,
                      copy_source={"Bucket": ebucket, "Key": "src"})
    assert up.get("ServerSideEncryption" if mode == "sse-s3" else "SSECustomerAlgorithm") \
        == "AES256"
    data = p1 + src + p2
    got = es3.get_object(Bucket=ebucket, Key="mp", **read)
    assert got["Body"].read() == data
    # Ranges across part boundaries, and partNumber reads.
    n1 = len(p1)
    for a, b in ((n1 - 10, n1 + 10), (n1 + len(src) - 5, n1 + len(src) + 20), (0, len(data) - 1)):
        r = es3.get_object(Bucket=ebucket, Key="mp", Range=f"bytes={a}-{b}", **read)
        assert r["Body"].read() == data[a:b + 1], (a, b)
    r = es3.get_object(Bucket=ebucket, Key="mp", PartNumber=3, **read)
    assert r["Body"].read() == p2
    for chunk in (p1, src, p2):
        assert not disk_holds(ssrv.srv.data_dir, chunk[1000:1064])
    if mode == "sse-c":
        # Every part needs the upload's key; another one is refused.
        up = es3.create_multipart_upload(Bucket=ebucket, Key="mp2", **sse_c())
        with pytest.raises(ClientError) as e:
            es3.upload_part(Bucket=ebucket, Key="mp2", UploadId=up["UploadId"], PartNumber=1,
                            Body=b"x")
        assert_error(e, "InvalidRequest", 400)
        with pytest.raises(ClientError) as e:
            es3.upload_part(Bucket=ebucket, Key="mp2", UploadId=up["UploadId"], PartNumber=1,
                            Body=b"x", **sse_c(KEY_B))
        assert_error(e, "AccessDenied", 403)
        es3.abort_multipart_upload(Bucket=ebucket, Key="mp2", UploadId=up["UploadId"])


def test_multipart_encrypted_needs_consecutive_parts(es3, ebucket):
    up = es3.create_multipart_upload(Bucket=ebucket, Key="gap", ServerSideEncryption="AES256")
    r1 = es3.upload_part(Bucket=ebucket, Key="gap", UploadId=up["UploadId"], PartNumber=1,
                         Body=b"a" * (5 * MiB))
    r3 = es3.upload_part(Bucket=ebucket, Key="gap", UploadId=up["UploadId"], PartNumber=3,
                         Body=b"c")
    with pytest.raises(ClientError) as e:
        es3.complete_multipart_upload(Bucket=ebucket, Key="gap", UploadId=up["UploadId"],
                                      MultipartUpload={"Parts": [
                                          {"PartNumber": 1, "ETag": r1["ETag"]},
                                          {"PartNumber": 3, "ETag": r3["ETag"]}]})
    assert_error(e, "InvalidPart", 400)
    es3.abort_multipart_upload(Bucket=ebucket, Key="gap", UploadId=up["UploadId"])


def test_default_encryption_multipart_awscli(es3, ssrv, ebucket, tmp_path):
    """awscli's multipart `s3 cp` into a default-encrypted bucket: stored encrypted, read
    back whole."""
    if not os.path.exists("/usr/bin/aws"):
        pytest.skip("awscli not installed")
    es3.put_bucket_encryption(Bucket=ebucket, ServerSideEncryptionConfiguration={"Rules": [
        {"ApplyServerSideEncryptionByDefault": {"SSEAlgorithm": "AES256"}}]})
    data = plaintext(20 * MiB + 11, "awscli")
    src, dst = tmp_path / "in", tmp_path / "out"
    src.write_bytes(data)
    env = dict(os.environ, HOME=str(tmp_path), AWS_ACCESS_KEY_ID=USERS[0][0],
               AWS_SECRET_ACCESS_KEY=USERS[0][1], AWS_DEFAULT_REGION="us-east-1",
               AWS_CONFIG_FILE=str(tmp_path / "none"), AWS_EC2_METADATA_DISABLED="true",
               AWS_SHARED_CREDENTIALS_FILE=str(tmp_path / "none"), NO_PROXY="127.0.0.1")
    env.pop("AWS_CA_BUNDLE", None)
    aws = ["/usr/bin/aws", "--endpoint-url", ssrv.endpoint, "--no-cli-pager", "s3", "cp"]
    for args in ([str(src), f"s3://{ebucket}/big"], [f"s3://{ebucket}/big", str(dst)]):
        p = subprocess.run(aws + args, env=env, capture_output=True, text=True, timeout=300)
        assert p.returncode == 0, p.stderr
    assert dst.read_bytes() == data
    h = es3.head_object(Bucket=ebucket, Key="big")
    assert h["ServerSideEncryption"] == "AES256" and h["ETag"].endswith('-3"'), h
    assert not disk_holds(ssrv.srv.data_dir, data[9 * MiB:9 * MiB + 64])


# ---- a server without keys, and plain HTTP -----------------------------------------------------

def test_unconfigured_server_refuses(s3, bucket):
    """The session's server has no master key and takes SSE-C over TLS only."""
    with pytest.raises(ClientError) as e:
        s3.put_object(Bucket=bucket, Key="k", Body=b"x", **sse_c())
    assert_error(e, "InvalidRequest", 400)
    assert "secure connection" in e.value.response["Error"]["Message"]
    with pytest.raises(ClientError) as e:
        s3.put_object(Bucket=bucket, Key="k", Body=b"x", ServerSideEncryption="AES256")
    assert_error(e, "NotImplemented", 501)
    assert "sse.master_key_file" in e.value.response["Error"]["Message"]
    cfg = {"Rules": [{"ApplyServerSideEncryptionByDefault": {"SSEAlgorithm": "AES256"}}]}
    with pytest.raises(ClientError) as e:
        s3.put_bucket_encryption(Bucket=bucket, ServerSideEncryptionConfiguration=cfg)
    assert_error(e, "NotImplemented", 501)
    with pytest.raises(ClientError) as e:
        s3.put_object(Bucket=bucket, Key="k", Body=b"x", ServerSideEncryption="aws:kms")
    assert_error(e, "NotImplemented", 501)
    assert "sse.kms_keyring_file" in e.value.response["Error"]["Message"]
    with pytest.raises(ClientError) as e:
        s3.head_object(Bucket=bucket, Key="k")
    assert e.value.response["ResponseMetadata"]["HTTPStatusCode"] == 404


# ---- the native protocol -----------------------------------------------------------------------

def pattern(n, seed):
    return bytes((i * 31 + seed * 7 + (i >> 8)) & 0xFF for i in range(n))


def driver(srv, *args, transport="native"):
    env = srv.client_env(USERS[0])
    if transport == "native":
        env["S3R_ENDPOINT"] = f"http://127.0.0.1:{free_port()}"  # nothing there: native only
    p = subprocess.run([DRIVER, "--transport", transport, "--no-fallback", *map(str, args)],
                       env=env, capture_output=True, text=True, timeout=120)
    m = re.search(r"^RESULT (.*)$", p.stdout, re.M)
    fields = dict(kv.split("=", 1) for kv in m.group(1).split()) if m else {}
    return p.returncode, fields


@pytest.fixture(scope="module", params=list(UCX_ENVS))
def nsrv(request, tmp_path_factory, master_key_file, keyring_file):
    s = sse_server(tmp_path_factory.mktemp("sse-native"), "ssen", UCX_ENVS[request.param],
                   master_key_file, keyring_file)
    yield s
    s.stop()


def test_native_default_encryption(nsrv):
    """Native and token PUT and GET of objects under the bucket's default encryption: the
    server encrypts and decrypts through its staging copy; the disk holds no plaintext;
    HTTP reads the same bytes; an SSE-C object is refused over native without its key."""
    s3 = boto_client(nsrv)
    b = "ssen-" + os.urandom(6).hex()
    s3.create_bucket(Bucket=b)
    s3.put_bucket_encryption(Bucket=b, ServerSideEncryptionConfiguration={"Rules": [
        {"ApplyServerSideEncryptionByDefault": {"SSEAlgorithm": "AES256"}}]})
    size = 1024 * 1024 + 7
    rc, f = driver(nsrv, "put", b, "n", size, 3)
    assert rc == 0, f
    h = s3.head_object(Bucket=b, Key="n")
    assert h["ServerSideEncryption"] == "AES256"
    assert s3.get_object(Bucket=b, Key="n")["Body"].read() == pattern(size, 3)
    rc, f = driver(nsrv, "get", b, "n", size, 3)  # checks the pattern
    assert rc == 0, f
    assert not disk_holds(nsrv.srv.data_dir, pattern(size, 3)[4096:4096 + 64])
    s3.put_object(Bucket=b, Key="c", Body=pattern(size, 4), **sse_c())
    rc, f = driver(nsrv, "get", b, "c", size, 4)
    assert rc == 1 and f.get("code") == "InvalidRequest", f
    # The token path (HTTP request, bytes by RDMA) too.
    rc, f = driver(nsrv, "put", b, "t", size, 5, transport="token")
    assert rc == 0, f
    assert s3.head_object(Bucket=b, Key="t")["ServerSideEncryption"] == "AES256"
    rc, f = driver(nsrv, "get", b, "t", size, 5, transport="token")
    assert rc == 0 and f.get("http_bytes") == "0", f  # the bytes came by RDMA
    assert s3.get_object(Bucket=b, Key="t")["Body"].read() == pattern(size, 5)
    assert not disk_holds(nsrv.srv.data_dir, pattern(size, 5)[4096:4096 + 64])
