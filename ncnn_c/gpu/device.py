"""GPU discovery and the per-GPU device object (ncnn's gpu.h: GpuInfo, VulkanDevice).

One Vulkan instance per process, created on first use; one ``VulkanDevice`` per GPU
index, created lazily and cached. The public functions never raise: without a loader,
driver or device ``get_gpu_count()`` is 0 and the reason is logged once.

GpuInfo fields are attributes (``info.vendor_id``); the PyPI ``ncnn`` package exposes
them as methods (``info.vendor_id()``), so the values are callable and return themselves,
and ``vkdev.info`` likewise works both as an attribute and as ``vkdev.info()``.
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import os
import threading
import time
import weakref

from ..errors import ForkedProcessError, NcnnError, VulkanUnavailable
from . import _vk
from .lifetime import UseCount
from .vkallocator import VkBlobAllocator, VkBufferMemory, VkStagingAllocator

log = logging.getLogger("ncnn_c")


# -- callable values: attribute and PyPI method shapes at once ----------------------------------
class _Int(int):
    __slots__ = ()

    def __call__(self) -> int:
        return int(self)


class _Str(str):
    __slots__ = ()

    def __call__(self) -> str:
        return str(self)


class _Bytes(bytes):
    __slots__ = ()

    def __call__(self) -> bytes:
        return bytes(self)


# -- driver bug table -------------------------------------------------------------------------
# Known driver defects (ncnn's list). Each rule: flag, vendor id, and an optional predicate on
# (device_id, api_version). Only old Qualcomm Adreno and some ARM Mali drivers are affected;
# desktop drivers (NVIDIA, AMD, Intel, Mesa) match no rule.
_QCOM = 0x5143
_ARM = 0x13B5
_MALI_IMPLICIT_FP16 = {
    0x7500001, 0x8602000, 0x8800020, 0x70930000, 0x70901010, 0x72120000, 0x74021000, 0x60A00002, 0x62210001,
}  # fmt: skip
BUG_RULES = (
    # Adreno drivers before 1.0.66 return pipelines that break when shared through a VkPipelineCache.
    ("bug_corrupted_online_pipeline_cache", _QCOM, lambda dev, api: api < _vk.make_version(1, 0, 66)),
    # Adreno storage buffers bypass L1 except on Adreno 640/650.
    ("bug_storage_buffer_no_l1", _QCOM, lambda dev, api: dev not in (0x6040001, 0x6050002)),
    # Adreno before 1.1.87 reads zeros from an image written just before from a buffer.
    ("bug_buffer_image_load_zero", _QCOM, lambda dev, api: api < _vk.make_version(1, 1, 87)),
    # These GPUs do fp16 arithmetic on fp16 storage even when the shader says fp32.
    ("bug_implicit_fp16_arithmetic", _ARM, lambda dev, api: dev in _MALI_IMPLICIT_FP16),
    ("bug_implicit_fp16_arithmetic", _QCOM, lambda dev, api: dev in (0x6030001, 0x6040001, 0x6050002)),
)
BUG_FLAGS = tuple(dict.fromkeys(r[0] for r in BUG_RULES))


def _env_bug_overrides() -> dict[str, bool]:
    """NCNN_C_GPU_BUGS="bug_corrupted_online_pipeline_cache=1,bug_storage_buffer_no_l1=0" forces flags."""
    out = {}
    for item in os.environ.get("NCNN_C_GPU_BUGS", "").split(","):
        item = item.strip()
        if not item:
            continue
        name, _, val = item.partition("=")
        name = name.strip()
        if not name.startswith("bug_"):
            name = "bug_" + name
        if name not in BUG_FLAGS:
            log.warning("NCNN_C_GPU_BUGS: unknown flag %r ignored", name)
            continue
        out[name] = val.strip() not in ("0", "false", "False", "no")
    return out


# Vulkan VkPhysicalDeviceType -> ncnn's type (0 discrete, 1 integrated, 2 virtual, 3 cpu)
_NCNN_TYPE = {2: 0, 1: 1, 3: 2, 4: 3, 0: 3}

# device extensions we enable when present (core in newer APIs; enabling them is harmless)
_WANTED_EXTENSIONS = (
    "VK_KHR_8bit_storage",
    "VK_KHR_16bit_storage",
    "VK_KHR_shader_float16_int8",
    "VK_KHR_storage_buffer_storage_class",
    "VK_KHR_driver_properties",
    "VK_KHR_descriptor_update_template",
    "VK_KHR_push_descriptor",
    "VK_KHR_maintenance1",
    "VK_KHR_maintenance2",
    "VK_KHR_maintenance3",
    "VK_EXT_memory_budget",
    "VK_KHR_portability_subset",  # the spec requires enabling it where it exists
)


def _resizable_bar(types, heaps) -> bool:
    """Whether the CPU can map the whole of a discrete GPU's memory (resizable BAR), ncnn's
    test: the first device-local heap has a host-visible device-local type, and no type of
    that heap is host cached (some drivers call a part of host memory a device-local heap)."""
    heap = next((i for i, (_size, f) in enumerate(heaps) if f & _vk.MEMORY_HEAP_DEVICE_LOCAL), -1)
    both = _vk.MEMORY_DEVICE_LOCAL | _vk.MEMORY_HOST_VISIBLE
    found = False
    for flags, h in types:
        if h != heap:
            continue
        if flags & _vk.MEMORY_HOST_CACHED:
            return False
        found = found or flags & both == both
    return found


class GpuInfo:
    """What one physical device is and can do. Bug flags are plain writable attributes."""

    def __init__(self, index: int, physical_device, d: dict) -> None:
        self.device_index = _Int(index)
        self.physical_device = physical_device
        self.api_version = _Int(d["api_version"])
        self.driver_version = _Int(d["driver_version"])
        self.vendor_id = _Int(d["vendor_id"])
        self.device_id = _Int(d["device_id"])
        self.device_name = _Str(d["device_name"])
        self.driver_id = _Int(d["driver_id"])
        self.driver_name = _Str(d["driver_name"])
        self.driver_info = _Str(d["driver_info"])
        self.pipeline_cache_uuid = _Bytes(d["pipeline_cache_uuid"])
        self.physical_device_type = _Int(d["device_type"])
        self.type = _Int(_NCNN_TYPE.get(d["device_type"], 3))
        self.subgroup_size = _Int(d["subgroup_size"])
        self.subgroup_ops = _Int(d["subgroup_ops"])
        self.max_shared_memory_size = _Int(d["max_shared_memory_size"])
        self.max_workgroup_count = d["max_workgroup_count"]
        self.max_workgroup_invocations = _Int(d["max_workgroup_invocations"])
        self.max_workgroup_size = d["max_workgroup_size"]
        self.max_push_constants_size = _Int(d["max_push_constants_size"])
        self.max_storage_buffer_range = _Int(d["max_storage_buffer_range"])
        self.memory_map_alignment = _Int(d["memory_map_alignment"])
        self.buffer_offset_alignment = _Int(d["buffer_offset_alignment"])
        self.non_coherent_atom_size = _Int(d["non_coherent_atom_size"])
        self.buffer_image_granularity = _Int(d["buffer_image_granularity"])
        self.timestamp_period = d["timestamp_period"]
        self.memory_types = d["memory_types"]  # [(property flags, heap index)]
        self.memory_heaps = d["memory_heaps"]  # [(size bytes, heap flags)]
        self.queue_families = d["queue_families"]  # [(queue flags, count)]
        self.extensions = d["extensions"]  # name -> spec version
        for k in ("support_fp16_storage", "support_fp16_uniform", "support_fp16_arithmetic",
                  "support_int8_storage", "support_int8_uniform", "support_int8_arithmetic",
                  "support_int64", "support_fp64"):  # fmt: skip
            setattr(self, k, d[k])
        self.support_fp16_packed = True  # packHalf2x16 is core GLSL
        self.support_int8_packed = True
        self.support_subgroup_ops = bool(d["subgroup_ops"]) and d["subgroup_size"] > 0
        self.support_VK_KHR_push_descriptor = "VK_KHR_push_descriptor" in self.extensions
        self.support_VK_KHR_descriptor_update_template = (
            d["api_version"] >= _vk.API_1_1 or "VK_KHR_descriptor_update_template" in self.extensions
        )
        self.support_VK_EXT_memory_budget = "VK_EXT_memory_budget" in self.extensions

        qf = self.compute_queue_family_index = _Int(self._find_compute_queue(self.queue_families))
        self.compute_queue_count = _Int(self.queue_families[qf][1] if qf >= 0 else 0)
        self.device_local_heap_size = _Int(
            max((s for s, f in self.memory_heaps if f & _vk.MEMORY_HEAP_DEVICE_LOCAL), default=0)
        )
        # unified memory: every device-local memory type is also host visible (CPU and most iGPUs)
        dl = [f for f, _ in self.memory_types if f & _vk.MEMORY_DEVICE_LOCAL]
        self.unified_memory = bool(dl) and all(f & _vk.MEMORY_HOST_VISIBLE for f in dl)
        self.resizable_bar = self.unified_memory or _resizable_bar(self.memory_types, self.memory_heaps)

        for flag in BUG_FLAGS:
            setattr(self, flag, False)
        for flag, vendor, pred in BUG_RULES:
            if d["vendor_id"] == vendor and pred(d["device_id"], d["api_version"]):
                setattr(self, flag, True)
        for flag, value in _env_bug_overrides().items():
            setattr(self, flag, value)

    @staticmethod
    def _find_compute_queue(families) -> int:
        # prefer a compute-only family (async compute on discrete GPUs), then any compute family
        for i, (flags, count) in enumerate(families):
            if flags & _vk.QUEUE_COMPUTE and not flags & 0x1 and count:
                return i
        for i, (flags, count) in enumerate(families):
            if flags & _vk.QUEUE_COMPUTE and count:
                return i
        return -1

    # PyPI: vkdev.info() -> GpuInfo; here vkdev.info is the GpuInfo, and calling it returns it
    def __call__(self) -> GpuInfo:
        return self

    @property
    def compute_queue_family(self) -> int:
        return self.compute_queue_family_index

    def api_version_str(self) -> str:
        return _vk.version_str(self.api_version)

    def __repr__(self) -> str:
        return (
            f"<GpuInfo {self.device_index} {self.device_name!s} vendor=0x{self.vendor_id:04x} "
            f"device=0x{self.device_id:x} api={_vk.version_str(self.api_version)} "
            f"driver={self.driver_name!s} type={int(self.type)}>"
        )


# -- the process-wide instance ------------------------------------------------------------------
_lock = threading.RLock()
_instance: _vk.Instance | None = None
_infos: list[GpuInfo] = []
_devices: dict[int, VulkanDevice] = {}
_init_failed: str | None = None
_atexit_registered = False
# set while an instance or device is being made (a Net makes its device on a thread, beside
# load_param: a fork meanwhile must not leave the child waiting on the parent's lock)
_creating = 0
# when the instance and the devices were made, and how long that took (init_timings())
_timings: dict[str, float | str] = {}


# fork(): a child inherits the parent's Vulkan handles, but not the driver's threads and locks;
# any call on them can hang for ever (lavapipe does, at the first submit or at exit). The
# child is marked at fork time; Vulkan entry points refuse with ForkedProcessError, teardown
# only forgets the handles, and everything that is only bytes (cache files) keeps working.
_forked_child = False


def _after_fork_in_child() -> None:
    # runs in the child right after fork, with no other thread: no locks taken here
    global _forked_child, _lock
    if _creating:
        # the thread making them is gone, holding the lock; what it made is the parent's
        _lock = threading.RLock()
        _forked_child = True
    if _instance is not None:
        _forked_child = True
        for dev in list(_devices.values()):
            dev._forget()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def in_forked_child() -> bool:
    """True in a child of fork() whose parent had created the Vulkan instance."""
    return _forked_child


def check_process(what: str) -> None:
    """Raise ForkedProcessError when called in a forked child of a Vulkan-using parent."""
    if _forked_child:
        raise ForkedProcessError(
            f"{what}: this process was forked from one that had started Vulkan; the parent's GPU "
            "objects cannot be used here (they would hang). Start GPU work in the child itself "
            "(multiprocessing 'spawn' or 'forkserver'), or fork before the first GPU call"
        )


@contextlib.contextmanager
def _making(what: str):
    """Time the making of the instance or a device (init_timings()); marks it for fork()."""
    global _creating
    start = time.monotonic()
    _creating += 1
    try:
        yield
    finally:
        _creating -= 1
        end = time.monotonic()
        _timings[f"{what}_s"] = end - start
        _timings[f"{what}_at"] = end
        _timings[f"{what}_thread"] = threading.current_thread().name


def init_timings() -> dict[str, float | str]:
    """When and where the instance and the last device were made: ``instance_s`` /
    ``device_s`` (seconds it took), ``instance_at`` / ``device_at`` (``time.monotonic()``
    when done) and ``*_thread`` (the thread's name). For start-up measurements
    (``benchmarks/startup.py``); empty before the first GPU call."""
    return dict(_timings)


def create_gpu_instance(driver_path: str | None = None) -> int:
    """Create the Vulkan instance and enumerate GPUs; 0 on success, -1 (logged) otherwise."""
    with _lock:
        if _forked_child:
            log.error("create_gpu_instance: %s", _fork_message())
            return -1
        if _instance is not None:
            return 0
        if driver_path:
            # PyPI-ncnn signature; the loader is picked by the binding, so this is advisory only
            log.warning("create_gpu_instance: driver_path %r ignored", driver_path)
        with _making("instance"):
            return _create_instance()


def _create_instance() -> int:
    """The instance and the GPU list (under _lock, from create_gpu_instance)."""
    global _instance, _infos, _init_failed, _atexit_registered
    try:
        inst = _vk.Instance()
    except (VulkanUnavailable, _vk.VulkanError) as e:
        if _init_failed != str(e):
            log.warning("Vulkan unavailable: %s", e)
        _init_failed = str(e)
        return -1
    infos: list[GpuInfo] = []
    try:
        for i, pd in enumerate(inst.physical_devices()):
            d = _vk.describe_physical_device(pd, inst.api_version)
            info = GpuInfo(i, pd, d)
            if info.api_version < _vk.API_1_1:
                log.warning(
                    "gpu %d %s: Vulkan %s < 1.1, skipped",
                    i,
                    info.device_name,
                    _vk.version_str(info.api_version),
                )
                continue
            if info.compute_queue_family_index < 0:
                log.warning("gpu %d %s: no compute queue, skipped", i, info.device_name)
                continue
            info.device_index = _Int(len(infos))
            infos.append(info)
    except _vk.VulkanError as e:
        log.error("create_gpu_instance: %s", e)
        inst.destroy()
        _init_failed = str(e)
        return -1
    if not infos:
        log.warning("Vulkan: no usable GPU")
    _instance, _infos, _init_failed = inst, infos, None
    if not _atexit_registered:
        atexit.register(destroy_gpu_instance)
        _atexit_registered = True
    return 0


def destroy_gpu_instance() -> None:
    """Destroy every VulkanDevice, then the instance. Idempotent; registered with atexit."""
    global _instance, _infos
    if not _forked_child:
        # inferences in flight finish first (later ones fail cleanly); waited for outside the
        # module lock, which an inference may need
        with _lock:
            devs = list(_devices.values())
        for dev in devs:
            dev.uses.close()
    with _lock:
        if _forked_child:
            # the parent owns these; touching them here would hang: just forget them
            for dev in _devices.values():
                dev._forget()
            _devices.clear()
            _instance = None
            _infos = []
            return
        for dev in list(_devices.values()):
            try:
                dev.destroy()
            except Exception as e:  # keep going: the instance must still be destroyed
                log.error("destroy_gpu_instance: device %d: %s", dev.device_index, e)
        _devices.clear()
        if _instance is not None:
            _instance.destroy()
        _instance = None
        _infos = []


def _ensure_instance() -> bool:
    if _instance is not None:
        return True
    return create_gpu_instance() == 0


def _fork_message() -> str:
    try:
        check_process("Vulkan")
    except ForkedProcessError as e:
        return str(e)
    return ""


def get_gpu_count() -> int:
    if _forked_child:
        log.error("get_gpu_count: %s", _fork_message())
        return 0
    try:
        with _lock:
            return len(_infos) if _ensure_instance() else 0
    except Exception as e:  # never raise from here
        log.error("get_gpu_count: %s", e)
        return 0


def get_default_gpu_index() -> int:
    """Index of the preferred GPU: discrete > integrated > virtual > cpu; -1 if none."""
    if get_gpu_count() == 0:
        return -1
    return min(range(len(_infos)), key=lambda i: (int(_infos[i].type), i))


def get_gpu_info(device_index: int | None = None) -> GpuInfo | None:
    if device_index is None:
        device_index = get_default_gpu_index()
    n = get_gpu_count()
    if not isinstance(device_index, int) or not 0 <= device_index < n:
        log.error("get_gpu_info: invalid gpu index %r (have %d)", device_index, n)
        return None
    return _infos[device_index]


def start_gpu_device(device_index: int | None = None) -> None:
    """Begin making the Vulkan instance and the device of GPU ``device_index`` (None: the
    default GPU) on a thread of its own, and return at once: for an application's first
    lines, so that the driver's start (0.2-0.5 s on a discrete GPU) overlaps its imports and
    file reads. Whatever needs the device next (``get_gpu_device``, ``Net.load_param`` with
    ``use_vulkan_compute``, ...) waits for that thread; a failure is logged there, as
    ``get_gpu_device`` logs it, and the net then runs on the CPU as without it. An ncnn_c
    addition: the PyPI ncnn has no such call."""
    if device_index is not None and not isinstance(device_index, int):
        raise TypeError(
            f"start_gpu_device: device_index must be an int or None, not {type(device_index).__name__}"
        )

    def run() -> None:
        try:
            if get_gpu_device(device_index) is not None:
                # what a PipelineCache and load_model import next, while the caller still
                # imports its own modules
                from . import command, pipeline, pipelinecache, vkmat  # noqa: F401, PLC0415
        except Exception:  # noqa: BLE001 - a thread of our own: the reason goes to the log
            log.exception("start_gpu_device: making the Vulkan device failed")

    # not a daemon: the interpreter waits for it before its exit handlers tear the GPU down
    threading.Thread(target=run, name="ncnn_c-vulkan-device").start()


def get_gpu_device(device_index: int | None = None) -> VulkanDevice | None:
    """The shared VulkanDevice for a GPU index (None: get_default_gpu_index()); None on error,
    an out-of-range index included (-1 too, as in the PyPI ncnn)."""
    if device_index is None:
        device_index = get_default_gpu_index()
    with _lock:
        info = get_gpu_info(device_index)
        if info is None:
            return None
        dev = _devices.get(device_index)
        if dev is None:
            try:
                with _making("device"):
                    dev = VulkanDevice(device_index)
            except NcnnError as e:
                log.error("get_gpu_device(%d): %s", device_index, e)
                return None
            _devices[device_index] = dev
        return dev


# -- the logical device ------------------------------------------------------------------------
class VulkanDevice:
    """A logical device on one GPU: queue, memory type choices, default allocators."""

    def __init__(self, device_index: int = 0) -> None:
        if not _ensure_instance():
            raise VulkanUnavailable(_init_failed or "no Vulkan instance")
        assert _instance is not None  # _ensure_instance() succeeded
        info = get_gpu_info(device_index)
        if info is None:
            raise NcnnError(f"invalid gpu index {device_index}")
        self.info = info
        self.device_index = int(device_index)
        self.vk_instance = _instance.handle
        self.vk_physical_device = info.physical_device
        self.compute_queue_family = int(info.compute_queue_family_index)
        self.api_version = min(int(info.api_version), _instance.api_version)

        self.enabled_extensions = [e for e in _WANTED_EXTENSIONS if e in info.extensions]
        features = {k: getattr(info, k) for k in (
            "support_fp16_storage", "support_fp16_uniform", "support_fp16_arithmetic",
            "support_int8_storage", "support_int8_uniform", "support_int8_arithmetic", "support_int64")}  # fmt: skip
        self.vk_device, queues = _vk.create_device(
            self.vk_physical_device,
            self.compute_queue_family,
            1,
            self.enabled_extensions,
            features,
            self.api_version,
        )
        self.queue_count = len(queues)
        self._free_queues = list(queues)
        self._queue_cv = threading.Condition()

        self._lock = threading.Lock()
        self._allocators: weakref.WeakSet = weakref.WeakSet()
        self._destroy_hooks: list = []
        self._blob_pool: list[VkBlobAllocator] = []
        self._staging_pool: list[VkStagingAllocator] = []
        self._default_blob: VkBlobAllocator | None = None
        self._default_staging: VkStagingAllocator | None = None
        self._dummy: VkBufferMemory | None = None
        self.destroyed = False
        # inferences hold a use while they record and run commands (see gpu/lifetime.py)
        self.uses = UseCount(f"VulkanDevice {self.device_index}")
        log.info("vulkan device %d: %r, extensions %s", self.device_index, info, self.enabled_extensions)

    # -- memory types --------------------------------------------------------------------------
    def memory_type_for(self, kind: str, type_bits: int = 0xFFFFFFFF) -> tuple[int, int]:
        """(memory type index, property flags) for "blob", "weight" or "staging" memory."""
        uma = self.info.unified_memory
        coherent = _vk.MEMORY_HOST_VISIBLE | _vk.MEMORY_HOST_COHERENT
        if kind == "staging":
            # downloads read it back on the CPU; on a discrete GPU, host-visible device-local
            # memory is the (maybe small) BAR window
            avoided = 0 if uma else _vk.MEMORY_DEVICE_LOCAL
            return self._memory_type(kind, type_bits, coherent, _vk.MEMORY_HOST_CACHED, avoided)
        if kind == "weight" and not uma and self.info.resizable_bar:
            # a discrete GPU whose memory the CPU maps whole (resizable BAR): weights are
            # written in place, with no staging copy, as ncnn does there (uploads write mapped
            # memory without a flush, so only a coherent type will do)
            i, flags = self._memory_type(
                kind, type_bits, _vk.MEMORY_DEVICE_LOCAL, coherent, _vk.MEMORY_HOST_CACHED
            )
            if flags & coherent == coherent:
                return i, flags
        # on unified memory a mappable blob skips the staging copy entirely
        preferred = coherent if uma else 0
        avoided = 0 if uma else _vk.MEMORY_HOST_VISIBLE
        return self._memory_type(kind, type_bits, _vk.MEMORY_DEVICE_LOCAL, preferred, avoided)

    def _memory_type(self, kind: str, type_bits: int, required: int, preferred: int, avoided: int):
        types = self.info.memory_types
        avoided |= _vk.MEMORY_PROTECTED | _vk.MEMORY_LAZILY_ALLOCATED | 0xC0  # AMD device-coherent bits
        best, best_score = -1, None
        for i, (flags, _heap) in enumerate(types):
            if not type_bits & (1 << i) or flags & required != required:
                continue
            score = (-bin(flags & avoided).count("1"), bin(flags & preferred).count("1"), -i)
            if best_score is None or score > best_score:
                best, best_score = i, score
        if best < 0 and kind != "staging":
            # no device-local type usable (odd drivers): any type will do for device buffers
            for i in range(len(types)):
                if type_bits & (1 << i):
                    best = i
                    break
        if best < 0:
            raise _vk.VulkanError(-2, f"no memory type for {kind} (bits 0x{type_bits:x})")
        return best, types[best][0]

    def create_buffer(self, size: int, kind: str = "blob") -> VkBufferMemory:
        """A standalone buffer with its own memory (no sub-allocation), mapped when host visible."""
        dev = self.vk_device
        usage = _vk.BUFFER_STORAGE | _vk.BUFFER_TRANSFER_SRC | _vk.BUFFER_TRANSFER_DST
        buf = _vk.create_buffer(dev, size, usage)
        req_size, _, bits = _vk.buffer_memory_requirements(dev, buf)
        ti, flags = self.memory_type_for(kind, bits)
        mem = _vk.allocate_memory(dev, req_size, ti)
        _vk.bind_buffer_memory(dev, buf, mem, 0)
        mapped = _vk.map_memory(dev, mem) if flags & _vk.MEMORY_HOST_VISIBLE else None
        return VkBufferMemory(buf, 0, size, mem, mapped)

    def destroy_buffer(self, bm: VkBufferMemory) -> None:
        if self.destroyed or bm is None or bm.buffer is None:
            return
        if bm.mapped_ptr:
            _vk.unmap_memory(self.vk_device, bm.memory)
        _vk.destroy_buffer(self.vk_device, bm.buffer)
        _vk.free_memory(self.vk_device, bm.memory)
        bm.buffer = None

    @property
    def dummy_buffer(self) -> VkBufferMemory:
        """A small buffer bound where a shader binding gets an empty VkMat."""
        if self._dummy is None:
            with self._lock:
                if self._dummy is None:
                    self._dummy = self.create_buffer(64)
        return self._dummy

    def get_heap_budget(self) -> int:
        """Free device-local memory in MiB (VK_EXT_memory_budget when enabled, else the heap size)."""
        heaps = self.info.memory_heaps
        idx = max(
            (i for i, (_, f) in enumerate(heaps) if f & _vk.MEMORY_HEAP_DEVICE_LOCAL),
            key=lambda i: heaps[i][0],
            default=0,
        )
        if "VK_EXT_memory_budget" in self.enabled_extensions:
            try:
                return max(0, _vk.heap_budget(self.vk_physical_device, idx)) >> 20
            except Exception as e:  # budget is advisory: fall back to the heap size
                log.warning("get_heap_budget: %s", e)
        return heaps[idx][0] >> 20 if heaps else 0

    # -- queue -----------------------------------------------------------------------------------
    def acquire_queue(self):
        """Take a queue for exclusive use (blocks while all are taken); give it back with reclaim_queue."""
        with self._queue_cv:
            while not self._free_queues:
                self._queue_cv.wait()
            return self._free_queues.pop()

    def reclaim_queue(self, queue) -> None:
        with self._queue_cv:
            self._free_queues.append(queue)
            self._queue_cv.notify()

    @contextlib.contextmanager
    def queue(self):
        q = self.acquire_queue()
        try:
            yield q
        finally:
            self.reclaim_queue(q)

    # -- allocators --------------------------------------------------------------------------------
    def _register_allocator(self, alloc) -> None:
        if self.destroyed:
            raise NcnnError("VulkanDevice was destroyed")
        self._allocators.add(alloc)

    def acquire_blob_allocator(self) -> VkBlobAllocator:
        with self._lock:
            if self._blob_pool:
                return self._blob_pool.pop()
        return VkBlobAllocator(self)

    def reclaim_blob_allocator(self, allocator) -> None:
        with self._lock:
            self._blob_pool.append(allocator)

    def acquire_staging_allocator(self) -> VkStagingAllocator:
        with self._lock:
            if self._staging_pool:
                return self._staging_pool.pop()
        return VkStagingAllocator(self)

    def reclaim_staging_allocator(self, allocator) -> None:
        with self._lock:
            self._staging_pool.append(allocator)

    @property
    def default_blob_allocator(self) -> VkBlobAllocator:
        """Used when an Option names no blob_vkallocator (thread-safe, never reclaimed)."""
        if self._default_blob is None:
            with self._lock:
                if self._default_blob is None:
                    self._default_blob = VkBlobAllocator(self)
        return self._default_blob

    @property
    def default_staging_allocator(self) -> VkStagingAllocator:
        if self._default_staging is None:
            with self._lock:
                if self._default_staging is None:
                    self._default_staging = VkStagingAllocator(self)
        return self._default_staging

    # -- lifetime ----------------------------------------------------------------------------------
    def add_destroy_hook(self, fn) -> None:
        """``fn(vkdev)`` runs before the VkDevice is destroyed (pipeline caches release handles)."""
        with self._lock:
            self._destroy_hooks.append(fn)

    def remove_destroy_hook(self, fn) -> None:
        """Forget a hook (a cache destroyed before its device); unknown hooks are ignored."""
        with self._lock:
            try:
                self._destroy_hooks.remove(fn)
            except ValueError:
                pass

    def _forget(self) -> None:
        """Drop every handle without a Vulkan call (a forked child: they are the parent's)."""
        self._destroy_hooks = []
        self._dummy = None
        for alloc in list(self._allocators):
            alloc._alive = False  # later frees become no-ops
        self.destroyed = True
        self.vk_device = None

    def destroy(self) -> None:
        if self.destroyed:
            return
        if _forked_child:
            self._forget()
            return
        self.uses.close()
        try:
            _vk.device_wait_idle(self.vk_device)
        except _vk.VulkanError as e:
            log.error("VulkanDevice.destroy: %s", e)
        for fn in list(self._destroy_hooks):
            try:
                fn(self)
            except Exception as e:
                log.error("VulkanDevice.destroy: hook %r: %s", fn, e)
        self._destroy_hooks = []
        for alloc in list(self._allocators):
            alloc._device_destroyed()
        if self._dummy is not None:
            self.destroy_buffer(self._dummy)
            self._dummy = None
        self.destroyed = True
        _vk.destroy_device(self.vk_device)
        self.vk_device = None

    def __repr__(self) -> str:
        return f"<VulkanDevice {self.device_index} {self.info.device_name!s}>"
