"""VkCompute: upload/download/clone round trips, record_pipeline dispatches, barriers, timings.

The pipelines here are stand-ins built from GLSL compiled by ``glslangValidator`` with the raw
Vulkan calls, so these tests depend on nothing but the device, memory and command modules.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time

import numpy as np
import pytest

from ncnn_c.gpu import _vk
from ncnn_c.gpu.command import VkCompute
from ncnn_c.gpu.device import get_gpu_count, get_gpu_device
from ncnn_c.gpu.vkallocator import VkBlobAllocator
from ncnn_c.gpu.vkmat import VkMat
from ncnn_c.mat import Mat
from ncnn_c.option import Option

pytestmark = pytest.mark.gpu


@pytest.fixture(scope="module")
def vkdev():
    assert get_gpu_count() > 0, "no Vulkan device (lavapipe is installed by ./run.sh)"
    return get_gpu_device()


@pytest.fixture(params=["direct", "staging"])
def opt(request, vkdev):
    """Both transfer paths: mapped blob memory (unified memory) and staging copies (discrete GPUs)."""
    o = Option()
    if request.param == "staging":
        o.blob_vkallocator = VkBlobAllocator(vkdev, host_visible=False)
        assert not o.blob_vkallocator.mappable
    else:
        o.blob_vkallocator = VkBlobAllocator(vkdev)
        if not o.blob_vkallocator.mappable:
            pytest.skip("device memory is not host visible here")
    return o


# -- stand-in pipeline --------------------------------------------------------------------------------
class StandInPipeline:
    """The attributes VkCompute.record_pipeline reads from a Pipeline, over handles made here."""

    class ShaderInfo:
        def __init__(self, bindings: int, push_constants: int) -> None:
            self.binding_count = bindings
            self.push_constant_count = push_constants

    def __init__(self, vkdev, spirv: bytes, bindings: int, push_constants: int, local=(64, 1, 1)) -> None:
        ffi, lib, dev = _vk.ffi, _vk.lib, vkdev.vk_device
        self.vkdev = vkdev
        self.shader_info = self.ShaderInfo(bindings, push_constants)
        self.local_size_x, self.local_size_y, self.local_size_z = local
        self.vk_descriptor_update_template = None

        code = ffi.new("char[]", spirv)
        smci = ffi.new(
            "VkShaderModuleCreateInfo*",
            {
                "sType": _vk._st("SHADER_MODULE_CREATE_INFO"),
                "codeSize": len(spirv),
                "pCode": ffi.cast("uint32_t*", code),
            },
        )
        out = ffi.new("VkShaderModule*")
        _vk.check(lib.vkCreateShaderModule(dev, smci, ffi.NULL, out), "vkCreateShaderModule")
        self.module = out[0]

        b = ffi.new("VkDescriptorSetLayoutBinding[]", bindings)
        for i in range(bindings):
            b[i].binding = i
            b[i].descriptorType = _vk.DESCRIPTOR_TYPE_STORAGE_BUFFER
            b[i].descriptorCount = 1
            b[i].stageFlags = _vk.SHADER_STAGE_COMPUTE
        dslci = ffi.new(
            "VkDescriptorSetLayoutCreateInfo*",
            {"sType": _vk._st("DESCRIPTOR_SET_LAYOUT_CREATE_INFO"), "bindingCount": bindings, "pBindings": b},
        )
        out = ffi.new("VkDescriptorSetLayout*")
        _vk.check(lib.vkCreateDescriptorSetLayout(dev, dslci, ffi.NULL, out), "vkCreateDescriptorSetLayout")
        self.vk_descriptorset_layout = out[0]

        layouts = ffi.new("VkDescriptorSetLayout[1]", [self.vk_descriptorset_layout])
        pcr = ffi.new(
            "VkPushConstantRange*",
            {"stageFlags": _vk.SHADER_STAGE_COMPUTE, "offset": 0, "size": 4 * push_constants},
        )
        plci = ffi.new(
            "VkPipelineLayoutCreateInfo*",
            {
                "sType": _vk._st("PIPELINE_LAYOUT_CREATE_INFO"),
                "setLayoutCount": 1,
                "pSetLayouts": layouts,
                "pushConstantRangeCount": 1 if push_constants else 0,
                "pPushConstantRanges": pcr,
            },
        )
        out = ffi.new("VkPipelineLayout*")
        _vk.check(lib.vkCreatePipelineLayout(dev, plci, ffi.NULL, out), "vkCreatePipelineLayout")
        self.vk_pipeline_layout = out[0]

        name = ffi.new("char[]", b"main")
        cpci = ffi.new("VkComputePipelineCreateInfo*")
        cpci.sType = _vk._st("COMPUTE_PIPELINE_CREATE_INFO")
        cpci.stage.sType = _vk._st("PIPELINE_SHADER_STAGE_CREATE_INFO")
        cpci.stage.stage = _vk.SHADER_STAGE_COMPUTE
        cpci.stage.module = self.module
        cpci.stage.pName = name
        cpci.layout = self.vk_pipeline_layout
        out = ffi.new("VkPipeline*")
        _vk.check(
            lib.vkCreateComputePipelines(dev, ffi.NULL, 1, cpci, ffi.NULL, out), "vkCreateComputePipelines"
        )
        self.vk_pipeline = out[0]

    def destroy(self) -> None:
        ffi, lib, dev = _vk.ffi, _vk.lib, self.vkdev.vk_device
        lib.vkDestroyPipeline(dev, self.vk_pipeline, ffi.NULL)
        lib.vkDestroyPipelineLayout(dev, self.vk_pipeline_layout, ffi.NULL)
        lib.vkDestroyDescriptorSetLayout(dev, self.vk_descriptorset_layout, ffi.NULL)
        lib.vkDestroyShaderModule(dev, self.module, ffi.NULL)


def compile_glsl(tmp_path, name: str, source: str) -> bytes:
    assert shutil.which("glslangValidator"), "glslangValidator (glslang-tools) not installed"
    src = tmp_path / f"{name}.comp"
    src.write_text(source)
    spv = tmp_path / f"{name}.spv"
    r = subprocess.run(["glslangValidator", "-V", str(src), "-o", str(spv)], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    return spv.read_bytes()


ADD_SHADER = """#version 450
layout (local_size_x = 64) in;
layout (binding = 0) buffer data_blob { float data[]; };
layout (push_constant) uniform parameter { int n; float v; } p;
void main() {
    int i = int(gl_GlobalInvocationID.x);
    if (i >= p.n) return;
    data[i] = data[i] + p.v;
}
"""

# b = a * s (reads a, writes b): chained after ADD_SHADER on b to check the barrier
SCALE_SHADER = """#version 450
layout (local_size_x = 64) in;
layout (binding = 0) readonly buffer a_blob { float a[]; };
layout (binding = 1) writeonly buffer b_blob { float b[]; };
layout (push_constant) uniform parameter { int n; float s; } p;
void main() {
    int i = int(gl_GlobalInvocationID.x);
    if (i >= p.n) return;
    b[i] = a[i] * p.s;
}
"""

# writes its invocation id at ncnn's layout position: checks the (w, h*d, c) grid and cstep
INDEX_SHADER = """#version 450
layout (local_size_x = 4, local_size_y = 2, local_size_z = 2) in;
layout (binding = 0) writeonly buffer out_blob { float o[]; };
layout (push_constant) uniform parameter { int w; int hd; int c; int cstep; } p;
void main() {
    int x = int(gl_GlobalInvocationID.x);
    int y = int(gl_GlobalInvocationID.y);
    int z = int(gl_GlobalInvocationID.z);
    if (x >= p.w || y >= p.hd || z >= p.c) return;
    o[z * p.cstep + y * p.w + x] = float(x + 100 * y + 10000 * z);
}
"""


@pytest.fixture(scope="module")
def pipelines(vkdev, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("spv")
    made = {
        "add": StandInPipeline(vkdev, compile_glsl(tmp, "add", ADD_SHADER), 1, 2),
        "scale": StandInPipeline(vkdev, compile_glsl(tmp, "scale", SCALE_SHADER), 2, 2),
        "index": StandInPipeline(vkdev, compile_glsl(tmp, "index", INDEX_SHADER), 1, 4, local=(4, 2, 2)),
    }
    yield made
    for p in made.values():
        p.destroy()


def _random(shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


# -- transfers -------------------------------------------------------------------------------------
@pytest.mark.parametrize("shape", [(7,), (5, 3), (3, 5, 7), (2, 3, 5, 7), (1, 1, 1), (13,)])
def test_upload_download_round_trip(vkdev, opt, shape):
    a = _random(shape)
    cmd = VkCompute(vkdev)
    src = Mat(a)  # wraps a: a single channel ends unpadded (cstep w*h*d), the VkMat is padded
    g = VkMat()
    cmd.record_upload(src, g, opt)
    assert (g.dims, g.w, g.h, g.d, g.c) == (src.dims, src.w, src.h, src.d, src.c)
    assert g.cstep == Mat(*reversed(shape)).cstep
    out = Mat()
    cmd.record_download(g, out, opt)
    assert cmd.submit_and_wait() == 0
    np.testing.assert_array_equal(np.array(out), a)
    assert out.cstep == g.cstep


def test_record_clone(vkdev, opt):
    a = _random((4, 6, 9))
    cmd = VkCompute(vkdev)
    g, g2 = VkMat(), VkMat()
    cmd.record_clone(Mat(a), g, opt)  # Mat -> VkMat is an upload
    cmd.record_clone(g, g2, opt)
    assert g2.buffer_offset() != g.buffer_offset() or g2.buffer() != g.buffer()
    out = Mat()
    cmd.record_clone(g2, out, opt)  # VkMat -> Mat is a download
    assert cmd.submit_and_wait() == 0
    np.testing.assert_array_equal(np.array(out), a)


def test_empty_mat_upload(vkdev):
    cmd = VkCompute(vkdev)
    g = VkMat()
    cmd.record_upload(Mat(), g, Option())
    assert g.empty()
    assert cmd.submit_and_wait() == 0


def test_zero_size_mat_upload_and_download(vkdev):
    """A shaped Mat with no elements (Mat(0): dims 1, no data) moves without touching memory."""
    cmd = VkCompute(vkdev)
    g, back = VkMat(), Mat()
    cmd.record_upload(Mat(0), g, Option())
    cmd.record_download(g, back, Option())
    assert cmd.submit_and_wait() == 0
    assert back.total() == 0


# -- dispatch ----------------------------------------------------------------------------------------
def test_dispatch_add_push_constants(vkdev, opt, pipelines):
    n = 1000  # not a multiple of the local size
    a = _random((n,))
    cmd = VkCompute(vkdev)
    g = VkMat()
    cmd.record_upload(Mat(a), g, opt)
    cmd.record_pipeline(pipelines["add"], [g], [n, 1.0], g)
    cmd.record_pipeline(pipelines["add"], [g], [np.int32(n), np.float32(0.5)], (n, 1, 1))
    out = Mat()
    cmd.record_download(g, out, opt)
    assert cmd.submit_and_wait() == 0
    np.testing.assert_allclose(np.array(out), a + 1.5, rtol=0, atol=1e-6)


def test_chained_dispatches_see_previous_writes(vkdev, opt, pipelines):
    n = 4099
    a = _random((n,), seed=3)
    cmd = VkCompute(vkdev)
    ga, gb, gc = VkMat(), VkMat(n, allocator=opt.blob_vkallocator), VkMat(n, allocator=opt.blob_vkallocator)
    cmd.record_upload(Mat(a), ga, opt)
    # each step reads what the previous one wrote; a missing barrier shows up as stale values
    cmd.record_pipeline(pipelines["scale"], [ga, gb], [n, 2.0], gb)
    cmd.record_pipeline(pipelines["add"], [gb], [n, 1.0], gb)
    cmd.record_pipeline(pipelines["scale"], [gb, gc], [n, 3.0], gc)
    cmd.record_pipeline(pipelines["scale"], [gc, ga], [n, 0.5], ga)  # write-after-read of ga
    out_a, out_c = Mat(), Mat()
    cmd.record_download(ga, out_a, opt)
    cmd.record_download(gc, out_c, opt)
    assert cmd.submit_and_wait() == 0
    expect_c = (a * 2 + 1) * 3
    np.testing.assert_allclose(np.array(out_c), expect_c, rtol=1e-6)
    np.testing.assert_allclose(np.array(out_a), expect_c * 0.5, rtol=1e-6)


def test_dispatcher_grid_is_w_hd_c(vkdev, opt, pipelines):
    cmd = VkCompute(vkdev)
    g = VkMat(5, 3, 2, 3, allocator=opt.blob_vkallocator)  # w=5 h=3 d=2 c=3 -> grid (5, 6, 3)
    cmd.record_pipeline(pipelines["index"], [g], [g.w, g.h * g.d, g.c, g.cstep], g)
    out = Mat()
    cmd.record_download(g, out, opt)
    assert cmd.submit_and_wait() == 0
    got = np.array(out).reshape(3, 6, 5)
    z, y, x = np.meshgrid(np.arange(3), np.arange(6), np.arange(5), indexing="ij")
    np.testing.assert_array_equal(got, (x + 100 * y + 10000 * z).astype(np.float32))


def test_many_dispatches_and_reuse(vkdev, pipelines):
    """More descriptor sets than one pool holds, then the same VkCompute again after submit."""
    opt = Option()
    n = 100
    cmd = VkCompute(vkdev)
    for rnd in range(2):
        g = VkMat()
        cmd.record_upload(Mat(np.zeros(n, np.float32)), g, opt)
        for _ in range(300):
            cmd.record_pipeline(pipelines["add"], [g], [n, 1.0], g)
        out = Mat()
        cmd.record_download(g, out, opt)
        assert cmd.submit_and_wait() == 0, rnd
        np.testing.assert_array_equal(np.array(out), np.full(n, 300, np.float32))


def test_bad_binding_count_rejected(vkdev, pipelines):
    cmd = VkCompute(vkdev)
    g = VkMat(4, allocator=vkdev.default_blob_allocator)
    with pytest.raises(ValueError):
        cmd.record_pipeline(pipelines["scale"], [g], [4, 1.0], g)
    with pytest.raises(ValueError):
        cmd.record_pipeline(pipelines["add"], [g], [4], g)
    with pytest.raises(TypeError):
        cmd.record_pipeline(pipelines["add"], [g], [4, "x"], g)
    assert cmd.reset() == 0


def test_empty_binding_uses_dummy_buffer(vkdev, pipelines):
    cmd = VkCompute(vkdev)
    cmd.record_pipeline(pipelines["add"], [VkMat()], [0, 1.0], (1, 1, 1))
    assert cmd.submit_and_wait() == 0


def test_buffers_held_until_submit(vkdev, pipelines):
    a = VkBlobAllocator(vkdev)
    opt = Option()
    opt.blob_vkallocator = a
    cmd = VkCompute(vkdev)
    g = VkMat()
    cmd.record_upload(Mat(np.ones(64, np.float32)), g, opt)
    cmd.record_pipeline(pipelines["add"], [g], [64, 1.0], g)
    del g
    assert a.stats()["used"] > 0  # the recorded command still needs it
    assert cmd.submit_and_wait() == 0
    assert a.stats()["used"] == 0


# -- timings (reported, loosely bounded) ----------------------------------------------------------------
def _best(fn, reps=20) -> float:
    best = float("inf")
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


@pytest.mark.slow
def test_timings(vkdev, opt, pipelines, capsys):
    cmd = VkCompute(vkdev)
    src = Mat(_random((3, 227, 227)))

    def empty():
        assert cmd.submit_and_wait() == 0

    def one_dispatch():
        cmd.record_pipeline(pipelines["add"], [VkMat()], [0, 1.0], (1, 1, 1))
        assert cmd.submit_and_wait() == 0

    def round_trip():
        g, out = VkMat(), Mat()
        cmd.record_upload(src, g, opt)
        cmd.record_download(g, out, opt)
        assert cmd.submit_and_wait() == 0

    g = VkMat()
    cmd.record_upload(src, g, opt)
    cmd.submit_and_wait()

    def record_only():
        cmd.record_pipeline(pipelines["add"], [g], [10, 1.0], g)

    t_empty = _best(empty)
    t_one = _best(one_dispatch)
    t_rt = _best(round_trip)
    t_rec = _best(record_only, reps=200)
    cmd.reset()
    with capsys.disabled():
        print(
            f"\n[{opt.blob_vkallocator.mappable and 'direct' or 'staging'}] empty submit_and_wait "
            f"{t_empty * 1e6:.1f} us, 1-dispatch submit {t_one * 1e6:.1f} us, "
            f"record_pipeline {t_rec * 1e6:.1f} us, 227x227x3 upload+download {t_rt * 1e3:.2f} ms"
        )
    # numbers only: performance targets live in benchmarks, not in unit tests


# -- synchronisation, checked by the Khronos validation layer -------------------------------------------
VALIDATION_LAYER = "/usr/share/vulkan/explicit_layer.d/VkLayer_khronos_validation.json"


def _pytest_under_sync_validation(select: str, drop_barriers: bool) -> str:
    import sys

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    code = (
        "import sys, pytest\n"
        "import ncnn_c.gpu.command as c\n"
        + ("c.VkCompute._sync = lambda self, stage, access: None\n" if drop_barriers else "")
        + f"sys.exit(pytest.main(['-q', '-s', '-p', 'no:cacheprovider', {__file__!r}, '-k', {select!r}]))\n"
    )
    env = dict(
        os.environ,
        PYTHONPATH=os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")])),
        NCNN_C_VALIDATION="1",
        VK_LAYER_ENABLES="VK_VALIDATION_FEATURE_ENABLE_SYNCHRONIZATION_VALIDATION_EXT",
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    return r.stdout + r.stderr


def test_no_sync_hazards_under_validation():
    assert os.path.exists(VALIDATION_LAYER), "vulkan-validationlayers not installed"
    select = "chained or round_trip or clone or grid or dispatch_add"
    out = _pytest_under_sync_validation(select, drop_barriers=False)
    assert "passed" in out and "failed" not in out, out[-3000:]
    assert "SYNC-HAZARD" not in out and "Validation Error" not in out, out[-3000:]
    # the layer does catch what a missing barrier would break (so the check above means something)
    broken = _pytest_under_sync_validation("chained", drop_barriers=True)
    assert "SYNC-HAZARD-READ-AFTER-WRITE" in broken, broken[-3000:]


def test_threads_share_device_and_queue(vkdev, pipelines):
    """Each thread records into its own VkCompute; submits share the device's queue (locked)."""
    import threading

    errors = []

    def work(seed: int) -> None:
        try:
            assert get_gpu_device(vkdev.device_index) is vkdev
            cmd = VkCompute(vkdev)
            a = _random((257,), seed=seed)
            for _ in range(10):
                g, out = VkMat(), Mat()
                cmd.record_upload(Mat(a), g, Option())
                cmd.record_pipeline(pipelines["add"], [g], [257, float(seed)], g)
                cmd.record_download(g, out, Option())
                assert cmd.submit_and_wait() == 0
                np.testing.assert_allclose(np.array(out), a + seed, rtol=1e-6)
        except Exception as e:  # reported by the main thread
            errors.append(e)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors, errors
