"""Checks the suite's own SigV4 helpers (no server): if these fail, failures of the
hand-crafted-request tests are test bugs, not server bugs."""
import urllib.parse

from botocore.auth import S3SigV4Auth, S3SigV4QueryAuth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

from s3r_itest import (crc32_b64, crc32c_b64, presign_url, sign_headers,
                       signed_chunked_body, signed_chunked_length)

AK, SK = "AKIAIOSFODNN7EXAMPLE", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"


def test_aws_documented_streaming_example():
    # The worked example of the AWS "Signature Calculations for the Authorization
    # Header: Transferring Payload in Multiple Chunks" page.
    h = {"Host": "s3.amazonaws.com", "x-amz-storage-class": "REDUCED_REDUNDANCY",
         "Content-Encoding": "aws-chunked", "x-amz-decoded-content-length": "66560",
         "Content-Length": "66824"}
    sig, scope, key = sign_headers("PUT", "/examplebucket/chunkObject.txt", [], h,
                                   "STREAMING-AWS4-HMAC-SHA256-PAYLOAD", AK, SK,
                                   amz_date="20130524T000000Z",
                                   signed_extra=("content-encoding", "content-length"))
    assert sig == "4f232c4386841ef735655705268965c44a0e4690baa4adea153f7db9fa80a0a9"
    body = signed_chunked_body([b"a" * 65536, b"a" * 1024], key, "20130524T000000Z", scope, sig)
    assert len(body) == 66824 == signed_chunked_length([65536, 1024])
    assert b"ad80c730a21e5b8d04586a2213dd63b9a0e99e0e2307b0ade35a65485a288648" in body
    assert b"0055627c9e194cb4542bae2aa5492e3c1575bbb81b612b7d234b86a503ef5497" in body
    assert b"0;chunk-signature=b6c6ea8a5354eaf15b3cb7646744f4275b71ea724fed81ceb9323e279d449df9" in body


def test_header_signer_matches_botocore():
    req = AWSRequest(method="PUT", url="http://127.0.0.1:9000/bkt/a%20b/c%2Bd?uploads=&x-id=1",
                     data=b"hello", headers={"Content-Type": "text/plain"})
    S3SigV4Auth(Credentials(AK, SK), "s3", "us-east-1").add_auth(req)
    date = req.headers["X-Amz-Date"]
    mine = {"Host": "127.0.0.1:9000", "Content-Type": "text/plain"}
    sign_headers("PUT", "/bkt/a%20b/c%2Bd", [("uploads", ""), ("x-id", "1")], mine,
                 req.headers["X-Amz-Content-SHA256"], AK, SK, amz_date=date)
    assert mine["Authorization"] == req.headers["Authorization"]


def test_presigner_matches_botocore():
    req = AWSRequest(method="GET", url="http://127.0.0.1:9000/bkt/k%C3%A9y", headers={})
    S3SigV4QueryAuth(Credentials(AK, SK), "s3", "us-east-1", expires=600).add_auth(req)
    q = dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(req.url).query))
    mine = presign_url("127.0.0.1:9000", "GET", "/bkt/k%C3%A9y", AK, SK, expires=600,
                       amz_date=q["X-Amz-Date"])
    q2 = dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(mine).query))
    assert q2["X-Amz-Signature"] == q["X-Amz-Signature"]


def test_checksum_helpers():
    from botocore.httpchecksum import CrtCrc32cChecksum, CrtCrc32Checksum
    data = b"The quick brown fox jumps over the lazy dog" * 37
    c = CrtCrc32Checksum()
    c.update(data)
    assert crc32_b64(data) == c.b64digest()
    c = CrtCrc32cChecksum()
    c.update(data)
    assert crc32c_b64(data) == c.b64digest()
