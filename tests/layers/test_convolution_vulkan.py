"""Convolution on the GPU over the option grid: geometries, pads, activations, fp16 weights,
and every packing transition (elempack 1/4 in x 1/4 out, and a bottom in the other packing)."""

from __future__ import annotations

import numpy as np
import pytest
from oracle import GPU_GRID, assert_close, check_layer_gpu, make_bin, randn, rng, run_ncnn, run_net_gpu

pytestmark = pytest.mark.gpu

GEOMETRIES = [
    {1: 1},
    {1: 1, 3: 2},
    {1: 3, 3: 2},
    {1: 3, 4: 1},
    {1: 3, 2: 2, 4: 2},
    {1: 3, 3: 2, 4: -233},
    {1: 4, 3: 2, 4: -234, 18: 0.25},
]
ACTS = {0: None, 1: None, 2: [0.1], 3: [-0.5, 0.8], 4: None, 5: None, 6: [0.2, 0.5]}


def _case(geometry, act, shape, num_output, fp16_weights=False, bias=1, grid=None):
    g = rng("conv", str(geometry), act, shape, num_output)
    k = geometry.get(1, 1)
    kh = geometry.get(11, k)
    params = {**geometry, 0: num_output, 5: bias, 6: k * kh * shape[0] * num_output}
    if act:
        params[9] = act
        if ACTS[act]:
            params[10] = ACTS[act]
    w = randn(g, params[6], 0.3)
    weights = [(w, "fp16") if fp16_weights else w] + ([(randn(g, num_output), 1)] if bias else [])
    return check_layer_gpu("Convolution", params, weights, [randn(g, shape)], grid=grid)


# (input shape, num_output): elempack 1 -> 1, 4 -> 4, 1 -> 4 and 4 -> 1 once packing is on
PACKINGS = [((3, 11, 13), 7), ((8, 9, 9), 8), ((3, 10, 7), 12), ((12, 7, 9), 6)]


@pytest.mark.parametrize("geometry", GEOMETRIES, ids=str)
@pytest.mark.parametrize("shape,num_output", PACKINGS, ids=str)
def test_convolution_grid(geometry, shape, num_output):
    _case(geometry, 0, shape, num_output)


@pytest.mark.parametrize(
    "geometry",
    [{1: 1, 11: 3, 14: 1, 16: 0}, {1: 5, 11: 2, 2: 2, 12: 1, 13: 2, 4: 1, 15: 2, 14: 0, 16: 1, 18: -0.5}],
    ids=str,
)
@pytest.mark.parametrize("shape,num_output", PACKINGS, ids=str)
def test_convolution_rect_kernels_grid(geometry, shape, num_output):
    """Separate w/h kernel, dilation, stride and asymmetric pads with a pad_value."""
    _case(geometry, 0, shape, num_output)


@pytest.mark.parametrize("shape,num_output", PACKINGS, ids=str)
def test_convolution_no_bias(shape, num_output):
    _case({1: 3, 4: 1}, 1, shape, num_output, bias=0, grid=["fp32", "fp32-pack", "fp16s-pack"])


@pytest.mark.parametrize("shape,num_output", [((16, 23, 29), 40), ((20, 1, 1), 36), ((4, 1, 37), 4)], ids=str)
@pytest.mark.parametrize("k", [1, 3])
def test_convolution_wide_tiles(shape, num_output, k):
    """More output channels and positions than one invocation's tile, and 1-pixel planes."""
    _case({1: k, 4: k // 2}, 2, shape, num_output, grid=["fp32", "fp32-pack", "fp16s-pack", "fp16pa-pack"])


def test_convolution_bottom_in_other_packing():
    """A producer that cannot pack (Softmax) hands 8 channels as elempack 1: the layer converts."""
    g = rng("conv-after-softmax")
    param = (
        "\n".join(
            [
                "7767517",
                "3 3",
                "Input in0 0 1 in0 0=9 1=7 2=8",
                "Softmax sm 1 1 in0 s0 0=0",
                "Convolution op 1 1 s0 out0 0=8 1=3 4=1 5=1 6=576",
            ]
        )
        + "\n"
    )
    weights = make_bin([randn(g, 576), (randn(g, 8), 1)])
    x = randn(g, (8, 7, 9))
    ret, ref = run_ncnn(param, weights, [x])
    assert ret == 0
    for name in ("fp32-pack", "fp16s-pack"):
        ret, got = run_net_gpu(param, weights, [x], **GPU_GRID[name])
        assert ret == 0
        assert_close(got[0], ref[0], 1e-2 if "fp16" in name else 1e-4, name)


@pytest.mark.parametrize("act", range(1, 7))
def test_convolution_activation_grid(act):
    _case({1: 3, 4: 1}, act, (4, 9, 11), 8)


def test_convolution_fp16_weights_grid():
    _case({1: 3, 4: 1}, 1, (8, 9, 11), 16, fp16_weights=True)


def test_convolution_deep_fp16_accumulation():
    """512 x 3x3 taps per output: fp16 arithmetic accumulation must still meet 1e-2."""
    _case({1: 3, 4: 1}, 0, (512, 6, 6), 8)
    assert np.isfinite(0.0)
