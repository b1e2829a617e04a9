"""What Tencent/ncnn's own ``python/tests`` check, written for ncnn_c (issue 14, section 2).

ncnn's tests are not vendored: this module exercises the same behaviours in our own code, and
``tests/ncnn_python_tests.py`` runs ncnn's files themselves, unchanged, from a checkout.
"""

from __future__ import annotations

import gc
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest

import ncnn_c as ncnn


def test_extractor_has_no_constructor():
    with pytest.raises(TypeError, match="No constructor defined"):
        ncnn.Extractor()
    net = ncnn.Net()
    with net.create_extractor() as ex:
        assert isinstance(ex, ncnn.Extractor)


# ----------------------------------------------------------------------------- Mat, as ncnn's test_mat

SIZES = [(1,), (2, 3), (4, 5, 6), (7, 8, 9, 10)]
FIELDS = {1: ("w",), 2: ("w", "h"), 3: ("w", "h", "c"), 4: ("w", "h", "d", "c")}


def _shape_of(m) -> tuple[int, ...]:
    return tuple(getattr(m, f) for f in FIELDS[m.dims])


@pytest.mark.parametrize("sizes", SIZES)
@pytest.mark.parametrize("as_tuple", [False, True])
@pytest.mark.parametrize("kwargs", [{}, {"elemsize": 4}, {"elemsize": 4, "elempack": 1}, {"allocator": None}])
def test_mat_constructors(sizes, as_tuple, kwargs):
    m = ncnn.Mat(sizes, **kwargs) if as_tuple else ncnn.Mat(*sizes, **kwargs)
    assert m.dims == len(sizes) and _shape_of(m) == sizes
    assert (m.elemsize, m.elempack, m.allocator) == (4, 1, None)
    assert not m.empty() and m.refcount == 1 and m.elembits() == 32
    shape = m.shape()
    assert shape.dims == m.dims and _shape_of(shape) == sizes
    # ncnn aligns every channel to 16 bytes: 1 -> 4, 2x3 -> 8, whole planes beyond
    assert m.total() == {1: 4, 2: 8, 3: 4 * 5 * 6, 4: 7 * 8 * 9 * 10}[m.dims]
    # numpy's shape is ncnn's reversed, float32 for 4-byte elements, for the Mat and np.array()
    for arr in (m.numpy(), np.array(m)):
        assert arr.shape == sizes[::-1] and arr.dtype == np.float32
    for copy in (m.clone(), ncnn.Mat()):
        if copy.dims == 0:
            copy.clone_from(m)
        assert copy.dims == m.dims and _shape_of(copy) == sizes and copy.data_ptr() != m.data_ptr()
    like = ncnn.Mat()
    like.create_like(m)
    assert like.dims == m.dims and _shape_of(like) == sizes
    made = ncnn.Mat()
    made.create(sizes) if as_tuple else made.create(*sizes)
    assert made.dims == m.dims and _shape_of(made) == sizes


@pytest.mark.parametrize("elemsize,dtype", [(1, np.int8), (2, np.float16), (4, np.float32)])
def test_mat_elemsize_gives_dtype(elemsize, dtype):
    m = ncnn.Mat(3, elemsize=elemsize, elempack=1)
    assert m.numpy().dtype == dtype and m.elembits() == 8 * elemsize


@pytest.mark.parametrize("shape", [(12,), (12, 11), (12, 11, 3), (12, 11, 7, 3)])
@pytest.mark.parametrize("dtype", [np.uint8, np.float32])
def test_array_round_trip(shape, dtype):
    array = (np.random.default_rng(3).uniform(0, 127, shape)).astype(dtype)
    back = np.array(ncnn.Mat(array))
    assert back.shape == shape
    np.testing.assert_array_equal(back.view(array.dtype), array)


def test_fill_views_and_reshape():
    m = ncnn.Mat(1)
    m.fill(1.0)
    assert np.array(m)[0] == 1.0
    assert ncnn.Mat().reshape(1).dims == 0 and ncnn.Mat().reshape(1, 1, 1, 1).dims == 0
    for src, sizes in (((1,), (1, 1)), ((1,), (1, 1, 1, 1)), ((1, 2), (2, 1, 1)), ((1, 2, 3), (2, 1, 3, 1))):
        for r in (ncnn.Mat(*src).reshape(*sizes), ncnn.Mat(src).reshape(sizes)):
            assert r.dims == len(sizes) and _shape_of(r) == sizes
    vol = ncnn.Mat(1, 2, 3, 4)
    dr = vol.channel(1).depth_range(1, 2)
    assert (dr.dims, dr.w, dr.h, dr.c) == (3, 1, 2, 2)
    cr = ncnn.Mat(1, 2, 3).channel_range(0, 2)
    assert (cr.dims, cr.w, cr.h, cr.c) == (3, 1, 2, 2)
    rr = ncnn.Mat(1, 2).row_range(0, 2)
    assert (rr.dims, rr.w, rr.h) == (2, 1, 2)
    rg = ncnn.Mat(2).range(0, 2)
    assert (rg.dims, rg.w) == (1, 2)
    ch = ncnn.Mat(2, 3, 4).channel(1)
    assert (ch.dims, ch.w, ch.h, ch.c) == (2, 2, 3, 1)
    dp = vol.channel(1).depth(1)
    assert (dp.dims, dp.w, dp.h) == (2, 1, 2)


def test_getitem_setitem_and_refcount():
    m = ncnn.Mat(2)
    m.fill(1)
    assert m[0] == 1.0 and m[1] == 1.0
    m[0] = 2.0
    assert m[0] == 2.0 and m[1] == 1.0
    assert m.refcount == 1
    m.addref()
    assert m.refcount == 2
    m.release()
    assert m.refcount is None and m.empty()


PIXELS = np.random.default_rng(11).integers(0, 256, (300, 500, 3), dtype=np.uint8)


@pytest.mark.parametrize("stride", [None, 500 * 3])
def test_pixels_in(stride):
    """from_pixels* read a (300, 400) image, alone or inside 500-pixel rows (``stride``)."""
    pixels = np.ascontiguousarray(PIXELS[:, :400]) if stride is None else PIXELS
    st = () if stride is None else (stride,)
    kw = {} if stride is None else {"stride": stride}
    PT = ncnn.Mat.PixelType
    m = ncnn.Mat.from_pixels(pixels, PT.PIXEL_RGB, 400, 300, **kw)
    assert (m.dims, m.w, m.h, m.c) == (3, 400, 300, 3)
    for y, x, q in ((0, 0, 0), (200, 150, 1), (299, 399, 2)):
        assert pixels[y, x, q] == m.channel(q).row(y)[x]
    same = ncnn.Mat.from_pixels_resize(pixels, PT.PIXEL_BGR2RGB, 400, 300, *st, 400, 300)
    for y, x, q in ((0, 0, 0), (200, 150, 1), (299, 399, 2)):
        assert pixels[y, x, q] == same.channel(2 - q).row(y)[x]
    half = ncnn.Mat.from_pixels_resize(pixels, PT.PIXEL_BGR2RGB, 400, 300, *st, 200, 150)
    assert (half.dims, half.w, half.h, half.c) == (3, 200, 150, 3)
    roi = ncnn.Mat.from_pixels_roi(pixels, PT.PIXEL_RGB, 400, 300, *st, 100, 75, 200, 150)
    assert (roi.w, roi.h, roi.c) == (200, 150, 3)
    for y, x, q in ((75, 100, 0), (150, 200, 1), (224, 299, 2)):
        assert pixels[y, x, q] == roi.channel(q).row(y - 75)[x - 100]
    small = ncnn.Mat.from_pixels_roi_resize(pixels, PT.PIXEL_RGB, 400, 300, *st, 100, 75, 200, 150, 100, 75)
    assert (small.dims, small.w, small.h, small.c) == (3, 100, 75, 3)


@pytest.mark.parametrize(
    "mean,norm", [([], [0.007843] * 3), ([127.5] * 3, []), ([127.5] * 3, [0.007843] * 3)]
)
def test_substract_mean_normalize(mean, norm):
    pixels = np.ascontiguousarray(PIXELS[:, :400])
    m = ncnn.Mat.from_pixels(pixels, ncnn.Mat.PixelType.PIXEL_RGB, 400, 300)
    m.substract_mean_normalize(mean, norm)
    want = (float(pixels[0, 0, 0]) - (mean[0] if mean else 0.0)) * (norm[0] if norm else 1.0)
    assert abs(m.channel(0).row(0)[0] - want) < 1e-5


# ----------------------------------------------------------------------------- allocators, Blob, Option, ParamDict


@pytest.mark.parametrize("cls", ["PoolAllocator", "UnlockedPoolAllocator"])
def test_pool_allocators(cls):
    pool = getattr(ncnn, cls)()
    pool.set_size_compare_ratio(0.5)
    buf = pool.fastMalloc(10 * 1024)
    assert buf is not None
    pool.fastFree(buf)
    pool.clear()


def test_blob_fields():
    blob = ncnn.Blob()
    blob.name, blob.producer, blob.consumer, blob.shape = "myblob", 0, 0, ncnn.Mat(1)
    assert (blob.name, blob.producer, blob.consumer) == ("myblob", 0, 0)
    assert (blob.shape.dims, blob.shape.w) == (1, 1)


OPTION_FLAGS = [
    "lightmode", "use_winograd_convolution", "use_sgemm_convolution", "use_int8_inference",
    "use_vulkan_compute", "use_bf16_packed", "use_bf16_storage", "use_fp16_packed", "use_fp16_storage",
    "use_fp16_arithmetic", "use_int8_packed", "use_int8_storage", "use_int8_arithmetic",
    "use_packing_layout", "use_subgroup_ops", "use_tensor_storage",
]  # fmt: skip


def test_option_fields():
    opt = ncnn.Option()
    for flag in OPTION_FLAGS:
        for v in (True, False):
            setattr(opt, flag, v)
            assert getattr(opt, flag) is v, flag
    assert opt.num_threads == ncnn.get_physical_big_cpu_count()
    opt.num_threads = 1
    assert opt.num_threads == 1
    allocator = ncnn.PoolAllocator()
    for name in ("blob_allocator", "workspace_allocator"):
        assert getattr(opt, name) is None
        setattr(opt, name, allocator)
        assert getattr(opt, name) is allocator
    assert opt.openmp_blocktime == 20
    opt.openmp_blocktime = 40
    assert opt.openmp_blocktime == 40


def test_paramdict_types():
    pd = ncnn.ParamDict()
    assert pd.type(0) == 0 and pd.get(0, -1) == -1
    pd.set(1, 1)
    assert pd.type(1) == 2 and pd.get(1, -1) == 1
    pd.set(2, 2.0)
    assert pd.type(2) == 3 and pd.get(2, -2.0) == 2.0
    pd.set(3, ncnn.Mat(1))
    assert pd.type(3) == 4 and pd.get(3, ncnn.Mat()).dims == 1


# ----------------------------------------------------------------------------- Net and Extractor, as ncnn's tests

# ncnn's tests/test.param: a 3x3 convolution of a 227x227x3 input, then an InnerProduct to 1 value
TEST_PARAM = """7767517
3 3
Input            data                             0 1 data
Convolution      conv0_fwd                        1 1 data conv0_fwd 0=3 1=3 11=3 2=1 12=1 3=1 13=1 4=0 14=0 5=1 6=81
InnerProduct     dense0_fwd                       1 1 conv0_fwd output 0=1 1=1 2=151875
"""


def _weights() -> bytes:
    """ncnn's test_net_mem weights: zeros with the fp32 tag (0x01306B47) before each weight blob."""
    modelbin = bytearray(303940)
    modelbin[0:4] = modelbin[180:184] = bytes((71, 107, 48, 1))
    return bytes(modelbin)


@pytest.fixture
def test_param(tmp_path) -> str:
    path = tmp_path / "test.param"
    path.write_text(TEST_PARAM)
    return str(path)


@pytest.mark.parametrize("weights", ["empty", "mem"])
@pytest.mark.parametrize("vulkan", [False, pytest.param(True, marks=pytest.mark.gpu)])
def test_net_runs_ncnn_test_param(test_param, weights, vulkan):
    with ncnn.Net() as net:
        net.opt.use_vulkan_compute = vulkan
        assert net.load_param(test_param) == 0
        if weights == "empty":
            assert net.load_model(ncnn.DataReaderFromEmpty()) == 0
        else:
            assert net.load_model_mem(_weights()) == 0
        assert len(net.blobs()) == 3 and len(net.layers()) == 3
        assert net.input_names() == ["data"] and net.output_names() == ["output"]
        with net.create_extractor() as ex:
            ex.input("data", ncnn.Mat((227, 227, 3)))
            ret, out = ex.extract("output")
        assert ret == 0 and (out.dims, out.w) == (1, 1)
        net.clear()
        assert len(net.blobs()) == 0 and len(net.layers()) == 0


@pytest.mark.parametrize("by_index", [False, True])
def test_extractor_with_allocators(test_param, by_index):
    pool = ncnn.PoolAllocator()
    net = ncnn.Net()
    assert net.load_param(test_param) == 0
    net.load_model(ncnn.DataReaderFromEmpty())
    ex = net.create_extractor()
    ex.set_light_mode(True)
    ex.set_blob_allocator(pool)
    ex.set_workspace_allocator(pool)
    data, conv, output = (0, 1, 2) if by_index else ("data", "conv0_fwd", "output")
    assert ex.input(data, ncnn.Mat((227, 227, 3))) == 0
    ret, out = ex.extract(conv)
    assert ret == 0 and (out.dims, out.w, out.h, out.c) == (3, 225, 225, 3)
    ret, out = ex.extract(output)
    assert ret == 0 and (out.dims, out.w) == (1, 1)
    ex.clear()


def test_custom_python_layer(tmp_path):
    made: list = []

    class AddOne(ncnn.Layer):
        def __init__(self):
            ncnn.Layer.__init__(self)
            self.one_blob_only = True
            made.append(self)

        def forward(self, bottom_blob, top_blob, opt):
            x = np.array(bottom_blob) + 1
            top_blob.clone_from(ncnn.Mat(x), opt.blob_allocator)
            return -100 if top_blob.empty() else 0

    param = tmp_path / "custom_layer.param"
    param.write_text("7767517\n2 2\nInput data 0 1 data\nCustomLayer cl_fwd 1 1 data output\n")
    net = ncnn.Net()
    net.register_custom_layer("CustomLayer", AddOne, made.remove)
    assert net.load_param(str(param)) == 0
    net.load_model(ncnn.DataReaderFromEmpty())
    assert len(net.blobs()) == 2 and len(net.layers()) == 2 and len(made) == 1
    x = ncnn.Mat(1)
    x.fill(1.0)
    with net.create_extractor() as ex:
        ex.input("data", x)
        ret, out = ex.extract("output")
    assert ret == 0 and (out.dims, out.w) == (1, 1) and out[0] == 2.0
    net.clear()
    assert len(net.blobs()) == 0 and len(net.layers()) == 0 and not made


# ----------------------------------------------------------------------------- Vulkan device, as ncnn's tests


@pytest.mark.gpu
def test_gpu_api_and_device():
    assert ncnn.create_gpu_instance() == 0
    assert ncnn.get_gpu_count() > 0 and ncnn.get_default_gpu_index() >= 0
    for info in (ncnn.get_gpu_info(0), ncnn.get_gpu_device(0).info(), ncnn.VulkanDevice(0).info()):
        assert info.api_version() > 0 and info.driver_version() > 0 and info.vendor_id() > 0
        # ncnn's test asks device_id() > 0, which lavapipe (device id 0) fails, with ncnn too
        assert info.device_id() >= 0
        assert info.pipeline_cache_uuid() is not None and info.type() >= 0
    for target in (0, ncnn.get_gpu_device(0)):
        net = ncnn.Net()
        assert net.vulkan_device() is None
        net.set_vulkan_device(target)
        assert net.vulkan_device() is not None


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


# ----------------------------------------------------------------------------- ncnn.utils, ncnn.model_zoo

MODELS = Path(__file__).resolve().parents[1] / "models"


def _photo() -> np.ndarray:
    """models/cat.jpg as a BGR uint8 (h, w, 3) array, as the zoo's models take images."""
    from PIL import Image

    return np.ascontiguousarray(np.asarray(Image.open(MODELS / "cat.jpg").convert("RGB"))[:, :, ::-1])


@pytest.fixture
def model_home(tmp_path, monkeypatch):
    """NCNN_HOME empty, NCNN_REPO a local directory holding the SqueezeNet files: the store's
    download path runs (through urllib's file:// support) without a network."""
    repo = tmp_path / "repo"
    repo.mkdir()
    for name in ("squeezenet_v1.1.param", "squeezenet_v1.1.bin"):
        shutil.copy(MODELS / name, repo / name)
    monkeypatch.setenv("NCNN_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("NCNN_REPO", repo.as_uri())
    return tmp_path


def test_submodules_exist_like_pypi():
    import importlib

    pypi = importlib.import_module("ncnn")
    importlib.import_module("ncnn.model_zoo")  # the PyPI subpackages, loaded to compare
    importlib.import_module("ncnn.utils")

    assert ncnn.model_zoo.get_model_list()  # reachable as attributes, as after PyPI's import
    for name in ("download", "check_sha1", "Point", "Rect", "Detect_Object", "Face_Object", "KeyPoint",
                 "draw_detection_objects", "draw_faceobjects", "draw_pose", "print_topk"):  # fmt: skip
        assert hasattr(pypi.utils, name) and hasattr(ncnn.utils, name), name
    for name in ("xywh2xyxy", "xyxy2xywh", "make_grid", "sigmoid", "softmax", "iou_of", "area_of", "nms"):
        assert hasattr(ncnn.utils.functional, name), name
    built = set(ncnn.model_zoo.get_model_list())
    assert built | set(ncnn.model_zoo.ABSENT) == set(pypi.model_zoo.get_model_list())
    assert not built & set(ncnn.model_zoo.ABSENT)
    with pytest.raises(NotImplementedError, match="not ported"):
        ncnn.model_zoo.get_model("YoloV5s")
    with pytest.raises(ValueError, match="not among"):
        ncnn.model_zoo.get_model("no_such_model")


def test_functional_matches_pypi():
    import ncnn.utils.functional as ref

    from ncnn_c.utils import functional as ours

    gen = np.random.default_rng(7)
    xywh = gen.uniform(10, 50, (30, 4)).astype(np.float32)
    np.testing.assert_array_equal(ours.xywh2xyxy(xywh), ref.xywh2xyxy(xywh))
    np.testing.assert_array_equal(ours.xyxy2xywh(xywh), ref.xyxy2xywh(xywh))
    np.testing.assert_array_equal(ours.make_grid(5, 3), ref.make_grid(5, 3))
    np.testing.assert_allclose(ours.sigmoid(xywh), ref.sigmoid(xywh))
    logits = gen.standard_normal((4, 9)).astype(np.float32)
    np.testing.assert_allclose(ours.softmax(logits.copy()), ref.softmax(logits.copy()), rtol=1e-6)
    boxes = ours.xywh2xyxy(xywh)
    np.testing.assert_allclose(ours.iou_of(boxes, boxes[:1]), ref.iou_of(boxes, boxes[:1]))
    scores = gen.uniform(0, 1, 30)
    for top_k in (-1, 3):
        assert ours.nms(boxes, scores, 0.3, top_k) == [int(i) for i in ref.nms(boxes, scores, 0.3, top_k)]


def test_objects_and_drawing():
    from ncnn_c.utils import (
        Detect_Object,
        Face_Object,
        KeyPoint,
        Point,
        Rect,
        draw_detection_objects,
        draw_faceobjects,
        draw_pose,
    )

    assert Rect(0, 0, 2, 2).intersection_area(Rect(1, 1, 2, 2)) == 1.0
    assert Rect(0, 0, 2, 2).intersection_area(Rect(5, 5, 1, 1)) == 0.0  # ncnn's says 12: a bug
    img = np.zeros((60, 80, 3), np.uint8)
    obj = Detect_Object(label=1, prob=0.9, x=10, y=30, w=20, h=15)
    assert draw_detection_objects(img, ["bg", "cat"], [obj], show=False) is img
    assert (img[30, 10:30] == (255, 0, 0)).all()  # the box's top edge, blue in BGR
    assert (img[:30] == 255).any()  # the white label above it
    img = np.zeros((60, 80, 3), np.uint8)
    face = Face_Object()
    face.rect, face.prob, face.landmark = Rect(5, 30, 20, 20), 0.5, [Point(12, 40)] * 5
    draw_faceobjects(img, [face], show=False)
    assert (img[40, 12] == (0, 255, 255)).all() and (img[30, 5:25] == (255, 0, 0)).all()
    points = [KeyPoint() for _ in range(17)]
    for i, k in enumerate(points):
        k.p, k.prob = Point(40 + i, 50), 1.0
    draw_pose(img, points, show=False)
    assert (img[50, 40] == (0, 255, 0)).all()


def test_download_and_model_store(model_home, monkeypatch):
    from ncnn_c.model_zoo import model_store
    from ncnn_c.utils import check_sha1, download

    path = model_store.get_model_file("squeezenet_v1.1.param")
    assert Path(path) == model_home / "home" / "models" / "squeezenet_v1.1.param"
    assert check_sha1(path, model_store.short_hash("squeezenet_v1.1.param"))
    Path(path).write_text("damaged")  # a file that does not match is fetched again
    assert check_sha1(model_store.get_model_file("squeezenet_v1.1.param"), "a63d779a")
    with pytest.raises(ValueError, match="not available"):
        model_store.get_model_file("nothing.bin")
    # a file published in parts is fetched part by part and joined
    whole = (MODELS / "squeezenet_v1.1.bin").read_bytes()
    for i, part in enumerate((whole[:1000], whole[1000:])):
        (model_home / "repo" / f"split.bin.part{i + 1:02d}").write_bytes(part)
    sha1 = model_store._MODEL_SHA1["squeezenet_v1.1.bin"]
    monkeypatch.setitem(model_store._MODEL_SHA1, "split.bin", sha1)
    monkeypatch.setitem(model_store._SPLIT, "split.bin", 2)
    assert Path(model_store.get_model_file("split.bin")).read_bytes() == whole
    # download(): kept when it matches, a mismatch after fetching raises UserWarning
    url = (model_home / "repo" / "squeezenet_v1.1.param").as_uri()
    target = model_home / "d" / "x.param"
    assert download(url, target) == str(target) and check_sha1(target, "a63d779a")
    target.write_text("kept")
    assert download(url, target) == str(target) and target.read_text() == "kept"
    with pytest.raises(UserWarning, match="does not match"):
        download(url, target, overwrite=True, sha1_hash="0000")
    model_store.purge()
    assert not any(p.name.startswith("squeezenet") for p in (model_home / "home" / "models").iterdir())


def test_squeezenet_from_the_zoo_matches_pypi(model_home):
    import ncnn.model_zoo as ref_zoo

    img = _photo()
    ours = ncnn.model_zoo.get_model("squeezenet")(img)
    ref = ref_zoo.get_model("squeezenet")(img)
    assert ours.shape == ref.shape == (1000,)
    np.testing.assert_allclose(ours, ref, atol=1e-4)
    assert int(np.argmax(ours)) == int(np.argmax(ref))


@pytest.mark.parametrize("clamp", [False, True])
def test_detection_rows_become_objects(clamp):
    from ncnn_c.model_zoo.model_zoo import MobileNet_SSD, MobileNetV3_SSDLite

    cls = MobileNetV3_SSDLite if clamp else MobileNet_SSD
    det = cls.__new__(cls)  # no model files needed to decode rows
    det.target_size = 300
    rows = np.array([[3, 0.75, 0.1, 0.2, 0.5, 0.6], [7, 0.5, -0.1, 0.0, 1.2, 0.5]], np.float32)
    objs = det._objects(ncnn.Mat(rows), 200, 100)
    assert [(o.label, o.prob) for o in objs] == [(3.0, 0.75), (7.0, 0.5)]
    r = objs[0].rect
    assert (r.x, r.y, r.w, r.h) == pytest.approx((20, 20, 80, 40), abs=1e-4)
    r = objs[1].rect
    want = (0, 0, 299 / 300 * 200, 50) if clamp else (-20, 0, 260, 50)
    assert (r.x, r.y, r.w, r.h) == pytest.approx(want, abs=1e-3)
    assert det._objects(ncnn.Mat(), 200, 100) == []


# ----------------------------------------------------------------------------- the runner of ncnn's tests


def test_runner_of_ncnn_python_tests(tmp_path, capsys):
    """tests/ncnn_python_tests.py on a stand-in for ncnn's python/tests: each implementation is
    the one imported as ``ncnn``, files open relative to the copy, regressions are counted."""
    sys.path.insert(0, str(Path(__file__).parent))
    try:
        import ncnn_python_tests as runner
    finally:
        sys.path.pop(0)
    tests = tmp_path / "tests"
    tests.mkdir()
    (tests / "test.param").write_text("7767517\n1 1\nInput data 0 1 data\n")
    (tests / "test_mat.py").write_text(
        "import ncnn\n\n"
        "def test_both():\n    net = ncnn.Net()\n    assert net.load_param('tests/test.param') == 0\n\n"
        "def test_pypi_only():\n    assert ncnn.__name__ == 'ncnn'\n\n"
        "def test_neither():\n    assert ncnn.Mat(3).w == 4\n"
    )
    assert runner.main([str(tests)]) == 1
    out = capsys.readouterr().out
    assert "ncnn: 2 of 3 passed" in out and "ncnn_c: 1 of 3 passed" in out
    assert "REGRESSION tests.test_mat::test_pypi_only" in out
    assert "tests the PyPI ncnn passes that ncnn_c does not: 1" in out
    assert runner.main([str(tests), "--impl", "ncnn_c"]) == 0
    with pytest.raises(SystemExit):
        runner.main([str(tmp_path)])  # not ncnn's tests directory
