"""The CPU check of GroupNorm, InstanceNorm and LayerNorm against the oracle, shared by their
test files."""

from __future__ import annotations

import numpy as np
from oracle import check_layer, make_bin, make_param, run_layer, run_ncnn

PATHS = ("layer", "inplace", "net")


def check_norm(layer_type, params, weights, inputs, one_value_segments):
    """check_layer over the layer, inplace and net paths; where every normalised segment holds
    one value the output is exactly 0 (then beta), and ncnn's fused multiply-add leaves a
    rounding residue of ~1e-6 there, which a relative error cannot compare: compare absolutely."""
    if not one_value_segments:
        return check_layer(layer_type, params, weights, inputs, paths=PATHS)
    (x,) = inputs
    ret, ref = run_ncnn(make_param(layer_type, params, [x.shape]), make_bin(weights), [x])
    assert ret == 0
    ret, got = run_layer(layer_type, params, weights, [x])
    assert ret == 0
    np.testing.assert_allclose(got[0], ref[0], rtol=0, atol=1e-5)
    return None
