"""Nets: create, options, loading from files and memory, input/output queries."""

from __future__ import annotations

import ctypes
from typing import Any

from ._core import (
    HANDLES,
    INT,
    NET,
    OPTION,
    PTR,
    SIZE,
    STR,
    VOID,
    _address,
    _destroy,
    _export,
    _get,
    _is_address,
    _memory_reader,
    _text_arg,
    log,
)


@_export(PTR)
def ncnn_net_create() -> int:
    from ..net import Net

    return HANDLES.add(NET, Net())


@_export(VOID)
def ncnn_net_destroy(net: int) -> None:
    _destroy(net, NET)


@_export(PTR)
def ncnn_net_get_option(net: int) -> int:
    n = _get(net, NET)
    # Resolved on each use so the handle follows net.opt even if Net replaces the object.
    return HANDLES.child(net, "opt", OPTION, lambda: n.opt)


@_export(VOID)
def ncnn_net_set_option(net: int, opt: int) -> None:
    n = _get(net, NET)
    src = _get(opt, OPTION)
    if src is n.opt:
        return
    # ncnn assigns the struct (net->opt = *opt): every field, allocators and cache included,
    # into the net's own object, so borrowed handles see the new values.
    vars(n.opt).update(vars(src))


@_export(VOID)
def ncnn_net_set_vulkan_device(net: int, device_index: int) -> None:
    ret = _get(net, NET).set_vulkan_device(int(device_index))
    if isinstance(ret, int) and ret != 0:
        log.error("ncnn_net_set_vulkan_device: device %d rejected (%d)", device_index, ret)


def _load_ret(ret: Any) -> int:
    return int(ret) if ret is not None else 0


@_export(INT)
def ncnn_net_load_param(net: int, path: Any) -> int:
    return _load_ret(_get(net, NET).load_param(_text_arg(path, "path")))


@_export(INT)
def ncnn_net_load_param_bin(net: int, path: Any) -> int:
    return _load_ret(_get(net, NET).load_param_bin(_text_arg(path, "path")))


@_export(INT)
def ncnn_net_load_model(net: int, path: Any) -> int:
    return _load_ret(_get(net, NET).load_model(_text_arg(path, "path")))


@_export(INT)
def ncnn_net_load_param_memory(net: int, mem: Any) -> int:
    n = _get(net, NET)
    if _is_address(mem):
        mem = ctypes.string_at(_address(mem, "mem"))
    return _load_ret(n.load_param_mem(_text_arg(mem, "mem")))


@_export(SIZE)
def ncnn_net_load_param_bin_memory(net: int, mem: Any) -> int:
    """Bytes consumed; 0 on failure (ncnn returns the count even when loading failed)."""
    n = _get(net, NET)
    reader = _memory_reader(mem)
    if _load_ret(n.load_param_bin(reader)) != 0:
        return 0
    return int(reader.consumed)


@_export(SIZE)
def ncnn_net_load_model_memory(net: int, mem: Any) -> int:
    """Bytes consumed; 0 on failure (ncnn returns the count even when loading failed)."""
    n = _get(net, NET)
    reader = _memory_reader(mem)
    if _load_ret(n.load_model(reader)) != 0:
        return 0
    return int(reader.consumed)


@_export(VOID)
def ncnn_net_clear(net: int) -> None:
    _get(net, NET).clear()


@_export(INT)
def ncnn_net_get_input_count(net: int) -> int:
    return len(_get(net, NET).input_names())


@_export(INT)
def ncnn_net_get_output_count(net: int) -> int:
    return len(_get(net, NET).output_names())


def _nth(seq: list[Any], i: int, what: str) -> Any:
    if not 0 <= i < len(seq):
        raise IndexError(f"{what} {i} out of range 0..{len(seq) - 1}")
    return seq[i]


@_export(STR)
def ncnn_net_get_input_name(net: int, i: int) -> str:
    return str(_nth(_get(net, NET).input_names(), i, "input"))


@_export(STR)
def ncnn_net_get_output_name(net: int, i: int) -> str:
    return str(_nth(_get(net, NET).output_names(), i, "output"))


@_export(INT)
def ncnn_net_get_input_index(net: int, i: int) -> int:
    return int(_nth(_get(net, NET).input_indexes(), i, "input"))


@_export(INT)
def ncnn_net_get_output_index(net: int, i: int) -> int:
    return int(_nth(_get(net, NET).output_indexes(), i, "output"))


@_export(INT)
def ncnn_net_load_param_datareader(net: int, dr: int) -> int:
    from ._core import DATAREADER

    return _load_ret(_get(net, NET).load_param(_get(dr, DATAREADER)))


@_export(INT)
def ncnn_net_load_param_bin_datareader(net: int, dr: int) -> int:
    from ._core import DATAREADER

    return _load_ret(_get(net, NET).load_param_bin(_get(dr, DATAREADER)))


@_export(INT)
def ncnn_net_load_model_datareader(net: int, dr: int) -> int:
    from ._core import DATAREADER

    return _load_ret(_get(net, NET).load_model(_get(dr, DATAREADER)))
