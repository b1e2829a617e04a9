"""Windows and reductions: Pooling, Reduction, Softmax, LRN, and Interp (nearest /
bilinear resampling, where a probe shows oneDNN's source positions are ncnn's).

Max pooling and Softmax take a step of ``_native/nonfinite.c`` where oneDNN's kernels treat
non-finite values otherwise than the numpy layers: its max pooling skips a NaN (the numpy
layer's window gives NaN) and gives -FLT_MAX for a window of -inf, its softmax gives NaN
where ncnn's vector exp counts a NaN as exp(88.376..) (ncnn_c/layer/softmax.py). Without the
``_nonfinite`` extension both stay numpy.
"""

from __future__ import annotations

import numpy as np

from ....mat import Mat
from ..plan import (
    BLOCK,
    PLAIN,
    Builder,
    NativePlan,
    Segment,
    Unsupported,
    dnnl_module,
    no_reference,
    tag_strides,
)
from .eltwise import NONFINITE


def pooling(plan: NativePlan, layer, seg: Segment, opt, chain) -> None:
    ishape, oshape = plan.shape(layer.bottoms[0]), plan.shape(layer.tops[0])
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
    pool(plan, layer, seg, alg, (1, c, oh, ow), kernel, stride, pads)


def pool(plan: NativePlan, layer, seg: Segment, alg, odims, kernel, stride, pads) -> None:
    dn = plan.dnnl
    t, b, l, r = pads
    src = plan.canon(seg, plan.value(seg, layer.bottoms[0]))
    if alg == "max":
        return max_pool(plan, layer, seg, src, odims, kernel, stride, (t, l))
    pd = dn.pooling(alg, src.md, dn.md(odims, "any"), stride, kernel, (t, l), (b, r))
    no_reference(pd)
    plan.run1(seg, pd, src, plan.top(layer, pd.md("dst", odims)))


def _blocks(plan: NativePlan, src, channels: int):
    """(tag, groups, block) of a (1, c, h, w) value whose layout the ``_nonfinite`` steps read as
    [groups][h][w][block]: plain, channel blocks, channels-last; else a plain copy's."""
    tag = plan.tag_of(src.md)
    if tag in BLOCK:
        return tag, -(-channels // BLOCK[tag]), BLOCK[tag]
    if tag == "acdb":
        return tag, 1, channels
    return "abcd", channels, 1


def max_pool(plan: NativePlan, layer, seg: Segment, src, odims, kernel, stride, pads) -> None:
    """Max pooling where a NaN in a window gives NaN (nonfinite.c's step); the output in the
    input's layout."""
    d, dn = dnnl_module(), plan.dnnl
    _, c, h, w = src.md.dims
    _, _, oh, ow = odims
    tag, groups, block = _blocks(plan, src, c)
    fields = dict(groups=groups, block=block, h=h, w=w, oh=oh, ow=ow)
    fields.update(kh=kernel[0], kw=kernel[1], sh=stride[0], sw=stride[1], pad_t=pads[0], pad_l=pads[1])
    step = NONFINITE.step("ncnnc_maxpool", "ncnnc_maxpool_ctx *", fields)
    src = plan.as_md(seg, src, dn.md(src.md.dims, tag))
    out = plan.top(layer, dn.md(odims, tag))
    src.last = plan.step
    plan.add(seg, step, [(d.ARG_SRC, plan.mem(src)), (d.ARG_DST, plan.mem(out))])


def _lines(plan: NativePlan, md, axis: int, strided: bool) -> dict:
    """The softmax_fix geometry ([outer][groups][inner][block], nonfinite.c) of the lines along
    ``axis`` of a dense descriptor: the axis-innermost one ``softmax`` makes (``strided``), a
    plain or channels-last tag, or channel blocks. Unsupported for another."""
    dims = md.dims
    total, n = int(np.prod(dims)), dims[axis]
    tag = None if strided else plan.tag_of(md)
    if strided:
        return dict(outer=total // n, groups=n, inner=1, block=1, n=n)
    if tag in BLOCK:
        b = BLOCK[tag]
        groups = -(-dims[1] // b)
        if axis == 1:
            return dict(outer=dims[0], groups=groups, inner=int(np.prod(dims[2:])), block=b, n=n)
        before, after = int(np.prod(dims[2:axis])), int(np.prod(dims[axis + 1 :]))
        return dict(outer=dims[0] * groups * before, groups=n, inner=after * b, block=1, n=n)
    if tag is None:
        raise Unsupported("softmax over a layout the non-finite step cannot read")
    inner = tag_strides(tag, dims)[axis]
    return dict(outer=total // (inner * n), groups=n, inner=inner, block=1, n=n)


def softmax(plan: NativePlan, layer, seg: Segment, opt, chain) -> None:
    dn = plan.dnnl
    ishape = plan.shape(layer.bottoms[0])
    dims = ishape[0]
    if dims not in (1, 2, 3):
        raise Unsupported("softmax dims")
    axis = 0 if dims == 1 else layer.axis + dims if layer.axis < 0 else layer.axis
    if not 0 <= axis < dims:
        raise Unsupported("softmax axis")
    src = plan.canon(seg, plan.value(seg, layer.bottoms[0]))
    # oneDNN's fast softmax runs along the innermost axis (or blocked channels): else
    # the blob is copied into a layout where the axis is innermost
    n = len(src.md.dims)
    order = [i for i in range(n) if i != axis + 1] + [axis + 1]
    strides = [0] * n
    acc = 1
    for i in reversed(order):
        strides[i] = acc
        acc *= src.md.dims[i]
    mds = [(src.md, False)] if plan.tag_of(src.md) is not None else []
    for md, strided in mds + [(dn.md(src.md.dims, strides=strides), True)]:  # noqa: B007 - used after
        pd = dn.softmax(md, md, axis + 1)
        if not pd.impl.startswith("ref"):
            break
    no_reference(pd)
    # the lines holding NaN or inf, where oneDNN's softmax gives NaN, again by ncnn's rule
    fix = NONFINITE.step("ncnnc_softmax_fix", "ncnnc_softmax_ctx *", _lines(plan, md, axis + 1, strided))
    src = plan.as_md(seg, src, md)
    out = plan.top(layer, src.md)
    plan.run1(seg, pd, src, out)
    src.last = plan.step
    plan.add(seg, fix, [(dnnl_module().ARG_SRC, plan.mem(src)), (dnnl_module().ARG_DST, plan.mem(out))])


def reduction(plan: NativePlan, layer, seg: Segment, opt, chain) -> None:
    dn = plan.dnnl
    shape = plan.shape(layer.bottoms[0])
    dims = shape[0]
    if dims not in (1, 2, 3) or layer.coeff != 1.0:
        raise Unsupported("dims or coeff")
    axes = layer.reduced_axes(dims)
    alg = {0: "sum", 3: "mean", 4: "max", 5: "min"}.get(layer.operation)
    if axes is None or alg is None:
        raise Unsupported(f"reduction {layer.operation}")
    src = plan.canon(seg, plan.value(seg, layer.bottoms[0]))
    odims = tuple(1 if i - 1 in axes else n for i, n in enumerate(src.md.dims))
    if dims == 3 and axes == (1, 2) and alg in ("mean", "max"):
        # over each channel's plane: global pooling, fast in every layout
        _, w, h, _, c, _, _ = shape
        palg = "max" if alg == "max" else "avg_include_padding"
        return pool(plan, layer, seg, palg, odims, (h, w), (1, 1), (0, 0, 0, 0))
    pd = dn.reduction(alg, src.md, dn.md(odims, "any"))
    if pd.impl.startswith("ref"):
        src = plan.plain(seg, src)
        pd = dn.reduction(alg, src.md, dn.md(odims, PLAIN[len(odims)]))
    plan.run1(seg, pd, src, plan.top(layer, pd.md("dst", odims)))


def lrn(plan: NativePlan, layer, seg: Segment, opt, chain) -> None:
    dn = plan.dnnl
    shape = plan.shape(layer.bottoms[0])
    if shape[0] != 3 or layer.local_size % 2 == 0:
        raise Unsupported("3-D blobs and odd windows only")
    alg = "across_channels" if layer.region_type == 0 else "within_channel"
    src = plan.canon(seg, plan.value(seg, layer.bottoms[0]))
    args = (layer.local_size, float(layer.alpha), float(layer.beta), float(layer.bias))
    pd = dn.lrn(alg, src.md, src.md, *args)
    for tag in ("abcd", "acdb"):
        if not pd.impl.startswith("ref"):
            break
        md = dn.md(src.md.dims, tag)
        pd = dn.lrn(alg, md, md, *args)
    src = plan.as_md(seg, src, pd.md("src", src.md.dims))
    plan.run1(seg, pd, src, plan.top(layer, src.md))


def interp(plan: NativePlan, layer, seg: Segment, opt, chain) -> None:
    dn = plan.dnnl
    ishape, oshape = plan.shape(layer.bottoms[0]), plan.shape(layer.tops[0])
    if not layer.sized_by_params() or len(layer.bottoms) != 1:
        raise Unsupported("a size from a reference blob or an expression")
    if ishape[0] != 3 or oshape[0] != 3 or layer.resize_type not in (1, 2):
        raise Unsupported("nearest / bilinear of a 3-D blob only")
    if layer.resize_type == 2 and layer.align_corner:
        raise Unsupported("align_corner")
    _, w, h, _, c, _, _ = ishape
    _, ow, oh, _, _, _, _ = oshape
    src = plan.canon(seg, plan.value(seg, layer.bottoms[0]))
    if (w, h) == (ow, oh):
        return plan.same(layer, seg, src)
    alg = "nearest" if layer.resize_type == 1 else "linear"
    if not interp_agrees(plan, layer, alg, (h, w), (oh, ow), opt):
        raise Unsupported("oneDNN's source positions differ from ncnn's here")
    odims = (1, c, oh, ow)
    pd = dn.resampling(alg, src.md, dn.md(odims, "any"))
    if pd.impl.startswith("ref"):
        src = plan.plain(seg, src)
        pd = dn.resampling(alg, src.md, dn.md(odims, "abcd"))
    plan.run1(seg, pd, src, plan.top(layer, pd.md("dst", odims)))


def interp_agrees(plan: NativePlan, layer, alg: str, size, osize, opt) -> bool:
    """Whether oneDNN resamples ``size`` to ``osize`` as the numpy layer does: both run
    on one random channel (the positions and weights do not depend on the channel)."""
    d, dn = dnnl_module(), plan.dnnl
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


# the types this family builds (ops/__init__.py collects every family's)
BUILDERS: dict[str, Builder] = {
    "Pooling": pooling,
    "Reduction": reduction,
    "Softmax": softmax,
    "LRN": lrn,
    "Interp": interp,
}
