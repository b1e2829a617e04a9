"""Shared machinery of the one-blob elementwise and per-channel layers (activations, Scale ...).

Not a layer type itself (no ncnn type has this name). ``Elementwise`` turns one method,
``apply(x, out, *coeffs)``, into both ncnn forwards: ``forward`` writes ``f(bottom)`` straight
into a new top (no clone first), ``forward_inplace`` passes the same array as ``x`` and ``out``.
So ``apply`` must read ``x`` fully before it first writes ``out``, or only read ``out`` after.

Blobs without channel padding are handed over as one flat array (in cache-sized chunks),
which numpy runs faster than a strided (c, h, w) view. ``per_channel`` layers get an
(n, rest) view over ncnn's channel axis instead, and ``channel_coeffs`` supplies their
per-channel operands, already shaped to broadcast against it.
"""

from __future__ import annotations

import logging

import numpy as np

from . import Layer, load_weight, weight_error

log = logging.getLogger("ncnn_c")

# elements per apply call on a flat blob: a few float32 temporaries of this size fit in L2
CHUNK = 32768


_MINUS_ONE = np.float32(-1.0)


def negate(x: np.ndarray, out: np.ndarray) -> np.ndarray:
    """``out = -x``. numpy 2.4's float32 ``np.negative`` writes wrong values into an output
    strided by 4 elements (16 bytes: a Mat of 1x1 channels with cstep 4); the multiply loop
    has no such bug, and -1 * x is exact (signed zeros and nan included)."""
    return np.multiply(x, _MINUS_ONE, out=out)


def flat_view(t: np.ndarray) -> np.ndarray:
    """``t`` as one flat view when its memory allows, else ``t`` itself (never a copy)."""
    try:
        return t.reshape(-1, copy=False)
    except ValueError:
        return t


def channel_view(t: np.ndarray) -> np.ndarray:
    """``t`` as an (n, rest) view over ncnn's per-channel axis, else ``t`` itself (never a copy).

    ncnn scales 1-D blobs per element, 2-D per row and 3-D / 4-D per channel: in the numpy
    shapes (w,), (h, w), (c, h, w), (c, d, h, w) that is always the first axis. Channel
    padding leaves each channel contiguous, so the inner axes still merge.
    """
    try:
        return t.reshape(t.shape[0], -1, copy=False)
    except ValueError:
        return t


def padded_flat(m) -> np.ndarray | None:
    """A 3-D / 4-D fp32 blob's storage as one flat float32 view, channel padding included; None
    for other blobs. An elementwise function over it touches the padding too, which nobody
    reads, and costs one contiguous pass instead of a strided walk over small channels."""
    if m.dims < 3 or m.elempack != 1 or m.elemsize != 4:
        return None
    n = m.cstep * m.c
    raw = m.raw()
    if raw.size < n * 4:
        return None
    return raw[: n * 4].view(np.float32)


class Elementwise(Layer):
    """A one-blob, in-place capable layer defined by ``apply(x, out, *coeffs)`` (module doc)."""

    # per-channel layers get the (n, rest) view of ncnn's channel axis instead of a flat one
    per_channel = False

    def __init__(self) -> None:
        super().__init__()
        self.one_blob_only = True
        self.support_inplace = True

    def apply(self, x: np.ndarray, out: np.ndarray, *coeffs) -> int:
        raise NotImplementedError

    def channel_coeffs(self, m) -> tuple | None:
        """Per-channel operands of ``apply`` for blob ``m``: 1-D arrays of one value per index of
        ncnn's channel axis (``axis0_size``), or scalars. None (after logging why) when the
        weights do not fit the blob."""
        return ()

    def _view(self, t: np.ndarray) -> np.ndarray:
        return channel_view(t) if self.per_channel else flat_view(t)

    def _run(self, src: np.ndarray, dst: np.ndarray, coeffs: tuple) -> int:
        # 1-D operands broadcast along axis 0 of whichever view apply gets
        shaped = [c.reshape((-1,) + (1,) * (src.ndim - 1)) if np.ndim(c) == 1 else c for c in coeffs]
        # overflow / domain warnings are ncnn's results too (inf, nan), not errors
        with np.errstate(all="ignore"):
            if src.ndim != 1 or src.size <= CHUNK:
                return self.apply(src, dst, *shaped)
            # multi-pass formulas stay in cache when run a chunk at a time (about 2x faster)
            for i in range(0, src.size, CHUNK):
                ret = self.apply(src[i : i + CHUNK], dst[i : i + CHUNK], *shaped)
                if ret != 0:
                    return ret
            return 0

    def forward_with(self, bottom, top, opt, coeffs: tuple) -> int:
        """``top = f(bottom)`` with the given per-channel operands, no clone in between."""
        top.create_like(bottom, allocator=opt.blob_allocator)
        if top.empty():
            return -100
        src, dst = self._view(bottom.tensor()), self._view(top.tensor())
        if src.ndim > 1 and self._padded_ok(coeffs):
            psrc, pdst = padded_flat(bottom), padded_flat(top)
            if psrc is not None and pdst is not None and psrc.size == pdst.size:
                src, dst = psrc, pdst
        if src.shape != dst.shape:  # one flat, one not: keep both in the ncnn shape
            src, dst = bottom.tensor(), top.tensor()
        return self._run(src, dst, coeffs)

    def forward_inplace_with(self, bottom_top, coeffs: tuple) -> int:
        x = self._view(bottom_top.tensor())
        if x.ndim > 1 and self._padded_ok(coeffs):
            flat = padded_flat(bottom_top)
            if flat is not None:
                x = flat
        return self._run(x, x, coeffs)

    def _padded_ok(self, coeffs: tuple) -> bool:
        # per-channel operands need the channel axis; scalars do not
        return not self.per_channel and all(np.ndim(c) == 0 for c in coeffs)

    def forward(self, bottom, top, opt) -> int:
        coeffs = self.channel_coeffs(bottom)
        if coeffs is None:
            return -1
        return self.forward_with(bottom, top, opt, coeffs)

    def forward_inplace(self, bottom_top, opt) -> int:
        coeffs = self.channel_coeffs(bottom_top)
        if coeffs is None:
            return -1
        return self.forward_inplace_with(bottom_top, coeffs)


def axis0_size(m) -> int:
    """The length of ncnn's per-channel axis of a blob (w for 1-D, h for 2-D, c otherwise)."""
    return m.w if m.dims == 1 else m.h if m.dims == 2 else m.c


def per_axis0(layer, m, values: np.ndarray, what: str) -> np.ndarray | None:
    """The first ``axis0_size(m)`` of ``values``; None (logged) when there are fewer."""
    need = axis0_size(m)
    if len(values) < need:
        log.error(
            "%s %r: %d %s for a %d-D blob of %d channels",
            layer.type,
            layer.name,
            len(values),
            what,
            m.dims,
            need,
        )
        return None
    return values[:need]


def load_vector(layer, mb, n: int, what: str) -> np.ndarray | None:
    """``n`` raw fp32 weights (``mb.load(n, 1)``) as a float32 array; None on failure, the
    reason naming ``what`` (weight_error)."""
    if n < 1:
        weight_error(layer, mb, f"{what} size {n} must be positive")
        return None
    m = load_weight(layer, mb, what, n, 1)
    if m.empty():
        return None
    if m.tensor().size < n:
        weight_error(layer, mb, f"could not load {n} {what} values ({m.tensor().size} given)")
        return None
    return np.array(flat_view(m.tensor())[:n], dtype=np.float32)
