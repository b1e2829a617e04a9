"""Layers: create (plain, by type, by index), flags, bottoms/tops, and C custom layers.

Each layer handle wraps a ``_CLayer``. For ``ncnn_layer_create()`` the ``_CLayer`` *is* the
layer (a base Layer whose behaviour the C program supplies by setting the struct's function
pointers, as ncnn's custom layers do); for ``ncnn_layer_create_by_type/_by_typeindex`` it
fronts the built-in layer. Every virtual (load_param, load_model, create/destroy_pipeline,
forward 1/n, forward_inplace 1/n) first asks the C bridge whether the struct slot was
replaced; if not, the default runs: the built-in layer's method, or ncnn's base-Layer one.
"""

from __future__ import annotations

from typing import Any

from ..layer import Layer
from ._core import (
    HANDLES,
    INT,
    LAYER,
    MAT,
    MODELBIN,
    NET,
    OPTION,
    PARAMDICT,
    PTR,
    STR,
    VOID,
    TempHandles,
    _destroy,
    _export,
    _get,
    _text_arg,
    c_override,
    log,
    take_mat,
)
from .mat import _new_mat

LAYER_FLAGS = (
    "one_blob_only",
    "support_inplace",
    "support_vulkan",
    "support_packing",
    "support_bf16_storage",
    "support_fp16_storage",
    "support_vulkan_packing",
    "support_any_packing",
    "support_vulkan_any_packing",
)


class _CLayer(Layer):
    """A layer whose virtuals a C program may replace through the ``ncnn_layer_t`` struct."""

    def __init__(self, inner: Layer | None = None) -> None:
        super().__init__()
        self.inner = inner
        self.handle = 0
        if inner is not None:
            self.copy_identity()

    @property
    def target(self) -> Layer:
        return self.inner if self.inner is not None else self

    def copy_identity(self) -> None:
        """Take over the flags and names of the layer underneath (ncnn copies them on create)."""
        t = self.target
        if t is self:
            return
        for f in LAYER_FLAGS:
            setattr(self, f, getattr(t, f))
        self.type, self.typeindex, self.name = t.type, t.typeindex, t.name

    def _slot(self, name: str) -> Any:
        return c_override(self.handle, name) if self.handle else None

    # -- defaults: the built-in layer, or ncnn's base Layer
    def default(self, name: str, *args: Any) -> int:
        t = self.target
        method = getattr(Layer, name) if t is self else getattr(t, name)
        return int(method(*args) if t is not self else method(self, *args))

    def load_param(self, pd: Any) -> int:
        fn = self._slot("load_param")
        if fn is None:
            return self.default("load_param", pd)
        with TempHandles() as t:
            return int(fn(t.add(PARAMDICT, pd)))

    def load_model(self, mb: Any) -> int:
        fn = self._slot("load_model")
        if fn is None:
            return self.default("load_model", mb)
        with TempHandles() as t:
            return int(fn(t.add(MODELBIN, mb)))

    def create_pipeline(self, opt: Any) -> int:
        fn = self._slot("create_pipeline")
        if fn is None:
            return self.default("create_pipeline", opt)
        with TempHandles() as t:
            return int(fn(t.add(OPTION, opt)))

    def destroy_pipeline(self, opt: Any) -> int:
        fn = self._slot("destroy_pipeline")
        if fn is None:
            return self.default("destroy_pipeline", opt)
        with TempHandles() as t:
            return int(fn(t.add(OPTION, opt)))

    def forward(self, bottom: Any, top: Any, opt: Any) -> int:
        multi = isinstance(bottom, (list, tuple))
        fn = self._slot("forward_n" if multi else "forward_1")
        if fn is None:
            return self.default("forward", bottom, top, opt)
        with TempHandles() as t:
            oh = t.add(OPTION, opt)
            if not multi:
                ret, th = fn(t.add(MAT, bottom), oh)
                top.share_from(take_mat(th))
                return int(ret)
            ret, ths = fn([t.add(MAT, b) for b in bottom], len(top), oh)
            for dst, th in zip(top, ths, strict=True):
                dst.share_from(take_mat(th))
            return int(ret)

    def forward_inplace(self, bottom_top: Any, opt: Any) -> int:
        multi = isinstance(bottom_top, (list, tuple))
        fn = self._slot("forward_inplace_n" if multi else "forward_inplace_1")
        if fn is None:
            return self.default("forward_inplace", bottom_top, opt)
        with TempHandles() as t:
            oh = t.add(OPTION, opt)
            if multi:
                return int(fn([t.add(MAT, m) for m in bottom_top], oh))
            return int(fn(t.add(MAT, bottom_top), oh))


def _new_layer(obj: _CLayer) -> int:
    obj.handle = HANDLES.add(LAYER, obj)
    return obj.handle


def _layer(h: Any) -> _CLayer:
    obj = _get(h, LAYER)
    if not isinstance(obj, _CLayer):
        raise TypeError("not a C API layer")
    return obj


@_export(PTR)
def ncnn_layer_create() -> int:
    return _new_layer(_CLayer())


def _builtin(type_or_index: Any) -> int:
    from ..layer import create_layer_cpu

    inner = create_layer_cpu(type_or_index)
    if inner is None:
        raise ValueError(f"no layer type {type_or_index!r}")
    return _new_layer(_CLayer(inner))


@_export(PTR)
def ncnn_layer_create_by_typeindex(typeindex: int) -> int:
    return _builtin(int(typeindex))


@_export(PTR)
def ncnn_layer_create_by_type(type: Any) -> int:  # noqa: A002 - ncnn's name
    return _builtin(_text_arg(type, "type"))


@_export(INT)
def ncnn_layer_type_to_index(type: Any) -> int:  # noqa: A002
    from ..layer import layer_to_index

    return int(layer_to_index(_text_arg(type, "type")))


@_export(VOID)
def ncnn_layer_destroy(layer: int) -> None:
    _destroy(layer, LAYER)


@_export(STR)
def ncnn_layer_get_name(layer: int) -> str:
    return str(_layer(layer).target.name)


@_export(INT)
def ncnn_layer_get_typeindex(layer: int) -> int:
    return int(_layer(layer).target.typeindex)


@_export(STR)
def ncnn_layer_get_type(layer: int) -> str:
    return str(_layer(layer).target.type)


def _make_flag_accessors(flag: str) -> None:
    def getter(layer: int) -> int:
        return int(bool(getattr(_layer(layer).target, flag)))

    def setter(layer: int, enable: int) -> None:
        obj = _layer(layer)
        setattr(obj.target, flag, bool(enable))
        setattr(obj, flag, bool(enable))

    getter.__name__ = getter.__qualname__ = f"ncnn_layer_get_{flag}"
    setter.__name__ = setter.__qualname__ = f"ncnn_layer_set_{flag}"
    getter.__doc__ = f"``layer.{flag}`` as 0/1 (-1 on a bad handle)."
    setter.__doc__ = f"Set ``layer.{flag}``."
    globals()[getter.__name__] = _export(INT)(getter)
    globals()[setter.__name__] = _export(VOID)(setter)


for _flag in LAYER_FLAGS:
    _make_flag_accessors(_flag)
del _flag


def _nth(seq: list[Any], i: int, what: str) -> Any:
    if not 0 <= int(i) < len(seq):
        raise IndexError(f"{what} {i} out of range 0..{len(seq) - 1}")
    return seq[int(i)]


@_export(INT)
def ncnn_layer_get_bottom_count(layer: int) -> int:
    return len(_layer(layer).target.bottoms)


@_export(INT)
def ncnn_layer_get_bottom(layer: int, i: int) -> int:
    return int(_nth(_layer(layer).target.bottoms, i, "bottom"))


@_export(INT)
def ncnn_layer_get_top_count(layer: int) -> int:
    return len(_layer(layer).target.tops)


@_export(INT)
def ncnn_layer_get_top(layer: int, i: int) -> int:
    return int(_nth(_layer(layer).target.tops, i, "top"))


# ---- the struct's default slots (C calls layer->forward_1(...) without replacing it)


def default_call(layer: int, slot: str, *args: Any) -> Any:
    """Run slot ``slot`` of ``layer`` with its default behaviour. Handles in, handles out:

    load_param(pd) load_model(mb) create_pipeline(opt) destroy_pipeline(opt) -> int;
    forward_1(bottom, opt) -> (ret, top); forward_n([bottoms], n2, opt) -> (ret, [tops]);
    forward_inplace_1(mat, opt) / forward_inplace_n([mats], opt) -> int.
    """
    from ..mat import Mat
    from ..option import Option

    obj = _layer(layer)

    def opt_of(h: int) -> Any:
        return _get(h, OPTION) if h else Option()

    if slot == "load_param":
        return obj.default("load_param", _get(args[0], PARAMDICT))
    if slot == "load_model":
        return obj.default("load_model", _get(args[0], MODELBIN))
    if slot in ("create_pipeline", "destroy_pipeline"):
        return obj.default(slot, opt_of(args[0]))
    if slot == "forward_1":
        top = Mat()
        ret = obj.default("forward", _get(args[0], MAT), top, opt_of(args[1]))
        return ret, _new_mat(top)
    if slot == "forward_n":
        bottoms = [_get(h, MAT) for h in args[0]]
        tops = [Mat() for _ in range(int(args[1]))]
        ret = obj.default("forward", bottoms, tops, opt_of(args[2]))
        return ret, [_new_mat(t) for t in tops]
    if slot == "forward_inplace_1":
        return obj.default("forward_inplace", _get(args[0], MAT), opt_of(args[1]))
    if slot == "forward_inplace_n":
        return obj.default("forward_inplace", [_get(h, MAT) for h in args[0]], opt_of(args[1]))
    raise ValueError(f"unknown layer slot {slot!r}")


# ---- custom layers in a net


def _register(net: int, key: Any, creator: Any, destroyer: Any, userdata: Any) -> None:
    n = _get(net, NET)
    if not callable(creator):
        raise ValueError("creator must be a function")

    def create(*_: Any) -> Any:
        h = creator(userdata)
        if not h:
            log.error("custom layer %r: creator returned NULL", key)
            return None
        obj = _layer(h)
        obj.copy_identity()
        return obj

    def destroy(layer_obj: Any, *_: Any) -> None:
        if callable(destroyer):
            destroyer(getattr(layer_obj, "handle", 0), userdata)

    ret = n.register_custom_layer(key, create, destroy)
    if ret != 0:
        raise ValueError(f"register_custom_layer({key!r}) failed ({ret})")


@_export(VOID)
def ncnn_net_register_custom_layer_by_type(
    net: int, type: Any, creator: Any, destroyer: Any, userdata: Any
) -> None:  # noqa: A002
    """``creator(userdata) -> layer handle``, ``destroyer(layer_handle, userdata)``: C function
    pointers (through the bridge) or Python callables."""
    _register(net, _text_arg(type, "type"), creator, destroyer, userdata)


@_export(VOID)
def ncnn_net_register_custom_layer_by_typeindex(
    net: int, typeindex: int, creator: Any, destroyer: Any, userdata: Any
) -> None:  # noqa: E501
    _register(net, int(typeindex), creator, destroyer, userdata)
