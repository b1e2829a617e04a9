"""The transformer decoders' layers in the native plan: Gemm, RMSNorm, RotaryEmbed, and the
grouped-query head repeat (ExpandDims -> Tile -> Reshape).

* **Gemm** with constant weights (``constantB``) and an input A, over the layer's own weight
  array, ``(N, K)`` row-major as ``transB=1`` stores it: no packed copy, so plans of several
  shapes share the model's one copy of its weights. Weights that are all fp16 values (an
  fp16-stored .bin, as ncnn's converters write LLMs; zero weights) are also kept as fp16
  (``Gemm.fp16_weights``, in 16-row panels) and up to ``GEMM16_ROWS`` rows read those,
  converting as they go (``_native/llm.c``'s gemm16): the same products from half the
  bytes. Otherwise one row (a decode step) is a C GEMV
  (``_native/llm.c``: a memory-bound pass over the weights, about 10 % faster than oneDNN's
  GEMM at M = 1 on the AVX-512 machine measured); several rows (a prefill) are oneDNN's
  matmul reading the weights as (K, N) (twice its inner product's GEMM speed at M = 16). A
  per-N constant C is the bias (``beta`` folded in), then ``alpha``. Input C, int8
  (``quantize_term``), transposed or N1M outputs stay numpy.
* **RMSNorm** and **RotaryEmbed**: one C step each (``_native/llm.c``) over the plain layout.
* **GQA head repeat**: LLM exports repeat each kv head for the query heads sharing it as
  ExpandDims (c, h, w) -> (c, 1, h, w), Tile along that axis, Reshape to (c * r, h, w). The
  plan has no 4-D values, so ExpandDims and Tile are deferred to the Reshape
  (``repeated_heads``), which copies each head r times into place (strided reorders).

SDPA has no native form: its kv cache grows every decode step, so it stays a numpy layer
between the segments; the executor's shape-loose plans (``plan.NativePlan.dynamic``) keep
the rest of a decode step native while the cache grows.
"""

from __future__ import annotations

import logging

import numpy as np

from ..plan import (
    PLAIN,
    Builder,
    CSteps,
    Make,
    NativePlan,
    Segment,
    Unsupported,
    builtin,
    dnnl_module,
    mat_dims,
    no_reference,
    skipped_types,
)
from .shape import reshape as plain_reshape

log = logging.getLogger("ncnn_c")


_STEPS = CSteps(
    "_llm",
    ("ncnnc_gemv", "ncnnc_gemm16", "ncnnc_rmsnorm", "ncnnc_rope"),
    "RMSNorm and RotaryEmbed stay numpy",
)
# up to this many rows (decode steps, prefills of a few dozen tokens) a B of fp16 values runs
# as our fp16 GEMM; more rows are oneDNN's fp32 matmul (2-core VM, the 2-layer Qwen3 cut's
# 16-token prefill: 11.8 ms against 16.6; the 28-layer decoder's: 159 against 175)
GEMM16_ROWS = 64
kernels, _kernel = _STEPS.get, _STEPS.step


def _elements(shape: tuple) -> int:
    dims = mat_dims(shape)
    if dims is None:
        raise Unsupported("not an fp32 1/2/3-D blob")
    return int(np.prod(dims))


# -- Gemm ----------------------------------------------------------------------------------
def gemm(plan: NativePlan, layer, seg: Segment, opt, chain) -> None:
    """Gemm of an input A and constant B: an inner product over the plain weights."""
    if layer.quantize_term or layer.constantA or not layer.constantB or layer.transA:
        raise Unsupported("int8, a constant A, an input B or a transposed A")
    if layer.output_transpose or layer.output_N1M or len(layer.bottoms) != 1 or len(layer.tops) != 1:
        raise Unsupported("a transposed or N1M output, or an input C")
    if layer.B_data.elemsize != 4:
        raise Unsupported("weights not fp32")
    if layer._B is None:
        layer._prepare()
    ishape, oshape = plan.shape(layer.bottoms[0]), plan.shape(layer.tops[0])
    dims, w, h, _d, c, _es, _ep = ishape
    if dims == 1:
        m = 1
    elif dims == 2:
        m = h
    elif dims == 3 and h == 1:
        m = c
    else:
        raise Unsupported("A must be 1-D, 2-D or (c, 1, w)")
    k, n = layer._B.shape
    if w != k or oshape[:3] != (2, n, m):
        raise Unsupported(f"A {ishape} and B ({k}, {n}) do not give the recorded {oshape}")
    d, dn = dnnl_module(), plan.dnnl
    # (N, K) row-major: the layer's own array when transB (no copy), else a transposed copy
    wt = np.ascontiguousarray(layer._B.T)
    if layer._C is not None and np.shape(layer._C) != (1, n):
        raise Unsupported("a constant C that is not per-N")
    alpha = [] if layer.alpha == 1.0 else [("linear", float(layer.alpha), 0.0)]
    src = plan.as_dims(seg, plan.plain(seg, plan.canon(seg, plan.value(seg, layer.bottoms[0]))), (m, k))
    out = plan.new_value(dn.md((m, n), "ab"), oshape)
    w16 = fp16_weights(layer) if m <= GEMM16_ROWS and kernels() is not None else None
    if m > 1 and w16 is None and np.shares_memory(wt, layer.B_data.numpy()):
        # several rows (a prefill): oneDNN's matmul reads the plain weights as (K, N) twice as
        # fast as the inner product's GEMM; the bias and alpha follow as steps of their own
        # (the weights are the layer's: the plan holds the layer, so they outlive it)
        wmd = dn.md((k, n), strides=(1, k))
        pd = dn.matmul(src.md, wmd, out.md)
        no_reference(pd)
        if pd.md("weights", (k, n)) != wmd:
            raise Unsupported("oneDNN wants the weights packed")
        plan.run1(seg, pd, src, out, [(d.ARG_WEIGHTS, dn.memory(wmd, wt.ctypes.data))])
        if layer._C is not None:
            row = plan.const(np.asarray(layer._C, np.float32), (1, n), "ab")
            plan.run1(seg, dn.binary("add", out.md, row.md, out.md), out, out, [(d.ARG_SRC_1, row)])
        if alpha:
            plan.run1(seg, dn.eltwise("linear", out.md, out.md, float(layer.alpha), 0.0), out, out)
    elif w16 is not None:
        # weights that are fp16 values (an fp16-stored .bin): read as fp16, half the bytes
        per_n = None if layer._C is None else np.asarray(layer._C, np.float32).reshape(n)
        gemm16(plan, seg, src, out, m, n, w16, per_n, float(layer.alpha))
    elif m == 1 and kernels() is not None:
        # one row (a decode step): our GEMV, a pass over the weights at the memory's speed
        per_n = None if layer._C is None else np.asarray(layer._C, np.float32).reshape(n)
        gemv(plan, seg, src, out, wt, per_n, float(layer.alpha))
    else:
        # oneDNN's GEMM over the plain weights (the GEMV at M = 1 where _llm is not built)
        weights = plan.const(wt, (n, k), "ab")
        bias = (
            None if layer._C is None else plan.const(np.asarray(layer._C, np.float32).reshape(n), (n,), "a")
        )
        pd = dn.inner_product(src.md, weights.md, bias.md if bias else None, out.md, alpha)
        no_reference(pd)
        if pd.md("weights", (n, k)) != weights.md:
            raise Unsupported("oneDNN wants the weights packed")
        args = [(d.ARG_WEIGHTS, weights)] + ([(d.ARG_BIAS, bias)] if bias is not None else [])
        plan.run1(seg, pd, src, out, args)
    odims = (1, m, n)  # the 2-D top's canonical dims
    plan.set_top(layer, plan.alias(out, dn.md(odims, PLAIN[3]), 0, oshape))


def _panels16(w: np.ndarray) -> np.ndarray | None:
    """``Gemm.fp16_weights``'s conversion in one multi-threaded C pass (``ncnnc_panels16``)."""
    n, k = w.shape
    out = np.empty((-(-n // 16), 16 * k), np.float16)
    exact = _STEPS.call("ncnnc_panels16", _STEPS.floats(w), n, k, _STEPS.cast("uint16_t *", out.ctypes.data))
    return out if exact else None


def fp16_weights(layer) -> np.ndarray | None:
    """``layer.fp16_weights()`` checked and laid out by the C pass where ``_llm`` is built."""
    return layer.fp16_weights(_panels16 if _STEPS.loaded() else None)


def gemm16(
    plan: NativePlan, seg: Segment, src, out, m: int, n: int, weight: np.ndarray, bias, alpha: float
) -> None:
    """One step ``out = alpha * (src @ weight.T + bias)`` of the ``_llm`` fp16-weight GEMM:
    ``src`` m rows of K values, ``weight`` the layer's fp16 copy in ``panels16``'s layout
    (kept by the step), ``bias`` N values or None."""
    k = weight.shape[1] // 16
    bias = None if bias is None else np.ascontiguousarray(bias, np.float32)
    fields = {
        "m": m,
        "n": n,
        "k": k,
        "w": _STEPS.cast("const uint16_t *", weight.ctypes.data),
        "bias": _STEPS.floats(bias),
        "alpha": alpha,
    }
    step = _kernel("ncnnc_gemm16", "ncnnc_gemm16_ctx *", fields, (weight, bias))
    src.last = plan.step
    d = dnnl_module()
    plan.add(seg, step, [(d.ARG_SRC, plan.mem(src)), (d.ARG_DST, plan.mem(out))])


def gemv(plan: NativePlan, seg: Segment, src, out, weight: np.ndarray, bias, alpha: float = 1.0) -> bool:
    """One step ``out = alpha * (weight @ src + bias)`` of the ``_llm`` GEMV: ``src`` a row of
    K values, ``weight`` (N, K) row-major, ``bias`` N values or None; each output is summed by
    one thread in one order. False (nothing added) where the extension is not built."""
    if kernels() is None:
        return False
    n, k = weight.shape
    weight = np.ascontiguousarray(weight, np.float32)
    bias = None if bias is None else np.ascontiguousarray(bias, np.float32)
    fields = {
        "n": n,
        "k": k,
        "w": _STEPS.floats(weight),
        "bias": _STEPS.floats(bias),
        "alpha": alpha,
    }
    step = _kernel("ncnnc_gemv", "ncnnc_gemv_ctx *", fields, (weight, bias))
    src.last = plan.step
    d = dnnl_module()
    plan.add(seg, step, [(d.ARG_SRC, plan.mem(src)), (d.ARG_DST, plan.mem(out))])
    return True


# -- RMSNorm, RotaryEmbed ------------------------------------------------------------------
def rmsnorm(plan: NativePlan, layer, seg: Segment, opt, chain) -> None:
    """RMSNorm over rows of its slice length (ncnn's rule, ``layer/rmsnorm.py``), one C step."""
    shape = plan.shape(layer.bottoms[0])
    dims, w, h, _d, _c, _es, _ep = shape
    if dims not in (1, 2, 3):
        raise Unsupported("a 4-D blob")
    n = w if dims <= 2 or layer.affine_size == w else w * h
    if layer.affine and (n != layer.affine_size or layer.gamma_data.size != n):
        raise Unsupported("affine_size does not match the blob")
    src = plan.plain(seg, plan.canon(seg, plan.value(seg, layer.bottoms[0])))
    if kernels() is None:
        raise Unsupported("the _llm extension is not built")
    gamma = np.ascontiguousarray(layer.gamma_data, np.float32) if layer.affine else None
    fields = {
        "rows": _elements(shape) // n,
        "n": n,
        "eps": float(layer.eps),
        "gamma": _STEPS.floats(gamma),
    }
    k = _kernel("ncnnc_rmsnorm", "ncnnc_rmsnorm_ctx *", fields, (gamma,))
    out = plan.top(layer, src.md)
    d = dnnl_module()
    src.last = plan.step
    plan.add(seg, k, [(d.ARG_SRC, plan.mem(src)), (d.ARG_DST, plan.mem(out))])


def rotaryembed(plan: NativePlan, layer, seg: Segment, opt, chain) -> None:
    """RotaryEmbed of x (heads, seqlen, dim) with cos / sin rows, one C step."""
    if len(layer.bottoms) != 3 or len(layer.tops) != 1:
        raise Unsupported("needs x, cos and sin")
    xs, cs, ss = (plan.shape(b) for b in layer.bottoms)
    dims, dim, seqlen, _d, heads, _es, _ep = xs
    heads = heads if dims == 3 else 1
    if dims not in (2, 3) or dim % 2:
        raise Unsupported("x must be (heads, seqlen, dim) with an even dim")
    for s in (cs, ss):
        if s[0] != 2 or s[2] < seqlen or s[1] < dim // 2 or s[1] != cs[1]:
            raise Unsupported("cos / sin caches too small or of different widths")
    x = plan.plain(seg, plan.canon(seg, plan.value(seg, layer.bottoms[0])))
    cos = plan.plain(seg, plan.canon(seg, plan.value(seg, layer.bottoms[1])))
    sin = plan.plain(seg, plan.canon(seg, plan.value(seg, layer.bottoms[2])))
    fields = {
        "heads": heads,
        "seqlen": seqlen,
        "dim": dim,
        "cos_stride": cs[1],
        "interleaved": 1 if layer.interleaved else 0,
    }
    k = _kernel("ncnnc_rope", "ncnnc_rope_ctx *", fields)
    out = plan.top(layer, x.md)
    d = dnnl_module()
    for v in (x, cos, sin):
        v.last = plan.step
    args = [(d.ARG_SRC, plan.mem(v)) for v in (x, cos, sin)]
    plan.add(seg, k, args + [(d.ARG_DST, plan.mem(out))])


# -- grouped-query head repeat ---------------------------------------------------------------
def _unmade(plan: NativePlan, seg: Segment, layer) -> None:
    # the 4-D blob between ExpandDims, Tile and Reshape has no native form; repeated_heads
    # defers them only where the Reshape is their blob's one reader
    raise Unsupported(f"{layer.type} {layer.name!r}: a 4-D blob")


def repeated_heads(plan: NativePlan, order, consumers, readers) -> dict[int, Make]:
    """ExpandDims (c, h, w) -> (c, 1, h, w), then Tile to (c, r, h, w), then Reshape to
    (c * r, h, w), each the previous one's only reader: the first two are left to the
    Reshape (``reshape``), which repeats each head r times."""
    skipped = skipped_types()
    if {"fusion", "ExpandDims", "Tile", "Reshape"} & skipped:
        return {}
    layers, outputs = plan.layers, set(plan.outputs)
    out: dict[int, Make] = {}
    for li in order:
        ex = layers[li]
        if ex.type != "ExpandDims" or not builtin(ex) or len(ex.tops) != 1 or len(ex.bottoms) != 1:
            continue
        chain = [li]
        for want in ("Tile", "Reshape"):
            top = layers[chain[-1]].tops[0]
            nxt = readers.get(top, [])
            if consumers.get(top, 0) != 1 or top in outputs or len(nxt) != 1:
                break
            layer = layers[nxt[0]]
            if layer.type != want or not builtin(layer) or len(layer.tops) != 1 or len(layer.bottoms) != 1:
                break
            chain.append(nxt[0])
        blobs = {b for i in chain for b in (*layers[i].bottoms, *layers[i].tops)}
        if plan.dynamic & blobs:
            # a blob that changes shape (a shape-loose plan's prefill of another length): the
            # Reshape would be a numpy layer reading the 4-D blob that no one made
            continue
        if len(chain) == 3 and _repeat(plan, *(layers[i] for i in chain)) is not None:
            out[chain[0]] = _unmade
            out[chain[1]] = _unmade
    return out


def _repeat(plan: NativePlan, ex, tile, rs) -> int | None:
    """The repeat count r when the recorded shapes are (c, h, w) -> (c, 1, h, w) ->
    (c, r, h, w) -> (c * r, h, w), else None."""
    s0, s1, s2, s3 = (plan.shapes.get(b) for b in (ex.bottoms[0], ex.tops[0], tile.tops[0], rs.tops[0]))
    if s0 is None or s1 is None or s2 is None or s3 is None:
        return None
    _, w, h, _, c, es, ep = s0
    if s0[0] != 3 or es != 4 or ep != 1:
        return None
    if s1[:5] != (4, w, h, 1, c) or s2[0] != 4 or s2[1:3] != (w, h) or s2[4] != c:
        return None
    r = s2[3]
    return r if s3[:5] == (3, w, h, 1, c * r) else None


def reshape(plain_reshape):
    """The Reshape builder: the head repeat where ``repeated_heads`` left its ExpandDims and
    Tile to it, else ``plain_reshape``."""

    def build(plan: NativePlan, layer, seg: Segment, opt, chain) -> None:
        tile = plan.deferred(layer.bottoms[0])
        if tile is None or tile.type != "Tile":
            return plain_reshape(plan, layer, seg, opt, chain)
        ex = plan.deferred(tile.bottoms[0])
        r = _repeat(plan, ex, tile, layer) if ex is not None else None
        if ex is None or r is None:
            raise Unsupported("a Tile left to it without its ExpandDims")
        plan.take_deferred(layer.bottoms[0])
        plan.take_deferred(tile.bottoms[0])
        dn = plan.dnnl
        oshape = plan.shape(layer.tops[0])
        _, w, h, _, c, _, _ = plan.shape(ex.bottoms[0])
        src = plan.plain(seg, plan.canon(seg, plan.value(seg, ex.bottoms[0])))
        out = plan.top(layer, dn.md((1, c * r, h, w), "abcd"))
        # head j of the output is head j // r of the input: r strided copies
        strides = (c * r * h * w, r * h * w, w, 1)
        for i in range(r):
            view = plan.alias(out, dn.md((1, c, h, w), strides=strides), i * h * w * 4, oshape)
            plan.copy(seg, src, view)

    return build


# the types this family builds (ops/__init__.py collects every family's)
BUILDERS: dict[str, Builder] = {
    "Gemm": gemm,
    "RMSNorm": rmsnorm,
    "RotaryEmbed": rotaryembed,
    "Reshape": reshape(plain_reshape),
}
DEFERRALS = (repeated_heads,)
