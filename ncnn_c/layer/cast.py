"""Cast: convert a blob between fp32, fp16, int8 and bf16 storage (types 1, 2, 3, 4).

The output Mat has the element size of ``type_to`` (4, 2, 1, 2 bytes); fp16 and bf16 blobs
are 2-byte Mats whose numpy view is float16 for fp16 and raw uint16 bits for bf16. Where
source and target types agree the output shares the input's memory, as in ncnn.

Conversions follow ncnn's (PyPI x86 build): fp16 rounds to nearest even; bf16 adds half an
ulp (0x8000) to the fp32 bits and keeps the top 16 bits, so ties round up in magnitude and
values within half an ulp of the fp32 maximum become inf; int8 rounds half away from zero
and saturates to [-128, 127].

Deviations from ncnn, which reads the input bytes as ``type_from`` says and leaves the output
unwritten for pairs it has no code for (fp32 -> int8, fp16 <-> bf16, anything -> int8):
the input is decoded by its real element size (4: fp32, 1: int8, 2: bf16 when ``type_from``
is 4, else fp16), so an fp32 blob reaching a ``type_from=2`` Cast (the net widens 16-bit blobs
for layers that ask for fp32) is taken by value; every pair converts through fp32; type 0
("auto") as ``type_from`` means "whatever arrives" and as ``type_to`` keeps the blob unchanged.
"""

from __future__ import annotations

import logging

import numpy as np

from . import Layer, Param

log = logging.getLogger("ncnn_c")

AUTO, FP32, FP16, INT8, BF16 = range(5)
_ELEMSIZE = {FP32: 4, FP16: 2, INT8: 1, BF16: 2}


def float32_to_bfloat16(x: np.ndarray, out: np.ndarray) -> None:
    """bf16 bits of fp32 ``x`` into the uint16 array ``out`` (wrapping uint32 add, as ncnn)."""
    bits = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32)
    np.right_shift(bits + np.uint32(0x8000), np.uint32(16), out=out, casting="unsafe")


def bfloat16_to_float32(bits: np.ndarray) -> np.ndarray:
    return (np.asarray(bits, dtype=np.uint16).astype(np.uint32) << np.uint32(16)).view(np.float32)


def float32_to_int8(x: np.ndarray, out: np.ndarray) -> None:
    """Round half away from zero in fp32 arithmetic (x +- 0.5, truncated), saturating; nan -> 0."""
    half = np.copysign(np.float32(0.5), x).astype(np.float32)
    with np.errstate(invalid="ignore"):
        t = np.trunc(np.add(x, half, dtype=np.float32))
        np.clip(t, -128, 127, out=t)
    np.copyto(out, np.nan_to_num(t, nan=0.0), casting="unsafe")


class Cast(Layer):
    PARAMS = (Param(0, "type_from", 0), Param(1, "type_to", 0))
    type_from: int
    type_to: int

    def __init__(self) -> None:
        super().__init__()
        self.one_blob_only = True
        self.support_inplace = False
        # 16-bit blobs must reach this layer as they are, not widened to fp32 by the net
        self.support_fp16_storage = True
        self.support_bf16_storage = True

    def check_params(self) -> int:
        for what, t in (("type_from", self.type_from), ("type_to", self.type_to)):
            if not AUTO <= t <= BF16:
                log.error(
                    "Cast %r: unknown %s %d (0 auto, 1 fp32, 2 fp16, 3 int8, 4 bf16)", self.name, what, t
                )
                return -1
        return 0

    def _source_type(self, bottom) -> int | None:
        scalar = bottom.elemsize // max(1, bottom.elempack)
        if scalar == 4:
            return FP32
        if scalar == 1:
            return INT8
        if scalar == 2:
            return BF16 if self.type_from == BF16 else FP16
        return None

    def forward(self, bottom, top, opt) -> int:
        if bottom.elempack != 1:
            log.error("Cast %r: needs elempack 1, got %d", self.name, bottom.elempack)
            return -1
        src = self._source_type(bottom)
        if src is None:
            log.error("Cast %r: cannot read %d-byte elements", self.name, bottom.elemsize)
            return -1
        dst = src if self.type_to == AUTO else self.type_to
        if src == dst:
            top.share_from(bottom)
            return 0
        if src == BF16:
            x = bfloat16_to_float32(bottom.tensor(np.uint16))
        else:
            x = bottom.tensor()
        top.create(*x.shape[::-1], elemsize=_ELEMSIZE[dst], elempack=1, allocator=opt.blob_allocator)
        if top.empty():
            return -100
        if dst == BF16:
            float32_to_bfloat16(np.asarray(x, dtype=np.float32), top.tensor(np.uint16))
        elif dst == INT8:
            float32_to_int8(np.asarray(x, dtype=np.float32), top.tensor())
        else:
            # fp16 <- fp32 rounds to nearest even (overflow to inf); the others are exact
            with np.errstate(over="ignore"):
                np.copyto(top.tensor(), x, casting="unsafe")
        return 0
