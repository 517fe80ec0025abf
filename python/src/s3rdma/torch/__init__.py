"""s3rdma.torch: s3torchconnector's API over s3rdma (switch by changing the import).

    from s3rdma.torch import S3MapDataset, S3IterableDataset, S3Checkpoint
    from s3rdma.torch.dcp import S3StorageWriter, S3StorageReader
    from s3rdma.torch.lightning import S3LightningCheckpoint
    from s3rdma.torch._s3client import S3Client

Needs torch (Debian's python3-torch); nothing else in s3rdma imports it. Connection
settings: ``endpoint`` and ``region`` as in s3torchconnector, the rest (transport,
RDMA endpoint, credentials, libs3rdma settings) in S3ClientConfig; unset ones come
from the AWS environment and profile as for s3rdma.Client. See python/README.md
("s3torchconnector name -> s3rdma.torch").
"""
from .. import __version__
from ..errors import S3Error as S3Exception
from ._client import S3ClientConfig, parse_s3_uri
from .checkpoint import S3Checkpoint
from .datasets import S3IterableDataset, S3MapDataset
from .reader import (DCPOptimizedConstructor, RangedS3Reader, S3Reader, S3ReaderConstructor,
                     SequentialS3Reader)
from .writer import S3Writer

__all__ = [
    "S3IterableDataset", "S3MapDataset", "S3Checkpoint", "S3Reader", "S3ReaderConstructor",
    "SequentialS3Reader", "RangedS3Reader", "DCPOptimizedConstructor", "S3Writer",
    "S3Exception", "S3ClientConfig", "parse_s3_uri", "__version__",
]
