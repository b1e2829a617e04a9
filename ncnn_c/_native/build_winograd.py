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

from . import _build
from ._build import BuildError  # noqa: F401  (part of this module's interface)

MODULE = "_winograd"
# the plan works without it (direct convolutions)
OPTIONAL = True
CDEF, CSOURCE, HEADER = "winograd.cdef", "winograd.c", "winograd_kernels.h"
# -fno-wrapv: Python's CFLAGS carry -fwrapv, which hinders gcc's loop optimisations (build_cpu)
FLAGS = ["-O2", "-fno-wrapv", "-fopenmp"]


_EXT = _build.Extension(
    MODULE, CDEF, CSOURCE, (HEADER,), FLAGS, ["-fopenmp"], [_build.HERE], stamp_flags=True
)

_stamp, _ffibuilder = _EXT.stamp, _EXT.ffibuilder
extension_path, is_current, build = _EXT.extension_path, _EXT.is_current, _EXT.build


if __name__ == "__main__":
    sys.exit(_build.main(build, sys.argv[1:]))
