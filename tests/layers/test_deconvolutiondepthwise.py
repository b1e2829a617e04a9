"""DeconvolutionDepthWise against the PyPI ncnn oracle: depthwise, channel multipliers,
grouped forms, one group; strides, dilations, every crop form, bias on/off, activations, fp16
weights, each case on every backend (oracle.backends: the CPU, and the GPU option grid, where
the groupings pick every packing form: a group's inputs and outputs divisible by 4 or not);
then the CPU's dynamic weights, the GPU's many-channel upsampling, and bad inputs."""

from __future__ import annotations

import logging

import numpy as np
import pytest
from oracle import GPU_GRID, backends, check, check_layer, check_layer_gpu, randn, rng, run_layer
from test_deconvolution import ACTIVATIONS, EXTRAS, with_activation

from ncnn_c.layer.vulkan.deconvolution_vulkan import Deconvolution_vulkan


def deconvdw_case(inch, outch, group, kw, kh, h, w, extra, bias=True, fp16=False, key=()):
    g = rng("deconvdw", inch, outch, group, kw, kh, h, w, sorted(extra.items(), key=str), bias, fp16, key)
    x = randn(g, (inch, h, w))
    wt = randn(g, (outch * (inch // group) * kw * kh,), 0.5)
    params = {0: outch, 1: kw, 11: kh, 5: int(bias), 6: wt.size, 7: group, **extra}
    weights = [(wt, "fp16" if fp16 else 0)]
    if bias:
        weights.append((randn(g, (outch,)), 1))
    return params, weights, [x]


# (inch, outch, group) -> the (in, out) elempacks the GPU shader runs with packing on:
# depthwise packed and not, a channel multiplier, grouped pack1to4 / pack4to1 / pack4,
# groups of 2 channels in a packable blob (converted to elempack 1), one group
GROUPINGS = {
    (6, 6, 6): (1, 1),
    (4, 8, 4): (1, 1),
    (6, 12, 3): (1, 4),
    (8, 4, 2): (4, 1),
    (3, 5, 1): (1, 1),
    (1, 1, 1): (1, 1),
    (8, 8, 8): (4, 4),
    (16, 8, 2): (4, 4),
    (8, 8, 4): (1, 1),
}
# the cases only the GPU's list had, on blobs it packs by 4, run in the slow run with the
# packed sets (the main run's GPU set, fp32, does not pack; in the main run they made this
# module's main run longer than the two it merges)
GPU_PACKED = [(8, 8, 8), (16, 8, 2), (8, 8, 4), (8, 8, 2)]


def _group_cases():
    for grouping in GROUPINGS:
        for kw, kh, extra in EXTRAS:
            for bias in (True, False) if grouping not in GPU_PACKED else (True,):
                marks = [pytest.mark.slow] if grouping in GPU_PACKED else []
                name = f"{grouping}-{kw}x{kh}-{extra}-{'bias' if bias else 'nobias'}"
                yield pytest.param(*grouping, kw, kh, extra, bias, marks=marks, id=name)


def slow_if_packed(grouping):
    return (
        pytest.param(grouping, marks=pytest.mark.slow, id=str(grouping))
        if grouping in GPU_PACKED
        else grouping
    )


@pytest.fixture
def packs(monkeypatch):
    """The (bottom elempack the shader read, top elempack) of every GPU forward."""
    seen: set[tuple[int, int]] = set()
    forward = Deconvolution_vulkan.forward_vk

    def spy(self, bottom, top, cmd, opt):
        ret = forward(self, bottom, top, cmd, opt)
        seen.add((4 if self._in_pack4 else 1, top.elempack))
        return ret

    monkeypatch.setattr(Deconvolution_vulkan, "forward_vk", spy)
    return seen


@pytest.mark.parametrize("inch,outch,group,kw,kh,extra,bias", list(_group_cases()))
@pytest.mark.parametrize("backend", backends("DeconvolutionDepthWise"))
def test_groups(inch, outch, group, kw, kh, extra, bias, backend, packs):
    check(backend, "DeconvolutionDepthWise", *deconvdw_case(inch, outch, group, kw, kh, 7, 6, extra, bias))
    if backend != "cpu":
        packed = GPU_GRID[backend[3:]]["use_packing_layout"]
        assert packs == {GROUPINGS[inch, outch, group] if packed else (1, 1)}


@pytest.mark.parametrize("act,act_params", ACTIVATIONS)
@pytest.mark.parametrize("grouping", [(4, 4, 4), (4, 6, 2), (3, 3, 3), slow_if_packed((8, 8, 2))], ids=str)
@pytest.mark.parametrize("backend", backends("DeconvolutionDepthWise"))
def test_activation(act, act_params, grouping, backend):
    extra = with_activation({3: 2}, act)
    params, weights, inputs = deconvdw_case(*grouping, 3, 3, 5, 6, extra, key=act)
    check(backend, "DeconvolutionDepthWise", params, weights, inputs)


# (inch, outch, group, (h, w), bias) of a 4x4 stride 2 upsampling with ReLU: 1-pixel planes,
# odd sizes, several GPU row tiles per row
SIZES = [((3, 3, 3), hw, True) for hw in ((1, 1), (7, 13), (227, 227))]
SIZES += [
    (grouping, hw, False)
    for grouping in ((4, 4, 4), (3, 3, 3), (16, 8, 2))
    for hw in ((1, 1), (7, 13), (57, 61))
]


@pytest.mark.parametrize("case", SIZES, ids=lambda c: str(c) if isinstance(c, tuple) else None)
@pytest.mark.parametrize("backend", backends("DeconvolutionDepthWise"))
def test_sizes(case, backend):
    grouping, (h, w), bias = case
    params, weights, inputs = deconvdw_case(*grouping, 4, 4, h, w, {3: 2, 4: 1, 9: 1}, bias)
    check(backend, "DeconvolutionDepthWise", params, weights, inputs)


@pytest.mark.parametrize("backend", backends("DeconvolutionDepthWise"))
def test_fp16_weights(backend):
    params, weights, inputs = deconvdw_case(6, 6, 3, 3, 3, 7, 9, {3: 2}, fp16=True)
    check(backend, "DeconvolutionDepthWise", params, weights, inputs)


@pytest.mark.gpu
def test_benchmark_shape_packed():
    """The upsampling form of mobilenet_yolo: 4x4 stride 2 depthwise over many channels."""
    p, w, x = deconvdw_case(64, 64, 64, 4, 4, 13, 13, {3: 2, 4: 1}, bias=False)
    check_layer_gpu("DeconvolutionDepthWise", p, w, x, grid=["fp32-pack", "fp16s-pack", "fp16sa-pack"])


@pytest.mark.parametrize("inch,outch,group", [(6, 6, 6), (6, 4, 2)])
def test_dynamic_weight(inch, outch, group):
    g = rng("deconvdw dynamic", inch, outch, group)
    x = randn(g, (inch, 5, 6))
    wd = randn(g, (inch, outch // group, 3, 2))  # [inch][outch/group][kh][kw]
    params = {0: outch, 1: 2, 11: 3, 3: 2, 5: 1, 7: group, 28: 1}
    check_layer("DeconvolutionDepthWise", params, [], [x, wd, randn(g, (outch,))])


def _rejects(caplog, params, weights, inputs, words):
    with caplog.at_level(logging.ERROR, logger="ncnn_c"):
        ret, _ = run_layer("DeconvolutionDepthWise", params, weights, inputs)
    assert ret != 0
    assert any(words in r.getMessage() for r in caplog.records), caplog.text


def test_bad_inputs(caplog):
    params, weights, inputs = deconvdw_case(6, 6, 3, 3, 3, 5, 5, {3: 2})
    _rejects(caplog, params, weights, [inputs[0][0]], "3-D")
    _rejects(caplog, params, weights, [inputs[0][:4]], "input channels")
    _rejects(caplog, {**params, 7: 4}, weights, inputs, "groups")
    _rejects(caplog, {**params, 6: params[6] + 3}, weights, inputs, "weight_data_size")
    dyn = {0: 8, 1: 3, 3: 2, 7: 4, 28: 1}
    _rejects(caplog, dyn, [], [inputs[0], np.zeros((6, 2, 3, 3), np.float32)], "groups")
