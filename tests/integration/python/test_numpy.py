"""get_object_numpy / put_object_numpy: .npy bytes identical to numpy.save's, arrays
identical after the round trip, several dtypes, shapes and memory orders."""
import io

import numpy as np
import pytest
import s3rdma
from conftest import TRANSPORTS


def npy_bytes(a):
    f = io.BytesIO()
    np.save(f, a, allow_pickle=False)
    return f.getvalue()


def sample(dtype, shape, seed=0):
    rng = np.random.default_rng(seed)
    return (rng.random(shape) * 200 - 100).astype(dtype)


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("dtype", ["uint8", "int16", ">i4", "float32", "float64", "complex64",
                                   "bool"])
def test_roundtrip_dtypes(client, rbucket, boto, transport, dtype):
    c = client(transport)
    for shape in [(0,), (7,), (3, 4, 5), (512, 300)]:
        a = sample(dtype, shape)
        c.put_object_numpy(rbucket, "a.npy", a)
        stored = boto.get_object(Bucket=rbucket, Key="a.npy")["Body"].read()
        assert stored == npy_bytes(a), (dtype, shape)
        b = c.get_object_numpy(rbucket, "a.npy")
        assert b.dtype == a.dtype and b.shape == a.shape
        assert b.tobytes() == a.tobytes()


def test_orders_and_large(client, rbucket, boto):
    c = client("native")
    a = sample("float32", (300, 200))
    for arr in [np.asfortranarray(a), a[::2, ::3], a.T]:
        c.put_object_numpy(rbucket, "o.npy", arr)
        assert boto.get_object(Bucket=rbucket, Key="o.npy")["Body"].read() == npy_bytes(arr)
        back = c.get_object_numpy(rbucket, "o.npy")
        assert back.shape == arr.shape and np.array_equal(back, arr)
    big = sample("float64", (3, 1024, 1024), 1)  # 24 MiB: the multipart path
    c.put_object_numpy(rbucket, "big.npy", big, metadata={"kind": "weights"})
    assert c.head_object(rbucket, "big.npy").metadata == {"kind": "weights"}
    assert np.load(io.BytesIO(c.get_object(rbucket, "big.npy"))).tobytes() == big.tobytes()
    assert c.get_object_numpy(rbucket, "big.npy").tobytes() == big.tobytes()


def test_written_by_numpy_read_by_s3rdma(client, rbucket, boto):
    c = client("native")
    a = sample("int64", (10, 10))
    boto.put_object(Bucket=rbucket, Key="np.npy", Body=npy_bytes(a))
    assert np.array_equal(c.get_object_numpy(rbucket, "np.npy"), a)
    # a long header (many dimensions) needs the second header read
    wide = np.zeros((1,) * 30 + (3,), dtype=[("x" * 200 + str(i), "u1") for i in range(20)])
    boto.put_object(Bucket=rbucket, Key="wide.npy", Body=npy_bytes(wide))
    assert c.get_object_numpy(rbucket, "wide.npy").tobytes() == wide.tobytes()


def test_bad_npy(client, rbucket, boto):
    c = client("native")
    boto.put_object(Bucket=rbucket, Key="not.npy", Body=b"hello world, no magic here")
    with pytest.raises(ValueError, match="magic"):
        c.get_object_numpy(rbucket, "not.npy")
    full = npy_bytes(np.arange(1000, dtype=np.int32))
    boto.put_object(Bucket=rbucket, Key="cut.npy", Body=full[:-40])
    with pytest.raises(ValueError, match="header says"):
        c.get_object_numpy(rbucket, "cut.npy")
    with pytest.raises(s3rdma.NoSuchKey):
        c.get_object_numpy(rbucket, "absent.npy")


def test_arrays_on_registered_memory(client, rbucket):
    c = client("native")
    buf = c.allocate_buffer(1 << 20)
    a = np.frombuffer(buf, np.float32)
    a[:] = np.arange(a.size)
    c.put_object(rbucket, "raw", buf)
    a[:] = 0
    assert c.get_object_into(rbucket, "raw", a) == 1 << 20
    assert np.array_equal(a, np.arange(a.size, dtype=np.float32))
