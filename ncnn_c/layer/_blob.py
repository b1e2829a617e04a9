"""Writing a computed numpy array into a top blob."""

from __future__ import annotations

import numpy as np


def store_array(top, array: np.ndarray, opt) -> int:
    """Create ``top`` as an fp32 elempack-1 blob of ``array``'s numpy shape ((w,), (h, w),
    (c, h, w) or (c, d, h, w)) from ``opt.blob_allocator`` and copy ``array`` in.
    Returns 0, or -100 when the allocation fails."""
    top.create(*reversed(array.shape), elemsize=4, elempack=1, allocator=opt.blob_allocator)
    if top.empty():
        return -100
    top.tensor()[...] = array
    return 0
