"""S3Checkpoint: torch.save / torch.load straight to and from objects."""
from typing import Any, Dict, Optional

import torch

from . import archive, weights

from ._client import BlockCache, ClientHolder, S3ClientConfig, fresh_block, parse_s3_uri
from .reader import ReaderFactory, S3Reader, S3ReaderConstructor
from .writer import S3Writer


class S3Checkpoint:
    """Readers and writers for s3:// URIs, as s3torchconnector's S3Checkpoint::

        checkpoint = S3Checkpoint(region="us-east-1")
        with checkpoint.writer("s3://bucket/epoch0.ckpt") as w:
            torch.save(model.state_dict(), w)
        with checkpoint.reader("s3://bucket/epoch0.ckpt") as r:
            state_dict = torch.load(r)
    """

    def __init__(self, region: Optional[str] = None, endpoint: Optional[str] = None,
                 s3client_config: Optional[S3ClientConfig] = None,
                 reader_constructor: Optional[ReaderFactory] = None,
                 reuse_load_memory: bool = False):
        """reuse_load_memory: load() (and torch.load of a reader) lands in memory
        registered with the RDMA session, which the server writes in place (no copy on
        the client), and keeps it once all the loaded tensors are gone: the next load
        of a checkpoint that fits lands in it, with no page faults (BlockCache;
        docs/benchmarks.md: one copy per byte, the server's, against two plus the first
        touch of new memory). It holds memory the size of the last checkpoint loaded
        while nothing uses it, until this S3Checkpoint goes: for loops of loads
        (evaluating checkpoints, reloading weights), not for one load at start-up."""
        self.region, self.endpoint = region, endpoint
        self._holder = ClientHolder(region, endpoint, s3client_config)
        self._take = BlockCache(self._holder).take if reuse_load_memory else fresh_block
        self._part_size = (s3client_config or S3ClientConfig()).part_size
        # torch.load of a reader fetches the whole object in part_size ranges
        # (archive.py); other reads are ranged, small ones served from 256 KiB reads
        self._reader_constructor = reader_constructor or S3ReaderConstructor.range_based(
            buffer_size=256 * 1024)

    def reader(self, s3_uri: str) -> S3Reader:
        """A seekable read-only stream of the object (by default ranged reads: see
        __init__). ``torch.load(reader)`` does what load() does (archive.py): the
        tensors land in one block of memory (reuse_load_memory applies) and stay there."""
        bucket, key = parse_s3_uri(s3_uri)
        r = self._reader_constructor(self._holder.client, bucket, key)
        r.use_load_memory(self._take)
        return r

    def load(self, s3_uri: str, map_location: Any = None, **pickle_load_args: Any) -> Any:
        """What ``torch.load(self.reader(s3_uri), map_location, ...)`` returns, faster:
        the object is fetched whole by ranged GETs (part_size each) into one block of
        new memory (fresh_block, reader.fetch_chunked; or the kept registered one: see
        reuse_load_memory), and the tensors are left in that block, no copy
        (archive.py). The block lives as long as any of the tensors."""
        bucket, key = parse_s3_uri(s3_uri)
        return archive.load(self._holder.client, bucket, key, self._part_size, self._take,
                            map_location, **pickle_load_args)

    def writer(self, s3_uri: str) -> S3Writer:
        """A write-only stream that becomes the object when closed (multipart parts
        uploaded while torch.save still writes)."""
        bucket, key = parse_s3_uri(s3_uri)
        return S3Writer(self._holder.client, bucket, key, self._part_size)

    def save_weights(self, tensors: Dict[str, torch.Tensor], s3_uri: str) -> None:
        """Stores tensors as one safetensors-layout object (see weights.py)."""
        bucket, key = parse_s3_uri(s3_uri)
        weights.save(self._holder.client, bucket, key, tensors, self._part_size)

    def load_weights(self, s3_uri: str,
                     into: Optional[Dict[str, torch.Tensor]] = None) -> Dict[str, torch.Tensor]:
        """The tensors of a safetensors-layout object, by ranged GETs in flight at once
        straight into their final storage: registered memory the tensors then own, or
        the tensors of into (e.g. ``model.state_dict()``) that it names."""
        bucket, key = parse_s3_uri(s3_uri)
        return weights.load(self._holder.client, bucket, key, into, self._part_size)
