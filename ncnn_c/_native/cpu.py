"""The CPU kernels of ``_cpu`` (see build_cpu) behind a numpy-facing wrapper.

``cpu_kernels()`` returns the wrapper, building the extension on first use when it is missing
or stale; None when it cannot be built (no compiler), so callers keep a numpy path.
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

    def _ptr(self, a: np.ndarray | None, const: bool = True):
        if a is None:
            return self._ffi.NULL
        return self._ffi.cast("const float*" if const else "float*", _addr(a))

    def _split(self, fn, head: tuple, tail: tuple, n: int, threads: int, work: int, scratch: int = 0) -> None:
        """fn(*head, lo, hi, *tail) over [0, n), on up to ``threads`` threads (cffi drops the GIL);
        with ``scratch`` floats, each thread's call gets its own scratch buffer appended."""
        threads = max(1, min(threads, n)) if work >= _THREAD_MIN else 1
        bufs = [np.zeros(scratch, np.float32) for _ in range(threads)] if scratch else []
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
        self, x, dst, weight, bias, relu, geom, pads=(0, 0, 0, 0), value=0.0, threads: int = 1
    ) -> bool:
        """dst (c, outh, outw) = depthwise conv of x (c, h, w) bordered by ``pads`` (top, bottom,
        left, right, none negative) of ``value``, with weight (c, kh*kw), plus bias (c values or
        None), then ReLU when ``relu``; geom is (kw, kh, sw, sh, dw, dh)."""
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
        )
        scratch = outh * pw + (ph * pw if max(pads) > 0 else 0)
        self._split(
            self._lib.ncnnc_depthwise, head, tuple(geom), c, threads, dst.size * kw * kh, scratch=scratch
        )
        return True

    def bias_relu(self, dst, bias, relu: bool, threads: int = 1) -> bool:
        """dst (c, h, w) += bias (c values or None), then ReLU when ``relu``, in place."""
        c, h, w = dst.shape
        if not _rows_contiguous(dst):
            return False
        if bias is not None:
            bias = np.ascontiguousarray(bias, dtype=np.float32).reshape(-1)
            if bias.size != c:
                return False
        head = (self._ptr(dst, False), dst.strides[0] // 4, h * w, self._ptr(bias), int(relu))
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

    def wino43_output(self, m, dst, bias, relu, th: int, tw: int, threads: int = 1) -> bool:
        """dst (outc, outh, outw) = Winograd F(4,3) output of m (outc, 36, th*tw) + bias, ReLU."""
        outc, outh, outw = dst.shape
        if not _rows_contiguous(dst) or m.shape != (outc, 36, th * tw) or not m.flags.c_contiguous:
            return False
        if bias is not None:
            bias = np.ascontiguousarray(bias, dtype=np.float32).reshape(-1)
        head: tuple = (self._ptr(m), outc, th, tw, self._ptr(dst, False), dst.strides[0] // 4, outh, outw)
        head += (self._ptr(bias), int(relu))
        self._split(self._lib.ncnnc_wino43_output, head, (), outc, threads, 4 * m.size, scratch=6 * 4 * tw)
        return True


def _call(fn, args: tuple) -> None:
    fn(*args)


def _thread_pool() -> ThreadPoolExecutor:
    global _pool
    if _pool is None:
        _pool = ThreadPoolExecutor(max_workers=7, thread_name_prefix="ncnn_c_cpu")
    return _pool


def cpu_kernels() -> CpuKernels | None:
    global _kernels, _tried
    if _kernels is not None or _tried:
        return _kernels
    with _lock:
        if _kernels is None and not _tried:
            _tried = True
            try:
                from . import build_cpu

                if not build_cpu.is_current():
                    build_cpu.build()
                    importlib.invalidate_caches()
                _kernels = CpuKernels(importlib.import_module(f"{__package__}._cpu"))
            except Exception as e:  # no compiler / headers: the numpy path still works
                log.info("ncnn_c: CPU kernels unavailable (%s); using numpy", e)
    return _kernels
