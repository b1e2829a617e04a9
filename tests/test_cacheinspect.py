"""cacheinspect: the report behind ``cache inspect`` and the verdict behind ``cache verify``."""

from __future__ import annotations

import struct

import pytest
from glsl_samples import SCALE

from ncnn_c.gpu import cachefile, cacheinspect, compiler

pytestmark = pytest.mark.gpu

ADD = SCALE.replace("* afp(scale)", "+ afp(scale)")


@pytest.fixture(scope="module")
def vkdev():
    from ncnn_c.gpu import device

    assert device.get_gpu_count() > 0, "no Vulkan device (lavapipe is installed by ./run.sh)"
    return device.get_gpu_device(0)


@pytest.fixture
def shaders(tmp_path):
    (tmp_path / "add.comp").write_text(ADD)
    (tmp_path / "scale.comp").write_text(SCALE)
    compiler.set_shader_dir(tmp_path)
    yield tmp_path
    compiler.set_shader_dir(None)


@pytest.fixture
def data(vkdev, shaders) -> bytes:
    from ncnn_c.gpu.pipeline import Pipeline
    from ncnn_c.gpu.pipelinecache import PipelineCache
    from ncnn_c.option import Option

    c = PipelineCache(vkdev)
    opt = Option()
    opt.use_fp16_packed = opt.use_fp16_storage = opt.use_fp16_arithmetic = False
    opt.use_int8_storage = opt.use_int8_arithmetic = False
    opt.pipeline_cache = c
    for name in ("add", "scale"):
        p = Pipeline(vkdev)
        p.set_local_size_xyz(64, 1, 1)
        assert p.create(name, opt, [2.0]) == 0
    buf = bytearray()
    assert c.save_cache(buf) == 0
    c.destroy()
    return bytes(buf)


def failing(report) -> list[str]:
    return [c["field"] for c in report["checks"] if c["ok"] is False]


def loads(vkdev, blob) -> bool:
    from ncnn_c.gpu.pipelinecache import PipelineCache

    c = PipelineCache(vkdev)
    try:
        return c.load_cache(blob) == 0
    finally:
        c.destroy()


def test_good_file(vkdev, data, tmp_path):
    r = cacheinspect.inspect(data, vkdev)
    assert r["accepted"] and failing(r) == []
    assert [(e["shader"], e["status"]) for e in r["entries"]] == [("add", "ok"), ("scale", "ok")]
    assert (
        r["sections"]["file"]
        == len(data)
        == 128 + r["sections"]["spirv_section"] + r["sections"]["driver_blob"]
    )
    assert r["header"]["spirv_entry_count"] == 2
    text = cacheinspect.format_report(r)
    for needle in ("magic", "pipeline_cache_uuid", "add", "scale", "driver blob", "accepted:"):
        assert needle in text
    # a path and a file object work as well as bytes
    (tmp_path / "c.vkcache").write_bytes(data)
    assert cacheinspect.verify(tmp_path / "c.vkcache", vkdev)[0]
    with open(tmp_path / "c.vkcache", "rb") as f:
        assert cacheinspect.inspect(f, vkdev)["accepted"]
    ok, why = cacheinspect.verify(data, vkdev)
    assert ok and "2 SPIR-V entries" in why


def test_without_device(data):
    r = cacheinspect.inspect(data, device=False)
    assert r["accepted"] and r["device"] is None
    unchecked = [c["field"] for c in r["checks"] if c["ok"] is None]
    assert any(f.startswith("vendor_id") for f in unchecked)
    assert any(f.startswith("pipeline_cache_uuid") for f in unchecked)
    ok, why = cacheinspect.verify(data, device=False)
    assert ok and "not checked" in why


@pytest.mark.parametrize(
    "offset, field",
    [(0, "magic"), (4, "version"), (36, "driver_version"), (56, "pipeline_cache_uuid"), (100, "reserved")],
)
def test_each_header_field_is_named(vkdev, data, offset, field):
    bad = bytearray(data)
    bad[offset] ^= 0x01
    r = cacheinspect.inspect(bytes(bad), vkdev)
    ok, why = cacheinspect.verify(bytes(bad), vkdev)
    assert not ok and not r["accepted"] and r["reason"] == why
    assert any(f.startswith(field) for f in failing(r)), failing(r)
    # verify agrees with load_cache
    assert not loads(vkdev, bytes(bad))


def test_another_device_with_the_checksum_fixed(vkdev, data):
    # a well-formed file of another driver version: only that field fails
    bad = bytearray(data)
    struct.pack_into("<I", bad, 36, 0xDEAD)
    struct.pack_into("<I", bad, 124, cachefile.fnv1a32(bytes(bad[:124])))
    r = cacheinspect.inspect(bytes(bad), vkdev)
    assert failing(r) == ["driver_version (offset 36)"]
    assert "driver_version" in r["reason"] and not r["accepted"]
    assert cacheinspect.verify(bytes(bad), device=False)[0]  # fine for another machine


def test_entries_and_layout(vkdev, data, shaders):
    ok, why = cacheinspect.verify(data[:-1], vkdev)
    assert not ok and "truncated" in why
    r = cacheinspect.inspect(data + b"\0\0\0\0", vkdev)
    assert "section sizes" in failing(r)
    # a flipped SPIR-V byte: the entry is marked corrupt
    bad = bytearray(data)
    bad[128 + 24 + 40] ^= 0xFF
    r = cacheinspect.inspect(bytes(bad), vkdev)
    assert r["entries"][0]["status"].startswith("corrupt") and not r["accepted"]
    # an edited shader: its entry is stale, the file still loads
    (shaders / "add.comp").write_text(ADD + "\n")
    compiler.set_shader_dir(shaders)
    r = cacheinspect.inspect(data, vkdev)
    assert [e["status"].split(":")[0] for e in r["entries"]] == ["stale", "ok"]
    ok, why = cacheinspect.verify(data, vkdev)
    assert ok and "1 stale" in why
    assert loads(vkdev, data)


def test_garbage_never_raises(vkdev, tmp_path):
    for junk in (b"", b"x" * 10, b"\0" * 128, b"FUTZ" * 100, tmp_path / "missing", tmp_path, 12):
        r = cacheinspect.inspect(junk, vkdev)
        assert r["accepted"] is False and r["reason"]
        assert cacheinspect.format_report(r)
        ok, why = cacheinspect.verify(junk)
        assert ok is False and why
