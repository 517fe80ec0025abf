"""The torch.distributed.checkpoint module of the installed torch.

torch >= 2.0 has it as ``torch.distributed.checkpoint``. torch 1.13 (Debian 12's
python3-torch) has it as ``torch.distributed._shard.checkpoint``, and that package
cannot be imported on Python >= 3.11: one of its dataclasses has a default that is an
instance of another (unfrozen, so unhashable) dataclass, which 3.11's dataclasses
refuses as "mutable" where 3.10 refused only list, dict and set. checkpoint_module()
imports it with 3.10's rule for exactly such defaults: while the import runs, a
dataclass default whose class is an unhashable dataclass is let through, as it
always was (the instance is shared between objects, as it was under 3.10).
"""
import dataclasses
import threading
from types import ModuleType

_lock = threading.Lock()


def _get_field_310(original):
    def get_field(cls, name, type_, kw_only):
        default = cls.__dict__.get(name, dataclasses.MISSING)
        if isinstance(default, dataclasses.Field):
            default = default.default
        kind = type(default)
        if not (dataclasses.is_dataclass(default) and kind.__hash__ is None):
            return original(cls, name, type_, kw_only)
        kind.__hash__ = object.__hash__
        try:
            return original(cls, name, type_, kw_only)
        finally:
            kind.__hash__ = None
    return get_field


def checkpoint_module() -> ModuleType:
    try:
        import torch.distributed.checkpoint as dcp
        return dcp
    except ImportError:
        pass
    with _lock:
        original = dataclasses._get_field
        dataclasses._get_field = _get_field_310(original)
        try:
            import torch.distributed._shard.checkpoint as dcp
        finally:
            dataclasses._get_field = original
    return dcp
