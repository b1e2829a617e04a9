"""The checks a cache file must pass, in one ordered table that ``decode`` and ``inspect`` share.

``run(view, expect, walk)`` yields one ``Check`` per test a file goes through, in the order
of ``docs/cache-format.md`` ("Validation order"): size, header fields, layout, MAC,
identity, section hashes, each SPIR-V entry, the driver blob header. ``decode`` takes them
until the first failure and raises its reason as ``CacheRejected``, so the file is either
used whole or not at all; ``inspect`` takes them all and reports each (what the file has,
what is expected), going on past a failure wherever the bytes still allow it. Both read the
same checks, so ``cache verify`` and ``PipelineCache.load_cache`` cannot disagree.

What a reader accepts is an ``Expect``: the device identity (None: the device fields are
reported as not checked), the library version, the shader callbacks and the cache key.
"""

from __future__ import annotations

import hmac
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from . import format as fmt
from . import hashing
from .format import (
    AUTH_HMAC_SHA256,
    AUTH_NONE,
    CACHE_FILE_MAGIC,
    CACHE_FILE_VERSION,
    CHECKSUM_OFFSET,
    ENDIAN_MARKER,
    ENTRY_HEADER_SIZE,
    ENTRY_STRUCT,
    HEADER_SIZE,
    KEY_ENV,
    MAC_SIZE,
    OFFSET,
    POINTER_SIZE,
    RESERVED_OFFSET,
    VK_BLOB_HEADER_STRUCT,
    VK_PIPELINE_CACHE_HEADER_VERSION_ONE,
    CacheHeader,
    CacheRejected,
    Identity,
    SpirvEntry,
    name_hash,
)

NO_DEVICE = "not checked (no device)"
SQLITE_MAGIC = b"SQLite format 3\0"


@dataclass(frozen=True)
class Expect:
    """What a reader accepts.

    ``source_hash_of(shader_id)`` gives the current source hash of a builtin shader (0 or an
    exception for an unknown one); ``resolve(spirv)`` must succeed for every entry;
    ``interface_mismatch(shader_id, resolved)`` says why an entry's SPIR-V cannot be a body
    of that shader (None: it can). ``identity`` None checks no device field;
    ``ncnn_version`` defaults to the identity's. With ``key`` a file must carry a valid MAC
    made with it. ``shader_name(shader_id)`` only names entries in reports.
    """

    identity: Identity | None
    source_hash_of: Callable[[int], object]
    resolve: Callable[[bytes], object]
    interface_mismatch: Callable[[int, object], str | None] | None = None
    key: bytes | None = None
    ncnn_version: int | None = None
    shader_name: Callable[[int], str | None] | None = None

    @property
    def library_version(self) -> int | None:
        if self.ncnn_version is not None:
            return self.ncnn_version
        return None if self.identity is None else self.identity.ncnn_version


@dataclass(frozen=True)
class Check:
    """One test of a file: what it has, what is expected, whether it passed (None: not
    checked), and, when it failed, the reason a reader rejects the file with."""

    field: str
    found: object
    expected: object
    ok: bool | None
    reason: str = ""
    note: str = ""


@dataclass
class Walk:
    """What a run of the checks found, filled in as it goes: the header, every entry walked
    (with its status, for reports), the entries a reader would use and what ``resolve``
    gave for each, the stale ones it would drop, the driver blob."""

    header: CacheHeader | None = None
    listing: list[dict] = field(default_factory=list)
    entries: list[SpirvEntry] = field(default_factory=list)
    resolved: list[Any] = field(default_factory=list)
    stale: list[tuple[SpirvEntry, str]] = field(default_factory=list)
    blob: bytes = b""
    layout_ok: bool = False


@dataclass(frozen=True)
class DecodedCache:
    """Everything ``decode_full`` checked: the header, the entries, what ``resolve`` returned for each, the blob."""

    header: CacheHeader
    entries: list[SpirvEntry]
    resolved: list[Any]
    driver_blob: bytes


def _field(name: str) -> str:
    return f"header.{name} (offset {OFFSET[name]})"


def _hex(v: int) -> str:
    return f"0x{v:08x}"


def _header_check(name: str, ok: bool, found, expected, reason: str, note: str = "") -> Check:
    return Check(f"{name} (offset {OFFSET[name]})", found, expected, ok, "" if ok else reason, note)


def _unchecked(name: str, found) -> Check:
    return Check(f"{name} (offset {OFFSET[name]})", found, None, None, note=NO_DEVICE)


def foreign_format(data) -> str | None:
    """What ``data`` plainly is instead of a cache file, when recognisable; else None."""
    if data is not None and bytes(data[: len(SQLITE_MAGIC)]) == SQLITE_MAGIC:
        return "a SQLite database"
    return None


# -------------------------------------------------------------------------------- the table


def _size(view: memoryview) -> Iterator[Check]:
    n, limit = len(view), fmt.CACHE_FILE_SIZE_LIMIT
    if n > limit:
        yield Check(
            "size", n, f"at most {limit}", False, f"cache data is {n} bytes, over the {limit}-byte limit"
        )
    elif n < HEADER_SIZE:
        yield Check(
            "size",
            n,
            f"at least {HEADER_SIZE}",
            False,
            f"cache data is {n} bytes, shorter than the {HEADER_SIZE}-byte header",
        )


def _header(view: memoryview, hdr: CacheHeader) -> Iterator[Check]:
    """Format, checksum, byte order, pointer size, auth, reserved bytes: no device needed."""
    foreign = foreign_format(view)
    actual = hashing.fnv1a32(view[:CHECKSUM_OFFSET])
    bad = next((i for i, b in enumerate(hdr.reserved) if b), None)
    # (field, passes, found, expected, the rejection)
    rows = (
        (
            "magic",
            hdr.magic == CACHE_FILE_MAGIC,
            _hex(hdr.magic),
            _hex(CACHE_FILE_MAGIC),
            f"{_field('magic')} is 0x{hdr.magic:08x}, expected 0x{CACHE_FILE_MAGIC:08x}: "
            + (f"{foreign}, not a pipeline cache file" if foreign else "not an ncnn_c pipeline cache"),
        ),
        (
            "version",
            hdr.version == CACHE_FILE_VERSION,
            hdr.version,
            CACHE_FILE_VERSION,
            f"{_field('version')} is {hdr.version}, this build reads version {CACHE_FILE_VERSION}",
        ),
        (
            "header_size",
            hdr.header_size == HEADER_SIZE,
            hdr.header_size,
            HEADER_SIZE,
            f"{_field('header_size')} is {hdr.header_size}, expected {HEADER_SIZE}",
        ),
        (
            "header_fnv1a",
            hdr.header_fnv1a == actual,
            _hex(hdr.header_fnv1a),
            _hex(actual),
            f"{_field('header_fnv1a')} is 0x{hdr.header_fnv1a:08x} but bytes 0..{CHECKSUM_OFFSET - 1}"
            f" hash to 0x{actual:08x}: header corrupted",
        ),
        (
            "endian_marker",
            hdr.endian_marker == ENDIAN_MARKER,
            _hex(hdr.endian_marker),
            _hex(ENDIAN_MARKER),
            f"{_field('endian_marker')} is 0x{hdr.endian_marker:08x}, expected 0x{ENDIAN_MARKER:08x}",
        ),
        (
            "pointer_size",
            hdr.pointer_size == POINTER_SIZE,
            hdr.pointer_size,
            POINTER_SIZE,
            f"{_field('pointer_size')} is {hdr.pointer_size}, expected {POINTER_SIZE}",
        ),
        (
            "auth",
            hdr.auth in (AUTH_NONE, AUTH_HMAC_SHA256),
            {AUTH_NONE: "0 (none)", AUTH_HMAC_SHA256: "1 (HMAC-SHA256)"}.get(hdr.auth, hdr.auth),
            "0 or 1",
            f"{_field('auth')} is {hdr.auth}: unknown authentication (0 none, 1 HMAC-SHA256)",
        ),
        (
            "reserved",
            bad is None,
            "all zero" if bad is None else "not zero",
            "all zero",
            ""
            if bad is None
            else f"header.reserved byte at offset {RESERVED_OFFSET + bad} is 0x{hdr.reserved[bad]:02x}, must be zero",
        ),
    )
    for name, ok, found, expected, reason in rows:
        yield _header_check(name, ok, found, expected, reason)


def _layout(n: int, hdr: CacheHeader) -> Iterator[Check]:
    # Python ints: the u64 sizes cannot overflow, and nothing is allocated from them.
    end = hdr.file_size
    mac = f" + MAC {MAC_SIZE}" if hdr.trailer_size else ""
    yield Check(
        "section sizes",
        end,
        n,
        end == n,
        ""
        if end == n
        else f"section sizes do not add up: header {HEADER_SIZE} + {_field('spirv_section_size')} {hdr.spirv_section_size}"
        f" + {_field('driver_blob_size')} {hdr.driver_blob_size}{mac} = {end}, but the data is {n} bytes"
        + (" (truncated)" if end > n else " (trailing bytes)"),
        "header + SPIR-V + blob + MAC = file size",
    )
    fits = hdr.spirv_entry_count * ENTRY_HEADER_SIZE <= hdr.spirv_section_size
    yield _header_check(
        "spirv_entry_count",
        fits,
        hdr.spirv_entry_count,
        f"at most {hdr.spirv_section_size // ENTRY_HEADER_SIZE}",
        f"{_field('spirv_entry_count')} {hdr.spirv_entry_count} entries cannot fit in a"
        f" {hdr.spirv_section_size}-byte SPIR-V section",
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
    if not hmac.compare_digest(fmt.mac_of(key, view[:body]), bytes(view[body:])):
        raise CacheRejected(
            f"MAC at offset {body} does not match: written with another key, or changed after it was written"
        )


def _mac(view: memoryview, hdr: CacheHeader, key: bytes | None) -> Iterator[Check]:
    found = "present" if hdr.trailer_size else "none"
    if key is None:
        if hdr.trailer_size:
            yield Check("MAC", found, None, None, note=f"no key to check it with (${KEY_ENV})")
        return
    try:
        check_mac(view, hdr, key)
    except CacheRejected as e:
        yield Check("MAC", found, None, False, str(e), str(e))
        return
    yield Check("MAC", found, None, True, note="with the key")


def _identity(hdr: CacheHeader, expect: Expect) -> Iterator[Check]:
    identity = expect.identity
    version = expect.library_version
    if version is not None:
        who = "this device" if identity is not None else "this library"
        yield _header_check(
            "ncnn_version",
            hdr.ncnn_version == version,
            hdr.ncnn_version,
            version,
            f"{_field('ncnn_version')} mismatch: file has {hdr.ncnn_version:#x}, {who} has {version:#x}",
            "this library",
        )
    names = ("vendor_id", "device_id", "api_version", "driver_version", "driver_id")
    if identity is None:
        for name in (*names, "driver_name_hash", "device_name_hash"):
            yield _unchecked(name, _hex(getattr(hdr, name)))
        yield _unchecked("pipeline_cache_uuid", hdr.pipeline_cache_uuid.hex())
        return
    for name in names:
        stored, want = getattr(hdr, name), getattr(identity, name)
        yield _header_check(
            name,
            stored == want,
            _hex(stored),
            _hex(want),
            f"{_field(name)} mismatch: file has {stored:#x}, this device has {want:#x}",
        )
    for name in ("driver_name", "device_name"):
        text = getattr(identity, name)
        stored, want = getattr(hdr, name + "_hash"), name_hash(text)
        yield _header_check(
            name + "_hash",
            stored == want,
            _hex(stored),
            _hex(want),
            f"{_field(name + '_hash')} mismatch: file has 0x{stored:08x}, this device's {name} {text!r}"
            f" hashes to 0x{want:08x}",
            f"hash of {text!r}",
        )
    uuid, want_uuid = hdr.pipeline_cache_uuid, bytes(identity.pipeline_cache_uuid)
    yield _header_check(
        "pipeline_cache_uuid",
        uuid == want_uuid,
        uuid.hex(),
        want_uuid.hex(),
        f"{_field('pipeline_cache_uuid')} mismatch: file has {uuid.hex()}, this device has {want_uuid.hex()}",
    )


def _section_hashes(view: memoryview, hdr: CacheHeader) -> Iterator[Check]:
    sec_end = HEADER_SIZE + hdr.spirv_section_size
    s_fnv = hashing.fnv1a32(view[HEADER_SIZE:sec_end])
    yield _header_check(
        "spirv_section_fnv1a",
        s_fnv == hdr.spirv_section_fnv1a,
        _hex(hdr.spirv_section_fnv1a),
        _hex(s_fnv),
        f"{_field('spirv_section_fnv1a')} 0x{hdr.spirv_section_fnv1a:08x} does not match the SPIR-V section",
    )
    b_fnv = hashing.fnv1a32(view[sec_end : sec_end + hdr.driver_blob_size])
    yield _header_check(
        "driver_blob_fnv1a",
        b_fnv == hdr.driver_blob_fnv1a,
        _hex(hdr.driver_blob_fnv1a),
        _hex(b_fnv),
        f"{_field('driver_blob_fnv1a')} 0x{hdr.driver_blob_fnv1a:08x} does not match the driver blob",
    )


def _source_problem(sid: int, source_hash: int, expect: Expect) -> tuple[object, str | None, str | None]:
    """(the current source hash, why the entry is stale or unknown, its status then), or
    (current, None, None) for an entry of the shader's current source."""
    try:
        current = expect.source_hash_of(sid)
    except Exception as e:
        return 0, f"shader_id {sid} is unknown ({type(e).__name__}: {e})", "unknown shader (dropped on load)"
    if not isinstance(current, int) or current == 0:
        return (
            current,
            f"shader_id {sid} is unknown to this build (no source hash)",
            "unknown shader (dropped on load)",
        )
    if current != source_hash:
        return (
            current,
            f"source_hash 0x{source_hash:08x} of shader_id {sid} is stale,"
            f" the shader source now hashes to 0x{current:08x}",
            "stale: the shader source changed (dropped on load)",
        )
    return current, None, None


def _judge(
    entry: SpirvEntry, fnv: int, mm3: int, first: int, i: int, stale_status: str | None, expect: Expect
) -> tuple[str, str | None, object]:
    """An entry's checks in order: (its status, why a reader rejects the file or None, what
    ``resolve`` gave). ``first`` is the index of the first entry with its key; a stale or
    unknown shader's entry (``stale_status``) is not resolved."""
    sid, spirv = entry.shader_id, entry.spirv
    if hashing.fnv1a32(spirv) != fnv:
        return (
            "corrupt (SPIR-V hash mismatch)",
            f"spirv_fnv1a 0x{fnv:08x} does not match the SPIR-V bytes",
            None,
        )
    if hashing.murmur3_32(spirv) != mm3:
        return (
            "corrupt (SPIR-V hash mismatch)",
            f"spirv_murmur3 0x{mm3:08x} does not match the SPIR-V bytes",
            None,
        )
    if first != i:
        return (
            "duplicate",
            f"duplicate of entry {first} (shader_id {sid}, opt_bits 0x{entry.opt_bits:x})",
            None,
        )
    if stale_status is not None:
        return stale_status, None, None
    try:
        info = expect.resolve(spirv)
    except Exception as e:
        why = f"{type(e).__name__}: {e}"
        return f"does not resolve ({why})", f"SPIR-V of shader_id {sid} does not resolve ({why})", None
    bad = expect.interface_mismatch(sid, info) if expect.interface_mismatch is not None else None
    if bad:
        return f"not this shader's interface: {bad}", f"SPIR-V stored under shader_id {sid}: {bad}", None
    return "ok", None, info


def _entries(
    view: memoryview, hdr: CacheHeader, expect: Expect, drop_stale: bool, walk: Walk
) -> Iterator[Check]:
    """Each SPIR-V entry in turn, then the section's end. A broken entry header or size ends
    the walk (nothing after it can be located); any other failure leaves the next entry readable."""
    base = HEADER_SIZE  # file offset of the section, for reasons
    section = view[base : min(len(view), base + hdr.spirv_section_size)]
    size = len(section)
    seen: dict[tuple[int, int], int] = {}
    pos = 0

    def broken(reason: str) -> Check:
        return Check("SPIR-V section", reason, "entries filling the section exactly", False, reason)

    for i in range(hdr.spirv_entry_count):
        start = base + pos
        where = f"SPIR-V entry {i} at offset {start}"
        if size - pos < ENTRY_HEADER_SIZE:
            yield broken(
                f"{where}: entry header needs {ENTRY_HEADER_SIZE} bytes, {size - pos} left in the section"
            )
            return
        sid, opt_bits, source_hash, nbytes, fnv, mm3 = ENTRY_STRUCT.unpack_from(section, pos)
        body = pos + ENTRY_HEADER_SIZE
        if nbytes == 0 or nbytes % 4:
            yield broken(f"{where}: spirv_size {nbytes} is zero or not a multiple of 4")
            return
        if nbytes > size - body:
            yield broken(
                f"{where}: spirv_size {nbytes} runs past the end of the SPIR-V section ({size - body} bytes left)"
            )
            return
        pos = body + nbytes
        entry = SpirvEntry(sid, opt_bits, source_hash, bytes(section[body:pos]))
        name = expect.shader_name(sid) if expect.shader_name is not None else None
        current, stale, stale_status = _source_problem(sid, source_hash, expect)
        status, failure, info = _judge(
            entry, fnv, mm3, seen.setdefault((sid, opt_bits), i), i, stale_status, expect
        )
        walk.listing.append(
            {
                "index": i,
                "offset": start,
                "shader_id": sid,
                "shader": name,
                "opt_bits": opt_bits,
                "source_hash": source_hash,
                "current_source_hash": current,
                "spirv_size": nbytes,
                "status": status,
            }
        )
        what = f"entry {i} ({name or sid})"
        if failure is None and stale is not None and not drop_stale:
            failure = stale
        if failure is not None:
            yield Check(what, status, "ok", False, f"{where}: {failure}")
            continue
        if stale is not None:
            # an edited or removed shader invalidates only the entries compiled from it
            walk.stale.append((entry, stale))
            yield Check(what, status, "ok", True, note="dropped on load, the rest is used")
            continue
        walk.entries.append(entry)
        walk.resolved.append(info)
    if pos != size:
        yield broken(
            f"SPIR-V section: {hdr.spirv_entry_count} entries end at offset {base + pos},"
            f" but the section ends at offset {base + size}"
        )


def validate_driver_blob(blob: bytes, vendor_id, device_id, uuid, offset: int = 0) -> None:
    """Check a VkPipelineCache blob's VkPipelineCacheHeaderVersionOne against the device. Empty is fine.

    ``offset`` is where the blob starts in the cache file, for the reasons. Raises CacheRejected.
    """
    n = len(blob)
    if n == 0:
        return
    at = f"driver blob (offset {offset})"
    size = VK_BLOB_HEADER_STRUCT.size
    if n < size:
        raise CacheRejected(f"{at}: {n} bytes, shorter than the {size}-byte VkPipelineCacheHeaderVersionOne")
    length, version, vid, did, blob_uuid = VK_BLOB_HEADER_STRUCT.unpack_from(blob, 0)
    if length < size or length > n:
        raise CacheRejected(f"{at}: headerLength {length} is outside {size}..{n}")
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


def _driver_blob(blob: bytes, offset: int, identity: Identity | None) -> Iterator[Check]:
    if not blob:
        return
    if identity is None:
        shown = f"{len(blob)} bytes"
        if len(blob) >= VK_BLOB_HEADER_STRUCT.size:
            _length, _version, vid, did, uuid = VK_BLOB_HEADER_STRUCT.unpack_from(blob, 0)
            shown = f"vendor {vid:#x} device {did:#x} uuid {uuid.hex()}"
        yield Check("driver blob header", shown, None, None, note=NO_DEVICE)
        return
    try:
        validate_driver_blob(
            blob, identity.vendor_id, identity.device_id, identity.pipeline_cache_uuid, offset
        )
    except CacheRejected as e:
        yield Check("driver blob header", str(e), "matches this device", False, str(e))
        return
    yield Check("driver blob header", "matches this device", "matches this device", True)


def run(view: memoryview, expect: Expect, walk: Walk, drop_stale: bool = True) -> Iterator[Check]:
    """Every check of ``view`` against ``expect``, in order; ``walk`` collects what they found.

    Stops early only where nothing further can be read: data too short for a header (or over
    the limit), sections that do not add up (no MAC, hashes or blob to check; entries are
    still walked as far as the bytes go), a broken entry header. ``drop_stale``: a stale or
    unknown shader's entry is dropped (a passing check, listed in ``walk.stale``) instead of
    failing.
    """
    size_checks = list(_size(view))
    yield from size_checks
    if size_checks:
        return
    hdr = walk.header = CacheHeader.unpack(view)
    yield from _header(view, hdr)
    n = len(view)
    walk.layout_ok = hdr.file_size == n
    yield from _layout(n, hdr)
    if walk.layout_ok:
        yield from _mac(view, hdr, expect.key)
    yield from _identity(hdr, expect)
    if walk.layout_ok:
        yield from _section_hashes(view, hdr)
    yield from _entries(view, hdr, expect, drop_stale, walk)
    if walk.layout_ok:
        sec_end = HEADER_SIZE + hdr.spirv_section_size
        walk.blob = bytes(view[sec_end : sec_end + hdr.driver_blob_size])
        yield from _driver_blob(walk.blob, sec_end, expect.identity)


# -------------------------------------------------------------------------------- readers


def _view(data) -> memoryview:
    try:
        return hashing.as_view(data)
    except TypeError:
        raise CacheRejected(f"cache data must be bytes-like, got {type(data).__name__}") from None


def _first_failure(checks: Iterator[Check]) -> None:
    for c in checks:
        if c.ok is False:
            raise CacheRejected(c.reason)


def read_header(data) -> CacheHeader:
    """Parse and check the header on its own: size, magic, version, checksum, endian, pointer size, reserved bytes.

    Needs no device identity. Raises CacheRejected.
    """
    view = _view(data)
    _first_failure(_size(view))
    hdr = CacheHeader.unpack(view)
    _first_failure(_header(view, hdr))
    return hdr


def decode_with(data, expect: Expect, stale: list | None = None) -> DecodedCache:
    """The checks of ``run`` up to the first failure, raised as CacheRejected; everything a
    reader uses when none fails. With a ``stale`` list, entries of edited or removed shaders
    are left out and appended to it as ``(entry, reason)`` instead of rejecting the file."""
    try:
        walk = Walk()
        _first_failure(run(_view(data), expect, walk, drop_stale=stale is not None))
        assert walk.header is not None  # every run past the size checks has one
        if stale is not None:
            stale.extend(walk.stale)
        return DecodedCache(walk.header, walk.entries, walk.resolved, walk.blob)
    except CacheRejected:
        raise
    except Exception as e:  # hostile input must never escape as anything but a rejection
        raise CacheRejected(f"unexpected {type(e).__name__} while decoding: {e}") from e


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
    return decode_with(data, Expect(identity, source_hash_of, resolve, interface_mismatch, key), stale)


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
