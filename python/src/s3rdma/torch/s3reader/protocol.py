"""s3torchconnector.s3reader.protocol's names: what a reader constructor is, as
runtime-checkable protocols (``isinstance(c, DCPS3ReaderConstructorProtocol)`` is how
s3torchconnector's S3StorageReader tells a DCP-optimized one apart). A constructor
here is called ``(client, bucket, key, size=None)``, not s3torchconnector's
``(bucket, key, get_object_info, get_stream)``; isinstance checks only that the
methods exist, so any callable is an S3ReaderConstructorProtocol."""
from typing import Any, Optional, Protocol, runtime_checkable

from ...client import Client
from ..reader import S3Reader


@runtime_checkable
class S3ReaderConstructorProtocol(Protocol):
    def __call__(self, client: Client, bucket: str, key: str,
                 size: Optional[int] = None) -> S3Reader:
        ...


@runtime_checkable
class DCPS3ReaderConstructorProtocol(Protocol):
    def __call__(self, client: Client, bucket: str, key: str,
                 size: Optional[int] = None) -> S3Reader:
        ...

    def set_item_ranges_by_file(self, plan_items: Any, storage_data: Any,
                                base_path: Any) -> None:
        ...


__all__ = ["S3ReaderConstructorProtocol", "DCPS3ReaderConstructorProtocol"]
