"""s3torchconnector.s3reader's names, for code that imports them from there
(``from s3torchconnector.s3reader import S3ReaderConstructorProtocol``); the readers
themselves are in reader.py, the constructor protocols in protocol.py."""
from ..reader import (DCPOptimizedConstructor, DCPOptimizedS3Reader, RangedS3Reader, S3Reader,
                      S3ReaderConstructor, SequentialS3Reader)
from .protocol import DCPS3ReaderConstructorProtocol, S3ReaderConstructorProtocol

__all__ = [
    "S3Reader", "S3ReaderConstructor", "SequentialS3Reader", "RangedS3Reader",
    "DCPOptimizedConstructor", "DCPOptimizedS3Reader", "S3ReaderConstructorProtocol",
    "DCPS3ReaderConstructorProtocol",
]
