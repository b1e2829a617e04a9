"""CopyTo: the first bottom ("self") with the second ("src") pasted into it at an offset.

The offset is either ``woffset``/``hoffset``/``doffset``/``coffset`` (params 0, 1, 13, 2) or,
when ``starts`` (param 9) is given, numpy-style: ``starts[i]`` along ``axes[i]`` (param 11;
by default the leading axes in order), negative counting from the end of self's axis, -233
meaning 0. ``src`` may have fewer dims than self; its w, h, d, c fields line up with self's
(so a 3-D src in a 4-D self is one depth plane per channel). A ``src`` of self's exact shape
is the output as it is.

A ``src`` that does not fit at the offset is pasted as ncnn's pointer walk does (rows run on
into the next row; see ``_spill``) as long as it stays inside self's storage; beyond that
ncnn writes out of bounds and we refuse, as we do a ``src`` with more dims than self, an
axis outside self, and fewer starts than axes.
"""

from __future__ import annotations

import logging

import numpy as np

from . import Layer, Param

log = logging.getLogger("ncnn_c")


class CopyTo(Layer):
    PARAMS = (
        Param(0, "woffset", 0),
        Param(1, "hoffset", 0),
        Param(13, "doffset", 0),
        Param(2, "coffset", 0),
        Param(9, "starts", kind="ints"),
        Param(11, "axes", kind="ints"),
    )
    woffset: int
    hoffset: int
    doffset: int
    coffset: int
    starts: np.ndarray
    axes: np.ndarray

    def __init__(self) -> None:
        super().__init__()
        self.one_blob_only = False
        self.support_inplace = False

    def check_params(self) -> int:
        if self.starts.size and self.axes.size > self.starts.size:
            log.error("CopyTo %r: %d axes but only %d starts", self.name, self.axes.size, self.starts.size)
            return -1
        if self.axes.size > 4:
            log.error("CopyTo %r: axes has %d entries, at most 4", self.name, self.axes.size)
            return -1
        return 0

    def offsets(self, shape: tuple[int, ...]) -> list[int] | None:
        """Offsets along self's numpy axes (``shape``); None (logged) when they cannot be read."""
        dims = len(shape)
        if not self.starts.size:
            by_axis = {1: [self.woffset], 2: [self.hoffset, self.woffset]}
            by_axis[3] = [self.coffset, self.hoffset, self.woffset]
            by_axis[4] = [self.coffset, self.doffset, self.hoffset, self.woffset]
            return by_axis[dims]
        axes = self.axes.tolist() or list(range(dims))
        if len(axes) > self.starts.size:
            log.error("CopyTo %r: %d starts for a %d-D blob", self.name, self.starts.size, dims)
            return None
        offs = [0] * dims
        for a, start in zip(axes, self.starts.tolist(), strict=False):
            if not -dims <= a < dims:
                log.error("CopyTo %r: axis %d out of range for a %d-D blob", self.name, a, dims)
                return None
            if start == -233:
                start = 0
            offs[a % dims] = start if start >= 0 else shape[a % dims] + start
        return offs

    def forward(self, bottoms, tops, opt) -> int:
        if len(bottoms) != 2:
            log.error("CopyTo %r: needs 2 bottoms (self, src), got %d", self.name, len(bottoms))
            return -1
        self_blob, src = bottoms
        dims = self_blob.dims
        if not 1 <= dims <= 4 or self_blob.elempack != 1 or src.elempack != 1:
            log.error("CopyTo %r: needs 1-4 D blobs of elempack 1, got dims %d", self.name, dims)
            return -1
        fields = (dims, self_blob.w, self_blob.h, self_blob.d, self_blob.c)
        if (src.dims, src.w, src.h, src.d, src.c) == fields:
            tops[0].share_from(src)
            return 0
        if not 1 <= src.dims <= dims or src.elemsize != self_blob.elemsize:
            log.error(
                "CopyTo %r: src (dims %d, elemsize %d) does not fit self (dims %d, elemsize %d)",
                self.name, src.dims, src.elemsize, dims, self_blob.elemsize,
            )  # fmt: skip
            return -1
        x = self_blob.tensor()
        offs = self.offsets(x.shape)
        if offs is None:
            return -1
        # src's (c, d, h, w) fields, the ones self's rank uses (the others are 1)
        c, d, h, w = src.c, src.d, src.h, src.w
        s = src.tensor().reshape({1: (w,), 2: (h, w), 3: (c, h, w), 4: (c, d, h, w)}[dims])
        top = tops[0]
        top.clone_from(self_blob, opt.blob_allocator)
        if top.empty():
            return -100
        if all(o >= 0 and o + n <= size for o, n, size in zip(offs, s.shape, x.shape, strict=True)):
            top.tensor()[tuple(slice(o, o + n) for o, n in zip(offs, s.shape, strict=True))] = s
            return 0
        return self._spill(top, s, offs)

    def _spill(self, top, s: np.ndarray, offs: list[int]) -> int:
        """Paste ``s`` the way ncnn's pointer walk does when it does not fit: each src row
        goes to row ``hoffset + i`` of its plane at column ``woffset``, so a row longer than
        what is left of self's row runs on into the next row (a last row into the next plane,
        the channel padding or the next channel), later writes winning. ncnn's own tests paste
        such rows. Anything before or past self's storage is refused: ncnn corrupts memory."""
        w, h, d = top.w, top.h, top.d
        # (c, d, h, w) of src and of the offsets (s has self's rank; a 3-D blob has no depth)
        if s.ndim == 3:
            shape4, offs4 = (s.shape[0], 1, *s.shape[1:]), [offs[0], 0, *offs[1:]]
        else:
            shape4, offs4 = (1,) * (4 - s.ndim) + s.shape, [0] * (4 - s.ndim) + offs
        c_off, d_off, h_off, w_off = offs4
        q, z, i, j = np.meshgrid(*(np.arange(n) for n in shape4), indexing="ij")
        flat = (q + c_off) * top.cstep + (z + d_off) * (w * h) + (i + h_off) * w + (j + w_off)
        flat = flat.ravel()
        if flat.size and (flat.min() < 0 or flat.max() >= top.cstep * top.c):
            log.error(
                "CopyTo %r: src of shape %s at offsets %s lies outside self (w %d h %d d %d c %d)",
                self.name, s.shape, offs, w, h, d, top.c,
            )  # fmt: skip
            return -1
        # ncnn writes in this (C) order: where two writes meet, the later one stays
        last = flat.size - 1 - np.unique(flat[::-1], return_index=True)[1]
        storage = top.raw().view(s.dtype)
        storage[flat[last]] = s.ravel()[last]
        return 0
