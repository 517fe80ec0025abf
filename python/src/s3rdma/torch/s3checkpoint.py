"""The module path of s3torchconnector.s3checkpoint, for code importing from there
(``from s3torchconnector.s3checkpoint import S3Checkpoint``)."""
from .checkpoint import S3Checkpoint

__all__ = ["S3Checkpoint"]
