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
    env = os.environ.get("NCNN_C_DNNL_LIBRARY")
    out = [env] if env else []
    for prefix in dict.fromkeys((sys.prefix, sys.base_prefix, os.path.expanduser("~/.local"))):
        out += sorted(glob.glob(os.path.join(prefix, "lib", SONAME)))
    out.append(SONAME)  # the loader's own search (LD_LIBRARY_PATH, ldconfig)
    return out


def _load():
    if sys.platform != "linux":
        return None, "the native CPU plan is built for Linux only"
    if not (os.environ.get("OMP_WAIT_POLICY") or os.environ.get("GOMP_SPINCOUNT")):
        os.environ["GOMP_SPINCOUNT"] = SPINCOUNT
    errors = []
    for path in _candidates():
        try:
            ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)
            break
        except OSError as e:
            errors.append(str(e))
    else:
        return None, f"{SONAME} not found (pip install onednn-cpu-gomp==2023.2.0): {errors[-1]}"
    try:
        from . import _plan
    except ImportError as e:
        return None, f"the _plan extension is not built (python -m ncnn_c._native.build_plan): {e}"
    return _plan, ""


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
                        log.info("native CPU plan off: %s", _state[1])
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
