"""The element-wise activations on the GPU (the shared activation.comp) over the option grid
(fp32, fp16 storage, fp16 arithmetic, packing on/off) against the PyPI ncnn CPU fp32 oracle.

BNLL, Clip, ELU, Exp, GELU, HardSigmoid, HardSwish, Log, Mish, Power, SELU, Sigmoid, Swish,
TanH, Threshold: every param form of the CPU test on a packed (8, 5, 7) and an unpacked odd
(3, 7, 13) blob by default, every dims under ``slow``, plus the overflow ranges.
"""

from __future__ import annotations

import numpy as np
import pytest
from oracle import SHAPES_ALL, check_layer_gpu, randn, rng
from test_activations import EXTREME_CASES, EXTREMES

pytestmark = pytest.mark.gpu

SHAPES = SHAPES_ALL + [(8, 5, 7), (4, 2, 3, 5), (12,), (8, 3)]
QUICK = [(8, 5, 7), (3, 7, 13), (4, 2, 3, 5)]


def _signed(key, shape):
    return randn(rng(*key, shape), shape, 4.0)


def _positive(key, shape):
    return rng(*key, shape).uniform(0.05, 6.0, shape).astype(np.float32)


CASES = [
    ("TanH", {}, _signed),
    ("BNLL", {}, _signed),
    ("Sigmoid", {}, _signed),
    ("Swish", {}, _signed),
    ("Mish", {}, _signed),
    ("Clip", {}, _signed),
    ("Clip", {0: -0.5, 1: 1.25}, _signed),
    ("Clip", {0: 2.0, 1: -1.0}, _signed),  # min > max: max applies last
    ("ELU", {}, _signed),
    ("ELU", {0: 1.7}, _signed),
    ("SELU", {}, _signed),
    ("SELU", {0: 1.2, 1: 0.8}, _signed),
    ("GELU", {}, _signed),
    ("GELU", {0: 1}, _signed),
    ("HardSigmoid", {}, _signed),
    ("HardSigmoid", {0: 1 / 6, 1: 0.5}, _signed),
    ("HardSwish", {}, _signed),
    ("HardSwish", {0: 1 / 6, 1: 0.5}, _signed),
    ("HardSwish", {0: 0.3, 1: 0.2}, _signed),
    ("Threshold", {}, _signed),
    ("Threshold", {0: 0.75}, _signed),
    ("Exp", {}, _signed),
    ("Exp", {1: 0.5, 2: -0.25}, _signed),
    ("Exp", {0: 2.0}, _signed),
    ("Exp", {0: 10.0, 1: 0.3, 2: 0.1}, _signed),
    ("Log", {}, _positive),
    ("Log", {0: 2.0}, _positive),
    ("Log", {0: 10.0, 1: 3.0, 2: 0.5}, _positive),
    ("Log", {1: -0.5, 2: 4.0}, _positive),
    ("Power", {}, _signed),
    ("Power", {0: 2.0}, _signed),
    ("Power", {0: 3.0, 1: -0.5, 2: 0.25}, _signed),  # odd power of negative bases
    ("Power", {0: 0.5, 1: 2.0, 2: 0.1}, _positive),
    ("Power", {0: -1.5, 2: 1.0}, _positive),
]
IDS = [f"{t}-{p}" for t, p, _ in CASES]


def _check(layer_type, params, make, shape):
    return check_layer_gpu(layer_type, params, [], [make((layer_type, tuple(params.items())), shape)])


@pytest.mark.parametrize("shape", QUICK, ids=str)
@pytest.mark.parametrize("layer_type, params, make", CASES, ids=IDS)
def test_activation_grid(layer_type, params, make, shape):
    _check(layer_type, params, make, shape)


@pytest.mark.slow
@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("layer_type, params, make", CASES, ids=IDS)
def test_activation_all_shapes(layer_type, params, make, shape):
    _check(layer_type, params, make, shape)


@pytest.mark.parametrize("layer_type, params", EXTREME_CASES)
def test_activation_extremes(layer_type, params):
    # spread over 8 channels so the packed path sees them too
    x = np.tile(EXTREMES, (8, 2, 1))
    check_layer_gpu(layer_type, params, [], [x])


def test_threshold_is_strict():
    x = np.array([-1.0, 0.5, 0.5, 0.75, 1.0, 0.25, 0.5, 2.0], np.float32)
    errs = check_layer_gpu("Threshold", {0: 0.5}, [], [x])
    assert max(errs.values()) == 0.0


def test_clip_defaults_keep_every_float():
    # fp16 sets see the +-3.4e38 as +-inf, which the harness expects there
    x = np.array([-3.4e38, -1.0, 0.0, 2.5, 3.4e38, 7.0, -0.5, 1e-3], np.float32)
    errs = check_layer_gpu("Clip", {}, [], [x])
    assert errs["fp32"] == 0.0 and errs["fp32-pack"] == 0.0


def test_not_in_place():
    shape = (8, 5, 7)
    check_layer_gpu("Sigmoid", {}, [], [_signed(("nl",), shape)], lightmode=False)


def test_pipelines_shared_by_equal_layers():
    """Two Sigmoids and a Swish of one net: the shader compiles once per option set, and the
    specialization makes one pipeline per distinct op."""
    from ncnn_c.layer import create_layer_vulkan

    a, b, c = (create_layer_vulkan(t) for t in ("Sigmoid", "Sigmoid", "Swish"))
    assert [x.activation_op() for x in (a, b)] == [x.activation_op() for x in (b, a)]
    assert a.activation_op() != c.activation_op()
    assert type(a).__name__ == "Sigmoid_vulkan" and a.support_packing and a.support_fp16_storage
