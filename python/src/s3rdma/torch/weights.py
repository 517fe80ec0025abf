"""Model weights as one object in the safetensors layout, loaded by ranged GETs
straight into each tensor's final storage, several in flight.

Layout (the safetensors format, so other tools read what this writes): an 8-byte
little-endian header length N, N bytes of JSON ``{name: {"dtype", "shape",
"data_offsets": [begin, end]}}`` (offsets from the end of the header; the header
padded with spaces to a multiple of 8), then the tensors' bytes.

Loading reads the header (one GET of its first 64 KiB, a second one if the header is
longer), then every tensor's bytes with ranged GETs of at most part_size bytes, run
on the client's thread pool. Without ``into`` the tensors are carved out of one block
of registered memory (allocate_buffer): the GETs register nothing and the tensors
are that memory, no copy. With ``into`` (e.g. ``model.state_dict()``) the bytes land
in the given tensors' own storage.
"""
import json
import struct
from typing import Dict, List, Optional, Tuple

import torch

from ..client import Client
from ._client import alloc, ranges_one_by_one
from .writer import S3Writer

PROBE = 64 * 1024
MAX_HEADER = 100 * 1024 * 1024  # safetensors' own limit on the JSON header

_DTYPES = {
    "F64": torch.float64, "F32": torch.float32, "F16": torch.float16,
    "BF16": torch.bfloat16, "I64": torch.int64, "I32": torch.int32, "I16": torch.int16,
    "I8": torch.int8, "U8": torch.uint8, "BOOL": torch.bool,
}
_NAMES = {v: k for k, v in _DTYPES.items()}


def _bytes_of(t: torch.Tensor) -> memoryview:
    """The bytes of a contiguous CPU tensor, no copy."""
    return memoryview(t.reshape(-1).view(torch.uint8).numpy())


def save(client: Client, bucket: str, key: str, tensors: Dict[str, torch.Tensor],
         part_size: Optional[int] = None) -> None:
    """Stores tensors (CPU; non-contiguous ones copied) as bucket/key."""
    flat = {name: t.detach().cpu().contiguous() for name, t in tensors.items()}
    header, off = {}, 0
    for name, t in flat.items():
        if t.dtype not in _NAMES:
            raise TypeError(f"s3rdma.torch: {name}: dtype {t.dtype} has no safetensors name")
        n = t.numel() * t.element_size()
        header[name] = {"dtype": _NAMES[t.dtype], "shape": list(t.shape),
                        "data_offsets": [off, off + n]}
        off += n
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    with S3Writer(client, bucket, key, part_size) as w:
        w.write(struct.pack("<Q", len(text)))
        w.write(text)
        for t in flat.values():
            if t.numel():
                w.write(_bytes_of(t))


def _header(client: Client, bucket: str, key: str) -> Tuple[dict, int]:
    """(header dict, offset of the data section)."""
    probe = bytearray(PROBE)
    got = client.get_object_into(bucket, key, probe, range=(0, PROBE))
    if got < 8:
        raise ValueError(f"s3rdma.torch: {bucket}/{key} is too short for safetensors")
    (n,) = struct.unpack_from("<Q", probe)
    if n > MAX_HEADER:
        raise ValueError(f"s3rdma.torch: {bucket}/{key}: header of {n} bytes")
    text = bytes(probe[8:8 + n]) if 8 + n <= got else client.get_object(
        bucket, key, range=(8, 8 + n))
    header = json.loads(text)
    header.pop("__metadata__", None)
    return header, 8 + n


def load(client: Client, bucket: str, key: str, into: Optional[Dict[str, torch.Tensor]] = None,
         part_size: Optional[int] = None) -> Dict[str, torch.Tensor]:
    """The tensors of bucket/key by name (into's own tensors where into names them;
    they must match in dtype and shape and be contiguous)."""
    header, base = _header(client, bucket, key)
    chunk = part_size or client.part_size
    specs = []
    for name, h in header.items():
        dtype = _DTYPES.get(h.get("dtype"))
        b, e = h["data_offsets"]
        shape = tuple(h["shape"])
        if dtype is None or not 0 <= b <= e:
            raise ValueError(f"s3rdma.torch: {bucket}/{key}: bad entry {name!r}")
        specs.append((name, dtype, shape, b, e))
    out: Dict[str, torch.Tensor] = {}
    lo = min((b for *_, b, _ in specs), default=0)
    hi = max((e for *_, e in specs), default=0)
    block = alloc(client, hi - lo) if hi > lo and into is None else None
    for name, dtype, shape, b, e in specs:
        if into is not None and name in into:
            t = into[name]
            if t.dtype != dtype or tuple(t.shape) != shape or not t.is_contiguous():
                raise ValueError(f"s3rdma.torch: {name}: stored {dtype}{list(shape)} does "
                                 f"not fit the given {t.dtype}{list(t.shape)}")
        elif e == b:
            t = torch.empty(shape, dtype=dtype)
        else:
            size = torch.tensor([], dtype=dtype).element_size()
            if block is not None and (b - lo) % size == 0:
                raw = torch.frombuffer(block, dtype=torch.uint8, count=e - b, offset=b - lo)
            else:
                raw = torch.frombuffer(alloc(client, e - b), dtype=torch.uint8)
            t = raw.view(dtype).reshape(shape)
        if t.numel() * t.element_size() != e - b:
            raise ValueError(f"s3rdma.torch: {name}: {e - b} bytes for shape {list(shape)}")
        out[name] = t
    # ranges into registered memory go in flight on the thread pool; those into the
    # caller's tensors one after another from this thread when ranges_one_by_one
    jobs: List = []
    mine: List = []
    one_by_one = into is not None and ranges_one_by_one(client)
    for name, _, _, b, e in specs:
        dst = _bytes_of(out[name]) if e > b else None
        for off in range(0, e - b, chunk):
            n = min(chunk, e - b - off)
            job = (dst[off:off + n], (base + b + off, base + b + off + n), n, name)
            if one_by_one and name in into:
                mine.append(job)
            else:
                jobs.append((client.submit(client.get_object_into, bucket, key, *job[:2]),
                             *job[2:]))
    done = [(client.get_object_into(bucket, key, view, span), n, name)
            for view, span, n, name in mine]
    for got, n, name in done + [(fut.result(), n, name) for fut, n, name in jobs]:
        if got != n:
            raise ValueError(f"s3rdma.torch: {bucket}/{key}: {name} is cut short")
    return out
