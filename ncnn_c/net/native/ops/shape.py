"""Data movement without arithmetic: Split / Dropout / Noop, Concat, Flatten / Reshape,
ShuffleChannel, Slice, Crop, Padding, Permute.

Where the bytes a layer hands on are already where they are (a reshape of the plain layout,
a contiguous channel range, a whole blob) its top is a view of its bottom; otherwise a
strided copy or a concat. A Concat whose only reader is a ShuffleChannel is deferred: the
shuffle copies each part straight to its shuffled place (``shuffled_concats``).
"""

from __future__ import annotations

import numpy as np

from ..plan import (
    BLOCK,
    PLAIN,
    Builder,
    Make,
    NativePlan,
    Segment,
    Unsupported,
    Value,
    builtin,
    dense_strides,
    dnnl_module,
    mat_dims,
    no_reference,
    numpy_shape,
    skipped_types,
    tag_strides,
)


def passthrough(plan: NativePlan, layer, seg: Segment, opt, chain) -> None:
    """Split / Dropout (scale 1) / Noop: each top is its bottom; a Dropout with a scale is the
    eltwise x * scale."""
    scale = float(getattr(layer, "scale", 1.0)) if layer.type == "Dropout" else 1.0
    if scale != 1.0:
        from .eltwise import eltwise_ops

        return eltwise_ops(plan, layer, seg, [("linear", scale, 0.0)])
    if len(layer.bottoms) == 1:
        src = plan.value(seg, layer.bottoms[0])
        for i in range(len(layer.tops)):
            plan.same(layer, seg, src, i)
        return
    if layer.type != "Noop" or len(layer.tops) > len(layer.bottoms):
        raise Unsupported(f"no native {layer.type}")
    for i, b in enumerate(layer.bottoms[: len(layer.tops)]):
        plan.same(layer, seg, plan.value(seg, b), i)


def concat_values(
    plan: NativePlan, layer, seg: Segment, vals: list[Value], axis: int, index: int = 0, tag="any"
) -> Value:
    """``vals`` joined along ``axis``: top ``index`` of ``layer``, or (no layer) a new value."""
    d, dn = dnnl_module(), plan.dnnl
    dims = list(vals[0].md.dims)
    dims[axis] = sum(v.md.dims[axis] for v in vals)
    pd = dn.concat(dn.md(dims, tag), axis, [v.md for v in vals])
    for other in ("acdb", PLAIN[len(dims)]) if pd.impl.startswith("ref") else ():
        # parts whose channels do not fill whole blocks: copied into a layout without
        # blocks (channels innermost first: convolutions on AVX-512 read that)
        if other == "acdb" and len(dims) != 4:
            continue
        pd = dn.concat(dn.md(dims, other), axis, [dn.md(v.md.dims, other) for v in vals])
        if not pd.impl.startswith("ref"):
            vals = [plan.as_md(seg, v, dn.md(v.md.dims, other)) for v in vals]
            break
    no_reference(pd)
    out = plan.top(layer, pd.md("dst", dims), index) if layer is not None else None
    if out is None:
        out = plan.new_value(pd.md("dst", dims), vals[0].shape)
    args = [(d.ARG_MULTIPLE_SRC + i, plan.mem(v)) for i, v in enumerate(vals)]
    for v in vals:
        v.last = plan.step
    plan.add(seg, pd.primitive(), args + [(d.ARG_DST, plan.mem(out))])
    return out


def concat(plan: NativePlan, layer, seg: Segment, opt, chain) -> None:
    shapes = [plan.shape(b) for b in layer.bottoms]
    dims = shapes[0][0]
    if dims not in (1, 2, 3) or any(s[0] != dims for s in shapes):
        raise Unsupported("concat dims")
    axis = 0 if dims == 1 else layer.axis + dims if layer.axis < 0 else layer.axis
    if not 0 <= axis < dims:
        raise Unsupported("concat axis")
    vals = [plan.canon(seg, plan.value(seg, b)) for b in layer.bottoms]
    if len(vals) == 1:
        return plan.same(layer, seg, vals[0])
    ref = vals[0].md.dims
    if any(v.md.dims[: axis + 1] + v.md.dims[axis + 2 :] != ref[: axis + 1] + ref[axis + 2 :] for v in vals):
        raise Unsupported("concat shapes")
    concat_values(plan, layer, seg, vals, axis + 1)


def reshape(plan: NativePlan, layer, seg: Segment, opt, chain) -> None:
    """Flatten / Reshape: the same elements in the recorded shape, a view of the plain
    layout (ncnn's order: c, then h, then w)."""
    oshape = plan.shape(layer.tops[0])
    dims = mat_dims(oshape)
    if dims is None or len(layer.tops) != 1:
        raise Unsupported("reshape to a 4-D blob")
    src = plan.plain(seg, plan.value(seg, layer.bottoms[0]))
    if int(np.prod(src.md.dims)) != int(np.prod(dims)):
        raise Unsupported("element count")
    plan.set_top(layer, plan.alias(src, plan.dnnl.md(dims, PLAIN[len(dims)]), 0, oshape))


def shufflechannel(plan: NativePlan, layer, seg: Segment, opt, chain) -> None:
    dn = plan.dnnl
    shape = plan.shape(layer.bottoms[0])
    if shape[0] != 3:
        return plan.same(layer, seg, plan.value(seg, layer.bottoms[0]))  # one channel
    _, w, h, _, c, _, _ = shape
    if c % layer.group:
        raise Unsupported("channels do not split into groups")
    groups = c // layer.group if layer.reverse else layer.group
    per = c // groups
    if groups == 1 or per == 1:
        return plan.same(layer, seg, plan.value(seg, layer.bottoms[0]))
    if plan.deferred(layer.bottoms[0]) is not None:  # a Concat left to it (shuffled_concats)
        return shuffle_parts(plan, layer, seg, groups, per)
    src = plan.canon(seg, plan.value(seg, layer.bottoms[0]))
    if BLOCK.get(plan.tag_of(src.md) or ""):
        # oneDNN's shuffle: its group_size is the channels per ncnn group
        pd = dn.shuffle(src.md, src.md, 1, per)
        if not pd.impl.startswith("ref"):
            return plan.run1(seg, pd, src, plan.top(layer, src.md))
    # output channel j * groups + i is input channel i * per + j: a strided copy within
    # the layout the blob has (channels plain or innermost), else within the plain one
    tag = plan.tag_of(src.md)
    if tag not in ("abcd", "acdb"):
        src, tag = plan.plain(seg, src), "abcd"
    n, cs, hs, ws = tag_strides(tag, src.md.dims)
    five = (1, groups, per, h, w)
    view = plan.alias(src, dn.md(five, strides=(n, per * cs, cs, hs, ws)))
    out = plan.top(layer, dn.md((1, c, h, w), tag))
    plan.copy(seg, view, plan.alias(out, dn.md(five, strides=(n, cs, groups * cs, hs, ws))))


def shuffle_parts(plan: NativePlan, layer, seg: Segment, groups: int, per: int) -> None:
    """Concat + ShuffleChannel in one pass: each part of the concat, whole groups of
    ``per`` channels, is copied straight to its shuffled channels of the output."""
    dn = plan.dnnl
    cat = plan.take_deferred(layer.bottoms[0])
    parts = [plan.canon(seg, plan.value(seg, b)) for b in cat.bottoms]
    _, w, h, _, c, _, _ = plan.shape(layer.tops[0])
    tag = "acdb" if plan.tag_of(parts[0].md) == "acdb" else "abcd"
    out = plan.top(layer, dn.md((1, c, h, w), tag))
    n, cs, hs, ws = tag_strides(tag, (1, c, h, w))
    first = 0  # the part's first group
    for v in parts:
        m = v.md.dims[1] // per
        five = (1, m, per, h, w)
        try:
            src = plan.alias(v, v.md.reshaped(five))
        except dnnl_module().DnnlError:
            v = plan.plain(seg, v)
            src = plan.alias(v, v.md.reshaped(five))
        # input channel i * per + j (group i) goes to output channel j * groups + i
        dst = plan.alias(out, dn.md(five, strides=(n, cs, groups * cs, hs, ws)), first * cs * 4)
        plan.copy(seg, src, dst)
        first += m


def _made_concat(plan: NativePlan, seg: Segment, cat) -> None:
    """A deferred Concat something else reads after all: a concat of its own."""
    concat(plan, cat, seg, None, [])


def shuffled_concats(plan: NativePlan, order, consumers, readers) -> dict[int, Make]:
    """Channel Concats whose only reader is a ShuffleChannel and whose parts each hold
    whole groups of it (ShuffleNet's blocks): the shuffle writes the parts into place."""
    skipped = skipped_types()
    if "fusion" in skipped or "ShuffleChannel" in skipped or "Concat" in skipped:
        return {}
    layers = plan.layers
    outputs = set(plan.outputs)
    out: dict[int, Make] = {}
    for li in order:
        cat = layers[li]
        if cat.type != "Concat" or not builtin(cat) or len(cat.tops) != 1 or len(cat.bottoms) < 2:
            continue
        top = cat.tops[0]
        if consumers.get(top, 0) != 1 or top in outputs or len(readers.get(top, ())) != 1:
            continue
        sh = layers[readers[top][0]]
        shapes = [plan.shapes.get(b) for b in cat.bottoms]
        oshape = plan.shapes.get(top)
        if sh.type != "ShuffleChannel" or not builtin(sh) or oshape is None or oshape[0] != 3:
            continue
        if cat.axis not in (0, -3) or any(s is None or s[0] != 3 or s[1:3] != oshape[1:3] for s in shapes):
            continue
        c = oshape[4]
        if sh.group < 1 or c % sh.group:
            continue
        per = sh.group if sh.reverse else c // sh.group
        if per > 1 and per < c and all(s is not None and s[4] % per == 0 for s in shapes):
            out[li] = _made_concat
    return out


def slice_layer(plan: NativePlan, layer, seg: Segment, opt, chain) -> None:
    shape = plan.shape(layer.bottoms[0])
    dims = shape[0]
    if dims not in (1, 2, 3):
        raise Unsupported("slice dims")
    axis = 0 if dims == 1 else layer.axis + dims if layer.axis < 0 else layer.axis
    npshape = numpy_shape(shape)
    if not 0 <= axis < dims:
        raise Unsupported("slice axis")
    sizes = layer.part_sizes(npshape[axis], len(layer.tops))
    if sizes is None:
        raise Unsupported("slice sizes")
    src = plan.canon(seg, plan.value(seg, layer.bottoms[0]))
    q = 0
    for i, s in enumerate(sizes):
        odims = list(src.md.dims)
        odims[axis + 1] = s
        offs = [0] * len(odims)
        offs[axis + 1] = q
        plan.set_top(layer, plan.box(seg, src, odims, offs, plan.shape(layer.tops[i])), i)
        q += s


def crop(plan: NativePlan, layer, seg: Segment, opt, chain) -> None:
    shape = plan.shape(layer.bottoms[0])
    if shape[0] not in (1, 2, 3):
        raise Unsupported("crop dims")
    npshape = numpy_shape(shape)
    box = layer.param_box(npshape)
    if box is None or any(o < 0 or s <= 0 or o + s > n for (o, s), n in zip(box, npshape, strict=True)):
        raise Unsupported("crop with a reference blob or expressions, or no box")
    src = plan.canon(seg, plan.value(seg, layer.bottoms[0]))
    if all(s == n for (_, s), n in zip(box, npshape, strict=True)):
        return plan.same(layer, seg, src)
    odims = (1, *(s for _, s in box))
    offs = (0, *(o for o, _ in box))
    plan.set_top(layer, plan.box(seg, src, odims, offs, plan.shape(layer.tops[0])))


def padding(plan: NativePlan, layer, seg: Segment, opt, chain) -> None:
    shape = plan.shape(layer.bottoms[0])
    if layer.pad_type != 0 or layer.per_channel_pad_data_size or shape[0] not in (1, 2, 3):
        raise Unsupported("replicate / reflect / per-channel padding")
    pads = layer.pads(shape[0])
    src = plan.canon(seg, plan.value(seg, layer.bottoms[0]))
    if all(p == (0, 0) for p in pads):
        return plan.same(layer, seg, src)
    plan.set_top(layer, pad_value(plan, seg, src, pads, float(layer.value)))


def pad_value(plan: NativePlan, seg: Segment, v: Value, pads, value: float) -> Value:
    """``v`` grown by constant blocks: a concat per padded axis, in ``v``'s layout."""
    tag = plan.tag_of(v.md) or "any"
    for axis, (before, after) in enumerate(pads):
        if not (before or after):
            continue
        parts: list[Value | None] = []
        for n in (before, after):
            if n:
                dims = list(v.md.dims)
                dims[axis + 1] = n
                md = None if tag == "any" else plan.dnnl.md(dims, tag)
                parts.append(plan.const_value(np.full(dims, value, np.float32), v.shape, dims, md))
            else:
                parts.append(None)
        vals = [p for p in (parts[0], v, parts[1]) if p is not None]
        v = concat_values(plan, None, seg, vals, axis + 1, tag=tag)
    return v


def made_padding(plan: NativePlan, seg: Segment, pad) -> None:
    """A deferred zero Padding something else reads after all: padded with constants."""
    src = plan.canon(seg, plan.value(seg, pad.bottoms[0]))
    v = pad_value(plan, seg, src, [(0, 0), (pad.top, pad.bottom), (pad.left, pad.right)], 0.0)
    plan.set_top(pad, plan.alias(v, v.md, 0, plan.shape(pad.tops[0])))


def permute(plan: NativePlan, layer, seg: Segment, opt, chain) -> None:
    dn = plan.dnnl
    shape = plan.shape(layer.bottoms[0])
    dims = shape[0]
    src = plan.canon(seg, plan.value(seg, layer.bottoms[0]))
    if dims == 1 or layer.order_type == 0:
        return plan.same(layer, seg, src)
    axes = layer.transpose_axes(dims)
    if dims not in (2, 3) or axes is None:
        raise Unsupported("permute of a 4-D blob")
    npshape = numpy_shape(shape)
    oshape = tuple(npshape[a] for a in axes)
    ostrides = dense_strides(oshape)
    out = plan.top(layer, dn.md((1, *oshape), PLAIN[dims + 1]))
    # the output seen in the input's axis order: input axis a has the stride of its place
    strides = [int(np.prod(oshape))] + [ostrides[axes.index(a)] for a in range(dims)]
    plan.copy(seg, src, plan.alias(out, dn.md(src.md.dims, strides=strides)))


# the types this family builds (ops/__init__.py collects every family's; Reshape is
# transformer's, which repeats a decoder's kv heads in it)
BUILDERS: dict[str, Builder] = {
    **dict.fromkeys(("Split", "Dropout", "Noop"), passthrough),
    "Concat": concat,
    "Flatten": reshape,
    "ShuffleChannel": shufflechannel,
    "Slice": slice_layer,
    "Crop": crop,
    "Padding": padding,
    "Permute": permute,
}
DEFERRALS = (shuffled_concats,)
