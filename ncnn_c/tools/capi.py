"""``python -m ncnn_c capi``: build and locate the C library, ``libncnn_c.so``.

    python -m ncnn_c capi --build [--prefix DIR | --build-dir DIR]
    python -m ncnn_c capi --cflags [--prefix DIR]
    python -m ncnn_c capi --libs [--prefix DIR | --build-dir DIR]

The same as ``python -m ncnn_c.capi``; the options and the build live in the C API kit's
``build.py`` (``capi/`` of a checkout, ``ncnn_c/_capi_data/`` of an installed package).

Exit codes: 0 done, 1 the build failed or the kit is missing, 2 usage error.
"""

from __future__ import annotations

import argparse
import sys


def add_arguments(p: argparse.ArgumentParser) -> None:
    from ncnn_c.capi import _build_module

    mod = _build_module()
    if mod is not None:
        mod.add_arguments(p)
    p.set_defaults(_capi_kit=mod)


def run(args: argparse.Namespace) -> int:
    mod = args._capi_kit
    if mod is None:
        print(
            "ncnn_c capi: the C API build kit (build.py, include/) is missing from this install",
            file=sys.stderr,
        )
        return 1
    return int(mod.run(args))
