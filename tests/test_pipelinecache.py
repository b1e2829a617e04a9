"""PipelineCache (seed 000): artifact reuse, SPIR-V cache, driver cache, save/load, strict rejection."""

from __future__ import annotations

import io
import pathlib
import struct
import time
import types

import pytest
from glsl_samples import SCALE

from ncnn_c.gpu import _vk_pipeline, cachefile, compiler
from ncnn_c.gpu.pipeline import Pipeline
from ncnn_c.gpu.pipelinecache import PipelineCache, default_cache
from ncnn_c.option import Option

pytestmark = pytest.mark.gpu


ADD = """#version 450
layout (constant_id = 0) const float bias = 0;
layout (constant_id = 1) const int n = 0;
layout (local_size_x_id = 233, local_size_y_id = 234, local_size_z_id = 235) in;
layout (binding = 0) readonly buffer a_blob { sfp a[]; };
layout (binding = 1) writeonly buffer b_blob { sfp b[]; };
layout (push_constant) uniform parameter { int w; int h; } p;
void main()
{
    int i = int(gl_GlobalInvocationID.x);
    if (i >= n)
        return;
    buffer_st1(b, i, buffer_ld1(a, i) + afp(bias));
}
"""


def fp32_option(cache=None) -> Option:
    opt = Option()
    opt.use_fp16_packed = opt.use_fp16_storage = opt.use_fp16_arithmetic = False
    opt.use_int8_storage = opt.use_int8_arithmetic = False
    opt.pipeline_cache = cache
    return opt


@pytest.fixture(scope="module")
def vkdev():
    from ncnn_c.gpu import device

    assert device.get_gpu_count() > 0, "no Vulkan device (lavapipe is installed by ./run.sh)"
    return device.get_gpu_device(0)


@pytest.fixture
def shaders(tmp_path):
    (tmp_path / "add.comp").write_text(ADD)
    (tmp_path / "scale.comp").write_text(SCALE)
    compiler.set_shader_dir(tmp_path)
    yield tmp_path
    compiler.set_shader_dir(None)


@pytest.fixture
def cache(vkdev):
    c = PipelineCache(vkdev)
    yield c
    c.destroy()


class _InfoOverride:
    """GpuInfo of a real device with some attributes replaced (the real one is shared)."""

    def __init__(self, info, **overrides) -> None:
        self._info = info
        self.__dict__.update(overrides)

    def __getattr__(self, name):
        return getattr(self._info, name)


def device_with(vkdev, **overrides):
    return types.SimpleNamespace(
        info=_InfoOverride(vkdev.info, **overrides),
        device_index=vkdev.device_index,
        vk_instance=vkdev.vk_instance,
        vk_physical_device=vkdev.vk_physical_device,
        vk_device=vkdev.vk_device,
    )


def make(vkdev, shader, opt, spec, local=(64, 1, 1)) -> Pipeline:
    p = Pipeline(vkdev)
    p.set_local_size_xyz(*local)
    assert p.create(shader, opt, spec) == 0
    return p


def handle(h) -> int:
    return _vk_pipeline.handle_int(h)


# -- Pipeline ----------------------------------------------------------------------------------


def test_pipeline_create_sets_the_handles(vkdev, shaders, cache):
    p = Pipeline(vkdev)
    p.set_optimal_local_size_xyz(1000, 1, 1)
    assert p.local_size_x * p.local_size_y * p.local_size_z <= 256
    t0 = time.perf_counter()
    assert p.create("scale", fp32_option(cache), [2.0]) == 0
    print(f"cold Pipeline.create (compile + objects) {(time.perf_counter() - t0) * 1e3:.1f} ms")
    for name in (
        "vk_pipeline",
        "vk_pipeline_layout",
        "vk_descriptorset_layout",
        "vk_descriptor_update_template",
    ):
        assert handle(getattr(p, name)) != 0, name
    assert (p.shader_info.binding_count, p.shader_info.push_constant_count) == (1, 1)
    p.destroy()
    assert p.vk_pipeline is None
    assert cache.size() == 1  # the cache, not the Pipeline, owns the objects


def test_pipeline_dispatch(vkdev, shaders, cache):
    import numpy as np

    from ncnn_c.gpu import command
    from ncnn_c.gpu.vkmat import VkMat
    from ncnn_c.mat import Mat

    opt = fp32_option(cache)
    p = Pipeline(vkdev)
    p.set_optimal_local_size_xyz(100, 1, 1)
    assert p.create("scale", opt, [3.0]) == 0
    x = np.arange(100, dtype=np.float32)
    cmd = command.VkCompute(vkdev)
    g = VkMat()
    cmd.record_upload(Mat(x), g, opt)
    cmd.record_pipeline(p, [g], [100], g)
    out = Mat()
    cmd.record_download(g, out, opt)
    assert cmd.submit_and_wait() == 0
    np.testing.assert_allclose(np.array(out).reshape(-1), 3 * x)
    cmd.destroy()


def test_default_cache_when_option_has_none(vkdev, shaders):
    opt = fp32_option(None)
    p1 = make(vkdev, "scale", opt, [5.0])
    p2 = make(vkdev, "scale", opt, [5.0])
    assert handle(p1.vk_pipeline) == handle(p2.vk_pipeline)
    assert p1.pipeline_cache is default_cache(vkdev)
    default_cache(vkdev).clear()


# -- live artifacts -------------------------------------------------------------------------------


def test_artifact_reuse_and_specialization_change(vkdev, shaders, cache):
    opt = fp32_option(cache)
    p1 = make(vkdev, "add", opt, [1.0, 16])
    t0 = time.perf_counter()
    p2 = make(vkdev, "add", opt, [1.0, 16])
    hit_ms = (time.perf_counter() - t0) * 1e3
    assert handle(p1.vk_pipeline) == handle(p2.vk_pipeline)
    s = cache.stats()
    assert (s["artifact_hits"], s["pipelines_created"], s["compiled"]) == (1, 1, 1)
    assert cache.size() == 1

    p3 = make(vkdev, "add", opt, [2.0, 16])
    assert handle(p3.vk_pipeline) != handle(p1.vk_pipeline)
    s = cache.stats()
    assert (s["compiled"], s["spirv_hits"], s["pipelines_created"]) == (1, 1, 2)
    # local size is part of the key too
    p4 = make(vkdev, "add", opt, [2.0, 16], local=(32, 1, 1))
    assert handle(p4.vk_pipeline) != handle(p3.vk_pipeline)
    assert cache.size() == 3
    print(f"artifact hit {hit_ms:.3f} ms")


def test_int_and_float_specializations_differ(vkdev, shaders, cache):
    opt = fp32_option(cache)
    a = make(vkdev, "add", opt, [1, 16])  # int 1 and float 1.0 have different bits
    b = make(vkdev, "add", opt, [1.0, 16])
    assert handle(a.vk_pipeline) != handle(b.vk_pipeline)


def test_wrong_specialization_count_leaks_nothing(vkdev, shaders, cache):
    opt = fp32_option(cache)
    make(vkdev, "add", opt, [1.0, 8])
    p = Pipeline(vkdev)
    assert p.create("add", opt, [1.0]) != 0
    assert p.create("add", opt, [1.0, 8, 3]) != 0
    assert p.vk_pipeline is None
    assert cache.size() == 1


def test_failure_rolls_back_in_reverse_order(vkdev, shaders, cache, monkeypatch):
    from ncnn_c.gpu._vk import VulkanError

    events = []
    for name in ("shader_module", "descriptor_set_layout", "pipeline_layout"):
        real_destroy = getattr(_vk_pipeline, "destroy_" + name)

        def destroy(dev, h, _real=real_destroy, _name=name):
            events.append(_name)
            _real(dev, h)

        monkeypatch.setattr(_vk_pipeline, "destroy_" + name, destroy)

    def failing_pipeline(*a, **k):
        raise VulkanError(-3, "vkCreateComputePipelines")

    monkeypatch.setattr(_vk_pipeline, "create_compute_pipeline", failing_pipeline)
    p = Pipeline(vkdev)
    assert p.create("add", fp32_option(cache), [1.0, 8]) != 0
    assert events == ["pipeline_layout", "descriptor_set_layout", "shader_module"]
    assert cache.size() == 0


def test_clear_destroys_in_seed_order_and_size(vkdev, shaders, cache, monkeypatch):
    opt = fp32_option(cache)
    make(vkdev, "add", opt, [1.0, 8])
    make(vkdev, "scale", opt, [1.0])
    assert cache.size() == 2
    events = []
    for name in (
        "descriptor_update_template",
        "pipeline",
        "pipeline_layout",
        "descriptor_set_layout",
        "shader_module",
    ):
        real_destroy = getattr(_vk_pipeline, "destroy_" + name)

        def destroy(dev, h, _real=real_destroy, _name=name):
            events.append(_name)
            _real(dev, h)

        monkeypatch.setattr(_vk_pipeline, "destroy_" + name, destroy)
    cache.clear()
    order = [
        "descriptor_update_template",
        "pipeline",
        "pipeline_layout",
        "descriptor_set_layout",
        "shader_module",
    ]
    assert events == order * 2
    assert cache.size() == 0
    assert cache.stats()["spirv_entries"] == 2  # clear keeps SPIR-V and the driver cache
    make(vkdev, "scale", opt, [1.0])
    assert cache.stats()["compiled"] == 2  # no recompilation after clear
    monkeypatch.undo()
    with PipelineCache(vkdev) as c2:
        make(vkdev, "scale", fp32_option(c2), [1.0])
        assert c2.size() == 1
    assert c2.size() == 0
    c2.destroy()  # idempotent


def test_bug_flag_disables_artifact_reuse(vkdev, shaders):
    dev = device_with(vkdev, bug_corrupted_online_pipeline_cache=True)
    with PipelineCache(dev) as c:
        opt = fp32_option(c)
        p1 = make(dev, "add", opt, [1.0, 8])
        p2 = make(dev, "add", opt, [1.0, 8])
        assert handle(p1.vk_pipeline) != handle(p2.vk_pipeline)
        s = c.stats()
        assert (s["artifact_hits"], s["pipelines_created"], c.size()) == (0, 2, 2)
        data = bytearray()
        assert c.save_cache(data) == 0
        assert c.stats()["driver_blob_bytes"] == 0


# -- SPIR-V cache and raw SPIR-V -----------------------------------------------------------------------


def test_raw_spirv_uses_live_cache_but_not_the_spirv_section(vkdev, shaders, cache):
    spirv = compiler.compile_shader("add", fp32_option(), vkdev)
    opt = fp32_option(cache)
    p1, p2 = Pipeline(vkdev), Pipeline(vkdev)
    assert p1.create_spirv(spirv, opt, [1.0, 8]) == 0
    words = struct.unpack(f"<{len(spirv) // 4}I", spirv)
    assert p2.create_spirv(words, opt, [1.0, 8]) == 0
    assert handle(p1.vk_pipeline) == handle(p2.vk_pipeline)
    s = cache.stats()
    assert (s["artifact_hits"], s["compiled"], s["spirv_entries"]) == (1, 0, 0)
    data = bytearray()
    assert cache.save_cache(data) == 0
    entries, _ = cachefile.decode(
        bytes(data),
        cachefile.identity_of(vkdev.info, _ncnn_version()),
        compiler.shader_source_hash,
        lambda s: s,
    )
    assert entries == []
    # the builtin path with the same shader still compiles: raw SPIR-V has no registry key
    assert Pipeline(vkdev).create("add", opt, [1.0, 8]) == 0
    assert cache.stats()["compiled"] == 1


def test_device_index_mismatch_bypasses_spirv_cache(vkdev, shaders, cache):
    opt = fp32_option(cache)
    make(vkdev, "scale", opt, [1.0])
    other = fp32_option(cache)
    other.vulkan_device_index = vkdev.device_index + 1
    assert not cache.can_cache_spirv(other)
    make(vkdev, "scale", other, [2.0])
    s = cache.stats()
    assert (s["compiled"], s["spirv_hits"], s["spirv_entries"]) == (2, 0, 1)
    same = fp32_option(cache)
    same.vulkan_device_index = vkdev.device_index
    make(vkdev, "scale", same, [3.0])
    assert cache.stats()["spirv_hits"] == 1


# -- save / load ---------------------------------------------------------------------------------


def _ncnn_version() -> int:
    from ncnn_c.gpu.pipelinecache import NCNN_VERSION

    return NCNN_VERSION


def _warm(cache, vkdev) -> bytes:
    opt = fp32_option(cache)
    make(vkdev, "add", opt, [1.0, 8])
    make(vkdev, "add", opt, [2.0, 8])
    make(vkdev, "scale", opt, [1.0])
    data = bytearray()
    t0 = time.perf_counter()
    assert cache.save_cache(data) == 0
    print(
        f"save {len(data)} bytes in {(time.perf_counter() - t0) * 1e3:.2f} ms, blob {cache.stats()['driver_blob_bytes']}"
    )
    return bytes(data)


def _check_warm_start(vkdev, loaded: PipelineCache) -> None:
    s = loaded.stats()
    assert s["loaded_spirv_entries"] == 2 and s["spirv_entries"] == 2
    opt = fp32_option(loaded)
    t0 = time.perf_counter()
    make(vkdev, "add", opt, [1.0, 8])
    make(vkdev, "scale", opt, [1.0])
    print(f"warm create of 2 pipelines {(time.perf_counter() - t0) * 1e3:.2f} ms")
    s = loaded.stats()
    assert s["compiled"] == 0
    assert s["spirv_hits"] == 2


def test_round_trip_in_memory(vkdev, shaders, cache):
    data = _warm(cache, vkdev)
    with PipelineCache(vkdev) as c2:
        t0 = time.perf_counter()
        assert c2.load_cache(data) == 0
        print(f"load {len(data)} bytes in {(time.perf_counter() - t0) * 1e3:.2f} ms")
        _check_warm_start(vkdev, c2)
    for view in (bytearray(data), memoryview(data)):
        with PipelineCache(vkdev) as c3:
            assert c3.load_cache(view) == 0


def test_round_trip_through_a_path(vkdev, shaders, cache, tmp_path):
    _warm(cache, vkdev)
    path = tmp_path / "model.ncnn.vkcache"
    assert cache.save_cache(str(path)) == 0
    assert cache.save_cache(path) == 0  # PathLike, replaces atomically
    assert not list(tmp_path.glob("*.tmp.*"))
    with PipelineCache(vkdev) as c2:
        assert c2.load_cache(path) == 0
        _check_warm_start(vkdev, c2)
    with PipelineCache(vkdev) as c3:
        assert c3.load_cache(str(tmp_path / "missing.vkcache")) != 0
        assert "missing.vkcache" in c3.stats()["last_load_error"]


def test_a_path_given_as_bytes_is_read_as_a_path(vkdev, shaders, cache, tmp_path):
    _warm(cache, vkdev)
    path = tmp_path / "model.ncnn.vkcache"
    assert cache.save_cache(str(path)) == 0
    with PipelineCache(vkdev) as c2:
        assert c2.load_cache(bytes(path)) == 0, c2.last_error
        _check_warm_start(vkdev, c2)
    with PipelineCache(vkdev) as c3:
        # bytes naming nothing stay cache data, and are rejected as such
        assert c3.load_cache(bytes(tmp_path / "nothing.vkcache")) != 0
        assert "magic" in c3.last_error or "128" in c3.last_error, c3.last_error


def test_saving_a_destroyed_cache_fails(vkdev, shaders, tmp_path, caplog):
    c = PipelineCache(vkdev)
    _warm(c, vkdev)
    c.destroy()
    buf = bytearray()
    assert c.save_cache(buf) != 0 and not buf
    assert c.save_cache(str(tmp_path / "x.vkcache")) != 0
    assert not (tmp_path / "x.vkcache").exists()
    assert "destroyed" in caplog.text


def test_missing_file_is_a_miss_logged_at_info_and_reason_readable(vkdev, tmp_path, caplog):
    import logging

    caplog.set_level(logging.INFO, logger="ncnn_c")
    with PipelineCache(vkdev) as c:
        assert c.load_cache(tmp_path / "none.vkcache") != 0
        assert "none.vkcache" in c.last_error and "no such file" in c.last_error
        recs = [r for r in caplog.records if "none.vkcache" in r.getMessage()]
        assert recs and all(r.levelno == logging.INFO for r in recs)
        caplog.clear()
        assert c.load_cache(b"garbage") != 0  # a rejection is a miss too: one INFO line with its reason
        assert "128" in c.last_error or "short" in c.last_error, c.last_error
        recs = [r for r in caplog.records if "rejected" in r.getMessage()]
        assert len(recs) == 1 and recs[0].levelno == logging.INFO and c.last_error in recs[0].getMessage()


def test_round_trip_through_a_file_object(vkdev, shaders, cache):
    _warm(cache, vkdev)
    f = io.BytesIO()
    assert cache.save_cache(f) == 0
    f.seek(0)
    with PipelineCache(vkdev) as c2:
        assert c2.load_cache(f) == 0
        _check_warm_start(vkdev, c2)


def test_changed_shader_source_invalidates_only_its_entries(vkdev, shaders, cache, caplog):
    data = _warm(cache, vkdev)
    (shaders / "scale.comp").write_text(SCALE.replace("* afp(scale)", "* afp(scale) * afp(1.0)"))
    compiler.set_shader_dir(shaders)  # a new process would see the new file
    with PipelineCache(vkdev) as c2:
        assert c2.load_cache(data) == 0
        s = c2.stats()
        assert (s["loaded_spirv_entries"], s["stale_spirv_entries"]) == (1, 1)
        assert "stale" in caplog.text and "dropped a SPIR-V entry" in caplog.text
        opt = fp32_option(c2)
        make(vkdev, "add", opt, [1.0, 8])
        assert c2.stats()["compiled"] == 0  # the untouched shader still comes from the file
        make(vkdev, "scale", opt, [1.0])
        assert c2.stats()["compiled"] == 1  # only the edited one compiles again
        fresh = bytearray()
        assert c2.save_cache(fresh) == 0
    # the old cache still holds the stale 'scale' entry; it recompiles instead of using it
    before = cache.stats()["compiled"]
    make(vkdev, "scale", fp32_option(cache), [7.0])
    assert cache.stats()["compiled"] == before + 1
    with PipelineCache(vkdev) as c3:
        assert c3.load_cache(fresh) == 0


def test_removed_shader_drops_its_entries(vkdev, shaders, cache):
    data = _warm(cache, vkdev)
    (shaders / "scale.comp").unlink()
    compiler.set_shader_dir(shaders)
    with PipelineCache(vkdev) as c2:
        assert c2.load_cache(data) == 0
        assert c2.stats()["stale_spirv_entries"] == 1
        make(vkdev, "add", fp32_option(c2), [1.0, 8])
        assert c2.stats()["compiled"] == 0


@pytest.mark.parametrize("new_name", ["aaa_first", "middle_m", "zzz_last"])
def test_added_shader_keeps_every_other_entry(vkdev, shaders, cache, new_name):
    # a release that adds a shader (sorted before, between or after the others) must not turn
    # the warm start of every other shader cold: entries are keyed by name, not by position
    data = _warm(cache, vkdev)
    (shaders / f"{new_name}.comp").write_text(ADD)
    compiler.set_shader_dir(shaders)
    with PipelineCache(vkdev) as c2:
        assert c2.load_cache(data) == 0
        s = c2.stats()
        assert (s["loaded_spirv_entries"], s["stale_spirv_entries"]) == (2, 0)
        opt = fp32_option(c2)
        make(vkdev, "add", opt, [1.0, 8])
        make(vkdev, "scale", opt, [1.0])
        assert c2.stats()["compiled"] == 0


def test_shader_ids_are_stable_names():
    from ncnn_c.gpu.cachefile import fnv1a32

    for i, name in enumerate(compiler.shader_names()):
        assert compiler.shader_id(i) == fnv1a32(name.encode())
        assert compiler.index_of_shader_id(compiler.shader_id(i)) == i
    assert compiler.index_of_shader_id(12345) == -1


@pytest.mark.parametrize("where", ["first", "last", "middle"])
def test_flipped_byte_is_rejected_and_cache_unchanged(vkdev, shaders, cache, where):
    original = _warm(cache, vkdev)
    data = bytearray(original)
    pos = {"first": 0, "last": len(data) - 1, "middle": len(data) // 2}[where]
    data[pos] ^= 0xFF
    before_stats = cache.stats()
    before_size = cache.size()
    assert cache.load_cache(bytes(data)) != 0
    after = cache.stats()
    assert after["last_load_error"]
    after["last_load_error"] = before_stats["last_load_error"]
    assert after == before_stats
    assert cache.size() == before_size
    again = bytearray()
    assert cache.save_cache(again) == 0
    assert bytes(again) == original


def test_other_device_identity_is_rejected(vkdev, shaders, cache):
    data = _warm(cache, vkdev)
    other = device_with(vkdev, driver_version=vkdev.info.driver_version + 1)
    c2 = PipelineCache(other)
    try:
        assert c2.load_cache(data) != 0
        assert "driver_version" in c2.stats()["last_load_error"]
    finally:
        c2.destroy()


def test_garbage_inputs_are_rejected(vkdev, cache):
    for bad in (b"", b"\x00" * 64, b"not a cache" * 100, 12345, io.StringIO("text")):
        assert cache.load_cache(bad) != 0
    assert cache.save_cache(12345) != 0


def test_cache_of_another_device_is_refused(vkdev, shaders, cache):
    other = device_with(vkdev)
    other.vk_device = None
    p = Pipeline(other)
    assert p.create("scale", fp32_option(cache), [1.0]) != 0
    assert cache.size() == 0


def test_concurrent_requests_share_one_artifact(vkdev, shaders, cache):
    import threading

    opt = fp32_option(cache)
    handles, errors = [], []

    def worker():
        try:
            handles.append(handle(make(vkdev, "add", opt, [4.0, 8]).vk_pipeline))
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert len(set(handles)) == 1
    s = cache.stats()
    assert (s["compiled"], s["pipelines_created"], s["artifact_hits"]) == (1, 1, 7)


def test_create_destroy_loop_does_not_grow_the_device(vkdev):
    # each cache hooks itself onto its device; destroy (or garbage collection) must unhook it
    import gc

    gc.collect()  # caches of earlier tests that only the cycle collector frees
    before = len(vkdev._destroy_hooks)
    for _ in range(200):
        PipelineCache(vkdev).destroy()
    for _ in range(200):
        PipelineCache(vkdev)  # dropped at once: __del__ destroys it
    gc.collect()
    assert len(vkdev._destroy_hooks) == before


FORK_CHILD = r"""
import os, sys, numpy as np
import ncnn_c as ncnn
net = ncnn.Net()
net.opt.use_vulkan_compute = True
assert net.load_param(sys.argv[1]) == 0 and net.load_model(sys.argv[2]) == 0
x = ncnn.Mat(np.random.rand(3, 227, 227).astype(np.float32))
ex = net.create_extractor(); ex.input("data", x)
assert ex.extract("prob")[0] == 0
pid = os.fork()
if pid == 0:
    ex = net.create_extractor(); ex.input("data", x)
    ret, _ = ex.extract("prob")
    buf = bytearray()
    saved = net.opt.pipeline_cache.save_cache(buf)
    assert saved != 0 or len(buf) > 128
    print("CHILD", ret, saved, ncnn.get_gpu_count(), flush=True)
    sys.exit(0)  # atexit teardown must not hang either
_, status = os.waitpid(pid, 0)
print("PARENT", os.waitstatus_to_exitcode(status), ex.extract("prob")[0], flush=True)
"""


def test_fork_child_gets_a_clear_error_not_a_hang(tmp_path):
    import subprocess
    import sys

    script = tmp_path / "fork_child.py"
    script.write_text(FORK_CHILD)
    models = pathlib.Path(__file__).resolve().parents[1] / "models"
    r = subprocess.run(
        [
            sys.executable,
            str(script),
            str(models / "squeezenet_v1.1.param"),
            str(models / "squeezenet_v1.1.bin"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert r.returncode == 0, r.stderr
    # in the child: extract fails (-1) saying why, the cache still saves its bytes, no GPU is offered
    assert "CHILD -1 0 0" in r.stdout, r.stdout + r.stderr
    assert "forked" in r.stderr
    assert "PARENT 0 0" in r.stdout  # the parent goes on untouched
