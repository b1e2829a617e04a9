"""Options: create/destroy, thread count, allocators, every ``use_*`` flag."""

from __future__ import annotations

from ._core import (
    ALLOCATOR,
    HANDLES,
    INT,
    OPTION,
    PIPELINECACHE,
    PTR,
    VOID,
    _destroy,
    _export,
    _get,
    _opt_get,
)

# Every flag with an ncnn_option_get_/set_ pair in c_api.h; the accessors are generated.
OPTION_FLAGS = (
    "use_vulkan_compute",
    "use_local_pool_allocator",
    "use_winograd_convolution",
    "use_sgemm_convolution",
    "use_packing_layout",
    "use_fp16_packed",
    "use_fp16_storage",
    "use_fp16_arithmetic",
    "use_int8_packed",
    "use_int8_storage",
    "use_int8_arithmetic",
    "use_int16_packed",
    "use_int16_storage",
    "use_bf16_packed",
    "use_bf16_storage",
    "use_shader_local_memory",
    "use_cooperative_matrix",
)


@_export(PTR)
def ncnn_option_create() -> int:
    from ..option import Option

    return HANDLES.add(OPTION, Option())


@_export(VOID)
def ncnn_option_destroy(opt: int) -> None:
    _destroy(opt, OPTION)


@_export(INT)
def ncnn_option_get_num_threads(opt: int) -> int:
    return int(_get(opt, OPTION).num_threads)


@_export(VOID)
def ncnn_option_set_num_threads(opt: int, num_threads: int) -> None:
    _get(opt, OPTION).num_threads = int(num_threads)


@_export(VOID)
def ncnn_option_set_blob_allocator(opt: int, allocator: int) -> None:
    o = _get(opt, OPTION)
    o.blob_allocator = _opt_get(allocator, ALLOCATOR)


@_export(VOID)
def ncnn_option_set_workspace_allocator(opt: int, allocator: int) -> None:
    o = _get(opt, OPTION)
    o.workspace_allocator = _opt_get(allocator, ALLOCATOR)


@_export(VOID)
def ncnn_option_set_pipeline_cache(opt: int, pipelinecache: int) -> None:
    o = _get(opt, OPTION)
    o.pipeline_cache = _opt_get(pipelinecache, PIPELINECACHE)


def _make_flag_accessors(flag: str) -> None:
    def getter(opt: int) -> int:
        return int(bool(getattr(_get(opt, OPTION), flag)))

    def setter(opt: int, enable: int) -> None:
        setattr(_get(opt, OPTION), flag, bool(enable))

    getter.__name__ = getter.__qualname__ = f"ncnn_option_get_{flag}"
    setter.__name__ = setter.__qualname__ = f"ncnn_option_set_{flag}"
    getter.__doc__ = f"``opt.{flag}`` as 0/1 (-1 on a bad handle)."
    setter.__doc__ = f"Set ``opt.{flag}``."
    globals()[getter.__name__] = _export(INT)(getter)
    globals()[setter.__name__] = _export(VOID)(setter)


for _flag in OPTION_FLAGS:
    _make_flag_accessors(_flag)
del _flag
