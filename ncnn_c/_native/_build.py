"""What every native extension build shares: the stamp that says a build is current, the
compile into a temporary directory, the atomic install next to the package, the CLI."""

from __future__ import annotations

import hashlib
import os
import shutil
import sys
import sysconfig
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))


class BuildError(RuntimeError):
    """No C compiler / Python headers / static libraries, or the compile failed."""


def source(name: str) -> str:
    """A C source or cffi declaration file beside the builders (``hash.c``, ``hash.cdef``, ...)."""
    with open(os.path.join(HERE, name), encoding="utf-8") as f:
        return f.read()


def stamp(*parts: str) -> str:
    """The build stamp of a source + link line; it is compiled into the extension itself."""
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:16]


def extension_path(module: str) -> str:
    return os.path.join(HERE, module + sysconfig.get_config_var("EXT_SUFFIX"))


def is_current(path: str, build_stamp: str) -> bool:
    """Whether the extension at ``path`` was built from exactly this stamp."""
    try:
        with open(path, "rb") as f:
            return f"NCNNC_STAMP:{build_stamp}".encode() in f.read()
    except OSError:
        return False


def compile_and_install(ffi, module: str, target: str, verbose: bool = False) -> str:
    with tempfile.TemporaryDirectory(prefix=f"ncnn_c{module}_") as tmp:
        try:
            built = ffi.compile(tmpdir=tmp, verbose=verbose)
        except Exception as e:  # distutils/setuptools raise various types
            raise BuildError(f"building {module} failed: {e}") from e
        # Copy then rename so a concurrent importer never sees a half-written .so.
        partial = f"{target}.tmp.{os.getpid()}"
        shutil.copyfile(built, partial)
        os.replace(partial, target)
    return target


def main(build, argv: list[str]) -> int:
    """``python -m ncnn_c._native.build_<x> [--force] [-v]``: print the path, 1 on failure."""
    try:
        path = build(force="--force" in argv, verbose="-v" in argv)
    except BuildError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    print(path)
    return 0
