"""Elementwise activations (one blob, in place) against the PyPI ncnn oracle.

AbsVal, BNLL, Clip, Dropout, ELU, Exp, GELU, HardSigmoid, HardSwish, Log, Mish, Power, ReLU,
SELU, Sigmoid, Swish, TanH, Threshold: every param, every dims, odd sizes, the layer / in-place
/ net paths, plus the overflow ranges where ncnn clamps or switches formulas.
"""

from __future__ import annotations

import numpy as np
import pytest
from oracle import SHAPES_ALL, check_layer, randn, rng, run_layer

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
    ("Dropout", {}, _signed, 0.0),
    ("Dropout", {0: 0.3}, _signed, 0.0),
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


@pytest.mark.parametrize("shape", SHAPES_ALL)
@pytest.mark.parametrize("layer_type, params, make, tol", CASES)
def test_activation(layer_type, params, make, tol, shape):
    x = make((layer_type, tuple(params.items())), shape)
    check_layer(layer_type, params, [], [x], tol=tol, paths=PATHS)


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


@pytest.mark.parametrize("layer_type, params", EXTREME_CASES)
def test_activation_extremes(layer_type, params):
    check_layer(layer_type, params, [], [EXTREMES], paths=PATHS)
    # the same values spread over channels, so ncnn's SIMD and scalar tails both see them
    x = np.tile(EXTREMES, (3, 2, 1))
    check_layer(layer_type, params, [], [x], paths=PATHS)


def test_sigmoid_saturates_without_overflow():
    ret, (y,) = run_layer("Sigmoid", {}, [], [EXTREMES])
    assert ret == 0 and np.all(np.isfinite(y))
    assert y[0] < 1e-30 and y[-1] == 1.0


def test_exp_large_inputs_reach_inf():
    # ncnn's expf overflows to inf past 88.72 (only its SIMD UnaryOp clamps)
    x = np.array([1.0, 80.0, 88.0, 89.0], np.float32)
    with np.errstate(invalid="ignore"):  # the harness subtracts inf from inf
        check_layer("Exp", {}, [], [x], paths=PATHS)
    ret, (y,) = run_layer("Exp", {}, [], [x])
    assert ret == 0 and np.isinf(y[-1])


def test_threshold_is_strict():
    x = np.array([-1.0, 0.5, 0.5, 0.75, 1.0], np.float32)
    ret, (y,) = run_layer("Threshold", {0: 0.5}, [], [x])
    assert ret == 0 and y.tolist() == [0.0, 0.0, 0.0, 1.0, 1.0]
    check_layer("Threshold", {0: 0.5}, [], [x], tol=0.0, paths=PATHS)


def test_clip_defaults_keep_every_float():
    x = np.array([-3.4e38, -1.0, 0.0, 2.5, 3.4e38], np.float32)
    ret, (y,) = run_layer("Clip", {}, [], [x])
    assert ret == 0 and np.array_equal(y, x)
    check_layer("Clip", {}, [], [x], tol=0.0, paths=PATHS)


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


def test_selu_defaults():
    from ncnn_c.layer import create_layer_cpu

    layer = create_layer_cpu("SELU")
    assert layer.alpha == pytest.approx(1.67326324) and layer.lambda_ == pytest.approx(1.050700987)
    for name, attrs in {"ELU": {"alpha": 0.1}, "HardSigmoid": {"alpha": 0.2, "beta": 0.5}}.items():
        layer = create_layer_cpu(name)
        for k, v in attrs.items():
            assert getattr(layer, k) == pytest.approx(v)
