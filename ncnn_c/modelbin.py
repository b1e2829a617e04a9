"""ModelBin: the weight stream a layer's ``load_model`` pulls its Mats from.

Weights in a .bin are concatenated buffers, each 4-byte aligned. With ``type == 0`` a
buffer starts with a storage flag: tag 0 → fp32, tag 0x01306B47 → fp16, tag 0x000D4B38 →
int8 (an int8 Mat of elemsize 1, for the quantized layers), tag 0x0002C056 → fp32, any other
non-zero flag → 8-bit quantised (a 256-float table, then one uint8 index per value).
``type == 1`` is raw fp32 with no flag. Failures return an empty Mat and log where, with
``error`` saying why; ``Net.load_model`` logs that reason itself, naming the layer.
"""

from __future__ import annotations

import logging
import sys

import numpy as np

from .mat import Mat

log = logging.getLogger("ncnn_c")

FP16_TAG = 0x01306B47
INT8_TAG = 0x000D4B38
RAW_SCALED_TAG = 0x0002C056
_BIG_ENDIAN = sys.byteorder == "big"
# up to this size a weight's buffer is allocated before its bytes are read; larger ones only
# once the reader says they exist (or after reading them), whatever count the param file gave
_TRUSTED_BYTES = 1 << 24
# how a .param starts, text and binary: a .param handed over as the weights
_TEXT_PARAM_HEAD = b"7767"
_BINARY_PARAM_HEAD = (7767517).to_bytes(4, "little")


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
    """Weights read from a DataReader; ``offset`` is the byte position reached.

    Each buffer is read straight into the Mat it becomes (``DataReader.read_into``); fp16
    and 8-bit buffers are read into a scratch array and converted into the Mat in one pass.
    """

    def __init__(self, dr, log_errors: bool = True) -> None:
        self.dr = dr
        self.offset = 0
        # why a load failed (the last failure), and whether because the data ended; logged
        # here unless the caller reports it (Net.load_model does, naming the layer)
        self.error: str | None = None
        self.truncated = False
        self._log_errors = log_errors

    def _fail(self, message: str, truncated: bool = False) -> None:
        self.error, self.truncated = message, truncated
        if self._log_errors:
            log.error("ModelBin: %s", message)

    def _truncated(self, what: str, start: int, need: int, got: int) -> None:
        self._fail(f"truncated {what} at byte offset {start}: need {need} bytes, only {got} left", True)

    def _swapped(self, head: bytes) -> bool:
        """Whether the data read first is a .param's magic (the files given the wrong way
        round): then the load fails with a message saying so, not with garbage weights."""
        if head[:4] == _TEXT_PARAM_HEAD:
            kind = "a text .param (7767517)"
        elif head[:4] == _BINARY_PARAM_HEAD:
            kind = "a binary .param.bin"
        else:
            return False
        self._fail(f"the data starts like {kind}, not weights: are the .param and the .bin swapped?")
        return True

    def _read(self, out: np.ndarray, what: str) -> bool:
        """Fill the uint8 array ``out``; False (logged) when the data ends first."""
        start = self.offset
        got = self.dr.read_into(out)
        self.offset += got
        if got != out.size:
            self._truncated(what, start, out.size, got)
            return False
        return True

    def _there(self, nbytes: int) -> bool:
        """Whether a buffer of ``nbytes`` (a count from the param file) may be allocated
        before its bytes are read: small ones always, large ones when the reader says they
        exist. Otherwise the bytes are read first, in bounded chunks, so that a garbage
        count never costs more memory than the data that is really there."""
        if nbytes <= _TRUSTED_BYTES:
            return True
        left = self.dr.remaining_bytes()
        return left is not None and left >= nbytes

    def _take(self, nbytes: int, what: str) -> np.ndarray | None:
        """The next ``nbytes`` as a uint8 array; None (logged) when the data ends first."""
        if self._there(nbytes):
            buf = np.empty(nbytes, dtype=np.uint8)
            return buf if self._read(buf, what) else None
        start = self.offset
        data = self.dr.read_bytes(nbytes)
        self.offset += len(data)
        if len(data) != nbytes:
            self._truncated(what, start, nbytes, len(data))
            return None
        return np.frombuffer(data, dtype=np.uint8)

    def _fp32(self, w: int) -> Mat:
        if w <= 0:
            return Mat()
        if not self._there(w * 4):
            data = self._take(w * 4, "fp32 weight")
            return Mat() if data is None else _converted(data.view("<f4"))
        m = Mat(w)
        if m.empty():
            return Mat()
        if not self._read(m.raw()[: w * 4], "fp32 weight"):
            return Mat()
        if _BIG_ENDIAN:  # the file is little-endian
            m.raw()[: w * 4].view(np.float32).byteswap(inplace=True)
        return m

    def load_1d(self, w: int, type_: int) -> Mat:
        if w < 0:
            self._fail(f"negative weight count {w} at byte offset {self.offset}")
            return Mat()
        first = self.offset == 0
        if type_ == 1:
            m = self._fp32(w)
            if first and not m.empty() and self._swapped(m.raw()[:4].tobytes()):
                return Mat()
            return m
        if type_ != 0:
            self._fail(f"unknown load type {type_} at byte offset {self.offset}")
            return Mat()

        flag_bytes = self._take(4, "weight flag")
        if flag_bytes is None or (first and self._swapped(flag_bytes.tobytes())):
            return Mat()
        tag = int(flag_bytes.view("<u4")[0])
        if tag == FP16_TAG:
            data = self._take(_align4(w * 2), "fp16 weight")
            if data is None:
                return Mat()
            return _converted(data.view("<f2")[:w])
        if tag == INT8_TAG:
            data = self._take(_align4(w), "int8 weight")
            if data is None:
                return Mat()
            return _int8(data[:w])
        if tag == RAW_SCALED_TAG:  # raw fp32 "with extra scaling": the fp32 values follow
            return self._fp32(w)
        if tag != 0:
            table = self._take(256 * 4, "int8 quantization table")
            if table is None:
                return Mat()
            idx = self._take(_align4(w), "int8 weight indexes")
            if idx is None:
                return Mat()
            return _converted(np.take(table.view("<f4"), idx[:w]))
        return self._fp32(w)


def _int8(data: np.ndarray) -> Mat:
    """A new 1-D int8 Mat (elemsize 1) holding the bytes ``data``, as ncnn's int8 storage."""
    if data.size == 0:
        return Mat()
    m = Mat(data.size, elemsize=1)
    if m.empty():
        return Mat()
    m.raw()[: data.size] = data
    return m


def _converted(arr: np.ndarray) -> Mat:
    """A new 1-D fp32 Mat holding ``arr`` converted (one pass, no intermediate copy)."""
    if arr.size == 0:
        return Mat()
    m = Mat(arr.size)
    if m.empty():
        return Mat()
    np.copyto(m.raw()[: arr.size * 4].view(np.float32), arr, casting="unsafe")
    return m


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
