"""A native ListObjectsV2 of several pages (x-s3rdma-pages, docs/protocol.md §4.2): the
reply holds, byte for byte, the pages HTTP gives by following the continuation tokens,
x-s3rdma-page-bytes splits them, the client's room bounds them, and bad values are
refused. Requests come from build/tests/s3r_native_call (tests/attack/s3r_native_call.c:
inline replies up to 64 KiB, its reply_inline_max). Runs under UCX's default transports
and UCX_TLS=tcp."""
import os
import re
import sys
import uuid
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from s3r_itest import (REPO_ROOT, UCX_ENVS, RdmaServer, native_call,  # noqa: E402
                       raw_request)

BUILD = Path(os.environ.get("S3RDMA_BUILD", REPO_ROOT / "build"))
NATIVE_CALL = BUILD / "tests" / "s3r_native_call"
LIST = 6  # ListObjects, docs/protocol.md §4.2
ROOM = 65536  # s3r_native_call's reply_inline_max, and no out span


@pytest.fixture(scope="module", params=list(UCX_ENVS))
def srv(request, tmp_path_factory):
    assert NATIVE_CALL.exists(), "build the tests first"
    s = RdmaServer(tmp_path_factory.mktemp("npages"), "npages", UCX_ENVS[request.param]).start()
    yield s
    s.stop()


@pytest.fixture(scope="module")
def bucket(srv):
    b = "np-" + uuid.uuid4().hex[:10]
    assert raw_request(srv.srv, "PUT", f"/{b}").status == 200
    for i in range(12):
        assert raw_request(srv.srv, "PUT", f"/{b}/k/{i:03d}", body=b"x" * i).status == 200
    for i in range(80):  # long keys, ~1.1 KB an entry: ~88 KB in all
        assert raw_request(srv.srv, "PUT", f"/{b}/long/{i:03d}" + "L" * 900).status == 200
    return b


def native(srv, bucket, **params):
    return native_call(srv, LIST, bucket, "-", [f"?{k}={v}" for k, v in params.items()])


def http_pages(srv, bucket, n, **params):
    """The first n pages over HTTP, following NextContinuationToken."""
    pages, token = [], None
    while len(pages) < n:
        q = list(params.items()) + ([("continuation-token", token)] if token else [])
        r = raw_request(srv.srv, "GET", f"/{bucket}", query=q)
        assert r.status == 200, r
        pages.append(r.body)
        m = re.search(rb"<NextContinuationToken>([^<]*)</NextContinuationToken>", r.body)
        if not m:
            break
        token = m.group(1).decode()
    return pages


def split(reply):
    lens = [int(x) for x in reply["headers"]["x-s3rdma-page-bytes"].split(",")]
    assert sum(lens) == len(reply["body"])
    docs, off = [], 0
    for n in lens:
        docs.append(reply["body"][off:off + n])
        off += n
    return docs


@pytest.mark.parametrize("params", [
    {"prefix": "k/", "max-keys": "2"},
    {"prefix": "k/", "max-keys": "5", "encoding-type": "url", "fetch-owner": "true"},
    {"max-keys": "3", "delimiter": "/"},
    {"prefix": "k/", "max-keys": "2", "start-after": "k/004"},
], ids=["plain", "url-owner", "delimiter", "start-after"])
def test_pages_are_https_pages(srv, bucket, params):
    q = {"list-type": "2", **params}
    r = native(srv, bucket, **q, **{"x-s3rdma-pages": "3"})
    assert r["status"] == 200, r
    assert split(r) == http_pages(srv, bucket, 3, **q)
    # Every page there is, when fewer than asked: the last one is not truncated.
    r = native(srv, bucket, **q, **{"x-s3rdma-pages": "16"})
    docs = split(r)
    assert docs == http_pages(srv, bucket, 16, **q)
    assert len(docs) < 16 and b"<IsTruncated>false</IsTruncated>" in docs[-1]


def test_pages_from_a_token(srv, bucket):
    q = {"list-type": "2", "prefix": "k/", "max-keys": "2"}
    first = http_pages(srv, bucket, 1, **q)[0]
    token = re.search(rb"<NextContinuationToken>([^<]*)<", first).group(1).decode()
    r = native(srv, bucket, **q, **{"continuation-token": token, "x-s3rdma-pages": "2"})
    assert split(r) == http_pages(srv, bucket, 3, **q)[1:3]


def test_pages_stop_before_the_room_runs_out(srv, bucket):
    q = {"list-type": "2", "prefix": "long/", "max-keys": "10"}
    r = native(srv, bucket, **q, **{"x-s3rdma-pages": "16"})
    assert r["status"] == 200, r
    docs = split(r)
    # Pages of ~11 KB: as many as leave room for one more of the largest, then stop
    # with the rest to come; each is HTTP's.
    assert 2 <= len(docs) < 8 and len(r["body"]) <= ROOM
    assert docs == http_pages(srv, bucket, len(docs), **q)
    assert b"<IsTruncated>true</IsTruncated>" in docs[-1]
    assert len(r["body"]) + max(map(len, docs)) > ROOM
    # A first page of ~44 KB: no second one.
    q["max-keys"] = "40"
    docs = split(native(srv, bucket, **q, **{"x-s3rdma-pages": "16"}))
    assert docs == http_pages(srv, bucket, 1, **q)
    # Ten keys in pages of 4: all three come, the last not truncated.
    q.update({"prefix": "long/07", "max-keys": "4"})
    docs = split(native(srv, bucket, **q, **{"x-s3rdma-pages": "16"}))
    assert docs == http_pages(srv, bucket, 16, **q) and len(docs) == 3
    assert b"<IsTruncated>false</IsTruncated>" in docs[-1]


@pytest.mark.parametrize("value", ["0", "17", "x", "", "-1", "3 "])
def test_bad_page_counts_refused(srv, bucket, value):
    r = native(srv, bucket, **{"list-type": "2", "x-s3rdma-pages": value})
    assert (r["status"], r.get("code")) == (400, "InvalidArgument"), r


def test_pages_need_list_type_2(srv, bucket):
    r = native(srv, bucket, **{"x-s3rdma-pages": "2"})
    assert (r["status"], r.get("code")) == (400, "InvalidArgument"), r
    r = native(srv, bucket, **{"list-type": "2", "x-s3rdma-pages": "1", "max-keys": "2",
                               "prefix": "k/"})
    assert r["status"] == 200 and split(r) == http_pages(srv, bucket, 1, **{
        "list-type": "2", "max-keys": "2", "prefix": "k/"})
