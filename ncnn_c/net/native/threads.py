"""How many OpenMP threads a native plan step runs with: all of ``opt.num_threads``, or one
for a layer too small to be worth a fork and join.

A network of many tiny layers (FastestDet, BlazeFace, yolo-fastest) ran slower at two threads
than at one: waking the pool's workers and splitting a 10 µs layer costs more than the split
saves. So each layer's steps get a count when the plan is built, from the layer's work
(``layer_work``: its multiply-adds plus ``MACS_PER_ELEMENT`` per value it reads or writes):
below ``MIN_WORK`` one thread, else the plan's. Only those two: libgomp's pool ends the workers
a smaller team leaves out and starts them again for the next larger one (measured here: a
4-thread region after a 2-thread one costs a thread creation each time), while a one-thread
step opens no parallel region at all and leaves the pool as it is. The numbers are fitted with
``python -m ncnn_c.net.native.threads_fit``: per-layer times of plans built with every step at
one thread and at the full count (docs/design.md, threads).

``NCNN_C_STEP_THREADS=0`` turns the rule off (every step at ``opt.num_threads``);
``NCNN_C_STEP_WORK=<units>`` sets ``MIN_WORK`` (the fit runs with it).
"""

from __future__ import annotations

import os

from ...layer import Layer

# work units below which a layer's steps run on one thread: about 16 µs on one core of the
# 2-core EPYC (docs/design.md, threads)
MIN_WORK = 1_500_000
# one value read or written counts as this many multiply-adds: one-thread step times of six
# networks' 300 layers fit 8.7 ps per multiply-add, 0.10 ns per value and 3.4 µs per layer
MACS_PER_ELEMENT = 12

_CONV = ("Convolution", "ConvolutionDepthWise", "Convolution1D", "Convolution3D")
_DECONV = ("Deconvolution", "DeconvolutionDepthWise")


def enabled() -> bool:
    return os.environ.get("NCNN_C_STEP_THREADS", "1") != "0"


def min_work() -> int:
    try:
        return int(os.environ.get("NCNN_C_STEP_WORK", MIN_WORK))
    except ValueError:
        return MIN_WORK


def elements(shape: tuple | None) -> int:
    """Values in a blob of a recorded Mat shape (``plan.shape_of``)."""
    if shape is None:
        return 0
    dims, w, h, d, c, _es, _ep = shape
    return (w, w * h, w * h * c, w * h * d * c)[dims - 1] if 1 <= dims <= 4 else 0


def _plane(shape: tuple | None) -> int:
    """Values per channel of a blob."""
    if shape is None:
        return 0
    dims, w, h, d, _c, _es, _ep = shape
    return (1, w, w * h, w * h * d)[dims - 1] if 1 <= dims <= 4 else 0


def layer_work(layer: Layer, shapes: dict[int, tuple]) -> int:
    """A layer's work in multiply-adds: its products (convolutions, inner products, Gemm,
    pooling windows) plus ``MACS_PER_ELEMENT`` per value of its inputs, outputs and weights
    (an inner product of one row is a pass over its weights)."""
    ins = [shapes.get(b) for b in layer.bottoms]
    outs = [shapes.get(t) for t in layer.tops]
    t = layer.type
    wds = int(getattr(layer, "weight_data_size", 0) or 0)
    moved = sum(elements(s) for s in ins) + sum(elements(s) for s in outs) + wds
    nout = int(getattr(layer, "num_output", 0) or 0)
    macs = 0
    if t in _CONV and nout > 0 and outs:
        macs = elements(outs[0]) * wds // nout
    elif t in _DECONV and ins:
        macs = _plane(ins[0]) * wds
    elif t == "InnerProduct" and ins and ins[0] is not None:
        rows = ins[0][2] if ins[0][0] == 2 else 1
        macs = rows * wds
    elif t == "Gemm" and ins and outs and ins[0] is not None:
        macs = elements(outs[0]) * int(ins[0][1])  # (M, K) x (K, N): K is A's width
    elif t == "Pooling" and ins and outs:
        if getattr(layer, "global_pooling", 0):
            macs = elements(ins[0])
        else:
            macs = elements(outs[0]) * int(getattr(layer, "kernel_w", 1)) * int(getattr(layer, "kernel_h", 1))
    return macs + MACS_PER_ELEMENT * moved


def choose(work: int, num_threads: int) -> int:
    """The thread count of a step of ``work`` units in a plan of ``num_threads``."""
    n = max(1, int(num_threads))
    if n == 1 or not enabled():
        return n
    return 1 if work < min_work() else n


def export_work(shape: tuple) -> int:
    """The work of a copy of a blob out of (or into) a native segment."""
    return 2 * MACS_PER_ELEMENT * elements(shape)
