"""Convolution1D against the PyPI ncnn oracle: kernel / stride / dilation, left-right pads and
SAME (-233 / -234), pad_value, activations, dynamic weights, and bad inputs. The geometry
list and case builder are shared with test_convolution1d_vulkan.py."""

from __future__ import annotations

import logging

import ncnn  # noqa: F401  (the oracle must be installed)
import numpy as np
import pytest
from oracle import SHAPES_2D, check_layer, randn, rng, run_layer

TOL = 1e-5

# -- the cases, shared with test_convolution1d_vulkan.py -----------------------------------------

# (params, channels, length), with test-specific num_output
GEOMETRY = [
    ({1: 1}, 4, 9),
    ({1: 3}, 4, 20),
    ({1: 4, 3: 2, 2: 2}, 3, 17),  # strided, dilated
    ({1: 3, 4: 2, 15: 0, 18: -0.5}, 3, 11),  # asymmetric pads, pad_value
    ({1: 4, 3: 2, 4: -233}, 3, 17),  # SAME_UPPER
    ({1: 4, 3: 3, 4: -234}, 3, 17),  # SAME_LOWER
    ({1: 2, 3: 3, 4: -233}, 3, 10),  # SAME with a negative total: no padding at all
    ({1: 5, 4: 2}, 16, 227),
]
ACTIVATIONS = [(0, None), (1, None), (2, [0.1]), (3, [-0.5, 0.7]), (4, None), (5, None), (6, [0.2, 0.5])]


def conv1d_case(params, c, length, bias=True, scale=1.0):
    """(params, weights, inputs) of a Convolution1D with ``params`` (num_output and kernel_w
    given) over a random c x length input."""
    g = rng("conv1d", sorted(params.items()), c, length, bias)
    k, n = params[1], params[0]
    weight = randn(g, (n, c, k), 1.0 / np.sqrt(c * k))
    p = {**params, 5: int(bias), 6: weight.size}
    weights = [(weight, 0)] + ([(randn(g, (n,)), 1)] if bias else [])
    return p, weights, [randn(g, (c, length), scale)]


def with_activation(params, kind):
    """``params`` with activation ``kind`` and its ACTIVATIONS parameters."""
    values = dict(ACTIVATIONS)[kind]
    return {**params, 9: kind, **({10: values} if values is not None else {})}


# -- the CPU tests -------------------------------------------------------------------------------


def _check(*case_args, **case_kwargs):
    check_layer("Convolution1D", *conv1d_case(*case_args, **case_kwargs), tol=TOL)


@pytest.mark.parametrize("bias", [True, False], ids=["bias", "nobias"])
@pytest.mark.parametrize("geom", GEOMETRY + [({1: 3, 4: 1}, 4, 20)], ids=lambda g: str(g[0]))
def test_convolution1d_geometry(geom, bias):
    params, c, length = geom
    _check({0: 6, 9: 1, **params}, c, length, bias)


@pytest.mark.parametrize("shape", SHAPES_2D, ids=str)
def test_convolution1d_shapes(shape):
    c, length = shape
    _check({0: 5, 1: 1}, c, length)
    _check({0: 5, 1: 3, 4: 1}, c, length)


@pytest.mark.parametrize("act", ACTIVATIONS, ids=lambda a: f"act{a[0]}")
def test_convolution1d_activation(act):
    _check(with_activation({0: 6, 1: 3, 4: 1}, act[0]), 4, 15, scale=6.0)


@pytest.mark.parametrize("bias", [True, False], ids=["bias", "nobias"])
def test_convolution1d_dynamic_weight(bias):
    # 19=1: weight blob (w=kw, h=num_input, c=num_output) and the bias come as inputs
    g = rng("conv1d-dyn", bias)
    x = randn(g, (4, 20))
    weight = randn(g, (6, 4, 3))
    inputs = [x, weight] + ([randn(g, (6,))] if bias else [])
    check_layer("Convolution1D", {0: 6, 1: 3, 4: 1, 5: int(bias), 6: weight.size, 19: 1}, [], inputs)


@pytest.mark.parametrize(
    "shape,msg", [((5, 7), "input channels"), ((7,), "2-D"), ((4, 1, 7), "2-D")], ids=str
)
def test_convolution1d_rejects_bad_input(shape, msg, caplog):
    with caplog.at_level(logging.ERROR, logger="ncnn_c"):
        ret, _ = run_layer(
            "Convolution1D", {0: 2, 1: 3, 6: 24}, [(np.ones(24, np.float32), 0)], [np.ones(shape, np.float32)]
        )
    assert ret != 0
    assert msg in caplog.text


@pytest.mark.parametrize(
    "params,msg",
    [
        ({0: 2, 1: 3, 6: 25}, "weight_data_size"),
        ({0: 2, 1: 3, 6: 24, 3: 0}, "stride_w"),
        ({0: 2, 1: 3, 6: 24, 9: 9}, "activation_type"),
    ],
    ids=str,
)
def test_convolution1d_rejects_bad_params(params, msg, caplog):
    with caplog.at_level(logging.ERROR, logger="ncnn_c"):
        ret, _ = run_layer(
            "Convolution1D", params, [(np.ones(24, np.float32), 0)], [np.ones((4, 7), np.float32)]
        )
    assert ret != 0
    assert msg in caplog.text


def test_convolution1d_rejects_short_input(caplog):
    with caplog.at_level(logging.ERROR, logger="ncnn_c"):
        ret, _ = run_layer(
            "Convolution1D",
            {0: 2, 1: 5, 6: 40},
            [(np.ones(40, np.float32), 0)],
            [np.ones((4, 3), np.float32)],
        )
    assert ret != 0
    assert "smaller than the kernel" in caplog.text
