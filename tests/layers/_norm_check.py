"""The check of GroupNorm, InstanceNorm and LayerNorm against the oracle on one backend, shared
by their test files."""

from __future__ import annotations

import numpy as np
from oracle import CPU_BACKEND, GPU_GRID, check, make_bin, make_param, oracle_outputs, run_layer, run_net_gpu

PATHS = ("layer", "inplace", "net")


def check_norm(backend, layer_type, params, weights, inputs, one_value_segments, **kwargs):
    """oracle.check over the layer, inplace and net paths (CPU) or the backend's GPU set.

    Where every normalised segment holds one value the output is exactly 0 (then beta), and
    ncnn's fused multiply-add leaves a rounding residue of ~1e-6 there, which a relative error
    cannot compare: compare absolutely, on the CPU always, on the GPU without affine (with it,
    beta's own fp16 rounding is what the relative check bounds)."""
    if not one_value_segments or (backend != CPU_BACKEND and weights):
        return check(backend, layer_type, params, weights, inputs, paths=PATHS, **kwargs)
    (x,) = inputs
    text, data = make_param(layer_type, params, [x.shape]), make_bin(weights)
    ret, ref = oracle_outputs(text, data, [x])
    assert ret == 0
    if backend == CPU_BACKEND:
        ret, got = run_layer(layer_type, params, weights, [x])
    else:
        ret, got = run_net_gpu(text, data, [x], 1, **GPU_GRID[backend.removeprefix("vk-")], **kwargs)
    assert ret == 0
    np.testing.assert_allclose(got[0], ref[0], rtol=0, atol=1e-5, err_msg=f"{layer_type} {backend} {params}")
    return None
