"""Architecture invariants: the native boundary stays where docs/design.md puts it."""

from __future__ import annotations

import ast
import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[1] / "ncnn_c"


def _imports(path: pathlib.Path) -> set[str]:
    tree = ast.parse(path.read_text(), str(path))
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module.split(".")[0])
    return names


def _py_files():
    return sorted(p for p in ROOT.rglob("*.py") if "__pycache__" not in p.parts)


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


def test_core_never_imports_the_oracle():
    offenders = [str(p.relative_to(ROOT)) for p in _py_files() if "ncnn" in _imports(p)]
    assert offenders == []


def test_cpu_modules_do_not_import_the_gpu_package():
    cpu = [
        ROOT / "mat.py",
        ROOT / "option.py",
        ROOT / "allocator.py",
        ROOT / "paramdict.py",
        ROOT / "modelbin.py",
        ROOT / "datareader.py",
    ]
    cpu += [p for p in (ROOT / "layer").glob("*.py")]
    offenders = []
    for p in cpu:
        if not p.exists():
            continue
        src = p.read_text()
        tree = ast.parse(src)
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module and ("gpu" in node.module.split(".")):
                # a lazy import inside a function is how CPU code reaches the GPU on demand
                offenders.append(str(p.relative_to(ROOT))) if node.col_offset == 0 else None
    assert offenders == []
