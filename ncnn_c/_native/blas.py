"""Matrix products on our own threads, with numpy's OpenBLAS kept single-threaded.

OpenBLAS's worker threads spin (busy-wait, then ``sched_yield``) for a long while after each
multi-threaded call. Between two products of a network, our native kernels run on our own
threads; the spinning workers then take the cores from them, and on a machine shared with
other processes every product waits for a descheduled worker: measured on the 2-core
benchmark machine under load, a whole ShuffleNet ran 10x slower with OpenBLAS's threads than
with single-threaded BLAS, and one 512x1152x3136 product took 2x longer on two OpenBLAS
threads than on one. So during an inference the calling thread asks OpenBLAS for one thread
(``openblas_set_num_threads_local``, OpenBLAS 0.3.27+: it only affects calls made from that
thread) and ``matmul`` splits a large product into column (or row, or batch) blocks that run
on the CPU kernels' thread pool, whose threads block instead of spinning.

Without that OpenBLAS entry point (another BLAS, an older OpenBLAS) everything still works:
``matmul`` then makes one plain numpy call and leaves the threading to the BLAS.
"""

from __future__ import annotations

import ctypes
import glob
import os
from contextlib import contextmanager

import numpy as np

_set_local = None
_tried = False

# below about this many multiply-adds one thread finishes before a second one gets going
SPLIT_MIN_MACS = 1 << 21
# a large product is cut into at most this many blocks, whatever the thread count
BLOCKS = 8


def _find_set_local():
    global _set_local, _tried
    if _tried:
        return _set_local
    _tried = True
    libs = os.path.join(os.path.dirname(np.__file__), "..", "numpy.libs")
    for path in sorted(glob.glob(os.path.join(libs, "*openblas*.so*"))):
        try:
            lib = ctypes.CDLL(path)  # the copy numpy has already loaded: same handle
            fn = lib.openblas_set_num_threads_local
        except (OSError, AttributeError):
            continue
        fn.restype = ctypes.c_int
        fn.argtypes = [ctypes.c_int]
        _set_local = fn
        break
    return _set_local


def available() -> bool:
    """Whether OpenBLAS's threads can be held to one per calling thread."""
    return _find_set_local() is not None


def single_thread_this_thread() -> None:
    """From now on, BLAS calls made by the current thread use one thread (pool initializer)."""
    fn = _find_set_local()
    if fn is not None:
        fn(1)


@contextmanager
def single_threaded():
    """BLAS calls made by this thread inside the block run on one OpenBLAS thread."""
    fn = _find_set_local()
    if fn is None:
        yield
        return
    prev = fn(1)
    try:
        yield
    finally:
        fn(prev)


def _blocks(n: int, parts: int) -> list[tuple[int, int]]:
    return [(n * i // parts, n * (i + 1) // parts) for i in range(parts)]


def matmul(a: np.ndarray, b: np.ndarray, out: np.ndarray, threads: int) -> None:
    """out = a @ b (2-D, or batched 3-D with the same batch in all three), split over up to
    ``threads`` threads of the CPU kernels' pool when large enough."""
    fn = _find_set_local()
    if fn is None:
        np.matmul(a, b, out=out)
        return
    # single-threaded BLAS here too, whoever calls: a product must round the same way in a
    # net's extractor and in a direct forward (OpenBLAS's threaded and single-threaded
    # kernels do not always agree to the last bit)
    prev = fn(1)
    try:
        _matmul(a, b, out, threads)
    finally:
        fn(prev)


def _matmul(a: np.ndarray, b: np.ndarray, out: np.ndarray, threads: int) -> None:
    k = a.shape[-1]
    m, n = out.shape[-2], out.shape[-1]
    batch = out.shape[0] if out.ndim == 3 else 1
    macs = batch * m * n * k
    if macs < SPLIT_MIN_MACS:
        np.matmul(a, b, out=out)
        return
    # the blocks depend on the shape alone, never on ``threads``: OpenBLAS's kernels round a
    # block's sums in an order that depends on the block's size, so a split that followed
    # the thread count would give other last bits at another count (ncnn's results do not
    # change with it). Along the batch (numpy's batched product is a product per item), or
    # along the longer of the output's two axes (columns preferred: each block then reads
    # all of a, a slice of b) in up to BLOCKS parts; the threads take the blocks in turn
    if batch > 1:
        jobs = [
            (a[lo:hi] if a.ndim == 3 else a, b[lo:hi] if b.ndim == 3 else b, out[lo:hi])
            for lo, hi in _blocks(batch, min(BLOCKS, batch))
        ]
    elif n >= 2 * m:
        jobs = [(a, b[..., lo:hi], out[..., lo:hi]) for lo, hi in _blocks(n, max(1, min(BLOCKS, n // 64)))]
    else:
        jobs = [
            (a[..., lo:hi, :], b, out[..., lo:hi, :]) for lo, hi in _blocks(m, max(1, min(BLOCKS, m // 32)))
        ]
    if threads <= 1 or len(jobs) == 1:
        for a_, b_, out_ in jobs:
            np.matmul(a_, b_, out=out_)
        return
    err = np.geterr()
    from .cpu import _thread_pool

    # the pool's threads do not inherit the caller's np.errstate (the extractor silences
    # inf/nan warnings, as ncnn prints none): each job runs under the caller's settings
    groups = [jobs[i::threads] for i in range(min(threads, len(jobs)))]
    pool = _thread_pool()
    futures = [pool.submit(_mm_all, g, err) for g in groups[1:]]
    _mm_all(groups[0], err)
    for f in futures:
        f.result()


def _mm_all(jobs: list[tuple[np.ndarray, np.ndarray, np.ndarray]], err) -> None:
    with np.errstate(**err):
        for a, b, out in jobs:
            np.matmul(a, b, out=out)
