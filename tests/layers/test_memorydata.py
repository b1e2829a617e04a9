"""MemoryData against the oracle: constant blobs of every rank (packable and not) and load type,
alone and feeding a BinaryOp together with a net input, and repeated extraction keeping the
constant intact under an in-place consumer. One case list, every backend (oracle.backends)."""

from __future__ import annotations

import logging

import numpy as np
import pytest
from oracle import (
    CPU_BACKEND,
    FP32_FLAGS,
    GPU_GRID,
    GPU_TOL_FP16,
    GPU_TOL_FP32,
    SHAPES_ALL,
    _apply,
    assert_close,
    backends,
    case_backends,
    check,
    make_bin,
    oracle_outputs,
    randn,
    rng,
    run_layer,
    run_net,
    run_net_gpu,
)

# the constant is copied as it is: fp32 results are bit-exact on every backend
EXACT = dict(tol=0, tol_fp32=0)
_KEYS = {1: (0,), 2: (1, 0), 3: (2, 1, 0), 4: (2, 11, 1, 0)}


def _shape_params(shape) -> dict:
    return dict(zip(_KEYS[len(shape)], shape, strict=True))


def _input_line(shape) -> str:
    return " ".join(f"{k}={v}" for k, v in _shape_params(shape).items())


# every rank, plus channel counts that pack by 4 and a 4-D blob with packable channels
SHAPES = SHAPES_ALL + [(8, 5, 7), (12, 5), (4, 2, 3, 5)]
FLAGGED_SHAPES = [(7,), (8,), (7, 13), (3, 7, 13), (8, 5, 7), (2, 3, 5, 7)]


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("backend", backends("MemoryData"))
def test_every_rank_raw_fp32(shape, backend):
    data = randn(rng("memorydata", shape), shape)
    check(backend, "MemoryData", _shape_params(shape), [(data, 1)], [], **EXACT)


@pytest.mark.parametrize("shape", FLAGGED_SHAPES, ids=str)
@pytest.mark.parametrize("kind", [0, "fp16"])
@pytest.mark.parametrize("backend", backends("MemoryData"))
def test_flagged_load_types(kind, shape, backend):
    data = randn(rng("memorydata-flag", shape, kind), shape)
    check(backend, "MemoryData", {**_shape_params(shape), 21: 0}, [(data, kind)], [], **EXACT)


def test_no_shape_gives_one_zero():
    # ncnn leaves this single value uninitialised, so only the shape is compared with it
    ret, out = run_layer("MemoryData", {}, [], [])
    assert ret == 0
    np.testing.assert_array_equal(out[0], [0.0])


def _check_net(backend: str, param: str, model: bytes, inputs, what: str) -> None:
    """A whole net (not one layer, so not oracle.check) on one backend against the oracle."""
    ret, ref = oracle_outputs(param, model, inputs)
    assert ret == 0
    if backend == CPU_BACKEND:
        ret, got = run_net(param, model, inputs)
        tol = 1e-5
    else:
        flags = GPU_GRID[backend.removeprefix("vk-")]
        ret, got = run_net_gpu(param, model, inputs, 1, **flags)
        tol = GPU_TOL_FP16 if flags["use_fp16_storage"] or flags["use_fp16_arithmetic"] else GPU_TOL_FP32
    assert ret == 0, f"{what} on {backend}"
    assert_close(got[0], ref[0], tol, f"{what} on {backend}")


# (input shape, constant shape, op): sub / add / mul / rsub with broadcasting constants, and a
# subtraction with packable channels on both sides, per channel and along w
BINARY_CASES = [
    (x, md, op)
    for x, md in [
        ((7,), (7,)),
        ((7, 13), (13,)),
        ((3, 7, 13), (3,)),
        ((3, 7, 13), (3, 7, 13)),
        ((2, 3, 5, 7), (2, 3, 5, 1)),
        ((3, 227, 227), (3, 1, 227)),
    ]
    for op in (0, 1, 3, 7)
] + [((8, 5, 7), (8, 5, 7), 1), ((8, 5, 7), (8, 1, 1), 1), ((8, 5, 7), (7,), 1), ((3, 5, 7), (3, 5, 7), 1)]


# the 227x227 nets run on the GPU in the slow run only (the main run's time budget), on the CPU
# in the main run
@pytest.mark.parametrize(
    "x_shape,md_shape,op,backend",
    case_backends(
        "MemoryData",
        BINARY_CASES,
        grid_of=lambda case: ["fp32", "fp32-pack", "fp16s-pack", "fp16pa-pack"],
        gpu_main=lambda case: case[0] != (3, 227, 227),
    ),
)
def test_with_binaryop_in_a_net(x_shape, md_shape, op, backend):
    g = rng("memorydata-net", x_shape, md_shape, op)
    x = randn(g, x_shape)
    data = randn(g, md_shape)
    param = (
        "7767517\n3 3\n"
        f"Input in0 0 1 in0 {_input_line(x_shape)}\n"
        f"MemoryData md 0 1 md {_input_line(md_shape)}\n"
        f"BinaryOp op 2 1 in0 md out0 0={op}\n"
    )
    _check_net(
        backend, param, make_bin([(data, 1)]), [x], f"MemoryData+BinaryOp {x_shape} {md_shape} op {op}"
    )


@pytest.mark.parametrize("backend", backends("MemoryData", grid=["fp32", "fp16s-pack"]))
def test_constant_survives_in_place_consumers(backend):
    """An in-place scalar add on the constant must not change what the next run sees (an add
    that had changed the constant would give data + 2 the second time)."""
    import ncnn_c

    data = randn(rng("memorydata-inplace"), (8, 5, 7))
    param = "7767517\n2 2\nMemoryData md 0 1 md 0=7 1=5 2=8\nBinaryOp add 1 1 md out0 0=0 1=1 2=1.0\n"
    net = ncnn_c.Net()
    _apply(net.opt, FP32_FLAGS)
    if backend != CPU_BACKEND:
        net.opt.use_vulkan_compute = True
        _apply(net.opt, GPU_GRID[backend.removeprefix("vk-")])
    assert net.load_param_mem(param) == 0
    assert net.load_model_mem(make_bin([(data, 1)])) == 0
    on_gpu = backend != CPU_BACKEND
    assert all((layer.vkdev is not None) == on_gpu for layer in net.layers())
    for _ in range(2):
        with net.create_extractor() as ex:
            ex.set_light_mode(True)
            ret, m = ex.extract("out0")
            assert ret == 0
            # fp16 storage rounds the constant: 1e-3 covers it for values of a few units
            np.testing.assert_allclose(np.asarray(m.numpy()), data + 1, rtol=1e-3, atol=1e-3)


def test_too_little_weight_data_fails():
    data = np.ones(10, np.float32)
    ret, _ = run_net("7767517\n1 1\nMemoryData md 0 1 out0 0=7 1=5 2=3\n", make_bin([(data, 1)]), [])
    assert ret != 0


def test_negative_shape_rejected(caplog):
    with caplog.at_level(logging.ERROR, logger="ncnn_c"):
        ret, _ = run_layer("MemoryData", {0: -3}, [], [])
    assert ret != 0 and "negative" in caplog.text
