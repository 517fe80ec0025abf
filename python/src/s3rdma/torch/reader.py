"""S3Reader: a read-only, seekable binary file over one object (what datasets yield
and S3Checkpoint.reader returns, what torch.load reads).

Two kinds, chosen by S3ReaderConstructor as in s3torchconnector (whose third,
dcp_optimized, is range-based without a buffer here: DCPOptimizedConstructor makes
DCPOptimizedS3Readers):
- sequential (the default): the whole object lands in memory registered with the
  RDMA session (s3rdma.Client.allocate_buffer) with one GET, on first use or
  already prefetched by S3IterableDataset. ``getbuffer()`` hands that memory out
  without a copy (``torch.frombuffer(r.getbuffer(), dtype=torch.uint8)``).
- range-based: each read is a ranged GET; reads smaller than buffer_size fill a
  buffer of that size first, larger ones (and every readinto when buffer_size is 0)
  land straight in the caller's memory.
"""
import io
import os
from typing import Any, Callable, Optional

from ..client import Client
from ..errors import BufferTooSmall
from ._client import Prefault, alloc, fresh_block, ranges_one_by_one


class S3Reader(io.BufferedIOBase):
    """A read-only binary stream over bucket/key. Not shared between threads."""

    def __init__(self, client: Client, bucket: str, key: str, size: Optional[int] = None):
        if not bucket:
            raise ValueError("Bucket should be specified")  # s3torchconnector's words
        super().__init__()
        self._client, self._bucket, self._key = client, bucket, key
        self._size = size
        self._pos = 0
        self._lines = (0, b"")  # (offset, bytes): readline's last block
        self._take: Callable[[int], memoryview] = fresh_block

    def use_load_memory(self, take: Callable[[int], memoryview]) -> None:
        """Where whole() lands the object when this reader must fetch it (take(size)
        gives the memory; fresh_block by default)."""
        self._take = take

    def whole(self) -> memoryview:
        """The whole object in one block of memory, which views of it keep alive: what
        torch.load of this reader reads its tensors from (archive.py)."""
        raise NotImplementedError

    @property
    def bucket(self) -> str:
        return self._bucket

    @property
    def key(self) -> str:
        return self._key

    @property
    def size(self) -> int:
        """The object's size (one HEAD the first time, unless a listing gave it)."""
        if self._size is None:
            self._size = self._client.head_object(self._bucket, self._key).size
        return self._size

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def writable(self) -> bool:
        return False

    def tell(self) -> int:
        return self._pos

    def seek(self, offset: int, whence: int = os.SEEK_SET, /) -> int:
        """Moves to offset from whence (SEEK_SET, SEEK_CUR, SEEK_END) and returns the
        new position. As s3torchconnector: a position past the end stays at the end
        (the size, one HEAD if not known yet); before the start is a ValueError; a
        non-integer offset or whence a TypeError, an unknown whence a ValueError."""
        if not isinstance(offset, int):
            raise TypeError(f"integer argument expected, got {type(offset)!r}")
        if not isinstance(whence, int):
            raise TypeError(f"integer argument expected, got {type(whence)!r}")
        if whence == os.SEEK_SET:
            pos = offset
        elif whence == os.SEEK_CUR:
            pos = self._pos + offset
        elif whence == os.SEEK_END:
            pos = self.size + offset
        else:
            raise ValueError("Seek must be passed SEEK_CUR, SEEK_SET, or SEEK_END")
        if pos < 0:
            raise ValueError(f"negative seek value {pos}")
        self._pos = min(pos, self.size)
        return self._pos

    def _want(self, size: Optional[int]) -> int:
        """Bytes a read of size (None or negative: to the end) at the current position
        returns; a size that is not an integer is a TypeError."""
        if size is not None and not isinstance(size, int):
            raise TypeError(f"argument should be integer or None, not {type(size)!r}")
        left = max(0, self.size - self._pos)
        return left if size is None or size < 0 else min(size, left)

    def read(self, size: Optional[int] = None) -> bytes:
        n = self._want(size)
        out = bytearray(n)
        got = self.readinto(out) if n else 0
        return bytes(out) if got == n else bytes(out[:got])

    def read1(self, size: int = -1) -> bytes:
        return self.read(size)

    def readline(self, size: Optional[int] = -1) -> bytes:
        """Up to and including the next b"\\n" (at most size bytes). Lines are cut
        from 8 KiB blocks this reader keeps one of: io's default reads one byte per
        call, which on a range-based reader without a buffer is one GET per byte
        (iterating a reader, as ``b"".join(reader)`` does, goes through here)."""
        limit = -1 if size is None else size
        out = bytearray()
        while limit < 0 or len(out) < limit:
            start, block = self._lines
            off = self._pos - start
            if not 0 <= off < len(block):
                block = self.read(8192)
                if not block:
                    break
                start, off = self._pos - len(block), 0
                self._lines = (start, block)
            end = len(block) if limit < 0 else min(len(block), off + limit - len(out))
            nl = block.find(b"\n", off, end)
            stop = end if nl < 0 else nl + 1
            out += block[off:stop]
            self._pos = start + stop
            if nl >= 0:
                break
        return bytes(out)

    def readinto(self, buf) -> int:
        raise NotImplementedError


def _writable_bytes(buf) -> memoryview:
    """buf as a writable memoryview of bytes; TypeError (as file objects raise) for
    anything else."""
    try:
        view = memoryview(buf)
    except TypeError:
        view = None
    if view is None or view.readonly:
        raise TypeError("argument must be a writable bytes-like object, "
                        f"not {type(buf).__name__}")
    return view.cast("B") if view.format != "B" or view.ndim != 1 else view


class SequentialS3Reader(S3Reader):
    """The whole object in registered memory after one GET (or given prefetched)."""

    def __init__(self, client: Client, bucket: str, key: str, size: Optional[int] = None,
                 data: Optional[memoryview] = None):
        super().__init__(client, bucket, key, size if data is None else len(data))
        self._data = data

    def getbuffer(self) -> memoryview:
        """The object's bytes, in memory registered with the RDMA session, no copy.
        Stays valid as long as any view of it lives."""
        if self._data is None:
            self._data = fetch_whole(self._client, self._bucket, self._key, self._size)
            self._size = len(self._data)
        return self._data

    def prefetch(self) -> None:
        """Fetches the object now (s3torchconnector's name for starting the GET)."""
        self.getbuffer()

    def whole(self) -> memoryview:
        return self.getbuffer()

    def read(self, size: Optional[int] = None) -> bytes:
        data = self.getbuffer()
        n = self._want(size)
        self._pos += n
        return bytes(data[self._pos - n:self._pos])  # the one copy bytes need

    def readinto(self, buf) -> int:
        dst = _writable_bytes(buf)
        data = self.getbuffer()
        n = max(0, min(len(dst), len(data) - self._pos))
        dst[:n] = data[self._pos:self._pos + n]
        self._pos += n
        return n


class RangedS3Reader(S3Reader):
    """Ranged GETs at the current position; see the module comment."""

    def __init__(self, client: Client, bucket: str, key: str, size: Optional[int] = None,
                 buffer_size: int = 8 * 1024 * 1024):
        super().__init__(client, bucket, key, size)
        self._buffer_size = max(buffer_size, 0)  # negative: no buffer, as s3torchconnector
        self._buf = bytearray(self._buffer_size)
        self._buf_start = 0
        self._buf_len = 0

    def whole(self) -> memoryview:
        """By ranged GETs of the client's part_size (fetch_chunked), into self._take's
        memory."""
        return fetch_chunked(self._client, self._bucket, self._key, self._client.part_size,
                             self._take)

    def readinto(self, buf) -> int:
        dst = _writable_bytes(buf)
        n = self._want(len(dst))
        if n == 0:
            return 0
        off = self._pos - self._buf_start
        if 0 <= off and off + n <= self._buf_len:  # inside the buffer
            dst[:n] = self._buf[off:off + n]
        elif n >= self._buffer_size:  # straight into the caller's memory
            n = self._client.get_object_into(self._bucket, self._key, dst[:n],
                                             range=(self._pos, self._pos + n))
        else:
            want = min(self._buffer_size, self.size - self._pos)
            self._buf_len = self._client.get_object_into(
                self._bucket, self._key, memoryview(self._buf)[:want],
                range=(self._pos, self._pos + want))
            self._buf_start = self._pos
            n = min(n, self._buf_len)
            dst[:n] = self._buf[:n]
        self._pos += n
        return n


def fetch_whole(client: Client, bucket: str, key: str, size: Optional[int]) -> memoryview:
    """bucket/key in a buffer from client.allocate_buffer, by one GET (a HEAD first
    when size is unknown; a retry with the right size if the object grew)."""
    if size is None:
        size = client.head_object(bucket, key).size
    while True:
        if size == 0:
            return memoryview(b"")
        buf = alloc(client, size)
        try:
            n = client.get_object_into(bucket, key, buf)
        except BufferTooSmall as e:
            size = e.needed_bytes
            continue
        return buf[:n]


def fetch_chunked(client: Client, bucket: str, key: str, chunk: int,
                  take: Callable[[int], memoryview] = fresh_block) -> memoryview:
    """bucket/key whole in take(size) (a fresh_block by default; a HEAD first for its
    size), by ranged GETs of chunk bytes. Over a native session they run one after
    another from this thread: on a same-host session each lands in the client's
    bounce buffer, which the server fills while this thread copies the pieces out
    (docs/client.md "Registered memory"), so the server's read and the copy run on
    two cores, while a Prefault thread faults the block's new pages in from its far
    end, so that their zeroing is shared out too (ranges_one_by_one says why not in
    flight). Over the other transports the client's thread pool runs max_workers at
    once. Like any reader of ranges, an object overwritten meanwhile may come back
    mixed; one that shrank raises ValueError."""
    size = client.head_object(bucket, key).size
    block = take(size)
    spans = [(off, min(chunk, size - off)) for off in range(0, size, chunk)]
    if ranges_one_by_one(client):
        got = []
        with Prefault(block if len(spans) > 1 else block[:0]) as prefault:
            for off, n in spans:
                prefault.advance(off + n)
                got.append(client.get_object_into(bucket, key, block[off:off + n],
                                                  (off, off + n)))
    else:
        got = [f.result() for f in [client.submit(client.get_object_into, bucket, key,
                                                  block[off:off + n], (off, off + n))
                                    for off, n in spans]]
    if got != [n for _, n in spans]:
        raise ValueError(f"s3rdma.torch: {bucket}/{key} was cut short while read")
    return block


ReaderFactory = Callable[..., S3Reader]

DEFAULT_MAX_GAP_SIZE = 32 * 1024 * 1024


class _RangedFactory:
    """Makes RangedS3Readers of one buffer size (a class, not a closure: datasets
    holding it are pickled into spawn and forkserver workers)."""

    def __init__(self, buffer_size: int):
        self.buffer_size = buffer_size

    def __call__(self, client: Client, bucket: str, key: str,
                 size: Optional[int] = None) -> S3Reader:
        return RangedS3Reader(client, bucket, key, size, self.buffer_size)


class DCPOptimizedS3Reader(RangedS3Reader):
    """What a DCPOptimizedConstructor makes: a range-based reader without a buffer
    (each read fetches exactly its range). Its own class, so code that tells readers
    apart (``isinstance(r, DCPOptimizedS3Reader)``, s3torchconnector.s3reader's name)
    does so here too."""

    def __init__(self, client: Client, bucket: str, key: str, size: Optional[int] = None):
        super().__init__(client, bucket, key, size, 0)


class DCPOptimizedConstructor(_RangedFactory):
    """What S3ReaderConstructor.dcp_optimized() returns. s3torchconnector's
    DCP-optimized reader fetches only the byte ranges a load plan names, coalescing
    ranges closer than max_gap_size; s3rdma.torch.dcp.S3StorageReader always reads
    each planned item's own range straight into its tensor, so there it is the same as
    any other constructor. Anywhere else it makes DCPOptimizedS3Readers (range-based,
    no buffer), for any key (s3torchconnector's refuses keys its plan did not name).
    max_gap_size is checked and kept."""

    def __init__(self, max_gap_size: float = DEFAULT_MAX_GAP_SIZE):
        if max_gap_size < 0:
            raise ValueError("max_gap_size must be non-negative")
        super().__init__(0)
        self.max_gap_size = max_gap_size

    def __call__(self, client: Client, bucket: str, key: str,
                 size: Optional[int] = None) -> S3Reader:
        return DCPOptimizedS3Reader(client, bucket, key, size)

    def set_item_ranges_by_file(self, plan_items: Any, storage_data: Any,
                                base_path: Any) -> None:
        """s3torchconnector's S3StorageReader.prepare_local_plan hands the load plan's
        ranges over here (and code overriding prepare_local_plan calls it). Accepted
        and not kept: the readers made here fetch exactly what is read, and
        s3rdma.torch.dcp.S3StorageReader reads each planned range itself."""


class S3ReaderConstructor:
    """Picks the reader kind, as s3torchconnector's S3ReaderConstructor does:
    pass ``reader_constructor=S3ReaderConstructor.range_based()`` to a dataset,
    S3Checkpoint, S3StorageReader or S3Client.get_object."""

    @staticmethod
    def sequential() -> ReaderFactory:
        return SequentialS3Reader

    @staticmethod
    def range_based(buffer_size: Optional[int] = None) -> ReaderFactory:
        """buffer_size None: 8 MiB; 0 (or negative, as s3torchconnector takes it): no
        buffer, every read straight into its destination."""
        return _RangedFactory(8 * 1024 * 1024 if buffer_size is None else buffer_size)

    @staticmethod
    def dcp_optimized(max_gap_size: float = DEFAULT_MAX_GAP_SIZE) -> DCPOptimizedConstructor:
        return DCPOptimizedConstructor(max_gap_size)

    @staticmethod
    def default() -> ReaderFactory:
        return SequentialS3Reader

    @staticmethod
    def get_reader_type_string(constructor: Optional[ReaderFactory]) -> str:
        """"sequential", "range_based", "dcp_optimized" or "unknown" (None: the
        default's)."""
        if constructor is None or constructor is SequentialS3Reader:
            return "sequential"
        if isinstance(constructor, DCPOptimizedConstructor):
            return "dcp_optimized"
        if isinstance(constructor, _RangedFactory):
            return "range_based"
        return "unknown"
