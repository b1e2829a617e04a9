"""Elementwise layers: the activations as oneDNN eltwise ops (standalone, or post-ops of
the layer before: ``standalone_activation``), BinaryOp and Eltwise (with ncnn's broadcasting
where oneDNN's binary op has a kernel), BatchNorm / Scale / Bias on their own (per-channel
constants), PReLU.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ....layer import Layer
from ....layer.binaryop import broadcast_shapes
from ..plan import (
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
    numpy_shape,
    shape_like,
)

Ops = list[tuple[str, float, float]]  # oneDNN eltwise ops (alg, alpha, beta), applied in order

# UnaryOp op_type -> oneDNN eltwise ops; the rest (floor, trigonometry, ...) have no
# oneDNN form and stay numpy
UNARY: dict[int, Ops] = {
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


def _affine(scale: float, shift: float) -> Ops:
    """shift + x * scale as eltwise ops (none for the identity)."""
    return [] if (scale, shift) == (1.0, 0.0) else [("linear", scale, shift)]


def _exp(layer) -> Ops | None:
    ops = _affine(float(layer.scale), float(layer.shift))
    return ops + [("exp", 0.0, 0.0)] if layer.base == -1.0 else None


def _power(layer) -> Ops | None:
    ops = _affine(float(layer.scale), float(layer.shift))
    return ops + ([] if layer.power == 1.0 else [("pow", 1.0, float(layer.power))]) or None


def _log(layer) -> Ops:
    ops = _affine(float(layer.scale), float(layer.shift)) + [("log", 0.0, 0.0)]
    if layer.base != -1.0:
        # ncnn multiplies by a float32 1 / log(base)
        ops.append(("linear", float(np.float32(1.0) / np.log(np.float32(layer.base))), 0.0))
    return ops


def _scalar_binaryop(layer) -> Ops | None:
    if not (layer.with_scalar or len(layer.bottoms) == 1):
        return None
    b = float(layer.b)
    lin = {0: (1.0, b), 1: (1.0, -b), 2: (b, 0.0), 7: (-1.0, b)}.get(layer.op_type)
    if lin is not None:
        return [("linear", *lin)]
    if layer.op_type == 6:
        return [("pow", 1.0, b)]
    return None


# nonfinite.c's steps: ReLU here, max pooling and Softmax's non-finite lines (ops/reduce.py)
NONFINITE = CSteps(
    "_nonfinite",
    ("ncnnc_relu", "ncnnc_maxpool", "ncnnc_softmax_fix"),
    "max pooling and Softmax stay numpy, ReLU takes oneDNN's elu",
)
# ncnn's ReLU (no slope) as a oneDNN eltwise op: relu_op
RELU = ("elu", 0.0, 0.0)


def relu_op(slope: float) -> tuple[str, float, float]:
    """ncnn's (leaky) ReLU as a oneDNN eltwise op. oneDNN's relu without a slope is
    max(x, 0), which gives 0 for a NaN; ncnn's ReLU (max_ps(0, x)) and the numpy layers keep
    the NaN. Its elu with alpha 0, x > 0 ? x : 0 * (exp(x) - 1), keeps it and gives 0 for
    every other x <= 0, -inf included, but costs an exp: a convolution and a ReLU layer of
    their own run ``relu_step`` after instead (a slope's relu, x > 0 ? x : slope * x, keeps a
    NaN as it is)."""
    return RELU if slope == 0.0 else ("relu", slope, 0.0)


def relu_step(plan: NativePlan, seg: Segment, src: Value, out: Value) -> None:
    """out = ReLU(src), the whole buffers of two dense descriptors alike (a blocked layout's
    padding is 0 and stays 0): nonfinite.c's one pass, where oneDNN's elu as a post-op costs
    up to 2.5x a 1x1 convolution (SqueezeNet's expand layers). Unsupported without the
    extension."""
    d = dnnl_module()
    step = NONFINITE.step("ncnnc_relu", "ncnnc_relu_ctx *", {"n": src.md.size // 4})
    src.last = plan.step
    plan.add(seg, step, [(d.ARG_SRC, plan.mem(src)), (d.ARG_DST, plan.mem(out))])


# layer type -> its eltwise form (None: not in this layer's settings)
ELTWISE_FORMS: dict[str, Callable[[Layer], Ops | None]] = {
    "ReLU": lambda layer: [relu_op(float(layer.slope))],
    "Clip": lambda layer: [("clip_v2", float(layer.min), float(layer.max))],
    "Sigmoid": lambda layer: [("logistic", 0.0, 0.0)],
    "TanH": lambda layer: [("tanh", 0.0, 0.0)],
    "Swish": lambda layer: [("swish", 1.0, 0.0)],
    "Mish": lambda layer: [("mish", 0.0, 0.0)],
    "HardSwish": lambda layer: [("hardswish", float(layer.alpha), float(layer.beta))],
    "AbsVal": lambda layer: [("abs", 0.0, 0.0)],
    "ELU": lambda layer: [("elu", float(layer.alpha), 0.0)],
    "HardSigmoid": lambda layer: [("hardsigmoid", float(layer.alpha), float(layer.beta))],
    "PReLU": lambda layer: (
        [relu_op(float(layer.slope_data[0]))] if layer.num_slope == 1 and len(layer.slope_data) >= 1 else None
    ),
    "UnaryOp": lambda layer: UNARY.get(layer.op_type),
    "Exp": _exp,
    "Log": _log,
    "Power": _power,
    "BinaryOp": _scalar_binaryop,
}
# the types whose builder is ``activation``: nothing but their eltwise form
# the per-channel affine layers: built alone here, or folded into the producer before them (conv)
AFFINE_TYPES = ("BatchNorm", "Scale", "Bias")
ACTIVATIONS = tuple(t for t in ELTWISE_FORMS if t not in ("PReLU", "BinaryOp"))


def standalone_activation(layer: Layer) -> Ops | None:
    """The eltwise form of a one-blob elementwise layer (oneDNN eltwise ops applied in
    order: the first a primitive, the rest its post-ops, or all of them post-ops of the
    layer before), or None."""
    if not builtin(layer):
        return None
    form = ELTWISE_FORMS.get(layer.type)
    return form(layer) if form is not None else None


def residual_add(layer) -> bool:
    """A two-blob add with no broadcasting coefficients: BinaryOp add or Eltwise sum."""
    if not builtin(layer) or len(layer.bottoms) != 2 or len(set(layer.bottoms)) != 2 or len(layer.tops) != 1:
        return False
    if layer.type == "BinaryOp":
        return layer.op_type == 0 and not layer.with_scalar
    if layer.type == "Eltwise":
        coeffs = [float(x) for x in (layer.coeffs if layer.coeffs is not None else ())]
        return layer.op_type == 1 and all(c == 1.0 for c in coeffs)
    return False


# -- builders ------------------------------------------------------------------------------------
def activation(plan: NativePlan, layer, seg: Segment, opt, chain) -> None:
    ops = standalone_activation(layer)
    if ops is None:
        raise Unsupported(f"no native {layer.type}")
    eltwise_ops(plan, layer, seg, ops)


def binaryop(plan: NativePlan, layer, seg: Segment, opt, chain) -> None:
    ops = standalone_activation(layer)  # with a scalar: an eltwise op
    if ops is not None:
        return eltwise_ops(plan, layer, seg, ops)
    binary_broadcast(plan, layer, seg)


def eltwise(plan: NativePlan, layer, seg: Segment, opt, chain) -> None:
    eltwise_combine(plan, layer, seg)


def eltwise_ops(plan: NativePlan, layer, seg: Segment, ops) -> None:
    """One elementwise layer: its oneDNN eltwise ops in one primitive (the rest as
    post-ops) where oneDNN has a fast kernel for that, else one primitive each."""
    dn = plan.dnnl
    if len(layer.bottoms) != 1:
        raise Unsupported("one input")
    src = plan.value(seg, layer.bottoms[0])
    if ops == [RELU] and plan.tag_of(src.md) is not None and NONFINITE.get() is not None:
        return relu_step(plan, seg, src, plan.top(layer, src.md))
    alg, alpha, beta = ops[0]
    pd = dn.eltwise(alg, src.md, src.md, alpha, beta, ops[1:])
    if not pd.impl.startswith("ref") or len(ops) == 1:
        if pd.impl.startswith("ref") and plan.tag_of(src.md) != PLAIN[len(src.md.dims)]:
            # some eltwise kernels take only plain layouts with padded channels
            src = plan.plain(seg, src)
            pd = dn.eltwise(alg, src.md, src.md, alpha, beta)
        return plan.run1(seg, pd, src, plan.top(layer, src.md))
    for i, (alg, alpha, beta) in enumerate(ops):
        pd = dn.eltwise(alg, src.md, src.md, alpha, beta)
        if pd.impl.startswith("ref"):
            src = plan.plain(seg, src)
            pd = dn.eltwise(alg, src.md, src.md, alpha, beta)
        out = plan.top(layer, src.md) if i == len(ops) - 1 else plan.new_value(src.md, src.shape)
        plan.run1(seg, pd, src, out)
        src = out


def same_inputs(plan: NativePlan, layer, seg: Segment) -> list[Value]:
    vals = [plan.canon(seg, plan.value(seg, b)) for b in layer.bottoms]
    first = vals[0]
    for i, v in enumerate(vals[1:], 1):
        if v.md.dims != first.md.dims:
            raise Unsupported("inputs of different shapes")
        vals[i] = plan.as_md(seg, v, first.md)
    return vals


def eltwise_combine(plan: NativePlan, layer, seg: Segment, post=()) -> None:
    """The Eltwise layer's op over its inputs (``post``: post-ops of the last step)."""
    d, dn = dnnl_module(), plan.dnnl
    vals = same_inputs(plan, layer, seg)
    op = layer.op_type
    coeffs = [float(x) for x in (layer.coeffs if layer.coeffs is not None else ())]
    if op == 1 and (len(vals) > 2 or any(c != 1.0 for c in coeffs)):
        if post:
            raise Unsupported("a weighted sum takes no post-ops")
        if coeffs and len(coeffs) != len(vals):
            raise Unsupported("coefficient count")
        pd = dn.sum(vals[0].md, coeffs or [1.0] * len(vals), [v.md for v in vals])
        no_reference(pd)
        out = plan.top(layer, pd.md("dst", vals[0].md.dims))
        args = [(d.ARG_MULTIPLE_SRC + i, plan.mem(v)) for i, v in enumerate(vals)]
        for v in vals:
            v.last = plan.step
        plan.add(seg, pd.primitive(), args + [(d.ARG_DST, plan.mem(out))])
        return
    alg = {0: "mul", 1: "add", 2: "max"}.get(op)
    if alg is None:
        raise Unsupported(f"eltwise op {op}")
    acc = vals[0]
    for i, v in enumerate(vals[1:], 1):
        last = i == len(vals) - 1
        pd = dn.binary(alg, acc.md, v.md, acc.md, post if last else ())
        no_reference(pd)
        out = plan.top(layer, acc.md) if last else plan.new_value(acc.md, acc.shape)
        v.last = plan.step
        plan.run1(seg, pd, acc, out, [(d.ARG_SRC_1, plan.mem(v))])
        acc = out


def binary(plan: NativePlan, layer, seg: Segment, alg: str, a: Value, b: Value, post=()) -> None:
    """top = alg(a, b), b broadcast over a (a has the output's dims); ``post``: eltwise
    post-ops ``(alg, alpha, beta)`` and binary ones ``(alg, Value)``, broadcast alike."""
    d, dn = dnnl_module(), plan.dnnl
    tag = plan.tag_of(a.md)
    plain = PLAIN[len(a.md.dims)]
    # b (and the post-op operands) as they are, in a's layout, then everything plain
    layouts = [(a.md, None)] + ([(a.md, tag)] if tag else []) + [(dn.md(a.md.dims, plain), plain)]
    for am, btag in layouts:
        bm = b.md if btag is None else dn.md(b.md.dims, btag)
        pmds = [
            p if len(p) == 3 else (p[0], p[1].md if btag is None else dn.md(p[1].md.dims, btag)) for p in post
        ]
        pd = dn.binary(alg, am, bm, am, pmds)
        if not pd.impl.startswith("ref"):
            break
    no_reference(pd)
    a, b = plan.as_md(seg, a, am), plan.as_md(seg, b, bm)
    args = [(d.ARG_SRC_1, plan.mem(b))]
    for i, (p, pm) in enumerate(zip(post, pmds, strict=True)):
        if len(p) == 2:
            pv = plan.as_md(seg, p[1], pm[1])
            pv.last = plan.step
            args.append((d.post_arg(i), plan.mem(pv)))
    b.last = plan.step
    plan.run1(seg, pd, a, plan.top(layer, a.md), args)


def binary_broadcast(plan: NativePlan, layer, seg: Segment, post=()) -> None:
    """BinaryOp of two blobs with ncnn's broadcasting, where oneDNN's binary op has the form."""
    op = layer.op_type
    shapes = [plan.shape(x) for x in layer.bottoms]
    if len(shapes) != 2 or any(s[0] not in (1, 2, 3) for s in shapes):
        raise Unsupported("two 1-D..3-D inputs")
    bs = broadcast_shapes(numpy_shape(shapes[0]), numpy_shape(shapes[1]))
    if bs is None:
        raise Unsupported("shapes do not broadcast")
    ash, bsh, osh = bs
    va, vb = (plan.value(seg, x) for x in layer.bottoms)
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
    full = plan.as_dims(seg, full, (1, *fdims))
    other = plan.as_dims(seg, other, (1, *odims))
    binary(plan, layer, seg, alg, full, other, (neg if negate else []) + list(post))


def channel_affine(plan: NativePlan, layer, seg: Segment, opt, chain) -> None:
    """BatchNorm / Scale / Bias on their own: x * scale + shift per channel, one binary
    op with constants (Scale's two-blob form stays numpy)."""
    shape = plan.shape(layer.bottoms[0])
    if shape[0] not in (1, 2, 3) or not layer.one_blob_only:
        raise Unsupported("dims, or scales from a blob")
    src = plan.canon(seg, plan.value(seg, layer.bottoms[0]))
    dims = src.md.dims
    cdims = (1, dims[1]) + (1,) * (len(dims) - 2)
    ab = affine_coeffs(plan, layer, dims[1])
    if ab is None:
        raise Unsupported("coefficients")
    mul, add = (plan.const_value(x, shape, cdims) for x in ab)
    if layer.type == "Bias":
        return binary(plan, layer, seg, "add", src, add)
    binary(plan, layer, seg, "mul", src, mul, [("add", add)])


def prelu(plan: NativePlan, layer, seg: Segment, opt, chain) -> None:
    ops = standalone_activation(layer)  # one slope for every channel: a leaky ReLU
    if ops is not None:
        return eltwise_ops(plan, layer, seg, ops)
    dn = plan.dnnl
    shape = plan.shape(layer.bottoms[0])
    if shape[0] not in (1, 2, 3):
        raise Unsupported("dims")
    src = plan.canon(seg, plan.value(seg, layer.bottoms[0]))
    dims = src.md.dims
    cdims = (1, dims[1]) + (1,) * (len(dims) - 2)
    coeffs = layer.channel_coeffs(shape_like(shape))
    if coeffs is None:
        raise Unsupported("slopes")
    slope = plan.const_value(np.asarray(coeffs[0], np.float32) * np.ones(dims[1], np.float32), shape, cdims)
    tag = plan.tag_of(src.md)
    cands = [(src.md, slope.md)] + ([(src.md, dn.md(cdims, tag))] if tag else [])
    for am, wm in cands + [(dn.md(dims, PLAIN[len(dims)]), slope.md)]:
        pd = dn.prelu(am, wm, am)
        if not pd.impl.startswith("ref"):
            break
    src, slope = plan.as_md(seg, src, am), plan.as_md(seg, slope, wm)
    plan.run1(seg, pd, src, plan.top(layer, src.md), [(dnnl_module().ARG_WEIGHTS, slope.mem)])


def affine_coeffs(plan: NativePlan, layer, oc: int) -> tuple[np.ndarray, np.ndarray] | None:
    """(scale, shift) per output channel of BatchNorm / Scale / Bias, or None."""
    coeffs = layer.channel_coeffs(shape_like(plan.shape(layer.bottoms[0])))
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


def _fusing(build: Builder) -> Builder:
    """A BinaryOp / Eltwise of two blobs with an activation after it (``conv.chains``) is
    built as a producer, which takes the activation in as a post-op; else by ``build``."""

    def fused(plan: NativePlan, layer, seg: Segment, opt, chain: list[int]) -> list[int] | None:
        if chain:
            from .conv import producer  # conv imports this module

            return producer(plan, layer, seg, opt, chain)
        return build(plan, layer, seg, opt, chain)

    return fused


# the types this family builds (ops/__init__.py collects every family's)
BUILDERS: dict[str, Builder] = {
    "BinaryOp": _fusing(binaryop),
    "Eltwise": _fusing(eltwise),
    **dict.fromkeys(ACTIVATIONS, activation),
    "PReLU": prelu,
    **dict.fromkeys(AFFINE_TYPES, channel_affine),
}
