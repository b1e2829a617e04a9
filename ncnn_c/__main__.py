"""``python -m ncnn_c <command> ...``: the command-line tools, one subcommand each.

A subcommand is a module that defines ``add_arguments(parser)`` and ``run(args) -> int``
(the exit code); adding one is one line in ``COMMANDS``. Modules are imported only when
the command line is parsed, and each keeps its heavy imports inside ``run``.
"""

from __future__ import annotations

import argparse
import importlib
import sys

# name -> (module, one-line help)
COMMANDS: dict[str, tuple[str, str]] = {
    "bench": ("ncnn_c.tools.bench", "latency of a model (min / median / max ms)"),
    "info": ("ncnn_c.tools.info", "versions, Vulkan devices and their features, the cache location"),
    "run": ("ncnn_c.tools.run", "run a model on one image: top classes with labels, or output stats"),
    "capi": ("ncnn_c.tools.capi", "build / locate the C library (--build [--prefix DIR], --cflags, --libs)"),
    "cache": ("ncnn_c.tools.cache_cli", "pipeline cache files: inspect, verify, build ahead of time"),
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m ncnn_c", description="ncnn_c command-line tools")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name, (module, help_text) in COMMANDS.items():
        mod = importlib.import_module(module)
        p = sub.add_parser(name, help=help_text, description=help_text)
        mod.add_arguments(p)
        p.set_defaults(_run=mod.run)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)  # usage errors exit with 2
    return int(args._run(args))


if __name__ == "__main__":
    sys.exit(main())
