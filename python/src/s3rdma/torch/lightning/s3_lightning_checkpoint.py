"""S3LightningCheckpoint: s3torchconnector.lightning's CheckpointIO plugin over s3rdma.

    trainer = lightning.Trainer(plugins=[S3LightningCheckpoint("us-east-1")],
                                default_root_dir="s3://bucket/prefix/")

It subclasses Lightning's CheckpointIO (``lightning``, else ``pytorch_lightning``)
when one is installed; without either it is a plain class with the same methods
(s3torchconnector refuses to import then), usable on its own: save_checkpoint,
load_checkpoint, remove_checkpoint, teardown.
"""
from typing import Any, Dict, Optional

import torch

from .._client import S3ClientConfig, parse_s3_uri
from .._s3client import S3Client

try:
    from lightning.pytorch.plugins.io import CheckpointIO as _Base
except ImportError:
    try:
        from pytorch_lightning.plugins.io import CheckpointIO as _Base  # type: ignore
    except ImportError:
        _Base = object  # type: ignore


class S3LightningCheckpoint(_Base):  # type: ignore[misc, valid-type]
    """Lightning checkpoints as objects: each path is an s3:// URI (a str: a Path is
    a TypeError, as in s3torchconnector)."""

    def __init__(self, region: Optional[str] = None,
                 s3client_config: Optional[S3ClientConfig] = None,
                 endpoint: Optional[str] = None):
        self.region = region
        self._client = S3Client(region, endpoint=endpoint, s3client_config=s3client_config)

    def save_checkpoint(self, checkpoint: Dict[str, Any], path: str,
                        storage_options: Optional[Any] = None) -> None:
        """torch.save of checkpoint into the object (written whole when closed)."""
        bucket, key = parse_s3_uri(_checked(path))
        with self._client.put_object(bucket, key) as writer:
            torch.save(checkpoint, writer)

    def load_checkpoint(self, path: str, map_location: Optional[Any] = None,
                        weights_only: Optional[bool] = None) -> Dict[str, Any]:
        """torch.load of the object (weights_only passed on when given)."""
        bucket, key = parse_s3_uri(_checked(path))
        kw = {} if weights_only is None else {"weights_only": weights_only}
        with self._client.get_object(bucket, key) as reader:
            return torch.load(reader, map_location, **kw)

    def remove_checkpoint(self, path: str) -> None:
        bucket, key = parse_s3_uri(_checked(path))
        self._client.delete_object(bucket, key)

    def teardown(self) -> None:
        """Nothing to release: the client closes with the process."""


def _checked(path: Any) -> str:
    if not isinstance(path, str):
        raise TypeError(f"{type(path).__name__!r} is not a supported type for 'path'. "
                        "Must be a string formatted as an S3 uri.")
    return path
