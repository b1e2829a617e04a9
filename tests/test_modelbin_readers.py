"""ModelBin over every kind of reader: weights read straight into their Mats (``read_into``)
give the same values, offsets and truncation errors as the byte-by-byte path, and a
reader subclass still decides what comes."""

from __future__ import annotations

import ctypes
import io
import struct

import numpy as np
import pytest

from ncnn_c.datareader import DataReader, DataReaderFromMemory, DataReaderFromStdio
from ncnn_c.modelbin import FP16_TAG, ModelBinFromDataReader

RNG = np.random.default_rng(99)
FP32 = RNG.standard_normal(1000).astype(np.float32)
FP16 = RNG.standard_normal(7).astype(np.float16)
TABLE = RNG.standard_normal(256).astype(np.float32)
IDX = RNG.integers(0, 256, 9, dtype=np.uint8)
RAW = RNG.standard_normal(5).astype(np.float32)


def blob() -> bytes:
    """fp32 with flag, fp16 (odd count, padded), int8 table (padded), raw fp32."""
    half = FP16.astype("<f2").tobytes()
    return (
        struct.pack("<I", 0)
        + FP32.astype("<f4").tobytes()
        + struct.pack("<I", FP16_TAG)
        + half
        + b"\0" * (-len(half) % 4)
        + b"\x01\0\0\0"
        + TABLE.astype("<f4").tobytes()
        + IDX.tobytes()
        + b"\0" * (-len(IDX) % 4)
        + RAW.astype("<f4").tobytes()
    )


class ReadOnly(DataReader):
    """A PyPI-style reader: only ``read(buf, size)``."""

    def __init__(self, data: bytes) -> None:
        self.data, self.pos = data, 0

    def read(self, buf, size: int) -> int:
        chunk = self.data[self.pos : self.pos + size]
        ctypes.memmove(buf, chunk, len(chunk))
        self.pos += len(chunk)
        return len(chunk)


class Inverting(DataReaderFromMemory):
    """A stock reader subclass with its own ``read_bytes``: the fast path must not bypass it."""

    def read_bytes(self, n: int) -> bytes:
        return bytes(b ^ 0xFF for b in super().read_bytes(n))


class Trickle(io.RawIOBase):
    """A file object whose ``readinto`` returns a few bytes a call."""

    def __init__(self, data: bytes) -> None:
        self.data, self.pos = data, 0

    def readable(self) -> bool:
        return True

    def readinto(self, b) -> int:
        n = min(len(b), 13, len(self.data) - self.pos)
        b[:n] = self.data[self.pos : self.pos + n]
        self.pos += n
        return n


@pytest.fixture
def reader_of(tmp_path):
    """reader_of(kind, data): a reader of ``data``; files it opens are closed after the test."""
    opened = []

    def make(kind: str, data: bytes):
        path = tmp_path / "w.bin"
        path.write_bytes(data)
        if kind in ("file", "unbuffered file"):
            fp = open(path, "rb", buffering=-1 if kind == "file" else 0)  # noqa: SIM115 - closed below
            opened.append(fp)
            return DataReaderFromStdio(fp)
        return {
            "memory": lambda: DataReaderFromMemory(data),
            "bytearray": lambda: DataReaderFromMemory(bytearray(data)),
            "BytesIO": lambda: DataReaderFromStdio(io.BytesIO(data)),
            "trickle": lambda: DataReaderFromStdio(Trickle(data)),
            "read only": lambda: ReadOnly(data),
        }[kind]()

    yield make
    for fp in opened:
        fp.close()


def load_all(mb):
    return [mb.load(1000, 0), mb.load(7, 0), mb.load(9, 0), mb.load(5, 1)]


@pytest.mark.parametrize(
    "kind", ["memory", "bytearray", "file", "unbuffered file", "BytesIO", "trickle", "read only"]
)
def test_every_reader_gives_the_same_weights(kind, reader_of):
    data = blob()
    dr = reader_of(kind, data)
    mb = ModelBinFromDataReader(dr)
    fp32, fp16, int8, raw = load_all(mb)
    np.testing.assert_array_equal(np.asarray(fp32), FP32)
    np.testing.assert_array_equal(np.asarray(fp16), FP16.astype(np.float32))
    np.testing.assert_array_equal(np.asarray(int8), TABLE[IDX])
    np.testing.assert_array_equal(np.asarray(raw), RAW)
    assert mb.offset == len(data)
    for m in (fp32, fp16, int8, raw):
        assert m.elemsize == 4 and m.dims == 1
        np.asarray(m)[0] = 1.0  # the Mats are writable, as ncnn's are


def test_memory_reader_consumes_exactly_the_weights():
    data = blob() + b"tail"
    dr = DataReaderFromMemory(data)
    load_all(ModelBinFromDataReader(dr))
    assert dr.consumed == len(data) - 4 and dr.read_bytes(4) == b"tail"


def test_file_position_after_the_weights(tmp_path):
    path = tmp_path / "w.bin"
    path.write_bytes(blob() + b"tail")
    with open(path, "rb") as fp:
        load_all(ModelBinFromDataReader(DataReaderFromStdio(fp)))
        assert fp.read() == b"tail"


def test_subclass_read_bytes_is_honoured():
    data = bytes(b ^ 0xFF for b in blob())
    fp32, fp16, int8, raw = load_all(ModelBinFromDataReader(Inverting(data)))
    np.testing.assert_array_equal(np.asarray(fp32), FP32)
    np.testing.assert_array_equal(np.asarray(raw), RAW)


@pytest.mark.parametrize("kind", ["memory", "file", "trickle", "read only"])
@pytest.mark.parametrize("cut", [2, 4 + 3999, 4 + 4000 + 4 + 5])
def test_truncated_weights_log_the_offset(kind, cut, reader_of, caplog):
    data = blob()[:cut]
    mb = ModelBinFromDataReader(reader_of(kind, data))
    results = [mb.load(1000, 0), mb.load(7, 0)]
    assert any(m.empty() for m in results)
    assert "truncated" in caplog.text
    assert mb.offset == len(data)


def test_text_mode_file_still_reads(tmp_path):
    # a text-mode file has no readinto: the byte path (UTF-8 of what it reads) is used
    text = "0123"
    path = tmp_path / "t.bin"
    path.write_text(text)
    with open(path, encoding="utf-8") as fp:
        m = ModelBinFromDataReader(DataReaderFromStdio(fp)).load(1, 1)
    np.testing.assert_array_equal(np.asarray(m), np.frombuffer(b"0123", "<f4"))


@pytest.mark.parametrize("kind", ["memory", "file", "trickle", "read only"])
@pytest.mark.parametrize("type_", [0, 1])
def test_garbage_count_reads_what_is_there_without_allocating_it(kind, type_, reader_of, caplog):
    # 2**40 floats (4 TiB) announced, 1000 there: the error says so, nothing huge is allocated
    data = blob()
    mb = ModelBinFromDataReader(reader_of(kind, data))
    assert mb.load(1 << 40, type_).empty()
    assert "truncated fp32 weight" in caplog.text
    assert mb.offset == len(data)


def test_negative_count_is_an_error(caplog):
    mb = ModelBinFromDataReader(DataReaderFromMemory(blob()))
    for type_ in (0, 1):
        assert mb.load_1d(-4, type_).empty()
    assert "negative weight count" in caplog.text and mb.offset == 0
