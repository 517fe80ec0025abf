"""The module path of s3torchconnector.s3writer, for code importing from there
(``from s3torchconnector.s3writer import S3Writer``)."""
from .writer import S3Writer

__all__ = ["S3Writer"]
