"""What every native extension build shares: the stamp that says a build is current, the
compile into a temporary directory, the atomic install next to the package, the CLI."""

from __future__ import annotations

import hashlib
import os
import shutil
import sys
import sysconfig
import tempfile
from collections.abc import Sequence

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


class Extension:
    """One cffi API-mode extension built from a ``.cdef`` and a ``.c`` beside the builders: the
    stamp (the sources, any extra headers and, with ``stamp_flags``, the compile flags), the
    cffi builder, where it goes, whether it is current, and the build. A builder module
    (``build_<x>.py``) makes one and exports its methods under the names setup.py and the
    Makefile use (``_ffibuilder``, ``extension_path``, ``is_current``, ``build``)."""

    def __init__(
        self,
        module: str,
        cdef: str,
        csource: str,
        headers: Sequence[str] = (),
        compile_args: Sequence[str] = ("-O2",),
        link_args: Sequence[str] = (),
        include_dirs=None,
        stamp_flags: bool = False,
    ) -> None:
        self.module, self.cdef, self.csource, self.headers = module, cdef, csource, headers
        self.compile_args, self.link_args = list(compile_args), list(link_args)
        # a list, or a function giving one at build time (it may raise BuildError)
        self.include_dirs = include_dirs
        self.stamp_flags = stamp_flags

    def stamp(self) -> str:
        parts = [source(self.cdef), source(self.csource), *(source(h) for h in self.headers)]
        if self.stamp_flags:
            parts.append(" ".join(self.compile_args))
        return stamp(*parts)

    def ffibuilder(self):
        import cffi

        dirs = self.include_dirs() if callable(self.include_dirs) else list(self.include_dirs or [])
        ffi = cffi.FFI()
        ffi.cdef(source(self.cdef))
        ffi.set_source(
            f"ncnn_c._native.{self.module}",
            source(self.csource).replace("@STAMP@", self.stamp()),
            include_dirs=dirs,
            extra_compile_args=self.compile_args,
            extra_link_args=self.link_args,
        )
        return ffi

    def extension_path(self) -> str:
        return extension_path(self.module)

    def is_current(self, path: str | None = None) -> bool:
        """Whether an extension built from this exact source exists."""
        return is_current(path or self.extension_path(), self.stamp())

    def build(self, force: bool = False, verbose: bool = False) -> str:
        """Build the extension next to the builders; returns its path. Raises BuildError."""
        target = self.extension_path()
        if not force and self.is_current(target):
            return target
        return compile_and_install(self.ffibuilder(), self.module, target, verbose)


def main(build, argv: list[str]) -> int:
    """``python -m ncnn_c._native.build_<x> [--force] [-v]``: print the path, 1 on failure."""
    try:
        path = build(force="--force" in argv, verbose="-v" in argv)
    except BuildError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    print(path)
    return 0
