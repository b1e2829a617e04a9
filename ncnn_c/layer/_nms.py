"""Sorting and non-maximum suppression shared by the detection layers.

ncnn sorts candidates with its own in-place quicksort (descending by score), which is not
stable: among equal scores the output order depends on the partition steps. Detections
with tied scores must come out in ncnn's order, so ``sort_descending`` takes numpy's sort
when all scores differ (the order is then unique) and replays ncnn's partition scheme only
when ties exist.

``nms_sorted`` is ncnn's greedy suppression over boxes already in score order: a box is kept
when no earlier kept box overlaps it by more than the threshold. The overlap test is done
in float32 with ncnn's formula, so borderline boxes are decided as ncnn decides them.
"""

from __future__ import annotations

import numpy as np


def _quicksort_order(scores: np.ndarray) -> np.ndarray:
    """The permutation ncnn's descending quicksort leaves (Hoare partition, middle pivot)."""
    s = scores.tolist()
    idx = list(range(len(s)))
    stack = [(0, len(s) - 1)]
    while stack:
        left, right = stack.pop()
        i, j = left, right
        p = s[(left + right) // 2]
        while i <= j:
            while s[i] > p:
                i += 1
            while s[j] < p:
                j -= 1
            if i <= j:
                s[i], s[j] = s[j], s[i]
                idx[i], idx[j] = idx[j], idx[i]
                i += 1
                j -= 1
        # the two halves are disjoint, so the order they are processed in does not matter
        if left < j:
            stack.append((left, j))
        if i < right:
            stack.append((i, right))
    return np.asarray(idx, dtype=np.intp)


def sort_descending(scores: np.ndarray, k: int | None = None) -> np.ndarray:
    """Indices that order ``scores`` from high to low exactly as ncnn's qsort_descent_inplace.

    With ``k``, only the first ``k`` of that order are returned (and only they need to be
    exact: ties further down do not force the slow replay).
    """
    n = scores.shape[0]
    if n < 2:
        return np.arange(n, dtype=np.intp)
    order = np.argsort(-scores, kind="stable")
    ranked = scores[order]
    if np.isnan(ranked).any():
        return order if k is None else order[:k]
    # ties decide nothing when they lie past the k-th place and do not straddle it
    m = n if k is None or k >= n else k + 1
    if not np.any(ranked[1:m] == ranked[: m - 1]):
        return order if k is None else order[:k]
    full = _native_order(scores)
    if full is None:
        full = _quicksort_order(scores)
    return full if k is None else full[:k]


def _native_order(scores: np.ndarray) -> np.ndarray | None:
    """_quicksort_order in C (a Python replay of many ties takes tens of ms); None without
    the native kernels or for other than float32 scores."""
    if scores.dtype != np.float32:
        return None
    from .._native.cpu import cpu_kernels

    native = cpu_kernels()
    return None if native is None else native.qsort_desc(scores)


# below this many boxes the whole overlap matrix is cheaper than one pass per kept box
_MATRIX_NMS = 1024


def _suppresses(x1, y1, x2, y2, areas, thr, product, k, rest):
    """Whether box ``k`` suppresses each box of ``rest`` (index array or slice), ncnn's test."""
    ax1, ay1, ax2, ay2 = x1[rest], y1[rest], x2[rest], y2[rest]
    bx1, by1, bx2, by2 = x1[k], y1[k], x2[k], y2[k]
    apart = (ax1 > bx2) | (ax2 < bx1) | (ay1 > by2) | (ay2 < by1)
    inter = (np.minimum(ax2, bx2) - np.maximum(ax1, bx1)) * (np.minimum(ay2, by2) - np.maximum(ay1, by1))
    inter[apart] = 0
    union = areas[rest] + areas[k] - inter
    if product:
        return inter > thr * union
    return inter / union > thr


def nms_sorted(
    boxes: np.ndarray,
    threshold: float,
    areas: np.ndarray | None = None,
    product: bool = False,
    limit: int | None = None,
) -> np.ndarray:
    """Indices of the boxes (rows x1, y1, x2, y2, float32, sorted by score) that survive NMS.

    ``areas`` defaults to (x2 - x1) * (y2 - y1). ``product`` selects the comparison
    ``inter > threshold * union`` (Yolov3DetectionOutput) instead of ``inter / union > threshold``.
    ``limit`` stops after that many kept boxes (the first ones do not depend on later boxes).
    """
    n = boxes.shape[0]
    if n == 0 or (limit is not None and limit <= 0):
        return np.zeros(0, dtype=np.intp)
    x1 = np.ascontiguousarray(boxes[:, 0], dtype=np.float32)
    y1 = np.ascontiguousarray(boxes[:, 1], dtype=np.float32)
    x2 = np.ascontiguousarray(boxes[:, 2], dtype=np.float32)
    y2 = np.ascontiguousarray(boxes[:, 3], dtype=np.float32)
    if areas is None:
        areas = (x2 - x1) * (y2 - y1)
    areas = np.ascontiguousarray(areas, dtype=np.float32)
    thr = np.float32(threshold)
    cap = n if limit is None else limit
    from .._native.cpu import cpu_kernels

    native = cpu_kernels()
    if native is not None:
        kept = native.nms(x1, y1, x2, y2, areas, float(thr), product, cap)
        if kept is not None:
            return kept
    picked: list[int] = []
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        if n <= _MATRIX_NMS:
            col = (slice(None), None)
            sup = _suppresses(x1, y1, x2, y2, areas, thr, product, col, slice(None))
            alive = np.ones(n, dtype=bool)
            for i in range(n):
                if alive[i]:
                    picked.append(i)
                    if len(picked) >= cap:
                        break
                    alive &= ~sup[i]
        else:
            rest = np.arange(n, dtype=np.intp)
            while rest.size:
                k = int(rest[0])
                picked.append(k)
                if len(picked) >= cap:
                    break
                rest = rest[1:]
                rest = rest[~_suppresses(x1, y1, x2, y2, areas, thr, product, k, rest)]
    return np.asarray(picked, dtype=np.intp)


def write_detections(top, labels: np.ndarray, scores: np.ndarray, boxes: np.ndarray, opt) -> int:
    """Fill ``top`` with rows [label, score, xmin, ymin, xmax, ymax]; nothing when there are none.

    ncnn leaves the top blob empty when no detection survives, and so do we.
    """
    n = int(scores.shape[0])
    if n == 0:
        return 0
    top.create(6, n, elemsize=4, elempack=1, allocator=opt.blob_allocator)
    if top.empty():
        return -100
    out = top.tensor()
    out[:, 0] = labels
    out[:, 1] = scores
    out[:, 2:6] = boxes
    return 0


def fma32(a, b, c) -> np.ndarray:
    """float32 a * b + c with one rounding, as the oracle's build contracts such expressions.

    A product of two float32 values is exact in float64, so only the final sum is rounded
    (twice, float64 then float32, which agrees with a true fma except in rare halfway cases).
    """
    prod = np.asarray(a, dtype=np.float64) * np.asarray(b, dtype=np.float64)
    return (prod + np.asarray(c, dtype=np.float64)).astype(np.float32)
