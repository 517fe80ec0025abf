"""Lifetimes in the binding (_s3rdma.c) when threads race (issue 17, item 10): a Multipart's
complete() racing a part() on another thread, and a batch whose key list another thread
changes while the batch runs without the GIL.

Both races are made deterministic by the GIL: with a huge switch interval the other thread
can run only when this one releases the GIL, which the binding does exactly once per call,
around the library call. So the racing call starts while part() or batch() is inside
libs3rdma, every time."""
import gc
import sys
import threading
from contextlib import contextmanager

import pytest

MiB = 1024 * 1024


@contextmanager
def gil_handoff_only():
    """Other threads get the GIL only when this one gives it up."""
    old = sys.getswitchinterval()
    sys.setswitchinterval(1000.0)
    try:
        yield
    finally:
        sys.setswitchinterval(old)


def run_when_gil_released(fn):
    """Starts a thread that runs fn once this thread next releases the GIL after
    the returned start() is called; returns (start, join)."""
    go = threading.Event()
    out = {}

    def body():
        go.wait()
        try:
            out["value"] = fn()
        except BaseException as e:  # reported by the test
            out["error"] = e
    t = threading.Thread(target=body)
    t.start()

    def join():
        t.join(60)
        assert not t.is_alive()
        return out
    return go.set, join


@pytest.mark.parametrize("transport", ["native", "http"])
def test_complete_racing_a_part_waits_for_it(client, rbucket, boto, transport):
    c = client(transport)
    data = bytes(range(256)) * (32 * 1024)  # 8 MiB: one part, the last may be small
    mp = c._native.multipart(rbucket, "race", None, None, None)
    with gil_handoff_only():
        start, join = run_when_gil_released(mp.complete)
        start()
        mp.part(data)  # complete() starts while this part is in libs3rdma
        out = join()
    assert "error" not in out, out["error"]  # it waited for the part, then completed
    assert boto.get_object(Bucket=rbucket, Key="race")["Body"].read() == data
    with pytest.raises(ValueError, match="already finished"):
        mp.part(b"late")
    mp.abort()  # a no-op now


def test_batch_keeps_its_keys_alive(client, rbucket, boto):
    c = client("native")
    n = 256  # more than the 64 in flight: later requests start after the other thread ran

    def name(i, tag="batch"):
        return f"{tag}/{i:04d}-" + "k" * 600  # > 512 bytes: freed to malloc, not pymalloc

    keys = [name(i) for i in range(n)]  # each string held by this list only
    bufs = [bytes([i % 251]) * 8 for i in range(n)]

    def replace_keys():
        for i in range(n):
            keys[i] = name(i, "other")  # drops the string the batch was given
        gc.collect()
    with gil_handoff_only():
        start, join = run_when_gil_released(replace_keys)
        start()
        res = c._native.batch(False, rbucket, keys, bufs, None, None)
        out = join()
    assert "error" not in out, out["error"]
    assert res == [8] * n
    got = sorted(o["Key"] for page in boto.get_paginator("list_objects_v2").paginate(
        Bucket=rbucket) for o in page.get("Contents", []))
    assert got == sorted(name(i) for i in range(n))
    assert keys[0] == name(0, "other")
    # the PUTs carried the bytes given with each key
    assert boto.get_object(Bucket=rbucket, Key=name(7))["Body"].read() == bytes([7]) * 8


@pytest.mark.parametrize("transport", ["native", "http"])
def test_parts_in_flight_at_once_by_number(client, rbucket, boto, transport):
    """part(data, n) on two threads at once: the second starts while the first is in
    libs3rdma (they used to run one at a time), they finish in any order, and the object
    is the parts in number order, whatever order they were sent in."""
    c = client(transport)
    first, second = b"a" * (5 * MiB), b"b" * (5 * MiB)
    mp = c._native.multipart(rbucket, "numbered", None, None, None)
    mp.part(b"tail", 3)  # the last part first
    with gil_handoff_only():
        start, join = run_when_gil_released(lambda: mp.part(first, 1))
        start()
        mp.part(second, 2)  # part 1 starts while this one is in libs3rdma
        out = join()
    assert "error" not in out, out["error"]
    mp.complete()
    assert boto.get_object(Bucket=rbucket, Key="numbered")["Body"].read() == \
        first + second + b"tail"
