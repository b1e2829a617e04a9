# The embedded side of libncnn_c.so: cffi runs this file as the library's init code the
# first time a C program calls into it (capi/build.py prepends _MODULE, _BUILD_PATHS,
# _ENV_PYTHONPATH and _SIGNATURES). It is not imported as a module.
#
# Its job is translation only: C pointers <-> ncnn_c.capi integer handles, C strings <->
# str, out-parameters <-> return values. Behaviour lives in ncnn_c/capi.py.
#
# If anything here fails, _ncnn_c_alive() answers 0 and every C export returns its error
# value instead of running (the guard in capi/build.py).
import collections
import importlib
import logging
import os
import sys
import threading

_ffi_mod = importlib.import_module(_MODULE)  # noqa: F821 - injected by capi/build.py
ffi, lib = _ffi_mod.ffi, _ffi_mod.lib

_alive = False


@ffi.def_extern(name="_ncnn_c_alive", error=0)
def _ncnn_c_alive():
    return 1 if _alive else 0


def _setup_sys_path():
    front = [p for p in os.environ.get(_ENV_PYTHONPATH, "").split(os.pathsep) if p]  # noqa: F821
    for p in reversed(front):
        if p in sys.path:
            sys.path.remove(p)
        sys.path.insert(0, p)
    # Python we started already has the build paths (via PYTHONPATH); a host Python keeps
    # precedence over them.
    for p in _BUILD_PATHS:  # noqa: F821
        if p not in sys.path:
            sys.path.append(p)


def _setup_logging():
    logger = logging.getLogger("ncnn_c")
    real = [h for h in logger.handlers if not isinstance(h, logging.NullHandler)]
    if lib._ncnn_c_started_python() and not real:
        # ncnn reports errors on stderr; a C program has no logging config to do it for us.
        h = logging.StreamHandler(sys.stderr)
        h.setFormatter(logging.Formatter("ncnn_c: %(message)s"))
        logger.addHandler(h)
        logger.setLevel(os.environ.get("NCNN_C_LOG_LEVEL", "WARNING").upper())
        logger.propagate = False


class _Pointers:
    """C structs handed out for handles: address <-> handle, strings kept alive per handle."""

    def __init__(self, capi):
        self.capi = capi
        self.lock = threading.Lock()
        self.by_handle = {}
        self.by_addr = {}
        self.strings = {}
        # Freed structs are held a while so their addresses are not handed out again at
        # once: a use-after-destroy then reads as "destroyed handle", not as another object.
        self.quarantine = collections.deque(maxlen=4096)
        capi.HANDLES.on_release(self.forget)

    def to_c(self, h, ctype):
        if not h:
            return ffi.NULL
        with self.lock:
            s = self.by_handle.get(h)
            if s is None:
                kind = self.capi.HANDLES.kind_of(h)
                if kind == self.capi.ALLOCATOR:
                    s = ffi.new("struct __ncnn_allocator_t*")
                    s.fast_malloc = lib._ncnn_c_fast_malloc
                    s.fast_free = lib._ncnn_c_fast_free
                elif kind == self.capi.NET:
                    s = ffi.new("struct __ncnn_net_t*")
                else:
                    s = ffi.new("struct _ncnn_c_opaque*")
                # pthis carries the handle, for debuggers and the curious; never trusted back.
                s.pthis = ffi.cast("void*", h)
                self.by_handle[h] = s
                self.by_addr[int(ffi.cast("uintptr_t", s))] = h
        return ffi.cast(ctype, s)

    def from_c(self, p):
        if p == ffi.NULL:
            return 0
        with self.lock:
            return self.by_addr.get(int(ffi.cast("uintptr_t", p)), self.capi.FOREIGN)

    def string(self, owner, text):
        with self.lock:
            cache = self.strings.setdefault(owner, {})
            s = cache.get(text)
            if s is None:
                s = cache[text] = ffi.new("char[]", text.encode("utf-8", "surrogateescape"))
            return s

    def forget(self, h):
        with self.lock:
            s = self.by_handle.pop(h, None)
            if s is not None:
                self.by_addr.pop(int(ffi.cast("uintptr_t", s)), None)
                self.quarantine.append(s)
            self.strings.pop(h, None)


_ERROR = {"int": -1, "size_t": 0, "float": 0.0}


def _attach(capi):
    ptrs = _Pointers(capi)
    log = logging.getLogger("ncnn_c")

    def onerror(exc, val, tb):
        log.error("C bridge: %s: %s", getattr(exc, "__name__", exc), val)

    def make(name, ret, ret_cat, params):
        impl = capi.EXPORTS[name]
        cats = [c for _, c in params]
        types = [t for t, _ in params]
        out_idx = [i for i, c in enumerate(cats) if c == "out_handle"]
        owner_idx = next((i for i, c in enumerate(cats) if c == "handle"), None)

        def convert(args):
            py = []
            for a, c in zip(args, cats, strict=True):
                if c == "scalar":
                    py.append(a)
                elif c == "handle":
                    py.append(ptrs.from_c(a))
                elif c == "str":
                    py.append(None if a == ffi.NULL else ffi.string(a).decode("utf-8", "surrogateescape"))
                elif c == "addr":
                    py.append(int(ffi.cast("uintptr_t", a)))
                # out_handle: not an argument in Python, it comes back in the result
            return py

        def call(*args):
            if any(args[i] == ffi.NULL for i in out_idx):
                log.error("%s: NULL output pointer", name)
                return _ERROR.get(ret_cat)
            result = impl(*convert(args))
            if out_idx:
                # the Python form returns (ret, handle, ...) for the out-parameters
                if not isinstance(result, tuple):
                    result = (result,) + (0,) * len(out_idx)
                for i, h in zip(out_idx, result[1:], strict=True):
                    args[i][0] = ptrs.to_c(h, types[i][:-1])
                result = result[0]
            if ret_cat == "void":
                return None
            if ret_cat == "handle":
                return ptrs.to_c(result, ret)
            if ret_cat == "rawptr":
                return ffi.cast("void*", result or 0)
            if ret_cat == "str":
                if result is None:
                    return ffi.NULL
                owner = ptrs.from_c(args[owner_idx]) if owner_idx is not None else 0
                return ptrs.string(owner, result)
            return result

        call.__name__ = "_impl_" + name
        kw = {"name": "_impl_" + name, "onerror": onerror}
        if ret_cat in _ERROR:
            kw["error"] = _ERROR[ret_cat]
        ffi.def_extern(**kw)(call)

    for name, ret, ret_cat, params in _SIGNATURES:  # noqa: F821
        make(name, ret, ret_cat, params)

    @ffi.def_extern(name="_ncnn_c_fast_malloc", onerror=onerror)
    def _fast_malloc(allocator, size):
        return ffi.cast("void*", capi.allocator_fast_malloc(ptrs.from_c(allocator), size))

    @ffi.def_extern(name="_ncnn_c_fast_free", onerror=onerror)
    def _fast_free(allocator, p):
        capi.allocator_fast_free(ptrs.from_c(allocator), int(ffi.cast("uintptr_t", p)))


try:
    _setup_sys_path()
    import ncnn_c.capi as _capi

    _setup_logging()
    _attach(_capi)
    _alive = True
except BaseException as _e:  # noqa: B036 - reported and turned into "not alive"
    sys.stderr.write(f"ncnn_c: cannot start the Python side: {type(_e).__name__}: {_e}\n")
