"""GLSL -> SPIR-V for the built-in layer shaders, in process through ``ncnn_c._native``.

The shader registry is the sorted list of ``layer/vulkan/shader/*.comp``: a shader's
type index is its position in that list, and its source hash (fnv1a-32 of its source)
goes into the pipeline cache keys, so editing one shader only invalidates the cache
entries compiled from it.

A shader may ``#include "file.h"``: code several shaders share (``vulkan_activation.h``,
as ncnn's vulkan_activation.comp) lives in files of the shader directory that are not
shaders themselves (any extension but ``.comp``). A shader's source is its file with every
include expanded in place between ``#line`` directives (compiler messages name the
included file and its line, then the shader's own lines again), so the source hash covers
the included bytes: editing a header invalidates exactly the entries of the shaders that
include it. ``shader_interface`` reads the same expanded text.

Before compiling, an option-dependent preamble of macros (storage / arithmetic types,
buffer load/store helpers, ``NCNN_*`` feature switches) is inserted right after the
``#version`` line, followed by a ``#line`` directive so compiler messages keep the
file's own line numbers. The preamble depends only on the option's shader bits and on
what the device supports, so identical bits always produce identical SPIR-V on one device.
"""

from __future__ import annotations

import logging
import os
import re
import threading
from typing import NamedTuple

from ..cache.hashing import fnv1a32
from ..errors import NcnnError
from ..option import SHADER_OPTION_BITS

log = logging.getLogger("ncnn_c")

DEFAULT_SHADER_DIR = os.path.join(os.path.dirname(os.path.dirname(__file__)), "layer", "vulkan", "shader")


class ShaderCompileError(NcnnError):
    """GLSL that shaderc refused, or a shader name/index that does not exist."""


class _Registry:
    """Names, sources and hashes of one shader directory, read once."""

    def __init__(self, directory: str) -> None:
        self.directory = directory
        try:
            files = sorted(f for f in os.listdir(directory) if f.endswith(".comp"))
        except FileNotFoundError:
            files = []
        self.names = [f[: -len(".comp")] for f in files]
        self.index = {n: i for i, n in enumerate(self.names)}
        # a shader's identity in cache files: a hash of its name, so adding or removing
        # another shader never changes it (the type index is only a position in this list)
        self.ids = [fnv1a32(n.encode()) or 1 for n in self.names]
        self.by_id = {sid: i for i, sid in enumerate(self.ids)}
        if len(self.by_id) != len(self.ids):
            dup = sorted({n for n, sid in zip(self.names, self.ids, strict=True) if self.ids.count(sid) > 1})
            raise ShaderCompileError(f"shader names {dup} share a cache id: rename one")
        self.sources: dict[int, bytes] = {}
        self.hashes: dict[int, int] = {}
        self.interfaces: dict[int, Interface] = {}


_lock = threading.RLock()
_shader_dir = os.environ.get("NCNN_C_SHADER_DIR") or DEFAULT_SHADER_DIR
_registry: _Registry | None = None
_compile_count = 0


def set_shader_dir(directory: str | os.PathLike | None = None) -> None:
    """Point the registry at another directory (tests) and forget everything read so far.

    Calling it with the current directory re-reads the files, which is how a test
    simulates a shader update between two runs.
    """
    global _shader_dir, _registry
    with _lock:
        _shader_dir = os.fspath(directory) if directory is not None else DEFAULT_SHADER_DIR
        _registry = None


def shader_dir() -> str:
    return _shader_dir


def _reg() -> _Registry:
    global _registry
    reg = _registry
    if reg is None:
        with _lock:
            if _registry is None:
                _registry = _Registry(_shader_dir)
            reg = _registry
    return reg


def shader_names() -> list[str]:
    """Shader names (file stems) in type-index order."""
    return list(_reg().names)


def shader_count() -> int:
    return len(_reg().names)


def shader_index(name: str) -> int:
    """Type index of a shader name, -1 when there is no such shader."""
    return _reg().index.get(name, -1)


def resolve_index(name_or_index) -> int:
    """Type index of a shader name or index; raises ShaderCompileError when it does not exist."""
    reg = _reg()
    if isinstance(name_or_index, str):
        index = reg.index.get(name_or_index, -1)
        if index < 0:
            raise ShaderCompileError(f"unknown shader {name_or_index!r} (shader dir {reg.directory})")
        return index
    index = int(name_or_index)
    if not 0 <= index < len(reg.names):
        raise ShaderCompileError(f"shader index {index} out of range 0..{len(reg.names) - 1}")
    return index


def shader_name(index: int) -> str:
    return _reg().names[resolve_index(index)]


def shader_source(index: int) -> bytes:
    """The GLSL of a shader, its includes expanded (read once per process); the file bytes
    as they are when it includes nothing. Raises ShaderCompileError for an include that
    cannot be read."""
    reg = _reg()
    index = resolve_index(index)
    src = reg.sources.get(index)
    if src is None:
        name = reg.names[index] + ".comp"
        with open(os.path.join(reg.directory, name), "rb") as f:
            src = expand_includes(f.read(), name, reg.directory)
        reg.sources[index] = src
    return src


_INCLUDE = re.compile(rb'[ \t]*#[ \t]*include[ \t]*"([^"]*)"[ \t]*(//.*)?\r?')


def expand_includes(source: bytes, name: str, directory: str, _outer: tuple[str, ...] = ()) -> bytes:
    """``source`` (the file ``name``) with each ``#include "file"`` line replaced by that file of
    ``directory``, itself expanded, between ``#line 1 "file"`` and a ``#line`` back to the
    includer's next line. Raises ShaderCompileError naming the includer, its line and the
    file when the file is missing, unreadable, not a plain name of that directory, or
    includes itself."""
    out = []
    for number, line in enumerate(source.split(b"\n"), 1):
        m = _INCLUDE.fullmatch(line)
        if m is None:
            out.append(line)
            continue
        target = m.group(1).decode("utf-8", errors="replace")
        where = f'{name}:{number}: #include "{target}"'
        if not target or os.path.basename(target) != target or target in (".", ".."):
            raise ShaderCompileError(f"{where}: name a file of the shader directory, without a path")
        if target == name or target in _outer:
            raise ShaderCompileError(f"{where}: includes itself ({' -> '.join((*_outer, name, target))})")
        try:
            with open(os.path.join(directory, target), "rb") as f:
                body = f.read()
        except OSError as e:
            raise ShaderCompileError(f"{where}: cannot read {target} in {directory}: {e.strerror}") from None
        body = expand_includes(body, target, directory, (*_outer, name))
        if body.endswith(b"\n"):
            body = body[:-1]
        out += [f'#line 1 "{target}"'.encode(), body, f'#line {number + 1} "{name}"'.encode()]
    return b"\n".join(out)


def shader_id(index: int) -> int:
    """The stable cache id of a shader (FNV-1a 32 of its name, never 0)."""
    return _reg().ids[resolve_index(index)]


def index_of_shader_id(sid: int) -> int:
    """Type index of the shader with cache id ``sid``; -1 when no shader has it."""
    return _reg().by_id.get(sid, -1)


def source_hash_by_id(sid: int) -> int:
    """The source hash of the shader with cache id ``sid``; 0 when no shader has it."""
    index = index_of_shader_id(sid)
    return 0 if index < 0 else shader_source_hash(index)


def shader_source_hash(index: int) -> int:
    """fnv1a-32 of the shader's source (its includes expanded); 0 for an index that does not
    exist."""
    reg = _reg()
    if not isinstance(index, int) or not 0 <= index < len(reg.names):
        return 0
    h = reg.hashes.get(index)
    if h is None:
        h = fnv1a32(shader_source(index))
        # 0 means "no hash" to the cache (never cache), so a real 0 is remapped.
        h = h or 1
        reg.hashes[index] = h
    return h


# -- option preamble -----------------------------------------------------------------

# Device features that gate option flags, and what to assume when the device object
# does not say. fp16/int8/bf16 "packed" only needs core GLSL pack/unpack functions.
_FEATURE_DEFAULTS = {
    "fp16_packed": True,
    "fp16_storage": False,
    "fp16_arithmetic": False,
    "fp16_uniform": False,
    "int8_packed": True,
    "int8_storage": False,
    "int8_arithmetic": False,
    "int8_uniform": False,
    "bf16_packed": True,
    "bf16_storage": False,
    "subgroup_ops": False,
    "cooperative_matrix": False,
}


def _device_supports(info, feature: str) -> bool:
    if info is None:
        return _FEATURE_DEFAULTS[feature]
    value = getattr(info, "support_" + feature, None)
    if value is None:
        return _FEATURE_DEFAULTS[feature]
    if callable(value):
        value = value()
    return bool(value)


def effective_flags(opt_bits: int, info=None) -> dict[str, bool]:
    """The shader option flags after removing what the device cannot do."""
    flags = {}
    for i, name in enumerate(SHADER_OPTION_BITS):
        on = bool(opt_bits >> i & 1)
        feature = name[len("use_") :]
        if on and feature in _FEATURE_DEFAULTS:
            on = _device_supports(info, feature)
        flags[name] = on
    return flags


def preamble(opt_bits: int, info=None) -> str:
    """The macro block inserted after ``#version`` for these option bits on this device."""
    f = effective_flags(opt_bits, info)
    s16 = f["use_fp16_storage"]
    p16 = f["use_fp16_packed"] and not s16
    a16 = f["use_fp16_arithmetic"]
    lines = []
    if s16 or f["use_fp16_uniform"]:
        lines.append("#extension GL_EXT_shader_16bit_storage: require")
    if a16:
        lines.append("#extension GL_EXT_shader_explicit_arithmetic_types_float16: require")
    if f["use_int8_storage"] or f["use_int8_uniform"]:
        lines.append("#extension GL_EXT_shader_8bit_storage: require")
    if f["use_int8_arithmetic"]:
        lines.append("#extension GL_EXT_shader_explicit_arithmetic_types_int8: require")

    if s16:
        lines += ["#define sfp float16_t", "#define sfpvec2 f16vec2", "#define sfpvec4 f16vec4"]
    elif p16:
        lines += ["#define sfp float", "#define sfpvec2 uint", "#define sfpvec4 uvec2"]
    else:
        lines += ["#define sfp float", "#define sfpvec2 vec2", "#define sfpvec4 vec4"]
    if a16:
        lines += [
            "#define afp float16_t",
            "#define afpvec2 f16vec2",
            "#define afpvec4 f16vec4",
            "#define afpmat4 f16mat4",
        ]
    else:
        lines += ["#define afp float", "#define afpvec2 vec2", "#define afpvec4 vec4", "#define afpmat4 mat4"]

    # Scalars are never packed, so the plain constructors convert in every combination.
    lines += [
        "#define buffer_ld1(buf,i) afp(buf[i])",
        "#define buffer_st1(buf,i,v) {buf[i]=sfp(v);}",
        "#define buffer_cp1(buf,i,sbuf,si) {buf[i]=sbuf[si];}",
    ]
    if p16:
        lines += [
            "#define buffer_ld2(buf,i) afpvec2(unpackHalf2x16(buf[i]))",
            "#define buffer_st2(buf,i,v) {buf[i]=packHalf2x16(vec2(v));}",
            "#define buffer_ld4(buf,i) afpvec4(vec4(unpackHalf2x16(buf[i].x),unpackHalf2x16(buf[i].y)))",
            "#define buffer_st4(buf,i,v) {buf[i]=uvec2(packHalf2x16(vec4(v).rg),packHalf2x16(vec4(v).ba));}",
        ]
    else:
        lines += [
            "#define buffer_ld2(buf,i) afpvec2(buf[i])",
            "#define buffer_st2(buf,i,v) {buf[i]=sfpvec2(v);}",
            "#define buffer_ld4(buf,i) afpvec4(buf[i])",
            "#define buffer_st4(buf,i,v) {buf[i]=sfpvec4(v);}",
        ]
    lines += [
        "#define buffer_cp2(buf,i,sbuf,si) {buf[i]=sbuf[si];}",
        "#define buffer_cp4(buf,i,sbuf,si) {buf[i]=sbuf[si];}",
        # A specialization constant of 0 means "not known at pipeline creation": the
        # shader then reads the value from the push constant block of the same name.
        "#define psc(x) (x==0?p.x:x)",
    ]
    for name in SHADER_OPTION_BITS:
        lines.append(f"#define NCNN_{name[len('use_') :]} {int(f[name])}")
    lines.append("#define NCNN_image_shader 0")
    return "\n".join(lines) + "\n"


def with_preamble(source: bytes, opt_bits: int, info=None) -> bytes:
    """Insert the preamble after the ``#version`` line (or add ``#version 450`` first)."""
    text = source.decode("utf-8", errors="replace")
    lines = text.split("\n")
    version_at = -1
    for i, line in enumerate(lines):
        if line.lstrip().startswith("#version"):
            version_at = i
            break
    pre = preamble(opt_bits, info)
    if version_at < 0:
        head, rest, first_line = "#version 450\n", text, 1
    else:
        head = "\n".join(lines[: version_at + 1]) + "\n"
        rest = "\n".join(lines[version_at + 1 :])
        first_line = version_at + 2
    return (head + pre + f"#line {first_line}\n" + rest).encode()


# -- declared interface ---------------------------------------------------------------
class Interface(NamedTuple):
    """What a shader's GLSL declares to the pipeline: descriptor bindings, user
    specialization ids (the local size ids 233-235 are not the caller's) and the number of
    push-constant members."""

    bindings: frozenset[int]
    specialization_ids: frozenset[int]
    push_constants: int
    # binding -> the element shapes ("s" scalar, "v" vector) its buffer declarations may have
    # (a binding declared under two #if branches may have both)
    buffer_shapes: tuple[tuple[int, frozenset[str]], ...] = ()


_COMMENTS = re.compile(rb"//[^\n]*|/\*.*?\*/", re.S)
_BINDING = re.compile(rb"\bbinding\s*=\s*(\d+)")
_CONSTANT_ID = re.compile(rb"\bconstant_id\s*=\s*(\d+)")
_PUSH_BLOCK = re.compile(rb"push_constant\s*\)\s*uniform\s+\w+\s*\{(.*?)\}", re.S)
_BUFFER = re.compile(rb"\bbinding\s*=\s*(\d+)\s*\)[^{;]*?\bbuffer\s+\w+\s*\{\s*(\w+)")
_VECTOR_TYPE = re.compile(rb"vec|mat")
_OBJECT_DEFINE = re.compile(rb"^[ \t]*#[ \t]*define[ \t]+(\w+)[ \t]+(.*?)[ \t]*$", re.M)


def _expand(text: bytes, defines: dict[bytes, bytes], depth: int = 4) -> bytes:
    """``text`` with the object-like macros of ``defines`` substituted (nested ones too)."""
    for _ in range(depth):
        new = re.sub(rb"\b\w+\b", lambda m: defines.get(m.group(0), m.group(0)), text)
        if new == text:
            break
        text = new
    return text


def shader_interface(index: int) -> Interface:
    """The interface shader ``index``'s source declares, read from its text, includes
    expanded (no compile).

    Every variant the preamble selects compiles to exactly this interface (the macros
    change types, never bindings or ids: tests/test_compiler.py checks it for every shader),
    so the pipeline cache checks each loaded SPIR-V body against it: a body stored under
    another shader's id is refused without a key and without compiling anything."""
    reg = _reg()
    index = resolve_index(index)
    iface = reg.interfaces.get(index)
    if iface is None:
        src = _COMMENTS.sub(b"", shader_source(index))
        # members a shader hands to an included block through an object-like macro
        # (flip.comp's REMAP_PARAMS for remap.h) count as what they expand to
        defines = dict(_OBJECT_DEFINE.findall(src))
        blocks = [_expand(b, defines) for b in _PUSH_BLOCK.findall(src)]
        members = {len([m for m in b.split(b";") if m.strip()]) for b in blocks}
        if len(members) > 1:
            raise ShaderCompileError(f"{reg.names[index]}: push constant blocks of different sizes")
        shapes: dict[int, set[str]] = {}
        for binding, element in _BUFFER.findall(src):
            shapes.setdefault(int(binding), set()).add("v" if _VECTOR_TYPE.search(element) else "s")
        iface = Interface(
            frozenset(int(b) for b in _BINDING.findall(src)),
            frozenset(int(c) for c in _CONSTANT_ID.findall(src)),
            members.pop() if members else 0,
            tuple(sorted((b, frozenset(v)) for b, v in shapes.items())),
        )
        reg.interfaces[index] = iface
    return iface


def interface_mismatch(shader_id_: int, info) -> str | None:
    """Why SPIR-V reflected as ``info`` (a ShaderInfo) is not a body of the shader with cache
    id ``shader_id_``; None when it matches (or the id is unknown: the caller rejects that)."""
    index = index_of_shader_id(shader_id_)
    if index < 0:
        return None
    want = shader_interface(index)
    got = Interface(
        frozenset(i for i, t in enumerate(info.binding_types) if t),
        frozenset(info.specialization_ids),
        info.push_constant_count,
    )
    declared = dict(want.buffer_shapes)
    shapes = getattr(info, "buffer_shapes", ())
    odd = [b for b, have in enumerate(shapes) if have and not have <= declared.get(b, frozenset())]
    plain = want._replace(buffer_shapes=())
    if got == plain and not odd:
        return None
    if got != plain:

        def show(i: Interface) -> str:
            return (
                f"bindings {sorted(i.bindings)}, specialization ids {sorted(i.specialization_ids)}, "
                f"{i.push_constants} push constants"
            )

        detail = f"{show(got)}, where it declares {show(want)}"
    else:
        b = odd[0]
        detail = (
            f"the buffer at binding {b} holds {_SHAPE_NAMES[tuple(sorted(shapes[b]))]}, where it declares "
            f"{_SHAPE_NAMES[tuple(sorted(declared.get(b, ())))]}"
        )
    return f"its interface is not the one {_reg().names[index]}.comp declares: {detail}"


_SHAPE_NAMES = {(): "no buffer", ("s",): "scalars", ("v",): "vectors", ("s", "v"): "scalars or vectors"}


# -- compilation -----------------------------------------------------------------------


def _default_info(opt):
    """GpuInfo of the device the option points at, None when it cannot be known."""
    try:
        from . import device
    except Exception:
        return None
    try:
        index = getattr(opt, "vulkan_device_index", -1)
        if index is None or index < 0:
            index = device.get_default_gpu_index()
        return device.get_gpu_info(index)
    except Exception:
        return None


def compile_count() -> int:
    """GLSL -> SPIR-V compilations done by this process."""
    return _compile_count


def compile_glsl(source: bytes, name: str = "shader") -> bytes:
    """Compile a complete compute shader (no preamble added); raises ShaderCompileError."""
    global _compile_count
    from .._native import compile_glsl as native_compile

    # Optimisation level zero: several times faster to compile than "performance",
    # and the driver optimises the SPIR-V again anyway.
    ok, out = native_compile(source, name, optimize=False)
    with _lock:
        _compile_count += 1
    if not ok:
        raise ShaderCompileError(f"{name}: {out.decode('utf-8', errors='replace').strip()}")
    return out


def compile_shader(name_or_index, opt, vkdev=None) -> bytes:
    """SPIR-V of a registry shader for ``opt``'s shader bits on ``vkdev`` (or opt's device)."""
    index = resolve_index(name_or_index)
    info = vkdev.info if vkdev is not None else _default_info(opt)
    source = with_preamble(shader_source(index), opt.shader_bits(), info)
    return compile_glsl(source, _reg().names[index] + ".comp")
