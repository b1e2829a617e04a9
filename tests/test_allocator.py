"""Pool allocators: block reuse, size ratio and drop threshold, thread safety, Mat integration."""

from __future__ import annotations

import gc
import logging
import threading

import numpy as np
import pytest

from ncnn_c.allocator import Allocator, PoolAllocator, UnlockedPoolAllocator, fast_malloc
from ncnn_c.mat import Mat
from ncnn_c.option import Option

POOLS = [PoolAllocator, UnlockedPoolAllocator]


def test_fast_malloc_is_aligned_and_sized():
    for size in (0, 1, 17, 4096, 100003):
        buf = fast_malloc(size)
        assert buf.dtype == np.uint8 and buf.ndim == 1 and buf.nbytes == size
        assert size == 0 or buf.ctypes.data % 64 == 0
        buf[:] = 1  # writable
    with pytest.raises(ValueError):
        fast_malloc(-1)


def test_plain_allocator():
    a = Allocator()
    buf = a.fastMalloc(100)
    assert buf.nbytes == 100 and buf.ctypes.data % 64 == 0
    a.fastFree(buf)
    m = Mat(3, 4, allocator=a)
    assert m.allocator is a and not m.empty()


@pytest.mark.parametrize("cls", POOLS)
def test_freed_block_is_reused(cls):
    pool = cls()
    a = pool.fastMalloc(1000)
    assert pool.payouts == [(1000, a)] and pool.budgets == []
    pool.fastFree(a)
    assert pool.budgets == [(1000, a)] and pool.payouts == []
    b = pool.fastMalloc(900)  # 900 >= 0.75 * 1000 -> same block back
    assert b is a
    pool.fastFree(b)
    c = pool.fastMalloc(700)  # 700 < 750 -> too wasteful, new block
    assert c is not a and len(pool.budgets) == 1
    d = pool.fastMalloc(1001)  # too small a budget -> new block
    assert d is not a and d.nbytes == 1001


@pytest.mark.parametrize("cls", POOLS)
def test_size_compare_ratio(cls, caplog):
    pool = cls()
    assert pool.size_compare_ratio == 0.75
    pool.set_size_compare_ratio(0.5)
    a = pool.fastMalloc(1000)
    pool.fastFree(a)
    assert pool.fastMalloc(600) is a
    pool.fastFree(a)
    pool.set_size_compare_ratio(1.0)
    assert pool.fastMalloc(999) is not a  # only exact sizes match now
    assert pool.fastMalloc(1000) is a
    pool.set_size_compare_ratio(0.0)
    pool.fastFree(a)
    assert pool.fastMalloc(1) is a  # anything fits
    with caplog.at_level(logging.ERROR, logger="ncnn_c"):
        pool.set_size_compare_ratio(1.5)
    assert "ratio" in caplog.text and pool.size_compare_ratio == 0.0
    with pytest.raises(TypeError):
        pool.set_size_compare_ratio("big")


@pytest.mark.parametrize("cls", POOLS)
def test_size_drop_threshold(cls):
    pool = cls()
    assert pool.size_drop_threshold == 10
    pool.set_size_drop_threshold(3)
    bufs = [pool.fastMalloc(s) for s in (100, 200, 400)]
    for b in bufs:
        pool.fastFree(b)
    assert len(pool.budgets) == 3
    # nothing fits 10000 and every budget is smaller: the smallest block is dropped
    big = pool.fastMalloc(10000)
    assert sorted(s for s, _ in pool.budgets) == [200, 400]
    pool.fastFree(big)
    # nothing fits 10 and every budget is larger: the largest block is dropped
    pool.fastMalloc(10)
    assert sorted(s for s, _ in pool.budgets) == [200, 400]
    pool.fastMalloc(10)
    assert sorted(s for s, _ in pool.budgets) == [200, 400]  # below threshold now: nothing dropped


@pytest.mark.parametrize("cls", POOLS)
def test_clear_and_wild_free(cls, caplog):
    pool = cls()
    a = pool.fastMalloc(64)
    pool.fastFree(a)
    pool.clear()
    assert pool.budgets == []
    with caplog.at_level(logging.ERROR, logger="ncnn_c"):
        pool.fastFree(np.zeros(8, np.uint8))
    assert "never gave out" in caplog.text
    assert pool.payouts == [] and pool.budgets == []


def test_pool_thread_safety_smoke():
    pool = PoolAllocator()
    errors = []

    def worker(seed):
        rng = np.random.default_rng(seed)
        try:
            for _ in range(300):
                bufs = [pool.fastMalloc(int(s)) for s in rng.integers(1, 5000, 3)]
                for b in bufs:
                    b[:4] = seed
                for b in bufs:
                    assert b[0] == seed  # nobody else got this block meanwhile
                    pool.fastFree(b)
        except Exception as e:  # noqa: BLE001
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert pool.payouts == []
    assert len({id(b) for _, b in pool.budgets}) == len(pool.budgets)


@pytest.mark.parametrize("cls", POOLS)
def test_mat_gives_block_back_when_last_view_goes(cls):
    pool = cls()
    m = Mat(20, 20, 4, allocator=pool)
    assert len(pool.payouts) == 1
    ptr = m.data_ptr()
    view = m.channel(2)
    shared = Mat()
    shared.share_from(m)
    arr = m.numpy()
    del m
    gc.collect()
    assert len(pool.payouts) == 1  # still referenced by the view, the shared Mat and the array
    del view, shared
    gc.collect()
    assert len(pool.payouts) == 1
    del arr
    gc.collect()
    assert len(pool.payouts) == 0 and len(pool.budgets) == 1
    again = Mat(20, 20, 4, allocator=pool)
    assert again.data_ptr() == ptr


def test_mat_release_returns_block():
    pool = PoolAllocator()
    m = Mat(100, allocator=pool)
    m.release()
    assert len(pool.payouts) == 0 and len(pool.budgets) == 1
    m.create(90, allocator=pool)  # 360 bytes fits the 400-byte block
    assert len(pool.budgets) == 0


def test_allocators_as_option_allocators():
    opt = Option()
    opt.blob_allocator = PoolAllocator()
    opt.workspace_allocator = UnlockedPoolAllocator()
    top = Mat()
    top.create(8, 8, 3, allocator=opt.blob_allocator)
    ws = Mat(8, 8, 3, allocator=opt.workspace_allocator)
    assert top.allocator is opt.blob_allocator and ws.allocator is opt.workspace_allocator
    c = top.clone(opt.workspace_allocator)
    assert c.allocator is opt.workspace_allocator
    assert len(opt.blob_allocator.payouts) == 1 and len(opt.workspace_allocator.payouts) == 2
    r = Mat(np.arange(30, dtype=np.float32)).reshape(5, 3, 2, allocator=opt.blob_allocator)
    assert r.allocator is opt.blob_allocator and len(opt.blob_allocator.payouts) == 2


def test_custom_allocator_subclass():
    class Counting(Allocator):
        def __init__(self):
            self.live = 0

        def fastMalloc(self, size):
            self.live += 1
            return bytearray(size)

        def fastFree(self, buf):
            assert isinstance(buf, bytearray)
            self.live -= 1

    alloc = Counting()
    m = Mat(np.ones((2, 3, 4), np.float32), allocator=alloc)
    assert alloc.live == 1 and np.array(m).sum() == 24
    del m
    gc.collect()
    assert alloc.live == 0


def test_failing_allocator_gives_empty_mat(caplog):
    class Short(Allocator):
        def fastMalloc(self, size):
            return np.zeros(1, np.uint8)

    with caplog.at_level(logging.ERROR, logger="ncnn_c"):
        m = Mat(100, allocator=Short())
    assert m.empty() and "allocation" in caplog.text
