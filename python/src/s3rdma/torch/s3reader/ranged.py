"""The module path of s3torchconnector.s3reader.ranged, for code importing from there
(``from s3torchconnector.s3reader.ranged import RangedS3Reader``)."""
from ..reader import RangedS3Reader

__all__ = ["RangedS3Reader"]
