"""CPU layers of the SqueezeNet milestone checked against the PyPI ncnn oracle.

Each case builds a one-layer network, runs it in the oracle (CPU, fp32, one thread) and
in ncnn_c (the layer object directly, forward_inplace where the layer supports it, and
ncnn_c.Net), and requires a relative L2 error <= 1e-5. The default run covers every
param key and form with a representative grid; the exhaustive products are ``slow``.
"""

from __future__ import annotations

import itertools
import zlib

import ncnn  # noqa: F401  (the oracle must be installed)
import numpy as np
import pytest
from oracle import check_layer, make_param, run_layer, run_ncnn

TOL = 1e-5


def rng(*key):
    """A generator seeded from the case itself, so every case is reproducible on its own."""
    return np.random.default_rng(zlib.crc32(repr(key).encode()))


def randn(g, shape, scale=1.0):
    return (g.standard_normal(shape) * scale).astype(np.float32)


# Convolution: tests/layers/test_convolution.py


# -- Pooling -------------------------------------------------------------------------------------
# (the Pooling layer's own tests are in tests/layers/test_pooling.py; the SAME-padding cases
# below share their negative-pad geometry with Convolution)


def test_same_padding_kernel_smaller_than_stride():
    # one axis needs padding, the other a crop (negative total pad): ncnn crops rows at the
    # bottom whatever the SAME flavour; its oracle is memory-unsafe here, so it runs isolated
    g = rng("same-crop")
    x = randn(g, (2, 9, 10))
    weight = randn(g, (3, 2, 2, 2))
    for pads in (-233, -234):
        check_layer("Convolution", {0: 3, 1: 2, 3: 3, 4: pads, 6: 24}, [(weight, 0)], [x], isolate=True)
    for pad_mode, ptype in itertools.product((2, 3), (0, 1)):
        check_layer("Pooling", {0: ptype, 1: 2, 2: 3, 5: pad_mode}, [], [x], isolate=True)


@pytest.mark.parametrize("use_vulkan", [False, True], ids=["cpu", "gpu"])
@pytest.mark.parametrize(
    "shape,kw,kh,sw,sh",
    [
        ((2, 5, 8), 1, 3, 4, 1),  # width total -3 (left -1 / right -2 split), height pads
        ((5, 3, 8), 2, 1, 2, 1),  # width total -1 and height 0
        ((1, 9, 11), 4, 2, 2, 3),  # height total -1 (crop), width pads
        ((2, 7, 9), 1, 1, 3, 4),  # every total negative: ncnn does not pad or crop at all
    ],
    ids=str,
)
def test_same_padding_negative_totals_on_either_axis(shape, kw, kh, sw, sh, use_vulkan):
    # rows of fewer than 12 floats: where ncnn's own negative-left border copy is memory-safe
    g = rng("same-neg", shape, kw, kh)
    x = randn(g, shape)
    c = shape[0]
    weight = randn(g, (3, c, kh, kw))
    paths = ("net",) if use_vulkan else ("layer", "net")
    for pads in (-233, -234):
        params = {0: 3, 1: kw, 11: kh, 3: sw, 13: sh, 4: pads, 5: 0, 6: weight.size}
        check_layer(
            "Convolution", params, [(weight, 0)], [x], isolate=True, use_vulkan=use_vulkan, paths=paths
        )
    for pad_mode, ptype in itertools.product((2, 3), (0, 1)):
        params = {0: ptype, 1: kw, 11: kh, 2: sw, 12: sh, 5: pad_mode}
        check_layer("Pooling", params, [], [x], isolate=True, use_vulkan=use_vulkan, paths=paths)


@pytest.mark.parametrize("use_vulkan", [False, True], ids=["cpu", "gpu"])
def test_full_padding_tail_when_the_padded_input_is_smaller_than_the_kernel(use_vulkan):
    # (h + pads - kernel) is negative: ncnn's tail uses C's remainder, stride - (-1) = 3 rows
    x = randn(rng("tail-neg"), (6, 1, 2))
    params = {0: 0, 1: 4, 11: 3, 2: 1, 12: 2, 3: 2, 13: 1, 14: 0, 15: 0, 5: 0}
    paths = ("net",) if use_vulkan else ("layer", "net")
    check_layer("Pooling", params, [], [x], isolate=True, use_vulkan=use_vulkan, paths=paths)


# -- element-wise and shape layers --------------------------------------------------------------------
SHAPES = [(11,), (6, 9), (3, 5, 7), (2, 3, 5, 6)]


@pytest.mark.parametrize("slope", [0.0, 0.1, -0.3])
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_relu(shape, slope):
    x = randn(rng("relu", shape, slope), shape)
    check_layer("ReLU", {0: slope}, [], [x], tol=TOL, paths=("layer", "inplace", "net"))


@pytest.mark.parametrize("scale", [1.0, 0.5, 3.0])
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_dropout(shape, scale):
    x = randn(rng("dropout", shape, scale), shape)
    params = {} if scale == 1.0 else {0: scale}
    check_layer("Dropout", params, [], [x], tol=TOL, paths=("layer", "inplace", "net"))


@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_softmax_axes(shape):
    dims = len(shape)
    x = randn(rng("softmax", shape), shape, 4.0)
    for axis in range(-dims, dims):
        check_layer("Softmax", {0: axis, 1: 1}, [], [x], tol=TOL, paths=("layer", "inplace", "net"))
    # without fixbug0 only axis 0 loads (both in ncnn and here)
    check_layer("Softmax", {0: 0}, [], [x], tol=TOL, paths=("layer", "inplace", "net"))


@pytest.mark.parametrize("axis", [1, -1])
def test_softmax_old_param_rejected(axis):
    x = np.ones((2, 3, 4), np.float32)
    ref_ret, _ = run_ncnn(make_param("Softmax", {0: axis}, [x.shape]), b"", [x])
    ret, _ = run_layer("Softmax", {0: axis}, [], [x])
    assert ref_ret != 0 and ret != 0


def test_softmax_large_values_stay_finite():
    x = np.array([1000.0, 999.0, -1000.0, 0.0], np.float32)
    check_layer("Softmax", {}, [], [x], tol=TOL)


def _concat_parts(shape, axis, sizes, g):
    parts = []
    for n in sizes:
        s = list(shape)
        s[axis] = n
        parts.append(randn(g, tuple(s)))
    return parts


@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_concat_axes(shape):
    dims = len(shape)
    for axis in range(-dims, dims):
        for sizes in [(3, 5), (1, 2, 6)]:
            parts = _concat_parts(shape, axis % dims, sizes, rng("concat", shape, axis, sizes))
            check_layer("Concat", {0: axis}, [], parts, tol=TOL)


def test_concat_squeezenet_form():
    g = rng("concat-sqz")
    check_layer("Concat", {}, [], [randn(g, (64, 56, 56)), randn(g, (64, 56, 56))], tol=TOL)


def test_concat_mismatch_fails():
    ret, _ = run_layer("Concat", {0: 0}, [], [np.ones((2, 3, 4), np.float32), np.ones((2, 5, 4), np.float32)])
    assert ret != 0


@pytest.mark.parametrize("n_out", [1, 2, 3])
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_split(shape, n_out):
    x = randn(rng("split", shape, n_out), shape)
    check_layer("Split", {}, [], [x], n_outputs=n_out, tol=TOL)


def test_split_shares_storage():
    from oracle import default_option

    from ncnn_c.layer import create_layer_cpu
    from ncnn_c.mat import Mat

    layer = create_layer_cpu("Split")
    assert not layer.one_blob_only and not layer.support_inplace
    bottom = Mat(np.arange(24, dtype=np.float32).reshape(2, 3, 4))
    tops = [Mat(), Mat()]
    assert layer.forward([bottom], tops, default_option()) == 0
    assert all(t.data_ptr() == bottom.data_ptr() for t in tops)


@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_input_passes_through(shape):
    x = randn(rng("input", shape), shape)
    # a Dropout of scale 1 after the Input is a no-op in both, so the output is the input
    check_layer("Dropout", {}, [], [x], tol=0.0, paths=("net",))
    ret, outs = run_layer("Input", {0: 7, 1: 5, 11: 3, 2: 2}, [], [x])
    assert ret == 0 and np.array_equal(outs[0], x)


def test_input_params():
    from ncnn_c.layer import create_layer_cpu
    from ncnn_c.paramdict import ParamDict

    layer = create_layer_cpu("Input")
    pd = ParamDict()
    for k, v in {0: 7, 1: 5, 11: 3, 2: 2}.items():
        pd.set(k, v)
    assert layer.load_param(pd) == 0
    assert (layer.w, layer.h, layer.d, layer.c) == (7, 5, 3, 2)
    assert layer.one_blob_only and layer.support_inplace


def test_layer_flags():
    from ncnn_c.layer import create_layer_cpu

    expected = {
        "Input": (True, True),
        "Convolution": (True, False),
        "ReLU": (True, True),
        "Pooling": (True, False),
        "Concat": (False, False),
        "Split": (False, False),
        "Dropout": (True, True),
        "Softmax": (True, True),
    }
    for name, (one_blob, inplace) in expected.items():
        layer = create_layer_cpu(name)
        assert type(layer).__name__ == name and layer.type == name
        assert (layer.one_blob_only, layer.support_inplace) == (one_blob, inplace), name
