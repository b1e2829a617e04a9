"""Convolution on the GPU over the option grid: geometries, pads, activations, fp16 weights,
and every packing transition (elempack 1/4 in x 1/4 out, and a bottom in the other packing)."""

from __future__ import annotations

import numpy as np
import pytest
from oracle import (
    GPU_GRID,
    assert_close,
    check_layer_gpu,
    make_bin,
    make_param,
    randn,
    rng,
    run_ncnn,
    run_net_gpu,
)

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


# -- the implicit-GEMM path (convolution_pack4_gemm.comp) -------------------------------------
# "auto" picks it on GPUs only; these tests force it on lavapipe and check that it really ran.

PACK_GRID = ["fp32-pack", "fp16s-pack", "fp16sa-pack", "fp16pa-pack"]


def _record_gemm(monkeypatch, policy: str, gpu: bool = False) -> list[bool]:
    """Set the GEMM policy (and with ``gpu`` make lavapipe pass for a GPU device: "auto"
    then picks the GEMM and convolutions keep fp16 arithmetic); returns a list that gets,
    per Convolution forward, whether the GEMM shader ran."""
    from ncnn_c.layer.vulkan import convolution_vulkan as cv

    monkeypatch.delenv("NCNN_C_CONV_GEMM", raising=False)
    monkeypatch.setattr(cv, "GEMM_POLICY", policy)
    if gpu:
        monkeypatch.setattr(cv.Convolution_vulkan, "cpu_device", lambda self: False)
    runs: list[bool] = []
    forward = cv.Convolution_vulkan.forward_vk

    def spy(self, bottom, top, cmd, opt):
        runs.append(self._gemm)
        return forward(self, bottom, top, cmd, opt)

    monkeypatch.setattr(cv.Convolution_vulkan, "forward_vk", spy)
    return runs


@pytest.fixture
def gemm_runs(monkeypatch):
    """The GEMM forced on ("always"); see _record_gemm."""
    return _record_gemm(monkeypatch, "always")


def _gemm_case(runs, geometry, shape, num_output, act=0, bias=1, fp16_weights=False, grid=PACK_GRID):
    errs = _case(geometry, act, shape, num_output, fp16_weights=fp16_weights, bias=bias, grid=grid)
    assert runs and all(runs), "the GEMM shader did not run"
    runs.clear()
    return errs


# (geometry, input shape, num_output): every geometry branch, K (inc/4 x taps) below, at and
# above a 16-tap step, positions below and across a 32-position tile, outc below and across
# the 32-channel tile (36: a second tile holding one vec4)
GEMM_CASES = [
    ({1: 1}, (16, 13, 17), 36),  # flat 1x1
    ({1: 1}, (64, 5, 7), 32),  # flat 1x1, K = 16: one full step
    ({1: 1, 3: 2}, (8, 13, 17), 12),  # 1x1 stride 2: not flat
    ({1: 3, 4: 1}, (16, 13, 17), 36),
    ({1: 3, 4: 1}, (128, 9, 9), 64),  # K = 288: 18 steps
    ({1: 3, 3: 2}, (12, 13, 17), 20),
    ({1: 5, 2: 2, 4: 2}, (8, 17, 13), 12),  # dilation 2
    ({1: 7, 3: 2, 4: 3}, (4, 23, 19), 8),
    ({1: 3, 11: 1, 2: 1, 3: 2, 13: 1, 4: 1, 14: 0, 15: 2, 16: 1, 18: -0.5}, (8, 9, 11), 16),  # kw != kh
    ({1: 1, 11: 3, 12: 2, 14: 1, 16: 0}, (8, 11, 7), 8),  # kh > kw, dilation_h only
    ({1: 3, 4: 1}, (32, 1, 1), 40),  # 1x1 plane
    ({1: 3, 3: 2, 4: -233}, (8, 13, 17), 12),  # SAME_UPPER
    ({1: 4, 3: 2, 4: -234, 18: 0.25}, (8, 13, 17), 12),  # SAME_LOWER, even kernel, pad_value
]


@pytest.mark.parametrize("geometry,shape,num_output", GEMM_CASES, ids=str)
def test_convolution_gemm_grid(gemm_runs, geometry, shape, num_output):
    _gemm_case(gemm_runs, geometry, shape, num_output)


@pytest.mark.parametrize("act", range(1, 7))
@pytest.mark.parametrize("bias", [0, 1])
def test_convolution_gemm_activation_bias(gemm_runs, act, bias):
    _gemm_case(gemm_runs, {1: 3, 4: 1}, (8, 9, 11), 12, act=act, bias=bias, grid=["fp32-pack", "fp16s-pack"])


@pytest.mark.parametrize("k", [1, 3])
def test_convolution_gemm_fp16_weights(gemm_runs, k):
    _gemm_case(gemm_runs, {1: k, 4: k // 2}, (16, 9, 11), 36, act=1, fp16_weights=True)


def test_convolution_gemm_deep_fp16_accumulation(gemm_runs):
    """512 x 3x3 taps per output (72 steps) through the GEMM: fp16 still within 1e-2."""
    _gemm_case(gemm_runs, {1: 3, 4: 1}, (512, 6, 6), 32, grid=["fp32-pack", "fp16s-pack"])


@pytest.mark.parametrize(
    "geometry,shape,num_output",
    [({1: 3, 4: 1}, (16, 13, 17), 36), ({1: 1}, (64, 5, 7), 32), ({1: 3, 4: 1}, (128, 6, 6), 32)],
    ids=str,
)
@pytest.mark.parametrize("fp16_weights", [False, True])
def test_convolution_gemm_as_on_a_gpu(monkeypatch, geometry, shape, num_output, fp16_weights):
    """What a discrete GPU runs, on lavapipe: "auto" picks the GEMM for these layers and
    fp16 arithmetic stays on (a CPU device turns it off for convolutions)."""
    runs = _record_gemm(monkeypatch, "auto", gpu=True)
    _gemm_case(runs, geometry, shape, num_output, act=1, fp16_weights=fp16_weights, grid=PACK_GRID)


def test_convolution_gemm_deep_fp16_arithmetic(monkeypatch):
    """512 x 3x3 taps with real fp16 arithmetic (as on a GPU): the shader sums each K step in
    fp16 and the steps in fp32, measured 7.6e-4 here; one fp16 running sum measured 4.5e-3,
    so the 2e-3 bar checks that the steps really add up in fp32."""
    runs = _record_gemm(monkeypatch, "auto", gpu=True)
    errs = _gemm_case(runs, {1: 3, 4: 1}, (512, 6, 6), 32, grid=["fp16sa-pack", "fp16pa-pack"])
    assert max(errs.values()) <= 2e-3, errs


def _selected(monkeypatch, policy, env, shape, num_output, k=3, packing=True, gpu=False) -> bool:
    """Whether a Convolution layer built under this policy / NCNN_C_CONV_GEMM runs the GEMM."""
    import ncnn_c
    from ncnn_c.layer.vulkan import convolution_vulkan as cv

    monkeypatch.setattr(cv, "GEMM_POLICY", policy)
    if env is None:
        monkeypatch.delenv("NCNN_C_CONV_GEMM", raising=False)
    else:
        monkeypatch.setenv("NCNN_C_CONV_GEMM", env)
    # the device type decides "auto": pretend either way, so the test means the same on
    # lavapipe and on a real GPU
    monkeypatch.setattr(cv.Convolution_vulkan, "cpu_device", lambda self: not gpu)
    size = k * k * shape[0] * num_output
    net = ncnn_c.Net()
    net.opt.use_vulkan_compute = True
    net.opt.use_packing_layout = packing
    assert net.load_param_mem(make_param("Convolution", {0: num_output, 1: k, 6: size}, [shape])) == 0
    assert net.load_model_mem(make_bin([np.zeros(size, np.float32)])) == 0
    layer = net.layers()[1]
    assert layer.vkdev is not None
    gemm = layer._gemm
    net.clear()
    return gemm


def test_convolution_gemm_selection(monkeypatch):
    # a CPU device (lavapipe) keeps the direct shader under "auto"
    assert not _selected(monkeypatch, "auto", None, (64, 8, 8), 64)
    assert _selected(monkeypatch, "always", None, (64, 8, 8), 64)
    # the environment overrides the module setting, either way
    assert _selected(monkeypatch, "never", "always", (8, 8, 8), 8)
    assert not _selected(monkeypatch, "always", "never", (64, 8, 8), 64)
    # only elempack 4 -> 4 has a GEMM shader
    assert not _selected(monkeypatch, "always", None, (64, 8, 8), 64, packing=False)
    assert not _selected(monkeypatch, "always", None, (64, 8, 8), 30)
    assert not _selected(monkeypatch, "always", None, (6, 8, 8), 64)
    # "auto" on a GPU: outc >= 32 and inc x taps >= 64
    assert _selected(monkeypatch, "auto", None, (64, 8, 8), 32, k=1, gpu=True)
    assert _selected(monkeypatch, "auto", None, (8, 8, 8), 32, k=3, gpu=True)
    assert not _selected(monkeypatch, "auto", None, (4, 8, 8), 32, k=3, gpu=True)
    assert not _selected(monkeypatch, "auto", None, (64, 8, 8), 28, k=1, gpu=True)
    assert not _selected(monkeypatch, "auto", None, (32, 8, 8), 64, k=1, gpu=True)


@pytest.mark.parametrize("env", ["sometimes", "ALWAYS "])
def test_convolution_gemm_policy_values(monkeypatch, env):
    """Values are case- and space-insensitive; anything else fails the load with a clear log."""
    import ncnn_c
    from ncnn_c.layer.vulkan import convolution_vulkan as cv

    monkeypatch.setenv("NCNN_C_CONV_GEMM", env)
    if env.strip().lower() == "always":
        assert cv.gemm_policy() == "always"
        return
    with pytest.raises(ValueError, match="NCNN_C_CONV_GEMM"):
        cv.gemm_policy()
    net = ncnn_c.Net()
    net.opt.use_vulkan_compute = True
    assert net.load_param_mem(make_param("Convolution", {0: 8, 1: 1, 6: 64}, [(8, 4, 4)])) == 0
    assert net.load_model_mem(make_bin([np.zeros(64, np.float32)])) != 0
    net.clear()


@pytest.mark.parametrize("tile", ["8,8,4,1", "8,8,4,1,x", "8,8,3,1,1", "0,8,4,1,16"])
def test_convolution_gemm_bad_tile(monkeypatch, tile):
    from ncnn_c.layer.vulkan import convolution_vulkan as cv

    monkeypatch.setenv("NCNN_C_CONV_GEMM_TILE", tile)
    with pytest.raises(ValueError, match="tile|TILE"):
        cv.gemm_tile()


@pytest.mark.parametrize("tile", ["16,4,4,2,8", "8,16,2,1,8", "4,4,2,2,4"])
def test_convolution_gemm_other_tiles(gemm_runs, monkeypatch, tile):
    """The tile is a set of specialization constants: other shapes stay correct."""
    monkeypatch.setenv("NCNN_C_CONV_GEMM_TILE", tile)
    _gemm_case(gemm_runs, {1: 3, 4: 1}, (16, 13, 17), 36, act=1, grid=["fp32-pack", "fp16s-pack"])


@pytest.mark.slow
@pytest.mark.parametrize(
    "geometry",
    [{1: 1}, {1: 3, 4: 1}, {1: 3, 3: 2}, {1: 5, 2: 2, 4: 2}, {1: 7, 3: 2, 4: 3}, {1: 3, 3: 2, 4: -233}],
    ids=str,
)
@pytest.mark.parametrize(
    "shape,num_output", [((128, 55, 55), 128), ((64, 28, 28), 100), ((8, 9, 7), 36)], ids=str
)
def test_convolution_gemm_sweep(gemm_runs, geometry, shape, num_output):
    _gemm_case(gemm_runs, geometry, shape, num_output, act=1)


# -- kernels whose taps hardly overlap (stride near the kernel size) ---------------------------
# A ViT's patch embedding (32x32 stride 32) made the direct shaders stage a row window of
# (tile_w - 1) * stride + kernel inputs per invocation (512 at 16 positions); llvmpipe computed
# wrong sums past a few KiB of such private arrays (vision_transformer.param: rel L2 0.4 after
# its first layer). These shapes read their taps directly (MAX_WINDOW).
PATCH_CASES = [
    ({1: 32, 3: 32}, (3, 64, 384), 8),  # the ViT's patch embedding, 2 rows of 12 patches
    ({1: 32, 3: 32}, (16, 32, 128), 8),  # 16 channels: wrong even at a GPU's 4-position tile
    ({1: 16, 3: 16}, (64, 16, 32), 12),  # elempack 4 in with packing
    ({1: 32, 3: 1}, (16, 32, 40), 8),  # stride 1: a 35..47-input window
    ({1: 8, 3: 8, 4: 3}, (5, 29, 61), 8),  # padded, so taps outside read pad_value
]


@pytest.mark.parametrize("geometry,shape,num_output", PATCH_CASES, ids=str)
def test_convolution_patch_kernels_grid(geometry, shape, num_output):
    _case(geometry, 0, shape, num_output, grid=["fp32", "fp32-pack", "fp16s-pack"])


def test_convolution_patch_kernels_gpu_tile(monkeypatch):
    """The same shapes at a GPU's tile (4 positions x 8 channels), which lavapipe never picks."""
    from ncnn_c.layer.vulkan import convolution_vulkan as cv

    monkeypatch.setattr(cv.Convolution_vulkan, "_tile_shape", lambda self: (4, 2))
    for geometry, shape, num_output in PATCH_CASES[:3]:
        _case(geometry, 0, shape, num_output, grid=["fp32", "fp32-pack"])


# -- ncnn's deprecated 1-D input: a 1x1 convolution over a flat blob is an InnerProduct ---------
# (PaddleOCR v5's detection model: squeeze-excite convolutions after a global pool and a Reshape
# to one dimension; "needs a 3-D elempack 1 blob, got dims 1 elempack 4" before)


@pytest.mark.parametrize("n,num_output,act", [(192, 48, 1), (48, 192, 0), (12, 7, 2), (5, 4, 0)], ids=str)
def test_convolution_flat_input_grid(n, num_output, act):
    g = rng("conv-flat", n, num_output, act)
    params = {0: num_output, 1: 1, 5: 1, 6: n * num_output}
    if act:
        params[9] = act
        if ACTS[act]:
            params[10] = ACTS[act]
    weights = [randn(g, n * num_output, 0.3), (randn(g, num_output), 1)]
    check_layer_gpu("Convolution", params, weights, [randn(g, (n,))])


def test_convolution_flat_input_wrong_size_is_refused():
    g = rng("conv-flat-bad")
    param = make_param("Convolution", {0: 4, 1: 1, 5: 0, 6: 32}, [(6,)])
    ret, _ = run_net_gpu(param, make_bin([randn(g, 32)]), [randn(g, (6,))])
    assert ret != 0
