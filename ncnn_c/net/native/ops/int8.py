"""int8 Convolution / ConvolutionDepthWise / InnerProduct (``int8_scale_term``, with
``opt.use_int8_inference``) in the native plan, giving what their numpy forms give bit for bit.

Each is three steps, as ncnn's ``forward_int8``:

* **quantize** the bottom, ``float2int8(x * bottom_scale)`` (``_native/int8.c``: ncnn's
  rounding and saturation, in any layout: one scale for the blob). An int8 bottom (the top of
  a requantizing layer, through Splits) is read as it is. A blob read by several int8 layers
  with the same scale (GoogLeNet's inception branches) is quantized once.
* **sum** in int32 with oneDNN: s8 x s8 -> s32 convolution (channels-last, ``acdb``) / inner
  product (plain input). The sums are exact where oneDNN multiplies with VNNI or AMX
  (``vpdpbusd``, AMX tiles); on a CPU without VNNI its kernels halve the weights to keep
  ``vpmaddubsw``'s int16 pairs from saturating, so there the int8 layers stay numpy.
* **dequantize** (``_native/int8.c``): ``acc * scale_in + bias`` in double and cast, as the
  numpy form (``_int8.dequantize``); the fused activation (none, ReLU, LeakyReLU, Clip: the
  others stay numpy); with ``int8_scale_term > 100`` requantized, ``float2int8(v * top_scale)``,
  into an int8 top that stays inside the plan (its readers are int8 layers, which the builder
  checks before it makes one).

The two C steps run inside ``plan.c``'s run as kernels (``dnnl.Kernel``), with the plan's
OpenMP thread count. Nothing of a chain is taken in: the layers after an int8 layer (an add,
an activation, BatchNorm) are built on their own.

What an int8 layer quantizes must be the numpy layers' result bit for bit: a 1-ulp difference
becomes a whole int8 step now and then, and random weights carry it to the output. So an fp32
layer whose native form rounds differently (``exact``: LRN, average pooling, BatchNorm, ...)
stays numpy when an int8 layer reads its output, directly or through exact layers
(``exact_before_int8`` wraps every builder).

The Quantize, Dequantize and Requantize layers are C steps too (``_native/int8.c``), with one
scale (bias, output scale) for the blob or one per row / channel (a 1-D blob takes the
first), in the numpy layers' operations: Quantize ``float2int8(x * scale)`` in the layout its
bottom has; Dequantize and Requantize read the int32 bits of their bottom (read in from a Mat:
int32 comes from outside the plan) and give ``(float)((double)acc * scale_in + bias)``, for
Requantize activated (none, ReLU, LeakyReLU, Clip: the others stay numpy) and
``float2int8(v * scale_out)``. An int8 top (Quantize, Requantize) stays inside the plan: only
int8 layers may read it.
"""

from __future__ import annotations

import logging
import weakref

import numpy as np

from ..plan import (
    BLOCK,
    PLAIN,
    Builder,
    CSteps,
    NativePlan,
    Segment,
    Unsupported,
    Value,
    builtin,
    dnnl_module,
    no_reference,
)

log = logging.getLogger("ncnn_c")

TYPES = ("Convolution", "ConvolutionDepthWise", "InnerProduct")
# ncnn activation_type values the dequantize step applies (none, ReLU, LeakyReLU, Clip)
ACTIVATIONS = (0, 1, 2, 3)


def quantized(layer) -> bool:
    """An int8 layer (it runs int8 with ``use_int8_inference``; fp32 on its dequantized
    weights without)."""
    return layer.type in TYPES and bool(getattr(layer, "int8_scale_term", 0))


_STEPS = CSteps(
    "_int8",
    ("ncnnc_int8_quantize", "ncnnc_int8_dequantize", "ncnnc_int8_channels"),
    "int8 layers stay numpy",
)
kernels, _kernel = _STEPS.get, _STEPS.step


def producer(plan: NativePlan, layer, seg: Segment, opt, chain: list[int]) -> list[int]:
    """An int8 layer's steps (module docstring); takes nothing of ``chain``."""
    if not opt.use_int8_inference:
        raise Unsupported("int8 weights without use_int8_inference (fp32 on dequantized weights)")
    scales, w8 = getattr(layer, "_int8", None), getattr(layer, "_w8", None)
    if scales is None or w8 is None or len(layer.bottoms) != 1 or bool(getattr(layer, "dynamic_weight", 0)):
        raise Unsupported("int8 weights not prepared, or dynamic")
    act = int(getattr(layer, "activation_type", 0))
    if act not in ACTIVATIONS:
        raise Unsupported(f"activation type {act} after an int8 sum")
    params = [float(v) for v in np.asarray(getattr(layer, "activation_params", ()), np.float32).ravel()]
    params += [0.0] * (2 - len(params))
    if scales.top is not None:
        _int8_readers_only(plan, layer.tops[0])
    if layer.type == "InnerProduct":
        _inner_product(plan, layer, seg, scales, w8, act, params)
    else:
        _convolution(plan, layer, seg, scales, w8, act, params)
    return []


# types whose native form gives the numpy layer's result bit for bit (data movement, ReLU,
# max pooling, a plain Eltwise: the same single operations); a layer of another type (LRN,
# average pooling, Softmax ...) rounds differently in its last bit, which an int8 layer reading
# it would turn into a whole quantization step now and then, and random weights carry that on
# (GoogLeNet's LRN: 1e-7 relative before conv2/3x3_reduce, 7e-3 at the output)
EXACT = frozenset(
    ["Split", "Dropout", "Noop", "Concat", "Flatten", "Reshape", "Crop", "Slice", "Permute", "ShuffleChannel"]
    + ["ReLU", "Clip", "AbsVal", "Padding", "Pooling", "Eltwise"]
)


def exact(layer) -> bool:
    # (int8 layers: with use_int8_inference; the three below: _native/int8.c's steps are theirs)
    if quantized(layer) or layer.type in ("Quantize", "Dequantize", "Requantize"):
        return True
    if layer.type == "Pooling":
        return int(getattr(layer, "pooling_type", 0)) == 0
    if layer.type == "Eltwise":
        return int(getattr(layer, "op_type", 1)) != 1 or not np.asarray(getattr(layer, "coeffs", ())).size
    if layer.type == "ReLU":
        return float(getattr(layer, "slope", 0.0)) == 0.0
    return layer.type in EXACT


# per plan: the blobs an int8 layer quantizes, directly or through exact layers (None: the
# net has no int8 layer)
_QUANTIZED: weakref.WeakKeyDictionary[NativePlan, set[int] | None] = weakref.WeakKeyDictionary()


def quantized_later(plan: NativePlan, blob: int, opt) -> bool:
    """Whether an int8 layer quantizes ``blob`` (read directly, or through exact layers)."""
    if not opt.use_int8_inference:
        return False
    if plan not in _QUANTIZED:
        _QUANTIZED[plan] = _quantized_blobs(plan.layers)
    blobs = _QUANTIZED[plan]
    return blobs is not None and blob in blobs


def _quantized_blobs(layers) -> set[int] | None:
    if not any(quantized(x) or x.type == "Quantize" for x in layers):
        return None
    out: set[int] = set()
    # a layer only reads blobs of earlier layers: one pass from the last layer back
    for layer in reversed(layers):
        if not builtin(layer):
            continue
        if (
            quantized(layer)
            or layer.type == "Quantize"
            or (exact(layer) and any(t in out for t in layer.tops))
        ):
            out.update(layer.bottoms)
    return out


def exact_before_int8(build):
    """``build``, or Unsupported (numpy) for a layer that is not ``exact`` natively and whose
    output an int8 layer quantizes."""

    def wrapped(plan: NativePlan, layer, seg: Segment, opt, chain: list[int]):
        if not exact(layer) and any(quantized_later(plan, t, opt) for t in layer.tops):
            raise Unsupported("its native form rounds differently and an int8 layer quantizes its output")
        return build(plan, layer, seg, opt, chain)

    return wrapped


def quantize(plan: NativePlan, layer, seg: Segment, opt, chain: list[int]) -> None:
    """A Quantize layer whose int8 top only int8 layers read: the quantize step with one scale
    (a 1-D blob takes the first), the channels step with one per row / channel."""
    scale = np.asarray(layer.scale_data, np.float32).ravel()
    shape = plan.shape(layer.bottoms[0])
    if shape[5] != 4 or shape[6] != 1 or shape[0] not in (1, 2, 3):
        raise Unsupported("not a 1/2/3-D fp32 blob")
    _int8_readers_only(plan, layer.tops[0])
    v = plan.value(seg, layer.bottoms[0])
    if scale.size == 1 or shape[0] == 1:
        plan.set_top(layer, _quantized(plan, seg, v, scale[0]))
        return
    v, walk, tag = _walk(plan, seg, v, shape)
    out = plan.new_value(plan.dnnl.md(v.md.dims, tag, dtype="s8"), plan.shape(layer.tops[0]))
    _channels(plan, seg, v, out, walk, 0, {"scale": _per_channel(scale, shape, walk, "scale_data")})
    plan.set_top(layer, out)


def dequantize_layer(plan: NativePlan, layer, seg: Segment, opt, chain: list[int]) -> None:
    """A Dequantize (fp32 top) or Requantize (int8 top, read by int8 layers only) of an int32
    blob: the channels step."""
    requant = layer.type == "Requantize"
    shape, top_shape = plan.shape(layer.bottoms[0]), plan.shape(layer.tops[0])
    if shape[5] != 4 or shape[6] != 1 or shape[0] not in (1, 2, 3):
        raise Unsupported("not a 1/2/3-D int32 blob")
    if top_shape[5] != (1 if requant else 4):
        raise Unsupported("the recorded top is not of the element type the layer gives")
    act, params = 0, [0.0, 0.0]
    if requant:
        act = int(layer.activation_type)
        if act not in ACTIVATIONS:
            raise Unsupported(f"activation type {act} after requantize's dequantize")
        params = [float(v) for v in np.asarray(layer.activation_params, np.float32).ravel()[:2]]
        params += [0.0] * (2 - len(params))
        _int8_readers_only(plan, layer.tops[0])
    scale_in = layer.scale_in_data if requant else layer.scale_data
    bias = getattr(layer, "bias_data", None)
    v, walk, tag = _walk(plan, seg, plan.value(seg, layer.bottoms[0]), shape)
    vectors = {"scale": _per_channel(scale_in, shape, walk, "scale_in_data" if requant else "scale_data")}
    if bias is not None:
        vectors["bias"] = _per_channel(bias, shape, walk, "bias_data")
    if requant:
        vectors["scale_out"] = _per_channel(layer.scale_out_data, shape, walk, "scale_out_data")
    out = plan.new_value(plan.dnnl.md(v.md.dims, tag, dtype="s8" if requant else "f32"), top_shape)
    _channels(plan, seg, v, out, walk, 2 if requant else 1, vectors, act, params)
    plan.set_top(layer, out)


def _walk(plan: NativePlan, seg: Segment, v: Value, shape: tuple) -> tuple[Value, tuple[int, ...], str]:
    """``v`` with its blob's canonical dims ((1, w), (1, rows, w), (1, c, h, w)) in a dense
    layout (a copy into the plain one where it has none), how the channels step walks it
    ((outer, groups, inner, block): the element (o, g, i, k) is of channel g * block + k; a
    1-D blob is one channel) and its format tag."""
    v = plan.canon(seg, v)
    tag = plan.tag_of(v.md)
    if tag is None:
        v = plan.plain(seg, v)
        tag = PLAIN[len(v.md.dims)]
    dims = v.md.dims
    rest = int(np.prod(dims[2:], dtype=np.int64))
    if shape[0] == 1:
        return v, (1, 1, dims[1], 1), tag
    c = dims[1]
    if tag == PLAIN[len(dims)]:
        return v, (1, c, rest, 1), tag
    if tag in ("acdb", "acb"):
        return v, (rest, 1, 1, c), tag
    blk = BLOCK[tag]
    return v, (1, -(-c // blk), rest, blk), tag


def _per_channel(values, shape: tuple, walk: tuple[int, ...], what: str) -> np.ndarray:
    """A layer's vector (1 value, or one per row / channel; a 1-D blob reads the first) as
    one fp32 value per channel of the walk, the blocked layouts' padding channels 0."""
    v = np.asarray(values, np.float32).ravel()
    _, groups, _, block = walk
    rows = 1 if shape[0] == 1 else (shape[2] if shape[0] == 2 else shape[4])
    if v.size not in (1, rows) and shape[0] != 1:
        raise Unsupported(f"{what} has {v.size} values for {rows} rows / channels")
    out = np.zeros(groups * block, np.float32)
    out[:rows] = v[0] if v.size == 1 or shape[0] == 1 else v
    return out


def _channels(plan, seg, src: Value, out: Value, walk, op: int, vectors: dict, act=0, params=(0.0, 0.0)):
    """The channels step ``op`` (0 quantize, 1 dequantize, 2 requantize) from ``src`` into
    ``out`` (the same layout), with the per-channel ``vectors`` (scale, bias, scale_out)."""
    if kernels() is None:
        raise Unsupported("the _int8 extension is not built")
    outer, groups, inner, block = walk

    def ptr(name: str):
        return _STEPS.floats(vectors.get(name))

    fields = {
        "outer": outer,
        "groups": groups,
        "inner": inner,
        "block": block,
        "scale": ptr("scale"),
        "bias": ptr("bias"),
        "scale_out": ptr("scale_out"),
        "op": op,
        "act": act,
        "a0": params[0],
        "a1": params[1],
    }
    k = _kernel("ncnnc_int8_channels", "ncnnc_channels_ctx *", fields, tuple(vectors.values()))
    _step(plan, seg, k, [src, out])


def _int8_readers_only(plan: NativePlan, blob: int) -> None:
    """An int8 top never leaves the plan as a Mat: every reader must be an int8 layer (through
    Splits) that takes a blob of its rank natively, and it must not be an output."""
    if blob in plan.outputs:
        raise Unsupported("an int8 output")
    for layer in plan.layers:
        if blob not in layer.bottoms:
            continue
        if layer.type in ("Split", "Noop") and builtin(layer):
            for t in layer.tops:
                _int8_readers_only(plan, t)
        elif not (quantized(layer) and builtin(layer)):
            raise Unsupported(f"int8 top read by {layer.type} {layer.name!r}")
        elif plan.shape(blob)[0] not in ((1, 3) if layer.type == "InnerProduct" else (3,)):
            # its int8 form would be numpy, and an int8 value cannot be written out to it
            raise Unsupported(f"{layer.type} {layer.name!r} has no native form for this int8 blob's rank")


def _int8_input(plan: NativePlan, seg: Segment, blob: int, scale: np.float32, want) -> Value:
    """The bottom as int8 in the layout ``want`` (s8): quantized with ``scale`` when it is
    fp32 (once per scale), as it is when it is int8 already."""
    v = plan.value(seg, blob)
    if v.md.dims != want.dims:  # a 1-D blob from a (1, c, 1, 1) result, or the reverse
        v = plan.as_dims(seg, v, want.dims)
    if plan.shape(blob)[5] == 1:
        return plan.as_md(seg, v, want)
    return plan.as_md(seg, _quantized(plan, seg, v, scale), want)


def _quantized(plan: NativePlan, seg: Segment, v: Value, scale) -> Value:
    """``float2int8(v * scale)`` in ``v``'s layout, made once per scale."""
    key = f"s8:{float(scale).hex()}"
    q = v.copies.get(key)
    if q is None:
        tag = plan.tag_of(v.md)
        if tag is None:
            v = plan.plain(seg, v)
            tag = plan.tag_of(v.md)
        q = plan.new_value(plan.dnnl.md(v.md.dims, tag, dtype="s8"), v.shape)
        k = _kernel("ncnnc_int8_quantize", "ncnnc_quantize_ctx *", {"n": v.md.size // 4, "scale": scale})
        _step(plan, seg, k, [v, q])
        v.copies[key] = q
    q.last = plan.step
    return q


def _step(plan: NativePlan, seg: Segment, kernel, values: list[Value]) -> None:
    d = dnnl_module()
    for v in values[:-1]:
        v.last = plan.step
    plan.add(seg, kernel, [(d.ARG_SRC, plan.mem(v)) for v in values])


def _vnni(plan: NativePlan, pd) -> None:
    no_reference(pd)
    if not plan.dnnl.has_vnni():
        raise Unsupported(f"no VNNI here: oneDNN's int8 kernel ({pd.impl}) would not sum exactly")


def _weights(plan: NativePlan, w8: np.ndarray, wdims: tuple[int, ...], pd):
    """The int8 weights reordered once into the layout (and s8 compensation) ``pd`` wants."""
    dn = plan.dnnl
    arr = np.ascontiguousarray(w8, dtype=np.int8).reshape(wdims)
    tag = {4: "abcd", 5: "abcde", 2: "ab"}[len(wdims)]
    src = dn.memory(dn.md(wdims, tag, dtype="s8"), arr.ctypes.data)
    out, _ = plan.prepack_at(src, pd.md("weights", wdims))
    return out


def _dequantize(plan, seg, layer, acc: Value, pixels: int, channels: int, scales, act, params) -> None:
    """The dequantize step from the s32 sums ``acc`` (channels-last) into the layer's top."""
    dn = plan.dnnl
    top_shape = plan.shape(layer.tops[0])
    requant = scales.top is not None
    if requant != (top_shape[5] == 1):
        raise Unsupported("the recorded top is not of the element type the layer gives")
    out = plan.new_value(dn.md(acc.md.dims, plan_tag(acc), dtype="s8" if requant else "f32"), top_shape)
    scale_in = np.ascontiguousarray(scales.scale_in, np.float32)
    bias = getattr(layer, "_bias", None)
    bias = None if bias is None else np.ascontiguousarray(np.asarray(bias, np.float32).reshape(-1))
    if scale_in.size != channels or (bias is not None and bias.size != channels):
        raise Unsupported("scale or bias count")
    if kernels() is None:
        raise Unsupported("the _int8 extension is not built")
    fields = {
        "pixels": pixels,
        "channels": channels,
        "scale_in": _STEPS.floats(scale_in),
        "bias": _STEPS.floats(bias),
        "act": act,
        "a0": params[0],
        "a1": params[1],
        "top_scale": float(scales.top) if requant else 0.0,
    }
    if requant and not scales.top > 0:
        raise Unsupported("top scale not positive")
    k = _kernel("ncnnc_int8_dequantize", "ncnnc_dequantize_ctx *", fields, (scale_in, bias))
    _step(plan, seg, k, [acc, out])
    plan.set_top(layer, out)


def plan_tag(v: Value) -> str:
    return {2: "ab", 4: "acdb"}[len(v.md.dims)]


def _convolution(plan: NativePlan, layer, seg: Segment, scales, w8, act, params) -> None:
    d, dn = dnnl_module(), plan.dnnl
    ishape, oshape = plan.shape(layer.bottoms[0]), plan.shape(layer.tops[0])
    if ishape[0] != 3 or oshape[0] != 3 or ishape[5] not in (1, 4):
        raise Unsupported("needs a 3-D blob")
    _, w, h, _, c, _, _ = ishape
    _, ow, oh, _, oc, _, _ = oshape
    kw, kh = layer.kernel_w, layer.kernel_h
    t, b, l, r = layer.pads((h, w))
    if min(t, b, l, r) < 0:
        raise Unsupported("cropping")
    if (t or b or l or r) and int(np.clip(np.trunc(layer.pad_value), -128, 127)) != 0:
        raise Unsupported("a non-zero int8 pad value")
    g = layer.group_count()
    if c % g or oc % g or oc != layer.num_output or w8.size != oc * (c // g) * kh * kw:
        raise Unsupported("weights do not fit the recorded shapes")
    wdims = (oc, c, kh, kw) if g == 1 else (g, oc // g, c // g, kh, kw)
    sdims, odims = (1, c, h, w), (1, oc, oh, ow)
    pd = dn.convolution(
        dn.md(sdims, "acdb", dtype="s8"), dn.md(wdims, "any", dtype="s8"), None,
        dn.md(odims, "acdb", dtype="s32"), (layer.stride_h, layer.stride_w),
        (layer.dilation_h - 1, layer.dilation_w - 1), (t, l), (b, r),
    )  # fmt: skip
    _vnni(plan, pd)
    src = _int8_input(plan, seg, layer.bottoms[0], scales.bottom, pd.md("src", sdims))
    wmem = _weights(plan, w8, wdims, pd)
    acc = plan.new_value(pd.md("dst", odims), oshape)
    plan.run1(seg, pd, src, acc, [(d.ARG_WEIGHTS, wmem)])
    _dequantize(plan, seg, layer, acc, oh * ow, oc, scales, act, params)


def _inner_product(plan: NativePlan, layer, seg: Segment, scales, w8, act, params) -> None:
    d, dn = dnnl_module(), plan.dnnl
    ishape, oshape = plan.shape(layer.bottoms[0]), plan.shape(layer.tops[0])
    if ishape[0] not in (1, 3) or oshape[0] != 1 or ishape[5] not in (1, 4):
        raise Unsupported("needs a 1-D or 3-D input and a 1-D output")
    _, w, h, _, c, _, _ = ishape
    oc = layer.num_output
    in_dims = (1, c, h, w) if ishape[0] == 3 else (1, w)
    if w8.size != oc * int(np.prod(in_dims)):
        raise Unsupported("weights do not fit the recorded shape")
    wdims = (oc, *in_dims[1:])
    # oneDNN's brgemm inner product (VNNI / AMX) takes a plain input; channels-last goes to
    # its generic int8 GEMM
    tag = PLAIN[len(in_dims)]
    pd = dn.inner_product(
        dn.md(in_dims, tag, dtype="s8"),
        dn.md(wdims, "any", dtype="s8"),
        None,
        dn.md((1, oc), "ab", dtype="s32"),
    )
    _vnni(plan, pd)
    src = _int8_input(plan, seg, layer.bottoms[0], scales.bottom, pd.md("src", in_dims))
    # the weights are (oc, c, h, w) in numpy's flattening order of a 3-D input
    wmem = _weights(plan, w8, wdims, pd)
    acc = plan.new_value(pd.md("dst", (1, oc)), oshape)
    plan.run1(seg, pd, src, acc, [(d.ARG_WEIGHTS, wmem)])
    _dequantize(plan, seg, layer, acc, 1, oc, scales, act, params)


# the types this family builds (ops/__init__.py collects every family's; the quantized
# convolutions and inner products are conv's, which hands them to ``producer`` here)
BUILDERS: dict[str, Builder] = {
    "Quantize": quantize,
    **dict.fromkeys(("Dequantize", "Requantize"), dequantize_layer),
}
