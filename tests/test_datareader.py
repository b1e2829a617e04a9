"""DataReader family: stock readers, byte accounting, and PyPI-style user subclasses."""

from __future__ import annotations

import ctypes
import io

import numpy as np

from ncnn_c.datareader import DataReader, DataReaderFromEmpty, DataReaderFromMemory, DataReaderFromStdio


class SliceReader(DataReader):
    """A user reader written the PyPI way: fill ``buf`` and return the count."""

    def __init__(self, data: bytes) -> None:
        super().__init__()
        self.data = data
        self.pos = 0
        self.calls = 0

    def read(self, buf, size):
        self.calls += 1
        chunk = self.data[self.pos : self.pos + size]
        buf[: len(chunk)] = chunk
        self.pos += len(chunk)
        return len(chunk)


class MemmoveReader(SliceReader):
    def read(self, buf, size):
        chunk = self.data[self.pos : self.pos + size]
        ctypes.memmove(buf, chunk, len(chunk))
        self.pos += len(chunk)
        return len(chunk)


def test_memory_reader_tracks_consumed_bytes():
    data = bytes(range(10))
    dr = DataReaderFromMemory(data)
    assert dr.read_bytes(3) == b"\x00\x01\x02"
    assert dr.consumed == 3
    assert dr.read_bytes(100) == bytes(range(3, 10))
    assert dr.consumed == 10 and dr.remaining == 0
    assert dr.read_bytes(4) == b""
    assert dr.consumed == 10


def test_memory_reader_read_fills_buffer():
    dr = DataReaderFromMemory(bytearray(b"abcdef"))
    buf = (ctypes.c_ubyte * 4)()
    assert dr.read(buf, 4) == 4
    assert bytes(buf) == b"abcd"
    assert dr.read(buf, 4) == 2
    assert bytes(buf)[:2] == b"ef"


def test_memory_reader_accepts_numpy_buffers():
    arr = np.arange(4, dtype="<i4")
    dr = DataReaderFromMemory(arr)
    assert dr.read_bytes(8) == arr[:2].tobytes()
    assert dr.consumed == 8


def test_stdio_reader_binary_and_text_files(tmp_path):
    dr = DataReaderFromStdio(io.BytesIO(b"hello world"))
    assert dr.read_bytes(5) == b"hello"
    assert dr.read_bytes(50) == b" world"
    assert dr.read_bytes(1) == b""
    p = tmp_path / "t.txt"
    p.write_text("7767517\n")
    with open(p) as f:  # text mode is accepted too
        assert DataReaderFromStdio(f).read_text(1 << 20) == b"7767517\n"


def test_stdio_reader_on_closed_file_returns_nothing(caplog):
    f = io.BytesIO(b"abc")
    f.close()
    assert DataReaderFromStdio(f).read_bytes(3) == b""
    assert "read failed" in caplog.text


def test_empty_reader_reads_zeros():
    dr = DataReaderFromEmpty()
    assert dr.read_bytes(7) == bytes(7)
    buf = (ctypes.c_ubyte * 3)(1, 2, 3)
    assert dr.read(buf, 3) == 3 and bytes(buf) == b"\0\0\0"
    assert dr.read_text(1 << 20) == b""


def test_user_subclass_read_bytes_both_fill_styles():
    for cls in (SliceReader, MemmoveReader):
        dr = cls(b"0123456789")
        assert dr.read_bytes(4) == b"0123"
        assert dr.read_bytes(10) == b"456789"
        assert dr.read_bytes(1) == b""


def test_user_subclass_returning_bytes_is_accepted():
    class BytesReader(DataReader):
        def read(self, buf, size):
            return b"xy"[:size]

    assert BytesReader().read_bytes(2) == b"xy"


def test_base_reader_reads_nothing():
    dr = DataReader()
    assert dr.read_bytes(4) == b""
    assert dr.scan("%d", None) == 0


def test_read_text_stops_at_nul_and_limit():
    assert DataReaderFromMemory(b"abc\0def").read_text(100) == b"abc"
    assert DataReaderFromMemory(b"x" * 200).read_text(100) is None
    big = b"y" * 100_000
    assert SliceReader(big).read_text(1 << 20) == big


def test_large_read_is_chunked_and_stops_at_end(monkeypatch):
    import ncnn_c.datareader as drm

    monkeypatch.setattr(drm, "_CHUNK", 4)
    dr = SliceReader(b"abcdefghij")
    assert dr.read_bytes(1000) == b"abcdefghij"
    assert dr.calls == 3  # 4 + 4 + 2: a short chunk ends the read
