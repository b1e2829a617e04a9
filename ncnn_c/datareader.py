"""Byte sources for model files: the PyPI-shaped ``DataReader`` and its stock readers.

A user may subclass ``DataReader`` the way the PyPI package allows (override
``read(buf, size)``); the parsers only ever call ``read_bytes(n)``, which the stock
readers implement directly (no per-call buffer copies) and the base class maps onto
``read``. Weights are read with ``read_into(array)``: straight into the destination (a
file's ``readinto``, one slice copy from memory) in the stock readers, through
``read_bytes`` in every other reader, so a subclass's own ``read``/``read_bytes`` still
decides what comes. ``scan`` exists for API shape only: the text param parser reads the whole
text through ``read`` and tokenises it itself, which also gives it line numbers.

``open_regular_file`` is how every loader opens a model file by name: only regular files,
since opening a FIFO without a writer blocks forever and a device can stream without end.
"""

from __future__ import annotations

import ctypes
import io
import logging
import os
import stat

import numpy as np

from ._files import file_kind
from .errors import ModelFormatError

log = logging.getLogger("ncnn_c")

# Large reads are split into chunks so that an untrusted size (a garbage count in a
# param file) never makes us allocate more than the data that really exists + 1 chunk.
_CHUNK = 1 << 24


def open_regular_file(path):
    """A binary file object for reading ``path``; raises OSError, or ModelFormatError for
    anything but a regular file. The open itself is non-blocking, so a FIFO without a writer is refused
    instead of hanging (the same pattern as the pipeline cache loader)."""
    nonblock = getattr(os, "O_NONBLOCK", 0)
    fd = os.open(path, os.O_RDONLY | nonblock | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0))
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise ModelFormatError(f"{os.fsdecode(path)!r} is not a regular file ({file_kind(st.st_mode)})")
        if nonblock:
            os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


class DataReader:
    """Base class. Subclasses override ``read(buf, size) -> int`` (and ``scan``).

    ``buf`` is a ctypes ``c_ubyte`` array of ``size`` bytes: fill it with slice
    assignment (``buf[:n] = data``), ``ctypes.memmove(buf, src, n)`` or through
    ``memoryview(buf)``, and return the number of bytes written. Returning a
    bytes-like object instead is accepted too.
    """

    def scan(self, format: str, p) -> int:  # noqa: A002 - ncnn's name
        return 0

    def read(self, buf, size: int) -> int:
        return 0

    def read_bytes(self, n: int) -> bytes:
        """Up to ``n`` bytes; fewer only at the end of the data."""
        if n <= 0:
            return b""
        out = []
        left = n
        while left > 0:
            want = min(left, _CHUNK)
            buf = (ctypes.c_ubyte * want)()
            got = self.read(buf, want)
            if isinstance(got, (bytes, bytearray, memoryview)):
                data = bytes(got)[:want]
            else:
                try:
                    got = int(got)
                except (TypeError, ValueError):
                    got = 0
                got = max(0, min(got, want))
                data = bytes(memoryview(buf)[:got])
            out.append(data)
            left -= len(data)
            if len(data) < want:
                break
        return b"".join(out)

    def read_into(self, out: np.ndarray) -> int:
        """Fill the contiguous 1-D uint8 array ``out`` from the stream; the byte count read
        (less than ``out.size`` only at the end of the data)."""
        data = self.read_bytes(out.size)
        out[: len(data)] = np.frombuffer(data, dtype=np.uint8)
        return len(data)

    def remaining_bytes(self) -> int | None:
        """Bytes left to read when the reader knows it, else None. Lets a caller size a
        destination from an untrusted count only when the data is really there."""
        return None

    def read_text(self, limit: int) -> bytes | None:
        """Everything up to the first NUL byte or the end; None when over ``limit`` bytes."""
        parts = []
        total = 0
        while True:
            chunk = self.read_bytes(1 << 16)
            nul = chunk.find(b"\0")
            if nul >= 0:
                chunk = chunk[:nul]
            parts.append(chunk)
            total += len(chunk)
            if total > limit:
                return None
            if nul >= 0 or len(chunk) < (1 << 16):
                return b"".join(parts)


class DataReaderFromStdio(DataReader):
    """Reads from an open file object (binary mode preferred; text mode is encoded as UTF-8)."""

    def __init__(self, fp) -> None:
        self.fp = fp

    def read_bytes(self, n: int) -> bytes:
        if n <= 0:
            return b""
        out = []
        left = n
        while left > 0:
            try:
                data = self.fp.read(min(left, _CHUNK))
            except (OSError, ValueError, io.UnsupportedOperation) as e:
                log.error("DataReaderFromStdio: read failed: %s", e)
                break
            if isinstance(data, str):
                data = data.encode("utf-8")
            if not data:
                break
            out.append(data)
            left -= len(data)
        return b"".join(out)

    def read(self, buf, size: int) -> int:
        data = self.read_bytes(size)
        ctypes.memmove(buf, data, len(data))
        return len(data)

    def read_into(self, out: np.ndarray) -> int:
        cls = type(self)
        readinto = getattr(self.fp, "readinto", None)
        if cls.read_bytes is not DataReaderFromStdio.read_bytes or cls.read is not DataReaderFromStdio.read:
            return super().read_into(out)  # a subclass reads its own way
        if readinto is None or isinstance(self.fp, io.TextIOBase):
            return super().read_into(out)
        view = out.data.cast("B")
        got = 0
        while got < out.size:
            try:
                n = readinto(view[got : got + _CHUNK])
            except (OSError, ValueError, io.UnsupportedOperation) as e:
                log.error("DataReaderFromStdio: read failed: %s", e)
                break
            if not n:
                break
            got += int(n)
        return got

    def remaining_bytes(self) -> int | None:
        try:
            st = os.fstat(self.fp.fileno())
            if not stat.S_ISREG(st.st_mode) or isinstance(self.fp, io.TextIOBase):
                return None
            return max(0, st.st_size - self.fp.tell())
        except (AttributeError, OSError, ValueError, io.UnsupportedOperation):
            return None


class DataReaderFromMemory(DataReader):
    """Reads from a bytes-like object; ``consumed`` counts the bytes read so far."""

    def __init__(self, mem) -> None:
        self._mem = memoryview(mem).cast("B")
        self.consumed = 0

    @property
    def remaining(self) -> int:
        return len(self._mem) - self.consumed

    def read_bytes(self, n: int) -> bytes:
        if n <= 0:
            return b""
        start = self.consumed
        end = min(len(self._mem), start + n)
        self.consumed = end
        return self._mem[start:end].tobytes()

    def read_into(self, out: np.ndarray) -> int:
        cls = type(self)
        if cls.read_bytes is not DataReaderFromMemory.read_bytes or cls.read is not DataReaderFromMemory.read:
            return super().read_into(out)  # a subclass reads its own way
        start = self.consumed
        end = min(len(self._mem), start + out.size)
        self.consumed = end
        out[: end - start] = np.frombuffer(self._mem[start:end], dtype=np.uint8)
        return end - start

    def remaining_bytes(self) -> int | None:
        return self.remaining

    def read(self, buf, size: int) -> int:
        data = self.read_bytes(size)
        ctypes.memmove(buf, data, len(data))
        return len(data)


class DataReaderFromEmpty(DataReader):
    """Every read succeeds with zeros: loads zero weights for structure-only params."""

    def read_bytes(self, n: int) -> bytes:
        return bytes(max(0, n))

    def read(self, buf, size: int) -> int:
        ctypes.memset(buf, 0, size)
        return size

    def read_into(self, out: np.ndarray) -> int:
        if type(self).read_bytes is not DataReaderFromEmpty.read_bytes:
            return super().read_into(out)
        out[...] = 0
        return out.size

    def read_text(self, limit: int) -> bytes | None:
        return b""
