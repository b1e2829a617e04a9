"""Native helpers built with cffi; for now the in-process GLSL -> SPIR-V compiler.

``shaderc()`` returns the ``(ffi, lib)`` pair of ``_shaderc``, building the extension
on first use when it is missing (a checkout without build products still works).
"""

from __future__ import annotations

import importlib
import threading

_lock = threading.Lock()
_module = None


def shaderc():
    """The loaded ``_shaderc`` extension module (``.ffi``, ``.lib``); builds it if needed."""
    global _module
    if _module is not None:
        return _module
    with _lock:
        if _module is None:
            try:
                mod = importlib.import_module(f"{__name__}._shaderc")
            except ImportError:
                from . import build_shaderc

                build_shaderc.build()
                importlib.invalidate_caches()
                mod = importlib.import_module(f"{__name__}._shaderc")
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
