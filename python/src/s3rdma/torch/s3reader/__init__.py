"""s3torchconnector.s3reader's names, for code that imports them from there
(``from s3torchconnector.s3reader import S3ReaderConstructorProtocol``); the readers
themselves are in reader.py. A reader constructor here is any callable
``(client, bucket, key, size=None) -> S3Reader`` (ReaderFactory), not
s3torchconnector's ``(bucket, key, get_object_info, get_stream)``."""
from ..reader import (DCPOptimizedConstructor, DCPOptimizedS3Reader, RangedS3Reader,
                     ReaderFactory, S3Reader, S3ReaderConstructor, SequentialS3Reader)

S3ReaderConstructorProtocol = ReaderFactory
DCPS3ReaderConstructorProtocol = DCPOptimizedConstructor

__all__ = [
    "S3Reader", "S3ReaderConstructor", "SequentialS3Reader", "RangedS3Reader",
    "DCPOptimizedConstructor", "DCPOptimizedS3Reader", "S3ReaderConstructorProtocol",
    "DCPS3ReaderConstructorProtocol",
]
