"""Flatten against the PyPI ncnn over every input rank (bit-exact copies), packed and unpacked
channel counts; one case list on every backend (oracle.backends)."""

from __future__ import annotations

import numpy as np
import pytest
from oracle import SHAPES_ALL, backends, check, default_option, randn, rng, run_layer

SHAPES = SHAPES_ALL + [(8, 5, 7), (4, 2, 3, 5), (3, 3, 1, 1)]


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("backend", backends("Flatten"))
def test_flatten(shape, backend):
    # a pure copy: fp32 results are bit-exact
    check(backend, "Flatten", {}, [], [randn(rng("flatten", shape), shape)], tol=0.0, tol_fp32=0.0)


def test_flatten_padded_channels():
    # 3x5 floats per channel: ncnn pads each channel to 16 floats, the padding must not leak
    x = randn(rng("flatten-pad"), (4, 3, 5))
    ret, out = run_layer("Flatten", {}, [], [x])
    assert ret == 0
    np.testing.assert_array_equal(out[0], x.ravel())


def test_flatten_shares_dense_storage():
    # a blob without channel padding is relabelled, not copied
    from ncnn_c.layer import create_layer_cpu
    from ncnn_c.mat import Mat
    from ncnn_c.paramdict import ParamDict

    layer = create_layer_cpu("Flatten")
    assert layer.load_param(ParamDict()) == 0
    bottom = Mat(randn(rng("flatten-share"), (4, 2, 8)))  # 16 floats per channel: no padding
    top = Mat()
    assert layer.forward(bottom, top, default_option()) == 0
    assert np.shares_memory(top.tensor(), bottom.tensor())
    np.testing.assert_array_equal(top.tensor(), bottom.tensor().ravel())
