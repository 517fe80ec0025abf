"""S3Client: s3torchconnector's direct client (``from s3torchconnector._s3client import
S3Client``), over the process's s3rdma.Client.

    s3_client = S3Client(region="us-east-1")
    writer = s3_client.put_object(bucket="b", key="k"); writer.write(data); writer.close()
    data = s3_client.get_object(bucket="b", key="k").read()

Each process opens its own s3rdma.Client on first use (ClientHolder), so an S3Client
passes to DataLoader workers as s3torchconnector's does. ``user_agent`` (a UserAgent,
_user_agent.py) gives user_agent_prefix and is not sent (libs3rdma names itself);
put_object's ``storage_class`` becomes the object's x-amz-storage-class (s3rdmad keeps
and serves every object alike, a class being a label). head_object and
list_objects give each object's ``storage_class``, as s3torchconnector's results do.
"""
from typing import Any, Iterator, List, NamedTuple, Optional

from ...client import ObjectEntry, ObjectInfo
from .._client import ClientHolder, S3ClientConfig
from .._user_agent import UserAgent
from ..reader import ReaderFactory, S3Reader, S3ReaderConstructor
from ..writer import S3Writer


class ListObjectResult(NamedTuple):
    """One ListObjectsV2 page, with s3torchconnector's field names: ``object_info``
    (entries with key, size, etag, last_modified, storage_class) and ``common_prefixes``."""
    object_info: List[ObjectEntry]
    common_prefixes: List[str]


class S3Client:
    def __init__(self, region: Optional[str] = None, *, endpoint: Optional[str] = None,
                 user_agent: Optional[UserAgent] = None,
                 s3client_config: Optional[S3ClientConfig] = None):
        self._region = region
        self._s3client_config = s3client_config or S3ClientConfig()
        self._user_agent = user_agent or UserAgent()
        self._holder = ClientHolder(region, endpoint, s3client_config)

    @property
    def region(self) -> Optional[str]:
        return self._region

    @property
    def s3client_config(self) -> S3ClientConfig:
        return self._s3client_config

    @property
    def user_agent_prefix(self) -> str:
        return self._user_agent.prefix

    def get_object(self, bucket: str, key: str, *, object_info: Any = None,
                   reader_constructor: Optional[ReaderFactory] = None) -> S3Reader:
        """A reader of bucket/key (the default constructor's: sequential). object_info,
        from a listing or head_object, gives the size and saves a HEAD. A missing
        object raises S3Exception (NoSuchKey) at the first read, seek or size."""
        make = reader_constructor or S3ReaderConstructor.default()
        size = getattr(object_info, "size", None)
        return make(self._holder.client, bucket, key, size)

    def put_object(self, bucket: str, key: str, storage_class: Optional[str] = None) -> S3Writer:
        """A writer that becomes bucket/key (of storage_class, when given) when closed."""
        return S3Writer(self._holder.client, bucket, key, self._s3client_config.part_size,
                        storage_class=storage_class)

    def list_objects(self, bucket: str, prefix: str = "", delimiter: str = "",
                     max_keys: int = 1000) -> Iterator[ListObjectResult]:
        """The listing as pages of at most max_keys (1 to 1000), each fetched when the
        previous one is consumed."""
        if not 1 <= max_keys <= 1000:
            raise ValueError(f"s3rdma.torch: max_keys {max_keys} is outside 1..1000")
        for page in self._holder.listing_client.list_objects(
                bucket, prefix=prefix, delimiter=delimiter or None, page_size=max_keys):
            yield ListObjectResult(page.objects, page.prefixes)

    def head_object(self, bucket: str, key: str) -> ObjectInfo:
        return self._holder.client.head_object(bucket, key)

    def delete_object(self, bucket: str, key: str) -> None:
        self._holder.client.delete_object(bucket, key)

    def copy_object(self, src_bucket: str, src_key: str, dst_bucket: str, dst_key: str) -> None:
        self._holder.client.copy_object(src_bucket, src_key, dst_bucket, dst_key)
