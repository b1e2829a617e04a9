"""MemoryData against the oracle: constant blobs of every rank and load type, alone and feeding
a BinaryOp together with a net input, and repeated extraction keeping the constant intact."""

from __future__ import annotations

import logging

import numpy as np
import pytest
from oracle import (
    SHAPES_ALL,
    assert_close,
    check_layer,
    make_bin,
    randn,
    rng,
    run_layer,
    run_ncnn,
    run_net,
)


def _shape_params(shape) -> dict:
    keys = {1: (0,), 2: (1, 0), 3: (2, 1, 0), 4: (2, 11, 1, 0)}[len(shape)]
    return dict(zip(keys, shape, strict=True))


def _input_line(shape) -> str:
    keys = {1: (0,), 2: (1, 0), 3: (2, 1, 0), 4: (2, 11, 1, 0)}[len(shape)]
    return " ".join(f"{k}={v}" for k, v in zip(keys, shape, strict=True))


@pytest.mark.parametrize("shape", SHAPES_ALL, ids=str)
def test_every_rank_raw_fp32(shape):
    data = randn(rng("memorydata", shape), shape)
    check_layer("MemoryData", _shape_params(shape), [(data, 1)], [], tol=0)


@pytest.mark.parametrize("kind", [0, "fp16"])
def test_flagged_load_types(kind):
    for shape in [(7,), (7, 13), (3, 7, 13), (2, 3, 5, 7)]:
        data = randn(rng("memorydata-flag", shape, kind), shape)
        check_layer("MemoryData", {**_shape_params(shape), 21: 0}, [(data, kind)], [], tol=0)


def test_no_shape_gives_one_zero():
    # ncnn leaves this single value uninitialised, so only the shape is compared with it
    ret, out = run_layer("MemoryData", {}, [], [])
    assert ret == 0
    np.testing.assert_array_equal(out[0], [0.0])


def _net_with_input(x_shape, md_shape, op: int) -> str:
    return (
        "7767517\n3 3\n"
        f"Input in0 0 1 in0 {_input_line(x_shape)}\n"
        f"MemoryData md 0 1 md {_input_line(md_shape)}\n"
        f"BinaryOp op 2 1 in0 md out0 0={op}\n"
    )


@pytest.mark.parametrize(
    "x_shape,md_shape",
    [
        ((7,), (7,)),
        ((7, 13), (13,)),
        ((3, 7, 13), (3,)),
        ((3, 7, 13), (3, 7, 13)),
        ((2, 3, 5, 7), (2, 3, 5, 1)),
        ((3, 227, 227), (3, 1, 227)),
    ],
)
@pytest.mark.parametrize("op", [0, 1, 3, 7])
def test_with_binaryop_in_a_net(x_shape, md_shape, op):
    g = rng("memorydata-net", x_shape, md_shape, op)
    x = randn(g, x_shape)
    data = randn(g, md_shape)
    param = _net_with_input(x_shape, md_shape, op)
    model = make_bin([(data, 1)])
    ret, ref = run_ncnn(param, model, [x])
    assert ret == 0
    ret, got = run_net(param, model, [x])
    assert ret == 0
    assert_close(got[0], ref[0], 1e-5, f"MemoryData+BinaryOp {x_shape} {md_shape} op {op}")


def test_constant_survives_in_place_consumers():
    """A ReLU working in place on the constant must not change what the next run sees."""
    import ncnn_c

    data = randn(rng("memorydata-inplace"), (3, 5, 7))
    param = "7767517\n2 2\nMemoryData md 0 1 md 0=7 1=5 2=3\nReLU relu 1 1 md out0\n"
    net = ncnn_c.Net()
    net.opt.use_vulkan_compute = False
    assert net.load_param_mem(param) == 0
    assert net.load_model_mem(make_bin([(data, 1)])) == 0
    for _ in range(2):
        with net.create_extractor() as ex:
            ex.set_light_mode(True)
            ret, m = ex.extract("out0")
            assert ret == 0
            np.testing.assert_array_equal(np.asarray(m.numpy()), np.maximum(data, 0))


def test_too_little_weight_data_fails():
    data = np.ones(10, np.float32)
    ret, _ = run_net("7767517\n1 1\nMemoryData md 0 1 out0 0=7 1=5 2=3\n", make_bin([(data, 1)]), [])
    assert ret != 0


def test_negative_shape_rejected(caplog):
    with caplog.at_level(logging.ERROR, logger="ncnn_c"):
        ret, _ = run_layer("MemoryData", {0: -3}, [], [])
    assert ret != 0 and "negative" in caplog.text
