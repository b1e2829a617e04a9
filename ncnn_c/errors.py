"""Exception types used inside ncnn_c (the ncnn-shaped API turns them into int returns)."""


class NcnnError(Exception):
    """Base of every ncnn_c error."""


class ModelFormatError(NcnnError):
    """A .param / .bin file that cannot be read: garbage, truncated, oversized."""


class VulkanUnavailable(NcnnError):
    """No Vulkan loader, driver or device."""


class PipelineGone(NcnnError):
    """A dispatch of a Pipeline whose Vulkan objects do not exist (any more)."""


class ForkedProcessError(NcnnError):
    """Vulkan objects used in a child of fork(): they belong to the parent and would hang."""
