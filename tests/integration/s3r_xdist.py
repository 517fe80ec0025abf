"""How CI's pytest-xdist run (scripts/run-tests: `-n 2 --dist loadfile`) hands out the
suite's files: still whole files, each on one worker with its module fixtures shared, in
the order and groups below. Only the order and grouping change; every test still runs.

- Longest first. xdist gives out files in collection order, and the longest ones
  (client/, python/) are collected last: one of them could run alone at the end while
  the other worker idled. LONGEST_FIRST lists the units that took about a minute or
  more, longest first (measured: docs/benchmarks.md, "CI time"); every other unit
  follows in collection order. A file missing here is only scheduled later.
- One Ceph cluster per pass. The RADOS files (test_rados*.py) share the session's
  `ceph_cluster` fixture, a cluster per worker process: spread over both workers they
  started two. They form one unit (CEPH_UNIT), run on one worker.
- Long files in halves. The files of SPLIT_BY_UCX run every test under both UCX
  settings on a server per setting; each setting's half is a unit.
- xdist's own sending ahead is kept: a worker runs a test only once it holds the next
  one, so a unit of one or two tests goes out with the next unit. Sending the last
  (short) unit there instead was tried and chained: under ASan every python/ unit is
  one test, so each pulled another from the tail and the long units ran last.
- python/ under ASan. python/test_asan_subprocess.py runs each file of python/ in its
  own child pytest (one test per file); each such test is its own unit, so the python/
  files spread over both workers as they do in the release pass.
"""
import re

from xdist.scheduler import LoadFileScheduling

CEPH_UNIT = "test_rados*.py"

LONGEST_FIRST = [
    CEPH_UNIT,
    "client/test_resilience.py",
    "python/test_client.py",
    "python/test_torch.py",
    "client/test_native.py",
    "client/test_native_kill.py",
    "client/test_client_lib.py",
    "test_cli_tools.py",
    "test_s3_etag_fast.py",
    "python/test_put_checksum.py",
    "test_tls_listeners.py",
    "test_bench_tool.py",
    "test_crash.py",
    "test_cli.py",
    "client/test_native_hostile.py",
    "client/test_native_largeget.py",
]

# Files whose tests are parametrized by UCX setting (UCX_ENVS) through fixtures that
# start a server per setting (or per test): their halves share no fixture, so each
# half is a unit of its own and the two halves may run on different workers.
SPLIT_BY_UCX = {
    "client/test_native.py",
    "client/test_resilience.py",
    "client/test_native_kill.py",
    "client/test_client_lib.py",
    "client/test_native_hostile.py",
    "test_bench_tool.py",
}


def _file(nodeid):
    """A test's file relative to tests/integration/ (nodeids are relative to the rootdir)."""
    path = nodeid.split("::", 1)[0]
    return path.split("tests/integration/", 1)[-1]


def unit_of(nodeid):
    """The scheduling unit of a test: its file, but one unit for all RADOS files, one per
    test (per python/ file) for the ASan rerun of python/, and one per UCX setting for
    the files of SPLIT_BY_UCX."""
    path = _file(nodeid)
    if path.startswith("test_rados"):
        return CEPH_UNIT
    if path == "python/test_asan_subprocess.py":
        return nodeid
    if path in SPLIT_BY_UCX:
        m = re.search(r"[\[-](ucx-[a-z]+)(?=[-\]])", nodeid)
        if m:
            return f"{path}[{m.group(1)}]"
    return path


def _rank(unit):
    path = _file(unit)
    if path == "python/test_asan_subprocess.py":  # ranked as the python/ file it runs
        path = "python/" + unit.rsplit("[", 1)[-1].rstrip("]")
    path = path.split("[", 1)[0]  # a SPLIT_BY_UCX half ranks as its file
    return LONGEST_FIRST.index(path) if path in LONGEST_FIRST else len(LONGEST_FIRST)


class Scheduler(LoadFileScheduling):
    """--dist loadfile with unit_of's units, handed out longest first (stable sort)."""

    def __init__(self, config, log=None):
        super().__init__(config, log)
        self._sorted = False

    def _split_scope(self, nodeid):
        return unit_of(nodeid)

    def _assign_work_unit(self, node):
        if not self._sorted:
            for unit in sorted(self.workqueue, key=_rank):
                self.workqueue.move_to_end(unit)
            self._sorted = True
        super()._assign_work_unit(node)
