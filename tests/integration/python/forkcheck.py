"""Run by test_python_fork.py in a process of its own (so that its UCX settings are its own):
a client used before a fork, then the child of os.fork() or a multiprocessing worker
(start method fork, spawn or forkserver) with the inherited client and a new one, and the
parent again. Prints one JSON line of what each side saw; exit code 0 when every byte matched.

    forkcheck.py MODE BUCKET      (endpoint, RDMA endpoint and keys from S3R_* variables)
"""
import json
import multiprocessing
import os
import sys

import numpy as np
import s3rdma

MiB = 1024 * 1024
SIZE = 3 * MiB + 11  # above the inline limit: moved by RDMA when a session is up
CLIENT = None  # the parent's client, inherited by forked children


def payload(seed, n=SIZE):
    return np.random.default_rng(seed).integers(0, 256, n, dtype=np.uint8).tobytes()


def new_client():
    return s3rdma.Client(endpoint=os.environ["S3R_ENDPOINT"],
                         rdma_endpoint=os.environ["S3R_RDMA_ENDPOINT"],
                         access_key=os.environ["S3R_ACCESS_KEY"],
                         secret_key=os.environ["S3R_SECRET_KEY"], transport="native",
                         quiet=True)


def roundtrip(c, bucket, key, seed):
    """PUT then GET back (bytes, a bytearray, allocate_buffer): True when all match."""
    data = payload(seed)
    c.put_object(bucket, key, data)
    ok = c.get_object(bucket, key) == data
    ba = bytearray(SIZE)
    ok &= c.get_object_into(bucket, key, ba) == SIZE and ba == data
    rb = c.allocate_buffer(SIZE)
    ok &= c.get_object_into(bucket, key, rb) == SIZE and bytes(rb) == data
    rb[:] = payload(seed + 100)
    c.put_object(bucket, key + "-rb", rb)
    ok &= c.get_object(bucket, key + "-rb") == payload(seed + 100)
    return bool(ok)


def child_work(bucket, tag, use_inherited):
    out = {"pid": os.getpid()}
    if use_inherited:
        out["inherited_ok"] = roundtrip(CLIENT, bucket, f"{tag}-inh", 20)
        out["parent_obj_ok"] = CLIENT.get_object(bucket, "parent") == payload(1)
        out["inherited_stats"] = CLIENT.stats()
    with new_client() as c:
        out["new_ok"] = roundtrip(c, bucket, f"{tag}-new", 30)
        out["new_stats"] = c.stats()
    return out


def main():
    global CLIENT
    mode, bucket = sys.argv[1], sys.argv[2]
    CLIENT = new_client()
    report = {"before_ok": roundtrip(CLIENT, bucket, "parent", 1)}
    held = CLIENT.allocate_buffer(SIZE)  # a registered buffer alive across the fork
    CLIENT.get_object_into(bucket, "parent", held)
    if mode == "os.fork":
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(r)
            try:
                res = child_work(bucket, "child", True)
            except BaseException as e:  # reported, not raised: the child must exit here
                res = {"error": repr(e)}
            os.write(w, json.dumps(res).encode())
            os._exit(0)
        os.close(w)
        chunks = []
        while True:
            b = os.read(r, 65536)
            if not b:
                break
            chunks.append(b)
        os.waitpid(pid, 0)
        report["children"] = [json.loads(b"".join(chunks))]
    else:
        ctx = multiprocessing.get_context(mode)
        with ctx.Pool(2) as pool:
            report["children"] = pool.starmap(
                child_work, [(bucket, f"w{i}", mode == "fork") for i in range(2)])
    report["held_ok"] = bytes(held) == payload(1)
    report["after_ok"] = roundtrip(CLIENT, bucket, "parent-after", 2)
    report["parent_stats"] = CLIENT.stats()
    print(json.dumps(report))
    ok = report["before_ok"] and report["after_ok"] and report["held_ok"] and all(
        c.get("new_ok") and c.get("inherited_ok", True) and c.get("parent_obj_ok", True)
        for c in report["children"])
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
