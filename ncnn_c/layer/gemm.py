"""Gemm (fp32): ``y = alpha * (op(A) @ op(B) + beta * C)``, one BLAS product into the top blob.

A, B and C are inputs or constants from the model (constantA/B/C). Input matrices follow
ncnn's conventions: a 2-D blob is (rows, w); a 3-D blob is one row per channel (its h must
be 1); a 1-D blob is a single row. C broadcasts as ncnn decides from its shape (scalar, per
row of the M side, per column of the N side, or full M x N); a constant C says how with
``constant_broadcast_type_C`` (0 scalar, 1 and 2 per-M, 3 full, 4 per-N, -1 none).
``output_transpose`` writes the N x M transpose, ``output_N1M`` a 3-D (rows, 1, cols) blob.
``output_elempack`` / ``output_elemtype`` only choose a storage layout: CPU blobs here are
fp32 with elempack 1, as ncnn's own fp32 CPU path produces them once unpacked.

int8 (``quantize_term``, param 18, non-zero; ncnn runs it whatever ``use_int8_inference``
says): constant A / B are int8-stored (ModelBin's int8 flag) and followed in the model by one
scale per row of A (``constantM`` values) and one scale for B. An input A is quantized per row
(scale 127 / max|row|), an input B as a whole (127 / max|B|), as ncnn's x86 kernels do; the
exact int32 product is scaled per row by ``1 / (A_scale * B_scale)`` (``max|row| / (127 *
B_scale)`` for a dynamically quantized A), then ``beta * C`` is added and the sum scaled by
``alpha``. An fp32-stored constant under ``quantize_term`` is quantized at load the same
dynamic way (ncnn's reference Gemm; its x86 one would read the floats as int8). ncnn's
block-quantized weight formats (quantize_term 4-6, >= 400) are refused.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import ClassVar

import numpy as np

from ..mat import Mat
from . import Layer, Param, load_weight
from ._elementwise import load_vector
from ._int8 import float2int8, int8_matmul
from .deconvolution import flat_weights

log = logging.getLogger("ncnn_c")

_B16_LOCK = threading.Lock()


class Gemm(Layer):
    PARAMS: ClassVar[tuple[Param, ...]] = (
        Param(0, "alpha", 1.0),
        Param(1, "beta", 1.0),
        Param(2, "transA", 0),
        Param(3, "transB", 0),
        Param(4, "constantA", 0),
        Param(5, "constantB", 0),
        Param(6, "constantC", 0),
        Param(7, "constantM", 0),
        Param(8, "constantN", 0),
        Param(9, "constantK", 0),
        Param(10, "constant_broadcast_type_C", 0),
        Param(11, "output_N1M", 0),
        Param(12, "output_elempack", 0),
        Param(13, "output_elemtype", 0),
        Param(14, "output_transpose", 0),
        Param(18, "quantize_term", 0),
        Param(20, "constant_TILE_M", 0),
        Param(21, "constant_TILE_N", 0),
        Param(22, "constant_TILE_K", 0),
    )
    alpha: float
    beta: float
    transA: int
    transB: int
    constantA: int
    constantB: int
    constantC: int
    constantM: int
    constantN: int
    constantK: int
    constant_broadcast_type_C: int
    output_N1M: int
    output_elempack: int
    output_elemtype: int
    output_transpose: int
    quantize_term: int

    def __init__(self) -> None:
        super().__init__()
        self.one_blob_only = False
        self.support_inplace = False
        self.A_data = Mat()
        self.B_data = Mat()
        self.C_data = Mat()
        self._A: np.ndarray | None = None  # (M, K), possibly a transposed view
        self._B: np.ndarray | None = None  # (K, N), possibly a transposed view
        self._C: np.ndarray | None = None  # beta * C, shaped to broadcast over (M, N)
        # int8: constant A (M, K) and B (K, N) as int8, with A's row scales and B's scale
        self._A8: np.ndarray | None = None
        self._B8: np.ndarray | None = None
        self.A_data_int8_scales = np.ones(0, np.float32)
        self.B_data_int8_scale = np.float32(1.0)
        # constant B (N, K) in fp16 when every value is one (an fp16-stored .bin, zero
        # weights): False until asked, then the array or None (net/native/ops/transformer.py)
        self._B16: np.ndarray | None | bool = False

    def check_params(self) -> int:
        if self.quantize_term in (4, 5, 6) or self.quantize_term >= 400 or self.quantize_term < 0:
            log.error(
                "Gemm %r: quantize_term %d (block-quantized weights) is not supported",
                self.name,
                self.quantize_term,
            )
            return -1
        if self.constantA and (self.constantM <= 0 or self.constantK <= 0):
            log.error("Gemm %r: constantA needs positive constantM and constantK", self.name)
            return -1
        if self.constantB and (self.constantN <= 0 or self.constantK <= 0):
            log.error("Gemm %r: constantB needs positive constantN and constantK", self.name)
            return -1
        if self.constantC and not -1 <= self.constant_broadcast_type_C <= 4:
            log.error(
                "Gemm %r: constant_broadcast_type_C %d is not -1..4",
                self.name,
                self.constant_broadcast_type_C,
            )
            return -1
        if self.constantC and self.constant_broadcast_type_C in (1, 2, 3) and self.constantM <= 0:
            log.error("Gemm %r: a per-M constant C needs constantM", self.name)
            return -1
        if self.constantC and self.constant_broadcast_type_C in (3, 4) and self.constantN <= 0:
            log.error("Gemm %r: a per-N constant C needs constantN", self.name)
            return -1
        if self.output_elemtype not in (0, 1, 2, 3) or self.output_elempack < 0:
            log.error(
                "Gemm %r: unknown output_elemtype %d / output_elempack %d",
                self.name,
                self.output_elemtype,
                self.output_elempack,
            )
            return -1
        # as ncnn: exactly one blob comes in when two of A, B, C are constants
        constants = (self.constantA, self.constantB, self.constantC)
        self.one_blob_only = sum(1 for c in constants if c) == 2
        return 0

    def load_model(self, mb) -> int:
        M, N, K = self.constantM, self.constantN, self.constantK
        self._B16 = False  # new weights: asked again
        if self.constantA:
            self.A_data = load_weight(self, mb, "A_data", *((M, K) if self.transA else (K, M)), 0)
            if self.A_data.empty():
                return -100
        if self.constantB:
            self.B_data = load_weight(self, mb, "B_data", *((K, N) if self.transB else (N, K)), 0)
            if self.B_data.empty():
                return -100
        if self.constantC and self.constant_broadcast_type_C != -1:
            count = {0: 1, 1: M, 2: M, 3: M * N, 4: N}[self.constant_broadcast_type_C]
            self.C_data = load_weight(self, mb, "C_data", count, 0)
            if self.C_data.empty():
                return -100
        if self.quantize_term:
            if self.constantA:
                scales = load_vector(self, mb, M, "A_data_int8_scales")
                if scales is None:
                    return -100
                self.A_data_int8_scales = scales
            if self.constantB:
                scale = load_vector(self, mb, 1, "B_data_int8_scale")
                if scale is None:
                    return -100
                self.B_data_int8_scale = scale[0]
        self._prepare()
        return 0

    def _prepare(self) -> None:
        M, N, K = self.constantM, self.constantN, self.constantK
        if self.constantA:
            a = flat_weights(self.A_data)
            self._A = a.reshape(K, M).T if self.transA else a.reshape(M, K)
        if self.constantB:
            b = flat_weights(self.B_data)
            self._B = b.reshape(K, N) if not self.transB else b.reshape(N, K).T
        if self.quantize_term:
            self._prepare_int8()
        if self.constantC and self.constant_broadcast_type_C != -1:
            self._C = self._broadcast_c(flat_weights(self.C_data), self.constant_broadcast_type_C, M, N)

    def fp16_weights(
        self, convert: Callable[[np.ndarray], np.ndarray | None] | None = None
    ) -> np.ndarray | None:
        """Constant B in fp16 when converting it loses nothing (each value is an fp16 one:
        weights an fp16-stored .bin held, zeros): the same products at half the bytes a pass
        over them reads. In the native plan's panels of 16 rows (``panels16``: ceil(N / 16)
        rows of 16 * K values); None for other weights, int8 ones and an input B. Checked
        once, on the first call: by ``convert`` ((N, K) fp32 -> the panels or None; the
        native plan's one C pass, ``ops/transformer.fp16_weights``), else in numpy."""
        if self._B16 is False:
            with _B16_LOCK:
                if self._B16 is False:
                    self._B16 = self._exact_fp16(convert)
        return self._B16 if isinstance(self._B16, np.ndarray) else None

    def _exact_fp16(self, convert) -> np.ndarray | None:
        if not self.constantB or self.quantize_term or self.B_data.empty() or self.B_data.elemsize != 4:
            return None
        if self._B is None:
            self._prepare()
        if self._B is None:
            return None
        b = self._B.T  # (N, K): the stored array itself when transB
        if convert is not None:
            return convert(np.ascontiguousarray(b, dtype=np.float32))
        with np.errstate(over="ignore"):
            half = np.ascontiguousarray(b, dtype=np.float16)
        if not np.array_equal(half.astype(np.float32), b):
            return None
        return panels16(half)

    def _prepare_int8(self) -> None:
        """Constant A / B as int8 matrices with their scales; the fp32 ``_A`` / ``_B`` (what a
        GPU layer runs on) become their dequantized values."""
        if self.constantA and self._A is not None:
            if self.A_data.elemsize == 1:
                self._A8 = np.ascontiguousarray(self._A, dtype=np.int8)
                scales = self.A_data_int8_scales
            else:
                self._A8, scales, _ = _quantize_rows(self._A)
            with np.errstate(divide="ignore"):
                self._A = (self._A8 / scales[:, None]).astype(np.float32)
            self.A_data_int8_scales = scales
        if self.constantB and self._B is not None:
            if self.B_data.elemsize == 1:
                self._B8 = np.ascontiguousarray(self._B, dtype=np.int8)
            else:
                self._B8, self.B_data_int8_scale = _quantize_whole(self._B)
            self._B = (self._B8 / self.B_data_int8_scale).astype(np.float32)

    def _int8_product(self, A: np.ndarray, B: np.ndarray) -> np.ndarray:
        """fp32 (M, N): the int8 product of A (M, K) and B (K, N), each int8 (a constant) or
        fp32 (quantized here), descaled per row of A."""
        if B.dtype == np.int8:
            B8, b_scale = B, np.float32(self.B_data_int8_scale)
        else:
            B8, b_scale = _quantize_whole(B)
        if A.dtype == np.int8:
            A8 = A
            with np.errstate(divide="ignore", over="ignore"):
                descale = np.float32(1) / (self.A_data_int8_scales * b_scale)
        else:
            A8, _, absmax = _quantize_rows(A)
            descale = absmax / (np.float32(127) * b_scale)
        return int8_matmul(A8, B8).astype(np.float32) * descale.astype(np.float32)[:, None]

    def _broadcast_c(self, c: np.ndarray, kind: int, M: int, N: int) -> np.ndarray:
        shape = {0: (1, 1), 1: (M, 1), 2: (M, 1), 3: (M, N), 4: (1, N)}[kind]
        c = c[:1] if kind == 0 else c
        return (c.reshape(shape) * np.float32(self.beta)).astype(np.float32, copy=False)

    def _matrix(self, m: Mat, what: str) -> np.ndarray | None:
        """An input blob as a 2-D (rows, w) array, the way ncnn's Gemm reads it."""
        if m.elempack != 1 or m.dims not in (1, 2, 3) or (m.dims == 3 and m.h != 1):
            log.error(
                "Gemm %r: %s must be a 1-D, 2-D or (c, 1, w) fp32 blob, got dims %d shape %s",
                self.name,
                what,
                m.dims,
                m.tensor().shape,
            )
            return None
        t = m.tensor()
        if m.dims == 1:
            return t.reshape(1, -1)
        return t[:, 0, :] if m.dims == 3 else t

    @staticmethod
    def input_c_kind(dims: int, w: int, h: int, M: int, N: int) -> int | None:
        """How an input C of this shape broadcasts (constant_broadcast_type_C's numbers), or None."""
        # ncnn tries the shapes in this order, a later match winning (so a length-M vector
        # is per-N when M == N)
        kind = None
        if dims == 1 and w == 1:
            kind = 0
        if dims == 1 and w == M:
            kind = 1
        if dims == 1 and w == N:
            kind = 4
        if dims == 2 and w == 1 and h == M:
            kind = 2
        if dims == 2 and w == N and h == M:
            kind = 3
        if dims == 2 and w == N and h == 1:
            kind = 4
        return kind

    def _input_c(self, m: Mat, M: int, N: int) -> np.ndarray | None:
        kind = self.input_c_kind(m.dims, m.w, m.h, M, N)
        if kind is None or m.elempack != 1:
            log.error(
                "Gemm %r: C of shape %s broadcasts over neither M=%d nor N=%d",
                self.name,
                m.tensor().shape,
                M,
                N,
            )
            return None
        return self._broadcast_c(m.tensor().reshape(-1), kind, M, N)

    def forward(self, bottom, top, opt) -> int:
        bottoms = bottom if isinstance(bottom, list) else [bottom]
        top_blob = top[0] if isinstance(top, list) else top
        if (self.constantA and self._A is None) or (self.constantB and self._B is None):
            self._prepare()
        need = (0 if self.constantA else 1) + (0 if self.constantB else 1)
        if len(bottoms) < need:
            log.error("Gemm %r: needs at least %d inputs, got %d", self.name, need, len(bottoms))
            return -1
        i = 0
        if self.constantA:
            A = self._A8 if self.quantize_term else self._A
        else:
            A = self._matrix(bottoms[i], "A")
            if A is not None and self.transA:
                A = A.T
            i += 1
        if self.constantB:
            B = self._B8 if self.quantize_term else self._B
        else:
            B = self._matrix(bottoms[i], "B")
            if B is not None and self.transB:
                B = B.T
            i += 1
        if A is None or B is None:
            return -1
        (M, K), (K2, N) = A.shape, B.shape
        if K != K2:
            log.error("Gemm %r: A is %dx%d but B is %dx%d", self.name, M, K, K2, N)
            return -1
        C = self._C
        if not self.constantC and len(bottoms) > i:
            C = self._input_c(bottoms[i], M, N)
            if C is None:
                return -1
        if C is not None and C.shape != (1, 1) and (C.shape[0] not in (1, M) or C.shape[1] not in (1, N)):
            log.error("Gemm %r: constant C of shape %s does not fit %dx%d", self.name, C.shape, M, N)
            return -1

        rows, cols = (N, M) if self.output_transpose else (M, N)
        if self.output_N1M:
            top_blob.create(cols, 1, rows, elemsize=4, elempack=1, allocator=opt.blob_allocator)
        else:
            top_blob.create(cols, rows, elemsize=4, elempack=1, allocator=opt.blob_allocator)
        if top_blob.empty():
            return -100
        dst = top_blob.tensor()
        out = dst[:, 0, :] if self.output_N1M else dst
        if self.quantize_term:
            prod = self._int8_product(A, B)
            out[...] = prod.T if self.output_transpose else prod
            if C is not None:
                out += C.T if self.output_transpose else C
        elif self.output_transpose:
            np.matmul(B.T, A.T, out=out)
            if C is not None:
                out += C.T
        else:
            np.matmul(A, B, out=out)
            if C is not None:
                out += C
        if self.alpha != 1.0:
            out *= np.float32(self.alpha)
        return 0


def panels16(w: np.ndarray) -> np.ndarray:
    """(N, K) fp16 rows as ``_native/llm.c``'s gemm16 reads them: panel p holds rows
    16p..16p+15 (zero rows past N) column by column, K columns of 16 values; shape
    (ceil(N / 16), 16 * K)."""
    n, k = w.shape
    count = -(-n // 16)
    rows = np.zeros((count * 16, k), np.float16)
    rows[:n] = w
    return np.ascontiguousarray(rows.reshape(count, 16, k).transpose(0, 2, 1)).reshape(count, 16 * k)


def unpanels16(panels: np.ndarray, n: int, k: int) -> np.ndarray:
    """The (N, K) rows back from ``panels16``'s layout."""
    return panels.reshape(-1, k, 16).transpose(0, 2, 1).reshape(-1, k)[:n]


def _quantize_rows(a: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(int8 rows, row scales 127 / max|row| (1 for a zero row), max|row|) of an fp32 matrix."""
    absmax = np.abs(a).max(axis=1).astype(np.float32) if a.size else np.zeros(a.shape[0], np.float32)
    with np.errstate(divide="ignore"):
        scales = np.where(absmax == 0, np.float32(1), np.float32(127) / absmax).astype(np.float32)
    return float2int8(np.multiply(a, scales[:, None], dtype=np.float32)), scales, absmax


def _quantize_whole(b: np.ndarray) -> tuple[np.ndarray, np.float32]:
    """(int8 matrix, its scale 127 / max|b| (1 for all zeros)) of an fp32 matrix."""
    absmax = np.float32(np.abs(b).max()) if b.size else np.float32(0)
    scale = np.float32(1) if absmax == 0 else np.float32(127) / absmax
    return float2int8(np.multiply(b, scale, dtype=np.float32)), scale
