"""Geometry of the sliding-window layers (the Convolution and Pooling families), declared once
for their CPU and GPU forms, and the pieces of those layers that are not geometry but were
repeated with it: the constant border copy and the weight + bias loading.

Sizes, kernels, dilations and strides run over the spatial axes outermost first: ``(w,)`` for
the 1-D layers, ``(h, w)`` for 2-D, ``(d, h, w)`` for 3-D. Pads are flat (before, after)
pairs in the same order: ``(left, right)``, ``(top, bottom, left, right)``, ``(front, behind,
top, bottom, left, right)``.

A layer declares its axes once (``Window.AXES``); its params ``kernel_<axis>``,
``dilation_<axis>``, ``stride_<axis>`` and the pads named in ``PAD_NAMES`` then give
``pads()`` and ``output_shape()``, which the CPU forward and the GPU forward_vk both call.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from typing import Any, ClassVar

import numpy as np

from ..mat import Mat
from . import Layer, Param, load_weight, workspace

log = logging.getLogger("ncnn_c")

# ncnn's "compute the pads from the input size" markers for pad params
PAD_SAME_UPPER = -233
PAD_SAME_LOWER = -234

# the (before, after) pad params of each spatial axis
PAD_NAMES = {"d": ("pad_front", "pad_behind"), "h": ("pad_top", "pad_bottom"), "w": ("pad_left", "pad_right")}


# The param ids of a 2-D sliding window: output count, kernel, dilation, stride, pads (Fold,
# Unfold and the weighted layers below).
WINDOW_GEOMETRY_PARAMS: tuple[Param, ...] = (
    Param(0, "num_output", 0),
    Param(1, "kernel_w", 0),
    Param(2, "dilation_w", 1),
    Param(3, "stride_w", 1),
    Param(4, "pad_left", 0),
    Param(11, "kernel_h", "kernel_w"),
    Param(12, "dilation_h", "dilation_w"),
    Param(13, "stride_h", "stride_w"),
    Param(14, "pad_top", "pad_left"),
    Param(15, "pad_right", "pad_left"),
    Param(16, "pad_bottom", "pad_top"),
)
# ... and of the weighted window layers (Convolution, Deconvolution, their 3-D and deformable
# forms): those plus bias, weight size and the fused activation, in ncnn's id order (the
# depthwise forms insert ``group`` by position). Each layer adds its own ids after these.
WINDOW_PARAMS: tuple[Param, ...] = (
    *WINDOW_GEOMETRY_PARAMS[:5],
    Param(5, "bias_term", 0),
    Param(6, "weight_data_size", 0),
    Param(9, "activation_type", 0),
    Param(10, "activation_params", kind="floats"),
    *WINDOW_GEOMETRY_PARAMS[5:],
)


def kernel_extent(kernel: int, dilation: int = 1) -> int:
    """How many input cells one kernel window spans."""
    return dilation * (kernel - 1) + 1


def same_pads(size: int, extent: int, stride: int, upper: bool) -> tuple[int, int]:
    """(before, after) pads that make out = ceil(size / stride); SAME_UPPER puts the odd one after.

    A kernel smaller than the stride gives a negative total, split with C's truncating
    division as ncnn splits it (-3 -> -1 and -2)."""
    total = extent + (size - 1) // stride * stride - size
    half = int(total / 2)
    return (half, total - half) if upper else (total - half, half)


def same_padding(
    sizes: Sequence[int], extents: Sequence[int], strides: Sequence[int], upper: bool
) -> tuple[int, ...]:
    """ncnn's SAME padding (pads -233 / -234, Pooling's pad_mode 2 / 3) of an input, as flat pads.

    ncnn pads only when some axis's total comes out positive. Its border copy crops negative
    rows at the bottom whichever side they belong to (negative columns where they are), so a
    negative top moves to the bottom here: code that indexes the input with these offsets (the
    GPU shaders) then reads what the CPU copy holds."""
    pads: list[int] = []
    for n, e, s in zip(sizes, extents, strides, strict=True):
        pads += same_pads(n, e, s, upper)
    if all(p <= 0 for p in pads):
        return (0,) * len(pads)
    if len(sizes) >= 2 and pads[-4] < 0:
        pads[-4], pads[-3] = 0, pads[-3] + pads[-4]
    return tuple(pads)


def resolve_pads(
    sizes: Sequence[int], extents: Sequence[int], strides: Sequence[int], explicit: Sequence[int]
) -> tuple[int, ...]:
    """The pads a Convolution-like layer borders its input with (negative values crop): its
    explicit pad params when one is positive, SAME when all of them are -233 (or all -234),
    none otherwise."""
    if any(p > 0 for p in explicit):
        return tuple(explicit)
    for mode in (PAD_SAME_UPPER, PAD_SAME_LOWER):
        if all(p == mode for p in explicit):
            return same_padding(sizes, extents, strides, mode == PAD_SAME_UPPER)
    return (0,) * len(explicit)


def output_shape(
    sizes: Sequence[int], extents: Sequence[int], strides: Sequence[int], pads: Sequence[int]
) -> tuple[int, ...]:
    """Window positions per axis over the padded input; a value <= 0 means the padded input is
    smaller than the kernel (floor division: ncnn's C division would make one output there and
    read it from past the blob)."""
    return tuple(
        (n + pads[2 * i] + pads[2 * i + 1] - e) // s + 1
        for i, (n, e, s) in enumerate(zip(sizes, extents, strides, strict=True))
    )


def transposed_shape(
    sizes: Sequence[int], extents: Sequence[int], strides: Sequence[int], output_pads: Sequence[int]
) -> tuple[int, ...]:
    """The full (uncropped) output of a transposed convolution (Deconvolution) per axis."""
    return tuple(
        (n - 1) * s + e + op for n, e, s, op in zip(sizes, extents, strides, output_pads, strict=True)
    )


def show(sizes: Sequence[int]) -> str:
    """Spatial sizes as ncnn prints them, innermost first: w x h (x d)."""
    return "x".join(str(v) for v in reversed(sizes))


class Window(Layer):
    """A layer sliding a kernel window over the spatial axes ``AXES`` (outermost first)."""

    AXES: ClassVar[str] = "hw"

    def _per_axis(self, name: str, default: int = 1) -> tuple[int, ...]:
        return tuple(int(getattr(self, f"{name}_{a}", default)) for a in self.AXES)

    def explicit_pads(self) -> tuple[int, ...]:
        """The pad params, flat (before, after) per axis."""
        return tuple(int(getattr(self, p)) for a in self.AXES for p in PAD_NAMES[a])

    def extents(self, kernel: Sequence[int] | None = None) -> tuple[int, ...]:
        """Window extent per axis (dilation included) of the layer's kernel, or of ``kernel``
        (a dynamic weight blob's)."""
        kernel = self._per_axis("kernel") if kernel is None else kernel
        return tuple(kernel_extent(k, d) for k, d in zip(kernel, self._per_axis("dilation"), strict=True))

    def pads(self, size: Sequence[int], kernel: Sequence[int] | None = None) -> tuple[int, ...]:
        """Flat (before, after) pads (negative values crop) for an input of spatial ``size``."""
        return resolve_pads(size, self.extents(kernel), self._per_axis("stride"), self.explicit_pads())

    def output_shape(
        self, size: Sequence[int], pads: Sequence[int], kernel: Sequence[int] | None = None
    ) -> tuple[int, ...] | None:
        """Output spatial shape for an input of ``size`` bordered by ``pads``; None, with the
        reason logged, when the padded input is smaller than the kernel."""
        extents = self.extents(kernel)
        out = output_shape(size, extents, self._per_axis("stride"), pads)
        if min(out) <= 0:
            padded = [n + pads[2 * i] + pads[2 * i + 1] for i, n in enumerate(size)]
            log.error(
                "%s %r: input %s padded to %s is smaller than the kernel (extent %s)",
                self.type or type(self).__name__,
                self.name,
                show(size),
                show(padded),
                show(extents),
            )
            return None
        return out


class WeightBias(Layer):
    """A layer whose model holds ``weight_data_size`` weights, then ``num_output`` biases when
    ``bias_term`` (none with ``dynamic_weight``: they come as input blobs), then a quantized
    layer's int8 scales (``load_scales``), as Convolution, Deconvolution and InnerProduct load
    theirs. ``_prepare()`` derives the forward's arrays
    once they are loaded.

    Parked weights: the native plan keeps its own copy of the weights in the layout its
    primitive wants, and ncnn keeps only its transformed copy too, so a layer whose copy the
    plan made exactly (a reorder) lets its own go (``park_weights``: the largest part of a
    network's memory, held twice otherwise). Reading ``weight_data`` again (a numpy forward,
    the build of a plan for another input shape) restores them, bit for bit, from that copy;
    ``DERIVED`` names the arrays ``_prepare`` derives from them, which go too.

    Other threads: ncnn shares a layer's weights read-only between the threads extracting
    from one net, and a plan built on one of them parks weights that the others are reading.
    So the weights, the restore and the derived arrays change together, under the layer's
    lock (parking, restoring, loading, ``_prepare``), and a forward takes its arrays in one
    read under that lock (``_derived``): a reader sees the whole weights or restores them,
    never a park half done, and a park cannot take an array from a forward that has it (the
    forward's references keep it alive to its end)."""

    DERIVED: ClassVar[tuple[str, ...]] = ()

    def __init__(self) -> None:
        super().__init__()
        # re-entrant: _prepare() reads weight_data under it
        self._weights_lock = threading.RLock()
        self._restore: Callable[[], Mat] | None = None
        self.weight_data = Mat()
        self.bias_data = Mat()

    @property
    def weight_data(self) -> Mat:
        with self._weights_lock:
            if self._restore is not None:
                self._unpark()
            return self._weight_data

    @weight_data.setter
    def weight_data(self, m: Mat) -> None:
        with self._weights_lock:
            self._weight_data = m
            self._restore = None

    def park_weights(self, restore: Callable[[], Mat]) -> None:
        """Let the weights go; ``restore()`` gives them back (a fresh Mat) when read again."""
        with self._weights_lock:
            self._weight_data = Mat()
            for name in self.DERIVED:
                setattr(self, name, None)
            self._restore = restore

    def weights_parked(self) -> bool:
        """Whether the weights are parked (only fp32 ones are): asked without restoring them."""
        return self._restore is not None

    def _unpark(self) -> None:
        """Restore parked weights and derive the forward's arrays again (the lock held)."""
        restore = self._restore
        assert restore is not None
        self._weight_data = restore()  # a failed restore leaves the layer parked
        self._restore = None
        self._prepare()

    def _derived(self, *names: str) -> tuple[Any, ...]:
        """The arrays ``names`` that ``_prepare`` derives, read together under the lock: parked
        weights are restored first, and a layer with no ``names[0]`` yet is prepared."""
        with self._weights_lock:
            if self._restore is not None:
                self._unpark()
            elif getattr(self, names[0]) is None:
                self._prepare()
            return tuple(getattr(self, n) for n in names)

    def load_model(self, mb) -> int:
        if getattr(self, "dynamic_weight", 0):
            return 0
        self.weight_data = load_weight(self, mb, "weight_data", self.weight_data_size, 0)
        if self.weight_data.empty():
            return -100
        if self.bias_term:
            self.bias_data = load_weight(self, mb, "bias_data", self.num_output, 1)
            if self.bias_data.empty():
                return -100
        if self.load_scales(mb) != 0:
            return -100
        with self._weights_lock:
            self._prepare()
        return 0

    def load_scales(self, mb) -> int:
        """The int8 scales that follow the bias in the model (the quantized layers); 0 or -100."""
        return 0

    def _prepare(self) -> None:
        raise NotImplementedError


def copy_make_border(
    x: np.ndarray, top: int, bottom: int, left: int, right: int, value: float, opt=None
) -> tuple[object, np.ndarray]:
    """Pad the last two axes of x with a constant; negative pads crop. Returns ``(keep, padded)``
    (x itself when all pads are 0); the copy comes from ``opt.workspace_allocator`` (see workspace()).

    Negative pads arise from SAME padding when the kernel is smaller than the stride. ncnn
    copies rows from the first one whatever ``top`` is, so a negative top drops rows at the
    bottom; we do the same. (A negative left is a true crop at the left in ncnn for narrow
    rows; for rows of 12+ floats ncnn writes out of bounds, which nobody should rely on.)
    """
    if top == bottom == left == right == 0:
        return None, x
    h, w = x.shape[-2:]
    # cropping first keeps the allocation to the final size
    x = x[..., : h - max(0, -top) - max(0, -bottom), max(0, -left) : w - max(0, -right)]
    top, bottom, left, right = (max(0, p) for p in (top, bottom, left, right))
    h, w = x.shape[-2:]
    keep, out = workspace(opt, x.shape[:-2] + (h + top + bottom, w + left + right))
    if x.ndim == 3:
        from .._native.cpu import cpu_kernels

        native = cpu_kernels()
        threads = max(1, int(getattr(opt, "num_threads", 1) or 1))
        if native is not None and native.pad(x, out, top, left, value, threads):
            return keep, out
    out.fill(value)
    out[..., top : top + h, left : left + w] = x
    return keep, out
