"""The bytes of a pipeline cache file: layout, identity, the cache key, ``encode``.

Pure data, no Vulkan and no I/O: ``gpu/pipelinecache.py`` collects the SPIR-V entries and
the driver's ``VkPipelineCache`` blob and calls ``encode``; reading goes through the checks
of ``cache/checks.py``. With a cache key (``resolve_key``: an argument, or
``$NCNN_C_CACHE_KEY``) a file also carries an HMAC-SHA256 of all its bytes. The layout is
documented in ``docs/cache-format.md``.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import struct
from dataclasses import dataclass

from ..errors import NcnnError
from . import hashing

CACHE_FILE_MAGIC = 0x5A545546
CACHE_FILE_VERSION = 4
CACHE_FILE_SIZE_LIMIT = 256 * 1024 * 1024

ENDIAN_MARKER = 0x12345678
POINTER_SIZE = struct.calcsize("P")  # 8 on every 64-bit platform we run on
UUID_SIZE = 16

_U32 = 0xFFFFFFFF


class CacheRejected(NcnnError):
    """A cache file (or source) that cannot be used; ``str(e)`` says which field and why."""


class CacheMissing(CacheRejected):
    """The cache file does not exist (yet): the ordinary first start, not a problem."""


# Fixed 128-byte header, little-endian, every field naturally aligned.
HEADER_STRUCT = struct.Struct("<14I16s2Q3I24sI")
HEADER_SIZE = HEADER_STRUCT.size  # 128
AUTH_OFFSET = 96
RESERVED_OFFSET = 100
RESERVED_SIZE = 24
CHECKSUM_OFFSET = 124
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
    ("auth", AUTH_OFFSET),
    ("reserved", RESERVED_OFFSET),
    ("header_fnv1a", CHECKSUM_OFFSET),
)
OFFSET = dict(HEADER_FIELDS)

# Per SPIR-V entry: 24-byte header, then the SPIR-V words.
ENTRY_STRUCT = struct.Struct("<6I")
ENTRY_HEADER_SIZE = ENTRY_STRUCT.size  # 24
ENTRY_FIELDS = (
    ("shader_id", 0),
    ("opt_bits", 4),
    ("source_hash", 8),
    ("spirv_size", 12),
    ("spirv_fnv1a", 16),
    ("spirv_murmur3", 20),
)

# VkPipelineCacheHeaderVersionOne: headerLength, headerVersion, vendorID, deviceID, uuid.
VK_BLOB_HEADER_STRUCT = struct.Struct("<4I16s")
VK_PIPELINE_CACHE_HEADER_VERSION_ONE = 1


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

    @classmethod
    def unpack(cls, data) -> CacheHeader:
        """The first 128 bytes of ``data`` as fields, unchecked (``checks.read_header`` checks)."""
        return cls(*HEADER_STRUCT.unpack_from(data, 0))

    @property
    def trailer_size(self) -> int:
        """Bytes after the driver blob: the MAC of an authenticated file."""
        return MAC_SIZE if self.auth == AUTH_HMAC_SHA256 else 0

    @property
    def file_size(self) -> int:
        """The size the header's section sizes add up to (Python ints: a u64 cannot overflow)."""
        return HEADER_SIZE + self.spirv_section_size + self.driver_blob_size + self.trailer_size


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
    return hashing.fnv1a32(name.encode("utf-8"))


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


def _check_u32(what: str, v) -> int:
    if not isinstance(v, int) or isinstance(v, bool) or not 0 <= v <= _U32:
        raise ValueError(f"{what} must be an integer in 0..0xffffffff, got {v!r}")
    return v


def _pack_header(identity: Identity, count: int, section: bytes, blob: bytes, auth: int = AUTH_NONE) -> bytes:
    uuid = bytes(identity.pipeline_cache_uuid)
    if len(uuid) != UUID_SIZE:
        raise ValueError(f"pipeline_cache_uuid must be {UUID_SIZE} bytes, got {len(uuid)}")
    fnv1a32 = hashing.fnv1a32
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
        bytes(RESERVED_SIZE),
        0,
    ]
    head = HEADER_STRUCT.pack(*fields)
    return head[:CHECKSUM_OFFSET] + struct.pack("<I", fnv1a32(head[:CHECKSUM_OFFSET]))


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
            ENTRY_STRUCT.pack(
                entry_key[0],
                entry_key[1],
                e.source_hash,
                len(spirv),
                hashing.fnv1a32(spirv),
                hashing.murmur3_32(spirv),
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
