"""Quantize, Dequantize, Requantize against the PyPI ncnn over the cases of ncnn's
tests/test_{quantize,dequantize,requantize}.cpp: per-tensor and per-row / per-channel scales
(and biases), every rank, saturation, every fused activation after requantize; the layer and
net paths, each case on every backend (oracle.backends: the CPU and the GPU option grid).
int8 results are exact; Dequantize's fp32 too (one fused multiply-add, as ncnn), on the GPU's
fp32 sets as well, and Quantize's on the fp16 sets too (the net keeps the blob a Quantize
reads in fp32 storage, as the CPU reads it).

int32 inputs travel as the bit patterns of fp32 inputs (the oracle harness writes fp32), and
int8 outputs come back widened to fp32 on both sides, as ncnn's extract widens them.
"""

from __future__ import annotations

import logging

import numpy as np
import pytest
from oracle import assert_mul_add, backends, check, rng, run_layer

from ncnn_c.layer._int8 import float2int8

PATHS = ("layer", "net")

# ncnn's shapes (numpy order), 4-D, 3-D, 2-D, 1-D
SHAPES = [
    (24, 2, 3, 5), (13, 3, 5, 3),
    (24, 7, 5), (12, 9, 7), (13, 5, 3), (256, 3, 3), (255, 3, 3),
    (24, 15), (12, 17), (15, 19), (256, 15), (255, 15),
    (128,), (124,), (127,), (256,), (255,),
]  # fmt: skip


def _rows(shape) -> int:
    return 1 if len(shape) == 1 else shape[0]


def int32_bits(a) -> np.ndarray:
    return np.asarray(a, dtype=np.int32).view(np.float32)


# the GPU sets a big parametrised product runs on: the layers' two shader forms (elempack 1
# and 4) and fp16 storage; Dequantize and Requantize take fp32 elempack 1 whatever the options
GRID = ["fp32", "fp32-pack", "fp16sa-pack"]


@pytest.mark.parametrize("per_channel", [0, 1])
@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("backend", backends("Quantize"))
def test_quantize(shape, per_channel, backend):
    g = rng("quantize", shape, per_channel)
    n = _rows(shape) if per_channel and len(shape) > 1 else 1
    scale = g.uniform(120, 140, n).astype(np.float32) if per_channel else np.full(1, 100, np.float32)
    # values past +-127/scale saturate
    x = g.uniform(-1.5, 1.5, shape).astype(np.float32)
    check(backend, "Quantize", {0: n}, [(scale, 1)], [x], paths=PATHS, tol=0.0, tol_fp32=0.0, tol_fp16=0.0)


def test_float2int8_rounds_half_away_and_saturates():
    v = np.array([0.5, -0.5, 1.5, -1.5, 2.5, 126.5, 127.4, 128.0, -127.6, -300, 0.49, -0.49], np.float32)
    assert float2int8(v).tolist() == [1, -1, 2, -2, 3, 127, 127, 127, -127, -127, 0, 0]
    # cvttps turns NaN and values beyond int32 into INT_MIN, which saturates to -127
    assert float2int8(np.array([np.nan, np.inf, -np.inf, 3e9], np.float32)).tolist() == [-127] * 4


@pytest.mark.parametrize("backend", backends("Quantize"))
def test_quantize_ties_and_specials_against_ncnn(backend):
    # exact .5 ties, values beyond int32, infinities and NaN: the SIMD body's results
    v = np.array(
        [0.5, -0.5, 1.5, -2.5, 126.5, -126.5, 1e10, -1e10, np.inf, -np.inf, np.nan, 0.0] * 4, np.float32
    )
    check(backend, "Quantize", {0: 1}, [(np.ones(1, np.float32), 1)], [v], paths=PATHS, tol=0.0, tol_fp32=0.0)


_DEQ_SIZES = [(1, "c"), (1, 1), (1, 0), ("c", "c"), ("c", 1), ("c", 0)]
_DEQ_SHAPES = [s for s in SHAPES if s[0] not in (256, 255)] + [(48, 13, 11), (48, 127)]


# a 1-D blob takes one scale and one bias: per-channel sizes only for 2-D and 3-D blobs
@pytest.mark.parametrize(
    "shape,scale_size,bias_size",
    [(s, a, b) for s in _DEQ_SHAPES for a, b in _DEQ_SIZES if len(s) > 1 or "c" not in (a, b)],
    ids=str,
)
@pytest.mark.parametrize("backend", backends("Dequantize", grid=GRID))
def test_dequantize(shape, scale_size, bias_size, backend):
    g = rng("dequantize", shape, scale_size, bias_size)
    c = _rows(shape)
    ns = c if scale_size == "c" else 1
    nb = c if bias_size == "c" else bias_size
    weights = [(g.uniform(-1.2, 1.2, ns).astype(np.float32), 1)]
    if nb:
        weights.append((g.uniform(-1.2, 1.2, nb).astype(np.float32), 1))
    ints = g.integers(-100000, 100000, shape)
    x = int32_bits(ints)
    compare = None
    if nb:
        # x * scale + bias: ncnn rounds once or twice, by CPU (oracle.assert_mul_add)
        per_row = (-1,) + (1,) * (len(shape) - 1)
        scale = np.broadcast_to(weights[0][0].reshape(per_row), shape)
        bias = np.broadcast_to(weights[1][0].reshape(per_row), shape)

        def compare(got, ref, what):
            return assert_mul_add(got, ref, ints.astype(np.float32), scale, bias, what)

    check(
        backend,
        "Dequantize",
        {0: ns, 1: nb},
        weights,
        [x],
        paths=PATHS,
        tol=0.0,
        tol_fp32=0.0,
        compare=compare,
    )


ACTIVATIONS = [(0, ()), (1, ()), (2, (0.3,)), (3, (-0.6, 0.7)), (4, ()), (5, ()), (6, (0.2, 0.5))]


@pytest.mark.parametrize("act,act_params", ACTIVATIONS, ids=str)
@pytest.mark.parametrize(
    "shape,sin,sout,bias",
    [
        ((24, 7, 5), "c", "c", "c"), ((24, 7, 5), 1, 1, 1), ((13, 5, 3), "c", 1, 0), ((13, 5, 3), 1, "c", "c"),
        ((24, 2, 3, 5), "c", "c", "c"), ((24, 2, 3, 5), 1, 1, 0),
        ((24, 15), "c", "c", "c"), ((15, 19), 1, "c", 1), ((12, 17), 1, 1, 0),
        ((128,), 1, 1, 1), ((127,), 1, 1, 0),
    ],
    ids=str,
)  # fmt: skip
@pytest.mark.parametrize("backend", backends("Requantize", grid=GRID))
def test_requantize(shape, sin, sout, bias, act, act_params, backend):
    g = rng("requantize", shape, sin, sout, bias, act)
    c = _rows(shape)
    n_in, n_out = (c if sin == "c" else 1), (c if sout == "c" else 1)
    nb = c if bias == "c" else bias
    weights = [
        (g.uniform(1e-4, 1e-3, n_in).astype(np.float32), 1),
        (g.uniform(10, 100, n_out).astype(np.float32), 1),
    ]
    if nb:
        weights.append((g.uniform(-1.2, 1.2, nb).astype(np.float32), 1))
    params = {0: n_in, 1: n_out, 2: nb, 3: act}
    if act_params:
        params[4] = [float(v) for v in act_params]
    x = int32_bits(g.integers(-20000, 20000, shape))
    check(backend, "Requantize", params, weights, [x], paths=PATHS, tol=0.0, tol_fp32=0.0)


def _errors(caplog):
    return [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]


@pytest.mark.parametrize(
    "layer_type,params,weights,word",
    [
        ("Quantize", {0: 0}, [], "scale_data_size"),
        ("Quantize", {0: 3}, [np.ones(3, np.float32)], "scale_data"),  # 3 scales for 4 channels
        ("Dequantize", {0: 1, 1: -1}, [np.ones(1, np.float32)], "bias_data_size"),
        ("Dequantize", {0: 1, 1: 2}, [np.ones(1, np.float32), np.ones(2, np.float32)], "bias_data"),
        ("Requantize", {0: 1, 1: 0}, [], "scale_out_data_size"),
        ("Requantize", {0: 1, 1: 1, 3: 2}, [np.ones(1, np.float32)] * 2, "activation_type 2"),
        ("Requantize", {0: 1, 1: 1, 3: 9}, [np.ones(1, np.float32)] * 2, "activation_type"),
    ],
    ids=str,
)
def test_bad_params_and_counts_are_refused(caplog, layer_type, params, weights, word):
    x = np.zeros((4, 3, 3), np.float32)
    with caplog.at_level(logging.ERROR, logger="ncnn_c"):
        ret, _ = run_layer(layer_type, params, [(w, 1) for w in weights], [x])
    errors = _errors(caplog)
    assert ret != 0
    assert len(errors) == 1 and layer_type in errors[0] and word in errors[0], errors


def test_missing_scales_are_refused(caplog):
    from ncnn_c.layer import create_layer_cpu
    from ncnn_c.modelbin import ModelBinFromMatArray
    from ncnn_c.paramdict import ParamDict

    for layer_type in ("Quantize", "Dequantize", "Requantize"):
        caplog.clear()
        layer = create_layer_cpu(layer_type)
        assert layer.load_param(ParamDict()) == 0
        with caplog.at_level(logging.ERROR, logger="ncnn_c"):
            assert layer.load_model(ModelBinFromMatArray([])) != 0
        errors = [e for e in _errors(caplog) if layer_type in e]
        assert len(errors) == 1 and "scale" in errors[0], _errors(caplog)


def test_int8_input_to_quantize_is_refused(caplog):
    from ncnn_c.layer import create_layer_cpu
    from ncnn_c.mat import Mat
    from ncnn_c.option import Option
    from ncnn_c.paramdict import ParamDict

    layer = create_layer_cpu("Quantize")
    assert layer.load_param(ParamDict()) == 0
    with caplog.at_level(logging.ERROR, logger="ncnn_c"):
        assert layer.forward(Mat(np.zeros(8, np.int8)), Mat(), Option()) != 0
    assert len(_errors(caplog)) == 1 and "Quantize" in _errors(caplog)[0]
