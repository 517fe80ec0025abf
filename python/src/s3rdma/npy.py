"""The .npy container for get_object_numpy / put_object_numpy: header parsing and
building through numpy.lib.format (NumPy's own reader and writer of the format)."""
import io
from typing import Tuple

MAGIC = b"\x93NUMPY"
# Enough for the header of any array short of thousands of dimensions; a longer
# header is read with a second request.
HEADER_PROBE = 4096


def header_length(prefix: bytes) -> int:
    """Total header length (magic, version, length field, dict) from the first bytes
    of a .npy object; ValueError when they are not a .npy header."""
    if len(prefix) < 10 or prefix[:6] != MAGIC:
        raise ValueError("s3rdma: the object is not a .npy file (bad magic)")
    major = prefix[6]
    if major == 1:
        return 10 + int.from_bytes(prefix[8:10], "little")
    if major in (2, 3):
        if len(prefix) < 12:
            raise ValueError("s3rdma: truncated .npy header")
        return 12 + int.from_bytes(prefix[8:12], "little")
    raise ValueError(f"s3rdma: unsupported .npy version {major}")


def parse_header(header: bytes):
    """(shape, dtype, fortran_order) of a complete .npy header. Object arrays (whose
    data would be a pickle) are refused."""
    import numpy as np
    from numpy.lib import format as npf
    fp = io.BytesIO(header)
    version = npf.read_magic(fp)
    if version == (1, 0):
        shape, fortran, dtype = npf.read_array_header_1_0(fp)
    else:
        shape, fortran, dtype = npf.read_array_header_2_0(fp)
    if dtype.hasobject:
        raise ValueError("s3rdma: object arrays (pickled .npy) are not supported")
    return shape, np.dtype(dtype), fortran


def build_header(array) -> Tuple[bytes, bool]:
    """(the .npy header for array, fortran_order): Fortran order for F-contiguous
    arrays that are not C-contiguous, so their memory is written as it lies."""
    from numpy.lib import format as npf
    d = npf.header_data_from_array_1_0(array)
    fp = io.BytesIO()
    try:
        npf.write_array_header_1_0(fp, d)
    except ValueError:  # header longer than 64 KiB: version 2.0
        fp = io.BytesIO()
        npf.write_array_header_2_0(fp, d)
    return fp.getvalue(), d["fortran_order"]
