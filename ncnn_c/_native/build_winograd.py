"""Builds ``ncnn_c/_native/_winograd*.so``: the Winograd transforms of the native CPU plan.

The C source is ``winograd.c`` (with ``winograd_kernels.h``, included once per channel-block
width and instruction set), the declarations cffi checks are ``winograd.cdef``, all beside
this file. Its two functions are kernels of the plan's C executor (``plan.c``): the plan
takes their addresses from this module and calls them between oneDNN primitives. Compiled
with OpenMP against the system's libgomp, the runtime oneDNN's wheel uses, so the kernels'
loops run on oneDNN's thread pool with the thread count the plan's run set. Needs no oneDNN
headers; without the extension 3x3 convolutions stay oneDNN's direct ones.

Run ``python -m ncnn_c._native.build_winograd`` (add ``--force`` to rebuild).
"""

from __future__ import annotations

import sys

import cffi

from . import _build
from ._build import BuildError  # noqa: F401  (part of this module's interface)

MODULE = "_winograd"
# the plan works without it (direct convolutions)
OPTIONAL = True
CDEF, CSOURCE, HEADER = "winograd.cdef", "winograd.c", "winograd_kernels.h"
# -fno-wrapv: Python's CFLAGS carry -fwrapv, which hinders gcc's loop optimisations (build_cpu)
FLAGS = ["-O2", "-fno-wrapv", "-fopenmp"]


def _stamp() -> str:
    return _build.stamp(_build.source(CDEF), _build.source(CSOURCE), _build.source(HEADER), " ".join(FLAGS))


def _ffibuilder() -> cffi.FFI:
    ffi = cffi.FFI()
    ffi.cdef(_build.source(CDEF))
    ffi.set_source(
        f"ncnn_c._native.{MODULE}",
        _build.source(CSOURCE).replace("@STAMP@", _stamp()),
        include_dirs=[_build.HERE],
        extra_compile_args=FLAGS,
        extra_link_args=["-fopenmp"],
    )
    return ffi


def extension_path() -> str:
    return _build.extension_path(MODULE)


def is_current(path: str | None = None) -> bool:
    """Whether an extension built from this exact C source exists."""
    return _build.is_current(path or extension_path(), _stamp())


def build(force: bool = False, verbose: bool = False) -> str:
    """Build the extension next to this file; returns its path. Raises BuildError."""
    target = extension_path()
    if not force and is_current(target):
        return target
    return _build.compile_and_install(_ffibuilder(), MODULE, target, verbose)


if __name__ == "__main__":
    sys.exit(_build.main(build, sys.argv[1:]))
