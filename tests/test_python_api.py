"""The whole Python API of the PyPI ``ncnn`` package, checked against ncnn_c side by side.

``test_every_public_name_exists`` lists every public name of the PyPI package and every public
attribute of its classes and fails on any ncnn_c lacks, unless README.md's section
"Differences from the PyPI ncnn" names it under "Names not provided" with a reason. The other
tests run the same calls on both packages and compare what comes back.
"""

from __future__ import annotations

import inspect
import logging
import re
from pathlib import Path

import ncnn
import numpy as np
import pytest
from oracle import assert_bf16_bits, assert_fp16_bits, rng

import ncnn_c

README = Path(__file__).resolve().parent.parent / "README.md"

_KEEP: list[np.ndarray] = []


def pypi_mat(arr: np.ndarray, *args) -> ncnn.Mat:
    """A PyPI Mat from a private copy of ``arr``: its Mat(array) wraps the array's memory
    without keeping it alive, so the copy is kept here for the session."""
    keep = np.array(arr, copy=True)
    _KEEP.append(keep)
    return ncnn.Mat(keep, *args)


def _not_provided() -> set[str]:
    """Names README.md documents as deliberately absent (``- `Name` ...`` / ``- `Class.attr` ...``)."""
    text = README.read_text()
    m = re.search(r"^## Differences from the PyPI ncnn\n(.*?)(?=^## |\Z)", text, re.M | re.S)
    assert m, "README.md lacks the section 'Differences from the PyPI ncnn'"
    sub = re.search(r"^### Names not provided\n(.*?)(?=^##|\Z)", m.group(1), re.M | re.S)
    if not sub:
        return set()
    return set(re.findall(r"^- `([A-Za-z_][\w.]*)`", sub.group(1), re.M))


def _public(obj) -> list[str]:
    return sorted(a for a in dir(obj) if not a.startswith("_"))


def _instance(name: str):
    """An ncnn_c instance of class ``name`` where one can be made without a GPU, else None."""
    makers = {
        "Net": lambda: ncnn_c.Net(),
        "Extractor": lambda: ncnn_c.Net().create_extractor(),
        "ModelBinFromDataReader": lambda: ncnn_c.ModelBinFromDataReader(ncnn_c.DataReaderFromEmpty()),
        "ModelBinFromMatArray": lambda: ncnn_c.ModelBinFromMatArray([]),
        "BorderType": lambda: ncnn_c.BorderType.BORDER_CONSTANT,
    }
    maker = makers.get(name)
    if maker is None:
        cls = getattr(ncnn_c, name)
        try:
            return cls()
        except TypeError:
            return None  # needs a VulkanDevice
    return maker()


def _has_attribute(cls, inst, attr: str) -> bool:
    if hasattr(cls, attr) or (inst is not None and hasattr(inst, attr)):
        return True
    # classes that need a GPU to construct: an attribute their __init__ assigns
    init = getattr(cls, "__init__", None)
    return any(attr in getattr(k.__dict__.get("__init__"), "__code__", ()).co_names
               for k in cls.__mro__ if "__init__" in k.__dict__) if init else False  # fmt: skip


def test_every_public_name_exists():
    allowed = _not_provided()
    missing = []
    for name in _public(ncnn):
        if name in allowed:
            continue
        ref = getattr(ncnn, name)
        if not hasattr(ncnn_c, name):
            missing.append(name)
            continue
        if not inspect.isclass(ref):
            continue
        ours = getattr(ncnn_c, name)
        inst = _instance(name)
        for attr in _public(ref):
            if f"{name}.{attr}" not in allowed and not _has_attribute(ours, inst, attr):
                missing.append(f"{name}.{attr}")
    assert not missing, f"public names of the PyPI ncnn missing from ncnn_c: {missing}"


def test_allow_list_only_names_real_gaps():
    """Every name README excuses must exist in PyPI ncnn and really be missing here."""
    for entry in _not_provided():
        cls_name, _, attr = entry.partition(".")
        assert hasattr(ncnn, cls_name), entry
        if attr:
            assert hasattr(getattr(ncnn, cls_name), attr), entry
            assert not _has_attribute(getattr(ncnn_c, cls_name), _instance(cls_name), attr), entry
        else:
            assert not hasattr(ncnn_c, cls_name), entry


def test_ncnn_submodule_alias():
    # PyPI code sometimes reaches the extension module as ncnn.ncnn
    assert ncnn_c.ncnn.Mat is ncnn_c.Mat


# ----------------------------------------------------------------------------- Mat semantics


def test_refcount_addref_release_match_oracle():
    def trace(mod):
        out = []
        m = mod.Mat(4, 3, 2)
        out.append(m.refcount)
        m2 = mod.Mat(m)
        out.append((m.refcount, m2.refcount))
        m3 = m2.reshape(24)  # a dense reshape shares the allocation
        out.append(m.refcount)
        del m3
        out.append(m.refcount)
        m.addref()
        out.append(m.refcount)
        m2.release()
        out.append((m.refcount, m2.refcount, m2.dims))
        out.append((mod.Mat().refcount, m.channel(1).refcount, m.clone().refcount))
        out.append(m.reshape(2, 3, 4).refcount)  # padding changes: a copy of its own
        return out

    assert trace(ncnn_c) == trace(ncnn)


def test_channel_row_and_depth_views_alias_the_parent():
    data = rng(1).standard_normal((3, 4, 5, 6)).astype(np.float32)
    ours, ref = ncnn_c.Mat(data), pypi_mat(data)
    for m in (ours, ref):
        assert list(m.channel(2).row(3)) == pytest.approx(list(data[2, 0, 3]))
        r = m.channel(1).row(2)
        r[4] = 100.0
        m.channel(2).depth(3).fill(-5.0)
        m.channel(0).row_range(1, 2).fill(7.0)
        cs = m.channel(1).depth(1)
        assert (cs.dims, cs.w, cs.h, cs.c, cs.cstep) == (2, 6, 5, 1, 30)
    np.testing.assert_array_equal(ours.numpy(), ref.numpy())
    assert ours.numpy()[1, 0, 2, 4] == 100.0 and (ours.numpy()[2, 3] == -5.0).all()
    m3 = rng(2).standard_normal((2, 5, 7)).astype(np.float32)
    # 35 floats a channel: padded to 36 in both (PyPI's Mat(array) would keep 35)
    o3, r3 = ncnn_c.Mat(7, 5, 2), ncnn.Mat(7, 5, 2)
    for m in (o3, r3):
        m.numpy()[...] = m3
        z = m.depth(1)
        z.fill(3.0)
        assert (z.dims, z.w, z.h, z.cstep) == (2, 7, 5, 35)
        m.channel(1).row(4)[0] = 9.0
    np.testing.assert_array_equal(o3.numpy(), r3.numpy())


def _fields(m):
    return (m.n, m.dims, m.w, m.h, m.d, m.c, m.cstep, m.elemsize, m.elempack, m.total(), m.empty())


def _nstep(m) -> int:
    return int(re.search(r"nstep=(\d+)", repr(m)).group(1))


@pytest.mark.parametrize("shape", [(7,), (4, 3), (4, 3, 2), (3, 2, 4, 2), (13, 7, 3)])
@pytest.mark.parametrize("n", [1, 3])
def test_batch_create_reshape_clone_match_oracle(shape, n):
    ours, ref = ncnn_c.Mat(), ncnn.Mat()
    ours.create(*shape, n=n)
    ref.create(*shape, n=n)
    assert _fields(ours) == _fields(ref) and ours.nstep == _nstep(ref)
    vals = rng(3).standard_normal(ours.numpy("", 0).shape).astype(np.float32)
    ours.numpy("", 0)[...] = vals
    for b in range(n):  # PyPI's numpy(batch_index=...) is a copy; batch(b) views write through
        ref.batch(b).numpy()[...] = vals[b]
    np.testing.assert_array_equal(ours.numpy("", 0), ref.numpy("", 0))
    total = int(np.prod(shape))
    for new in [(total,), (total // shape[0], shape[0]), (shape[0], 1, total // shape[0])]:
        a, b = ours.reshape(*new), ref.reshape(*new)
        assert _fields(a) == _fields(b) and a.nstep == _nstep(b), new
        assert (a.refcount, ours.refcount) == (b.refcount, ref.refcount), new
        np.testing.assert_array_equal(a.numpy("", 0), b.numpy("", 0))
    c, d = ours.clone(), ref.clone()
    assert _fields(c) == _fields(d) and c.nstep == _nstep(d)
    np.testing.assert_array_equal(c.numpy("", 0), d.numpy("", 0))
    for b in range(n):
        np.testing.assert_array_equal(ours.batch(b).numpy(), ref.batch(b).numpy())
        assert _fields(ours.batch(b)) == _fields(ref.batch(b))
    x, y = ncnn_c.Mat(), ncnn.Mat()
    x.create_like(ours, 2)
    y.create_like(ref, 2)
    assert _fields(x) == _fields(y)
    assert _fields(ours.shape()) == _fields(ref.shape())


@pytest.mark.parametrize("shape", [(3, 5), (3, 2, 4, 5), (2, 3, 4, 5, 6)])
def test_array_with_batch_index_and_numpy_batch_view(shape):
    arr = rng(4).standard_normal(shape).astype(np.float32)
    for bi in range(len(shape)):
        ours, ref = ncnn_c.Mat(arr, bi), pypi_mat(arr, bi)
        assert _fields(ours) == _fields(ref)
        np.testing.assert_array_equal(ours.numpy("", bi), arr)
        np.testing.assert_array_equal(ours.numpy(), ref.numpy())
        for out_bi in range(len(shape)):
            np.testing.assert_array_equal(ours.numpy("", out_bi), ref.numpy("", out_bi))
    # the batch view writes through to item 1
    m = ncnn_c.Mat(arr, 0)
    m.numpy("", 0)[1] = 0.5
    np.testing.assert_array_equal(m.batch(1).numpy(), np.full(shape[1:], 0.5, np.float32))


def test_getitem_setitem_len_numpy_formats_match_oracle():
    vals = rng(5).standard_normal((2, 3, 5)).astype(np.float32)
    # Mat(w, h, c): both pad channels to 16 bytes (PyPI's Mat(array) would not)
    ours, ref = ncnn_c.Mat(5, 3, 2), ncnn.Mat(5, 3, 2)
    ours.fill(0.0)
    ref.fill(0.0)
    ours.numpy()[...] = vals
    ref.numpy()[...] = vals
    assert (len(ours), len(ncnn_c.Mat()), len(ncnn_c.Mat(3, 4))) == (
        len(ref),
        len(ncnn.Mat()),
        len(ncnn.Mat(3, 4)),
    )
    # element i of the raw storage: channel padding counts, as in ncnn
    for i in (0, 4, 5, 15, 17):
        assert ours[i] == ref[i]
    ours[16] = 2.5
    ref[16] = 2.5
    np.testing.assert_array_equal(ours.numpy(), ref.numpy())
    np.testing.assert_array_equal(ours.numpy("i"), ref.numpy("i"))
    np.testing.assert_array_equal(ours.numpy("f"), ref.numpy("f"))
    assert ours.numpy("i").dtype == ref.numpy("i").dtype == np.int32


def test_from_pixels_signatures_match_oracle():
    img = rng(6).integers(0, 256, (7, 13, 3), dtype=np.uint8)
    padded = np.zeros((7, 16, 3), np.uint8)
    padded[:, :13] = img
    flat = np.ascontiguousarray(padded).reshape(-1)
    t = ncnn.Mat.PixelType.PIXEL_BGR2RGB
    calls = [
        ("from_pixels", (img, int(t), 13, 7), {}),
        ("from_pixels", (flat, int(t), 13, 7, 48), {}),
        ("from_pixels", (img, int(t), 13, 7), {"allocator": None}),
        ("from_pixels_resize", (img, int(t), 13, 7, 5, 9), {}),
        ("from_pixels_resize", (flat, int(t), 13, 7, 48, 5, 9), {}),
        ("from_pixels_roi", (img, int(t), 13, 7, 2, 1, 6, 4), {}),
        ("from_pixels_roi", (flat, int(t), 13, 7, 48, 2, 1, 6, 4), {}),
        ("from_pixels_roi_resize", (img, int(t), 13, 7, 2, 1, 6, 4, 3, 5), {}),
        ("from_pixels_roi_resize", (flat, int(t), 13, 7, 48, 2, 1, 6, 4, 3, 5), {}),
    ]
    for fn, args, kw in calls:
        a = getattr(ncnn_c.Mat, fn)(*args, **kw)
        b = getattr(ncnn.Mat, fn)(*args, **kw)
        np.testing.assert_array_equal(a.numpy(), b.numpy(), err_msg=fn)
    m = ncnn_c.Mat.from_pixels(img, int(t), 13, 7)
    m.substract_mean_normalize([1.0, 2.0, 3.0], [0.5, 0.25, 2.0])
    r = ncnn.Mat.from_pixels(img, int(t), 13, 7)
    r.substract_mean_normalize([1.0, 2.0, 3.0], [0.5, 0.25, 2.0])
    np.testing.assert_array_equal(m.numpy(), r.numpy())


# ----------------------------------------------------------------------------- ParamDict, Extractor


def test_paramdict_type_codes_match_oracle():
    def codes(mod):
        pd = mod.ParamDict()
        pd.set(0, 5)
        pd.set(1, 2.5)
        pd.set(2, mod.Mat(np.array([1.0, 2.0], np.float32)))
        pd.set(3, True)
        return [pd.type(i) for i in (0, 1, 2, 3, 4, 31, 40, -1)], pd.get(1, 0.0), pd.get(0, 0.0)

    assert codes(ncnn_c) == codes(ncnn)


PARAM = "7767517\n2 2\nInput data 0 1 data\nReLU relu 1 1 data out\n"


def _extractor(mod):
    net = mod.Net()
    assert net.load_param_mem(PARAM) == 0
    net.load_model_mem(b"")  # without a model load the PyPI net crashes on input
    return net, net.create_extractor()


def test_extractor_bad_names_and_indexes_match_oracle(caplog):
    results = {}
    for mod in (ncnn, ncnn_c):
        net, ex = _extractor(mod)
        r = [ex.input("nope", mod.Mat(3)), ex.input(99, mod.Mat(3)), ex.input(-1, mod.Mat(3))]
        for key in ("nope", 99, -1):
            ret, m = ex.extract(key)
            r.append((ret, m.dims))
        r.append(ex.extract("nope", mod.Mat()))
        with pytest.raises(TypeError):
            ex.input("data", 3)
        with pytest.raises(TypeError):
            ex.input(1.5, mod.Mat(3))
        if mod is ncnn_c:  # the PyPI build crashes on extract(None)
            with pytest.raises(TypeError):
                ex.extract(None)
        x = mod.Mat(np.array([-1.0, 2.0], np.float32)).clone()  # PyPI: own memory (in-place ReLU)
        assert ex.input("data", x) == 0
        ret, out = ex.extract("out")
        r.append((ret, list(out.numpy())))
        results[mod.__name__] = r
    assert results["ncnn_c"] == results["ncnn"]
    with caplog.at_level(logging.ERROR, logger="ncnn_c"):
        _extractor(ncnn_c)[1].extract("nope")
    assert "no blob named 'nope'" in caplog.text


def test_kvcache_option_fields_and_extractor_setters():
    ours, ref = ncnn_c.Option(), ncnn.Option()
    for k in ("kvcache_allocator", "kvcache_vkallocator", "kvcache_max_seqlen_hint"):
        assert getattr(ours, k) == getattr(ref, k)
    for mod in (ncnn, ncnn_c):
        net, ex = _extractor(mod)
        alloc = mod.PoolAllocator()
        ex.set_kvcache_allocator(alloc)
        ex.set_kvcache_max_seqlen_hint(64)
    assert ex.opt.kvcache_allocator is alloc and ex.opt.kvcache_max_seqlen_hint == 64


# ----------------------------------------------------------------------------- mat functions


def _both(fn, arr, *args):
    a = getattr(ncnn_c, fn)(ncnn_c.Mat(arr), *args)
    b = getattr(ncnn, fn)(pypi_mat(arr), *args)
    return a, b


@pytest.mark.parametrize("fn", ["resize_nearest", "resize_bilinear", "resize_bicubic"])
@pytest.mark.parametrize("shape,size", [((2, 7, 13), (11, 3)), ((3, 227, 227), (100, 150)), ((7, 13), (5, 4)),
                                         ((13,), (3, 2)), ((1, 1, 1), (4, 4)), ((2, 5, 5), (5, 5))])  # fmt: skip
def test_resize_matches_oracle(fn, shape, size):
    arr = rng(7).standard_normal(shape).astype(np.float32)
    a, b = _both(fn, arr, *size)
    assert (a.dims, a.w, a.h, a.c) == (b.dims, b.w, b.h, b.c)
    np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-5, atol=1e-5)
    dst = ncnn_c.Mat()
    assert getattr(ncnn_c, fn)(ncnn_c.Mat(arr), dst, *size, ncnn_c.Option()) is None
    np.testing.assert_array_equal(dst.numpy(), a.numpy())


def test_resize_bad_inputs_give_empty(caplog):
    with caplog.at_level(logging.ERROR, logger="ncnn_c"):
        assert ncnn_c.resize_bilinear(ncnn_c.Mat(), 3, 3).empty()
        assert ncnn_c.resize_nearest(ncnn_c.Mat(4, 4, 1), 0, 3).empty()
    assert "empty src" in caplog.text and "target size" in caplog.text


def test_casts_match_oracle():
    bits = np.array([0x3F808000, 0x3F818000, 0x3F80FFFF, 0x7F800000, 0xFF7FFFFF, 0x00000001], np.uint32)
    # the specials go first: PyPI's scalar tail loop (past the last 4-lane group) flushes fp16
    # subnormals to zero where its vector loop and IEEE keep them; ncnn_c converts as IEEE
    vals = np.concatenate([bits.view(np.float32), np.array([70000.0, -65504.0, 6.1e-5, 1e-8, 0.1], np.float32),
                           rng(8).standard_normal(40).astype(np.float32) * 1000]).reshape(3, 17)  # fmt: skip
    a, b = _both("cast_float32_to_float16", vals)
    assert (a.elemsize, a.dims, a.w, a.h) == (b.elemsize, b.dims, b.w, b.h) == (2, 2, 17, 3)
    # the oracle's fp16 bits depend on whether the CPU has F16C (see oracle.assert_fp16_bits)
    assert_fp16_bits(a.numpy().view(np.uint16), b.numpy().view(np.uint16), vals, "cast_float32_to_float16")
    back_a, back_b = ncnn_c.cast_float16_to_float32(a), ncnn.cast_float16_to_float32(b)
    assert back_a.elemsize == back_b.elemsize == 4
    # widening is exact everywhere: each side's bits, as fp32
    for back, m in ((back_a, a), (back_b, b)):
        np.testing.assert_array_equal(back.numpy(), m.numpy().view(np.float16).astype(np.float32))
    a, b = _both("cast_float32_to_bfloat16", vals)
    assert a.elemsize == b.elemsize == 2
    # the oracle's bf16 bits depend on its CPU dispatch path (see oracle.assert_bf16_bits)
    assert_bf16_bits(a.numpy().view(np.uint16), b.numpy().view(np.uint16), vals, "cast_float32_to_bfloat16")
    # widening is exact everywhere: each side's bits, shifted up
    for m, mod in ((a, ncnn_c), (b, ncnn)):
        wide = mod.cast_bfloat16_to_float32(m).numpy()
        np.testing.assert_array_equal(wide.view(np.uint32), m.numpy().view(np.uint16).astype(np.uint32) << 16)
    i8 = np.array([[[-128, -1, 0, 5, 127]]], np.int8)
    a, b = _both("cast_int8_to_float32", i8)
    np.testing.assert_array_equal(a.numpy(), b.numpy())
    dst = ncnn_c.Mat()
    assert ncnn_c.cast_float32_to_float16(ncnn_c.Mat(vals), dst) is None and dst.elemsize == 2
    assert ncnn_c.cast_float32_to_float16(ncnn_c.Mat()).empty()


@pytest.mark.parametrize("shape,scales", [((3, 17), [10.0]), ((3, 17), [10.0, 2.0, 0.5]), ((2, 5, 7), [3.0, 100.0]),
                                          ((2, 3, 4, 5), [1.0, 7.0]), ((9,), [4.0])])  # fmt: skip
def test_quantize_to_int8_matches_oracle(shape, scales):
    x = rng(9).standard_normal(shape).astype(np.float32) * 20
    x.flat[:6] = [0.5, 1.5, -2.5, 200.0, -200.0, np.nan]
    s = np.array(scales, np.float32)
    a = ncnn_c.quantize_to_int8(ncnn_c.Mat(x), ncnn_c.Mat(s))
    b = ncnn.quantize_to_int8(pypi_mat(x), pypi_mat(s))
    assert (a.elemsize, a.dims, a.w, a.h, a.c) == (b.elemsize, b.dims, b.w, b.h, b.c)
    np.testing.assert_array_equal(a.numpy(), b.numpy())
    dst = ncnn_c.Mat()
    assert ncnn_c.quantize_to_int8(ncnn_c.Mat(x), dst, ncnn_c.Mat(s), ncnn_c.Option()) is None
    np.testing.assert_array_equal(dst.numpy(), a.numpy())


def test_quantize_1d_per_element_and_bad_scales(caplog):
    # PyPI's 1-D per-element quantize reads its scales inconsistently (run to run), so the
    # oracle is ncnn's Quantize definition: element i times scale i
    x = np.array([1.0, -2.0, 0.25], np.float32)
    q = ncnn_c.quantize_to_int8(ncnn_c.Mat(x), ncnn_c.Mat(np.array([10.0, 2.0, 10.0], np.float32)))
    assert q.numpy().tolist() == [10, -4, 3]
    with caplog.at_level(logging.ERROR, logger="ncnn_c"):
        assert ncnn_c.quantize_to_int8(ncnn_c.Mat(x), ncnn_c.Mat(np.ones(2, np.float32))).empty()
    assert "scales" in caplog.text


def test_border_type_matches_oracle():
    assert {k: int(v) for k, v in ncnn_c.BorderType.__members__.items()} == {
        k: int(v) for k, v in ncnn.BorderType.__members__.items()
    }
    assert ncnn_c.BorderType.BORDER_REPLICATE.name == ncnn.BorderType.BORDER_REPLICATE.name
    arr = rng(10).standard_normal((2, 3, 4)).astype(np.float32)
    for bt in ("BORDER_CONSTANT", "BORDER_REPLICATE"):
        a = ncnn_c.copy_make_border(ncnn_c.Mat(arr), 1, 2, 3, 1, getattr(ncnn_c.BorderType, bt), 0.5)
        b = ncnn.copy_make_border(pypi_mat(arr), 1, 2, 3, 1, int(getattr(ncnn.BorderType, bt)), 0.5)
        np.testing.assert_array_equal(a.numpy(), b.numpy())


# ----------------------------------------------------------------------------- CPU


def test_cpu_queries_match_oracle():
    for fn in ("get_cpu_count", "get_little_cpu_count", "get_big_cpu_count", "get_physical_cpu_count",
               "get_physical_little_cpu_count", "get_physical_big_cpu_count", "get_omp_thread_num"):  # fmt: skip
        assert getattr(ncnn_c, fn)() == getattr(ncnn, fn)(), fn
    # PyPI returns a raw feature bit for some (avx2 -> 32): compare truth values
    for fn in ("cpu_support_x86_avx", "cpu_support_x86_avx2", "cpu_support_arm_neon", "cpu_support_arm_vfpv4",
               "cpu_support_arm_asimdhp"):  # fmt: skip
        assert getattr(ncnn_c, fn)() in (0, 1)
        assert bool(getattr(ncnn_c, fn)()) == bool(getattr(ncnn, fn)()), fn


def test_cpu_switches(caplog):
    try:
        for mode in (2, 1, 0):
            assert ncnn_c.set_cpu_powersave(mode) == ncnn.set_cpu_powersave(mode) == 0
            assert ncnn_c.get_cpu_powersave() == ncnn.get_cpu_powersave() == mode
        with caplog.at_level(logging.ERROR, logger="ncnn_c"):
            assert ncnn_c.set_cpu_powersave(5) == -1
        assert "powersave 5" in caplog.text and ncnn_c.get_cpu_powersave() == 0
        ncnn_c.set_omp_dynamic(1)
        ncnn.set_omp_dynamic(1)
        assert ncnn_c.get_omp_dynamic() == ncnn.get_omp_dynamic() == 1
        ncnn_c.set_omp_num_threads(3)
        assert ncnn_c.get_omp_num_threads() == 3
        ncnn_c.set_kmp_blocktime(7)
        assert ncnn_c.get_kmp_blocktime() == 7
    finally:
        ncnn_c.set_cpu_powersave(0)
        ncnn_c.set_omp_dynamic(0)
        ncnn.set_omp_dynamic(0)
        ncnn_c.set_omp_num_threads(1)
        ncnn_c.set_kmp_blocktime(0)


# ----------------------------------------------------------------------------- Vulkan allocators


@pytest.mark.gpu
def test_vk_allocators_match_oracle():
    assert ncnn_c.get_gpu_count() > 0, "no Vulkan device (lavapipe is installed by ./run.sh)"
    ours_dev, ref_dev = ncnn_c.get_gpu_device(0), ncnn.get_gpu_device(0)
    for name in ("VkBlobAllocator", "VkWeightAllocator", "VkStagingAllocator", "VkWeightStagingAllocator"):
        a, b = getattr(ncnn_c, name)(ours_dev), getattr(ncnn, name)(ref_dev)
        assert isinstance(a, ncnn_c.VkAllocator) and a.vkdev is ours_dev
        ma, mb = a.fastMalloc(1000), b.fastMalloc(1000)
        # PyPI fills these in when its first block is allocated
        assert (a.mappable, a.coherent) == (b.mappable, b.coherent), name
        assert a.buffer_memory_type_index >= 0
        # ncnn_c's images are ranges of buffer memory: the same memory type
        assert a.image_memory_type_index == a.buffer_memory_type_index
        assert isinstance(ma, ncnn_c.VkBufferMemory) and ma.capacity >= 1000 and ma.offset >= 0
        if name in ("VkBlobAllocator", "VkWeightAllocator"):
            assert ma.capacity == mb.capacity, name  # both align to the device's offset alignment
        a.fastFree(ma)
        b.fastFree(mb)
    staging = ncnn_c.VkStagingAllocator(ours_dev)
    staging.set_size_compare_ratio(0.5)
    assert staging.size_compare_ratio == 0.5
    assert ncnn_c.VkBlobAllocator(ours_dev).fastMalloc(4, 4, 4, 4, 3) is None  # elempack 1, 4 or 8
    img = ncnn_c.VkImageMemory(4, 3, 2)
    assert (img.width, img.height, img.depth, img.refcount) == (4, 3, 2, 0)


def test_batch_mat_pickles_and_deep_copies():
    import copy
    import pickle

    m = ncnn_c.Mat()
    m.create(5, 3, 2, n=3)
    m.numpy("", 0)[...] = rng(11).standard_normal((3, 2, 3, 5)).astype(np.float32)
    for twin in (pickle.loads(pickle.dumps(m)), copy.deepcopy(m)):
        assert _fields(twin) == _fields(m) and twin.nstep == m.nstep
        np.testing.assert_array_equal(twin.numpy("", 0), m.numpy("", 0))
