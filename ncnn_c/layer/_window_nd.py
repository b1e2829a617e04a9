"""N-D pieces the 1-D / 3-D window layers (Convolution3D, ConvolutionDepthWise1D/3D,
Deconvolution1D/3D and their depthwise forms, Pooling1D/3D) share on top of ``_geometry``:
the constant border of any number of spatial axes (``copy_make_border`` pads the last two
only), the strided kernel taps, and the blob creation from a numpy shape.

Shapes are numpy's: ``(channels, *spatial)`` with the spatial axes outermost first.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence

import numpy as np

from ..mat import Mat


def pad_nd(x: np.ndarray, pads: Sequence[int], value: float) -> np.ndarray:
    """x bordered on its trailing ``len(pads) // 2`` axes with ``value`` (flat (before, after)
    pads, negative ones crop); x itself when there is nothing to do."""
    if not any(pads):
        return x
    lead = x.ndim - len(pads) // 2
    crop = tuple(
        slice(max(0, -pads[2 * i]), x.shape[lead + i] - max(0, -pads[2 * i + 1]))
        for i in range(len(pads) // 2)
    )
    x = x[(slice(None),) * lead + crop]
    widths = [(0, 0)] * lead + [(max(0, pads[2 * i]), max(0, pads[2 * i + 1])) for i in range(len(pads) // 2)]
    return np.pad(x, widths, mode="constant", constant_values=np.float32(value))


def taps(
    xp: np.ndarray, kernel: Sequence[int], dilation: Sequence[int], stride: Sequence[int], out: Sequence[int]
) -> Iterator[np.ndarray]:
    """The strided view of ``xp`` (channels, *spatial) each kernel tap reads, taps in ncnn's
    order (outermost axis first)."""
    for offs in itertools.product(*(range(k) for k in kernel)):
        yield xp[
            (slice(None),)
            + tuple(
                slice(o * d, o * d + s * (n - 1) + 1, s)
                for o, d, s, n in zip(offs, dilation, stride, out, strict=True)
            )
        ]


def create_top(top: Mat, shape: Sequence[int], opt) -> np.ndarray | None:
    """``top`` created fp32 with numpy ``shape``; its array, or None when allocation failed."""
    top.create(*reversed([int(s) for s in shape]), elemsize=4, elempack=1, allocator=opt.blob_allocator)
    if top.empty():
        return None
    return top.tensor()


def adaptive_reduce(x: np.ndarray, axis: int, out: int, is_max: bool) -> np.ndarray:
    """``axis`` of x reduced to ``out`` cells over ncnn's adaptive spans [floor(i*n/out),
    ceil((i+1)*n/out)): max, or sum / span length."""
    n = x.shape[axis]
    i = np.arange(out)
    start, stop = n * i // out, -(-n * (i + 1) // out)
    shape = [1] * x.ndim
    shape[axis] = out
    acc: np.ndarray | None = None
    for k in range(int((stop - start).max())):
        # past its span a cell re-reads its last element: harmless for max, masked for sum
        tap = np.take(x, np.minimum(start + k, stop - 1), axis=axis)
        if not is_max:
            tap = tap * (start + k < stop).reshape(shape)
        if acc is None:
            acc = tap.copy()
        elif is_max:
            np.maximum(acc, tap, out=acc)
        else:
            acc += tap
    assert acc is not None
    if not is_max:
        acc /= (stop - start).astype(np.float32).reshape(shape)
    return acc
