"""ModelBin: the weight stream a layer's ``load_model`` pulls its Mats from.

Weights in a .bin are concatenated buffers, each 4-byte aligned. With ``type == 0`` a
buffer starts with a storage flag: tag 0 → fp32, tag 0x01306B47 → fp16, any other
non-zero flag → 8-bit quantised (a 256-float table, then one uint8 index per value).
``type == 1`` is raw fp32 with no flag. Failures return an empty Mat and log where.
"""

from __future__ import annotations

import logging
import struct

import numpy as np

from .mat import Mat

log = logging.getLogger("ncnn_c")

FP16_TAG = 0x01306B47


def _align4(n: int) -> int:
    return (n + 3) & ~3


def _split_load_args(args) -> tuple[tuple[int, ...], int]:
    """``load(w, type)``, ``load(w, h, type)``, ``load(w, h, c, type)`` → (shape, type)."""
    if not 2 <= len(args) <= 4:
        raise TypeError("load(w, type), load(w, h, type) or load(w, h, c, type)")
    dims = tuple(int(a) for a in args[:-1])
    return dims, int(args[-1])


class ModelBin:
    """Base class: subclasses implement ``load_1d(count, type) -> Mat``."""

    def load(self, *args) -> Mat:
        shape, type_ = _split_load_args(args)
        count = 1
        for s in shape:
            if s < 0:
                log.error("ModelBin.load: negative size %s", shape)
                return Mat()
            count *= s
        m = self.load_1d(count, type_)
        if m.empty() or len(shape) == 1:
            return m
        return m.reshape(*shape)

    def load_1d(self, w: int, type_: int) -> Mat:
        return Mat()


class ModelBinFromDataReader(ModelBin):
    """Weights read from a DataReader; ``offset`` is the byte position reached."""

    def __init__(self, dr) -> None:
        self.dr = dr
        self.offset = 0

    def _take(self, n: int, what: str) -> bytes | None:
        data = self.dr.read_bytes(n)
        start = self.offset
        self.offset += len(data)
        if len(data) != n:
            log.error(
                "ModelBin: truncated %s at byte offset %d: need %d bytes, only %d left",
                what, start, n, len(data),
            )  # fmt: skip
            return None
        return data

    def load_1d(self, w: int, type_: int) -> Mat:
        if type_ == 1:
            data = self._take(w * 4, "fp32 weight")
            if data is None:
                return Mat()
            return _to_mat(np.frombuffer(data, dtype="<f4"))
        if type_ != 0:
            log.error("ModelBin: unknown load type %d at byte offset %d", type_, self.offset)
            return Mat()

        flag_bytes = self._take(4, "weight flag")
        if flag_bytes is None:
            return Mat()
        tag = struct.unpack("<I", flag_bytes)[0]
        if tag == FP16_TAG:
            data = self._take(_align4(w * 2), "fp16 weight")
            if data is None:
                return Mat()
            return _to_mat(np.frombuffer(data, dtype="<f2", count=w).astype(np.float32))
        if sum(flag_bytes) != 0:
            table = self._take(256 * 4, "int8 quantization table")
            if table is None:
                return Mat()
            idx = self._take(_align4(w), "int8 weight indexes")
            if idx is None:
                return Mat()
            lut = np.frombuffer(table, dtype="<f4")
            return _to_mat(lut[np.frombuffer(idx, dtype=np.uint8, count=w)])
        data = self._take(w * 4, "fp32 weight")
        if data is None:
            return Mat()
        return _to_mat(np.frombuffer(data, dtype="<f4"))


def _to_mat(arr: np.ndarray) -> Mat:
    if arr.size == 0:
        return Mat()
    return Mat.from_tensor(np.ascontiguousarray(arr, dtype=np.float32))


class ModelBinFromMatArray(ModelBin):
    """Weights handed out from a list of Mats, one per ``load`` call, in order."""

    def __init__(self, weights) -> None:
        self._weights = list(weights)
        self._next = 0

    def load(self, *args) -> Mat:
        _split_load_args(args)
        if self._next >= len(self._weights):
            log.error(
                "ModelBinFromMatArray: asked for weight #%d but only %d given", self._next, len(self._weights)
            )
            return Mat()
        m = self._weights[self._next]
        self._next += 1
        return m

    def load_1d(self, w: int, type_: int) -> Mat:
        return self.load(w, type_)
