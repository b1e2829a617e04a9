"""extract() of an int8 blob, against the PyPI ncnn: ``type`` 0 (the default) casts it to fp32
by value, as ncnn's Extractor does (``cast_int8_to_float32``, no scale), ``type`` 1 hands out
the raw int8 blob. The nets end in a Quantize top and in a requantizing int8 Convolution
(``int8_scale_term`` 101), whose top is int8 too."""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
import pytest
from oracle import make_bin, make_param, randn, rng

import ncnn_c

SHAPE = (8, 6, 7)


def _quantize():
    return make_param("Quantize", {0: 1}, [SHAPE]), make_bin([(np.array([20.0], np.float32), 1)])


def _requantizing_conv():
    g = rng("extract-int8-conv")
    c_out, c_in = 4, SHAPE[0]
    weights = randn(g, (c_out, c_in, 3, 3), 0.3)
    w_scales = 127.0 / np.abs(weights.reshape(c_out, -1)).max(axis=1)
    params = {0: c_out, 1: 3, 5: 1, 6: weights.size, 8: 101}
    blobs = [
        weights,
        (randn(g, (c_out,), 0.1), 1),
        (w_scales.astype(np.float32), 1),
        (np.array([40.0], np.float32), 1),  # the bottom's scale: inputs up to ~3
        (np.array([12.0], np.float32), 1),  # the top's
    ]
    return make_param("Convolution", params, [SHAPE]), make_bin(blobs)


NETS = {"quantize": _quantize, "conv-requantize": _requantizing_conv}


def _oracle(param: str, weights: bytes, x: np.ndarray, type_: int, packing: bool):
    import ncnn

    net = ncnn.Net()
    net.opt.use_vulkan_compute = False
    net.opt.use_packing_layout = packing
    net.opt.num_threads = 1
    with tempfile.TemporaryDirectory() as tmp:
        Path(tmp, "m.param").write_text(param)
        Path(tmp, "m.bin").write_bytes(weights)
        assert net.load_param(str(Path(tmp, "m.param"))) == 0
        assert net.load_model(str(Path(tmp, "m.bin"))) == 0
    with net.create_extractor() as ex:
        ex.input("in0", ncnn.Mat(x).clone())
        ret, m = ex.extract("out0", type_)
        assert ret == 0
        out = (m.elemsize, np.array(m).copy())
        del m
    net.clear()
    return out


def _ours(param: str, weights: bytes, x: np.ndarray, type_: int, packing: bool):
    net = ncnn_c.Net()
    net.opt.use_vulkan_compute = False
    net.opt.use_packing_layout = packing
    net.opt.num_threads = 1
    assert net.load_param_mem(param) == 0 and net.load_model_mem(weights) == 0
    with net.create_extractor() as ex:
        ex.input("in0", ncnn_c.Mat(x.copy()))
        ret, m = ex.extract("out0", type_)
        assert ret == 0
        return m.elemsize, m.elempack, np.array(m.numpy()).copy()


@pytest.mark.parametrize("packing", [False, True], ids=["pack1", "packing"])
@pytest.mark.parametrize("net", list(NETS))
def test_extract_casts_int8_to_fp32(net, packing):
    param, weights = NETS[net]()
    x = randn(rng("extract-int8", net), SHAPE)
    elemsize, ref = _oracle(param, weights, x, 0, packing)
    got_elemsize, elempack, got = _ours(param, weights, x, 0, packing)
    assert elemsize == 4 and ref.dtype == np.float32
    assert (got_elemsize, elempack) == (4, 1) and got.dtype == np.float32
    # integers in the int8 range, not all zero or saturated: the case says something
    assert np.all(got == np.round(got)) and np.abs(got).max() <= 127
    assert 0.3 < np.mean(np.abs(got) > 0) and np.mean(np.abs(got) == 127) < 0.2
    np.testing.assert_array_equal(got, ref)


@pytest.mark.parametrize("net", list(NETS))
def test_extract_type1_keeps_int8(net):
    # elempack 1 only: the PyPI binding's numpy view of a packed int8 Mat crashes
    param, weights = NETS[net]()
    x = randn(rng("extract-int8", net), SHAPE)
    elemsize, ref = _oracle(param, weights, x, 1, False)
    got_elemsize, elempack, got = _ours(param, weights, x, 1, False)
    assert elemsize == 1 and ref.dtype == np.int8
    assert (got_elemsize, elempack) == (1, 1) and got.dtype == np.int8
    np.testing.assert_array_equal(got, ref)
