"""What every s3rdma.torch class shares: S3ClientConfig, s3:// URIs, and the one
s3rdma.Client a dataset, checkpoint or storage reader/writer opens per process.

Connection settings resolve exactly as s3rdma.Client's do (s3rdma.config): the
arguments, then the AWS environment, then the ~/.aws profile. ``region`` and
``endpoint`` are the arguments s3torchconnector takes; everything s3rdma adds
(transport, RDMA endpoint, credentials, any libs3rdma setting) goes in
S3ClientConfig. The transport and RDMA endpoint left unset there come from
``S3RDMA_TRANSPORT`` / ``S3RDMA_RDMA_ENDPOINT`` or the profile's
``s3rdma_transport`` / ``s3rdma_rdma_endpoint``, as for the s3rdma CLI, so code
written for s3torchconnector runs over RDMA with no change but its import.
"""
import ctypes
import mmap
import os
import threading
import weakref
from dataclasses import dataclass, field
from typing import Any, Dict, Iterator, NamedTuple, Optional, Tuple

from ..client import Client
from ..config import aws_settings
from ..errors import ConnectionFailed

MiB = 1024 * 1024


@dataclass(frozen=True)
class S3ClientConfig:
    """Client settings, with s3torchconnector's field names first.

    Args:
        part_size: multipart part size for checkpoint uploads and ranged-read chunk
            of checkpoint loads (5 MiB to 5 GiB; 32 MiB by default, where
            s3torchconnector has 8: s3rdmad writes each part to a file of its own, and
            in fsync mode syncs each, so 8 MiB parts cost a 512 MiB save 64 syncs and
            halved its rate here, docs/benchmarks.md).
        profile: the ~/.aws profile (default ``AWS_PROFILE``, then ``default``).
        throughput_target_gbps, max_attempts, force_path_style, requester_pays:
            accepted so s3torchconnector code runs unchanged; libs3rdma sizes its own
            transfers, retries by its own rules (docs/client.md) and always addresses
            buckets path-style, so they change nothing.
        unsigned: s3torchconnector's anonymous requests (public buckets): nothing is
            signed and no credentials are needed (s3rdma.Client's ``unsigned``). The
            server opens no RDMA session without credentials, so they go over HTTP; a
            transport left unset is then ``"auto"`` (which means HTTP) whatever
            ``S3RDMA_TRANSPORT`` or the profile say, and ``transport="native"`` or
            ``"token"`` is an InvalidArgument error. A private object answers
            S3Exception (AccessDenied).
        transport: ``"auto"``, ``"native"``, ``"token"`` or ``"http"``, as
            s3rdma.Client's; default ``S3RDMA_TRANSPORT``, the profile's
            ``s3rdma_transport``, then ``"auto"``.
        rdma_endpoint: the RDMA session endpoint (``"host:9100"``); default
            ``S3RDMA_RDMA_ENDPOINT``, the profile's ``s3rdma_rdma_endpoint``, then each
            HTTP host on port 9100.
        access_key, secret_key: default from the environment or the profile.
        options: any other s3rdma.Client keyword (``rdma_threshold``, ``fallback``,
            ``max_workers``, ``ca_bundle``, libs3rdma settings by name). Left out of
            the hash, so a config is hashable (a dict key, an lru_cache argument) as
            s3torchconnector's frozen one is; equality still compares it.
    """
    throughput_target_gbps: float = 10.0
    part_size: int = 32 * MiB
    unsigned: bool = False
    force_path_style: bool = False
    max_attempts: int = 10
    profile: Optional[str] = None
    requester_pays: bool = False
    transport: Optional[str] = None
    rdma_endpoint: Optional[str] = None
    access_key: Optional[str] = None
    secret_key: Optional[str] = None
    options: Dict[str, Any] = field(default_factory=dict, hash=False)

    def __post_init__(self) -> None:
        if self.requester_pays and self.unsigned:
            raise ValueError("requester_pays=True requires authenticated requests and "
                             "cannot be combined with unsigned=True")
        if not 5 * MiB <= self.part_size <= 5 * 1024 * MiB:
            raise ValueError(f"s3rdma.torch: part_size {self.part_size} is outside "
                             "5 MiB..5 GiB")


def make_client(region: Optional[str], endpoint: Optional[str],
                config: Optional[S3ClientConfig], transport: Optional[str] = None) -> Client:
    """The s3rdma.Client for these settings (endpoint and region None: from the
    environment or profile, as s3rdma.Client resolves them; transport and RDMA
    endpoint None: see the module comment); transport, when given, instead of the
    config's."""
    cfg = config or S3ClientConfig()
    kw = dict(cfg.options)
    kw.setdefault("quiet", True)
    found = aws_settings(cfg.profile, keys=False) if not (transport or cfg.transport) or \
        not cfg.rdma_endpoint else {}
    # An anonymous client has HTTP only: a transport set for signed clients (the
    # environment's, the profile's) is not for it.
    found_transport = None if cfg.unsigned else found.get("transport")
    return Client(endpoint=endpoint,
                  rdma_endpoint=cfg.rdma_endpoint or found.get("rdma_endpoint"),
                  access_key=cfg.access_key, secret_key=cfg.secret_key, region=region,
                  transport=transport or cfg.transport or found_transport or "auto",
                  profile=cfg.profile, part_size=cfg.part_size, unsigned=cfg.unsigned, **kw)


class ClientHolder:
    """Opens the clients on first use and never pickles them: a DataLoader worker
    started by spawn or forkserver opens its own; a forked one keeps the parent's.

    Listings go through a second client over HTTP (listing_client): a listing gains
    nothing from RDMA, and a process that has listed a dataset but read nothing has
    not started UCX, so DataLoader workers forked from it open RDMA sessions of their
    own. A child of a process that started UCX cannot (docs/client.md, "Fork"): its
    requests go over HTTP, or fail when the client allows no fallback."""

    def __init__(self, region: Optional[str], endpoint: Optional[str],
                 config: Optional[S3ClientConfig]):
        self.region, self.endpoint, self.config = region, endpoint, config
        self._client: Optional[Client] = None
        self._lister: Optional[Client] = None

    @property
    def client(self) -> Client:
        if self._client is None:
            self._client = make_client(self.region, self.endpoint, self.config)
        return self._client

    @property
    def listing_client(self) -> Client:
        if self._lister is None:
            self._lister = make_client(self.region, self.endpoint, self.config,
                                       transport="http")
        return self._lister

    def __getstate__(self) -> Dict[str, Any]:
        return dict(self.__dict__, _client=None, _lister=None)


class ObjectRef(NamedTuple):
    """One object of a dataset: its bucket, key and, when a listing gave it, size."""
    bucket: str
    key: str
    size: Optional[int]


def parse_s3_uri(uri: str) -> Tuple[str, str]:
    """("bucket", "key/prefix") from "s3://bucket/key/prefix" (the key may be empty)."""
    if not isinstance(uri, str) or not uri.startswith("s3://"):
        raise ValueError("Only s3:// URIs are supported")  # s3torchconnector's messages
    bucket, _, key = uri[5:].partition("/")
    if not bucket:
        raise ValueError("Bucket name must be non-empty")
    return bucket, key


def list_prefix(client: Client, uri: str) -> Iterator[ObjectRef]:
    """Every object under the URI's prefix, in key order, with its size."""
    bucket, prefix = parse_s3_uri(uri)
    for page in client.list_objects(bucket, prefix=prefix):
        for o in page.objects:
            yield ObjectRef(bucket, o.key, o.size)


def refs_from_uris(uris: Any) -> list:
    """ObjectRefs (size unknown) for one URI or an iterable of them."""
    if isinstance(uris, (str, os.PathLike)):
        uris = [uris]
    return [ObjectRef(*parse_s3_uri(str(u)), None) for u in uris]


def alloc(client: Client, size: int) -> memoryview:
    """size bytes of memory registered with the client's RDMA session, or of plain
    memory when the client can have no session (a process forked from one that
    started UCX cannot run UCX, docs/client.md "Fork": its requests go over HTTP,
    where registration buys nothing)."""
    if size == 0:
        return memoryview(bytearray(0))
    try:
        return client.allocate_buffer(size)
    except ConnectionFailed:
        return memoryview(bytearray(size))


def ranges_one_by_one(client: Client) -> bool:
    """Whether ranged GETs into memory not from allocate_buffer go best one after
    another from the calling thread: over a native session, where on a same-host
    session libs3rdma has one bounce buffer per client (docs/client.md "Registered
    memory"), so ranges in flight at once leave all but one to UCX's slower software
    RMA (1.7-1.9x for model weights into their tensors, 5x for a checkpoint into new
    memory, docs/benchmarks.md)."""
    return client.transport == "native" or (client.transport == "auto" and
                                            client.rdma_connected)


def fresh_block(size: int) -> memoryview:
    """size bytes of new private anonymous memory in 4 KiB pages: the block a whole
    object lands in when its tensors keep it (S3Checkpoint.load). New memory is paid
    for when first written: the kernel faults it in and zeroes it; a load hands most
    of that to a Prefault thread (fetch_chunked). Not shared memory from
    allocate_buffer, which a child forked later would share with this process, nor
    memory advised for huge pages: on this VM a new huge page comes from the 2 MiB
    blocks the balloon driver gave back to the host, and faulting it in cost a
    new-process load 1.4-2.1 CPU s/GB against 0.65-1.1 for 4 KiB pages, which come
    from memory the guest kept (docs/benchmarks.md, "A checkpoint load in a new
    process"). Unmapped when the last view of it goes."""
    if size == 0:
        return memoryview(bytearray(0))
    return memoryview(mmap.mmap(-1, size, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS))


_libc = ctypes.CDLL(None, use_errno=True)
_libc.madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
_libc.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p]
_MADV_POPULATE_WRITE = 23  # Linux 5.14: fault pages in writable, leaving their bytes alone
_PAGE = mmap.PAGESIZE


class Prefault:
    """Faults a block's pages in from its far end on a thread of its own, while the
    caller fills it from its start, so that the kernel's zeroing of new memory (on this
    host most of a load into new memory, docs/benchmarks.md) runs on another core than
    the copy into it. The two meet where the caller has got to: advance(upto) says the
    caller is filling the block up to byte upto, and the thread touches nothing below
    it. A fault changes no byte (MADV_POPULATE_WRITE), so pages either side faults
    first keep what was written. A block whose last page is in memory already (one
    used before, such as BlockCache's registered block, which the server writes
    through its own mapping) is left alone: faulting its pages into this process's
    page tables would cost a fault each for nothing. Without MADV_POPULATE_WRITE (kernels before 5.14) the thread stops at
    once: the caller faults every page, as without this class. Use as a context
    manager; leaving it stops and joins the thread."""

    STEP = 8 * MiB  # faulted in per madvise call, between looks at the caller's progress

    def __init__(self, block: memoryview):
        self._size = len(block)
        anchor = ctypes.c_char.from_buffer(block) if self._size else None
        self._addr = ctypes.addressof(anchor) if anchor is not None else 0
        del anchor  # the caller keeps block alive while this runs
        self._front = 0
        self._thread = threading.Thread(target=self._run, name="s3rdma-prefault",
                                        daemon=True)

    def advance(self, upto: int) -> None:
        self._front = upto

    def _run(self) -> None:
        end = self._addr + self._size
        last = (end - 1) - (end - 1) % _PAGE
        here = ctypes.c_ubyte(0)
        if _libc.mincore(last, 1, ctypes.byref(here)) != 0 or here.value & 1:
            return
        while True:
            start = max(end - self.STEP, self._addr + self._front)
            start -= start % _PAGE
            if start < self._addr + self._front or start >= end:
                return  # met the caller: what lies below is its to fault
            if _libc.madvise(start, end - start, _MADV_POPULATE_WRITE) != 0:
                return
            end = start

    def __enter__(self) -> "Prefault":
        if self._size > 0:
            self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._front = self._size
        if self._thread.is_alive():
            self._thread.join()


class BlockCache:
    """Memory for whole checkpoints that is used again: keeps the last block whose views
    all died for the next take() that fits it (at least the size asked, at most twice).
    Blocks are registered with the RDMA session (alloc): a GET into one is written in
    place by the server, with no copy out of libs3rdma's bounce buffer on the client, and
    memory used again is neither faulted in nor zeroed (docs/benchmarks.md: one copy
    per byte, the server's, against a copy on each side plus the first touch for
    fresh_block). The first load into a new block pays for it: on a same-host session it
    is shared memory the server faults in 4 KiB at a time. At most one block is kept,
    until the cache goes: the price is memory the size of the last checkpoint loaded,
    held while nothing uses it (and, registered, one of the session's 64 regions).
    Thread-safe; a pickled copy starts empty."""

    def __init__(self, holder: "ClientHolder") -> None:
        self._holder = holder
        self._lock = threading.Lock()
        self._spare: Optional[memoryview] = None

    def __getstate__(self) -> Dict[str, Any]:
        return {"_holder": self._holder}  # a copy (e.g. in a spawned worker) has no block

    def __setstate__(self, state: Dict[str, Any]) -> None:
        self.__init__(state["_holder"])  # type: ignore[misc]

    def take(self, size: int) -> memoryview:
        if size == 0:
            return memoryview(bytearray(0))
        with self._lock:
            block, self._spare = self._spare, None
        if block is None or not size <= len(block) <= 2 * size:
            block = None  # an unfit spare goes before the new block is made
            block = alloc(self._holder.client, size)
        view = block[:size]
        weakref.finalize(view, self._give, weakref.ref(self), block).atexit = False
        return view

    @staticmethod
    def _give(cache_ref: "weakref.ref[BlockCache]", block: memoryview) -> None:
        """The last view of block died: block becomes the spare (the older one, if
        any, is dropped), unless the cache itself is gone."""
        cache = cache_ref()
        if cache is None:
            return
        with cache._lock:
            cache._spare = block
