"""The module path of s3torchconnector._s3client, for code importing from there
(``from s3torchconnector._s3client import S3ClientConfig``)."""
from .._client import S3ClientConfig
from ._s3client import S3Client

__all__ = ["S3ClientConfig", "S3Client"]
