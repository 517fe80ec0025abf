"""The fsspec filesystem s3rdma:// (found through fsspec's entry point)."""
import fsspec
import pytest
from conftest import USERS


@pytest.fixture
def fs(rsrv):
    kw = dict(endpoint=rsrv.endpoint, rdma_endpoint=rsrv.rdma_endpoint,
              access_key=USERS[0][0], secret_key=USERS[0][1], transport="native", quiet=True)
    f = fsspec.filesystem("s3rdma", **kw)
    f.kw = kw
    yield f
    fsspec.filesystem("s3rdma", **kw).clear_instance_cache()


def test_registered_through_entry_point():
    from s3rdma.fs import S3RDMAFileSystem
    assert fsspec.get_filesystem_class("s3rdma") is S3RDMAFileSystem


def test_roundtrip_and_ranges(fs, rbucket, boto):
    data = bytes(range(256)) * 1000
    fs.pipe_file(f"s3rdma://{rbucket}/dir/a.bin", data)
    assert fs.cat_file(f"{rbucket}/dir/a.bin") == data
    assert fs.cat_file(f"{rbucket}/dir/a.bin", start=10, end=20) == data[10:20]
    assert fs.cat_file(f"{rbucket}/dir/a.bin", start=-5) == data[-5:]
    assert fs.cat_file(f"{rbucket}/dir/a.bin", start=100, end=-100) == data[100:-100]
    with fsspec.open(f"s3rdma://{rbucket}/dir/a.bin", "rb", **fs.kw) as f:
        f.seek(1000)
        assert f.read(10) == data[1000:1010]
        f.seek(-3, 2)
        assert f.read() == data[-3:]
    with pytest.raises(FileNotFoundError):
        fs.cat_file(f"{rbucket}/nope")


def test_write_small_and_multipart(fs, rbucket, boto):
    with fs.open(f"{rbucket}/w/small", "wb") as f:
        f.write(b"hello ")
        f.write(b"world")
    assert boto.get_object(Bucket=rbucket, Key="w/small")["Body"].read() == b"hello world"
    chunk = bytes(range(256)) * 4096  # 1 MiB
    with fs.open(f"{rbucket}/w/big", "wb") as f:
        for _ in range(19):  # 19 MiB: 8 + 8 + 3 MiB parts
            f.write(chunk)
    assert boto.head_object(Bucket=rbucket, Key="w/big")["ETag"].endswith('-3"')
    assert fs.cat_file(f"{rbucket}/w/big") == chunk * 19


def test_ls_info_rm(fs, rbucket):
    for k in ["x/1", "x/2", "x/y/3", "top"]:
        fs.pipe_file(f"{rbucket}/{k}", k.encode())
    assert sorted(fs.ls(rbucket, detail=False)) == [f"{rbucket}/top", f"{rbucket}/x"]
    entries = {e["name"]: e for e in fs.ls(f"{rbucket}/x")}
    assert entries[f"{rbucket}/x/1"]["size"] == 3 and entries[f"{rbucket}/x/1"]["type"] == "file"
    assert entries[f"{rbucket}/x/y"]["type"] == "directory"
    assert fs.info(f"{rbucket}/x/y/3")["size"] == 5
    assert fs.info(f"{rbucket}/x")["type"] == "directory"
    assert fs.exists(f"{rbucket}/top") and not fs.exists(f"{rbucket}/nothing")
    fs.rm(f"{rbucket}/x", recursive=True)
    assert fs.ls(rbucket, detail=False) == [f"{rbucket}/top"]
    fs.rm(f"{rbucket}/top")
    assert fs.ls(rbucket) == []


def test_map_dataset_example(fs, rbucket, client):
    """The torch.utils.data-style map dataset of python/README.md, as written there."""
    import numpy as np
    c = client("native")
    for i in range(4):
        c.put_object_numpy(rbucket, f"train/{i}.npy", np.full((8, 8), i, np.float32))

    class NpyDataset:
        def __init__(self, client, bucket, prefix):
            self.client, self.bucket = client, bucket
            self.keys = [o.key for page in client.list_objects(bucket, prefix=prefix)
                         for o in page.objects]

        def __len__(self):
            return len(self.keys)

        def __getitem__(self, i):
            return self.client.get_object_numpy(self.bucket, self.keys[i])

    ds = NpyDataset(c, rbucket, "train/")
    assert len(ds) == 4 and [float(ds[i][0, 0]) for i in range(4)] == [0, 1, 2, 3]


def snapshot(root):
    import os
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for n in dirnames:
            out[os.path.relpath(os.path.join(dirpath, n), root)] = None
        for n in filenames:
            with open(os.path.join(dirpath, n), "rb") as f:
                out[os.path.relpath(os.path.join(dirpath, n), root)] = f.read()
    return out


def test_get_never_writes_outside_the_target(fs, rbucket, boto, tmp_path):
    """Issue 17 item 3: keys are anyone's who can write to the bucket; fs.get keeps every
    file inside lpath, copies the rest and then names the skipped keys."""
    import s3rdma
    good = {"data/ok.txt": b"ok", "data/sub/deep.txt": b"deep", "data/..x": b"name"}
    hostile = ["data/../../escaped.txt", "data/sub/../../../up.txt",
               "data/a\\..\\..\\..\\bs.txt", "data/./dot.txt"]
    for k, v in good.items():
        boto.put_object(Bucket=rbucket, Key=k, Body=v)
    for k in hostile + ["data//abs.txt"]:  # fsspec paths have no empty segment: never seen
        boto.put_object(Bucket=rbucket, Key=k, Body=b"evil")
    work = tmp_path / "a" / "b"
    work.mkdir(parents=True)
    with pytest.warns(UserWarning, match="skipping"):
        with pytest.raises(s3rdma.S3Error) as ei:
            fs.get(f"s3rdma://{rbucket}/data", str(work / "dl"), recursive=True)
    assert isinstance(ei.value, s3rdma.UnsafeLocalPath) and "would leave" in str(ei.value)
    assert {f"{rbucket}/{k}" for k in hostile} <= set(ei.value.keys), ei.value.keys
    files = {k: v for k, v in snapshot(tmp_path).items() if v is not None}
    assert files == {f"a/b/dl/{k[5:]}": v for k, v in good.items()}
    # one file, to a name or into a directory, as before
    fs.get(f"{rbucket}/data/ok.txt", str(tmp_path / "one.txt"))
    (tmp_path / "into").mkdir()
    fs.get(f"{rbucket}/data/ok.txt", str(tmp_path / "into") + "/")
    assert (tmp_path / "one.txt").read_bytes() == b"ok"
    assert (tmp_path / "into" / "ok.txt").read_bytes() == b"ok"


def test_local_name_rule():
    from s3rdma.localpath import local_name_refusal
    for ok in ("f", "a/b", "a//b", "..a", "a..", ".hidden", "a\\b"):
        assert local_name_refusal(ok) is None, ok
    for bad in ("", "..", "a/../b", "/x", "\\x", "a\\..\\b", ".", "a/./b", "a/."):
        assert local_name_refusal(bad) is not None, bad
