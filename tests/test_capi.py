"""The C library (capi/) and the Python handle API (ncnn_c.capi).

The library is built once per session into a temporary directory, C programs are compiled
with the flags ``python -m ncnn_c.capi --cflags/--libs`` prints when run from elsewhere,
and run as subprocesses so a crash shows up as a failed test, not a dead pytest.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from ncnn_c import capi

pytestmark = pytest.mark.capi

ROOT = Path(__file__).resolve().parent.parent
MODELS = Path(os.environ.get("NCNN_C_MODELS", str(ROOT / "models")))
PARAM = MODELS / "squeezenet_v1.1.param"
BIN = MODELS / "squeezenet_v1.1.bin"
HEADER = ROOT / "capi" / "include" / "ncnn" / "c_api.h"
# ncnn_c's own functions (not ncnn's), declared apart so that c_api.h stays exactly ncnn's
EXT_HEADER = ROOT / "capi" / "include" / "ncnn" / "c_api_ext.h"


def _env(**extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env.update(extra)
    return env


def _capi_cli(*args: str, cwd: Path) -> str:
    r = subprocess.run(
        [sys.executable, "-m", "ncnn_c.capi", *args],
        cwd=cwd,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert r.returncode == 0, r.stderr
    return r.stdout.strip()


def _build_api():
    import importlib.util

    spec = importlib.util.spec_from_file_location("_capi_build_for_tests", ROOT / "capi" / "build.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="session")
def capi_build(tmp_path_factory):
    """(build_dir, cflags, libs, elsewhere): the library built once, flags asked from another cwd."""
    assert shutil.which("gcc"), "gcc not found"
    build_dir = tmp_path_factory.mktemp("capi_build")
    elsewhere = tmp_path_factory.mktemp("capi_elsewhere")
    out = _capi_cli("--build", "--build-dir", str(build_dir), cwd=elsewhere)
    assert Path(out.splitlines()[-1]) == build_dir / "libncnn_c.so"
    cflags = _capi_cli("--cflags", cwd=elsewhere).split()
    libs = _capi_cli("--libs", "--build-dir", str(build_dir), cwd=elsewhere).split()
    return build_dir, cflags, libs, elsewhere


def _compile(capi_build, source: Path, name: str) -> Path:
    build_dir, cflags, libs, elsewhere = capi_build
    exe = elsewhere / name
    r = subprocess.run(
        [
            "gcc",
            "-std=c99",
            "-Wall",
            "-Werror=implicit-function-declaration",
            "-o",
            str(exe),
            str(source),
            *cflags,
            *libs,
            "-pthread",
        ],
        cwd=elsewhere,
        capture_output=True,
        text=True,
    )
    assert r.returncode == 0, r.stderr
    return exe


def _run(exe: Path, *args: str, env: dict[str, str] | None = None, timeout: int = 600):
    # A plain environment: the library must find its Python modules by itself.
    base = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    base.update(env or {})
    return subprocess.run(
        [str(exe), *args], cwd=exe.parent, env=base, capture_output=True, text=True, timeout=timeout
    )


# ------------------------------------------------------------------ header and build


def test_header_and_python_exports_agree():
    b = _build_api()
    types, funcs = b.parse_header(HEADER.read_text())
    funcs += b.parse_header(EXT_HEADER.read_text())[1]
    assert b.check_against_capi(funcs) == []
    assert len(funcs) == len(capi.EXPORTS)
    assert "struct __ncnn_net_t" in types and "fast_malloc" in types


# sha256 of our header's sorted NCNN_EXPORT lines, taken when each of them was found verbatim in
# ncnn's c_api.h. ncnn's header is not ours to ship, so where it is absent (CI) the digest keeps
# the declarations from drifting; change it only after the comparison below passes again.
CHECKED_DECLARATIONS = (210, "ccf4ab4f03751d5a3f938140627a4acece01d54bdd6ce4a11e51c5bb7a0cf9b6")


def test_header_declarations_match_ncnn():
    """Each declaration we keep is character-for-character one of ncnn's (modulo #if blocks)."""
    ours = sorted(
        line.strip() for line in HEADER.read_text().splitlines() if line.strip().startswith("NCNN_EXPORT")
    )
    digest = hashlib.sha256("\n".join(ours).encode()).hexdigest()
    ref = Path(
        os.environ.get("NCNN_C_REFERENCE_HEADER", str(ROOT.parent / "shared" / "reference" / "ncnn_c_api.h"))
    )
    if not ref.exists():
        ref = ROOT / "capi" / "tests" / "ncnn_upstream" / "ncnn_c_api.h"  # the shipped copy
    if ref.exists():
        ncnn_lines = {
            line.strip() for line in ref.read_text().splitlines() if line.strip().startswith("NCNN_EXPORT")
        }
        assert ours and [line for line in ours if line not in ncnn_lines] == []
    assert (len(ours), digest) == CHECKED_DECLARATIONS


@pytest.mark.parametrize("include", ["c_api.h", "ncnn/c_api.h"])
def test_header_compiles_alone(tmp_path, include):
    inc = ROOT / "capi" / "include"
    src = tmp_path / "t.c"
    src.write_text(f'#include "{include}"\nint main(void) {{ return ncnn_version_number() < 0; }}\n')
    r = subprocess.run(
        ["gcc", "-std=c99", "-Wall", "-Werror", "-fsyntax-only", f"-I{inc}", f"-I{inc / 'ncnn'}", str(src)],
        capture_output=True,
        text=True,
    )
    assert r.returncode == 0, r.stderr
    if shutil.which("g++"):
        r = subprocess.run(
            [
                "g++",
                "-x",
                "c++",
                "-Wall",
                "-Werror",
                "-fsyntax-only",
                f"-I{inc}",
                f"-I{inc / 'ncnn'}",
                str(src),
            ],
            capture_output=True,
            text=True,
        )
        assert r.returncode == 0, r.stderr


def test_missing_function_fails_at_compile_time(tmp_path):
    inc = ROOT / "capi" / "include"
    src = tmp_path / "t.c"
    # the Windows-only wide-path loaders are the only ncnn functions we do not declare
    src.write_text('#include "ncnn/c_api.h"\nint main(void) { return ncnn_net_load_param_w(0, 0) != 0; }\n')
    r = subprocess.run(
        ["gcc", "-std=c99", "-Werror=implicit-function-declaration", "-fsyntax-only", f"-I{inc}", str(src)],
        capture_output=True,
        text=True,
    )
    assert r.returncode != 0 and "ncnn_net_load_param_w" in r.stderr


def test_flags_are_absolute_from_anywhere(capi_build):
    build_dir, cflags, libs, _ = capi_build
    assert cflags == [f"-I{ROOT / 'capi' / 'include'}", f"-I{ROOT / 'capi' / 'include' / 'ncnn'}"]
    assert libs == [f"-L{build_dir}", "-lncnn_c", f"-Wl,-rpath,{build_dir}"]
    assert (build_dir / "ncnn_c.pc").exists()


def test_library_exports_exactly_the_header(capi_build):
    assert shutil.which("nm"), "nm (binutils) not found"
    build_dir = capi_build[0]
    r = subprocess.run(
        ["nm", "-D", "--defined-only", str(build_dir / "libncnn_c.so")],
        capture_output=True,
        text=True,
        check=True,
    )
    exported = {line.split()[-1] for line in r.stdout.splitlines() if " T " in line}
    names = set(re.findall(r"NCNN_EXPORT [^;(]*?\b(ncnn_\w+)\(", HEADER.read_text() + EXT_HEADER.read_text()))
    assert {n for n in exported if n.startswith("ncnn_")} == names
    assert exported - names <= {"PyInit__ncnn_c_embed"}


# ------------------------------------------------------------------ C programs


def test_c_test_program(capi_build):
    exe = _compile(capi_build, ROOT / "capi" / "tests" / "test_capi.c", "test_capi")
    r = _run(exe, str(MODELS))
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-4000:]
    assert "FAIL" not in r.stdout
    assert re.search(r"^\d+ passed, 0 failed$", r.stdout, re.M)


def test_guard_when_ncnn_c_cannot_be_imported(capi_build, tmp_path):
    """A broken ncnn_c shadows the real one: every export must return its error value."""
    exe = _compile(capi_build, ROOT / "capi" / "tests" / "test_capi.c", "test_capi")
    broken = tmp_path / "broken"
    (broken / "ncnn_c").mkdir(parents=True)
    (broken / "ncnn_c" / "__init__.py").write_text("raise ImportError('broken on purpose')\n")
    r = _run(exe, "--expect-dead", env={"NCNN_C_PYTHONPATH": str(broken)})
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-4000:]
    assert "FAIL" not in r.stdout and re.search(r"^\d+ passed, 0 failed$", r.stdout, re.M)
    assert "broken on purpose" in r.stderr
    assert "library unusable" in r.stderr


def test_guard_when_python_cannot_start(capi_build):
    exe = _compile(capi_build, ROOT / "capi" / "tests" / "test_capi.c", "test_capi")
    r = _run(exe, "--expect-dead", env={"PYTHONHOME": "/nonexistent"})
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-4000:]
    assert "cannot start the embedded Python" in r.stderr


def _test_image(path: Path) -> np.ndarray:
    """A real photo-like image when PIL can decode the shared PNG, else a synthetic one (HWC RGB)."""
    try:
        from PIL import Image

        img = np.asarray(Image.open(MODELS / "256-ncnn.png").convert("RGB"))
    except Exception:
        y, x = np.mgrid[0:240, 0:320]
        img = np.stack([x * 255 // 320, y * 255 // 240, (x + y) % 256], -1).astype(np.uint8)
    h, w = img.shape[:2]
    path.write_bytes(b"P6\n%d %d\n255\n" % (w, h) + np.ascontiguousarray(img).tobytes())
    return img


def _python_top1(img_rgb: np.ndarray) -> int:
    import ncnn_c as ncnn

    bgr = np.ascontiguousarray(img_rgb[:, :, ::-1])
    h, w = bgr.shape[:2]
    net = ncnn.Net()
    net.opt.use_vulkan_compute = False
    assert net.load_param(str(PARAM)) == 0 and net.load_model(str(BIN)) == 0
    m = ncnn.Mat.from_pixels_resize(bgr, ncnn.Mat.PixelType.PIXEL_BGR, w, h, 227, 227)
    m.substract_mean_normalize([104.0, 117.0, 123.0], [])
    ex = net.create_extractor()
    ex.input("data", m)
    ret, out = ex.extract("prob")
    assert ret == 0
    return int(np.argmax(np.array(out).reshape(-1)))


def _top5(stdout: str) -> list[int]:
    # "532 = 0.163520", then the class name when a synset_words.txt lies next to the .param
    return [int(m.group(1)) for m in re.finditer(r"^(\d+) = [-\d.e]+(?:  .+)?$", stdout, re.M)]


def test_example_cpu_matches_python_api(capi_build, tmp_path):
    exe = _compile(capi_build, ROOT / "examples" / "c" / "squeezenet.c", "squeezenet")
    img = _test_image(tmp_path / "img.ppm")
    r = _run(exe, str(PARAM), str(BIN), str(tmp_path / "img.ppm"), "cpu")
    assert r.returncode == 0, r.stderr
    top = _top5(r.stdout)
    assert len(top) == 5
    assert top[0] == _python_top1(img)


def _gpu_count() -> int:
    try:
        from ncnn_c.gpu.device import get_gpu_count

        return get_gpu_count()
    except Exception:
        return 0


@pytest.mark.gpu
def test_example_vulkan_with_pipeline_cache(capi_build, tmp_path):
    assert _gpu_count() > 0, "no Vulkan device (lavapipe is installed by ./run.sh)"
    exe = _compile(capi_build, ROOT / "examples" / "c" / "squeezenet.c", "squeezenet")
    img = _test_image(tmp_path / "img.ppm")
    cache = tmp_path / "squeezenet.vkcache"
    args = (str(PARAM), str(BIN), str(tmp_path / "img.ppm"), "vulkan", str(cache))
    first = _run(exe, *args)
    assert first.returncode == 0, first.stderr
    assert "pipeline cache: miss" in first.stdout and cache.exists()
    second = _run(exe, *args)
    assert second.returncode == 0, second.stderr
    assert "pipeline cache: loaded" in second.stdout
    assert _top5(first.stdout)[0] == _top5(second.stdout)[0] == _python_top1(img)


# ------------------------------------------------------------------ Python handle API


def test_null_unknown_wrong_kind_and_destroyed_handles(caplog):
    opt = capi.ncnn_option_create()
    mat = capi.ncnn_mat_create_1d(4, 0)
    assert opt and mat
    with caplog.at_level("ERROR", logger="ncnn_c"):
        assert capi.ncnn_option_get_num_threads(0) == -1
        assert capi.ncnn_option_get_num_threads(10**9) == -1
        assert capi.ncnn_option_get_num_threads(mat) == -1
        assert capi.ncnn_option_get_num_threads("nope") == -1
        assert capi.ncnn_mat_get_cstep(opt) == 0
        assert capi.ncnn_mat_get_data(0) == 0
        assert capi.ncnn_net_get_input_name(0, 0) is None
        assert capi.ncnn_mat_clone(opt, 0) == 0
        assert capi.ncnn_option_set_use_vulkan_compute(mat, 1) is None
        capi.ncnn_mat_destroy(mat)
        assert capi.ncnn_mat_get_w(mat) == -1
        capi.ncnn_mat_destroy(mat)  # twice: logged, harmless
        assert capi.ncnn_mat_get_w(capi.FOREIGN) == -1
    messages = [r.getMessage() for r in caplog.records]
    assert any("NULL option" in m for m in messages)
    assert any("is a mat, not a option" in m for m in messages)
    assert any("unknown or destroyed mat" in m for m in messages)
    capi.ncnn_option_destroy(opt)


def test_option_accessors_cover_every_flag():
    opt = capi.ncnn_option_create()
    for flag in capi.OPTION_FLAGS:
        get = getattr(capi, f"ncnn_option_get_{flag}")
        set_ = getattr(capi, f"ncnn_option_set_{flag}")
        set_(opt, 1)
        assert get(opt) == 1
        set_(opt, 0)
        assert get(opt) == 0
    capi.ncnn_option_set_num_threads(opt, 3)
    assert capi.ncnn_option_get_num_threads(opt) == 3
    alloc = capi.ncnn_allocator_create_pool_allocator()
    capi.ncnn_option_set_blob_allocator(opt, alloc)
    assert capi.HANDLES.get(opt, capi.OPTION).blob_allocator is capi.HANDLES.get(alloc, capi.ALLOCATOR)
    capi.ncnn_option_set_blob_allocator(opt, 0)
    assert capi.HANDLES.get(opt, capi.OPTION).blob_allocator is None
    capi.ncnn_allocator_destroy(alloc)
    capi.ncnn_option_destroy(opt)


def test_net_option_is_borrowed_and_shared():
    net = capi.ncnn_net_create()
    opt = capi.ncnn_net_get_option(net)
    assert opt and capi.ncnn_net_get_option(net) == opt
    capi.ncnn_option_set_use_vulkan_compute(opt, 1)
    assert capi.HANDLES.get(net, capi.NET).opt.use_vulkan_compute is True
    mine = capi.ncnn_option_create()
    capi.ncnn_option_set_num_threads(mine, 7)
    capi.ncnn_net_set_option(net, mine)
    assert capi.ncnn_option_get_num_threads(opt) == 7
    capi.ncnn_option_destroy(opt)  # refused: the net owns it
    assert capi.ncnn_option_get_num_threads(opt) == 7
    capi.ncnn_net_destroy(net)
    assert capi.ncnn_option_get_num_threads(opt) == -1
    assert capi.ncnn_option_get_num_threads(mine) == 7
    capi.ncnn_option_destroy(mine)


def test_mat_handles_and_memory():
    buf = (ctypes.c_float * 24)(*range(24))
    m = capi.ncnn_mat_create_external_3d(4, 3, 2, ctypes.addressof(buf), 0)
    assert capi.ncnn_mat_get_data(m) == ctypes.addressof(buf)
    assert capi.ncnn_mat_get_cstep(m) == 12
    assert capi.ncnn_mat_get_channel_data(m, 1) == ctypes.addressof(buf) + 48
    capi.ncnn_mat_substract_mean_normalize(m, [1.0, 2.0], [2.0, 2.0])
    assert buf[0] == -2.0 and buf[12] == 20.0
    r = capi.ncnn_mat_reshape_1d(m, 24, 0)
    assert capi.ncnn_mat_get_dims(r) == 1 and capi.ncnn_mat_get_w(r) == 24
    px = bytes(range(2 * 2 * 3))
    p = capi.ncnn_mat_from_pixels(px, 1, 2, 2, 6, 0)
    assert capi.ncnn_mat_get_c(p) == 3
    out = bytearray(12)
    capi.ncnn_mat_to_pixels(p, np.frombuffer(out, dtype=np.uint8), 1, 6)
    assert bytes(out) == px
    for h in (m, r, p):
        capi.ncnn_mat_destroy(h)


def test_net_memory_loaders_and_extract():
    net = capi.ncnn_net_create()
    capi.ncnn_option_set_use_vulkan_compute(capi.ncnn_net_get_option(net), 0)
    assert capi.ncnn_net_load_param_memory(net, PARAM.read_text()) == 0
    weights = BIN.read_bytes()
    assert capi.ncnn_net_load_model_memory(net, weights) == len(weights)
    cbuf = ctypes.create_string_buffer(weights, len(weights))
    assert capi.ncnn_net_load_model_memory(net, ctypes.addressof(cbuf)) == len(weights)
    pbin = MODELS / "squeezenet_v1.1.param.bin"
    if pbin.exists():
        net2 = capi.ncnn_net_create()
        data = pbin.read_bytes()
        assert capi.ncnn_net_load_param_bin_memory(net2, data) == len(data)
        assert capi.ncnn_net_load_param_bin_memory(net2, b"\x00" * 8) == 0
        capi.ncnn_net_destroy(net2)
    assert capi.ncnn_net_get_input_name(net, 0) == "data"
    assert capi.ncnn_net_get_output_name(net, 0) == "prob"
    ex = capi.ncnn_extractor_create(net)
    m = capi.ncnn_mat_create_3d(227, 227, 3, 0)
    capi.ncnn_mat_fill_float(m, 0.0)
    assert capi.ncnn_extractor_input(ex, "data", m) == 0
    ret, out = capi.ncnn_extractor_extract(ex, "prob")
    assert ret == 0 and capi.HANDLES.kind_of(out) == capi.MAT and capi.ncnn_mat_get_w(out) == 1000
    ret, none = capi.ncnn_extractor_extract(ex, "no_such_blob")
    assert ret != 0 and none == 0
    for h in (out, m):
        capi.ncnn_mat_destroy(h)
    capi.ncnn_extractor_destroy(ex)
    capi.ncnn_net_destroy(net)


@pytest.mark.gpu
def test_pipelinecache_save_memory_forms():
    assert _gpu_count() > 0, "no Vulkan device (lavapipe is installed by ./run.sh)"
    pc = capi.ncnn_pipelinecache_create(0)
    assert pc
    data = capi.ncnn_pipelinecache_save_memory(pc)  # Python form: bytes
    assert isinstance(data, bytes) and data
    size = ctypes.c_size_t(0)
    assert capi.ncnn_pipelinecache_save_memory(pc, 0, ctypes.addressof(size)) == 0
    assert size.value == len(data)
    small = ctypes.c_size_t(len(data) - 1)
    buf = ctypes.create_string_buffer(len(data))
    assert capi.ncnn_pipelinecache_save_memory(pc, ctypes.addressof(buf), ctypes.addressof(small)) != 0
    assert small.value == len(data)
    assert capi.ncnn_pipelinecache_save_memory(pc, ctypes.addressof(buf), ctypes.addressof(small)) == 0
    assert buf.raw == data
    assert capi.ncnn_pipelinecache_load_memory(pc, data) == 0
    assert capi.ncnn_pipelinecache_load_memory(pc, ctypes.addressof(buf), len(data)) == 0
    assert capi.ncnn_pipelinecache_get_size(pc) == 0
    capi.ncnn_pipelinecache_destroy(pc)
    assert capi.ncnn_pipelinecache_save_memory(pc) is None


def test_handle_table_threads():
    import threading

    table = capi.HandleTable()
    released = []
    table.on_release(released.append)
    out: list[int] = []

    def work():
        for _ in range(200):
            h = table.add(capi.MAT, object())
            out.append(h)
            table.release(h)

    ts = [threading.Thread(target=work) for _ in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert len(set(out)) == 800 and len(table) == 0 and sorted(released) == sorted(out)


@pytest.mark.parametrize("bogus", [3, 4095, -8, 1 << 70])
def test_small_or_impossible_ints_are_not_read_as_memory(bogus, caplog):
    net = capi.ncnn_net_create()
    try:
        assert capi.ncnn_net_load_param_memory(net, bogus) == -1
        assert capi.ncnn_net_load_model_memory(net, bogus) == 0
        assert capi.ncnn_net_load_param_bin_memory(net, bogus) == 0
        assert capi.ncnn_mat_create_external_1d(4, bogus, 0) == 0
        assert capi.ncnn_mat_from_pixels(bogus, 1, 2, 2, 6, 0) == 0
        assert "not a memory address" in caplog.text
    finally:
        capi.ncnn_net_destroy(net)


def test_a_bad_handle_is_reported_before_memory_is_touched(caplog):
    assert capi.ncnn_net_load_param_memory(12345, 3) == -1
    assert "handle" in caplog.text
