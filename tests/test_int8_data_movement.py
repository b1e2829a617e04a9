"""int8 blobs through the layers that only move values (issue 16): two Requantize tops (int8)
through Concat, Slice, Crop, Padding, Flatten, Reshape, ShuffleChannel, Dropout into an int8
Convolution / InnerProduct, which takes an int8 bottom as it is (no quantization with its
bottom scale). ncnn keeps such a blob int8; so must the CPU layers (elemsize 1) and the GPU,
where an int8 blob is fp32 storage with a mark (``layer/vulkan/_int8.py``: the mark follows
the values). Checked against the PyPI ncnn: the moved blob extracted raw (``type`` 1: an int8
Mat, exactly the oracle's) and the int8 layer's output; before, the blob came out fp32 and the
int8 layer requantized it (0.3 relative from the oracle).
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
import pytest
from oracle import GPU_GRID, GPU_TOL_FP16, GPU_TOL_FP32, make_bin, rel_l2, rng

import ncnn_c

SHAPE = (4, 6, 8)  # each int32 input: (c, h, w)

# name -> (the layers from the int8 blobs q0 / q1 to "m", the int8 reader's input channels or
# (for an InnerProduct) its input size, whether the reader is an InnerProduct)
CASES = {
    "concat-channels": ("Concat cat 2 1 q0 q1 m 0=0", 8, False),
    # (not along the width: the PyPI ncnn's Concat_x86 joins int8 rows as 4-byte elements)
    "slice": ("Slice sl 1 2 q0 m rest -23300=2,3,-233 1=0", 3, False),
    "crop": ("Crop cr 1 1 q0 m 0=1 1=2 2=1 3=5 4=3 5=3", 3, False),
    "padding": ("Padding pd 1 1 q1 m 0=1 1=2 2=2 3=1 4=0 5=3.7", 4, False),
    "padding-replicate": ("Padding pd 1 1 q1 m 0=1 1=1 2=1 3=1 4=1", 4, False),
    "flatten": ("Flatten fl 1 1 q0 m", 4 * 6 * 8, True),
    "reshape": ("Reshape rs 1 1 q1 m 0=12 1=4 2=4", 4, False),
    "dropout": ("Dropout dr 1 1 q0 m", 4, False),
}


# the PyPI ncnn fails on these with an int8 blob (-100); ncnn_c's CPU keeps it int8 and the
# GPU must give what the CPU gives
CPU_ONLY_REFERENCE = {
    "shufflechannel": ("ShuffleChannel sc 1 1 q0 m 0=2", 4, False),
}
CASES.update(CPU_ONLY_REFERENCE)


def _net(case: str) -> tuple[str, bytes, list[np.ndarray]]:
    moves, cin, inner_product = CASES[case]
    g = rng("int8-data-movement", case)
    lines = [
        "Input in0 0 1 in0",
        "Input in1 0 1 in1",
        f"Requantize r0 1 1 in0 q0 0={SHAPE[0]} 1=1 2={SHAPE[0]}",
        "Requantize r1 1 1 in1 q1 0=1 1=1 3=1",
        moves,
    ]
    weights = [
        ((g.random(SHAPE[0]) * 4e-3 + 1e-3).astype(np.float32), 1),  # r0: scale_in per channel
        (np.array([20.0], np.float32), 1),  # scale_out
        (g.standard_normal(SHAPE[0]).astype(np.float32), 1),  # bias per channel
        (np.array([2e-3], np.float32), 1),  # r1: scale_in
        (np.array([30.0], np.float32), 1),  # scale_out
    ]
    cout = 6
    n = cout * cin * (1 if inner_product else 9)
    if inner_product:
        lines.append(f"InnerProduct ip 1 1 m out0 0={cout} 1=1 2={n} 8=1")
    else:
        lines.append(f"Convolution conv 1 1 m out0 0={cout} 1=3 4=1 5=1 6={n} 8=1")
    weights += [
        ((g.standard_normal(n) * 0.3).astype(np.float32), 0),
        (g.standard_normal(cout).astype(np.float32), 1),
        ((60 + 60 * g.random(cout)).astype(np.float32), 1),  # weight scales
        (np.array([0.7], np.float32), 1),  # bottom scale: what an fp32 bottom would be quantized with
    ]
    fields = [line.split() for line in lines]
    blobs = {b for f in fields for b in f[4 : 4 + int(f[2]) + int(f[3])]}
    text = f"7767517\n{len(lines)} {len(blobs)}\n" + "\n".join(lines) + "\n"
    inputs = [
        g.integers(-12000, 12000, SHAPE).astype(np.int32).view(np.float32),
        g.integers(-9000, 9000, SHAPE).astype(np.int32).view(np.float32),
    ]
    return text, make_bin(weights), inputs


def _oracle(text: str, blob: bytes, inputs) -> tuple[np.ndarray, np.ndarray]:
    """The PyPI ncnn's (raw int8 "m", fp32 "out0")."""
    import ncnn

    net = ncnn.Net()
    net.opt.use_vulkan_compute = False
    net.opt.use_packing_layout = False
    net.opt.num_threads = 1
    with tempfile.TemporaryDirectory() as tmp:
        Path(tmp, "m.param").write_text(text)
        Path(tmp, "m.bin").write_bytes(blob)
        assert net.load_param(str(Path(tmp, "m.param"))) == 0
        assert net.load_model(str(Path(tmp, "m.bin"))) == 0
    with net.create_extractor() as ex:
        for i, x in enumerate(inputs):
            ex.input(f"in{i}", ncnn.Mat(x).clone())
        ret, m = ex.extract("m", 1)
        assert ret == 0 and m.elemsize == 1, "the oracle keeps the moved blob int8"
        moved = np.array(m).astype(np.int8)
        del m
        ret, o = ex.extract("out0")
        assert ret == 0
        out = np.array(o).copy()
        del o
    net.clear()
    return moved, out


BACKENDS = [
    pytest.param("numpy", id="numpy"),
    pytest.param("cpu", id="cpu"),
    pytest.param("vk-fp32", id="vk-fp32", marks=pytest.mark.gpu),
    pytest.param("vk-fp16sa-pack", id="vk-fp16sa-pack", marks=pytest.mark.gpu),
]


def _ours(backend: str, text: str, blob: bytes, inputs) -> tuple[ncnn_c.Mat, np.ndarray]:
    net = ncnn_c.Net()
    for k, v in (GPU_GRID[backend[3:]] if backend.startswith("vk-") else {}).items():
        setattr(net.opt, k, v)
    net.opt.use_vulkan_compute = backend.startswith("vk-")
    net.opt.use_int8_inference = True
    net.opt.num_threads = 1
    net.native_plan = backend == "cpu"
    assert net.load_param_mem(text) == 0 and net.load_model_mem(blob) == 0
    if net.opt.use_vulkan_compute:
        assert all(layer.vkdev is not None for layer in net.layers() if layer.type != "Input")
    for _ in range(2 if backend == "cpu" else 1):  # the native plan: recorded, then run
        with net.create_extractor() as ex:
            for i, x in enumerate(inputs):
                assert ex.input(f"in{i}", ncnn_c.Mat(x.copy())) == 0
            ret, m = ex.extract("m", 1)
            assert ret == 0
            ret, o = ex.extract("out0")
            assert ret == 0
            out = np.array(o.numpy(), copy=True)
    return m, out


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("backend", BACKENDS)
def test_int8_blob_stays_int8_through_data_movement(case, backend):
    text, blob, inputs = _net(case)
    if case in CPU_ONLY_REFERENCE:
        m, ref_out = _ours("numpy", text, blob, inputs)
        ref_moved = np.array(m.numpy(), copy=True)
    else:
        ref_moved, ref_out = _oracle(text, blob, inputs)
    m, out = _ours(backend, text, blob, inputs)
    assert m.elemsize == 1, f"{case}: the moved blob lost its int8 form (elemsize {m.elemsize})"
    moved = np.array(m.numpy(), copy=True)
    assert moved.dtype == np.int8 and np.array_equal(moved, ref_moved), f"{case}: int8 values differ"
    assert np.std(ref_out) > 0
    fp16 = backend.startswith("vk-fp16")
    tol = GPU_TOL_FP16 if fp16 else GPU_TOL_FP32 if backend.startswith("vk-") else 1e-5
    err = rel_l2(out, ref_out)
    assert err <= tol, f"{case}: {err:.3g} from the PyPI ncnn on {backend}"


def test_a_mix_of_int8_and_fp32_widens_by_value():
    # a Concat of an int8 blob and an fp32 one: fp32 out (ncnn's would mix bytes), the int8
    # values widened, on the CPU and the GPU (fp32 storage) alike
    text = """7767517
4 4
Input in0 0 1 in0
Input in1 0 1 in1
Requantize r0 1 1 in0 q0 0=1 1=1
Concat cat 2 1 q0 in1 out0 0=0
"""
    blob = make_bin([(np.array([2e-3], np.float32), 1), (np.array([20.0], np.float32), 1)])
    g = rng("int8-fp32-concat")
    x0 = g.integers(-9000, 9000, SHAPE).astype(np.int32).view(np.float32)
    x1 = g.standard_normal(SHAPE).astype(np.float32)
    got = []
    for vk in (False, True):
        net = ncnn_c.Net()
        for k, v in GPU_GRID["fp32"].items():
            setattr(net.opt, k, v)
        net.opt.use_vulkan_compute = vk
        assert net.load_param_mem(text) == 0 and net.load_model_mem(blob) == 0
        with net.create_extractor() as ex:
            ex.input("in0", ncnn_c.Mat(x0.copy()))
            ex.input("in1", ncnn_c.Mat(x1.copy()))
            ret, m = ex.extract("out0", 1)
            assert ret == 0 and m.elemsize == 4, f"vulkan={vk}"
            got.append(np.array(m.numpy(), copy=True))
    cpu, gpu = got
    q = cpu[: SHAPE[0]]
    assert np.array_equal(q, np.trunc(q)) and np.abs(q).max() == 127 and np.array_equal(cpu[SHAPE[0] :], x1)
    assert np.array_equal(gpu, cpu)
