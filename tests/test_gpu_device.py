"""GPU discovery, GpuInfo, VulkanDevice, allocators and VkMat layout (lavapipe in CI)."""

from __future__ import annotations

import glob
import os
import subprocess
import sys
import textwrap

import pytest

from ncnn_c.gpu import _vk, device
from ncnn_c.gpu.device import (
    GpuInfo,
    get_default_gpu_index,
    get_gpu_count,
    get_gpu_device,
    get_gpu_info,
)
from ncnn_c.gpu.vkallocator import VkBlobAllocator, VkStagingAllocator, VkWeightAllocator
from ncnn_c.gpu.vkmat import VkMat

pytestmark = pytest.mark.gpu

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HAVE_LAVAPIPE = bool(glob.glob("/usr/share/vulkan/icd.d/lvp_icd*.json"))


@pytest.fixture(scope="module")
def vkdev():
    assert get_gpu_count() > 0, "no Vulkan device (lavapipe is installed by ./run.sh)"
    return get_gpu_device()


def _run(code: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [ROOT, os.environ.get("PYTHONPATH")])))
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, env=env, timeout=60
    )


# -- discovery ----------------------------------------------------------------------------------
def test_gpu_count_on_lavapipe():
    assert HAVE_LAVAPIPE, "lavapipe ICD not installed (mesa-vulkan-drivers)"
    assert get_gpu_count() >= 1
    names = [str(get_gpu_info(i).driver_name) for i in range(get_gpu_count())]
    assert "llvmpipe" in names


def test_info_fields(vkdev):
    info = vkdev.info
    assert isinstance(info, GpuInfo)
    assert info.driver_name and isinstance(info.driver_name, str)
    assert info.device_name
    assert isinstance(info.pipeline_cache_uuid, bytes) and len(info.pipeline_cache_uuid) == 16
    assert info.api_version >= _vk.API_1_1
    assert info.driver_id > 0  # Vulkan 1.2 / VK_KHR_driver_properties on every current driver
    assert info.type in (0, 1, 2, 3)
    assert info.subgroup_size >= 1
    assert info.compute_queue_family_index >= 0 and info.compute_queue_count >= 1
    assert info.buffer_offset_alignment >= 1
    assert info.memory_heaps and info.memory_types
    for flag in device.BUG_FLAGS:
        assert isinstance(getattr(info, flag), bool)


def test_pypi_call_shapes(vkdev):
    info = vkdev.info
    assert vkdev.info() is info
    assert info.vendor_id() == info.vendor_id and type(info.vendor_id()) is int
    assert info.device_name() == str(info.device_name)
    assert bytes(info.pipeline_cache_uuid()) == info.pipeline_cache_uuid
    assert info.type() == int(info.type)
    assert isinstance(vkdev.get_heap_budget(), int) and vkdev.get_heap_budget() > 0


def test_invalid_index_returns_none(vkdev):
    n = get_gpu_count()
    assert get_gpu_device(n) is None
    assert get_gpu_device(99) is None
    assert get_gpu_device(-1) is None  # as the PyPI ncnn; only None means the default
    assert get_gpu_info(-5) is None
    assert get_gpu_info(n) is None
    assert 0 <= get_default_gpu_index() < n


def test_device_is_cached_and_has_handles(vkdev):
    assert get_gpu_device(vkdev.device_index) is vkdev
    assert get_gpu_device() is vkdev or get_default_gpu_index() != vkdev.device_index
    for h in (vkdev.vk_instance, vkdev.vk_physical_device, vkdev.vk_device):
        assert _vk.handle_int(h) != 0
    assert vkdev.compute_queue_family == vkdev.info.compute_queue_family_index


def test_queue_acquire_reclaim(vkdev):
    q = vkdev.acquire_queue()
    assert q is not None
    vkdev.reclaim_queue(q)
    with vkdev.queue() as q2:
        assert _vk.handle_int(q2) == _vk.handle_int(q)


# -- bug flags -----------------------------------------------------------------------------------
def _description(vkdev, **changes) -> dict:
    d = _vk.describe_physical_device(vkdev.vk_physical_device, _vk.API_1_3)
    d.update(changes)
    return d


def test_bug_flags_default_off_on_desktop_drivers(vkdev):
    if vkdev.info.vendor_id in (0x5143, 0x13B5):
        pytest.skip("mobile GPU: rules may apply")
    assert not any(getattr(vkdev.info, f) for f in device.BUG_FLAGS)


def test_bug_rules_apply_by_vendor_and_version(vkdev, monkeypatch):
    monkeypatch.delenv("NCNN_C_GPU_BUGS", raising=False)
    old_adreno = GpuInfo(
        0,
        vkdev.vk_physical_device,
        _description(vkdev, vendor_id=0x5143, device_id=0x6030001, api_version=_vk.make_version(1, 0, 61)),
    )
    assert old_adreno.bug_corrupted_online_pipeline_cache
    assert old_adreno.bug_storage_buffer_no_l1
    assert old_adreno.bug_buffer_image_load_zero
    assert old_adreno.bug_implicit_fp16_arithmetic
    new_adreno = GpuInfo(
        0,
        vkdev.vk_physical_device,
        _description(vkdev, vendor_id=0x5143, device_id=0x6050002, api_version=_vk.make_version(1, 3, 0)),
    )
    assert not new_adreno.bug_corrupted_online_pipeline_cache
    assert not new_adreno.bug_storage_buffer_no_l1


def test_bug_flags_can_be_forced(vkdev, monkeypatch):
    monkeypatch.setenv("NCNN_C_GPU_BUGS", "bug_corrupted_online_pipeline_cache=1, storage_buffer_no_l1")
    info = GpuInfo(0, vkdev.vk_physical_device, _description(vkdev))
    assert info.bug_corrupted_online_pipeline_cache and info.bug_storage_buffer_no_l1
    assert not info.bug_implicit_fp16_arithmetic
    info.bug_corrupted_online_pipeline_cache = False  # plain attribute: tests flip it either way
    assert not info.bug_corrupted_online_pipeline_cache


# -- process-level behaviour (subprocesses keep this process's cached device intact) --------------
def test_no_loader_means_zero_gpus():
    r = _run("""
        import sys
        sys.modules["vulkan"] = None   # what a missing libvulkan looks like to the lazy import
        import ncnn_c.gpu as g
        assert g.get_gpu_count() == 0
        assert g.get_gpu_device() is None
        assert g.get_default_gpu_index() == -1
        assert g.create_gpu_instance() == -1
        print("ok")
    """)
    assert r.returncode == 0, r.stderr
    assert "ok" in r.stdout


def test_destroy_instance_idempotent_and_safe_with_live_buffers(vkdev):
    r = _run("""
        import ncnn_c.gpu as g
        from ncnn_c.gpu.vkmat import VkMat
        dev = g.get_gpu_device()
        m = VkMat(10, 20, 3, allocator=dev.acquire_blob_allocator())
        g.destroy_gpu_instance()
        g.destroy_gpu_instance()
        assert dev.destroyed
        del m                       # freeing after the device is gone must not crash
        assert g.get_gpu_count() >= 1
        dev2 = g.get_gpu_device()
        assert dev2 is not dev and not dev2.destroyed
        keep = VkMat(5, allocator=dev2.default_blob_allocator)   # left for atexit to clean up
        print("ok")
    """)
    assert r.returncode == 0, r.stderr
    assert "ok" in r.stdout


# -- allocators -----------------------------------------------------------------------------------
def test_blob_allocator_reuses_freed_ranges(vkdev):
    a = VkBlobAllocator(vkdev)
    align = a.alignment
    x = a.fastMalloc(1000)
    y = a.fastMalloc(1000)
    assert x.buffer == y.buffer and y.offset >= x.offset + x.capacity
    assert x.offset % align == 0 and y.offset % align == 0 and x.capacity >= 1000
    a.fastFree(x)
    z = a.fastMalloc(900)
    assert (z.buffer, z.offset) == (x.buffer, x.offset)  # the freed hole is reused
    a.fastFree(y)
    a.fastFree(z)
    s = a.stats()
    assert s["blocks"] == 1 and s["used"] == 0
    # coalesced back into one hole: the whole block fits again without a new block
    big = a.fastMalloc(a.block_size)
    assert a.stats()["blocks"] == 1 and big.offset == 0
    a.fastFree(big)
    a.fastFree(big)  # double free is ignored
    assert a.stats()["used"] == 0
    a.clear()
    assert a.stats()["blocks"] == 0


def test_a_vkmat_finalised_inside_the_allocators_lock_does_not_deadlock(vkdev):
    # the collector can finalise a VkMat while its allocator's thread is inside fastMalloc
    # (seen as a hang in the layer tests): the free is queued, never waited for
    a = VkBlobAllocator(vkdev)
    m = VkMat(7, 5, 3, allocator=a)
    used = a.stats()["used"]
    assert used > 0
    with a._lock:  # what fastMalloc holds when the collector runs
        del m
    assert a.stats()["used"] == used  # queued, not freed, and no deadlock
    x = a.fastMalloc(64)  # the next allocator call frees the queued range first
    assert a.stats()["used"] < used + x.capacity
    a.fastFree(x)
    assert a.stats()["used"] == 0


def test_oversize_allocations(vkdev):
    a = VkBlobAllocator(vkdev, preferred_block_size=1 << 20)
    m = a.fastMalloc(3 << 20)
    assert m.capacity >= 3 << 20 and a.stats()["blocks"] == 1
    a.fastFree(m)
    assert a.stats()["blocks"] == 1  # blob memory stays for the next inference
    s = VkStagingAllocator(vkdev)
    st = s.fastMalloc(s.block_size + 4096)
    assert st.mapped_ptr
    s.fastFree(st)
    assert s.stats()["blocks"] == 0  # a one-off big staging block is not kept
    w = VkWeightAllocator(vkdev)
    assert w.fastMalloc(16) is not None


def test_device_allocator_pools(vkdev):
    a = vkdev.acquire_blob_allocator()
    vkdev.reclaim_blob_allocator(a)
    assert vkdev.acquire_blob_allocator() is a
    vkdev.reclaim_blob_allocator(a)
    s = vkdev.acquire_staging_allocator()
    assert isinstance(s, VkStagingAllocator) and s.mappable
    vkdev.reclaim_staging_allocator(s)


def test_vkmat_frees_on_last_reference(vkdev):
    a = VkBlobAllocator(vkdev)
    m = VkMat(7, 5, 3, allocator=a)
    shared = VkMat().share_from(m)
    assert a.stats()["used"] > 0
    del m
    assert a.stats()["used"] > 0  # still shared
    shared.release()
    del shared
    assert a.stats()["used"] == 0


# -- VkMat layout ---------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "shape,dims,cstep",
    [((5,), 1, 8), ((5, 3), 2, 16), ((5, 3, 2), 3, 16), ((3, 3, 2, 4), 4, 20), ((4, 4, 7), 3, 16)],
)
def test_vkmat_shape_rules(vkdev, shape, dims, cstep):
    a = vkdev.default_blob_allocator
    m = VkMat(*shape, allocator=a)
    assert m.dims == dims and m.cstep == cstep and not m.empty()
    assert m.total() == cstep * m.c
    assert m.buffer() is not None and m.buffer_capacity() >= m.total() * 4
    assert m.buffer_offset() % vkdev.info.buffer_offset_alignment == 0
    like = VkMat()
    like.create_like(m, a)
    assert (like.dims, like.w, like.h, like.d, like.c, like.cstep) == (m.dims, m.w, m.h, m.d, m.c, m.cstep)
    assert like.buffer_offset() != m.buffer_offset() or like.buffer() != m.buffer()


def test_vkmat_fp16_pack4_and_mapped(vkdev):
    a = vkdev.default_blob_allocator
    m = VkMat(3, 3, 2, elemsize=8, elempack=4, allocator=a)
    assert m.cstep == 10 and m.elembits() == 16  # 9*8=72 bytes -> 80
    assert VkMat().empty() and VkMat().total() == 0
    if a.mappable:
        view = m.host_view()
        view[:] = 7
        assert m.mapped() is not None and m.mapped().raw()[0] == 7
