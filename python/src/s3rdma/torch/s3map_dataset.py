"""The module path of s3torchconnector.s3map_dataset, for code importing from there
(``from s3torchconnector.s3map_dataset import S3MapDataset``)."""
from .datasets import S3MapDataset

__all__ = ["S3MapDataset"]
