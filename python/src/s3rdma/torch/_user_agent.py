"""UserAgent: s3torchconnector._user_agent's, for code that passes one to S3Client
(``S3Client(region, user_agent=UserAgent(["lightning", version]))``).

Its ``prefix`` is the string S3Client.user_agent_prefix reports:
``s3rdma.torch/<version> ua/2.1 os/<os>#<release> lang/python#<version>
md/arch#<arch> md/pytorch#<version>``, then `` (<comment>; <comment>)`` when any are
given. libs3rdma names itself on the wire, so it is reported and not sent.
"""
import platform
from typing import List, Optional

import torch

from .. import __version__


class UserAgent:
    @staticmethod
    def get_default_prefix() -> str:
        os_name = platform.system().lower()
        return " ".join([f"s3rdma.torch/{__version__}", "ua/2.1",
                         f"os/{'macos' if os_name == 'darwin' else os_name}#{platform.release()}",
                         f"lang/python#{platform.python_version()}",
                         f"md/arch#{platform.machine().lower()}",
                         f"md/pytorch#{torch.__version__}"])

    def __init__(self, comments: Optional[List[str]] = None):
        if comments is not None and not isinstance(comments, list):
            raise ValueError("Argument comments must be a List[str]")
        self._comments = comments or []

    @property
    def prefix(self) -> str:
        comments = "; ".join(c for c in self._comments if c)
        default = UserAgent.get_default_prefix()
        return f"{default} ({comments})" if comments else default
