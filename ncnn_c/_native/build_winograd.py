"""Builds ``ncnn_c/_native/_winograd*.so``: the Winograd convolutions of the native CPU plan.

The C source is ``winograd.c`` (with ``winograd_kernels.h``, included once per channel-block
width and instruction set), the declarations cffi checks are ``winograd.cdef``, all beside
this file. Its step function is a kernel of the plan's C executor (``plan.c``): the plan
takes its address from this module and calls it between oneDNN primitives; the step runs
oneDNN matmuls itself. Like ``_plan`` it is compiled against oneDNN's headers (found as
``build_plan`` finds them) and not linked against the library: it is imported after
``ncnn_c._native.onednn`` loaded ``libdnnl`` with RTLD_GLOBAL. Compiled with OpenMP against
the system's libgomp, the runtime oneDNN's wheel uses, so the step's parallel region runs
on oneDNN's thread pool with the thread count the plan's run set. Without the extension 3x3
convolutions stay oneDNN's direct ones.

Run ``python -m ncnn_c._native.build_winograd`` (add ``--force`` to rebuild).
"""

from __future__ import annotations

import sys

from . import _build
from ._build import BuildError  # noqa: F401  (part of this module's interface)
from .build_plan import include_dirs

MODULE = "_winograd"
# the plan works without it (direct convolutions)
OPTIONAL = True
CDEF, CSOURCE, HEADER = "winograd.cdef", "winograd.c", "winograd_kernels.h"
# -fno-wrapv: Python's CFLAGS carry -fwrapv, which hinders gcc's loop optimisations (build_cpu)
FLAGS = ["-O2", "-fno-wrapv", "-fopenmp"]


def _include_dirs() -> list[str]:
    return [_build.HERE, *include_dirs()]


_EXT = _build.Extension(
    MODULE, CDEF, CSOURCE, (HEADER,), FLAGS, ["-fopenmp"], _include_dirs, stamp_flags=True
)

_stamp, _ffibuilder = _EXT.stamp, _EXT.ffibuilder
extension_path, is_current, build = _EXT.extension_path, _EXT.is_current, _EXT.build


if __name__ == "__main__":
    sys.exit(_build.main(build, sys.argv[1:]))
