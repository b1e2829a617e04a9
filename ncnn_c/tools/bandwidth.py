"""Memory bandwidth, measured: what a decode step that reads every weight once is bound by.

``bench --llm`` divides the bytes a decode step reads by its time and prints that against
these figures (issue 30): the fraction of the machine's rate the decode reaches.

- CPU: ``threads`` threads each summing its part of a buffer larger than any cache
  (numpy's reductions release the GIL), the best of ``repeats``: bytes read per second.
- Vulkan: a device-local buffer copied to another ``copies`` times in one submit (one
  transfer barrier between copies), the best of ``repeats``: bytes read plus bytes written
  per second, how GPU memory bandwidth is usually quoted. On a device that is the CPU
  (lavapipe), a smaller buffer.
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np

CPU_BYTES = 256 << 20
GPU_BYTES = 512 << 20
GPU_BYTES_ON_CPU_DEVICE = 64 << 20


def cpu_read_bandwidth(threads: int, nbytes: int = CPU_BYTES, repeats: int = 5) -> float:
    """Bytes per second that ``threads`` threads read from memory (see the module)."""
    threads = max(1, threads)
    buf = np.ones(max(threads * 1024, nbytes // 4), np.float32)  # touched: no lazy zero pages
    parts = np.array_split(buf, threads)
    best = float("inf")
    with ThreadPoolExecutor(max_workers=threads) as pool:
        list(pool.map(np.sum, parts))  # the workers started, the pages faulted in
        for _ in range(repeats):
            t0 = time.perf_counter()
            list(pool.map(np.sum, parts))
            best = min(best, time.perf_counter() - t0)
    return buf.nbytes / best


def vulkan_copy_bandwidth(
    vkdev, nbytes: int | None = None, copies: int = 8, repeats: int = 3
) -> float | None:
    """Bytes read and written per second by device-local copies on ``vkdev`` (see the
    module); None when the buffers cannot be had."""
    from ..errors import NcnnError
    from ..gpu.command import VkCompute
    from ..gpu.vkmat import VkMat

    if nbytes is None:
        nbytes = GPU_BYTES_ON_CPU_DEVICE if int(vkdev.info.type) == 2 else GPU_BYTES
    alloc = vkdev.default_blob_allocator
    try:
        a = VkMat(nbytes // 4, allocator=alloc)
        b = VkMat(nbytes // 4, allocator=alloc)
    except (NcnnError, MemoryError):
        return None
    best = float("inf")
    cmd = VkCompute(vkdev)
    try:
        for r in range(repeats + 1):
            for i in range(copies):
                src, dst = (a, b) if i % 2 == 0 else (b, a)
                cmd._copy(src, dst, nbytes)
            t0 = time.perf_counter()
            if cmd.submit_and_wait() != 0:
                return None
            if r:  # the first run pages the buffers in
                best = min(best, time.perf_counter() - t0)
            cmd.reset()
    finally:
        cmd.destroy()
        a.release()
        b.release()
    return 2 * nbytes * copies / best


def mat_bytes(m) -> int:
    """The bytes of a Mat's values (either library's), padding left out."""
    return 0 if m.empty() else m.w * m.h * m.d * m.c * m.elemsize


def weight_bytes(net, fp16_gemm: bool = False) -> int:
    """Bytes of every array a loaded net's layers hold as their weights (``*_data``
    attributes: weight_data, bias_data, B_data, gamma_data, ...): what a decode step reads
    once, at the storage type loaded. ``fp16_gemm``: a Gemm whose constant B the CPU plan
    reads as fp16 (``Gemm.fp16_weights``: every value an fp16 one) counts 2 bytes a weight."""
    from ..mat import Mat
    from ..net.native.ops.transformer import fp16_weights

    total = 0
    for layer in net.layers():
        half = fp16_weights(layer) if fp16_gemm and hasattr(layer, "fp16_weights") else None
        if half is not None:
            total += layer.constantN * layer.constantK * 2
        for name, value in vars(layer).items():
            if not name.endswith("_data") or (half is not None and name == "B_data"):
                continue
            if isinstance(value, np.ndarray):
                total += value.nbytes
            elif isinstance(value, Mat):
                total += mat_bytes(value)
    return total
