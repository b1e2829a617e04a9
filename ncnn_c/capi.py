"""The ``ncnn_*`` functions of ncnn's ``c_api.h`` in Python, over opaque integer handles.

This module is what ``libncnn_c.so`` calls (see ``capi/build.py``) and it is usable on
its own from Python; it is also the single list of what the C library exports: every
function decorated with ``@_export`` here must be declared in ``capi/include/ncnn/c_api.h``
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

import ctypes
import functools
import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from . import __version__
from .datareader import DataReader, DataReaderFromMemory

log = logging.getLogger("ncnn_c")

# Handle kinds; the names double as the words used in log lines.
ALLOCATOR = "allocator"
OPTION = "option"
PIPELINECACHE = "pipelinecache"
MAT = "mat"
NET = "net"
EXTRACTOR = "extractor"
KINDS = (ALLOCATOR, OPTION, PIPELINECACHE, MAT, NET, EXTRACTOR)

# What the C bridge passes for a pointer it never handed out (or has forgotten after destroy).
FOREIGN = -1

# C return categories -> the value a failed call returns.
INT, SIZE, PTR, STR, VOID = "int", "size_t", "ptr", "str", "void"
ERROR_RETURN: dict[str, Any] = {INT: -1, SIZE: 0, PTR: 0, STR: None, VOID: None}


class HandleError(Exception):
    """A handle argument that does not name a live object of the expected kind."""


@dataclass
class _Entry:
    kind: str
    obj: Any
    parent: int = 0  # a borrowed handle dies with its parent
    resolve: Callable[[], Any] | None = None  # borrowed: look the object up on each use
    children: dict[str, int] = field(default_factory=dict)

    @property
    def borrowed(self) -> bool:
        return self.parent != 0

    def value(self) -> Any:
        return self.resolve() if self.resolve is not None else self.obj


class HandleTable:
    """ints <-> Python objects, thread-safe; release listeners let the C bridge free its structs."""

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._entries: dict[int, _Entry] = {}
        self._next = 1
        self._listeners: list[Callable[[int], None]] = []

    def add(self, kind: str, obj: Any, parent: int = 0, resolve: Callable[[], Any] | None = None) -> int:
        with self._lock:
            h = self._next
            self._next += 1
            self._entries[h] = _Entry(kind, obj, parent, resolve)
            return h

    def entry(self, h: Any, kind: str) -> _Entry:
        if not isinstance(h, int) or isinstance(h, bool):
            raise HandleError(f"{kind} handle must be an int, got {type(h).__name__}")
        if h == 0:
            raise HandleError(f"NULL {kind}")
        if h == FOREIGN:
            raise HandleError(f"{kind} pointer not made by ncnn_c, or already destroyed")
        with self._lock:
            e = self._entries.get(h)
        if e is None:
            raise HandleError(f"unknown or destroyed {kind} handle {h:#x}")
        if e.kind != kind:
            raise HandleError(f"handle {h:#x} is a {e.kind}, not a {kind}")
        return e

    def get(self, h: Any, kind: str) -> Any:
        return self.entry(h, kind).value()

    def get_or_none(self, h: Any, kind: str) -> Any:
        """For arguments where ncnn accepts NULL (allocators, caches): 0 -> None."""
        return None if h == 0 else self.get(h, kind)

    def child(self, parent: int, tag: str, kind: str, resolve: Callable[[], Any]) -> int:
        """The borrowed handle ``tag`` of ``parent``, created on first use, the same one after."""
        with self._lock:
            pe = self._entries[parent]
            h = pe.children.get(tag)
            if h is None or h not in self._entries:
                h = self.add(kind, None, parent=parent, resolve=resolve)
                pe.children[tag] = h
            return h

    def release(self, h: int) -> None:
        """Forget ``h`` and every handle borrowed from it; notify listeners for each."""
        with self._lock:
            gone = []
            stack = [h]
            while stack:
                x = stack.pop()
                e = self._entries.pop(x, None)
                if e is None:
                    continue
                gone.append(x)
                stack.extend(e.children.values())
            listeners = list(self._listeners)
        for x in gone:
            for cb in listeners:
                try:
                    cb(x)
                except Exception as exc:  # a listener must not break destroy
                    log.error("handle release listener: %s", exc)

    def alive(self, h: int) -> bool:
        with self._lock:
            return h in self._entries

    def kind_of(self, h: int) -> str | None:
        with self._lock:
            e = self._entries.get(h)
            return e.kind if e else None

    def on_release(self, cb: Callable[[int], None]) -> None:
        with self._lock:
            self._listeners.append(cb)

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)


HANDLES = HandleTable()

# name -> (function, C return category); the C build checks the header against this.
EXPORTS: dict[str, Callable[..., Any]] = {}


def _export(ret: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    err = ERROR_RETURN[ret]

    def deco(fn: Callable[..., Any]) -> Callable[..., Any]:
        name = fn.__name__

        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            try:
                return fn(*args, **kwargs)
            except HandleError as e:
                log.error("%s: %s", name, e)
            except Exception as e:  # the C boundary: report, never propagate
                log.error("%s: %s: %s", name, type(e).__name__, e)
            return err

        wrapper.c_return = ret  # type: ignore[attr-defined]
        EXPORTS[name] = wrapper
        return wrapper

    return deco


def _get(h: Any, kind: str) -> Any:
    return HANDLES.get(h, kind)


def _opt_get(h: Any, kind: str) -> Any:
    return HANDLES.get_or_none(h, kind)


def _destroy(h: Any, kind: str) -> None:
    e = HANDLES.entry(h, kind)
    if e.borrowed:
        log.error(
            "ncnn_%s_destroy: handle %#x belongs to its %s; not destroyed (ncnn: never destroy it)",
            kind,
            h,
            HANDLES.kind_of(e.parent) or "owner",
        )
        return
    HANDLES.release(h)


# ---------------------------------------------------------------- raw memory helpers


# Linux maps nothing below vm.mmap_min_addr (64 KiB by default): an int under it in a pointer
# position is a mistake (a size, a handle), never memory, and is refused instead of read.
_LOWEST_ADDRESS = 1 << 16


def _is_address(x: Any) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


def _address(x: int, what: str) -> int:
    """An int in a pointer position is a raw C address (as with ctypes); refuse impossible ones."""
    if x == 0:
        raise ValueError(f"{what}: NULL pointer")
    if not _LOWEST_ADDRESS <= x < 1 << 64:
        raise ValueError(f"{what}: {x:#x} is not a memory address")
    return x


def _bytes_at(buf: Any, n: int, what: str) -> bytes:
    """``n`` bytes from an address (C caller) or a bytes-like object (Python caller)."""
    if n < 0:
        raise ValueError(f"{what}: negative size {n}")
    if _is_address(buf):
        return ctypes.string_at(_address(buf, what), n) if n else b""
    mv = memoryview(buf).cast("B")
    if len(mv) < n:
        raise ValueError(f"{what}: buffer has {len(mv)} bytes, {n} needed")
    return mv[:n].tobytes()


def _u8_view(buf: Any, n: int, what: str, writable: bool = False) -> np.ndarray:
    """A uint8 numpy view (no copy) of ``n`` bytes at an address or in a buffer."""
    if _is_address(buf):
        _address(buf, what)
        if n == 0:
            return np.zeros(0, dtype=np.uint8)
        return np.ctypeslib.as_array((ctypes.c_ubyte * n).from_address(buf))
    arr = buf if isinstance(buf, np.ndarray) else np.frombuffer(buf, dtype=np.uint8)
    arr = arr.reshape(-1).view(np.uint8)
    if arr.size < n:
        raise ValueError(f"{what}: buffer has {arr.size} bytes, {n} needed")
    if writable and not arr.flags.writeable:
        raise ValueError(f"{what}: buffer is read-only")
    return arr[:n]


def _floats_at(buf: Any, n: int) -> np.ndarray | None:
    """``n`` floats from an address, or a sequence as is; NULL / None -> None (skip)."""
    if buf is None or (_is_address(buf) and buf == 0):
        return None
    if _is_address(buf):
        return np.array((ctypes.c_float * n).from_address(_address(buf, "float array")), dtype=np.float32)
    return np.asarray(buf, dtype=np.float32).reshape(-1)


def _text_arg(s: Any, what: str) -> str:
    if s is None:
        raise ValueError(f"{what}: NULL string")
    if isinstance(s, (bytes, bytearray)):
        return bytes(s).decode("utf-8", "surrogateescape")
    return str(s)


class _PointerReader(DataReader):
    """A DataReader over C memory of unknown length, as ncnn's ``*_memory`` loaders read it.

    ncnn trusts the caller that the buffer is long enough; so do we (reading past it is
    the caller's bug, exactly as in ncnn). ``consumed`` gives ncnn's size_t return.
    """

    def __init__(self, address: int) -> None:
        self.address = _address(address, "memory")
        self.consumed = 0

    def read_bytes(self, n: int) -> bytes:
        if n <= 0:
            return b""
        data = ctypes.string_at(self.address + self.consumed, n)
        self.consumed += n
        return data

    def read(self, buf: Any, size: int) -> int:
        data = self.read_bytes(size)
        ctypes.memmove(buf, data, len(data))
        return len(data)

    def read_text(self, limit: int) -> bytes | None:
        text = ctypes.string_at(self.address)
        if len(text) > limit:
            return None
        self.consumed += len(text)
        return text

    def scan(self, format: str, p: Any) -> int:  # noqa: A002 - ncnn's name
        return 0


def _memory_reader(mem: Any) -> Any:
    """A reader for ``mem``: C address -> _PointerReader, bytes-like -> DataReaderFromMemory."""
    if _is_address(mem):
        return _PointerReader(mem)
    return DataReaderFromMemory(mem)


# ---------------------------------------------------------------- version


_VERSION_PARTS = tuple(int(x) for x in __version__.split(".")[:3])


@_export(STR)
def ncnn_version() -> str:
    return __version__


@_export(INT)
def ncnn_version_number() -> int:
    major, minor, patch = (_VERSION_PARTS + (0, 0, 0))[:3]
    return major * 10000 + minor * 100 + patch


# ---------------------------------------------------------------- allocator


@_export(PTR)
def ncnn_allocator_create_pool_allocator() -> int:
    from .allocator import PoolAllocator

    return HANDLES.add(ALLOCATOR, PoolAllocator())


@_export(PTR)
def ncnn_allocator_create_unlocked_pool_allocator() -> int:
    from .allocator import UnlockedPoolAllocator

    return HANDLES.add(ALLOCATOR, UnlockedPoolAllocator())


@_export(VOID)
def ncnn_allocator_destroy(allocator: int) -> None:
    _destroy(allocator, ALLOCATOR)


# Blocks handed to C through the allocator struct's fast_malloc, by address, until fast_free.
_c_blocks: dict[int, tuple[int, Any]] = {}
_c_blocks_lock = threading.Lock()


def allocator_fast_malloc(allocator: int, size: int) -> int:
    """Backs ``allocator->fast_malloc`` in C: an address, 0 on failure (not a c_api.h export)."""
    try:
        a = _get(allocator, ALLOCATOR)
        buf = a.fastMalloc(int(size))
        addr = int(buf.__array_interface__["data"][0]) if size else 0
        with _c_blocks_lock:
            _c_blocks[addr] = (allocator, buf)
        return addr
    except Exception as e:
        log.error("fast_malloc: %s", e)
        return 0


def allocator_fast_free(allocator: int, ptr: int) -> None:
    """Backs ``allocator->fast_free`` in C."""
    try:
        with _c_blocks_lock:
            owner, buf = _c_blocks.pop(ptr, (0, None))
        if buf is None:
            if ptr:
                log.error("fast_free: %#x was not allocated by fast_malloc", ptr)
            return
        if owner != allocator:
            log.error("fast_free: %#x belongs to allocator %#x, not %#x", ptr, owner, allocator)
        if HANDLES.alive(owner):
            _get(owner, ALLOCATOR).fastFree(buf)
    except Exception as e:
        log.error("fast_free: %s", e)


# ---------------------------------------------------------------- option


# Every flag with an ncnn_option_get_/set_ pair in c_api.h; the accessors are generated.
OPTION_FLAGS = (
    "use_vulkan_compute",
    "use_local_pool_allocator",
    "use_winograd_convolution",
    "use_sgemm_convolution",
    "use_packing_layout",
    "use_fp16_packed",
    "use_fp16_storage",
    "use_fp16_arithmetic",
    "use_int8_packed",
    "use_int8_storage",
    "use_int8_arithmetic",
    "use_int16_packed",
    "use_int16_storage",
    "use_bf16_packed",
    "use_bf16_storage",
    "use_shader_local_memory",
    "use_cooperative_matrix",
)


@_export(PTR)
def ncnn_option_create() -> int:
    from .option import Option

    return HANDLES.add(OPTION, Option())


@_export(VOID)
def ncnn_option_destroy(opt: int) -> None:
    _destroy(opt, OPTION)


@_export(INT)
def ncnn_option_get_num_threads(opt: int) -> int:
    return int(_get(opt, OPTION).num_threads)


@_export(VOID)
def ncnn_option_set_num_threads(opt: int, num_threads: int) -> None:
    _get(opt, OPTION).num_threads = int(num_threads)


@_export(VOID)
def ncnn_option_set_blob_allocator(opt: int, allocator: int) -> None:
    o = _get(opt, OPTION)
    o.blob_allocator = _opt_get(allocator, ALLOCATOR)


@_export(VOID)
def ncnn_option_set_workspace_allocator(opt: int, allocator: int) -> None:
    o = _get(opt, OPTION)
    o.workspace_allocator = _opt_get(allocator, ALLOCATOR)


@_export(VOID)
def ncnn_option_set_pipeline_cache(opt: int, pipelinecache: int) -> None:
    o = _get(opt, OPTION)
    o.pipeline_cache = _opt_get(pipelinecache, PIPELINECACHE)


def _make_flag_accessors(flag: str) -> None:
    def getter(opt: int) -> int:
        return int(bool(getattr(_get(opt, OPTION), flag)))

    def setter(opt: int, enable: int) -> None:
        setattr(_get(opt, OPTION), flag, bool(enable))

    getter.__name__ = getter.__qualname__ = f"ncnn_option_get_{flag}"
    setter.__name__ = setter.__qualname__ = f"ncnn_option_set_{flag}"
    getter.__doc__ = f"``opt.{flag}`` as 0/1 (-1 on a bad handle)."
    setter.__doc__ = f"Set ``opt.{flag}``."
    globals()[getter.__name__] = _export(INT)(getter)
    globals()[setter.__name__] = _export(VOID)(setter)


for _flag in OPTION_FLAGS:
    _make_flag_accessors(_flag)
del _flag


# ---------------------------------------------------------------- pipeline cache


@_export(PTR)
def ncnn_pipelinecache_create(device_index: int) -> int:
    from .gpu.device import get_gpu_count, get_gpu_device
    from .gpu.pipelinecache import PipelineCache

    count = get_gpu_count()
    if not 0 <= device_index < count:
        raise ValueError(f"no Vulkan device {device_index} ({count} found)")
    return HANDLES.add(PIPELINECACHE, PipelineCache(get_gpu_device(device_index)))


@_export(VOID)
def ncnn_pipelinecache_destroy(pipelinecache: int) -> None:
    _destroy(pipelinecache, PIPELINECACHE)


@_export(VOID)
def ncnn_pipelinecache_clear(pipelinecache: int) -> None:
    _get(pipelinecache, PIPELINECACHE).clear()


@_export(SIZE)
def ncnn_pipelinecache_get_size(pipelinecache: int) -> int:
    return int(_get(pipelinecache, PIPELINECACHE).size())


@_export(INT)
def ncnn_pipelinecache_load_memory(pipelinecache: int, data: Any, size: int | None = None) -> int:
    pc = _get(pipelinecache, PIPELINECACHE)
    if size is None:
        size = len(memoryview(data).cast("B"))
    return int(pc.load_cache(_bytes_at(data, int(size), "load_memory")))


@_export(INT)
def ncnn_pipelinecache_save_memory(pipelinecache: int, data: Any = None, size: Any = None) -> Any:
    """C form ``(pc, data_addr, size_addr)``: with ``data`` 0 store the needed size in
    ``*size`` and return 0; else copy when ``*size`` is large enough (0), or return -1 and
    store the needed size. Python form ``(pc)``: the bytes, or None on failure."""
    if data is None and size is None:
        return _save_memory_bytes(pipelinecache)
    pc = _get(pipelinecache, PIPELINECACHE)
    out = bytearray()
    ret = pc.save_cache(out)
    if not _is_address(size) or size == 0:
        raise ValueError("size must point to a size_t")
    if ret != 0:
        return int(ret)
    cell = ctypes.c_size_t.from_address(_address(size, "size"))
    if not data:
        cell.value = len(out)
        return 0
    if cell.value < len(out):
        log.error("ncnn_pipelinecache_save_memory: buffer of %d bytes, %d needed", cell.value, len(out))
        cell.value = len(out)
        return -1
    ctypes.memmove(_address(data, "data"), bytes(out), len(out))
    cell.value = len(out)
    return 0


def _save_memory_bytes(pipelinecache: int) -> bytes | None:
    try:
        out = bytearray()
        ret = _get(pipelinecache, PIPELINECACHE).save_cache(out)
        if ret != 0:
            log.error("ncnn_pipelinecache_save_memory: save_cache returned %d", ret)
            return None
        return bytes(out)
    except Exception as e:  # the Python form reports failure as None, never raises
        log.error("ncnn_pipelinecache_save_memory: %s", e)
        return None


@_export(INT)
def ncnn_pipelinecache_load(pipelinecache: int, path: Any) -> int:
    return int(_get(pipelinecache, PIPELINECACHE).load_cache(_text_arg(path, "path")))


@_export(INT)
def ncnn_pipelinecache_save(pipelinecache: int, path: Any) -> int:
    return int(_get(pipelinecache, PIPELINECACHE).save_cache(_text_arg(path, "path")))


# ---------------------------------------------------------------- mat


def _new_mat(m: Any) -> int:
    return HANDLES.add(MAT, m)


def _mat_create(shape: tuple[int, ...], allocator: int, elemsize: int = 4, elempack: int = 1) -> int:
    from .mat import Mat

    if any(int(x) <= 0 for x in shape):
        raise ValueError(f"non-positive shape {shape}")
    m = Mat(*shape, elemsize=int(elemsize), elempack=int(elempack), allocator=_opt_get(allocator, ALLOCATOR))
    if m.empty():
        raise MemoryError(f"cannot allocate a Mat of shape {shape}")
    return _new_mat(m)


def _mat_external(
    shape: tuple[int, ...], data: int, allocator: int, elemsize: int = 4, elempack: int = 1
) -> int:
    from .mat import Mat

    if not _is_address(data):
        raise ValueError(f"data must be a memory address, got {type(data).__name__}")
    _address(data, "data")
    if any(int(x) <= 0 for x in shape):
        raise ValueError(f"non-positive shape {shape}")
    return _new_mat(
        Mat.from_external(
            int(data),
            *shape,
            elemsize=int(elemsize),
            elempack=int(elempack),
            allocator=_opt_get(allocator, ALLOCATOR),
        )
    )


@_export(PTR)
def ncnn_mat_create() -> int:
    from .mat import Mat

    return _new_mat(Mat())


@_export(PTR)
def ncnn_mat_create_1d(w: int, allocator: int) -> int:
    return _mat_create((w,), allocator)


@_export(PTR)
def ncnn_mat_create_2d(w: int, h: int, allocator: int) -> int:
    return _mat_create((w, h), allocator)


@_export(PTR)
def ncnn_mat_create_3d(w: int, h: int, c: int, allocator: int) -> int:
    return _mat_create((w, h, c), allocator)


@_export(PTR)
def ncnn_mat_create_4d(w: int, h: int, d: int, c: int, allocator: int) -> int:
    return _mat_create((w, h, d, c), allocator)


@_export(PTR)
def ncnn_mat_create_external_1d(w: int, data: int, allocator: int) -> int:
    return _mat_external((w,), data, allocator)


@_export(PTR)
def ncnn_mat_create_external_2d(w: int, h: int, data: int, allocator: int) -> int:
    return _mat_external((w, h), data, allocator)


@_export(PTR)
def ncnn_mat_create_external_3d(w: int, h: int, c: int, data: int, allocator: int) -> int:
    return _mat_external((w, h, c), data, allocator)


@_export(PTR)
def ncnn_mat_create_external_4d(w: int, h: int, d: int, c: int, data: int, allocator: int) -> int:
    return _mat_external((w, h, d, c), data, allocator)


@_export(PTR)
def ncnn_mat_create_1d_elem(w: int, elemsize: int, elempack: int, allocator: int) -> int:
    return _mat_create((w,), allocator, elemsize, elempack)


@_export(PTR)
def ncnn_mat_create_2d_elem(w: int, h: int, elemsize: int, elempack: int, allocator: int) -> int:
    return _mat_create((w, h), allocator, elemsize, elempack)


@_export(PTR)
def ncnn_mat_create_3d_elem(w: int, h: int, c: int, elemsize: int, elempack: int, allocator: int) -> int:
    return _mat_create((w, h, c), allocator, elemsize, elempack)


@_export(PTR)
def ncnn_mat_create_4d_elem(
    w: int, h: int, d: int, c: int, elemsize: int, elempack: int, allocator: int
) -> int:
    return _mat_create((w, h, d, c), allocator, elemsize, elempack)


@_export(PTR)
def ncnn_mat_create_external_1d_elem(w: int, data: int, elemsize: int, elempack: int, allocator: int) -> int:
    return _mat_external((w,), data, allocator, elemsize, elempack)


@_export(PTR)
def ncnn_mat_create_external_2d_elem(
    w: int, h: int, data: int, elemsize: int, elempack: int, allocator: int
) -> int:
    return _mat_external((w, h), data, allocator, elemsize, elempack)


@_export(PTR)
def ncnn_mat_create_external_3d_elem(
    w: int, h: int, c: int, data: int, elemsize: int, elempack: int, allocator: int
) -> int:
    return _mat_external((w, h, c), data, allocator, elemsize, elempack)


@_export(PTR)
def ncnn_mat_create_external_4d_elem(
    w: int, h: int, d: int, c: int, data: int, elemsize: int, elempack: int, allocator: int
) -> int:
    return _mat_external((w, h, d, c), data, allocator, elemsize, elempack)


@_export(VOID)
def ncnn_mat_destroy(mat: int) -> None:
    _destroy(mat, MAT)


@_export(VOID)
def ncnn_mat_fill_float(mat: int, v: float) -> None:
    _get(mat, MAT).fill(float(v))


@_export(PTR)
def ncnn_mat_clone(mat: int, allocator: int) -> int:
    return _new_mat(_get(mat, MAT).clone(allocator=_opt_get(allocator, ALLOCATOR)))


def _reshape(mat: int, shape: tuple[int, ...], allocator: int) -> int:
    m = _get(mat, MAT)
    out = m.reshape(*shape, allocator=_opt_get(allocator, ALLOCATOR))
    if out.empty() and not m.empty():
        raise ValueError(f"cannot reshape {m.w}x{m.h}x{m.d}x{m.c} to {shape}")
    return _new_mat(out)


@_export(PTR)
def ncnn_mat_reshape_1d(mat: int, w: int, allocator: int) -> int:
    return _reshape(mat, (w,), allocator)


@_export(PTR)
def ncnn_mat_reshape_2d(mat: int, w: int, h: int, allocator: int) -> int:
    return _reshape(mat, (w, h), allocator)


@_export(PTR)
def ncnn_mat_reshape_3d(mat: int, w: int, h: int, c: int, allocator: int) -> int:
    return _reshape(mat, (w, h, c), allocator)


@_export(PTR)
def ncnn_mat_reshape_4d(mat: int, w: int, h: int, d: int, c: int, allocator: int) -> int:
    return _reshape(mat, (w, h, d, c), allocator)


def _make_mat_getter(field_name: str, ret: str) -> None:
    def getter(mat: int) -> int:
        return int(getattr(_get(mat, MAT), field_name, 1 if field_name == "n" else 0))

    getter.__name__ = getter.__qualname__ = f"ncnn_mat_get_{field_name}"
    getter.__doc__ = f"``mat.{field_name}``."
    globals()[getter.__name__] = _export(ret)(getter)


for _field, _ret in (
    ("dims", INT),
    ("w", INT),
    ("h", INT),
    ("d", INT),
    ("c", INT),
    ("n", INT),
    ("elemsize", SIZE),
    ("elempack", INT),
    ("cstep", SIZE),
):
    _make_mat_getter(_field, _ret)
del _field, _ret


@_export(PTR)
def ncnn_mat_get_data(mat: int) -> int:
    m = _get(mat, MAT)
    return 0 if m.empty() else int(m.data_ptr())


@_export(PTR)
def ncnn_mat_get_channel_data(mat: int, c: int) -> int:
    m = _get(mat, MAT)
    if m.empty():
        raise ValueError("empty Mat")
    return int(m.channel(int(c)).data_ptr())


_PIXEL_CHANNELS = {1: 3, 2: 3, 3: 1, 4: 4, 5: 4}


def _pixels(pixels: Any, type_: int, w: int, h: int, stride: int) -> np.ndarray:
    ch = _PIXEL_CHANNELS.get(int(type_) & 0xFFFF)
    if ch is None:
        raise ValueError(f"unknown pixel type {type_:#x}")
    if w <= 0 or h <= 0:
        raise ValueError(f"image size {w}x{h}")
    stride = int(stride) or w * ch
    return _u8_view(pixels, stride * (h - 1) + w * ch, "pixels")


def _from_pixels_result(m: Any) -> int:
    if m.empty():
        raise ValueError("conversion produced an empty Mat")
    return _new_mat(m)


@_export(PTR)
def ncnn_mat_from_pixels(pixels: Any, type: int, w: int, h: int, stride: int, allocator: int) -> int:  # noqa: A002
    from .mat import Mat

    buf = _pixels(pixels, type, w, h, stride)
    return _from_pixels_result(
        Mat.from_pixels(buf, type, w, h, stride, allocator=_opt_get(allocator, ALLOCATOR))
    )


@_export(PTR)
def ncnn_mat_from_pixels_resize(
    pixels: Any,
    type: int,
    w: int,
    h: int,
    stride: int,  # noqa: A002
    target_width: int,
    target_height: int,
    allocator: int,
) -> int:
    from .mat import Mat

    buf = _pixels(pixels, type, w, h, stride)
    return _from_pixels_result(
        Mat.from_pixels_resize(
            buf, type, w, h, stride, target_width, target_height, allocator=_opt_get(allocator, ALLOCATOR)
        )
    )


@_export(PTR)
def ncnn_mat_from_pixels_roi(
    pixels: Any,
    type: int,
    w: int,
    h: int,
    stride: int,  # noqa: A002
    roix: int,
    roiy: int,
    roiw: int,
    roih: int,
    allocator: int,
) -> int:
    from .mat import Mat

    buf = _pixels(pixels, type, w, h, stride)
    return _from_pixels_result(
        Mat.from_pixels_roi(
            buf, type, w, h, stride, roix, roiy, roiw, roih, allocator=_opt_get(allocator, ALLOCATOR)
        )
    )


@_export(PTR)
def ncnn_mat_from_pixels_roi_resize(
    pixels: Any,
    type: int,
    w: int,
    h: int,
    stride: int,  # noqa: A002
    roix: int,
    roiy: int,
    roiw: int,
    roih: int,
    target_width: int,
    target_height: int,
    allocator: int,
) -> int:
    from .mat import Mat

    buf = _pixels(pixels, type, w, h, stride)
    return _from_pixels_result(
        Mat.from_pixels_roi_resize(
            buf,
            type,
            w,
            h,
            stride,
            roix,
            roiy,
            roiw,
            roih,
            target_width,
            target_height,
            allocator=_opt_get(allocator, ALLOCATOR),
        )
    )


def _out_channels(type_: int) -> int:
    dst = (int(type_) >> 16) & 0xFFFF or int(type_) & 0xFFFF
    ch = _PIXEL_CHANNELS.get(dst)
    if ch is None:
        raise ValueError(f"unknown pixel type {type_:#x}")
    return ch


@_export(VOID)
def ncnn_mat_to_pixels(mat: int, pixels: Any, type: int, stride: int) -> None:  # noqa: A002
    m = _get(mat, MAT)
    ch = _out_channels(type)
    stride = int(stride) or m.w * ch
    m.to_pixels(_u8_view(pixels, stride * (m.h - 1) + m.w * ch, "pixels", writable=True), type, stride)


@_export(VOID)
def ncnn_mat_to_pixels_resize(
    mat: int,
    pixels: Any,
    type: int,
    target_width: int,  # noqa: A002
    target_height: int,
    target_stride: int,
) -> None:
    m = _get(mat, MAT)
    ch = _out_channels(type)
    stride = int(target_stride) or target_width * ch
    if target_width <= 0 or target_height <= 0:
        raise ValueError(f"target size {target_width}x{target_height}")
    buf = _u8_view(pixels, stride * (target_height - 1) + target_width * ch, "pixels", writable=True)
    m.to_pixels_resize(buf, type, target_width, target_height, stride)


@_export(VOID)
def ncnn_mat_substract_mean_normalize(mat: int, mean_vals: Any, norm_vals: Any) -> None:
    m = _get(mat, MAT)
    n = (m.c if m.dims >= 3 else 1) * m.elempack
    m.substract_mean_normalize(_floats_at(mean_vals, n), _floats_at(norm_vals, n))


# ---------------------------------------------------------------- net


@_export(PTR)
def ncnn_net_create() -> int:
    from .net import Net

    return HANDLES.add(NET, Net())


@_export(VOID)
def ncnn_net_destroy(net: int) -> None:
    _destroy(net, NET)


@_export(PTR)
def ncnn_net_get_option(net: int) -> int:
    n = _get(net, NET)
    # Resolved on each use so the handle follows net.opt even if Net replaces the object.
    return HANDLES.child(net, "opt", OPTION, lambda: n.opt)


@_export(VOID)
def ncnn_net_set_option(net: int, opt: int) -> None:
    n = _get(net, NET)
    src = _get(opt, OPTION)
    if src is n.opt:
        return
    # ncnn assigns the struct (net->opt = *opt): every field, allocators and cache included,
    # into the net's own object, so borrowed handles see the new values.
    vars(n.opt).update(vars(src))


@_export(VOID)
def ncnn_net_set_vulkan_device(net: int, device_index: int) -> None:
    ret = _get(net, NET).set_vulkan_device(int(device_index))
    if isinstance(ret, int) and ret != 0:
        log.error("ncnn_net_set_vulkan_device: device %d rejected (%d)", device_index, ret)


def _load_ret(ret: Any) -> int:
    return int(ret) if ret is not None else 0


@_export(INT)
def ncnn_net_load_param(net: int, path: Any) -> int:
    return _load_ret(_get(net, NET).load_param(_text_arg(path, "path")))


@_export(INT)
def ncnn_net_load_param_bin(net: int, path: Any) -> int:
    return _load_ret(_get(net, NET).load_param_bin(_text_arg(path, "path")))


@_export(INT)
def ncnn_net_load_model(net: int, path: Any) -> int:
    return _load_ret(_get(net, NET).load_model(_text_arg(path, "path")))


@_export(INT)
def ncnn_net_load_param_memory(net: int, mem: Any) -> int:
    n = _get(net, NET)
    if _is_address(mem):
        mem = ctypes.string_at(_address(mem, "mem"))
    return _load_ret(n.load_param_mem(_text_arg(mem, "mem")))


@_export(SIZE)
def ncnn_net_load_param_bin_memory(net: int, mem: Any) -> int:
    """Bytes consumed; 0 on failure (ncnn returns the count even when loading failed)."""
    n = _get(net, NET)
    reader = _memory_reader(mem)
    if _load_ret(n.load_param_bin(reader)) != 0:
        return 0
    return int(reader.consumed)


@_export(SIZE)
def ncnn_net_load_model_memory(net: int, mem: Any) -> int:
    """Bytes consumed; 0 on failure (ncnn returns the count even when loading failed)."""
    n = _get(net, NET)
    reader = _memory_reader(mem)
    if _load_ret(n.load_model(reader)) != 0:
        return 0
    return int(reader.consumed)


@_export(VOID)
def ncnn_net_clear(net: int) -> None:
    _get(net, NET).clear()


@_export(INT)
def ncnn_net_get_input_count(net: int) -> int:
    return len(_get(net, NET).input_names())


@_export(INT)
def ncnn_net_get_output_count(net: int) -> int:
    return len(_get(net, NET).output_names())


def _nth(seq: list[Any], i: int, what: str) -> Any:
    if not 0 <= i < len(seq):
        raise IndexError(f"{what} {i} out of range 0..{len(seq) - 1}")
    return seq[i]


@_export(STR)
def ncnn_net_get_input_name(net: int, i: int) -> str:
    return str(_nth(_get(net, NET).input_names(), i, "input"))


@_export(STR)
def ncnn_net_get_output_name(net: int, i: int) -> str:
    return str(_nth(_get(net, NET).output_names(), i, "output"))


@_export(INT)
def ncnn_net_get_input_index(net: int, i: int) -> int:
    return int(_nth(_get(net, NET).input_indexes(), i, "input"))


@_export(INT)
def ncnn_net_get_output_index(net: int, i: int) -> int:
    return int(_nth(_get(net, NET).output_indexes(), i, "output"))


# ---------------------------------------------------------------- extractor


@_export(PTR)
def ncnn_extractor_create(net: int) -> int:
    return HANDLES.add(EXTRACTOR, _get(net, NET).create_extractor())


@_export(VOID)
def ncnn_extractor_destroy(ex: int) -> None:
    _destroy(ex, EXTRACTOR)


@_export(VOID)
def ncnn_extractor_set_option(ex: int, opt: int) -> None:
    _get(ex, EXTRACTOR).set_option(_get(opt, OPTION))


def _input(ex: int, key: Any, mat: int) -> int:
    return int(_get(ex, EXTRACTOR).input(key, _get(mat, MAT)))


def _extract(ex: int, key: Any) -> tuple[int, int]:
    e = _get(ex, EXTRACTOR)
    ret, m = e.extract(key)
    if ret != 0 or m is None:
        log.error("extract %r failed (%d)", key, ret)
        return (int(ret) or -1, 0)
    return 0, _new_mat(m)


@_export(INT)
def ncnn_extractor_input(ex: int, name: Any, mat: int) -> int:
    return _input(ex, _text_arg(name, "name"), mat)


@_export(INT)
def ncnn_extractor_input_index(ex: int, index: int, mat: int) -> int:
    return _input(ex, int(index), mat)


@_export(INT)
def ncnn_extractor_extract(ex: int, name: Any) -> Any:
    """``(ret, mat_handle)``; the new Mat belongs to the caller (ncnn_mat_destroy). On
    failure ``(non-zero, 0)``: ncnn would hand back an empty Mat, we give NULL."""
    return _extract(ex, _text_arg(name, "name"))


@_export(INT)
def ncnn_extractor_extract_index(ex: int, index: int) -> Any:
    """As ``ncnn_extractor_extract``, by blob index."""
    return _extract(ex, int(index))


# Generated accessors are module attributes now; make them importable by name too.
__all__ = sorted(EXPORTS) + ["HANDLES", "HandleTable", "HandleError", "EXPORTS", "OPTION_FLAGS", "KINDS"]


def _main(argv: list[str] | None = None) -> int:
    """``python -m ncnn_c.capi --build | --cflags | --libs``: thin front of capi/build.py."""
    import importlib.util
    import sys
    from pathlib import Path

    build_py = Path(__file__).resolve().parent.parent / "capi" / "build.py"
    spec = importlib.util.spec_from_file_location("_ncnn_c_capi_build", build_py)
    if spec is None or spec.loader is None or not build_py.exists():
        print(
            f"ncnn_c.capi: {build_py} not found (the C library builds from a source checkout)",
            file=sys.stderr,
        )
        return 2
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # dataclasses look their module up while the file runs
    spec.loader.exec_module(mod)
    return int(mod.main(sys.argv[1:] if argv is None else argv))


if __name__ == "__main__":
    raise SystemExit(_main())
