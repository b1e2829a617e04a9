"""Builds ``ncnn_c/_native/_plan*.so``: the native CPU plan's executor over oneDNN.

The C source is ``plan.c`` and the declarations cffi checks against oneDNN's headers are
``plan.cdef``, both beside this file. The extension is compiled against the headers of the
PyPI package ``onednn-devel-cpu-gomp`` (oneDNN 3.2, CPU, GNU OpenMP) and is not linked
against the library: ``ncnn_c._native.onednn`` loads ``libdnnl.so.3`` (package
``onednn-cpu-gomp``) with RTLD_GLOBAL first, and the extension's symbols resolve to it. So
building needs only the 190 KB of headers, and a machine without the library still imports
ncnn_c (the plan is then off and the numpy layers run).

Run ``python -m ncnn_c._native.build_plan`` (add ``--force`` to rebuild).
"""

from __future__ import annotations

import os
import sys
import sysconfig

from . import _build
from ._build import BuildError

MODULE = "_plan"
# the wheel builds without it where oneDNN's x86-64 packages do not exist (aarch64): the CPU
# then runs the numpy layers
OPTIONAL = True


def _from_package() -> str:
    """The include/ directory of the installed onednn-devel-cpu-gomp (also inside pip's
    isolated build environment, whose prefix is not sys.prefix)."""
    try:
        from importlib import metadata

        dist = metadata.distribution("onednn-devel-cpu-gomp")
        for f in dist.files or ():
            if str(f).endswith("oneapi/dnnl/dnnl.h"):
                return str(dist.locate_file(f)).rsplit("/oneapi/dnnl/dnnl.h", 1)[0]
    except Exception:  # noqa: BLE001 - not installed: the other places are tried
        pass
    return ""


def include_dirs() -> list[str]:
    """Where oneDNN's headers are: $NCNN_C_DNNL_INCLUDE, the onednn-devel-cpu-gomp package,
    or the environment's include/."""
    cands = [os.environ.get("NCNN_C_DNNL_INCLUDE", ""), _from_package(), os.path.join(sys.prefix, "include")]
    cands.append(sysconfig.get_paths().get("data", "") + "/include")
    for d in cands:
        if d and os.path.isfile(os.path.join(d, "oneapi", "dnnl", "dnnl.h")):
            return [d]
    raise BuildError(
        "oneDNN headers not found (pip install onednn-devel-cpu-gomp==2023.2.0, or set NCNN_C_DNNL_INCLUDE)"
    )


_EXT = _build.Extension(MODULE, "plan.cdef", "plan.c", include_dirs=include_dirs)
_stamp, _ffibuilder = _EXT.stamp, _EXT.ffibuilder
extension_path, is_current, build = _EXT.extension_path, _EXT.is_current, _EXT.build


if __name__ == "__main__":
    sys.exit(_build.main(build, sys.argv[1:]))
