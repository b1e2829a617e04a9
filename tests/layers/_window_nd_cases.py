"""Case builders shared by the tests of the 1-D / 3-D window layers (Convolution3D,
ConvolutionDepthWise1D/3D, Deconvolution1D/3D and depthwise forms, Pooling1D/3D): random
weights and inputs for a param dict, and the bad-param check."""

from __future__ import annotations

import logging

import numpy as np
from oracle import randn, rng, run_layer

TOL = 1e-5
# activation_type -> its params (param 10), one case per activation
ACTIVATIONS = {0: None, 1: None, 2: [0.1], 3: [-0.5, 0.7], 4: None, 5: None, 6: [0.2, 0.5]}


def with_activation(params: dict, kind: int) -> dict:
    values = ACTIVATIONS[kind]
    return {**params, 9: kind, **({10: values} if values is not None else {})}


def conv_case(layer_type: str, params: dict, shape, bias: bool = True, scale: float = 1.0):
    """(params, weights, inputs) of a convolution-family layer: ``params`` holds num_output (0),
    the kernel (1 / 11 / 21) and group (7, default 1); weight_data_size and bias_term are filled
    in. The weights count num_output * num_input / group * maxk."""
    g = rng(layer_type, sorted(params.items()), shape, bias)
    kernel = params[1] * (params.get(11, params[1]) * params.get(21, params[1]) if len(shape) == 4 else 1)
    n_w = params[0] * shape[0] // params.get(7, 1) * kernel
    weights = [(randn(g, (n_w,), 1.0 / np.sqrt(n_w / params[0])), 0)]
    if bias:
        weights.append((randn(g, (params[0],)), 1))
    return {**params, 5: int(bias), 6: n_w}, weights, [randn(g, shape, scale)]


def check_rejected(layer_type: str, params: dict, weights, shape, key: str, caplog) -> None:
    """The layer refuses ``params`` (or the input of ``shape``) with a non-zero return and one
    error line naming the layer and ``key``."""
    with caplog.at_level(logging.ERROR, logger="ncnn_c"):
        ret, _ = run_layer(layer_type, params, weights, [np.ones(shape, np.float32)])
    assert ret != 0
    lines = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert len(lines) == 1 and layer_type in lines[0] and key in lines[0], lines


def check_dynamic_weight(layer_type: str, params: dict, weight_shape, bias: bool, in_shape) -> None:
    """The layer with dynamic_weight: the weight (and bias) blobs come as inputs."""
    from oracle import check_layer

    g = rng(layer_type, "dynamic", sorted(params.items()), weight_shape, bias)
    n_out = params[0]
    inputs = [randn(g, in_shape), randn(g, weight_shape)] + ([randn(g, (n_out,))] if bias else [])
    size = int(np.prod(weight_shape))
    check_layer(layer_type, {**params, 5: int(bias), 6: size}, [], inputs, tol=TOL)


def check_dynamic_rejected(layer_type: str, params: dict, shapes, caplog) -> None:
    """dynamic_weight mode refuses input blobs of ``shapes`` with one line naming the key."""
    with caplog.at_level(logging.ERROR, logger="ncnn_c"):
        ret, _ = run_layer(layer_type, params, [], [np.ones(s, np.float32) for s in shapes])
    assert ret != 0
    lines = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert len(lines) == 1 and layer_type in lines[0] and "dynamic_weight" in lines[0], lines
