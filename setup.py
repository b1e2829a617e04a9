"""Build hooks for the wheel: the native extensions and the C library's build kit.

Everything declarative lives in pyproject.toml; this file only adds what a table cannot say:

* the three cffi extensions (``ncnn_c._native._shaderc``, ``_hash``, ``_cpu``) are compiled by
  ``build_ext`` from the same builder modules that ``make native`` runs, so an installed wheel
  never compiles anything at import time, and the wheel gets a platform tag;
* ``build_py`` copies the C API kit (``capi/include``, ``capi/build.py``, ``capi/bridge.py``)
  into ``ncnn_c/_capi_data/``, so ``python -m ncnn_c.capi --build`` works from site-packages.

The builders are loaded from their files without importing the ``ncnn_c`` package (its
``__init__`` needs numpy, which the isolated build environment does not have).
"""

from __future__ import annotations

import importlib
import os
import shutil
import sys
import types

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = os.path.dirname(os.path.abspath(__file__))
NATIVE = os.path.join(HERE, "ncnn_c", "_native")
CAPI_FILES = ("build.py", "bridge.py")
CAPI_DATA = "_capi_data"


def _builders() -> list[types.ModuleType]:
    """Every ``ncnn_c/_native/build_*.py``, imported as a member of a stand-in package."""
    pkg_name = "_ncnn_c_native_builders"
    if pkg_name not in sys.modules:
        pkg = types.ModuleType(pkg_name)
        pkg.__path__ = [NATIVE]
        sys.modules[pkg_name] = pkg
    names = sorted(f[:-3] for f in os.listdir(NATIVE) if f.startswith("build_") and f.endswith(".py"))
    return [importlib.import_module(f"{pkg_name}.{name}") for name in names]


def _ffi_of(builder: types.ModuleType):
    """The builder's cffi FFI, configured exactly as ``python -m ncnn_c._native.build_<x>`` does."""
    if not hasattr(builder, "_archives"):
        return builder._ffibuilder()
    try:  # linked against static system libraries: find them first
        return builder._ffibuilder(builder._archives())
    except builder.BuildError as e:  # say what to install rather than ship a wheel without it
        raise SystemExit(f"ncnn_c: cannot build {builder.MODULE}: {e}") from None


# relative to setup.py (setuptools refuses absolute source paths); build/ is the usual scratch
_GEN_DIR = os.path.join("build", "cffi_src")


def _extensions():
    # cffi writes each extension's C source into _GEN_DIR and returns a setuptools Extension
    # carrying the builder's compile and link flags; an OPTIONAL builder whose dependencies
    # are missing (oneDNN's headers on aarch64) is left out with a warning
    os.chdir(HERE)
    exts = []
    for b in _builders():
        try:
            exts.append(_ffi_of(b).distutils_extension(tmpdir=_GEN_DIR))
        except b.BuildError as e:
            if not getattr(b, "OPTIONAL", False):
                raise SystemExit(f"ncnn_c: cannot build {b.MODULE}: {e}") from None
            print(f"ncnn_c: building without {b.MODULE}: {e}", file=sys.stderr)
    return exts


class BuildPy(build_py):
    def run(self) -> None:
        super().run()
        dst = os.path.join(self.build_lib, "ncnn_c", CAPI_DATA)
        src = os.path.join(HERE, "capi")
        if not os.path.isdir(os.path.join(src, "include")):  # MANIFEST.in puts capi/ in the sdist
            raise SystemExit("ncnn_c: capi/include is missing: the wheel would lack the C API kit")
        if os.path.isdir(dst):
            shutil.rmtree(dst)
        shutil.copytree(os.path.join(src, "include"), os.path.join(dst, "include"))
        for name in CAPI_FILES:
            shutil.copy2(os.path.join(src, name), os.path.join(dst, name))


setup(ext_modules=_extensions(), cmdclass={"build_py": BuildPy})
