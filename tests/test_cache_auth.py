"""Cache authentication and the SPIR-V interface check: what stops a writer who recomputes
the FNV checksums.

A probe swapped two SPIR-V bodies of a real SqueezeNet cache and recomputed every checksum:
``cache verify`` accepted it and the net gave another top-1 with ret 0. Two defences now:

* without any key, each body must have the interface its shader's GLSL declares (bindings,
  specialization ids, push constants), which refuses bodies moved between shaders of
  different interfaces;
* with a cache key (an argument, a store's key, or ``$NCNN_C_CACHE_KEY``) every file carries
  an HMAC-SHA256 and anything without a valid one is a rejection: every swap is refused.
"""

from __future__ import annotations

import dataclasses
import itertools
import struct
from pathlib import Path

import numpy as np
import pytest

from ncnn_c.gpu import cachefile as cf
from ncnn_c.gpu.cachefile import CacheRejected, SpirvEntry

MODELS = Path(__file__).resolve().parents[1] / "models"
IDENT = cf.Identity(
    ncnn_version=1, vendor_id=2, device_id=3, api_version=4, driver_version=5, driver_id=6,
    driver_name="d", device_name="n", pipeline_cache_uuid=bytes(range(16)),
)  # fmt: skip
KEY = b"k" * 32


def _decode(data, key=None):
    return cf.decode(data, IDENT, lambda sid: 7, lambda spv: ("info", len(spv)), key=key)


def _file(key=None) -> bytes:
    es = [SpirvEntry(i + 1, 0, 7, struct.pack("<4I", 0x07230203, i, i, i)) for i in range(3)]
    return cf.encode(IDENT, es, b"", key)


def _resign(data: bytes, mutate) -> bytes:
    """``data`` parsed into header, entries and blob, changed by ``mutate(entries)``, and every
    checksum recomputed: what a writer without the key can do. A MAC is dropped (auth 0)."""
    hdr = cf.read_header(data)
    view = memoryview(data)
    pos, end = cf.HEADER_SIZE, cf.HEADER_SIZE + hdr.spirv_section_size
    ents = []
    while pos < end:
        sid, bits, sh, n, _f, _m = struct.unpack_from("<6I", view, pos)
        ents.append(SpirvEntry(sid, bits, sh, bytes(view[pos + 24 : pos + 24 + n])))
        pos += 24 + n
    blob = bytes(view[end : end + hdr.driver_blob_size])
    mutate(ents)
    ident = cf.Identity(
        hdr.ncnn_version, hdr.vendor_id, hdr.device_id, hdr.api_version, hdr.driver_version,
        hdr.driver_id, "", "", hdr.pipeline_cache_uuid,
    )  # fmt: skip
    out = bytearray(cf.encode(ident, ents, blob))
    # keep the stored name hashes (encode hashed the empty names), then re-sign the header
    struct.pack_into("<2I", out, 44, hdr.driver_name_hash, hdr.device_name_hash)
    struct.pack_into("<I", out, 124, cf.fnv1a32(bytes(out[:124])))
    return bytes(out)


# -- the file format ------------------------------------------------------------------------------
def test_keyed_file_round_trip_and_who_accepts_it():
    data = _file(KEY)
    assert cf.read_header(data).auth == cf.AUTH_HMAC_SHA256
    assert len(data) == len(_file()) + cf.MAC_SIZE
    assert len(_decode(data, KEY)[0]) == 3
    assert len(_decode(data)[0]) == 3  # a reader without the key cannot check it, and does not
    with pytest.raises(CacheRejected, match="MAC .* does not match"):
        _decode(data, b"another key")


def test_unkeyed_or_stripped_file_is_refused_with_a_key():
    with pytest.raises(CacheRejected, match="not authenticated"):
        _decode(_file(), KEY)
    stripped = _resign(_file(KEY), lambda ents: None)
    assert cf.read_header(stripped).auth == cf.AUTH_NONE and _decode(stripped)
    with pytest.raises(CacheRejected, match="not authenticated"):
        _decode(stripped, KEY)


def test_every_flipped_byte_of_a_keyed_file_is_refused():
    data = _file(KEY)
    for i in range(len(data)):
        bad = bytearray(data)
        bad[i] ^= 0x40
        with pytest.raises(CacheRejected):
            _decode(bytes(bad), KEY)


def test_resigned_changes_pass_fnv_but_not_the_mac():
    data = _file(KEY)

    def swap(ents):
        ents[0], ents[1] = (
            dataclasses.replace(ents[0], spirv=ents[1].spirv),
            dataclasses.replace(ents[1], spirv=ents[0].spirv),
        )

    forged = _resign(data, swap)
    assert _decode(forged)  # checksum-consistent: FNV alone accepts it
    with pytest.raises(CacheRejected, match="not authenticated"):
        _decode(forged, KEY)


def test_key_from_the_environment(monkeypatch):
    monkeypatch.delenv(cf.KEY_ENV, raising=False)
    assert cf.resolve_key(None) is None
    monkeypatch.setenv(cf.KEY_ENV, "s3cret")
    assert cf.resolve_key(None) == b"s3cret"
    assert cf.resolve_key("other") == b"other" and cf.resolve_key(b"raw\xff") == b"raw\xff"
    monkeypatch.setenv(cf.KEY_ENV, "")
    assert cf.resolve_key(None) is None
    with pytest.raises(TypeError):
        cf.resolve_key(12)


# -- a real network's cache -----------------------------------------------------------------------
@pytest.fixture(scope="module")
def squeezenet_cache():
    """(vkdev, cache bytes without a key, with KEY, reference output) of SqueezeNet on Vulkan."""
    import ncnn_c

    assert ncnn_c.get_gpu_count() > 0, "no Vulkan device (lavapipe is installed by ./run.sh)"
    vkdev = ncnn_c.get_gpu_device(0)
    x = np.random.default_rng(0).random((3, 227, 227), dtype=np.float32)
    out = {}
    for key in (None, KEY):
        cache = ncnn_c.PipelineCache(vkdev, key=key)
        ret, ref = _infer(vkdev, cache, x)
        assert ret == 0
        buf = bytearray()
        assert cache.save_cache(buf) == 0
        out[key] = bytes(buf)
        cache.destroy()
    return vkdev, out[None], out[KEY], x, ref


def _infer(vkdev, cache, x):
    import ncnn_c

    net = ncnn_c.Net()
    net.opt.use_vulkan_compute = True
    net.set_vulkan_device(vkdev)
    net.opt.pipeline_cache = cache
    assert net.load_param(str(MODELS / "squeezenet_v1.1.param")) == 0
    assert net.load_model(str(MODELS / "squeezenet_v1.1.bin")) == 0
    ex = net.create_extractor()
    ex.input("data", ncnn_c.Mat(x))
    ret, out = ex.extract("prob")
    return ret, np.array(out).copy()


def _swaps(data):
    hdr = cf.read_header(data)
    n = hdr.spirv_entry_count
    for i, j in itertools.combinations(range(n), 2):

        def swap(ents, i=i, j=j):
            a, b = ents[i], ents[j]
            ents[i], ents[j] = dataclasses.replace(a, spirv=b.spirv), dataclasses.replace(b, spirv=a.spirv)

        yield i, j, _resign(data, swap)


@pytest.mark.gpu
def test_swapped_bodies_between_shaders_of_different_interfaces_are_refused_without_a_key(
    squeezenet_cache,
):
    import ncnn_c
    from ncnn_c.gpu import compiler

    vkdev, plain, _keyed, x, ref = squeezenet_cache
    assert cf.read_header(plain).spirv_entry_count >= 3
    refused = accepted = 0
    for i, j, forged in _swaps(plain):
        with ncnn_c.PipelineCache(vkdev) as c:
            ok = c.load_cache(forged) == 0
            ents = _entries(plain)
            same = compiler.shader_interface(
                compiler.index_of_shader_id(ents[i].shader_id)
            ) == compiler.shader_interface(compiler.index_of_shader_id(ents[j].shader_id))
            if same:
                accepted += ok
                continue
            assert not ok, f"swap {i}<->{j} accepted"
            assert "interface" in c.last_error, c.last_error
            refused += 1
    assert refused > 0


def _entries(data):
    out = []
    _resign(data, out.extend)
    return out


@pytest.mark.gpu
def test_with_a_key_every_swap_is_refused_and_the_genuine_file_works(squeezenet_cache, monkeypatch):
    import ncnn_c

    vkdev, plain, keyed, x, ref = squeezenet_cache
    for _i, _j, forged in _swaps(keyed):
        with ncnn_c.PipelineCache(vkdev, key=KEY) as c:
            assert c.load_cache(forged) != 0
            assert "not authenticated" in c.last_error
    with ncnn_c.PipelineCache(vkdev, key=KEY) as c:
        assert c.load_cache(plain) != 0 and "not authenticated" in c.last_error
        assert c.load_cache(keyed) == 0
        ret, out = _infer(vkdev, c, x)
        assert ret == 0 and np.array_equal(out, ref)
        assert c.stats()["compiled"] == 0
    monkeypatch.setenv(cf.KEY_ENV, KEY.decode())
    with ncnn_c.PipelineCache(vkdev) as c:  # the key from the environment
        assert c.load_cache(plain) != 0 and c.load_cache(keyed) == 0


@pytest.mark.gpu
def test_a_store_key_signs_and_checks_its_entries(squeezenet_cache, tmp_path, monkeypatch):
    import ncnn_c
    from ncnn_c.cachestore import open_store

    monkeypatch.delenv(cf.KEY_ENV, raising=False)
    vkdev, plain, keyed, x, ref = squeezenet_cache
    url = f"sqlite:///{tmp_path}/c.db"
    with ncnn_c.PipelineCache(vkdev) as src:
        assert src.load_cache(plain) == 0
        with open_store(url) as unkeyed:
            assert unkeyed.save_from(src, "squeezenet") == 0  # an unkeyed writer's entry
        with open_store(url, key=KEY) as store:
            with ncnn_c.PipelineCache(vkdev) as c:
                assert store.load_into(c, "squeezenet") != 0
                assert "not authenticated" in c.last_error
            assert store.save_from(src, "squeezenet") == 0
            with ncnn_c.PipelineCache(vkdev) as c:
                assert store.load_into(c, "squeezenet") == 0
        with open_store(url) as unkeyed, ncnn_c.PipelineCache(vkdev) as c:
            # readers without a key still load it (they cannot check the MAC)
            assert unkeyed.load_into(c, "squeezenet") == 0
        with open_store(url, key=b"wrong") as wrong, ncnn_c.PipelineCache(vkdev) as c:
            assert wrong.load_into(c, "squeezenet") != 0 and "does not match" in c.last_error


def test_cli_verify_reports_the_mac(tmp_path, monkeypatch):
    from ncnn_c.gpu import cacheinspect
    from ncnn_c.gpu.pipelinecache import NCNN_VERSION

    es = [SpirvEntry(1, 0, 7, struct.pack("<4I", 0x07230203, 0, 0, 0))]
    p = tmp_path / "x.vkcache"
    p.write_bytes(cf.encode(dataclasses.replace(IDENT, ncnn_version=NCNN_VERSION), es, b"", KEY))
    monkeypatch.setenv(cf.KEY_ENV, "wrong")
    ok, reason = cacheinspect.verify(str(p), device=False)
    assert not ok and "does not match" in reason
    monkeypatch.setenv(cf.KEY_ENV, KEY.decode())
    report = cacheinspect.inspect(str(p), device=False)
    mac = [c for c in report["checks"] if c["field"] == "MAC"]
    assert mac and mac[0]["ok"] is True
