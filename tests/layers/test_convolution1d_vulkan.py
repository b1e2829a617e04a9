"""Convolution1D on the GPU over the option grid: every pad form, stride, dilation, bias,
activations (test_convolution1d.py's geometry and cases), and channel/output counts
divisible by 4 and not."""

from __future__ import annotations

import pytest
from oracle import check_layer_gpu
from test_convolution1d import GEOMETRY, conv1d_case, with_activation

from ncnn_c.layer.vulkan.convolution1d_vulkan import Convolution1D_vulkan

pytestmark = pytest.mark.gpu

# the CPU test's geometry, plus 8 channels (packed) and a 1-long row
GPU_GEOMETRY = GEOMETRY + [({1: 3, 4: 1}, 8, 20), ({1: 3, 4: 1}, 5, 1)]


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


def _case(params, c, length, num_output, bias=True, act=0, grid=None):
    p = with_activation({**params, 0: num_output}, act) if act else {**params, 0: num_output}
    return check_layer_gpu("Convolution1D", *conv1d_case(p, c, length, bias), grid=grid)


@pytest.mark.parametrize("num_output", [6, 8])
@pytest.mark.parametrize("geom", GPU_GEOMETRY, ids=lambda g: str(g[0]) + f"-{g[1]}x{g[2]}")
def test_convolution1d_grid(geom, num_output, packs):
    params, c, length = geom
    _case(params, c, length, num_output)
    # elempack 1 -> 1, 1 -> 4, 4 -> 1 and 4 -> 4 once packing is on
    assert packs == {(1, 1), (4 if c % 4 == 0 else 1, 4 if num_output % 4 == 0 else 1)}


@pytest.mark.parametrize("act", range(1, 7))
@pytest.mark.parametrize("c,num_output", [(4, 5), (8, 8), (3, 8)], ids=str)
def test_convolution1d_activation_grid(c, num_output, act):
    _case({1: 3, 4: 1}, c, 13, num_output, act=act)


@pytest.mark.parametrize("c,num_output", [(32, 40), (12, 7), (5, 36)], ids=str)
def test_convolution1d_wide(c, num_output):
    """More output channels and positions than one invocation's tile, over long rows."""
    _case({1: 5, 3: 2, 4: 2}, c, 301, num_output, grid=["fp32", "fp32-pack", "fp16s-pack", "fp16sa-pack"])


def test_convolution1d_no_bias():
    _case({1: 3, 4: 1}, 8, 13, 12, bias=False, grid=["fp32", "fp32-pack", "fp16s-pack"])


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
        _case({1: 3, 4: 1}, c, 13, num_output, grid=["fp32-pack", "fp16s-pack", "fp16pa-pack"])
    assert arrived == [1] * 6
