"""The module path of s3torchconnector.lightning, for code importing from there
(``from s3torchconnector.lightning import S3LightningCheckpoint``)."""
from .s3_lightning_checkpoint import S3LightningCheckpoint

__all__ = ["S3LightningCheckpoint"]
