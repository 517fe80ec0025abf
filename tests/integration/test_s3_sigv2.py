"""Signature Version 2 (HMAC-SHA1), as legacy tools sign: boto3's 's3' signer (header and
presigned query), s3cmd --signature-v2, hand-made requests for the refusals (bad signature,
expired URL, skewed Date, with S3's codes), the V2 POST form, and signature_v2: false."""
import base64
import datetime
import email.utils
import hashlib
import hmac
import http.client
import json
import os
import subprocess
import time
import urllib.parse

import pytest
import requests

from s3r_itest import REGION, USERS, error_fields as _error_fields, new_bucket_name

AK, SK = USERS[0]


def error_fields(body):
    """The <Error> element's children, by tag."""
    tag, fields = _error_fields(body)
    assert tag == "Error", body
    return fields


def v2_sig(secret, sts):
    return base64.b64encode(hmac.new(secret.encode(), sts.encode(), hashlib.sha1).digest()).decode()


def send(server, method, url, headers, body=b""):
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
    try:
        conn.putrequest(method, url, skip_host=True, skip_accept_encoding=True)
        headers = {"Host": server.host, "Content-Length": str(len(body)), **headers}
        for k, v in headers.items():
            conn.putheader(k, v)
        conn.endheaders()
        if body:
            conn.send(body)
        r = conn.getresponse()
        return r.status, r.read()
    finally:
        conn.close()


def v2_request(server, method, path, date=None, amz=(), resource=None, body=b"", user=USERS[0],
               content_type=""):
    """A header-signed V2 request built here (path is already encoded)."""
    date = date if date is not None else email.utils.formatdate(usegmt=True)
    amz_lines = "".join(f"{k}:{v}\n" for k, v in sorted(amz))
    sts = f"{method}\n\n{content_type}\n{date}\n{amz_lines}{resource or path}"
    headers = {"Date": date, "Authorization": f"AWS {user[0]}:{v2_sig(user[1], sts)}", **dict(amz)}
    if content_type:
        headers["Content-Type"] = content_type
    return send(server, method, path, headers, body)


@pytest.fixture
def v2(make_client):
    return make_client(USERS[0], signature_version="s3")


def test_boto3_v2_object_calls(v2, s3, bucket):
    """PUT, GET, HEAD, list, metadata, copy and delete, all signed V2 by botocore. (Not
    ListObjectsV2: botocore 1.29's V2 signer puts its "?list-type=2" into the signed path.)"""
    data = os.urandom(70000)
    v2.put_object(Bucket=bucket, Key="dir/a b+c.bin", Body=data, ContentType="application/x-y",
                  Metadata={"color": "blue"})
    got = v2.get_object(Bucket=bucket, Key="dir/a b+c.bin")
    assert got["Body"].read() == data and got["Metadata"] == {"color": "blue"}
    assert got["ContentType"] == "application/x-y"
    r = v2.get_object(Bucket=bucket, Key="dir/a b+c.bin", Range="bytes=0-9",
                      ResponseContentType="text/plain")
    assert r["Body"].read() == data[:10] and r["ContentType"] == "text/plain"
    assert [o["Key"] for o in v2.list_objects(Bucket=bucket, Prefix="dir/")["Contents"]] == \
        ["dir/a b+c.bin"]
    v2.copy_object(Bucket=bucket, Key="copy", CopySource={"Bucket": bucket, "Key": "dir/a b+c.bin"})
    assert s3.get_object(Bucket=bucket, Key="copy")["Body"].read() == data
    v2.delete_object(Bucket=bucket, Key="copy")
    assert v2.head_object(Bucket=bucket, Key="dir/a b+c.bin")["ContentLength"] == len(data)
    assert bucket in [b["Name"] for b in v2.list_buckets()["Buckets"]]


def test_boto3_v2_virtual_host(make_client, bucket):
    v2v = make_client(USERS[0], addressing="virtual", signature_version="s3")
    v2v.put_object(Bucket=bucket, Key="vh/k", Body=b"vhost")
    assert v2v.get_object(Bucket=bucket, Key="vh/k")["Body"].read() == b"vhost"
    assert [o["Key"] for o in v2v.list_objects(Bucket=bucket)["Contents"]] == ["vh/k"]


def test_boto3_v2_multipart(v2, s3, bucket):
    """The upload is created over SigV4: botocore 1.29's V2 signer signs CreateMultipartUpload
    (and every operation whose model puts a sub-resource in its path, ?acl...) as
    "/bucket/key?uploads?uploads", which no server accepts. s3cmd covers V2 create."""
    parts = [os.urandom(5 * 1024 * 1024), os.urandom(1000)]
    up = s3.create_multipart_upload(Bucket=bucket, Key="mp")
    etags = []
    for n, p in enumerate(parts, 1):
        r = v2.upload_part(Bucket=bucket, Key="mp", UploadId=up["UploadId"], PartNumber=n, Body=p)
        etags.append({"PartNumber": n, "ETag": r["ETag"]})
    assert len(v2.list_parts(Bucket=bucket, Key="mp", UploadId=up["UploadId"])["Parts"]) == 2
    v2.complete_multipart_upload(Bucket=bucket, Key="mp", UploadId=up["UploadId"],
                                 MultipartUpload={"Parts": etags})
    assert v2.get_object(Bucket=bucket, Key="mp", PartNumber=2)["Body"].read() == parts[1]
    assert v2.get_object(Bucket=bucket, Key="mp")["Body"].read() == b"".join(parts)


def test_boto3_v2_presigned(v2, s3, bucket):
    s3.put_object(Bucket=bucket, Key="p q", Body=b"presigned v2")
    url = v2.generate_presigned_url("get_object", Params={"Bucket": bucket, "Key": "p q"},
                                    ExpiresIn=300)
    assert "AWSAccessKeyId=" in url and "Signature=" in url, url
    r = requests.get(url, timeout=30)
    assert r.status_code == 200 and r.content == b"presigned v2", r.text
    url = v2.generate_presigned_url("put_object", Params={"Bucket": bucket, "Key": "up"},
                                    ExpiresIn=300)
    assert requests.put(url, data=b"put v2", timeout=30).status_code == 200
    assert s3.get_object(Bucket=bucket, Key="up")["Body"].read() == b"put v2"
    # The URL signs the resource: another key with the same signature is refused.
    bad = url.replace("/up?", "/other?")
    r = requests.put(bad, data=b"x", timeout=30)
    assert r.status_code == 403 and error_fields(r.content)["Code"] == "SignatureDoesNotMatch"


def test_presigned_expired(server, s3, bucket):
    s3.put_object(Bucket=bucket, Key="e", Body=b"x")
    expires = int(time.time()) - 10
    sig = v2_sig(SK, f"GET\n\n\n{expires}\n/{bucket}/e")
    q = urllib.parse.urlencode({"AWSAccessKeyId": AK, "Expires": expires, "Signature": sig})
    status, body = send(server, "GET", f"/{bucket}/e?{q}", {})
    err = error_fields(body)
    assert status == 403 and err["Code"] == "AccessDenied", body
    assert err["Message"] == "Request has expired", body


def test_header_bad_signature_echoes_string_to_sign(server, bucket):
    date = email.utils.formatdate(usegmt=True)
    status, body = send(server, "GET", f"/{bucket}?acl",
                        {"Date": date, "x-amz-meta-b": " 2 ", "x-amz-meta-a": "1",
                         "Authorization": f"AWS {AK}:{v2_sig('wrong', 'x')}"})
    err = error_fields(body)
    assert status == 403 and err["Code"] == "SignatureDoesNotMatch", body
    assert err["StringToSign"] == f"GET\n\n\n{date}\nx-amz-meta-a:1\nx-amz-meta-b:2\n/{bucket}?acl"
    assert err["AWSAccessKeyId"] == AK


def test_header_canonical_forms(server, bucket):
    """x-amz-date in place of Date (empty Date line), sub-resources sorted with values,
    list parameters unsigned."""
    amz_date = email.utils.formatdate(usegmt=True)
    sts = f"GET\n\n\n\nx-amz-date:{amz_date}\n/{bucket}?versioning"
    status, body = send(server, "GET", f"/{bucket}?versioning",
                        {"x-amz-date": amz_date, "Authorization": f"AWS {AK}:{v2_sig(SK, sts)}"})
    assert status == 200, body
    status, body = v2_request(server, "GET", f"/{bucket}?prefix=a&max-keys=5",
                              resource=f"/{bucket}")
    assert status == 200, body


def test_unknown_access_key(server, bucket):
    status, body = v2_request(server, "GET", f"/{bucket}", user=("AKNOBODY", "x"))
    assert status == 403 and error_fields(body)["Code"] == "InvalidAccessKeyId", body


@pytest.mark.parametrize("skew", [-20 * 60, 20 * 60])
def test_skewed_date(server, bucket, skew):
    date = email.utils.formatdate(time.time() + skew, usegmt=True)
    status, body = v2_request(server, "GET", f"/{bucket}", date=date)
    assert status == 403 and error_fields(body)["Code"] == "RequestTimeTooSkewed", body


def test_missing_date(server, bucket):
    status, body = send(server, "GET", f"/{bucket}",
                        {"Authorization": f"AWS {AK}:{v2_sig(SK, 'x')}"})
    assert status == 403 and error_fields(body)["Code"] == "AccessDenied", body


def test_v2_post_form(server, s3, bucket):
    """A browser form signed V2: base64 HMAC-SHA1 of the base64 policy."""
    exp = (datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(minutes=5)) \
        .strftime("%Y-%m-%dT%H:%M:%S.000Z")
    policy = base64.b64encode(json.dumps({"expiration": exp, "conditions": [
        {"bucket": bucket}, ["starts-with", "$key", "v2/"]]}).encode()).decode()
    fields = {"key": "v2/${filename}", "AWSAccessKeyId": AK, "policy": policy,
              "signature": v2_sig(SK, policy)}

    def post(f, name="pic.png"):
        files = [(k, (None, v)) for k, v in f.items()] + \
            [("file", (name, b"form v2", "application/octet-stream"))]
        return requests.post(f"{server.endpoint}/{bucket}", files=files, timeout=30)

    r = post(fields)
    assert r.status_code == 204, r.text
    assert s3.get_object(Bucket=bucket, Key="v2/pic.png")["Body"].read() == b"form v2"
    r = post({**fields, "signature": v2_sig("wrong", policy)})
    assert r.status_code == 403 and error_fields(r.content)["Code"] == "SignatureDoesNotMatch"
    r = post({**fields, "key": "other/x"})  # the policy still judges the form
    assert r.status_code == 403 and error_fields(r.content)["Code"] == "AccessDenied", r.text


def test_boto3_presigned_post_v2(v2, s3, bucket):
    p = v2.generate_presigned_post(bucket, "b/${filename}", ExpiresIn=300)
    assert "AWSAccessKeyId" in p["fields"] and "signature" in p["fields"], p
    files = [(k, (None, v)) for k, v in p["fields"].items()] + [("file", ("f.txt", b"bp"))]
    r = requests.post(f"{v2.meta.endpoint_url}/{bucket}", files=files, timeout=30)
    assert r.status_code == 204, r.text
    assert s3.get_object(Bucket=bucket, Key="b/f.txt")["Body"].read() == b"bp"


def test_s3cmd_signature_v2(server, s3, tmp_path):
    if not os.path.exists("/usr/bin/s3cmd"):
        pytest.skip("/usr/bin/s3cmd not installed")
    cfg = tmp_path / "s3cfg"
    cfg.write_text("[default]\n"
                   f"access_key = {AK}\nsecret_key = {SK}\n"
                   f"host_base = {server.host}\nhost_bucket = {server.host}\n"
                   "use_https = False\nsignature_v2 = True\n"
                   f"bucket_location = {REGION}\nmultipart_chunk_size_mb = 5\n")
    cmd = ["/usr/bin/s3cmd", "-c", str(cfg), "--no-ssl", "--signature-v2"]
    env = {"HOME": str(tmp_path), "PATH": "/usr/bin:/bin"}
    src = tmp_path / "in.bin"
    src.write_bytes(os.urandom(6 * 1024 * 1024 + 5))
    b = new_bucket_name("s3cmdv2")

    def run(*args):
        p = subprocess.run(cmd + list(args), env=env, capture_output=True, timeout=120)
        assert p.returncode == 0, (args, p.stdout, p.stderr)
        return p.stdout.decode()

    run("mb", f"s3://{b}")
    run("put", str(src), f"s3://{b}/big.bin")  # multipart: two parts of 5 MiB max
    assert "big.bin" in run("ls", f"s3://{b}/")
    run("get", str(f"s3://{b}/big.bin"), str(tmp_path / "out.bin"))
    assert (tmp_path / "out.bin").read_bytes() == src.read_bytes()
    run("del", f"s3://{b}/big.bin")
    run("rb", f"s3://{b}")
    assert b not in [x["Name"] for x in s3.list_buckets()["Buckets"]]


def test_setting_off_refuses_v2(make_server, make_client):
    """signature_v2: false refuses every V2 form with AccessDenied; SigV4 still works."""
    srv = make_server(config_extra="signature_v2: false\n")
    v4 = make_client(USERS[0], srv=srv)
    b = new_bucket_name()
    v4.create_bucket(Bucket=b)
    status, body = v2_request(srv, "GET", f"/{b}")
    err = error_fields(body)
    assert status == 403 and err["Code"] == "AccessDenied", body
    assert "Signature Version 2" in err["Message"], body
    v2c = make_client(USERS[0], srv=srv, signature_version="s3")
    url = v2c.generate_presigned_url("list_objects", Params={"Bucket": b}, ExpiresIn=60)
    r = requests.get(url, timeout=30)
    assert r.status_code == 403 and error_fields(r.content)["Code"] == "AccessDenied", r.text
    p = v2c.generate_presigned_post(b, "k")
    files = [(k, (None, v)) for k, v in p["fields"].items()] + [("file", ("f", b"x"))]
    r = requests.post(f"{srv.endpoint}/{b}", files=files, timeout=30)
    assert r.status_code == 403 and error_fields(r.content)["Code"] == "AccessDenied", r.text
    v4.delete_bucket(Bucket=b)
