"""Einsum against the PyPI ncnn oracle over the cases of ncnn's tests/test_einsum.cpp, plus
diagonals and a non-square trace, a Vulkan net, and equations / inputs that ncnn refuses."""

from __future__ import annotations

import logging

import numpy as np
import pytest
from _vulkan_sandwich import check_in_vulkan_net
from oracle import assert_close, check_layer, make_bin, make_param, rng, run_layer, run_ncnn


def eq(text: str) -> list[int]:
    return [ord(c) for c in text]


# (numpy shapes of the inputs, equations); ncnn's file gives RandomMat sizes, reversed here
NCNN_CASES = [
    ([(32, 32)], ["ii"]),
    ([(32, 27)], ["ij->i", "ji->i"]),
    ([(32, 14, 17)], ["ijk->i", "jik->i", "jki->i", "ikj->ij", "kij->ij", "ijk->ij"]),
    (
        [(32, 9, 14, 17)],
        ["jkli->i", "jkil->i", "jikl->i", "ijkl->i", "iklj->ij", "klij->ij", "kijl->ij", "ijkl->ij"]
        + ["ijlk->ijk", "lijk->ijk", "ijkl->ijk"],
    ),
    ([(28, 12), (12,)], ["ij,j->i"]),
    ([(14,), (16, 7, 14)], ["k,ijk->ij"]),
    ([(27,), (32,)], ["i,j->ij"]),
    ([(7,), (2,), (11,), (16,)], ["i,j,k,l->ijkl"]),
    ([(3, 2, 5), (3, 5, 4)], ["ijl,ilk->ijk"]),
    ([(3, 5, 4), (3, 2, 5)], ["ilk,ijl->ijk"]),
    ([(12, 15), (13, 15, 24), (12, 24)], ["ik,jkl,il->ij"]),
    ([(2, 3, 5, 7), (11, 3, 17, 5)], ["imnj,kmln->ijkl"]),
]
EXTRA_CASES = [
    ([(3, 4)], ["ii"]),  # ncnn sums the first h diagonal elements
    ([(6, 6)], ["ii->i"]),
    ([(5, 5, 3)], ["iij->i", "jji->i"]),
    ([(4, 6), (6, 5), (5, 3)], ["ij,jk,kl->i"]),
    ([(3, 8, 4), (3, 5, 4)], ["ijm,ikm->ijk"]),  # attention-style scores
]
CASES = [(shapes, e) for shapes, eqs in NCNN_CASES + EXTRA_CASES for e in eqs]


def _inputs(shapes, key):
    g = rng("einsum", shapes, key)
    return [g.uniform(-1.2, 1.2, s).astype(np.float32) for s in shapes]


@pytest.mark.parametrize("shapes,equation", CASES, ids=[f"{e}{s}" for s, e in CASES])
def test_einsum(shapes, equation):
    inputs = _inputs(shapes, equation)
    check_layer("Einsum", {0: eq(equation)}, [], inputs)
    if "->" in equation:
        ret, got = run_layer("Einsum", {0: eq(equation)}, [], inputs)
        assert ret == 0
        want = np.einsum(equation, *[x.astype(np.float64) for x in inputs])
        assert_close(got[0], want, 1e-5, f"Einsum {equation} vs numpy float64")


@pytest.mark.gpu
def test_in_vulkan_net():
    check_in_vulkan_net(
        "Einsum", {0: eq("ik,jkl,il->ij")}, [], _inputs([(12, 15), (13, 15, 24), (12, 24)], "vk")
    )


def _rejects(caplog, equation, inputs, words):
    caplog.clear()
    with caplog.at_level(logging.ERROR, logger="ncnn_c"):
        ret, _ = run_layer("Einsum", {0: eq(equation)}, [], inputs)
    assert ret != 0
    assert any("Einsum" in r.getMessage() and words in r.getMessage() for r in caplog.records), caplog.text


@pytest.mark.parametrize(
    "equation",
    ["ij->ji", "ij->j", "ij->", "ij->ijk", "ab->a", "iy->i", "ij", "i,,j->ij", ",ij->i", "...ij->ij"],
)
def test_bad_equation(caplog, equation):
    """What the oracle refuses at load_param, we refuse there too."""
    x = _inputs([(3, 4)], equation)
    ret, _ = run_ncnn(make_param("Einsum", {0: eq(equation)}, [(3, 4)]), make_bin([]), x)
    assert ret != 0
    _rejects(caplog, equation, x, "equation")


def test_bad_inputs(caplog):
    a, b = _inputs([(28, 12), (12,)], "bad")
    _rejects(caplog, "ij,j->i", [a], "inputs")
    _rejects(caplog, "ij,j->i", [a, b[:10]], "axis 'j'")
    _rejects(caplog, "ij,j->i", [a, a], "1-D")
    _rejects(caplog, "ii", [a], "trace")
