"""Builds ``ncnn_c/_native/_shaderc*.so``: a cffi API-mode extension over static shaderc.

Debian 12's ``libshaderc.so.1`` cannot be loaded (it references a SPIRV-Tools symbol
that the packaged shared library lacks), so the extension links ``libshaderc_combined.a``
together with the static glslang and SPIRV-Tools archives instead.

The C source is ``shaderc.c``, the declarations cffi checks are ``shaderc.cdef``, both beside
this file. The wheel builds the extension (``setup.py``), and so does ``make setup``; nothing
builds it at import or first use. Run ``python -m ncnn_c._native.build_shaderc`` (add
``--force`` to rebuild). Building is skipped when an extension built from the same C source
and link line already exists.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig

import cffi

from . import _build
from ._build import BuildError  # noqa: F401  (part of this module's interface)

MODULE = "_shaderc"
# Where the static archives are: $NCNN_C_SHADERC_LIBDIR, else what pkg-config says of
# shaderc_combined, else the platform's multiarch directory (x86_64-linux-gnu, aarch64-linux-gnu),
# /usr/lib64 or /usr/lib. The headers: $NCNN_C_SHADERC_INCLUDE, pkg-config, /usr/include.
LIBDIR_ENV, INCLUDE_ENV = "NCNN_C_SHADERC_LIBDIR", "NCNN_C_SHADERC_INCLUDE"

DEBIAN_PACKAGES = (
    "libshaderc-dev glslang-dev spirv-tools (apt-get install libshaderc-dev glslang-dev spirv-tools)"
)

# Order inside --start-group does not matter; missing optional archives are skipped
# because their contents moved into libglslang.a in newer glslang releases.
REQUIRED_ARCHIVES = ("libshaderc_combined.a", "libglslang.a", "libSPIRV-Tools-opt.a", "libSPIRV-Tools.a")
OPTIONAL_ARCHIVES = (
    "libSPIRV.a",
    "libglslang-default-resource-limits.a",
    "libMachineIndependent.a",
    "libGenericCodeGen.a",
    "libOSDependent.a",
    "libOGLCompiler.a",
    "libHLSL.a",
)

# shaderc.c keeps one compiler and two option sets for the whole process: shaderc's start-up
# (glslang's global tables) is the expensive part of the first compile.
CDEF, CSOURCE = "shaderc.cdef", "shaderc.c"


def _pkg_config(variable: str) -> str | None:
    """A variable of shaderc_combined's pkg-config file, or None without pkg-config or it."""
    exe = shutil.which("pkg-config")
    if exe is None:
        return None
    try:
        out = subprocess.run(
            [exe, f"--variable={variable}", "shaderc_combined"], capture_output=True, text=True, timeout=30
        )
    except (OSError, subprocess.SubprocessError):
        return None
    value = out.stdout.strip()
    return value if out.returncode == 0 and value else None


def library_dirs() -> list[str]:
    """The directories searched for the static archives, in order."""
    if os.environ.get(LIBDIR_ENV):
        return [os.environ[LIBDIR_ENV]]
    dirs = [d for d in (_pkg_config("libdir"),) if d]
    multiarch = sysconfig.get_config_var("MULTIARCH")
    if multiarch:
        dirs.append(os.path.join("/usr/lib", multiarch))
    dirs += ["/usr/lib64", "/usr/lib", "/usr/local/lib"]
    return list(dict.fromkeys(dirs))


def include_dir() -> str:
    return os.environ.get(INCLUDE_ENV) or _pkg_config("includedir") or "/usr/include"


def _archives() -> list[str]:
    searched = library_dirs()
    libdir = next((d for d in searched if os.path.exists(os.path.join(d, REQUIRED_ARCHIVES[0]))), searched[0])
    missing = [a for a in REQUIRED_ARCHIVES if not os.path.exists(os.path.join(libdir, a))]
    header = os.path.join(include_dir(), "shaderc", "shaderc.h")
    if missing or not os.path.exists(header):
        raise BuildError(
            f"static shaderc libraries missing ({', '.join(missing) or header}; searched {', '.join(searched)}, "
            f"set ${LIBDIR_ENV} / ${INCLUDE_ENV} to point elsewhere); on Debian install {DEBIAN_PACKAGES}"
        )
    found = [os.path.join(libdir, a) for a in REQUIRED_ARCHIVES]
    found += [os.path.join(libdir, a) for a in OPTIONAL_ARCHIVES if os.path.exists(os.path.join(libdir, a))]
    return found


def _ffibuilder(archives: list[str]) -> cffi.FFI:
    ffi = cffi.FFI()
    ffi.cdef(_build.source(CDEF))
    ffi.set_source(
        f"ncnn_c._native.{MODULE}",
        _build.source(CSOURCE).replace("@STAMP@", _stamp(archives)),
        include_dirs=[include_dir()],
        extra_link_args=["-Wl,--start-group", *archives, "-Wl,--end-group", "-lstdc++", "-lpthread", "-lm"],
    )
    return ffi


def _stamp(archives: list[str]) -> str:
    return _build.stamp(_build.source(CDEF), _build.source(CSOURCE), *archives)


def extension_path() -> str:
    return _build.extension_path(MODULE)


def build(force: bool = False, verbose: bool = False) -> str:
    """Build the extension next to this file; returns its path. Raises BuildError."""
    archives = _archives()
    target = extension_path()
    if not force and _build.is_current(target, _stamp(archives)):
        return target
    return _build.compile_and_install(_ffibuilder(archives), MODULE, target, verbose)


if __name__ == "__main__":
    sys.exit(_build.main(build, sys.argv[1:]))
