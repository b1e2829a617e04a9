"""Deconvolution on the GPU over the option grid: strides, dilations, every crop form (pads,
output_pad, output_w/output_h with SAME pads), bias on/off, the fused activations, and
every packing form (elempack 1/4 in x 1/4 out, and a bottom in the other packing).
DeconvolutionDepthWise has its own file. The cases come from test_deconvolution.py's
builder over test_deconvolutiondepthwise.py's geometry list."""

from __future__ import annotations

import pytest
from oracle import GPU_GRID, assert_close, check_layer_gpu, make_bin, randn, rng, run_ncnn, run_net_gpu
from test_deconvolution import deconv_case, with_activation
from test_deconvolutiondepthwise import EXTRAS

from ncnn_c.layer.vulkan.deconvolution_vulkan import Deconvolution_vulkan

pytestmark = pytest.mark.gpu

# (inch, outch) and the (in, out) elempacks they run with packing on
PACKINGS = {(3, 5): (1, 1), (8, 8): (4, 4), (4, 9): (4, 1), (3, 8): (1, 4)}


class PackSet(set):
    arrived: set[int]

    def __init__(self) -> None:
        super().__init__()
        self.arrived = set()


@pytest.fixture
def packs(monkeypatch):
    """The (bottom elempack the shader read, top elempack) of every GPU forward, and in
    ``packs.arrived`` the elempacks the bottoms came in."""
    seen = PackSet()
    forward = Deconvolution_vulkan.forward_vk

    def spy(self, bottom, top, cmd, opt):
        seen.arrived.add(bottom.elempack)
        ret = forward(self, bottom, top, cmd, opt)
        seen.add((4 if self._in_pack4 else 1, top.elempack))
        return ret

    monkeypatch.setattr(Deconvolution_vulkan, "forward_vk", spy)
    return seen


def _case(inch, outch, kw, kh, shape_hw, extra, bias=True, act=0, grid=None):
    params, weights, inputs = deconv_case(inch, outch, kw, kh, *shape_hw, with_activation(extra, act), bias)
    return check_layer_gpu("Deconvolution", params, weights, inputs, grid=grid)


@pytest.mark.parametrize("kw,kh,extra", EXTRAS, ids=str)
@pytest.mark.parametrize("inch,outch", list(PACKINGS), ids=str)
def test_deconvolution_grid(inch, outch, kw, kh, extra, packs):
    _case(inch, outch, kw, kh, (7, 6), extra)
    assert packs == {(1, 1), PACKINGS[inch, outch]}


@pytest.mark.parametrize("act", range(1, 7))
@pytest.mark.parametrize("inch,outch", [(4, 4), (3, 5)], ids=str)
def test_deconvolution_activation_grid(inch, outch, act):
    _case(inch, outch, 3, 3, (5, 6), {3: 2}, act=act)


@pytest.mark.parametrize("inch,outch", list(PACKINGS), ids=str)
@pytest.mark.parametrize("shape_hw", [(1, 1), (7, 13), (57, 61)], ids=str)
def test_deconvolution_sizes_no_bias(inch, outch, shape_hw):
    _case(
        inch,
        outch,
        4,
        4,
        shape_hw,
        {3: 2, 4: 1},
        bias=False,
        act=1,
        grid=["fp32", "fp16s-pack", "fp16pa-pack"],
    )


def test_deconvolution_bottom_in_other_packing(packs):
    """A grouped DeconvolutionDepthWise whose groups hold 2 outputs writes 4 channels as
    elempack 1; the packed Deconvolution after it converts that bottom to elempack 4 first."""
    g = rng("deconv-after-grouped")
    param = (
        "\n".join(
            [
                "7767517",
                "3 3",
                "Input in0 0 1 in0 0=9 1=7 2=8",
                "DeconvolutionDepthWise dw 1 1 in0 d0 0=4 1=1 5=0 6=16 7=2",
                "Deconvolution op 1 1 d0 out0 0=4 1=3 3=2 4=1 5=1 6=144",
            ]
        )
        + "\n"
    )
    weights = make_bin([randn(g, 16), randn(g, 144), (randn(g, 4), 1)])
    x = randn(g, (8, 7, 9))
    ret, ref = run_ncnn(param, weights, [x])
    assert ret == 0
    for name in ("fp32-pack", "fp16s-pack", "fp16pa-pack"):
        ret, got = run_net_gpu(param, weights, [x], **GPU_GRID[name])
        assert ret == 0
        assert_close(got[0], ref[0], 1e-2 if "fp16" in name else 1e-4, name)
    assert packs == {(4, 1), (4, 4)}
    assert packs.arrived == {1, 4}
