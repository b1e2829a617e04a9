"""Build ``libncnn_c.so``: ncnn's C API as a cffi-embedded shared object.

One source of truth: ``capi/include/ncnn/c_api.h`` (ncnn's functions) and ``c_api_ext.h``
(ours, beside it). Every ``NCNN_EXPORT ret name(args);``
line there becomes

* a plain exported C function that first asks the guard whether the embedded Python is
  up (``ncnn_c_guard``) and then forwards to ``_impl_<name>``, an ``extern "Python"``
  callback; when Python failed to start it prints one line and returns the C error value
  (-1, 0 or NULL) instead of cffi's silent 0, which ncnn callers would read as success;
* an entry of the signature table that ``capi/bridge.py`` (the embedded init code) uses
  to translate pointers, strings and out-parameters to ``ncnn_c.capi``'s integer handles.

The build refuses to link when the header and ``ncnn_c.capi.EXPORTS`` disagree.

Usage (also through ``python -m ncnn_c.capi`` and ``python -m ncnn_c capi``):
    python capi/build.py --build [--build-dir DIR | --prefix DIR]
    python capi/build.py --cflags [--prefix DIR]
    python capi/build.py --libs [--build-dir DIR | --prefix DIR]

``--prefix DIR`` installs like a C library: DIR/lib/libncnn_c.so, DIR/include/ncnn/*.h,
DIR/lib/pkgconfig/ncnn_c.pc and DIR/lib/cmake/ncnn_c/ncnn_cConfig.cmake.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import site
import sys
import sysconfig
import tempfile
from dataclasses import dataclass
from pathlib import Path

# This file runs from two places: capi/ of a source checkout, and ncnn_c/_capi_data/ of an
# installed package (the wheel copies the header, this file and bridge.py there).
CAPI = Path(__file__).resolve().parent
INSTALLED = CAPI.name == "_capi_data"
ROOT = CAPI.parent.parent if INSTALLED else CAPI.parent  # the directory that holds ncnn_c/
INCLUDE = CAPI / "include"
HEADER = INCLUDE / "ncnn" / "c_api.h"
# our own functions, not ncnn's: same line format, kept apart so c_api.h stays exactly ncnn's
EXT_HEADER = INCLUDE / "ncnn" / "c_api_ext.h"
BRIDGE = CAPI / "bridge.py"
VERSION = "0.1.0"


def _default_build_dir() -> Path:
    """capi/build in a checkout; the per-user cache directory for an installed package
    (site-packages may be read-only, and is shared by every user of the interpreter)."""
    if not INSTALLED:
        return CAPI / "build"
    sys.path.insert(0, str(ROOT))
    try:
        from ncnn_c.cachestore import default_cache_dir
    finally:
        sys.path.pop(0)
    tag = sysconfig.get_config_var("SOABI") or "py"
    return Path(default_cache_dir()) / "capi" / tag


LIBNAME = "ncnn_c"
MODULE = "_ncnn_c_embed"  # the CPython module name cffi gives the embedded side
ENV_PYTHONPATH = "NCNN_C_PYTHONPATH"
ENV_BUILD_DIR = "NCNN_C_BUILD_DIR"

_DECL_RE = re.compile(
    r"^NCNN_EXPORT\s+(?P<ret>[\w\s\*]+?)\s*\b(?P<name>ncnn_\w+)\s*\((?P<args>[^)]*)\)\s*;\s*$"
)
_HANDLE_RE = re.compile(r"^ncnn_\w+_t$")


@dataclass(frozen=True)
class Param:
    ctype: str  # normalised: "const unsigned char*", "ncnn_mat_t*", ...
    name: str
    cat: str  # scalar | handle | out_handle | handle_array | fnptr | str | addr


@dataclass(frozen=True)
class Func:
    name: str
    ret: str
    ret_cat: str  # void | int | size_t | float | handle | rawptr | str
    params: tuple[Param, ...]

    def c_params(self) -> str:
        return ", ".join(f"{p.ctype} {p.name}" for p in self.params) or "void"

    def c_args(self) -> str:
        return ", ".join(p.name for p in self.params)


def _norm_type(t: str) -> str:
    t = re.sub(r"\s*\*\s*", "* ", t.strip())
    return re.sub(r"\s+", " ", t).strip().replace("* *", "**").rstrip()


# function-pointer typedefs passed as arguments (custom layer factories)
_FNPTR_TYPES = ("ncnn_layer_creator_t", "ncnn_layer_destroyer_t")


def _param_cat(ctype: str) -> str:
    if ctype in _FNPTR_TYPES:
        return "fnptr"
    if ctype == "const ncnn_mat_t*":
        return "handle_array"  # an input array of Mats, its length in the next argument
    bare = ctype[len("const ") :] if ctype.startswith("const ") else ctype
    if bare in ("int", "size_t", "float", "unsigned int"):
        return "scalar"
    if _HANDLE_RE.match(bare):
        return "handle"
    if bare.endswith("*") and _HANDLE_RE.match(bare[:-1]):
        return "out_handle"
    if ctype == "const char*":
        return "str"
    if bare.endswith("*"):
        return "addr"
    raise ValueError(f"c_api.h: no translation for parameter type {ctype!r}")


def _ret_cat(ctype: str) -> str:
    if ctype in ("void", "int", "size_t", "float"):
        return ctype
    if ctype == "const char*":
        return "str"
    if ctype == "void*":
        return "rawptr"
    if _HANDLE_RE.match(ctype):
        return "handle"
    raise ValueError(f"c_api.h: no translation for return type {ctype!r}")


def parse_header(text: str) -> tuple[str, list[Func]]:
    """(type declarations as cffi cdef text, exported functions in header order)."""
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    types: list[str] = []
    funcs: list[Func] = []
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#") or line in ('extern "C" {', "}"):
            continue
        m = _DECL_RE.match(line)
        if m:
            args = m.group("args").strip()
            params = []
            if args and args != "void":
                for a in args.split(","):
                    a = _norm_type(a)
                    pm = re.match(r"^(?P<t>.+?)\s*\b(?P<n>\w+)$", a)
                    if not pm:
                        raise ValueError(f"c_api.h: cannot parse parameter {a!r} of {m.group('name')}")
                    ctype = _norm_type(pm.group("t"))
                    params.append(Param(ctype, pm.group("n"), _param_cat(ctype)))
            ret = _norm_type(m.group("ret"))
            funcs.append(Func(m.group("name"), ret, _ret_cat(ret), tuple(params)))
            continue
        if line.startswith("NCNN_EXPORT"):
            raise ValueError(f"c_api.h: declaration not on one line or not understood: {line!r}")
        types.append(raw.replace("NCNN_EXPORT ", ""))
    # a dangling "}" of the extern "C" block is dropped above; struct bodies end with "};"
    return "\n".join(types), funcs


# ncnn_c.capi return categories for each C return category
_CAPI_RET = {
    "void": "void",
    "int": "int",
    "size_t": "size_t",
    "float": "float",
    "handle": "ptr",
    "rawptr": "ptr",
    "str": "str",
}
_C_ERROR = {"int": "-1", "size_t": "0", "float": "0.0f", "handle": "NULL", "rawptr": "NULL", "str": "NULL"}


def check_against_capi(funcs: list[Func]) -> list[str]:
    """Differences between the header and ncnn_c.capi.EXPORTS (empty when consistent)."""
    sys.path.insert(0, str(ROOT))
    try:
        from ncnn_c import capi
    finally:
        sys.path.pop(0)
    problems = []
    names = {f.name for f in funcs}
    for f in funcs:
        impl = capi.EXPORTS.get(f.name)
        if impl is None:
            problems.append(f"{f.name}: declared in c_api.h, missing in ncnn_c.capi")
        elif impl.c_return != _CAPI_RET[f.ret_cat]:
            problems.append(f"{f.name}: c_api.h returns {f.ret}, ncnn_c.capi says {impl.c_return}")
    for name in sorted(set(capi.EXPORTS) - names):
        problems.append(f"{name}: in ncnn_c.capi, not declared in c_api.h")
    return problems


def _c_string(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def build_paths() -> list[str]:
    """sys.path entries the embedded Python needs: the repo, then this interpreter's site dirs."""
    paths = [str(ROOT)]
    cands = [sysconfig.get_paths().get("purelib"), sysconfig.get_paths().get("platlib")]
    try:
        cands += site.getsitepackages()
    except AttributeError:  # old virtualenv's site module
        pass
    for p in cands:
        if p and os.path.isdir(p) and p not in paths:
            paths.append(p)
    return paths


_GUARD_C = r"""
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct _ncnn_c_opaque { void* pthis; };

/* extern "Python" callbacks: cffi defines them after this code */
static int _ncnn_c_alive(void);
@IMPL_DECLS@

static const char ncnn_c_build_pythonpath[] = @BUILD_PATHS@;
static pthread_once_t ncnn_c_once = PTHREAD_ONCE_INIT;
static int ncnn_c_state = 0;   /* 1: Python side up, -1: it failed to start */
static int ncnn_c_we_started = 0;

static int _ncnn_c_started_python(void) { return ncnn_c_we_started; }

/* Start the interpreter ourselves when nobody has: cffi would, but with the default
 * module path, and it must import _cffi_backend (from our build-time site-packages)
 * before any of our init code runs. A host Python (ctypes) is used as it is. */
static void ncnn_c_start(void)
{
    if (!Py_IsInitialized())
    {
        const char* env_front = getenv("@ENV_PYTHONPATH@");
        const char* env_back = getenv("PYTHONPATH");
        size_t n = sizeof(ncnn_c_build_pythonpath) + 3;
        char* joined;
        PyConfig cfg;
        PyStatus st;

        n += env_front ? strlen(env_front) : 0;
        n += env_back ? strlen(env_back) : 0;
        joined = (char*)malloc(n);
        if (!joined)
        {
            fprintf(stderr, "ncnn_c: out of memory starting Python\n");
            ncnn_c_state = -1;
            return;
        }
        snprintf(joined, n, "%s%s%s%s%s", env_front && *env_front ? env_front : "",
                 env_front && *env_front ? ":" : "", ncnn_c_build_pythonpath,
                 env_back && *env_back ? ":" : "", env_back && *env_back ? env_back : "");

        PyConfig_InitPythonConfig(&cfg);
        cfg.install_signal_handlers = 0;
        cfg.parse_argv = 0;
        st = PyConfig_SetBytesString(&cfg, &cfg.pythonpath_env, joined);
        free(joined);
        if (!PyStatus_Exception(st))
            st = Py_InitializeFromConfig(&cfg);
        PyConfig_Clear(&cfg);
        if (PyStatus_Exception(st))
        {
            fprintf(stderr, "ncnn_c: cannot start the embedded Python: %s%s%s\n",
                    st.func ? st.func : "", st.func ? ": " : "", st.err_msg ? st.err_msg : "unknown error");
            ncnn_c_state = -1;
            return;
        }
        ncnn_c_we_started = 1;
        PyEval_SaveThread(); /* cffi's entry points take the GIL themselves */
    }
    ncnn_c_state = _ncnn_c_alive() == 1 ? 1 : -1;
}

static int ncnn_c_guard(const char* fn)
{
    if (__atomic_load_n(&ncnn_c_state, __ATOMIC_ACQUIRE) == 1)
        return 1;
    pthread_once(&ncnn_c_once, ncnn_c_start);
    if (ncnn_c_state == 1)
        return 1;
    fprintf(stderr, "ncnn_c: %s: library unusable, its embedded Python failed to start "
                    "(see the first ncnn_c message; %s adds module paths)\n", fn, "@ENV_PYTHONPATH@");
    return 0;
}
"""


# The library's own implementations of the function pointers in the datareader, modelbin and
# layer structs it hands out (a C program may replace them; bridge.py tells which is which).
_SLOT_DEFAULTS = [
    'extern "Python" int _ncnn_c_dr_scan(ncnn_datareader_t dr, const char* format, void* p);',
    'extern "Python" size_t _ncnn_c_dr_read(ncnn_datareader_t dr, void* buf, size_t size);',
    'extern "Python" ncnn_mat_t _ncnn_c_mb_load_1d(const ncnn_modelbin_t mb, int w, int type);',
    'extern "Python" ncnn_mat_t _ncnn_c_mb_load_2d(const ncnn_modelbin_t mb, int w, int h, int type);',
    'extern "Python" ncnn_mat_t _ncnn_c_mb_load_3d(const ncnn_modelbin_t mb, int w, int h, int c, int type);',
    'extern "Python" int _ncnn_c_layer_load_param(ncnn_layer_t layer, const ncnn_paramdict_t pd);',
    'extern "Python" int _ncnn_c_layer_load_model(ncnn_layer_t layer, const ncnn_modelbin_t mb);',
    'extern "Python" int _ncnn_c_layer_create_pipeline(ncnn_layer_t layer, const ncnn_option_t opt);',
    'extern "Python" int _ncnn_c_layer_destroy_pipeline(ncnn_layer_t layer, const ncnn_option_t opt);',
    'extern "Python" int _ncnn_c_layer_forward_1(const ncnn_layer_t layer, const ncnn_mat_t bottom_blob, '
    "ncnn_mat_t* top_blob, const ncnn_option_t opt);",
    'extern "Python" int _ncnn_c_layer_forward_n(const ncnn_layer_t layer, const ncnn_mat_t* bottom_blobs, '
    "int n, ncnn_mat_t* top_blobs, int n2, const ncnn_option_t opt);",
    'extern "Python" int _ncnn_c_layer_forward_inplace_1(const ncnn_layer_t layer, ncnn_mat_t bottom_top_blob, '
    "const ncnn_option_t opt);",
    'extern "Python" int _ncnn_c_layer_forward_inplace_n(const ncnn_layer_t layer, ncnn_mat_t* bottom_top_blobs, '
    "int n, const ncnn_option_t opt);",
]


def generate(funcs: list[Func], types_cdef: str, paths: list[str]) -> tuple[str, str, str]:
    """(cdef, C source, Python init code)."""
    cdef = [
        types_cdef,
        "struct _ncnn_c_opaque { void* pthis; };",
        'extern "Python" int _ncnn_c_alive(void);',
        'extern "Python" void* _ncnn_c_fast_malloc(ncnn_allocator_t allocator, size_t size);',
        'extern "Python" void _ncnn_c_fast_free(ncnn_allocator_t allocator, void* ptr);',
        "int _ncnn_c_started_python(void);",
        *_SLOT_DEFAULTS,
    ]
    decls = "\n".join(f"static {f.ret} _impl_{f.name}({f.c_params()});" for f in funcs)
    guard = (
        _GUARD_C.replace("@BUILD_PATHS@", _c_string(":".join(paths)))
        .replace("@ENV_PYTHONPATH@", ENV_PYTHONPATH)
        .replace("@IMPL_DECLS@", decls)
    )
    src = ['#include "ncnn/c_api.h"', '#include "ncnn/c_api_ext.h"', guard]
    for f in funcs:
        cdef.append(f'extern "Python" {f.ret} _impl_{f.name}({f.c_params()});')
        body = []
        if f.ret_cat == "void":
            body.append(f'    if (!ncnn_c_guard("{f.name}"))\n        return;')
            body.append(f"    _impl_{f.name}({f.c_args()});")
        else:
            clear = "".join(
                f"        if ({p.name}) *{p.name} = NULL;\n" for p in f.params if p.cat == "out_handle"
            )
            body.append(
                f'    if (!ncnn_c_guard("{f.name}"))\n    {{\n{clear}        return {_C_ERROR[f.ret_cat]};\n    }}'
            )
            body.append(f"    return _impl_{f.name}({f.c_args()});")
        src.append(f"NCNN_EXPORT {f.ret} {f.name}({f.c_params()})\n{{\n" + "\n".join(body) + "\n}\n")
    sigs = [(f.name, f.ret, f.ret_cat, tuple((p.ctype, p.cat) for p in f.params)) for f in funcs]
    init = (
        f"_MODULE = {MODULE!r}\n_BUILD_PATHS = {paths!r}\n_ENV_PYTHONPATH = {ENV_PYTHONPATH!r}\n"
        f"_SIGNATURES = {sigs!r}\n\n" + BRIDGE.read_text()
    )
    return "\n".join(cdef), "\n".join(src), init


def build(build_dir: Path, tmp_dir: Path | None = None) -> Path:
    """Compile into ``build_dir`` (the objects into ``tmp_dir``, default the same directory)."""
    import cffi

    funcs_types, funcs = parse_header(HEADER.read_text())
    funcs += parse_header(EXT_HEADER.read_text())[1]
    problems = check_against_capi(funcs)
    if problems:
        raise SystemExit("capi/build.py: header and ncnn_c.capi disagree:\n  " + "\n  ".join(problems))
    paths = build_paths()
    cdef, csrc, init = generate(funcs, funcs_types, paths)

    libdir = sysconfig.get_config_var("LIBDIR") or ""
    ffi = cffi.FFI()
    ffi.cdef(cdef)
    ffi.embedding_init_code(init)
    ffi.set_source(
        MODULE,
        csrc,
        include_dirs=[str(INCLUDE)],
        define_macros=[("NCNN_C_BUILDING_LIBRARY", "1")],
        # -Wno-attributes: ncnn's "struct NCNN_EXPORT name" lines, kept verbatim.
        extra_compile_args=["-fvisibility=hidden", "-O1", "-Wno-attributes"],
        # libpython lives outside the loader's default path (pyenv); record where.
        extra_link_args=[f"-Wl,-rpath,{libdir}"] if libdir else [],
    )
    build_dir.mkdir(parents=True, exist_ok=True)
    tmp = tmp_dir or build_dir
    tmp.mkdir(parents=True, exist_ok=True)
    built = Path(ffi.compile(tmpdir=str(tmp), target=f"lib{LIBNAME}.so", verbose=False))
    out = build_dir / built.name
    if built.resolve() != out.resolve():
        # copy then rename: a program already running from this path keeps its old mapping
        partial = out.with_name(f"{out.name}.tmp.{os.getpid()}")
        shutil.copyfile(built, partial)
        os.replace(partial, out)
    _write_pkgconfig(build_dir)
    return out


def install_prefix(prefix: Path) -> Path:
    """Build and install under ``prefix`` as a C library is installed: lib/, include/, pkg-config,
    CMake. Returns the library's path."""
    lib = prefix / "lib"
    inc = prefix / "include" / "ncnn"
    with tempfile.TemporaryDirectory(prefix="ncnn_c_capi_") as tmp:
        out = build(lib, Path(tmp))
    (lib / f"{LIBNAME}.pc").unlink(missing_ok=True)  # the prefix's own .pc goes to lib/pkgconfig
    inc.mkdir(parents=True, exist_ok=True)
    for h in sorted((INCLUDE / "ncnn").glob("*.h")):
        shutil.copyfile(h, inc / h.name)
    pc = lib / "pkgconfig"
    pc.mkdir(parents=True, exist_ok=True)
    (pc / f"{LIBNAME}.pc").write_text(
        f"prefix={prefix}\nincludedir=${{prefix}}/include\nlibdir=${{prefix}}/lib\n\n"
        f"Name: {LIBNAME}\nDescription: ncnn's C API over ncnn_c (embedded Python)\nVersion: {VERSION}\n"
        "Cflags: -I${includedir} -I${includedir}/ncnn\n"
        f"Libs: -L${{libdir}} -l{LIBNAME} -Wl,-rpath,${{libdir}}\n"
    )
    cm = lib / "cmake" / LIBNAME
    cm.mkdir(parents=True, exist_ok=True)
    (cm / f"{LIBNAME}Config.cmake").write_text(_CMAKE_CONFIG)
    (cm / f"{LIBNAME}ConfigVersion.cmake").write_text(_CMAKE_VERSION.replace("@VERSION@", VERSION))
    return out


# Paths are found relative to this file (lib/cmake/ncnn_c/), so the prefix can be moved.
_CMAKE_CONFIG = """# ncnn_c: ncnn's C API over ncnn_c. Provides the imported target ncnn_c::ncnn_c.
get_filename_component(_ncnn_c_prefix "${CMAKE_CURRENT_LIST_DIR}/../../.." ABSOLUTE)
if(NOT TARGET ncnn_c::ncnn_c)
    add_library(ncnn_c::ncnn_c SHARED IMPORTED)
    set_target_properties(ncnn_c::ncnn_c PROPERTIES
        IMPORTED_LOCATION "${_ncnn_c_prefix}/lib/libncnn_c.so"
        IMPORTED_NO_SONAME TRUE
        INTERFACE_INCLUDE_DIRECTORIES "${_ncnn_c_prefix}/include;${_ncnn_c_prefix}/include/ncnn")
endif()
set(ncnn_c_INCLUDE_DIRS "${_ncnn_c_prefix}/include;${_ncnn_c_prefix}/include/ncnn")
set(ncnn_c_LIBRARIES ncnn_c::ncnn_c)
set(ncnn_c_FOUND TRUE)
unset(_ncnn_c_prefix)
"""

_CMAKE_VERSION = """set(PACKAGE_VERSION "@VERSION@")
if(PACKAGE_FIND_VERSION VERSION_GREATER PACKAGE_VERSION)
    set(PACKAGE_VERSION_COMPATIBLE FALSE)
else()
    set(PACKAGE_VERSION_COMPATIBLE TRUE)
    if(PACKAGE_FIND_VERSION STREQUAL PACKAGE_VERSION)
        set(PACKAGE_VERSION_EXACT TRUE)
    endif()
endif()
"""


def _write_pkgconfig(build_dir: Path) -> None:
    (build_dir / f"{LIBNAME}.pc").write_text(
        f"prefix={build_dir}\nincludedir={INCLUDE}\nlibdir={build_dir}\n\n"
        f"Name: {LIBNAME}\nDescription: ncnn's C API over ncnn_c (embedded Python)\nVersion: {VERSION}\n"
        f"Cflags: {cflags()}\nLibs: {libs(build_dir)}\n"
    )


def cflags(prefix: Path | None = None) -> str:
    inc = prefix / "include" if prefix else INCLUDE
    return f"-I{inc} -I{inc / 'ncnn'}"


def libs(build_dir: Path) -> str:
    return f"-L{build_dir} -l{LIBNAME} -Wl,-rpath,{build_dir}"


def add_arguments(ap: argparse.ArgumentParser) -> None:
    g = ap.add_mutually_exclusive_group(required=True)
    g.add_argument("--build", action="store_true", help="build libncnn_c.so (prints its path)")
    g.add_argument("--cflags", action="store_true", help="print compiler flags")
    g.add_argument("--libs", action="store_true", help="print linker flags")
    where = ap.add_mutually_exclusive_group()
    where.add_argument(
        "--build-dir",
        default=os.environ.get(ENV_BUILD_DIR),
        help=f"where the library goes (env {ENV_BUILD_DIR}; default: capi/build in a source checkout, "
        "the user cache directory for an installed package)",
    )
    where.add_argument(
        "--prefix",
        help="install as a C library: PREFIX/lib/libncnn_c.so, PREFIX/include/ncnn, "
        "PREFIX/lib/pkgconfig/ncnn_c.pc, PREFIX/lib/cmake/ncnn_c/",
    )


def run(a: argparse.Namespace) -> int:
    try:
        if a.prefix:
            prefix = Path(a.prefix).expanduser().resolve()
            if a.cflags:
                print(cflags(prefix))
            elif a.libs:
                print(libs(prefix / "lib"))
            else:
                print(install_prefix(prefix))
            return 0
        build_dir = Path(a.build_dir).expanduser().resolve() if a.build_dir else _default_build_dir()
        if a.cflags:
            print(cflags())
        elif a.libs:
            print(libs(build_dir))
        else:
            print(build(build_dir))
    except OSError as e:
        print(f"ncnn_c capi: {e}", file=sys.stderr)
        return 1
    except Exception as e:  # the C compiler (distutils) reports failures as various exception types
        print(f"ncnn_c capi: build failed: {e}", file=sys.stderr)
        return 1
    return 0


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m ncnn_c.capi", description="build / locate libncnn_c.so")
    add_arguments(ap)
    return run(ap.parse_args(argv))


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
