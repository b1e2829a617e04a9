"""DeepCopy against the PyPI ncnn (exact): the shapes of ncnn's tests/test_deepcopy.cpp
(every rank), the layer and net paths, each case on every backend (oracle.backends: the CPU
and the GPU option grid), and the top never sharing the bottom's memory."""

from __future__ import annotations

import numpy as np
import pytest
from oracle import backends, check, default_option, randn, rng

from ncnn_c.layer import create_layer_cpu
from ncnn_c.mat import Mat

PATHS = ("layer", "net")

SHAPES = [
    (24, 7, 6, 5), (12, 9, 8, 7), (13, 5, 4, 3),
    (24, 7, 5), (12, 9, 7), (13, 5, 3),
    (24, 15), (12, 17), (15, 19),
    (128,), (124,), (127,),
]  # fmt: skip


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("backend", backends("DeepCopy"))
def test_deepcopy(shape, backend):
    x = randn(rng("deepcopy", shape), shape)
    check(backend, "DeepCopy", {}, [], [x], paths=PATHS, tol=0.0, tol_fp32=0.0)


def test_deepcopy_owns_its_memory():
    layer = create_layer_cpu("DeepCopy")
    bottom, top = Mat(np.ones((3, 5, 7), np.float32)), Mat()
    assert layer.forward(bottom, top, default_option()) == 0
    bottom.tensor()[...] = 2.0
    assert (top.tensor() == 1.0).all()


def test_deepcopy_of_an_empty_blob_fails():
    layer = create_layer_cpu("DeepCopy")
    assert layer.forward(Mat(), Mat(), default_option()) != 0
