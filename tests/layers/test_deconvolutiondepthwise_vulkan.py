"""DeconvolutionDepthWise on the GPU over the option grid: depthwise (elempack 1 and 4),
channel multipliers, grouped forms in every packing (a group's inputs and outputs
divisible by 4 or not), strides, dilations, every crop form, bias on/off, activations;
the geometry list and case builder are test_deconvolutiondepthwise.py's."""

from __future__ import annotations

import pytest
from oracle import check_layer_gpu
from test_deconvolution import with_activation
from test_deconvolutiondepthwise import EXTRAS, deconvdw_case

from ncnn_c.layer.vulkan.deconvolution_vulkan import Deconvolution_vulkan

pytestmark = pytest.mark.gpu

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
    extra = with_activation(extra, act)
    params, weights, inputs = deconvdw_case(inch, outch, group, kw, kh, *shape_hw, extra, bias)
    return check_layer_gpu("DeconvolutionDepthWise", params, weights, inputs, grid=grid)


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
