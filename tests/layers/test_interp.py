"""Interp against the PyPI ncnn oracle: nearest/bilinear/bicubic, scales and fixed sizes,
align_corner, the reference-blob form, ncnn's 1-D and 2-D rules, tiny inputs whose windows fold
onto the edges, each case on every backend (oracle.backends: the CPU, and the GPU option grid);
then refused inputs on both, and the CPU's coefficient tables."""

from __future__ import annotations

import logging

import numpy as np
import pytest
from oracle import backends, check, make_bin, make_param, randn, rng, run_layer, run_net_gpu

TYPES = {"nearest": 1, "bilinear": 2, "bicubic": 3}
KINDS = pytest.mark.parametrize("kind", TYPES, ids=str)
ALIGN = pytest.mark.parametrize("align", [0, 1])
BACKENDS = pytest.mark.parametrize("backend", backends("Interp"))


def interp_inputs(shape, params, ref_shape=None):
    """The input blob, and the reference blob when ``ref_shape`` is given."""
    g = rng("interp", shape, sorted(params.items()), ref_shape)
    x = randn(g, shape, 2.0)
    return [x] if ref_shape is None else [x, randn(g, ref_shape)]


def case(backend, shape, params, ref_shape=None, tol=1e-5):
    inputs = interp_inputs(shape, params, ref_shape)
    # nearest is a pure copy: bit-exact on the CPU
    tol = 0.0 if params.get(0) == 1 else tol
    return check(backend, "Interp", params, [], inputs, tol=tol)


def gpu_packed(*values):
    """A case only the GPU's list had, on a blob whose channels (or rows) it packs by 4: in the
    slow run only, with the packed GPU sets (the main run's GPU set, fp32, does not pack)."""
    return pytest.param(*values, marks=pytest.mark.slow)


@ALIGN
@KINDS
@pytest.mark.parametrize(
    "shape,out_hw",
    [
        ((3, 7, 13), (14, 26)),  # 2x up
        ((3, 7, 13), (5, 9)),  # down
        ((3, 7, 13), (21, 5)),  # up one axis, down the other
        ((3, 7, 13), (5, 20)),
        ((2, 16, 16), (23, 37)),
        ((4, 9, 11), (1, 1)),
        ((2, 5, 6), (7, 6)),  # width unchanged
        ((2, 40, 33), (12, 17)),  # strong shrink: bicubic taps spread out
        ((3, 227, 227), (113, 300)),
        gpu_packed((8, 7, 13), (5, 9)),
        gpu_packed((8, 5, 6), (21, 5)),
    ],
    ids=str,
)
@BACKENDS
def test_interp_fixed_size(shape, out_hw, kind, align, backend):
    case(backend, shape, {0: TYPES[kind], 3: out_hw[0], 4: out_hw[1], 6: align})


# (shape, (height scale, width scale), align_corner)
SCALES = [
    (s, sc, a)
    for sc in [(2.0, 2.0), (0.5, 0.5), (1.5, 3.0), (3.3, 0.7), (1.0, 2.5)]
    for s, a in [((3, 9, 10), 0), ((2, 7, 13), 1)]
]
SCALES += [gpu_packed((4, 9, 10), sc, 0) for sc in [(2.0, 2.0), (0.5, 0.5), (3.3, 0.7)]]
SCALES += [gpu_packed((8, 7, 13), (2.0, 2.0), 0)]


@KINDS
@pytest.mark.parametrize("shape,scales,align", SCALES, ids=str)
@BACKENDS
def test_interp_scales(shape, scales, align, kind, backend):
    # the scale decides the size (truncated) and, for nearest, the source step 1/scale
    case(backend, shape, {0: TYPES[kind], 1: scales[0], 2: scales[1], 6: align})


@KINDS
@pytest.mark.parametrize("params", [{4: 7, 1: 2.0, 2: 3.0}, {3: 7, 1: 0.5, 2: 1.5}], ids=str)
@BACKENDS
def test_interp_one_axis_set_takes_the_scales(params, kind, backend):
    # only output_width set: the size comes from the scales, nearest still steps by w / outw
    case(backend, (3, 8, 10), {0: TYPES[kind], **params})


@KINDS
@pytest.mark.parametrize(
    "shape,params",
    [((3, 7, 13), {}), ((3, 7, 13), {3: 7, 4: 13}), gpu_packed((8, 7, 13), {3: 7, 4: 13})],
    ids=str,
)
@BACKENDS
def test_interp_identity_passes_through(shape, params, kind, backend):
    case(backend, shape, {0: TYPES[kind], **params})


@ALIGN
@KINDS
@pytest.mark.parametrize("form", ["size", "scale"])
@pytest.mark.parametrize(
    "shape,outw", [((7, 13), 26), ((7, 13), 5), ((16, 32), 45), ((1, 5), 9), gpu_packed((8, 13), 5)], ids=str
)
@BACKENDS
def test_interp_2d_resizes_width_only(shape, outw, form, kind, align, backend):
    if form == "size":
        case(backend, shape, {0: TYPES[kind], 3: 99, 4: outw, 6: align})
    else:
        case(backend, shape, {0: TYPES[kind], 1: 3.0, 2: outw / shape[1] + 1e-4, 6: align})


@KINDS
@pytest.mark.parametrize("shape", [(1,), (7,), (64,)], ids=str)
@pytest.mark.parametrize("params", [{3: 3, 4: 5}, {1: 2.0, 2: 4.0}, {}], ids=str)
@BACKENDS
def test_interp_1d_fills_planes(shape, params, kind, backend):
    case(backend, shape, {0: TYPES[kind], **params})


# (input shape, extra params, reference shape): the reference blob's w x h is the output size;
# nearest then steps by 1/scale (ncnn's rule)
_DYN_FORMS = [((3, 7, 13), {}), ((3, 7, 13), {6: 1, 1: 0.5, 2: 0.5}), ((6, 10), {})]
DYNAMIC = [(s, p, r) for r in [(5, 11, 19), (1, 4, 6), (3, 7, 13), (9, 12), (17,)] for s, p in _DYN_FORMS]
DYNAMIC += [gpu_packed((3, 7, 13), {}, (8, 4, 6))]
DYNAMIC += [
    gpu_packed(s, p, r)
    for r in [(5, 11, 19), (9, 12), (8, 4, 6), (17,)]
    for s, p in [((8, 7, 13), {6: 1, 1: 0.5, 2: 0.5}), ((8, 10), {})]
]


@KINDS
@pytest.mark.parametrize("shape,params,ref_shape", DYNAMIC, ids=str)
@BACKENDS
def test_interp_dynamic_target_size(shape, params, ref_shape, kind, backend):
    case(backend, shape, {0: TYPES[kind], 5: 1, **params}, ref_shape=ref_shape)


@ALIGN
@pytest.mark.parametrize("kind", ["bilinear", "bicubic"])
@pytest.mark.parametrize(
    "shape",
    [(2, 1, 1), (2, 1, 4), (2, 2, 2), (2, 3, 3), (2, 4, 5)]
    + [gpu_packed((4, *hw)) for hw in [(1, 1), (3, 3), (1, 4), (2, 2)]],
    ids=str,
)
@BACKENDS
def test_interp_tiny_inputs_fold_onto_edges(shape, kind, align, backend):
    # windows wider than the input: every weight lands on the edge pixels (ncnn's bicubic reads
    # past rows narrower than 4, but only with zero weights, which is why clamped taps agree)
    case(backend, shape, {0: TYPES[kind], 3: 9, 4: 7, 6: align})


@pytest.mark.parametrize(
    "shape,params",
    [
        ((1, 1, 1), {0: 1, 3: 5, 4: 3}),
        ((3, 227, 227), {0: 1, 1: 2.0, 2: 2.0}),
        ((3, 227, 227), {0: 1, 3: 100, 4: 100}),
    ],
    ids=str,
)
@BACKENDS
def test_interp_nearest_odd_sizes(shape, params, backend):
    case(backend, shape, params)


@pytest.mark.parametrize(
    "params,inputs,text",
    [
        ({0: 4}, [(2, 3, 3)], "resize_type"),
        ({0: 0, 3: 5, 4: 5}, [(2, 3, 3)], "resize_type 0"),
        ({0: 2, 1: 0.1, 2: 0.1}, [(2, 3, 3)], "empty"),
        ({0: 2, 3: 4, 4: 4}, [(2, 2, 3, 3)], "dims 4"),
        ({0: 2, 5: 1}, [(2, 3, 3)], "reference"),
    ],
    ids=str,
)
def test_interp_rejects(params, inputs, text, caplog):
    g = rng("interp-bad", str(params))
    xs = [randn(g, s) for s in inputs]
    with caplog.at_level(logging.ERROR, logger="ncnn_c"):
        ret, _ = run_layer("Interp", params, [], xs)
    assert ret != 0
    assert text in caplog.text


def test_interp_refuses_a_malformed_size_expr(caplog):
    # ']' is no token of ncnn's expression language: refused at load, with the param named
    from ncnn_c.layer import create_layer_cpu
    from ncnn_c.paramdict import ParamDict

    pd = ParamDict()
    pd.set(0, 2)
    pd.set(9, "[*(0w,2),*(0h,2)]")
    with caplog.at_level(logging.ERROR, logger="ncnn_c"):
        assert create_layer_cpu("Interp").load_param(pd) != 0
    assert "size_expr" in caplog.text


def test_interp_coefficients_sum_to_one():
    from ncnn_c.layer.interp import cubic_coeffs, linear_coeffs

    for n, out in ((7, 13), (13, 7), (4, 9), (9, 1)):
        for align in (0, 1):
            _, a = linear_coeffs(n, out, align)
            np.testing.assert_allclose(a.sum(axis=1), 1.0, atol=1e-6)
            _, k = cubic_coeffs(n, out, 0)
            np.testing.assert_allclose(k.sum(axis=1), 1.0, atol=1e-5)


@pytest.mark.gpu
@pytest.mark.parametrize(
    "params,shape,text",
    [
        ({0: 0, 3: 5, 4: 5}, (2, 3, 3), "resize_type 0"),
        ({0: 2, 1: 0.1, 2: 0.1}, (2, 3, 3), "empty"),
        ({0: 2, 3: 4, 4: 4}, (4, 2, 3, 3), "dims 4"),
    ],
    ids=str,
)
def test_interp_gpu_rejects(params, shape, text, caplog):
    x = randn(rng("interp-bad", str(params)), shape)
    with caplog.at_level(logging.ERROR, logger="ncnn_c"):
        ret, _ = run_net_gpu(
            make_param("Interp", params, [shape]), make_bin([]), [x], use_packing_layout=True
        )
    assert ret != 0 and text in caplog.text
