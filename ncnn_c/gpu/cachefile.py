"""The persistent pipeline cache file: byte layout, strict validation and file I/O.

Pure data and I/O, no Vulkan: ``gpu/pipelinecache.py`` collects SPIR-V entries and the
driver's ``VkPipelineCache`` blob and calls ``encode``; on load it calls ``decode``, which
either returns everything or raises ``CacheRejected`` with a reason naming the field and
offset that failed. The whole file is rejected on any failure (seed 000 §六): the driver
blob may hold pipelines built from several shaders, so partial loading is not safe.

Every byte of a file is covered by at least one check: the header by a checksum and by
per-field checks (reserved bytes must be zero), the SPIR-V section and the driver blob by
their FNV-1a hashes, each SPIR-V entry by two more hashes. Those catch accidents, not a
writer who recomputes them: with a cache key (``resolve_key``: an argument, or
``$NCNN_C_CACHE_KEY``) a file also carries an HMAC-SHA256 of all its bytes, and a reader with
the key refuses any file without a valid one. The layout is documented in
``docs/cache-format.md``.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import os
import secrets
import stat
import struct
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from ..errors import NcnnError


def _load_native():
    """The C hash extension, built on first use like ``_shaderc``; None means pure Python.

    Set NCNN_C_NO_NATIVE_BUILD=1 to skip the build attempt (the fallback is then immediate).
    """
    try:
        from .._native import _hash

        return _hash
    except ImportError:
        pass
    if os.environ.get("NCNN_C_NO_NATIVE_BUILD"):
        return None
    try:
        import importlib

        from .._native import build_hash

        build_hash.build()
        importlib.invalidate_caches()
        from .._native import _hash

        return _hash
    except Exception:  # no compiler, no headers, read-only install: the pure Python hashes work
        return None


_native = _load_native()

CACHE_FILE_MAGIC = 0x5A545546
CACHE_FILE_VERSION = 4
CACHE_FILE_SIZE_LIMIT = 256 * 1024 * 1024

ENDIAN_MARKER = 0x12345678
POINTER_SIZE = struct.calcsize("P")  # 8 on every 64-bit platform we run on
UUID_SIZE = 16

_U32 = 0xFFFFFFFF
_FNV_OFFSET = 0x811C9DC5
_FNV_PRIME = 0x01000193


class CacheRejected(NcnnError):
    """A cache file (or source) that cannot be used; ``str(e)`` says which field and why."""


class CacheMissing(CacheRejected):
    """The cache file does not exist (yet): the ordinary first start, not a problem."""


# --------------------------------------------------------------------------- hashes


def _as_view(data) -> memoryview:
    v = data if isinstance(data, memoryview) else memoryview(data)
    if v.ndim != 1 or v.itemsize != 1 or v.format not in ("B", "b", "c"):
        v = v.cast("B")
    return v


def fnv1a32_py(data) -> int:
    """32-bit FNV-1a in pure Python (the reference the C version is tested against)."""
    h = _FNV_OFFSET
    for b in bytes(data):
        h = ((h ^ b) * _FNV_PRIME) & _U32
    return h


_C1 = 0xCC9E2D51
_C2 = 0x1B873593


def _murmur3_tail(h: int, tail: bytes, size: int) -> int:
    if tail:
        k = int.from_bytes(tail, "little")
        k = (k * _C1) & _U32
        k = ((k << 15) | (k >> 17)) & _U32
        k = (k * _C2) & _U32
        h ^= k
    h ^= size & _U32
    h ^= h >> 16
    h = (h * 0x85EBCA6B) & _U32
    h ^= h >> 13
    h = (h * 0xC2B2AE35) & _U32
    h ^= h >> 16
    return h


def murmur3_32_py(data, seed: int = 0) -> int:
    """MurmurHash3 x86_32 in pure Python; the per-block mixing is vectorised with numpy."""
    b = bytes(data)
    n = len(b)
    nblocks = n // 4
    h = seed & _U32
    if nblocks >= 64:
        import numpy as np

        kv = np.frombuffer(b, dtype="<u4", count=nblocks).astype(np.uint32)
        kv *= np.uint32(_C1)
        kv = (kv << np.uint32(15)) | (kv >> np.uint32(17))
        kv *= np.uint32(_C2)
        blocks = kv.tolist()
    else:
        blocks = []
        for i in range(nblocks):
            k = int.from_bytes(b[4 * i : 4 * i + 4], "little")
            k = (k * _C1) & _U32
            k = ((k << 15) | (k >> 17)) & _U32
            blocks.append((k * _C2) & _U32)
    for k in blocks:
        h ^= k
        h = ((h << 13) | (h >> 19)) & _U32
        h = (h * 5 + 0xE6546B64) & _U32
    return _murmur3_tail(h, b[4 * nblocks :], n)


if _native is not None:
    _ffi, _lib = _native.ffi, _native.lib

    def fnv1a32(data) -> int:
        """32-bit FNV-1a (offset basis 0x811c9dc5, prime 0x01000193) of a bytes-like object."""
        v = _as_view(data)
        return _lib.ncnnc_fnv1a32(_ffi.from_buffer("uint8_t[]", v), len(v))

    def murmur3_32(data, seed: int = 0) -> int:
        """MurmurHash3 x86_32 (little-endian blocks, standard tail and fmix) of a bytes-like object."""
        v = _as_view(data)
        return _lib.ncnnc_murmur3_32(_ffi.from_buffer("uint8_t[]", v), len(v), seed & _U32)

    HASH_BACKEND = "native"
else:  # pragma: no cover - depends on the checkout
    fnv1a32 = fnv1a32_py
    murmur3_32 = murmur3_32_py
    HASH_BACKEND = "python"


# --------------------------------------------------------------------------- identity


@dataclass(frozen=True)
class Identity:
    """What must match between the device that wrote a cache file and the one loading it."""

    ncnn_version: int
    vendor_id: int
    device_id: int
    api_version: int
    driver_version: int
    driver_id: int
    driver_name: str
    device_name: str
    pipeline_cache_uuid: bytes


@dataclass(frozen=True)
class SpirvEntry:
    """Compiled SPIR-V of one builtin shader under one set of shader-affecting option bits."""

    shader_id: int
    opt_bits: int
    source_hash: int
    spirv: bytes


def _text(v) -> str:
    if v is None:
        return ""
    if isinstance(v, (bytes, bytearray)):
        return bytes(v).split(b"\0", 1)[0].decode("utf-8", "replace")
    return str(v)


def identity_of(info, ncnn_version) -> Identity:
    """The Identity of a GpuInfo-like object (vendor_id, device_id, ..., pipeline_cache_uuid)."""
    return Identity(
        ncnn_version=int(ncnn_version),
        vendor_id=int(info.vendor_id),
        device_id=int(info.device_id),
        api_version=int(info.api_version),
        driver_version=int(info.driver_version),
        driver_id=int(info.driver_id),
        driver_name=_text(info.driver_name),
        device_name=_text(info.device_name),
        pipeline_cache_uuid=bytes(info.pipeline_cache_uuid),
    )


def name_hash(name: str) -> int:
    """How driver and device names are stored in the header: FNV-1a of their UTF-8 bytes."""
    return fnv1a32(name.encode("utf-8"))


# --------------------------------------------------------------------------- layout

# Fixed 128-byte header, little-endian, every field naturally aligned.
_HEADER = struct.Struct("<14I16s2Q3I24sI")
HEADER_SIZE = _HEADER.size  # 128
_AUTH_OFFSET = 96
_RESERVED_OFFSET = 100
_RESERVED_SIZE = 24
_CHECKSUM_OFFSET = 124
MAGIC_BYTES = struct.pack("<I", CACHE_FILE_MAGIC)

# header.auth: how the file is authenticated. 0: not at all (the FNV checks catch accidents,
# not a writer who recomputes them); 1: an HMAC-SHA256 of every byte before it, with the
# cache key, in a 32-byte trailer after the driver blob.
AUTH_NONE = 0
AUTH_HMAC_SHA256 = 1
MAC_SIZE = 32
KEY_ENV = "NCNN_C_CACHE_KEY"

# (name, offset) of each header field, in struct order; used for reasons and `cache inspect`.
HEADER_FIELDS = (
    ("magic", 0),
    ("version", 4),
    ("header_size", 8),
    ("ncnn_version", 12),
    ("endian_marker", 16),
    ("pointer_size", 20),
    ("vendor_id", 24),
    ("device_id", 28),
    ("api_version", 32),
    ("driver_version", 36),
    ("driver_id", 40),
    ("driver_name_hash", 44),
    ("device_name_hash", 48),
    ("spirv_entry_count", 52),
    ("pipeline_cache_uuid", 56),
    ("spirv_section_size", 72),
    ("driver_blob_size", 80),
    ("spirv_section_fnv1a", 88),
    ("driver_blob_fnv1a", 92),
    ("auth", _AUTH_OFFSET),
    ("reserved", _RESERVED_OFFSET),
    ("header_fnv1a", _CHECKSUM_OFFSET),
)
_OFFSET = dict(HEADER_FIELDS)

# Per SPIR-V entry: 24-byte header, then the SPIR-V words.
_ENTRY = struct.Struct("<6I")
ENTRY_HEADER_SIZE = _ENTRY.size  # 24
ENTRY_FIELDS = (
    ("shader_id", 0),
    ("opt_bits", 4),
    ("source_hash", 8),
    ("spirv_size", 12),
    ("spirv_fnv1a", 16),
    ("spirv_murmur3", 20),
)
_ENTRY_OFFSET = dict(ENTRY_FIELDS)

# VkPipelineCacheHeaderVersionOne: headerLength, headerVersion, vendorID, deviceID, uuid.
_VK_BLOB_HEADER = struct.Struct("<4I16s")
VK_PIPELINE_CACHE_HEADER_VERSION_ONE = 1


@dataclass(frozen=True)
class CacheHeader:
    """The decoded 128-byte header, as stored (names are hashes, not strings)."""

    magic: int
    version: int
    header_size: int
    ncnn_version: int
    endian_marker: int
    pointer_size: int
    vendor_id: int
    device_id: int
    api_version: int
    driver_version: int
    driver_id: int
    driver_name_hash: int
    device_name_hash: int
    spirv_entry_count: int
    pipeline_cache_uuid: bytes
    spirv_section_size: int
    driver_blob_size: int
    spirv_section_fnv1a: int
    driver_blob_fnv1a: int
    auth: int
    reserved: bytes
    header_fnv1a: int

    @property
    def trailer_size(self) -> int:
        """Bytes after the driver blob: the MAC of an authenticated file."""
        return MAC_SIZE if self.auth == AUTH_HMAC_SHA256 else 0


@dataclass(frozen=True)
class DecodedCache:
    """Everything ``decode_full`` checked: the header, the entries, what ``resolve`` returned for each, the blob."""

    header: CacheHeader
    entries: list[SpirvEntry]
    resolved: list[object]
    driver_blob: bytes


def _check_u32(what: str, v) -> int:
    if not isinstance(v, int) or isinstance(v, bool) or not 0 <= v <= _U32:
        raise ValueError(f"{what} must be an integer in 0..0xffffffff, got {v!r}")
    return v


def resolve_key(key=None) -> bytes | None:
    """The cache key to authenticate with: ``key`` (bytes, or str as UTF-8) when given, else
    ``$NCNN_C_CACHE_KEY`` (UTF-8), else None (no authentication). An empty key is no key."""
    if key is None:
        key = os.environ.get(KEY_ENV) or None
    if key is None:
        return None
    if isinstance(key, str):
        key = key.encode("utf-8", "surrogateescape")
    if not isinstance(key, (bytes, bytearray, memoryview)):
        raise TypeError(f"cache key must be bytes or str, got {type(key).__name__}")
    return bytes(key) or None


def mac_of(key: bytes, data) -> bytes:
    """HMAC-SHA256 of ``data`` with ``key``."""
    return hmac.new(key, data, hashlib.sha256).digest()


def _pack_header(identity: Identity, count: int, section: bytes, blob: bytes, auth: int = AUTH_NONE) -> bytes:
    uuid = bytes(identity.pipeline_cache_uuid)
    if len(uuid) != UUID_SIZE:
        raise ValueError(f"pipeline_cache_uuid must be {UUID_SIZE} bytes, got {len(uuid)}")
    fields = [
        CACHE_FILE_MAGIC,
        CACHE_FILE_VERSION,
        HEADER_SIZE,
        _check_u32("ncnn_version", identity.ncnn_version),
        ENDIAN_MARKER,
        POINTER_SIZE,
        _check_u32("vendor_id", identity.vendor_id),
        _check_u32("device_id", identity.device_id),
        _check_u32("api_version", identity.api_version),
        _check_u32("driver_version", identity.driver_version),
        _check_u32("driver_id", identity.driver_id),
        name_hash(identity.driver_name),
        name_hash(identity.device_name),
        count,
        uuid,
        len(section),
        len(blob),
        fnv1a32(section),
        fnv1a32(blob),
        auth,
        bytes(_RESERVED_SIZE),
        0,
    ]
    head = _HEADER.pack(*fields)
    return head[:_CHECKSUM_OFFSET] + struct.pack("<I", fnv1a32(head[:_CHECKSUM_OFFSET]))


def encode(
    identity: Identity, entries: list[SpirvEntry], driver_blob: bytes, key: bytes | None = None
) -> bytes:
    """The cache file for ``identity`` holding ``entries`` and ``driver_blob``; with ``key``,
    authenticated (``header.auth`` 1 and the HMAC-SHA256 trailer).

    Raises ValueError for data that ``decode`` would reject anyway (SPIR-V size zero or not a
    multiple of 4, duplicate (shader_id, opt_bits), source_hash 0, out-of-range
    fields, a file over CACHE_FILE_SIZE_LIMIT), so that every file written can be read back.
    """
    parts = []
    seen = set()
    for i, e in enumerate(entries):
        entry_key = (
            _check_u32(f"entry {i} shader_id", e.shader_id),
            _check_u32(f"entry {i} opt_bits", e.opt_bits),
        )
        if _check_u32(f"entry {i} source_hash", e.source_hash) == 0:
            raise ValueError(f"entry {i}: source_hash 0 marks an unknown shader and cannot be cached")
        spirv = bytes(e.spirv)
        if not spirv or len(spirv) % 4:
            raise ValueError(f"entry {i}: SPIR-V size {len(spirv)} is zero or not a multiple of 4")
        if entry_key in seen:
            raise ValueError(f"entry {i}: duplicate (shader_id, opt_bits) = {entry_key}")
        seen.add(entry_key)
        parts.append(
            _ENTRY.pack(
                entry_key[0], entry_key[1], e.source_hash, len(spirv), fnv1a32(spirv), murmur3_32(spirv)
            )
        )
        parts.append(spirv)
    section = b"".join(parts)
    blob = bytes(driver_blob)
    total = HEADER_SIZE + len(section) + len(blob) + (MAC_SIZE if key else 0)
    if total > CACHE_FILE_SIZE_LIMIT:
        raise ValueError(f"cache file would be {total} bytes, over the {CACHE_FILE_SIZE_LIMIT}-byte limit")
    auth = AUTH_HMAC_SHA256 if key else AUTH_NONE
    data = _pack_header(identity, len(entries), section, blob, auth) + section + blob
    return data + mac_of(key, data) if key else data


# --------------------------------------------------------------------------- validation


def _field(name: str) -> str:
    return f"header.{name} (offset {_OFFSET[name]})"


def read_header(data) -> CacheHeader:
    """Parse and check the header on its own: size, magic, version, checksum, endian, pointer size, reserved bytes.

    Needs no device identity, so ``cache inspect`` can use it. Raises CacheRejected.
    """
    try:
        view = _as_view(data)
    except TypeError:
        raise CacheRejected(f"cache data must be bytes-like, got {type(data).__name__}") from None
    n = len(view)
    limit = CACHE_FILE_SIZE_LIMIT
    if n > limit:
        raise CacheRejected(f"cache data is {n} bytes, over the {limit}-byte limit")
    if n < HEADER_SIZE:
        raise CacheRejected(f"cache data is {n} bytes, shorter than the {HEADER_SIZE}-byte header")
    hdr = CacheHeader(*_HEADER.unpack_from(view, 0))
    if hdr.magic != CACHE_FILE_MAGIC:
        raise CacheRejected(
            f"{_field('magic')} is 0x{hdr.magic:08x}, expected 0x{CACHE_FILE_MAGIC:08x}: not an ncnn_c pipeline cache"
        )
    if hdr.version != CACHE_FILE_VERSION:
        raise CacheRejected(
            f"{_field('version')} is {hdr.version}, this build reads version {CACHE_FILE_VERSION}"
        )
    if hdr.header_size != HEADER_SIZE:
        raise CacheRejected(f"{_field('header_size')} is {hdr.header_size}, expected {HEADER_SIZE}")
    actual = fnv1a32(view[:_CHECKSUM_OFFSET])
    if hdr.header_fnv1a != actual:
        raise CacheRejected(
            f"{_field('header_fnv1a')} is 0x{hdr.header_fnv1a:08x} but bytes 0..{_CHECKSUM_OFFSET - 1} hash to 0x{actual:08x}: header corrupted"
        )
    if hdr.endian_marker != ENDIAN_MARKER:
        raise CacheRejected(
            f"{_field('endian_marker')} is 0x{hdr.endian_marker:08x}, expected 0x{ENDIAN_MARKER:08x}"
        )
    if hdr.pointer_size != POINTER_SIZE:
        raise CacheRejected(f"{_field('pointer_size')} is {hdr.pointer_size}, expected {POINTER_SIZE}")
    if hdr.auth not in (AUTH_NONE, AUTH_HMAC_SHA256):
        raise CacheRejected(f"{_field('auth')} is {hdr.auth}: unknown authentication (0 none, 1 HMAC-SHA256)")
    if any(hdr.reserved):
        i = next(i for i, b in enumerate(hdr.reserved) if b)
        raise CacheRejected(
            f"header.reserved byte at offset {_RESERVED_OFFSET + i} is 0x{hdr.reserved[i]:02x}, must be zero"
        )
    return hdr


def _check_identity(hdr: CacheHeader, identity: Identity) -> None:
    for name in ("ncnn_version", "vendor_id", "device_id", "api_version", "driver_version", "driver_id"):
        stored, want = getattr(hdr, name), getattr(identity, name)
        if stored != want:
            raise CacheRejected(f"{_field(name)} mismatch: file has {stored:#x}, this device has {want:#x}")
    for name, text in (("driver_name", identity.driver_name), ("device_name", identity.device_name)):
        stored, want = getattr(hdr, name + "_hash"), name_hash(text)
        if stored != want:
            raise CacheRejected(
                f"{_field(name + '_hash')} mismatch: file has 0x{stored:08x}, this device's {name} {text!r} hashes to 0x{want:08x}"
            )
    if hdr.pipeline_cache_uuid != bytes(identity.pipeline_cache_uuid):
        raise CacheRejected(
            f"{_field('pipeline_cache_uuid')} mismatch: file has {hdr.pipeline_cache_uuid.hex()}, "
            f"this device has {bytes(identity.pipeline_cache_uuid).hex()}"
        )


def _check_layout(hdr: CacheHeader, n: int) -> None:
    # Python ints: the u64 sizes cannot overflow, and nothing is allocated from them.
    end = HEADER_SIZE + hdr.spirv_section_size + hdr.driver_blob_size + hdr.trailer_size
    if end != n:
        mac = f" + MAC {MAC_SIZE}" if hdr.trailer_size else ""
        raise CacheRejected(
            f"section sizes do not add up: header {HEADER_SIZE} + {_field('spirv_section_size')} {hdr.spirv_section_size}"
            f" + {_field('driver_blob_size')} {hdr.driver_blob_size}{mac} = {end}, but the data is {n} bytes"
            + (" (truncated)" if end > n else " (trailing bytes)")
        )
    if hdr.spirv_entry_count * ENTRY_HEADER_SIZE > hdr.spirv_section_size:
        raise CacheRejected(
            f"{_field('spirv_entry_count')} {hdr.spirv_entry_count} entries cannot fit in a"
            f" {hdr.spirv_section_size}-byte SPIR-V section"
        )


def check_mac(view: memoryview, hdr: CacheHeader, key: bytes | None) -> None:
    """With a key, the file must carry a MAC made with it over every byte before the MAC;
    without one, nothing is checked (a MAC the reader cannot verify is ignored)."""
    if key is None:
        return
    if hdr.auth != AUTH_HMAC_SHA256:
        raise CacheRejected(
            f"{_field('auth')} is {hdr.auth}: the file is not authenticated, and a cache key is set"
            f" (${KEY_ENV} or key=): written without the key, or its MAC was stripped"
        )
    body = len(view) - MAC_SIZE
    if not hmac.compare_digest(mac_of(key, view[:body]), bytes(view[body:])):
        raise CacheRejected(
            f"MAC at offset {body} does not match: written with another key, or changed after it was written"
        )


def _decode_entries(
    section: memoryview,
    count: int,
    source_hash_of,
    resolve,
    stale: list | None = None,
    interface_mismatch: Callable[[int, object], str | None] | None = None,
) -> tuple[list[SpirvEntry], list[object]]:
    base = HEADER_SIZE  # file offset of the section, for reasons
    entries: list[SpirvEntry] = []
    resolved: list[object] = []
    seen: dict[tuple[int, int], int] = {}
    pos = 0
    size = len(section)
    for i in range(count):
        where = f"SPIR-V entry {i} at offset {base + pos}"
        if size - pos < ENTRY_HEADER_SIZE:
            raise CacheRejected(
                f"{where}: entry header needs {ENTRY_HEADER_SIZE} bytes, {size - pos} left in the section"
            )
        sti, opt_bits, source_hash, nbytes, fnv, mm3 = _ENTRY.unpack_from(section, pos)
        body = pos + ENTRY_HEADER_SIZE
        if nbytes == 0 or nbytes % 4:
            raise CacheRejected(f"{where}: spirv_size {nbytes} is zero or not a multiple of 4")
        if nbytes > size - body:
            raise CacheRejected(
                f"{where}: spirv_size {nbytes} runs past the end of the SPIR-V section ({size - body} bytes left)"
            )
        spirv = section[body : body + nbytes]
        if fnv1a32(spirv) != fnv:
            raise CacheRejected(f"{where}: spirv_fnv1a 0x{fnv:08x} does not match the SPIR-V bytes")
        if murmur3_32(spirv) != mm3:
            raise CacheRejected(f"{where}: spirv_murmur3 0x{mm3:08x} does not match the SPIR-V bytes")
        key = (sti, opt_bits)
        if key in seen:
            raise CacheRejected(
                f"{where}: duplicate of entry {seen[key]} (shader_id {sti}, opt_bits 0x{opt_bits:x})"
            )
        seen[key] = i
        try:
            expected = source_hash_of(sti)
        except Exception as e:
            expected = e
        reason = None
        if isinstance(expected, Exception):
            reason = f"shader_id {sti} is unknown ({type(expected).__name__}: {expected})"
        elif not isinstance(expected, int) or expected == 0:
            reason = f"shader_id {sti} is unknown to this build (no source hash)"
        elif expected != source_hash:
            reason = (
                f"source_hash 0x{source_hash:08x} of shader_id {sti} is stale,"
                f" the shader source now hashes to 0x{expected:08x}"
            )
        if reason is not None:
            if stale is None:
                raise CacheRejected(f"{where}: {reason}")
            # an edited or removed shader invalidates only the entries compiled from it
            stale.append((SpirvEntry(sti, opt_bits, source_hash, bytes(spirv)), reason))
            pos = body + nbytes
            continue
        spirv_bytes = bytes(spirv)
        try:
            info = resolve(spirv_bytes)
        except Exception as e:
            raise CacheRejected(
                f"{where}: SPIR-V of shader_id {sti} does not resolve ({type(e).__name__}: {e})"
            ) from e
        bad = interface_mismatch(sti, info) if interface_mismatch is not None else None
        if bad:
            raise CacheRejected(f"{where}: SPIR-V stored under shader_id {sti}: {bad}")
        entries.append(SpirvEntry(sti, opt_bits, source_hash, spirv_bytes))
        resolved.append(info)
        pos = body + nbytes
    if pos != size:
        raise CacheRejected(
            f"SPIR-V section: {count} entries end at offset {base + pos}, but the section ends at offset {base + size}"
        )
    return entries, resolved


def decode_full(
    data,
    identity: Identity,
    source_hash_of: Callable[[int], int],
    resolve: Callable[[bytes], object],
    stale: list | None = None,
    key: bytes | None = None,
    interface_mismatch: Callable[[int, object], str | None] | None = None,
) -> DecodedCache:
    """``decode`` that also returns the header and what ``resolve`` gave for each entry."""
    try:
        view = _as_view(data)
        hdr = read_header(view)
        _check_layout(hdr, len(view))
        check_mac(view, hdr, key)
        _check_identity(hdr, identity)
        sec_end = HEADER_SIZE + hdr.spirv_section_size
        section = view[HEADER_SIZE:sec_end]
        blob = view[sec_end : sec_end + hdr.driver_blob_size]
        if fnv1a32(section) != hdr.spirv_section_fnv1a:
            raise CacheRejected(
                f"{_field('spirv_section_fnv1a')} 0x{hdr.spirv_section_fnv1a:08x} does not match the SPIR-V section"
            )
        if fnv1a32(blob) != hdr.driver_blob_fnv1a:
            raise CacheRejected(
                f"{_field('driver_blob_fnv1a')} 0x{hdr.driver_blob_fnv1a:08x} does not match the driver blob"
            )
        entries, resolved = _decode_entries(
            section, hdr.spirv_entry_count, source_hash_of, resolve, stale, interface_mismatch
        )
        blob_bytes = bytes(blob)
        validate_driver_blob(
            blob_bytes, identity.vendor_id, identity.device_id, identity.pipeline_cache_uuid, offset=sec_end
        )
        return DecodedCache(hdr, entries, resolved, blob_bytes)
    except CacheRejected:
        raise
    except Exception as e:  # hostile input must never escape as anything but a rejection
        raise CacheRejected(f"unexpected {type(e).__name__} while decoding: {e}") from e


def decode(
    data,
    identity: Identity,
    source_hash_of: Callable[[int], int],
    resolve: Callable[[bytes], object],
    stale: list | None = None,
    key: bytes | None = None,
    interface_mismatch: Callable[[int, object], str | None] | None = None,
) -> tuple[list[SpirvEntry], bytes]:
    """(entries, driver_blob) of a cache file written for ``identity``; raises CacheRejected on any failure.

    ``source_hash_of(shader_id)`` gives the current source hash of a builtin shader
    (0 or an exception for an unknown index); ``resolve(spirv)`` must succeed for every entry.
    An entry whose shader source changed (or vanished) rejects the file, unless ``stale`` is a
    list: then such entries, intact otherwise, are left out and appended to it as
    ``(entry, reason)`` — the per-shader invalidation of the SPIR-V cache.
    With ``key`` the file must carry a valid MAC made with it (``check_mac``), checked before
    anything else is read past the header. ``interface_mismatch(shader_id, resolved)`` says why
    an entry's SPIR-V cannot be a body of that shader (None: it can); any reason rejects.
    """
    d = decode_full(data, identity, source_hash_of, resolve, stale, key, interface_mismatch)
    return d.entries, d.driver_blob


def validate_driver_blob(blob: bytes, vendor_id, device_id, uuid, offset: int = 0) -> None:
    """Check a VkPipelineCache blob's VkPipelineCacheHeaderVersionOne against the device. Empty is fine.

    ``offset`` is where the blob starts in the cache file, for the reasons. Raises CacheRejected.
    """
    n = len(blob)
    if n == 0:
        return
    at = f"driver blob (offset {offset})"
    if n < _VK_BLOB_HEADER.size:
        raise CacheRejected(
            f"{at}: {n} bytes, shorter than the {_VK_BLOB_HEADER.size}-byte VkPipelineCacheHeaderVersionOne"
        )
    length, version, vid, did, blob_uuid = _VK_BLOB_HEADER.unpack_from(blob, 0)
    if length < _VK_BLOB_HEADER.size or length > n:
        raise CacheRejected(f"{at}: headerLength {length} is outside {_VK_BLOB_HEADER.size}..{n}")
    if version != VK_PIPELINE_CACHE_HEADER_VERSION_ONE:
        raise CacheRejected(f"{at}: headerVersion {version}, expected {VK_PIPELINE_CACHE_HEADER_VERSION_ONE}")
    if vid != vendor_id:
        raise CacheRejected(f"{at}: vendorID {vid:#x} does not match the device's {vendor_id:#x}")
    if did != device_id:
        raise CacheRejected(f"{at}: deviceID {did:#x} does not match the device's {device_id:#x}")
    if blob_uuid != bytes(uuid):
        raise CacheRejected(
            f"{at}: pipelineCacheUUID {blob_uuid.hex()} does not match the device's {bytes(uuid).hex()}"
        )


# --------------------------------------------------------------------------- I/O


def _read_limited(f, limit: int, what: str) -> bytes:
    chunks = []
    got = 0
    while got <= limit:
        chunk = f.read(min(limit + 1 - got, 1 << 20))
        if not chunk:
            break
        if not isinstance(chunk, (bytes, bytearray)):
            raise CacheRejected(
                f"{what}: read() returned {type(chunk).__name__}, expected bytes (open the file in binary mode)"
            )
        chunks.append(chunk)
        got += len(chunk)
    if got > limit:
        raise CacheRejected(f"{what}: more than {limit} bytes, over the cache file size limit")
    return b"".join(chunks)


def read_source(src) -> bytes:
    """The bytes of a cache source: bytes-like, a path, or a binary file object (from its current position).

    Never reads more than CACHE_FILE_SIZE_LIMIT + 1 bytes. Raises CacheRejected.
    """
    limit = CACHE_FILE_SIZE_LIMIT
    if isinstance(src, (bytes, bytearray, memoryview)):
        n = src.nbytes if isinstance(src, memoryview) else len(src)
        if n > limit:
            raise CacheRejected(f"cache data is {n} bytes, over the {limit}-byte limit")
        return src if isinstance(src, bytes) else bytes(src)
    if isinstance(src, (str, os.PathLike)):
        what = f"cache file {os.fsdecode(src)!r}"
        try:
            # O_NONBLOCK: opening a FIFO without a writer must not hang; it is refused below
            fd = os.open(src, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
        except FileNotFoundError as e:
            raise CacheMissing(f"{what}: no such file (a first start)") from e
        except OSError as e:
            raise CacheRejected(f"{what}: cannot read ({e.strerror or e})") from e
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                raise CacheRejected(f"{what}: not a regular file ({_file_kind(st.st_mode)})")
            if st.st_size > limit:
                raise CacheRejected(f"{what}: {st.st_size} bytes, over the {limit}-byte limit")
            with os.fdopen(fd, "rb") as f:
                fd = -1
                return _read_limited(f, limit, what)
        except OSError as e:
            raise CacheRejected(f"{what}: cannot read ({e.strerror or e})") from e
        finally:
            if fd >= 0:
                os.close(fd)
    if callable(getattr(src, "read", None)):
        what = f"cache file object {getattr(src, 'name', type(src).__name__)!r}"
        try:
            return _read_limited(src, limit, what)
        except CacheRejected:
            raise
        except Exception as e:  # OSError, a closed file's ValueError, whatever a custom reader raises
            raise CacheRejected(f"{what}: cannot read ({type(e).__name__}: {e})") from e
    raise CacheRejected(
        f"cannot read a cache from {type(src).__name__}: expected bytes, a path or a binary file object"
    )


_tmp_lock = threading.Lock()
# this process's temp files being written right now, by _canonical name: registered by
# write_atomic and compared by remove_stale_temps, which must agree however the caller
# spelled the path (relative, "./x", absolute, through a symlinked directory)
_tmp_in_flight: set[str] = set()


def _canonical(path: str) -> str:
    """``path`` absolute, with its directory resolved (not the last component: a symlinked
    cache file is replaced next to the link, as before)."""
    directory, name = os.path.split(os.path.abspath(path))
    return os.path.join(os.path.realpath(directory), name)


def _file_kind(mode: int) -> str:
    for test, name in (
        (stat.S_ISDIR, "a directory"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISSOCK, "a socket"),
    ):
        if test(mode):
            return name
    return "not a regular file"


def _tmp_path(path: str) -> str:
    # Same directory as the target, so os.replace is a rename within one filesystem. A random
    # part, not a counter: in containers the same pid recurs, and old names must never block.
    return f"{path}.tmp.{os.getpid()}.{secrets.token_hex(6)}"


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OSError):
        return True  # exists, owned by someone else
    return True


def remove_stale_temps(path) -> int:
    """Remove ``<path>.tmp.<pid>.*`` files left by dead processes (or by this one, not in use).

    Temp files of live processes are left alone. Returns how many were removed.
    """
    path = os.fsdecode(os.fspath(path))
    directory, base = os.path.split(_canonical(path))
    prefix = base + ".tmp."
    removed = 0
    try:
        names = os.listdir(directory)
    except OSError:
        return 0
    me = os.getpid()
    for name in names:
        if not name.startswith(prefix):
            continue
        pid_s, _, _rest = name[len(prefix) :].partition(".")
        if not pid_s.isdigit():
            continue
        full = os.path.join(directory, name)
        pid = int(pid_s)
        with _tmp_lock:
            if pid == me and full in _tmp_in_flight:
                continue
        if pid != me and _pid_alive(pid):
            continue
        try:
            os.unlink(full)
            removed += 1
        except OSError:
            pass
    return removed


def _fsync_dir(path) -> None:
    d = os.path.dirname(os.path.abspath(path)) or "."
    try:
        fd = os.open(d, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass  # some filesystems cannot fsync a directory; the rename itself already happened
    finally:
        os.close(fd)


def check_target(path) -> None:
    """Raise OSError unless ``path`` is missing or a regular file (or a symlink to one).

    ``write_atomic`` checks the same; merging savers call it first, before they create a lock
    file next to a target that must be left alone (``/dev/null.lock`` would be a new file).
    """
    path = os.fsdecode(os.fspath(path))
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return
    if not stat.S_ISREG(st.st_mode):
        raise OSError(f"writing {path!r} refused: it is {_file_kind(st.st_mode)}, not a regular file")


LOCK_TIMEOUT = 60.0


def lock_path(path) -> str:
    """The advisory lock file of a cache path: ``<path>.lock``, created on first use and never removed.

    Never removed because removing it would let two writers lock two different inodes.
    """
    return os.fsdecode(os.fspath(path)) + ".lock"


@contextlib.contextmanager
def locked(path, timeout: float = LOCK_TIMEOUT) -> Iterator[None]:
    """Hold an exclusive ``flock`` on ``<path>.lock`` (serialises merging writers of ``path``).

    Works between processes and between threads of one process (each call opens its own file
    description). Polls instead of blocking so that a writer stuck while holding the lock
    makes the others fail after ``timeout`` seconds (OSError) rather than hang forever. The
    lock goes away with its holder, so a killed writer never leaves the cache locked.
    """
    import fcntl

    lp = lock_path(path)
    flags = os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOFOLLOW", 0)
    fd = os.open(lp, flags | getattr(os, "O_NONBLOCK", 0), 0o666)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise OSError(f"lock file {lp!r} is {_file_kind(st.st_mode)}, not a regular file")
        deadline = time.monotonic() + timeout
        delay = 0.0005
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise OSError(f"timed out after {timeout:g} s waiting for the lock {lp!r}") from None
                time.sleep(delay)
                delay = min(delay * 2, 0.01)
        try:
            yield
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def write_atomic(path, data: bytes, *, durable: bool = False) -> None:
    """Write ``data`` to ``path`` through a unique temp file ``<path>.tmp.<pid>.<n>`` and os.replace.

    Readers see either the old file or the complete new one. With ``durable`` the temp file
    is fsynced before the rename and the directory after it (survives power loss, not only
    a killed process). On failure the temp file is removed and OSError is raised.
    """
    path = os.fsdecode(os.fspath(path))
    try:
        view = _as_view(data)
    except TypeError as e:
        raise OSError(f"writing {path!r} failed: data is not bytes-like ({e})") from e
    # only a regular file (or nothing) is replaced: a device node, FIFO, directory or a
    # symlink to one of those stays as it was (as root, /dev/zero would become a file)
    mode = None
    try:
        st = os.stat(path)
    except FileNotFoundError:
        pass
    else:
        if not stat.S_ISREG(st.st_mode):
            raise OSError(f"writing {path!r} refused: it is {_file_kind(st.st_mode)}, not a regular file")
        mode = stat.S_IMODE(st.st_mode)
    remove_stale_temps(path)
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0) | getattr(os, "O_CLOEXEC", 0)
    for _ in range(16):
        tmp = _tmp_path(path)
        key = _canonical(tmp)
        with _tmp_lock:  # registered before it exists: another thread's cleanup must not take it
            _tmp_in_flight.add(key)
        try:
            fd = os.open(tmp, flags, 0o666)  # new files follow the umask
            break
        except FileExistsError:
            with _tmp_lock:
                _tmp_in_flight.discard(key)
            continue
        except BaseException:
            with _tmp_lock:
                _tmp_in_flight.discard(key)
            raise
    else:
        raise FileExistsError(f"no free temporary name next to {path!r}")
    try:
        with os.fdopen(fd, "wb") as f:
            if mode is not None:
                os.fchmod(f.fileno(), mode)  # an existing 0600 cache stays 0600
            f.write(view)
            f.flush()
            if durable:
                os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException as e:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        if isinstance(e, OSError) or not isinstance(e, Exception):
            raise
        raise OSError(f"writing {path!r} failed: {e}") from e
    finally:
        with _tmp_lock:
            _tmp_in_flight.discard(key)
    if durable:
        _fsync_dir(path)


def write_target(dst, data: bytes) -> None:
    """Store ``data`` in a bytearray (contents replaced), a path (atomically), or a writable binary file object."""
    if isinstance(dst, bytearray):
        dst[:] = data
        return
    if isinstance(dst, (str, os.PathLike)):
        write_atomic(dst, data)
        return
    if isinstance(dst, (bytes, memoryview)):  # immutable, or fixed-size: cannot take new contents
        raise TypeError(
            f"cannot write a cache into {type(dst).__name__}: pass a bytearray, a path or a binary file object"
        )
    write = getattr(dst, "write", None)
    if not callable(write):
        raise TypeError(
            f"cannot write a cache to {type(dst).__name__}: expected a bytearray, a path or a binary file object"
        )
    try:
        view = _as_view(data)
        pos = 0
        while pos < len(view):
            n = write(view[pos:])
            if n is None:  # non-blocking raw stream with nothing written; BufferedWriter never does this
                raise OSError("write() wrote nothing")
            if n <= 0:
                raise OSError(f"write() returned {n}")
            pos += n
        flush = getattr(dst, "flush", None)
        if callable(flush):
            flush()
    except OSError:
        raise
    except Exception as e:
        raise OSError(f"writing the cache to {type(dst).__name__} failed: {e}") from e
