"""Anonymous (unsigned) requests from Python, as boto3's
``Config(signature_version=UNSIGNED)``, s3torchconnector's ``S3ClientConfig(unsigned=True)``
and s3fs's ``anon=True`` send them: s3rdma.Client(unsigned=True), s3rdma.torch and the
fsspec filesystem against a real s3rdmad (public objects served, private ones
AccessDenied, nothing signed on the wire, HTTP only); and the error a client that signs
gives when no credentials are found anywhere."""
import http.server
import os
import threading

import pytest

import s3rdma
from s3r_itest import USERS

MiB = 1024 * 1024


@pytest.fixture
def public(boto, rbucket):
    """rbucket, listable by everyone, holding public.txt (public-read) and private.txt."""
    boto.put_bucket_acl(Bucket=rbucket, ACL="public-read")
    boto.put_object(Bucket=rbucket, Key="public.txt", Body=b"for everyone", ACL="public-read")
    boto.put_object(Bucket=rbucket, Key="private.txt", Body=b"for the owner")
    return rbucket


@pytest.fixture
def anon(rsrv):
    """A factory of unsigned clients; the owner's keys are passed too, to show they go
    unused."""
    made = []

    def factory(**kw):
        kw.setdefault("quiet", True)
        c = s3rdma.Client(endpoint=rsrv.endpoint, rdma_endpoint=rsrv.rdma_endpoint,
                          access_key=USERS[0][0], secret_key=USERS[0][1], unsigned=True, **kw)
        made.append(c)
        return c
    yield factory
    for c in made:
        c.close()


@pytest.fixture
def no_aws_env(monkeypatch, tmp_path):
    """No credentials anywhere: no AWS_* variables, a HOME without ~/.aws."""
    for k in list(os.environ):
        if k.startswith("AWS_") or k.startswith("S3RDMA_") and k not in ("S3RDMA_BUILD",):
            monkeypatch.delenv(k)
    monkeypatch.setenv("HOME", str(tmp_path))


def test_unsigned_reads_public_only(anon, public, boto):
    c = anon()
    assert c.get_object(public, "public.txt") == b"for everyone"
    info = c.head_object(public, "public.txt")
    assert info.size == 12 and info.etag == boto.head_object(Bucket=public,
                                                             Key="public.txt")["ETag"]
    buf = bytearray(12)
    assert c.get_object_into(public, "public.txt", buf, range=(4, 7)) == 3
    assert bytes(buf[:3]) == b"eve"
    keys = [o.key for page in c.list_objects(public) for o in page.objects]
    assert keys == ["private.txt", "public.txt"]  # the bucket's ACL lets everyone list
    with pytest.raises(s3rdma.AccessDenied) as e:
        c.get_object(public, "private.txt")  # the keys passed were not used
    assert e.value.code == "AccessDenied" and e.value.http_status == 403
    with pytest.raises(s3rdma.AccessDenied) as e:
        c.head_object(public, "private.txt")
    assert e.value.code == "AccessDenied"  # a HEAD's 403 has no body: named as a GET's is
    with pytest.raises(s3rdma.AccessDenied):
        c.put_object(public, "new", b"x")  # public-read gives no writes
    with pytest.raises(s3rdma.AccessDenied):
        c.list_buckets()  # ListBuckets always needs a user
    st = c.stats()
    assert st["native_ops"] == st["token_ops"] == st["rdma_sessions"] == 0
    assert st["http_ops"] >= 2


def test_unsigned_writes_a_public_read_write_bucket(anon, boto, rbucket):
    """A bucket everyone may write takes anonymous PUTs, single and multipart (each part
    and the body's CRC32C sent as by a signing client); the owner reads them back."""
    boto.put_bucket_acl(Bucket=rbucket, ACL="public-read-write")
    c = anon()
    c.put_object(rbucket, "small", b"s" * 1000)
    big = os.urandom(20 * MiB + 5)
    c.put_object(rbucket, "big", big)  # above the 16 MiB multipart threshold
    assert boto.get_object(Bucket=rbucket, Key="small")["Body"].read() == b"s" * 1000
    assert boto.get_object(Bucket=rbucket, Key="big")["Body"].read() == big
    with pytest.raises(s3rdma.AccessDenied):
        c.get_object(rbucket, "big")  # written anonymously, it is the owner's and private


@pytest.mark.parametrize("transport", ["native", "token"])
def test_unsigned_has_no_rdma_transport(anon, transport):
    """The server opens RDMA sessions for access keys only: forcing an RDMA transport on
    an anonymous client is a clear error at once, not a failure at the first call."""
    with pytest.raises(s3rdma.InvalidArgument, match="needs credentials.*HTTP"):
        anon(transport=transport)


def test_unsigned_auto_goes_over_http(anon, public):
    c = anon(transport="auto", rdma_threshold=0)
    assert c.get_object(public, "public.txt") == b"for everyone"
    assert not c.rdma_connected
    with pytest.raises(s3rdma.ConnectionFailed, match="anonymous"):
        c.rdma_connect()
    assert memoryview(c.allocate_buffer(4096)).nbytes == 4096  # plain memory


class _Recorder(http.server.BaseHTTPRequestHandler):
    """Answers every HEAD and PUT 200 and keeps each request's headers."""
    seen = []

    def _answer(self):
        n = int(self.headers.get("Content-Length") or 0)
        if n:
            self.rfile.read(n)
        self.seen.append((self.command, {k.lower(): v for k, v in self.headers.items()}))
        self.send_response(200)
        self.send_header("ETag", '"0123"')
        self.send_header("Content-Length", "0")
        self.end_headers()

    do_HEAD = do_PUT = _answer

    def log_message(self, *a):
        pass


@pytest.fixture
def recorder():
    _Recorder.seen = []
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Recorder)
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    yield f"http://127.0.0.1:{srv.server_address[1]}", _Recorder.seen
    srv.shutdown()
    srv.server_close()


def test_unsigned_requests_carry_no_signature(recorder):
    """What goes on the wire: no Authorization, X-Amz-Date or X-Amz-Content-SHA256 (an
    HTTP server of the test's own records the headers); a signing client sends all three."""
    url, seen = recorder
    with s3rdma.Client(endpoint=url, unsigned=True, quiet=True) as c:
        c.head_object("b", "k")
        c.put_object("b", "k", b"data")
    with s3rdma.Client(endpoint=url, access_key="AK", secret_key="SK", transport="http",
                       quiet=True) as c:
        c.head_object("b", "k")
    assert [m for m, _ in seen] == ["HEAD", "PUT", "HEAD"]
    for _, h in seen[:2]:
        assert not {"authorization", "x-amz-date", "x-amz-content-sha256"} & set(h), h
    assert "x-amz-checksum-crc32c" in seen[1][1]  # the body's checksum still goes
    assert seen[2][1]["authorization"].startswith("AWS4-HMAC-SHA256 Credential=AK/")


def test_no_credentials_is_a_clear_error(rsrv, no_aws_env):
    """With no keys in the arguments, the environment or a profile, a signing client says
    so as boto3 does (NoCredentialsError, "Unable to locate credentials") and names the
    ways out, the unsigned one included; the error is also a ValueError, as before."""
    with pytest.raises(s3rdma.NoCredentialsError, match="Unable to locate credentials") as e:
        s3rdma.Client(endpoint=rsrv.endpoint)
    assert isinstance(e.value, ValueError)
    for way in ("access_key=", "AWS_ACCESS_KEY_ID", "profile", "unsigned=True"):
        assert way in str(e.value)
    with s3rdma.Client(endpoint=rsrv.endpoint, unsigned=True, quiet=True):
        pass  # and with unsigned=True none are needed


def test_torch_unsigned(rsrv, public, no_aws_env, monkeypatch):
    """s3torchconnector's S3ClientConfig(unsigned=True): datasets and the direct client
    read a public bucket with no credentials at all, over HTTP even when the environment
    asks signed clients for native; a private object is S3Exception (AccessDenied)."""
    pytest.importorskip("torch")
    import s3rdma.torch as s3torchconnector
    from s3rdma.torch._s3client import S3Client
    monkeypatch.setenv("AWS_ENDPOINT_URL", rsrv.endpoint)
    monkeypatch.setenv("S3RDMA_TRANSPORT", "native")
    config = s3torchconnector.S3ClientConfig(unsigned=True)
    ds = s3torchconnector.S3MapDataset.from_objects(f"s3://{public}/public.txt",
                                                    region="us-east-1", s3client_config=config)
    assert ds[0].read() == b"for everyone"
    listed = s3torchconnector.S3IterableDataset.from_prefix(
        f"s3://{public}/pub", region="us-east-1", s3client_config=config)
    assert [r.read() for r in listed] == [b"for everyone"]
    client = S3Client("us-east-1", s3client_config=config)
    assert client.head_object(public, "public.txt").size == 12
    with pytest.raises(Exception, match="AccessDenied.*403"):  # a HEAD's, named as S3 would
        client.get_object(public, "private.txt").read()


def test_fsspec_anon(rsrv, public, no_aws_env):
    """s3fs's anon=True on the s3rdma:// filesystem."""
    fsspec = pytest.importorskip("fsspec")
    fs = fsspec.filesystem("s3rdma", endpoint=rsrv.endpoint, anon=True, quiet=True,
                           skip_instance_cache=True)
    assert fs.cat(f"{public}/public.txt") == b"for everyone"
    with pytest.raises(PermissionError):
        fs.cat(f"{public}/private.txt")
