"""Gemm on the GPU over the option grid: transposes, constant A/B/C, every C broadcast,
output forms, 3-D and 1-D inputs (the CPU test's cases), plus a larger product; with
packing on, operands arriving in elempack 1 and 4 and tops written in both."""

from __future__ import annotations

import logging

import pytest
from oracle import GPU_GRID, check_layer_gpu, make_bin, make_param, randn, rng, run_net_gpu

from ncnn_c.layer.vulkan.gemm_vulkan import Gemm_vulkan

# every test runs twice: "fast" (two option sets) and "full" (the whole grid, slow)
pytestmark = [pytest.mark.gpu, pytest.mark.usefixtures("full_grid")]

# by default the sweeps run fp32 unpacked and packed and one fp16 set; the slow run
# repeats them over the whole grid
FULL = False


def _check(*args, **kwargs):
    return check_layer_gpu(*args, grid=None if FULL else ["fp32", "fp32-pack", "fp16sa-pack"], **kwargs)


@pytest.fixture(
    params=[pytest.param(False, id="fast"), pytest.param(True, id="full", marks=pytest.mark.slow)]
)
def full_grid(request, monkeypatch):
    monkeypatch.setitem(globals(), "FULL", request.param)


# (M, N, K): with packing on, A arrives packed when its stored rows (M, or K transposed)
# divide by 4, and the top is packed when M (N with output_transpose) does
SIZES = [(5, 7, 6), (1, 1, 1), (1, 9, 4), (8, 1, 3), (7, 13, 16), (12, 8, 5), (8, 12, 16), (64, 48, 96)]


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


def _ab(M, N, K, key=()):
    g = rng("gemm-vk", M, N, K, key)
    return g, randn(g, (M, K)), randn(g, (K, N))


def _c_inputs(g, M, N):
    """Every C blob shape ncnn recognises: scalar, per-M, per-N, M x 1, M x N, 1 x N."""
    return [randn(g, s) for s in ((1,), (M,), (N,), (M, 1), (M, N), (1, N))]


@pytest.mark.parametrize("M,N,K", SIZES)
@pytest.mark.parametrize("transA,transB", [(0, 0), (1, 0), (0, 1), (1, 1)])
def test_two_inputs(M, N, K, transA, transB):
    g, A, B = _ab(M, N, K, (transA, transB))
    a = A.T.copy() if transA else A
    b = B.T.copy() if transB else B
    _check("Gemm", {0: 0.75, 2: transA, 3: transB}, [], [a, b])


@pytest.mark.parametrize("M,N,K", [(5, 7, 6), (4, 4, 3), (1, 6, 2), (6, 1, 2)])
def test_input_c_broadcasts(M, N, K):
    g, A, B = _ab(M, N, K, "c")
    for C in _c_inputs(g, M, N):
        _check("Gemm", {0: 0.5, 1: 2.0}, [], [A, B, C])
        _check("Gemm", {1: -1.5, 2: 1, 14: 1}, [], [A.T.copy(), B, C])


@pytest.mark.parametrize("transA", [0, 1])
def test_constant_a(transA):
    M, N, K = 6, 5, 7
    g, A, B = _ab(M, N, K, ("constA", transA))
    a = A.T.copy() if transA else A
    params = {4: 1, 2: transA, 7: M, 9: K, 0: 1.25}
    _check("Gemm", params, [(a, 0)], [B])
    _check("Gemm", params, [(a, "fp16")], [B])
    for C in _c_inputs(g, M, N):
        _check("Gemm", params, [(a, 0)], [B, C])


@pytest.mark.parametrize("transB", [0, 1])
def test_constant_b(transB):
    M, N, K = 6, 5, 7
    g, A, B = _ab(M, N, K, ("constB", transB))
    b = B.T.copy() if transB else B
    params = {5: 1, 3: transB, 8: N, 9: K}
    _check("Gemm", params, [(b, 0)], [A])
    for C in _c_inputs(g, M, N):
        _check("Gemm", {**params, 1: 0.5}, [(b, 0)], [A, C])


def test_constant_a_and_b():
    M, N, K = 4, 6, 5
    g, A, B = _ab(M, N, K, "constAB")
    params = {4: 1, 5: 1, 7: M, 8: N, 9: K, 3: 1}
    _check("Gemm", params, [(A, 0), (B.T.copy(), 0)], [randn(g, (M, N))])


@pytest.mark.parametrize("btype", [-1, 0, 1, 2, 3, 4])
@pytest.mark.parametrize("transpose", [0, 1])
def test_constant_c(btype, transpose):
    M, N, K = 5, 7, 6
    g, A, B = _ab(M, N, K, ("constC", btype))
    size = {-1: 0, 0: 1, 1: M, 2: M, 3: M * N, 4: N}[btype]
    weights = [(B, 0)] + ([(randn(g, (size,)), 0)] if size else [])
    params = {5: 1, 6: 1, 7: M, 8: N, 9: K, 10: btype, 0: 0.5, 1: 3.0, 14: transpose}
    _check("Gemm", params, weights, [A])
    # C constant with both A and B as inputs
    params = {6: 1, 7: M, 8: N, 10: btype, 1: 0.25}
    _check("Gemm", params, weights[1:], [A, B])


@pytest.mark.parametrize("n1m,transpose", [(1, 0), (0, 1), (1, 1)])
def test_output_forms(n1m, transpose):
    g, A, B = _ab(5, 7, 6, "out")
    _check("Gemm", {11: n1m, 14: transpose}, [], [A, B, randn(g, (5, 1))])


@pytest.mark.parametrize("elemtype", [0, 1, 2, 3])
def test_output_elemtype_and_elempack_are_layout_only(elemtype):
    # (output_elempack 4 is not checked: the oracle crashes when M is not a multiple of 4)
    g, A, B = _ab(5, 7, 6, "elem")
    _check("Gemm", {13: elemtype, 12: 1}, [], [A, B])


def test_three_d_inputs():
    g = rng("gemm 3d")
    _check("Gemm", {}, [], [randn(g, (5, 1, 6)), randn(g, (6, 1, 7))])
    _check("Gemm", {2: 1}, [], [randn(g, (6, 1, 5)), randn(g, (6, 7))])
    # a 1-D A is one row
    _check("Gemm", {}, [], [randn(g, (6,)), randn(g, (6, 7))])


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
