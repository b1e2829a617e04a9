"""The ``ncnn_*`` functions of ncnn's ``c_api.h`` in Python, over opaque integer handles.

This module is what ``libncnn_c.so`` calls (see ``capi/build.py``) and it is usable on
its own from Python; it is also the single list of what the C library exports: every
function decorated with ``@_export`` here must be declared in ``capi/include/ncnn/c_api.h``
(ncnn's functions) or ``c_api_ext.h`` (ours, such as ``ncnn_pipelinecache_last_error``),
and the build refuses to link when the two disagree.

Conventions (the C ones, so a C caller and a Python caller see the same behaviour):

* A handle is an int; ``0`` is NULL. Handles come from one ``HandleTable`` that records a
  kind for each (a Mat handle passed where a Net is wanted is an error) and never reuses a
  number, so a destroyed handle stays detectably dead.
* A NULL, unknown, destroyed or wrong-kind handle, or any exception below, gives the C
  error value for the return type (``int`` -1, ``size_t`` 0, pointer/handle 0, string
  None, ``void`` nothing) plus one ``log.error`` line. Nothing raises out of this module.
* Buffers (``const unsigned char*``, ``void*``, ``const float*``) are int addresses, as the
  C library passes them; Python callers may pass bytes-like objects / sequences instead. An
  int there is raw memory, as with ctypes: the caller vouches for it. Ints below 64 KiB
  (never mapped on Linux: a size or a handle passed by mistake) are refused, not read.
* Out-parameters become return values in Python: ``ncnn_extractor_extract(ex, name)`` returns
  ``(ret, mat_handle)``; ``ncnn_pipelinecache_save_memory(pc)`` returns ``bytes`` (None on
  error) when called without the C-style ``data``/``size`` addresses.

Ownership follows ncnn: ``ncnn_net_get_option`` hands out a *borrowed* handle to the net's
own Option (ncnn returns ``&net->opt``), so setting a flag through it changes the net;
the same handle comes back on every call; ``ncnn_option_destroy`` on it is refused
(ncnn would ``delete`` a member of the Net) and it dies with its net.
"""

from __future__ import annotations

# Importing each section registers its exports in EXPORTS (header order does not matter).
from . import (  # noqa: F401 - imported for their @_export side effects
    allocator,
    blob,
    datareader,
    drawing,
    extractor,
    layer,
    mat,
    matops,
    modelbin,
    net,
    option,
    paramdict,
    pipelinecache,
    version,
)
from ._core import (
    ALLOCATOR,
    BLOB,
    DATAREADER,
    ERROR_RETURN,
    EXPORTS,
    EXTRACTOR,
    FOREIGN,
    HANDLES,
    KINDS,
    LAYER,
    MAT,
    MODELBIN,
    NET,
    OPTION,
    PARAMDICT,
    PIPELINECACHE,
    HandleError,
    HandleTable,
    c_override,
    set_override_resolver,
)
from .allocator import allocator_fast_free, allocator_fast_malloc
from .option import OPTION_FLAGS


def __getattr__(name: str):
    # every exported ncnn_* function is reachable as ncnn_c.capi.<name>
    fn = EXPORTS.get(name)
    if fn is None:
        raise AttributeError(f"module 'ncnn_c.capi' has no attribute {name!r}")
    return fn


__all__ = sorted(EXPORTS) + [
    "ALLOCATOR",
    "BLOB",
    "DATAREADER",
    "ERROR_RETURN",
    "EXPORTS",
    "EXTRACTOR",
    "FOREIGN",
    "HANDLES",
    "KINDS",
    "LAYER",
    "MAT",
    "MODELBIN",
    "NET",
    "OPTION",
    "OPTION_FLAGS",
    "PARAMDICT",
    "PIPELINECACHE",
    "HandleError",
    "HandleTable",
    "allocator_fast_free",
    "allocator_fast_malloc",
    "c_override",
    "set_override_resolver",
]


def __dir__() -> list[str]:
    return sorted(set(__all__) | set(globals()))


def _build_module():
    """capi/build.py as a module: the copy inside the package (a wheel install), else the source
    checkout's; None when neither exists."""
    import importlib.util
    import sys
    from pathlib import Path

    pkg = Path(__file__).resolve().parent.parent
    for build_py in (pkg / "_capi_data" / "build.py", pkg.parent / "capi" / "build.py"):
        if not build_py.is_file():
            continue
        name = "_ncnn_c_capi_build"
        if name in sys.modules and getattr(sys.modules[name], "__file__", None) == str(build_py):
            return sys.modules[name]
        spec = importlib.util.spec_from_file_location(name, build_py)
        if spec is None or spec.loader is None:
            continue
        mod = importlib.util.module_from_spec(spec)
        sys.modules[name] = mod  # dataclasses look their module up while the file runs
        spec.loader.exec_module(mod)
        return mod
    return None


def _main(argv: list[str] | None = None) -> int:
    """``python -m ncnn_c.capi --build | --cflags | --libs [--prefix DIR | --build-dir DIR]``."""
    import sys

    mod = _build_module()
    if mod is None:
        print(
            "ncnn_c.capi: the C API build kit (build.py, include/) is missing from this install",
            file=sys.stderr,
        )
        return 1
    return int(mod.main(sys.argv[1:] if argv is None else argv))
