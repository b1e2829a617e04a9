"""The C extensions whose functions are native-plan steps (``_int8``, ``_llm``, ``_winograd``,
...), behind one small interface: the plan's ops name the extension, the functions and the
context struct, and never touch a cffi ``ffi`` or ``lib`` themselves (``_native`` is the one
place that does, docs/design.md "One door to oneDNN").

A step (``dnnl.Kernel``) is a C function run inside ``plan.c``'s run with the plan's OpenMP
thread count. The extension loads after oneDNN, whose libgomp runs its OpenMP loops; without
oneDNN or the extension, ``get()`` is None and the layers it serves stay numpy (``without``
says which, in the log).
"""

from __future__ import annotations

import importlib
import logging
import threading

from . import dnnl

log = logging.getLogger("ncnn_c")


class CSteps:
    """One C extension of plan steps (see the module docstring)."""

    def __init__(self, module: str, names: tuple[str, ...], without: str) -> None:
        self.module, self.names, self.without = module, names, without
        self._lock = threading.Lock()
        self._got: tuple | None = None
        self._ext = None
        self._tried = False

    def get(self):
        """(ffi, {name: address}) of the extension's steps, or None."""
        self._try()
        return self._got

    def loaded(self) -> bool:
        self._try()
        return self._ext is not None

    def _try(self) -> None:
        with self._lock:
            if not self._tried:
                self._tried = True
                self._ext = self._load()
                if self._ext is not None:
                    ffi, lib = self._ext.ffi, self._ext.lib
                    self._got = (
                        ffi,
                        {n: int(ffi.cast("uintptr_t", ffi.addressof(lib, n))) for n in self.names},
                    )

    def _load(self):
        if dnnl.get() is None:
            return None
        try:
            return importlib.import_module(f"ncnn_c._native.{self.module}")
        except ImportError as e:
            log.info("native plan: %s: the %s extension is not built: %s", self.without, self.module, e)
            return None

    def _module(self):
        self._try()
        if self._ext is None:
            raise ImportError(f"the {self.module} extension is not built")
        return self._ext

    # -- what the ops use -----------------------------------------------------------------
    def call(self, name: str, *args):
        """The extension's C function ``name`` called with ``args`` (ints, floats, or what
        ``new``/``pointers`` made)."""
        return getattr(self._module().lib, name)(*args)

    def new(self, ctype: str, init=None):
        """A new C object of ``ctype`` (``"T *"``, ``"T[]"``), owned by the returned value."""
        return self._module().ffi.new(ctype, init)

    def cast(self, ctype: str, value):
        """``value`` (an int address, a buffer's ``ctypes.data``) as a C ``ctype``."""
        return self._module().ffi.cast(ctype, value)

    def pointers(self, addresses) -> object:
        """A ``void *[]`` of the given addresses (ints), owned by the returned value."""
        ffi = self._module().ffi
        return ffi.new("void *[]", [ffi.cast("void *", int(a)) for a in addresses])

    def floats(self, a):
        """A ``const float *`` to float32 array ``a``'s data (the caller keeps ``a`` alive), or
        NULL for None."""
        ffi = self._module().ffi
        return ffi.NULL if a is None else ffi.cast("const float *", a.ctypes.data)

    @property
    def null(self):
        return self._module().ffi.NULL

    def address(self, obj) -> int:
        """The address of a C object this extension made (``new``), or of its function
        ``obj`` when it is a name."""
        ffi = self._module().ffi
        if isinstance(obj, str):
            return int(ffi.cast("uintptr_t", ffi.addressof(self._module().lib, obj)))
        return int(ffi.cast("uintptr_t", obj))

    def step(self, name: str, ctype: str, fields: dict, keep=()):
        """A Kernel calling ``name`` with a new ``ctype`` context of ``fields``; ``keep`` holds
        what the context points into for as long as the step lives."""
        got = self.get()
        if got is None:
            raise Unsupported(f"the {self.module} extension is not built")
        ffi, fns = got
        ctx = ffi.new(ctype, fields)
        return dnnl.Kernel(fns[name], int(ffi.cast("uintptr_t", ctx)), (ctx, *keep))


class Unsupported(Exception):
    """This layer (in this shape, or without the extension it needs) has no native form: it
    runs as a numpy layer (``net/native/plan.py`` raises it too)."""
