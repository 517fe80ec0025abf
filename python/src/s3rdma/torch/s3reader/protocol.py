"""The module path of s3torchconnector.s3reader.protocol, for code importing from there
(``from s3torchconnector.s3reader.protocol import S3ReaderConstructorProtocol``)."""
from . import DCPS3ReaderConstructorProtocol, S3ReaderConstructorProtocol

__all__ = ["S3ReaderConstructorProtocol", "DCPS3ReaderConstructorProtocol"]
