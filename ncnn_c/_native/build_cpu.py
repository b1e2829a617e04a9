"""Builds ``ncnn_c/_native/_cpu*.so``: the convolution kernels numpy cannot express in one pass.

* Depthwise convolution has no matrix product to hand to BLAS: in numpy it is one full pass
  over the output per kernel tap (multiply into a temporary, add), 18 passes for 3x3, memory
  bound and several times slower than ncnn. Here each channel is bordered into a small scratch
  buffer and convolved in one vectorised pass with the taps in registers, bias and ReLU fused.
* Winograd F(4x4, 3x3) input / output transforms: in numpy they are a gather of overlapping
  6x6 tiles, a 36x36 GEMM, a 16x36 GEMM and a scatter, each a full pass; here one pass each,
  the border (pads, pad_value) applied on the fly and bias + ReLU fused into the output.
  The 36 products between them stay with numpy / BLAS.
* A constant border copy (copy_make_border) in one pass instead of fill + copy, and the
  bias + ReLU epilogue of a matrix product in one pass instead of two.
* Windowed max / sum pooling: numpy makes one full pass over the output per kernel tap (9
  for 3x3) and needs a bordered copy of the input; here one pass, bordered per channel.
  Global pooling in ncnn's summation order, several channels at once.
* Greedy NMS and ncnn's tie-order quicksort for the detection layers (scalar loops that
  numpy would run as thousands of small passes).

Every kernel is compiled with plain -O3 twice, a baseline x86-64 body and an AVX2+FMA one
picked at run time, so the extension runs on any x86-64. cffi releases the GIL during a call,
so ``ncnn_c._native.cpu`` (the wrapper) splits channel ranges over threads. Without the
extension the layers fall back to numpy and give the same results to rounding.

The C source is ``cpu.c``, the declarations cffi checks are ``cpu.cdef``, both beside this
file. Run ``python -m ncnn_c._native.build_cpu`` (add ``--force`` to rebuild).
"""

from __future__ import annotations

import sys

from . import _build
from ._build import BuildError  # noqa: F401  (part of this module's interface)

MODULE = "_cpu"
CDEF, CSOURCE = "cpu.cdef", "cpu.c"


# Python's own CFLAGS carry -fwrapv, which stops gcc from vectorising the index arithmetic of
# these loops (measured 4x slower); -fno-wrapv after it restores that. These kernels do not
# rely on signed overflow.
_EXT = _build.Extension(MODULE, CDEF, CSOURCE, compile_args=["-O3", "-fno-wrapv"])

_stamp, _ffibuilder = _EXT.stamp, _EXT.ffibuilder
extension_path, is_current, build = _EXT.extension_path, _EXT.is_current, _EXT.build


if __name__ == "__main__":
    sys.exit(_build.main(build, sys.argv[1:]))
