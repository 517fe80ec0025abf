"""ListObjects v1 and v2."""
import urllib.parse

import pytest
from botocore.exceptions import ClientError

from s3r_itest import S3_NS, assert_error, empty_bucket, new_bucket_name, raw_request

KEYS = ["a", "b/1", "b/2", "b/3/x", "c/d/e", "c/f", "z", "A", "~tilde", "é", "日本/語",
        "sp ace+plus%pct", "b/", "zz/1", "zz/2"]


def byte_sorted(keys):
    return sorted(keys, key=lambda k: k.encode("utf-8"))


@pytest.fixture(scope="module")
def lbucket(s3):
    name = new_bucket_name("list")
    s3.create_bucket(Bucket=name)
    for k in KEYS:
        s3.put_object(Bucket=name, Key=k, Body=k.encode())
    yield name
    empty_bucket(s3, name)
    s3.delete_bucket(Bucket=name)


def test_v2_all_keys_in_byte_order(s3, lbucket):
    resp = s3.list_objects_v2(Bucket=lbucket)
    keys = [o["Key"] for o in resp["Contents"]]
    assert keys == byte_sorted(KEYS)
    assert resp["KeyCount"] == len(KEYS)
    assert resp["IsTruncated"] is False
    for o in resp["Contents"]:
        assert o["Size"] == len(o["Key"].encode())
        assert o["ETag"].startswith('"') and len(o["ETag"]) == 34
        assert "Owner" not in o
        assert o["StorageClass"] == "STANDARD"


def test_v2_prefix(s3, lbucket):
    resp = s3.list_objects_v2(Bucket=lbucket, Prefix="b/")
    assert [o["Key"] for o in resp["Contents"]] == ["b/", "b/1", "b/2", "b/3/x"]
    assert resp["Prefix"] == "b/"
    resp = s3.list_objects_v2(Bucket=lbucket, Prefix="nothing-here")
    assert "Contents" not in resp and resp["KeyCount"] == 0


def test_v2_delimiter(s3, lbucket):
    resp = s3.list_objects_v2(Bucket=lbucket, Delimiter="/")
    assert [o["Key"] for o in resp["Contents"]] == byte_sorted(
        ["a", "z", "A", "~tilde", "é", "sp ace+plus%pct"])
    assert [p["Prefix"] for p in resp["CommonPrefixes"]] == byte_sorted(["b/", "c/", "zz/", "日本/"])
    assert resp["KeyCount"] == 10
    resp = s3.list_objects_v2(Bucket=lbucket, Prefix="c/", Delimiter="/")
    assert [o["Key"] for o in resp["Contents"]] == ["c/f"]
    assert [p["Prefix"] for p in resp["CommonPrefixes"]] == ["c/d/"]
    resp = s3.list_objects_v2(Bucket=lbucket, Prefix="b/", Delimiter="/")
    assert [o["Key"] for o in resp["Contents"]] == ["b/", "b/1", "b/2"]
    assert [p["Prefix"] for p in resp["CommonPrefixes"]] == ["b/3/"]


def test_v2_non_slash_delimiter(s3, lbucket):
    resp = s3.list_objects_v2(Bucket=lbucket, Delimiter="1")
    assert [p["Prefix"] for p in resp["CommonPrefixes"]] == ["b/1", "zz/1"]


def _page_v2(s3, bucket, **kw):
    keys, prefixes, pages = [], [], 0
    token = None
    while True:
        args = dict(kw)
        if token:
            args["ContinuationToken"] = token
        resp = s3.list_objects_v2(Bucket=bucket, **args)
        pages += 1
        n = len(resp.get("Contents", [])) + len(resp.get("CommonPrefixes", []))
        assert n <= kw.get("MaxKeys", 1000)
        assert resp["KeyCount"] == n
        keys += [o["Key"] for o in resp.get("Contents", [])]
        prefixes += [p["Prefix"] for p in resp.get("CommonPrefixes", [])]
        if not resp["IsTruncated"]:
            assert "NextContinuationToken" not in resp
            break
        token = resp["NextContinuationToken"]
        assert token
        assert pages < 100
    return keys, prefixes, pages


def test_v2_pagination(s3, lbucket):
    keys, prefixes, pages = _page_v2(s3, lbucket, MaxKeys=2)
    assert keys == byte_sorted(KEYS)
    assert prefixes == []
    assert pages == (len(KEYS) + 1) // 2


def test_v2_pagination_with_delimiter(s3, lbucket):
    keys, prefixes, _ = _page_v2(s3, lbucket, MaxKeys=3, Delimiter="/")
    assert keys == byte_sorted(["a", "z", "A", "~tilde", "é", "sp ace+plus%pct"])
    assert prefixes == byte_sorted(["b/", "c/", "zz/", "日本/"])


def test_v2_max_keys_one_truncated(s3, lbucket):
    resp = s3.list_objects_v2(Bucket=lbucket, MaxKeys=1)
    assert resp["IsTruncated"] is True
    assert [o["Key"] for o in resp["Contents"]] == ["A"]
    assert resp["MaxKeys"] == 1


def test_v2_start_after(s3, lbucket):
    resp = s3.list_objects_v2(Bucket=lbucket, StartAfter="b/2")
    assert [o["Key"] for o in resp["Contents"]] == [k for k in byte_sorted(KEYS) if k.encode() > b"b/2"]
    assert resp["StartAfter"] == "b/2"
    resp = s3.list_objects_v2(Bucket=lbucket, StartAfter="zzzz")
    assert [o["Key"] for o in resp.get("Contents", [])] == [k for k in byte_sorted(KEYS) if k.encode() > b"zzzz"]


def test_v2_fetch_owner(s3, lbucket):
    resp = s3.list_objects_v2(Bucket=lbucket, FetchOwner=True, MaxKeys=3)
    for o in resp["Contents"]:
        assert o["Owner"]["ID"]


def test_v1_basic_and_owner(s3, lbucket):
    resp = s3.list_objects(Bucket=lbucket)
    assert [o["Key"] for o in resp["Contents"]] == byte_sorted(KEYS)
    assert resp["IsTruncated"] is False
    assert all(o["Owner"]["ID"] for o in resp["Contents"])


def test_v1_marker_pagination(s3, lbucket):
    keys, marker = [], None
    for _ in range(50):
        kw = {"MaxKeys": 4}
        if marker:
            kw["Marker"] = marker
        resp = s3.list_objects(Bucket=lbucket, **kw)
        page = [o["Key"] for o in resp.get("Contents", [])]
        keys += page
        if not resp["IsTruncated"]:
            break
        marker = resp.get("NextMarker") or page[-1]
    assert keys == byte_sorted(KEYS)


def test_v1_delimiter_next_marker(s3, lbucket):
    keys, prefixes, marker = [], [], None
    for _ in range(50):
        kw = {"MaxKeys": 2, "Delimiter": "/"}
        if marker:
            kw["Marker"] = marker
        resp = s3.list_objects(Bucket=lbucket, **kw)
        keys += [o["Key"] for o in resp.get("Contents", [])]
        prefixes += [p["Prefix"] for p in resp.get("CommonPrefixes", [])]
        if not resp["IsTruncated"]:
            break
        assert resp.get("NextMarker"), "NextMarker is required with a delimiter"
        marker = resp["NextMarker"]
    assert keys == byte_sorted(["a", "z", "A", "~tilde", "é", "sp ace+plus%pct"])
    assert prefixes == byte_sorted(["b/", "c/", "zz/", "日本/"])


def test_v1_marker_after_all(s3, lbucket):
    resp = s3.list_objects(Bucket=lbucket, Marker="\U0010ffff")
    assert "Contents" not in resp
    assert resp["IsTruncated"] is False


def _xml_keys(root, tag="Contents", sub="Key"):
    return [el.find(S3_NS + sub).text for el in root.findall(S3_NS + tag)]


@pytest.mark.parametrize("v2", [True, False])
def test_encoding_type_url_raw(server, lbucket, v2):
    q = [("encoding-type", "url"), ("delimiter", "/")]
    if v2:
        q.append(("list-type", "2"))
    r = raw_request(server, "GET", f"/{lbucket}", query=q)
    assert r.status == 200, r
    assert b"<EncodingType>url</EncodingType>" in r.body
    root = r.xml()
    raw_keys = _xml_keys(root)
    for k in raw_keys:
        assert " " not in k and "\u00e9" not in k, k
    decoded = [urllib.parse.unquote_plus(k) for k in raw_keys]
    assert decoded == byte_sorted(["a", "z", "A", "~tilde", "é", "sp ace+plus%pct"])
    enc_sp = [k for k in raw_keys if urllib.parse.unquote_plus(k) == "sp ace+plus%pct"][0]
    assert "%2B" in enc_sp.upper() and "%25" in enc_sp and " " not in enc_sp
    enc_e = [k for k in raw_keys if urllib.parse.unquote_plus(k) == "é"][0]
    assert enc_e.upper() == "%C3%A9"
    prefixes = [urllib.parse.unquote_plus(p) for p in _xml_keys(root, "CommonPrefixes", "Prefix")]
    assert prefixes == byte_sorted(["b/", "c/", "zz/", "日本/"])


def test_encoding_type_url_boto3(s3, lbucket):
    # botocore asks for encoding-type=url and decodes the answer itself.
    resp = s3.list_objects_v2(Bucket=lbucket)  # botocore adds encoding-type=url itself
    assert [o["Key"] for o in resp["Contents"]] == byte_sorted(KEYS)


def test_invalid_max_keys_and_list_type(server, lbucket):
    r = raw_request(server, "GET", f"/{lbucket}", query=[("list-type", "2"), ("max-keys", "-1")])
    assert r.status == 400 and r.error_code() == "InvalidArgument", r
    r = raw_request(server, "GET", f"/{lbucket}", query=[("list-type", "2"), ("max-keys", "abc")])
    assert r.status == 400 and r.error_code() == "InvalidArgument", r
    r = raw_request(server, "GET", f"/{lbucket}", query=[("list-type", "2"),
                                                          ("continuation-token", "garbage!!")])
    assert r.status == 400 and r.error_code() == "InvalidArgument", r


def test_key_length_limit(s3, bucket):
    k1024 = "k" * 1024
    s3.put_object(Bucket=bucket, Key=k1024, Body=b"long")
    assert s3.get_object(Bucket=bucket, Key=k1024)["Body"].read() == b"long"
    assert [o["Key"] for o in s3.list_objects_v2(Bucket=bucket)["Contents"]] == [k1024]
    multibyte = "é" * 512  # 1024 bytes of UTF-8
    s3.put_object(Bucket=bucket, Key=multibyte, Body=b"mb")
    assert s3.get_object(Bucket=bucket, Key=multibyte)["Body"].read() == b"mb"
    for bad in ("k" * 1025, "é" * 512 + "x"):
        with pytest.raises(ClientError) as ei:
            s3.put_object(Bucket=bucket, Key=bad, Body=b"x")
        assert_error(ei, "KeyTooLongError", 400)
    assert len(s3.list_objects_v2(Bucket=bucket)["Contents"]) == 2


def test_many_keys_over_1000(s3, bucket):
    """max-keys is clamped to 1000; listing 1100 keys takes two pages."""
    import concurrent.futures
    keys = [f"many/{i:05d}" for i in range(1100)]
    with concurrent.futures.ThreadPoolExecutor(8) as ex:
        list(ex.map(lambda k: s3.put_object(Bucket=bucket, Key=k, Body=b""), keys))
    resp = s3.list_objects_v2(Bucket=bucket, MaxKeys=5000)
    assert len(resp["Contents"]) == 1000
    assert resp["IsTruncated"] is True
    resp2 = s3.list_objects_v2(Bucket=bucket, ContinuationToken=resp["NextContinuationToken"])
    assert [o["Key"] for o in resp["Contents"] + resp2["Contents"]] == keys
    assert resp2["IsTruncated"] is False
    resp = s3.list_objects(Bucket=bucket)
    assert len(resp["Contents"]) == 1000 and resp["IsTruncated"] is True
    # delete them all in one DeleteObjects of 1000 + one of 100
    s3.delete_objects(Bucket=bucket, Delete={"Objects": [{"Key": k} for k in keys[:1000]], "Quiet": True})
    s3.delete_objects(Bucket=bucket, Delete={"Objects": [{"Key": k} for k in keys[1000:]], "Quiet": True})
    assert s3.list_objects_v2(Bucket=bucket)["KeyCount"] == 0


@pytest.mark.parametrize("pages", ["3", "0", "99", "x"])
def test_native_pages_param_ignored_over_http(server, lbucket, pages):
    # x-s3rdma-pages is the native protocol's (docs/protocol.md §4.2): over HTTP it is
    # not read, whatever its value, and the answer is the one page S3 would send.
    base = [("list-type", "2"), ("max-keys", "2")]
    plain = raw_request(server, "GET", f"/{lbucket}", query=base)
    r = raw_request(server, "GET", f"/{lbucket}", query=base + [("x-s3rdma-pages", pages)])
    assert r.status == 200 and plain.status == 200, r
    assert r.body.count(b"<ListBucketResult") == 1
    assert r.body == plain.body
    assert "x-s3rdma-page-bytes" not in {k.lower() for k in r.headers}
