"""ModelBin's int8 storage (flag 0x000D4B38: w int8 values, 4-byte aligned) and the raw fp32
form flagged 0x0002C056, as ncnn's ModelBinFromDataReader::load(w, 0) reads them."""

from __future__ import annotations

import struct

import numpy as np
import pytest

from ncnn_c.datareader import DataReaderFromMemory
from ncnn_c.modelbin import INT8_TAG, RAW_SCALED_TAG, ModelBinFromDataReader

RNG = np.random.default_rng(77)


def int8_blob(a) -> bytes:
    data = np.asarray(a, dtype=np.int8).tobytes()
    return struct.pack("<I", INT8_TAG) + data + b"\0" * (-len(data) % 4)


def fp32_blob(a, tag: int = 0) -> bytes:
    return struct.pack("<I", tag) + np.asarray(a, dtype="<f4").tobytes()


def mb_of(data: bytes) -> ModelBinFromDataReader:
    return ModelBinFromDataReader(DataReaderFromMemory(data))


@pytest.mark.parametrize("n", [1, 4, 5, 7, 130])
def test_int8_storage_then_next_weight(n):
    a = RNG.integers(-127, 128, n).astype(np.int8)
    b = RNG.standard_normal(3).astype(np.float32)
    mb = mb_of(int8_blob(a) + fp32_blob(b))
    m = mb.load(n, 0)
    assert (m.dims, m.w, m.elemsize, m.elempack) == (1, n, 1, 1)
    assert m.tensor().dtype == np.int8
    np.testing.assert_array_equal(m.tensor(), a)
    # the int8 bytes are padded to 4, so the next weight starts aligned
    np.testing.assert_array_equal(np.asarray(mb.load(3, 0)), b)
    assert mb.offset == 4 + ((n + 3) & ~3) + 4 + 12


def test_int8_storage_reshaped():
    a = np.arange(-12, 12, dtype=np.int8)
    m = mb_of(int8_blob(a)).load(3, 2, 4, 0)
    assert (m.dims, m.w, m.h, m.c, m.elemsize) == (3, 3, 2, 4, 1)
    np.testing.assert_array_equal(m.tensor(), a.reshape(4, 2, 3))


def test_int8_storage_truncated(caplog):
    data = struct.pack("<I", INT8_TAG) + b"\1\2\3"  # 5 values need 8 bytes
    assert mb_of(data).load(5, 0).empty()
    assert "truncated int8 weight" in caplog.text


def test_raw_scaled_fp32():
    a = RNG.standard_normal(6).astype(np.float32)
    mb = mb_of(fp32_blob(a, RAW_SCALED_TAG) + fp32_blob([2.5]))
    m = mb.load(6, 0)
    assert m.elemsize == 4
    np.testing.assert_array_equal(np.asarray(m), a)
    assert np.asarray(mb.load(1, 0))[0] == 2.5
