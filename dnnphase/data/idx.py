"""The IDX file format of MNIST and Fashion-MNIST (plain or gzipped): a reader whose every
failure on a damaged file is one line naming the file."""

from __future__ import annotations

import gzip
import struct
import zlib
from pathlib import Path

import numpy as np

__all__ = ["FILES", "read_idx"]

# IDX type codes (http://yann.lecun.com/exdb/mnist/, "THE IDX FILE FORMAT"); big-endian.
TYPES = {0x08: "u1", 0x09: "i1", 0x0B: ">i2", 0x0C: ">i4", 0x0D: ">f4", 0x0E: ">f8"}
FILES = ("train-images-idx3-ubyte", "train-labels-idx1-ubyte",
         "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte")


def read_idx(path: Path) -> np.ndarray:
    """Read an IDX file (optionally gzipped): 2 zero bytes, type code, ndim, dims, data."""
    try:
        with (gzip.open if path.suffix == ".gz" else open)(path, "rb") as f:
            raw = f.read()
    except (EOFError, gzip.BadGzipFile, zlib.error) as err:  # a download cut short
        raise ValueError(f"{path} is a damaged gzip file ({err or type(err).__name__}); "
                         "download it again") from None
    if len(raw) < 4 or raw[:2] != b"\0\0" or raw[2] not in TYPES:
        raise ValueError(f"{path} is not an IDX file (bad magic number)")
    ndim = raw[3]
    header = 4 + 4 * ndim
    if len(raw) < header:
        raise ValueError(f"{path}: IDX header cut short ({len(raw)} of {header} bytes)")
    dims = struct.unpack(f">{ndim}I", raw[4:header])
    dtype = np.dtype(TYPES[raw[2]])
    if len(raw) - header != int(np.prod(dims)) * dtype.itemsize:
        raise ValueError(f"{path}: IDX header says shape {dims} but the data size does not match")
    return np.frombuffer(raw, dtype, offset=header).reshape(dims)
