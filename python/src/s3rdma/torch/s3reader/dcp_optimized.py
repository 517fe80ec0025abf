"""The module path of s3torchconnector.s3reader.dcp_optimized, for code importing from there
(``from s3torchconnector.s3reader.dcp_optimized import DCPOptimizedS3Reader``)."""
from ..reader import DCPOptimizedS3Reader

__all__ = ["DCPOptimizedS3Reader"]
