"""The module path of s3torchconnector._s3client.s3client_config, for code importing from there
(``from s3torchconnector._s3client.s3client_config import S3ClientConfig``)."""
from .._client import S3ClientConfig

__all__ = ["S3ClientConfig"]
