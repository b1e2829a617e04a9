"""The native CPU plan: record once per input shape, then run the whole net in native code.

The numpy layers are the reference and the fallback; they cost a Python call per layer and
hand threads over in Python. After the first extract of a shape has run them (and logged
every blob's shape), ``build()`` turns the layers it can into oneDNN primitives
(``ncnn_c._native.dnnl``): convolutions with their activation fused, pooling, inner
products, activations, concat, eltwise sums and products, softmax, flatten. Their
intermediate blobs live in one arena whose offsets follow the blobs' lifetimes, in the
layouts oneDNN picked (blocked channels on AVX-512 / AVX2). A later extract of the same
shape runs the plan: one C call per native segment, the GIL released, oneDNN's threads
inside. Layers with no native form split the plan into segments: their inputs are
written out as ordinary Mats, the numpy layer runs, its output is read back in.

A plan checks itself before it is used: its first run must give the numpy result
(relative L2 <= ``VERIFY_TOL``, the same non-finite cells), or it is dropped and that shape
keeps the numpy path (logged; ``NCNN_C_NATIVE_STRICT=1`` makes it an error, for tests).
"""

from __future__ import annotations

import logging
import os
import threading
from collections import OrderedDict
from typing import TYPE_CHECKING

import numpy as np

from ..mat import Mat

if TYPE_CHECKING:
    from ..layer import Layer

log = logging.getLogger("ncnn_c")

VERIFY_TOL = 1e-4
# plans kept per net (LRU over input shapes and option values), instances per shape (threads)
CAPACITY = 8
INSTANCES = 4


def _dnnl():
    from .._native import dnnl

    return dnnl


def available() -> bool:
    return _dnnl().get() is not None


class Unsupported(Exception):
    """This layer (in this shape) has no native form: it runs as a numpy layer."""


def shape_of(m: Mat) -> tuple:
    return (m.dims, m.w, m.h, m.d, m.c, m.elemsize, m.elempack)


class Value:
    """A blob inside a native segment: its descriptor, memory and place in the arena."""

    __slots__ = ("md", "mem", "shape", "size", "first", "last", "offset", "base")

    def __init__(self, md, shape: tuple, first: int) -> None:
        self.md = md
        self.shape = shape
        self.mem = None
        self.size = md.size
        self.first = first
        self.last = first
        self.offset = -1
        self.base: Value | None = None  # set for in-place results: they live in base's memory


def _mat_dims(shape: tuple) -> tuple[int, ...] | None:
    dims, w, h, _d, c, elemsize, elempack = shape
    if elemsize != 4 or elempack != 1:
        return None
    return {1: (1, w), 2: (1, h, w), 3: (1, c, h, w)}.get(dims)


def _mat_strides(shape: tuple, dims: tuple[int, ...]) -> tuple[int, ...] | None:
    """Strides of a Mat of ``shape`` seen with oneDNN ``dims`` (None: not expressible)."""
    mdims, w, h, _d, c, _es, _ep = shape
    total = int(np.prod(dims))
    if mdims == 3:
        cstep = Mat(w, h, c).cstep if c > 1 else w * h
        if dims == (1, c, h, w):
            return (c * cstep, cstep, w, 1)
        if cstep != w * h or total != w * h * c:
            return None
    elif total != {1: w, 2: w * h}.get(mdims, -1):
        return None
    strides = []
    acc = 1
    for n in reversed(dims):
        strides.append(acc)
        acc *= n
    return tuple(reversed(strides))


# ncnn activation_type -> oneDNN eltwise post-op
def _activation(kind: int, params) -> tuple[str, float, float] | None:
    p = [float(v) for v in (params if params is not None else ())]
    if kind == 1:
        return ("relu", 0.0, 0.0)
    if kind == 2:
        return ("relu", p[0] if p else 0.0, 0.0)
    if kind == 3:
        return ("clip_v2", p[0] if len(p) > 0 else -3.4e38, p[1] if len(p) > 1 else 3.4e38)
    if kind == 4:
        return ("logistic", 0.0, 0.0)
    if kind == 5:
        return ("mish", 0.0, 0.0)
    if kind == 6:
        return ("hardswish", p[0] if len(p) > 0 else 0.2, p[1] if len(p) > 1 else 0.5)
    raise Unsupported(f"activation type {kind}")


def _builtin(layer) -> bool:
    """One of ncnn_c's own layer classes (an application may register its own under a
    built-in type name: that one is opaque)."""
    return type(layer).__module__.startswith("ncnn_c.layer.")


def _standalone_activation(layer: Layer) -> tuple[str, float, float] | None:
    """The eltwise form of an activation layer, or None."""
    if not _builtin(layer):
        return None
    t = layer.type
    if t == "ReLU":
        return ("relu", float(layer.slope), 0.0)
    if t == "Clip":
        return ("clip_v2", float(layer.min), float(layer.max))
    if t == "Sigmoid":
        return ("logistic", 0.0, 0.0)
    if t == "TanH":
        return ("tanh", 0.0, 0.0)
    if t == "Swish":
        return ("swish", 1.0, 0.0)
    if t == "Mish":
        return ("mish", 0.0, 0.0)
    if t == "HardSwish":
        return ("hardswish", float(layer.alpha), float(layer.beta))
    if t == "AbsVal":
        return ("abs", 0.0, 0.0)
    return None


class _Segment:
    __slots__ = ("steps", "imports", "exports", "layer")

    def __init__(self, steps=None, layer: int = -1) -> None:
        self.steps = steps
        self.layer = layer  # >= 0: a numpy layer
        self.imports: list[tuple[object, int]] = []  # (Mem, blob): read from ex._mats[blob]
        self.exports: list[tuple[object, int, tuple]] = []  # (Mem, blob, mat shape): fresh Mats


class NativePlan:
    """One recorded input shape of one target: segments of primitives and numpy layers."""

    def __init__(self, net, order: list[int], outputs: list[int], shapes: dict[int, tuple], opts) -> None:
        d = _dnnl()
        self.dnnl = d.get()
        self.lock = threading.Lock()
        self.outputs = outputs
        self.native_layers = 0
        self._net = net
        self._shapes = shapes
        self._keep: list = []  # weights and constant memories the primitives read
        self._values: dict[int, Value] = {}
        self._all_values: list[Value] = []
        self._segments: list[_Segment] = []
        self._step = 0
        self._build(order, opts)

    # -- building ---------------------------------------------------------------------------
    def _build(self, order: list[int], opts) -> None:
        d = _dnnl()
        net = self._net
        layers = net._layers
        consumers: dict[int, int] = {}
        for li in order:
            for b in layers[li].bottoms:
                consumers[b] = consumers.get(b, 0) + 1
        self._consumers = consumers
        fused = self._fusions(order, layers, consumers)  # producer -> (activation layer, post-op)
        folded: dict[int, int] = {}  # activation layer -> its producer, once that one took it
        seg: _Segment | None = None
        for li in order:
            layer = layers[li]
            if li in folded:
                # folded into its producer: its top is the producer's result
                self._values[layer.tops[0]] = self._values[layers[folded[li]].tops[0]]
                self.native_layers += 1
                continue
            if seg is None:
                seg = _Segment(d.Steps(self.dnnl))
            act_li, post = fused.get(li, (-1, None))
            try:
                self._native_layer(layer, li, seg, post, opts[li])
                self.native_layers += 1
                if act_li >= 0:
                    folded[act_li] = li
                continue
            except Unsupported as e:
                log.debug("native plan: layer %r (%s) runs in numpy: %s", layer.name, layer.type, e)
            except d.DnnlError as e:
                log.debug("native plan: layer %r (%s) runs in numpy: %s", layer.name, layer.type, e)
            # a numpy layer: what it reads leaves the native segment, what it writes comes back
            for b in layer.bottoms:
                self._export(seg, b)
            self._segments.append(seg)
            self._segments.append(_Segment(layer=li))
            seg = None
            for t in layer.tops:
                self._values.pop(t, None)
        if seg is None:
            seg = _Segment(d.Steps(self.dnnl))
        for b in self.outputs:
            self._export(seg, b)
        self._segments.append(seg)
        self._place()
        for s in self._segments:
            if s.steps is not None:
                s.steps.seal()
        self.runner = d.Runner(self.dnnl)

    @staticmethod
    def _fusions(order, layers, consumers) -> dict[int, tuple[int, tuple]]:
        """Activation layers that can fold into the convolution or inner product before them
        (its only reader): {producer: (activation layer, post-op)}. Whether one does is known
        only once the producer turned out native."""
        if "fusion" in _skipped_types():
            return {}
        fused: dict[int, tuple[int, tuple]] = {}
        taken: set[int] = set()
        producer_of = {}
        for li in order:
            for t in layers[li].tops:
                producer_of[t] = li
        for li in order:
            layer = layers[li]
            act = _standalone_activation(layer)
            if act is None or len(layer.bottoms) != 1:
                continue
            b = layer.bottoms[0]
            p = producer_of.get(b)
            if p is None or consumers.get(b, 0) != 1 or p in fused or li in taken:
                continue
            prod = layers[p]
            if prod.type in ("Convolution", "ConvolutionDepthWise", "InnerProduct") and not getattr(
                prod, "activation_type", 0
            ):
                fused[p] = (li, act)
                taken.add(li)
        return fused

    def _shape(self, blob: int) -> tuple:
        s = self._shapes.get(blob)
        if s is None:
            raise Unsupported(f"blob {blob} has no recorded shape")
        return s

    def _value(self, seg: _Segment, blob: int) -> Value:
        v = self._values.get(blob)
        if v is not None:
            v.last = self._step
            return v
        # a blob from the caller or from a numpy layer: read in through a strided memory
        shape = self._shape(blob)
        dims = _mat_dims(shape)
        if dims is None:
            raise Unsupported(f"blob {blob} is not an fp32 1/2/3-D Mat")
        strides = _mat_strides(shape, dims)
        if strides is None:
            raise Unsupported(f"blob {blob} layout")
        src_md = self.dnnl.md(dims, strides=strides)
        src = self.dnnl.memory(src_md, None)
        tag = {2: "ab", 3: "abc", 4: "abcd"}[len(dims)]
        v = self._new_value(self.dnnl.md(dims, tag), shape)
        self._reorder(seg, src, v)
        seg.imports.append((src, blob))
        self._values[blob] = v
        return v

    def _new_value(self, md, shape: tuple) -> Value:
        v = Value(md, shape, self._step)
        self._all_values.append(v)
        return v

    def _add(self, seg: _Segment, prim, args) -> None:
        seg.steps.add(prim, args)
        self._step += 1

    def _reorder(self, seg: _Segment, src, dst: Value) -> None:
        d = _dnnl()
        pd = self.dnnl.reorder(src.md, dst.md)
        self._add(seg, pd.primitive(), [(d.ARG_SRC, src), (d.ARG_DST, self._mem(dst))])

    def _mem(self, v: Value):
        if v.mem is None:
            v.mem = self.dnnl.memory(v.md, None)
        return v.mem

    def _export(self, seg: _Segment, blob: int) -> None:
        v = self._values.get(blob)
        if v is None:
            return  # given by the caller or made by a numpy layer: already a Mat
        shape = self._shape(blob)
        dims = v.md.dims
        strides = _mat_strides(shape, dims)
        if strides is None or _mat_dims(shape) is None:
            raise Unsupported(f"blob {blob} cannot be written out as a Mat")
        dst = self.dnnl.memory(self.dnnl.md(dims, strides=strides), None)
        d = _dnnl()
        pd = self.dnnl.reorder(v.md, dst.md)
        v.last = self._step
        self._add(seg, pd.primitive(), [(d.ARG_SRC, self._mem(v)), (d.ARG_DST, dst)])
        seg.exports.append((dst, blob, shape))

    def _const(self, arr: np.ndarray, dims, tag: str):
        a = np.ascontiguousarray(arr, dtype=np.float32)
        self._keep.append(a)
        return self.dnnl.memory(self.dnnl.md(dims, tag), a.ctypes.data)

    def _prepack(self, src_mem, md):
        """A constant (weights) reordered once into the layout ``md`` a primitive wants."""
        d = _dnnl()
        if src_mem.md == md:
            return src_mem
        buf = np.empty(max(1, md.size // 4 + 16), np.float32)
        self._keep.append(buf)
        addr = buf.ctypes.data
        addr += (-addr) % 64
        dst = self.dnnl.memory(md, addr)
        steps = d.Steps(self.dnnl)
        steps.add(self.dnnl.reorder(src_mem.md, md).primitive(), [(d.ARG_SRC, src_mem), (d.ARG_DST, dst)])
        steps.seal()
        d.Runner(self.dnnl).run(steps, 1, [])
        return dst

    # -- the layers ---------------------------------------------------------------------------
    def _native_layer(self, layer: Layer, li: int, seg: _Segment, post, opt) -> None:
        t = layer.type
        if getattr(layer, "featmask", 0):
            raise Unsupported("feature mask")
        if not _builtin(layer):
            raise Unsupported("a custom layer (registered by the application)")
        if t in _skipped_types():
            raise Unsupported("listed in NCNN_C_NATIVE_SKIP")
        for b in layer.bottoms:
            self._shape(b)
        for tp in layer.tops:
            self._shape(tp)
        if t in ("Convolution", "ConvolutionDepthWise"):
            return self._convolution(layer, seg, post)
        if t == "InnerProduct":
            return self._inner_product(layer, seg, post)
        if t == "Pooling":
            return self._pooling(layer, seg)
        if t in ("Split", "Dropout", "Noop") and self._passthrough(layer, seg):
            return None
        act = _standalone_activation(layer)
        if act is not None:
            return self._eltwise(layer, seg, act)
        if t == "Concat":
            return self._concat(layer, seg)
        if t == "Eltwise":
            return self._eltwise_layer(layer, seg)
        if t == "BinaryOp":
            return self._binaryop(layer, seg)
        if t == "Softmax":
            return self._softmax(layer, seg)
        if t == "Flatten":
            return self._flatten(layer, seg)
        raise Unsupported(f"no native {t}")

    def _top(self, layer, md, index: int = 0) -> Value:
        blob = layer.tops[index]
        want = _mat_dims(self._shape(blob))
        v = self._new_value(md, self._shape(blob))
        if want is None or int(np.prod(want)) != int(np.prod(md.dims)):
            raise Unsupported(
                f"native result {md.dims} does not match the recorded shape {self._shape(blob)}"
            )
        self._values[blob] = v
        return v

    def _convolution(self, layer, seg, post) -> None:
        d, dn = _dnnl(), self.dnnl
        if (
            len(layer.bottoms) != 1
            or getattr(layer, "dynamic_weight", False)
            or getattr(layer, "int8_scale_term", False)
        ):
            raise Unsupported("dynamic or int8 weights")
        ishape, oshape = self._shape(layer.bottoms[0]), self._shape(layer.tops[0])
        if ishape[0] != 3 or oshape[0] != 3:
            raise Unsupported("needs a 3-D blob")
        _, w, h, _, c, _, _ = ishape
        _, ow, oh, _, oc, _, _ = oshape
        kw, kh = layer.kernel_w, layer.kernel_h
        t, b, l, r = layer.pads((h, w))  # the layer's own geometry (layer/_geometry.py)
        if min(t, b, l, r) < 0 or ((t or b or l or r) and layer.pad_value != 0):
            raise Unsupported("cropping or a non-zero pad value")
        groups = (
            layer.group_count() if hasattr(layer, "group_count") else int(getattr(layer, "group", 1) or 1)
        )
        weight = layer.weight_data.numpy() if hasattr(layer.weight_data, "numpy") else layer.weight_data
        if layer.weight_data.elemsize != 4:
            raise Unsupported("weights not fp32")
        wdims: tuple[int, ...]
        if groups == 1:
            wdims, wtag = (oc, c, kh, kw), "abcd"
        else:
            if c % groups or oc % groups:
                raise Unsupported("channels not divisible by group")
            wdims, wtag = (groups, oc // groups, c // groups, kh, kw), "abcde"
        if int(np.prod(wdims)) != np.asarray(weight).size:
            raise Unsupported("weight size")
        src = self._value(seg, layer.bottoms[0])
        wmem = self._const(np.asarray(weight).reshape(wdims), wdims, wtag)
        bmem = None
        if layer.bias_term:
            bmem = self._const(np.asarray(layer.bias_data.numpy()).reshape(oc), (oc,), "a")
        posts = []
        if layer.activation_type:
            posts.append(_activation(layer.activation_type, getattr(layer, "activation_params", None)))
        if post is not None:
            posts.append(post)
        dst_md = dn.md((1, oc, oh, ow), "any")
        pd = dn.convolution(
            dn.md(src.md.dims, "any"), dn.md(wdims, "any"), bmem.md if bmem else None, dst_md,
            (layer.stride_h, layer.stride_w), (layer.dilation_h - 1, layer.dilation_w - 1), (t, l), (b, r), posts,
        )  # fmt: skip
        _no_reference(pd)
        if pd.md("src", src.md.dims) != src.md:
            # the convolution wants its input in another layout: convert it once here
            v2 = self._new_value(pd.md("src", src.md.dims), src.shape)
            self._reorder(seg, self._mem(src), v2)
            src.last = self._step
            src = v2
        wpacked = self._prepack(wmem, pd.md("weights", wdims))
        out = self._top(layer, pd.md("dst", (1, oc, oh, ow)))
        args = [(d.ARG_SRC, self._mem(src)), (d.ARG_WEIGHTS, wpacked), (d.ARG_DST, self._mem(out))]
        if bmem is not None:
            args.append((d.ARG_BIAS, bmem))
        src.last = self._step
        self._add(seg, pd.primitive(), args)

    def _inner_product(self, layer, seg, post) -> None:
        d, dn = _dnnl(), self.dnnl
        if len(layer.bottoms) != 1 or getattr(layer, "int8_scale_term", False):
            raise Unsupported("int8 weights")
        ishape, oshape = self._shape(layer.bottoms[0]), self._shape(layer.tops[0])
        if ishape[0] not in (1, 3) or oshape[0] != 1:
            raise Unsupported("needs a 1-D or 3-D input and a 1-D output")
        if layer.weight_data.elemsize != 4:
            raise Unsupported("weights not fp32")
        src = self._value(seg, layer.bottoms[0])
        oc = layer.num_output
        in_dims = src.md.dims
        wdims = (oc, *in_dims[1:])
        weight = np.asarray(layer.weight_data.numpy())
        if weight.size != int(np.prod(wdims)):
            raise Unsupported("weight size")
        wtag = {2: "ab", 3: "abc", 4: "abcd"}[len(wdims)]
        wmem = self._const(weight.reshape(wdims), wdims, wtag)
        bmem = (
            self._const(np.asarray(layer.bias_data.numpy()).reshape(oc), (oc,), "a")
            if layer.bias_term
            else None
        )
        posts = []
        if layer.activation_type:
            posts.append(_activation(layer.activation_type, getattr(layer, "activation_params", None)))
        if post is not None:
            posts.append(post)
        pd = dn.inner_product(
            dn.md(in_dims, "any"), dn.md(wdims, "any"), bmem.md if bmem else None, dn.md((1, oc), "ab"), posts
        )
        _no_reference(pd)
        if pd.md("src", in_dims) != src.md:
            v2 = self._new_value(pd.md("src", in_dims), src.shape)
            self._reorder(seg, self._mem(src), v2)
            src.last = self._step
            src = v2
        wpacked = self._prepack(wmem, pd.md("weights", wdims))
        out = self._top(layer, pd.md("dst", (1, oc)))
        args = [(d.ARG_SRC, self._mem(src)), (d.ARG_WEIGHTS, wpacked), (d.ARG_DST, self._mem(out))]
        if bmem is not None:
            args.append((d.ARG_BIAS, bmem))
        src.last = self._step
        self._add(seg, pd.primitive(), args)

    def _pooling(self, layer, seg) -> None:
        d, dn = _dnnl(), self.dnnl
        ishape, oshape = self._shape(layer.bottoms[0]), self._shape(layer.tops[0])
        if ishape[0] != 3 or getattr(layer, "adaptive_pooling", 0):
            raise Unsupported("needs a 3-D blob, not adaptive")
        _, w, h, _, c, _, _ = ishape
        is_max = layer.pooling_type == 0
        if layer.pooling_type not in (0, 1):
            raise Unsupported("pooling type")
        src = self._value(seg, layer.bottoms[0])
        if layer.global_pooling:
            if oshape[0] != 1:
                raise Unsupported("global pooling shape")
            kernel, stride, pads = (h, w), (1, 1), (0, 0, 0, 0)
            alg = "max" if is_max else "avg_include_padding"
            oh = ow = 1
        else:
            if oshape[0] != 3:
                raise Unsupported("pooling shape")
            kernel, stride = (layer.kernel_h, layer.kernel_w), (layer.stride_h, layer.stride_w)
            pads = tuple(layer.pads((h, w)))
            t, b, l, r = pads
            if min(pads) < 0:
                raise Unsupported("negative padding")
            _, ow, oh, _, _, _, _ = oshape
            if (oh - 1) * stride[0] >= t + h or (ow - 1) * stride[1] >= l + w:
                raise Unsupported("a window lies wholly in the padding")
            if is_max:
                alg = "max"
            elif layer.avgpool_count_include_pad:
                alg = "avg_include_padding"
            elif layer.pad_mode in (0, 1):
                alg = "avg_exclude_padding"
            else:
                raise Unsupported("avg pooling region of pad_mode 2/3")
        t, b, l, r = pads
        pd = dn.pooling(alg, src.md, dn.md((1, c, oh, ow), "any"), stride, kernel, (t, l), (b, r))
        _no_reference(pd)
        out = self._top(layer, pd.md("dst", (1, c, oh, ow)))
        src.last = self._step
        self._add(seg, pd.primitive(), [(d.ARG_SRC, self._mem(src)), (d.ARG_DST, self._mem(out))])

    def _passthrough(self, layer, seg) -> bool:
        if layer.type == "Dropout" and float(getattr(layer, "scale", 1.0)) != 1.0:
            return False
        if len(layer.bottoms) != 1:
            return False
        src = self._value(seg, layer.bottoms[0])
        for t in layer.tops:
            self._values[t] = src
        return True

    def _eltwise(self, layer, seg, act) -> None:
        d, dn = _dnnl(), self.dnnl
        if len(layer.bottoms) != 1:
            raise Unsupported("one input")
        src = self._value(seg, layer.bottoms[0])
        pd = dn.eltwise(act[0], src.md, src.md, act[1], act[2])
        out = self._top(layer, src.md)
        src.last = self._step
        self._add(seg, pd.primitive(), [(d.ARG_SRC, self._mem(src)), (d.ARG_DST, self._mem(out))])

    def _same_inputs(self, layer, seg) -> list[Value]:
        vals = [self._value(seg, b) for b in layer.bottoms]
        first = vals[0]
        for i, v in enumerate(vals[1:], 1):
            if v.md.dims != first.md.dims:
                raise Unsupported("inputs of different shapes")
            if v.md != first.md:
                v2 = self._new_value(first.md, v.shape)
                self._reorder(seg, self._mem(v), v2)
                v.last = self._step
                vals[i] = v2
        return vals

    def _concat(self, layer, seg) -> None:
        d, dn = _dnnl(), self.dnnl
        shapes = [self._shape(b) for b in layer.bottoms]
        if layer.axis != 0 or any(s[0] not in (1, 3) for s in shapes) or len({s[0] for s in shapes}) != 1:
            raise Unsupported("concat axis or dims")
        vals = [self._value(seg, b) for b in layer.bottoms]
        dims = list(vals[0].md.dims)
        dims[1] = sum(v.md.dims[1] for v in vals)
        if any(v.md.dims[2:] != vals[0].md.dims[2:] for v in vals):
            raise Unsupported("concat shapes")
        pd = dn.concat(dn.md(dims, "any"), 1, [v.md for v in vals])
        out = self._top(layer, pd.md("dst", dims))
        args = [(d.ARG_MULTIPLE_SRC + i, self._mem(v)) for i, v in enumerate(vals)]
        for v in vals:
            v.last = self._step
        self._add(seg, pd.primitive(), args + [(d.ARG_DST, self._mem(out))])

    def _eltwise_layer(self, layer, seg) -> None:
        d, dn = _dnnl(), self.dnnl
        vals = self._same_inputs(layer, seg)
        op = layer.op_type
        if op == 1:
            coeffs = [float(x) for x in (layer.coeffs if layer.coeffs is not None else ())]
            if coeffs and len(coeffs) != len(vals):
                raise Unsupported("coefficient count")
            pd = dn.sum(vals[0].md, coeffs or [1.0] * len(vals), [v.md for v in vals])
            out = self._top(layer, pd.md("dst", vals[0].md.dims))
            args = [(d.ARG_MULTIPLE_SRC + i, self._mem(v)) for i, v in enumerate(vals)]
            for v in vals:
                v.last = self._step
            self._add(seg, pd.primitive(), args + [(d.ARG_DST, self._mem(out))])
            return
        alg = {0: "mul", 2: "max"}.get(op)
        if alg is None:
            raise Unsupported(f"eltwise op {op}")
        acc = vals[0]
        for i, v in enumerate(vals[1:], 1):
            last = i == len(vals) - 1
            pd = dn.binary(alg, acc.md, v.md, acc.md)
            out = self._top(layer, acc.md) if last else self._new_value(acc.md, acc.shape)
            acc.last = v.last = self._step
            self._add(
                seg,
                pd.primitive(),
                [(d.ARG_SRC, self._mem(acc)), (d.ARG_SRC_1, self._mem(v)), (d.ARG_DST, self._mem(out))],
            )
            acc = out

    def _binaryop(self, layer, seg) -> None:
        d, dn = _dnnl(), self.dnnl
        op = layer.op_type
        if layer.with_scalar or len(layer.bottoms) == 1:
            b = float(layer.b)
            lin = {0: (1.0, b), 1: (1.0, -b), 2: (b, 0.0), 7: (-1.0, b)}.get(op)
            if lin is None:
                raise Unsupported(f"scalar binary op {op}")
            return self._eltwise(layer, seg, ("linear", lin[0], lin[1]))
        alg = {0: "add", 1: "sub", 2: "mul", 3: "div", 4: "max", 5: "min"}.get(op)
        shapes = [self._shape(x) for x in layer.bottoms]
        if alg is None or len(layer.bottoms) != 2 or shapes[0][:5] != shapes[1][:5]:
            raise Unsupported("binary op or broadcasting")
        a, bv = self._same_inputs(layer, seg)
        pd = dn.binary(alg, a.md, bv.md, a.md)
        out = self._top(layer, a.md)
        a.last = bv.last = self._step
        self._add(
            seg,
            pd.primitive(),
            [(d.ARG_SRC, self._mem(a)), (d.ARG_SRC_1, self._mem(bv)), (d.ARG_DST, self._mem(out))],
        )

    def _softmax(self, layer, seg) -> None:
        d, dn = _dnnl(), self.dnnl
        ishape = self._shape(layer.bottoms[0])
        if layer.axis != 0 or ishape[0] not in (1, 3):
            raise Unsupported("softmax axis")
        src = self._value(seg, layer.bottoms[0])
        pd = dn.softmax(src.md, src.md, 1)
        out = self._top(layer, src.md)
        src.last = self._step
        self._add(seg, pd.primitive(), [(d.ARG_SRC, self._mem(src)), (d.ARG_DST, self._mem(out))])

    def _flatten(self, layer, seg) -> None:
        d, dn = _dnnl(), self.dnnl
        src = self._value(seg, layer.bottoms[0])
        n = int(np.prod(src.md.dims))
        tag = {2: "ab", 3: "abc", 4: "abcd"}[len(src.md.dims)]
        plain = dn.md(src.md.dims, tag)
        if src.md != plain:
            v2 = self._new_value(plain, src.shape)
            self._reorder(seg, self._mem(src), v2)
            src.last = self._step
            src = v2
        # the plain buffer read as one row: a copy (oneDNN reorder) into a (1, n) value
        flat = dn.md((1, n), "ab")
        view = dn.memory(plain.reshaped((1, n)), None)
        out = self._top(layer, flat)
        src.last = self._step
        pd = dn.reorder(view.md, flat)
        self._views = getattr(self, "_views", [])
        self._views.append((view, src))
        self._add(seg, pd.primitive(), [(d.ARG_SRC, view), (d.ARG_DST, self._mem(out))])

    # -- memory ------------------------------------------------------------------------------
    def _place(self) -> None:
        """Offsets in one arena: a blob's bytes are free again after its last reader."""
        values = [v for v in self._all_values if v.mem is not None]
        values.sort(key=lambda v: v.first)
        live: list[tuple[int, int, Value]] = []  # (offset, end, value)
        top = 0
        for v in values:
            live = [x for x in live if x[2].last >= v.first]
            live.sort()
            size = (v.size + 63) // 64 * 64
            pos = 0
            for off, end, _ in live:
                if off - pos >= size:
                    break
                pos = max(pos, end)
            v.offset = pos
            live.append((pos, pos + size, v))
            top = max(top, pos + size)
        self.arena = np.empty(top // 4 + 16, np.float32)
        base = self.arena.ctypes.data
        base += (-base) % 64
        d = self.dnnl
        for v in values:
            assert v.mem is not None  # placed values are those with a memory
            d.check(
                d.lib.dnnl_memory_set_data_handle(v.mem.ptr, d.ffi.cast("void *", base + v.offset)), "bind"
            )
        for view, src in getattr(self, "_views", []):
            d.check(
                d.lib.dnnl_memory_set_data_handle(view.ptr, d.ffi.cast("void *", base + src.offset)), "bind"
            )
        self.arena_bytes = top

    # -- running ------------------------------------------------------------------------------
    def run(self, ex, opts, num_threads: int, capture: dict | None = None) -> int:
        """Compute the outputs into ``ex._mats``; 0, or non-zero when a numpy layer's output
        no longer has the recorded shape (the caller then runs the numpy path). ``capture``
        gets a copy of every blob a native segment writes out, when it is written."""
        mats = ex._mats
        light = bool(ex.opt.lightmode)
        blob_allocator = ex.opt.blob_allocator
        for o in self.outputs:
            # what the plan hands out must survive the numpy layers' light-mode release
            # (and their in-place writes): one more reader than the graph has
            ex._pending[o] += 1
        binds: list = []
        for seg in self._segments:
            if seg.layer >= 0:
                ret = ex._forward_cpu(seg.layer, opts[seg.layer], light)
                if ret != 0:
                    return ret
                for t in self._net._layers[seg.layer].tops:
                    m = mats[t]
                    if m is None or shape_of(m) != self._shapes.get(t):
                        return 1
                continue
            for mem, blob in seg.imports:
                m = mats[blob]
                if m is None:
                    return 1
                binds.append((mem, m.data_ptr()))
            outs = []
            for mem, blob, shape in seg.exports:
                m = Mat(*_ncnn_size(shape), allocator=blob_allocator)
                binds.append((mem, m.data_ptr()))
                outs.append((blob, m))
            self.runner.run(seg.steps, num_threads, binds)
            binds = []
            for blob, m in outs:
                mats[blob] = m
                if capture is not None:
                    capture[blob] = np.array(m.numpy(), copy=True)
        return 0


# layer types with a native form (in some shapes and settings): their inputs need no copy
NATIVE_TYPES = frozenset(
    "Convolution ConvolutionDepthWise InnerProduct Pooling Split Dropout Noop ReLU Clip Sigmoid TanH "
    "Swish Mish HardSwish AbsVal Concat Eltwise BinaryOp Softmax Flatten".split()
)


def _no_reference(pd) -> None:
    """oneDNN falls back to its reference code for what its fast kernels do not cover (a
    padded 1x1 convolution in a blocked layout: seconds instead of a millisecond); that
    layer then runs in numpy instead."""
    impl = pd.impl
    if impl.startswith("ref"):
        raise Unsupported(f"oneDNN has only its reference implementation ({impl}) here")


def _ncnn_size(shape: tuple) -> tuple:
    dims, w, h, d, c, _es, _ep = shape
    return {1: (w,), 2: (w, h), 3: (w, h, c), 4: (w, h, d, c)}[dims]


class NativePlans:
    """A net's plans: LRU over (target, input shapes, option values); a few instances per
    key so that threads sharing a net do not wait for each other."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._plans: OrderedDict[tuple, list] = OrderedDict()
        self.failed: set[tuple] = set()
        self.built = 0

    def take(self, key: tuple):
        """A free plan of ``key`` (locked for the caller), or None."""
        with self._lock:
            plans = self._plans.get(key)
            if not plans:
                return None
            self._plans.move_to_end(key)
            for p in plans:
                if p.lock.acquire(blocking=False):
                    return p
        return None

    def wanted(self, key: tuple) -> bool:
        with self._lock:
            return key not in self.failed and len(self._plans.get(key, ())) < INSTANCES

    def add(self, key: tuple, plan) -> None:
        with self._lock:
            self._plans.setdefault(key, []).append(plan)
            self._plans.move_to_end(key)
            while len(self._plans) > CAPACITY:
                self._plans.popitem(last=False)
            self.built += 1

    def fail(self, key: tuple) -> None:
        with self._lock:
            self.failed.add(key)

    def clear(self) -> None:
        with self._lock:
            self._plans.clear()
            self.failed.clear()

    def __len__(self) -> int:
        return sum(len(v) for v in self._plans.values())


def _skipped_types() -> set[str]:
    """Layer types kept in numpy: ``NCNN_C_NATIVE_SKIP=Pooling,Concat`` (a way around a
    native op that misbehaves on some machine, and for bisecting one)."""
    return {t.strip() for t in os.environ.get("NCNN_C_NATIVE_SKIP", "").split(",") if t.strip()}


def strict() -> bool:
    return os.environ.get("NCNN_C_NATIVE_STRICT") == "1"


def close_enough(got: np.ndarray, ref: np.ndarray) -> bool:
    got = np.asarray(got, np.float64)
    ref = np.asarray(ref, np.float64)
    if got.shape != ref.shape:
        return False
    fin = np.isfinite(ref)
    if not np.array_equal(np.isfinite(got), fin) or not np.array_equal(got[~fin], ref[~fin], equal_nan=True):
        return False
    den = np.linalg.norm(ref[fin])
    num = np.linalg.norm(got[fin] - ref[fin])
    return bool(num <= VERIFY_TOL * den or (den == 0 and num <= 1e-6))


# -- the extractor's side ------------------------------------------------------------------------
def _outputs(net, index: int, given: set[int]) -> list[int]:
    """``index`` and every other output of the net (a blob nobody reads) that the given
    inputs can compute: a plan computes them all, since callers extract them all."""
    outs = [index]
    for b, n in enumerate(net._consumer_counts):
        if n == 0 and b != index and net._blobs[b].producer >= 0:
            if set(net._plan(b).sources) <= given:
                outs.append(b)
    return outs


def extract(ex, index: int) -> int | None:
    """Compute blob ``index`` with the native plan of this input shape: its return code, or
    None when the numpy path must run (no plan possible; the extractor is then untouched)."""
    net = ex._net
    if ex._partial or not net.native_plan or not available():
        return None
    mats = ex._mats
    given = {i for i, m in enumerate(mats) if m is not None}
    for i in given:
        m = mats[i]
        if m.elemsize != 4 or m.elempack != 1:
            return None
    opts = ex._layer_options()
    key = (index, net._layer_opts, tuple(sorted((i, shape_of(mats[i])) for i in given)))
    plans: NativePlans = net._native_plans
    plan = plans.take(key)
    if plan is not None:
        saved = list(mats)
        try:
            ret = plan.run(ex, opts, ex.opt.num_threads)
        finally:
            plan.lock.release()
        if ret == 0:
            ex._partial = True
            return 0
        log.info("native plan: a numpy layer's output changed shape; this extract runs in numpy")
        ex._mats = saved
        return None
    if not plans.wanted(key):
        return None
    return _record(ex, index, key, given, opts)


def _record(ex, index: int, key: tuple, given: set[int], opts) -> int:
    """The numpy path, logging every blob's shape; then a plan built from the log, checked
    against what the numpy path computed."""
    from .extractor import Extractor

    net = ex._net
    shapes = {i: shape_of(ex._mats[i]) for i in given}
    inputs = {i: ex._mats[i] for i in given}
    outputs = _outputs(net, index, given)
    order = sorted({li for o in outputs for li in net._plan(o).order})
    # what a plan writes out for numpy layers (and hands out) is checked against these copies,
    # taken as the numpy path makes them (in-place layers change them afterwards)
    watch = set(outputs)
    for li in order:
        if net._layers[li].type not in NATIVE_TYPES:
            watch.update(net._layers[li].bottoms)
    refs: dict[int, np.ndarray] = {}

    def step(li, opt, light):
        ret = ex._forward_cpu(li, opt, light)
        if ret == 0:
            for t in net._layers[li].tops:
                m = ex._mats[t]
                if m is not None:
                    shapes[t] = shape_of(m)
                    if t in watch:
                        refs[t] = np.array(m.numpy(), copy=True)
        return ret

    done: dict[int, Mat] = {}
    for o in outputs:
        if ex._mats[o] is None:
            ret = ex._run_plan(o, step)
            if ret != 0:
                return ret
        m = ex._mats[o]
        if m is None:
            return -1
        done[o] = m
    # a later output's numpy layers may have released an earlier one (light mode, in place)
    # and the extra outputs computed here must not cost a later extract its inputs
    for o, m in done.items():
        ex._mats[o] = m
    for i, m in inputs.items():
        if ex._mats[i] is None:
            ex._mats[i] = m
    if not all(np.isfinite(a).all() for a in refs.values()):
        return 0  # nothing to check a plan against: build one with the next (finite) input
    try:
        plan = NativePlan(net, order, outputs, shapes, opts)
    except Exception as e:  # noqa: BLE001 - the numpy result stands; this shape stays numpy
        if strict():
            raise
        log.warning("native plan: cannot build one for %r: %s", net._blobs[index].name, e)
        net._native_plans.fail(key)
        return 0
    if plan.native_layers == 0:
        net._native_plans.fail(key)
        return 0
    check = Extractor(net)
    check.opt = ex.opt.copy()
    for i, m in inputs.items():
        check._mats[i] = m
    got: dict[int, np.ndarray] = {}
    with plan.lock:
        ret = plan.run(check, opts, ex.opt.num_threads, got)
    bad = [o for o in outputs if ret != 0 or check._mats[o] is None]
    # every blob the native segments wrote out (the numpy layers after them are the same code)
    bad += [b for b, a in got.items() if b in refs and b not in bad and not close_enough(a, refs[b])]
    if bad:
        msg = f"native plan differs from the numpy layers at {[net._blobs[o].name for o in bad]}"
        if strict():
            raise AssertionError(msg)
        log.warning("%s: this shape keeps the numpy path", msg)
        net._native_plans.fail(key)
        return 0
    net._native_plans.add(key, plan)
    log.info(
        "native plan for %r: %d of %d layers native, %d segments, arena %d KiB",
        net._blobs[index].name, plan.native_layers, len(order), len(plan._segments), plan.arena_bytes // 1024,
    )  # fmt: skip
    return 0
