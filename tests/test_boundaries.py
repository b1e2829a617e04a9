"""Architecture invariants: the native boundary stays where docs/design.md puts it.

The rules walk packages, not named files: a module split into a package (``mat/``, ``net/``,
``cache/``) or a new module in one is checked without editing this file."""

from __future__ import annotations

import ast
import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[1] / "ncnn_c"

# where ncnn_c's GPU side lives (relative to ROOT); everything else is CPU code, which reaches
# the GPU only on demand, through an import inside a function
GPU_SIDE = ("gpu", "layer/vulkan")
# the packages that must never reach ncnn_c.gpu at all, not even lazily: the cache is data and
# I/O that a tool without a device runs (docs/design.md, "Pipeline cache without Vulkan")
NO_GPU_AT_ALL = ("cache",)


def _py_files(under: pathlib.Path = ROOT):
    return sorted(p for p in under.rglob("*.py") if "__pycache__" not in p.parts)


def _within(p: pathlib.Path, folders) -> bool:
    rel = p.relative_to(ROOT).as_posix()
    return any(rel.startswith(f.rstrip("/") + "/") for f in folders)


def _module_of(p: pathlib.Path) -> list[str]:
    """The dotted package a module's relative imports start from (its own, for __init__.py)."""
    parts = p.with_suffix("").parts
    return list(parts[len(parts) - 1 - parts[::-1].index("ncnn_c") : -1])


def _imported_modules(path: pathlib.Path, top_level_only: bool = False) -> list[tuple[str, ast.stmt]]:
    """Every module an import statement names, resolved to its absolute dotted name (an
    ``from x import y`` names both x and x.y, since y may be a submodule)."""
    tree = ast.parse(path.read_text(), str(path))
    nodes = tree.body if top_level_only else list(ast.walk(tree))
    out = []
    for node in nodes:
        if isinstance(node, ast.Import):
            out += [(a.name, node) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                pkg = _module_of(path)
                base = pkg[: len(pkg) - (node.level - 1)] + ([node.module] if node.module else [])
                module = ".".join(base)
            else:
                module = node.module or ""
            out += [(module, node)] + [(f"{module}.{a.name}", node) for a in node.names]
    return out


def _imports(path: pathlib.Path) -> set[str]:
    """The top-level package names a module imports (absolute imports only)."""
    return {m.split(".")[0] for m, node in _imported_modules(path) if not getattr(node, "level", 0)}


def _is_gpu(module: str) -> bool:
    return module == "ncnn_c.gpu" or module.startswith("ncnn_c.gpu.")


def test_only_the_boundary_modules_import_vulkan():
    allowed = {p for p in _py_files() if p.parent.name == "gpu" and p.name.startswith("_vk")}
    offenders = [
        str(p.relative_to(ROOT)) for p in _py_files() if "vulkan" in _imports(p) and p not in allowed
    ]
    assert offenders == []


def test_cffi_stays_in_native_and_capi():
    def allowed(p: pathlib.Path) -> bool:
        rel = p.relative_to(ROOT)
        return (
            rel.parts[0] == "_native"
            or p.name == "capi.py"
            or (rel.parts[0] == "gpu" and p.name.startswith("_vk"))
        )

    offenders = [str(p.relative_to(ROOT)) for p in _py_files() if "cffi" in _imports(p) and not allowed(p)]
    assert offenders == []


# where a cffi module's ``ffi`` / ``lib`` and ctypes may be used: the native extensions'
# wrappers (oneDNN's door is _native/dnnl.py, the plan's C steps _native/csteps.py), the C
# library's handle layer, the raw Vulkan modules; and ctypes in datareader.py, whose
# DataReader.read gets a ctypes buffer as the PyPI binding's does
NATIVE_DOORS = ("_native", "capi")


def _native_door(p: pathlib.Path) -> bool:
    rel = p.relative_to(ROOT)
    return rel.parts[0] in NATIVE_DOORS or (rel.parts[0] == "gpu" and p.name.startswith("_vk"))


def _ffi_uses(p: pathlib.Path) -> list[int]:
    """Lines reading an attribute ``ffi`` or ``lib`` (numpy's ``np.lib`` is not a cffi lib)."""
    tree = ast.parse(p.read_text(), str(p))
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr in ("ffi", "lib"):
            owner = node.value
            if node.attr == "lib" and isinstance(owner, ast.Name) and owner.id in ("np", "numpy"):
                continue
            out.append(node.lineno)
    return out


def test_ffi_and_lib_stay_behind_the_native_doors():
    """The native plan's ops reach oneDNN through _native/dnnl.py and their C steps through
    _native/csteps.py, never through a cffi ``ffi`` or ``lib`` of their own."""
    offenders = {
        str(p.relative_to(ROOT)): lines
        for p in _py_files()
        if not _native_door(p) and (lines := _ffi_uses(p))
    }
    assert offenders == {}


def test_ctypes_stays_behind_the_native_doors():
    offenders = [
        str(p.relative_to(ROOT))
        for p in _py_files()
        if "ctypes" in _imports(p)
        and not _native_door(p)
        and p.relative_to(ROOT).as_posix() != "datareader.py"
    ]
    assert offenders == []


def test_the_ffi_rule_sees_a_use(tmp_path):
    bad = tmp_path / "m.py"
    bad.write_text(
        "import numpy as np\nx = mod.ffi.new('int *')\ny = np.lib.stride_tricks\nz = ext.lib.f()\n"
    )
    assert _ffi_uses(bad) == [2, 4]


def test_core_never_imports_the_oracle():
    offenders = [str(p.relative_to(ROOT)) for p in _py_files() if "ncnn" in _imports(p)]
    assert offenders == []


def test_cpu_modules_do_not_import_the_gpu_package():
    # every module outside the GPU side, packages walked (mat/, net/, cache/, layer/ ...): a
    # lazy import inside a function is how CPU code reaches the GPU on demand, a module-level
    # one would load the GPU stack with the CPU code
    cpu = [p for p in _py_files() if not _within(p, GPU_SIDE)]
    assert any(_within(p, ("net",)) for p in cpu) and any(_within(p, ("mat",)) for p in cpu)
    offenders = sorted(
        {
            str(p.relative_to(ROOT))
            for p in cpu
            for module, _node in _imported_modules(p, top_level_only=True)
            if _is_gpu(module)
        }
    )
    assert offenders == []


def test_the_net_reaches_the_gpu_through_one_module():
    # net/ reaches ncnn_c.gpu and layer/vulkan only through net/vulkan/api.py (the GpuApi
    # tests replace): no other module of the net, lazily or not, and so neither core.py
    door = ROOT / "net" / "vulkan" / "api.py"
    net_files = [p for p in _py_files(ROOT / "net") if p != door]
    assert any(p.name == "core.py" for p in net_files)
    offenders = sorted(
        {
            f"{p.relative_to(ROOT)}: {module}"
            for p in net_files
            for module, _node in _imported_modules(p)
            if _is_gpu(module) or module == "ncnn_c.layer.vulkan" or module.startswith("ncnn_c.layer.vulkan.")
        }
    )
    assert offenders == []
    assert any(_is_gpu(m) for m, _ in _imported_modules(door))


def test_cpu_only_packages_never_reach_the_gpu():
    offenders = sorted(
        {
            str(p.relative_to(ROOT))
            for folder in NO_GPU_AT_ALL
            for p in _py_files(ROOT / folder)
            for module, _node in _imported_modules(p)
            if _is_gpu(module)
        }
    )
    assert offenders == []


def test_the_walk_resolves_package_imports(tmp_path):
    # a module-level GPU import planted in a package module is found, relative or absolute
    mod = tmp_path / "ncnn_c" / "net" / "fake.py"
    mod.parent.mkdir(parents=True)
    mod.write_text(
        "from ..gpu import device\nfrom . import state\nimport ncnn_c.gpu.vkmat\n"
        "def f():\n    from ..gpu.command import VkCompute\n"
    )
    top = {m for m, _ in _imported_modules(mod, top_level_only=True)}
    assert {"ncnn_c.gpu", "ncnn_c.gpu.device", "ncnn_c.net.state", "ncnn_c.gpu.vkmat"} <= top
    assert "ncnn_c.gpu.command" not in top
    assert "ncnn_c.gpu.command" in {m for m, _ in _imported_modules(mod)}
    assert ROOT / "net" / "core.py" in _py_files() and ROOT / "mat" / "core.py" in _py_files()
