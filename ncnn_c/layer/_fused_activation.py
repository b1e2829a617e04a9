"""The fused activation of Convolution-like layers (params 9 = activation_type, 10 =
activation_params), as ncnn's ``fused_activation.h``: its validation, the numpy form the CPU
layers apply, and the three specialization constants the GPU shaders take
(``vulkan_activation.h``).

0 none, 1 ReLU, 2 LeakyReLU(slope), 3 Clip(min, max), 4 Sigmoid, 5 Mish, 6 HardSwish(alpha, beta).
"""

from __future__ import annotations

import logging

import numpy as np

from ..mat import Mat
from ._elementwise import negate

log = logging.getLogger("ncnn_c")

# how many floats of param 10 each activation_type reads
ACTIVATION_PARAM_COUNT = {0: 0, 1: 0, 2: 1, 3: 2, 4: 0, 5: 0, 6: 2}


def activation_values(params) -> np.ndarray:
    """Param 10 (a float array Mat, or None/empty) as float32 numpy."""
    if params is None:
        return np.zeros(0, dtype=np.float32)
    if isinstance(params, Mat):
        if params.empty():
            return np.zeros(0, dtype=np.float32)
        return np.asarray(params.numpy(), dtype=np.float32).ravel()
    return np.asarray(params, dtype=np.float32).ravel()


def check_activation(layer) -> int:
    """Validate ``activation_type`` / ``activation_params`` of a layer with fused activation."""
    name = layer.type or type(layer).__name__
    need = ACTIVATION_PARAM_COUNT.get(layer.activation_type)
    if need is None:
        log.error("%s %r: unknown activation_type %d", name, layer.name, layer.activation_type)
        return -1
    got = activation_values(layer.activation_params).size
    if got < need:
        log.error(
            "%s %r: activation_type %d needs %d params in param 10, got %d",
            name,
            layer.name,
            layer.activation_type,
            need,
            got,
        )
        return -1
    return 0


def activation_specs(activation_type: int, params) -> list:
    """(activation_type, param 0, param 1): the specialization constants of the GPU shaders'
    activation(), the params it does not read left 0 so that equal layers share a pipeline."""
    a = [float(v) for v in activation_values(params)[: ACTIVATION_PARAM_COUNT.get(activation_type, 0)]]
    return [int(activation_type), *a, *[0.0] * (2 - len(a))]


def fused_activation(x: np.ndarray, activation_type: int, params: np.ndarray) -> None:
    """Apply ncnn's fused activation in place on a float32 array."""
    if activation_type == 0:
        return
    if activation_type == 1:
        np.maximum(x, 0.0, out=x)
    elif activation_type == 2:
        np.multiply(x, params[0], out=x, where=x < 0)
    elif activation_type == 3:
        np.maximum(x, params[0], out=x)
        np.minimum(x, params[1], out=x)
    elif activation_type == 4:
        # ncnn clamps the exponent's argument so exp never overflows
        np.clip(x, -88.3762626647949, 88.3762626647949, out=x)
        negate(x, x)
        np.exp(x, out=x)
        x += 1.0
        np.reciprocal(x, out=x)
    elif activation_type == 5:
        x *= np.tanh(np.logaddexp(np.float32(0.0), x))
    elif activation_type == 6:
        alpha, beta = params[0], params[1]
        lower = -beta / alpha
        upper = 1.0 / alpha + lower
        mid = (x >= lower) & (x <= upper)
        x[mid] = x[mid] * (x[mid] * alpha + beta)
        x[x < lower] = 0.0
    else:
        raise ValueError(f"unknown activation_type {activation_type}")
