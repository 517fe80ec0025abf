"""What every s3rdma.torch class shares: S3ClientConfig, s3:// URIs, and the one
s3rdma.Client a dataset, checkpoint or storage reader/writer opens per process.

Connection settings resolve exactly as s3rdma.Client's do (s3rdma.config): the
arguments, then the AWS environment, then the ~/.aws profile. ``region`` and
``endpoint`` are the arguments s3torchconnector takes; everything s3rdma adds
(transport, RDMA endpoint, credentials, any libs3rdma setting) goes in
S3ClientConfig.
"""
import os
from dataclasses import dataclass, field
from typing import Any, Dict, Iterator, NamedTuple, Optional, Tuple

from ..client import Client
from ..errors import ConnectionFailed

MiB = 1024 * 1024


@dataclass(frozen=True)
class S3ClientConfig:
    """Client settings, with s3torchconnector's field names first.

    Args:
        part_size: multipart part size for checkpoint uploads and ranged-read chunk
            of checkpoint loads (5 MiB to 5 GiB; 8 MiB by default).
        profile: the ~/.aws profile (default ``AWS_PROFILE``, then ``default``).
        throughput_target_gbps, max_attempts, force_path_style, requester_pays:
            accepted so s3torchconnector code runs unchanged; libs3rdma sizes its own
            transfers, retries by its own rules (docs/client.md) and always addresses
            buckets path-style, so they change nothing.
        unsigned: anonymous requests; s3rdma always signs, so True is refused.
        transport: ``"auto"`` (default), ``"native"``, ``"token"`` or ``"http"``, as
            s3rdma.Client's.
        rdma_endpoint: the RDMA session endpoint (``"host:9100"``); default each HTTP
            host on port 9100.
        access_key, secret_key: default from the environment or the profile.
        options: any other s3rdma.Client keyword (``rdma_threshold``, ``fallback``,
            ``max_workers``, ``ca_bundle``, libs3rdma settings by name).
    """
    throughput_target_gbps: float = 10.0
    part_size: int = 8 * MiB
    unsigned: bool = False
    force_path_style: bool = False
    max_attempts: int = 10
    profile: Optional[str] = None
    requester_pays: bool = False
    transport: str = "auto"
    rdma_endpoint: Optional[str] = None
    access_key: Optional[str] = None
    secret_key: Optional[str] = None
    options: Dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.unsigned:
            raise ValueError("s3rdma.torch: unsigned requests are not supported "
                             "(every s3rdma request is signed)")
        if not 5 * MiB <= self.part_size <= 5 * 1024 * MiB:
            raise ValueError(f"s3rdma.torch: part_size {self.part_size} is outside "
                             "5 MiB..5 GiB")


def make_client(region: Optional[str], endpoint: Optional[str],
                config: Optional[S3ClientConfig]) -> Client:
    """The s3rdma.Client for these settings (endpoint and region None: from the
    environment or profile, as s3rdma.Client resolves them)."""
    cfg = config or S3ClientConfig()
    kw = dict(cfg.options)
    kw.setdefault("quiet", True)
    return Client(endpoint=endpoint, rdma_endpoint=cfg.rdma_endpoint,
                  access_key=cfg.access_key, secret_key=cfg.secret_key, region=region,
                  transport=cfg.transport, profile=cfg.profile, part_size=cfg.part_size,
                  **kw)


class ClientHolder:
    """Opens the client on first use and never pickles it: a DataLoader worker
    started by spawn or forkserver opens its own; a forked one keeps the parent's,
    which libs3rdma makes usable in the child (it re-creates its session there)."""

    def __init__(self, region: Optional[str], endpoint: Optional[str],
                 config: Optional[S3ClientConfig]):
        self.region, self.endpoint, self.config = region, endpoint, config
        self._client: Optional[Client] = None

    @property
    def client(self) -> Client:
        if self._client is None:
            self._client = make_client(self.region, self.endpoint, self.config)
        return self._client

    def __getstate__(self) -> Dict[str, Any]:
        return dict(self.__dict__, _client=None)


class ObjectRef(NamedTuple):
    """One object of a dataset: its bucket, key and, when a listing gave it, size."""
    bucket: str
    key: str
    size: Optional[int]


def parse_s3_uri(uri: str) -> Tuple[str, str]:
    """("bucket", "key/prefix") from "s3://bucket/key/prefix" (the key may be empty)."""
    if not isinstance(uri, str) or not uri.startswith("s3://"):
        raise ValueError(f"s3rdma.torch: {uri!r} is not an s3://bucket/key URI")
    bucket, _, key = uri[5:].partition("/")
    if not bucket:
        raise ValueError(f"s3rdma.torch: {uri!r} names no bucket")
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
