"""S3MapDataset and S3IterableDataset: s3torchconnector's datasets over s3rdma.

Both yield ``transform(reader)`` for each object, reader an S3Reader (by default
the identity: the reader itself). Each process (each DataLoader worker) opens its own
client on first use (ClientHolder).

S3IterableDataset prefetches: with the sequential reader it fetches the objects of
its shard ``prefetch`` at a time with one batch call (s3rdma.Client.get_objects,
every request of the window in flight on one session) into one block of registered
memory, the next window being fetched on the client's thread pool while the current
one is consumed. Each reader then holds a slice of that block: ``getbuffer()`` and
``torch.frombuffer`` hand it out without a copy, and the block is reused once no
slice of it is left.
"""
import concurrent.futures
import itertools
from typing import Any, Callable, Iterable, Iterator, List, Optional, Union

import torch
import torch.utils.data

from ..client import Client
from ..errors import BufferTooSmall
from ._client import (ClientHolder, ObjectRef, S3ClientConfig, alloc, list_prefix,
                      parse_s3_uri, refs_from_uris)
from .reader import (ReaderFactory, S3Reader, S3ReaderConstructor, SequentialS3Reader,
                     fetch_whole)

ObjectSource = Callable[[Client], Iterable[ObjectRef]]


def identity(obj: S3Reader) -> S3Reader:
    return obj


class _Base:
    def __init__(self, region: Optional[str], get_dataset_objects: ObjectSource,
                 endpoint: Optional[str], transform: Callable[[S3Reader], Any],
                 s3client_config: Optional[S3ClientConfig],
                 reader_constructor: Optional[ReaderFactory]):
        self._get_dataset_objects = get_dataset_objects
        self._transform = transform
        self._holder = ClientHolder(region, endpoint, s3client_config)
        self._reader_constructor = reader_constructor or S3ReaderConstructor.default()

    @property
    def region(self) -> Optional[str]:
        return self._holder.region

    @property
    def endpoint(self) -> Optional[str]:
        return self._holder.endpoint

    def _reader(self, ref: ObjectRef) -> Any:
        return self._transform(self._reader_constructor(self._holder.client, ref.bucket,
                                                        ref.key, ref.size))

    @classmethod
    def _of_prefix(cls, s3_uri: str) -> ObjectSource:
        return _Prefix(s3_uri)

    @classmethod
    def _of_objects(cls, object_uris: Union[str, Iterable[str]]) -> ObjectSource:
        return _Objects(refs_from_uris(object_uris))


class _Prefix:
    """The objects under an s3:// prefix (a class, not a closure: datasets are pickled
    into spawn and forkserver workers)."""

    def __init__(self, s3_uri: str):
        parse_s3_uri(s3_uri)  # refuse a bad URI now, not in a worker
        self.s3_uri = s3_uri

    def __call__(self, client: Client) -> Iterator[ObjectRef]:
        return list_prefix(client, self.s3_uri)


class _Objects:
    """A fixed list of objects."""

    def __init__(self, refs: List[ObjectRef]):
        self.refs = refs

    def __call__(self, client: Client) -> List[ObjectRef]:
        return self.refs


class S3MapDataset(_Base, torch.utils.data.Dataset):
    """A map-style dataset of the objects under a prefix (listed on first access, in
    key order) or of given URIs. ``dataset[i]`` is ``transform(reader)``."""

    def __init__(self, region: Optional[str], get_dataset_objects: ObjectSource,
                 endpoint: Optional[str] = None,
                 transform: Callable[[S3Reader], Any] = identity,
                 s3client_config: Optional[S3ClientConfig] = None,
                 reader_constructor: Optional[ReaderFactory] = None):
        super().__init__(region, get_dataset_objects, endpoint, transform, s3client_config,
                         reader_constructor)
        self._objects: Optional[List[ObjectRef]] = None

    @classmethod
    def from_objects(cls, object_uris: Union[str, Iterable[str]], *,
                     region: Optional[str] = None, endpoint: Optional[str] = None,
                     transform: Callable[[S3Reader], Any] = identity,
                     s3client_config: Optional[S3ClientConfig] = None,
                     reader_constructor: Optional[ReaderFactory] = None) -> "S3MapDataset":
        return cls(region, cls._of_objects(object_uris), endpoint, transform, s3client_config,
                   reader_constructor)

    @classmethod
    def from_prefix(cls, s3_uri: str, *, region: Optional[str] = None,
                    endpoint: Optional[str] = None,
                    transform: Callable[[S3Reader], Any] = identity,
                    s3client_config: Optional[S3ClientConfig] = None,
                    reader_constructor: Optional[ReaderFactory] = None) -> "S3MapDataset":
        return cls(region, cls._of_prefix(s3_uri), endpoint, transform, s3client_config,
                   reader_constructor)

    @property
    def _dataset_objects(self) -> List[ObjectRef]:
        if self._objects is None:
            self._objects = list(self._get_dataset_objects(self._holder.client))
        return self._objects

    def __len__(self) -> int:
        return len(self._dataset_objects)

    def __getitem__(self, i: int) -> Any:
        return self._reader(self._dataset_objects[i])


class S3IterableDataset(_Base, torch.utils.data.IterableDataset):
    """An iterable dataset of the objects under a prefix or of given URIs.

    enable_sharding: each object goes to one rank (``torch.distributed``, read when
    the dataset is made) and, within it, to one DataLoader worker: index i of the
    listing to rank ``i % world_size``, then the rank's j-th object to worker
    ``j % num_workers``, as s3torchconnector shards. prefetch: objects per batch
    fetch (sequential reader only; see the module comment).
    """

    def __init__(self, region: Optional[str], get_dataset_objects: ObjectSource,
                 endpoint: Optional[str] = None,
                 transform: Callable[[S3Reader], Any] = identity,
                 s3client_config: Optional[S3ClientConfig] = None,
                 enable_sharding: bool = False,
                 reader_constructor: Optional[ReaderFactory] = None, prefetch: int = 32):
        super().__init__(region, get_dataset_objects, endpoint, transform, s3client_config,
                         reader_constructor)
        self._enable_sharding = enable_sharding
        self._prefetch = max(1, prefetch)
        self._rank, self._world_size = 0, 1
        if torch.distributed.is_available() and torch.distributed.is_initialized():
            self._rank = torch.distributed.get_rank()
            self._world_size = torch.distributed.get_world_size()

    @classmethod
    def from_objects(cls, object_uris: Union[str, Iterable[str]], *,
                     region: Optional[str] = None, endpoint: Optional[str] = None,
                     transform: Callable[[S3Reader], Any] = identity,
                     s3client_config: Optional[S3ClientConfig] = None,
                     enable_sharding: bool = False,
                     reader_constructor: Optional[ReaderFactory] = None,
                     prefetch: int = 32) -> "S3IterableDataset":
        return cls(region, cls._of_objects(object_uris), endpoint, transform, s3client_config,
                   enable_sharding, reader_constructor, prefetch)

    @classmethod
    def from_prefix(cls, s3_uri: str, *, region: Optional[str] = None,
                    endpoint: Optional[str] = None,
                    transform: Callable[[S3Reader], Any] = identity,
                    s3client_config: Optional[S3ClientConfig] = None,
                    enable_sharding: bool = False,
                    reader_constructor: Optional[ReaderFactory] = None,
                    prefetch: int = 32) -> "S3IterableDataset":
        return cls(region, cls._of_prefix(s3_uri), endpoint, transform, s3client_config,
                   enable_sharding, reader_constructor, prefetch)

    def _shard(self) -> Iterator[ObjectRef]:
        objs: Iterable[ObjectRef] = self._get_dataset_objects(self._holder.client)
        if not self._enable_sharding:
            return iter(objs)
        info = torch.utils.data.get_worker_info()
        worker, workers = (info.id, info.num_workers) if info is not None else (0, 1)
        mine = itertools.islice(objs, self._rank, None, self._world_size)
        return itertools.islice(mine, worker, None, workers)

    def __iter__(self) -> Iterator[Any]:
        refs = self._shard()
        if self._reader_constructor is not SequentialS3Reader:
            return map(self._reader, refs)
        return self._prefetched(refs)

    def _prefetched(self, refs: Iterator[ObjectRef]) -> Iterator[Any]:
        client = self._holder.client
        windows = iter(lambda: list(itertools.islice(refs, self._prefetch)), [])
        nxt: Optional[concurrent.futures.Future] = None
        first = next(windows, None)
        if first is None:
            return
        nxt = client.submit(_fetch_window, client, first)
        while nxt is not None:
            window, data = nxt.result()
            following = next(windows, None)
            nxt = client.submit(_fetch_window, client, following) if following else None
            for ref, view in zip(window, data):
                yield self._transform(SequentialS3Reader(client, ref.bucket, ref.key,
                                                         data=view))


def _fetch_window(client: Client, window: List[ObjectRef]):
    """(window, [memoryview of each object]): one registered block for the whole
    window, filled by one batch GET per run of objects in the same bucket."""
    sizes = [r.size if r.size is not None else client.head_object(r.bucket, r.key).size
             for r in window]
    total = sum(sizes)
    block = alloc(client, total)
    views, off = [], 0
    for s in sizes:
        views.append(block[off:off + s])
        off += s
    got: List[Any] = []
    for bucket, run in itertools.groupby(range(len(window)), key=lambda i: window[i].bucket):
        idx = list(run)
        got += client.get_objects(bucket, [window[i].key for i in idx],
                                  [views[i] for i in idx], return_exceptions=True)
    out = []
    for ref, view, n in zip(window, views, got):
        if isinstance(n, BufferTooSmall):  # grew since listed: fetch it alone
            out.append(fetch_whole(client, ref.bucket, ref.key, n.needed_bytes))
        elif isinstance(n, BaseException):
            raise n
        else:
            out.append(view[:n])
    return window, out
