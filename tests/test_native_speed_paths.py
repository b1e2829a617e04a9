"""The speed paths next to their plain references: native NMS and ncnn's tie-order quicksort
against the numpy code they replace, the threaded matrix product against numpy's, and
global / windowed pooling kernels against a direct computation (the layer tests compare
the same paths with the oracle on fewer shapes)."""

from __future__ import annotations

import numpy as np
import pytest

from ncnn_c._native import blas
from ncnn_c._native import cpu as cpu_mod
from ncnn_c.layer import _nms

native = cpu_mod.cpu_kernels()


def _rel(got, want) -> float:
    return float(np.linalg.norm(got.astype(np.float64) - want) / np.linalg.norm(want))


def _boxes(g, n):
    xy = g.random((n, 2)).astype(np.float32) * 10
    wh = g.random((n, 2)).astype(np.float32) * 3
    return np.concatenate([xy, xy + wh], axis=1)


def _numpy_nms(monkeypatch, *args, **kw):
    with monkeypatch.context() as m:
        m.setattr(cpu_mod, "_kernels", None)
        m.setattr(cpu_mod, "_tried", True)
        return _nms.nms_sorted(*args, **kw)


@pytest.mark.parametrize("n", [1, 2, 17, 600, 2500])
@pytest.mark.parametrize("product", [False, True])
def test_native_nms_matches_numpy(n, product, monkeypatch):
    assert native is not None  # CI builds the CPU kernels
    g = np.random.default_rng(n)
    boxes = _boxes(g, n)
    for limit in (None, 3):
        got = _nms.nms_sorted(boxes, 0.45, product=product, limit=limit)
        want = _numpy_nms(monkeypatch, boxes, 0.45, product=product, limit=limit)
        np.testing.assert_array_equal(got, want)
    # identical boxes suppress each other: only the first survives
    same = np.repeat(boxes[:1], 5, axis=0)
    np.testing.assert_array_equal(_nms.nms_sorted(same, 0.45, product=product), [0])


def test_native_nms_leaves_nan_to_numpy(monkeypatch):
    boxes = _boxes(np.random.default_rng(0), 50)
    boxes[7, 2] = np.nan
    assert (
        native.nms(
            *(np.ascontiguousarray(boxes[:, i]) for i in range(4)), np.ones(50, np.float32), 0.5, False, 50
        )
        is None
    )
    np.testing.assert_array_equal(_nms.nms_sorted(boxes, 0.45), _numpy_nms(monkeypatch, boxes, 0.45))


@pytest.mark.parametrize("n", [2, 3, 10, 257, 3000])
def test_native_quicksort_replays_ncnn_order(n):
    g = np.random.default_rng(n)
    for scores in (
        g.integers(0, 4, n).astype(np.float32),  # many ties: the order depends on the partitions
        np.full(n, 0.5, np.float32),  # a zero-weight YOLO head: every score equal
        g.random(n).astype(np.float32),
    ):
        np.testing.assert_array_equal(native.qsort_desc(scores), _nms._quicksort_order(scores))
        np.testing.assert_array_equal(_nms.sort_descending(scores), _nms._quicksort_order(scores))


@pytest.mark.parametrize(
    "shape",
    [
        ((64, 576), (576, 3136)),
        ((1024, 1024), (1024, 49)),
        ((3, 60, 80), (3, 80, 784)),
        ((36, 64, 64), (36, 64, 676)),
    ],
)
@pytest.mark.parametrize("threads", [1, 2, 3])
def test_threaded_matmul_equals_numpy(shape, threads):
    g = np.random.default_rng(1)
    a = g.standard_normal(shape[0]).astype(np.float32)
    b = g.standard_normal(shape[1]).astype(np.float32)
    with blas.single_threaded():
        want = np.matmul(a, b)
    out = np.full(want.shape, np.nan, np.float32)
    blas.matmul(a, b, out, threads)
    # blocks of a product may round differently from the whole (OpenBLAS picks its kernels
    # by size), so equal to rounding: measured relative L2 error ~3e-7
    assert _rel(out, want) < 1e-6


@pytest.mark.parametrize(
    "shape",
    [
        ((64, 576), (576, 3136)),
        ((1024, 1024), (1024, 49)),
        ((3, 60, 80), (3, 80, 784)),
        ((24, 27), (27, 30976)),
    ],
)
def test_threaded_matmul_is_bit_identical_at_every_thread_count(shape):
    """The blocks follow the shape, not the thread count: a numpy-path convolution gives
    the same bits at 1, 2, 3, 4 and 8 threads, as ncnn's does (a split that followed the
    count changed SqueezeNet's and YOLO-FastestV2's first extracts in the last bits)."""
    g = np.random.default_rng(3)
    a = g.standard_normal(shape[0]).astype(np.float32)
    b = g.standard_normal(shape[1]).astype(np.float32)
    outs = []
    for threads in (1, 2, 3, 4, 8):
        out = np.full((*a.shape[:-1], b.shape[-1]), np.nan, np.float32)
        blas.matmul(a, b, out, threads)
        outs.append(out)
    for threads, out in zip((2, 3, 4, 8), outs[1:], strict=True):
        assert np.array_equal(out.view(np.uint32), outs[0].view(np.uint32)), f"{threads} threads"


def test_threaded_matmul_writes_into_strided_views():
    g = np.random.default_rng(2)
    a = g.standard_normal((48, 300)).astype(np.float32)
    b = g.standard_normal((300, 500)).astype(np.float32)
    big = np.zeros((48, 520), np.float32)  # rows padded, as a Mat's channels with cstep
    blas.matmul(a, b, big[:, :500], 2)
    with blas.single_threaded():
        assert _rel(big[:, :500], np.matmul(a, b)) < 1e-6
    assert not big[:, 500:].any()


@pytest.mark.parametrize("is_max", [True, False])
@pytest.mark.parametrize("c,h,w", [(1, 1, 1), (7, 7, 7), (13, 3, 5), (960, 7, 7)])
def test_native_global_pool_in_ncnn_order(is_max, c, h, w):
    x = np.random.default_rng(c).standard_normal((c, h, w)).astype(np.float32)
    y = np.empty(c, np.float32)
    assert native.global_pool(x, y, is_max, 2)
    flat = x.reshape(c, -1)
    want = flat[:, 0].copy()
    for i in range(1, h * w):  # sequential, as ncnn adds
        want = np.maximum(want, flat[:, i]) if is_max else want + flat[:, i]
    np.testing.assert_array_equal(y, want)


@pytest.mark.parametrize("is_max", [True, False])
@pytest.mark.parametrize(
    "c,h,w,k,s,pads",
    [
        (5, 14, 14, 3, 2, (0, 1, 0, 1)),
        (3, 56, 56, 3, 2, (1, 1, 1, 1)),
        (4, 13, 9, 2, 1, (0, 0, 0, 0)),
        (2, 30, 40, 3, 3, (0, 2, 0, 2)),
    ],
)
def test_native_windowed_pool(is_max, c, h, w, k, s, pads):
    x = np.random.default_rng(h).standard_normal((c, h, w)).astype(np.float32)
    t, b, l, r = pads
    value = -np.finfo(np.float32).max if is_max else 0.0
    xp = np.pad(x, ((0, 0), (t, b), (l, r)), constant_values=value)
    outh, outw = (h + t + b - k) // s + 1, (w + l + r - k) // s + 1
    y = np.empty((c, outh, outw), np.float32)
    assert native.pool(x, y, pads, value, (k, k, s, s), is_max, 2)
    want = None
    for ky in range(k):
        for kx in range(k):
            tap = xp[:, ky : ky + s * (outh - 1) + 1 : s, kx : kx + s * (outw - 1) + 1 : s]
            want = tap.copy() if want is None else (np.maximum(want, tap) if is_max else want + tap)
    np.testing.assert_array_equal(y, want)


@pytest.mark.parametrize("native_plan", [False, True], ids=["numpy", "native plan"])
def test_winograd_weights_wait_for_an_input_that_uses_them(tmp_path, native_plan):
    """The numpy layer's Winograd transform waits for an input with enough tiles (not a 7x7
    output); a larger input then makes it and gets the same result as a direct convolution.
    Under the native plan the numpy layer never makes it: the plan's recording pass runs
    the convolution directly and the plan runs it afterwards."""
    import ncnn_c

    c = 16
    param = tmp_path / "m.param"
    param.write_text(
        "7767517\n2 2\n"
        f"Input in 0 1 x -23330=4,3,7,7,{c} 0=7 1=7 2={c}\n"
        f"Convolution conv 1 1 x y -23330=4,3,7,7,{c} 0={c} 1=3 4=1 5=0 6={c * c * 9}\n"
    )
    g = np.random.default_rng(3)
    weight = g.standard_normal(c * c * 9).astype(np.float32) * 0.1
    model = tmp_path / "m.bin"
    model.write_bytes(np.zeros(1, np.uint32).tobytes() + weight.tobytes())  # flag 0: raw fp32
    net = ncnn_c.Net()
    net.opt.use_packing_layout = False
    net.native_plan = native_plan
    assert net.load_param(str(param)) == 0 and net.load_model(str(model)) == 0
    conv = net.layers()[1]
    assert conv._wino is None
    w4 = weight.reshape(c, c, 3, 3)
    for hw, transformed in ((7, False), (20, not native_plan)):
        x = g.standard_normal((c, hw, hw)).astype(np.float32)
        ex = net.create_extractor()
        ex.input("x", ncnn_c.Mat(x))
        ret, out = ex.extract("y")
        assert ret == 0
        assert (conv._wino is not None) == transformed
        xp = np.pad(x, ((0, 0), (1, 1), (1, 1))).astype(np.float64)
        want = sum(
            np.einsum("oi,ihw->ohw", w4[:, :, ky, kx], xp[:, ky : ky + hw, kx : kx + hw])
            for ky in range(3)
            for kx in range(3)
        )
        assert _rel(np.asarray(out), want) < 1e-5
