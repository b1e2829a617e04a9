"""Elementwise activations (one blob, in place) against the PyPI ncnn oracle, one case list on
every backend (oracle.backends: the CPU, and on the GPU the shared activation.comp over the
option grid).

AbsVal, BNLL, Clip, Dropout, ELU, Exp, GELU, HardSigmoid, HardSwish, Log, Mish, Power, ReLU,
SELU, Sigmoid, Swish, TanH, Threshold: every param, every dims, odd sizes, the layer / in-place
/ net paths, plus the overflow ranges where ncnn clamps or switches formulas.
"""

from __future__ import annotations

import numpy as np
import pytest
from oracle import SHAPES_ALL, SPOT_GRID, backends, check, randn, rng, run_layer

PATHS = ("layer", "inplace", "net")


def _signed(key, shape):
    return randn(rng(*key, shape), shape, 4.0)


def _positive(key, shape):
    return rng(*key, shape).uniform(0.05, 6.0, shape).astype(np.float32)


# (type, params, input maker, tol): tol 0 where ncnn's result is exact (sign, max, compares)
CASES = [
    ("AbsVal", {}, _signed, 0.0),
    ("TanH", {}, _signed, 1e-5),
    ("BNLL", {}, _signed, 1e-5),
    ("Sigmoid", {}, _signed, 1e-5),
    ("Swish", {}, _signed, 1e-5),
    ("Mish", {}, _signed, 1e-5),
    ("Clip", {}, _signed, 0.0),
    ("Clip", {0: -0.5, 1: 1.25}, _signed, 0.0),
    ("Clip", {0: 2.0, 1: -1.0}, _signed, 0.0),  # min > max: ncnn applies max last
    ("ELU", {}, _signed, 1e-5),
    ("ELU", {0: 1.7}, _signed, 1e-5),
    ("SELU", {}, _signed, 1e-5),
    ("SELU", {0: 1.2, 1: 0.8}, _signed, 1e-5),
    ("GELU", {}, _signed, 1e-5),
    ("GELU", {0: 1}, _signed, 1e-5),
    ("HardSigmoid", {}, _signed, 1e-5),
    ("HardSigmoid", {0: 1 / 6, 1: 0.5}, _signed, 1e-5),
    ("HardSwish", {}, _signed, 1e-5),
    ("HardSwish", {0: 1 / 6, 1: 0.5}, _signed, 1e-5),
    ("HardSwish", {0: 0.3, 1: 0.2}, _signed, 1e-5),
    ("Threshold", {}, _signed, 0.0),
    ("Threshold", {0: 0.75}, _signed, 0.0),
    ("ReLU", {}, _signed, 0.0),
    ("ReLU", {0: 0.1}, _signed, 0.0),
    ("ReLU", {0: -0.3}, _signed, 0.0),
    ("Dropout", {}, _signed, 0.0),
    ("Dropout", {0: 0.3}, _signed, 0.0),
    ("Dropout", {0: 0.5}, _signed, 0.0),
    ("Dropout", {0: 3.0}, _signed, 0.0),
    ("Exp", {}, _signed, 1e-5),
    ("Exp", {1: 0.5, 2: -0.25}, _signed, 1e-5),
    ("Exp", {0: 2.0}, _signed, 1e-5),
    ("Exp", {0: 10.0, 1: 0.3, 2: 0.1}, _signed, 1e-5),
    ("Log", {}, _positive, 1e-5),
    ("Log", {0: 2.0}, _positive, 1e-5),
    ("Log", {0: 10.0, 1: 3.0, 2: 0.5}, _positive, 1e-5),
    ("Log", {1: -0.5, 2: 4.0}, _positive, 1e-5),
    ("Power", {}, _signed, 0.0),
    ("Power", {0: 2.0}, _signed, 1e-5),
    ("Power", {0: 3.0, 1: -0.5, 2: 0.25}, _signed, 1e-5),
    ("Power", {0: 0.5, 1: 2.0, 2: 0.1}, _positive, 1e-5),
    ("Power", {0: -1.5, 2: 1.0}, _positive, 1e-5),
]


IDS = [f"{t}-{p}" for t, p, _, _ in CASES]
# the full GPU grid on a packed, an odd and a 4-D blob; every other shape on the grid's two ends
GRID_SHAPES = [(8, 5, 7), (3, 7, 13), (4, 2, 3, 5)]
SHAPES = [s for s in SHAPES_ALL + [(12,), (8, 3), (11,), (6, 9), (2, 3, 5, 6)] if s not in GRID_SHAPES]


def _check(backend, layer_type, params, make, tol, shape):
    x = make((layer_type, tuple(params.items())), shape)
    # the GPU's exact ops (sign, max, compares) are exact in fp32 too
    check(backend, layer_type, params, [], [x], tol=tol, tol_fp32=min(tol, 1e-4), paths=PATHS)


@pytest.mark.parametrize("shape", GRID_SHAPES, ids=str)
@pytest.mark.parametrize("layer_type, params, make, tol", CASES, ids=IDS)
@pytest.mark.parametrize("backend", backends("Sigmoid"))
def test_activation(layer_type, params, make, tol, shape, backend):
    _check(backend, layer_type, params, make, tol, shape)


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("layer_type, params, make, tol", CASES, ids=IDS)
# the GPU half of this sweep belongs to the slow job (as before the merge): 41 cases x 14 shapes
@pytest.mark.parametrize("backend", backends("Sigmoid", grid=SPOT_GRID, slow_gpu=True))
def test_activation_every_shape(layer_type, params, make, tol, shape, backend):
    _check(backend, layer_type, params, make, tol, shape)


# values around exp's float32 overflow (|x| ~ 88.7) and ncnn's cut-offs (Mish's +-20)
EXTREMES = np.array(
    [-1000, -100, -89, -88.5, -50, -20.5, -20, -10, -1e-3, 0, 1e-3, 10, 20, 20.5, 50, 88.5, 89, 100, 1000],
    np.float32,
)


# the layers EXTREMES are run through, on the CPU and on the GPU
EXTREME_CASES = [
    ("Sigmoid", {}),
    ("Swish", {}),
    ("Mish", {}),
    ("BNLL", {}),
    ("ELU", {}),
    ("SELU", {}),
    ("GELU", {}),
    ("GELU", {0: 1}),
    ("TanH", {}),
    ("HardSigmoid", {}),
    ("HardSwish", {}),
    ("Clip", {0: -60.0, 1: 60.0}),
]


@pytest.mark.parametrize("reps", [None, (3, 2, 1), (8, 2, 1)], ids=str)
@pytest.mark.parametrize("layer_type, params", EXTREME_CASES)
@pytest.mark.parametrize("backend", backends("Sigmoid"))
def test_activation_extremes(layer_type, params, reps, backend):
    # the values alone, and spread over channels, so ncnn's SIMD and scalar tails both see them
    # (and over 8 channels, so the packed GPU path does)
    x = EXTREMES if reps is None else np.tile(EXTREMES, reps)
    check(backend, layer_type, params, [], [x], paths=PATHS)


def test_sigmoid_saturates_without_overflow():
    ret, (y,) = run_layer("Sigmoid", {}, [], [EXTREMES])
    assert ret == 0 and np.all(np.isfinite(y))
    assert y[0] < 1e-30 and y[-1] == 1.0


# fp16 overflows far below exp's fp32 range: the CPU and the fp32 GPU sets
@pytest.mark.parametrize("backend", backends("Sigmoid", grid=["fp32", "fp32-pack"]))
def test_exp_large_inputs_reach_inf(backend):
    # ncnn's expf overflows to inf past 88.72 (only its SIMD UnaryOp clamps)
    x = np.array([1.0, 80.0, 88.0, 89.0], np.float32)
    with np.errstate(invalid="ignore"):  # the harness subtracts inf from inf
        check(backend, "Exp", {}, [], [x], paths=PATHS)
    ret, (y,) = run_layer("Exp", {}, [], [x])
    assert ret == 0 and np.isinf(y[-1])


@pytest.mark.parametrize("backend", backends("Sigmoid"))
def test_threshold_is_strict(backend):
    x = np.array([-1.0, 0.5, 0.5, 0.75, 1.0, 0.25, 0.5, 2.0], np.float32)
    ret, (y,) = run_layer("Threshold", {0: 0.5}, [], [x])
    assert ret == 0 and y.tolist() == [0.0, 0.0, 0.0, 1.0, 1.0, 0.0, 0.0, 1.0]
    errs = check(backend, "Threshold", {0: 0.5}, [], [x], tol=0.0, tol_fp32=0.0, tol_fp16=0.0, paths=PATHS)
    assert max(errs.values()) == 0.0


@pytest.mark.parametrize("backend", backends("Sigmoid"))
def test_clip_defaults_keep_every_float(backend):
    # fp16 sets see the +-3.4e38 as +-inf, which the harness expects there
    x = np.array([-3.4e38, -1.0, 0.0, 2.5, 3.4e38, 7.0, -0.5, 1e-3], np.float32)
    ret, (y,) = run_layer("Clip", {}, [], [x])
    assert ret == 0 and np.array_equal(y, x)
    check(backend, "Clip", {}, [], [x], tol=0.0, tol_fp32=0.0, paths=PATHS)


@pytest.mark.parametrize("layer_type, params", [("Sigmoid", {}), ("ReLU", {0: 0.1}), ("AbsVal", {})])
@pytest.mark.parametrize("backend", backends("Sigmoid", cpu=False))
def test_not_in_place(layer_type, params, backend):
    shape = (8, 5, 7)
    check(backend, layer_type, params, [], [_signed(("nl",), shape)], lightmode=False)


def test_forward_leaves_bottom_untouched():
    from oracle import default_option

    from ncnn_c.layer import create_layer_cpu
    from ncnn_c.mat import Mat
    from ncnn_c.paramdict import ParamDict

    x = _signed(("untouched",), (3, 7, 13))
    for name in ("Sigmoid", "Swish", "ELU", "GELU", "HardSwish"):
        layer = create_layer_cpu(name)
        assert layer.load_param(ParamDict()) == 0
        bottom, top = Mat(x.copy()), Mat()
        assert layer.forward(bottom, top, default_option()) == 0
        assert np.array_equal(bottom.numpy(), x), name
        assert not np.array_equal(top.numpy(), x), name


def test_flags():
    from ncnn_c.layer import create_layer_cpu

    for name in {c[0] for c in CASES}:
        layer = create_layer_cpu(name)
        assert type(layer).__name__ == name
        assert layer.one_blob_only and layer.support_inplace, name


@pytest.mark.gpu
def test_every_type_has_the_gpu_form():
    # the backends above are taken from Sigmoid's: every type of the list shares activation.comp
    from oracle import has_vulkan_form

    assert all(has_vulkan_form(name) for name in {c[0] for c in CASES})


@pytest.mark.gpu
def test_pipelines_shared_by_equal_layers():
    """Two Sigmoids and a Swish of one net: the shader compiles once per option set, and the
    specialization makes one pipeline per distinct op."""
    from ncnn_c.layer import create_layer_vulkan

    a, b, c = (create_layer_vulkan(t) for t in ("Sigmoid", "Sigmoid", "Swish"))
    assert [x.activation_op() for x in (a, b)] == [x.activation_op() for x in (b, a)]
    assert a.activation_op() != c.activation_op()
    assert type(a).__name__ == "Sigmoid_vulkan" and a.support_packing and a.support_fp16_storage


def test_selu_defaults():
    from ncnn_c.layer import create_layer_cpu

    layer = create_layer_cpu("SELU")
    assert layer.alpha == pytest.approx(1.67326324) and layer.lambda_ == pytest.approx(1.050700987)
    for name, attrs in {"ELU": {"alpha": 0.1}, "HardSigmoid": {"alpha": 0.2, "beta": 0.5}}.items():
        layer = create_layer_cpu(name)
        for k, v in attrs.items():
            assert getattr(layer, k) == pytest.approx(v)
