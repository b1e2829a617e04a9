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

from . import _build
from ._build import BuildError  # noqa: F401  (part of this module's interface)

MODULE = "_hash"
# hash.c assembles MurmurHash3's blocks byte by byte, so that the result does not depend on
# the host's byte order or on alignment; compilers turn that into a single load on x86/arm64.
CDEF, CSOURCE = "hash.cdef", "hash.c"


_EXT = _build.Extension(MODULE, CDEF, CSOURCE, compile_args=["-O2"])

_stamp, _ffibuilder = _EXT.stamp, _EXT.ffibuilder
extension_path, is_current, build = _EXT.extension_path, _EXT.is_current, _EXT.build


if __name__ == "__main__":
    sys.exit(_build.main(build, sys.argv[1:]))
