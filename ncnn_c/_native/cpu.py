"""The CPU kernels of ``_cpu`` (see build_cpu) behind a numpy-facing wrapper.

``cpu_kernels()`` returns the wrapper over the prebuilt extension (the wheel and ``make setup``
build it; nothing is compiled at import or first use); None when it was not built, so callers
keep a numpy path.
"""

from __future__ import annotations

import importlib
import logging
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np

log = logging.getLogger("ncnn_c")

_lock = threading.Lock()
_kernels: CpuKernels | None = None
_tried = False
_pool: ThreadPoolExecutor | None = None

# below about this many multiply-adds (or values moved) a second thread costs more than it saves
_THREAD_MIN = 1 << 20


def _addr(a: np.ndarray) -> int:
    return a.__array_interface__["data"][0]


def _rows_contiguous(a: np.ndarray) -> bool:
    return (
        a.dtype == np.float32
        and a.ndim == 3
        and a.strides[1:] == (a.shape[2] * 4, 4)
        and a.strides[0] % 4 == 0
    )


class CpuKernels:
    """Each method returns False, having written nothing, when the arrays are not float32 with
    contiguous rows (channels may be cstep apart); the caller then takes its numpy path."""

    def __init__(self, mod) -> None:
        self._ffi = mod.ffi
        self._lib = mod.lib

    def x86_features(self) -> int:
        """CPUID's feature bits (cpu.c's ncnnc_x86_features; -1 off x86)."""
        return int(self._lib.ncnnc_x86_features())

    def arm_features(self) -> int:
        """The kernel's hardware capability bits (cpu.c's ncnnc_arm_features; -1 off Arm)."""
        return int(self._lib.ncnnc_arm_features())

    def _ptr(self, a: np.ndarray | None, const: bool = True):
        if a is None:
            return self._ffi.NULL
        return self._ffi.cast("const float*" if const else "float*", _addr(a))

    def _split(self, fn, head: tuple, tail: tuple, n: int, threads: int, work: int, scratch: int = 0) -> None:
        """fn(*head, lo, hi, *tail) over [0, n), on up to ``threads`` threads (cffi drops the GIL);
        with ``scratch`` floats, each thread's call gets its own scratch buffer appended."""
        threads = max(1, min(threads, n)) if work >= _THREAD_MIN else 1
        bufs = [np.empty(scratch, np.float32) for _ in range(threads)] if scratch else []
        extra: list[tuple] = [(self._ptr(b, False),) for b in bufs] if scratch else [()] * threads
        if threads == 1:
            fn(*head, 0, n, *tail, *extra[0])
            return
        cut = [n * i // threads for i in range(threads + 1)]
        pool = _thread_pool()
        args = [(*head, cut[i], cut[i + 1], *tail, *extra[i]) for i in range(threads)]
        futures = [pool.submit(_call, fn, a) for a in args[1:]]
        fn(*args[0])
        for f in futures:
            f.result()

    def depthwise(
        self, x, dst, weight, bias, relu, geom, pads=(0, 0, 0, 0), value=0.0, threads: int = 1, slope=1.0
    ) -> bool:
        """dst (c, outh, outw) = depthwise conv of x (c, h, w) bordered by ``pads`` (top, bottom,
        left, right, none negative) of ``value``, with weight (c, kh*kw), plus bias (c values or
        None), then ReLU when ``relu``, else negative values times ``slope`` (leaky ReLU; 1 for
        none); geom is (kw, kh, sw, sh, dw, dh)."""
        c, outh, outw = dst.shape
        _, h, w = x.shape
        top, bottom, left, right = pads
        if min(pads) < 0 or not (_rows_contiguous(x) and _rows_contiguous(dst)) or x.shape[0] != c:
            return False
        kw, kh = geom[0], geom[1]
        weight = np.ascontiguousarray(weight, dtype=np.float32)
        if weight.shape != (c, kh * kw):
            return False
        if bias is not None:
            bias = np.ascontiguousarray(bias, dtype=np.float32).reshape(-1)
        ph, pw = h + top + bottom, w + left + right
        head: tuple = (self._ptr(x), x.strides[0] // 4, h, w, top, left, float(value), ph, pw)
        head += (
            self._ptr(dst, False),
            dst.strides[0] // 4,
            outh,
            outw,
            self._ptr(weight),
            self._ptr(bias),
            int(relu),
            float(slope),
        )
        scratch = outh * pw + (ph * pw if max(pads) > 0 else 0)
        self._split(
            self._lib.ncnnc_depthwise, head, tuple(geom), c, threads, dst.size * kw * kh, scratch=scratch
        )
        return True

    def pool(self, x, dst, pads, value, geom, is_max: bool, threads: int = 1) -> bool:
        """dst (c, outh, outw) = max (``is_max``) or sum of each window of x (c, h, w) bordered
        by ``pads`` (top, bottom, left, right, none negative) of ``value``; geom is
        (kw, kh, sw, sh)."""
        c, outh, outw = dst.shape
        _, h, w = x.shape
        top, bottom, left, right = pads
        if min(pads) < 0 or not (_rows_contiguous(x) and _rows_contiguous(dst)) or x.shape[0] != c:
            return False
        kw, kh, sw, sh = geom
        ph, pw = h + top + bottom, w + left + right
        if (outh - 1) * sh + kh > ph or (outw - 1) * sw + kw > pw:
            return False
        head: tuple = (self._ptr(x), x.strides[0] // 4, h, w, top, left, float(value), ph, pw)
        head += (self._ptr(dst, False), dst.strides[0] // 4, outh, outw, int(is_max))
        scratch = outh * pw + (ph * pw if max(pads) > 0 else 0)
        self._split(self._lib.ncnnc_pool, head, (kw, kh, sw, sh), c, threads, dst.size * kw * kh, scratch)
        return True

    def global_pool(self, x, dst, is_max: bool, threads: int = 1) -> bool:
        """dst (c,) = max or sum over each channel of x (c, h, w), in ncnn's order."""
        c, h, w = x.shape
        if not _rows_contiguous(x) or dst.shape != (c,) or dst.dtype != np.float32:
            return False
        if dst.strides != (4,):
            return False
        head = (self._ptr(x), x.strides[0] // 4, h * w, self._ptr(dst, False), int(is_max))
        self._split(self._lib.ncnnc_global_pool, head, (), c, threads, x.size)
        return True

    def nms(self, x1, y1, x2, y2, areas, thr: float, product: bool, limit: int) -> np.ndarray | None:
        """Kept indices of greedy NMS over float32 contiguous box columns (score order); None
        when any value is NaN (numpy's min / max propagate it, C's comparisons do not)."""
        n = x1.shape[0]
        cols = (x1, y1, x2, y2, areas)
        if any(np.isnan(a).any() for a in cols):
            return None
        picked = np.empty(n, dtype=np.int64)
        ptrs = [self._ptr(a) for a in cols]
        count = self._lib.ncnnc_nms(
            *ptrs, n, float(thr), int(product), int(min(limit, n)), self._ffi.cast("long*", _addr(picked))
        )
        return picked[:count].astype(np.intp)

    def qsort_desc(self, scores: np.ndarray) -> np.ndarray:
        """The permutation ncnn's descending quicksort leaves on float32 ``scores``."""
        s = np.array(scores, dtype=np.float32)  # sorted in place: a private copy
        idx = np.arange(s.shape[0], dtype=np.int64)
        if s.shape[0] > 1:
            self._lib.ncnnc_qsort_desc(
                self._ptr(s, False), self._ffi.cast("long*", _addr(idx)), 0, s.shape[0] - 1
            )
        return idx.astype(np.intp)

    def bias_relu(self, dst, bias, relu: bool, threads: int = 1, slope: float = 1.0) -> bool:
        """dst (c, h, w) += bias (c values or None), then ReLU when ``relu`` (else leaky with
        ``slope``, 1 for none), in place."""
        c, h, w = dst.shape
        if not _rows_contiguous(dst):
            return False
        if bias is not None:
            bias = np.ascontiguousarray(bias, dtype=np.float32).reshape(-1)
            if bias.size != c:
                return False
        head = (self._ptr(dst, False), dst.strides[0] // 4, h * w, self._ptr(bias), int(relu), float(slope))
        self._split(self._lib.ncnnc_bias_relu, head, (), c, threads, dst.size)
        return True

    def pad(self, x, dst, top: int, left: int, value: float, threads: int = 1) -> bool:
        """dst (c, oh, ow) = x (c, h, w) at (top, left) in a border of ``value``."""
        c, h, w = x.shape
        _, oh, ow = dst.shape
        if not (_rows_contiguous(x) and _rows_contiguous(dst)) or dst.shape[0] != c:
            return False
        if top < 0 or left < 0 or top + h > oh or left + w > ow:
            return False
        head: tuple = (self._ptr(x), x.strides[0] // 4, h, w, self._ptr(dst, False), dst.strides[0] // 4)
        head += (top, left, oh, ow, float(value))
        self._split(self._lib.ncnnc_pad, head, (), c, threads, dst.size)
        return True

    def wino43_input(self, x, v, th: int, tw: int, top=0, left=0, value=0.0, threads: int = 1) -> bool:
        """v (c, 36, th*tw) = Winograd F(4,3) input tiles of x (c, h, w) bordered by top / left
        rows and columns (and whatever the tiles need past the other edges) of ``value``."""
        c, h, w = x.shape
        if top < 0 or left < 0 or not _rows_contiguous(x):
            return False
        if v.shape != (c, 36, th * tw) or not v.flags.c_contiguous:
            return False
        head = (
            self._ptr(x),
            x.strides[0] // 4,
            h,
            w,
            top,
            left,
            float(value),
            self._ptr(v, False),
            c,
            th,
            tw,
        )
        scratch = 12 * (4 * tw + 2)
        self._split(self._lib.ncnnc_wino43_input, head, (), c, threads, 8 * v.size, scratch=scratch)
        return True

    def wino43_output(
        self, m, dst, bias, relu, th: int, tw: int, threads: int = 1, slope: float = 1.0
    ) -> bool:
        """dst (outc, outh, outw) = Winograd F(4,3) output of m (outc, 36, th*tw) + bias, then
        ReLU or leaky ReLU (as bias_relu)."""
        outc, outh, outw = dst.shape
        if not _rows_contiguous(dst) or m.shape != (outc, 36, th * tw) or not m.flags.c_contiguous:
            return False
        if bias is not None:
            bias = np.ascontiguousarray(bias, dtype=np.float32).reshape(-1)
        head: tuple = (self._ptr(m), outc, th, tw, self._ptr(dst, False), dst.strides[0] // 4, outh, outw)
        head += (self._ptr(bias), int(relu), float(slope))
        self._split(self._lib.ncnnc_wino43_output, head, (), outc, threads, 4 * m.size, scratch=6 * 4 * tw)
        return True


def _call(fn, args: tuple) -> None:
    fn(*args)


def _thread_pool() -> ThreadPoolExecutor:
    global _pool
    if _pool is None:
        from .blas import single_thread_this_thread

        # the pool's threads do the splitting: BLAS must not start threads of its own there
        _pool = ThreadPoolExecutor(
            max_workers=7, thread_name_prefix="ncnn_c_cpu", initializer=single_thread_this_thread
        )
    return _pool


def cpu_kernels() -> CpuKernels | None:
    global _kernels, _tried
    if _kernels is not None or _tried:
        return _kernels
    with _lock:
        if _kernels is None and not _tried:
            _tried = True
            try:
                _kernels = CpuKernels(importlib.import_module(f"{__package__}._cpu"))
            except Exception as e:  # not built (`make setup` builds it): the numpy path still works
                log.info("ncnn_c: CPU kernels unavailable (%s); using numpy", e)
    return _kernels
