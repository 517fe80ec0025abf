"""Checksums on multipart uploads as current AWS SDKs send them (issue 20): the algorithm
and type CreateMultipartUpload names (x-amz-checksum-algorithm, x-amz-checksum-type), each
part's checksum, the parts' checksums a Complete lists and the object's checksum it expects,
and the object's checksum S3 computes: COMPOSITE (the algorithm over the parts' checksums,
"-N") or FULL_OBJECT (the CRC of the whole object, combined from the parts'), returned by
Complete, GET/HEAD with x-amz-checksum-mode: ENABLED (a part's own on GET ?partNumber=) and
GetObjectAttributes. Expected values are computed here from the bytes. Runs on both backends
(S3RDMA_TEST_BACKEND=rados)."""
import base64
import hashlib
import struct
import xml.etree.ElementTree as ET
import zlib

import pytest

from s3r_itest import (S3_NS, crc32_b64, crc32c, crc32c_b64, crc64nvme, crc64nvme_b64,
                       raw_request, sha1_b64, sha256_b64)

MIB = 1024 * 1024
PART1 = b"A" * (5 * MIB)
PART2 = b"B" * 1024
B64 = {"CRC32": crc32_b64, "CRC32C": crc32c_b64, "CRC64NVME": crc64nvme_b64, "SHA1": sha1_b64,
       "SHA256": sha256_b64}
WHOLE_CRC = {"CRC32": lambda d: struct.pack(">I", zlib.crc32(d) & 0xFFFFFFFF),
             "CRC32C": lambda d: struct.pack(">I", crc32c(d)),
             "CRC64NVME": lambda d: struct.pack(">Q", crc64nvme(d))}


def composite(alg, part_cks):
    raw = b"".join(base64.b64decode(c) for c in part_cks)
    if alg in ("SHA1", "SHA256"):
        digest = hashlib.new(alg.lower(), raw).digest()
    else:
        digest = base64.b64decode(B64[alg](raw))
    return base64.b64encode(digest).decode() + f"-{len(part_cks)}"


def create(server, bucket, key, alg=None, ctype=None):
    h = {}
    if alg:
        h["x-amz-checksum-algorithm"] = alg
    if ctype:
        h["x-amz-checksum-type"] = ctype
    return raw_request(server, "POST", f"/{bucket}/{key}", query=[("uploads", None)], headers=h)


def upload_id(r):
    assert r.status == 200, r
    return ET.fromstring(r.body).findtext(f"{S3_NS}UploadId")


def part(server, bucket, key, uid, num, data, alg):
    r = raw_request(server, "PUT", f"/{bucket}/{key}",
                    query=[("partNumber", str(num)), ("uploadId", uid)], body=data,
                    headers={f"x-amz-checksum-{alg.lower()}": B64[alg](data)})
    assert r.status == 200, r
    return r.headers["etag"], r.headers[f"x-amz-checksum-{alg.lower()}"]


def complete(server, bucket, key, uid, parts, alg, listed=True, expect=None):
    body = "<CompleteMultipartUpload>"
    for num, (etag, ck) in enumerate(parts, 1):
        body += f"<Part><PartNumber>{num}</PartNumber><ETag>{etag}</ETag>"
        if listed:
            body += f"<Checksum{alg}>{ck}</Checksum{alg}>"
        body += "</Part>"
    body += "</CompleteMultipartUpload>"
    h = {f"x-amz-checksum-{alg.lower()}": expect} if expect else {}
    return raw_request(server, "POST", f"/{bucket}/{key}", query=[("uploadId", uid)],
                       body=body.encode(), headers=h)


def upload_two_parts(server, bucket, key, alg, ctype=None):
    r = create(server, bucket, key, alg, ctype)
    uid = upload_id(r)
    return r, uid, [part(server, bucket, key, uid, 1, PART1, alg),
                    part(server, bucket, key, uid, 2, PART2, alg)]


@pytest.mark.parametrize("alg,ctype,shown", [
    ("SHA256", None, "COMPOSITE"), ("sha1", None, "COMPOSITE"), ("CRC32", None, "COMPOSITE"),
    ("CRC32C", "FULL_OBJECT", "FULL_OBJECT"), ("CRC64NVME", None, "FULL_OBJECT"),
    ("CRC32", "COMPOSITE", "COMPOSITE")])
def test_create_names_algorithm_and_type(server, bucket, alg, ctype, shown):
    r = create(server, bucket, "k", alg, ctype)
    assert r.status == 200, r
    assert r.headers["x-amz-checksum-algorithm"] == alg.upper()
    assert r.headers["x-amz-checksum-type"] == shown


@pytest.mark.parametrize("alg,ctype,why", [
    ("SHA256", "FULL_OBJECT", b"FULL_OBJECT checksum type cannot be used with the sha256"),
    ("SHA1", "FULL_OBJECT", b"FULL_OBJECT checksum type cannot be used with the sha1"),
    ("CRC64NVME", "COMPOSITE", b"COMPOSITE checksum type cannot be used with the crc64nvme"),
    ("MD5", None, b"Checksum algorithm provided is unsupported"),
    (None, "COMPOSITE", b"can only be used with the x-amz-checksum-algorithm"),
    ("CRC32", "PARTIAL", b"x-amz-checksum-type header is invalid")])
def test_create_refusals(server, bucket, alg, ctype, why):
    r = create(server, bucket, "k", alg, ctype)
    assert r.status == 400 and r.error_code() == "InvalidRequest" and why in r.body, r


@pytest.mark.parametrize("alg", ["SHA256", "SHA1", "CRC32", "CRC32C"])
def test_composite(server, s3, bucket, alg):
    _, uid, parts = upload_two_parts(server, bucket, "k", alg, "COMPOSITE")
    want = composite(alg, [ck for _, ck in parts])
    r = complete(server, bucket, "k", uid, parts, alg, expect=want)
    assert r.status == 200, r
    root = ET.fromstring(r.body)
    assert root.findtext(f"{S3_NS}Checksum{alg}") == want
    assert root.findtext(f"{S3_NS}ChecksumType") == "COMPOSITE"
    h = raw_request(server, "HEAD", f"/{bucket}/k", headers={"x-amz-checksum-mode": "ENABLED"})
    assert h.headers[f"x-amz-checksum-{alg.lower()}"] == want
    assert h.headers["x-amz-checksum-type"] == "COMPOSITE"
    assert f"x-amz-checksum-{alg.lower()}" not in raw_request(server, "HEAD", f"/{bucket}/k").headers
    # a part's GET carries the part's own checksum
    for num, (_, ck) in enumerate(parts, 1):
        g = raw_request(server, "GET", f"/{bucket}/k", query=[("partNumber", str(num))],
                        headers={"x-amz-checksum-mode": "ENABLED"})
        assert g.status == 206 and g.headers[f"x-amz-checksum-{alg.lower()}"] == ck
    attrs = s3.get_object_attributes(Bucket=bucket, Key="k",
                                     ObjectAttributes=["Checksum", "ObjectParts"])
    assert attrs["Checksum"][f"Checksum{alg}"] == want
    assert [p[f"Checksum{alg}"] for p in attrs["ObjectParts"]["Parts"]] == [ck for _, ck in parts]
    assert s3.get_object(Bucket=bucket, Key="k")["Body"].read() == PART1 + PART2


@pytest.mark.parametrize("alg", ["CRC32", "CRC32C", "CRC64NVME"])
def test_full_object(server, s3, bucket, alg):
    _, uid, parts = upload_two_parts(server, bucket, "k", alg, "FULL_OBJECT")
    want = base64.b64encode(WHOLE_CRC[alg](PART1 + PART2)).decode()
    r = complete(server, bucket, "k", uid, parts, alg, listed=False, expect=want)
    assert r.status == 200, r
    root = ET.fromstring(r.body)
    assert root.findtext(f"{S3_NS}Checksum{alg}") == want
    assert root.findtext(f"{S3_NS}ChecksumType") == "FULL_OBJECT"
    h = raw_request(server, "HEAD", f"/{bucket}/k", headers={"x-amz-checksum-mode": "ENABLED"})
    assert h.headers[f"x-amz-checksum-{alg.lower()}"] == want
    assert h.headers["x-amz-checksum-type"] == "FULL_OBJECT"


def test_expected_checksum_mismatch_is_bad_digest(server, s3, bucket):
    _, uid, parts = upload_two_parts(server, bucket, "k", "SHA256")
    bad = sha256_b64(b"other") + "-2"
    r = complete(server, bucket, "k", uid, parts, "SHA256", expect=bad)
    assert r.status == 400 and r.error_code() == "BadDigest", r
    assert "Uploads" in s3.list_multipart_uploads(Bucket=bucket)  # nothing changed
    r = complete(server, bucket, "k", uid, parts, "SHA256",
                 expect=composite("SHA256", [ck for _, ck in parts]))
    assert r.status == 200, r


def test_listed_part_checksum_must_be_the_parts(server, bucket):
    _, uid, parts = upload_two_parts(server, bucket, "k", "CRC32")
    wrong = [parts[0], (parts[1][0], crc32_b64(b"not this part"))]
    r = complete(server, bucket, "k", uid, wrong, "CRC32")
    assert r.status == 400 and r.error_code() == "InvalidPart", r


def test_part_sent_without_the_uploads_checksum_gets_one(server, bucket):
    """A part sent with no checksum of the upload's algorithm gets it computed (an SDK that
    sends another algorithm, or none, still completes)."""
    uid = upload_id(create(server, bucket, "k", "SHA256"))
    r = raw_request(server, "PUT", f"/{bucket}/k",
                    query=[("partNumber", "1"), ("uploadId", uid)], body=b"x")
    assert r.status == 200 and r.headers["x-amz-checksum-sha256"] == sha256_b64(b"x"), r
    r = complete(server, bucket, "k", uid, [(r.headers["etag"], None)], "SHA256", listed=False)
    assert r.status == 200, r
    assert ET.fromstring(r.body).findtext(f"{S3_NS}ChecksumSHA256") == \
        composite("SHA256", [sha256_b64(b"x")])


def test_list_parts_names_the_uploads_checksum(s3, server, bucket):
    r, uid, parts = upload_two_parts(server, bucket, "k", "CRC32C", "FULL_OBJECT")
    lp = s3.list_parts(Bucket=bucket, Key="k", UploadId=uid)
    assert lp["ChecksumAlgorithm"] == "CRC32C"
    assert [p["ChecksumCRC32C"] for p in lp["Parts"]] == [ck for _, ck in parts]
    raw = raw_request(server, "GET", f"/{bucket}/k", query=[("uploadId", uid)])
    assert b"<ChecksumType>FULL_OBJECT</ChecksumType>" in raw.body, raw


def test_retried_complete_answers_the_same_checksum(server, bucket):
    _, uid, parts = upload_two_parts(server, bucket, "k", "SHA256")
    first = complete(server, bucket, "k", uid, parts, "SHA256")
    again = complete(server, bucket, "k", uid, parts, "SHA256")
    assert first.status == again.status == 200
    f, a = ET.fromstring(first.body), ET.fromstring(again.body)
    for tag in ("ETag", "ChecksumSHA256", "ChecksumType"):
        assert f.findtext(f"{S3_NS}{tag}") == a.findtext(f"{S3_NS}{tag}") is not None, tag


def test_boto3_composite(s3, bucket):
    """boto3's own calls (ChecksumAlgorithm on create and parts, the parts' checksums listed)."""
    uid = s3.create_multipart_upload(Bucket=bucket, Key="k", ChecksumAlgorithm="SHA256")["UploadId"]
    r1 = s3.upload_part(Bucket=bucket, Key="k", UploadId=uid, PartNumber=1, Body=PART1,
                        ChecksumAlgorithm="SHA256")
    r2 = s3.upload_part(Bucket=bucket, Key="k", UploadId=uid, PartNumber=2, Body=PART2,
                        ChecksumAlgorithm="SHA256")
    done = s3.complete_multipart_upload(
        Bucket=bucket, Key="k", UploadId=uid, MultipartUpload={"Parts": [
            {"PartNumber": 1, "ETag": r1["ETag"], "ChecksumSHA256": r1["ChecksumSHA256"]},
            {"PartNumber": 2, "ETag": r2["ETag"], "ChecksumSHA256": r2["ChecksumSHA256"]}]})
    want = composite("SHA256", [r1["ChecksumSHA256"], r2["ChecksumSHA256"]])
    assert done["ChecksumSHA256"] == want
    assert s3.head_object(Bucket=bucket, Key="k", ChecksumMode="ENABLED")["ChecksumSHA256"] == want


@pytest.mark.parametrize("alg", ["SHA256", "CRC32"])
def test_copied_parts_get_the_uploads_checksum(server, s3, bucket, alg):
    """UploadPartCopy computes the copied bytes' checksum of the upload's algorithm (in its
    CopyPartResult), so the upload completes with the object's checksum."""
    s3.put_object(Bucket=bucket, Key="src", Body=PART1 + PART2)
    uid = upload_id(create(server, bucket, "k", alg))
    parts = []
    for num, rng in ((1, f"bytes=0-{len(PART1) - 1}"),
                     (2, f"bytes={len(PART1)}-{len(PART1) + len(PART2) - 1}")):
        r = raw_request(server, "PUT", f"/{bucket}/k",
                        query=[("partNumber", str(num)), ("uploadId", uid)],
                        headers={"x-amz-copy-source": f"/{bucket}/src",
                                 "x-amz-copy-source-range": rng})
        assert r.status == 200, r
        root = ET.fromstring(r.body)
        parts.append((root.findtext(f"{S3_NS}ETag"), root.findtext(f"{S3_NS}Checksum{alg}")))
    assert [ck for _, ck in parts] == [B64[alg](PART1), B64[alg](PART2)]
    r = complete(server, bucket, "k", uid, parts, alg)
    assert r.status == 200, r
    assert ET.fromstring(r.body).findtext(f"{S3_NS}Checksum{alg}") == \
        composite(alg, [ck for _, ck in parts])
