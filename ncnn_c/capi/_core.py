"""Shared machinery of the handle API: the handle table, the export decorator, raw memory.

See the package docstring (``ncnn_c.capi``) for the conventions.
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

from ..datareader import DataReader, DataReaderFromMemory

log = logging.getLogger("ncnn_c")

# Handle kinds; the names double as the words used in log lines.
ALLOCATOR = "allocator"
OPTION = "option"
PIPELINECACHE = "pipelinecache"
MAT = "mat"
NET = "net"
EXTRACTOR = "extractor"
BLOB = "blob"
PARAMDICT = "paramdict"
DATAREADER = "datareader"
MODELBIN = "modelbin"
LAYER = "layer"
KINDS = (ALLOCATOR, OPTION, PIPELINECACHE, MAT, NET, EXTRACTOR, BLOB, PARAMDICT, DATAREADER, MODELBIN, LAYER)

# What the C bridge passes for a pointer it never handed out (or has forgotten after destroy).
FOREIGN = -1

# C return categories -> the value a failed call returns.
INT, SIZE, PTR, STR, VOID, FLOAT = "int", "size_t", "ptr", "str", "void", "float"
ERROR_RETURN: dict[str, Any] = {INT: -1, SIZE: 0, PTR: 0, STR: None, VOID: None, FLOAT: 0.0}


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
    if isinstance(s, str):
        return s
    if hasattr(s, "__fspath__"):
        return _text_arg(s.__fspath__(), what)
    # an int here is a C char* the bridge should have turned into text, or a mistake: never
    # a file name (ncnn_pipelinecache_save(h, 3) must not write a file called "3")
    raise TypeError(f"{what}: expected a string, got {type(s).__name__}")


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


# ---------------------------------------------------------------- C callbacks

# Structs handed to C (datareader, modelbin, layer) carry function pointers a C program may
# replace (``dr->read = my_read``). The C bridge installs a resolver here: given a handle and
# a slot name it returns a Python callable that calls the C function now in that slot, or
# None when the slot still holds the library's own default. Without the bridge (pure Python)
# every slot is the default.
_override_resolver: list[Callable[[int, str], Callable[..., Any] | None]] = []


def set_override_resolver(fn: Callable[[int, str], Callable[..., Any] | None]) -> None:
    _override_resolver[:] = [fn]


def c_override(h: int, slot: str) -> Callable[..., Any] | None:
    if not _override_resolver:
        return None
    return _override_resolver[0](h, slot)


class TempHandles:
    """Handles lent to a C callback for the duration of one call (``with TempHandles() as t``)."""

    def __init__(self) -> None:
        self._made: list[int] = []

    def add(self, kind: str, obj: Any) -> int:
        if obj is None:
            return 0
        h = HANDLES.add(kind, obj)
        self._made.append(h)
        return h

    def __enter__(self) -> TempHandles:
        return self

    def __exit__(self, *exc: Any) -> None:
        for h in self._made:
            HANDLES.release(h)
        self._made.clear()


def take_mat(h: int) -> Any:
    """The Mat behind a handle a C callback returned, releasing the handle (ncnn destroys it)."""
    from ..mat import Mat

    if not h:
        return Mat()
    try:
        m = HANDLES.get(h, MAT)
    finally:
        if HANDLES.alive(h) and HANDLES.kind_of(h) == MAT:
            HANDLES.release(h)
    return m


def write_c(address: Any, ctype: Any, value: Any, what: str) -> None:
    """Store ``value`` at a C out-pointer (int address); NULL is an error."""
    if not _is_address(address) or address == 0:
        raise ValueError(f"{what}: NULL output pointer")
    ctype.from_address(_address(address, what)).value = value
