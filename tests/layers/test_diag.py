"""Diag against the PyPI ncnn (exact): the cases of ncnn's tests/test_diag.cpp (1-D to 2-D and
2-D to 1-D, diagonals above, on and below the main one, one that misses the matrix), the
layer and net paths, bad ranks, and a Vulkan net (ncnn has no GPU form: the Vulkan net runs
it on the CPU)."""

from __future__ import annotations

import logging
import os
import tempfile

import numpy as np
import pytest
from _vulkan_sandwich import check_in_vulkan_net
from oracle import check_layer, make_bin, make_param, randn, rng, run_layer, run_net

PATHS = ("layer", "net")

# (numpy shape, diagonal): ncnn's cases, then wide / tall matrices at every kind of offset
CASES = [
    ((24, 5), 3), ((12, 7), 0), ((6, 6), -4),
    ((5,), -1), ((7,), 0), ((3,), 2), ((1,), 0),
    ((5, 24), 3), ((5, 24), 21), ((5, 24), -2), ((24, 5), -22), ((24, 5), 4), ((7, 7), 6), ((7, 7), -6),
]  # fmt: skip


@pytest.mark.parametrize("shape,diagonal", CASES, ids=str)
def test_diag(shape, diagonal):
    x = randn(rng("diag", shape, diagonal), shape)
    check_layer("Diag", {0: diagonal}, [], [x], paths=PATHS, tol=0.0)


def _oracle_is_empty(param_text, x) -> bool:
    """The PyPI ncnn's extract of an empty top (np.array() of its empty Mat segfaults)."""
    import ncnn

    net = ncnn.Net()
    net.opt.use_vulkan_compute = False
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "m.param")
        with open(path, "w") as f:
            f.write(param_text)
        assert net.load_param(path) == 0
    with net.create_extractor() as ex:
        ex.input("in0", ncnn.Mat(x).clone())
        ret, m = ex.extract("out0")
        empty = ret == 0 and m.empty()
        del m
    net.clear()
    return empty


@pytest.mark.parametrize("shape,diagonal", [((4, 3), -6), ((4, 3), 3), ((4, 3), -4)], ids=str)
def test_diag_missing_the_matrix_gives_an_empty_blob(shape, diagonal):
    x = randn(rng("diag-empty", shape), shape)
    text = make_param("Diag", {0: diagonal}, [shape])
    assert _oracle_is_empty(text, x)
    for ret, got in (run_layer("Diag", {0: diagonal}, [], [x]), run_net(text, make_bin([]), [x])):
        assert ret == 0 and got[0].size == 0


@pytest.mark.parametrize("shape", [(2, 3, 4), (2, 3, 4, 5)], ids=str)
def test_diag_refuses_other_ranks(caplog, shape):
    with caplog.at_level(logging.ERROR, logger="ncnn_c"):
        ret, _ = run_layer("Diag", {}, [], [np.ones(shape, np.float32)])
    errors = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert ret != 0
    assert len(errors) == 1 and "Diag" in errors[0] and "dims" in errors[0], errors


@pytest.mark.gpu
def test_diag_in_vulkan_net():
    x = randn(rng("diag-vk"), (9,))
    check_in_vulkan_net("Diag", {0: -2}, [], [x], tol=0.0)
