"""Where each rank's data objects of a distributed checkpoint go under its path, as
s3torchconnector's prefix strategies name them: a strategy maps a rank to the start
of its objects' names (``"__3_"`` by default; ``"<prefix>/epoch_<n>/__3_"`` with
the numeric and round-robin strategies), which S3StorageWriter completes with the
save id and the object's number (``<start><save>_<n>.distcp``).

Spreading ranks over prefixes is what avoids S3's per-prefix request limits; s3rdmad
has none, so here the strategies only decide names.
"""
from abc import ABC, abstractmethod
from typing import List, Optional

import torch.distributed as dist


class S3PrefixStrategyBase(ABC):
    """A rank -> name-start mapping; subclasses implement generate_prefix."""

    def __init__(self) -> None:
        pass

    def __call__(self, rank: int) -> str:
        return self.generate_prefix(rank)

    @abstractmethod
    def generate_prefix(self, rank: int) -> str:
        """The start of rank's data object names, relative to the checkpoint path."""


class DefaultPrefixStrategy(S3PrefixStrategyBase):
    """``__<rank>_``: every object directly under the checkpoint path."""

    def generate_prefix(self, rank: int) -> str:
        return f"__{rank}_"


def _epoch_dir(epoch_num: Optional[int]) -> str:
    return f"epoch_{epoch_num}/" if epoch_num is not None else ""


class NumericPrefixStrategy(S3PrefixStrategyBase):
    """``<digits>/[epoch_<n>/]__<rank>_``: prefix_count prefixes (default the world
    size, 1 without torch.distributed), prefix i being i written in base with at
    least min_prefix_length digits, most significant digit last (so consecutive
    ranks differ in the first character). min_prefix_len is accepted as another name
    of min_prefix_length (s3torchconnector's README spells it so)."""

    def __init__(self, base: int, epoch_num: Optional[int] = None,
                 min_prefix_length: int = 10, prefix_count: Optional[int] = None,
                 *, min_prefix_len: Optional[int] = None):
        if min_prefix_len is not None:
            min_prefix_length = min_prefix_len
        if not isinstance(min_prefix_length, int) or min_prefix_length < 1:
            raise ValueError(f"Minimum prefix length must be positive, got {min_prefix_length}")
        if epoch_num is not None and not isinstance(epoch_num, int):
            raise ValueError(f"Epoch number must be None or an integer, got {epoch_num}")
        if prefix_count is not None and (not isinstance(prefix_count, int) or prefix_count < 1):
            raise ValueError(f"Prefix count must be a positive integer, got {prefix_count}")
        super().__init__()
        self.base = base
        self.epoch_num = epoch_num
        self.min_prefix_len = min_prefix_length
        if prefix_count is None:
            prefix_count = (dist.get_world_size()
                            if dist.is_available() and dist.is_initialized() else 1)
        self.prefix_count = prefix_count
        width = max(self._digits_for(prefix_count), min_prefix_length)
        self.prefix_map: List[str] = [self._format_number(i, width)[::-1]
                                      for i in range(prefix_count)]

    def _digits_for(self, count: int) -> int:
        """Digits in base needed to tell count prefixes apart."""
        n, span = 1, self.base
        while span < count:
            n, span = n + 1, span * self.base
        return n

    def _format_number(self, number: int, length: int) -> str:
        digits = "0123456789abcdefghijklmnopqrstuvwxyz"
        out = ""
        while number:
            number, d = divmod(number, self.base)
            out = digits[d] + out
        return out.rjust(length, "0")

    def generate_prefix(self, rank: int) -> str:
        return f"{self.prefix_map[rank % len(self.prefix_map)]}/{_epoch_dir(self.epoch_num)}__{rank}_"


class BinaryPrefixStrategy(NumericPrefixStrategy):
    """NumericPrefixStrategy in base 2."""

    def __init__(self, epoch_num: Optional[int] = None, min_prefix_length: int = 10,
                 prefix_count: Optional[int] = None, *, min_prefix_len: Optional[int] = None):
        super().__init__(2, epoch_num, min_prefix_length, prefix_count,
                         min_prefix_len=min_prefix_len)


class HexPrefixStrategy(NumericPrefixStrategy):
    """NumericPrefixStrategy in base 16."""

    def __init__(self, epoch_num: Optional[int] = None, min_prefix_length: int = 10,
                 prefix_count: Optional[int] = None, *, min_prefix_len: Optional[int] = None):
        super().__init__(16, epoch_num, min_prefix_length, prefix_count,
                         min_prefix_len=min_prefix_len)


class RoundRobinPrefixStrategy(S3PrefixStrategyBase):
    """``<user_prefixes[rank % len]>/[epoch_<n>/]__<rank>_``."""

    def __init__(self, user_prefixes: List[str], epoch_num: Optional[int] = None):
        super().__init__()
        if not user_prefixes:
            raise ValueError("user_prefixes must not be empty")
        self.user_prefixes = list(user_prefixes)
        self.epoch_num = epoch_num

    def generate_prefix(self, rank: int) -> str:
        p = self.user_prefixes[rank % len(self.user_prefixes)]
        return f"{p}/{_epoch_dir(self.epoch_num)}__{rank}_"
