"""Builds ``ncnn_c/_native/_nonfinite*.so``: ReLU, max pooling and Softmax's non-finite lines
as steps of the native CPU plan (``ncnn_c/net/native/ops/``), where oneDNN's kernels drop or
keep a NaN (or an inf) otherwise than ncnn and the numpy layers do.

The steps run inside ``plan.c``'s run (a step that is a C function instead of a primitive),
so their OpenMP loops use the thread count that run set. Like ``_int8`` the extension is not
linked against libgomp: it loads after oneDNN (``_native/onednn.py`` loads ``libdnnl`` and its
libgomp with RTLD_GLOBAL), whose libgomp resolves the OpenMP calls.

The C source is ``nonfinite.c``, the declarations cffi checks are ``nonfinite.cdef``, both
beside this file. Run ``python -m ncnn_c._native.build_nonfinite`` (add ``--force`` to rebuild).
"""

from __future__ import annotations

import sys

from . import _build
from ._build import BuildError  # noqa: F401  (part of this module's interface)

MODULE = "_nonfinite"
CDEF, CSOURCE = "nonfinite.cdef", "nonfinite.c"
# the native plan runs without it where it cannot be built: max pooling and Softmax stay
# numpy, ReLU takes a slower oneDNN form (ops/eltwise.py, relu_op)
OPTIONAL = True
# -fno-wrapv: Python's CFLAGS carry -fwrapv, which hinders gcc's loop optimisations (build_cpu)
FLAGS = ["-O3", "-fno-wrapv", "-ffp-contract=off", "-fopenmp"]


_EXT = _build.Extension(MODULE, CDEF, CSOURCE, compile_args=FLAGS, stamp_flags=True)

_stamp, _ffibuilder = _EXT.stamp, _EXT.ffibuilder
extension_path, is_current, build = _EXT.extension_path, _EXT.is_current, _EXT.build


if __name__ == "__main__":
    sys.exit(_build.main(build, sys.argv[1:]))
