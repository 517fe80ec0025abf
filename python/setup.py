"""Builds the s3rdma package: pure Python plus one CPython extension (s3rdma._s3rdma)
compiled against the repository's include/s3rdma.h and linked to a built libs3rdma.so.

Where libs3rdma comes from (read at build time):
  S3RDMA_BUILD    the CMake build directory holding libs3rdma.so (default: ../build)
  S3RDMA_INCLUDE  the directory holding s3rdma.h (default: ../include)
The extension records S3RDMA_BUILD as its rpath, so the installed package loads that
library with no LD_LIBRARY_PATH; rebuild the package after moving the build tree.
"""
import os
from pathlib import Path

from setuptools import Extension, setup

HERE = Path(__file__).resolve().parent
BUILD = Path(os.environ.get("S3RDMA_BUILD") or HERE.parent / "build").resolve()
INCLUDE = Path(os.environ.get("S3RDMA_INCLUDE") or HERE.parent / "include").resolve()

if not (INCLUDE / "s3rdma.h").is_file():
    raise SystemExit(f"s3rdma: {INCLUDE}/s3rdma.h not found: set S3RDMA_INCLUDE to the "
                     "repository's include/ directory")
if not (BUILD / "libs3rdma.so").is_file():
    raise SystemExit(f"s3rdma: {BUILD}/libs3rdma.so not found: build it first (make build) "
                     "or set S3RDMA_BUILD to the CMake build directory")

setup(
    ext_modules=[
        Extension(
            "s3rdma._s3rdma",
            sources=["src/s3rdma/_s3rdma.c"],
            include_dirs=[str(INCLUDE)],
            library_dirs=[str(BUILD)],
            libraries=["s3rdma"],
            runtime_library_dirs=[str(BUILD)],
            extra_compile_args=["-std=gnu11", "-Wall", "-Wextra", "-Wno-missing-field-initializers",
                                "-Wno-cast-function-type"],
        )
    ],
)
