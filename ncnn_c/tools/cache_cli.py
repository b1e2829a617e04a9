"""``python -m ncnn_c cache``: look into, check and build pipeline cache files.

    python -m ncnn_c cache inspect FILE [--device N | --no-device] [--json]
    python -m ncnn_c cache verify FILE [--device N | --no-device]
    python -m ncnn_c cache build MODEL.param [MODEL.bin] [--input WxHxC ...]
                                 (-o FILE | --store URL [--model-key K]) [--merge]
                                 [--opt NAME=VALUE ...] [--device N] [--no-forward]

``inspect`` prints the header, the section sizes, the entry list (shader name, option bits,
sizes) and, for this library and the chosen device (default: the default GPU, when there is
one), every check with what the file has and what would be accepted. ``verify`` prints the
verdict ``PipelineCache.load_cache`` would reach, in one line.

``build`` prepares a cache before the first user arrives: it loads the network on the GPU
with ncnn's default options (change them with ``--opt``, exactly as the application will set
them: the cache is keyed by those options), which creates every pipeline the layers make in
``load_model``, then runs one inference on zeros so that the pipelines layers create on
first use (shape-dependent ones) are made too, and saves the cache to a file or a store
(``file:///dir``, ``sqlite:///path.db``, ``postgresql://...``; see docs/cache-stores.md).
A later run with the same model, input shape, options and device then compiles nothing.
Without a .bin every weight is zero: pipelines do not depend on weight values.

Exit codes: 0 done (``inspect``/``verify``: the file would be accepted), 1 failure (the file
would be rejected, the model did not load or run, the cache could not be saved), 2 usage.
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
import time
from pathlib import Path

EXIT_OK, EXIT_FAIL, EXIT_USAGE = 0, 1, 2


class UsageError(Exception):
    """Bad command-line values: exit code 2."""


class Failure(Exception):
    """The work failed: exit code 1."""


# -- arguments -------------------------------------------------------------------------------


def _add_device(p: argparse.ArgumentParser) -> None:
    g = p.add_mutually_exclusive_group()
    g.add_argument(
        "--device", type=int, default=None, metavar="N", help="Vulkan device index (default: the default GPU)"
    )
    g.add_argument(
        "--no-device",
        action="store_true",
        help="check only what needs no device (format, checksums, entries against this library)",
    )


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.formatter_class = argparse.RawDescriptionHelpFormatter
    p.epilog = "exit codes: 0 ok, 1 failure (or a rejected file), 2 usage"
    sub = p.add_subparsers(dest="cache_command", metavar="ACTION", required=True)

    pi = sub.add_parser(
        "inspect",
        help="header, sections, entries, and field by field whether this machine accepts the file",
        description="Print what a cache file holds and, for this library and device, whether each field"
        " would be accepted and why not. Exit 0 when the file would be accepted, 1 when not.",
    )
    pi.add_argument("file", help="the cache file")
    _add_device(pi)
    pi.add_argument("--json", action="store_true", help="print the report as JSON instead of text")

    pv = sub.add_parser(
        "verify",
        help="exit 0 if this machine would accept the file, 1 if not; one line why",
        description="One line: would PipelineCache.load_cache accept FILE here, and why not."
        " Exit 0 accepted, 1 rejected, 2 usage.",
    )
    pv.add_argument("file", help="the cache file")
    _add_device(pv)

    pb = sub.add_parser(
        "build",
        help="create every pipeline a network needs and save the cache (a full hit for later runs)",
        description="Load the network on the GPU (every pipeline of load_model), run one inference on"
        " zeros (the pipelines created on first use), save the cache to a file or a store.",
    )
    pb.add_argument("param", help="the .param file")
    pb.add_argument("model", nargs="?", help="the .bin file (default: zero weights)")
    pb.add_argument(
        "--input",
        action="append",
        metavar="WxHxC",
        help="input shape, W / WxH / WxHxC / WxHxDxC; once per input (default: the Input params)",
    )
    out = pb.add_mutually_exclusive_group(required=True)
    out.add_argument("-o", "--output", metavar="FILE", help="the cache file to write")
    out.add_argument(
        "--store", metavar="URL", help="a cache store: file:///dir, sqlite:///path.db, postgresql://..."
    )
    pb.add_argument(
        "--model-key", metavar="K", help="the model's key in the store (default: the .param file name)"
    )
    pb.add_argument(
        "--merge", action="store_true", help="merge with the cache already there instead of replacing it"
    )
    pb.add_argument(
        "--opt",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="an Option flag as the application sets it, e.g. use_fp16_storage=0 (repeatable)",
    )
    pb.add_argument(
        "--device", type=int, default=None, metavar="N", help="Vulkan device index (default: the default GPU)"
    )
    pb.add_argument(
        "--no-forward", action="store_true", help="skip the inference on zeros (load_model's pipelines only)"
    )
    pb.add_argument("--quiet", action="store_true", help="no progress bar")


# -- inspect / verify ------------------------------------------------------------------------


def _device_arg(args):
    if args.no_device:
        return False
    return args.device  # None: the default GPU, when there is one


def _check_file(path: str) -> None:
    if not Path(path).exists():
        raise Failure(f"{path}: no such file")


def cmd_inspect(args) -> int:
    from ..gpu import cacheinspect

    _check_file(args.file)
    report = cacheinspect.inspect(args.file, _device_arg(args))
    if args.json:
        print(json.dumps(report, indent=1, default=_json_default))
    else:
        print(cacheinspect.format_report(report))
    return EXIT_OK if report["accepted"] else EXIT_FAIL


def _json_default(v):
    if isinstance(v, (bytes, bytearray)):
        return v.hex()
    return str(v)


def cmd_verify(args) -> int:
    from ..gpu import cacheinspect

    _check_file(args.file)
    ok, reason = cacheinspect.verify(args.file, _device_arg(args))
    print(f"{args.file}: {'accepted' if ok else 'rejected'}: {reason}")
    return EXIT_OK if ok else EXIT_FAIL


# -- build -----------------------------------------------------------------------------------


class _Bar:
    """tqdm when it is installed, else a self-overwriting line on stderr."""

    def __init__(self, total: int, desc: str, enabled: bool) -> None:
        self.enabled = enabled
        self.total, self.desc = total, desc
        self.n = 0
        self._tqdm = None
        self._plain_shown = False
        if not enabled:
            return
        try:
            # imported by name: an optional dependency, and untyped
            tqdm = importlib.import_module("tqdm").tqdm
            self._tqdm = tqdm(total=total, desc=desc, unit="step", file=sys.stderr, leave=True)
        except ImportError:
            pass

    def set_total(self, total: int) -> None:
        self.total = total
        if self._tqdm is not None:
            self._tqdm.total = total
            self._tqdm.refresh()

    def update_to(self, n: int, note: str = "") -> None:
        if not self.enabled:
            return
        step, self.n = n - self.n, n
        if self._tqdm is not None:
            if note:
                self._tqdm.set_postfix_str(note, refresh=False)
            self._tqdm.update(step)
            return
        sys.stderr.write(f"\r{self.desc}: {n}/{self.total} {note}".rstrip() + "   ")
        sys.stderr.flush()
        self._plain_shown = True

    def close(self) -> None:
        if self._tqdm is not None:
            self._tqdm.close()
        elif self._plain_shown:
            sys.stderr.write("\n")
            sys.stderr.flush()


def _parse_opts(items: list[str], opt) -> None:
    for item in items:
        name, sep, value = item.partition("=")
        name = name.strip()
        if not sep or not name or name.startswith("_") or not hasattr(opt, name):
            raise UsageError(f"--opt {item!r}: expected NAME=VALUE with NAME an Option attribute")
        current = getattr(opt, name)
        if name in (
            "pipeline_cache",
            "blob_allocator",
            "workspace_allocator",
            "blob_vkallocator",
            "workspace_vkallocator",
            "staging_vkallocator",
        ):
            raise UsageError(f"--opt {name}: not settable from the command line")
        text = value.strip().lower()
        try:
            if isinstance(current, bool):
                if text not in ("0", "1", "true", "false", "on", "off", "yes", "no"):
                    raise ValueError(value)
                setattr(opt, name, text in ("1", "true", "on", "yes"))
            elif isinstance(current, int):
                setattr(opt, name, int(text, 0))
            elif isinstance(current, float):
                setattr(opt, name, float(text))
            else:
                raise UsageError(f"--opt {name}: not a bool, int or float option")
        except ValueError:
            raise UsageError(f"--opt {item!r}: {value!r} is not a valid {type(current).__name__}") from None


def cmd_build(args) -> int:
    import numpy as np

    import ncnn_c

    from . import bench

    if not Path(args.param).is_file():
        raise UsageError(f"no such file: {args.param}")
    if args.model is not None and not Path(args.model).is_file():
        raise UsageError(f"no such file: {args.model}")
    if args.model_key is not None and not args.store:
        raise UsageError("--model-key only goes with --store")
    try:
        given = [bench.parse_shape(s) for s in args.input] if args.input else None
    except bench.UsageError as e:
        raise UsageError(str(e)) from None
    store = None
    if args.store:
        from ..cachestore import CacheStoreError, open_store

        try:
            store = open_store(args.store)
        except CacheStoreError as e:
            raise UsageError(str(e)) from None
    model_key = args.model_key or Path(args.param).name

    count = ncnn_c.get_gpu_count()
    if count <= 0:
        raise Failure("no Vulkan device: a pipeline cache needs one")
    index = ncnn_c.get_default_gpu_index() if args.device is None else args.device
    if not 0 <= index < count:
        raise UsageError(f"--device {index}: there are {count} Vulkan devices")
    vkdev = ncnn_c.get_gpu_device(index)
    if vkdev is None:
        raise Failure(f"Vulkan device {index} could not be opened")

    cache = ncnn_c.PipelineCache(vkdev)
    net = ncnn_c.Net()
    try:
        _parse_opts(args.opt, net.opt)
        net.opt.use_vulkan_compute = True
        net.opt.pipeline_cache = cache
        net.set_vulkan_device(vkdev)
        if net.load_param(args.param) != 0:
            raise Failure(f"cannot load {args.param} (see the message above)")
        shapes = None
        if not args.no_forward:
            try:
                shapes = bench.resolve_shapes(bench.input_specs(net), given)
            except bench.UsageError as e:
                raise UsageError(str(e)) from None
        layers = len(net.layers())
        bar = _Bar(
            layers + (0 if args.no_forward else 1), f"cache build {Path(args.param).stem}", not args.quiet
        )
        t0 = time.perf_counter()
        try:

            def progress(done: int, total: int) -> None:
                st = cache.stats()
                bar.update_to(done, f"{st['pipelines_created']} pipelines, {st['compiled']} compiled")

            net.load_progress = progress
            weights = args.model if args.model is not None else ncnn_c.DataReaderFromEmpty()
            if net.load_model(weights) != 0:
                raise Failure("load_model failed (see the message above)")
            if net.vulkan_device() is None or not net.opt.use_vulkan_compute:
                raise Failure("the network did not load on the GPU")
            bar.update_to(layers, f"{cache.stats()['pipelines_created']} pipelines")
            if shapes is not None:
                ex = net.create_extractor()
                for name, shape in shapes:
                    ex.input(name, ncnn_c.Mat(np.zeros(tuple(reversed(shape)), np.float32)))
                for name in net.output_names():
                    ret, _ = ex.extract(name)
                    if ret != 0:
                        raise Failure(f"the inference on zeros failed at extract({name!r}) ({ret})")
                bar.update_to(layers + 1, f"{cache.stats()['pipelines_created']} pipelines")
        finally:
            bar.close()
        elapsed = time.perf_counter() - t0

        if store is not None:
            if store.save_from(cache, model_key, merge=args.merge) != 0:
                raise Failure(f"cannot save to {args.store} (see the message above)")
            where = f"{args.store} [{model_key}]"
            data = store.get(model_key, _device_key(vkdev))
        else:
            if cache.save_cache(args.output, merge=args.merge) != 0:
                raise Failure(f"cannot save to {args.output} (see the message above)")
            where = args.output
            data = Path(args.output).read_bytes()
        st = cache.stats()
        from ..gpu import cacheinspect

        ok, reason = cacheinspect.verify(data if data is not None else b"", vkdev)
        if not ok:
            raise Failure(f"the saved cache would be rejected: {reason}")
        print(
            f"{where}: {len(data or b'')} bytes, {st['last_save_spirv_entries']} SPIR-V entries,"
            f" driver blob {st['driver_blob_bytes']} bytes; {st['pipelines_created']} pipelines,"
            f" {st['compiled']} compiled, {elapsed:.2f} s"
        )
        return EXIT_OK
    finally:
        net.clear()
        cache.destroy()
        if store is not None:
            store.close()


def _device_key(vkdev) -> str:
    from ..cachestore import device_key

    return device_key(vkdev)


# -- entry -----------------------------------------------------------------------------------

_ACTIONS = {"inspect": cmd_inspect, "verify": cmd_verify, "build": cmd_build}


def run(args: argparse.Namespace) -> int:
    """Entry point of the subcommand: maps failures to exit codes."""
    try:
        return _ACTIONS[args.cache_command](args)
    except UsageError as e:
        print(f"cache {args.cache_command}: {e}", file=sys.stderr)
        return EXIT_USAGE
    except Failure as e:
        print(f"cache {args.cache_command}: {e}", file=sys.stderr)
        return EXIT_FAIL
    except Exception as e:  # noqa: BLE001 - any other crash is a failure with a reason
        print(f"cache {args.cache_command}: failed: {type(e).__name__}: {e}", file=sys.stderr)
        return EXIT_FAIL


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m ncnn_c cache", description=__doc__.splitlines()[0])
    add_arguments(p)
    return run(p.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
