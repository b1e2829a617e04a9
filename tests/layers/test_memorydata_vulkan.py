"""MemoryData on the GPU over the option grid: constants of every rank (packed and not) and
load type, feeding a BinaryOp with a net input, and surviving an in-place GPU consumer."""

from __future__ import annotations

import numpy as np
import pytest
from oracle import GPU_GRID, SHAPES_ALL, check_layer_gpu, make_bin, randn, rng

pytestmark = pytest.mark.gpu


def _shape_params(shape) -> dict:
    keys = {1: (0,), 2: (1, 0), 3: (2, 1, 0), 4: (2, 11, 1, 0)}[len(shape)]
    return dict(zip(keys, shape, strict=True))


@pytest.mark.parametrize("shape", SHAPES_ALL + [(8, 5, 7), (12, 5), (4, 2, 3, 5)], ids=str)
def test_every_rank_raw_fp32(shape):
    data = randn(rng("memorydata-vk", shape), shape)
    check_layer_gpu("MemoryData", _shape_params(shape), [(data, 1)], [])


@pytest.mark.parametrize("kind", [0, "fp16"])
def test_flagged_load_types(kind):
    for shape in [(8,), (7, 13), (8, 5, 7), (2, 3, 5, 7)]:
        data = randn(rng("memorydata-vk-flag", shape, kind), shape)
        check_layer_gpu("MemoryData", {**_shape_params(shape), 21: 0}, [(data, kind)], [])


@pytest.mark.parametrize("md_shape", [(8, 5, 7), (8, 1, 1), (7,), (3, 5, 7)], ids=str)
def test_feeding_binaryop(md_shape):
    """MemoryData + BinaryOp in one GPU net, compared with numpy."""
    from oracle import run_net_gpu

    x_shape = (8, 5, 7) if md_shape[0] != 3 else (3, 5, 7)
    g = rng("memorydata-vk-net", md_shape)
    x, data = randn(g, x_shape), randn(g, md_shape)
    keys = {1: (0,), 2: (1, 0), 3: (2, 1, 0)}
    line = lambda s: " ".join(f"{k}={v}" for k, v in zip(keys[len(s)], s, strict=True))  # noqa: E731
    param = (
        "7767517\n3 3\n"
        f"Input in0 0 1 in0 {line(x_shape)}\n"
        f"MemoryData md 0 1 md {line(md_shape)}\n"
        "BinaryOp op 2 1 in0 md out0 0=1\n"
    )
    ref = x - (data if len(md_shape) == 3 else data.reshape(1, 1, -1))
    for name in ("fp32", "fp32-pack", "fp16s-pack", "fp16pa-pack"):
        ret, got = run_net_gpu(param, make_bin([(data, 1)]), [x], 1, **GPU_GRID[name])
        assert ret == 0
        tol = 1e-6 if name.startswith("fp32") else 1e-2
        assert np.linalg.norm(got[0] - ref) / np.linalg.norm(ref) <= tol, name


@pytest.mark.parametrize("name", ["fp32", "fp16s-pack"])
def test_constant_survives_in_place_consumers(name):
    """An in-place scalar add on the constant must not change what the next run sees."""
    from oracle import FP32_FLAGS, _apply

    import ncnn_c

    data = randn(rng("memorydata-vk-inplace"), (8, 5, 7))
    param = "7767517\n2 2\nMemoryData md 0 1 md 0=7 1=5 2=8\nBinaryOp add 1 1 md out0 0=0 1=1 2=1.0\n"
    net = ncnn_c.Net()
    _apply(net.opt, FP32_FLAGS)
    net.opt.use_vulkan_compute = True
    _apply(net.opt, GPU_GRID[name])
    assert net.load_param_mem(param) == 0
    assert net.load_model_mem(make_bin([(data, 1)])) == 0
    assert all(layer.vkdev is not None for layer in net.layers())
    for _ in range(2):
        with net.create_extractor() as ex:
            ex.set_light_mode(True)
            ret, m = ex.extract("out0")
            assert ret == 0
            # an add that had changed the constant would give data + 2 the second time
            np.testing.assert_allclose(np.asarray(m.numpy()), data + 1, rtol=1e-3, atol=1e-3)
