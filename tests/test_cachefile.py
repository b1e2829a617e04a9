"""The pipeline cache file (ncnn_c/cache/: format, checks, hashing, fileio; through the
ncnn_c.gpu.cachefile names): layout, strict rejection, hashes, I/O."""

from __future__ import annotations

import dataclasses
import hashlib
import io
import os
import pathlib
import random
import re
import stat
import struct
import subprocess
import sys
import threading
import tracemalloc
import types

import pytest

from ncnn_c.cache import fileio, hashing
from ncnn_c.cache import format as fmt
from ncnn_c.gpu import cachefile as cf
from ncnn_c.gpu.cachefile import CacheRejected, Identity, SpirvEntry

UUID = bytes(range(0xA0, 0xB0))
IDENT = Identity(
    ncnn_version=20250503,
    vendor_id=0x10DE,
    device_id=0x2335,
    api_version=(1 << 22) | (3 << 12) | 277,
    driver_version=0x8A3C4000,
    driver_id=4,
    driver_name="NVIDIA",
    device_name="NVIDIA H200",
    pipeline_cache_uuid=UUID,
)


def vk_blob(
    payload: bytes = b"driver-private-data!",
    vendor=IDENT.vendor_id,
    device=IDENT.device_id,
    uuid=UUID,
    length=32,
    version=1,
):
    return struct.pack("<4I16s", length, version, vendor, device, uuid) + payload


def spirv(n_words: int, seed: int) -> bytes:
    rng = random.Random(seed)
    return bytes(rng.getrandbits(8) for _ in range(4 * n_words))


def entries(n: int, words: int = 2) -> list[SpirvEntry]:
    return [
        SpirvEntry(shader_id=3 * i + 1, opt_bits=i % 3, source_hash=0x1000 + i, spirv=spirv(words + i % 2, i))
        for i in range(n)
    ]


def source_hash_of(index: int) -> int:
    return 0x1000 + (index - 1) // 3 if index % 3 == 1 else 0


def resolve_ok(spv: bytes) -> object:
    return ("info", len(spv))


def decode(data, identity=IDENT, shash=source_hash_of, resolve=resolve_ok):
    return cf.decode(data, identity, shash, resolve)


def reject(data, *, match=None, **kw) -> str:
    with pytest.raises(CacheRejected) as ei:
        decode(data, **kw)
    reason = str(ei.value)
    assert reason
    if match is not None:
        assert re.search(match, reason), reason
    return reason


def raw_file(section: bytes, count: int, blob: bytes = b"", identity=IDENT) -> bytes:
    """A file with a hand-made SPIR-V section, but a correct header (hashes, checksum)."""
    return fmt._pack_header(identity, count, section, blob) + section + blob


def entry_bytes(sti, opt, shash, spv, size=None, fnv=None, mm3=None) -> bytes:
    return (
        struct.pack(
            "<6I",
            sti,
            opt,
            shash,
            len(spv) if size is None else size,
            cf.fnv1a32(spv) if fnv is None else fnv,
            cf.murmur3_32(spv) if mm3 is None else mm3,
        )
        + spv
    )


def with_header(data: bytes, **fields) -> bytes:
    """Change header fields and re-sign the header, so that only the field checks can catch it."""
    hdr = dataclasses.replace(cf.CacheHeader(*fmt.HEADER_STRUCT.unpack_from(data, 0)), **fields)
    head = fmt.HEADER_STRUCT.pack(*dataclasses.astuple(hdr))[: fmt.CHECKSUM_OFFSET]
    return head + struct.pack("<I", cf.fnv1a32(head)) + data[cf.HEADER_SIZE :]


@pytest.fixture
def small_file() -> bytes:
    return cf.encode(IDENT, entries(2, words=2), vk_blob(b"12345678"))


@pytest.fixture(params=["native", "python"])
def hash_impl(request, monkeypatch):
    """Run a test with the C hashes and again with the pure Python fallback."""
    if request.param == "native":
        assert cf.HASH_BACKEND == "native", (
            "native hash extension not built (python -m ncnn_c._native.build_hash)"
        )
    else:
        monkeypatch.setattr(hashing, "fnv1a32", cf.fnv1a32_py)
        monkeypatch.setattr(hashing, "murmur3_32", cf.murmur3_32_py)
    return request.param


# ---------------------------------------------------------------------------------------- hashes

FNV_VECTORS = [(b"", 0x811C9DC5), (b"a", 0xE40C292C), (b"foobar", 0xBF9CF968)]
MURMUR_VECTORS = [
    (b"", 0, 0),
    (b"", 1, 0x514E28B7),
    (b"", 0xFFFFFFFF, 0x81F16F39),
    (b"\0\0\0\0", 0, 0x2362F9DE),
    (b"hello", 0, 0x248BFA47),
    (b"aaaa", 0x9747B28C, 0x5A97808A),
    (b"abc", 0, 0xB3DD93FA),
    (b"Hello, world!", 1234, 0xFAF6CDB3),
    (b"The quick brown fox jumps over the lazy dog", 0x9747B28C, 0x2FA826CD),
]


@pytest.mark.parametrize("fn", ["fnv1a32", "fnv1a32_py"])
@pytest.mark.parametrize("data, want", FNV_VECTORS)
def test_fnv1a_vectors(fn, data, want):
    assert getattr(cf, fn)(data) == want


@pytest.mark.parametrize("fn", ["murmur3_32", "murmur3_32_py"])
@pytest.mark.parametrize("data, seed, want", MURMUR_VECTORS)
def test_murmur3_vectors(fn, data, seed, want):
    assert getattr(cf, fn)(data, seed) == want


def test_pure_python_fallback_when_the_extension_is_missing():
    # nothing is compiled at import or first use: the hashes fall back to Python, the GLSL
    # compiler says how to build it, and no builder module is even imported
    code = (
        "import sys; sys.modules['ncnn_c._native._hash'] = None\n"
        "sys.modules['ncnn_c._native._shaderc'] = None\n"
        "sys.modules['ncnn_c._native._cpu'] = None\n"
        "from ncnn_c.gpu import cachefile as cf\n"
        "assert cf.HASH_BACKEND == 'python', cf.HASH_BACKEND\n"
        "assert cf.murmur3_32(b'hello') == 0x248BFA47 and cf.fnv1a32(b'a') == 0xE40C292C\n"
        "import ncnn_c._native as native\n"
        "try:\n"
        "    native.shaderc()\n"
        "    raise SystemExit('shaderc() loaded a missing extension')\n"
        "except native.NotBuilt as e:\n"
        "    assert 'make setup' in str(e), e\n"
        "from ncnn_c._native import cpu\n"
        "assert cpu.cpu_kernels() is None\n"
        "built = [m for m in sys.modules if m.startswith('ncnn_c._native.build_')]\n"
        "assert not built, built\n"
    )
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    subprocess.run([sys.executable, "-c", code], check=True, cwd=root)


def test_pure_python_murmur3_vectorised_path_matches_scalar_path():
    data = spirv(300, 7) + b"xyz"  # >= 64 blocks takes the numpy path
    scalar = data[:8]
    assert cf.murmur3_32_py(scalar, 5) == cf.murmur3_32(scalar, 5)
    assert cf.murmur3_32_py(data, 5) == cf.murmur3_32(data, 5)


def test_native_and_pure_hashes_agree():
    assert cf.HASH_BACKEND == "native", "native hash extension not built"
    rng = random.Random(1234)
    lengths = list(range(65)) + [255, 256, 257, 1023, 4096, 4099, 65537, 200_003]
    for n in lengths:
        data = bytes(rng.getrandbits(8) for _ in range(n)) if n < 5000 else os.urandom(n)
        assert cf.fnv1a32(data) == cf.fnv1a32_py(data), n
        for seed in (0, 1, 0x9747B28C, 0xFFFFFFFF):
            assert cf.murmur3_32(data, seed) == cf.murmur3_32_py(data, seed), (n, seed)


def test_hashes_accept_any_bytes_like():
    data = b"\x01\x02\x03\x04\x05\x06\x07"
    for form in (bytearray(data), memoryview(data), memoryview(bytearray(data))[0:7]):
        assert cf.fnv1a32(form) == cf.fnv1a32(data) == cf.fnv1a32_py(form)
        assert cf.murmur3_32(form, 9) == cf.murmur3_32(data, 9) == cf.murmur3_32_py(form, 9)
    assert cf.fnv1a32(memoryview(data)[2:5]) == cf.fnv1a32(data[2:5])


# ---------------------------------------------------------------------------------------- layout


def test_header_layout_is_fixed(small_file):
    assert cf.HEADER_SIZE == 128 and cf.ENTRY_HEADER_SIZE == 24
    magic, version, header_size, ncnn_version, endian, ptr = struct.unpack_from("<6I", small_file, 0)
    assert (magic, version, header_size) == (0x5A545546, 4, 128)
    assert (ncnn_version, endian, ptr) == (IDENT.ncnn_version, 0x12345678, 8)
    assert struct.unpack_from("<5I", small_file, 24) == (
        IDENT.vendor_id,
        IDENT.device_id,
        IDENT.api_version,
        IDENT.driver_version,
        IDENT.driver_id,
    )
    assert struct.unpack_from("<3I", small_file, 44) == (cf.fnv1a32(b"NVIDIA"), cf.fnv1a32(b"NVIDIA H200"), 2)
    assert small_file[56:72] == UUID
    sec_size, blob_size = struct.unpack_from("<2Q", small_file, 72)
    assert 128 + sec_size + blob_size == len(small_file)
    assert struct.unpack_from("<2I", small_file, 88) == (
        cf.fnv1a32(small_file[128 : 128 + sec_size]),
        cf.fnv1a32(small_file[128 + sec_size :]),
    )
    assert small_file[96:124] == bytes(28)
    assert struct.unpack_from("<I", small_file, 124)[0] == cf.fnv1a32(small_file[:124])
    e0 = entries(2, words=2)[0]
    assert struct.unpack_from("<6I", small_file, 128) == (
        e0.shader_id,
        e0.opt_bits,
        e0.source_hash,
        len(e0.spirv),
        cf.fnv1a32(e0.spirv),
        cf.murmur3_32(e0.spirv),
    )
    assert small_file[152 : 152 + len(e0.spirv)] == e0.spirv
    assert small_file[-40:] == vk_blob(b"12345678")


def test_golden_file_pins_the_format():
    # If this changes, the format changed: bump CACHE_FILE_VERSION and update docs/cache-format.md.
    data = cf.encode(IDENT, [SpirvEntry(5, 1, 0xABCD, bytes(range(16)))], vk_blob(b"xy"))
    assert len(data) == 128 + 24 + 16 + 34
    assert hashlib.sha256(data).hexdigest()[:16] == GOLDEN_SHA256_PREFIX


GOLDEN_SHA256_PREFIX = "65f48a40ea006474"


def test_read_header_needs_no_identity(small_file):
    hdr = cf.read_header(small_file)
    assert hdr.vendor_id == IDENT.vendor_id and hdr.spirv_entry_count == 2 and hdr.driver_blob_size == 40
    assert hdr.driver_name_hash == cf.name_hash("NVIDIA")


# ---------------------------------------------------------------------------------------- round trip


@pytest.mark.parametrize("n", [0, 1, 2, 37])
@pytest.mark.parametrize("blob", [b"", vk_blob(), vk_blob(b"")])
def test_round_trip(hash_impl, n, blob):
    es = entries(n)
    data = cf.encode(IDENT, es, blob)
    assert isinstance(data, bytes)
    got, got_blob = decode(data)
    assert got == es and got_blob == blob
    assert all(isinstance(e.spirv, bytes) for e in got)


def test_round_trip_from_bytearray_and_memoryview(small_file):
    assert decode(bytearray(small_file)) == decode(small_file)
    assert decode(memoryview(small_file)) == decode(small_file)


def test_decode_full_returns_what_resolve_gave(small_file):
    d = cf.decode_full(small_file, IDENT, source_hash_of, resolve_ok)
    assert d.resolved == [resolve_ok(e.spirv) for e in d.entries]
    assert d.header.spirv_entry_count == 2


def test_identity_of_reads_a_gpu_info():
    info = types.SimpleNamespace(
        vendor_id=IDENT.vendor_id,
        device_id=IDENT.device_id,
        api_version=IDENT.api_version,
        driver_version=IDENT.driver_version,
        driver_id=IDENT.driver_id,
        driver_name=b"NVIDIA\0\0",
        device_name="NVIDIA H200",
        pipeline_cache_uuid=list(UUID),
        subgroup_size=32,
    )
    assert cf.identity_of(info, IDENT.ncnn_version) == IDENT


# ---------------------------------------------------------------------------------------- identity


IDENTITY_CHANGES = {
    "ncnn_version": IDENT.ncnn_version + 1,
    "vendor_id": 0x1002,
    "device_id": 0x2330,
    "api_version": IDENT.api_version + 1,
    "driver_version": IDENT.driver_version + 1,
    "driver_id": 1,
    "driver_name": "NVIDIA ",
    "device_name": "NVIDIA H100",
    "pipeline_cache_uuid": bytes(16),
}


@pytest.mark.parametrize("field", list(IDENTITY_CHANGES))
def test_identity_mismatch_is_rejected_with_its_name(small_file, field):
    other = dataclasses.replace(IDENT, **{field: IDENTITY_CHANGES[field]})
    reason = reject(small_file, identity=other)
    assert field in reason and "mismatch" in reason


def test_identity_covers_every_field():
    assert set(IDENTITY_CHANGES) == {f.name for f in dataclasses.fields(Identity)}


# ---------------------------------------------------------------------------------------- corruption


def test_every_single_byte_change_is_rejected(small_file):
    decode(small_file)  # the pristine file loads
    for i in range(len(small_file)):
        for mask in (0x01, 0x80, 0xFF):
            bad = bytearray(small_file)
            bad[i] ^= mask
            reject(bytes(bad))


def test_every_truncation_is_rejected(small_file):
    for n in range(len(small_file)):
        reject(small_file[:n])


@pytest.mark.parametrize("extra", [b"\0", b"garbage", bytes(4096)])
def test_trailing_bytes_are_rejected(small_file, extra):
    reject(small_file + extra, match="trailing")


def test_random_corruption_only_ever_raises_cache_rejected():
    rng = random.Random(99)
    base = cf.encode(IDENT, entries(4), vk_blob())
    for _ in range(1500):
        bad = bytearray(base)
        for _ in range(rng.randint(1, 6)):
            bad[rng.randrange(len(bad))] = rng.getrandbits(8)
        if bytes(bad) != base:
            reject(bytes(bad))
    for n in (0, 1, 64, 127, 128, 129, 1000):
        reject(bytes(rng.getrandbits(8) for _ in range(n)))


@pytest.mark.parametrize("value", [None, "text", 12, object()])
def test_non_bytes_input_is_rejected(value):
    reject(value)


@pytest.mark.parametrize(
    "field, value, match",
    [
        ("magic", 0x46555459, "magic"),
        ("version", 2, "version"),
        ("header_size", 132, "header_size"),
        ("endian_marker", 0x78563412, "endian_marker"),
        ("pointer_size", 4, "pointer_size"),
        ("reserved", bytes(23) + b"\x01", r"reserved byte at offset 123"),
        ("auth", 2, "unknown authentication"),
        ("spirv_section_size", 2**63, "do not add up"),
        ("driver_blob_size", 2**64 - 1, "do not add up"),
        ("spirv_entry_count", 0xFFFFFFFF, "spirv_entry_count"),
        ("spirv_entry_count", 1, "entries end at offset"),
        ("spirv_entry_count", 3, "3 entries cannot fit"),
        ("spirv_section_fnv1a", 0, "spirv_section_fnv1a"),
        ("driver_blob_fnv1a", 0, "driver_blob_fnv1a"),
    ],
)
def test_resigned_header_field_is_rejected_by_its_own_check(small_file, field, value, match):
    reject(with_header(small_file, **{field: value}), match=match)


def test_header_checksum_catches_unsigned_changes(small_file):
    bad = bytearray(small_file)
    bad[100] = 1  # a reserved byte
    reject(bytes(bad), match="header_fnv1a")


def test_hostile_sizes_are_rejected_without_allocating():
    # Sizes that add up to the real length but describe absurd entries.
    sec = entry_bytes(1, 0, 0x1000, b"\0" * 8, size=0xFFFFFFFC)
    tracemalloc.start()
    try:
        reject(raw_file(sec, 1), match="runs past the end")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 1 << 20, f"rejecting a 4 GiB claim allocated {peak} bytes"


def test_entry_header_past_the_section_is_rejected():
    sec = entry_bytes(1, 0, 0x1000, spirv(2, 1)) + bytes(20)
    reject(raw_file(sec, 2), match=r"SPIR-V entry 1 at offset 160: entry header needs 24 bytes, 20 left")
    reject(raw_file(sec, 1), match=r"1 entries end at offset 160, but the section ends at offset 180")


@pytest.mark.parametrize(
    "size, match", [(0, "zero or not a multiple of 4"), (6, "zero or not a multiple of 4")]
)
def test_bad_spirv_size_is_rejected(size, match):
    spv = b"\0" * size
    reject(raw_file(entry_bytes(1, 0, 0x1000, spv), 1), match=match)


@pytest.mark.parametrize("which", ["fnv", "mm3"])
def test_entry_hash_mismatch_is_rejected(which):
    spv = spirv(4, 1)
    kw = {which: 0x12345678}
    reject(
        raw_file(entry_bytes(1, 0, 0x1000, spv, **kw), 1),
        match="spirv_fnv1a" if which == "fnv" else "spirv_murmur3",
    )


def test_duplicate_entries_are_rejected():
    sec = entry_bytes(1, 2, 0x1000, spirv(2, 1)) + entry_bytes(1, 2, 0x1000, spirv(3, 2))
    reject(raw_file(sec, 2), match="duplicate of entry 0")
    # same shader under other option bits is not a duplicate
    ok = entry_bytes(1, 2, 0x1000, spirv(2, 1)) + entry_bytes(1, 3, 0x1000, spirv(3, 2))
    assert len(decode(raw_file(ok, 2))[0]) == 2


def test_encode_refuses_what_decode_would_reject():
    e = SpirvEntry(1, 0, 0x1000, b"\0" * 8)
    with pytest.raises(ValueError, match="duplicate"):
        cf.encode(IDENT, [e, e], b"")
    for bad in (dataclasses.replace(e, spirv=b""), dataclasses.replace(e, spirv=b"\0" * 6)):
        with pytest.raises(ValueError, match="multiple of 4"):
            cf.encode(IDENT, [bad], b"")
    with pytest.raises(ValueError, match="source_hash 0"):
        cf.encode(IDENT, [dataclasses.replace(e, source_hash=0)], b"")
    with pytest.raises(ValueError, match="shader_id"):
        cf.encode(IDENT, [dataclasses.replace(e, shader_id=-1)], b"")
    with pytest.raises(ValueError, match="pipeline_cache_uuid"):
        cf.encode(dataclasses.replace(IDENT, pipeline_cache_uuid=b"short"), [], b"")
    with pytest.raises(ValueError, match="vendor_id"):
        cf.encode(dataclasses.replace(IDENT, vendor_id=1 << 32), [], b"")


def test_encode_refuses_a_file_over_the_limit(monkeypatch):
    monkeypatch.setattr(fmt, "CACHE_FILE_SIZE_LIMIT", 200)
    with pytest.raises(ValueError, match="limit"):
        cf.encode(IDENT, entries(3), vk_blob())


def test_changed_shader_source_is_rejected(small_file):
    def changed(index):
        return source_hash_of(index) ^ (1 if index == 4 else 0)

    reject(small_file, shash=changed, match="source_hash .* stale")


def test_stale_entries_are_dropped_alone_when_asked():
    data = cf.encode(IDENT, entries(3), vk_blob(b"12345678"))

    def changed(index):
        return source_hash_of(index) ^ (1 if index == 4 else 0)

    stale = []
    got, blob = cf.decode(data, IDENT, changed, resolve_ok, stale)
    assert [e.shader_id for e in got] == [1, 7]
    assert [(e.shader_id, "stale" in why) for e, why in stale] == [(4, True)]
    assert blob == vk_blob(b"12345678")
    # a removed shader (no source hash) is dropped the same way
    stale = []
    got, _ = cf.decode(data, IDENT, lambda i: 0 if i == 7 else source_hash_of(i), resolve_ok, stale)
    assert [e.shader_id for e in got] == [1, 4] and len(stale) == 1 and "unknown" in stale[0][1]
    # integrity failures still reject the whole file, stale list or not
    bad = bytearray(data)
    bad[-9] ^= 1
    with pytest.raises(CacheRejected):
        cf.decode(bytes(bad), IDENT, changed, resolve_ok, [])


@pytest.mark.parametrize("lookup", [lambda i: 0, lambda i: {}[i], lambda i: None])
def test_unknown_shader_index_is_rejected(small_file, lookup):
    reject(small_file, shash=lookup, match="unknown")


def test_resolve_failure_is_rejected(small_file):
    calls = []

    def resolve(spv):
        calls.append(spv)
        if len(calls) == 2:
            raise ValueError("not SPIR-V")
        return None

    reject(small_file, resolve=resolve, match="does not resolve.*not SPIR-V")


def test_oversized_data_is_rejected(monkeypatch, small_file):
    monkeypatch.setattr(fmt, "CACHE_FILE_SIZE_LIMIT", len(small_file) - 1)
    reject(small_file, match="limit")
    monkeypatch.setattr(fmt, "CACHE_FILE_SIZE_LIMIT", len(small_file))
    decode(small_file)


# ---------------------------------------------------------------------------------------- driver blob


def test_validate_driver_blob_accepts():
    cf.validate_driver_blob(b"", 1, 2, bytes(16))
    cf.validate_driver_blob(vk_blob(b""), IDENT.vendor_id, IDENT.device_id, UUID)
    cf.validate_driver_blob(vk_blob(b"abcd", length=36), IDENT.vendor_id, IDENT.device_id, list(UUID))


@pytest.mark.parametrize(
    "blob, match",
    [
        (b"\x20", "shorter than"),
        (vk_blob()[:31], "shorter than"),
        (vk_blob(length=31), "headerLength 31"),
        (vk_blob(b"", length=33), "headerLength 33"),
        (vk_blob(version=2), "headerVersion 2"),
        (vk_blob(vendor=0x1002), "vendorID"),
        (vk_blob(device=0x1), "deviceID"),
        (vk_blob(uuid=bytes(16)), "pipelineCacheUUID"),
    ],
)
def test_validate_driver_blob_rejects(blob, match):
    with pytest.raises(CacheRejected, match=match):
        cf.validate_driver_blob(blob, IDENT.vendor_id, IDENT.device_id, UUID)


def test_bad_driver_blob_rejects_the_whole_file():
    data = cf.encode(IDENT, entries(2), vk_blob(uuid=bytes(16)))
    reject(data, match=r"driver blob \(offset \d+\).*pipelineCacheUUID")


# ---------------------------------------------------------------------------------------- read_source


def test_read_source_bytes_like(small_file):
    assert cf.read_source(small_file) is small_file
    assert cf.read_source(bytearray(small_file)) == small_file
    assert cf.read_source(memoryview(small_file)) == small_file


def test_read_source_path_and_file_object(tmp_path, small_file):
    p = tmp_path / "m.ncnn.vkcache"
    p.write_bytes(small_file)
    assert cf.read_source(p) == small_file
    assert cf.read_source(str(p)) == small_file
    with open(p, "rb") as f:
        assert cf.read_source(f) == small_file
    with open(p, "rb") as f:
        f.seek(10)
        assert cf.read_source(f) == small_file[10:]
    with open(p, "rb", buffering=0) as f:
        assert cf.read_source(f) == small_file
    buf = io.BytesIO(b"prefix" + small_file)
    buf.read(6)
    assert cf.read_source(buf) == small_file


def test_read_source_missing_and_unreadable(tmp_path):
    with pytest.raises(CacheRejected, match="missing.vkcache"):
        cf.read_source(tmp_path / "missing.vkcache")
    with pytest.raises(CacheRejected, match="not a regular file"):
        cf.read_source(tmp_path)  # a directory
    p = tmp_path / "t"
    p.write_bytes(b"abc")
    with open(p) as f:  # text mode
        with pytest.raises(CacheRejected, match="binary"):
            cf.read_source(f)
    with pytest.raises(CacheRejected, match="int"):
        cf.read_source(42)

    class Broken:
        def read(self, n):
            raise OSError("device gone")

    with pytest.raises(CacheRejected, match="device gone"):
        cf.read_source(Broken())
    closed = io.BytesIO(b"x")
    closed.close()
    with pytest.raises(CacheRejected):
        cf.read_source(closed)


class Endless:
    """A stream that never ends; counts what was taken from it."""

    def __init__(self):
        self.taken = 0

    def read(self, n=-1):
        assert n is not None and n > 0, "read_source must ask for bounded reads"
        self.taken += n
        return b"\0" * n


def test_read_source_enforces_the_limit_without_reading_everything(monkeypatch, tmp_path):
    monkeypatch.setattr(fmt, "CACHE_FILE_SIZE_LIMIT", 1000)
    s = Endless()
    with pytest.raises(CacheRejected, match="limit"):
        cf.read_source(s)
    assert s.taken == 1001
    with pytest.raises(CacheRejected, match="limit"):
        cf.read_source(b"\0" * 1001)
    assert len(cf.read_source(b"\0" * 1000)) == 1000
    p = tmp_path / "big"
    p.write_bytes(b"\0" * 5000)
    with pytest.raises(CacheRejected, match="limit"):
        cf.read_source(p)
    p.write_bytes(b"\0" * 1000)
    assert len(cf.read_source(p)) == 1000


def test_read_source_bounds_a_growing_file_by_reads_not_by_stat(monkeypatch):
    # /dev/zero reports size 0 but never ends: as a path it is refused (not a regular file),
    # as an open file object it is read only up to the limit
    monkeypatch.setattr(fmt, "CACHE_FILE_SIZE_LIMIT", 4096)
    with pytest.raises(CacheRejected, match="character device"):
        cf.read_source("/dev/zero")
    with open("/dev/zero", "rb") as f, pytest.raises(CacheRejected, match="limit"):
        cf.read_source(f)


# ---------------------------------------------------------------------------------------- writing


def _leftovers(d):
    return sorted(n for n in os.listdir(d) if ".tmp." in n)


def test_write_atomic_writes_and_leaves_no_temp(tmp_path):
    p = tmp_path / "c.vkcache"
    cf.write_atomic(p, b"one")
    cf.write_atomic(str(p), b"two, longer")
    assert p.read_bytes() == b"two, longer"
    assert _leftovers(tmp_path) == []
    cf.write_atomic(p, bytearray(b"three"), durable=True)
    assert p.read_bytes() == b"three"


def test_write_atomic_temp_name_pattern(tmp_path, monkeypatch):
    seen = []
    real_replace = os.replace

    def spy(src, dst):
        seen.append((os.fspath(src), os.path.exists(src), os.fspath(dst)))
        return real_replace(src, dst)

    monkeypatch.setattr(fileio.os, "replace", spy)
    p = tmp_path / "c.vkcache"
    cf.write_atomic(p, b"a")
    cf.write_atomic(p, b"b")
    pat = re.compile(re.escape(str(p)) + rf"\.tmp\.{os.getpid()}\.([0-9a-f]{{12}})$")
    names = []
    for src, existed, dst in seen:
        m = pat.match(src)
        assert m and existed and dst == str(p), src
        names.append(m.group(1))
    assert names[1] != names[0]  # a random part: a recurring pid never meets its old names


def test_write_atomic_is_not_blocked_by_temps_of_a_recurring_pid(tmp_path):
    # containers reuse pids: 100 leftover names of "our" pid must neither block a save nor stay
    p = tmp_path / "c.vkcache"
    for n in range(100):
        (tmp_path / f"c.vkcache.tmp.{os.getpid()}.{n}").write_bytes(b"old")
    cf.write_atomic(p, b"data")
    assert p.read_bytes() == b"data"
    assert _leftovers(tmp_path) == []


def test_stale_temps_of_dead_processes_are_removed_live_ones_kept(tmp_path):
    import subprocess

    dead = subprocess.Popen(["true"])
    dead.wait()
    live = subprocess.Popen(["sleep", "30"])
    try:
        (tmp_path / f"c.vkcache.tmp.{dead.pid}.abc").write_bytes(b"x")
        (tmp_path / f"c.vkcache.tmp.{live.pid}.abc").write_bytes(b"x")
        (tmp_path / "other.vkcache.tmp.1.abc").write_bytes(b"x")  # another cache's: not ours to judge
        cf.write_atomic(tmp_path / "c.vkcache", b"data")
        assert _leftovers(tmp_path) == sorted([f"c.vkcache.tmp.{live.pid}.abc", "other.vkcache.tmp.1.abc"])
    finally:
        live.kill()
        live.wait()


@pytest.mark.parametrize("kind", ["dir", "fifo", "symlink-to-fifo", "chardev"])
def test_write_atomic_refuses_what_is_not_a_regular_file(tmp_path, kind):
    target = tmp_path / "target"
    if kind == "dir":
        target.mkdir()
    elif kind == "fifo":
        os.mkfifo(target)
    elif kind == "symlink-to-fifo":
        os.mkfifo(tmp_path / "fifo")
        target.symlink_to(tmp_path / "fifo")
    else:
        target = pathlib.Path("/dev/null")
    before = os.lstat(target)
    with pytest.raises(OSError, match="not a regular file"):
        cf.write_atomic(target, b"data")
    after = os.lstat(target)
    assert (before.st_mode, before.st_ino, before.st_rdev) == (after.st_mode, after.st_ino, after.st_rdev)
    assert [n for n in os.listdir(target.parent) if ".tmp." in n and n.startswith(target.name)] == []


def test_write_atomic_keeps_permission_bits_and_new_files_follow_umask(tmp_path):
    p = tmp_path / "c.vkcache"
    p.write_bytes(b"old")
    os.chmod(p, 0o600)
    cf.write_atomic(p, b"new")
    assert stat.S_IMODE(os.stat(p).st_mode) == 0o600 and p.read_bytes() == b"new"
    old = os.umask(0o027)
    try:
        cf.write_atomic(tmp_path / "fresh.vkcache", b"x")
    finally:
        os.umask(old)
    assert stat.S_IMODE(os.stat(tmp_path / "fresh.vkcache").st_mode) == 0o640


def test_read_source_never_blocks_on_a_fifo(tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(cf.CacheRejected, match="FIFO"):
        cf.read_source(fifo)  # no writer: a blocking open() would hang here forever


def test_read_source_missing_file_is_a_miss(tmp_path):
    with pytest.raises(cf.CacheMissing):
        cf.read_source(tmp_path / "nothing.vkcache")
    with pytest.raises(cf.CacheRejected, match="directory"):
        cf.read_source(tmp_path)


def test_write_atomic_failure_removes_temp_and_raises_oserror(tmp_path, monkeypatch):
    with pytest.raises(OSError):
        cf.write_atomic(tmp_path / "no-such-dir" / "c.vkcache", b"x")
    target_dir = tmp_path / "is-a-dir"
    target_dir.mkdir()
    (target_dir / "keep").write_bytes(b"")
    with pytest.raises(OSError):
        cf.write_atomic(target_dir, b"x")  # rename over a non-empty directory fails
    assert _leftovers(tmp_path) == []

    def failing_replace(src, dst):
        raise PermissionError("read-only")

    monkeypatch.setattr(fileio.os, "replace", failing_replace)
    p = tmp_path / "c.vkcache"
    with pytest.raises(OSError, match="read-only"):
        cf.write_atomic(p, b"x")
    assert _leftovers(tmp_path) == [] and not p.exists()
    monkeypatch.undo()
    with pytest.raises(OSError):
        cf.write_atomic(p, 123)
    assert _leftovers(tmp_path) == []


def test_write_atomic_refused_temp_creation_raises_oserror(tmp_path, monkeypatch):
    # what an unwritable directory does, also when the tests run as root
    def refuse(path, *a, **kw):
        raise PermissionError(13, "Permission denied", path)

    monkeypatch.setattr(fileio.os, "open", refuse)
    with pytest.raises(PermissionError):
        cf.write_atomic(tmp_path / "c.vkcache", b"x")
    monkeypatch.undo()
    assert os.listdir(tmp_path) == []


def test_write_atomic_failed_write_removes_temp(tmp_path, monkeypatch):
    class FullDisk(io.FileIO):
        def write(self, b):
            raise OSError(28, "No space left on device")

    monkeypatch.setattr(fileio.os, "fdopen", lambda fd, mode: FullDisk(fd, "wb"))
    with pytest.raises(OSError, match="No space"):
        cf.write_atomic(tmp_path / "c.vkcache", b"x" * 100)
    assert os.listdir(tmp_path) == []


def test_write_atomic_into_a_path_that_is_not_a_directory(tmp_path):
    # permission bits do not stop root (CI runs as root), a parent that is a file stops everyone
    parent = tmp_path / "plainfile"
    parent.write_bytes(b"")
    with pytest.raises(OSError):
        cf.write_atomic(parent / "c.vkcache", b"x")
    assert os.listdir(tmp_path) == ["plainfile"]


def test_concurrent_writers_leave_one_complete_file(tmp_path):
    p = tmp_path / "c.vkcache"
    payloads = [bytes([i]) * 50_000 for i in range(8)]
    errors = []

    def writer(data):
        try:
            for _ in range(5):
                cf.write_atomic(p, data)
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=writer, args=(d,)) for d in payloads]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert p.read_bytes() in payloads
    assert _leftovers(tmp_path) == []


def test_write_target(tmp_path, small_file):
    ba = bytearray(b"old contents that are much longer than needed" * 20)
    cf.write_target(ba, small_file)
    assert ba == small_file
    ba = bytearray(b"short")
    cf.write_target(ba, small_file)
    assert ba == small_file
    p = tmp_path / "c.vkcache"
    cf.write_target(p, small_file)
    assert p.read_bytes() == small_file
    cf.write_target(str(p), b"x")
    assert p.read_bytes() == b"x"
    bio = io.BytesIO()
    bio.write(b"head:")
    cf.write_target(bio, small_file)
    assert bio.getvalue() == b"head:" + small_file
    with open(tmp_path / "f", "wb") as f:
        cf.write_target(f, small_file)
    assert (tmp_path / "f").read_bytes() == small_file
    assert _leftovers(tmp_path) == []


def test_write_target_handles_partial_writes_and_errors():
    class Trickle:
        def __init__(self):
            self.out = bytearray()
            self.flushed = False

        def write(self, b):
            b = bytes(b)[:3]
            self.out += b
            return len(b)

        def flush(self):
            self.flushed = True

    t = Trickle()
    cf.write_target(t, b"0123456789")
    assert t.out == b"0123456789" and t.flushed

    class Full:
        def write(self, b):
            raise OSError(28, "No space left on device")

    with pytest.raises(OSError, match="No space"):
        cf.write_target(Full(), b"abc")
    with pytest.raises(OSError):
        cf.write_target(io.StringIO(), b"abc")  # text stream
    with pytest.raises(TypeError):
        cf.write_target(42, b"abc")
    with pytest.raises(TypeError):
        cf.write_target(b"immutable", b"abc")


def test_save_then_load_through_files(tmp_path):
    es = entries(5)
    p = tmp_path / "model.ncnn.vkcache"
    cf.write_target(p, cf.encode(IDENT, es, vk_blob()))
    assert decode(cf.read_source(p)) == (es, vk_blob())


def test_the_cache_package_stands_below_gpu():
    """ncnn_c/cache/ is pure data and I/O: gpu/ calls down into it, never the other way."""
    import ast

    root = pathlib.Path(cf.__file__).resolve().parents[1] / "cache"
    offenders = []
    for path in sorted(root.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            names = []
            if isinstance(node, ast.ImportFrom):
                names = [("." * node.level) + (node.module or "")]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            offenders += [
                f"{path.name}: {n}" for n in names if re.match(r"(ncnn_c\.|\.\.)(gpu|net|tools)\b|vulkan", n)
            ]
    assert offenders == []
