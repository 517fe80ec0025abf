"""The module path of s3torchconnector.s3reader.s3reader, for code importing from there
(``from s3torchconnector.s3reader.s3reader import S3Reader``)."""
from ..reader import S3Reader

__all__ = ["S3Reader"]
