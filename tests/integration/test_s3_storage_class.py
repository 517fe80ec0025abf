"""Storage classes, as S3 answers them (issue 20): x-amz-storage-class is accepted on
PutObject, CopyObject, CreateMultipartUpload and POST forms for every class S3 names, stored,
and shown by GET/HEAD (the header, absent for STANDARD as in S3), listings (v1, v2, versions)
and GetObjectAttributes; a copy is STANDARD unless it names a class; an unknown class is 400
InvalidStorageClass and stores nothing. Runs on both backends (S3RDMA_TEST_BACKEND=rados)."""
import pytest
import requests
from botocore.exceptions import ClientError

from s3r_itest import raw_request

CLASSES = ["STANDARD", "REDUCED_REDUNDANCY", "STANDARD_IA", "ONEZONE_IA", "INTELLIGENT_TIERING",
           "GLACIER", "DEEP_ARCHIVE", "GLACIER_IR"]


def _class_listed(s3, bucket, key):
    v1 = {o["Key"]: o["StorageClass"] for o in s3.list_objects(Bucket=bucket)["Contents"]}
    v2 = {o["Key"]: o["StorageClass"] for o in s3.list_objects_v2(Bucket=bucket)["Contents"]}
    vs = {o["Key"]: o["StorageClass"] for o in s3.list_object_versions(Bucket=bucket)["Versions"]}
    assert v1[key] == v2[key] == vs[key]
    return v1[key]


@pytest.mark.parametrize("cls", CLASSES)
def test_put_stores_the_class(s3, bucket, cls):
    s3.put_object(Bucket=bucket, Key="k", Body=b"data", StorageClass=cls)
    head = s3.head_object(Bucket=bucket, Key="k")
    # S3 names the class on GET/HEAD for every class but STANDARD
    assert head.get("StorageClass") == (None if cls == "STANDARD" else cls)
    got = s3.get_object(Bucket=bucket, Key="k")
    assert got.get("StorageClass") == head.get("StorageClass") and got["Body"].read() == b"data"
    assert _class_listed(s3, bucket, "k") == cls
    attrs = s3.get_object_attributes(Bucket=bucket, Key="k", ObjectAttributes=["StorageClass"])
    assert attrs["StorageClass"] == cls


def test_overwrite_takes_the_new_class(s3, bucket):
    s3.put_object(Bucket=bucket, Key="k", Body=b"1", StorageClass="STANDARD_IA")
    s3.put_object(Bucket=bucket, Key="k", Body=b"2")
    assert "StorageClass" not in s3.head_object(Bucket=bucket, Key="k")


def test_copy(s3, bucket):
    s3.put_object(Bucket=bucket, Key="src", Body=b"data", StorageClass="GLACIER")
    s3.copy_object(Bucket=bucket, Key="plain", CopySource={"Bucket": bucket, "Key": "src"})
    assert "StorageClass" not in s3.head_object(Bucket=bucket, Key="plain")  # a copy is STANDARD
    s3.copy_object(Bucket=bucket, Key="ia", CopySource={"Bucket": bucket, "Key": "src"},
                   StorageClass="STANDARD_IA")
    assert s3.head_object(Bucket=bucket, Key="ia")["StorageClass"] == "STANDARD_IA"
    s3.copy_object(Bucket=bucket, Key="rep", CopySource={"Bucket": bucket, "Key": "src"},
                   MetadataDirective="REPLACE", StorageClass="ONEZONE_IA")
    assert s3.head_object(Bucket=bucket, Key="rep")["StorageClass"] == "ONEZONE_IA"
    # onto itself: legal when it names a class (S3's way to change one), refused otherwise
    s3.copy_object(Bucket=bucket, Key="src", CopySource={"Bucket": bucket, "Key": "src"},
                   StorageClass="STANDARD")
    assert "StorageClass" not in s3.head_object(Bucket=bucket, Key="src")
    with pytest.raises(ClientError) as ei:
        s3.copy_object(Bucket=bucket, Key="src", CopySource={"Bucket": bucket, "Key": "src"})
    assert ei.value.response["Error"]["Code"] == "InvalidRequest"
    assert s3.get_object(Bucket=bucket, Key="src")["Body"].read() == b"data"


def test_multipart(s3, bucket):
    uid = s3.create_multipart_upload(Bucket=bucket, Key="k",
                                     StorageClass="INTELLIGENT_TIERING")["UploadId"]
    etag = s3.upload_part(Bucket=bucket, Key="k", UploadId=uid, PartNumber=1, Body=b"p")["ETag"]
    assert s3.list_parts(Bucket=bucket, Key="k", UploadId=uid)["StorageClass"] == \
        "INTELLIGENT_TIERING"
    s3.complete_multipart_upload(Bucket=bucket, Key="k", UploadId=uid,
                                 MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": etag}]})
    assert s3.head_object(Bucket=bucket, Key="k")["StorageClass"] == "INTELLIGENT_TIERING"
    assert _class_listed(s3, bucket, "k") == "INTELLIGENT_TIERING"


def test_post_form(server, s3, bucket):
    p = s3.generate_presigned_post(bucket, "k", Fields={"x-amz-storage-class": "STANDARD_IA"},
                                   Conditions=[{"x-amz-storage-class": "STANDARD_IA"}])
    r = requests.post(f"{server.endpoint}/{bucket}", timeout=30,
                      files=[*[(k, (None, v)) for k, v in p["fields"].items()],
                             ("file", ("f", b"x", "application/octet-stream"))])
    assert r.status_code == 204, r.text
    assert s3.head_object(Bucket=bucket, Key="k")["StorageClass"] == "STANDARD_IA"


@pytest.mark.parametrize("how", ["put", "copy", "create_mpu", "post"])
def test_unknown_class_refused(server, s3, bucket, how):
    s3.put_object(Bucket=bucket, Key="src", Body=b"x")
    bad = {"x-amz-storage-class": "PLATINUM"}
    if how == "put":
        r = raw_request(server, "PUT", f"/{bucket}/k", headers=bad, body=b"x")
        status, code = r.status, r.error_code()
    elif how == "copy":
        r = raw_request(server, "PUT", f"/{bucket}/k",
                        headers={**bad, "x-amz-copy-source": f"/{bucket}/src"})
        status, code = r.status, r.error_code()
    elif how == "create_mpu":
        r = raw_request(server, "POST", f"/{bucket}/k", query=[("uploads", None)], headers=bad)
        status, code = r.status, r.error_code()
        assert "Uploads" not in s3.list_multipart_uploads(Bucket=bucket)
    else:
        p = s3.generate_presigned_post(bucket, "k", Fields={"x-amz-storage-class": "PLATINUM"},
                                       Conditions=[{"x-amz-storage-class": "PLATINUM"}])
        resp = requests.post(f"{server.endpoint}/{bucket}", timeout=30,
                             files=[*[(k, (None, v)) for k, v in p["fields"].items()],
                                    ("file", ("f", b"x", "application/octet-stream"))])
        import xml.etree.ElementTree as ET
        status, code = resp.status_code, ET.fromstring(resp.content).findtext("Code")
    assert (status, code) == (400, "InvalidStorageClass")
    with pytest.raises(ClientError):
        s3.head_object(Bucket=bucket, Key="k")


def test_awscli_storage_class(server, s3, bucket, tmp_path):
    """awscli's --storage-class on an upload, a multipart upload and a copy (its functional
    suite stopped at "StorageClass was not applied")."""
    import os
    from test_cli_tools import clean_env, run
    from s3r_itest import REGION, USERS
    if not os.path.exists("/usr/bin/aws"):
        pytest.skip("/usr/bin/aws not installed")
    env = clean_env(tmp_path)
    env.update(AWS_ACCESS_KEY_ID=USERS[0][0], AWS_SECRET_ACCESS_KEY=USERS[0][1],
               AWS_DEFAULT_REGION=REGION, AWS_CONFIG_FILE=str(tmp_path / "aws-config"),
               AWS_SHARED_CREDENTIALS_FILE=str(tmp_path / "aws-creds"), AWS_PAGER="",
               AWS_EC2_METADATA_DISABLED="true")
    (tmp_path / "aws-config").write_text("[default]\nregion = us-east-1\ns3 =\n"
                                         "  multipart_threshold = 5MB\n  multipart_chunksize = 5MB\n")
    small, big = tmp_path / "small", tmp_path / "big"
    small.write_bytes(b"small")
    big.write_bytes(os.urandom(6 * 1024 * 1024))  # two parts
    aws = ["/usr/bin/aws", "--endpoint-url", server.endpoint, "--no-cli-pager", "s3"]
    run(aws + ["cp", str(small), f"s3://{bucket}/small", "--storage-class", "STANDARD_IA"], env)
    run(aws + ["cp", str(big), f"s3://{bucket}/big", "--storage-class", "GLACIER_IR"], env)
    run(aws + ["cp", f"s3://{bucket}/small", f"s3://{bucket}/copy",
               "--storage-class", "ONEZONE_IA"], env)
    assert "-" in s3.head_object(Bucket=bucket, Key="big")["ETag"]  # it went multipart
    got = {o["Key"]: o["StorageClass"] for o in s3.list_objects_v2(Bucket=bucket)["Contents"]}
    assert got == {"small": "STANDARD_IA", "big": "GLACIER_IR", "copy": "ONEZONE_IA"}
