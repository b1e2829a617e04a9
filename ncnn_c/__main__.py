"""``python -m ncnn_c <command> ...``: the command-line tools, one subcommand each.

A subcommand is a module that defines ``add_arguments(parser)`` and ``run(args) -> int``
(the exit code); adding one is one line in ``COMMANDS``. Modules are imported only when
the command line is parsed, and each keeps its heavy imports inside ``run``.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys

# name -> (module, one-line help)
COMMANDS: dict[str, tuple[str, str]] = {
    "bench": ("ncnn_c.tools.bench", "latency of a model (min / median / max ms)"),
    "info": ("ncnn_c.tools.info", "versions, Vulkan devices and their features, the cache location"),
    "run": ("ncnn_c.tools.run", "run a model on one image: top classes with labels, or output stats"),
    "detect": ("ncnn_c.tools.detect", "NanoDet-m object detection on images: boxes drawn into PNGs"),
    "generate": (
        "ncnn_c.tools.generate",
        "generate tokens with an ncnn LLM decoder (kv cache, greedy / top-k / top-p)",
    ),
    "capi": ("ncnn_c.tools.capi", "build / locate the C library (--build [--prefix DIR], --cflags, --libs)"),
    "cache": ("ncnn_c.tools.cache_cli", "pipeline cache files: inspect, verify, build ahead of time"),
}


def program_name() -> str:
    """How the user ran us, for usage lines: the console script's name, or ``python -m ncnn_c``."""
    name = os.path.basename(sys.argv[0]) if sys.argv and sys.argv[0] else ""
    if not name or name in ("__main__.py", "-c", "-m") or name.startswith("python"):
        return "python -m ncnn_c"
    return name


def build_parser(prog: str | None = None) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=prog or program_name(), description="ncnn_c command-line tools")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name, (module, help_text) in COMMANDS.items():
        mod = importlib.import_module(module)
        p = sub.add_parser(name, help=help_text, description=help_text)
        mod.add_arguments(p)
        p.set_defaults(_run=mod.run)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)  # usage errors exit with 2
    try:
        code = int(args._run(args))
        sys.stdout.flush()
    except BrokenPipeError:
        # the reader went away (`ncnn_c run --json | head`): stop quietly, as a shell tool
        # does; stdout goes to /dev/null so that the interpreter's last flush is quiet too
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        except (OSError, ValueError):  # no real file descriptor (an in-process caller)
            pass
        return 1
    return code


if __name__ == "__main__":
    sys.exit(main())
