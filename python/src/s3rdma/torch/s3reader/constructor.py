"""The module path of s3torchconnector.s3reader.constructor, for code importing from there
(``from s3torchconnector.s3reader.constructor import S3ReaderConstructor``)."""
from ..reader import DCPOptimizedConstructor, S3ReaderConstructor

__all__ = ["S3ReaderConstructor", "DCPOptimizedConstructor"]
