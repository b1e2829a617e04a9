"""Convolution1D against the PyPI ncnn oracle: kernel / stride / dilation, left-right pads and
SAME (-233 / -234), pad_value, activations, channel and output counts divisible by 4 and not,
rows longer than a GPU tile, each case on every backend (oracle.backends: the CPU, and the GPU
option grid); then the CPU's dynamic weights and the GPU's pack transitions, and bad inputs."""

from __future__ import annotations

import logging

import ncnn  # noqa: F401  (the oracle must be installed)
import numpy as np
import pytest
from oracle import GPU_GRID, SHAPES_2D, backends, check, check_layer, check_layer_gpu, randn, rng, run_layer

from ncnn_c.layer.vulkan.convolution1d_vulkan import Convolution1D_vulkan

TOL = 1e-5

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
    ({1: 3, 4: 1}, 4, 20),
    ({1: 3, 4: 1}, 8, 20),  # packed channels
    ({1: 3, 4: 1}, 5, 1),  # a 1-long row
]
# (num_output, bias, activation): 8 outputs pack on the GPU
VARIANTS = [(6, True, 1), (6, False, 1), (8, True, 0)]
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


def _check(backend, *case_args, **case_kwargs):
    return check(backend, "Convolution1D", *conv1d_case(*case_args, **case_kwargs), tol=TOL)


@pytest.fixture
def packs(monkeypatch):
    """The (bottom elempack the shader read, top elempack) of every GPU forward."""
    seen: set[tuple[int, int]] = set()
    forward = Convolution1D_vulkan.forward_vk

    def spy(self, bottom, top, cmd, opt):
        ret = forward(self, bottom, top, cmd, opt)
        seen.add((4 if self._in_pack4 else 1, top.elempack))
        return ret

    monkeypatch.setattr(Convolution1D_vulkan, "forward_vk", spy)
    return seen


@pytest.mark.parametrize(
    "variant", VARIANTS, ids=lambda v: f"n{v[0]}-{'bias' if v[1] else 'nobias'}-act{v[2]}"
)
@pytest.mark.parametrize("geom", GEOMETRY, ids=lambda g: str(g[0]) + f"-{g[1]}x{g[2]}")
@pytest.mark.parametrize("backend", backends("Convolution1D"))
def test_convolution1d_geometry(geom, variant, backend, packs):
    params, c, length = geom
    n, bias, act = variant
    _check(backend, with_activation({0: n, **params}, act), c, length, bias)
    if backend != "cpu":
        # elempack 1 -> 1, 1 -> 4, 4 -> 1 or 4 -> 4 once packing is on
        packing = GPU_GRID[backend[3:]]["use_packing_layout"]
        assert packs == {(4 if packing and c % 4 == 0 else 1, 4 if packing and n % 4 == 0 else 1)}


@pytest.mark.parametrize("shape", SHAPES_2D, ids=str)
@pytest.mark.parametrize("params", [{0: 5, 1: 1}, {0: 5, 1: 3, 4: 1}], ids=str)
@pytest.mark.parametrize("backend", backends("Convolution1D"))
def test_convolution1d_shapes(shape, params, backend):
    c, length = shape
    _check(backend, params, c, length)


# (channels, num_output, length, input scale): the first is the CPU's wide-range form, which
# reaches every branch of Clip, HardSwish and the sigmoid clamp
ACT_SHAPES = [(4, 6, 15, 6.0), (4, 5, 13, 1.0), (8, 8, 13, 1.0), (3, 8, 13, 1.0)]


@pytest.mark.parametrize("act", ACTIVATIONS, ids=lambda a: f"act{a[0]}")
@pytest.mark.parametrize("shape", ACT_SHAPES, ids=str)
@pytest.mark.parametrize("backend", backends("Convolution1D"))
def test_convolution1d_activation(act, shape, backend):
    c, n, length, scale = shape
    _check(backend, with_activation({0: n, 1: 3, 4: 1}, act[0]), c, length, scale=scale)


# more output channels and positions than one GPU invocation's tile, over long rows; and 12
# outputs without a bias
WIDE = [({1: 5, 3: 2, 4: 2}, 32, 301, 40, True), ({1: 5, 3: 2, 4: 2}, 12, 301, 7, True)]
WIDE += [({1: 5, 3: 2, 4: 2}, 5, 301, 36, True), ({1: 3, 4: 1}, 8, 13, 12, False)]


@pytest.mark.parametrize("case", WIDE, ids=lambda w: f"{w[1]}x{w[2]}->{w[3]}-{'bias' if w[4] else 'nobias'}")
@pytest.mark.parametrize("backend", backends("Convolution1D"))
def test_convolution1d_wide(case, backend):
    params, c, length, n, bias = case
    _check(backend, {**params, 0: n}, c, length, bias)


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


@pytest.mark.gpu
def test_convolution1d_bottom_in_other_packing(monkeypatch):
    """A bottom that a producer left in elempack 1 although its 8 channels pack (simulated by
    unpacking the packed input before the layer sees it): the layer packs it first."""
    from ncnn_c.layer.vulkan import is_fp16, record_convert

    arrived: list[int] = []
    forward = Convolution1D_vulkan.forward_vk

    def unpack_first(self, bottom, top, cmd, opt):
        assert bottom.elempack == 4
        unpacked = type(bottom)()
        record_convert(cmd, self.pipeline_packing, bottom, unpacked, 1, is_fp16(bottom), opt)
        arrived.append(unpacked.elempack)
        return forward(self, unpacked, top, cmd, opt)

    monkeypatch.setattr(Convolution1D_vulkan, "forward_vk", unpack_first)
    for c, num_output in [(8, 8), (8, 6)]:
        p, w, x = conv1d_case({1: 3, 4: 1, 0: num_output}, c, 13)
        check_layer_gpu("Convolution1D", p, w, x, grid=["fp32-pack", "fp16s-pack", "fp16pa-pack"])
    assert arrived == [1] * 6
