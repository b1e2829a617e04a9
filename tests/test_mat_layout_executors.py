"""Mats whose channels are not laid out as a fresh Mat's, through the executors that bind
Mats' memory: the native CPU plan and the Vulkan upload (issue 28, point 1).

``Mat(w, h, d, c).channel(q)`` and ``depth_range`` give a 3-D Mat whose channels are packed
without padding (``cstep = w*h``), as in ncnn. A plan recorded with an ordinary Mat (padded
channels) must read such a Mat of the same shape at its own channel stride: correct values,
and no read past its memory (a buffer that ends at a guard page). The numpy path and the
PyPI ncnn are the references.
"""

from __future__ import annotations

import os
import platform
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from oracle import assert_close, run_ncnn

import ncnn_c

ROOT = Path(__file__).resolve().parents[1]
MODELS = ROOT / "models"
SQUEEZE = (MODELS / "squeezenet_v1.1.param", MODELS / "squeezenet_v1.1.bin")
W, H, C = 227, 227, 3

native_only = pytest.mark.skipif(
    platform.machine() not in ("x86_64", "AMD64"), reason="no oneDNN wheel for this architecture"
)


def _x(seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).random((C, H, W), dtype=np.float32)


def _dense(kind: str, x: np.ndarray) -> ncnn_c.Mat:
    """A 3-D Mat of ``x``'s shape whose channels follow each other unpadded (cstep w*h)."""
    c, h, w = x.shape
    if kind == "channel":
        m = ncnn_c.Mat(w, h, c, 2).channel(1)
    else:
        m = ncnn_c.Mat(w, h, c + 2, 1).depth_range(1, c)
    assert (m.dims, m.w, m.h, m.c, m.cstep) == (3, w, h, c, w * h)
    assert ncnn_c.Mat(w, h, c).cstep != w * h  # the padded layout differs
    m.tensor()[...] = x
    return m


def _net(vulkan: bool = False) -> ncnn_c.Net:
    net = ncnn_c.Net()
    net.opt.num_threads = 2
    if vulkan:
        net.opt.use_vulkan_compute = True
        for k in ("use_fp16_packed", "use_fp16_storage", "use_fp16_arithmetic", "use_packing_layout"):
            setattr(net.opt, k, False)
    assert net.load_param(str(SQUEEZE[0])) == 0
    assert net.load_model(str(SQUEEZE[1])) == 0
    return net


def _run(net: ncnn_c.Net, m: ncnn_c.Mat) -> np.ndarray:
    ex = net.create_extractor()
    assert ex.input("data", m) == 0
    ret, out = ex.extract("prob")
    assert ret == 0
    return np.array(out).copy()


def _oracle(x: np.ndarray) -> np.ndarray:
    ret, ref = run_ncnn(SQUEEZE[0].read_text(), SQUEEZE[1].read_bytes(), [x], 1, ["data"], ["prob"])
    assert ret == 0
    return ref[0]


# -- the native CPU plan ------------------------------------------------------------------------
@native_only
@pytest.mark.parametrize("recorded_with", ["ordinary", "dense"])
@pytest.mark.parametrize("kind", ["channel", "depth_range"])
def test_plan_reads_a_dense_channel_mat(kind, recorded_with):
    x = _x()
    net = _net()
    first = ncnn_c.Mat(x) if recorded_with == "ordinary" else _dense(kind, x)
    recorded = _run(net, first)  # the numpy path, recorded
    assert net._native.plans.built == 1
    plain = _run(net, ncnn_c.Mat(x))  # the plan
    dense = _run(net, _dense(kind, x))  # the plan, the same shape key
    assert net._native.plans.built == 1 and len(net._native.plans) == 1
    net.native_plan = False
    numpy_dense = _run(net, _dense(kind, x))
    assert_close(plain, recorded, 1e-5, "plan (ordinary Mat) vs numpy")
    assert_close(dense, recorded, 1e-5, "plan (dense-channel Mat) vs numpy")
    assert_close(numpy_dense, recorded, 1e-6, "numpy (dense-channel Mat) vs numpy")
    ref = _oracle(x)
    assert_close(dense, ref.reshape(dense.shape), 1e-4, "plan (dense-channel Mat) vs PyPI ncnn")


class DenseView(ncnn_c.Layer):
    """A numpy layer (custom: the plan runs it as such) handing its native reader a Mat
    whose channels are unpadded: a copy of its input in ``Mat(w, h, c, 2).channel(1)``."""

    def __init__(self) -> None:
        super().__init__()
        self.one_blob_only = True

    def forward(self, bottom, top, opt) -> int:
        view = ncnn_c.Mat(bottom.w, bottom.h, bottom.c, 2).channel(1)
        view.tensor()[...] = bottom.tensor()
        top.share_from(view)
        return 0


CONV = "Convolution conv 1 1 {src} out 0=8 1=3 4=1 5=1 6=216\n"


@native_only
def test_plan_reads_a_numpy_layers_dense_channel_output():
    """A native segment reads a numpy layer's result at that Mat's own channel stride."""
    g = np.random.default_rng(3)
    weights = g.standard_normal(216).astype(np.float32)
    bias = g.standard_normal(8).astype(np.float32)
    model = b"\0\0\0\0" + weights.tobytes() + bias.tobytes()
    x = g.standard_normal((3, 13, 11)).astype(np.float32)
    net = ncnn_c.Net()
    net.opt.num_threads = 1
    assert net.register_custom_layer("DenseView", DenseView) == 0
    param = "7767517\n3 3\nInput data 0 1 data\nDenseView dv 1 1 data dview\n" + CONV.format(src="dview")
    assert net.load_param_mem(param) == 0
    assert net.load_model_mem(model) == 0

    def run() -> np.ndarray:
        ex = net.create_extractor()
        assert ex.input("data", ncnn_c.Mat(x)) == 0
        ret, out = ex.extract("out")
        assert ret == 0
        return np.array(out).copy()

    recorded = run()  # numpy, recorded
    plans = net._native.plans
    assert plans.built == 1
    plan = plans.take(next(iter(plans._plans)))
    assert plan is not None and plan.native_layers >= 1  # the convolution is native
    plan.lock.release()
    native = run()
    assert_close(native, recorded, 1e-5, "plan vs numpy")
    ret, ref = run_ncnn(
        "7767517\n2 2\nInput data 0 1 data\n" + CONV.format(src="data"), model, [x], 1, ["data"], ["out"]
    )
    assert ret == 0
    assert_close(native, ref[0], 1e-5, "plan vs PyPI ncnn")


GUARD_CHILD = textwrap.dedent(
    """
    import ctypes, mmap, sys
    import numpy as np
    import ncnn_c

    W, H, C = 227, 227, 3
    param, model = sys.argv[1], sys.argv[2]
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    page = mmap.PAGESIZE
    nbytes = W * H * C * 4
    size = -(-nbytes // page) * page + page
    region = mmap.mmap(-1, size, prot=mmap.PROT_READ | mmap.PROT_WRITE)
    base = ctypes.addressof(ctypes.c_char.from_buffer(region))
    guard = base + size - page
    assert libc.mprotect(guard, page, 0) == 0, ctypes.get_errno()  # PROT_NONE
    # (c=1, d=3, h, w): one channel, wrapped unpadded; its channel(0) is a 3-D Mat of
    # 3 unpadded channels whose memory ends where the guard page begins
    arr = np.frombuffer(region, np.float32, W * H * C, size - page - nbytes).reshape(1, C, H, W)
    x = np.random.default_rng(0).random((C, H, W), dtype=np.float32)
    arr[0] = x
    view = ncnn_c.Mat(arr).channel(0)
    assert (view.dims, view.c, view.cstep) == (3, C, W * H), (view.dims, view.c, view.cstep)
    assert view.data_ptr() + nbytes == guard, "the Mat does not end at the guard page"

    net = ncnn_c.Net()
    net.opt.num_threads = 2
    assert net.load_param(param) == 0 and net.load_model(model) == 0

    def run(m):
        ex = net.create_extractor()
        assert ex.input("data", m) == 0
        ret, out = ex.extract("prob")
        assert ret == 0
        return np.array(out).copy()

    ref = run(ncnn_c.Mat(x))  # numpy, recorded
    assert net._native.plans.built == 1
    got = run(view)  # the plan
    err = float(np.abs(got - ref).max())
    print("max abs error", err)
    sys.exit(0 if err < 1e-5 else 3)
    """
)


@native_only
def test_plan_reads_no_further_than_a_dense_channel_mat():
    """A dense-channel Mat ending at a PROT_NONE page: the plan reads it (in a child, which
    a read past the buffer would kill with SIGSEGV) and gives the numpy path's values."""
    env = dict(os.environ, NCNN_C_NATIVE_PLAN="1")
    p = subprocess.run(
        [sys.executable, "-c", GUARD_CHILD, str(SQUEEZE[0]), str(SQUEEZE[1])],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert p.returncode == 0, f"child exited {p.returncode}\n{p.stdout}\n{p.stderr[-3000:]}"


# -- Vulkan -------------------------------------------------------------------------------------
@pytest.mark.gpu
@pytest.mark.parametrize("path", ["direct", "staging"])
@pytest.mark.parametrize("kind", ["channel", "depth_range"])
def test_upload_of_a_dense_channel_mat(kind, path):
    """VkCompute.record_upload puts each channel at the device layout's channel stride."""
    from ncnn_c.gpu.command import VkCompute
    from ncnn_c.gpu.device import get_gpu_count, get_gpu_device
    from ncnn_c.gpu.vkallocator import VkBlobAllocator
    from ncnn_c.gpu.vkmat import VkMat

    assert get_gpu_count() > 0, "no Vulkan device (lavapipe is installed by ./run.sh)"
    vkdev = get_gpu_device()
    opt = ncnn_c.Option()
    opt.blob_vkallocator = VkBlobAllocator(vkdev, host_visible=path == "direct")
    if path == "direct" and not opt.blob_vkallocator.mappable:
        pytest.skip("device memory is not host visible here")
    x = np.random.default_rng(1).standard_normal((5, 7, 9)).astype(np.float32)
    src = _dense(kind, x)
    cmd = VkCompute(vkdev)
    g = VkMat()
    cmd.record_upload(src, g, opt)
    assert g.cstep == ncnn_c.Mat(9, 7, 5).cstep
    out = ncnn_c.Mat()
    cmd.record_download(g, out, opt)
    assert cmd.submit_and_wait() == 0
    np.testing.assert_array_equal(np.array(out), x)


@pytest.mark.gpu
def test_vulkan_net_reads_a_dense_channel_mat():
    """SqueezeNet on Vulkan (fp32) recorded with an ordinary Mat, then given a dense-channel
    Mat of the same shape: the ordinary Mat's result, the PyPI ncnn's within fp32 tolerance."""
    x = _x()
    net = _net(vulkan=True)
    net.replay_capacity = 0  # every extract uploads through VkCompute.record_upload
    plain = _run(net, ncnn_c.Mat(x))
    dense = _run(net, _dense("channel", x))
    assert_close(dense, plain, 1e-6, "Vulkan: dense-channel Mat vs ordinary Mat")
    assert_close(dense, _oracle(x).reshape(dense.shape), 1e-3, "Vulkan: dense-channel Mat vs PyPI ncnn")


@pytest.mark.gpu
def test_vulkan_replay_reads_a_dense_channel_mat():
    """The same, with replay on: the second extract of the shape replays the first's
    command buffer, writing the new input where the recording's upload wrote its bytes."""
    x = _x()
    net = _net(vulkan=True)
    plain = _run(net, ncnn_c.Mat(x))
    dense = _run(net, _dense("channel", x))  # a replay
    assert_close(dense, plain, 1e-6, "Vulkan replay: dense-channel Mat vs ordinary Mat")
