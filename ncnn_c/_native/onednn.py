"""oneDNN for the native CPU plan: find the library, load it, hand out ``(ffi, lib)``.

The library is ``libdnnl.so.3`` of the PyPI package ``onednn-cpu-gomp`` (oneDNN 3.2, CPU
only, GNU OpenMP), which installs it into ``<prefix>/lib``. It is loaded with RTLD_GLOBAL
so that the ``_plan`` extension, compiled against the headers only, binds to it. Nothing is
built here (the wheel and ``make setup`` build ``_plan``): when the library or the extension
is missing, ``get()`` returns None with the reason in ``reason()``, and the numpy layers run.

Threads: oneDNN runs its parallel loops on libgomp's pool. GNU OpenMP's idle workers spin
for a long time by default (300,000 rounds), which is what makes a spinning runtime collapse
when other processes want the cores (the PyPI ncnn: 11 ms -> 598 ms beside two busy
processes). Unless the user set ``OMP_WAIT_POLICY`` or ``GOMP_SPINCOUNT``, they are set here,
before libgomp starts, to a short spin (``SPINCOUNT``) after which idle workers sleep.
"""

from __future__ import annotations

import ctypes
import glob
import logging
import os
import sys
import threading

log = logging.getLogger("ncnn_c")

SONAME = "libdnnl.so.3"
# rounds an idle OpenMP worker spins before it sleeps: ~tens of microseconds, enough to
# bridge the gap between two primitives of one plan, short enough to yield the core soon
SPINCOUNT = "20000"

_lock = threading.Lock()
_state: tuple | None = None  # (module or None, reason)


def _candidates() -> list[str]:
    """Where libdnnl may be: the package's prefixes, then the loader's own search. An explicit
    ``NCNN_C_DNNL_LIBRARY`` is the only candidate (``_load``)."""
    out = []
    for prefix in dict.fromkeys((sys.prefix, sys.base_prefix, os.path.expanduser("~/.local"))):
        out += sorted(glob.glob(os.path.join(prefix, "lib", SONAME)))
    out.append(SONAME)  # the loader's own search (LD_LIBRARY_PATH, ldconfig)
    return out


class _Version(ctypes.Structure):
    _fields_ = [
        ("major", ctypes.c_int),
        ("minor", ctypes.c_int),
        ("patch", ctypes.c_int),
        ("hash", ctypes.c_char_p),
    ]


def _onednn_major(lib: ctypes.CDLL) -> int | None:
    """oneDNN's major version (``dnnl_version()``), or None for a library that is not oneDNN."""
    try:
        fn = lib.dnnl_version
    except AttributeError:
        return None
    fn.restype = ctypes.POINTER(_Version)
    return int(fn().contents.major)


def _load():
    if sys.platform != "linux":
        return None, "the native CPU plan is built for Linux only"
    if not (os.environ.get("OMP_WAIT_POLICY") or os.environ.get("GOMP_SPINCOUNT")):
        os.environ["GOMP_SPINCOUNT"] = SPINCOUNT
    explicit = os.environ.get("NCNN_C_DNNL_LIBRARY")
    errors = []
    lib = None
    # a library the user named is the one to use: if it cannot be, the plan is off (another
    # oneDNN the default search finds would not be what was asked for)
    for path in [explicit] if explicit else _candidates():
        try:
            lib = ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)
            break
        except OSError as e:
            errors.append(str(e))
    if lib is None:
        if explicit:
            return None, f"NCNN_C_DNNL_LIBRARY={explicit} cannot be loaded: {errors[-1]}"
        # onednn-cpu-gomp has wheels for x86-64 only: elsewhere (aarch64) it cannot be pip installed
        machine = os.uname().machine
        hint = (
            "pip install onednn-cpu-gomp==2023.2.0"
            if machine == "x86_64"
            else f"PyPI's oneDNN has no {machine} wheel"
        )
        return None, f"{SONAME} not found ({hint}): {errors[-1]}"
    where = f"NCNN_C_DNNL_LIBRARY={explicit}" if explicit else SONAME
    major = _onednn_major(lib)
    if major is None:
        return None, f"{where} loads but is not oneDNN (it has no dnnl_version)"
    if major != 3:
        return None, f"{where} is oneDNN {major}.x; the _plan extension is built for 3.x"
    _release_code_pages("libdnnl.so")
    try:
        from . import _plan
    except ModuleNotFoundError as e:
        return None, f"the _plan extension is not built (python -m ncnn_c._native.build_plan): {e}"
    except ImportError as e:
        return None, f"the _plan extension does not load against {where}: {e}"
    return _plan, ""


MADV_DONTNEED = 4


# the clean executable spans of a library, found once (reading /proc/self/smaps costs 40-100 ms
# in a process with lavapipe loaded, and a plan build asks to release after each grown layer)
_code_spans: dict[str, list[tuple[int, ...]]] = {}


def _clean_code_spans(name: str) -> list[tuple[int, ...]]:
    """(start, end) of each executable mapping of ``name`` with no private dirty page."""
    spans, span, dirty = [], None, 0
    with open("/proc/self/smaps", encoding="ascii", errors="replace") as f:
        for line in f:
            head = line.split()
            if "-" in head[0] and len(head) >= 5:  # a mapping's first line
                if span is not None and dirty == 0:
                    spans.append(span)
                span, dirty = None, 0
                if len(head) >= 6 and name in head[5] and head[1] == "r-xp":
                    span = tuple(int(x, 16) for x in head[0].split("-"))
            elif span is not None and head[0] == "Private_Dirty:":
                dirty = int(head[1])
    if span is not None and dirty == 0:
        spans.append(span)
    return spans


def _release_code_pages(name: str) -> None:
    """Give back the pages of a library's code that loading it touched.

    Loading libdnnl runs its static constructors across its 44 MB of code, and the kernel
    maps the pages around each one it faults in: 11 MB of the process's RSS before the first
    primitive, most of it never run again (peak RSS is issue 15's bar). Those pages are clean
    copies of the file, so unmapping them loses nothing: a page the plan runs later is read
    back from the page cache. Only executable mappings with no private dirty page are
    released (a page written by a text relocation would be lost)."""
    try:
        libc = ctypes.CDLL(None)
        libc.madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
        spans = _code_spans.get(name)
        if spans is None:  # a loaded library's code does not move: smaps is read once
            spans = _clean_code_spans(name)
            if spans:
                _code_spans[name] = spans
        for start, end in spans:
            libc.madvise(start, end - start, MADV_DONTNEED)
    except (OSError, ValueError, IndexError, AttributeError) as e:
        log.debug("oneDNN: its code pages stay mapped (%s)", e)


def give_back_pages(address: int, nbytes: int) -> None:
    """MADV_DONTNEED over the whole pages inside a buffer of ours (an idle plan's arena): the
    system takes them back, and they read as zeros when touched again."""
    page = 4096
    start = -(-address // page) * page
    end = (address + nbytes) // page * page
    if end <= start:
        return
    try:
        libc = ctypes.CDLL(None)
        libc.madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
        libc.madvise(start, end - start, MADV_DONTNEED)
    except (OSError, AttributeError) as e:
        log.debug("an idle buffer's pages stay resident (%s)", e)


# file-backed resident pages (statm's "shared") when libdnnl's code was last given back
_file_pages_after_release = 0
RELEASE_STEP = 512  # pages: touched since the last release before ``release_code(True)`` acts


def release_code(when_grown: bool = False) -> None:
    """Give back libdnnl's code pages touched so far: building a plan runs the creation code of
    every primitive it considers (descriptors, implementation lists, JIT generators), which
    its runs never need again (8-9 MB on a small network, the largest part of its first
    extract's peak). The runs fault the pages they execute back in from the page cache.
    ``when_grown``: only once the process's file-backed pages grew by ``RELEASE_STEP`` since
    the last release (cheap to ask: a plan's build asks after each layer)."""
    global _file_pages_after_release
    if get() is None:
        return
    try:
        with open("/proc/self/statm", "rb") as f:
            pages = int(f.read().split()[2])
    except (OSError, ValueError, IndexError):
        return
    if when_grown and pages - _file_pages_after_release < RELEASE_STEP:
        return
    _release_code_pages("libdnnl.so")
    try:
        with open("/proc/self/statm", "rb") as f:
            _file_pages_after_release = int(f.read().split()[2])
    except (OSError, ValueError, IndexError):
        pass


def get():
    """The ``_plan`` extension module (``.ffi``, ``.lib``), or None when it cannot run here."""
    global _state
    if _state is None:
        with _lock:
            if _state is None:
                if os.environ.get("NCNN_C_NATIVE_PLAN", "1") == "0":
                    _state = (None, "switched off (NCNN_C_NATIVE_PLAN=0)")
                else:
                    _state = _load()
                    if _state[0] is None:
                        # a library the user named that cannot serve deserves more than info
                        level = logging.WARNING if os.environ.get("NCNN_C_DNNL_LIBRARY") else logging.INFO
                        log.log(level, "native CPU plan off: %s", _state[1])
    return _state[0]


_omp_set_num_threads = None


def set_threads(n: int) -> None:
    """OpenMP's thread count for the calling thread: oneDNN sizes a primitive's work split
    when it is created, so a plan is built (as it is run) with the extractor's count."""
    global _omp_set_num_threads
    if get() is None:
        return
    if _omp_set_num_threads is None:
        try:
            _omp_set_num_threads = ctypes.CDLL(None).omp_set_num_threads  # libgomp, loaded with oneDNN
        except AttributeError:
            return
    _omp_set_num_threads(max(1, int(n)))


def reason() -> str:
    """Why ``get()`` returned None ("" when it did not)."""
    get()
    assert _state is not None
    return _state[1]
