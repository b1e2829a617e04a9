"""Pooling against the PyPI ncnn oracle: max/avg, global, adaptive, every pad mode, 2-D and 3-D.

The SAME-padding cases with a kernel smaller than the stride (negative pads, where the oracle
is memory-unsafe) stay in tests/test_layer_cpu.py beside the matching Convolution cases.
"""

from __future__ import annotations

import itertools
import logging
import time

import numpy as np
import pytest
from oracle import check_layer, make_bin, make_param, randn, rng, run_layer, run_ncnn


def pool_case(params, shape=(3, 11, 13), seed=0):
    x = randn(rng("pool", sorted(params.items()), shape, seed), shape)
    # max pooling is a selection: bit-exact; averages may differ in summation order
    is_max = params.get(0, 0) == 0
    return check_layer("Pooling", params, [], [x], tol=0.0 if is_max else 1e-5)


@pytest.mark.parametrize("include_pad", [0, 1])
@pytest.mark.parametrize("pad_mode", [0, 1, 2, 3])
@pytest.mark.parametrize("ptype", [0, 1], ids=["max", "avg"])
def test_pooling_pad_modes(ptype, pad_mode, include_pad):
    # explicit asymmetric pads exercise the tail padding of mode 0 and the counted region
    pool_case({0: ptype, 1: 3, 2: 2, 3: 1, 14: 0, 13: 2, 15: 1, 5: pad_mode, 6: include_pad})
    pool_case({0: ptype, 1: 2, 11: 3, 2: 3, 12: 2, 5: pad_mode, 6: include_pad}, shape=(2, 10, 7))


@pytest.mark.parametrize("pad_mode", [0, 1, 2, 3])
@pytest.mark.parametrize("ptype", [0, 1], ids=["max", "avg"])
@pytest.mark.parametrize("shape", [(1, 5), (7, 13), (16, 32)], ids=str)
def test_pooling_2d_input_is_one_channel(shape, ptype, pad_mode):
    if shape[0] > 1 or pad_mode != 1:
        # (1 row, no padding, kernel 2 is the reject case below: ncnn reads past the blob)
        pool_case({0: ptype, 1: 2, 2: 2, 5: pad_mode}, shape=shape)
    pool_case({0: ptype, 1: 3, 2: 1, 3: 1, 5: pad_mode}, shape=shape)


def test_pooling_squeezenet_form():
    # SqueezeNet's pool1/3/5: max 3x3 stride 2 with full padding
    pool_case({1: 3, 2: 2}, shape=(64, 113, 113))
    pool_case({0: 1, 4: 1}, shape=(1000, 16, 16))


@pytest.mark.parametrize("ptype", [0, 1], ids=["max", "avg"])
@pytest.mark.parametrize("shape", [(1, 1, 1), (5, 7, 9), (4, 13, 13), (6, 8), (1, 5), (3, 227, 227)], ids=str)
def test_pooling_global(ptype, shape):
    pool_case({0: ptype, 4: 1}, shape=shape)


@pytest.mark.parametrize("ptype", [0, 1], ids=["max", "avg"])
@pytest.mark.parametrize(
    "out", [(3, 2), (4, -233), (-233, 5), (-233, -233), (1, 1), (6, 5), (13, 11), (20, 17)], ids=str
)
def test_pooling_adaptive(ptype, out):
    pool_case({0: ptype, 7: 1, 8: out[0], 18: out[1]})


@pytest.mark.parametrize("ptype", [0, 1], ids=["max", "avg"])
def test_pooling_adaptive_more(ptype):
    pool_case({0: ptype, 7: 1, 8: 7}, shape=(5, 7, 13))  # out_h defaults to out_w
    pool_case({0: ptype, 7: 1, 8: 3, 18: 4}, shape=(7, 13))  # 2-D input
    pool_case({0: ptype, 7: 1, 8: 7, 18: 7}, shape=(4, 56, 56))
    # the same size passes the blob through: a 2-D input stays 2-D
    pool_case({0: ptype, 7: 1, 8: -233, 18: -233}, shape=(7, 13))
    pool_case({0: ptype, 7: 1, 8: 13, 18: 7}, shape=(7, 13))


def test_pooling_empty_window_gives_nan_like_ncnn():
    # a window that lies wholly in the padding has no counted cell: ncnn gives 0/0
    pool_case({0: 1, 1: 2, 2: 1, 3: 1, 14: 0, 13: 2, 15: 1, 5: 1}, shape=(2, 4, 5))


@pytest.mark.parametrize("ptype", [0, 1], ids=["max", "avg"])
def test_pooling_odd_sizes(ptype):
    pool_case({0: ptype, 1: 1, 2: 1}, shape=(1, 1, 1))
    pool_case({0: ptype, 1: 3, 2: 2, 3: 1}, shape=(3, 227, 227))
    pool_case({0: ptype, 1: 2, 2: 2}, shape=(8, 1, 9), seed=1)


@pytest.mark.slow
@pytest.mark.parametrize("pad_mode", [0, 1, 2, 3])
@pytest.mark.parametrize("ptype", [0, 1], ids=["max", "avg"])
def test_pooling_exhaustive(ptype, pad_mode):
    pads_forms = [(0, 0, 0, 0), (1, 1, 1, 1), (1, 0, 2, 1), (2, 1, 0, 2)]
    for k, s, include, pads in itertools.product((1, 2, 3, 4), (1, 2, 3), (0, 1), pads_forms):
        if max(pads) >= k:
            continue
        p = {0: ptype, 1: k, 11: max(1, k - 1), 2: s, 12: max(1, s - 1), 5: pad_mode, 6: include}
        p.update({3: pads[0], 14: pads[1], 13: pads[2], 15: pads[3]})
        pool_case(p, shape=(3, 10, 11))


def test_pooling_params_table_defaults():
    from ncnn_c.layer import create_layer_cpu
    from ncnn_c.paramdict import ParamDict

    layer = create_layer_cpu("Pooling")
    pd = ParamDict()
    pd.set(1, 3)
    pd.set(2, 2)
    pd.set(3, 1)
    pd.set(8, 4)
    assert layer.load_param(pd) == 0
    assert (layer.kernel_h, layer.stride_h) == (3, 2)
    assert (layer.pad_top, layer.pad_right, layer.pad_bottom) == (1, 1, 1)
    assert layer.out_h == 4


@pytest.mark.parametrize(
    "params,shape,text",
    [
        ({0: 2, 1: 2}, (2, 4, 4), "pooling_type"),
        ({1: 2, 5: 4}, (2, 4, 4), "pad_mode"),
        ({1: 0}, (2, 4, 4), "must be positive"),
        ({1: 2, 2: 0}, (2, 4, 4), "must be positive"),
        ({7: 1, 8: 0}, (2, 4, 4), "adaptive"),
        # ncnn's C division makes one output row here and reads it from past the blob
        ({1: 5, 5: 1}, (2, 4, 4), "smaller than the kernel"),
        ({1: 2, 5: 1}, (1, 5), "smaller than the kernel"),
        ({1: 2}, (5,), "dims 1"),
        ({1: 2}, (2, 3, 4, 4), "dims 4"),
    ],
    ids=str,
)
def test_pooling_rejects(params, shape, text, caplog):
    x = randn(rng("pool-bad", shape), shape)
    with caplog.at_level(logging.ERROR, logger="ncnn_c"):
        ret, _ = run_layer("Pooling", params, [], [x])
    assert ret != 0
    assert text in caplog.text


def test_pooling_speed_large_map():
    # the benchmark networks' 2x2 / 3x3 max pooling on big maps: stay within a few oracle times
    x = randn(rng("pool-speed"), (64, 224, 224))
    for params in ({1: 2, 2: 2}, {1: 3, 2: 2}):
        ret, ref = run_ncnn(make_param("Pooling", params, [x.shape]), make_bin([]), [x])
        assert ret == 0
        t0 = time.perf_counter()
        ret, got = run_layer("Pooling", params, [], [x])
        elapsed = time.perf_counter() - t0
        assert ret == 0
        np.testing.assert_array_equal(got[0], ref[0])
        assert elapsed < 2.0, f"{params}: {elapsed:.2f}s"
