"""ModelBin: fp32 / fp16 / int8-table weights, raw fp32, alignment, truncation, Mat arrays."""

from __future__ import annotations

import struct

import numpy as np
import pytest

from ncnn_c.datareader import DataReaderFromEmpty, DataReaderFromMemory
from ncnn_c.mat import Mat
from ncnn_c.modelbin import FP16_TAG, ModelBinFromDataReader, ModelBinFromMatArray

RNG = np.random.default_rng(1234)


def fp32_blob(a) -> bytes:
    return struct.pack("<I", 0) + np.asarray(a, dtype="<f4").tobytes()


def fp16_blob(a) -> bytes:
    data = np.asarray(a, dtype="<f2").tobytes()
    return struct.pack("<I", FP16_TAG) + data + b"\0" * (-len(data) % 4)


def int8_blob(table, idx, flag=b"\x01\x00\x00\x00") -> bytes:
    data = np.asarray(idx, dtype=np.uint8).tobytes()
    return flag + np.asarray(table, dtype="<f4").tobytes() + data + b"\0" * (-len(data) % 4)


def mb_of(data: bytes) -> ModelBinFromDataReader:
    return ModelBinFromDataReader(DataReaderFromMemory(data))


def test_fp32_with_flag():
    a = RNG.standard_normal(37).astype(np.float32)
    m = mb_of(fp32_blob(a)).load(37, 0)
    assert m.dims == 1 and m.w == 37 and m.elemsize == 4
    np.testing.assert_array_equal(np.asarray(m), a)


def test_raw_fp32_type1():
    a = RNG.standard_normal(5).astype(np.float32)
    np.testing.assert_array_equal(np.asarray(mb_of(a.tobytes()).load(5, 1)), a)


@pytest.mark.parametrize("n", [1, 6, 7])
def test_fp16_with_padding_then_next_weight(n):
    a = RNG.standard_normal(n).astype(np.float32)
    b = RNG.standard_normal(3).astype(np.float32)
    mb = mb_of(fp16_blob(a) + fp32_blob(b))
    np.testing.assert_array_equal(np.asarray(mb.load(n, 0)), a.astype(np.float16).astype(np.float32))
    # the odd fp16 count is padded to 4 bytes, so the next weight starts aligned
    np.testing.assert_array_equal(np.asarray(mb.load(3, 0)), b)
    assert mb.offset == 4 + ((2 * n + 3) & ~3) + 4 + 12


@pytest.mark.parametrize("flag", [b"\x01\x00\x00\x00", b"\x00\x00\x02\x00", b"\xff\xff\xff\xff"])
def test_int8_table(flag):
    table = RNG.standard_normal(256).astype(np.float32)
    idx = RNG.integers(0, 256, 10)
    mb = mb_of(int8_blob(table, idx, flag) + fp32_blob([7.0]))
    np.testing.assert_array_equal(np.asarray(mb.load(10, 0)), table[idx])
    assert np.asarray(mb.load(1, 0))[0] == 7.0


def test_load_2d_and_3d_shapes():
    a = np.arange(24, dtype=np.float32)
    m2 = mb_of(fp32_blob(a)).load(6, 4, 0)
    assert (m2.dims, m2.w, m2.h) == (2, 6, 4)
    np.testing.assert_array_equal(np.asarray(m2), a.reshape(4, 6))
    m3 = mb_of(fp32_blob(a)).load(3, 2, 4, 0)
    assert (m3.dims, m3.w, m3.h, m3.c) == (3, 3, 2, 4)
    np.testing.assert_array_equal(np.asarray(m3), a.reshape(4, 2, 3))


@pytest.mark.parametrize(
    "data, n, what",
    [
        (b"", 4, "weight flag"),
        (b"\0\0", 4, "weight flag"),
        (fp32_blob([1.0, 2.0]), 3, "fp32 weight"),
        (fp16_blob([1.0, 2.0]), 5, "fp16 weight"),
        (b"\x01\0\0\0" + bytes(100), 4, "int8 quantization table"),
        (int8_blob(np.zeros(256), [1, 2, 3, 4]), 9, "int8 weight indexes"),
    ],
)
def test_truncated_gives_empty_mat_and_logs_offset(caplog, data, n, what):
    m = mb_of(data).load(n, 0)
    assert m.empty()
    assert f"truncated {what} at byte offset" in caplog.text


def test_truncated_second_weight_reports_its_offset(caplog):
    mb = mb_of(fp32_blob([1.0, 2.0]) + fp32_blob([3.0]))
    assert not mb.load(2, 0).empty()
    assert mb.load(2, 0).empty()
    assert "at byte offset 16" in caplog.text


def test_bad_type_and_negative_size(caplog):
    assert mb_of(bytes(64)).load(2, 5).empty()
    assert "unknown load type" in caplog.text
    assert mb_of(bytes(64)).load(-1, 3, 0).empty()
    assert "negative size" in caplog.text


def test_empty_reader_gives_zero_weights():
    mb = ModelBinFromDataReader(DataReaderFromEmpty())
    m = mb.load(9, 0)
    assert m.w == 9 and not np.asarray(m).any()


def test_mat_array_hands_out_in_order(caplog):
    a, b = Mat(np.ones(3, np.float32)), Mat(np.zeros(2, np.float32))
    mb = ModelBinFromMatArray([a, b])
    assert mb.load(3, 0) is a
    assert mb.load(2, 1, 0) is b
    assert mb.load(1, 0).empty()
    assert "only 2 given" in caplog.text
