"""PriorBox: the SSD anchor boxes of one feature map.

Caffe style: for each cell (row-major over the feature map's h x w) and each min size come
the min-size square, the sqrt(min * max) square when max sizes are given, then one box per
aspect ratio (and its transpose when ``flip``). Boxes are normalised by the image size (params
9/10, or the second input's w/h when they are -233); the output is 2 rows of 4 * w * h *
num_prior: the boxes, then the variances repeated. ``clip`` clamps the boxes to [0, 1].
``step_mmdetection`` rounds the default steps up, ``center_mmdetection`` puts the first
centre at offset * (step - 1).

mxnet style (one input, image size -233 both, no max sizes; _contrib_MultiBoxPrior): boxes
already in [0, 1] feature-map units, all sizes at ratio 1 then ratios[1:] at size[0], in a
1-D blob without variances.

Centres advance by repeated float32 addition of the step along a row, as ncnn does, so the
boxes agree to the last bit.
"""

from __future__ import annotations

import logging

import numpy as np

from . import Layer, Param
from ._nms import fma32

log = logging.getLogger("ncnn_c")

_AUTO = -233


def _centres(start: float, step: float, n: int) -> np.ndarray:
    """start, start + step, ... accumulated in float32 one addition at a time."""
    steps = np.full(n, np.float32(step), dtype=np.float32)
    if n:
        steps[0] = np.float32(start)
    return np.cumsum(steps, dtype=np.float32)


class PriorBox(Layer):
    PARAMS = (
        Param(0, "min_sizes", kind="floats"),
        Param(1, "max_sizes", kind="floats"),
        Param(2, "aspect_ratios", kind="floats"),
        # ncnn's code defaults (the param table in the docs says 0)
        Param(3, "variance0", 0.1),
        Param(4, "variance1", 0.1),
        Param(5, "variance2", 0.2),
        Param(6, "variance3", 0.2),
        Param(7, "flip", 1),
        Param(8, "clip", 0),
        Param(9, "image_width", 0),
        Param(10, "image_height", 0),
        Param(11, "step_width", -233.0),
        Param(12, "step_height", -233.0),
        Param(13, "offset", 0.0),
        Param(14, "step_mmdetection", 0),
        Param(15, "center_mmdetection", 0),
    )

    def __init__(self) -> None:
        super().__init__()
        self.one_blob_only = False
        self.support_inplace = False

    def check_params(self) -> int:
        if self.max_sizes.size not in (0, self.min_sizes.size):
            # ncnn pairs max_sizes[k] with min_sizes[k] but counts priors with len(max_sizes)
            log.error(
                "PriorBox %r: %d max_sizes for %d min_sizes, the counts must match",
                self.name,
                self.max_sizes.size,
                self.min_sizes.size,
            )
            return -1
        return 0

    def _mxnet_style(self, n_bottoms: int) -> bool:
        return (
            n_bottoms == 1
            and self.image_width == _AUTO
            and self.image_height == _AUTO
            and self.max_sizes.size == 0
        )

    def forward(self, bottoms, tops, opt) -> int:
        if not bottoms or bottoms[0].dims == 0:
            log.error("PriorBox %r: needs a feature map blob", self.name)
            return -1
        w, h = bottoms[0].w, bottoms[0].h
        if self._mxnet_style(len(bottoms)):
            return self._forward_mxnet(w, h, tops[0], opt)
        return self._forward_caffe(bottoms, w, h, tops[0], opt)

    def _forward_mxnet(self, w: int, h: int, top, opt) -> int:
        sizes = self.min_sizes.astype(np.float32)
        ratios = self.aspect_ratios.astype(np.float32)
        if sizes.size == 0 or ratios.size == 0:
            log.error("PriorBox %r: mxnet style needs min_sizes and aspect_ratios", self.name)
            return -1
        f = np.float32
        step_w = f(1.0) / f(w) if self.step_width == _AUTO else f(self.step_width)
        step_h = f(1.0) / f(h) if self.step_height == _AUTO else f(self.step_height)
        off = f(self.offset)
        two = f(2)
        # half extents, in ncnn's evaluation order
        sqr = np.sqrt(ratios[1:])
        cw = np.concatenate([sizes * f(h) / f(w) / two, sizes[0] * f(h) / f(w) * sqr / two])
        ch = np.concatenate([sizes / two, sizes[0] / sqr / two])
        num_prior = cw.size
        cx = _centres(off * step_w, step_w, w)
        cy = fma32(np.arange(h, dtype=np.float32), step_h, off * step_h)
        top.create(4 * w * h * num_prior, elemsize=4, elempack=1, allocator=opt.blob_allocator)
        if top.empty():
            return -100
        out = top.tensor().reshape(h, w, num_prior, 4)
        np.subtract(cx[None, :, None], cw, out=out[..., 0])
        np.subtract(cy[:, None, None], ch, out=out[..., 1])
        np.add(cx[None, :, None], cw, out=out[..., 2])
        np.add(cy[:, None, None], ch, out=out[..., 3])
        if self.clip:
            np.clip(out, 0, 1, out=out)
        return 0

    def _forward_caffe(self, bottoms, w: int, h: int, top, opt) -> int:
        image_w, image_h = self.image_width, self.image_height
        if image_w == _AUTO or image_h == _AUTO:
            if len(bottoms) < 2 or bottoms[1].dims == 0:
                log.error("PriorBox %r: image size -233 needs the image blob as second input", self.name)
                return -1
            if image_w == _AUTO:
                image_w = bottoms[1].w
            if image_h == _AUTO:
                image_h = bottoms[1].h
        f = np.float32
        step_w, step_h = f(self.step_width), f(self.step_height)
        with np.errstate(divide="ignore", invalid="ignore"):
            if self.step_width == _AUTO:
                step_w = f(image_w) / f(w)
                if self.step_mmdetection:
                    step_w = np.ceil(step_w)
            if self.step_height == _AUTO:
                step_h = f(image_h) / f(h)
                if self.step_mmdetection:
                    step_h = np.ceil(step_h)
        off = f(self.offset)
        if self.center_mmdetection:
            x0, y0 = off * (step_w - f(1)), off * (step_h - f(1))
        else:
            x0, y0 = off * step_w, off * step_h

        # (box_w, box_h) of each prior of a cell, in ncnn's order
        bws, bhs = [], []
        ars = np.sqrt(self.aspect_ratios.astype(np.float32))
        for k, mn in enumerate(self.min_sizes.astype(np.float32)):
            bws.append([mn])
            bhs.append([mn])
            if self.max_sizes.size:
                s = np.sqrt(mn * f(self.max_sizes[k]))
                bws.append([s])
                bhs.append([s])
            aw, ah = mn * ars, mn / ars
            if self.flip:
                aw, ah = np.stack([aw, ah], 1).reshape(-1), np.stack([ah, aw], 1).reshape(-1)
            bws.append(aw)
            bhs.append(ah)
        half = f(0.5)
        bw = np.concatenate(bws).astype(np.float32) * half if bws else np.zeros(0, np.float32)
        bh = np.concatenate(bhs).astype(np.float32) * half if bhs else np.zeros(0, np.float32)
        num_prior = bw.size

        cx = _centres(x0, step_w, w)
        cy = fma32(np.arange(h, dtype=np.float32), step_h, y0)
        top.create(4 * w * h * num_prior, 2, elemsize=4, elempack=1, allocator=opt.blob_allocator)
        if top.empty():
            return -100
        out = top.tensor()
        boxes = out[0].reshape(h, w, num_prior, 4)
        with np.errstate(divide="ignore", invalid="ignore"):
            iw, ih = f(image_w), f(image_h)
            np.divide(cx[None, :, None] - bw, iw, out=boxes[..., 0])
            np.divide(cy[:, None, None] - bh, ih, out=boxes[..., 1])
            np.divide(cx[None, :, None] + bw, iw, out=boxes[..., 2])
            np.divide(cy[:, None, None] + bh, ih, out=boxes[..., 3])
        if self.clip:
            np.clip(out[0], 0, 1, out=out[0])
        variances = np.array([self.variance0, self.variance1, self.variance2, self.variance3], np.float32)
        out[1].reshape(-1, 4)[...] = variances
        return 0
