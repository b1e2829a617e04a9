# The embedded side of libncnn_c.so: cffi runs this file as the library's init code the
# first time a C program calls into it (capi/build.py prepends _MODULE, _BUILD_PATHS,
# _ENV_PYTHONPATH and _SIGNATURES). It is not imported as a module.
#
# Its job is translation only: C pointers <-> ncnn_c.capi integer handles, C strings <->
# str, out-parameters <-> return values. Behaviour lives in the ncnn_c/capi/ package.
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
                elif kind in _STRUCT_SLOTS:
                    stype, slots = _STRUCT_SLOTS[kind]
                    s = ffi.new(f"struct {stype}*")
                    for slot in slots:
                        setattr(s, slot, getattr(lib, _DEFAULT_FN[kind, slot]))
                else:
                    s = ffi.new("struct _ncnn_c_opaque*")
                # pthis carries the handle, for debuggers and the curious; never trusted back.
                s.pthis = ffi.cast("void*", h)
                self.by_handle[h] = s
                self.by_addr[int(ffi.cast("uintptr_t", s))] = h
        return ffi.cast(ctype, s)

    def struct_of(self, h):
        with self.lock:
            return self.by_handle.get(h)

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

# handle kind -> (struct tag, function-pointer slots the library fills with its defaults)
_STRUCT_SLOTS = {
    "datareader": ("__ncnn_datareader_t", ("scan", "read")),
    "modelbin": ("__ncnn_modelbin_t", ("load_1d", "load_2d", "load_3d")),
    "layer": (
        "__ncnn_layer_t",
        (
            "load_param",
            "load_model",
            "create_pipeline",
            "destroy_pipeline",
            "forward_1",
            "forward_n",
            "forward_inplace_1",
            "forward_inplace_n",
        ),
    ),
}
_PREFIX = {"datareader": "_ncnn_c_dr_", "modelbin": "_ncnn_c_mb_", "layer": "_ncnn_c_layer_"}
_DEFAULT_FN = {(k, slot): _PREFIX[k] + slot for k, (_, slots) in _STRUCT_SLOTS.items() for slot in slots}


def _attach(capi):
    ptrs = _Pointers(capi)
    log = logging.getLogger("ncnn_c")

    class _HandleArray:
        def __init__(self, p):
            self.p = p

        def handles(self, n):
            if self.p == ffi.NULL:
                return None if n else []
            return [ptrs.from_c(self.p[i]) for i in range(max(int(n), 0))]

    globals()["_HandleArray"] = _HandleArray

    def _creator(fp):
        def create(userdata):
            return ptrs.from_c(fp(ffi.cast("void*", userdata or 0)))

        return create

    def _destroyer(fp):
        def destroy(layer, userdata):
            fp(ptrs.to_c(layer, "ncnn_layer_t"), ffi.cast("void*", userdata or 0))

        return destroy

    fn_wrappers = {"ncnn_layer_creator_t": _creator, "ncnn_layer_destroyer_t": _destroyer}
    _attach_slots(capi, ptrs, log)

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
            for a, c, t in zip(args, cats, types, strict=True):
                if c == "scalar":
                    py.append(a)
                elif c == "handle":
                    py.append(ptrs.from_c(a))
                elif c == "str":
                    py.append(None if a == ffi.NULL else ffi.string(a).decode("utf-8", "surrogateescape"))
                elif c == "addr":
                    py.append(int(ffi.cast("uintptr_t", a)))
                elif c == "handle_array":
                    py.append(_HandleArray(a))
                elif c == "fnptr":
                    py.append(None if a == ffi.NULL else fn_wrappers[t](a))
                # out_handle: not an argument in Python, it comes back in the result
            # an array's length is the int that follows it (ncnn's (array, n) pairs)
            for i, v in enumerate(py):
                if isinstance(v, _HandleArray):
                    py[i] = v.handles(py[i + 1] if i + 1 < len(py) else 0)
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


def _attach_slots(capi, ptrs, log):
    """Struct function pointers: the defaults C may call, and calls into C replacements."""
    from ncnn_c.capi import datareader as dr_mod
    from ncnn_c.capi import layer as layer_mod
    from ncnn_c.capi import modelbin as mb_mod

    def onerror(exc, val, tb):
        log.error("C callback: %s: %s", getattr(exc, "__name__", exc), val)

    def h(p):
        return ptrs.from_c(p)

    def c(handle, ctype):
        return ptrs.to_c(handle, ctype)

    def mats_in(arr, n):
        return [h(arr[i]) for i in range(max(int(n), 0))]

    # -- defaults (C called the slot the library filled in)
    @ffi.def_extern(name="_ncnn_c_dr_scan", error=0, onerror=onerror)
    def _dr_scan(dr, fmt, p):
        return dr_mod.default_scan(h(dr), ffi.string(fmt).decode(), int(ffi.cast("uintptr_t", p)))

    @ffi.def_extern(name="_ncnn_c_dr_read", error=0, onerror=onerror)
    def _dr_read(dr, buf, size):
        return dr_mod.default_read(h(dr), int(ffi.cast("uintptr_t", buf)), size)

    def _mb_load(mb, *args):
        return c(mb_mod.default_load(h(mb), *args), "ncnn_mat_t")

    for n in (1, 2, 3):
        ffi.def_extern(name=f"_ncnn_c_mb_load_{n}d", onerror=onerror)(_mb_load)

    def _layer_simple(slot):
        def fn(layer, arg):
            return layer_mod.default_call(h(layer), slot, h(arg))

        ffi.def_extern(name=f"_ncnn_c_layer_{slot}", error=-1, onerror=onerror)(fn)

    for slot in ("load_param", "load_model", "create_pipeline", "destroy_pipeline"):
        _layer_simple(slot)

    @ffi.def_extern(name="_ncnn_c_layer_forward_1", error=-1, onerror=onerror)
    def _forward_1(layer, bottom, top, opt):
        if top == ffi.NULL:
            log.error("forward_1: NULL top_blob")
            return -1
        ret, th = layer_mod.default_call(h(layer), "forward_1", h(bottom), h(opt))
        top[0] = c(th, "ncnn_mat_t")
        return ret

    @ffi.def_extern(name="_ncnn_c_layer_forward_n", error=-1, onerror=onerror)
    def _forward_n(layer, bottoms, n, tops, n2, opt):
        if (n > 0 and bottoms == ffi.NULL) or (n2 > 0 and tops == ffi.NULL):
            log.error("forward_n: NULL blob array")
            return -1
        ret, ths = layer_mod.default_call(h(layer), "forward_n", mats_in(bottoms, n), n2, h(opt))
        for i, th in enumerate(ths):
            tops[i] = c(th, "ncnn_mat_t")
        return ret

    @ffi.def_extern(name="_ncnn_c_layer_forward_inplace_1", error=-1, onerror=onerror)
    def _forward_inplace_1(layer, mat, opt):
        return layer_mod.default_call(h(layer), "forward_inplace_1", h(mat), h(opt))

    @ffi.def_extern(name="_ncnn_c_layer_forward_inplace_n", error=-1, onerror=onerror)
    def _forward_inplace_n(layer, mats, n, opt):
        if n > 0 and mats == ffi.NULL:
            log.error("forward_inplace_n: NULL blob array")
            return -1
        return layer_mod.default_call(h(layer), "forward_inplace_n", mats_in(mats, n), h(opt))

    # -- replacements (a C program stored its own function in the slot)
    defaults = {}
    for kind, (stype, slots) in _STRUCT_SLOTS.items():
        probe = ffi.new(f"struct {stype}*")
        for slot in slots:
            setattr(probe, slot, getattr(lib, _DEFAULT_FN[kind, slot]))
            defaults[kind, slot] = int(ffi.cast("uintptr_t", getattr(probe, slot)))

    def calling(kind, slot, s, fp):
        if kind == "datareader":
            if slot == "read":
                return lambda buf, size: int(fp(s, ffi.cast("void*", buf), size))
            return lambda fmt, p: int(fp(s, fmt.encode(), ffi.cast("void*", p)))
        if kind == "modelbin":
            return lambda *args: h(fp(s, *args))
        if slot in ("load_param", "load_model", "create_pipeline", "destroy_pipeline"):
            ctype = {"load_param": "ncnn_paramdict_t", "load_model": "ncnn_modelbin_t"}.get(
                slot, "ncnn_option_t"
            )
            return lambda arg: int(fp(s, c(arg, ctype)))
        if slot == "forward_1":

            def forward_1(bottom, opt):
                out = ffi.new("ncnn_mat_t*")
                ret = fp(s, c(bottom, "ncnn_mat_t"), out, c(opt, "ncnn_option_t"))
                return int(ret), h(out[0])

            return forward_1
        if slot == "forward_n":

            def forward_n(bottoms, n2, opt):
                arr = ffi.new("ncnn_mat_t[]", [c(b, "ncnn_mat_t") for b in bottoms] or [ffi.NULL])
                tops = ffi.new("ncnn_mat_t[]", max(int(n2), 1))
                ret = fp(s, arr, len(bottoms), tops, n2, c(opt, "ncnn_option_t"))
                return int(ret), [h(tops[i]) for i in range(int(n2))]

            return forward_n
        if slot == "forward_inplace_1":
            return lambda mat, opt: int(fp(s, c(mat, "ncnn_mat_t"), c(opt, "ncnn_option_t")))

        def forward_inplace_n(mats, opt):
            arr = ffi.new("ncnn_mat_t[]", [c(m, "ncnn_mat_t") for m in mats] or [ffi.NULL])
            return int(fp(s, arr, len(mats), c(opt, "ncnn_option_t")))

        return forward_inplace_n

    def resolve(handle, slot):
        s = ptrs.struct_of(handle)
        if s is None:
            return None  # C never saw this handle: nothing can have been replaced
        kind = capi.HANDLES.kind_of(handle)
        if (kind, slot) not in defaults:
            return None
        fp = getattr(ffi.cast(f"struct {_STRUCT_SLOTS[kind][0]}*", s), slot)
        if int(ffi.cast("uintptr_t", fp)) == defaults[kind, slot]:
            return None
        if fp == ffi.NULL:

            def null_slot(*args):
                raise RuntimeError(f"{kind}->{slot} is NULL")

            return null_slot
        return calling(kind, slot, s, fp)

    capi.set_override_resolver(resolve)


try:
    _setup_sys_path()
    import ncnn_c.capi as _capi

    _setup_logging()
    _attach(_capi)
    _alive = True
except BaseException as _e:  # noqa: B036 - reported and turned into "not alive"
    sys.stderr.write(f"ncnn_c: cannot start the Python side: {type(_e).__name__}: {_e}\n")
