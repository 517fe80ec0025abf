"""The module path of s3torchconnector.s3reader.sequential, for code importing from there
(``from s3torchconnector.s3reader.sequential import SequentialS3Reader``)."""
from ..reader import SequentialS3Reader

__all__ = ["SequentialS3Reader"]
