"""Native helpers built with cffi; for now the in-process GLSL -> SPIR-V compiler.

The extensions are built with the wheel (``setup.py``'s ``build_ext``) or by ``make setup``
(``python -m ncnn_c._native.build_<name>``), never at import or first use. ``shaderc()``
loads ``_shaderc``; a checkout where it was not built says how to build it.
"""

from __future__ import annotations

import importlib
import threading

_lock = threading.Lock()
_module = None


class NotBuilt(ImportError):
    """A native extension that was not built: install the wheel, or run ``make setup``."""


def shaderc():
    """The loaded ``_shaderc`` extension module (``.ffi``, ``.lib``); NotBuilt when it is missing."""
    global _module
    if _module is not None:
        return _module
    with _lock:
        if _module is None:
            try:
                mod = importlib.import_module(f"{__name__}._shaderc")
            except ImportError as e:
                raise NotBuilt(
                    f"the GLSL compiler extension ncnn_c._native._shaderc is not built ({e}): install"
                    " the ncnn_c wheel, or run `make setup` (python -m ncnn_c._native.build_shaderc)"
                ) from e
            if mod.lib.ncnnc_init() != 0:
                raise RuntimeError("shaderc: compiler initialisation failed")
            _module = mod
    return _module


def compile_glsl(source: bytes, name: str, optimize: bool = False) -> tuple[bool, bytes]:
    """Compile one compute shader; returns (True, spirv) or (False, error message bytes)."""
    mod = shaderc()
    ffi, lib = mod.ffi, mod.lib
    r = lib.ncnnc_compile(source, len(source), name.encode(), 1 if optimize else 0)
    if r == ffi.NULL:
        return False, b"shaderc: out of memory"
    try:
        if lib.ncnnc_result_ok(r):
            return True, ffi.unpack(lib.ncnnc_result_bytes(r), lib.ncnnc_result_size(r))
        return False, ffi.string(lib.ncnnc_result_message(r))
    finally:
        lib.ncnnc_result_free(r)
