"""Builds ``ncnn_c/_native/_llm*.so``: the transformer decoders' small layers (RMSNorm,
RotaryEmbed) as steps of the native CPU plan (``ncnn_c/net/native/ops/transformer.py``).

The steps run inside ``plan.c``'s run (a step that is a C function instead of a primitive),
so their OpenMP loops use the thread count that run set. Like ``_int8`` the extension is not
linked against libgomp: it loads after oneDNN (``_native/onednn.py`` loads ``libdnnl`` and its
libgomp with RTLD_GLOBAL), whose libgomp resolves the OpenMP calls. Compiled with
``-ffp-contract=off`` so that the products round as the numpy layers' do.

The C source is ``llm.c``, the declarations cffi checks are ``llm.cdef``, both beside this
file. Run ``python -m ncnn_c._native.build_llm`` (add ``--force`` to rebuild).
"""

from __future__ import annotations

import sys

from . import _build
from ._build import BuildError  # noqa: F401  (part of this module's interface)

MODULE = "_llm"
CDEF, CSOURCE = "llm.cdef", "llm.c"
# the native plan runs without it (RMSNorm and RotaryEmbed stay numpy) where it cannot be built
OPTIONAL = True
# -fno-wrapv: Python's CFLAGS carry -fwrapv, which hinders gcc's loop optimisations (build_cpu)
FLAGS = ["-O3", "-fno-wrapv", "-ffp-contract=off", "-fopenmp"]


_EXT = _build.Extension(MODULE, CDEF, CSOURCE, compile_args=FLAGS, stamp_flags=True)

_stamp, _ffibuilder = _EXT.stamp, _EXT.ffibuilder
extension_path, is_current, build = _EXT.extension_path, _EXT.is_current, _EXT.build


if __name__ == "__main__":
    sys.exit(_build.main(build, sys.argv[1:]))
