"""Windows and reductions: Pooling, Reduction, Softmax, LRN, and Interp (nearest /
bilinear resampling, where a probe shows oneDNN's source positions are ncnn's).
"""

from __future__ import annotations

import numpy as np

from ....mat import Mat
from ..plan import PLAIN, NativePlan, Segment, Unsupported, dnnl_module, no_reference


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
    pd = dn.pooling(alg, src.md, dn.md(odims, "any"), stride, kernel, (t, l), (b, r))
    no_reference(pd)
    plan.run1(seg, pd, src, plan.top(layer, pd.md("dst", odims)))


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
    for md in (src.md, dn.md(src.md.dims, strides=strides)):
        pd = dn.softmax(md, md, axis + 1)
        if not pd.impl.startswith("ref"):
            break
    src = plan.as_md(seg, src, md)
    plan.run1(seg, pd, src, plan.top(layer, src.md))


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
