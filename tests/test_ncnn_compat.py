"""What Tencent/ncnn's own ``python/tests`` check, written for ncnn_c (issue 14, section 2).

ncnn's tests are not vendored: this module exercises the same behaviours in our own code, and
``tests/ncnn_python_tests.py`` runs ncnn's files themselves, unchanged, from a checkout.
"""

from __future__ import annotations

import gc
import sys

import numpy as np
import pytest

import ncnn_c as ncnn


def test_extractor_has_no_constructor():
    with pytest.raises(TypeError, match="No constructor defined"):
        ncnn.Extractor()
    net = ncnn.Net()
    with net.create_extractor() as ex:
        assert isinstance(ex, ncnn.Extractor)


# ----------------------------------------------------------------------------- Mat(array) wraps


@pytest.mark.parametrize("dtype,fmt", [(np.int32, "i"), (np.float32, "f")])
def test_mat_from_array_sees_changes_both_ways(dtype, fmt):
    array = np.array([1, 2, 3], dtype=dtype)
    mat = ncnn.Mat(array)
    view = mat.numpy(format=fmt)
    assert view.dtype == dtype and mat.refcount is None  # foreign memory, as ncnn
    array[0] = 10
    assert view[0] == 10
    view[1] = 100
    assert array[1] == 100


@pytest.mark.parametrize(
    "shape,dtype",
    [
        ((12,), np.uint8),
        ((12, 11), np.float16),
        ((1, 11, 3), np.float32),  # one channel: cstep = w*h, unpadded
        ((4, 2, 2), np.float32),  # 16-byte channels: ncnn_c's own layout
        ((3, 2, 4, 2), np.float32),
        ((5, 4, 4), np.int8),
    ],
)
def test_mat_wraps_when_the_layout_allows(shape, dtype):
    array = (np.arange(int(np.prod(shape))) % 100).astype(dtype).reshape(shape)
    mat = ncnn.Mat(array)
    assert mat.data_ptr() == array.ctypes.data
    np.testing.assert_array_equal(mat.numpy(), array.view(mat.numpy().dtype))
    if len(shape) <= 2 or shape[0] == 1:
        assert mat.cstep == array.size  # one channel: w*h*d
        assert mat.total() * mat.elemsize == array.nbytes  # nothing claimed past the array


@pytest.mark.parametrize(
    "array",
    [
        np.zeros((2, 3, 5), np.float32),  # 60-byte channels: ncnn_c pads them to 64
        np.zeros((4, 6), np.float32)[:, ::2],  # strided
        np.zeros((3, 4), np.float32).T,  # Fortran order
        np.zeros(8, np.float64),  # converted to float32
        np.frombuffer(bytes(32), np.float32),  # read-only
    ],
    ids=["padded-channels", "strided", "transposed", "float64", "read-only"],
)
def test_mat_copies_when_the_layout_cannot_be_wrapped(array):
    mat = ncnn.Mat(array)
    assert not np.shares_memory(mat.raw(), array)
    if array.dtype == np.float32:  # float64 wraps its float32 conversion, no second copy
        assert mat.refcount == 1
    np.testing.assert_array_equal(mat.numpy(), array.astype(np.float32))


def test_wrapped_array_lives_as_long_as_the_mat_or_a_view():
    mat = ncnn.Mat(np.arange(4096, dtype=np.float32))  # nobody else holds the array
    row = mat.row(0)
    ch = mat.range(4000, 96)
    del mat
    gc.collect()
    np.empty(1 << 20, np.float32).fill(-1)  # reuse freed memory, were it freed
    assert row[4095] == 4095.0 and ch.numpy()[-1] == 4095.0


def test_mat_from_array_feeds_a_net_and_stays_untouched():
    net = ncnn.Net()
    assert net.load_param_mem("7767517\n2 2\nInput in 0 1 data\nReLU r 1 1 data y\n") == 0
    net.load_model(ncnn.DataReaderFromEmpty())
    for shape in ((3,), (3, 5), (1, 3, 5), (4, 4, 4)):
        array = np.linspace(-1, 1, int(np.prod(shape)), dtype=np.float32).reshape(shape)
        keep = array.copy()
        with net.create_extractor() as ex:
            ex.input("data", ncnn.Mat(array))  # light mode: ReLU must not work in place here
            ret, out = ex.extract("y")
        assert ret == 0
        np.testing.assert_array_equal(np.array(out), np.maximum(keep, 0))
        np.testing.assert_array_equal(array, keep)


@pytest.mark.gpu
def test_vulkan_replay_takes_wrapped_and_own_mats_in_turn():
    """A recording made with a padded Mat replays with a wrapped one (whose storage ends
    where its data does) and the other way round."""
    assert ncnn.get_gpu_count() > 0, "no Vulkan device (lavapipe is installed by ./run.sh)"
    net = ncnn.Net()
    net.opt.use_vulkan_compute = True
    assert net.load_param_mem("7767517\n3 3\nInput in 0 1 data\nReLU r 1 1 data y\nSigmoid s 1 1 y z\n") == 0
    net.load_model(ncnn.DataReaderFromEmpty())
    for shape in ((7,), (3, 5), (1, 3, 5)):
        array = np.linspace(-2, 2, int(np.prod(shape)), dtype=np.float32).reshape(shape)
        want = 1 / (1 + np.exp(-np.maximum(array, 0)))
        for mat in (ncnn.Mat.from_tensor(array), ncnn.Mat(array), ncnn.Mat.from_tensor(array)):
            ex = net.create_extractor()
            ex.input("data", mat)
            ret, out = ex.extract("z")
            assert ret == 0
            np.testing.assert_allclose(np.array(out), want, atol=1e-3)


# ----------------------------------------------------------------------------- batch, reshape, rows


def test_negative_batch_index():
    array = np.arange(2 * 3 * 4 * 5 * 6, dtype=np.float32).reshape(2, 3, 4, 5, 6)
    mat = ncnn.Mat(array, batch_index=-2)
    assert (mat.n, mat.dims, mat.w, mat.h, mat.d, mat.c) == (5, 4, 6, 4, 3, 2)
    np.testing.assert_array_equal(mat.numpy(batch_index=-2), array)
    np.testing.assert_array_equal(mat.numpy(batch_index=3), array)
    np.testing.assert_array_equal(mat.clone().numpy(batch_index=-2), array)
    with pytest.raises(ValueError):
        ncnn.Mat(array, batch_index=-6)
    with pytest.raises(ValueError):
        mat.numpy(batch_index=-6)


def test_reshape_and_create_with_five_sizes_raise_runtime_error():
    mat = ncnn.Mat((1, 2, 3))
    with pytest.raises(RuntimeError, match="shape must be 1, 2, 3 or 4 dims, not 5"):
        mat.reshape((1, 1, 1, 1, 1))
    with pytest.raises(RuntimeError, match="not 5"):
        mat.create((1, 1, 1, 1, 1))
    with pytest.raises(TypeError):
        mat.reshape(1, 1, 1, 1, 1)  # five separate sizes: no such overload, as PyPI


def test_rows_hold_python_floats():
    mat = ncnn.Mat(2, 3, 4, 5)
    mat.fill(6.0)
    row = mat.channel(1).depth(1).row(1)
    assert len(row) == 2 and type(row[0]) is float
    assert np.abs(row[0] - 6.0) < sys.float_info.min
    mat = ncnn.Mat(2, 3, 4)
    mat.fill(4.0)
    row = mat.channel(1).row(1)
    assert np.abs(row[0] - 4.0) < sys.float_info.min
    row[1] = 0.1  # writes go through, rounded to float32
    assert mat.channel(1).numpy()[1, 1] == np.float32(0.1)
    i8 = ncnn.Mat(np.arange(6, dtype=np.int8).reshape(2, 3))
    assert i8.row(1).tolist() == [3, 4, 5]
    f16 = ncnn.Mat(np.ones((2, 3), np.float16))
    assert f16.row(1).dtype == np.float16  # a memoryview cannot index fp16


def test_negative_index_counts_from_the_last_element():
    mat = ncnn.Mat(2, 3)  # 6 floats in an 8-float (16-byte aligned) storage
    mat.fill(-1.0)
    mat.numpy()[...] = np.arange(6).reshape(3, 2)
    assert mat[-1] == 5.0 and mat[-6] == 0.0
    mat[-2] = 40.0
    assert mat.numpy()[2, 0] == 40.0
    with pytest.raises(IndexError):
        mat[-7]
    vol = ncnn.Mat(3, 2, 2)  # two channels of 6 floats, 8 apart
    vol.numpy()[...] = np.arange(12).reshape(2, 2, 3)
    assert vol[-1] == 11.0 and vol[-6] == 6.0


# ----------------------------------------------------------------------------- Vulkan allocators

VK_ALLOCATORS = ("VkBlobAllocator", "VkWeightAllocator", "VkStagingAllocator", "VkWeightStagingAllocator")


@pytest.mark.gpu
@pytest.mark.parametrize("name", VK_ALLOCATORS)
def test_vk_allocator_memory_types_flags_and_images(name):
    assert ncnn.get_gpu_count() > 0, "no Vulkan device (lavapipe is installed by ./run.sh)"
    vkdev = ncnn.get_gpu_device(0)
    allocator = getattr(ncnn, name)(vkdev)
    assert allocator.buffer_memory_type_index >= 0
    assert allocator.image_memory_type_index >= 0
    for flag in ("mappable", "coherent"):
        old = getattr(allocator, flag)
        setattr(allocator, flag, not old)
        assert getattr(allocator, flag) == (not old)

    bufmem = allocator.fastMalloc(10 * 1024)
    assert isinstance(bufmem, ncnn.VkBufferMemory) and bufmem.capacity >= 10 * 1024
    allocator.fastFree(bufmem)

    img = allocator.fastMalloc(4, 4, 3, 4, 1)  # w, h, c, elemsize, elempack
    if name == "VkWeightStagingAllocator":
        assert img is None  # as ncnn: weight staging hands out no images
        return
    assert isinstance(img, ncnn.VkImageMemory) and (img.width, img.height, img.depth) == (4, 4, 3)
    backing = img._range
    assert backing is not None and backing.capacity >= 4 * 4 * 3 * 4
    used = allocator.stats()["used"]
    allocator.fastFree(img)
    assert allocator.stats()["used"] == used - backing.capacity
    allocator.fastFree(img)  # a second free gives nothing back twice
    assert allocator.stats()["used"] == used - backing.capacity
    if name != "VkStagingAllocator":  # ncnn's staging images take any packing
        assert allocator.fastMalloc(4, 4, 3, 12, 3) is None
