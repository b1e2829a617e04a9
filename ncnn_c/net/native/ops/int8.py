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
"""

from __future__ import annotations

import logging
import weakref

import numpy as np

from ..plan import PLAIN, CSteps, NativePlan, Segment, Unsupported, Value, builtin, dnnl_module, no_reference

log = logging.getLogger("ncnn_c")

TYPES = ("Convolution", "ConvolutionDepthWise", "InnerProduct")
# ncnn activation_type values the dequantize step applies (none, ReLU, LeakyReLU, Clip)
ACTIVATIONS = (0, 1, 2, 3)


def quantized(layer) -> bool:
    """An int8 layer (it runs int8 with ``use_int8_inference``; fp32 on its dequantized
    weights without)."""
    return layer.type in TYPES and bool(getattr(layer, "int8_scale_term", 0))


_STEPS = CSteps("_int8", ("ncnnc_int8_quantize", "ncnnc_int8_dequantize"), "int8 layers stay numpy")
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
    if quantized(layer) or layer.type == "Quantize":  # (int8 layers: with use_int8_inference)
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
    """A Quantize layer with one scale whose int8 top only int8 layers read: the quantize
    step (per-channel scales, or a top a numpy layer reads, stay numpy)."""
    scale = np.asarray(layer.scale_data, np.float32).ravel()
    shape = plan.shape(layer.bottoms[0])
    if shape[5] != 4 or (scale.size != 1 and shape[0] != 1):
        raise Unsupported("per-channel scales, or not an fp32 blob")
    _int8_readers_only(plan, layer.tops[0])
    v = plan.value(seg, layer.bottoms[0])
    plan.set_top(layer, _quantized(plan, seg, v, scale[0]))


def _int8_readers_only(plan: NativePlan, blob: int) -> None:
    """An int8 top never leaves the plan as a Mat: every reader must be an int8 layer (through
    Splits), and it must not be an output."""
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
    got = kernels()
    if got is None:
        raise Unsupported("the _int8 extension is not built")
    ffi = got[0]
    fields = {
        "pixels": pixels,
        "channels": channels,
        "scale_in": ffi.cast("const float *", scale_in.ctypes.data),
        "bias": ffi.cast("const float *", bias.ctypes.data) if bias is not None else ffi.NULL,
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
