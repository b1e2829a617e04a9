"""Convolutions, deconvolutions and inner products, with what they take in: the BatchNorm /
Scale / Bias after them folded into their weights and bias, a residual add and an activation
after them as post-ops (``chains``), a zero Padding before a convolution as its own padding
(``pad_folds``). A BinaryOp or Eltwise of two blobs takes the activation after it alike.
"""

from __future__ import annotations

import functools
import itertools
import logging

import numpy as np

from ..plan import (
    PLAIN,
    Builder,
    Make,
    NativePlan,
    Segment,
    Unsupported,
    builtin,
    dnnl_module,
    no_reference,
    skipped_types,
)
from . import winograd
from .eltwise import (
    AFFINE_TYPES,
    NONFINITE,
    RELU,
    affine_coeffs,
    binary_broadcast,
    eltwise_combine,
    relu_op,
    relu_step,
    residual_add,
    standalone_activation,
)
from .shape import made_padding
from .transformer import gemv
from .transformer import kernels as llm_kernels

log = logging.getLogger("ncnn_c")

# layers a convolution, deconvolution or inner product takes into its weights and bias
PRODUCERS = ("Convolution", "ConvolutionDepthWise", "Deconvolution", "DeconvolutionDepthWise", "InnerProduct")


# ncnn activation_type -> oneDNN eltwise post-op
def activation_op(kind: int, params) -> tuple[str, float, float]:
    p = [float(v) for v in (params if params is not None else ())]
    if kind in (1, 2):
        return relu_op(p[0] if kind == 2 and p else 0.0)
    if kind == 3:
        return ("clip_v2", p[0] if len(p) > 0 else -3.4e38, p[1] if len(p) > 1 else 3.4e38)
    if kind == 4:
        return ("logistic", 0.0, 0.0)
    if kind == 5:
        return ("mish", 0.0, 0.0)
    if kind == 6:
        return ("hardswish", p[0] if len(p) > 0 else 0.2, p[1] if len(p) > 1 else 0.5)
    raise Unsupported(f"activation type {kind}")


def producer(plan: NativePlan, layer, seg: Segment, opt, chain: list[int]) -> list[int]:
    """A producer with what of ``chain`` it can take: the affine layers folded into its
    weights and bias, a residual add and an activation as post-ops (those run on their
    own when oneDNN has no fast kernel with them). The layers it took."""
    layers = plan.layers
    scale = shift = None
    taken: list[int] = []
    post: list = []
    blob = layer.tops[0]
    for li in chain:
        nxt = layers[li]
        if nxt.type in AFFINE_TYPES and not post:
            ab = affine_coeffs(plan, nxt, layer.num_output)
            if ab is None:
                break
            s, t = ab
            scale, shift = (s, t) if scale is None else (scale * s, shift * s + t)
        elif residual_add(nxt):
            other = nxt.bottoms[1] if nxt.bottoms[0] == blob else nxt.bottoms[0]
            if not plan.ready(other) or plan.shapes.get(other) != plan.shape(blob):
                break
            post.append(("add", other))
        else:
            act = standalone_activation(nxt)
            if act is None:
                break
            post += act
        taken.append(li)
        blob = nxt.tops[0]
    if layer.type in ("BinaryOp", "Eltwise"):
        build = binary_broadcast if layer.type == "BinaryOp" else eltwise_combine
        folded = len(taken)

        def combine(scale, shift, post) -> None:
            build(plan, layer, seg, post)

        run = combine
    else:
        run = functools.partial(
            inner_product if layer.type == "InnerProduct" else convolution, plan, layer, seg
        )
        folded = len(taken) - sum(1 for li in taken if layers[li].type in AFFINE_TYPES)
    if post:
        try:
            run(scale, shift, post)
            return taken
        except (Unsupported, dnnl_module().DnnlError) as e:
            # the add and the activation then run as primitives of their own
            log.debug("native plan: %r without its post-ops: %s", layer.name, e)
        taken = taken[: len(taken) - folded]
    run(scale, shift, [])
    return taken


def post_args(plan: NativePlan, seg: Segment, posts: list, dims, own: int):
    """Post-op lists for a primitive whose output has ``dims``: candidate (attr list,
    [(post index, Value)]) pairs, binary operands ("add", blob) read in as values, first
    in their own layout, then in the ones oneDNN's kernels take; ``own`` eltwise post-ops
    come before these."""
    dn = plan.dnnl
    vals = {}
    for p in posts:
        if len(p) == 2:
            vals[p[1]] = plan.as_dims(seg, plan.value(seg, p[1]), dims)
    layouts: list[str | None] = [None] + [t for t in ("acdb", "aBcd16b", "aBcd8b", "abcd") if len(dims) == 4]
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


def bind_posts(plan: NativePlan, seg: Segment, operands) -> list:
    """The primitive arguments of the binary post-op operands, in the layouts chosen."""
    d = dnnl_module()
    args = []
    for i, v, md in operands:
        v = plan.as_md(seg, v, md)
        v.last = plan.step
        args.append((d.post_arg(i), plan.mem(v)))
    return args


def packed_weights(plan: NativePlan, layer, wdims, scale, shift, oc: int, wtag: str, md):
    """(weights memory in layout ``md``, bias memory or None), the folded affine layers
    applied: the ones an earlier plan of the net packed when it asked for the same (layout,
    dims, folded coefficients), else made and offered to later plans (``NativePlan.packed``)."""
    key = (wtag, *weights_key(layer, wdims, scale, shift))
    hit = plan.packed(key, md)
    if hit is not None:
        return hit
    wmem, bmem = weights(plan, layer, wdims, scale, shift, oc, wtag)
    wpacked = plan.prepack(wmem, md)
    plan.keep_packed(key, md, wpacked, bmem)
    return wpacked, bmem


def weights_key(layer, wdims, scale, shift) -> tuple:
    """What decides a layer's folded weights besides the layer: their dims and the folded
    affine coefficients."""
    return (
        layer.type, tuple(wdims),
        None if scale is None else scale.tobytes(), None if shift is None else shift.tobytes(),
    )  # fmt: skip


def weights(plan: NativePlan, layer, wdims, scale, shift, oc: int, wtag: str):
    """(weights memory, bias memory or None) with the folded affine layers applied."""
    weight, bias = folded_weights(layer, wdims, scale, shift, oc)
    wmem = plan.const(weight, wdims, wtag)
    bmem = plan.const(bias, (oc,), "a") if bias is not None else None
    return wmem, bmem


def folded_weights(layer, wdims, scale, shift, oc: int):
    """(weights of ``wdims``, bias or None) as arrays, the folded affine layers applied."""
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
    return weight, bias


def convolution(plan: NativePlan, layer, seg: Segment, scale, shift, post) -> None:
    d, dn = dnnl_module(), plan.dnnl
    deconv = layer.type.startswith("Deconvolution")
    if (
        len(layer.bottoms) != 1
        or getattr(layer, "dynamic_weight", False)
        or getattr(layer, "int8_scale_term", False)
    ):
        raise Unsupported("dynamic or int8 weights")
    bottom = layer.bottoms[0]
    extra = (0, 0, 0, 0)
    pad = plan.deferred(bottom)
    if pad is not None:  # a zero Padding left to it (pad_folds): read through its own padding
        bottom, extra = pad.bottoms[0], (pad.top, pad.bottom, pad.left, pad.right)
    ishape, oshape = plan.shape(layer.bottoms[0]), plan.shape(layer.tops[0])
    if ishape[0] != 3 or oshape[0] != 3:
        raise Unsupported("needs a 3-D blob")
    _, w, h, _, c, _, _ = ishape
    _, ow, oh, _, oc, _, _ = oshape
    kw, kh = layer.kernel_w, layer.kernel_h
    if not layer.weights_parked() and layer.weight_data.elemsize != 4:
        raise Unsupported("weights not fp32")
    groups = layer.group_count() if hasattr(layer, "group_count") else int(getattr(layer, "group", 1) or 1)
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
        _, w, h, _, c, _, _ = plan.shape(bottom)
        # Winograd where it wins (ops/winograd.py), else the direct kernel below
        act = layer.activation_type
        acts = [activation_op(act, getattr(layer, "activation_params", None))] if act else []
        geometry = (c, h, w, oc, oh, ow, t, l)
        folded = functools.partial(folded_weights, layer, wdims, scale, shift, oc)
        fold_key = weights_key(layer, wdims, scale, shift)
        if winograd.convolution(plan, layer, seg, bottom, geometry, folded, fold_key, acts + post):
            return
    has_bias = bool(layer.bias_term) or scale is not None
    bmd = dn.md((oc,), "a") if has_bias else None
    own = []
    if layer.activation_type:
        own.append(activation_op(layer.activation_type, getattr(layer, "activation_params", None)))
    # a ReLU last runs as a pass of its own after the primitive (eltwise.relu_step), not as
    # the elu post-op that keeps its NaN
    relu_after = NONFINITE.get() is not None and (post or own)[-1:] == [RELU]
    if relu_after:
        post, own = (post[:-1], own) if post else (post, own[:-1])
    sdims, odims = (1, c, h, w), (1, oc, oh, ow)
    make = dn.deconvolution if deconv else dn.convolution

    def create(attr):
        return make(
            dn.md(sdims, "any"), dn.md(wdims, "any"), bmd, dn.md(odims, "any"),
            (layer.stride_h, layer.stride_w), (layer.dilation_h - 1, layer.dilation_w - 1), pad_l, pad_r, attr,
        )  # fmt: skip

    for attr, operands in post_args(plan, seg, post, odims, len(own)):  # noqa: B007 - used after
        pd = create(own + attr)
        if not pd.impl.startswith("ref"):
            break
    no_reference(pd)
    after = []
    if "gemm" in pd.impl and (own or post) and deconv:
        # a deconvolution by GEMM applies post-ops in a scalar loop (5x its own time):
        # its activation then runs as an eltwise primitive, the rest on their own
        if post:
            raise Unsupported("post-ops of a GEMM deconvolution")
        pd, after, operands = create([]), own, []
    src = plan.as_dims(seg, plan.value(seg, bottom, pd.md("src", sdims)), sdims)
    src = plan.as_md(seg, src, pd.md("src", sdims))
    wpacked, bmem = packed_weights(plan, layer, wdims, scale, shift, oc, wtag, pd.md("weights", wdims))
    args = [(d.ARG_WEIGHTS, wpacked)] + bind_posts(plan, seg, operands)
    if bmem is not None:
        args.append((d.ARG_BIAS, bmem))
    if not after:
        top = plan.top(layer, pd.md("dst", odims))
        plan.run1(seg, pd, src, top, args)
    else:
        raw = plan.new_value(pd.md("dst", odims), plan.shape(layer.tops[0]))
        plan.run1(seg, pd, src, raw, args)
        (alg, alpha, beta) = after[0]
        top = plan.top(layer, raw.md)
        plan.run1(seg, dn.eltwise(alg, raw.md, raw.md, alpha, beta), raw, top)
    if relu_after:
        relu_step(plan, seg, top, top)


def inner_product(plan: NativePlan, layer, seg: Segment, scale, shift, post) -> None:
    dn = plan.dnnl
    if len(layer.bottoms) != 1 or getattr(layer, "int8_scale_term", False):
        raise Unsupported("int8 weights")
    ishape, oshape = plan.shape(layer.bottoms[0]), plan.shape(layer.tops[0])
    if ishape[0] not in (1, 3) or oshape[0] != 1:
        raise Unsupported("needs a 1-D or 3-D input and a 1-D output")
    if not layer.weights_parked() and layer.weight_data.elemsize != 4:
        raise Unsupported("weights not fp32")
    src = plan.value(seg, layer.bottoms[0])
    oc = layer.num_output
    in_dims = src.md.dims
    wdims = (oc, *in_dims[1:])
    wtag = PLAIN[len(wdims)]
    own = []
    if layer.activation_type:
        own.append(activation_op(layer.activation_type, getattr(layer, "activation_params", None)))
    if all(len(p) == 3 for p in post) and _gemv(plan, layer, seg, src, scale, shift, own + post):
        return
    wmem, bmem = weights(plan, layer, wdims, scale, shift, oc, wtag)
    # the plain weights first: oneDNN's GEMM sums each output in one order at any thread
    # count, where its brgemm kernels (packed weights) split the sums over the threads at
    # some sizes (4096 -> 1000 at 4 threads), which changes the last bits
    candidates = post_args(plan, seg, post, (1, oc), len(own))
    for wfmt, (attr, operands) in itertools.product((wtag, "any"), candidates):  # noqa: B007 - used after
        pd = dn.inner_product(
            dn.md(in_dims, "any"),
            dn.md(wdims, wfmt),
            bmem.md if bmem else None,
            dn.md((1, oc), "ab"),
            own + attr,
        )
        if not pd.impl.startswith("ref"):
            break
    no_reference(pd)
    src = plan.as_md(seg, src, pd.md("src", in_dims))
    wpacked = plan.prepack(wmem, pd.md("weights", wdims))
    d = dnnl_module()
    args = [(d.ARG_WEIGHTS, wpacked)] + bind_posts(plan, seg, operands)
    if bmem is not None:
        args.append((d.ARG_BIAS, bmem))
    plan.run1(seg, pd, src, plan.top(layer, pd.md("dst", (1, oc))), args)


def _gemv(plan: NativePlan, layer, seg: Segment, src, scale, shift, acts: list) -> bool:
    """An inner product of one input row as the ``_llm`` extension's GEMV over the plain
    weights (the layer's own array unless affine layers were folded in), then ``acts`` as
    eltwise steps on its output; False (nothing added) where that extension is not built.
    Each output is summed by one thread in one order, so the result is the same at every
    thread count, as ncnn's is; and it streams the weights once, at the memory's speed."""
    if llm_kernels() is None:
        return False  # before any step is added for it
    dn = plan.dnnl
    oc = layer.num_output
    k = int(np.prod(src.md.dims))
    weight, bias = folded_weights(layer, (oc, k), scale, shift, oc)
    x = plan.as_dims(seg, plan.plain(seg, plan.canon(seg, src)), (1, k))
    out = plan.new_value(dn.md((1, oc), "ab"), plan.shape(layer.tops[0]))
    gemv(plan, seg, x, out, weight, bias)
    for alg, a, b in acts:
        plan.run1(seg, dn.eltwise(alg, out.md, out.md, a, b), out, out)
    plan.set_top(layer, out)
    return True


def chains(plan: NativePlan, order, consumers, readers) -> dict[int, list[int]]:
    """The layers after a producer that can go into it, each the only reader of the blob
    before it: after a convolution, deconvolution or inner product, BatchNorm / Scale /
    Bias (into its weights and bias, if it has no activation of its own), then a residual
    add (a binary post-op), then an activation (an eltwise post-op); after a BinaryOp or
    Eltwise, an activation. {producer: [layers]}; whether they go in is known only once
    the producer turned out native."""
    skipped = skipped_types()
    if "fusion" in skipped:
        return {}
    layers = plan.layers
    outputs = set(plan.outputs)
    out: dict[int, list[int]] = {}
    for li in order:
        prod = layers[li]
        if not builtin(prod) or len(prod.tops) != 1:
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
                not builtin(nxt)
                or nxt.type in skipped
                or getattr(nxt, "featmask", False)
                or len(nxt.tops) != 1
            ):
                break
            one = len(nxt.bottoms) == 1
            if stage == 0 and one and nxt.type in AFFINE_TYPES and nxt.one_blob_only:
                chain.append(nli)
            elif stage <= 1 and residual_add(nxt):
                chain.append(nli)
                stage = 2
            else:
                if one and standalone_activation(nxt) is not None:
                    chain.append(nli)
                break
            blob = nxt.tops[0]
        if chain:
            out[li] = chain
    return out


def pad_folds(plan: NativePlan, order, consumers, readers) -> dict[int, Make]:
    """Zero Padding layers whose only reader is a convolution: it pads their input
    itself (oneDNN takes any padding)."""
    skipped = skipped_types()
    if "fusion" in skipped or "Padding" in skipped:
        return {}
    layers = plan.layers
    outputs = set(plan.outputs)
    folds: dict[int, Make] = {}
    for li in order:
        pad = layers[li]
        if pad.type != "Padding" or not builtin(pad) or len(pad.bottoms) != 1 or len(pad.tops) != 1:
            continue
        top = pad.tops[0]
        if consumers.get(top, 0) != 1 or top in outputs or len(readers.get(top, ())) != 1:
            continue
        conv = layers[readers[top][0]]
        shape = plan.shapes.get(pad.bottoms[0])
        if (
            conv.type not in ("Convolution", "ConvolutionDepthWise")
            or not builtin(conv)
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
        folds[li] = made_padding
    return folds


def _producer(plan: NativePlan, layer, seg: Segment, opt, chain: list[int]) -> list[int] | None:
    """An int8 convolution or inner product by ``int8``, the others here."""
    from . import int8  # it reads nothing of this module

    if int8.quantized(layer):
        return int8.producer(plan, layer, seg, opt, chain)
    return producer(plan, layer, seg, opt, chain)


# the types this family builds (ops/__init__.py collects every family's)
BUILDERS: dict[str, Builder] = dict.fromkeys(PRODUCERS, _producer)
DEFERRALS = (pad_folds,)
