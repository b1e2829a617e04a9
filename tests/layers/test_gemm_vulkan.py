"""Gemm on the GPU over the option grid: transposes, constant A/B/C, every C broadcast,
output forms, 3-D and 1-D inputs (the CPU test's cases), plus a larger product; with
packing on, operands arriving in elempack 1 and 4 and tops written in both. The cases
shared with the CPU test come from test_gemm.py's builders."""

from __future__ import annotations

import logging

import pytest
from oracle import GPU_GRID, check_layer_gpu, make_bin, make_param, randn, rng, run_net_gpu
from test_gemm import (
    C_SIZES,
    CONSTANT_C_TYPES,
    OUTPUT_FORMS,
    SIZES,
    TRANSPOSES,
    constant_a_and_b_cases,
    constant_a_cases,
    constant_b_cases,
    constant_c_cases,
    input_c_broadcasts_cases,
    output_elemtype_cases,
    output_forms_cases,
    three_d_inputs_cases,
    two_inputs_cases,
)

from ncnn_c.layer.vulkan.gemm_vulkan import Gemm_vulkan

# every test runs twice: "fast" (two option sets) and "full" (the whole grid, slow)
pytestmark = [pytest.mark.gpu, pytest.mark.usefixtures("full_grid")]

# by default the sweeps run fp32 unpacked and packed and one fp16 set; the slow run
# repeats them over the whole grid
FULL = False


def _ab(M, N, K, key=()):
    g = rng("gemm-vk", M, N, K, key)
    return g, randn(g, (M, K)), randn(g, (K, N))


def _check(*args, **kwargs):
    return check_layer_gpu(*args, grid=None if FULL else ["fp32", "fp32-pack", "fp16sa-pack"], **kwargs)


@pytest.fixture(
    params=[pytest.param(False, id="fast"), pytest.param(True, id="full", marks=pytest.mark.slow)]
)
def full_grid(request, monkeypatch):
    monkeypatch.setitem(globals(), "FULL", request.param)


# with packing on, A arrives packed when its stored rows (M, or K transposed) divide by 4,
# and the top is packed when M (N with output_transpose) does: two sizes beyond the CPU's
PACKED_SIZES = [(12, 8, 5), (8, 12, 16)]


@pytest.fixture
def packs(monkeypatch):
    """(A, B, C, top) elempacks of every GPU forward (0: the operand is no blob)."""
    seen: set[tuple[int, int, int, int]] = set()
    forward = Gemm_vulkan.forward_vk

    def spy(self, bottom, top, cmd, opt):
        ret = forward(self, bottom, top, cmd, opt)
        blobs = list(bottom) if isinstance(bottom, list) else [bottom]
        ins = [] if self.constantA else [blobs.pop(0).elempack]
        ins += [] if self.constantB else [blobs.pop(0).elempack]
        ins += [blobs[0].elempack] if blobs else []
        seen.add((*ins, (top[0] if isinstance(top, list) else top).elempack))
        return ret

    monkeypatch.setattr(Gemm_vulkan, "forward_vk", spy)
    return seen


def _check_all(cases):
    for params, weights, inputs in cases:
        _check("Gemm", params, weights, inputs)


@pytest.mark.parametrize("M,N,K", SIZES + PACKED_SIZES)
@pytest.mark.parametrize("transA,transB", TRANSPOSES)
def test_two_inputs(M, N, K, transA, transB):
    _check_all(two_inputs_cases(M, N, K, transA, transB))


@pytest.mark.parametrize("M,N,K", C_SIZES)
def test_input_c_broadcasts(M, N, K):
    _check_all(input_c_broadcasts_cases(M, N, K))


@pytest.mark.parametrize("transA", [0, 1])
def test_constant_a(transA):
    _check_all(constant_a_cases(transA))


@pytest.mark.parametrize("transB", [0, 1])
def test_constant_b(transB):
    _check_all(constant_b_cases(transB))


def test_constant_a_and_b():
    _check_all(constant_a_and_b_cases())


@pytest.mark.parametrize("btype", CONSTANT_C_TYPES)
@pytest.mark.parametrize("transpose", [0, 1])
def test_constant_c(btype, transpose):
    _check_all(constant_c_cases(btype, transpose))


@pytest.mark.parametrize("n1m,transpose", OUTPUT_FORMS)
def test_output_forms(n1m, transpose):
    _check_all(output_forms_cases(n1m, transpose))


@pytest.mark.parametrize("elemtype", [0, 1, 2, 3])
def test_output_elemtype_and_elempack_are_layout_only(elemtype):
    _check_all(output_elemtype_cases(elemtype))


def test_three_d_inputs():
    _check_all(three_d_inputs_cases())


def test_large():
    g, A, B = _ab(96, 130, 200, "large")
    check_layer_gpu("Gemm", {0: 0.5}, [], [A, B], grid=["fp32", "fp32-pack", "fp16s-pack", "fp16sa"])


@pytest.mark.parametrize("output_transpose", [0, 1])
@pytest.mark.parametrize("n1m", [0, 1])
def test_packed_operands_and_tops(output_transpose, n1m, packs):
    """A (8 x 12), B (12 x 16) and an 8 x 16 C all arrive packed; the top is packed along
    M, or along N when transposed, as a 2-D or (c, 1, w) blob."""
    g, A, B = _ab(8, 16, 12, ("packed", output_transpose, n1m))
    C = randn(g, (8, 16))
    params = {0: 0.5, 1: 1.5, 11: n1m, 14: output_transpose}
    check_layer_gpu("Gemm", params, [], [A, B, C], grid=["fp32-pack", "fp16s-pack", "fp16pa-pack"])
    assert packs == {(4, 4, 4, 4)}
    # transposed operands: stored rows are K for A (12) and N for B (16)
    check_layer_gpu(
        "Gemm", {**params, 2: 1, 3: 1}, [], [A.T.copy(), B.T.copy(), randn(g, (8, 1))], grid=["fp32-pack"]
    )
    assert packs == {(4, 4, 4, 4)}


def test_mixed_packings(packs):
    """M = 6 (A and the top unpacked) with K = 8 (B packed) and a per-M 1-D C; then a top
    packed along N while A (M = 6) is not."""
    g, A, B = _ab(6, 5, 8, "mixed")
    check_layer_gpu("Gemm", {}, [], [A, B, randn(g, (6,))], grid=["fp32-pack", "fp16sa-pack"])
    assert packs == {(1, 4, 1, 1)}
    # output_transpose with N = 8: the top (8 rows) is packed although M = 6 is not
    g, A, B = _ab(6, 8, 5, "mixed-t")
    check_layer_gpu("Gemm", {14: 1}, [], [A, B], grid=["fp32-pack", "fp16sa-pack"])
    assert (1, 1, 4) in packs


def test_bad_inputs(caplog):
    g, A, B = _ab(5, 7, 6, "bad")
    for inputs, words in [([A, B[:5]], "but B is"), ([A, B, randn(g, (3,))], "broadcasts")]:
        caplog.clear()
        param = make_param("Gemm", {}, [x.shape for x in inputs], 1)
        with caplog.at_level(logging.ERROR, logger="ncnn_c"):
            ret, _ = run_net_gpu(param, make_bin([]), inputs, 1, **GPU_GRID["fp32"])
        assert ret != 0
        assert words in caplog.text


def test_long_k():
    # K past llvmpipe's 65535 loop iterations per invocation
    g, A, B = _ab(2, 5, 70001, "longk")
    check_layer_gpu("Gemm", {}, [], [A, B], grid=["fp32", "fp16s", "fp32-pack", "fp16s-pack"])
