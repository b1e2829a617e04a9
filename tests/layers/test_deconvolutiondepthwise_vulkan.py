"""DeconvolutionDepthWise on the GPU over the option grid: depthwise (elempack 1 and 4),
channel multipliers, grouped forms in every packing (a group's inputs and outputs
divisible by 4 or not), strides, dilations, every crop form, bias on/off, activations."""

from __future__ import annotations

import pytest
from oracle import check_layer_gpu, randn, rng

from ncnn_c.layer.vulkan.deconvolution_vulkan import Deconvolution_vulkan

pytestmark = pytest.mark.gpu

ACTS = {0: None, 1: None, 2: [0.1], 3: [-0.5, 0.5], 4: None, 5: None, 6: [0.2, 0.5]}
EXTRAS = [
    (3, 3, {}),
    (4, 4, {3: 2, 4: 1}),
    (3, 2, {3: 2, 13: 3, 2: 2, 12: 1}),
    (3, 3, {3: 2, 18: 1, 4: 0, 15: 1}),
    (3, 3, {3: 2, 4: -233, 20: 12, 21: 14}),
    (3, 3, {3: 2, 4: -234, 20: 13}),
]
# (inch, outch, group) -> the (in, out) elempacks its shader runs with packing on:
# depthwise packed and not, a channel multiplier, grouped pack1to4 / pack4to1 / pack4,
# groups of 2 channels in a packable blob (converted to elempack 1), one group
GROUPINGS = {
    (8, 8, 8): (4, 4),
    (6, 6, 6): (1, 1),
    (4, 8, 4): (1, 1),
    (6, 12, 3): (1, 4),
    (8, 4, 2): (4, 1),
    (16, 8, 2): (4, 4),
    (8, 8, 4): (1, 1),
    (3, 5, 1): (1, 1),
}


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


def _case(inch, outch, group, kw, kh, shape_hw, extra, bias=True, act=0, grid=None):
    g = rng("deconvdw-gpu", inch, outch, group, kw, kh, shape_hw, str(extra), bias, act)
    x = randn(g, (inch, *shape_hw))
    wt = randn(g, (outch * (inch // group) * kw * kh,), 0.5)
    params = {0: outch, 1: kw, 11: kh, 5: int(bias), 6: wt.size, 7: group, **extra}
    if act:
        params[9] = act
        if ACTS[act]:
            params[10] = ACTS[act]
    weights = [wt] + ([(randn(g, (outch,)), 1)] if bias else [])
    return check_layer_gpu("DeconvolutionDepthWise", params, weights, [x], grid=grid)


@pytest.mark.parametrize("kw,kh,extra", EXTRAS, ids=str)
@pytest.mark.parametrize("inch,outch,group", list(GROUPINGS), ids=str)
def test_deconvolutiondepthwise_grid(inch, outch, group, kw, kh, extra, packs):
    _case(inch, outch, group, kw, kh, (7, 6), extra, grid=["fp32", "fp32-pack", "fp16s-pack"])
    assert packs == {(1, 1), GROUPINGS[inch, outch, group]}


@pytest.mark.parametrize("inch,outch,group", list(GROUPINGS), ids=str)
def test_deconvolutiondepthwise_full_grid(inch, outch, group):
    _case(inch, outch, group, 4, 4, (7, 6), {3: 2, 4: 1})


@pytest.mark.parametrize("act", range(1, 7))
@pytest.mark.parametrize("inch,outch,group", [(4, 4, 4), (3, 3, 3), (8, 8, 2)], ids=str)
def test_deconvolutiondepthwise_activation_grid(inch, outch, group, act):
    _case(inch, outch, group, 3, 3, (5, 6), {3: 2}, act=act)


@pytest.mark.parametrize("inch,outch,group", [(4, 4, 4), (3, 3, 3), (16, 8, 2)], ids=str)
@pytest.mark.parametrize("shape_hw", [(1, 1), (7, 13), (57, 61)], ids=str)
def test_deconvolutiondepthwise_sizes_no_bias(inch, outch, group, shape_hw):
    _case(
        inch,
        outch,
        group,
        4,
        4,
        shape_hw,
        {3: 2, 4: 1},
        bias=False,
        act=1,
        grid=["fp32", "fp16s-pack", "fp16pa-pack"],
    )


def test_deconvolutiondepthwise_benchmark_shape():
    """The upsampling form of mobilenet_yolo: 4x4 stride 2 depthwise over many channels."""
    _case(
        64, 64, 64, 4, 4, (13, 13), {3: 2, 4: 1}, bias=False, grid=["fp32-pack", "fp16s-pack", "fp16sa-pack"]
    )
