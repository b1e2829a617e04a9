"""Builds ``ncnn_c/_native/_int8*.so``: ncnn's int8 arithmetic (quantize, dequantize with
bias and activation, requantize) as steps of the native CPU plan, around oneDNN's int8
convolutions and inner products (``ncnn_c/net/native/ops/int8.py``).

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

import cffi

from . import _build
from ._build import BuildError  # noqa: F401  (part of this module's interface)

MODULE = "_int8"
CDEF, CSOURCE = "int8.cdef", "int8.c"
# the native plan runs without it (int8 layers stay numpy) where it cannot be built
OPTIONAL = True
FLAGS = ["-O3", "-fno-wrapv", "-ffp-contract=off", "-fopenmp"]


def _stamp() -> str:
    return _build.stamp(_build.source(CDEF), _build.source(CSOURCE), " ".join(FLAGS))


def _ffibuilder() -> cffi.FFI:
    ffi = cffi.FFI()
    ffi.cdef(_build.source(CDEF))
    ffi.set_source(
        f"ncnn_c._native.{MODULE}",
        _build.source(CSOURCE).replace("@STAMP@", _stamp()),
        extra_compile_args=FLAGS,
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
