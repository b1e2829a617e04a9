"""Winograd F(6,3) / F(4,3) / F(2,3) for the 3x3 stride-1 convolutions of the native plan.

oneDNN 3.2 has no fp32 Winograd on x86 (``dnnl_convolution_winograd`` is unimplemented,
``auto`` picks the direct kernel), and ncnn runs VGG's and YOLO's 3x3 layers through
Winograd F(6,3). Here a convolution becomes one plan step (``_native/winograd.c``, a
plan.c kernel) with one OpenMP parallel region, whose threads take work items (a chunk of
tiles x a group of output channels, ``split``) one at a time and run, each in its own slot:
the input transform from nhwc or a blocked layout into the n*n GEMM inputs V[n*n][tiles][K],
oneDNN's batched matmul (single-threaded, inside the region) against the group's columns of
the transformed weights U[n*n][K][N] (transformed a few output channels at a time and
prepacked once per group, when the plan is built; the plan keeps the packed copies alone)
and the output transform with bias and the activation back into the input's layout; no
barrier between them, so a thread that loses its core to another process holds up only its
own item. A residual add after the convolution keeps the direct kernel
(it has the add as a post-op); activations other than ReLU / leaky ReLU / Clip run as one
eltwise primitive after the output transform.

Which form a layer takes (``choose``) is a cost model fitted to the benchmark networks'
layers (docs/decisions.md): F(6,3) on large planes, F(4,3) on smaller ones, F(2,3) where the
planes are small and the channels wide (its transformed weights are 1.8x the kernel, F(4,3)'s
4x, and they are read from memory for few tiles), direct where the planes are tiny or the
channels few (the transforms outweigh the products). ``NCNN_C_WINOGRAD=0`` keeps every
layer direct, ``=63`` / ``=43`` / ``=23`` forces that form on every layer it can take (tests,
measurements); ``NCNN_C_WINOGRAD_CHUNK`` / ``NCNN_C_WINOGRAD_GROUP`` set the tiles per chunk
and the output channels per group. ``forms(plan)`` is each
choice of a plan: {layer name: "winograd63" | "winograd43" | "winograd23" | "direct"}.
"""

from __future__ import annotations

import logging
import os
import weakref
from collections.abc import Callable

import numpy as np

from ....layer._conv import G_F43
from ..plan import CSteps, NativePlan, Segment, dnnl_module, no_reference

log = logging.getLogger("ncnn_c")

# the activation layouts the transforms read and write: channels per block of the blocked
# ones; nhwc ("acdb", oneDNN's brgconv on AVX-512) takes the kernels' best width
LANES = {"aBcd16b": 16, "aBcd8b": 8, "acdb": 0}

# G of F(m,3) over the points 0, +-1, +-2, +-1/2 (F(6,3)) / 0, +-1, +-2 (F(4,3)) / 0, +-1
# (F(2,3)) and infinity, scaled to go with the integer-friendly B^T and A^T written out in winograd_kernels.h
G = {
    6: [
        [1.0, 0.0, 0.0],
        [-2 / 9, -2 / 9, -2 / 9],
        [-2 / 9, 2 / 9, -2 / 9],
        [1 / 90, 1 / 45, 2 / 45],
        [1 / 90, -1 / 45, 2 / 45],
        [1 / 45, 1 / 90, 1 / 180],
        [1 / 45, -1 / 90, 1 / 180],
        [0.0, 0.0, 1.0],
    ],
    4: G_F43,  # the numpy Convolution's own
    2: [[1.0, 0.0, 0.0], [0.5, 0.5, 0.5], [0.5, -0.5, 0.5], [0.0, 0.0, 1.0]],
}


# bytes of intermediates per slice of output channels in transform_weights
TRANSFORM_BYTES = 4 << 20


def transform_weights(weight: np.ndarray, m: int, out: np.ndarray | None = None) -> np.ndarray:
    """U = G g G^T of each (output, input) 3x3 kernel of ``weight`` (oc, c, 3, 3): (n*n, c,
    oc) float32, position a*n + k for row a, column k of the n x n tile; written into
    ``out`` (a view of the padded U, say) when given. One product per slice of output
    channels, kron(G, G) (n*n x 9, rounded once from float64) by the slice's kernels (9 x
    channels): 0.1 s for VGG16's 13 layers where per-kernel float64 products took 1.4 s,
    and the intermediates stay small (a whole layer's would set the first extract's peak
    memory)."""
    n = m + 2
    g = np.array(G[m], np.float64)
    gg = np.kron(g, g).astype(np.float32)  # [a*n + k, i*3 + j] = G[a, i] G[k, j]
    oc, c = weight.shape[:2]
    if out is None:
        out = np.empty((n * n, c, oc), np.float32)
    w = np.asarray(weight, np.float32).reshape(oc, c * 9)
    step = max(1, TRANSFORM_BYTES // (4 * n * n * c))
    for o in range(0, oc, step):
        part = w[o : o + step].reshape(-1, 9)  # (step * c, 9)
        out[:, :, o : o + step] = (gg @ part.T).reshape(n * n, -1, c).transpose(0, 2, 1)
    return out


_STEPS = CSteps("_winograd", ("ncnnc_wino_run",), "3x3 convolutions run direct (no Winograd)")
_forms: weakref.WeakKeyDictionary[NativePlan, dict[str, str]] = weakref.WeakKeyDictionary()


def forms(plan: NativePlan) -> dict[str, str]:
    """How each 3x3 stride-1 convolution of ``plan`` runs: {layer name: "winograd63" |
    "winograd43" | "winograd23" | "direct"}."""
    return _forms.setdefault(plan, {})


def kernels():
    """The ``_winograd`` extension's steps (``csteps.CSteps``), or None when it was not built
    (or oneDNN, whose symbols it uses, cannot be loaded)."""
    return _STEPS if _STEPS.loaded() else None


def team_tids(n: int) -> list[int] | None:
    """The kernel thread ids of the calling thread's OpenMP team of ``n`` threads (the pool
    that the plan's steps and oneDNN's primitives run on), the caller's first; None without
    the extension."""
    mod = kernels()
    if mod is None or n < 1:
        return None
    out = mod.new("int[]", n)
    size = int(mod.call("ncnnc_wino_team_tids", n, out))
    return [int(out[i]) for i in range(min(size, n))]


def nhwc_lanes() -> int:
    """Channels per vector on nhwc, where any width works: the widest the CPU has (16 on
    AVX-512, else 8)."""
    mod = kernels()
    return int(mod.call("ncnnc_wino_lanes")) if mod is not None else 8


def forced() -> int | None:
    """``NCNN_C_WINOGRAD``: 0 (never), 63 / 43 / 23 (that form wherever possible), None (the
    rule)."""
    v = os.environ.get("NCNN_C_WINOGRAD", "").strip()
    return {"0": 0, "63": 6, "43": 4, "23": 2}.get(v) if v else None


# the cost model ``choose`` picks by, in multiply-adds of the GEMMs: a weight read from memory
# costs as much as WEIGHT_READ of them (the weights of a layer are out of cache at each
# inference), a value through the input or output transform TRANSFORM (fitted on the 3x3
# layers of VGG16, YOLOv4-tiny, ResNet-50, SqueezeNet(-SSD) and EfficientNetV2 at one
# thread: docs/decisions.md)
WEIGHT_READ = 20
TRANSFORM = 40
# Weights of more than STREAM_BYTES stay in no core's cache from one run to the next: every run
# streams them from memory, which more threads do hardly faster, while the products split.
# So on a small plane with wide channels F(4,3), whose transformed weights are 4x the kernel,
# loses on several threads, and F(2,3) (1.8x the kernel, more tiles to share them) wins at
# every count. A streamed weight costs STREAM_READ multiply-adds, fitted with the four forms
# of eleven such layers at 1 / 2 / 4 / 8 threads (the least summed log of time over the best
# form's; 16-core host, `benchmarks/winograd_layers.py`, docs/decisions.md). 512 -> 512
# channels at 14x14, ms at 1 / 2 / 4 / 8 threads: direct 9.79 / 5.62 / 3.35 / 1.47, F(4,3)
# 7.92 / 4.31 / 3.43 / 1.81, F(2,3) 7.13 / 3.99 / 2.78 / 1.42. The form must not depend on the
# thread count (the same bits at every count).
STREAM_BYTES = 12 << 20
STREAM_READ = 40


def _read(weights: int) -> int:
    """What reading one of a form's ``weights`` (floats) costs, in multiply-adds."""
    return STREAM_READ if 4 * weights > STREAM_BYTES else WEIGHT_READ


def cost(m: int, c: int, oc: int, oh: int, ow: int, lanes: int) -> float:
    """The modelled cost of a 3x3 stride-1 layer: direct (``m`` 0) or Winograd F(m,3)."""
    if not m:
        return 9.0 * c * oc * (oh * ow + _read(9 * c * oc))
    kp, np_ = -(-c // lanes) * lanes, -(-oc // lanes) * lanes
    tiles = -(-oh // m) * -(-ow // m)
    n2 = (m + 2) ** 2
    return n2 * (tiles * (kp * np_ + TRANSFORM * (kp + np_)) + _read(n2 * kp * np_) * kp * np_)


def choose(c: int, oc: int, oh: int, ow: int, lanes: int) -> int:
    """The output tile of the Winograd form for a 3x3 stride-1 layer (6, 4, 2), or 0 (direct):
    the cheapest by ``cost``."""
    return min((0, 6, 4, 2), key=lambda m: cost(m, c, oc, oh, ow, lanes))


# The work of one layer is cut into items (a chunk of tiles x a group of output channels),
# which the threads of its one parallel region take one at a time. Measured on oneDNN 3.2's
# single-threaded brgemm matmul (AVX-512; docs/decisions.md): groups of 32 to 128 channels
# multiply at 150-210 GFLOP/s, 16 at about 130, and an M (tiles x group) of more than about
# 12k floats per point at 20-40; so groups are GROUP_MIN..GROUP_MAX channels and M at most
# M_FLOATS per point. V + M of an item, in a thread's own slot, fit its L2 (CHUNK_BYTES),
# unless the transformed weights are above CHUNK_WEIGHTS (then their reads, repeated per
# chunk, cost more: VGG16's 28x28x512 layer, F(6,3), one thread: 8.6 ms in one chunk, 10.4
# in two of 13 tiles; the loaded 2-core EPYC). An item costs ITEM multiply-adds besides its work (a matmul call, the schedule's hand-out).
CHUNK_BYTES = 2 << 20
CHUNK_WEIGHTS = 4 << 20
GROUP_MIN, GROUP_MAX = 32, 128
M_FLOATS = 8192
ITEM = 100_000
SLACK, BALANCE = 0.03, 4


def split(tiles: int, kp: int, np_: int, n: int, lanes: int, threads: int) -> tuple[int, int]:
    """(tiles per chunk, output channels per group) of a layer run on ``threads`` threads:
    the fastest by a model in multiply-adds like ``cost``'s: the products, each value
    through the input transform once per chunk and thread that takes one of its items and
    through the output transform once, the weights read once per chunk (and V once per group
    where it is larger than the cache), ITEM per item; the
    items go to the threads in rounds of ``threads``. Of the splits within SLACK of the
    fastest, the one of most items. ``NCNN_C_WINOGRAD_CHUNK`` /
    ``NCNN_C_WINOGRAD_GROUP`` set either (0: all; tests, measurements)."""
    blocks = np_ // lanes
    env = {k: os.environ.get(f"NCNN_C_WINOGRAD_{k}", "").strip() for k in ("CHUNK", "GROUP")}
    widths = [np_ // g for g in range(1, blocks + 1) if blocks % g == 0]  # widest first
    if env["GROUP"]:
        want = int(env["GROUP"]) or np_
        widths = [min((w for w in widths if w >= want), default=np_)]
    else:
        good = [w for w in widths if GROUP_MIN <= w <= GROUP_MAX]
        widths = good or [min(widths, key=lambda w: abs(w - GROUP_MIN))]
    found: list[tuple[float, int, int, int]] = []  # (modelled time, items, tiles, channels)
    for ng in widths:
        g = np_ // ng
        if env["CHUNK"]:
            first = -(-tiles // (int(env["CHUNK"]) or tiles))
            counts = range(first, first + 1)
        else:  # the fewest chunks whose V + M fit, and a few more for the threads
            cached = (
                CHUNK_BYTES // (n * n * (kp + ng) * 4) if n * n * kp * np_ * 4 <= CHUNK_WEIGHTS else tiles
            )
            fit = max(1, min(cached, M_FLOATS // ng))
            least = -(-tiles // fit)
            counts = range(least, min(tiles, least + 4 * threads) + 1)
        for chunks in counts:
            tc = -(-tiles // chunks)
            if -(-tiles // tc) != chunks and not env["CHUNK"]:
                continue  # the same chunks as a smaller count
            items = chunks * g
            t = min(threads, items)
            rows = chunks * tc
            per_point = (
                rows * kp * np_ + TRANSFORM * rows * (kp * min(g, t) + np_) + WEIGHT_READ * kp * np_ * chunks
            )
            if n * n * tc * (kp + ng) * 4 > CHUNK_BYTES:  # V out of cache: each group reads it again
                per_point += WEIGHT_READ * rows * kp * g
            time = (n * n * per_point / items + ITEM) * -(-items // t)
            found.append((time, items, tc, ng))
    # on more than one thread, of the splits within SLACK of the fastest the one of most items
    # (up to BALANCE per thread): a thread that loses its core to another process then holds
    # up a smaller part
    fastest = min(f[0] for f in found)
    near = [f for f in found if f[0] <= fastest * (1 + SLACK) and f[1] <= BALANCE * threads and threads > 1]
    _, _, tc, ng = max(near or found, key=lambda f: (f[1], -f[0]) if near else (-f[0], f[3]))
    return tc, ng


def _matmul(mod, dn, src, weights, dst):
    """The batched matmul of an item, created single-threaded (it runs inside the layer's
    parallel region) with a scratchpad the step gives it: the library's would be the
    primitive's own, shared by the threads that run it at once."""
    before = mod.call("ncnnc_wino_set_threads", 1)
    try:
        return dn.matmul(src, weights, dst, user_scratchpad=True)
    finally:
        mod.call("ncnnc_wino_set_threads", before)


# the activations the output transform applies: (ncnnc_wino.act, a0, a1), or None; elu with
# alpha 0 is the plan's ReLU (eltwise.relu_op), another elu is not
_FUSED = {
    "relu": lambda a, b: (1, a, 0.0),
    "elu": lambda a, b: (1, 0.0, 0.0) if a == 0.0 else None,
    "clip_v2": lambda a, b: (2, a, b),
}


def convolution(
    plan: NativePlan,
    layer,
    seg: Segment,
    bottom: int,
    geometry: tuple,
    folded: Callable[[], tuple],
    fold_key: tuple,
    acts: list,
) -> bool:
    """Add the convolution ``layer`` reading ``bottom`` as a Winograd step if it is 3x3,
    stride 1, ungrouped and the rule (or ``NCNN_C_WINOGRAD``) picks it: True when added,
    False when the direct kernel should run. ``geometry`` = (c, h, w, oc, oh, ow, pad_top,
    pad_left); ``folded()`` gives the weights (oc, c, 3, 3) and bias (oc,) or None with the
    folded layers applied (called only when the net has no transformed weights for them yet:
    ``fold_key`` says what else decides their values); ``acts`` the eltwise ops after it (a binary post-op makes it
    decline)."""
    c, h, w, oc, oh, ow, pad_t, pad_l = geometry
    taps = [
        getattr(layer, k)
        for k in ("kernel_w", "kernel_h", "stride_w", "stride_h", "dilation_w", "dilation_h")
    ]
    if taps != [3, 3, 1, 1, 1, 1] or layer.group_count() != 1:
        return False
    force = forced()
    chosen = forms(plan)
    chosen[layer.name] = "direct"
    mod = kernels()
    if force == 0 or mod is None or any(len(a) != 3 for a in acts):
        return False
    d, dn = dnnl_module(), plan.dnnl
    sdims, odims = (1, c, h, w), (1, oc, oh, ow)
    # the layout the direct kernel would read and write: the one the layers around it use
    probe = dn.convolution(
        dn.md(sdims, "any"), dn.md((oc, c, 3, 3), "any"), None, dn.md(odims, "any"),
        (1, 1), (0, 0), (pad_t, pad_l), (oh + 2 - h - pad_t, ow + 2 - w - pad_l),
    )  # fmt: skip
    got = (probe.md("src", sdims), probe.md("dst", odims))
    tag = next((t for t in LANES if (dn.md(sdims, t), dn.md(odims, t)) == got), None)
    if tag is None:
        return False
    lanes = LANES[tag] or nhwc_lanes()
    m = choose(c, oc, oh, ow, lanes) if force is None else force
    if not m:
        return False
    n = m + 2
    tiles_w, tiles_h = -(-ow // m), -(-oh // m)
    tiles = tiles_w * tiles_h
    kp, np_ = -(-c // lanes) * lanes, -(-oc // lanes) * lanes
    fused = (0, 0.0, 0.0)
    rest = list(acts)
    own = _FUSED[rest[0][0]](*rest[0][1:]) if rest and rest[0][0] in _FUSED else None
    if own is not None:
        rest.pop(0)
        fused = own

    after = None
    if rest:  # an activation the output transform does not apply: one eltwise primitive
        omd = dn.md(odims, tag)
        after = dn.eltwise(rest[0][0], omd, omd, rest[0][1], rest[0][2], rest[1:])
        if after.impl.startswith("ref"):
            return False  # (a padded blocked layout) the direct kernel takes them as post-ops

    nhwc = tag == "acdb"
    # the thread count of the layer's steps is OpenMP's while it is built (executor.py)
    slots = max(1, int(mod.call("ncnnc_wino_threads")))
    chunk, ng = split(tiles, kp, np_, n, lanes, slots)
    chunks, groups = -(-tiles // chunk), np_ // ng
    chunk = -(-tiles // chunks)  # the last one padded by fewer tiles (they read zeros, write nothing)

    # the matmul of one item, single-threaded: it runs inside the layer's parallel region
    vmd = dn.md((n * n, chunk, kp), "abc")
    mmd = dn.md((n * n, chunk, ng), "abc")
    mm = _matmul(mod, dn, vmd, dn.md((n * n, kp, ng), "any"), mmd)
    no_reference(mm)
    before = mod.call("ncnnc_wino_set_threads", 1)
    try:
        matmul = mm.primitive()
    finally:
        mod.call("ncnnc_wino_set_threads", before)
    umd = mm.md("weights", (n * n, kp, ng))

    def transformed() -> tuple:
        """(U's columns of each group packed for the matmul, the padded bias, the arrays
        they are over): made once per net for a layout, as the direct kernel's weights are."""
        weight, bias = folded()
        u = np.zeros((n * n, kp, np_), np.float32)
        transform_weights(weight, m, u[:, :c, :oc])
        bias_p = np.zeros(np_, np.float32)
        if bias is not None:
            bias_p[:oc] = bias
        upacked: list = []
        arrays: list = [bias_p]
        for g in range(groups):
            plain = dn.memory(dn.md((n * n, kp, ng), strides=(kp * np_, np_, 1)), u.ctypes.data + 4 * g * ng)
            upacked.append(plan.prepack(plain, umd))
            arrays.append(u if upacked[-1] is plain else plan.buffer_of(upacked[-1]))
        return upacked, bias_p, arrays

    upacked, bias_p, keep_u = plan.shared(("winograd", m, kp, np_, ng, *fold_key), umd, transformed)

    # each slot (thread) has V, M and the matmul's scratchpad in the scratch, its own memories
    # over them (bound by the step at each run) and its own stream
    spmd = mm.md("scratchpad", (0,))
    vfloats = -(-(n * n * chunk * kp) // 16) * 16
    mfloats = -(-(n * n * chunk * ng) // 16) * 16
    slot_floats = vfloats + mfloats + -(-spmd.size // 64) * 16
    vmems = [dn.memory(vmd, None) for _ in range(slots)]
    mmems = [dn.memory(mmd, None) for _ in range(slots)]
    spmems = [dn.memory(spmd, None) for _ in range(slots)] if spmd.size else []
    runners = [d.Runner(dn) for _ in range(slots)]

    def addrs(handles):
        return mod.pointers([dn.address(h) for h in handles])

    ptrs = {
        "u": addrs(m.ptr for m in upacked),
        "streams": addrs(r.stream for r in runners),
        "v": addrs(m.ptr for m in vmems),
        "m": addrs(m.ptr for m in mmems),
        "sp": addrs(m.ptr for m in spmems) if spmems else mod.null,
    }
    geometry_c = dict(
        m=m, lanes=lanes, c=c, h=h, w=w, kp=kp, oc=oc, oh=oh, ow=ow, np=ng, pad_t=pad_t, pad_l=pad_l,
        sb=lanes if nhwc else h * w * lanes, sp=c if nhwc else lanes,
        db=lanes if nhwc else oh * ow * lanes, dp=oc if nhwc else lanes, zero_pad=int(not nhwc),
        tiles_w=tiles_w, tile0=0, tiles=chunk, act=fused[0], a0=fused[1], a1=fused[2],
        bias=mod.cast("const float *", bias_p.ctypes.data),
    )  # fmt: skip
    ctx = mod.new(
        "ncnnc_wino_layer *",
        dict(
            w=geometry_c, chunks=chunks, groups=groups, slots=slots, vfloats=vfloats, mfloats=mfloats,
            slot_floats=slot_floats,
            matmul=mod.cast("void *", dn.address(matmul)), **ptrs,
        ),
    )  # fmt: skip
    fn = mod.address("ncnnc_wino_run")
    keep = (ctx, bias_p, matmul, upacked, vmems, mmems, spmems, runners, ptrs, keep_u)
    step = d.Kernel(fn, mod.address(ctx), keep)

    want = dn.md(sdims, tag)
    src = plan.as_dims(seg, plan.value(seg, bottom, want), sdims)
    src = plan.as_md(seg, src, want)
    top_shape = plan.shape(layer.tops[0])
    scratch = plan.new_value(dn.md((slots * slot_floats,), "a"), top_shape)
    raw = (
        plan.new_value(dn.md(odims, tag), top_shape)
        if after is not None
        else plan.top(layer, dn.md(odims, tag))
    )
    src.last = plan.step
    plan.add(
        seg, step, [(d.ARG_SRC, plan.mem(src)), (d.ARG_DST, plan.mem(raw)), (d.ARG_SRC_1, plan.mem(scratch))]
    )
    if after is not None:
        plan.run1(seg, after, raw, plan.top(layer, raw.md))
    chosen[layer.name] = f"winograd{m}3"
    log.debug(
        "native plan: %r as Winograd F(%d,3): %d -> %d channels, %d tiles in %d chunks x %d groups, %d threads",
        layer.name, m, c, oc, tiles, chunks, groups, slots,
    )  # fmt: skip
    return True
