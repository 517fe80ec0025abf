"""Versioned GET, HEAD, DELETE and ListObjectVersions over the native protocol give the
answers HTTP gives (test_s3_versioning.py): the same statuses, S3 error codes and
x-amz-version-id / x-amz-delete-marker headers, and the same listing. Requests come from
build/tests/s3r_native_call (tests/attack/s3r_native_call.c), which sends the opcode and
params given. Runs under UCX's default transports and UCX_TLS=tcp."""
import os
import sys
import uuid
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from s3r_itest import (REPO_ROOT, S3_NS, UCX_ENVS, RdmaServer,  # noqa: E402
                       native_call, raw_request)

BUILD = Path(os.environ.get("S3RDMA_BUILD", REPO_ROOT / "build"))
NATIVE_CALL = BUILD / "tests" / "s3r_native_call"
GET, HEAD, DELETE, LIST_VERSIONS = 2, 3, 4, 20  # docs/protocol.md §4.2


@pytest.fixture(scope="module", params=list(UCX_ENVS))
def srv(request, tmp_path_factory):
    assert NATIVE_CALL.exists(), "build the tests first"
    s = RdmaServer(tmp_path_factory.mktemp("nver"), "nver", UCX_ENVS[request.param]).start()
    yield s
    s.stop()


@pytest.fixture
def bucket(srv):
    b = "nv-" + uuid.uuid4().hex[:10]
    assert raw_request(srv.srv, "PUT", f"/{b}").status == 200
    r = raw_request(srv.srv, "PUT", f"/{b}", query=[("versioning", None)],
                    body=b"<VersioningConfiguration><Status>Enabled</Status>"
                         b"</VersioningConfiguration>")
    assert r.status == 200, r.body
    return b


def native(srv, op, bucket, key, **params):
    return native_call(srv, op, bucket, key, [f"?{k}={v}" for k, v in params.items()])


def http(srv, method, bucket, key, **params):
    r = raw_request(srv.srv, method, f"/{bucket}/{key}" if key != "-" else f"/{bucket}",
                    query=list(params.items()))
    code = None
    if r.status >= 300 and r.body:
        code = ET.fromstring(r.body).findtext("Code")
    return {"status": r.status, "headers": r.headers, "code": code, "body": r.body}


def same(n, h, names=("x-amz-version-id", "x-amz-delete-marker")):
    assert n["status"] == h["status"], (n, h)
    assert n.get("code") == h.get("code"), (n, h)
    for name in names:
        assert n["headers"].get(name) == h["headers"].get(name), (name, n, h)


def put(srv, bucket, key, body):
    r = raw_request(srv.srv, "PUT", f"/{bucket}/{key}", body=body)
    assert r.status == 200
    return r.headers["x-amz-version-id"]


def test_versioned_get_head_delete_as_http(srv, bucket):
    v1 = put(srv, bucket, "k", b"one")
    v2 = put(srv, bucket, "k", b"two")
    for op, method in ((GET, "GET"), (HEAD, "HEAD")):
        same(native(srv, op, bucket, "k"), http(srv, method, bucket, "k"))
        n = native(srv, op, bucket, "k", versionId=v1)
        same(n, http(srv, method, bucket, "k", versionId=v1))
        assert n["headers"]["x-amz-version-id"] == v1
        same(native(srv, op, bucket, "k", versionId="0" * 31 + "7"),
             http(srv, method, bucket, "k", versionId="0" * 31 + "7"))
        same(native(srv, op, bucket, "k", versionId="bad"),
             http(srv, method, bucket, "k", versionId="bad"))
    assert native(srv, GET, bucket, "k", versionId=v1)["status"] == 200
    # a delete marker, over native
    d = native(srv, DELETE, bucket, "k")
    assert d["status"] == 204 and d["headers"]["x-amz-delete-marker"] == "true"
    marker = d["headers"]["x-amz-version-id"]
    for op, method in ((GET, "GET"), (HEAD, "HEAD")):
        n = native(srv, op, bucket, "k")
        same(n, http(srv, method, bucket, "k"))
        assert n["status"] == 404 and n["headers"]["x-amz-version-id"] == marker
        n = native(srv, op, bucket, "k", versionId=marker)
        same(n, http(srv, method, bucket, "k", versionId=marker))
        assert n["status"] == 405
    # removing the marker and a version by id
    d = native(srv, DELETE, bucket, "k", versionId=marker)
    assert d["status"] == 204 and d["headers"]["x-amz-delete-marker"] == "true"
    assert native(srv, DELETE, bucket, "k", versionId=v2)["status"] == 204
    n = native(srv, GET, bucket, "k")
    assert n["status"] == 200 and n["headers"]["x-amz-version-id"] == v1
    same(native(srv, DELETE, bucket, "k", versionId=v2),
         http(srv, "DELETE", bucket, "k", versionId=v2))


def test_list_object_versions_as_http(srv, bucket):
    for k in ["a", "b/1", "b/2"]:
        for _ in range(2):
            put(srv, bucket, k, b"x")
    native(srv, DELETE, bucket, "a")
    for params in ({}, {"max-keys": "3"}, {"delimiter": "/"}, {"prefix": "b/"},
                   {"encoding-type": "url", "key-marker": "a"}):
        n = native(srv, LIST_VERSIONS, bucket, "-", **params)
        h = http(srv, "GET", bucket, "-", versions=None, **params)
        assert n["status"] == h["status"] == 200, (n, h)
        assert n["body"] == h["body"], params
    root = ET.fromstring(native(srv, LIST_VERSIONS, bucket, "-")["body"])
    assert len(root.findall(f"{S3_NS}Version")) == 6
    assert len(root.findall(f"{S3_NS}DeleteMarker")) == 1
    # a paged walk by the markers gives every entry once
    seen, params = [], {"max-keys": "2"}
    while True:
        root = ET.fromstring(native(srv, LIST_VERSIONS, bucket, "-", **params)["body"])
        seen += [e.findtext(f"{S3_NS}VersionId") for e in root
                 if e.tag in (f"{S3_NS}Version", f"{S3_NS}DeleteMarker")]
        if root.findtext(f"{S3_NS}IsTruncated") != "true":
            break
        params = {"max-keys": "2", "key-marker": root.findtext(f"{S3_NS}NextKeyMarker"),
                  "version-id-marker": root.findtext(f"{S3_NS}NextVersionIdMarker")}
    assert len(seen) == 7 and len(set(seen)) == 7
