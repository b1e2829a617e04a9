"""The raw Vulkan calls behind pipelines and the pipeline cache.

Shader modules, descriptor set layouts, pipeline layouts, compute pipelines, descriptor
update templates and ``VkPipelineCache`` objects are created and destroyed here, on raw
handles, through ``vulkan.lib`` (see ``_vk``: the binding's wrappers are slow, raise on
``VK_INCOMPLETE`` and lack ``vkGetPipelineCacheData``). Failures raise ``VulkanError``.
"""

from __future__ import annotations

from . import _vk
from ._vk import VulkanError, check

SHADER_STAGE_COMPUTE = 0x20

# ShaderInfo binding kind -> VkDescriptorType
_DESCRIPTOR_TYPES = {
    1: 7,  # storage buffer
    2: 3,  # storage image
    3: 1,  # combined image sampler
    4: 6,  # uniform buffer
}

# Descriptor update template entries are laid out as an array of 24-byte records, one per
# binding, each a VkDescriptorBufferInfo or VkDescriptorImageInfo (both 24 bytes).
DESCRIPTOR_INFO_STRIDE = 24


def _lib():
    return _vk.load()


def _dev(vkdev):
    return vkdev.vk_device


def create_shader_module(vkdev, spirv: bytes):
    lib = _lib()
    ffi = _vk.ffi
    code = ffi.new("uint32_t[]", len(spirv) // 4)
    ffi.memmove(code, spirv, len(spirv))
    ci = ffi.new("VkShaderModuleCreateInfo*")
    ci.sType = _vk._st("SHADER_MODULE_CREATE_INFO")
    ci.codeSize = len(spirv)
    ci.pCode = code
    out = ffi.new("VkShaderModule*")
    check(lib.vkCreateShaderModule(_dev(vkdev), ci, ffi.NULL, out), "vkCreateShaderModule")
    return out[0]


def destroy_shader_module(vkdev, module) -> None:
    _lib().vkDestroyShaderModule(_dev(vkdev), module, _vk.ffi.NULL)


def create_descriptor_set_layout(vkdev, binding_types):
    lib = _lib()
    ffi = _vk.ffi
    n = len(binding_types)
    ci = ffi.new("VkDescriptorSetLayoutCreateInfo*")
    ci.sType = _vk._st("DESCRIPTOR_SET_LAYOUT_CREATE_INFO")
    bindings = ffi.new("VkDescriptorSetLayoutBinding[]", max(n, 1))
    for i, kind in enumerate(binding_types):
        b = bindings[i]
        b.binding = i
        # An unused binding slot still needs a type; storage buffer is what ncnn shaders use.
        b.descriptorType = _DESCRIPTOR_TYPES.get(kind, 7)
        b.descriptorCount = 1
        b.stageFlags = SHADER_STAGE_COMPUTE
    ci.bindingCount = n
    ci.pBindings = bindings if n else ffi.NULL
    out = ffi.new("VkDescriptorSetLayout*")
    check(lib.vkCreateDescriptorSetLayout(_dev(vkdev), ci, ffi.NULL, out), "vkCreateDescriptorSetLayout")
    return out[0]


def destroy_descriptor_set_layout(vkdev, layout) -> None:
    _lib().vkDestroyDescriptorSetLayout(_dev(vkdev), layout, _vk.ffi.NULL)


def create_pipeline_layout(vkdev, set_layout, push_constant_count: int):
    lib = _lib()
    ffi = _vk.ffi
    ci = ffi.new("VkPipelineLayoutCreateInfo*")
    ci.sType = _vk._st("PIPELINE_LAYOUT_CREATE_INFO")
    layouts = ffi.new("VkDescriptorSetLayout[1]", [set_layout])
    ci.setLayoutCount = 1
    ci.pSetLayouts = layouts
    rng = ffi.new("VkPushConstantRange*")
    if push_constant_count > 0:
        rng.stageFlags = SHADER_STAGE_COMPUTE
        rng.offset = 0
        rng.size = 4 * push_constant_count
        ci.pushConstantRangeCount = 1
        ci.pPushConstantRanges = rng
    out = ffi.new("VkPipelineLayout*")
    check(lib.vkCreatePipelineLayout(_dev(vkdev), ci, ffi.NULL, out), "vkCreatePipelineLayout")
    return out[0]


def destroy_pipeline_layout(vkdev, layout) -> None:
    _lib().vkDestroyPipelineLayout(_dev(vkdev), layout, _vk.ffi.NULL)


def create_compute_pipeline(
    vkdev, vk_pipeline_cache, shader_module, pipeline_layout, spec_ids, spec_data: bytes
):
    """One compute pipeline; ``spec_data`` holds 4 bytes per id in ``spec_ids``."""
    lib = _lib()
    ffi = _vk.ffi
    n = len(spec_ids)
    entries = ffi.new("VkSpecializationMapEntry[]", max(n, 1))
    for i, sid in enumerate(spec_ids):
        entries[i].constantID = sid
        entries[i].offset = 4 * i
        entries[i].size = 4
    data = ffi.new("char[]", max(len(spec_data), 1))
    ffi.memmove(data, spec_data, len(spec_data))
    si = ffi.new("VkSpecializationInfo*")
    si.mapEntryCount = n
    si.pMapEntries = entries
    si.dataSize = len(spec_data)
    si.pData = data

    ci = ffi.new("VkComputePipelineCreateInfo*")
    ci.sType = _vk._st("COMPUTE_PIPELINE_CREATE_INFO")
    stage = ci.stage
    stage.sType = _vk._st("PIPELINE_SHADER_STAGE_CREATE_INFO")
    stage.stage = SHADER_STAGE_COMPUTE
    stage.module = shader_module
    name = ffi.new("char[]", b"main")
    stage.pName = name
    stage.pSpecializationInfo = si
    ci.layout = pipeline_layout
    ci.basePipelineIndex = -1
    out = ffi.new("VkPipeline[1]")
    cache = vk_pipeline_cache if vk_pipeline_cache is not None else ffi.NULL
    check(lib.vkCreateComputePipelines(_dev(vkdev), cache, 1, ci, ffi.NULL, out), "vkCreateComputePipelines")
    return out[0]


def destroy_pipeline(vkdev, pipeline) -> None:
    _lib().vkDestroyPipeline(_dev(vkdev), pipeline, _vk.ffi.NULL)


def create_descriptor_update_template(vkdev, set_layout, pipeline_layout, binding_types):
    """A descriptor-set update template over 24-byte info records; None with no bindings."""
    n = len(binding_types)
    if n == 0:
        return None
    lib = _lib()
    ffi = _vk.ffi
    entries = ffi.new("VkDescriptorUpdateTemplateEntry[]", n)
    for i, kind in enumerate(binding_types):
        e = entries[i]
        e.dstBinding = i
        e.dstArrayElement = 0
        e.descriptorCount = 1
        e.descriptorType = _DESCRIPTOR_TYPES.get(kind, 7)
        e.offset = i * DESCRIPTOR_INFO_STRIDE
        e.stride = DESCRIPTOR_INFO_STRIDE
    ci = ffi.new("VkDescriptorUpdateTemplateCreateInfo*")
    ci.sType = _vk._st("DESCRIPTOR_UPDATE_TEMPLATE_CREATE_INFO")
    ci.descriptorUpdateEntryCount = n
    ci.pDescriptorUpdateEntries = entries
    ci.templateType = 0  # VK_DESCRIPTOR_UPDATE_TEMPLATE_TYPE_DESCRIPTOR_SET
    ci.descriptorSetLayout = set_layout
    ci.pipelineBindPoint = 1  # compute
    ci.pipelineLayout = pipeline_layout
    ci.set = 0
    out = ffi.new("VkDescriptorUpdateTemplate*")
    check(
        lib.vkCreateDescriptorUpdateTemplate(_dev(vkdev), ci, ffi.NULL, out),
        "vkCreateDescriptorUpdateTemplate",
    )
    return out[0]


def destroy_descriptor_update_template(vkdev, template) -> None:
    _lib().vkDestroyDescriptorUpdateTemplate(_dev(vkdev), template, _vk.ffi.NULL)


# -- VkPipelineCache ------------------------------------------------------------------------


def create_pipeline_cache(vkdev, initial_data: bytes | None = None):
    lib = _lib()
    ffi = _vk.ffi
    ci = ffi.new("VkPipelineCacheCreateInfo*")
    ci.sType = _vk._st("PIPELINE_CACHE_CREATE_INFO")
    keep = None
    if initial_data:
        keep = ffi.from_buffer(initial_data)
        ci.initialDataSize = len(initial_data)
        ci.pInitialData = ffi.cast("void*", keep)
    out = ffi.new("VkPipelineCache*")
    check(lib.vkCreatePipelineCache(_dev(vkdev), ci, ffi.NULL, out), "vkCreatePipelineCache")
    del keep
    return out[0]


def get_pipeline_cache_data(vkdev, cache) -> bytes:
    """The driver's serialized cache (size query, then data; retried while it grows)."""
    lib = _lib()
    ffi = _vk.ffi
    size = ffi.new("size_t*")
    for _ in range(8):
        check(lib.vkGetPipelineCacheData(_dev(vkdev), cache, size, ffi.NULL), "vkGetPipelineCacheData")
        if size[0] == 0:
            return b""
        buf = ffi.new("char[]", size[0])
        r = check(lib.vkGetPipelineCacheData(_dev(vkdev), cache, size, buf), "vkGetPipelineCacheData")
        if r != _vk.VK_INCOMPLETE:
            return ffi.buffer(buf, size[0])[:]
    raise VulkanError(_vk.VK_INCOMPLETE, "vkGetPipelineCacheData")


def merge_pipeline_caches(vkdev, dst_cache, src_cache) -> None:
    """vkMergePipelineCaches: ``src_cache``'s pipelines into ``dst_cache`` (the source stays as it was)."""
    srcs = _vk.ffi.new("VkPipelineCache[1]", [src_cache])
    check(_lib().vkMergePipelineCaches(_dev(vkdev), dst_cache, 1, srcs), "vkMergePipelineCaches")


def merge_pipeline_cache_data(vkdev, dst_cache, data: bytes) -> None:
    """Feed a saved driver blob into ``dst_cache`` through a temporary VkPipelineCache."""
    tmp = create_pipeline_cache(vkdev, data)
    try:
        merge_pipeline_caches(vkdev, dst_cache, tmp)
    finally:
        destroy_pipeline_cache(vkdev, tmp)


def destroy_pipeline_cache(vkdev, cache) -> None:
    _lib().vkDestroyPipelineCache(_dev(vkdev), cache, _vk.ffi.NULL)


def handle_int(h) -> int:
    """A handle as an integer (for identity comparisons in tests and logs)."""
    if h is None:
        return 0
    return int(_vk.ffi.cast("uintptr_t", h))
