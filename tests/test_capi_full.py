"""The whole C API: coverage against ncnn's header, every section from C, ncnn's own C
programs, robustness of every function (C and Python), 8 threads sharing a pipeline cache.

ncnn's programs (tests/test_c_api.cpp, examples/squeezenet_c_api.cpp) are shipped unchanged in
capi/tests/ncnn_upstream/ (BSD-3-Clause, see its README); ``$NCNN_C_NCNN_SOURCE`` points the
tests at another ncnn checkout instead.
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ncnn_c import capi

pytestmark = pytest.mark.capi

ROOT = Path(__file__).resolve().parent.parent
HEADER = ROOT / "capi" / "include" / "ncnn" / "c_api.h"
# ncnn_c's own functions, declared apart so that c_api.h stays exactly ncnn's
EXT_HEADER = ROOT / "capi" / "include" / "ncnn" / "c_api_ext.h"
PLATFORM = ROOT / "capi" / "include" / "ncnn" / "platform.h"
# ncnn's header: $NCNN_C_REFERENCE_HEADER, else the project's shared reference beside the
# checkout, else the copy shipped with ncnn's test programs (capi/tests/ncnn_upstream/)
REF_HEADER = Path(
    os.environ.get("NCNN_C_REFERENCE_HEADER", str(ROOT.parent / "shared" / "reference" / "ncnn_c_api.h"))
)
if "NCNN_C_REFERENCE_HEADER" not in os.environ and not REF_HEADER.exists():
    REF_HEADER = ROOT / "capi" / "tests" / "ncnn_upstream" / "ncnn_c_api.h"
MODELS = Path(os.environ.get("NCNN_C_MODELS", str(ROOT / "models")))


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


@pytest.fixture(scope="module")
def lib(tmp_path_factory):
    build = tmp_path_factory.mktemp("capi_full_build")
    r = subprocess.run(
        [sys.executable, "-m", "ncnn_c.capi", "--build", "--build-dir", str(build)],
        env=_env(),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert r.returncode == 0, r.stderr
    cflags = [f"-I{ROOT / 'capi' / 'include'}", f"-I{ROOT / 'capi' / 'include' / 'ncnn'}"]
    libs = [f"-L{build}", "-lncnn_c", f"-Wl,-rpath,{build}"]
    return build, cflags, libs


def _compile(lib, sources, out: Path, cxx: bool = False, extra=()) -> Path:
    _, cflags, libs = lib
    cc = ["g++", "-x", "c++"] if cxx else ["gcc", "-std=c99"]
    r = subprocess.run(
        [
            *cc,
            "-Wall",
            *extra,
            *map(str, sources),
            *cflags,
            "-x",
            "none",
            *libs,
            "-pthread",
            "-lm",
            "-o",
            str(out),
        ],
        capture_output=True,
        text=True,
    )
    assert r.returncode == 0, r.stderr
    return out


def _run(exe: Path, *args: str, cwd: Path | None = None, timeout: int = 600):
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    return subprocess.run(
        [str(exe), *args], cwd=cwd or exe.parent, env=env, capture_output=True, text=True, timeout=timeout
    )


# ------------------------------------------------------------------ the header against ncnn's


def _decls(text: str) -> dict[str, str]:
    """name -> normalised declaration, Windows-only blocks removed."""
    text = re.sub(r"#if _WIN32\n.*?#endif /\* _WIN32 \*/\n", "", text, flags=re.S)
    out = {}
    for m in re.finditer(r"NCNN_EXPORT\s+([^;{]*?\b(ncnn_\w+)\s*\([^)]*\))\s*;", text):
        sig = re.sub(r"\s+", " ", m.group(1)).replace(" *", "*").replace("( ", "(").strip()
        out[m.group(2)] = sig
    return out


def _defines(text: str) -> set[str]:
    return set(re.findall(r"^\s*#define\s+(NCNN_\w+)", text, re.M))


def test_header_has_every_linux_function_of_ncnn_and_nothing_else():
    assert REF_HEADER.exists(), f"ncnn's c_api.h expected at {REF_HEADER} (set NCNN_C_REFERENCE_HEADER)"
    ref = _decls(REF_HEADER.read_text())
    ours = _decls(HEADER.read_text())
    assert len(ref) == 210
    assert sorted(set(ref) - set(ours)) == []
    assert sorted(set(ours) - set(ref)) == []
    assert {n: s for n, s in ours.items() if ref[n] != s} == {}
    # the library exports ncnn's functions plus ours, the latter declared in c_api_ext.h
    assert set(capi.EXPORTS) == set(ours) | set(_decls(EXT_HEADER.read_text()))


def test_macros_and_feature_switches():
    ref_text = REF_HEADER.read_text()
    ours = _defines(HEADER.read_text()) | _defines(PLATFORM.read_text())
    # every macro ncnn's header defines, and every feature switch it tests
    assert _defines(ref_text) - {"NCNN_C_API_H"} <= ours
    tested = set(re.findall(r"#if\s+(NCNN_\w+)", ref_text))
    assert tested <= ours, tested - ours
    # and they are on, with ncnn's values
    probe = "\n".join(f"#if !{m}\n#error {m} off\n#endif" for m in sorted(tested))
    src = f'#include "c_api.h"\n{probe}\n_Static_assert(NCNN_BORDER_TRANSPARENT == -233, "");\n'
    src += '_Static_assert(NCNN_MAT_PIXEL_X2Y(NCNN_MAT_PIXEL_RGB, NCNN_MAT_PIXEL_BGR) == 0x20001, "");\n'
    src += "FILE* f; size_t s;\nint main(void) { return 0; }\n"
    r = subprocess.run(
        ["gcc", "-std=c11", "-fsyntax-only", "-x", "c", "-", f"-I{HEADER.parent}"],
        input=src,
        capture_output=True,
        text=True,
    )
    assert r.returncode == 0, r.stderr


def test_library_exports_are_the_header(lib):
    build = lib[0]
    r = subprocess.run(
        ["nm", "-D", "--defined-only", str(build / "libncnn_c.so")], capture_output=True, text=True
    )
    exported = {line.split()[-1] for line in r.stdout.splitlines() if " T " in line}
    exported.discard("PyInit__ncnn_c_embed")  # cffi's module init, the one non-API export
    ours, ext = set(_decls(HEADER.read_text())), set(_decls(EXT_HEADER.read_text()))
    assert ext and not ours & ext
    assert exported == ours | ext


def test_extension_header_holds_only_functions_ncnn_lacks():
    ref = _decls(REF_HEADER.read_text())
    ext = _decls(EXT_HEADER.read_text())
    assert "ncnn_pipelinecache_last_error" in ext
    assert not set(ext) & set(ref)
    assert set(ext) <= set(capi.EXPORTS)


@pytest.mark.gpu
def test_extension_functions_from_c(lib, tmp_path):
    exe = _compile(lib, [ROOT / "capi" / "tests" / "test_capi_ext.c"], tmp_path / "ext")
    r = _run(exe, str(tmp_path / "missing.vkcache"), timeout=300)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert re.search(r"^\d+ passed, 0 failed$", r.stdout, re.M)
    # and from Python, through the same export
    pc = capi.ncnn_pipelinecache_create(0)
    try:
        assert capi.ncnn_pipelinecache_last_error(pc) is None
        assert capi.ncnn_pipelinecache_load_memory(pc, b"\0" * 8) != 0
        assert "shorter than" in capi.ncnn_pipelinecache_last_error(pc)
    finally:
        capi.ncnn_pipelinecache_destroy(pc)


# ------------------------------------------------------------------ C programs


def test_every_section_from_c(lib, tmp_path):
    exe = _compile(lib, [ROOT / "capi" / "tests" / "test_capi_sections.c"], tmp_path / "sections")
    r = _run(exe, timeout=300)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert re.search(r"^\d+ passed, 0 failed$", r.stdout, re.M)
    # the same program as C++ (ncnn's test is C++): the header is usable from both
    exe = _compile(
        lib, [ROOT / "capi" / "tests" / "test_capi_sections.c"], tmp_path / "sections_cxx", cxx=True
    )
    r = _run(exe, timeout=300)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]


UPSTREAM = ROOT / "capi" / "tests" / "ncnn_upstream"


def _ncnn_source(rel: str, dest: Path) -> Path:
    """ncnn's program ``rel``: from $NCNN_C_NCNN_SOURCE when set, else the copy we ship."""
    base = os.environ.get("NCNN_C_NCNN_SOURCE")
    src = Path(base) / rel if base else UPSTREAM / Path(rel).name
    assert src.exists(), f"{src} is missing"
    shutil.copy(src, dest)
    return dest


def test_ncnn_c_api_test_program_unchanged(lib, tmp_path):
    src = _ncnn_source("tests/test_c_api.cpp", tmp_path / "test_c_api.cpp")
    exe = _compile(lib, [src], tmp_path / "test_c_api", cxx=True)
    r = _run(exe, timeout=300)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]


def test_ncnn_squeezenet_c_api_example_unchanged(lib, tmp_path):
    from test_capi import _python_top1, _test_image

    src = _ncnn_source("examples/squeezenet_c_api.cpp", tmp_path / "squeezenet_c_api.cpp")
    shim = ROOT / "capi" / "tests" / "simpleocv"
    exe = _compile(
        lib, [src], tmp_path / "squeezenet_c_api", cxx=True, extra=("-DUSE_NCNN_SIMPLEOCV", f"-I{shim}")
    )
    for name in ("squeezenet_v1.1.param", "squeezenet_v1.1.bin"):
        (tmp_path / name).symlink_to(MODELS / name)
    img = _test_image(tmp_path / "img.ppm")
    r = _run(exe, str(tmp_path / "img.ppm"), cwd=tmp_path, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    top = [int(m.group(1)) for m in re.finditer(r"^(\d+) = ([\d.]+)$", r.stderr, re.M)]
    assert len(top) == 3
    assert top[0] == _python_top1(img)


def test_threads_share_a_cpu_net_setup(lib, tmp_path):
    exe = _compile(lib, [ROOT / "capi" / "tests" / "test_capi_threads.c"], tmp_path / "threads")
    r = _run(exe, str(MODELS), "cpu", timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr[-3000:]
    assert r.stdout.startswith("threads ok")


@pytest.mark.gpu
def test_threads_share_one_pipeline_cache(lib, tmp_path):
    exe = _compile(lib, [ROOT / "capi" / "tests" / "test_capi_threads.c"], tmp_path / "threads")
    r = _run(exe, str(MODELS), "vulkan", timeout=500)
    assert r.returncode == 0, r.stdout + r.stderr[-3000:]
    assert r.stdout.startswith("threads ok")


# ------------------------------------------------------------------ robustness: every function

_BUILD = None


def _signatures():
    global _BUILD
    if _BUILD is None:
        import importlib.util

        spec = importlib.util.spec_from_file_location("_capi_build_full", ROOT / "capi" / "build.py")
        mod = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = mod
        spec.loader.exec_module(mod)
        _BUILD = mod
    return _BUILD.parse_header(HEADER.read_text())[1] + _BUILD.parse_header(EXT_HEADER.read_text())[1]


_C_ERR = {"int": "-1", "size_t": "0", "float": "0.0f", "handle": "NULL", "rawptr": "NULL", "str": "NULL"}


def _c_arg(p) -> str:
    if p.cat == "scalar":
        return "0"
    return "0"  # every pointer / handle / function pointer NULL


def test_every_function_from_c_with_null_arguments(lib, tmp_path):
    """Generated from the header: each function gets NULL for every pointer and 0 for every
    number; functions that take a handle must return their error value; none may crash."""
    funcs = _signatures()
    lines = ["#include <stdio.h>", '#include "c_api_ext.h"', "int main(void)", "{", "    int bad = 0;"]
    for f in funcs:
        call = f"{f.name}({', '.join(_c_arg(p) for p in f.params)})"
        takes_handle = bool(f.params) and f.params[0].cat in ("handle", "addr", "str")
        if f.ret_cat == "void" or not takes_handle:
            lines.append(f"    (void){call};")
        else:
            err = _C_ERR[f.ret_cat]
            lines.append(f'    if ({call} != {err}) {{ printf("BAD {f.name}\\n"); bad = 1; }}')
    lines += ['    printf("done\\n");', "    return bad;", "}"]
    src = tmp_path / "nulls.c"
    src.write_text("\n".join(lines) + "\n")
    exe = _compile(lib, [src], tmp_path / "nulls", extra=("-Wno-nonnull", "-Wno-unused-value"))
    r = _run(exe, timeout=300)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert r.stdout.strip().endswith("done")
    assert "Traceback" not in r.stderr


def _kinds_of(f):
    return [p.ctype.replace("const ", "") for p in f.params]


def _live_handles():
    """One live handle of each kind that needs no GPU."""
    return {
        capi.ALLOCATOR: capi.ncnn_allocator_create_pool_allocator(),
        capi.OPTION: capi.ncnn_option_create(),
        capi.MAT: capi.ncnn_mat_create_1d(4, 0),
        capi.NET: capi.ncnn_net_create(),
        capi.PARAMDICT: capi.ncnn_paramdict_create(),
        capi.DATAREADER: capi.ncnn_datareader_create(),
        capi.LAYER: capi.ncnn_layer_create(),
    }


_KIND_OF_CTYPE = {
    "ncnn_allocator_t": capi.ALLOCATOR,
    "ncnn_option_t": capi.OPTION,
    "ncnn_mat_t": capi.MAT,
    "ncnn_net_t": capi.NET,
    "ncnn_extractor_t": capi.EXTRACTOR,
    "ncnn_paramdict_t": capi.PARAMDICT,
    "ncnn_datareader_t": capi.DATAREADER,
    "ncnn_modelbin_t": capi.MODELBIN,
    "ncnn_layer_t": capi.LAYER,
    "ncnn_blob_t": capi.BLOB,
    "ncnn_pipelinecache_t": capi.PIPELINECACHE,
}


@pytest.mark.parametrize("mode", ["null", "destroyed", "wrong_kind"])
def test_every_function_from_python_with_bad_handles(mode, caplog):
    """Each function whose first argument is a handle: a NULL, destroyed or wrong-kind handle
    gives the error return and a log line, never an exception."""
    live = _live_handles()
    dead = {}
    for kind, h in _live_handles().items():
        getattr(capi, f"ncnn_{kind}_destroy" if kind != capi.ALLOCATOR else "ncnn_allocator_destroy")(h)
        dead[kind] = h
    checked = 0
    for f in _signatures():
        if not f.params or f.params[0].cat != "handle":
            continue
        kind = _KIND_OF_CTYPE[_kinds_of(f)[0]]
        if mode == "null":
            bad = 0
        elif mode == "destroyed":
            bad = dead.get(kind, dead[capi.MAT] if kind != capi.MAT else dead[capi.NET])
            if kind not in dead:
                bad = 10**9  # a number never handed out
        else:
            bad = live[capi.PARAMDICT] if kind != capi.PARAMDICT else live[capi.MAT]
        args = []
        for i, p in enumerate(f.params):
            if i == 0:
                args.append(bad)
            elif p.cat == "handle":
                args.append(0)
            elif p.cat == "str":
                args.append("x")
            elif p.cat == "fnptr":
                args.append(lambda *a: 0)
            elif p.cat in ("out_handle",):
                continue
            elif p.cat == "handle_array":
                args.append([])
            else:
                args.append(0)
        caplog.clear()
        with caplog.at_level(logging.ERROR, logger="ncnn_c"):
            ret = capi.EXPORTS[f.name](*args)
        want = capi.ERROR_RETURN[capi.EXPORTS[f.name].c_return]
        if isinstance(ret, tuple):
            ret = ret[0]
        # destroy functions on NULL: ncnn does nothing; we log too
        assert ret == want, (f.name, ret)
        assert caplog.records, f"{f.name}: no log line"
        checked += 1
    assert checked >= 149  # every function whose first argument is a handle
    for kind, h in live.items():
        getattr(capi, f"ncnn_{kind}_destroy")(h)


def test_ints_are_never_file_names(tmp_path, caplog, monkeypatch):
    monkeypatch.chdir(tmp_path)
    net = capi.ncnn_net_create()
    with caplog.at_level(logging.ERROR, logger="ncnn_c"):
        assert capi.ncnn_net_load_param(net, 3) == -1
        assert capi.ncnn_net_load_model(net, 3) == -1
        assert capi.ncnn_layer_create_by_type(5) == 0
        assert capi.ncnn_layer_type_to_index(5) == -1
    assert len(caplog.records) == 4
    assert list(tmp_path.iterdir()) == []
    capi.ncnn_net_destroy(net)


@pytest.mark.gpu
def test_pipelinecache_save_int_path_writes_nothing(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    pc = capi.ncnn_pipelinecache_create(0)
    assert pc
    assert capi.ncnn_pipelinecache_save(pc, 3) == -1
    assert not (tmp_path / "3").exists()
    capi.ncnn_pipelinecache_destroy(pc)


def test_handles_alive_at_exit_leave_quietly():
    code = (
        "import ncnn_c.capi as c\n"
        "n = c.ncnn_net_create(); c.ncnn_net_load_param_memory(n, '7767517\\n1 1\\nInput in 0 1 data\\n')\n"
        "m = c.ncnn_mat_create_3d(2, 2, 2, 0); l = c.ncnn_layer_create_by_type('ReLU')\n"
        "d = c.ncnn_datareader_create(); p = c.ncnn_paramdict_create(); e = c.ncnn_extractor_create(n)\n"
    )
    r = subprocess.run([sys.executable, "-c", code], env=_env(), capture_output=True, text=True, timeout=120)
    assert r.returncode == 0
    assert r.stderr == ""


# ------------------------------------------------------------------ the new sections from Python


def test_python_paramdict_layer_and_modelbin_roundtrip():
    import numpy as np

    from ncnn_c.capi._core import HANDLES

    pd = capi.ncnn_paramdict_create()
    capi.ncnn_paramdict_set_int(pd, 0, 1)  # BinaryOp sub
    op = capi.ncnn_layer_create_by_type("BinaryOp")
    assert capi.ncnn_layer_get_type(op) == "BinaryOp"
    assert capi.ncnn_layer_get_one_blob_only(op) == 0
    obj = HANDLES.get(op, capi.LAYER)
    assert obj.load_param(HANDLES.get(pd, capi.PARAMDICT)) == 0
    a = capi.ncnn_mat_create_1d(3, 0)
    b = capi.ncnn_mat_create_1d(3, 0)
    capi.ncnn_mat_fill_float(a, 5.0)
    capi.ncnn_mat_fill_float(b, 2.0)
    ret, tops = capi.layer.default_call(op, "forward_n", [a, b], 1, 0)
    assert ret == 0
    out = HANDLES.get(tops[0], capi.MAT)
    np.testing.assert_array_equal(out.tensor(), [3, 3, 3])
    w = capi.ncnn_mat_create_1d(2, 0)
    mb = capi.ncnn_modelbin_create_from_mat_array([w], 1)
    assert mb
    assert capi.ncnn_modelbin_create_from_mat_array([w], 2) == 0  # fewer Mats than announced
    dr = capi.ncnn_datareader_create_from_memory(np.arange(4, dtype=np.float32).tobytes())
    mb2 = capi.ncnn_modelbin_create_from_datareader(dr)
    np.testing.assert_array_equal(HANDLES.get(mb2, capi.MODELBIN).load(4, 1).tensor(), [0, 1, 2, 3])
    for h in (tops[0], a, b, w):
        capi.ncnn_mat_destroy(h)
    capi.ncnn_modelbin_destroy(mb)
    capi.ncnn_modelbin_destroy(mb2)
    capi.ncnn_datareader_destroy(dr)
    capi.ncnn_layer_destroy(op)
    capi.ncnn_paramdict_destroy(pd)


def test_python_blob_queries_and_layer_shapes():
    from ncnn_c.capi.blob import blob_handle

    net = capi.ncnn_net_create()
    assert capi.ncnn_net_load_param_memory(net, "7767517\n2 2\nInput in 0 1 data\nReLU r 1 1 data out\n") == 0
    b0, b1 = blob_handle(net, 0), blob_handle(net, 1)
    assert blob_handle(net, 2) == 0
    assert capi.ncnn_blob_get_name(b0) == "data" and capi.ncnn_blob_get_name(b1) == "out"
    assert capi.ncnn_blob_get_producer(b1) == 1 and capi.ncnn_blob_get_consumer(b0) == 1
    assert capi.ncnn_blob_get_shape(b0) == (0, 0, 0, 0)
    capi.ncnn_net_destroy(net)
    assert capi.ncnn_blob_get_producer(b0) == -1  # borrowed: died with its net


def test_python_drawing_and_matops_handles():
    import numpy as np

    img = np.zeros((4, 6, 3), np.uint8)
    capi.ncnn_draw_rectangle_c3(img, 6, 4, 0, 0, 2, 2, 0x0000FF, -1)
    assert (img[:2, :2] == [255, 0, 0]).all() and (img[2:] == 0).all()
    capi.ncnn_draw_text_c3(img, 6, 4, "hi", 0, 0, 2, 0xFFFFFF)
    m = capi.ncnn_mat_create_3d(2, 2, 4, 0)
    ret, packed = capi.ncnn_convert_packing(m, 4, 0)
    assert capi.ncnn_mat_get_elempack(packed) == 4
    ret, flat = capi.ncnn_flatten(m, 0)
    assert capi.ncnn_mat_get_w(flat) == 16
    dst = capi.ncnn_mat_create()
    capi.ncnn_copy_make_border(m, dst, 1, 1, 1, 1, 0, 0.0, 0)
    assert capi.ncnn_mat_get_w(dst) == 4
    for h in (m, packed, flat, dst):
        capi.ncnn_mat_destroy(h)
