"""The rule for local paths made from keys, the same as the s3rdma CLI's (docs/cli.md):
a key's name below a local directory must stay inside it. Keys are anyone's who can write
to the bucket, so a key like ``data/../../.bashrc`` must not become a path outside the
directory the caller asked for."""
import re
from typing import Optional

from .errors import UnsafeLocalPath

_SEPARATORS = re.compile(r"[/\\]+")


def local_name_refusal(rel: str) -> Optional[str]:
    """Why ``rel`` (the part of a key that names a file below a local directory) cannot
    be placed there, or None when it can. Lexical: '\\' separates segments as well as '/'
    (a key means the same on every system); a leading separator is an absolute path; a
    '.' or '..' segment is refused. Symlinks already in the directory are followed: only
    the local user can have put them there."""
    if not rel:
        return "it is empty"
    if rel[0] in "/\\":
        return "it is absolute"
    for seg in _SEPARATORS.split(rel):
        if seg == "..":
            return "it has a '..' segment"
        if seg == ".":
            return "it has a '.' segment"
    return None


def check_local_name(directory: str, rel: str, key: str) -> None:
    """Raises UnsafeLocalPath naming ``key`` unless ``rel`` may become a file in
    ``directory`` (local_name_refusal)."""
    why = local_name_refusal(rel)
    if why is not None:
        raise UnsafeLocalPath(f"key {key!r}: its local name {rel!r} does not stay inside "
                              f"{directory!r}: {why}", keys=[key])
