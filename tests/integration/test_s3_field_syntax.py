"""Stored headers obey one field syntax on every input path, and what a reply could not carry
back is refused when it is written.

Metadata (x-amz-meta-*) and the stored headers (Content-Type, Cache-Control, ...) come in as
HTTP headers, native params or POST form fields, and go back out as reply headers over HTTP and
over native (where libs3rdma reads them as header lines). A name must be an RFC 9110 token, a
value an RFC 9110 field value (no CR, LF or other control character, no surrounding
whitespace): anything else is 400 InvalidArgument and nothing is stored. The metadata of one
object stays within what one reply carries on every transport (common/s3r_limits.h): at most
32 x-amz-meta-* entries, names of at most 117 bytes after the prefix (MetadataTooLarge), the
stored headers at most 8 KiB together (InvalidArgument)."""
import os
import subprocess
from pathlib import Path

import pytest
from botocore.exceptions import ClientError

from s3r_itest import (REPO_ROOT, UCX_ENVS, RdmaServer, assert_error, boto_client,
                       raw_request)
from test_s3_post_object import assert_absent, own_policy, post_form


DRIVER = Path(os.environ.get("S3RDMA_BUILD", REPO_ROOT / "build")) / "tests" / "s3r_driver"


def put(server, bucket, key, headers, query=()):
    return raw_request(server, "PUT", f"/{bucket}/{key}", query=query, headers=headers,
                       body=b"data")


# ---- HTTP --------------------------------------------------------------------------------------

@pytest.mark.parametrize("headers", [
    {"x-amz-meta-a": "one\x01two"},
    {"x-amz-meta-a": "bell\x07"},
    {"x-amz-meta-a": "del\x7f"},
    {"x-amz-meta-a": "\x1b[31mred"},
    {"Content-Type": "text/plain\x01"},
    {"Cache-Control": "max-age=1\x1f"},
    {"Content-Disposition": "attachment; filename=\"a\x7f\""},
], ids=lambda h: repr(h)[:40])
def test_http_put_refuses_control_characters(server, s3, bucket, headers):
    """(A name outside the token syntax never gets this far over HTTP: every x-amz-* header
    must be signed, and SignedHeaders holds tokens only. The POST form tests cover names.)"""
    r = put(server, bucket, "k", headers)
    assert r.status == 400 and r.error_code() == "InvalidArgument", r
    assert_absent(s3, bucket, "k")


def test_http_metadata_still_takes_what_s3_takes(server, s3, bucket):
    """Tokens with punctuation, inner spaces, empty values."""
    headers = {"x-amz-meta-a.b_c!~": "v a l", "x-amz-meta-empty": "",
               "Content-Type": "text/plain; charset=utf-8"}
    r = put(server, bucket, "ok", headers)
    assert r.status == 200, r
    got = raw_request(server, "HEAD", f"/{bucket}/ok")
    assert got.headers["x-amz-meta-a.b_c!~"] == "v a l"
    assert got.headers["content-type"] == "text/plain; charset=utf-8"


def test_copy_replace_and_multipart_create_refuse_bad_metadata(server, s3, bucket):
    s3.put_object(Bucket=bucket, Key="src", Body=b"x")
    bad = {"x-amz-meta-a": "one\x01two"}
    r = put(server, bucket, "copy", {"x-amz-copy-source": f"/{bucket}/src",
                                     "x-amz-metadata-directive": "REPLACE", **bad})
    assert r.status == 400 and r.error_code() == "InvalidArgument", r
    assert_absent(s3, bucket, "copy")
    r = raw_request(server, "POST", f"/{bucket}/mpu", query=[("uploads", None)], headers=bad)
    assert r.status == 400 and r.error_code() == "InvalidArgument", r
    assert s3.list_multipart_uploads(Bucket=bucket).get("Uploads", []) == []


def test_response_overrides_are_held_to_the_field_syntax(server, s3, bucket):
    """response-content-type (a query parameter, percent-decoded) may not smuggle CR/LF into
    the reply: 400, where it used to be dropped silently."""
    s3.put_object(Bucket=bucket, Key="k", Body=b"x", ContentType="text/plain")
    r = raw_request(server, "GET", f"/{bucket}/k",
                    query=[("response-content-type", "text/html\r\nX-Evil: 1")])
    assert r.status == 400 and r.error_code() == "InvalidArgument", r
    r = raw_request(server, "GET", f"/{bucket}/k", query=[("response-content-type", "a/b")])
    assert r.status == 200 and r.headers["content-type"] == "a/b", r


# ---- what a reply could not carry: refused at write ---------------------------------------------

def test_metadata_count_is_bounded(server, s3, bucket):
    """60 tiny entries are 2 KiB at most, which S3's byte limit takes, but a native reply
    (64 headers) could not carry them with the object's own headers."""
    s3.put_object(Bucket=bucket, Key="max", Body=b"x",
                  Metadata={f"m{i}": "v" for i in range(32)})
    assert len(s3.head_object(Bucket=bucket, Key="max")["Metadata"]) == 32
    for n in (33, 60):
        with pytest.raises(ClientError) as ei:
            s3.put_object(Bucket=bucket, Key="many", Body=b"x",
                          Metadata={f"m{i}": "v" for i in range(n)})
        assert_error(ei, "MetadataTooLarge", 400)
    assert_absent(s3, bucket, "many")


def test_metadata_name_length_is_bounded(server, s3, bucket):
    """x-amz-meta- and the name must fit a native reply header name (128 bytes)."""
    s3.put_object(Bucket=bucket, Key="ok", Body=b"x", Metadata={"n" * 117: "v"})
    with pytest.raises(ClientError) as ei:
        s3.put_object(Bucket=bucket, Key="long", Body=b"x", Metadata={"n" * 118: "v"})
    assert_error(ei, "MetadataTooLarge", 400)
    assert_absent(s3, bucket, "long")


def test_stored_headers_are_bounded_together(server, s3, bucket):
    """Two 6000-byte stored headers were accepted, and a GET then dropped one of them from its
    reply (16 KiB of reply headers) without a word; now the PUT is refused."""
    r = put(server, bucket, "big", {"Content-Type": "t/" + "a" * 6000,
                                    "Cache-Control": "c" * 6000})
    assert r.status == 400 and r.error_code() == "InvalidArgument", r
    assert_absent(s3, bucket, "big")
    r = put(server, bucket, "fits", {"Content-Type": "t/" + "a" * 4000,
                                     "Cache-Control": "c" * 4000})
    assert r.status == 200, r
    got = raw_request(server, "HEAD", f"/{bucket}/fits")
    assert len(got.headers["content-type"]) == 4002 and len(got.headers["cache-control"]) == 4000


# ---- POST forms --------------------------------------------------------------------------------

@pytest.mark.parametrize("field,value", [
    ("x-amz-meta-a", "v\r\nContent-Length: 1"),
    ("x-amz-meta-a", "v\nx"),
    ("x-amz-meta-a", " v"),
    ("Content-Type", "text/plain\r\nX-Evil: 1"),
    ("Cache-Control", "max-age=1\r"),
    ("x-amz-meta-a", "v\x00x-amz-meta-b"),
    ("x-amz-meta-a b", "v"),
    ("x-amz-meta-a:b", "v"),
    ("x-amz-meta-", "v"),
])
def test_post_form_refuses_cr_lf_nul_and_bad_names(server, s3, bucket, field, value):
    fields = own_policy([{"bucket": bucket}, {"key": "form"}, ["starts-with", f"${field}", ""]])
    r = post_form(server, bucket, {"key": "form", field: value, **fields})
    assert r.status_code == 400 and b"<Code>InvalidArgument</Code>" in r.content, r.text
    assert_absent(s3, bucket, "form")


def test_post_form_metadata_count_is_bounded(server, s3, bucket):
    meta = {f"x-amz-meta-m{i}": "v" for i in range(40)}
    fields = own_policy([{"bucket": bucket}, {"key": "form"}] +
                        [["starts-with", f"${k}", ""] for k in meta])
    r = post_form(server, bucket, {"key": "form", **meta, **fields})
    assert r.status_code == 400 and b"<Code>MetadataTooLarge</Code>" in r.content, r.text
    assert_absent(s3, bucket, "form")


# ---- native: an object at every write limit at once is served ----------------------------------

def test_native_serves_an_object_at_every_metadata_limit(tmp_path):
    """The write limits imply the native reply limits: an object with 32 metadata entries, a
    117-byte metadata name and 8 KiB of stored headers (and a checksum) answers a native HEAD
    and GET. (Past these limits the write is refused: the tests above.)"""
    srv = RdmaServer(tmp_path, "limits", UCX_ENVS["ucx-tcp"]).start()
    try:
        s3 = boto_client(srv)
        s3.create_bucket(Bucket="limits")
        meta = {f"m{i}": "v" for i in range(31)}
        meta["n" * 117] = "w"
        s3.put_object(Bucket="limits", Key="k", Body=b"payload", Metadata=meta,
                      ContentType="t/" + "a" * 4094, CacheControl="c" * 4096,
                      ChecksumAlgorithm="SHA256")
        env = srv.client_env()
        out = {}
        for args in (["head", "limits", "k"], ["fetch", "limits", "k", str(tmp_path / "got")]):
            p = subprocess.run([str(DRIVER), "--transport", "native", "--no-fallback", *args],
                               env=env, capture_output=True, text=True, timeout=120)
            assert p.returncode == 0, (args, p.stdout, p.stderr)
            out[args[0]] = p.stdout
        assert (tmp_path / "got").read_bytes() == b"payload"
        got = dict(line[5:].split("=", 1) for line in out["head"].splitlines()
                   if line.startswith("META "))
        assert got == meta, out["head"]
    finally:
        srv.stop()
