"""Shader registry, GLSL compilation with the option preamble, SPIR-V reflection, local size."""

from __future__ import annotations

import re
import struct
import time
import types

import pytest
from glsl_samples import SCALE

from ncnn_c.gpu import cachefile, compiler
from ncnn_c.gpu.pipeline import optimal_local_size
from ncnn_c.gpu.spirv import (
    BINDING_STORAGE_BUFFER,
    BINDING_UNIFORM_BUFFER,
    SpirvError,
    resolve_shader_info,
)
from ncnn_c.option import Option

ADD = """#version 450
layout (constant_id = 0) const int w = 0;
layout (constant_id = 1) const float bias = 0;
layout (constant_id = 2) const int unused = 0;
layout (local_size_x_id = 233, local_size_y_id = 234, local_size_z_id = 235) in;
layout (binding = 0) readonly buffer a_blob { sfp a[]; };
layout (binding = 1) readonly buffer b_blob { sfp b[]; };
layout (binding = 2) writeonly buffer c_blob { sfp c[]; };
layout (binding = 3) uniform ubo { vec4 k; };
layout (push_constant) uniform parameter { int w; int h; int c; float f; } p;
void main()
{
    int i = int(gl_GlobalInvocationID.x);
    if (i >= psc(w))
        return;
    buffer_st1(c, i, buffer_ld1(a, i) + buffer_ld1(b, i) + afp(bias) + afp(k.x));
}
"""

BROKEN = """#version 450
layout (local_size_x_id = 233) in;
void main()
{
    undeclared_thing = 1;
}
"""


def fp32_option() -> Option:
    opt = Option()
    opt.use_fp16_packed = opt.use_fp16_storage = opt.use_fp16_arithmetic = False
    opt.use_int8_storage = opt.use_int8_arithmetic = opt.use_int8_packed = False
    return opt


@pytest.fixture
def shader_dir(tmp_path):
    (tmp_path / "scale.comp").write_text(SCALE)
    (tmp_path / "add.comp").write_text(ADD)
    (tmp_path / "broken.comp").write_text(BROKEN)
    compiler.set_shader_dir(tmp_path)
    yield tmp_path
    compiler.set_shader_dir(None)


def test_registry_is_the_sorted_file_list(shader_dir):
    assert compiler.shader_names() == ["add", "broken", "scale"]
    assert compiler.shader_index("scale") == 2
    assert compiler.shader_index("nope") == -1
    assert compiler.shader_source(0) == ADD.encode()
    assert compiler.shader_source_hash(2) == cachefile.fnv1a32(SCALE.encode())
    assert compiler.shader_source_hash(3) == 0
    assert compiler.shader_source_hash(-1) == 0


def test_source_hash_is_computed_once_until_the_registry_is_reread(shader_dir):
    h = compiler.shader_source_hash(2)
    (shader_dir / "scale.comp").write_text(SCALE + "\n// edited\n")
    assert compiler.shader_source_hash(2) == h
    compiler.set_shader_dir(shader_dir)
    assert compiler.shader_source_hash(2) != h


def test_compile_ok_and_timing(shader_dir):
    opt = fp32_option()
    t0 = time.perf_counter()
    spirv = compiler.compile_shader("scale", opt)
    first = time.perf_counter() - t0
    t0 = time.perf_counter()
    spirv2 = compiler.compile_shader(2, opt)
    second = time.perf_counter() - t0
    assert struct.unpack_from("<I", spirv)[0] == 0x07230203
    assert spirv == spirv2
    print(f"first compile {first * 1e3:.1f} ms, next {second * 1e3:.2f} ms")


def test_compile_counts(shader_dir):
    n = compiler.compile_count()
    compiler.compile_shader("add", fp32_option())
    assert compiler.compile_count() == n + 1


def test_compile_error_names_shader_and_original_line(shader_dir):
    with pytest.raises(compiler.ShaderCompileError) as e:
        compiler.compile_shader("broken", fp32_option())
    msg = str(e.value)
    assert "broken.comp" in msg
    assert "undeclared_thing" in msg
    # the preamble is invisible to line numbers: the error is on the file's line 5
    assert "broken.comp:5:" in msg


def test_unknown_shader_raises(shader_dir):
    with pytest.raises(compiler.ShaderCompileError):
        compiler.compile_shader("missing", fp32_option())
    with pytest.raises(compiler.ShaderCompileError):
        compiler.compile_shader(99, fp32_option())


def test_preamble_follows_option_bits_and_device_support():
    fp16_dev = types.SimpleNamespace(support_fp16_storage=True, support_fp16_arithmetic=True)
    no_fp16_dev = types.SimpleNamespace(support_fp16_storage=False, support_fp16_arithmetic=False)
    fp32 = fp32_option()
    fp16 = fp32_option()
    fp16.use_fp16_storage = True

    a = compiler.preamble(fp32.shader_bits(), fp16_dev)
    b = compiler.preamble(fp16.shader_bits(), fp16_dev)
    assert a != b
    assert "#define sfp float\n" in a and "NCNN_fp16_storage 0" in a
    assert "#define sfp float16_t" in b and "GL_EXT_shader_16bit_storage" in b and "NCNN_fp16_storage 1" in b
    assert "#define afp float\n" in b  # arithmetic not requested
    # identical bits -> identical code
    assert compiler.preamble(fp16.shader_bits(), fp16_dev) == b
    # a device without fp16 storage falls back to fp32 types
    c = compiler.preamble(fp16.shader_bits(), no_fp16_dev)
    assert c == a
    for macro in (
        "sfpvec4",
        "afpvec4",
        "buffer_ld1",
        "buffer_st1",
        "buffer_cp1",
        "psc(x)",
        "NCNN_fp16_arithmetic",
    ):
        assert macro in a


def test_preamble_goes_right_after_version():
    src = b"// header comment\n#version 450\nvoid main() {}\n"
    out = compiler.with_preamble(src, 0).decode()
    lines = out.split("\n")
    assert lines[0] == "// header comment" and lines[1] == "#version 450"
    assert lines[2].startswith("#define") or lines[2].startswith("#extension")
    assert "#line 3" in out


def test_fp16_storage_shader_compiles(shader_dir):
    opt = fp32_option()
    opt.use_fp16_storage = True
    opt.use_fp16_arithmetic = True
    dev = types.SimpleNamespace(
        info=types.SimpleNamespace(support_fp16_storage=True, support_fp16_arithmetic=True)
    )
    spirv16 = compiler.compile_shader("add", opt, dev)
    spirv32 = compiler.compile_shader("add", fp32_option(), dev)
    assert spirv16 != spirv32
    assert resolve_shader_info(spirv16).binding_count == 4


def test_reflection_counts(shader_dir):
    info = resolve_shader_info(compiler.compile_shader("add", fp32_option()))
    assert info.specialization_count == 3  # 233/234/235 are not counted
    assert info.specialization_ids == (0, 1, 2)
    assert info.binding_count == 4
    assert info.binding_types == (BINDING_STORAGE_BUFFER,) * 3 + (BINDING_UNIFORM_BUFFER,)
    assert info.push_constant_count == 4
    info = resolve_shader_info(compiler.compile_shader("scale", fp32_option()))
    assert (info.specialization_count, info.binding_count, info.push_constant_count) == (1, 1, 1)


def test_reflection_accepts_words(shader_dir):
    spirv = compiler.compile_shader("scale", fp32_option())
    words = struct.unpack(f"<{len(spirv) // 4}I", spirv)
    assert resolve_shader_info(words) == resolve_shader_info(spirv)


def _zero_word_after_function(spirv: bytes) -> bytes:
    """``spirv`` with the instruction after its first OpFunction made a zero-length word."""
    words = list(struct.unpack(f"<{len(spirv) // 4}I", spirv))
    pos = 5
    while words[pos] & 0xFFFF != 54:  # OpFunction
        pos += words[pos] >> 16
    words[pos + (words[pos] >> 16)] = 0
    return struct.pack(f"<{len(words)}I", *words)


@pytest.mark.parametrize(
    "mutate, reason",
    [
        (lambda s: s[:-2], "multiple of 4"),
        (lambda s: s[:12], "too short"),
        (lambda s: b"\x00\x00\x00\x00" + s[4:], "magic"),
        (lambda s: s + struct.pack("<I", (50 << 16) | 1), "past the end"),
        (lambda s: s[:20] + struct.pack("<I", 0) + s[24:], "past the end"),
        # inside a function body, which reflection walks for its bounds only
        (lambda s: _zero_word_after_function(s), "past the end"),
    ],
)
def test_reflection_rejects_malformed(shader_dir, mutate, reason):
    spirv = compiler.compile_shader("scale", fp32_option())
    with pytest.raises(SpirvError, match=reason):
        resolve_shader_info(mutate(spirv))


def test_reflection_requires_a_compute_entry_point():
    header = struct.pack("<5I", 0x07230203, 0x00010300, 0, 10, 0)
    with pytest.raises(SpirvError, match="GLCompute"):
        resolve_shader_info(header)


@pytest.mark.parametrize(
    "grid", [(4, 4, 4), (224, 224, 3), (13, 13, 512), (1000, 1, 1), (1, 1, 1), (-1, -1, -1), (7, 5, 3)]
)
def test_optimal_local_size(grid):
    x, y, z = optimal_local_size(*grid, max_size=(1024, 1024, 64), max_invocations=1024)
    assert x * y * z <= 256
    assert z <= 64
    for size, extent in zip((x, y, z), grid, strict=True):
        assert size & (size - 1) == 0
        if extent > 0:
            assert size <= max(1, 2 * extent)
    if all(e <= 0 or e >= 64 for e in grid) and grid != (1000, 1, 1):
        assert x * y * z >= 64
    assert optimal_local_size(*grid, max_size=(1024, 1024, 64), max_invocations=32)[0] <= 32


# (fp16 packed, fp16 storage, fp16 arithmetic): fp32, storage only, storage + arithmetic,
# packed only (a device without 16-bit storage), packed + arithmetic
FP16_COMBOS = [(0, 0, 0), (1, 1, 0), (1, 1, 1), (1, 0, 0), (1, 0, 1)]


@pytest.mark.parametrize("packed,storage,arith", FP16_COMBOS, ids=str)
def test_every_layer_shader_compiles(packed, storage, arith):
    """Every shader under every storage/arithmetic combination the preamble can produce
    (16-bit storage forbids component access without arithmetic: glslang catches it)."""
    compiler.set_shader_dir(None)
    names = compiler.shader_names()
    assert names, "no layer shaders found"
    opt = fp32_option()
    opt.use_fp16_packed, opt.use_fp16_storage, opt.use_fp16_arithmetic = (
        bool(packed),
        bool(storage),
        bool(arith),
    )
    dev = types.SimpleNamespace(
        info=types.SimpleNamespace(support_fp16_storage=True, support_fp16_arithmetic=True)
    )
    for name in names:
        resolve_shader_info(compiler.compile_shader(name, opt, dev))


def test_aliased_bindings_count_once():
    """One buffer bound twice (as vec4s and as scalars) is one binding of one type."""
    compiler.set_shader_dir(None)
    info = resolve_shader_info(compiler.compile_shader("copyto", fp32_option()))
    assert info.binding_count == 2


def test_native_build_is_idempotent_and_names_missing_packages(tmp_path, monkeypatch):
    import os

    from ncnn_c._native import build_shaderc

    path = build_shaderc.build()
    mtime = os.stat(path).st_mtime_ns
    assert build_shaderc.build() == path
    assert os.stat(path).st_mtime_ns == mtime
    # the archives are looked for where pkg-config (or the multiarch dir) says, or in
    # $NCNN_C_SHADERC_LIBDIR; a directory without them names the packages and the variable
    monkeypatch.setenv("NCNN_C_SHADERC_LIBDIR", str(tmp_path))
    assert build_shaderc.library_dirs() == [str(tmp_path)]
    with pytest.raises(build_shaderc.BuildError, match="libshaderc-dev") as e:
        build_shaderc.build()
    assert str(tmp_path) in str(e.value) and "NCNN_C_SHADERC_LIBDIR" in str(e.value)
    monkeypatch.delenv("NCNN_C_SHADERC_LIBDIR")
    monkeypatch.setenv("NCNN_C_SHADERC_INCLUDE", str(tmp_path))
    with pytest.raises(build_shaderc.BuildError, match="shaderc.h"):
        build_shaderc.build()


# -- the declared interface the pipeline cache checks loaded SPIR-V against --------------------
_VARIANTS = [(False, False, False), (True, True, False), (True, True, True), (True, False, True)]


@pytest.mark.parametrize("name", compiler.shader_names())
def test_every_variant_compiles_to_the_declared_interface(name):
    """No preamble variant may change what the source declares: a loaded body that does is
    refused, so a false mismatch here would make a good cache miss."""
    from ncnn_c.gpu.spirv import resolve_shader_info
    from ncnn_c.option import Option

    index = compiler.shader_index(name)
    for packed, storage, arith in _VARIANTS:
        opt = Option()
        opt.use_fp16_packed, opt.use_fp16_storage, opt.use_fp16_arithmetic = packed, storage, arith
        info = resolve_shader_info(compiler.compile_shader(index, opt))
        assert compiler.interface_mismatch(compiler.shader_id(index), info) is None


def test_a_body_of_another_shader_is_named_a_mismatch():
    from ncnn_c.gpu.spirv import resolve_shader_info
    from ncnn_c.option import Option

    opt = Option()
    relu = resolve_shader_info(compiler.compile_shader("relu", opt))
    why = compiler.interface_mismatch(compiler.shader_id(compiler.shader_index("convolution")), relu)
    assert why and "convolution.comp declares" in why and "bindings [0]" in why
    pool4 = resolve_shader_info(compiler.compile_shader("pooling_pack4", opt))
    why = compiler.interface_mismatch(compiler.shader_id(compiler.shader_index("pooling")), pool4)
    assert why and "binding 1 holds vectors" in why


# -- #include "file": shared GLSL in files of the shader directory that are not shaders ----------
USES_HEADER = """#version 450
layout (constant_id = 0) const float k = 1;
layout (local_size_x_id = 233, local_size_y_id = 234, local_size_z_id = 235) in;
layout (binding = 0) buffer data_blob { sfp data[]; };
#include "shared.h"
void main()
{
    int i = int(gl_GlobalInvocationID.x);
    if (i >= p.n)
        return;
    buffer_st1(data, i, twice(buffer_ld1(data, i)));
}
"""

SHARED_H = """// a header may declare interface too: the expanded text is what the shader declares
layout (push_constant) uniform parameter { int n; } p;
afp twice(afp v)
{
    return v * afp(2.f) * afp(k);
}
"""


@pytest.fixture
def include_dir(tmp_path):
    (tmp_path / "scale.comp").write_text(SCALE)
    (tmp_path / "uses_header.comp").write_text(USES_HEADER)
    (tmp_path / "shared.h").write_text(SHARED_H)
    compiler.set_shader_dir(tmp_path)
    yield tmp_path
    compiler.set_shader_dir(None)


def test_included_files_are_not_shaders(include_dir):
    assert compiler.shader_names() == ["scale", "uses_header"]


def test_include_is_expanded_between_line_directives(include_dir):
    src = compiler.shader_source(compiler.shader_index("uses_header")).decode()
    assert "#include" not in src
    head, rest = src.split('#line 1 "shared.h"\n')
    assert head == USES_HEADER.split('#include "shared.h"\n')[0]
    body, tail = rest.split('#line 6 "uses_header.comp"\n')
    assert body == SHARED_H
    assert tail == USES_HEADER.split('#include "shared.h"\n')[1]
    info = resolve_shader_info(compiler.compile_shader("uses_header", fp32_option()))
    assert (info.binding_count, info.push_constant_count, info.specialization_ids) == (1, 1, (0,))
    # the interface the cache checks bodies against is read from the expanded text
    iface = compiler.shader_interface(compiler.shader_index("uses_header"))
    assert (iface.bindings, iface.specialization_ids, iface.push_constants) == ({0}, {0}, 1)


def test_an_included_file_is_part_of_the_source_hash(include_dir):
    index = compiler.shader_index("uses_header")
    other = compiler.shader_index("scale")
    before, other_before = compiler.shader_source_hash(index), compiler.shader_source_hash(other)
    assert before == cachefile.fnv1a32(compiler.shader_source(index))
    (include_dir / "shared.h").write_text(SHARED_H.replace("afp(2.f)", "afp(3.f)"))
    compiler.set_shader_dir(include_dir)  # a new process would read the new header
    assert compiler.shader_source_hash(index) != before
    # a shader that does not include it keeps its hash, so its cache entries stay valid
    assert compiler.shader_source_hash(other) == other_before
    assert compiler.shader_source(other) == SCALE.encode()


def test_compile_errors_name_the_included_file_and_its_line(include_dir):
    (include_dir / "shared.h").write_text(SHARED_H.replace("afp(k)", "afp(undeclared_h)"))
    (include_dir / "uses_header.comp").write_text(USES_HEADER.replace("if (i >= p.n)", "if (i >= p.nope)"))
    compiler.set_shader_dir(include_dir)
    with pytest.raises(compiler.ShaderCompileError) as e:
        compiler.compile_shader("uses_header", fp32_option())
    msg = str(e.value)
    assert "shared.h:5:" in msg and "undeclared_h" in msg
    # and the shader's own lines after the include keep their numbers
    assert "uses_header.comp:9:" in msg and "nope" in msg


@pytest.mark.parametrize(
    "line, reason",
    [
        ('#include "missing.h"', 'uses_header.comp:5: #include "missing.h": cannot read missing.h'),
        ('#include "../shared.h"', "without a path"),
        ('#include ""', "without a path"),
        ('#include "uses_header.comp"', "includes itself"),
    ],
)
def test_a_bad_include_is_a_clear_compile_error(include_dir, line, reason):
    (include_dir / "uses_header.comp").write_text(USES_HEADER.replace('#include "shared.h"', line))
    compiler.set_shader_dir(include_dir)
    index = compiler.shader_index("uses_header")
    for call in (compiler.shader_source, compiler.shader_source_hash, compiler.shader_interface):
        with pytest.raises(compiler.ShaderCompileError, match=re.escape(reason)):
            call(index)
    with pytest.raises(compiler.ShaderCompileError, match=re.escape(reason)):
        compiler.compile_shader(index, fp32_option())


def test_an_include_cycle_is_refused(include_dir):
    (include_dir / "shared.h").write_text(SHARED_H + '#include "other.h"\n')
    (include_dir / "other.h").write_text('#include "shared.h"\n')
    compiler.set_shader_dir(include_dir)
    with pytest.raises(
        compiler.ShaderCompileError, match="uses_header.comp -> shared.h -> other.h -> shared.h"
    ):
        compiler.shader_source(compiler.shader_index("uses_header"))


def test_the_fused_activation_lives_in_one_header():
    """Every layer shader that applies ncnn's fused activation includes vulkan_activation.h;
    none keeps a pasted copy."""
    compiler.set_shader_dir(None)
    directory = compiler.shader_dir()
    users = []
    for name in compiler.shader_names():
        with open(f"{directory}/{name}.comp", "rb") as f:
            text = f.read()
        assert not re.search(rb"\bactivation\s*\(\s*\w+\s+v\s*\)\s*\{", text), (
            f"{name}.comp pastes activation()"
        )
        if b'#include "vulkan_activation.h"' in text:
            users.append(name)
            assert b"activation_type" in compiler.shader_source(compiler.shader_index(name))
    assert len(users) >= 14, users
