"""Pooling against the PyPI ncnn oracle: max/avg, global, adaptive, every pad mode, 2-D and 3-D,
SAME padding with a kernel smaller than the stride (negative pads, where the oracle is
memory-unsafe and runs isolated); one case list on every backend (oracle.backends: the CPU, and
the GPU option grid: windowed, packed, adaptive and global shaders).
"""

from __future__ import annotations

import itertools
import logging
import time

import numpy as np
import pytest
from oracle import SPOT_GRID, backends, check, make_bin, make_param, randn, rng, run_layer, run_ncnn

# the CPU module's long lists run on the GPU grid's two ends; the GPU's own cases on all of it
SPOT = backends("Pooling", grid=SPOT_GRID)


def pool_case(backend, params, shape=(3, 11, 13), seed=0, **kw):
    x = randn(rng("pool", sorted(params.items()), shape, seed), shape)
    # max pooling is a selection: bit-exact; averages may differ in summation order
    is_max = params.get(0, 0) == 0
    return check(backend, "Pooling", params, [], [x], tol=0.0 if is_max else 1e-5, **kw)


@pytest.mark.parametrize("include_pad", [0, 1])
@pytest.mark.parametrize("pad_mode", [0, 1, 2, 3])
@pytest.mark.parametrize("ptype", [0, 1], ids=["max", "avg"])
@pytest.mark.parametrize("backend", SPOT)
def test_pooling_pad_modes(ptype, pad_mode, include_pad, backend):
    # explicit asymmetric pads exercise the tail padding of mode 0 and the counted region
    pool_case(backend, {0: ptype, 1: 3, 2: 2, 3: 1, 14: 0, 13: 2, 15: 1, 5: pad_mode, 6: include_pad})
    pool_case(backend, {0: ptype, 1: 2, 11: 3, 2: 3, 12: 2, 5: pad_mode, 6: include_pad}, shape=(2, 10, 7))


@pytest.mark.parametrize("pad_mode", [0, 1, 2, 3])
@pytest.mark.parametrize("ptype", [0, 1], ids=["max", "avg"])
@pytest.mark.parametrize("shape", [(1, 5), (7, 13), (16, 32)], ids=str)
@pytest.mark.parametrize("backend", SPOT)
def test_pooling_2d_input_is_one_channel(shape, ptype, pad_mode, backend):
    if shape[0] > 1 or pad_mode != 1:
        # (1 row, no padding, kernel 2 is the reject case below: ncnn reads past the blob)
        pool_case(backend, {0: ptype, 1: 2, 2: 2, 5: pad_mode}, shape=shape)
    pool_case(backend, {0: ptype, 1: 3, 2: 1, 3: 1, 5: pad_mode}, shape=shape)


@pytest.mark.parametrize("backend", SPOT)
def test_pooling_squeezenet_form(backend):
    # SqueezeNet's pool1/3/5: max 3x3 stride 2 with full padding
    pool_case(backend, {1: 3, 2: 2}, shape=(64, 113, 113))
    pool_case(backend, {0: 1, 4: 1}, shape=(1000, 16, 16))


@pytest.mark.parametrize("ptype", [0, 1], ids=["max", "avg"])
@pytest.mark.parametrize("shape", [(1, 1, 1), (5, 7, 9), (4, 13, 13), (3, 227, 227)], ids=str)
@pytest.mark.parametrize("backend", SPOT)
def test_pooling_global(ptype, shape, backend):
    pool_case(backend, {0: ptype, 4: 1}, shape=shape)


@pytest.mark.parametrize("ptype", [0, 1], ids=["max", "avg"])
@pytest.mark.parametrize("shape", [(6, 8), (1, 5)], ids=str)
@pytest.mark.parametrize("backend", SPOT)
def test_pooling_global_2d(ptype, shape, backend):
    pool_case(backend, {0: ptype, 4: 1}, shape=shape)


@pytest.mark.parametrize("ptype", [0, 1], ids=["max", "avg"])
@pytest.mark.parametrize(
    "out", [(3, 2), (4, -233), (-233, 5), (-233, -233), (1, 1), (6, 5), (13, 11), (20, 17)], ids=str
)
@pytest.mark.parametrize("backend", SPOT)
def test_pooling_adaptive(ptype, out, backend):
    pool_case(backend, {0: ptype, 7: 1, 8: out[0], 18: out[1]})


@pytest.mark.parametrize("ptype", [0, 1], ids=["max", "avg"])
@pytest.mark.parametrize("backend", SPOT)
def test_pooling_adaptive_more(ptype, backend):
    pool_case(backend, {0: ptype, 7: 1, 8: 7}, shape=(5, 7, 13))  # out_h defaults to out_w
    pool_case(backend, {0: ptype, 7: 1, 8: 7, 18: 7}, shape=(4, 56, 56))


@pytest.mark.parametrize("ptype", [0, 1], ids=["max", "avg"])
@pytest.mark.parametrize("backend", SPOT)
def test_pooling_adaptive_2d(ptype, backend):
    pool_case(backend, {0: ptype, 7: 1, 8: 3, 18: 4}, shape=(7, 13))
    # the same size passes the blob through: a 2-D input stays 2-D
    pool_case(backend, {0: ptype, 7: 1, 8: -233, 18: -233}, shape=(7, 13))
    pool_case(backend, {0: ptype, 7: 1, 8: 13, 18: 7}, shape=(7, 13))


@pytest.mark.parametrize("backend", SPOT)
def test_pooling_empty_window_gives_nan_like_ncnn(backend):
    # a window that lies wholly in the padding has no counted cell: ncnn gives 0/0
    pool_case(backend, {0: 1, 1: 2, 2: 1, 3: 1, 14: 0, 13: 2, 15: 1, 5: 1}, shape=(2, 4, 5))


@pytest.mark.parametrize("ptype", [0, 1], ids=["max", "avg"])
@pytest.mark.parametrize("backend", SPOT)
def test_pooling_odd_sizes(ptype, backend):
    pool_case(backend, {0: ptype, 1: 1, 2: 1}, shape=(1, 1, 1))
    pool_case(backend, {0: ptype, 1: 3, 2: 2, 3: 1}, shape=(3, 227, 227))
    pool_case(backend, {0: ptype, 1: 2, 2: 2}, shape=(8, 1, 9), seed=1)


@pytest.mark.slow
@pytest.mark.parametrize("pad_mode", [0, 1, 2, 3])
@pytest.mark.parametrize("ptype", [0, 1], ids=["max", "avg"])
@pytest.mark.parametrize("backend", backends("Pooling", grid=["fp32"]))
def test_pooling_exhaustive(ptype, pad_mode, backend):
    pads_forms = [(0, 0, 0, 0), (1, 1, 1, 1), (1, 0, 2, 1), (2, 1, 0, 2)]
    for k, s, include, pads in itertools.product((1, 2, 3, 4), (1, 2, 3), (0, 1), pads_forms):
        if max(pads) >= k:
            continue
        p = {0: ptype, 1: k, 11: max(1, k - 1), 2: s, 12: max(1, s - 1), 5: pad_mode, 6: include}
        p.update({3: pads[0], 14: pads[1], 13: pads[2], 15: pads[3]})
        pool_case(backend, p, shape=(3, 10, 11))


def test_pooling_params_table_defaults():
    from ncnn_c.layer import create_layer_cpu
    from ncnn_c.paramdict import ParamDict

    layer = create_layer_cpu("Pooling")
    pd = ParamDict()
    pd.set(1, 3)
    pd.set(2, 2)
    pd.set(3, 1)
    pd.set(8, 4)
    assert layer.load_param(pd) == 0
    assert (layer.kernel_h, layer.stride_h) == (3, 2)
    assert (layer.pad_top, layer.pad_right, layer.pad_bottom) == (1, 1, 1)
    assert layer.out_h == 4


@pytest.mark.parametrize(
    "params,shape,text",
    [
        ({0: 2, 1: 2}, (2, 4, 4), "pooling_type"),
        ({1: 2, 5: 4}, (2, 4, 4), "pad_mode"),
        ({1: 0}, (2, 4, 4), "must be positive"),
        ({1: 2, 2: 0}, (2, 4, 4), "must be positive"),
        ({7: 1, 8: 0}, (2, 4, 4), "adaptive"),
        # ncnn's C division makes one output row here and reads it from past the blob
        ({1: 5, 5: 1}, (2, 4, 4), "smaller than the kernel"),
        ({1: 2, 5: 1}, (1, 5), "smaller than the kernel"),
        ({1: 2}, (5,), "dims 1"),
        ({1: 2}, (2, 3, 4, 4), "dims 4"),
    ],
    ids=str,
)
def test_pooling_rejects(params, shape, text, caplog):
    x = randn(rng("pool-bad", shape), shape)
    with caplog.at_level(logging.ERROR, logger="ncnn_c"):
        ret, _ = run_layer("Pooling", params, [], [x])
    assert ret != 0
    assert text in caplog.text


def test_pooling_speed_large_map():
    # the benchmark networks' 2x2 / 3x3 max pooling on big maps: stay within a few oracle times
    x = randn(rng("pool-speed"), (64, 224, 224))
    for params in ({1: 2, 2: 2}, {1: 3, 2: 2}):
        ret, ref = run_ncnn(make_param("Pooling", params, [x.shape]), make_bin([]), [x])
        assert ret == 0
        t0 = time.perf_counter()
        ret, got = run_layer("Pooling", params, [], [x])
        elapsed = time.perf_counter() - t0
        assert ret == 0
        np.testing.assert_array_equal(got[0], ref[0])
        assert elapsed < 2.0, f"{params}: {elapsed:.2f}s"


def test_pooling_flags():
    from ncnn_c.layer import create_layer_cpu

    layer = create_layer_cpu("Pooling")
    assert type(layer).__name__ == "Pooling" and layer.one_blob_only and not layer.support_inplace


# -- SAME padding whose total is negative (a kernel smaller than the stride) --------------------
# ncnn crops rows at the bottom whatever the SAME flavour (as Convolution does); the oracle is
# memory-unsafe here, so it runs isolated


@pytest.mark.parametrize("pad_mode,ptype", list(itertools.product((2, 3), (0, 1))), ids=str)
@pytest.mark.parametrize("backend", SPOT)
def test_same_padding_kernel_smaller_than_stride(pad_mode, ptype, backend):
    x = randn(rng("same-crop"), (2, 9, 10))
    check(backend, "Pooling", {0: ptype, 1: 2, 2: 3, 5: pad_mode}, [], [x], isolate=True)


@pytest.mark.parametrize("pad_mode,ptype", list(itertools.product((2, 3), (0, 1))), ids=str)
@pytest.mark.parametrize(
    "shape,kw,kh,sw,sh",
    [
        ((2, 5, 8), 1, 3, 4, 1),  # width total -3 (left -1 / right -2 split), height pads
        ((5, 3, 8), 2, 1, 2, 1),  # width total -1 and height 0
        ((1, 9, 11), 4, 2, 2, 3),  # height total -1 (crop), width pads
        ((2, 7, 9), 1, 1, 3, 4),  # every total negative: ncnn does not pad or crop at all
    ],
    ids=str,
)
@pytest.mark.parametrize("backend", SPOT)
def test_same_padding_negative_totals_on_either_axis(shape, kw, kh, sw, sh, pad_mode, ptype, backend):
    # rows of fewer than 12 floats: where ncnn's own negative-left border copy is memory-safe
    x = randn(rng("same-neg", shape, kw, kh), shape)
    params = {0: ptype, 1: kw, 11: kh, 2: sw, 12: sh, 5: pad_mode}
    check(backend, "Pooling", params, [], [x], isolate=True)


@pytest.mark.parametrize("backend", SPOT)
def test_full_padding_tail_when_the_padded_input_is_smaller_than_the_kernel(backend):
    # (h + pads - kernel) is negative: ncnn's tail uses C's remainder, stride - (-1) = 3 rows
    x = randn(rng("tail-neg"), (6, 1, 2))
    params = {0: 0, 1: 4, 11: 3, 2: 1, 12: 2, 3: 2, 13: 1, 14: 0, 15: 0, 5: 0}
    check(backend, "Pooling", params, [], [x], isolate=True)


# -- the GPU's own cases, on the whole grid ------------------------------------------------------
GRID_CASES = [
    {0: 0, 1: 3, 2: 2},
    {0: 1, 1: 3, 2: 2},
    {0: 1, 1: 2, 2: 2, 3: 1, 5: 1},
    {0: 0, 1: 3, 2: 1, 3: 1, 5: 2},
    {0: 1, 1: 3, 2: 2, 5: 3, 6: 0},
    {0: 0, 4: 1},
    {0: 1, 4: 1},
    {0: 1, 7: 1, 8: 4, 18: 3},
]
GRID_SHAPES = [(3, 7, 13), (8, 17, 19), (1, 1, 1)]


@pytest.mark.parametrize(
    "params,shape",
    # a 1x1 input is smaller than a window: only the global and adaptive cases take it
    [(p, s) for p in GRID_CASES for s in GRID_SHAPES if s != (1, 1, 1) or p.get(4) or p.get(7)],
    ids=str,
)
@pytest.mark.parametrize("backend", backends("Pooling"))
def test_pooling_grid(params, shape, backend):
    check(backend, "Pooling", params, [], [randn(rng("pool", shape), shape)])


# 2-D inputs pool as one channel: rows that pack (8, 16) and rows that do not (7, 13), a single
# row (1, 9); the packed ones are unpacked on the GPU first
GRID_2D = [
    {0: 0, 1: 3, 2: 2},
    {0: 1, 1: 2, 2: 1, 3: 1, 5: 1, 6: 1},
    {0: 1, 1: 3, 2: 2, 5: 2},
    {0: 0, 4: 1},
    {0: 1, 4: 1},
    {0: 1, 7: 1, 8: 4, 18: 3},
    {0: 0, 7: 1, 8: -233, 18: -233},  # the same size: the blob itself, still 2-D
]


@pytest.mark.parametrize(
    "params,shape",
    # a single row takes no 3-high window without padding: ncnn reads past the blob
    [(p, s) for p in GRID_2D for s in [(8, 16), (7, 13), (1, 9)] if s[0] > 1 or not p.get(1, 0) > 2],
    ids=str,
)
@pytest.mark.parametrize("backend", backends("Pooling"))
def test_pooling_2d_grid(params, shape, backend):
    check(backend, "Pooling", params, [], [randn(rng("pool-2d", shape), shape)])


@pytest.mark.parametrize("ptype", [0, 1])
@pytest.mark.parametrize("k,s", [(2, 2), (3, 2), (3, 1), (1, 1)], ids=str)
@pytest.mark.parametrize(
    "pad,mode,inc", [(0, 0, 0), (1, 0, 0), (1, 0, 1), (1, 1, 0), (0, 2, 0), (0, 3, 1)], ids=str
)
@pytest.mark.parametrize("backend", backends("Pooling", grid=["fp32-pack", "fp16sa-pack"]))
def test_pooling_pack4(ptype, k, s, pad, mode, inc, backend):
    """The elempack 4 shader over kernels, strides and every pad mode (8 channels pack)."""
    params = {0: ptype, 1: k, 2: s, 3: pad, 5: mode, 6: inc}
    shape = (8, 11, 13)
    check(backend, "Pooling", params, [], [randn(rng("pool4", shape, k), shape)])


# the SqueezeNet milestone's cases: windowed pooling computes 8 outputs of a row per invocation
# from vec4-aligned row reads (rows of several tiles with a partial last one, rows starting at
# every alignment); global pooling reads channels as vec4s and folds past one workgroup
MILESTONE = [
    {1: 3, 2: 2},  # SqueezeNet's max pooling
    {1: 2, 2: 1},
    {1: 2, 11: 3, 2: 2, 12: 1, 3: 1, 13: 0, 14: 0, 15: 2},  # rectangular, asymmetric pads
    {4: 1},  # global
    {7: 1, 8: 3, 18: 4},  # adaptive
    {7: 1, 8: 5, 18: -233},  # adaptive, keeps h
] + [{1: 3, 2: 2, 3: 1, 5: mode, 6: inc} for mode in range(4) for inc in (0, 1)]
MILESTONE_SHAPES = [(4, 11, 13), (3, 8, 7), (3, 19, 37)]


@pytest.mark.parametrize("params", MILESTONE, ids=str)
@pytest.mark.parametrize("ptype", [0, 1], ids=["max", "avg"])
@pytest.mark.parametrize("shape", MILESTONE_SHAPES, ids=str)
@pytest.mark.parametrize("backend", backends("Pooling", grid=["fp32"]))
def test_pooling_milestone(params, ptype, shape, backend):
    check(backend, "Pooling", {0: ptype, **params}, [], [randn(rng("pool-ms", shape), shape)])


@pytest.mark.parametrize("shape", [(3, 29, 31), (2, 5, 5), (2, 3, 6), (3, 1, 1), (70, 2, 2)], ids=str)
@pytest.mark.parametrize("ptype", [0, 1], ids=["max", "avg"])
@pytest.mark.parametrize("backend", backends("Pooling", grid=["fp32", "fp32-pack"]))
def test_global_pooling_tail(shape, ptype, backend):
    # plane sizes of every remainder mod 4, more channels than one workgroup, more elements per
    # channel than one workgroup (the strided fold)
    check(backend, "Pooling", {0: ptype, 4: 1}, [], [randn(rng("gpool-tail", shape), shape) - 3])


@pytest.mark.parametrize("pooling_type", [0, 1], ids=["max", "avg"])
@pytest.mark.parametrize("shape", [(4, 300, 300), (3, 301, 299)], ids=str)
@pytest.mark.parametrize("backend", backends("Pooling"))
def test_global_pooling_past_lavapipes_loop_limit(shape, pooling_type, backend):
    # llvmpipe silently ends an invocation after 65535 loop iterations: a 300x300 channel is
    # 90000 values, reduced by one invocation (unrolled 8 ways, it stays under the limit)
    check(backend, "Pooling", {0: pooling_type, 4: 1}, [], [randn(rng("gpool-big", shape), shape)])


@pytest.mark.gpu
def test_pooling_2d_shape_hint_builds_the_unpacked_pipeline(tmp_path):
    """A .param hint of a 2-D input (8 rows: packed on the GPU) builds the elempack 1 shader at
    load and defers the elempack 4 one, which a 2-D blob never uses: the inference builds
    nothing more and matches the oracle."""
    import ncnn_c
    from ncnn_c.gpu.pipeline import DeferredPipeline

    text = "7767517\n2 2\nInput in 0 1 data -23330=4,2,16,8,1 0=16 1=8\n"
    text += "Pooling pool 1 1 data out -23330=4,3,8,4,1 0=1 1=2 2=2\n"
    x = randn(rng("pool-2d-hint"), (8, 16))
    ret, ref = run_ncnn(text, b"", [x], input_names=["data"], output_names=["out"])
    assert ret == 0
    (tmp_path / "m.param").write_text(text)
    (tmp_path / "m.bin").write_bytes(b"")
    vkdev = ncnn_c.get_gpu_device(0)
    net = ncnn_c.Net()
    net.opt.use_vulkan_compute = True
    net.opt.use_fp16_packed = net.opt.use_fp16_storage = net.opt.use_fp16_arithmetic = False
    net.opt.use_packing_layout = True
    net.set_vulkan_device(vkdev)
    net.opt.pipeline_cache = ncnn_c.PipelineCache(vkdev)
    assert net.load_param(str(tmp_path / "m.param")) == 0
    assert net.load_model(str(tmp_path / "m.bin")) == 0
    pool = next(layer for layer in net.layers() if layer.type == "Pooling")
    assert not isinstance(pool.pipeline_pooling, DeferredPipeline)
    assert isinstance(pool.pipeline_pooling_pack4, DeferredPipeline)
    built = net.opt.pipeline_cache.stats()["pipelines_created"]
    with net.create_extractor() as ex:
        ex.input("data", ncnn_c.Mat(x))
        ret, m = ex.extract("out")
        assert ret == 0
        got = np.array(m.numpy(), dtype=np.float32, copy=True)
    assert net.opt.pipeline_cache.stats()["pipelines_created"] == built
    assert not pool.pipeline_pooling_pack4.built
    assert got.shape == ref[0].shape == (1, 4, 8)
    np.testing.assert_allclose(got, ref[0], rtol=1e-5, atol=1e-6)
    net.clear()
