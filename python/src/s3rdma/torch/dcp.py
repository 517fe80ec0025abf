"""S3StorageWriter / S3StorageReader: torch.distributed.checkpoint storage on s3rdma.

Written and tested against the StorageWriter/StorageReader interface of Debian 12's
torch 1.13 (``torch.distributed._shard.checkpoint``, imported by _compat); later
versions move it to ``torch.distributed.checkpoint`` and add methods this module does
not implement yet.

A save is one commit. Every rank writes its items into data objects whose names
carry a save id the coordinator draws for this save (``__<rank>_<save>_<n>.distcp``),
so a save never overwrites another save's data. The coordinator then writes
``.metadata`` last, create-only (``If-None-Match: *``): the step exists from that
instant, whole, and a save that crashed or was killed before it left only data
objects no metadata names, which a load never reads. A second save into a path that
already holds a committed checkpoint fails (PreconditionFailed, its data objects
deleted) and leaves the committed one untouched.

Layout: each item's bytes at an offset of its data object: a tensor as its raw
contiguous bytes (dtype and shape in the metadata), anything else as the bytes the
planner gives. Loading GETs each item's range straight into the destination
tensor's storage when it is the whole stored chunk, with all ranges in flight on
the client's thread pool.

The metadata is a pickle, as with torch's FileSystemReader: load checkpoints only
from buckets whose writers you trust (so is every torch.load).
"""
import dataclasses
import io
import pickle
import uuid
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Tuple

import torch
from torch.futures import Future

from ..errors import PreconditionFailed
from ._client import ClientHolder, S3ClientConfig, alloc, parse_s3_uri, ranges_one_by_one
from ._compat import checkpoint_module
from .writer import S3Writer

_dcp = checkpoint_module()
LoadItemType = _dcp.planner.LoadItemType
WriteItemType = _dcp.planner.WriteItemType
WriteResult = _dcp.storage.WriteResult

METADATA = ".metadata"


@dataclass
class _Stored:
    """Where one item is: object name (relative to the checkpoint path), byte range,
    and for a tensor its dtype and shape."""
    relative_path: str
    offset: int
    length: int
    dtype: Optional[torch.dtype] = None
    shape: Optional[Tuple[int, ...]] = None


def _bytes_of(t: torch.Tensor) -> memoryview:
    return memoryview(t.reshape(-1).view(torch.uint8).numpy()) if t.numel() else memoryview(b"")


class _Path:
    def __init__(self, path: Any):
        self.bucket, prefix = parse_s3_uri(str(path))
        self.prefix = prefix.rstrip("/") + "/" if prefix.strip("/") else ""

    def key(self, name: str) -> str:
        return self.prefix + name


class S3StorageWriter(_dcp.StorageWriter):
    """Writes a distributed checkpoint under path (``s3://bucket/prefix/``).

    thread_count: data objects per rank, uploaded at once (items spread over them by
    size). Each is streamed through an S3Writer: multipart parts go while the next
    part is filled.
    """

    def __init__(self, region: Optional[str], path: str,
                 s3client_config: Optional[S3ClientConfig] = None, thread_count: int = 1,
                 endpoint: Optional[str] = None, **kwargs: Any):
        super().__init__()
        self._path = _Path(path)
        self._holder = ClientHolder(region, endpoint, s3client_config)
        self._part_size = (s3client_config or S3ClientConfig()).part_size
        self._threads = max(1, thread_count)

    def init(self, is_coordinator: bool) -> None:
        pass

    def prepare_local_plan(self, plan):
        return plan

    def prepare_global_plan(self, global_plan):
        """Coordinator: refuses a path already holding a committed checkpoint (before
        anything is written; finish's create-only PUT is what makes it race-free) and
        names this save's data objects."""
        client = self._holder.client
        try:
            client.head_object(self._path.bucket, self._path.key(METADATA))
        except KeyError:  # NoSuchKey: no committed checkpoint here
            pass
        else:
            raise PreconditionFailed(f"s3rdma.torch: a checkpoint is already committed at "
                                     f"{self._path.bucket}/{self._path.key(METADATA)}",
                                     code="PreconditionFailed", http_status=412)
        save = uuid.uuid4().hex[:16]
        return [dataclasses.replace(p, storage_data=f"__{i}_{save}_")
                for i, p in enumerate(global_plan)]

    def write_data(self, plan, planner) -> Future:
        client = self._holder.client
        items = []
        for item in plan.items:
            data = planner.resolve_data(item)
            if item.type == WriteItemType.BYTE_IO:
                items.append((item, data.getbuffer(), None, None))
            else:
                t = data.detach().cpu().contiguous()
                items.append((item, _bytes_of(t), t.dtype, tuple(t.shape)))
        groups: List[List] = [[] for _ in range(min(self._threads, max(1, len(items))))]
        loads = [0] * len(groups)
        for it in sorted(items, key=lambda it: -len(it[1])):
            g = loads.index(min(loads))
            groups[g].append(it)
            loads[g] += len(it[1])
        futs = [client.submit(self._write_object, f"{plan.storage_data}{n}.distcp", group)
                for n, group in enumerate(groups)]
        results = [r for f in futs for r in f.result()]
        fut: Future = Future()
        fut.set_result(results)
        return fut

    def _write_object(self, name: str, group: List) -> List:
        results, off = [], 0
        with S3Writer(self._holder.client, self._path.bucket, self._path.key(name),
                      self._part_size) as w:
            for item, data, dtype, shape in group:
                w.write(data)
                results.append(WriteResult(index=item.index, size_in_bytes=len(data),
                                           storage_data=_Stored(name, off, len(data), dtype,
                                                                shape)))
                off += len(data)
        return results

    def finish(self, metadata, results) -> None:
        """Coordinator: commits the save by writing .metadata, create-only."""
        metadata.storage_data = {wr.index: wr.storage_data for rl in results for wr in rl}
        client = self._holder.client
        try:
            client.put_object(self._path.bucket, self._path.key(METADATA),
                              pickle.dumps(metadata), if_none_match=True)
        except PreconditionFailed:
            names = {wr.storage_data.relative_path for rl in results for wr in rl}
            client.delete_objects(self._path.bucket, [self._path.key(n) for n in names])
            raise


class S3StorageReader(_dcp.StorageReader):
    """Reads a distributed checkpoint committed under path (its .metadata is the
    commit: a path without one is not a checkpoint)."""

    def __init__(self, region: Optional[str], path: str,
                 s3client_config: Optional[S3ClientConfig] = None,
                 reader_constructor: Any = None, endpoint: Optional[str] = None):
        super().__init__()
        self._path = _Path(path)
        self._holder = ClientHolder(region, endpoint, s3client_config)
        self._part_size = (s3client_config or S3ClientConfig()).part_size
        self._storage: Dict[Any, _Stored] = {}

    def read_metadata(self):
        return pickle.loads(self._holder.client.get_object(self._path.bucket,
                                                           self._path.key(METADATA)))

    def init(self, metadata, is_coordinator: bool) -> None:
        self._storage = metadata.storage_data

    def prepare_local_plan(self, plan):
        return plan

    def prepare_global_plan(self, global_plan):
        return global_plan

    def read_data(self, plan, planner) -> Future:
        client = self._holder.client
        jobs = []
        for req in plan.items:
            s = self._storage[req.storage_index]
            key = self._path.key(s.relative_path)
            if req.type == LoadItemType.BYTE_IO:
                dst = bytearray(s.length)
                whole, target = None, None
            else:
                target = planner.resolve_tensor(req).detach()
                whole = (all(o == 0 for o in req.storage_offsets)
                         and tuple(req.lengths) == tuple(s.shape) and target.is_contiguous()
                         and target.dtype == s.dtype and target.device.type == "cpu")
                if whole:
                    dst = target
                else:
                    dst = torch.frombuffer(alloc(client, s.length), dtype=torch.uint8) \
                        .view(s.dtype).reshape(s.shape) if s.length else \
                        torch.empty(s.shape, dtype=s.dtype)
            view = memoryview(dst) if isinstance(dst, bytearray) else _bytes_of(dst)
            ranges = [(view[off:off + n], (s.offset + off, s.offset + off + n))
                      for off, n in ((off, min(self._part_size, s.length - off))
                                     for off in range(0, s.length, self._part_size))]
            if (target is None or whole) and ranges_one_by_one(client):
                # the caller's memory (a bytearray, the target tensor): one at a time
                for v, span in ranges:
                    client.get_object_into(self._path.bucket, key, v, span)
                futs = []
            else:
                futs = [client.submit(client.get_object_into, self._path.bucket, key, v, span)
                        for v, span in ranges]
            jobs.append((req, dst, target, whole, futs))
        for req, dst, target, whole, futs in jobs:
            for f in futs:
                f.result()
            if target is None:
                planner.load_bytes(req, io.BytesIO(dst))
                continue
            if not whole:
                src = dst
                for dim, (o, n) in enumerate(zip(req.storage_offsets, req.lengths)):
                    src = src.narrow(dim, o, n)
                target.copy_(src)
            planner.commit_tensor(req, target)
        fut: Future = Future()
        fut.set_result(None)
        return fut
