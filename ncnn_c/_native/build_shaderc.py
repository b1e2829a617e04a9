"""Builds ``ncnn_c/_native/_shaderc*.so``: a cffi API-mode extension over static shaderc.

Debian 12's ``libshaderc.so.1`` cannot be loaded (it references a SPIRV-Tools symbol
that the packaged shared library lacks), so the extension links ``libshaderc_combined.a``
together with the static glslang and SPIRV-Tools archives instead.

Run ``python -m ncnn_c._native.build_shaderc`` (add ``--force`` to rebuild). Building is
skipped when an extension built from the same C source and link line already exists.
"""

from __future__ import annotations

import os
import sys

import cffi

from . import _build
from ._build import BuildError  # noqa: F401  (part of this module's interface)

MODULE = "_shaderc"
LIBDIR = "/usr/lib/x86_64-linux-gnu"

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

CDEF = """
typedef struct ncnnc_result ncnnc_result;
int ncnnc_init(void);
ncnnc_result* ncnnc_compile(const char* source, size_t length, const char* name, int optimize);
int ncnnc_result_ok(const ncnnc_result* r);
size_t ncnnc_result_size(const ncnnc_result* r);
const char* ncnnc_result_bytes(const ncnnc_result* r);
const char* ncnnc_result_message(const ncnnc_result* r);
void ncnnc_result_free(ncnnc_result* r);
"""

# One compiler and two option sets live for the whole process: shaderc's start-up
# (glslang's global tables) is the expensive part of the first compile.
CSOURCE = r"""
#include <stdlib.h>
#include <string.h>
#include <shaderc/shaderc.h>

typedef struct ncnnc_result ncnnc_result;

static shaderc_compiler_t g_compiler = NULL;
static shaderc_compile_options_t g_options[2] = {NULL, NULL};

const char ncnnc_build_stamp[] = "NCNNC_STAMP:@STAMP@";

int ncnnc_init(void)
{
    int i;
    if (g_compiler)
        return 0;
    g_compiler = shaderc_compiler_initialize();
    if (!g_compiler)
        return -1;
    for (i = 0; i < 2; i++)
    {
        shaderc_compile_options_t o = shaderc_compile_options_initialize();
        if (!o)
            return -1;
        shaderc_compile_options_set_source_language(o, shaderc_source_language_glsl);
        shaderc_compile_options_set_target_env(o, shaderc_target_env_vulkan, shaderc_env_version_vulkan_1_1);
        shaderc_compile_options_set_target_spirv(o, shaderc_spirv_version_1_3);
        shaderc_compile_options_set_optimization_level(o, i ? shaderc_optimization_level_performance : shaderc_optimization_level_zero);
        g_options[i] = o;
    }
    return 0;
}

ncnnc_result* ncnnc_compile(const char* source, size_t length, const char* name, int optimize)
{
    if (ncnnc_init() != 0)
        return NULL;
    return (ncnnc_result*)shaderc_compile_into_spv(g_compiler, source, length, shaderc_compute_shader,
                                                   name, "main", g_options[optimize ? 1 : 0]);
}

int ncnnc_result_ok(const ncnnc_result* r)
{
    return shaderc_result_get_compilation_status((shaderc_compilation_result_t)r) == shaderc_compilation_status_success;
}

size_t ncnnc_result_size(const ncnnc_result* r)
{
    return shaderc_result_get_length((shaderc_compilation_result_t)r);
}

const char* ncnnc_result_bytes(const ncnnc_result* r)
{
    return shaderc_result_get_bytes((shaderc_compilation_result_t)r);
}

const char* ncnnc_result_message(const ncnnc_result* r)
{
    return shaderc_result_get_error_message((shaderc_compilation_result_t)r);
}

void ncnnc_result_free(ncnnc_result* r)
{
    shaderc_result_release((shaderc_compilation_result_t)r);
}
"""


def _archives() -> list[str]:
    missing = [a for a in REQUIRED_ARCHIVES if not os.path.exists(os.path.join(LIBDIR, a))]
    if missing or not os.path.exists("/usr/include/shaderc/shaderc.h"):
        raise BuildError(
            f"static shaderc libraries missing ({', '.join(missing) or 'shaderc/shaderc.h'}); install the Debian packages {DEBIAN_PACKAGES}"
        )
    found = [os.path.join(LIBDIR, a) for a in REQUIRED_ARCHIVES]
    found += [os.path.join(LIBDIR, a) for a in OPTIONAL_ARCHIVES if os.path.exists(os.path.join(LIBDIR, a))]
    return found


def _ffibuilder(archives: list[str]) -> cffi.FFI:
    ffi = cffi.FFI()
    ffi.cdef(CDEF)
    ffi.set_source(
        f"ncnn_c._native.{MODULE}",
        CSOURCE.replace("@STAMP@", _stamp(archives)),
        extra_link_args=["-Wl,--start-group", *archives, "-Wl,--end-group", "-lstdc++", "-lpthread", "-lm"],
    )
    return ffi


def _stamp(archives: list[str]) -> str:
    return _build.stamp(CDEF, CSOURCE, *archives)


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
