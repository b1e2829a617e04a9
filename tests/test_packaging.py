"""Packaging: the wheel, a fresh virtual environment, and the C library installed under a prefix.

* ``capi --build --prefix DIR`` lays out a C library (lib/, include/ncnn/, pkg-config, CMake);
  programs build against it with ``pkg-config`` and with ``find_package(ncnn_c)``.
* The wheel (``pip wheel .``, slow) carries the native extensions, the C API kit and
  ``py.typed`` and is platform-tagged; installed into a clean venv (its dependencies from the
  package index), it runs inference on the CPU and on Vulkan, the console script works, and
  the C library builds from the installed package and runs ncnn's C example, all without
  compiling anything into site-packages.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from conftest import MODELS, ROOT

pytestmark = pytest.mark.capi

EXAMPLES_C = ROOT / "examples" / "c"


def _run(cmd, timeout=600, env=None, cwd=None, check=True) -> subprocess.CompletedProcess:
    r = subprocess.run(
        [str(c) for c in cmd], capture_output=True, text=True, timeout=timeout, env=env, cwd=cwd
    )
    if check:
        assert r.returncode == 0, f"{cmd}\n{r.stdout[-4000:]}\n{r.stderr[-4000:]}"
    return r


def _env(tmp: Path, **extra) -> dict[str, str]:
    env = dict(os.environ)
    env["NCNN_C_CACHE_DIR"] = str(tmp / "user-cache")  # never the user's cache, never the repo
    env.pop("PYTHONPATH", None)
    env.update(extra)
    return env


@pytest.fixture(scope="module")
def ppm(tmp_path_factory) -> Path:
    from PIL import Image

    path = tmp_path_factory.mktemp("img") / "256-ncnn.ppm"
    with Image.open(MODELS / "256-ncnn.png") as im:
        im.convert("RGB").save(path)
    return path


@pytest.fixture(scope="module")
def prefix(tmp_path_factory) -> Path:
    p = tmp_path_factory.mktemp("prefix")
    out = _run([sys.executable, "-m", "ncnn_c.capi", "--build", "--prefix", p], env=_env(p), cwd=p)
    assert Path(out.stdout.split()[-1]) == p / "lib" / "libncnn_c.so"
    return p


def test_prefix_layout(prefix):
    for rel in (
        "lib/libncnn_c.so",
        "include/ncnn/c_api.h",
        "include/ncnn/platform.h",
        "lib/pkgconfig/ncnn_c.pc",
        "lib/cmake/ncnn_c/ncnn_cConfig.cmake",
        "lib/cmake/ncnn_c/ncnn_cConfigVersion.cmake",
    ):
        assert (prefix / rel).is_file(), rel
    # the installed header is the package's header, byte for byte
    assert (prefix / "include/ncnn/c_api.h").read_bytes() == (ROOT / "capi/include/ncnn/c_api.h").read_bytes()
    flags = _run([sys.executable, "-m", "ncnn_c.capi", "--cflags", "--prefix", prefix]).stdout.split()
    assert flags == [f"-I{prefix}/include", f"-I{prefix}/include/ncnn"]
    libs = _run([sys.executable, "-m", "ncnn_c.capi", "--libs", "--prefix", prefix]).stdout.split()
    assert libs == [f"-L{prefix}/lib", "-lncnn_c", f"-Wl,-rpath,{prefix}/lib"]


def test_pkg_config_builds_and_runs_the_c_example(prefix, ppm, tmp_path):
    env = _env(tmp_path, PKG_CONFIG_PATH=str(prefix / "lib" / "pkgconfig"))
    flags = _run(["pkg-config", "--cflags", "--libs", "ncnn_c"], env=env).stdout.split()
    assert f"-I{prefix}/include" in flags and "-lncnn_c" in flags
    exe = tmp_path / "squeezenet"
    _run(["cc", "-O1", EXAMPLES_C / "squeezenet.c", *flags, "-o", exe], env=env)
    out = _run(
        [exe, MODELS / "squeezenet_v1.1.param", MODELS / "squeezenet_v1.1.bin", ppm, "cpu"],
        env=env,
        cwd=tmp_path,
    ).stdout
    assert re.match(r"532 = 0\.16", out), out


def test_cmake_find_package_builds_every_c_example(prefix, ppm, tmp_path):
    build = tmp_path / "build"
    env = _env(tmp_path)
    _run(["cmake", "-S", EXAMPLES_C, "-B", build, f"-DCMAKE_PREFIX_PATH={prefix}"], env=env)
    _run(["cmake", "--build", build], env=env)
    for exe in ("squeezenet", "custom_layer", "datareader", "cache_service"):
        assert (build / exe).is_file(), exe
    out = _run(
        [build / "datareader", MODELS / "squeezenet_v1.1.param", MODELS / "squeezenet_v1.1.bin", ppm],
        env=env,
        cwd=tmp_path,
    ).stdout
    assert "class 532" in out


def test_cmake_version_check_refuses_a_newer_request(prefix, tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    (src / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.14)\nproject(t C)\nfind_package(ncnn_c 99.0 REQUIRED)\n"
    )
    r = _run(["cmake", "-S", src, "-B", tmp_path / "b", f"-DCMAKE_PREFIX_PATH={prefix}"], check=False)
    assert r.returncode != 0 and "ncnn_c" in r.stderr


def test_capi_build_reports_an_unwritable_prefix(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    r = _run([sys.executable, "-m", "ncnn_c.capi", "--build", "--prefix", blocker / "sub"], check=False)
    assert r.returncode == 1 and "ncnn_c capi" in r.stderr


# ------------------------------------------------------------------ the wheel, in a fresh venv

# what a wheel build needs from the checkout; the rest (tests, models, .venv, build products)
# stays behind, so that the build cannot pick up anything it would not find in a clean clone
_IGNORE = shutil.ignore_patterns(
    ".venv", ".git", "build", "*.egg-info", "__pycache__", "*.so", "*.o", "models", "tests", "docs",
    "benchmarks", "examples", ".pytest_cache", "*.vkcache",
)  # fmt: skip


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    src = tmp_path_factory.mktemp("src") / "ncnn_c"
    shutil.copytree(ROOT, src, ignore=_IGNORE)
    out = tmp_path_factory.mktemp("wheelhouse")
    # build isolation: the build requirements come from the package index, as for any user
    _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", out, src], timeout=900)
    wheels = list(out.glob("ncnn_c-*.whl"))
    assert len(wheels) == 1, wheels
    # what `make wheel` ships: auditwheel checks every native extension's library needs against
    # the manylinux policies and retags the wheel (shaderc, glslang and SPIRV-Tools are linked in
    # statically; libstdc++, libm and libc are what the policy allows)
    repaired = tmp_path_factory.mktemp("manylinux")
    bindir = Path(sys.executable).parent
    env = dict(os.environ, PATH=f"{bindir}{os.pathsep}{os.environ.get('PATH', '')}")
    _run([bindir / "auditwheel", "repair", "-w", repaired, wheels[0]], env=env, timeout=600)
    fixed = list(repaired.glob("ncnn_c-*.whl"))
    assert len(fixed) == 1, fixed
    return fixed[0]


@pytest.mark.slow
def test_wheel_contents(wheel):
    assert not wheel.name.endswith("-none-any.whl"), wheel.name  # platform-tagged: it has native code
    assert re.search(r"-cp3\d+-cp3\d+-manylinux_2_\d+_(x86_64|aarch64)\.whl$", wheel.name), wheel.name
    names = set(zipfile.ZipFile(wheel).namelist())
    for module in ("_shaderc", "_hash", "_cpu", "_plan", "_winograd"):
        assert any(re.fullmatch(rf"ncnn_c/_native/{module}\.cpython-.*\.so", n) for n in names), module
    for n in (
        "ncnn_c/py.typed",
        "ncnn_c/_capi_data/include/ncnn/c_api.h",
        "ncnn_c/_capi_data/include/ncnn/platform.h",
        "ncnn_c/_capi_data/build.py",
        "ncnn_c/_capi_data/bridge.py",
        "ncnn_c/layer/vulkan/shader/convolution.comp",
        "ncnn_c/layer/vulkan/shader/vulkan_activation.h",
    ):
        assert n in names, n
    entry_points = (
        zipfile.ZipFile(wheel)
        .read(next(n for n in names if n.endswith(".dist-info/entry_points.txt")))
        .decode()
    )
    assert "ncnn_c = ncnn_c.__main__:main" in entry_points


@pytest.fixture(scope="module")
def venv(wheel, tmp_path_factory) -> Path:
    v = tmp_path_factory.mktemp("venv") / "v"
    _run([sys.executable, "-m", "venv", v])
    # dependencies from the index; Pillow for `ncnn_c run`'s images
    _run([v / "bin" / "python", "-m", "pip", "install", "-q", wheel, "pillow", "tqdm"], timeout=900)
    return v


def _site(venv: Path) -> Path:
    out = _run([venv / "bin" / "python", "-c", "import sysconfig; print(sysconfig.get_paths()['platlib'])"])
    return Path(out.stdout.strip())


def _tree(d: Path) -> set[str]:
    return {str(p.relative_to(d)) for p in d.rglob("*") if "__pycache__" not in p.parts}


@pytest.mark.slow
@pytest.mark.gpu
def test_installed_wheel_runs_cpu_vulkan_and_the_c_example(venv, ppm, tmp_path):
    py = venv / "bin" / "python"
    pkg = _site(venv) / "ncnn_c"
    before = _tree(pkg)
    # nothing is built at import (STYLE 11): a missing extension would show in `info`
    env = _env(tmp_path)
    work = tmp_path / "work"
    work.mkdir()

    info = json.loads(_run([venv / "bin" / "ncnn_c", "info", "--json"], env=env, cwd=work).stdout)
    for name, path in info["native"].items():
        assert path and Path(path).parent == pkg / "_native", (name, path)
    assert info["cache_dir"] == str(tmp_path / "user-cache")
    assert info["vulkan_devices"], "no Vulkan device in the fresh venv"

    model = [MODELS / "squeezenet_v1.1.param", MODELS / "squeezenet_v1.1.bin", MODELS / "256-ncnn.png"]
    cpu = _run([py, "-m", "ncnn_c", "run", *model], env=env, cwd=work).stdout
    assert re.search(r"class\s+532\s+dining table, board", cpu), cpu
    gpu = json.loads(
        _run([py, "-m", "ncnn_c", "run", *model, "--device", "vulkan", "--json"], env=env, cwd=work).stdout
    )
    assert gpu["outputs"][0]["top"][0]["class"] == 532
    assert gpu["cache"]["saved"] and gpu["cache"]["compiled"] > 0

    # the C library from the installed package: default location (the user cache) and a prefix
    lib = Path(_run([py, "-m", "ncnn_c.capi", "--build"], env=env, cwd=work).stdout.split()[-1])
    assert lib.is_file() and str(lib).startswith(str(tmp_path / "user-cache")), lib
    cflags = _run([py, "-m", "ncnn_c.capi", "--cflags"], env=env, cwd=work).stdout.split()
    assert cflags[0] == f"-I{pkg}/_capi_data/include"
    prefix = tmp_path / "prefix"
    _run([venv / "bin" / "ncnn_c", "capi", "--build", "--prefix", prefix], env=env, cwd=work)
    flags = _run(
        ["pkg-config", "--cflags", "--libs", "ncnn_c"],
        env=dict(env, PKG_CONFIG_PATH=str(prefix / "lib/pkgconfig")),
    ).stdout.split()
    exe = work / "squeezenet"
    _run(["cc", "-O1", EXAMPLES_C / "squeezenet.c", *flags, "-o", exe], env=env)
    args = [exe, MODELS / "squeezenet_v1.1.param", MODELS / "squeezenet_v1.1.bin", ppm]
    assert re.match(r"532 = 0\.16", _run([*args, "cpu"], env=env, cwd=work).stdout)
    out = _run([*args, "vulkan", work / "c.vkcache"], env=env, cwd=work).stdout
    assert "532 = 0.16" in out and (work / "c.vkcache").is_file()

    assert _tree(pkg) == before, "something was written into the installed package"
