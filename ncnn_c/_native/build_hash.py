"""Builds ``ncnn_c/_native/_hash*.so``: FNV-1a 32 and MurmurHash3 x86_32 in C (cffi API mode).

The pipeline cache file hashes every SPIR-V byte two or three times on load and on save;
in pure Python that costs tens of milliseconds per megabyte, in C it is noise.
``ncnn_c.cache.hashing`` uses this extension when it was built and falls back to its pure
Python versions otherwise; both must give identical results. The C source is ``hash.c``,
the declarations cffi checks are ``hash.cdef``, both beside this file.

The wheel builds it (``setup.py``), and so does ``make setup``; nothing builds it at import.
Run ``python -m ncnn_c._native.build_hash`` (add ``--force`` to rebuild). Building is
skipped when an extension built from the same C source already exists.
"""

from __future__ import annotations

import sys

import cffi

from . import _build
from ._build import BuildError  # noqa: F401  (part of this module's interface)

MODULE = "_hash"
# hash.c assembles MurmurHash3's blocks byte by byte, so that the result does not depend on
# the host's byte order or on alignment; compilers turn that into a single load on x86/arm64.
CDEF, CSOURCE = "hash.cdef", "hash.c"


def _stamp() -> str:
    return _build.stamp(_build.source(CDEF), _build.source(CSOURCE))


def _ffibuilder() -> cffi.FFI:
    ffi = cffi.FFI()
    ffi.cdef(_build.source(CDEF))
    ffi.set_source(
        f"ncnn_c._native.{MODULE}",
        _build.source(CSOURCE).replace("@STAMP@", _stamp()),
        extra_compile_args=["-O2"],
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
