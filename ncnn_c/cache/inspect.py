"""The report behind ``cache inspect`` and the verdict behind ``cache verify``, over ``checks``.

``report`` never stops at the first problem: it runs every check of ``checks.run`` and lists
each with what the file has, what the reader expects and whether it passes, together with
the header fields, the section sizes, the entries (shader names, option bits, sizes, status)
and the driver blob header. Its verdict is the first failed check, which is exactly what
``decode`` (and so ``PipelineCache.load_cache``) raises. What the reader expects (device
identity, library version, shaders, key) is an ``Expect``; ``gpu/cacheinspect.py`` makes the
one of this machine.
"""

from __future__ import annotations

import os
from typing import Any

from . import fileio
from .checks import Expect, Walk, foreign_format, run
from .format import HEADER_FIELDS, HEADER_SIZE, VK_BLOB_HEADER_STRUCT, CacheRejected

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


def foreign_reason(data, src=None) -> str | None:
    """Why ``data`` is plainly some other kind of file, with what to do instead; else None.

    A SQLite database is the likely mix-up (a ``sqlite:///`` cache store given as a cache
    file): say so rather than list the header fields of a made-up header.
    """
    if foreign_format(data) is None:
        return None
    if isinstance(src, (str, os.PathLike)):
        url = "sqlite:///" + os.path.abspath(os.fsdecode(src)).lstrip("/")
    else:
        url = "sqlite:///PATH"
    return (
        "this is a SQLite database, not a pipeline cache file; if it is a cache store,"
        f" use --store {url} (with --key MODEL_KEY when it holds several models)"
    )


def read(src) -> tuple[bytes | None, str | None]:
    """(the bytes of ``src``, None) or (None, why they cannot be read)."""
    try:
        return fileio.read_source(src), None
    except CacheRejected as e:
        return None, str(e)


def _accepted(expect: Expect, walk: Walk) -> str:
    scope = (
        "for this device and library"
        if expect.identity is not None
        else "by this library; device fields not checked (no device)"
    )
    extra = f", {len(walk.stale)} stale entries dropped" if walk.stale else ""
    return f"{scope}: {len(walk.entries)} SPIR-V entries{extra}, driver blob {len(walk.blob)} bytes"


def verdict(src, expect: Expect) -> tuple[bool, str]:
    """(would a reader expecting ``expect`` accept ``src``, why): the first failed check."""
    data, error = read(src)
    if data is None:
        return False, error or "unreadable"
    foreign = foreign_reason(data, src)
    if foreign is not None:
        return False, foreign
    walk = Walk()
    try:
        for c in run(memoryview(data), expect, walk):
            if c.ok is False:
                return False, c.reason
    except Exception as e:  # a verdict never raises on bad data
        return False, f"{type(e).__name__}: {e}"
    return True, _accepted(expect, walk)


def report(src, expect: Expect) -> dict[str, Any]:
    """Everything about a cache file (bytes-like, path or binary file object) as a dict; never raises."""
    data, error = read(src)
    identity = expect.identity
    out: dict[str, Any] = {
        "size": None if data is None else len(data),
        "checks": [],
        "entries": [],
        "device": None if identity is None else identity.device_name,
    }
    if data is None:
        out["accepted"], out["reason"], out["error"] = False, error or "unreadable", error
        return out
    foreign = foreign_reason(data, src)
    if foreign is not None:
        out["accepted"], out["reason"], out["error"] = False, foreign, foreign
        out["format"] = "sqlite"
        return out
    walk = Walk()
    first: str | None = None
    try:
        for c in run(memoryview(data), expect, walk):
            out["checks"].append(
                {"field": c.field, "found": c.found, "expected": c.expected, "ok": c.ok, "note": c.note}
            )
            if c.ok is False and first is None:
                first = c.reason
    except Exception as e:  # a report never raises on bad data
        first = first or f"{type(e).__name__}: {e}"
    out["accepted"] = first is None
    out["reason"] = _accepted(expect, walk) if first is None else first
    hdr = walk.header
    if hdr is None:
        out["error"] = first
        return out
    out["header"] = {name: getattr(hdr, name) for name, _off in HEADER_FIELDS}
    out["sections"] = {
        "header": HEADER_SIZE,
        "spirv_section": hdr.spirv_section_size,
        "spirv_entries": hdr.spirv_entry_count,
        "driver_blob": hdr.driver_blob_size,
        "mac": hdr.trailer_size,
        "file": len(data),
    }
    out["entries"] = walk.listing
    out["driver_blob"] = {"size": hdr.driver_blob_size}
    if len(walk.blob) >= VK_BLOB_HEADER_STRUCT.size:
        length, version, vid, did, uuid = VK_BLOB_HEADER_STRUCT.unpack_from(walk.blob, 0)
        out["driver_blob"].update(
            header_length=length, header_version=version, vendor_id=vid, device_id=did, uuid=uuid.hex()
        )
    return out


def format_report(report: dict[str, Any]) -> str:
    """The text ``cache inspect`` prints for a ``report``."""
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
