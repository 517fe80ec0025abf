"""s3rdma.torch as a drop-in for s3torchconnector: the call sites of its README, docs and
examples, written as there with only the import changed (``s3torchconnector`` ->
``s3rdma.torch``), against a real s3rdmad. The endpoint, keys and RDMA endpoint come
from the environment (AWS_ENDPOINT_URL, AWS_ACCESS_KEY_ID, S3RDMA_RDMA_ENDPOINT, ...),
as such code names only a region. Then the edge cases of s3torchconnector's readers,
writer and client config, case by case."""
import io
import json
import os
import pickle

import pytest

torch = pytest.importorskip("torch")

import s3rdma  # noqa: E402
from s3r_itest import USERS  # noqa: E402

MiB = 1024 * 1024
REGION = "us-east-1"


@pytest.fixture
def aws_env(rsrv, monkeypatch, tmp_path):
    """The environment a user of s3torchconnector code sets for s3rdma: nothing in the
    code names the endpoint, keys or transport."""
    for k in list(os.environ):
        if k.startswith("AWS_") or k in ("S3RDMA_TRANSPORT", "S3RDMA_RDMA_ENDPOINT"):
            monkeypatch.delenv(k)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("AWS_ENDPOINT_URL", rsrv.endpoint)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", USERS[0][0])
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", USERS[0][1])
    monkeypatch.setenv("S3RDMA_RDMA_ENDPOINT", rsrv.rdma_endpoint)
    monkeypatch.setenv("S3RDMA_TRANSPORT", "native")


def put(boto, bucket, key, body):
    boto.put_object(Bucket=bucket, Key=key, Body=body)
    return body


# ---- README, "Sample Examples" ------------------------------------------------------


def test_readme_datasets(aws_env, rsrv, rbucket, boto):
    """The README's dataset sample; the transport and RDMA endpoint come from
    S3RDMA_TRANSPORT / S3RDMA_RDMA_ENDPOINT, so its reads go native."""
    bodies = {f"p/{i}.bin": put(boto, rbucket, f"p/{i}.bin", os.urandom(1000 + i))
              for i in range(5)}
    from s3rdma.torch import S3MapDataset, S3IterableDataset

    DATASET_URI = f"s3://{rbucket}/p"
    iterable_dataset = S3IterableDataset.from_prefix(DATASET_URI, region=REGION)
    keys = []
    for item in iterable_dataset:
        keys.append(item.key)
    assert keys == sorted(bodies)
    map_dataset = S3MapDataset.from_prefix(DATASET_URI, region=REGION)
    item = map_dataset[0]
    bucket = item.bucket
    key = item.key
    content = item.read()
    assert (bucket, key, len(content)) == (rbucket, "p/0.bin", 1000)
    assert content == bodies["p/0.bin"]
    assert item._client.transport == "native" and item._client.stats()["native_ops"] > 0
    # "for item in dataset" over the map dataset (the README's sequential-reader sample)
    from s3rdma.torch import S3ReaderConstructor
    dataset = S3MapDataset.from_prefix(DATASET_URI, region=REGION,
                                       reader_constructor=S3ReaderConstructor.sequential())
    assert {item.key: item.read() for item in dataset} == bodies
    # a missing object: S3Exception (NoSuchKey) on first use of its reader; an empty
    # prefix: an empty dataset
    from s3rdma.torch import S3Checkpoint, S3Exception
    ds = S3MapDataset.from_objects(f"s3://{rbucket}/absent", region=REGION)
    with pytest.raises(S3Exception):
        ds[0].read()
    with pytest.raises(S3Exception):
        S3Checkpoint(region=REGION).reader(f"s3://{rbucket}/absent").read()
    assert len(S3MapDataset.from_prefix(f"s3://{rbucket}/nothing/", region=REGION)) == 0


def test_readme_checkpoint(aws_env, rsrv, rbucket, monkeypatch):
    """The README's S3Checkpoint sample with the default transport ("auto", no
    S3RDMA_TRANSPORT): torch.load(reader) chose how to fetch by calling
    Client.rdma_connected, a property (TypeError: 'bool' object is not callable)."""
    monkeypatch.delenv("S3RDMA_TRANSPORT")
    from s3rdma.torch import S3Checkpoint

    CHECKPOINT_URI = f"s3://{rbucket}/ck/"
    checkpoint = S3Checkpoint(region=REGION)
    model = torch.nn.Sequential(torch.nn.Linear(64, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4))
    with checkpoint.writer(CHECKPOINT_URI + "epoch0.ckpt") as writer:
        torch.save(model.state_dict(), writer)
    with checkpoint.reader(CHECKPOINT_URI + "epoch0.ckpt") as reader:
        state_dict = torch.load(reader)
    model2 = torch.nn.Sequential(torch.nn.Linear(64, 32), torch.nn.ReLU(),
                                 torch.nn.Linear(32, 4))
    model2.load_state_dict(state_dict)
    for a, b in zip(model.parameters(), model2.parameters()):
        assert torch.equal(a, b)


def test_readme_direct_s3client(aws_env, rbucket):
    """README "Direct S3Client Usage" and the range-based reader without a buffer."""
    from s3rdma.torch._s3client import S3Client
    from s3rdma.torch import S3ReaderConstructor

    BUCKET_NAME, OBJECT_KEY = rbucket, "large_object.bin"
    s3_client = S3Client(region=REGION)
    data = b"content" * 1048576
    s3writer = s3_client.put_object(bucket=BUCKET_NAME, key=OBJECT_KEY)
    s3writer.write(data)
    s3writer.close()
    s3reader = s3_client.get_object(bucket=BUCKET_NAME, key=OBJECT_KEY)
    assert s3reader.read() == data

    reader_constructor = S3ReaderConstructor.range_based(buffer_size=0)
    s3reader = s3_client.get_object(bucket=BUCKET_NAME, key=OBJECT_KEY,
                                    reader_constructor=reader_constructor)
    buffer = bytearray(1 * MiB)
    s3reader.seek(5 * MiB)
    bytes_read = s3reader.readinto(buffer)
    assert bytes_read == MiB and buffer == data[5 * MiB:6 * MiB]
    # the rest of S3Client
    assert s3_client.head_object(BUCKET_NAME, OBJECT_KEY).size == len(data)
    s3_client.copy_object(BUCKET_NAME, OBJECT_KEY, BUCKET_NAME, "copy.bin")
    pages = list(s3_client.list_objects(BUCKET_NAME, "", max_keys=1))
    assert [o.key for p in pages for o in p.object_info] == ["copy.bin", OBJECT_KEY]
    assert all(o.size == len(data) for p in pages for o in p.object_info)
    s3_client.delete_object(BUCKET_NAME, "copy.bin")
    assert [o.key for p in s3_client.list_objects(BUCKET_NAME) for o in p.object_info] == \
        [OBJECT_KEY]
    assert S3ReaderConstructor.get_reader_type_string(reader_constructor) == "range_based"
    assert S3ReaderConstructor.get_reader_type_string(None) == "sequential"
    assert S3ReaderConstructor.get_reader_type_string(
        S3ReaderConstructor.dcp_optimized()) == "dcp_optimized"


def test_public_names():
    """Every name s3torchconnector, .dcp and .lightning export, and __version__."""
    import s3rdma.torch as t
    import s3rdma.torch.dcp as d
    import s3rdma.torch.lightning as lt
    for name in ["S3IterableDataset", "S3MapDataset", "S3Checkpoint", "S3Reader",
                 "S3ReaderConstructor", "S3Writer", "S3Exception", "S3ClientConfig",
                 "__version__"]:
        assert hasattr(t, name) and name in t.__all__, name
    for name in ["S3FileSystem", "S3StorageReader", "S3StorageWriter", "S3PrefixStrategyBase",
                 "DefaultPrefixStrategy", "NumericPrefixStrategy", "BinaryPrefixStrategy",
                 "HexPrefixStrategy", "RoundRobinPrefixStrategy"]:
        assert hasattr(d, name), name
    assert hasattr(lt, "S3LightningCheckpoint")
    from s3rdma.torch.dcp.s3_prefix_strategy import RoundRobinPrefixStrategy  # noqa: F401
    from s3rdma.torch.s3reader import (S3ReaderConstructorProtocol,  # noqa: F401
                                       SequentialS3Reader, RangedS3Reader)
    assert t.S3Exception is s3rdma.S3Error


# s3torchconnector's public module paths (its API reference documents each) and names
# there; from s3rdma.torch.<same path> each one imports.
MODULE_PATHS = {
    "s3map_dataset": ["S3MapDataset"],
    "s3iterable_dataset": ["S3IterableDataset"],
    "s3checkpoint": ["S3Checkpoint"],
    "s3writer": ["S3Writer"],
    "s3reader.s3reader": ["S3Reader"],
    "s3reader.sequential": ["SequentialS3Reader"],
    "s3reader.ranged": ["RangedS3Reader"],
    "s3reader.dcp_optimized": ["DCPOptimizedS3Reader"],
    "s3reader.constructor": ["S3ReaderConstructor", "DCPOptimizedConstructor"],
    "s3reader.protocol": ["S3ReaderConstructorProtocol", "DCPS3ReaderConstructorProtocol"],
    "_s3client": ["S3Client", "S3ClientConfig"],
    "_s3client._s3client": ["S3Client"],
    "_s3client.s3client_config": ["S3ClientConfig"],
    "dcp.s3_file_system": ["S3FileSystem", "S3StorageReader", "S3StorageWriter"],
    "dcp.s3_prefix_strategy": ["S3PrefixStrategyBase", "RoundRobinPrefixStrategy"],
    "lightning.s3_lightning_checkpoint": ["S3LightningCheckpoint"],
}


@pytest.mark.parametrize("path", sorted(MODULE_PATHS))
def test_module_paths(path):
    """``from s3torchconnector.<path> import <name>`` with only the package changed
    (s3reader, lightning and _s3client are packages there, and here)."""
    import importlib
    import s3rdma.torch as t
    mod = importlib.import_module(f"s3rdma.torch.{path}")
    for name in MODULE_PATHS[path]:
        obj = getattr(mod, name)
        top = getattr(t, name, None)
        assert top is None or top is obj, name


def test_connector_test_patterns(aws_env, rbucket):
    """Patterns of s3torchconnector's own end-to-end tests: torch.load(reader,
    weights_only=True), an S3Reader iterated (b"".join), keyword s3_uri=, and
    parse_s3_uri's messages."""
    from s3rdma.torch import S3Checkpoint, S3MapDataset, parse_s3_uri
    from s3rdma.torch._s3client import S3Client, S3ClientConfig
    tensor = torch.rand([10, 1024, 16])
    checkpoint = S3Checkpoint(region=REGION)
    s3_uri = f"s3://{rbucket}/general_checkpoint.pt"
    with checkpoint.writer(s3_uri) as writer:
        torch.save(tensor, writer)
    loaded = torch.load(checkpoint.reader(s3_uri), weights_only=True)
    assert torch.equal(tensor, loaded)

    client = S3Client(REGION, s3client_config=S3ClientConfig())
    put_stream = client.put_object(rbucket, "hello_world.txt")
    put_stream.write(b"Hello, World!\n" * 3)
    put_stream.close()
    get_stream = client.get_object(rbucket, "hello_world.txt")
    assert b"".join(get_stream) == b"Hello, World!\n" * 3

    dataset = S3MapDataset.from_prefix(s3_uri=f"s3://{rbucket}/hello", region=REGION)
    assert len(dataset) == 1 and dataset[0].key == "hello_world.txt"
    assert parse_s3_uri("s3://bucket") == ("bucket", "")
    for uri, error_msg in [(None, "Only s3:// URIs are supported"),
                           ("", "Only s3:// URIs are supported"),
                           ("s3a://bucket/key", "Only s3:// URIs are supported"),
                           ("s3://", "Bucket name must be non-empty"),
                           ("s3:///key", "Bucket name must be non-empty")]:
        with pytest.raises(ValueError, match=f"^{error_msg}$"):
            parse_s3_uri(uri)


# ---- S3ClientConfig -----------------------------------------------------------------


def test_client_config_fields(aws_env, rbucket, boto):
    """s3torchconnector's fields by keyword (its dcp example's and notebook's:
    unsigned=True reads a public bucket anonymously, test_unsigned.py has the rest), its
    requester_pays + unsigned check, frozen."""
    from s3rdma.torch import S3ClientConfig
    s3config = S3ClientConfig(part_size=16 * 1024 * 1024, throughput_target_gbps=600,
                              max_attempts=20)
    assert (s3config.part_size, s3config.throughput_target_gbps, s3config.max_attempts) == \
        (16 * MiB, 600, 20)
    S3ClientConfig(profile="x", force_path_style=True, requester_pays=True)
    import s3rdma.torch as s3torchconnector
    boto.put_bucket_acl(Bucket=rbucket, ACL="public-read")
    boto.put_object(Bucket=rbucket, Key="images/0.jpg", Body=b"jpeg", ACL="public-read")
    IMAGES_URI, REGION = f"s3://{rbucket}/images/", "us-east-1"
    config = s3torchconnector.S3ClientConfig(unsigned=True)
    dataset = s3torchconnector.S3MapDataset.from_prefix(IMAGES_URI, region=REGION,
                                                        s3client_config=config)
    object = dataset[0]
    assert object.read() == b"jpeg" and object.key == "images/0.jpg"
    with pytest.raises(ValueError, match="requester_pays"):
        S3ClientConfig(requester_pays=True, unsigned=True)
    with pytest.raises(Exception):
        s3config.part_size = 1


def test_client_config_hashable():
    """s3torchconnector's config is a frozen dataclass, so hashable: a dict key, a set
    member, an lru_cache argument; equal configs hash equal (options included)."""
    import functools
    from s3rdma.torch import S3ClientConfig

    @functools.lru_cache(maxsize=None)
    def client_for(config):
        return object()

    a, b = S3ClientConfig(part_size=16 * MiB), S3ClientConfig(part_size=16 * MiB)
    assert hash(a) == hash(b) and client_for(a) is client_for(b)
    assert len({a, b, S3ClientConfig()}) == 2
    c = S3ClientConfig(options={"rdma_threshold": 0})
    assert hash(c) == hash(S3ClientConfig(options={"rdma_threshold": 0})) and c != S3ClientConfig()


def test_user_agent(aws_env):
    """s3torchconnector._user_agent.UserAgent, as its DCP and Lightning code pass it to
    S3Client: the prefix names the package, then the comments."""
    from s3rdma.torch._s3client import S3Client
    from s3rdma.torch._user_agent import UserAgent

    s3_client = S3Client(REGION, user_agent=UserAgent(["dcp", torch.__version__]))
    assert s3_client.user_agent_prefix.startswith("s3rdma.torch/")
    assert s3_client.user_agent_prefix.endswith(f" (dcp; {torch.__version__})")
    assert S3Client(REGION).user_agent_prefix == UserAgent.get_default_prefix()
    assert f"md/pytorch#{torch.__version__}" in UserAgent().prefix
    with pytest.raises(ValueError, match="List"):
        UserAgent("dcp")


# ---- readers ------------------------------------------------------------------------


@pytest.fixture
def reader_of(aws_env, rbucket, boto):
    body = put(boto, rbucket, "r.bin", bytes(range(256)) * 40)  # 10240 bytes

    def make(kind):
        from s3rdma.torch import S3Checkpoint, S3ReaderConstructor
        ctor = {"sequential": S3ReaderConstructor.sequential,
                "range": S3ReaderConstructor.range_based,
                "range0": lambda: S3ReaderConstructor.range_based(buffer_size=0),
                "dcp": lambda: S3ReaderConstructor.dcp_optimized()}[kind]()
        return S3Checkpoint(REGION, reader_constructor=ctor).reader(f"s3://{rbucket}/r.bin")
    make.body = body
    return make


KINDS = ["sequential", "range", "range0", "dcp"]


@pytest.mark.parametrize("kind", KINDS)
def test_reader_seek_past_end_stays_at_end(reader_of, kind):
    """As s3torchconnector: a seek past the end lands at the end (it was left past
    it), whatever whence; reads there return nothing."""
    r = reader_of(kind)
    assert r.seek(20_000) == 10_240 and r.tell() == 10_240
    assert r.read() == b"" and r.read(5) == b"" and r.readinto(bytearray(4)) == 0
    assert r.seek(5, os.SEEK_CUR) == 10_240
    assert r.seek(7, os.SEEK_END) == 10_240
    assert r.seek(-10, os.SEEK_END) == 10_230 and r.read() == reader_of.body[-10:]


@pytest.mark.parametrize("kind", KINDS)
def test_reader_argument_errors(reader_of, kind):
    """The exception types s3torchconnector raises for bad arguments."""
    r = reader_of(kind)
    with pytest.raises(ValueError):
        r.seek(-1)
    with pytest.raises(ValueError):
        r.seek(0, 3)
    with pytest.raises(TypeError):
        r.seek(1.5)
    with pytest.raises(TypeError):
        r.seek(0, "x")
    with pytest.raises(TypeError):
        r.read(2.0)
    with pytest.raises(TypeError):
        r.readinto(b"read-only")
    assert r.tell() == 0


@pytest.mark.parametrize("kind", KINDS)
def test_reader_io_semantics(reader_of, kind):
    """read(-1), read(None), read(0), readinto of a memoryview and of a typed array,
    readable/seekable/writable, close and the context manager."""
    body = reader_of.body
    with reader_of(kind) as r:
        assert (r.readable(), r.seekable(), r.writable()) == (True, True, False)
        assert r.read(0) == b"" and r.tell() == 0
        buf = bytearray(100)
        assert r.readinto(memoryview(buf)[10:50]) == 40 and buf[10:50] == body[:40]
        import array
        a = array.array("i", [0] * 10)  # 40 bytes
        assert r.readinto(a) == 40 and a.tobytes() == body[40:80]
        assert r.read(-1) == body[80:]
        r.seek(3)
        assert r.read(None) == body[3:]
    assert r.closed


@pytest.mark.parametrize("kind", KINDS)
def test_reader_empty_bucket(aws_env, kind):
    """An empty bucket name is s3torchconnector's ValueError when the reader is made
    (it was an InvalidArgument S3Error at the first read)."""
    from s3rdma.torch import S3ReaderConstructor
    from s3rdma.torch._s3client import S3Client
    ctor = {"sequential": S3ReaderConstructor.sequential,
            "range": S3ReaderConstructor.range_based,
            "range0": lambda: S3ReaderConstructor.range_based(buffer_size=0),
            "dcp": S3ReaderConstructor.dcp_optimized}[kind]()
    with pytest.raises(ValueError, match="Bucket should be specified"):
        S3Client(REGION).get_object("", "key", reader_constructor=ctor)


def test_reader_constructor_protocols():
    """s3torchconnector.s3reader's protocols are runtime-checkable: its S3StorageReader
    tells a DCP-optimized constructor apart with isinstance (it was a TypeError here:
    a typing alias)."""
    from s3rdma.torch import S3ReaderConstructor
    from s3rdma.torch.s3reader import (DCPS3ReaderConstructorProtocol,
                                       S3ReaderConstructorProtocol)
    for c in [S3ReaderConstructor.sequential(), S3ReaderConstructor.range_based(),
              S3ReaderConstructor.dcp_optimized(), S3ReaderConstructor.default()]:
        assert isinstance(c, S3ReaderConstructorProtocol)
    assert isinstance(S3ReaderConstructor.dcp_optimized(), DCPS3ReaderConstructorProtocol)
    assert not isinstance(S3ReaderConstructor.range_based(), DCPS3ReaderConstructorProtocol)
    assert not isinstance(S3ReaderConstructor.sequential(), DCPS3ReaderConstructorProtocol)


def test_range_based_negative_buffer_size(aws_env, rbucket, boto):
    """s3torchconnector takes a negative buffer_size as no buffer (it was a ValueError
    here): each read fetches exactly its range."""
    from s3rdma.torch import S3ReaderConstructor
    from s3rdma.torch._s3client import S3Client
    body = put(boto, rbucket, "neg.bin", bytes(range(256)) * 8)
    reader_constructor = S3ReaderConstructor.range_based(buffer_size=-1)
    assert S3ReaderConstructor.get_reader_type_string(reader_constructor) == "range_based"
    s3reader = S3Client(REGION).get_object(rbucket, "neg.bin",
                                           reader_constructor=reader_constructor)
    s3reader.seek(100)
    assert s3reader.read(10) == body[100:110] and s3reader.read() == body[110:]


def test_dcp_optimized_reader(aws_env, rbucket, boto):
    """s3torchconnector.s3reader's DCPOptimizedS3Reader: what dcp_optimized() makes, a
    reader of its own class; set_item_ranges_by_file (what its S3StorageReader's
    prepare_local_plan calls) is accepted."""
    from s3rdma.torch import S3ReaderConstructor
    from s3rdma.torch._s3client import S3Client
    from s3rdma.torch.s3reader import DCPOptimizedS3Reader, RangedS3Reader, S3Reader
    import s3rdma.torch.s3reader as s3reader

    body = put(boto, rbucket, "__0_0.distcp", bytes(range(256)) * 64)
    reader_constructor = S3ReaderConstructor.dcp_optimized()
    reader_constructor.set_item_ranges_by_file([], {}, f"s3://{rbucket}")
    r = S3Client(REGION).get_object(rbucket, "__0_0.distcp",
                                    reader_constructor=reader_constructor)
    assert isinstance(r, DCPOptimizedS3Reader) and isinstance(r, S3Reader)
    r.seek(1000)
    buf = bytearray(500)
    assert r.readinto(buf) == 500 and buf == body[1000:1500] and r.read() == body[1500:]
    assert not isinstance(S3Client(REGION).get_object(
        rbucket, "__0_0.distcp", reader_constructor=S3ReaderConstructor.range_based()),
        DCPOptimizedS3Reader)
    assert RangedS3Reader in DCPOptimizedS3Reader.__mro__
    assert "DCPOptimizedS3Reader" in s3reader.__all__


@pytest.mark.parametrize("kind", KINDS)
def test_reader_lines(aws_env, rbucket, boto, kind):
    """Iterating a reader yields its lines, as a file's; a range-based reader without
    a buffer fetches them a block at a time (io's default readline read one byte per
    call: one GET per byte)."""
    from s3rdma.torch import S3Checkpoint, S3ReaderConstructor
    body = b"".join(b"line %04d\n" % i for i in range(2000)) + b"no newline at the end"
    put(boto, rbucket, "lines.txt", body)
    ctor = {"sequential": S3ReaderConstructor.sequential,
            "range": S3ReaderConstructor.range_based,
            "range0": lambda: S3ReaderConstructor.range_based(buffer_size=0),
            "dcp": lambda: S3ReaderConstructor.dcp_optimized()}[kind]()
    r = S3Checkpoint(REGION, reader_constructor=ctor).reader(f"s3://{rbucket}/lines.txt")
    stats = r._client.stats()
    ops = sum(stats[k] for k in ("http_ops", "token_ops", "native_ops"))
    assert list(r) == io.BytesIO(body).readlines()
    r.seek(5)
    assert r.readline(3) == b"000" and r.readline() == b"0\n" and r.tell() == 10
    assert r.readline(0) == b"" and r.readline(None) == b"line 0001\n"
    stats = r._client.stats()
    assert sum(stats[k] for k in ("http_ops", "token_ops", "native_ops")) - ops < 20


# ---- S3Writer -----------------------------------------------------------------------


def test_writer_file_semantics(aws_env, rbucket, boto):
    """writable() is False once closed, flush() is a no-op even then, write after
    close is a ValueError, close twice is fine; memoryview writes."""
    from s3rdma.torch import S3Checkpoint
    w = S3Checkpoint(region=REGION).writer(f"s3://{rbucket}/w.bin")
    assert w.writable() and not w.readable()
    w.write(memoryview(b"abc")[1:])
    w.flush()
    assert w.tell() == 2
    w.close()
    w.close()
    assert w.closed and not w.writable()
    w.flush()
    with pytest.raises(ValueError):
        w.write(b"x")
    assert boto.get_object(Bucket=rbucket, Key="w.bin")["Body"].read() == b"bc"


# ---- Lightning ----------------------------------------------------------------------


def test_lightning_checkpoint_io(aws_env, rbucket, boto):
    """S3LightningCheckpoint's CheckpointIO methods (what Trainer calls)."""
    from s3rdma.torch.lightning import S3LightningCheckpoint
    s3_lightning_checkpoint = S3LightningCheckpoint(REGION)
    path = f"s3://{rbucket}/lt/epoch=0-step=3.ckpt"
    ckpt = {"state_dict": {"w": torch.arange(12.0)}, "epoch": 0, "global_step": 3}
    s3_lightning_checkpoint.save_checkpoint(ckpt, path)
    back = s3_lightning_checkpoint.load_checkpoint(path, map_location="cpu")
    assert torch.equal(back["state_dict"]["w"], ckpt["state_dict"]["w"])
    assert back["global_step"] == 3
    with pytest.raises(TypeError):
        s3_lightning_checkpoint.save_checkpoint(ckpt, __import__("pathlib").Path("/x"))
    s3_lightning_checkpoint.remove_checkpoint(path)
    assert "Contents" not in boto.list_objects_v2(Bucket=rbucket, Prefix="lt/")
    s3_lightning_checkpoint.teardown()


# ---- distributed checkpoints --------------------------------------------------------


@pytest.fixture
def dcp_api(tmp_path):
    """torch.distributed.checkpoint of the installed torch (1.13: the prototype at
    torch.distributed._shard.checkpoint) in a one-rank gloo group."""
    import torch.distributed as dist
    from s3rdma.torch._compat import checkpoint_module
    dist.init_process_group("gloo", init_method=f"file://{tmp_path}/store", rank=0,
                            world_size=1)
    yield checkpoint_module()
    dist.destroy_process_group()


def _save(api, state_dict, storage_writer):
    if hasattr(api, "save"):  # torch >= 2.2
        return api.save(state_dict=state_dict, storage_writer=storage_writer)
    return api.save_state_dict(state_dict=state_dict, storage_writer=storage_writer)


def _load(api, state_dict, storage_reader):
    if hasattr(api, "load") and callable(getattr(api, "load")):
        return api.load(state_dict=state_dict, storage_reader=storage_reader)
    return api.load_state_dict(state_dict=state_dict, storage_reader=storage_reader)


def test_dcp_load_plan_sorted_by_offset(aws_env, rbucket, dcp_api):
    """S3StorageReader.prepare_local_plan orders the plan's items by their offset in
    the data objects, as s3torchconnector's does (its "load ordering")."""
    from s3rdma.torch.dcp import S3StorageReader, S3StorageWriter
    import importlib
    DefaultLoadPlanner = importlib.import_module(  # dcp_api has imported the package
        f"{dcp_api.__name__}.default_planner").DefaultLoadPlanner

    uri = f"s3://{rbucket}/plan/"
    sd = {f"t{i}": torch.full((1000 + i,), float(i)) for i in range(6)}
    _save(dcp_api, sd, S3StorageWriter(region=REGION, path=uri))
    reader = S3StorageReader(region=REGION, path=uri)
    metadata = reader.read_metadata()
    reader.init(metadata, True)
    planner = DefaultLoadPlanner()
    planner.init({k: torch.zeros_like(v) for k, v in sd.items()}, metadata, True)
    plan = planner.create_local_plan()
    plan.items.sort(key=lambda i: -metadata.storage_data[i.storage_index].offset)
    plan = reader.prepare_local_plan(plan)
    at = [(metadata.storage_data[i.storage_index].relative_path,
           metadata.storage_data[i.storage_index].offset) for i in plan.items]
    assert len(at) == 6 and [o for _, o in at] == sorted(o for _, o in at)


def test_dcp_readme_with_prefix_strategy_and_overwrite(aws_env, rbucket, boto, dcp_api):
    """The README's DCP sample (thread_count, a RoundRobinPrefixStrategy, the default
    dcp_optimized reader), saved twice into one path as s3torchconnector allows: the
    second save replaces the first and its data objects go."""
    from s3rdma.torch import S3ReaderConstructor
    from s3rdma.torch.dcp import RoundRobinPrefixStrategy, S3StorageReader, S3StorageWriter

    CHECKPOINT_URI = f"s3://{rbucket}/dcp/"
    strategy = RoundRobinPrefixStrategy(user_prefixes=["shard1", "shard2", "shard3"],
                                        epoch_num=5)
    sd = {"w": torch.randn(300_000), "b": torch.arange(10)}
    s3_storage_writer = S3StorageWriter(region=REGION, path=CHECKPOINT_URI, thread_count=2,
                                        prefix_strategy=strategy)
    _save(dcp_api, sd, s3_storage_writer)
    keys = sorted(o["Key"] for o in boto.list_objects_v2(Bucket=rbucket)["Contents"])
    assert "dcp/.metadata" in keys
    assert all(k.startswith("dcp/shard1/epoch_5/__0_") and k.endswith(".distcp")
               for k in keys if k not in ("dcp/.metadata", "dcp/.s3rdma-objects")), keys
    first = set(keys)

    sd2 = {"w": torch.randn(300_000), "b": torch.arange(10) * 2}
    _save(dcp_api, sd2, S3StorageWriter(region=REGION, path=CHECKPOINT_URI,
                                        prefix_strategy=strategy))
    keys2 = {o["Key"] for o in boto.list_objects_v2(Bucket=rbucket)["Contents"]}
    assert not (keys2 & first) - {"dcp/.metadata", "dcp/.s3rdma-objects"}, \
        "the replaced save's data stayed"

    out = {"w": torch.zeros(300_000), "b": torch.zeros(10, dtype=torch.int64)}
    for ctor in [None, S3ReaderConstructor.dcp_optimized(), S3ReaderConstructor.default()]:
        s3_storage_reader = S3StorageReader(region=REGION, path=CHECKPOINT_URI,
                                            reader_constructor=ctor)
        _load(dcp_api, out, s3_storage_reader)
        assert torch.equal(out["w"], sd2["w"]) and torch.equal(out["b"], sd2["b"])
        out["w"].zero_()

    # torch 2.x's names over the same code: reset(checkpoint_id) moves a writer/reader
    other = f"s3://{rbucket}/dcp-other/"
    w = S3StorageWriter(region=REGION, path=CHECKPOINT_URI)
    w.reset(other)
    w.set_up_storage_writer(True)
    assert w.storage_meta() is None and w.path == other
    _save(dcp_api, sd, w)
    r = S3StorageReader(region=REGION, path=CHECKPOINT_URI)
    r.reset(other)
    _load(dcp_api, out, r)
    assert torch.equal(out["w"], sd["w"])
    assert S3StorageWriter.validate_checkpoint_id(other)
    assert not S3StorageReader.validate_checkpoint_id("relative/dir")
    assert {o["Key"] for o in boto.list_objects_v2(Bucket=rbucket, Prefix="dcp/")[
        "Contents"]} == keys2

    # overwrite=False: the committed checkpoint is kept, the save refused
    with pytest.raises(dcp_api.CheckpointException):
        _save(dcp_api, sd, S3StorageWriter(region=REGION, path=CHECKPOINT_URI,
                                           overwrite=False))
    assert {o["Key"] for o in boto.list_objects_v2(Bucket=rbucket, Prefix="dcp/")[
        "Contents"]} == keys2


class _Trap:
    """Unpickled, it leaves a file behind."""

    def __init__(self, path):
        self.path = path

    def __reduce__(self):
        return (open, (self.path, "w"))


def test_dcp_overwrite_runs_no_pickle(aws_env, rbucket, boto, dcp_api, tmp_path):
    """An overwrite learns what to delete from the JSON object list, never by
    unpickling the .metadata it replaces (a save runs no pickle it did not write);
    a list that does not parse deletes nothing and fails nothing; a list naming
    anything but data objects deletes only those."""
    from s3rdma.torch.dcp import S3StorageWriter
    trap = tmp_path / "unpickled"
    put(boto, rbucket, "ck/.metadata", pickle.dumps(_Trap(str(trap))))
    put(boto, rbucket, "ck/keep.txt", b"not a data object")
    put(boto, rbucket, "ck/.s3rdma-objects", b"{not json")
    _save(dcp_api, {"w": torch.ones(5)}, S3StorageWriter(REGION, f"s3://{rbucket}/ck/"))
    assert not trap.exists()
    first = {o["Key"] for o in boto.list_objects_v2(Bucket=rbucket)["Contents"]}
    put(boto, rbucket, "ck/.s3rdma-objects",
        json.dumps({"objects": ["keep.txt"] + [k[3:] for k in first
                                               if k.endswith(".distcp")]}).encode())
    _save(dcp_api, {"w": torch.ones(5)}, S3StorageWriter(REGION, f"s3://{rbucket}/ck/"))
    now = {o["Key"] for o in boto.list_objects_v2(Bucket=rbucket)["Contents"]}
    assert "ck/keep.txt" in now and not {k for k in first if k.endswith(".distcp")} & now
    assert not trap.exists()


def test_dcp_prefix_strategies():
    """The numeric strategies' names (README: BinaryPrefixStrategy(epoch_num=1,
    min_prefix_len=10), HexPrefixStrategy(epoch_num=1, min_prefix_len=4)) and a custom
    S3PrefixStrategyBase."""
    from s3rdma.torch.dcp import (BinaryPrefixStrategy, DefaultPrefixStrategy,
                                  HexPrefixStrategy, S3PrefixStrategyBase)
    strategy = BinaryPrefixStrategy(epoch_num=1, min_prefix_len=10, prefix_count=3)
    assert [strategy(r) for r in range(3)] == ["0000000000/epoch_1/__0_",
                                               "1000000000/epoch_1/__1_",
                                               "0100000000/epoch_1/__2_"]
    strategy = HexPrefixStrategy(epoch_num=1, min_prefix_len=4, prefix_count=17)
    assert strategy(15) == "f000/epoch_1/__15_" and strategy(16) == "0100/epoch_1/__16_"
    assert HexPrefixStrategy(min_prefix_length=2)(0) == "00/__0_"
    assert DefaultPrefixStrategy()(7) == "__7_"
    with pytest.raises(ValueError):
        BinaryPrefixStrategy(min_prefix_length=0)

    class CustomPrefixStrategy(S3PrefixStrategyBase):
        def __init__(self, custom_param):
            super().__init__()
            self.custom_param = custom_param

        def generate_prefix(self, rank: int) -> str:
            return f"custom_{self.custom_param}/{rank}/"
    assert CustomPrefixStrategy("x")(2) == "custom_x/2/"


def test_dcp_file_system(aws_env, rbucket, boto):
    """S3FileSystem: streams, exists, rename, rm_file, checkpoint ids."""
    from s3rdma.torch.dcp import S3FileSystem
    fs = S3FileSystem(REGION)
    base = f"s3://{rbucket}/fs"
    p = fs.concat_path(base, "a.bin")
    assert p == f"{base}/a.bin" and fs.init_path(base) == base
    with fs.create_stream(p, "wb") as s:
        s.write(b"hello")
    with fs.create_stream(p, "rb") as s:
        assert s.read() == b"hello"
    with pytest.raises(ValueError):
        with fs.create_stream(p, "ab"):
            pass
    assert fs.exists(p) and not fs.exists(f"{base}/b.bin")
    fs.rename(p, f"{base}/b.bin")
    assert not fs.exists(p) and fs.exists(f"{base}/b.bin")
    with pytest.raises(ValueError):
        fs.rename(f"{base}/b.bin", "s3://other-bucket/b.bin")
    fs.rm_file(f"{base}/b.bin")
    fs.rm_file(f"{base}/b.bin")  # logged, not raised
    fs.mkdir(base)
    assert S3FileSystem.validate_checkpoint_id(base)
    assert not S3FileSystem.validate_checkpoint_id("/local/dir")
