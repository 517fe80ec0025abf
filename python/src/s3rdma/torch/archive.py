"""torch.load of a checkpoint fetched whole into one block of new memory, its tensors
left in that memory: no copy of their bytes after they landed (S3Checkpoint.load).

torch.save writes a zip archive whose records are stored uncompressed: ``PREFIX/data.pkl``
(the pickled structure) and one ``PREFIX/data/KEY`` per storage. torch.load copies each
storage record into new memory (the kernel zeroes those pages first: most of a load's
time here, docs/benchmarks.md). This module instead hands torch's own unpickling
(``torch.serialization._load``, which asks its zip reader for ``get_record`` and
``get_storage_from_record`` only) an archive whose storage records are tensors made with
``torch.frombuffer`` over the fetched block. Each tensor keeps the block alive.

That is a private torch function: anything it asks of the archive beyond those calls,
another signature, or an archive this module does not read (compressed records,
TorchScript, the legacy non-zip format) makes load() fall back to torch.load over the
same bytes, still without a second GET.

``torch.load(reader)`` of an S3Reader (the call s3torchconnector's users write) goes the
same way: importing this module replaces torch.serialization's ``_open_zipfile_reader``
(the class torch.load opens a zip checkpoint with, looked up at each call) by a subclass
that, given an S3Reader at its start, fetches the whole object (S3Reader.whole) and
returns this archive over it, and opens anything else as torch does. Read through the
file interface instead, torch.load would copy each storage into new memory it allocates
(readinto), and faulting in that memory is most of such a load's time
(docs/benchmarks.md). What this archive does not serve is served by torch's own zip
reader over the same fetched bytes.
"""
import inspect
import pickle
import struct
import zipfile
from typing import Any, Callable, Dict, Optional, Tuple

import torch
import torch.serialization

from ..client import Client
from .reader import S3Reader, SequentialS3Reader, fetch_chunked

_LOCAL_HEADER = struct.Struct("<4s5H3L2H")  # a zip local file header (30 bytes)


class _Unsupported(Exception):
    """torch asked the archive for something it does not serve."""


class _Archive:
    """The zip reader torch.serialization._load takes, over data (the whole archive in
    memory). Raises ValueError on an archive it does not read (see the module comment)."""

    def __init__(self, data: memoryview, source: SequentialS3Reader, delegate: bool = False):
        """delegate: anything this class does not serve is served by torch's zip reader
        over source (made on first need) instead of raising _Unsupported."""
        self._data, self._source, self._delegate = data, source, delegate
        self._torch_reader: Optional[Any] = None
        self._records: Dict[str, Tuple[int, int]] = {}  # name -> (offset, size)
        with zipfile.ZipFile(source) as zf:  # reads the central directory only
            for info in zf.infolist():
                if info.compress_type != zipfile.ZIP_STORED:
                    raise ValueError(f"{info.filename}: compressed")
                sig, *_, n_name, n_extra = _LOCAL_HEADER.unpack_from(data, info.header_offset)
                start = info.header_offset + _LOCAL_HEADER.size + n_name + n_extra
                if sig != b"PK\x03\x04" or start + info.file_size > len(data):
                    raise ValueError(f"{info.filename}: bad local header")
                self._records[info.filename] = (start, info.file_size)
        first = next(iter(self._records), "")
        self._prefix = first.split("/", 1)[0] + "/" if "/" in first else ""
        if not self.has_record("data.pkl") or self.has_record("constants.pkl"):
            raise ValueError("not an eager-mode torch.save archive")

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_") or not self._delegate:
            raise _Unsupported(name)
        if self._torch_reader is None:
            self._source.seek(0)
            self._torch_reader = torch._C.PyTorchFileReader(self._source)
        return getattr(self._torch_reader, name)

    def get_all_records(self) -> list:
        """Every record's name without the archive's prefix, as torch's reader gives."""
        return [name[len(self._prefix):] for name in self._records]

    def has_record(self, name: str) -> bool:
        return self._prefix + name in self._records

    def _span(self, name: str) -> Tuple[int, int]:
        return self._records[self._prefix + name]

    def get_record(self, name: str) -> bytes:
        start, size = self._span(name)
        return bytes(self._data[start:start + size])

    def get_storage_from_record(self, name: str, nbytes: int, _dtype: Any) -> torch.Tensor:
        """A uint8 tensor on the record's bytes in the block (torch takes its storage)."""
        start, size = self._span(name)
        if nbytes > size:
            raise ValueError(f"s3rdma.torch: record {name} holds {size} bytes, not {nbytes}")
        if nbytes == 0:
            return torch.empty(0, dtype=torch.uint8)
        return torch.frombuffer(self._data, dtype=torch.uint8, count=nbytes, offset=start)


def _load_fits() -> bool:
    """Whether torch.serialization._load takes (zip_file, map_location, pickle_module,
    ...) as in the torch versions this module was written against."""
    fn = getattr(torch.serialization, "_load", None)
    try:
        params = list(inspect.signature(fn).parameters)[:3] if fn else []
    except (TypeError, ValueError):
        return False
    return params == ["zip_file", "map_location", "pickle_module"]


_LOAD_FITS = _load_fits()


def _opened(reader: S3Reader) -> Any:
    """The zip reader torch.load gets for reader (see the module comment): an _Archive
    over the whole object, or torch's own reader over the same bytes when the object
    is not an archive _Archive reads."""
    data = reader.whole()
    source = SequentialS3Reader(reader._client, reader.bucket, reader.key, data=data)
    try:
        return _Archive(data, source, delegate=True)
    except (zipfile.BadZipFile, ValueError, struct.error):
        return torch._C.PyTorchFileReader(source)


def _hook_torch_load() -> None:
    """Installs _ZipReader as torch.serialization._open_zipfile_reader (once), when this
    torch opens zip checkpoints as the torch versions this module was written against
    do; otherwise torch.load(reader) reads through the file interface."""
    ser = torch.serialization
    base = getattr(ser, "_open_zipfile_reader", None)
    opener = getattr(ser, "_opener", None)
    if (not _LOAD_FITS or not isinstance(base, type) or not isinstance(opener, type) or
            not issubclass(base, opener) or getattr(base, "_s3rdma", False)):
        return
    try:  # torch's __init__ names its class through the module global: not callable
        # once that is replaced, so _ZipReader does what it does, which must be this
        source = inspect.getsource(base.__init__)
    except (OSError, TypeError):
        return
    if "torch._C.PyTorchFileReader(name_or_buffer)" not in source:
        return

    class _ZipReader(base):  # type: ignore[misc, valid-type]
        """torch.load's zip reader: an _Archive for an S3Reader at its start, torch's
        own reader for anything else."""
        _s3rdma = True

        def __init__(self, name_or_buffer: Any) -> None:
            if isinstance(name_or_buffer, S3Reader) and name_or_buffer.tell() == 0:
                opener.__init__(self, _opened(name_or_buffer))
            else:
                opener.__init__(self, torch._C.PyTorchFileReader(name_or_buffer))

    ser._open_zipfile_reader = _ZipReader


def load(client: Client, bucket: str, key: str, chunk: int, take: Callable[[int], memoryview],
         map_location: Any = None, **pickle_load_args: Any) -> Any:
    """What torch.load of bucket/key returns; see the module comment. The block comes
    from take(size); the tensors hold that very memoryview (never a slice of it), so
    it dies with the last of them (what BlockCache waits for)."""
    data = fetch_chunked(client, bucket, key, chunk, take)
    source = SequentialS3Reader(client, bucket, key, data=data)
    pickle_load_args.setdefault("encoding", "utf-8")  # as torch.load does
    if _LOAD_FITS and "weights_only" not in pickle_load_args:
        try:
            archive = _Archive(data, source)
        except (zipfile.BadZipFile, ValueError, struct.error):
            archive = None
        if archive is not None:
            try:
                return torch.serialization._load(archive, map_location, pickle,
                                                 **pickle_load_args)
            except _Unsupported:
                pass
    source.seek(0)
    return torch.load(source, map_location, **pickle_load_args)


_hook_torch_load()
