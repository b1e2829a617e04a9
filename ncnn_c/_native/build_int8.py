"""Builds ``ncnn_c/_native/_int8*.so``: ncnn's int8 arithmetic (quantize, dequantize with
bias and activation, requantize) as steps of the native CPU plan, around oneDNN's int8
convolutions and inner products, and the Quantize / Dequantize / Requantize layers with
per-channel vectors (``ncnn_c/net/native/ops/int8.py``).

The steps run inside ``plan.c``'s run (a step that is a C function instead of a primitive),
so their OpenMP loops use the thread count that run set. Like ``_plan`` the extension is not
linked against libgomp: it loads after oneDNN (``_native/onednn.py`` loads ``libdnnl`` and its
libgomp with RTLD_GLOBAL), whose libgomp resolves the OpenMP calls, so one OpenMP runtime
serves both. Compiled with ``-ffp-contract=off``: a fused multiply-add would round the
scale products differently from the numpy layers, which the plan must match bit for bit. The
loops have an AVX-512 body (intrinsics, picked at run time) and a portable scalar one.

The C source is ``int8.c``, the declarations cffi checks are ``int8.cdef``, both beside this
file. Run ``python -m ncnn_c._native.build_int8`` (add ``--force`` to rebuild).
"""

from __future__ import annotations

import sys

from . import _build
from ._build import BuildError  # noqa: F401  (part of this module's interface)

MODULE = "_int8"
CDEF, CSOURCE = "int8.cdef", "int8.c"
# the native plan runs without it (int8 layers stay numpy) where it cannot be built
OPTIONAL = True
FLAGS = ["-O3", "-fno-wrapv", "-ffp-contract=off", "-fopenmp"]


_EXT = _build.Extension(MODULE, CDEF, CSOURCE, compile_args=FLAGS, stamp_flags=True)

_stamp, _ffibuilder = _EXT.stamp, _EXT.ffibuilder
extension_path, is_current, build = _EXT.extension_path, _EXT.is_current, _EXT.build


if __name__ == "__main__":
    sys.exit(_build.main(build, sys.argv[1:]))
