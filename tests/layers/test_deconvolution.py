"""Deconvolution against the PyPI ncnn oracle: geometry, strides, dilations, every crop form
(pads, output_pad, output_w/output_h with SAME pads), output size, bias on/off, activations,
fp16 weights, each case on every backend (oracle.backends: the CPU, and the GPU option grid,
where (inch, outch) pick every packing form); then the CPU's dynamic weights and an independent
numpy definition, the GPU's bottom in the other packing, and bad inputs.

The case builder is shared with test_deconvolutiondepthwise.py."""

from __future__ import annotations

import logging

import numpy as np
import pytest
from oracle import (
    GPU_GRID,
    assert_close,
    backends,
    check,
    check_layer,
    make_bin,
    randn,
    rng,
    run_layer,
    run_ncnn,
    run_net_gpu,
)

from ncnn_c.layer.vulkan.deconvolution_vulkan import Deconvolution_vulkan

ACTIVATIONS = [(0, None), (1, None), (2, [0.1]), (3, [-0.5, 0.5]), (4, None), (5, None), (6, [0.2, 0.5])]


def deconv_case(inch, outch, kw, kh, h, w, extra, bias=True, fp16=False, key=()):
    g = rng("deconv", inch, outch, kw, kh, h, w, sorted(extra.items(), key=str), bias, fp16, key)
    x = randn(g, (inch, h, w))
    wt = randn(g, (outch * inch * kw * kh,), 0.5)
    params = {0: outch, 1: kw, 11: kh, 5: int(bias), 6: wt.size, **extra}
    weights = [(wt, "fp16" if fp16 else 0)]
    if bias:
        weights.append((randn(g, (outch,)), 1))
    return params, weights, [x]


def with_activation(extra, act):
    """``extra`` with activation ``act`` and its ACTIVATIONS parameters."""
    values = dict(ACTIVATIONS)[act]
    return {**extra, 9: act, **({10: values} if values is not None else {})}


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


def assert_packs(backend, packs, packed) -> None:
    """On a GPU set the shader ran with elempacks ``packed`` when packing is on, 1 -> 1 if not."""
    if backend != "cpu":
        assert packs == {packed if GPU_GRID[backend[3:]]["use_packing_layout"] else (1, 1)}


@pytest.mark.parametrize("bias", [True, False], ids=["bias", "nobias"])
@pytest.mark.parametrize(
    "kw,kh,extra",
    [
        (1, 1, {}),
        (3, 3, {}),
        (3, 3, {3: 2}),
        (4, 4, {3: 2, 4: 1}),
        (2, 2, {3: 2}),
        (3, 2, {3: 2, 13: 3, 2: 2, 12: 3}),
        (3, 3, {3: 2, 4: 1, 15: 0, 14: 2, 16: 1}),
        (3, 3, {3: 2, 18: 1}),
        (3, 3, {3: 3, 18: 2, 19: 1}),
        (5, 3, {3: 1, 4: 2, 14: 1}),
    ],
)
@pytest.mark.parametrize("backend", backends("Deconvolution"))
def test_geometry(kw, kh, extra, bias, backend):
    params, weights, inputs = deconv_case(5, 4, kw, kh, 7, 13, extra, bias)
    check(backend, "Deconvolution", params, weights, inputs)


# (inch, outch) and the (in, out) elempacks the GPU runs them with when packing is on
PACKINGS = {(3, 5): (1, 1), (8, 8): (4, 4), (4, 9): (4, 1), (3, 8): (1, 4)}
# (kw, kh, extra): strides, dilations, every crop form; test_deconvolutiondepthwise.py's too
EXTRAS = [
    (3, 3, {}),
    (4, 4, {3: 2, 4: 1}),
    (3, 2, {3: 2, 13: 3, 2: 2, 12: 1}),
    (3, 3, {3: 2, 18: 1, 4: 0, 15: 1}),
    (3, 3, {3: 2, 4: -233, 20: 12, 21: 14}),
    (3, 3, {3: 2, 4: -234, 20: 13}),
]


@pytest.mark.parametrize("kw,kh,extra", EXTRAS, ids=str)
@pytest.mark.parametrize("inch,outch", list(PACKINGS), ids=str)
@pytest.mark.parametrize("backend", backends("Deconvolution"))
def test_packings(inch, outch, kw, kh, extra, backend, packs):
    check(backend, "Deconvolution", *deconv_case(inch, outch, kw, kh, 7, 6, extra))
    assert_packs(backend, packs, PACKINGS[inch, outch])


@pytest.mark.parametrize("form", ["output_h", "output_h=output_w"])
@pytest.mark.parametrize(
    "pad,out_w,out_h",
    [(-233, 14, 14), (-233, 15, 12), (-234, 14, 14), (-234, 15, 12), (-233, 27, 15), (-234, 20, 9)],
)
@pytest.mark.parametrize("backend", backends("Deconvolution"))
def test_same_output_size(pad, out_w, out_h, form, backend):
    if form == "output_h":
        params, weights, inputs = deconv_case(3, 2, 3, 3, 7, 13, {3: 2, 4: pad, 20: out_w, 21: out_h})
    else:  # output_h defaults to output_w
        params, weights, inputs = deconv_case(3, 2, 3, 3, 13, 13, {3: 2, 4: pad, 20: out_w})
    check(backend, "Deconvolution", params, weights, inputs)


@pytest.mark.parametrize("backend", backends("Deconvolution"))
def test_same_pads_without_output_size_keep_full(backend):
    params, weights, inputs = deconv_case(3, 2, 3, 3, 5, 6, {3: 2, 4: -233})
    if backend == "cpu":
        ret, out = run_layer("Deconvolution", params, weights, inputs)
        assert ret == 0 and out[0].shape == (2, 11, 13)
    check(backend, "Deconvolution", params, weights, inputs)


# (inch, outch, h, w) of the activation cases: the GPU packs (4, 4)
ACT_SHAPES = [(4, 3, 6, 5), (4, 4, 5, 6), (3, 5, 5, 6)]


@pytest.mark.parametrize("act,act_params", ACTIVATIONS)
@pytest.mark.parametrize("shape", ACT_SHAPES, ids=str)
@pytest.mark.parametrize("backend", backends("Deconvolution"))
def test_activation(act, act_params, shape, backend):
    inch, outch, h, w = shape
    params, weights, inputs = deconv_case(inch, outch, 3, 3, h, w, with_activation({3: 2}, act), key=act)
    check(backend, "Deconvolution", params, weights, inputs)


@pytest.mark.parametrize("inch,outch,h,w", [(1, 1, 1, 1), (1, 3, 1, 1), (7, 1, 7, 13), (16, 8, 8, 8)])
@pytest.mark.parametrize("backend", backends("Deconvolution"))
def test_sizes(inch, outch, h, w, backend):
    params, weights, inputs = deconv_case(inch, outch, 3, 3, h, w, {3: 2, 4: 1})
    check(backend, "Deconvolution", params, weights, inputs)


@pytest.mark.parametrize("inch,outch", list(PACKINGS), ids=str)
@pytest.mark.parametrize("shape_hw", [(1, 1), (7, 13), (57, 61)], ids=str)
@pytest.mark.parametrize("backend", backends("Deconvolution"))
def test_sizes_no_bias(inch, outch, shape_hw, backend):
    extra = with_activation({3: 2, 4: 1}, 1)
    check(backend, "Deconvolution", *deconv_case(inch, outch, 4, 4, *shape_hw, extra, bias=False))


@pytest.mark.parametrize("backend", backends("Deconvolution"))
def test_large_image(backend):
    params, weights, inputs = deconv_case(3, 2, 4, 4, 227, 227, {3: 2, 4: 1, 9: 1})
    check(backend, "Deconvolution", params, weights, inputs)


@pytest.mark.parametrize("backend", backends("Deconvolution"))
def test_fp16_weights(backend):
    params, weights, inputs = deconv_case(6, 5, 3, 3, 7, 9, {3: 2}, fp16=True)
    check(backend, "Deconvolution", params, weights, inputs)


@pytest.mark.parametrize("bias", [True, False])
def test_dynamic_weight(bias):
    g = rng("deconv dynamic", bias)
    x = randn(g, (4, 5, 6))
    wd = randn(g, (4, 3, 3, 2))  # [inch][outch][kh][kw]
    inputs = [x, wd] + ([randn(g, (3,))] if bias else [])
    params = {0: 3, 1: 2, 11: 3, 3: 2, 4: 1, 5: int(bias), 28: 1, 9: 3, 10: [-1.0, 1.0]}
    check_layer("Deconvolution", params, [], inputs)


def test_matches_numpy_definition():
    # an independent per-pixel scatter, to check more than agreement with the oracle
    params, weights, inputs = deconv_case(2, 3, 3, 2, 3, 4, {3: 2, 13: 1, 2: 2}, key="np")
    x = inputs[0]
    wt = np.asarray(weights[0][0]).reshape(3, 2, 2, 3)
    bias = np.asarray(weights[1][0])
    ref = np.zeros((3, (3 - 1) * 1 + 2 * 1 + 1, (4 - 1) * 2 + 2 * 2 + 1), np.float64) + bias[:, None, None]
    for i in range(3):
        for j in range(4):
            for ky in range(2):
                for kx in range(3):
                    ref[:, i + ky * 2, j * 2 + kx * 2] += wt[:, :, ky, kx] @ x[:, i, j]
    ret, out = run_layer("Deconvolution", params, weights, inputs)
    assert ret == 0
    np.testing.assert_allclose(out[0], ref, rtol=1e-5, atol=1e-5)


def _rejects(caplog, params, weights, inputs, words):
    with caplog.at_level(logging.ERROR, logger="ncnn_c"):
        ret, _ = run_layer("Deconvolution", params, weights, inputs)
    assert ret != 0
    assert any(words in r.getMessage() for r in caplog.records), caplog.text


def test_bad_inputs(caplog):
    params, weights, inputs = deconv_case(3, 2, 3, 3, 5, 5, {3: 2})
    _rejects(caplog, params, weights, [inputs[0][0]], "3-D")
    _rejects(caplog, params, weights, [inputs[0][:2]], "input channels")
    _rejects(caplog, {**params, 6: params[6] + 1}, weights, inputs, "weight_data_size")
    _rejects(caplog, {**params, 9: 7}, weights, inputs, "activation_type")
    _rejects(caplog, {**params, 9: 3}, weights, inputs, "param 10")
    _rejects(caplog, {**params, 20: 8}, weights, inputs, "SAME")
    _rejects(caplog, {**params, 4: -233, 20: 40}, weights, inputs, "larger")
    _rejects(caplog, {**params, 4: 6}, weights, inputs, "leave nothing")
    _rejects(caplog, {**params, 4: -5}, weights, inputs, "pads")
    _rejects(caplog, {**params, 3: 0}, weights, inputs, "stride")
    # dynamic weights: the weight blob must be 4-D and split into the input channels
    dyn = {0: 2, 1: 3, 3: 2, 28: 1}
    _rejects(caplog, dyn, [], [inputs[0]], "inputs")
    _rejects(caplog, dyn, [], [inputs[0], np.zeros((3, 2, 9), np.float32)], "4-D")
    _rejects(caplog, dyn, [], [inputs[0], np.zeros((2, 2, 3, 3), np.float32)], "input channels")


@pytest.mark.gpu
def test_bottom_in_other_packing(packs):
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
