"""The native CPU plan: record once per input shape, then run the whole net in native code.

The numpy layers are the reference and the fallback; they cost a Python call per layer and
hand threads over in Python. After the first extract of a shape has run them (and logged
every blob's shape), ``NativePlan`` turns the layers it can into oneDNN primitives
(``ncnn_c._native.dnnl``). Their intermediate blobs live in one arena whose offsets follow
the blobs' lifetimes, in the layouts oneDNN picked (blocked channels, or channels
innermost, by machine). A later extract of the same shape runs the plan: one C call per
native segment, the GIL released, oneDNN's threads inside. Layers with no native form
split the plan into segments: their inputs are written out as ordinary Mats, the numpy
layer runs, its output is read back in.

What is native, and how:

* convolutions, deconvolutions, inner products; the BatchNorm / Scale / Bias after them
  folded into their weights and bias, a residual add and an activation after them as
  post-ops, a zero Padding before a convolution as its own padding;
* elementwise layers as oneDNN eltwise ops (ReLU .. HardSwish, ELU, HardSigmoid, PReLU,
  the Exp / Log / Power / UnaryOp / scalar BinaryOp forms oneDNN computes alike);
* BinaryOp / Eltwise with ncnn's broadcasting where oneDNN's binary op has a kernel,
  per-channel affine layers on their own, pooling, reductions, softmax on any axis, LRN,
  nearest / bilinear Interp where a probe shows oneDNN's source positions are ncnn's;
* data movement without a primitive where it can: Split / Noop / Reshape / Flatten and
  contiguous Slice / Crop parts are views of the same bytes; other parts, Permute,
  ShuffleChannel (with the Concat before it) and Padding are strided copies or concats;
* MemoryData and PriorBox (and what reads only them) are constants of the plan.

A plan checks itself before it is used: its first run must give the numpy result
(relative L2 <= ``VERIFY_TOL``, the same non-finite cells), or it is dropped and that shape
keeps the numpy path (logged; ``NCNN_C_NATIVE_STRICT=1`` makes it an error, for tests).
Where oneDNN has only its reference code for a case, or where its result differs from the
numpy layer's by construction, the layer stays numpy.
"""

from __future__ import annotations

import functools
import logging
import os
import threading
from collections import OrderedDict
from types import SimpleNamespace

import numpy as np

from ..layer import Layer
from ..mat import Mat
from ..option import Option
from .reference import ReferenceExecutor, Step
from .state import BlobState
from .view import NetView

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
    """A blob inside a native segment: its descriptor, memory and place in the arena.

    An alias (``base`` set) is another view of ``base``'s bytes from ``base_off`` on: a
    reshape, a channel range, a strided window a reorder writes through. A constant
    (``addr`` set) lives in a numpy array the plan keeps, outside the arena.
    """

    __slots__ = (
        "md",
        "mem",
        "shape",
        "size",
        "first",
        "last",
        "offset",
        "base",
        "base_off",
        "const",
        "addr",
        "copies",
    )

    def __init__(self, md, shape: tuple, first: int) -> None:
        self.md = md
        self.shape = shape
        self.mem = None
        self.size = md.size
        self.first = first
        self.last = first
        self.offset = -1
        self.base: Value | None = None
        self.base_off = 0
        self.const = False
        self.addr = 0  # a constant's address
        self.copies: dict[str, Value] = {}  # this value in other layouts (by tag), once made


def _mat_dims(shape: tuple) -> tuple[int, ...] | None:
    dims, w, h, _d, c, elemsize, elempack = shape
    if elemsize != 4 or elempack != 1:
        return None
    return {1: (1, w), 2: (1, h, w), 3: (1, c, h, w)}.get(dims)


def _numpy_shape(shape: tuple) -> tuple[int, ...]:
    dims, w, h, d, c, _es, _ep = shape
    return ((w,), (h, w), (c, h, w), (c, d, h, w))[dims - 1]


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
    return _dense_strides(dims)


def _tag_strides(tag: str, dims) -> tuple[int, ...]:
    """The strides of a dense layout given by a plain format tag ("abcd", "acdb": the
    letters from the outermost axis in memory to the innermost)."""
    strides = [0] * len(dims)
    acc = 1
    for letter in reversed(tag):
        axis = ord(letter) - ord("a")
        strides[axis] = acc
        acc *= dims[axis]
    return tuple(strides)


def _dense_strides(dims) -> tuple[int, ...]:
    strides = []
    acc = 1
    for n in reversed(dims):
        strides.append(acc)
        acc *= n
    return tuple(reversed(strides))


_PLAIN = {1: "a", 2: "ab", 3: "abc", 4: "abcd", 5: "abcde"}
# the layouts oneDNN picks for activations, by rank: a value in one of them can be sliced
# and copied in the same layout
_TAGS = {
    3: ("abc", "aBc16b", "aBc8b", "aBc4b", "acb"),
    4: ("abcd", "aBcd16b", "aBcd8b", "aBcd4b", "acdb"),
}
_BLOCK = {"aBc16b": 16, "aBc8b": 8, "aBc4b": 4, "aBcd16b": 16, "aBcd8b": 8, "aBcd4b": 4}


# ncnn activation_type -> oneDNN eltwise post-op
def _activation(kind: int, params) -> tuple[str, float, float]:
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


# UnaryOp op_type -> oneDNN eltwise ops; the rest (floor, trigonometry, ...) have no
# oneDNN form and stay numpy
_UNARY = {
    0: [("abs", 0.0, 0.0)],
    1: [("linear", -1.0, 0.0)],
    4: [("square", 0.0, 0.0)],
    5: [("sqrt", 0.0, 0.0)],
    6: [("pow", 1.0, -0.5)],
    7: [("exp", 0.0, 0.0)],
    8: [("log", 0.0, 0.0)],
    15: [("pow", 1.0, -1.0)],
    16: [("tanh", 0.0, 0.0)],
    18: [("round", 0.0, 0.0)],
}


def _affine(scale: float, shift: float) -> list[tuple[str, float, float]]:
    """shift + x * scale as eltwise ops (none for the identity)."""
    return [] if (scale, shift) == (1.0, 0.0) else [("linear", scale, shift)]


def _standalone_activation(layer: Layer) -> list[tuple[str, float, float]] | None:
    """The eltwise form of a one-blob elementwise layer (oneDNN eltwise ops applied in
    order: the first a primitive, the rest its post-ops, or all of them post-ops of the
    layer before), or None."""
    if not _builtin(layer):
        return None
    t = layer.type
    if t == "ReLU":
        return [("relu", float(layer.slope), 0.0)]
    if t == "Clip":
        return [("clip_v2", float(layer.min), float(layer.max))]
    if t == "Sigmoid":
        return [("logistic", 0.0, 0.0)]
    if t == "TanH":
        return [("tanh", 0.0, 0.0)]
    if t == "Swish":
        return [("swish", 1.0, 0.0)]
    if t == "Mish":
        return [("mish", 0.0, 0.0)]
    if t == "HardSwish":
        return [("hardswish", float(layer.alpha), float(layer.beta))]
    if t == "AbsVal":
        return [("abs", 0.0, 0.0)]
    if t == "ELU":
        return [("elu", float(layer.alpha), 0.0)]
    if t == "HardSigmoid":
        return [("hardsigmoid", float(layer.alpha), float(layer.beta))]
    if t == "PReLU" and layer.num_slope == 1 and len(layer.slope_data) >= 1:
        return [("relu", float(layer.slope_data[0]), 0.0)]
    if t == "UnaryOp":
        return _UNARY.get(layer.op_type)
    if t in ("Exp", "Log", "Power"):
        ops = _affine(float(layer.scale), float(layer.shift))
        if t == "Exp":
            return ops + [("exp", 0.0, 0.0)] if layer.base == -1.0 else None
        if t == "Power":
            return ops + ([] if layer.power == 1.0 else [("pow", 1.0, float(layer.power))]) or None
        ops = ops + [("log", 0.0, 0.0)]
        if layer.base != -1.0:
            # ncnn multiplies by a float32 1 / log(base)
            ops.append(("linear", float(np.float32(1.0) / np.log(np.float32(layer.base))), 0.0))
        return ops
    if t == "BinaryOp" and (layer.with_scalar or len(layer.bottoms) == 1):
        b = float(layer.b)
        lin = {0: (1.0, b), 1: (1.0, -b), 2: (b, 0.0), 7: (-1.0, b)}.get(layer.op_type)
        if lin is not None:
            return [("linear", *lin)]
        if layer.op_type == 6:
            return [("pow", 1.0, b)]
        return None
    return None


def _residual_add(layer) -> bool:
    """A two-blob add with no broadcasting coefficients: BinaryOp add or Eltwise sum."""
    if not _builtin(layer) or len(layer.bottoms) != 2 or len(set(layer.bottoms)) != 2 or len(layer.tops) != 1:
        return False
    if layer.type == "BinaryOp":
        return layer.op_type == 0 and not layer.with_scalar
    if layer.type == "Eltwise":
        coeffs = [float(x) for x in (layer.coeffs if layer.coeffs is not None else ())]
        return layer.op_type == 1 and all(c == 1.0 for c in coeffs)
    return False


def _shape_like(shape: tuple):
    """Something with a Mat's dims / w / h / d / c for a layer's shape-only helpers."""
    dims, w, h, d, c, _es, _ep = shape
    return SimpleNamespace(dims=dims, w=w, h=h, d=d, c=c)


# layers a convolution, deconvolution or inner product takes into its weights and bias
AFFINE_TYPES = ("BatchNorm", "Scale", "Bias")
PRODUCERS = ("Convolution", "ConvolutionDepthWise", "Deconvolution", "DeconvolutionDepthWise", "InnerProduct")


class _Segment:
    __slots__ = ("steps", "imports", "exports", "layer")

    def __init__(self, steps=None, layer: int = -1) -> None:
        self.steps = steps
        self.layer = layer  # >= 0: a numpy layer
        self.imports: list[tuple[object, int]] = []  # (Mem, blob): read from state.mats[blob]
        self.exports: list[tuple[object, int, tuple]] = []  # (Mem, blob, mat shape): fresh Mats


class NativePlan:
    """One recorded input shape of one target: segments of primitives and numpy layers."""

    def __init__(
        self,
        layers: list[Layer],
        order: list[int],
        outputs: list[int],
        shapes: dict[int, tuple],
        opts,
        consts=None,
    ) -> None:
        d = _dnnl()
        self.dnnl = d.get()
        self.lock = threading.Lock()
        self.outputs = outputs
        self.native_layers = 0
        self._layers = layers  # the net's, as built (a plan is dropped with them)
        self._shapes = shapes
        self._consts: dict[int, np.ndarray] = consts or {}
        self._keep: list = []  # weights and constant memories the primitives read
        self._values: dict[int, Value] = {}
        self._all_values: list[Value] = []
        self._segments: list[_Segment] = []
        self._step = 0
        # Padding layers a convolution reads through its own padding: their top -> (bottom,
        # (top, bottom, left, right)); made for real only if something else needs the blob
        self._pending_pads: dict[int, tuple[int, tuple[int, int, int, int]]] = {}
        # Concat layers the ShuffleChannel after them writes (each part straight to its
        # shuffled place): their top -> the Concat layer; made for real only if needed
        self._pending_concats: dict[int, int] = {}
        self._li = -1  # the layer being built
        self._producer_of: dict[int, int] = {}
        self._build(order, opts)

    # -- building ---------------------------------------------------------------------------
    def _build(self, order: list[int], opts) -> None:
        d = _dnnl()
        layers = self._layers
        consumers: dict[int, int] = {}
        readers: dict[int, list[int]] = {}
        for li in order:
            for b in layers[li].bottoms:
                consumers[b] = consumers.get(b, 0) + 1
                readers.setdefault(b, []).append(li)
        self._producer_of = {t: li for li in order for t in layers[li].tops}
        chains = self._chains(order, layers, consumers, readers)
        pad_folds = self._pad_folds(order, layers, consumers, readers)
        shuffled = self._shuffled_concats(order, layers, consumers, readers)
        folded: dict[int, int] = {}  # layer taken by its producer -> that producer
        seg: _Segment | None = None
        for li in order:
            layer = layers[li]
            self._li = li
            if li in folded:
                # taken into its producer: its top is the producer's result
                self._values[layer.tops[0]] = self._values[layers[folded[li]].tops[0]]
                self.native_layers += 1
                continue
            if layer.tops and all(t in self._consts for t in layer.tops) and _builtin(layer):
                try:
                    for t in layer.tops:
                        self._values[t] = self._const_value(self._consts[t], self._shape(t))
                    self.native_layers += 1
                    continue
                except Unsupported as e:
                    log.debug("native plan: constant %r (%s) is computed: %s", layer.name, layer.type, e)
            if li in pad_folds:
                t, b, l, r = pad_folds[li]
                self._pending_pads[layer.tops[0]] = (layer.bottoms[0], (t, b, l, r))
                self.native_layers += 1
                continue
            if li in shuffled:
                self._pending_concats[layer.tops[0]] = li
                self.native_layers += 1
                continue
            if seg is None:
                seg = _Segment(d.Steps(self.dnnl))
            try:
                taken = self._native_layer(layer, li, seg, chains.get(li, []), opts[li])
                self.native_layers += 1
                for x in taken or ():
                    folded[x] = li
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

    def _chains(self, order, layers, consumers, readers) -> dict[int, list[int]]:
        """The layers after a producer that can go into it, each the only reader of the blob
        before it: after a convolution, deconvolution or inner product, BatchNorm / Scale /
        Bias (into its weights and bias, if it has no activation of its own), then a residual
        add (a binary post-op), then an activation (an eltwise post-op); after a BinaryOp or
        Eltwise, an activation. {producer: [layers]}; whether they go in is known only once
        the producer turned out native."""
        skipped = _skipped_types()
        if "fusion" in skipped:
            return {}
        outputs = set(self.outputs)
        chains: dict[int, list[int]] = {}
        for li in order:
            prod = layers[li]
            if not _builtin(prod) or len(prod.tops) != 1:
                continue
            if prod.type in PRODUCERS:
                stage = 1 if getattr(prod, "activation_type", False) else 0
            elif prod.type in ("BinaryOp", "Eltwise") and len(prod.bottoms) >= 2:
                stage = 2
            else:
                continue
            chain: list[int] = []
            blob = prod.tops[0]
            while consumers.get(blob, 0) == 1 and blob not in outputs and len(readers.get(blob, ())) == 1:
                nli = readers[blob][0]
                nxt = layers[nli]
                if (
                    not _builtin(nxt)
                    or nxt.type in skipped
                    or getattr(nxt, "featmask", False)
                    or len(nxt.tops) != 1
                ):
                    break
                one = len(nxt.bottoms) == 1
                if stage == 0 and one and nxt.type in AFFINE_TYPES and nxt.one_blob_only:
                    chain.append(nli)
                elif stage <= 1 and _residual_add(nxt):
                    chain.append(nli)
                    stage = 2
                else:
                    if one and _standalone_activation(nxt) is not None:
                        chain.append(nli)
                    break
                blob = nxt.tops[0]
            if chain:
                chains[li] = chain
        return chains

    def _pad_folds(self, order, layers, consumers, readers) -> dict[int, tuple[int, int, int, int]]:
        """Zero Padding layers whose only reader is a convolution: it pads their input
        itself (oneDNN takes any padding). {Padding layer: (top, bottom, left, right)}"""
        skipped = _skipped_types()
        if "fusion" in skipped or "Padding" in skipped:
            return {}
        outputs = set(self.outputs)
        folds = {}
        for li in order:
            pad = layers[li]
            if pad.type != "Padding" or not _builtin(pad) or len(pad.bottoms) != 1 or len(pad.tops) != 1:
                continue
            top = pad.tops[0]
            if consumers.get(top, 0) != 1 or top in outputs or len(readers.get(top, ())) != 1:
                continue
            conv = layers[readers[top][0]]
            shape = self._shapes.get(pad.bottoms[0])
            if (
                conv.type not in ("Convolution", "ConvolutionDepthWise")
                or not _builtin(conv)
                or conv.type in skipped
                or shape is None
                or shape[0] != 3
                or pad.pad_type != 0
                or pad.value != 0.0
                or pad.per_channel_pad_data_size
                or pad.front
                or pad.behind
                or getattr(conv, "pad_value", 0.0) != 0.0
            ):
                continue
            folds[li] = (pad.top, pad.bottom, pad.left, pad.right)
        return folds

    def _shuffled_concats(self, order, layers, consumers, readers) -> set[int]:
        """Channel Concats whose only reader is a ShuffleChannel and whose parts each hold
        whole groups of it (ShuffleNet's blocks): the shuffle writes the parts into place."""
        skipped = _skipped_types()
        if "fusion" in skipped or "ShuffleChannel" in skipped or "Concat" in skipped:
            return set()
        outputs = set(self.outputs)
        out = set()
        for li in order:
            cat = layers[li]
            if cat.type != "Concat" or not _builtin(cat) or len(cat.tops) != 1 or len(cat.bottoms) < 2:
                continue
            top = cat.tops[0]
            if consumers.get(top, 0) != 1 or top in outputs or len(readers.get(top, ())) != 1:
                continue
            sh = layers[readers[top][0]]
            shapes = [self._shapes.get(b) for b in cat.bottoms]
            oshape = self._shapes.get(top)
            if sh.type != "ShuffleChannel" or not _builtin(sh) or oshape is None or oshape[0] != 3:
                continue
            if cat.axis not in (0, -3) or any(
                s is None or s[0] != 3 or s[1:3] != oshape[1:3] for s in shapes
            ):
                continue
            c = oshape[4]
            if sh.group < 1 or c % sh.group:
                continue
            per = sh.group if sh.reverse else c // sh.group
            if per > 1 and per < c and all(s is not None and s[4] % per == 0 for s in shapes):
                out.add(li)
        return out

    def _shape(self, blob: int) -> tuple:
        s = self._shapes.get(blob)
        if s is None:
            raise Unsupported(f"blob {blob} has no recorded shape")
        return s

    def _value(self, seg: _Segment, blob: int, want=None) -> Value:
        """The value of ``blob``; one from outside the segment is read in (in the layout
        ``want`` when its reader says which it takes)."""
        v = self._values.get(blob)
        if v is not None:
            v.last = self._step
            return v
        if blob in self._pending_pads:
            return self._make_pending_pad(seg, blob)
        if blob in self._pending_concats:
            self._concat(self._layers[self._pending_concats.pop(blob)], seg, None)
            v = self._values[blob]
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
        md = want if want is not None and want.dims == dims else self.dnnl.md(dims, _PLAIN[len(dims)])
        v = self._new_value(md, shape)
        self._reorder(seg, src, v)
        seg.imports.append((src, blob))
        self._values[blob] = v
        return v

    def _new_value(self, md, shape: tuple) -> Value:
        v = Value(md, shape, self._step)
        self._all_values.append(v)
        return v

    def _alias(self, v: Value, md, byte_off: int = 0, shape: tuple | None = None) -> Value:
        """Another view (``md``) of ``v``'s bytes from ``byte_off`` on: no copy."""
        root = v.base if v.base is not None else v
        a = self._new_value(md, v.shape if shape is None else shape)
        a.base = root
        a.base_off = v.base_off + byte_off
        if not root.const:
            self._mem(root)  # the root takes its place in the arena even if only views are read
        return a

    def _const_value(self, arr: np.ndarray, shape: tuple, dims=None, md=None) -> Value:
        """A constant value (not in the arena): ``arr`` with ``dims`` (default: the
        canonical dims of ``shape``), reordered once into ``md`` if given."""
        dims = tuple(dims) if dims is not None else _mat_dims(shape)
        if dims is None:
            raise Unsupported("a constant that is not an fp32 1/2/3-D blob")
        a = np.ascontiguousarray(arr, dtype=np.float32)
        if a.size != int(np.prod(dims)):
            raise Unsupported("constant size")
        self._keep.append(a)
        plain = self.dnnl.md(dims, _PLAIN[len(dims)])
        mem, addr = self.dnnl.memory(plain, a.ctypes.data), a.ctypes.data
        if md is not None and md != plain:
            mem, addr = self._prepack_at(mem, md)
        v = Value(mem.md, shape, -1)
        v.const, v.addr, v.mem = True, addr, mem
        return v

    def _add(self, seg: _Segment, prim, args) -> None:
        seg.steps.add(prim, args)
        self._step += 1

    def _reorder(self, seg: _Segment, src, dst: Value) -> None:
        d = _dnnl()
        pd = self.dnnl.reorder(src.md, dst.md)
        _no_reference(pd)
        self._add(seg, pd.primitive(), [(d.ARG_SRC, src), (d.ARG_DST, self._mem(dst))])

    def _copy(self, seg: _Segment, src: Value, dst: Value) -> None:
        """dst = src by a reorder (layouts, or views with strides, may differ)."""
        self._reorder(seg, self._mem(src), dst)
        src.last = self._step

    def _mem(self, v: Value):
        if v.mem is None:
            v.mem = self.dnnl.memory(v.md, None)
        return v.mem

    def _export(self, seg: _Segment, blob: int) -> None:
        if blob in self._pending_pads or blob in self._pending_concats:
            self._value(seg, blob)
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
        return src_mem if src_mem.md == md else self._prepack_at(src_mem, md)[0]

    def _prepack_at(self, src_mem, md):
        d = _dnnl()
        buf = np.empty(max(1, md.size // 4 + 16), np.float32)
        self._keep.append(buf)
        addr = buf.ctypes.data
        addr += (-addr) % 64
        dst = self.dnnl.memory(md, addr)
        steps = d.Steps(self.dnnl)
        steps.add(self.dnnl.reorder(src_mem.md, md).primitive(), [(d.ARG_SRC, src_mem), (d.ARG_DST, dst)])
        steps.seal()
        d.Runner(self.dnnl).run(steps, 1, [])
        return dst, addr

    # -- layouts ------------------------------------------------------------------------------
    def _tag_of(self, md) -> str | None:
        """The format tag of a dense descriptor among the ones activations use, or None."""
        n = len(md.dims)
        for tag in _TAGS.get(n, (_PLAIN.get(n, ""),)):
            if tag and self.dnnl.md(md.dims, tag) == md:
                return tag
        return None

    def _plain(self, seg: _Segment, v: Value) -> Value:
        """``v`` in the plain (row-major) layout of its dims: itself, or a copy (made once)."""
        return self._as_md(seg, v, self.dnnl.md(v.md.dims, _PLAIN[len(v.md.dims)]))

    def _as_md(self, seg: _Segment, v: Value, md) -> Value:
        """``v`` with descriptor ``md`` (same dims): itself, or a copy (one per layout)."""
        if v.md == md:
            return v
        if v.const:
            mem, addr = self._prepack_at(v.mem, md)
            c = Value(md, v.shape, -1)
            c.const, c.addr, c.mem = True, addr, mem
            return c
        tag = self._tag_of(md)
        if tag is not None and tag in v.copies:
            out = v.copies[tag]
            out.last = self._step
            return out
        out = self._new_value(md, v.shape)
        self._copy(seg, v, out)
        if tag is not None:
            v.copies[tag] = out
        return out

    def _as_dims(self, seg: _Segment, v: Value, dims: tuple[int, ...]) -> Value:
        """``v`` seen with other dims of the same elements (a reshape): a view, after a copy
        into the plain layout where its own layout cannot be reshaped."""
        dims = tuple(dims)
        if v.md.dims == dims:
            return v
        if int(np.prod(dims)) != int(np.prod(v.md.dims)):
            raise Unsupported(f"cannot see {v.md.dims} as {dims}")
        try:
            md = v.md.reshaped(dims)
        except _dnnl().DnnlError:
            v = self._plain(seg, v)
            md = v.md.reshaped(dims)
        return self._alias(v, md)

    def _canon(self, seg: _Segment, v: Value) -> Value:
        """``v`` with the dims of its ncnn shape (1, c, h, w) / (1, h, w) / (1, w)."""
        dims = _mat_dims(v.shape)
        if dims is None:
            raise Unsupported("not an fp32 1/2/3-D blob")
        return self._as_dims(seg, v, dims)

    def _box(self, seg: _Segment, v: Value, dims, offsets, shape: tuple) -> Value:
        """The part of ``v`` of size ``dims`` at ``offsets``: a view where those bytes are
        contiguous in ``v``'s layout, else a copy in the same layout (plain if that fails)."""
        dims, offsets = tuple(dims), tuple(offsets)
        full = v.md.dims
        if dims == full:
            return v
        tag = self._tag_of(v.md)
        if tag is not None:
            first = next(i for i, (n, m) in enumerate(zip(dims, full, strict=True)) if n != m)
            rest_full = dims[first + 1 :] == full[first + 1 :] and all(n == 1 for n in dims[:first])
            if tag == _PLAIN[len(full)] and rest_full:
                off = sum(o * s for o, s in zip(offsets, _dense_strides(full), strict=True))
                return self._alias(v, self.dnnl.md(dims, tag), off * 4, shape)
            blk = _BLOCK.get(tag, 0)
            if (
                blk
                and first == 1
                and rest_full
                and offsets[1] % blk == 0
                and (dims[1] % blk == 0 or offsets[1] + dims[1] == full[1])
            ):
                off = offsets[1] * int(np.prod(full[2:]))
                return self._alias(v, self.dnnl.md(dims, tag), off * 4, shape)
        try:
            sub = self._alias(v, v.md.sub(dims, offsets), 0, shape)
            out = self._new_value(self.dnnl.md(dims, tag or _PLAIN[len(dims)]), shape)
            self._copy(seg, sub, out)
            return out
        except (_dnnl().DnnlError, Unsupported):
            if tag == _PLAIN[len(full)]:
                raise
        return self._box(seg, self._plain(seg, v), dims, offsets, shape)

    # -- the layers ---------------------------------------------------------------------------
    def _native_layer(self, layer: Layer, li: int, seg: _Segment, chain: list[int], opt) -> list[int] | None:
        """Add ``layer``'s primitives; the layers of ``chain`` it took in (a producer only)."""
        t = layer.type
        if getattr(layer, "featmask", 0):
            raise Unsupported("feature mask")
        if not _builtin(layer):
            raise Unsupported("a custom layer (registered by the application)")
        if t in _skipped_types():
            raise Unsupported("listed in NCNN_C_NATIVE_SKIP")
        for b in layer.bottoms:
            if b not in self._pending_pads:
                self._shape(b)
        for tp in layer.tops:
            self._shape(tp)
        if t in PRODUCERS or (chain and t in ("BinaryOp", "Eltwise")):
            return self._producer(layer, seg, chain)
        if t in ("Split", "Dropout", "Noop") and self._passthrough(layer, seg):
            return None
        act = _standalone_activation(layer)
        if act is not None:
            self._eltwise(layer, seg, act)
            return None
        fn = _LAYER_METHODS.get(t)
        if fn is None:
            raise Unsupported(f"no native {t}")
        fn(self, layer, seg, opt)
        return None

    def _top(self, layer, md, index: int = 0) -> Value:
        # a primitive's choice in the words of a format tag: with one image "Bacd16b" equals
        # "aBcd16b", but oneDNN's binary post-ops read the former wrongly
        tag = self._tag_of(md)
        if tag is not None:
            md = self.dnnl.md(md.dims, tag)
        return self._set_top(layer, self._new_value(md, self._shape(layer.tops[index])), index)

    def _set_top(self, layer, v: Value, index: int = 0) -> Value:
        blob = layer.tops[index]
        shape = self._shape(blob)
        want = _mat_dims(shape)
        if want is None or int(np.prod(want)) != int(np.prod(v.md.dims)):
            raise Unsupported(f"native result {v.md.dims} does not match the recorded shape {shape}")
        self._values[blob] = v
        return v

    def _same(self, layer, seg, v: Value, index: int = 0) -> None:
        """Top ``index`` is ``v`` itself (ncnn shares the blob, or copies it unchanged)."""
        if v.shape != self._shape(layer.tops[index]):
            v = self._alias(v, v.md, 0, self._shape(layer.tops[index]))
        self._set_top(layer, v, index)

    def _run1(self, seg, pd, src: Value, out: Value, extra=()) -> None:
        """One primitive reading ``src`` (and ``extra`` arguments), writing ``out``."""
        d = _dnnl()
        _no_reference(pd)
        src.last = self._step
        self._add(seg, pd.primitive(), [(d.ARG_SRC, self._mem(src)), *extra, (d.ARG_DST, self._mem(out))])

    # -- convolutions and inner products --------------------------------------------------------
    def _producer(self, layer, seg, chain: list[int]) -> list[int]:
        """A producer with what of ``chain`` it can take: the affine layers folded into its
        weights and bias, a residual add and an activation as post-ops (those run on their
        own when oneDNN has no fast kernel with them). The layers it took."""
        layers = self._layers
        scale = shift = None
        taken: list[int] = []
        post: list = []
        blob = layer.tops[0]
        for li in chain:
            nxt = layers[li]
            if nxt.type in AFFINE_TYPES and not post:
                ab = self._affine_coeffs(nxt, layer.num_output)
                if ab is None:
                    break
                s, t = ab
                scale, shift = (s, t) if scale is None else (scale * s, shift * s + t)
            elif _residual_add(nxt):
                other = nxt.bottoms[1] if nxt.bottoms[0] == blob else nxt.bottoms[0]
                if not self._ready(other) or self._shapes.get(other) != self._shape(blob):
                    break
                post.append(("add", other))
            else:
                act = _standalone_activation(nxt)
                if act is None:
                    break
                post += act
            taken.append(li)
            blob = nxt.tops[0]
        if layer.type in ("BinaryOp", "Eltwise"):
            build = self._binaryop if layer.type == "BinaryOp" else self._eltwise_layer
            folded = len(taken)

            def combine(scale, shift, post) -> None:
                build(layer, seg, None, post)

            run = combine
        else:
            run = functools.partial(
                self._inner_product if layer.type == "InnerProduct" else self._convolution, layer, seg
            )
            folded = len(taken) - sum(1 for li in taken if layers[li].type in AFFINE_TYPES)
        if post:
            try:
                run(scale, shift, post)
                return taken
            except (Unsupported, _dnnl().DnnlError) as e:
                # the add and the activation then run as primitives of their own
                log.debug("native plan: %r without its post-ops: %s", layer.name, e)
            taken = taken[: len(taken) - folded]
        run(scale, shift, [])
        return taken

    def _ready(self, blob: int) -> bool:
        """Whether ``blob`` exists at this point of the plan (a value, an input, a numpy
        layer's result): a post-op can read it."""
        return (
            blob in self._values or blob in self._pending_pads or self._producer_of.get(blob, -1) < self._li
        )

    def _post_args(self, seg, posts: list, dims, own: int):
        """Post-op lists for a primitive whose output has ``dims``: candidate (attr list,
        [(post index, Value)]) pairs, binary operands ("add", blob) read in as values, first
        in their own layout, then in the ones oneDNN's kernels take; ``own`` eltwise post-ops
        come before these."""
        dn = self.dnnl
        vals = {}
        for p in posts:
            if len(p) == 2:
                vals[p[1]] = self._as_dims(seg, self._value(seg, p[1]), dims)
        layouts: list[str | None] = [None] + [
            t for t in ("acdb", "aBcd16b", "aBcd8b", "abcd") if len(dims) == 4
        ]
        if not vals:
            layouts = [None]
        out = []
        for tag in layouts:
            attr, operands = [], []
            for i, p in enumerate(posts):
                if len(p) == 3:
                    attr.append(p)
                    continue
                v = vals[p[1]]
                md = v.md if tag is None else dn.md(dims, tag)
                attr.append(("add", md))
                operands.append((own + i, v, md))
            out.append((attr, operands))
        return out

    def _bind_posts(self, seg, operands) -> list:
        """The primitive arguments of the binary post-op operands, in the layouts chosen."""
        d = _dnnl()
        args = []
        for i, v, md in operands:
            v = self._as_md(seg, v, md)
            v.last = self._step
            args.append((d.post_arg(i), self._mem(v)))
        return args

    def _affine_coeffs(self, layer, oc: int) -> tuple[np.ndarray, np.ndarray] | None:
        """(scale, shift) per output channel of BatchNorm / Scale / Bias, or None."""
        coeffs = layer.channel_coeffs(_shape_like(self._shape(layer.bottoms[0])))
        if coeffs is None:
            return None
        one = np.ones(oc, np.float32)
        vals = [np.asarray(c, np.float32) * one for c in coeffs]  # scalars broadcast
        if any(v.shape != (oc,) for v in vals):
            return None
        if layer.type == "BatchNorm":
            return vals[0], vals[1]
        if layer.type == "Scale":
            return vals[0], vals[1] if len(vals) > 1 else np.zeros(oc, np.float32)
        return one, vals[0]  # Bias

    def _weights(self, layer, wdims, scale, shift, oc: int, wtag: str):
        """(weights memory, bias memory or None) with the folded affine layers applied."""
        weight = np.asarray(layer.weight_data.numpy(), np.float32)
        if weight.size != int(np.prod(wdims)):
            raise Unsupported("weight size")
        weight = weight.reshape(wdims)
        bias = np.asarray(layer.bias_data.numpy(), np.float32).reshape(oc) if layer.bias_term else None
        if scale is not None:
            # output channel o of the weights is axis 0, or (group, o within it) with groups
            lead = (oc,) if len(wdims) == 4 or len(wdims) == 2 or layer.type == "InnerProduct" else wdims[:2]
            weight = weight * scale.reshape(lead + (1,) * (len(wdims) - len(lead)))
            bias = shift if bias is None else bias * scale + shift
        wmem = self._const(weight, wdims, wtag)
        bmem = self._const(bias, (oc,), "a") if bias is not None else None
        return wmem, bmem

    def _convolution(self, layer, seg, scale, shift, post) -> None:
        d, dn = _dnnl(), self.dnnl
        deconv = layer.type.startswith("Deconvolution")
        if (
            len(layer.bottoms) != 1
            or getattr(layer, "dynamic_weight", False)
            or getattr(layer, "int8_scale_term", False)
        ):
            raise Unsupported("dynamic or int8 weights")
        bottom = layer.bottoms[0]
        extra = (0, 0, 0, 0)
        if bottom in self._pending_pads:
            bottom, extra = self._pending_pads[bottom]
        ishape, oshape = self._shape(layer.bottoms[0]), self._shape(layer.tops[0])
        if ishape[0] != 3 or oshape[0] != 3:
            raise Unsupported("needs a 3-D blob")
        _, w, h, _, c, _, _ = ishape
        _, ow, oh, _, oc, _, _ = oshape
        kw, kh = layer.kernel_w, layer.kernel_h
        if layer.weight_data.elemsize != 4:
            raise Unsupported("weights not fp32")
        groups = (
            layer.group_count() if hasattr(layer, "group_count") else int(getattr(layer, "group", 1) or 1)
        )
        if c % groups or oc % groups:
            raise Unsupported("channels not divisible by group")
        wdims: tuple[int, ...]
        if groups == 1:
            wdims, wtag = (oc, c, kh, kw), "abcd"
        else:
            wdims, wtag = (groups, oc // groups, c // groups, kh, kw), "abcde"
        if deconv:
            geo = layer.deconv_geometry(w, h, kw, kh)
            if geo is None:
                raise Unsupported("deconvolution geometry")
            _fw, _fh, (t, b, l, r) = geo
            # the output pads are rows and columns past the full result: negative padding
            pad_l, pad_r = (t, l), (b - layer.output_pad_bottom, r - layer.output_pad_right)
            if min(pad_r) < 0:
                raise Unsupported("output_pad beyond the crop")
        else:
            t, b, l, r = layer.pads((h, w))  # the layer's own geometry (layer/_geometry.py)
            if min(t, b, l, r) < 0 or ((t or b or l or r) and layer.pad_value != 0):
                raise Unsupported("cropping or a non-zero pad value")
            t, b, l, r = t + extra[0], b + extra[1], l + extra[2], r + extra[3]
            pad_l, pad_r = (t, l), (b, r)
            _, w, h, _, c, _, _ = self._shape(bottom)
        wmem, bmem = self._weights(layer, wdims, scale, shift, oc, wtag)
        own = []
        if layer.activation_type:
            own.append(_activation(layer.activation_type, getattr(layer, "activation_params", None)))
        sdims, odims = (1, c, h, w), (1, oc, oh, ow)
        make = dn.deconvolution if deconv else dn.convolution

        def create(attr):
            return make(
                dn.md(sdims, "any"), dn.md(wdims, "any"), bmem.md if bmem else None, dn.md(odims, "any"),
                (layer.stride_h, layer.stride_w), (layer.dilation_h - 1, layer.dilation_w - 1), pad_l, pad_r, attr,
            )  # fmt: skip

        for attr, operands in self._post_args(seg, post, odims, len(own)):  # noqa: B007 - used after
            pd = create(own + attr)
            if not pd.impl.startswith("ref"):
                break
        _no_reference(pd)
        after = []
        if "gemm" in pd.impl and (own or post) and deconv:
            # a deconvolution by GEMM applies post-ops in a scalar loop (5x its own time):
            # its activation then runs as an eltwise primitive, the rest on their own
            if post:
                raise Unsupported("post-ops of a GEMM deconvolution")
            pd, after, operands = create([]), own, []
        src = self._as_dims(seg, self._value(seg, bottom, pd.md("src", sdims)), sdims)
        src = self._as_md(seg, src, pd.md("src", sdims))
        wpacked = self._prepack(wmem, pd.md("weights", wdims))
        args = [(d.ARG_WEIGHTS, wpacked)] + self._bind_posts(seg, operands)
        if bmem is not None:
            args.append((d.ARG_BIAS, bmem))
        if not after:
            return self._run1(seg, pd, src, self._top(layer, pd.md("dst", odims)), args)
        raw = self._new_value(pd.md("dst", odims), self._shape(layer.tops[0]))
        self._run1(seg, pd, src, raw, args)
        (alg, alpha, beta) = after[0]
        self._run1(seg, dn.eltwise(alg, raw.md, raw.md, alpha, beta), raw, self._top(layer, raw.md))

    def _inner_product(self, layer, seg, scale, shift, post) -> None:
        dn = self.dnnl
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
        wtag = _PLAIN[len(wdims)]
        wmem, bmem = self._weights(layer, wdims, scale, shift, oc, wtag)
        own = []
        if layer.activation_type:
            own.append(_activation(layer.activation_type, getattr(layer, "activation_params", None)))
        for attr, operands in self._post_args(seg, post, (1, oc), len(own)):  # noqa: B007 - used after
            pd = dn.inner_product(
                dn.md(in_dims, "any"),
                dn.md(wdims, "any"),
                bmem.md if bmem else None,
                dn.md((1, oc), "ab"),
                own + attr,
            )
            if not pd.impl.startswith("ref"):
                break
        _no_reference(pd)
        src = self._as_md(seg, src, pd.md("src", in_dims))
        wpacked = self._prepack(wmem, pd.md("weights", wdims))
        d = _dnnl()
        args = [(d.ARG_WEIGHTS, wpacked)] + self._bind_posts(seg, operands)
        if bmem is not None:
            args.append((d.ARG_BIAS, bmem))
        self._run1(seg, pd, src, self._top(layer, pd.md("dst", (1, oc))), args)

    # -- the other layers -----------------------------------------------------------------------
    def _pooling(self, layer, seg, opt) -> None:
        ishape, oshape = self._shape(layer.bottoms[0]), self._shape(layer.tops[0])
        if ishape[0] != 3 or getattr(layer, "adaptive_pooling", 0):
            raise Unsupported("needs a 3-D blob, not adaptive")
        _, w, h, _, c, _, _ = ishape
        is_max = layer.pooling_type == 0
        if layer.pooling_type not in (0, 1):
            raise Unsupported("pooling type")
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
        self._pool(layer, seg, alg, (1, c, oh, ow), kernel, stride, pads)

    def _pool(self, layer, seg, alg, odims, kernel, stride, pads) -> None:
        dn = self.dnnl
        t, b, l, r = pads
        src = self._canon(seg, self._value(seg, layer.bottoms[0]))
        pd = dn.pooling(alg, src.md, dn.md(odims, "any"), stride, kernel, (t, l), (b, r))
        _no_reference(pd)
        self._run1(seg, pd, src, self._top(layer, pd.md("dst", odims)))

    def _passthrough(self, layer, seg) -> bool:
        if layer.type == "Dropout" and float(getattr(layer, "scale", 1.0)) != 1.0:
            return False
        if len(layer.bottoms) == 1:
            src = self._value(seg, layer.bottoms[0])
            for i in range(len(layer.tops)):
                self._same(layer, seg, src, i)
            return True
        if layer.type != "Noop" or len(layer.tops) > len(layer.bottoms):
            return False
        for i, b in enumerate(layer.bottoms[: len(layer.tops)]):
            self._same(layer, seg, self._value(seg, b), i)
        return True

    def _eltwise(self, layer, seg, ops) -> None:
        """One elementwise layer: its oneDNN eltwise ops in one primitive (the rest as
        post-ops) where oneDNN has a fast kernel for that, else one primitive each."""
        dn = self.dnnl
        if len(layer.bottoms) != 1:
            raise Unsupported("one input")
        src = self._value(seg, layer.bottoms[0])
        alg, alpha, beta = ops[0]
        pd = dn.eltwise(alg, src.md, src.md, alpha, beta, ops[1:])
        if not pd.impl.startswith("ref") or len(ops) == 1:
            if pd.impl.startswith("ref") and self._tag_of(src.md) != _PLAIN[len(src.md.dims)]:
                # some eltwise kernels take only plain layouts with padded channels
                src = self._plain(seg, src)
                pd = dn.eltwise(alg, src.md, src.md, alpha, beta)
            return self._run1(seg, pd, src, self._top(layer, src.md))
        for i, (alg, alpha, beta) in enumerate(ops):
            pd = dn.eltwise(alg, src.md, src.md, alpha, beta)
            if pd.impl.startswith("ref"):
                src = self._plain(seg, src)
                pd = dn.eltwise(alg, src.md, src.md, alpha, beta)
            out = self._top(layer, src.md) if i == len(ops) - 1 else self._new_value(src.md, src.shape)
            self._run1(seg, pd, src, out)
            src = out

    def _same_inputs(self, layer, seg) -> list[Value]:
        vals = [self._canon(seg, self._value(seg, b)) for b in layer.bottoms]
        first = vals[0]
        for i, v in enumerate(vals[1:], 1):
            if v.md.dims != first.md.dims:
                raise Unsupported("inputs of different shapes")
            vals[i] = self._as_md(seg, v, first.md)
        return vals

    def _concat_values(self, layer, seg, vals: list[Value], axis: int, index: int = 0, tag="any") -> Value:
        d, dn = _dnnl(), self.dnnl
        dims = list(vals[0].md.dims)
        dims[axis] = sum(v.md.dims[axis] for v in vals)
        pd = dn.concat(dn.md(dims, tag), axis, [v.md for v in vals])
        for other in ("acdb", _PLAIN[len(dims)]) if pd.impl.startswith("ref") else ():
            # parts whose channels do not fill whole blocks: copied into a layout without
            # blocks (channels innermost first: convolutions on AVX-512 read that)
            if other == "acdb" and len(dims) != 4:
                continue
            pd = dn.concat(dn.md(dims, other), axis, [dn.md(v.md.dims, other) for v in vals])
            if not pd.impl.startswith("ref"):
                vals = [self._as_md(seg, v, dn.md(v.md.dims, other)) for v in vals]
                break
        _no_reference(pd)
        out = self._top(layer, pd.md("dst", dims), index) if layer is not None else None
        if out is None:
            out = self._new_value(pd.md("dst", dims), vals[0].shape)
        args = [(d.ARG_MULTIPLE_SRC + i, self._mem(v)) for i, v in enumerate(vals)]
        for v in vals:
            v.last = self._step
        self._add(seg, pd.primitive(), args + [(d.ARG_DST, self._mem(out))])
        return out

    def _concat(self, layer, seg, opt) -> None:
        shapes = [self._shape(b) for b in layer.bottoms]
        dims = shapes[0][0]
        if dims not in (1, 2, 3) or any(s[0] != dims for s in shapes):
            raise Unsupported("concat dims")
        axis = 0 if dims == 1 else layer.axis + dims if layer.axis < 0 else layer.axis
        if not 0 <= axis < dims:
            raise Unsupported("concat axis")
        vals = [self._canon(seg, self._value(seg, b)) for b in layer.bottoms]
        if len(vals) == 1:
            return self._same(layer, seg, vals[0])
        ref = vals[0].md.dims
        if any(
            v.md.dims[: axis + 1] + v.md.dims[axis + 2 :] != ref[: axis + 1] + ref[axis + 2 :] for v in vals
        ):
            raise Unsupported("concat shapes")
        self._concat_values(layer, seg, vals, axis + 1)

    def _eltwise_layer(self, layer, seg, opt, post=()) -> None:
        d, dn = _dnnl(), self.dnnl
        vals = self._same_inputs(layer, seg)
        op = layer.op_type
        coeffs = [float(x) for x in (layer.coeffs if layer.coeffs is not None else ())]
        if op == 1 and (len(vals) > 2 or any(c != 1.0 for c in coeffs)):
            if post:
                raise Unsupported("a weighted sum takes no post-ops")
            if coeffs and len(coeffs) != len(vals):
                raise Unsupported("coefficient count")
            pd = dn.sum(vals[0].md, coeffs or [1.0] * len(vals), [v.md for v in vals])
            _no_reference(pd)
            out = self._top(layer, pd.md("dst", vals[0].md.dims))
            args = [(d.ARG_MULTIPLE_SRC + i, self._mem(v)) for i, v in enumerate(vals)]
            for v in vals:
                v.last = self._step
            self._add(seg, pd.primitive(), args + [(d.ARG_DST, self._mem(out))])
            return
        alg = {0: "mul", 1: "add", 2: "max"}.get(op)
        if alg is None:
            raise Unsupported(f"eltwise op {op}")
        acc = vals[0]
        for i, v in enumerate(vals[1:], 1):
            last = i == len(vals) - 1
            pd = dn.binary(alg, acc.md, v.md, acc.md, post if last else ())
            _no_reference(pd)
            out = self._top(layer, acc.md) if last else self._new_value(acc.md, acc.shape)
            v.last = self._step
            self._run1(seg, pd, acc, out, [(d.ARG_SRC_1, self._mem(v))])
            acc = out

    def _binary(self, layer, seg, alg: str, a: Value, b: Value, post=()) -> None:
        """top = alg(a, b), b broadcast over a (a has the output's dims); ``post``: eltwise
        post-ops ``(alg, alpha, beta)`` and binary ones ``(alg, Value)``, broadcast alike."""
        d, dn = _dnnl(), self.dnnl
        tag = self._tag_of(a.md)
        plain = _PLAIN[len(a.md.dims)]
        # b (and the post-op operands) as they are, in a's layout, then everything plain
        layouts = [(a.md, None)] + ([(a.md, tag)] if tag else []) + [(dn.md(a.md.dims, plain), plain)]
        for am, btag in layouts:
            bm = b.md if btag is None else dn.md(b.md.dims, btag)
            pmds = [
                p if len(p) == 3 else (p[0], p[1].md if btag is None else dn.md(p[1].md.dims, btag))
                for p in post
            ]
            pd = dn.binary(alg, am, bm, am, pmds)
            if not pd.impl.startswith("ref"):
                break
        _no_reference(pd)
        a, b = self._as_md(seg, a, am), self._as_md(seg, b, bm)
        args = [(d.ARG_SRC_1, self._mem(b))]
        for i, (p, pm) in enumerate(zip(post, pmds, strict=True)):
            if len(p) == 2:
                pv = self._as_md(seg, p[1], pm[1])
                pv.last = self._step
                args.append((d.post_arg(i), self._mem(pv)))
        b.last = self._step
        self._run1(seg, pd, a, self._top(layer, a.md), args)

    def _binaryop(self, layer, seg, opt, post=()) -> None:
        from ..layer.binaryop import broadcast_shapes

        op = layer.op_type
        shapes = [self._shape(x) for x in layer.bottoms]
        if len(shapes) != 2 or any(s[0] not in (1, 2, 3) for s in shapes):
            raise Unsupported("two 1-D..3-D inputs")
        bs = broadcast_shapes(_numpy_shape(shapes[0]), _numpy_shape(shapes[1]))
        if bs is None:
            raise Unsupported("shapes do not broadcast")
        ash, bsh, osh = bs
        va, vb = (self._value(seg, x) for x in layer.bottoms)
        neg = [("linear", -1.0, 0.0)]  # -(y - x) is x - y exactly
        if ash == osh:
            form = {0: ("add", 0), 1: ("sub", 0), 2: ("mul", 0), 3: ("div", 0), 4: ("max", 0), 5: ("min", 0)}
            form.update({7: ("sub", 1)})
            full, other = va, vb
            fdims, odims = ash, bsh
        elif bsh == osh:
            form = {0: ("add", 0), 1: ("sub", 1), 2: ("mul", 0), 4: ("max", 0), 5: ("min", 0), 7: ("sub", 0)}
            form.update({8: ("div", 0)})
            full, other = vb, va
            fdims, odims = bsh, ash
        else:
            raise Unsupported("both inputs broadcast")
        if op not in form:
            raise Unsupported(f"binary op {op} in this broadcast")
        alg, negate = form[op]
        full = self._as_dims(seg, full, (1, *fdims))
        other = self._as_dims(seg, other, (1, *odims))
        self._binary(layer, seg, alg, full, other, (neg if negate else []) + list(post))

    def _softmax(self, layer, seg, opt) -> None:
        dn = self.dnnl
        ishape = self._shape(layer.bottoms[0])
        dims = ishape[0]
        if dims not in (1, 2, 3):
            raise Unsupported("softmax dims")
        axis = 0 if dims == 1 else layer.axis + dims if layer.axis < 0 else layer.axis
        if not 0 <= axis < dims:
            raise Unsupported("softmax axis")
        src = self._canon(seg, self._value(seg, layer.bottoms[0]))
        # oneDNN's fast softmax runs along the innermost axis (or blocked channels): else
        # the blob is copied into a layout where the axis is innermost
        n = len(src.md.dims)
        order = [i for i in range(n) if i != axis + 1] + [axis + 1]
        strides = [0] * n
        acc = 1
        for i in reversed(order):
            strides[i] = acc
            acc *= src.md.dims[i]
        for md in (src.md, dn.md(src.md.dims, strides=strides)):
            pd = dn.softmax(md, md, axis + 1)
            if not pd.impl.startswith("ref"):
                break
        src = self._as_md(seg, src, md)
        self._run1(seg, pd, src, self._top(layer, src.md))

    def _reshape(self, layer, seg, opt) -> None:
        """Flatten / Reshape: the same elements in the recorded shape, a view of the plain
        layout (ncnn's order: c, then h, then w)."""
        oshape = self._shape(layer.tops[0])
        dims = _mat_dims(oshape)
        if dims is None or len(layer.tops) != 1:
            raise Unsupported("reshape to a 4-D blob")
        src = self._plain(seg, self._value(seg, layer.bottoms[0]))
        if int(np.prod(src.md.dims)) != int(np.prod(dims)):
            raise Unsupported("element count")
        self._set_top(layer, self._alias(src, self.dnnl.md(dims, _PLAIN[len(dims)]), 0, oshape))

    def _shufflechannel(self, layer, seg, opt) -> None:
        dn = self.dnnl
        shape = self._shape(layer.bottoms[0])
        if shape[0] != 3:
            return self._same(layer, seg, self._value(seg, layer.bottoms[0]))  # one channel
        _, w, h, _, c, _, _ = shape
        if c % layer.group:
            raise Unsupported("channels do not split into groups")
        groups = c // layer.group if layer.reverse else layer.group
        per = c // groups
        if groups == 1 or per == 1:
            return self._same(layer, seg, self._value(seg, layer.bottoms[0]))
        if layer.bottoms[0] in self._pending_concats:
            return self._shuffle_parts(layer, seg, groups, per)
        src = self._canon(seg, self._value(seg, layer.bottoms[0]))
        if _BLOCK.get(self._tag_of(src.md) or ""):
            # oneDNN's shuffle: its group_size is the channels per ncnn group
            pd = dn.shuffle(src.md, src.md, 1, per)
            if not pd.impl.startswith("ref"):
                return self._run1(seg, pd, src, self._top(layer, src.md))
        # output channel j * groups + i is input channel i * per + j: a strided copy within
        # the layout the blob has (channels plain or innermost), else within the plain one
        tag = self._tag_of(src.md)
        if tag not in ("abcd", "acdb"):
            src, tag = self._plain(seg, src), "abcd"
        n, cs, hs, ws = _tag_strides(tag, src.md.dims)
        five = (1, groups, per, h, w)
        view = self._alias(src, dn.md(five, strides=(n, per * cs, cs, hs, ws)))
        out = self._top(layer, dn.md((1, c, h, w), tag))
        self._copy(seg, view, self._alias(out, dn.md(five, strides=(n, cs, groups * cs, hs, ws))))

    def _shuffle_parts(self, layer, seg, groups: int, per: int) -> None:
        """Concat + ShuffleChannel in one pass: each part of the concat, whole groups of
        ``per`` channels, is copied straight to its shuffled channels of the output."""
        dn = self.dnnl
        cat = self._layers[self._pending_concats.pop(layer.bottoms[0])]
        parts = [self._canon(seg, self._value(seg, b)) for b in cat.bottoms]
        _, w, h, _, c, _, _ = self._shape(layer.tops[0])
        tag = "acdb" if self._tag_of(parts[0].md) == "acdb" else "abcd"
        out = self._top(layer, dn.md((1, c, h, w), tag))
        n, cs, hs, ws = _tag_strides(tag, (1, c, h, w))
        first = 0  # the part's first group
        for v in parts:
            m = v.md.dims[1] // per
            five = (1, m, per, h, w)
            try:
                src = self._alias(v, v.md.reshaped(five))
            except _dnnl().DnnlError:
                v = self._plain(seg, v)
                src = self._alias(v, v.md.reshaped(five))
            # input channel i * per + j (group i) goes to output channel j * groups + i
            dst = self._alias(out, dn.md(five, strides=(n, cs, groups * cs, hs, ws)), first * cs * 4)
            self._copy(seg, src, dst)
            first += m

    def _slice(self, layer, seg, opt) -> None:
        shape = self._shape(layer.bottoms[0])
        dims = shape[0]
        if dims not in (1, 2, 3):
            raise Unsupported("slice dims")
        axis = 0 if dims == 1 else layer.axis + dims if layer.axis < 0 else layer.axis
        npshape = _numpy_shape(shape)
        if not 0 <= axis < dims:
            raise Unsupported("slice axis")
        sizes = layer.part_sizes(npshape[axis], len(layer.tops))
        if sizes is None:
            raise Unsupported("slice sizes")
        src = self._canon(seg, self._value(seg, layer.bottoms[0]))
        q = 0
        for i, s in enumerate(sizes):
            odims = list(src.md.dims)
            odims[axis + 1] = s
            offs = [0] * len(odims)
            offs[axis + 1] = q
            self._set_top(layer, self._box(seg, src, odims, offs, self._shape(layer.tops[i])), i)
            q += s

    def _crop(self, layer, seg, opt) -> None:
        shape = self._shape(layer.bottoms[0])
        if not layer.one_blob_only or layer._exprs is not None or shape[0] not in (1, 2, 3):
            raise Unsupported("crop with a reference blob or expressions")
        npshape = _numpy_shape(shape)
        box = layer._box_from_arrays(npshape) if layer.numpy_style() else layer._box_from_params(npshape)
        if box is None or any(o < 0 or s <= 0 or o + s > n for (o, s), n in zip(box, npshape, strict=True)):
            raise Unsupported("crop box")
        src = self._canon(seg, self._value(seg, layer.bottoms[0]))
        if all(s == n for (_, s), n in zip(box, npshape, strict=True)):
            return self._same(layer, seg, src)
        odims = (1, *(s for _, s in box))
        offs = (0, *(o for o, _ in box))
        self._set_top(layer, self._box(seg, src, odims, offs, self._shape(layer.tops[0])))

    def _padding(self, layer, seg, opt) -> None:
        shape = self._shape(layer.bottoms[0])
        if layer.pad_type != 0 or layer.per_channel_pad_data_size or shape[0] not in (1, 2, 3):
            raise Unsupported("replicate / reflect / per-channel padding")
        pads = layer.pads(shape[0])
        src = self._canon(seg, self._value(seg, layer.bottoms[0]))
        if all(p == (0, 0) for p in pads):
            return self._same(layer, seg, src)
        self._set_top(layer, self._pad_value(seg, src, pads, float(layer.value)))

    def _pad_value(self, seg, v: Value, pads, value: float) -> Value:
        """``v`` grown by constant blocks: a concat per padded axis, in ``v``'s layout."""
        tag = self._tag_of(v.md) or "any"
        for axis, (before, after) in enumerate(pads):
            if not (before or after):
                continue
            parts: list[Value | None] = []
            for n in (before, after):
                if n:
                    dims = list(v.md.dims)
                    dims[axis + 1] = n
                    md = None if tag == "any" else self.dnnl.md(dims, tag)
                    parts.append(self._const_value(np.full(dims, value, np.float32), v.shape, dims, md))
                else:
                    parts.append(None)
            vals = [p for p in (parts[0], v, parts[1]) if p is not None]
            v = self._concat_values(None, seg, vals, axis + 1, tag=tag)
        return v

    def _make_pending_pad(self, seg, blob: int) -> Value:
        bottom, (t, b, l, r) = self._pending_pads.pop(blob)
        src = self._canon(seg, self._value(seg, bottom))
        v = self._pad_value(seg, src, [(0, 0), (t, b), (l, r)], 0.0)
        v = self._alias(v, v.md, 0, self._shape(blob))
        self._values[blob] = v
        v.last = self._step
        return v

    def _interp(self, layer, seg, opt) -> None:
        dn = self.dnnl
        ishape, oshape = self._shape(layer.bottoms[0]), self._shape(layer.tops[0])
        if not layer.one_blob_only or layer._size_expr is not None or len(layer.bottoms) != 1:
            raise Unsupported("a size from a reference blob or an expression")
        if ishape[0] != 3 or oshape[0] != 3 or layer.resize_type not in (1, 2):
            raise Unsupported("nearest / bilinear of a 3-D blob only")
        if layer.resize_type == 2 and layer.align_corner:
            raise Unsupported("align_corner")
        _, w, h, _, c, _, _ = ishape
        _, ow, oh, _, _, _, _ = oshape
        src = self._canon(seg, self._value(seg, layer.bottoms[0]))
        if (w, h) == (ow, oh):
            return self._same(layer, seg, src)
        alg = "nearest" if layer.resize_type == 1 else "linear"
        if not self._interp_agrees(layer, alg, (h, w), (oh, ow), opt):
            raise Unsupported("oneDNN's source positions differ from ncnn's here")
        odims = (1, c, oh, ow)
        pd = dn.resampling(alg, src.md, dn.md(odims, "any"))
        if pd.impl.startswith("ref"):
            src = self._plain(seg, src)
            pd = dn.resampling(alg, src.md, dn.md(odims, "abcd"))
        self._run1(seg, pd, src, self._top(layer, pd.md("dst", odims)))

    def _interp_agrees(self, layer, alg: str, size, osize, opt) -> bool:
        """Whether oneDNN resamples ``size`` to ``osize`` as the numpy layer does: both run
        on one random channel (the positions and weights do not depend on the channel)."""
        d, dn = _dnnl(), self.dnnl
        h, w = size
        oh, ow = osize
        x = np.random.default_rng(0).standard_normal((1, h, w)).astype(np.float32)
        ref = Mat()
        if layer.forward(Mat(x), ref, opt) != 0:
            return False
        want = np.asarray(ref.numpy(), np.float32).reshape(oh, ow)
        got = np.zeros((oh, ow), np.float32)
        smd, omd = dn.md((1, 1, h, w), "abcd"), dn.md((1, 1, oh, ow), "abcd")
        pd = dn.resampling(alg, smd, omd)
        steps = d.Steps(dn)
        steps.add(
            pd.primitive(),
            [(d.ARG_SRC, dn.memory(smd, x.ctypes.data)), (d.ARG_DST, dn.memory(omd, got.ctypes.data))],
        )
        steps.seal()
        d.Runner(dn).run(steps, 1, [])
        tol = 0.0 if alg == "nearest" else 1e-5
        return bool(np.abs(got - want).max() <= tol * max(1.0, float(np.abs(want).max())))

    def _permute(self, layer, seg, opt) -> None:
        from ..layer.permute import _AXES

        dn = self.dnnl
        shape = self._shape(layer.bottoms[0])
        dims = shape[0]
        src = self._canon(seg, self._value(seg, layer.bottoms[0]))
        if dims == 1 or layer.order_type == 0:
            return self._same(layer, seg, src)
        if dims not in (2, 3) or layer.order_type >= len(_AXES[dims]):
            raise Unsupported("permute of a 4-D blob")
        axes = _AXES[dims][layer.order_type]
        npshape = _numpy_shape(shape)
        oshape = tuple(npshape[a] for a in axes)
        ostrides = _dense_strides(oshape)
        out = self._top(layer, dn.md((1, *oshape), _PLAIN[dims + 1]))
        # the output seen in the input's axis order: input axis a has the stride of its place
        strides = [int(np.prod(oshape))] + [ostrides[axes.index(a)] for a in range(dims)]
        self._copy(seg, src, self._alias(out, dn.md(src.md.dims, strides=strides)))

    def _channel_affine(self, layer, seg, opt) -> None:
        """BatchNorm / Scale / Bias on their own: x * scale + shift per channel, one binary
        op with constants (Scale's two-blob form stays numpy)."""
        shape = self._shape(layer.bottoms[0])
        if shape[0] not in (1, 2, 3) or not layer.one_blob_only:
            raise Unsupported("dims, or scales from a blob")
        src = self._canon(seg, self._value(seg, layer.bottoms[0]))
        dims = src.md.dims
        cdims = (1, dims[1]) + (1,) * (len(dims) - 2)
        ab = self._affine_coeffs(layer, dims[1])
        if ab is None:
            raise Unsupported("coefficients")
        mul, add = (self._const_value(x, shape, cdims) for x in ab)
        if layer.type == "Bias":
            return self._binary(layer, seg, "add", src, add)
        self._binary(layer, seg, "mul", src, mul, [("add", add)])

    def _prelu(self, layer, seg, opt) -> None:
        dn = self.dnnl
        shape = self._shape(layer.bottoms[0])
        if shape[0] not in (1, 2, 3):
            raise Unsupported("dims")
        src = self._canon(seg, self._value(seg, layer.bottoms[0]))
        dims = src.md.dims
        cdims = (1, dims[1]) + (1,) * (len(dims) - 2)
        coeffs = layer.channel_coeffs(_shape_like(shape))
        if coeffs is None:
            raise Unsupported("slopes")
        slope = self._const_value(
            np.asarray(coeffs[0], np.float32) * np.ones(dims[1], np.float32), shape, cdims
        )
        tag = self._tag_of(src.md)
        cands = [(src.md, slope.md)] + ([(src.md, dn.md(cdims, tag))] if tag else [])
        for am, wm in cands + [(dn.md(dims, _PLAIN[len(dims)]), slope.md)]:
            pd = dn.prelu(am, wm, am)
            if not pd.impl.startswith("ref"):
                break
        src, slope = self._as_md(seg, src, am), self._as_md(seg, slope, wm)
        self._run1(seg, pd, src, self._top(layer, src.md), [(_dnnl().ARG_WEIGHTS, slope.mem)])

    def _reduction(self, layer, seg, opt) -> None:
        dn = self.dnnl
        shape = self._shape(layer.bottoms[0])
        dims = shape[0]
        if dims not in (1, 2, 3) or layer.coeff != 1.0:
            raise Unsupported("dims or coeff")
        axes = layer.reduced_axes(dims)
        alg = {0: "sum", 3: "mean", 4: "max", 5: "min"}.get(layer.operation)
        if axes is None or alg is None:
            raise Unsupported(f"reduction {layer.operation}")
        src = self._canon(seg, self._value(seg, layer.bottoms[0]))
        odims = tuple(1 if i - 1 in axes else n for i, n in enumerate(src.md.dims))
        if dims == 3 and axes == (1, 2) and alg in ("mean", "max"):
            # over each channel's plane: global pooling, fast in every layout
            _, w, h, _, c, _, _ = shape
            pool = "max" if alg == "max" else "avg_include_padding"
            return self._pool(layer, seg, pool, odims, (h, w), (1, 1), (0, 0, 0, 0))
        pd = dn.reduction(alg, src.md, dn.md(odims, "any"))
        if pd.impl.startswith("ref"):
            src = self._plain(seg, src)
            pd = dn.reduction(alg, src.md, dn.md(odims, _PLAIN[len(odims)]))
        self._run1(seg, pd, src, self._top(layer, pd.md("dst", odims)))

    def _lrn(self, layer, seg, opt) -> None:
        dn = self.dnnl
        shape = self._shape(layer.bottoms[0])
        if shape[0] != 3 or layer.local_size % 2 == 0:
            raise Unsupported("3-D blobs and odd windows only")
        alg = "across_channels" if layer.region_type == 0 else "within_channel"
        src = self._canon(seg, self._value(seg, layer.bottoms[0]))
        args = (layer.local_size, float(layer.alpha), float(layer.beta), float(layer.bias))
        pd = dn.lrn(alg, src.md, src.md, *args)
        for tag in ("abcd", "acdb"):
            if not pd.impl.startswith("ref"):
                break
            md = dn.md(src.md.dims, tag)
            pd = dn.lrn(alg, md, md, *args)
        src = self._as_md(seg, src, pd.md("src", src.md.dims))
        self._run1(seg, pd, src, self._top(layer, src.md))

    # -- memory ------------------------------------------------------------------------------
    def _place(self) -> None:
        """Offsets in one arena: a blob's bytes are free again after its last reader (its
        views' readers included)."""
        for v in self._all_values:
            if v.base is not None and not v.base.const:
                v.base.last = max(v.base.last, v.last)
        values = [v for v in self._all_values if v.mem is not None and v.base is None and not v.const]
        values.sort(key=lambda v: v.first)
        live: list[tuple[int, int, Value]] = []  # (offset, end, value)
        top = 0
        for v in values:
            live = [x for x in live if x[2].last >= v.first]
            live.sort(key=lambda x: (x[0], x[1]))
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
        for v in self._all_values:
            if v.mem is None or v.const:
                continue
            root = v.base if v.base is not None else v
            addr = root.addr if root.const else base + root.offset
            d.check(
                d.lib.dnnl_memory_set_data_handle(v.mem.ptr, d.ffi.cast("void *", addr + v.base_off)), "bind"
            )
        self.arena_bytes = top

    # -- running ------------------------------------------------------------------------------
    def run(self, state: BlobState, forward: Step, opts, opt: Option, capture: dict | None = None) -> int:
        """Compute the outputs into ``state.mats``, the numpy layers with ``forward``; 0, or
        non-zero when a numpy layer's output no longer has the recorded shape (the caller then
        runs the numpy path). ``capture`` gets a copy of every blob a native segment writes
        out, when it is written."""
        mats = state.mats
        light = bool(opt.lightmode)
        blob_allocator = opt.blob_allocator
        num_threads = opt.num_threads
        for o in self.outputs:
            # what the plan hands out must survive the numpy layers' light-mode release
            # (and their in-place writes): one more reader than the graph has
            state.pending[o] += 1
        binds: list = []
        for seg in self._segments:
            if seg.layer >= 0:
                ret = forward(state, seg.layer, opts[seg.layer], light)
                if ret != 0:
                    return ret
                for t in self._layers[seg.layer].tops:
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


# the layer types the plan builds from their own method (the producers, pass-throughs and
# elementwise layers are dispatched before)
_LAYER_METHODS = {
    "Pooling": NativePlan._pooling,
    "Concat": NativePlan._concat,
    "Eltwise": NativePlan._eltwise_layer,
    "BinaryOp": NativePlan._binaryop,
    "Softmax": NativePlan._softmax,
    "Flatten": NativePlan._reshape,
    "Reshape": NativePlan._reshape,
    "ShuffleChannel": NativePlan._shufflechannel,
    "Slice": NativePlan._slice,
    "Crop": NativePlan._crop,
    "Padding": NativePlan._padding,
    "Interp": NativePlan._interp,
    "Permute": NativePlan._permute,
    "BatchNorm": NativePlan._channel_affine,
    "Scale": NativePlan._channel_affine,
    "Bias": NativePlan._channel_affine,
    "PReLU": NativePlan._prelu,
    "Reduction": NativePlan._reduction,
    "LRN": NativePlan._lrn,
}


# layer types with a native form (in some shapes and settings): their inputs need no copy
NATIVE_TYPES = frozenset(
    [*_LAYER_METHODS, *PRODUCERS, "Split", "Dropout", "Noop", "MemoryData", "PriorBox"]
    + "ReLU Clip Sigmoid TanH Swish Mish HardSwish AbsVal ELU HardSigmoid PReLU UnaryOp Exp Log Power".split()
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


# -- the executor ---------------------------------------------------------------------------------
class NativeExecutor:
    """The native plan as an executor: ``extract`` runs the plan of the state's input shapes,
    records one (on the reference executor) when there is none, or returns None when the
    reference executor must run (no plan possible; the state is then untouched)."""

    __slots__ = ("_view", "_reference")

    def __init__(self, view: NetView, reference: ReferenceExecutor) -> None:
        self._view = view
        self._reference = reference

    def _outputs(self, index: int, given: set[int]) -> list[int]:
        """``index`` and every other output of the net (a blob nobody reads) that the given
        inputs can compute: a plan computes them all, since callers extract them all."""
        view = self._view
        blobs = view.blobs
        outs = [index]
        for b, n in enumerate(view.consumer_counts):
            if n == 0 and b != index and blobs[b].producer >= 0:
                if set(view.plan(b).sources) <= given:
                    outs.append(b)
        return outs

    def extract(self, state: BlobState, index: int, opt: Option) -> int | None:
        """Compute blob ``index`` with the native plan of this input shape: its return code,
        or None when the numpy path must run."""
        view = self._view
        if state.partial or not view.native_enabled or not available():
            return None
        mats = state.mats
        inputs = {i: m for i, m in enumerate(mats) if m is not None}
        for m in inputs.values():
            if m.elemsize != 4 or m.elempack != 1:
                return None
        lo = view.layer_options(opt)
        opts = lo.per_layer
        key = (index, lo, tuple((i, shape_of(m)) for i, m in inputs.items()))
        plans: NativePlans = view.native_plans
        plan = plans.take(key)
        if plan is not None:
            saved = list(mats)
            try:
                ret = plan.run(state, self._reference.forward, opts, opt)
            finally:
                plan.lock.release()
            if ret == 0:
                state.partial = True
                return 0
            log.info("native plan: a numpy layer's output changed shape; this extract runs in numpy")
            state.mats = saved
            return None
        if not plans.wanted(key):
            return None
        return self._record(state, index, key, inputs, opt, opts)

    def _constant_layers(self, order: list[int]) -> set[int]:
        """Layers whose output is the same on every run of a plan: MemoryData, PriorBox (it
        reads only its inputs' shapes, fixed per plan), and layers that read only those. A plan
        keeps what they gave on its recording run."""
        if "constant" in _skipped_types():
            return set()
        layers = self._view.layers
        blobs: set[int] = set()
        out: set[int] = set()
        for li in order:
            layer = layers[li]
            if not _builtin(layer) or not layer.tops or layer.type in _skipped_types():
                continue
            if layer.type in ("MemoryData", "PriorBox") or (layer.bottoms and set(layer.bottoms) <= blobs):
                out.add(li)
                blobs.update(layer.tops)
        return out

    def _record(
        self, state: BlobState, index: int, key: tuple, inputs: dict[int, Mat], opt: Option, opts
    ) -> int:
        """The numpy path, logging every blob's shape; then a plan built from the log, checked
        against what the numpy path computed."""
        view = self._view
        reference = self._reference
        layers = view.layers
        shapes = {i: shape_of(m) for i, m in inputs.items()}
        outputs = self._outputs(index, set(inputs))
        order = sorted({li for o in outputs for li in view.plan(o).order})
        # what a plan writes out for numpy layers (and hands out) is checked against these
        # copies, taken as the numpy path makes them (in-place layers change them afterwards)
        watch = set(outputs)
        for li in order:
            if layers[li].type not in NATIVE_TYPES:
                watch.update(layers[li].bottoms)
        refs: dict[int, np.ndarray] = {}
        const_layers = self._constant_layers(order)
        consts: dict[int, np.ndarray] = {}

        def step(state: BlobState, li: int, layer_opt: Option, light: bool) -> int:
            ret = reference.forward(state, li, layer_opt, light)
            if ret == 0:
                for t in layers[li].tops:
                    m = state.mats[t]
                    if m is not None:
                        shapes[t] = shape_of(m)
                        if t in watch:
                            refs[t] = np.array(m.numpy(), copy=True)
                        if li in const_layers:
                            consts[t] = np.array(m.numpy(), dtype=np.float32, copy=True)
            return ret

        done: dict[int, Mat] = {}
        for o in outputs:
            if state.mats[o] is None:
                ret = reference.run_plan(state, o, opt, step)
                if ret != 0:
                    return ret
            m = state.mats[o]
            if m is None:
                return -1
            done[o] = m
        # a later output's numpy layers may have released an earlier one (light mode, in
        # place) and the extra outputs computed here must not cost a later extract its inputs
        for o, m in done.items():
            state.mats[o] = m
        for i, m in inputs.items():
            if state.mats[i] is None:
                state.mats[i] = m
        if not all(np.isfinite(a).all() for a in refs.values()):
            return 0  # nothing to check a plan against: build one with the next (finite) input
        plans: NativePlans = view.native_plans
        name = view.blobs[index].name
        try:
            plan = NativePlan(layers, order, outputs, shapes, opts, consts)
        except Exception as e:  # noqa: BLE001 - the numpy result stands; this shape stays numpy
            if strict():
                raise
            log.warning("native plan: cannot build one for %r: %s", name, e)
            plans.fail(key)
            return 0
        if plan.native_layers == 0:
            plans.fail(key)
            return 0
        check = BlobState(view.consumer_counts)
        for i, m in inputs.items():
            check.mats[i] = m
            # the caller's Mat (maybe over the caller's array): in-place layers copy first
            check.shared.add(i)
        got: dict[int, np.ndarray] = {}
        with plan.lock:
            ret = plan.run(check, reference.forward, opts, opt, got)
        bad = [o for o in outputs if ret != 0 or check.mats[o] is None]
        # every blob the native segments wrote out (the numpy layers after them are the same code)
        bad += [b for b, a in got.items() if b in refs and b not in bad and not close_enough(a, refs[b])]
        if bad:
            msg = f"native plan differs from the numpy layers at {[view.blobs[o].name for o in bad]}"
            if strict():
                raise AssertionError(msg)
            log.warning("%s: this shape keeps the numpy path", msg)
            plans.fail(key)
            return 0
        plans.add(key, plan)
        log.info(
            "native plan for %r: %d of %d layers native, %d segments, arena %d KiB",
            name, plan.native_layers, len(order), len(plan._segments), plan.arena_bytes // 1024,
        )  # fmt: skip
        return 0
