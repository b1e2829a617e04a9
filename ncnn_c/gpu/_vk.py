"""The raw Vulkan boundary: the only place (with the other ``_vk*`` modules) that touches
the PyPI ``vulkan`` binding and its cffi objects.

Everything here works on raw handles (cffi pointers) and plain Python values, and turns
every failing ``VkResult`` into ``VulkanError``. The loader is imported lazily by
``load()`` so that ``import ncnn_c.gpu`` works on machines without libvulkan.

Calls go through ``vulkan.lib`` directly rather than the binding's Python wrappers: the
wrappers cost several microseconds each, raise on ``VK_INCOMPLETE`` and lack
``vkGetPipelineCacheData``. Hot paths (``CommandRecorder``) reuse preallocated structs.
"""

from __future__ import annotations

import logging
import os
import struct
import threading
from typing import Any

from ..errors import NcnnError, VulkanUnavailable

log = logging.getLogger("ncnn_c")

# cffi's FFI and compiled lib are dynamic (every C function and type is an attribute): Any
ffi: Any = None  # vulkan.ffi once load() succeeded
lib: Any = None  # vulkan.lib once load() succeeded
_vkmod: Any = None
_load_lock = threading.Lock()
_load_error: str | None = None

VK_SUCCESS = 0
VK_NOT_READY = 1
VK_TIMEOUT = 2
VK_INCOMPLETE = 5
VK_ERROR_OUT_OF_POOL_MEMORY = -1000069000
VK_ERROR_FRAGMENTED_POOL = -12
VK_WHOLE_SIZE = (1 << 64) - 1

# VkMemoryPropertyFlagBits
MEMORY_DEVICE_LOCAL = 0x1
MEMORY_HOST_VISIBLE = 0x2
MEMORY_HOST_COHERENT = 0x4
MEMORY_HOST_CACHED = 0x8
MEMORY_LAZILY_ALLOCATED = 0x10
MEMORY_PROTECTED = 0x20
MEMORY_HEAP_DEVICE_LOCAL = 0x1

# VkBufferUsageFlagBits
BUFFER_TRANSFER_SRC = 0x1
BUFFER_TRANSFER_DST = 0x2
BUFFER_STORAGE = 0x20

# VkPipelineStageFlagBits / VkAccessFlagBits
STAGE_COMPUTE = 0x800
STAGE_TRANSFER = 0x1000
STAGE_HOST = 0x4000
ACCESS_SHADER_READ = 0x20
ACCESS_SHADER_WRITE = 0x40
ACCESS_TRANSFER_READ = 0x800
ACCESS_TRANSFER_WRITE = 0x1000
ACCESS_HOST_READ = 0x2000
ACCESS_HOST_WRITE = 0x4000

SHADER_STAGE_COMPUTE = 0x20
DESCRIPTOR_TYPE_STORAGE_BUFFER = 7
PIPELINE_BIND_POINT_COMPUTE = 1
QUEUE_COMPUTE = 0x2
QUEUE_TRANSFER = 0x4

# the Vulkan result names worth printing (the rest print as numbers)
_RESULT_NAMES = {
    0: "VK_SUCCESS", 1: "VK_NOT_READY", 2: "VK_TIMEOUT", 5: "VK_INCOMPLETE",
    -1: "VK_ERROR_OUT_OF_HOST_MEMORY", -2: "VK_ERROR_OUT_OF_DEVICE_MEMORY",
    -3: "VK_ERROR_INITIALIZATION_FAILED", -4: "VK_ERROR_DEVICE_LOST", -5: "VK_ERROR_MEMORY_MAP_FAILED",
    -6: "VK_ERROR_LAYER_NOT_PRESENT", -7: "VK_ERROR_EXTENSION_NOT_PRESENT",
    -8: "VK_ERROR_FEATURE_NOT_PRESENT", -9: "VK_ERROR_INCOMPATIBLE_DRIVER",
    -10: "VK_ERROR_TOO_MANY_OBJECTS", -11: "VK_ERROR_FORMAT_NOT_SUPPORTED", -12: "VK_ERROR_FRAGMENTED_POOL",
    -13: "VK_ERROR_UNKNOWN", -1000069000: "VK_ERROR_OUT_OF_POOL_MEMORY",
}  # fmt: skip


class VulkanError(NcnnError):
    """A Vulkan call returned an error ``VkResult``."""

    def __init__(self, result: int, call: str) -> None:
        self.result = int(result)
        self.call = call
        super().__init__(f"{call} failed: {_RESULT_NAMES.get(self.result, self.result)}")


def check(result: int, call: str) -> int:
    if result < 0:
        raise VulkanError(result, call)
    return result


def make_version(major: int, minor: int, patch: int = 0) -> int:
    return (major << 22) | (minor << 12) | patch


def version_str(v: int) -> str:
    return f"{v >> 22}.{(v >> 12) & 0x3FF}.{v & 0xFFF}"


API_1_1 = make_version(1, 1)
API_1_2 = make_version(1, 2)
API_1_3 = make_version(1, 3)


def load():
    """Import the binding (which dlopens the loader) once; raise VulkanUnavailable if impossible."""
    global ffi, lib, _vkmod, _load_error
    if lib is not None:
        return lib
    with _load_lock:
        if lib is not None:
            return lib
        if _load_error is not None:
            raise VulkanUnavailable(_load_error)
        try:
            import vulkan  # noqa: PLC0415 - lazy on purpose: importing it dlopens libvulkan
        except Exception as e:  # OSError without a loader, ImportError without the binding
            _load_error = f"cannot load the Vulkan loader: {e}"
            raise VulkanUnavailable(_load_error) from None
        _vkmod = vulkan
        ffi = vulkan.ffi
        lib = vulkan.lib
    return lib


def _st(name: str) -> int:
    """VkStructureType value by its name without the VK_STRUCTURE_TYPE_ prefix."""
    return getattr(_vkmod, "VK_STRUCTURE_TYPE_" + name)


def _cstr(p) -> str:
    return ffi.string(p).decode("utf-8", "replace")


def to_handle(ctype: str, h):
    """Raw handles may arrive as cffi pointers (the binding's) or ints (addresses); cffi needs the former."""
    if isinstance(h, int):
        return ffi.cast(ctype, h)
    return h


def handle_int(h) -> int:
    return int(ffi.cast("uintptr_t", h)) if h is not None else 0


# -- instance ---------------------------------------------------------------------------
def instance_version() -> int:
    fn = lib.vkGetInstanceProcAddr(ffi.NULL, b"vkEnumerateInstanceVersion")
    if fn == ffi.NULL:
        return make_version(1, 0)
    v = ffi.new("uint32_t*")
    check(lib.vkEnumerateInstanceVersion(v), "vkEnumerateInstanceVersion")
    return v[0]


def _enumerate(fn, call: str, ctype: str, *args) -> list:
    """The two-call enumerate idiom, retrying on VK_INCOMPLETE (the count can change between calls)."""
    n = ffi.new("uint32_t*")
    while True:
        check(fn(*args, n, ffi.NULL), call)
        arr = ffi.new(f"{ctype}[]", max(n[0], 1))
        r = check(fn(*args, n, arr), call)
        if r != VK_INCOMPLETE:
            return [arr[i] for i in range(n[0])]


def instance_extensions() -> set[str]:
    props = _enumerate(
        lambda n, p: lib.vkEnumerateInstanceExtensionProperties(ffi.NULL, n, p),
        "vkEnumerateInstanceExtensionProperties",
        "VkExtensionProperties",
    )
    return {_cstr(p.extensionName) for p in props}


def instance_layers() -> set[str]:
    props = _enumerate(
        lib.vkEnumerateInstanceLayerProperties, "vkEnumerateInstanceLayerProperties", "VkLayerProperties"
    )
    return {_cstr(p.layerName) for p in props}


class Instance:
    """A VkInstance plus what was enabled on it."""

    def __init__(self, validation: bool | None = None) -> None:
        load()
        if validation is None:
            validation = os.environ.get("NCNN_C_VALIDATION", "") not in ("", "0")
        loader_version = instance_version()
        if loader_version < API_1_1:
            # devices stay usable only through VK_KHR_get_physical_device_properties2 (enabled below)
            log.warning("Vulkan loader is %s (< 1.1)", version_str(loader_version))
        self.api_version = min(loader_version, API_1_3) if loader_version >= API_1_1 else make_version(1, 0)
        exts = instance_extensions()
        enable = []
        if self.api_version < API_1_1 and "VK_KHR_get_physical_device_properties2" in exts:
            enable.append("VK_KHR_get_physical_device_properties2")
        flags = 0
        if "VK_KHR_portability_enumeration" in exts:  # MoltenVK hides devices otherwise
            enable.append("VK_KHR_portability_enumeration")
            flags |= 0x1  # VK_INSTANCE_CREATE_ENUMERATE_PORTABILITY_BIT_KHR
        layers = []
        if validation:
            if "VK_LAYER_KHRONOS_validation" in instance_layers():
                layers.append("VK_LAYER_KHRONOS_validation")
            else:
                log.warning("NCNN_C_VALIDATION set but VK_LAYER_KHRONOS_validation is not installed")
        self.extensions = enable
        self.layers = layers

        keep = []
        app = ffi.new("VkApplicationInfo*")
        app.sType = _st("APPLICATION_INFO")
        name = ffi.new("char[]", b"ncnn_c")
        keep.append(name)
        app.pApplicationName = name
        app.pEngineName = name
        app.apiVersion = self.api_version
        ci = ffi.new("VkInstanceCreateInfo*")
        ci.sType = _st("INSTANCE_CREATE_INFO")
        ci.flags = flags
        ci.pApplicationInfo = app
        ci.enabledExtensionCount, ci.ppEnabledExtensionNames = _str_array(enable, keep)
        ci.enabledLayerCount, ci.ppEnabledLayerNames = _str_array(layers, keep)
        out = ffi.new("VkInstance*")
        check(lib.vkCreateInstance(ci, ffi.NULL, out), "vkCreateInstance")
        self.handle = out[0]

    def physical_devices(self) -> list:
        return _enumerate(
            lib.vkEnumeratePhysicalDevices, "vkEnumeratePhysicalDevices", "VkPhysicalDevice", self.handle
        )

    def destroy(self) -> None:
        if self.handle is not None:
            lib.vkDestroyInstance(self.handle, ffi.NULL)
            self.handle = None


def _str_array(names: list[str], keep: list):
    if not names:
        return 0, ffi.NULL
    cs = [ffi.new("char[]", n.encode()) for n in names]
    arr = ffi.new("char*[]", cs)
    keep.extend(cs)
    keep.append(arr)
    return len(names), arr


# -- physical device description ----------------------------------------------------------
def device_extensions(pd) -> dict[str, int]:
    props = _enumerate(
        lambda n, p: lib.vkEnumerateDeviceExtensionProperties(pd, ffi.NULL, n, p),
        "vkEnumerateDeviceExtensionProperties",
        "VkExtensionProperties",
    )
    return {_cstr(p.extensionName): p.specVersion for p in props}


def describe_physical_device(pd, instance_api: int) -> dict:
    """Everything GpuInfo needs, as plain Python values."""
    props = ffi.new("VkPhysicalDeviceProperties*")
    lib.vkGetPhysicalDeviceProperties(pd, props)
    p = props.limits
    api = min(props.apiVersion, instance_api)
    exts = device_extensions(pd)
    d: dict = {
        "api_version": props.apiVersion,
        "driver_version": props.driverVersion,
        "vendor_id": props.vendorID,
        "device_id": props.deviceID,
        "device_type": props.deviceType,
        "device_name": _cstr(props.deviceName),
        "pipeline_cache_uuid": bytes(ffi.buffer(props.pipelineCacheUUID, 16)),
        "max_shared_memory_size": p.maxComputeSharedMemorySize,
        "max_workgroup_count": tuple(p.maxComputeWorkGroupCount[i] for i in range(3)),
        "max_workgroup_invocations": p.maxComputeWorkGroupInvocations,
        "max_workgroup_size": tuple(p.maxComputeWorkGroupSize[i] for i in range(3)),
        "max_push_constants_size": p.maxPushConstantsSize,
        "max_storage_buffer_range": p.maxStorageBufferRange,
        "memory_map_alignment": p.minMemoryMapAlignment,
        "buffer_offset_alignment": p.minStorageBufferOffsetAlignment,
        "non_coherent_atom_size": p.nonCoherentAtomSize,
        "buffer_image_granularity": p.bufferImageGranularity,
        "timestamp_period": p.timestampPeriod,
        "extensions": exts,
        "driver_id": 0,
        "driver_name": "",
        "driver_info": "",
        "subgroup_size": 0,
        "subgroup_stages": 0,
        "subgroup_ops": 0,
    }

    # properties2 chain: subgroup (core 1.1) and driver (core 1.2 or VK_KHR_driver_properties)
    keep: list[Any] = []  # cffi structs that must outlive the call
    p2 = ffi.new("VkPhysicalDeviceProperties2*")
    p2.sType = _st("PHYSICAL_DEVICE_PROPERTIES_2")
    sub = ffi.new("VkPhysicalDeviceSubgroupProperties*")
    sub.sType = _st("PHYSICAL_DEVICE_SUBGROUP_PROPERTIES")
    chain = [sub]
    drv = None
    if api >= API_1_2 or "VK_KHR_driver_properties" in exts:
        drv = ffi.new("VkPhysicalDeviceDriverProperties*")
        drv.sType = _st("PHYSICAL_DEVICE_DRIVER_PROPERTIES")
        chain.append(drv)
    budget_ok = "VK_EXT_memory_budget" in exts
    _link(p2, chain, keep)
    if api >= API_1_1:
        lib.vkGetPhysicalDeviceProperties2(pd, p2)
        d["subgroup_size"] = sub.subgroupSize
        d["subgroup_stages"] = sub.supportedStages
        d["subgroup_ops"] = sub.supportedOperations
        if drv is not None:
            d["driver_id"] = drv.driverID
            d["driver_name"] = _cstr(drv.driverName)
            d["driver_info"] = _cstr(drv.driverInfo)
    d["support_memory_budget"] = budget_ok

    # features2 chain: 16-bit storage (core 1.1), 8-bit storage / float16-int8 (core 1.2 or KHR)
    d.update(_query_features(pd, api, exts))

    # memory
    mp = ffi.new("VkPhysicalDeviceMemoryProperties*")
    lib.vkGetPhysicalDeviceMemoryProperties(pd, mp)
    d["memory_types"] = [
        (mp.memoryTypes[i].propertyFlags, mp.memoryTypes[i].heapIndex) for i in range(mp.memoryTypeCount)
    ]
    d["memory_heaps"] = [(mp.memoryHeaps[i].size, mp.memoryHeaps[i].flags) for i in range(mp.memoryHeapCount)]

    # queues
    n = ffi.new("uint32_t*")
    lib.vkGetPhysicalDeviceQueueFamilyProperties(pd, n, ffi.NULL)
    qf = ffi.new("VkQueueFamilyProperties[]", max(n[0], 1))
    lib.vkGetPhysicalDeviceQueueFamilyProperties(pd, n, qf)
    d["queue_families"] = [(qf[i].queueFlags, qf[i].queueCount) for i in range(n[0])]
    return d


def _link(head, chain: list, keep: list) -> None:
    prev = head
    for s in chain:
        prev.pNext = s
        prev = s
    keep.extend(chain)


def _feature_chain(api: int, exts) -> dict:
    """Fresh, zeroed feature structs this device can be asked about, by short name."""
    chain = {}
    s16 = ffi.new("VkPhysicalDevice16BitStorageFeatures*")
    s16.sType = _st("PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES")
    chain["16bit"] = s16
    if api >= API_1_2 or "VK_KHR_8bit_storage" in exts:
        s8 = ffi.new("VkPhysicalDevice8BitStorageFeatures*")
        s8.sType = _st("PHYSICAL_DEVICE_8BIT_STORAGE_FEATURES")
        chain["8bit"] = s8
    if api >= API_1_2 or "VK_KHR_shader_float16_int8" in exts:
        f16 = ffi.new("VkPhysicalDeviceShaderFloat16Int8Features*")
        f16.sType = _st("PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES")
        chain["f16i8"] = f16
    return chain


_FEATURE_FIELDS = {
    # our flag name: (chain key, struct field)
    "support_fp16_storage": ("16bit", "storageBuffer16BitAccess"),
    "support_fp16_uniform": ("16bit", "uniformAndStorageBuffer16BitAccess"),
    "support_int8_storage": ("8bit", "storageBuffer8BitAccess"),
    "support_int8_uniform": ("8bit", "uniformAndStorageBuffer8BitAccess"),
    "support_fp16_arithmetic": ("f16i8", "shaderFloat16"),
    "support_int8_arithmetic": ("f16i8", "shaderInt8"),
}


def _query_features(pd, api: int, exts) -> dict:
    out = {k: False for k in _FEATURE_FIELDS}
    out["support_int64"] = False
    out["support_fp64"] = False
    if api < API_1_1:
        return out
    keep: list[Any] = []  # cffi structs that must outlive the call
    f2 = ffi.new("VkPhysicalDeviceFeatures2*")
    f2.sType = _st("PHYSICAL_DEVICE_FEATURES_2")
    chain = _feature_chain(api, exts)
    _link(f2, list(chain.values()), keep)
    lib.vkGetPhysicalDeviceFeatures2(pd, f2)
    for flag, (key, field) in _FEATURE_FIELDS.items():
        if key in chain:
            out[flag] = bool(getattr(chain[key], field))
    out["support_int64"] = bool(f2.features.shaderInt64)
    out["support_fp64"] = bool(f2.features.shaderFloat64)
    return out


def heap_budget(pd, heap_index: int) -> int:
    """Budget in bytes of one heap through VK_EXT_memory_budget (caller checks the extension)."""
    mp2 = ffi.new("VkPhysicalDeviceMemoryProperties2*")
    mp2.sType = _st("PHYSICAL_DEVICE_MEMORY_PROPERTIES_2")
    b = ffi.new("VkPhysicalDeviceMemoryBudgetPropertiesEXT*")
    b.sType = _st("PHYSICAL_DEVICE_MEMORY_BUDGET_PROPERTIES_EXT")
    mp2.pNext = b
    lib.vkGetPhysicalDeviceMemoryProperties2(pd, mp2)
    return int(b.heapBudget[heap_index]) - int(b.heapUsage[heap_index])


# -- logical device ---------------------------------------------------------------------
def create_device(pd, queue_family: int, queue_count: int, extensions: list[str], features: dict, api: int):
    """vkCreateDevice with one queue family; ``features`` holds our support_* flags to enable."""
    keep: list[Any] = []  # cffi structs that must outlive the call
    prio = ffi.new("float[]", [1.0] * queue_count)
    qci = ffi.new("VkDeviceQueueCreateInfo*")
    qci.sType = _st("DEVICE_QUEUE_CREATE_INFO")
    qci.queueFamilyIndex = queue_family
    qci.queueCount = queue_count
    qci.pQueuePriorities = prio

    ci = ffi.new("VkDeviceCreateInfo*")
    ci.sType = _st("DEVICE_CREATE_INFO")
    ci.queueCreateInfoCount = 1
    ci.pQueueCreateInfos = qci
    ci.enabledExtensionCount, ci.ppEnabledExtensionNames = _str_array(extensions, keep)
    if api >= API_1_1:
        f2 = ffi.new("VkPhysicalDeviceFeatures2*")
        f2.sType = _st("PHYSICAL_DEVICE_FEATURES_2")
        f2.features.shaderInt64 = int(features.get("support_int64", False))
        chain = _feature_chain(api, extensions)
        used = []
        for flag, (key, field) in _FEATURE_FIELDS.items():
            if key in chain and features.get(flag):
                setattr(chain[key], field, 1)
                if chain[key] not in used:
                    used.append(chain[key])
        _link(f2, used, keep)
        ci.pNext = f2
        keep.append(f2)
    out = ffi.new("VkDevice*")
    check(lib.vkCreateDevice(pd, ci, ffi.NULL, out), "vkCreateDevice")
    device = out[0]
    queues = []
    for i in range(queue_count):
        q = ffi.new("VkQueue*")
        lib.vkGetDeviceQueue(device, queue_family, i, q)
        queues.append(q[0])
    return device, queues


def destroy_device(device) -> None:
    lib.vkDeviceWaitIdle(device)
    lib.vkDestroyDevice(device, ffi.NULL)


def device_proc(device, name: str, ctype: str):
    """An extension entry point (the binding only exposes core symbols), or None."""
    fn = lib.vkGetDeviceProcAddr(device, name.encode())
    if fn == ffi.NULL:
        return None
    return ffi.cast(ctype, fn)


def device_wait_idle(device) -> None:
    check(lib.vkDeviceWaitIdle(device), "vkDeviceWaitIdle")


# -- memory and buffers -----------------------------------------------------------------
def create_buffer(device, size: int, usage: int):
    ci = ffi.new("VkBufferCreateInfo*")
    ci.sType = _st("BUFFER_CREATE_INFO")
    ci.size = size
    ci.usage = usage
    ci.sharingMode = 0  # exclusive: one queue family
    out = ffi.new("VkBuffer*")
    check(lib.vkCreateBuffer(device, ci, ffi.NULL, out), "vkCreateBuffer")
    return out[0]


def buffer_memory_requirements(device, buffer) -> tuple[int, int, int]:
    req = ffi.new("VkMemoryRequirements*")
    lib.vkGetBufferMemoryRequirements(device, buffer, req)
    return req.size, req.alignment, req.memoryTypeBits


def allocate_memory(device, size: int, type_index: int):
    ai = ffi.new("VkMemoryAllocateInfo*")
    ai.sType = _st("MEMORY_ALLOCATE_INFO")
    ai.allocationSize = size
    ai.memoryTypeIndex = type_index
    out = ffi.new("VkDeviceMemory*")
    check(lib.vkAllocateMemory(device, ai, ffi.NULL, out), "vkAllocateMemory")
    return out[0]


def bind_buffer_memory(device, buffer, memory, offset: int = 0) -> None:
    check(lib.vkBindBufferMemory(device, buffer, memory, offset), "vkBindBufferMemory")


def map_memory(device, memory, offset: int = 0, size: int = VK_WHOLE_SIZE) -> int:
    out = ffi.new("void**")
    check(lib.vkMapMemory(device, memory, offset, size, 0, out), "vkMapMemory")
    return int(ffi.cast("uintptr_t", out[0]))


def unmap_memory(device, memory) -> None:
    lib.vkUnmapMemory(device, memory)


def destroy_buffer(device, buffer) -> None:
    lib.vkDestroyBuffer(device, buffer, ffi.NULL)


def free_memory(device, memory) -> None:
    lib.vkFreeMemory(device, memory, ffi.NULL)


def host_view(address: int, size: int):
    """A writable numpy uint8 view of ``size`` bytes of mapped memory (no copy)."""
    import numpy as np  # noqa: PLC0415

    return np.frombuffer(ffi.buffer(ffi.cast("uint8_t*", address), size), dtype=np.uint8)


# -- command pools, fences, descriptor pools -------------------------------------------------
def create_command_pool(device, queue_family: int, transient: bool = True):
    ci = ffi.new("VkCommandPoolCreateInfo*")
    ci.sType = _st("COMMAND_POOL_CREATE_INFO")
    ci.flags = 0x1 if transient else 0  # TRANSIENT: buffers are re-recorded after each submit
    ci.queueFamilyIndex = queue_family
    out = ffi.new("VkCommandPool*")
    check(lib.vkCreateCommandPool(device, ci, ffi.NULL, out), "vkCreateCommandPool")
    return out[0]


def destroy_command_pool(device, pool) -> None:
    lib.vkDestroyCommandPool(device, pool, ffi.NULL)


def reset_command_pool(device, pool) -> None:
    check(lib.vkResetCommandPool(device, pool, 0), "vkResetCommandPool")


def allocate_command_buffer(device, pool):
    ai = ffi.new("VkCommandBufferAllocateInfo*")
    ai.sType = _st("COMMAND_BUFFER_ALLOCATE_INFO")
    ai.commandPool = pool
    ai.level = 0  # primary
    ai.commandBufferCount = 1
    out = ffi.new("VkCommandBuffer*")
    check(lib.vkAllocateCommandBuffers(device, ai, out), "vkAllocateCommandBuffers")
    return out[0]


def create_fence(device):
    ci = ffi.new("VkFenceCreateInfo*")
    ci.sType = _st("FENCE_CREATE_INFO")
    out = ffi.new("VkFence*")
    check(lib.vkCreateFence(device, ci, ffi.NULL, out), "vkCreateFence")
    return out[0]


def destroy_fence(device, fence) -> None:
    lib.vkDestroyFence(device, fence, ffi.NULL)


def create_descriptor_pool(device, max_sets: int, storage_buffers: int):
    size = ffi.new("VkDescriptorPoolSize*")
    size.type = DESCRIPTOR_TYPE_STORAGE_BUFFER
    size.descriptorCount = storage_buffers
    ci = ffi.new("VkDescriptorPoolCreateInfo*")
    ci.sType = _st("DESCRIPTOR_POOL_CREATE_INFO")
    ci.maxSets = max_sets
    ci.poolSizeCount = 1
    ci.pPoolSizes = size
    out = ffi.new("VkDescriptorPool*")
    check(lib.vkCreateDescriptorPool(device, ci, ffi.NULL, out), "vkCreateDescriptorPool")
    return out[0]


def destroy_descriptor_pool(device, pool) -> None:
    lib.vkDestroyDescriptorPool(device, pool, ffi.NULL)


def reset_descriptor_pool(device, pool) -> None:
    check(lib.vkResetDescriptorPool(device, pool, 0), "vkResetDescriptorPool")


# -- recording ----------------------------------------------------------------------------
_PC_WORDS = 64  # 256 bytes: the largest maxPushConstantsSize drivers report


class CommandRecorder:
    """One command pool + command buffer + fence, with the structs every record reuses.

    Owned by one VkCompute (command pools are externally synchronised), so no locking here.
    """

    def __init__(self, device, queue_family: int, one_time: bool = True) -> None:
        self.device = device
        self.pool = create_command_pool(device, queue_family)
        self.cb = allocate_command_buffer(device, self.pool)
        self.fence = create_fence(device)
        self.desc_pools: list = []
        self.desc_pool_index = 0

        self._begin = ffi.new("VkCommandBufferBeginInfo*")
        self._begin.sType = _st("COMMAND_BUFFER_BEGIN_INFO")
        # a buffer kept for replay is submitted many times (one at a time: every submit waits)
        self._begin.flags = 0x1 if one_time else 0  # ONE_TIME_SUBMIT
        self._barrier = ffi.new("VkMemoryBarrier*")
        self._barrier.sType = _st("MEMORY_BARRIER")
        self._region = ffi.new("VkBufferCopy*")
        self._fences = ffi.new("VkFence[1]", [self.fence])
        self._cbs = ffi.new("VkCommandBuffer[1]", [self.cb])
        self._submit = ffi.new("VkSubmitInfo*")
        self._submit.sType = _st("SUBMIT_INFO")
        self._submit.commandBufferCount = 1
        self._submit.pCommandBuffers = self._cbs
        self._pc = ffi.new("uint32_t[]", _PC_WORDS)
        self._pc_buf = ffi.buffer(self._pc)
        self._set_layout = ffi.new("VkDescriptorSetLayout[1]")
        self._set_alloc = ffi.new("VkDescriptorSetAllocateInfo*")
        self._set_alloc.sType = _st("DESCRIPTOR_SET_ALLOCATE_INFO")
        self._set_alloc.descriptorSetCount = 1
        self._set_alloc.pSetLayouts = self._set_layout
        self._set = ffi.new("VkDescriptorSet[1]")
        self._writes_n = 0
        self._writes: Any = None  # cffi VkWriteDescriptorSet[] (set by _grow_writes)
        self._infos: Any = None  # cffi VkDescriptorBufferInfo[]
        self._grow_writes(16)

    def _grow_writes(self, n: int) -> None:
        self._writes = ffi.new("VkWriteDescriptorSet[]", n)
        self._infos = ffi.new("VkDescriptorBufferInfo[]", n)
        st = _st("WRITE_DESCRIPTOR_SET")
        for i in range(n):
            w = self._writes[i]
            w.sType = st
            w.dstBinding = i
            w.descriptorCount = 1
            w.descriptorType = DESCRIPTOR_TYPE_STORAGE_BUFFER
            w.pBufferInfo = self._infos + i
        self._writes_n = n

    def begin(self) -> None:
        check(lib.vkBeginCommandBuffer(self.cb, self._begin), "vkBeginCommandBuffer")

    def end(self) -> None:
        check(lib.vkEndCommandBuffer(self.cb), "vkEndCommandBuffer")

    def barrier(self, src_stage: int, src_access: int, dst_stage: int, dst_access: int) -> None:
        b = self._barrier
        b.srcAccessMask = src_access
        b.dstAccessMask = dst_access
        lib.vkCmdPipelineBarrier(self.cb, src_stage, dst_stage, 0, 1, b, 0, ffi.NULL, 0, ffi.NULL)

    def copy_buffer(self, src, src_offset: int, dst, dst_offset: int, size: int) -> None:
        r = self._region
        r.srcOffset = src_offset
        r.dstOffset = dst_offset
        r.size = size
        lib.vkCmdCopyBuffer(self.cb, src, dst, 1, r)

    def fill_buffer(self, dst, offset: int, size: int, value: int) -> None:
        lib.vkCmdFillBuffer(self.cb, dst, offset, size, value)

    def _allocate_set(self, layout):
        self._set_layout[0] = layout
        while True:
            if self.desc_pool_index == len(self.desc_pools):
                self.desc_pools.append(create_descriptor_pool(self.device, 256, 2048))
            self._set_alloc.descriptorPool = self.desc_pools[self.desc_pool_index]
            r = lib.vkAllocateDescriptorSets(self.device, self._set_alloc, self._set)
            if r == VK_SUCCESS:
                return self._set[0]
            if r in (VK_ERROR_OUT_OF_POOL_MEMORY, VK_ERROR_FRAGMENTED_POOL):
                self.desc_pool_index += 1
                continue
            raise VulkanError(r, "vkAllocateDescriptorSets")

    def dispatch(
        self, pipeline, layout, set_layout, buffers, pc_fmt: str | None, pc_values, gx: int, gy: int, gz: int
    ) -> None:
        """Bind ``pipeline``, a fresh descriptor set of ``buffers`` [(buffer, offset, range)],
        push constants packed with ``pc_fmt`` and dispatch (gx, gy, gz) groups."""
        cb = self.cb
        n = len(buffers)
        if n:
            ds = self._allocate_set(set_layout)
            if n > self._writes_n:
                self._grow_writes(max(n, 2 * self._writes_n))
            writes, infos = self._writes, self._infos
            for i, (buf, off, rng) in enumerate(buffers):
                info = infos[i]
                info.buffer = buf
                info.offset = off
                info.range = rng
                writes[i].dstSet = ds
            lib.vkUpdateDescriptorSets(self.device, n, writes, 0, ffi.NULL)
        lib.vkCmdBindPipeline(cb, PIPELINE_BIND_POINT_COMPUTE, pipeline)
        if n:
            lib.vkCmdBindDescriptorSets(cb, PIPELINE_BIND_POINT_COMPUTE, layout, 0, 1, self._set, 0, ffi.NULL)
        if pc_fmt:
            struct.pack_into(pc_fmt, self._pc_buf, 0, *pc_values)
            lib.vkCmdPushConstants(cb, layout, SHADER_STAGE_COMPUTE, 0, 4 * len(pc_values), self._pc)
        lib.vkCmdDispatch(cb, gx, gy, gz)

    def submit_and_wait(self, queue, timeout_ns: int = (1 << 64) - 1) -> None:
        check(lib.vkResetFences(self.device, 1, self._fences), "vkResetFences")
        check(lib.vkQueueSubmit(queue, 1, self._submit, self.fence), "vkQueueSubmit")
        r = lib.vkWaitForFences(self.device, 1, self._fences, 1, timeout_ns)
        if r == VK_TIMEOUT:
            raise VulkanError(r, "vkWaitForFences")
        check(r, "vkWaitForFences")

    def reset(self) -> None:
        """Make the command buffer recordable again and recycle every descriptor set."""
        reset_command_pool(self.device, self.pool)
        for i in range(min(self.desc_pool_index + 1, len(self.desc_pools))):
            reset_descriptor_pool(self.device, self.desc_pools[i])
        self.desc_pool_index = 0

    def destroy(self) -> None:
        if self.pool is None:
            return
        for p in self.desc_pools:
            destroy_descriptor_pool(self.device, p)
        self.desc_pools = []
        destroy_fence(self.device, self.fence)
        destroy_command_pool(self.device, self.pool)
        self.pool = None
