"""s3rdma.torch.dcp: s3torchconnector.dcp's names (storage for
torch.distributed.checkpoint and the prefix strategies); see s3_file_system.py."""
from .s3_file_system import S3FileSystem, S3StorageReader, S3StorageWriter
from .s3_prefix_strategy import (BinaryPrefixStrategy, DefaultPrefixStrategy,
                                 HexPrefixStrategy, NumericPrefixStrategy,
                                 RoundRobinPrefixStrategy, S3PrefixStrategyBase)

__all__ = [
    "S3FileSystem", "S3StorageReader", "S3StorageWriter", "S3PrefixStrategyBase",
    "DefaultPrefixStrategy", "NumericPrefixStrategy", "BinaryPrefixStrategy",
    "HexPrefixStrategy", "RoundRobinPrefixStrategy",
]
