"""The configuration subresources over the native protocol (opcodes 21-50, docs/protocol.md
§4.2) give the answers HTTP gives: the same status, S3 error code and body, step by step on
two buckets in the same state, one driven over HTTP and one over native (bucket names in the
bodies aside). Covers object tagging, retention, legal hold and ACL (of the current version
and by versionId), and bucket versioning, lifecycle, object-lock configuration, tagging,
policy, CORS, encryption and ACL: reads of what is not set, writes, malformed documents,
another user's refusal, deletes. Requests come from build/tests/s3r_native_call. Runs under
UCX's default transports and UCX_TLS=tcp."""
import base64
import datetime
import hashlib
import json
import os
import sys
import uuid
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from s3r_itest import (REPO_ROOT, UCX_ENVS, USERS, RdmaServer, native_call,  # noqa: E402
                       raw_request)

BUILD = Path(os.environ.get("S3RDMA_BUILD", REPO_ROOT / "build"))
NATIVE_CALL = BUILD / "tests" / "s3r_native_call"

# docs/protocol.md §4.2: (HTTP method, subresource, object-level) -> opcode
OPS = {
    ("GET", "tagging", True): 21, ("PUT", "tagging", True): 22, ("DELETE", "tagging", True): 23,
    ("GET", "retention", True): 24, ("PUT", "retention", True): 25,
    ("GET", "legal-hold", True): 26, ("PUT", "legal-hold", True): 27,
    ("GET", "acl", True): 28, ("PUT", "acl", True): 29,
    ("GET", "versioning", False): 30, ("PUT", "versioning", False): 31,
    ("GET", "lifecycle", False): 32, ("PUT", "lifecycle", False): 33,
    ("DELETE", "lifecycle", False): 34,
    ("GET", "object-lock", False): 35, ("PUT", "object-lock", False): 36,
    ("GET", "tagging", False): 37, ("PUT", "tagging", False): 38, ("DELETE", "tagging", False): 39,
    ("GET", "policy", False): 40, ("PUT", "policy", False): 41, ("DELETE", "policy", False): 42,
    ("GET", "cors", False): 43, ("PUT", "cors", False): 44, ("DELETE", "cors", False): 45,
    ("GET", "encryption", False): 46, ("PUT", "encryption", False): 47,
    ("DELETE", "encryption", False): 48,
    ("GET", "acl", False): 49, ("PUT", "acl", False): 50,
}


@pytest.fixture(scope="module", params=list(UCX_ENVS))
def srv(request, tmp_path_factory):
    assert NATIVE_CALL.exists(), "build the tests first"
    tmp = tmp_path_factory.mktemp("ncfg")
    keys = tmp / "master.keys"  # SSE-S3, so that a default encryption can be set
    keys.write_text(os.urandom(32).hex() + "\n")
    keys.chmod(0o600)
    s = RdmaServer(tmp, "ncfg", UCX_ENVS[request.param],
                   extra_args=["--sse-master-key-file", str(keys)]).start()
    yield s
    s.stop()


def md5_b64(data):
    return base64.b64encode(hashlib.md5(data).digest()).decode()


class Pair:
    """Two buckets in the same state: h driven over HTTP, n over native."""

    def __init__(self, srv, tmp_path, lock=False):
        self.srv, self.tmp = srv, tmp_path
        tag = uuid.uuid4().hex[:10]
        self.h, self.n = f"cfg-h-{tag}", f"cfg-n-{tag}"
        self.vid = {}  # (bucket, key) -> its version ids, oldest first
        hdrs = {"x-amz-bucket-object-lock-enabled": "true"} if lock else {}
        for b in (self.h, self.n):
            assert raw_request(srv.srv, "PUT", f"/{b}", headers=hdrs).status == 200

    def put_object(self, key, body=b"data"):
        for b in (self.h, self.n):
            r = raw_request(self.srv.srv, "PUT", f"/{b}/{key}", body=body,
                            headers={"Content-MD5": md5_b64(body)})
            assert r.status == 200, r.body
            self.vid.setdefault((b, key), []).append(r.headers.get("x-amz-version-id"))

    def http(self, method, sub, key, body, headers, user, version):
        b = self.h
        query = [(sub, None)]
        if version is not None:
            query.append(("versionId", self.vid[(b, key)][version]))
        hdrs = dict(headers)
        if body:
            hdrs["Content-MD5"] = md5_b64(body)
        r = raw_request(self.srv.srv, method, f"/{b}/{key}" if key else f"/{b}", query=query,
                        headers=hdrs, body=body, user=user)
        code = ET.fromstring(r.body).findtext("Code") if r.status >= 300 and r.body else None
        return {"status": r.status, "code": code, "body": r.body if r.status < 300 else b""}

    def native(self, method, sub, key, body, headers, user, version):
        b = self.n
        args = [f"?{sub}="]
        if version is not None:
            args.append(f"?versionId={self.vid[(b, key)][version]}")
        args += [f"{k}={v}" for k, v in headers.items()]
        if body:
            args.append(f"Content-MD5={md5_b64(body)}")
            f = self.tmp / "body"
            f.write_bytes(body)
            args.append(f"@{f}")
        op = OPS[(method, sub, key is not None)]
        out = native_call(self.srv, op, b, key or "-", args, user)
        if out["status"] >= 300:
            out["body"] = b""
        return out

    def same(self, method, sub, key=None, body=b"", headers=None, user=USERS[0],
             version=None):
        """Runs the step on both buckets; returns the status once they agree."""
        headers = headers or {}
        doc = body.replace(b"BUCKET", self.h.encode())
        h = self.http(method, sub, key, doc, headers, user, version)
        doc = body.replace(b"BUCKET", self.n.encode())
        n = self.native(method, sub, key, doc, headers, user, version)
        n["body"] = n["body"].replace(self.n.encode(), self.h.encode())
        assert (n["status"], n["code"]) == (h["status"], h["code"]), (method, sub, key, h, n)
        assert n["body"] == h["body"], (method, sub, key, h["body"], n["body"])
        return h["status"], h["code"]


TAGS = (b"<Tagging><TagSet><Tag><Key>team</Key><Value>vision</Value></Tag>"
        b"<Tag><Key>tier</Key><Value>hot</Value></Tag></TagSet></Tagging>")
LIFECYCLE = (b"<LifecycleConfiguration><Rule><ID>old</ID><Filter><Prefix>tmp/</Prefix></Filter>"
             b"<Status>Enabled</Status><Expiration><Days>3</Days></Expiration>"
             b"<NoncurrentVersionExpiration><NoncurrentDays>1</NoncurrentDays>"
             b"</NoncurrentVersionExpiration></Rule></LifecycleConfiguration>")
CORS = (b"<CORSConfiguration><CORSRule><AllowedOrigin>https://dash.example</AllowedOrigin>"
        b"<AllowedMethod>GET</AllowedMethod><MaxAgeSeconds>60</MaxAgeSeconds></CORSRule>"
        b"</CORSConfiguration>")
ENCRYPTION = (b"<ServerSideEncryptionConfiguration><Rule><ApplyServerSideEncryptionByDefault>"
              b"<SSEAlgorithm>AES256</SSEAlgorithm></ApplyServerSideEncryptionByDefault></Rule>"
              b"</ServerSideEncryptionConfiguration>")
POLICY = json.dumps({"Version": "2012-10-17", "Statement": [{
    "Sid": "read", "Effect": "Allow", "Principal": "*", "Action": "s3:GetObject",
    "Resource": "arn:aws:s3:::BUCKET/public/*"}]}).encode()


def test_bucket_configuration_as_http(srv, tmp_path):
    p = Pair(srv, tmp_path)
    p.put_object("k")
    # nothing set yet: each read answers as HTTP does
    for sub in ("lifecycle", "tagging", "policy", "cors", "encryption", "object-lock"):
        st, code = p.same("GET", sub)
        assert st == 404 or code in ("ObjectLockConfigurationNotFoundError",), (sub, st, code)
    assert p.same("GET", "versioning") == (200, None)
    assert p.same("GET", "acl") == (200, None)
    # writes, reads back, malformed documents, deletes
    for sub, doc in (("versioning", b"<VersioningConfiguration><Status>Enabled</Status>"
                                    b"</VersioningConfiguration>"),
                     ("lifecycle", LIFECYCLE), ("tagging", TAGS), ("policy", POLICY),
                     ("cors", CORS), ("encryption", ENCRYPTION)):
        assert p.same("PUT", sub, body=doc)[0] in (200, 204), sub
        assert p.same("GET", sub) == (200, None), sub
        assert p.same("PUT", sub, body=doc[:-5])[0] == 400, sub
        assert p.same("GET", sub, user=USERS[1])[0] == 403, sub
        if sub != "versioning":
            assert p.same("DELETE", sub, user=USERS[1])[0] == 403, sub
            assert p.same("DELETE", sub)[0] == 204, sub
            assert p.same("GET", sub)[0] == 404, sub
    assert p.same("PUT", "versioning", body=b"<VersioningConfiguration><Status>Sometimes"
                  b"</Status></VersioningConfiguration>")[0] == 400
    assert p.same("PUT", "lifecycle", body=LIFECYCLE.replace(
        b"<Expiration><Days>3</Days></Expiration>",
        b"<Transition><Days>3</Days><StorageClass>GLACIER</StorageClass></Transition>"))[0] \
        in (400, 501)
    # a canned ACL by header, no body; an AccessControlPolicy body; another user's refusal
    assert p.same("PUT", "acl", headers={"x-amz-acl": "public-read"}) == (200, None)
    assert p.same("GET", "acl") == (200, None)
    assert p.same("PUT", "acl", body=b"<AccessControlPolicy><bad") [0] == 400
    assert p.same("GET", "acl", user=USERS[1])[0] == 403
    # object lock turned on for a versioned bucket made without it (as S3 allows today)
    assert p.same("PUT", "object-lock", body=b"<ObjectLockConfiguration><ObjectLockEnabled>"
                  b"Enabled</ObjectLockEnabled></ObjectLockConfiguration>") == (200, None)
    assert p.same("GET", "object-lock") == (200, None)


def test_object_configuration_as_http(srv, tmp_path):
    p = Pair(srv, tmp_path)
    assert p.same("PUT", "versioning", body=b"<VersioningConfiguration><Status>Enabled</Status>"
                  b"</VersioningConfiguration>") == (200, None)
    p.put_object("k", b"one")
    p.put_object("k", b"two")
    assert p.same("GET", "tagging", key="k") == (200, None)
    assert p.same("PUT", "tagging", key="k", body=TAGS) == (200, None)
    assert p.same("GET", "tagging", key="k") == (200, None)
    assert p.same("GET", "tagging", key="k", version=0) == (200, None)  # the old one: no tags
    assert p.same("PUT", "tagging", key="k", body=TAGS, version=0)[0] == 200  # an older one
    assert p.same("DELETE", "tagging", key="k", version=1)[0] == 204
    assert p.same("GET", "tagging", key="k", version=0) == (200, None)
    assert p.same("PUT", "tagging", key="k", body=b"<Tagging><TagSet><Tag><Key>a</Key>"
                  b"</Tag></TagSet></Tagging>")[0] == 400
    assert p.same("GET", "tagging", key="nokey") == (404, "NoSuchKey")
    assert p.same("GET", "tagging", key="k", user=USERS[1])[0] == 403
    assert p.same("GET", "acl", key="k") == (200, None)
    p.same("PUT", "acl", key="k", headers={"x-amz-acl": "public-read"}, version=0)
    assert p.same("PUT", "acl", key="k", headers={"x-amz-acl": "public-read"}) == (200, None)
    assert p.same("GET", "acl", key="k", version=0) == (200, None)
    assert p.same("GET", "acl", key="nokey") == (404, "NoSuchKey")
    # no object lock on this bucket: retention and legal hold are refused alike
    for sub in ("retention", "legal-hold"):
        assert p.same("GET", sub, key="k")[0] == 400, sub
    assert p.same("PUT", "legal-hold", key="k", body=b"<LegalHold><Status>ON</Status>"
                  b"</LegalHold>")[0] == 400


def test_object_lock_as_http(srv, tmp_path):
    p = Pair(srv, tmp_path, lock=True)
    assert p.same("GET", "object-lock") == (200, None)
    assert p.same("PUT", "object-lock", body=b"<ObjectLockConfiguration><ObjectLockEnabled>"
                  b"Enabled</ObjectLockEnabled><Rule><DefaultRetention><Mode>GOVERNANCE</Mode>"
                  b"<Days>1</Days></DefaultRetention></Rule></ObjectLockConfiguration>") \
        == (200, None)
    assert p.same("GET", "object-lock") == (200, None)
    p.put_object("k")
    # the default retention's date differs by the PUTs' seconds: read them, do not compare
    until = (datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(days=3)) \
        .strftime("%Y-%m-%dT%H:%M:%SZ").encode()
    assert p.same("PUT", "retention", key="k", body=b"<Retention><Mode>GOVERNANCE</Mode>"
                  b"<RetainUntilDate>" + until + b"</RetainUntilDate></Retention>") \
        == (200, None)
    assert p.same("GET", "retention", key="k") == (200, None)
    assert p.same("GET", "retention", key="k", version=0) == (200, None)
    # shortening a GOVERNANCE retention without the bypass header is refused alike
    sooner = (datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(days=2)) \
        .strftime("%Y-%m-%dT%H:%M:%SZ").encode()
    assert p.same("PUT", "retention", key="k", body=b"<Retention><Mode>GOVERNANCE</Mode>"
                  b"<RetainUntilDate>" + sooner + b"</RetainUntilDate></Retention>")[0] == 403
    assert p.same("PUT", "retention", key="k", headers={
        "x-amz-bypass-governance-retention": "true"}, body=b"<Retention><Mode>GOVERNANCE</Mode>"
        b"<RetainUntilDate>" + sooner + b"</RetainUntilDate></Retention>") == (200, None)
    assert p.same("GET", "legal-hold", key="k")[0] in (200, 404)
    assert p.same("PUT", "legal-hold", key="k", body=b"<LegalHold><Status>ON</Status>"
                  b"</LegalHold>") == (200, None)
    assert p.same("GET", "legal-hold", key="k") == (200, None)
    assert p.same("PUT", "legal-hold", key="k", body=b"<LegalHold><Status>MAYBE</Status>"
                  b"</LegalHold>")[0] == 400
    assert p.same("PUT", "legal-hold", key="k", body=b"<LegalHold><Status>OFF</Status>"
                  b"</LegalHold>", version=0) == (200, None)
    assert p.same("GET", "legal-hold", key="k") == (200, None)
    assert p.same("GET", "retention", key="nokey")[0] == 404


def test_another_users_writes_refused(srv, tmp_path):
    """Every configuration write (opcodes 22-50's PUTs and DELETEs, object and bucket level)
    from another user on a private bucket is 403 AccessDenied over native as over HTTP, and
    leaves the owner's configuration as it was."""
    p = Pair(srv, tmp_path, lock=True)
    p.put_object("k")
    hold = b"<LegalHold><Status>ON</Status></LegalHold>"
    until = (datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(days=3)) \
        .strftime("%Y-%m-%dT%H:%M:%SZ").encode()
    retention = (b"<Retention><Mode>GOVERNANCE</Mode><RetainUntilDate>" + until +
                 b"</RetainUntilDate></Retention>")
    lock = (b"<ObjectLockConfiguration><ObjectLockEnabled>Enabled</ObjectLockEnabled><Rule>"
            b"<DefaultRetention><Mode>GOVERNANCE</Mode><Days>1</Days></DefaultRetention></Rule>"
            b"</ObjectLockConfiguration>")
    suspended = b"<VersioningConfiguration><Status>Suspended</Status></VersioningConfiguration>"
    bucket_docs = (("lifecycle", LIFECYCLE), ("tagging", TAGS), ("policy", POLICY),
                   ("cors", CORS), ("encryption", ENCRYPTION))
    # the owner's configuration, to be kept
    for sub, doc in bucket_docs:
        assert p.same("PUT", sub, body=doc)[0] in (200, 204), sub
    assert p.same("PUT", "tagging", key="k", body=TAGS) == (200, None)
    def owner_view():
        subs = [(sub, None) for sub, _ in bucket_docs]
        subs += [("versioning", None), ("object-lock", None), ("acl", None), ("tagging", "k"),
                 ("acl", "k"), ("retention", "k"), ("legal-hold", "k")]
        return {(sub, key): (p.http("GET", sub, key, b"", {}, USERS[0], None),
                             p.native("GET", sub, key, b"", {}, USERS[0], None))
                for sub, key in subs}

    before = owner_view()
    other = USERS[1]
    writes = [("PUT", sub, None, doc, {}) for sub, doc in bucket_docs]
    writes += [("DELETE", sub, None, b"", {}) for sub, _ in bucket_docs]
    writes += [("PUT", "versioning", None, suspended, {}),
               ("PUT", "object-lock", None, lock, {}),
               ("PUT", "acl", None, b"", {"x-amz-acl": "public-read-write"}),
               ("PUT", "tagging", "k", TAGS, {}), ("DELETE", "tagging", "k", b"", {}),
               ("PUT", "retention", "k", retention, {}),
               ("PUT", "legal-hold", "k", hold, {}),
               ("PUT", "acl", "k", b"", {"x-amz-acl": "public-read"})]
    assert len(writes) == 18  # every write opcode of 21-50 (docs/protocol.md §4.2)
    for method, sub, key, doc, headers in writes:
        assert p.same(method, sub, key=key, body=doc, headers=headers, user=other) \
            == (403, "AccessDenied"), (method, sub, key)
    # nothing changed: the owner reads back what was there, the other user still reads nothing
    assert owner_view() == before
    assert p.same("GET", "acl", user=other)[0] == 403
    assert p.same("GET", "tagging", key="k", user=other)[0] == 403
