"""Data readers: the plain (callback) reader, readers over a C ``FILE*`` and over memory.

Every reader handle wraps a ``_CDataReader``: each read first asks the C bridge whether the
program replaced the struct's ``read`` / ``scan`` pointer (``dr->read = my_read``, as in
ncnn's own C API test); if so the C function does the reading, else the built-in one.
"""

from __future__ import annotations

import ctypes
import ctypes.util
from typing import Any

from ..datareader import DataReader
from ._core import DATAREADER, HANDLES, PTR, VOID, _address, _destroy, _export, _is_address, c_override


class _CDataReader(DataReader):
    """A DataReader whose ``read``/``scan`` a C program may override through the struct."""

    def __init__(self, inner: DataReader) -> None:
        self.inner = inner
        self.handle = 0

    def read(self, buf: Any, size: int) -> int:
        fn = c_override(self.handle, "read") if self.handle else None
        if fn is None:
            return int(self.inner.read(buf, size))
        return int(fn(ctypes.addressof(buf), int(size)))

    def read_bytes(self, n: int) -> bytes:
        if self.handle and c_override(self.handle, "read") is not None:
            return super().read_bytes(n)
        return self.inner.read_bytes(n)

    def read_text(self, limit: int) -> bytes | None:
        if self.handle and c_override(self.handle, "read") is not None:
            return super().read_text(limit)
        return self.inner.read_text(limit)

    def scan(self, format: str, p: Any) -> int:  # noqa: A002 - ncnn's name
        fn = c_override(self.handle, "scan") if self.handle else None
        if fn is None:
            return int(self.inner.scan(format, p))
        return int(fn(format, int(p or 0)))

    def __getattr__(self, name: str) -> Any:
        # consumed and friends of the reader underneath (the memory loaders report them)
        if name == "inner":
            raise AttributeError(name)
        return getattr(self.inner, name)


_libc: Any = None


def _c_library() -> Any:
    global _libc
    if _libc is None:
        lib = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        lib.fread.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_size_t, ctypes.c_void_p]
        lib.fread.restype = ctypes.c_size_t
        _libc = lib
    return _libc


class _FileReader(DataReader):
    """Reads a C ``FILE*`` with the C library's ``fread`` (ncnn's DataReaderFromStdio)."""

    def __init__(self, fp: int) -> None:
        self.fp = _address(fp, "FILE*")

    def read(self, buf: Any, size: int) -> int:
        return int(_c_library().fread(ctypes.addressof(buf), 1, int(size), self.fp))

    def read_bytes(self, n: int) -> bytes:
        if n <= 0:
            return b""
        buf = ctypes.create_string_buffer(n)
        got = int(_c_library().fread(buf, 1, n, self.fp))
        return buf.raw[:got]


class _CursorReader(DataReader):
    """Reads through a ``const unsigned char**``: like ncnn, it advances the caller's pointer."""

    def __init__(self, cursor: int) -> None:
        self.cursor = ctypes.c_void_p.from_address(_address(cursor, "mem"))
        if not self.cursor.value:
            raise ValueError("mem: *mem is NULL")
        self.consumed = 0

    def read_bytes(self, n: int) -> bytes:
        if n <= 0:
            return b""
        p = int(self.cursor.value or 0)
        data = ctypes.string_at(p, n)
        self.cursor.value = p + n
        self.consumed += n
        return data

    def read(self, buf: Any, size: int) -> int:
        data = self.read_bytes(int(size))
        ctypes.memmove(buf, data, len(data))
        return len(data)

    def read_text(self, limit: int) -> bytes | None:
        p = int(self.cursor.value or 0)
        text = ctypes.string_at(p)
        if len(text) > limit:
            return None
        self.cursor.value = p + len(text)
        self.consumed += len(text)
        return text


def _new_reader(inner: DataReader) -> int:
    obj = _CDataReader(inner)
    obj.handle = HANDLES.add(DATAREADER, obj)
    return obj.handle


@_export(PTR)
def ncnn_datareader_create() -> int:
    """A reader that reads nothing until the C program sets ``dr->read`` (and ``dr->scan``)."""
    return _new_reader(DataReader())


@_export(PTR)
def ncnn_datareader_create_from_stdio(fp: Any) -> int:
    """``fp``: a C ``FILE*`` address, or (Python) an open binary file object."""
    if _is_address(fp):
        return _new_reader(_FileReader(fp))
    if fp is None or not hasattr(fp, "read"):
        raise ValueError(f"fp must be a FILE* address or a file object, got {type(fp).__name__}")
    from ..datareader import DataReaderFromStdio

    return _new_reader(DataReaderFromStdio(fp))


@_export(PTR)
def ncnn_datareader_create_from_memory(mem: Any) -> int:
    """``mem``: the address of a ``const unsigned char*`` (advanced as data is read), or
    (Python) a bytes-like object."""
    if _is_address(mem):
        return _new_reader(_CursorReader(mem))
    from ..datareader import DataReaderFromMemory

    return _new_reader(DataReaderFromMemory(mem))


@_export(VOID)
def ncnn_datareader_destroy(dr: int) -> None:
    _destroy(dr, DATAREADER)


def reader(dr: int) -> DataReader:
    obj = HANDLES.get(dr, DATAREADER)
    return obj


# ---- the struct's default slots, called when C invokes dr->read / dr->scan unchanged


def default_read(dr: int, buf: int, size: int) -> int:
    obj = reader(dr)
    inner = obj.inner if isinstance(obj, _CDataReader) else obj
    if size == 0:
        return 0
    arr = (ctypes.c_ubyte * int(size)).from_address(_address(buf, "buf"))
    return int(inner.read(arr, int(size)))


def default_scan(dr: int, format: str, p: int) -> int:  # noqa: A002
    obj = reader(dr)
    inner = obj.inner if isinstance(obj, _CDataReader) else obj
    return int(inner.scan(format, p))
