"""What a pipeline cache file holds, and whether this machine and library would accept it.

The library side of ``python -m ncnn_c cache inspect FILE`` and ``cache verify FILE``.
``inspect`` never stops at the first problem: it reads as much as the bytes allow (header,
section sizes, entry list with shader names, driver blob header) and lists every check with
what the file has, what this build and device expect, and whether it passes. ``verify`` gives
the one verdict that ``PipelineCache.load_cache`` would reach, with its reason.

A device is optional. Without one (``device=False``, or no Vulkan device at all) the checks
that need it (vendor, driver, UUID, driver blob header) are reported as not checked, and the
verdict covers the rest: format, checksums, layout, entries against this build's shaders.
"""

from __future__ import annotations

import os
import struct
from typing import Any

from . import cachefile, compiler

_NO_DEVICE = "not checked (no device)"
# header fields shown in decimal by format_report (counts, sizes, versions); the rest in hex
_DECIMAL = {
    "version",
    "header_size",
    "ncnn_version",
    "pointer_size",
    "spirv_entry_count",
    "spirv_section_size",
    "driver_blob_size",
}


def _identity(device) -> cachefile.Identity | None:
    """The identity of ``device`` (a VulkanDevice, GpuInfo or index); None for False, or for
    None (the default GPU) when there is no GPU.

    An index that names no device raises ValueError: silently checking nothing would let
    ``--device 7`` report a file as accepted.
    """
    if device is False:
        return None
    from . import device as _device
    from .pipelinecache import NCNN_VERSION

    info = getattr(device, "info", device)
    if isinstance(info, int) and not isinstance(info, bool):
        count = _device.get_gpu_count()
        if not 0 <= info < count:
            raise ValueError(f"device index {info}: there are {count} Vulkan devices")
    if info is None or isinstance(info, int):
        try:
            if _device.get_gpu_count() == 0:
                return None
            info = _device.get_gpu_info(info)
        except Exception:
            return None
        if info is None:
            return None
    return cachefile.identity_of(info, NCNN_VERSION)


SQLITE_MAGIC = b"SQLite format 3\0"


def foreign_format(data, src=None) -> str | None:
    """Why ``data`` is plainly some other kind of file, when it is recognisable; else None.

    A SQLite database is the likely mix-up (a ``sqlite:///`` cache store given as a cache
    file): say so rather than list the header fields of a made-up header.
    """
    if data is None or bytes(data[: len(SQLITE_MAGIC)]) != SQLITE_MAGIC:
        return None
    if isinstance(src, (str, os.PathLike)):
        url = "sqlite:///" + os.path.abspath(os.fsdecode(src)).lstrip("/")
    else:
        url = "sqlite:///PATH"
    return (
        "this is a SQLite database, not a pipeline cache file; if it is a cache store,"
        f" use --store {url} --key MODEL_KEY"
    )


def _read(src) -> tuple[bytes | None, str | None]:
    try:
        return cachefile.read_source(src), None
    except cachefile.CacheRejected as e:
        return None, str(e)


def _shader_name(sid: int) -> str | None:
    try:
        index = compiler.index_of_shader_id(sid)
        return compiler.shader_name(index) if index >= 0 else None
    except Exception:
        return None


def _check(checks: list, field: str, found, expected, ok: bool | None, note: str = "") -> None:
    checks.append({"field": field, "found": found, "expected": expected, "ok": ok, "note": note})


def _hex(v: int) -> str:
    return f"0x{v:08x}"


def _entries(data: bytes, hdr: cachefile.CacheHeader) -> tuple[list[dict], str | None]:
    """Walk the SPIR-V section as far as it is intact; (entries, why the walk stopped early)."""
    out: list[dict] = []
    start = cachefile.HEADER_SIZE
    end = min(len(data), start + hdr.spirv_section_size)
    pos = start
    seen: set[tuple[int, int]] = set()
    for i in range(hdr.spirv_entry_count):
        if end - pos < cachefile.ENTRY_HEADER_SIZE:
            return out, f"entry {i} at offset {pos}: header runs past the section end ({end})"
        sid, opt_bits, source_hash, size, fnv, mm3 = cachefile._ENTRY.unpack_from(data, pos)
        body = pos + cachefile.ENTRY_HEADER_SIZE
        if size == 0 or size % 4 or size > end - body:
            return out, f"entry {i} at offset {pos}: spirv_size {size} is invalid"
        spirv = data[body : body + size]
        current = compiler.source_hash_by_id(sid)
        if cachefile.fnv1a32(spirv) != fnv or cachefile.murmur3_32(spirv) != mm3:
            status = "corrupt (SPIR-V hash mismatch)"
        elif (sid, opt_bits) in seen:
            status = "duplicate"
        elif current == 0:
            status = "unknown shader (dropped on load)"
        elif current != source_hash:
            status = "stale: the shader source changed (dropped on load)"
        else:
            status = "ok"
        seen.add((sid, opt_bits))
        out.append(
            {
                "index": i,
                "offset": pos,
                "shader_id": sid,
                "shader": _shader_name(sid),
                "opt_bits": opt_bits,
                "source_hash": source_hash,
                "current_source_hash": current,
                "spirv_size": size,
                "status": status,
            }
        )
        pos = body + size
    if pos != end:
        return out, f"entries end at offset {pos}, the section at {end}"
    return out, None


def inspect(src, device=None) -> dict[str, Any]:
    """Everything about a cache file (bytes-like, path or binary file object) as a dict.

    ``device``: a VulkanDevice, GpuInfo or device index to check against; None for the
    default GPU if there is one; False for no device checks. Never raises on bad data; an
    index that names no device raises ValueError.
    """
    data, read_error = _read(src)
    report: dict[str, Any] = {"size": None if data is None else len(data), "checks": [], "entries": []}
    identity = _identity(device)
    report["device"] = None if identity is None else identity.device_name
    foreign = foreign_format(data, src)
    if foreign is not None:
        report["accepted"], report["reason"], report["error"] = False, foreign, foreign
        report["format"] = "sqlite"
        return report
    ok, reason = verify(data if data is not None else src, device if identity is not None else False)
    report["accepted"], report["reason"] = ok, reason
    if data is None:
        report["error"] = read_error
        return report
    checks: list = report["checks"]
    if len(data) < cachefile.HEADER_SIZE:
        report["error"] = f"{len(data)} bytes, shorter than the {cachefile.HEADER_SIZE}-byte header"
        return report
    hdr = cachefile.CacheHeader(*cachefile._HEADER.unpack_from(data, 0))
    report["header"] = {name: getattr(hdr, name) for name, _off in cachefile.HEADER_FIELDS}
    off = dict(cachefile.HEADER_FIELDS)

    def field(name: str) -> str:
        return f"{name} (offset {off[name]})"

    _check(
        checks,
        field("magic"),
        _hex(hdr.magic),
        _hex(cachefile.CACHE_FILE_MAGIC),
        hdr.magic == cachefile.CACHE_FILE_MAGIC,
    )
    _check(
        checks,
        field("version"),
        hdr.version,
        cachefile.CACHE_FILE_VERSION,
        hdr.version == cachefile.CACHE_FILE_VERSION,
    )
    _check(
        checks,
        field("header_size"),
        hdr.header_size,
        cachefile.HEADER_SIZE,
        hdr.header_size == cachefile.HEADER_SIZE,
    )
    hsum = cachefile.fnv1a32(data[: off["header_fnv1a"]])
    _check(checks, field("header_fnv1a"), _hex(hdr.header_fnv1a), _hex(hsum), hdr.header_fnv1a == hsum)
    _check(
        checks,
        field("endian_marker"),
        _hex(hdr.endian_marker),
        _hex(cachefile.ENDIAN_MARKER),
        hdr.endian_marker == cachefile.ENDIAN_MARKER,
    )
    _check(
        checks,
        field("pointer_size"),
        hdr.pointer_size,
        cachefile.POINTER_SIZE,
        hdr.pointer_size == cachefile.POINTER_SIZE,
    )
    _check(
        checks,
        field("auth"),
        {0: "0 (none)", 1: "1 (HMAC-SHA256)"}.get(hdr.auth, hdr.auth),
        "0 or 1",
        hdr.auth in (cachefile.AUTH_NONE, cachefile.AUTH_HMAC_SHA256),
    )
    _check(
        checks,
        field("reserved"),
        "all zero" if not any(hdr.reserved) else "not zero",
        "all zero",
        not any(hdr.reserved),
    )

    from .pipelinecache import NCNN_VERSION

    _check(
        checks,
        field("ncnn_version"),
        hdr.ncnn_version,
        NCNN_VERSION,
        hdr.ncnn_version == NCNN_VERSION,
        "this library",
    )
    for name in ("vendor_id", "device_id", "api_version", "driver_version", "driver_id"):
        found = getattr(hdr, name)
        if identity is None:
            _check(checks, field(name), _hex(found), None, None, _NO_DEVICE)
        else:
            want = getattr(identity, name)
            _check(checks, field(name), _hex(found), _hex(want), found == want)
    for name, text in (
        ("driver_name", identity and identity.driver_name),
        ("device_name", identity and identity.device_name),
    ):
        found = getattr(hdr, name + "_hash")
        if identity is None:
            _check(checks, field(name + "_hash"), _hex(found), None, None, _NO_DEVICE)
        else:
            want = cachefile.name_hash(text or "")
            _check(checks, field(name + "_hash"), _hex(found), _hex(want), found == want, f"hash of {text!r}")
    if identity is None:
        _check(checks, field("pipeline_cache_uuid"), hdr.pipeline_cache_uuid.hex(), None, None, _NO_DEVICE)
    else:
        want_uuid = bytes(identity.pipeline_cache_uuid)
        _check(
            checks,
            field("pipeline_cache_uuid"),
            hdr.pipeline_cache_uuid.hex(),
            want_uuid.hex(),
            hdr.pipeline_cache_uuid == want_uuid,
        )

    total = cachefile.HEADER_SIZE + hdr.spirv_section_size + hdr.driver_blob_size + hdr.trailer_size
    report["sections"] = {
        "header": cachefile.HEADER_SIZE,
        "spirv_section": hdr.spirv_section_size,
        "spirv_entries": hdr.spirv_entry_count,
        "driver_blob": hdr.driver_blob_size,
        "mac": hdr.trailer_size,
        "file": len(data),
    }
    _check(
        checks,
        "section sizes",
        total,
        len(data),
        total == len(data),
        "header + SPIR-V + blob + MAC = file size",
    )
    sec_end = cachefile.HEADER_SIZE + hdr.spirv_section_size
    if total == len(data):
        key = cachefile.resolve_key(None)
        if key is not None or hdr.trailer_size:
            try:
                cachefile.check_mac(memoryview(data), hdr, key)
                mac_ok: bool | None = None if key is None else True
                note = f"no key to check it with (${cachefile.KEY_ENV})" if key is None else "with the key"
            except cachefile.CacheRejected as err:
                mac_ok, note = False, str(err)
            _check(checks, "MAC", "present" if hdr.trailer_size else "none", None, mac_ok, note)
        s_fnv = cachefile.fnv1a32(data[cachefile.HEADER_SIZE : sec_end])
        b_fnv = cachefile.fnv1a32(data[sec_end : sec_end + hdr.driver_blob_size])
        _check(
            checks,
            field("spirv_section_fnv1a"),
            _hex(hdr.spirv_section_fnv1a),
            _hex(s_fnv),
            s_fnv == hdr.spirv_section_fnv1a,
        )
        _check(
            checks,
            field("driver_blob_fnv1a"),
            _hex(hdr.driver_blob_fnv1a),
            _hex(b_fnv),
            b_fnv == hdr.driver_blob_fnv1a,
        )
    entries, stopped = _entries(data, hdr)
    report["entries"] = entries
    if stopped:
        _check(checks, "SPIR-V section", stopped, "entries filling the section exactly", False)
    for e in entries:
        if e["status"] != "ok":
            _check(
                checks,
                f"entry {e['index']} ({e['shader'] or e['shader_id']})",
                e["status"],
                "ok",
                e["status"].startswith(("stale", "unknown")) or False,
                "dropped on load, the rest is used" if e["status"].startswith(("stale", "unknown")) else "",
            )
    blob = data[sec_end:total] if total == len(data) else b""
    report["driver_blob"] = {"size": hdr.driver_blob_size}
    if len(blob) >= 32:
        length, version, vid, did = struct.unpack_from("<4I", blob, 0)
        buuid = bytes(blob[16:32])
        report["driver_blob"].update(
            header_length=length, header_version=version, vendor_id=vid, device_id=did, uuid=buuid.hex()
        )
        if identity is None:
            _check(
                checks,
                "driver blob header",
                f"vendor {vid:#x} device {did:#x} uuid {buuid.hex()}",
                None,
                None,
                _NO_DEVICE,
            )
        else:
            try:
                cachefile.validate_driver_blob(
                    blob, identity.vendor_id, identity.device_id, identity.pipeline_cache_uuid, offset=sec_end
                )
                _check(checks, "driver blob header", "matches this device", "matches this device", True)
            except cachefile.CacheRejected as e:
                _check(checks, "driver blob header", str(e), "matches this device", False)
    return report


def format_report(report: dict[str, Any]) -> str:
    """The text ``cache inspect`` prints for an ``inspect`` report."""
    lines = []
    lines.append(f"size: {report['size']} bytes" if report["size"] is not None else "size: unreadable")
    if report.get("error"):
        lines.append(f"error: {report['error']}")
    hdr = report.get("header")
    if hdr:
        lines.append("header:")
        for name, value in hdr.items():
            if isinstance(value, bytes):
                shown = value.hex()
            elif name in _DECIMAL:
                shown = str(value)
            else:
                shown = f"0x{value:08x}"
            if name == "reserved":
                shown = "all zero" if not any(value) else value.hex()
            lines.append(f"  {name:22} {shown}")
    sec = report.get("sections")
    if sec:
        lines.append(
            f"sections: header {sec['header']} B, SPIR-V {sec['spirv_section']} B in {sec['spirv_entries']} entries,"
            f" driver blob {sec['driver_blob']} B, file {sec['file']} B"
        )
    if report["entries"]:
        lines.append("entries:")
        lines.append(f"  {'#':>3} {'shader':24} {'id':10} {'opt_bits':10} {'SPIR-V':>8}  status")
        for e in report["entries"]:
            name = e["shader"] or "?"
            lines.append(
                f"  {e['index']:>3} {name:24} {e['shader_id']:#010x} {e['opt_bits']:#010x} {e['spirv_size']:>8}  {e['status']}"
            )
    blob = report.get("driver_blob")
    if blob and "vendor_id" in blob:
        lines.append(
            f"driver blob: {blob['size']} B, vendor {blob['vendor_id']:#x} device {blob['device_id']:#x} uuid {blob['uuid']}"
        )
    if report["checks"]:
        lines.append(
            f"checks against this library and {('device ' + repr(report['device'])) if report['device'] else 'no device'}:"
        )
        for c in report["checks"]:
            mark = {True: "ok  ", False: "FAIL", None: "--  "}[c["ok"]]
            exp = "" if c["expected"] is None else f", expected {c['expected']}"
            note = f" ({c['note']})" if c["note"] else ""
            lines.append(f"  {mark} {c['field']}: {c['found']}{exp}{note}")
    lines.append(("accepted: " if report["accepted"] else "rejected: ") + report["reason"])
    return "\n".join(lines)


def verify(src, device=None, key: bytes | str | None = None) -> tuple[bool, str]:
    """(would ``load_cache`` accept it, why): the first failing check, as ``load_cache`` reports it.

    ``device`` as for ``inspect``. Without a device, the identity fields and the driver blob
    header are not checked and the reason says so. ``key`` (else ``$NCNN_C_CACHE_KEY``): the
    cache key a loader would check the MAC with.
    """
    from .spirv import resolve_shader_info

    key = cachefile.resolve_key(key)

    data, read_error = _read(src)
    identity = _identity(device)  # before the data: a bad index is the caller's error, not the file's
    if data is None:
        return False, read_error or "unreadable"
    foreign = foreign_format(data, src)
    if foreign is not None:
        return False, foreign
    stale: list = []
    try:
        if identity is not None:
            d = cachefile.decode_full(
                data,
                identity,
                compiler.source_hash_by_id,
                resolve_shader_info,
                stale,
                key=key,
                interface_mismatch=compiler.interface_mismatch,
            )
            entries, blob = d.entries, d.driver_blob
            scope = "for this device and library"
        else:
            hdr = cachefile.read_header(data)
            from .pipelinecache import NCNN_VERSION

            if hdr.ncnn_version != NCNN_VERSION:
                raise cachefile.CacheRejected(
                    f"header.ncnn_version (offset 12) mismatch: file has {hdr.ncnn_version:#x}, this library has {NCNN_VERSION:#x}"
                )
            cachefile._check_layout(hdr, len(data))
            view = memoryview(data)
            cachefile.check_mac(view, hdr, key)
            sec_end = cachefile.HEADER_SIZE + hdr.spirv_section_size
            blob_end = sec_end + hdr.driver_blob_size
            if cachefile.fnv1a32(view[cachefile.HEADER_SIZE : sec_end]) != hdr.spirv_section_fnv1a:
                raise cachefile.CacheRejected(
                    "header.spirv_section_fnv1a (offset 88) does not match the SPIR-V section"
                )
            if cachefile.fnv1a32(view[sec_end:blob_end]) != hdr.driver_blob_fnv1a:
                raise cachefile.CacheRejected(
                    "header.driver_blob_fnv1a (offset 92) does not match the driver blob"
                )
            entries, _ = cachefile._decode_entries(
                view[cachefile.HEADER_SIZE : sec_end],
                hdr.spirv_entry_count,
                compiler.source_hash_by_id,
                resolve_shader_info,
                stale,
                compiler.interface_mismatch,
            )
            blob = bytes(view[sec_end:blob_end])
            scope = "by this library; device fields not checked (no device)"
    except cachefile.CacheRejected as e:
        return False, str(e)
    except Exception as e:  # verify never raises on bad data
        return False, f"{type(e).__name__}: {e}"
    extra = f", {len(stale)} stale entries dropped" if stale else ""
    return True, f"{scope}: {len(entries)} SPIR-V entries{extra}, driver blob {len(blob)} bytes"
