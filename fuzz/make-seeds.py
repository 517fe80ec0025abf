#!/usr/bin/env python3
"""Writes the seed corpora in fuzz/corpus/<target>/. Rerun after changing a
wire format; the files are committed, so this is only needed to regenerate.
Signed aws-chunked seeds are signed with the same fixed key, date, scope and
seed signatures as fuzz_awschunked.c (the S3 documentation's example), and
the generator checks itself against the documentation's first chunk
signature."""
import base64
import hashlib
import hmac
import os
import re
import struct

HERE = os.path.dirname(os.path.abspath(__file__))
SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
DATE = "20130524T000000Z"
SCOPE = "20130524/us-east-1/s3/aws4_request"
SEED = "4f232c4386841ef735655705268965c44a0e4690baa4adea153f7db9fa80a0a9"
T_SEED = "106e2a8a18243abcf37539882f36619c00e2dfc72633413f02d3b74544bfeb8e"
EMPTY = hashlib.sha256(b"").hexdigest()


def hm(k, m):
    return hmac.new(k, m.encode() if isinstance(m, str) else m, hashlib.sha256).digest()


KEY = hm(hm(hm(hm(("AWS4" + SECRET).encode(), "20130524"), "us-east-1"), "s3"), "aws4_request")


def chunk_sig(prev, chunk):
    sts = "\n".join(["AWS4-HMAC-SHA256-PAYLOAD", DATE, SCOPE, prev, EMPTY,
                     hashlib.sha256(chunk).hexdigest()])
    return hm(KEY, sts).hex()


def trailer_sig(prev, canon):
    sts = "\n".join(["AWS4-HMAC-SHA256-TRAILER", DATE, SCOPE, prev,
                     hashlib.sha256(canon).hexdigest()])
    return hm(KEY, sts).hex()


assert chunk_sig(SEED, b"a" * 65536) == \
    "ad80c730a21e5b8d04586a2213dd63b9a0e99e0e2307b0ade35a65485a288648"


def signed_body(chunks, trailers=None):
    prev = T_SEED if trailers is not None else SEED
    out = b""
    for c in chunks + [b""]:
        prev = chunk_sig(prev, c)
        out += b"%x;chunk-signature=%s\r\n" % (len(c), prev.encode()) + c
        if c:
            out += b"\r\n"
    if trailers is not None:
        canon = b"".join(b"%s:%s\n" % (n, v) for n, v in trailers)
        for n, v in trailers:
            out += b"%s:%s\r\n" % (n, v)
        out += b"x-amz-trailer-signature:%s\r\n" % trailer_sig(prev, canon).encode()
    return out + b"\r\n"


def unsigned_body(chunks, trailers):
    out = b""
    for c in chunks + [b""]:
        out += b"%x\r\n" % len(c) + c
        if c:
            out += b"\r\n"
    for n, v in trailers:
        out += b"%s:%s\r\n" % (n, v)
    return out + b"\r\n"


def frame(type_, payload):
    return struct.pack(">IBBH", 0x53335253, 2, type_, 0) + payload


def s16(b):
    return struct.pack(">H", len(b)) + b


def b32(b):
    return struct.pack(">I", len(b)) + b



NATIVE_MAGIC = 0x5333524E
SID = bytes(range(0xa0, 0xb0))
HDR, QRY = 1, 2


def nref(region, addr, length):
    return struct.pack(">IQQ", region, addr, length)


def nreq(op, rid, bucket, key, params=(), body=None, out=None, inline_max=65536):
    """A native request (rdma_native_wire.h): body None, bytes (inline) or a
    ref tuple (region); out None or a ref tuple."""
    m = struct.pack(">IBBHQ", NATIVE_MAGIC, 1, op, 0, rid) + SID
    m += s16(bucket) + s16(key) + struct.pack(">IH", inline_max, len(params))
    for kind, name, value in params:
        m += bytes([kind]) + s16(name) + s16(value)
    if body is None:
        m += b"\x00"
    elif isinstance(body, bytes):
        m += b"\x01" + b32(body)
    else:
        m += b"\x02" + nref(*body)
    return m + (b"\x00" if out is None else b"\x01" + nref(*out))


def nreply(op, rid, status, error=0, s3id=b"", headers=(), body=None):
    """A native reply: body None, bytes (inline) or an int (in the out region)."""
    m = struct.pack(">IBBHQHH", NATIVE_MAGIC, 1, op, 0, rid, status, error) + s16(s3id)
    m += struct.pack(">H", len(headers))
    for name, value in headers:
        m += s16(name) + s16(value)
    if body is None:
        return m + b"\x00"
    if isinstance(body, bytes):
        return m + b"\x01" + b32(body)
    return m + b"\x02" + struct.pack(">Q", body)


DELETE_XML = b"<Delete><Object><Key>a</Key></Object><Object><Key>b/c</Key></Object></Delete>"
COMPLETE_XML = b"<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>e</ETag></Part></CompleteMultipartUpload>"

CRC = [(b"x-amz-checksum-crc32c", b"sOO8/Q==")]
SEEDS = {
    "awschunked": [
        b"\x80" + signed_body([b"hello world"]),
        b"\x10" + signed_body([b"a" * 300, b"b" * 17]),
        b"\xff" + signed_body([b"xyz"], CRC),
        b"\x40" + signed_body([b"abc", b"d"], [(b"x-amz-checksum-sha256", b"47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=")]),
        b"\x80" + unsigned_body([b"hello world"], CRC),
        b"\x05" + unsigned_body([b"a" * 100, b"bc"], [(b"x-amz-checksum-crc32", b"AAAAAA==")]),
        b"\x00" + b"0\r\n\r\n",
    ],
    "xml_in": [
        b'<?xml version="1.0" encoding="UTF-8"?>\n<CompleteMultipartUpload xmlns="http://s3.amazonaws.com/doc/2006-03-01/">'
        b'<Part><ETag>"a54357aff0632cce46d942af68356b38"</ETag><PartNumber>1</PartNumber></Part>'
        b'<Part><ETag>"0c78aef83f66abc1fa1e8477f296d394"</ETag><PartNumber>2</PartNumber></Part>'
        b"</CompleteMultipartUpload>",
        b"<CompleteMultipartUpload><Part><PartNumber>10000</PartNumber><ETag>e</ETag>"
        b"<ChecksumCRC32>AAAAAA==</ChecksumCRC32></Part></CompleteMultipartUpload>",
        b'<?xml version="1.0" encoding="UTF-8"?>\n<Delete xmlns="http://s3.amazonaws.com/doc/2006-03-01/">'
        b"<Quiet>true</Quiet><Object><Key>sample1.txt</Key></Object>"
        b"<Object><Key>a &amp; b/&#x4e2d;</Key><VersionId>null</VersionId></Object></Delete>",
        b"<Delete><Object><Key> spaced </Key></Object></Delete>",
        b'<CreateBucketConfiguration xmlns="http://s3.amazonaws.com/doc/2006-03-01/">'
        b"<LocationConstraint>us-west-2</LocationConstraint></CreateBucketConfiguration>",
        b"<CreateBucketConfiguration/>",
    ],
    "sigv4": [
        b"AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request, "
        b"SignedHeaders=host;range;x-amz-content-sha256;x-amz-date, "
        b"Signature=fe5f80f77d5fa3beca038a248ff027d0445342fe2855ddc963176630326f1024",
        b"AWS4-HMAC-SHA256 Credential=AK/20240101/us-east-1/s3/aws4_request,SignedHeaders=host,"
        b"Signature=0000000000000000000000000000000000000000000000000000000000000000",
        b"AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request",
        b"X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIAIOSFODNN7EXAMPLE%2F20130524%2Fus-east-1%2Fs3%2Faws4_request"
        b"&X-Amz-Date=20130524T000000Z&X-Amz-Expires=86400&X-Amz-SignedHeaders=host&X-Amz-Signature=aeeed9bbccd4d02ee5c0109b86d86835f995330da4c265957d157751f604d404",
        b"list-type=2&prefix=a%20b&delimiter=/&max-keys=10&uploads&b=2&a=1",
        b"/bucket/a b/c~d/%/\xe4\xb8\xad",
        b"20130524T000000Z",
        b"20240229T235959Z",
    ],
    "s3_util": [
        b"\x00" * 7 + b"\x64" + b"bytes=0-9",
        b"\x00" * 7 + b"\x64" + b"bytes=-5",
        b"\x01\x00\x00\x00\x00\x00\x10\x00" + b"bytes=10-",
        b"\x00" * 7 + b"\x10" + b"bytes=0-1,3-4",
        b"\x00" * 8 + b"a%20b+c%2Fd",
        b"\x00" * 8 + b"Sun, 06 Nov 1994 08:49:37 GMT",
        b"\x00" * 8 + b"Sunday, 06-Nov-94 08:49:37 GMT",
        b"\x00" * 8 + b"Sun Nov  6 08:49:37 1994",
        b"\x00" * 8 + b"my-bucket.example",
        b"\x00" * 8 + "kéy/中文".encode(),
    ],
    "rdma_wire": [
        frame(1, s16(b"AKIAIOSFODNN7EXAMPLE") + bytes(range(32)) + b32(b"\x01" * 40)),
        frame(2, bytes(range(32, 64))),
        frame(3, bytes(range(32))),
        frame(9, bytes(range(64, 96))),
        frame(4, bytes(range(16)) + b"\x01\x00\x00\x00" + struct.pack(">IQII", 64, 16 << 30, 64, 1 << 20) + b32(b"\x02" * 24) + bytes(32)),
        frame(5, struct.pack(">I", 2) + s16(b"authentication failed")),
        frame(5, struct.pack(">I", 1) + s16(b"")),
        frame(6, struct.pack(">IQQ", 7, 0x7f0000001000, 1 << 20) + b32(b"rkey-bytes")),
        frame(7, struct.pack(">I", 7)),
        frame(8, struct.pack(">I", 7)),
    ],
    "rdma_native": [
        nreq(1, 1, b"bkt", b"obj/a.txt", [(HDR, b"content-type", b"text/plain"), (HDR, b"x-amz-meta-k", b"v")], body=b"hello world"),
        nreq(1, 2, b"bkt", b"big", [(HDR, b"content-length", b"1048576")], body=(3, 0x7f0000100000, 1 << 20)),
        nreq(2, 3, b"bkt", b"obj", [(HDR, b"range", b"bytes=0-99")], out=(4, 0x7f0000200000, 4096)),
        nreq(3, 4, b"bkt", b"obj", inline_max=0),
        nreq(5, 5, b"bkt", b"", [(QRY, b"delete", b"")], body=DELETE_XML),
        nreq(6, 6, b"bkt", b"", [(QRY, b"list-type", b"2"), (QRY, b"prefix", b"a/"), (QRY, b"delimiter", b"/")]),
        nreq(7, 7, b"bkt", b"copy", [(HDR, b"x-amz-copy-source", b"/src/key%20x")]),
        nreq(8, 8, b"new-bucket", b""),
        nreq(11, 9, b"", b""),
        nreq(13, 10, b"bkt", b"mpu", [(QRY, b"partNumber", b"2"), (QRY, b"uploadId", b"VXBsb2FkIElE")], body=(5, 0x1000, 5 << 20)),
        nreq(14, 11, b"bkt", b"mpu", [(QRY, b"uploadId", b"VXBsb2FkIElE")], body=COMPLETE_XML, out=(6, 0x2000, 65536)),
        nreq(19, 12, b"bkt", b"", [(QRY, b"location", b"")]),
        nreply(1, 1, 200, 0, b"0123456789ABCDEF", [(b"ETag", b'"5eb63bbbe01eeed093cb22bb8f5acdc3"')]),
        nreply(2, 3, 200, 0, b"r-2", [(b"Content-Length", b"100"), (b"Content-Range", b"bytes 0-99/1000")], 100),
        nreply(2, 3, 404, 0, b"r-3", [(b"Content-Type", b"application/xml")],
               b"<Error><Code>NoSuchKey</Code><Message>The specified key does not exist.</Message></Error>"),
        nreply(3, 4, 0, 9),
        nreply(11, 9, 200, 0, b"r-5", [], b"<ListAllMyBucketsResult><Buckets/></ListAllMyBucketsResult>"),
    ],
    "rdma_token": [
        b"s3r1." + base64.urlsafe_b64encode(bytes(range(16)) + struct.pack(">IQQ", 3, 0x7f12345000, 1 << 20)).rstrip(b"="),
        b"s3r1." + base64.urlsafe_b64encode(b"\xff" * 16 + struct.pack(">IQQ", 0, 2**64 - 1, 2)).rstrip(b"="),
        bytes(range(36)),
    ],
    "hash": [
        b"\x40" + b"aGVsbG8gd29ybGQ=",
        b"\x10" + b"AQID",
        b"\x20" + b"q83vASNFZ4k",
        b"\x08" + b"00ff10Aa",
        b"\x03" + b"sOO8/Q==",
    ],
    "client_xml": [
        b'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>NoSuchKey</Code><Message>The specified key does not exist.</Message>'
        b"<Key>a/b</Key><RequestId>r-1</RequestId></Error>",
        b"<Error><Code>EntityTooLarge</Code><Message>m</Message><ProposedSize>10</ProposedSize><MaxSizeAllowed>5</MaxSizeAllowed></Error>",
        b'<?xml version="1.0" encoding="UTF-8"?>\n<ListAllMyBucketsResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">'
        b"<Owner><ID>o</ID></Owner><Buckets><Bucket><Name>b1</Name><CreationDate>2024-01-02T03:04:05.000Z</CreationDate></Bucket>"
        b"<Bucket><Name>b2</Name></Bucket></Buckets></ListAllMyBucketsResult>",
        b'<ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Name>b</Name><Prefix></Prefix><KeyCount>2</KeyCount>'
        b"<MaxKeys>1000</MaxKeys><IsTruncated>true</IsTruncated><NextContinuationToken>tok</NextContinuationToken>"
        b'<Contents><Key>a &amp; b</Key><LastModified>2024-01-02T03:04:05.000Z</LastModified><ETag>"abc"</ETag><Size>12</Size></Contents>'
        b"<CommonPrefixes><Prefix>dir/</Prefix></CommonPrefixes></ListBucketResult>",
        b"<InitiateMultipartUploadResult><Bucket>b</Bucket><Key>k</Key><UploadId>VXBsb2FkIElE</UploadId></InitiateMultipartUploadResult>",
        b"Tue, 02 Jan 2024 03:04:05 GMT",
    ],
}



# native_session: request sequences in fuzz_native_session.c's input format
# (see one_request there); param names and values are indices into its
# tables, read from the source so the seeds follow them.
def _c_table(name):
    src = open(os.path.join(HERE, "fuzz_native_session.c")).read()
    body = src.split(name, 1)[1].split("};", 1)[0]
    return body


PNAMES = re.findall(r'\{"([^"]+)", RDMA_PARAM_', _c_table("pnames[] = {"))
PVALUES = [v.encode().decode("unicode_escape") if v is not None else None
           for v in re.findall(r'^\s*(?:"((?:[^"\\]|\\.)*)"|long_value),$',
                               _c_table("pvalues[] = {"), re.M)]
OPS = {n: i + 1 for i, n in enumerate([
    "PutObject", "GetObject", "HeadObject", "DeleteObject", "DeleteObjects", "ListObjects",
    "CopyObject", "CreateBucket", "DeleteBucket", "HeadBucket", "ListBuckets", "CreateMPU",
    "UploadPart", "CompleteMPU", "AbortMPU", "ListParts", "ListMPU", "UploadPartCopy",
    "GetBucketLocation", "ListObjectVersions",
    # the configuration opcodes (21-50)
    "GetObjectTagging", "PutObjectTagging", "DeleteObjectTagging", "GetObjectRetention",
    "PutObjectRetention", "GetObjectLegalHold", "PutObjectLegalHold", "GetObjectAcl",
    "PutObjectAcl", "GetBucketVersioning", "PutBucketVersioning", "GetBucketLifecycle",
    "PutBucketLifecycle", "DeleteBucketLifecycle", "GetObjectLockConfig", "PutObjectLockConfig",
    "GetBucketTagging", "PutBucketTagging", "DeleteBucketTagging", "GetBucketPolicy",
    "PutBucketPolicy", "DeleteBucketPolicy", "GetBucketCors", "PutBucketCors", "DeleteBucketCors",
    "GetBucketEncryption", "PutBucketEncryption", "DeleteBucketEncryption", "GetBucketAcl",
    "PutBucketAcl"])}
UPLOAD = "upload"  # a param value: the first upload id the input opened


def nsreq(op, bucket=0, key=None, rim=4, params=(), body=None, out=0, nowait=False, raw=None,
          tenant=0):
    """One request. bucket/key: pool index, None (absent); rim: selector (0: 0,
    1: 1, 3: 2^32-1, 4: 16384); params: (name, value) from the tables or UPLOAD;
    body: None, ("inline", bytes), ("region", bytes), ("large", kib), ("complete",),
    ("delete",); out: 0 none, 1 valid, 3 past, 4 unknown region; raw: (muts, version);
    tenant: 0 or 1 (the second user's session)."""
    flags = (0x40 if nowait else 0) | (0x20 if raw else 0) | (0x80 if tenant else 0)
    # opcodes from 31 on follow a first byte of 31 (one_request)
    b = bytes([OPS[op] | flags]) if OPS[op] < 31 else bytes([31 | flags, OPS[op]])
    b += bytes([3 if bucket is None else bucket, 6 if key is None else key, rim])
    b += bytes([len(params)])
    for n, v in params:
        b += bytes([PNAMES.index(n), 0xF0 if v == UPLOAD else PVALUES.index(v)])
    if body is None:
        b += b"\x00"
    elif body[0] in ("inline", "region"):
        b += bytes([1 if body[0] == "inline" else 2]) + struct.pack(">H", len(body[1])) + body[1]
    elif body[0] == "large":
        b += bytes([3, body[1] - 1])
    elif body[0] == "complete":
        b += b"\x06"
    else:
        b += b"\x07\x00"
    b += bytes([out])
    if raw:
        muts, version = raw
        b += bytes([len(muts) | (0x40 if version is not None else 0)])
        for off, val in muts:
            b += struct.pack(">HB", off, val)
        if version is not None:
            b += bytes([version])
    return b


SRC = ("x-amz-copy-source", "/fz-b0/k0")
SEEDS["native_session"] = [
    # objects: create, put, read every way, copy, list, delete
    nsreq("CreateBucket") + nsreq("PutObject", key=0, body=("inline", b"hello, native")) +
    nsreq("GetObject", key=0, out=1) + nsreq("HeadObject", key=0) +
    nsreq("GetObject", key=0, params=[("range", "bytes=0-0")]) +
    nsreq("CopyObject", key=1, params=[SRC]) +
    nsreq("ListObjects", params=[("list-type", "2"), ("prefix", "dir/")]) +
    nsreq("DeleteObject", key=1) + nsreq("DeleteObjects", body=("delete",)) +
    nsreq("GetBucketLocation") + nsreq("ListBuckets", bucket=None) + nsreq("HeadBucket"),
    # a large body by region, read back into the out span with nothing inline
    nsreq("CreateBucket") + nsreq("PutObject", key=2, body=("large", 200)) +
    nsreq("GetObject", key=2, rim=0, out=1) + nsreq("GetObject", key=2, rim=1, out=1) +
    nsreq("HeadObject", key=2, rim=0),
    # multipart: open, part by body and by copy, list, complete, read
    nsreq("CreateBucket") + nsreq("PutObject", key=0, body=("region", b"source bytes")) +
    nsreq("CreateMPU", key=2) +
    nsreq("UploadPart", key=2, params=[("uploadId", UPLOAD), ("partNumber", "1")],
          body=("region", b"part one")) +
    nsreq("UploadPartCopy", key=2, params=[("uploadId", UPLOAD), ("partNumber", "2"), SRC]) +
    nsreq("ListParts", key=2, params=[("uploadId", UPLOAD)]) + nsreq("ListMPU") +
    nsreq("CompleteMPU", key=2, params=[("uploadId", UPLOAD)], body=("complete",)) +
    nsreq("GetObject", key=2, out=1),
    # a one-part upload completed and read back
    nsreq("CreateBucket") + nsreq("CreateMPU", key=0) +
    nsreq("UploadPart", key=0, params=[("uploadId", UPLOAD), ("partNumber", "1")],
          body=("large", 64)) +
    nsreq("CompleteMPU", key=0, params=[("uploadId", UPLOAD)], body=("complete",)) +
    nsreq("GetObject", key=0, out=1),
    # buckets come and go; an upload is aborted
    nsreq("CreateBucket", bucket=1) + nsreq("CreateMPU", bucket=1, key=3) +
    nsreq("AbortMPU", bucket=1, key=3, params=[("uploadId", UPLOAD)]) +
    nsreq("DeleteBucket", bucket=1),
    # several requests in flight at once
    nsreq("CreateBucket") + nsreq("PutObject", key=0, body=("inline", b"x" * 100)) +
    b"".join(nsreq("GetObject", key=0, nowait=True) for _ in range(4)) +
    nsreq("HeadObject", key=0, nowait=True) + nsreq("ListObjects"),
    # conditionals, metadata and a copy that replaces it
    nsreq("CreateBucket") +
    nsreq("PutObject", key=0, params=[("content-type", "text/plain"), ("x-amz-meta-a", "1")],
          body=("inline", b"meta")) +
    nsreq("GetObject", key=0, params=[("if-none-match", "*")]) +
    nsreq("CopyObject", key=1, params=[SRC, ("x-amz-metadata-directive", "REPLACE")]),
    # the other tenant at the first one's objects and uploads, and its own bucket
    nsreq("CreateBucket") + nsreq("PutObject", key=0, body=("inline", b"mine")) +
    nsreq("CreateMPU", key=2) +
    nsreq("GetObject", key=0, tenant=1) + nsreq("ListObjects", tenant=1) +
    nsreq("UploadPart", key=2, params=[("uploadId", UPLOAD), ("partNumber", "1")],
          body=("inline", b"theirs"), tenant=1) +
    nsreq("CreateBucket", bucket=2, tenant=1) +
    nsreq("CopyObject", bucket=2, key=1, params=[SRC], tenant=1) +
    nsreq("DeleteBucket", bucket=2, tenant=1),
    # configuration: versioning on, tags on an object and a bucket, a lifecycle, an ACL by
    # header, read back and deleted; a malformed document
    nsreq("CreateBucket") + nsreq("PutObject", key=0, body=("inline", b"cfg")) +
    nsreq("PutBucketVersioning", params=[("versioning", "")], body=(
        "inline", b"<VersioningConfiguration><Status>Enabled</Status></VersioningConfiguration>")) +
    nsreq("GetBucketVersioning", params=[("versioning", "")]) +
    nsreq("PutObjectTagging", key=0, params=[("tagging", "")], body=(
        "inline", b"<Tagging><TagSet><Tag><Key>a</Key><Value>b</Value></Tag></TagSet></Tagging>")) +
    nsreq("GetObjectTagging", key=0, params=[("tagging", ""), ("versionId", "null")]) +
    nsreq("DeleteObjectTagging", key=0, params=[("tagging", "")]) +
    nsreq("PutBucketTagging", params=[("tagging", "")], body=(
        "inline", b"<Tagging><TagSet><Tag><Key>a</Key><Value>b</Value></Tag></TagSet></Tagging>")) +
    nsreq("GetBucketTagging", params=[("tagging", "")], rim=0, out=1) +
    nsreq("PutBucketLifecycle", params=[("lifecycle", "")], body=(
        "inline", b"<LifecycleConfiguration><Rule><ID>r</ID><Filter><Prefix>dir/</Prefix>"
                  b"</Filter><Status>Enabled</Status><Expiration><Days>1</Days></Expiration>"
                  b"</Rule></LifecycleConfiguration>")) +
    nsreq("GetBucketLifecycle", params=[("lifecycle", "")]) +
    nsreq("DeleteBucketLifecycle", params=[("lifecycle", "")]) +
    nsreq("PutObjectAcl", key=0, params=[("acl", ""), ("x-amz-acl", "")]) +
    nsreq("GetBucketAcl", params=[("acl", "")]) +
    nsreq("PutObjectLegalHold", key=0, params=[("legal-hold", "")],
          body=("inline", b"<LegalHold><Status>ON</Status>")),
    # a raw message with another version: answered BAD_MESSAGE
    nsreq("CreateBucket") + nsreq("HeadBucket", raw=([], 2)) +
    nsreq("ListObjects", raw=([(40, 0xFF)], None)),
]

for target, seeds in SEEDS.items():
    d = os.path.join(HERE, "corpus", target)
    os.makedirs(d, exist_ok=True)
    for i, s in enumerate(seeds):
        with open(os.path.join(d, "seed-%02d" % i), "wb") as f:
            f.write(s)
print("wrote", sum(len(s) for s in SEEDS.values()), "seeds")
