"""The module path of s3torchconnector.s3iterable_dataset, for code importing from there
(``from s3torchconnector.s3iterable_dataset import S3IterableDataset``)."""
from .datasets import S3IterableDataset

__all__ = ["S3IterableDataset"]
