"""``python -m ncnn_c cache``: look into, check and build pipeline cache files.

    python -m ncnn_c cache inspect (FILE | --store [URL] [--key K] [--device-key D])
                                   [--device N | --no-device] [--json]
    python -m ncnn_c cache verify (FILE | --store [URL] [--key K] [--device-key D])
                                  [--device N | --no-device]
    python -m ncnn_c cache build MODEL.param [MODEL.bin] [--input WxHxC ...]
                                 (-o FILE | --store [URL] [--model-key K]) [--merge]
                                 [--opt NAME=VALUE ...] [--device N] [--no-forward]

``inspect`` prints the header, the section sizes, the entry list (shader name, option bits,
sizes) and, for this library and the chosen device (default: the default GPU, when there is
one), every check with what the file has and what would be accepted. ``verify`` prints the
verdict ``PipelineCache.load_cache`` would reach, in one line. With ``--store`` both read
the store's entry for model key K and the device's key (or ``--device-key``). ``--store``
without a URL is the default store, ``sqlite:///<cache dir>/pipelines.sqlite3``, where
``run``, the examples and ``PipelineCache.save_cache()`` keep their caches; without
``--key`` the store's one entry for the device is read (a SQLite or PostgreSQL store lists
its model keys when it holds several; a directory store cannot, its files are named by hashes).
A cache store given as a FILE (a SQLite database) is named as such, with the ``--store``
command to use instead.

``build`` prepares a cache before the first user arrives: it loads the network on the GPU
with ncnn's default options (change them with ``--opt``, exactly as the application will set
them: the cache is keyed by those options), which creates every pipeline the layers make in
``load_model``, then runs one inference on zeros so that the pipelines layers create on
first use (shape-dependent ones) are made too, and saves the cache to a file or a store
(``file:///dir``, ``sqlite:///path.db``, ``postgresql://...``; see docs/cache-stores.md).
A later run with the same model, input shape, options and device then compiles nothing.
Without a .bin every weight is zero: pipelines do not depend on weight values.

Exit codes: 0 done (``inspect``/``verify``: the file would be accepted), 1 failure (the file
would be rejected or is missing, the model did not load or run, the cache could not be
saved), 2 usage (a ``--device`` that names no device included). ``inspect --json`` prints
one JSON document on stdout whatever happens: the report, or ``{"error": ..., "exit_code": N}``.
"""

from __future__ import annotations

import argparse
import errno
import importlib
import json
import os
import stat
import sys
import time
import urllib.parse
from pathlib import Path
from typing import NoReturn

EXIT_OK, EXIT_FAIL, EXIT_USAGE = 0, 1, 2


class UsageError(Exception):
    """Bad command-line values: exit code 2."""


class Failure(Exception):
    """The work failed: exit code 1."""


def _json_error(message: str, code: int) -> None:
    print(json.dumps({"error": message, "exit_code": code}, indent=1))


class _JsonAwareParser(argparse.ArgumentParser):
    """Reports its usage errors as JSON on stdout too when ``--json`` was given, so that a
    caller parsing stdout gets a document for every outcome (the usage still goes to stderr)."""

    _json = False

    def parse_known_args(self, args=None, namespace=None):
        self._json = args is not None and "--json" in args
        return super().parse_known_args(args, namespace)

    def error(self, message: str) -> NoReturn:
        if self._json:
            _json_error(message, EXIT_USAGE)
        super().error(message)


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


def _add_source(p: argparse.ArgumentParser) -> None:
    p.set_defaults(_parser=p)  # FILE vs --store is checked after parsing, reported as argparse would
    p.add_argument("file", nargs="?", help="the cache file (or --store [URL] [--key K])")
    p.add_argument(
        "--store",
        metavar="URL",
        nargs="?",
        const="",
        help="read an entry of a cache store: file:///dir, sqlite:///path.db, ... (no URL: the default"
        " store, sqlite:///<cache dir>/pipelines.sqlite3, which `run` and the examples use)",
    )
    p.add_argument(
        "--key",
        metavar="MODEL_KEY",
        help="with --store: the model key of the entry (default: the store's one entry for the device)",
    )
    p.add_argument(
        "--device-key",
        metavar="KEY",
        help="with --store: the entry of this device key (default: the device's own key)",
    )


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.formatter_class = argparse.RawDescriptionHelpFormatter
    p.epilog = "exit codes: 0 ok, 1 failure (or a rejected file), 2 usage"
    sub = p.add_subparsers(
        dest="cache_command", metavar="ACTION", required=True, parser_class=_JsonAwareParser
    )

    pi = sub.add_parser(
        "inspect",
        help="header, sections, entries, and field by field whether this machine accepts the file",
        description="Print what a cache file holds and, for this library and device, whether each field"
        " would be accepted and why not. Exit 0 when the file would be accepted, 1 when not.",
    )
    _add_source(pi)
    _add_device(pi)
    pi.add_argument("--json", action="store_true", help="print the report as JSON instead of text")

    pv = sub.add_parser(
        "verify",
        help="exit 0 if this machine would accept the file, 1 if not; one line why",
        description="One line: would PipelineCache.load_cache accept FILE here, and why not."
        " Exit 0 accepted, 1 rejected, 2 usage.",
    )
    _add_source(pv)
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
        "--store",
        metavar="URL",
        nargs="?",
        const="",
        help="a cache store: file:///dir, sqlite:///path.db, postgresql://... (no URL: the default store)",
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


def _device_index(requested: int | None) -> int | None:
    """``--device N`` checked against the devices there are; None (the default GPU) as is."""
    if requested is None:
        return None
    from ..gpu import device

    count = device.get_gpu_count()
    if not 0 <= requested < count:
        have = f"there are {count} Vulkan devices" if count else "there is no Vulkan device"
        raise UsageError(f"--device {requested}: no such device ({have})")
    return requested


def _device_arg(args):
    if args.no_device:
        return False
    return _device_index(args.device)  # None: the default GPU, when there is one


def _os_error(e: OSError) -> str:
    text = e.strerror or str(e)
    return f"{text} (a symbolic link loop)" if e.errno == errno.ELOOP else text


def _check_file(path: str) -> None:
    # os.stat, not Path.exists: exists() is False for a symlink loop or an unreadable
    # directory too, which would be reported as a missing file
    try:
        os.stat(path)
    except FileNotFoundError:
        dangling = " (a dangling symbolic link)" if os.path.islink(path) else ""
        raise Failure(f"{path}: no such file{dangling}") from None
    except OSError as e:
        raise Failure(f"{path}: {_os_error(e)}") from None


def _check_store_path(url: str) -> None:
    """A file:// or sqlite:// store must already exist: opening one creates it, and looking
    into a store must not leave a new empty one behind (nor a new table in a foreign database)."""
    from ..cache.stores import redact_url

    shown = redact_url(url)
    parts = urllib.parse.urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme not in ("file", "sqlite"):
        return
    path = urllib.parse.unquote(parts.path)
    if not path:
        return  # open_store says what is wrong with the URL
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise Failure(f"{shown}: no such store ({path} does not exist)") from None
    except OSError as e:
        raise Failure(f"{shown}: {path}: {_os_error(e)}") from None
    from ..cache.fileio import file_kind

    if scheme == "file":
        if not stat.S_ISDIR(st.st_mode):
            raise Failure(f"{shown}: {path} is {file_kind(st.st_mode)}, not a directory")
        return
    if not stat.S_ISREG(st.st_mode):
        raise Failure(f"{shown}: {path} is {file_kind(st.st_mode)}, not a SQLite database")
    import sqlite3

    from ..cache.stores import DEFAULT_TABLE

    try:
        # read-only, so that a foreign database is left exactly as it was; one leading "/"
        # (a URI path starting "//" would name a host)
        uri_path = urllib.parse.quote("/" + os.path.abspath(path).lstrip("/"))
        conn = sqlite3.connect(f"file:{uri_path}?mode=ro", uri=True)
        try:
            row = conn.execute(
                "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (DEFAULT_TABLE,)
            ).fetchone()
        finally:
            conn.close()
    except sqlite3.Error as e:
        raise Failure(f"{shown}: not a readable SQLite database ({e})") from None
    if row is None:
        raise Failure(f"{shown}: a SQLite database without the {DEFAULT_TABLE} table: not a cache store")


def _usage(args, message: str) -> NoReturn:
    parser = getattr(args, "_parser", None)
    if parser is not None:
        parser.error(message)  # usage and message on stderr, exit 2 (and JSON with --json)
    raise UsageError(message)


def _source(args, device) -> tuple[object, str]:
    """What to inspect or verify: (a path or the bytes of a store entry, how to name it)."""
    if args.store is None:
        if args.key is not None or args.device_key is not None:
            _usage(args, "--key and --device-key only go with --store")
        if args.file is None:
            _usage(args, "give a cache FILE, or --store URL --key MODEL_KEY")
        _check_file(args.file)
        return args.file, args.file
    if args.file is not None:
        _usage(args, "give a cache FILE or --store URL, not both")
    from ..cache.paths import default_store_url, device_key
    from ..cache.stores import CacheStoreError, open_store, redact_url

    url = args.store or default_store_url()
    shown = redact_url(url)

    dkey = args.device_key
    if dkey is None:
        if device is False:
            raise UsageError(
                "--store with --no-device needs --device-key KEY: entries are found by device key"
            )
        from ..gpu.device import get_gpu_device

        vkdev = get_gpu_device(device)
        if vkdev is None:
            raise UsageError("no Vulkan device to take the device key from: give --device-key KEY")
        dkey = device_key(vkdev)
    _check_store_path(url)
    try:
        store = open_store(url)
    except CacheStoreError as e:
        raise UsageError(str(e)) from None
    try:
        key = args.key if args.key is not None else _only_key(args, store, shown, dkey)
        data = store.get(key, dkey)
    except CacheStoreError as e:
        raise Failure(str(e)) from None
    finally:
        store.close()
    if data is None:
        raise Failure(f"{shown}: no entry for model key {key!r} and device key {dkey}")
    return data, f"{shown} [{key}] device {dkey}"


def _only_key(args, store, shown: str, dkey: str) -> str:
    """The model key of the store's one entry for ``dkey``; a usage error when there are several."""
    from ..cache.stores import CacheStoreError

    try:
        keys = store.model_keys(dkey)
    except CacheStoreError as e:
        _usage(args, f"--store {shown} needs --key MODEL_KEY: {e}")
    if not keys:
        raise Failure(f"{shown}: no entry for device key {dkey}")
    if len(keys) > 1:
        _usage(
            args,
            f"{shown} holds {len(keys)} entries for device key {dkey}: give --key, one of {', '.join(keys)}",
        )
    return keys[0]


def cmd_inspect(args) -> int:
    from ..gpu import cacheinspect

    device = _device_arg(args)
    src, name = _source(args, device)
    report = cacheinspect.inspect(src, device)
    if args.store is not None:
        report = {"source": name, **report}
    code = EXIT_OK if report["accepted"] else EXIT_FAIL
    if args.json:
        # the same two fields as a JSON error document: a caller checks "error" and "exit_code"
        if code != EXIT_OK:
            report.setdefault("error", report["reason"])
        report["exit_code"] = code
        print(json.dumps(report, indent=1, default=_json_default))
    else:
        if args.store is not None:
            print(f"entry: {name}")
        print(cacheinspect.format_report(report))
    return code


def _json_default(v):
    if isinstance(v, (bytes, bytearray)):
        return v.hex()
    return str(v)


def cmd_verify(args) -> int:
    from ..gpu import cacheinspect

    device = _device_arg(args)
    src, name = _source(args, device)
    ok, reason = cacheinspect.verify(src, device)
    print(f"{name}: {'accepted' if ok else 'rejected'}: {reason}")
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

    from ..cache import fileio
    from . import bench

    _input_file(args.param)
    if args.model is not None:
        _input_file(args.model)
    if args.output is not None:
        try:  # a directory or a FIFO is refused now, not after minutes of pipeline building
            fileio.check_target(args.output)
        except OSError as e:
            raise Failure(f"cannot save to {args.output}: {e}") from None
    if args.model_key is not None and args.store is None:
        raise UsageError("--model-key only goes with --store")
    try:
        given = [bench.parse_shape(s) for s in args.input] if args.input else None
    except bench.UsageError as e:
        raise UsageError(str(e)) from None
    store = None
    if args.store is not None:
        from ..cache.paths import default_store_url, device_key
        from ..cache.stores import CacheStoreError, open_store, redact_url

        url = args.store or default_store_url()
        try:
            store = open_store(url)
        except CacheStoreError as e:
            raise UsageError(str(e)) from None
    model_key = args.model_key or Path(args.param).name

    count = ncnn_c.get_gpu_count()
    if count <= 0:
        raise Failure("no Vulkan device: a pipeline cache needs one")
    index = _device_index(args.device)
    if index is None:
        index = ncnn_c.get_default_gpu_index()
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
                raise Failure(f"cannot save to {redact_url(url)} (see the message above)")
            where = f"{redact_url(url)} [{model_key}]"
            data = store.get(model_key, device_key(vkdev))
        else:
            if cache.save_cache(args.output, merge=args.merge) != 0:
                raise Failure(f"cannot save to {args.output} (see the message above)")
            where = args.output
            data = fileio.read_source(args.output)  # never blocks, should a FIFO appear there
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


def _input_file(path: str) -> None:
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise UsageError(f"no such file: {path}") from None
    except OSError as e:
        raise UsageError(f"{path}: {_os_error(e)}") from None
    if not stat.S_ISREG(st.st_mode):
        from ..cache.fileio import file_kind

        raise UsageError(f"{path}: not a regular file ({file_kind(st.st_mode)})")


# -- entry -----------------------------------------------------------------------------------

_ACTIONS = {"inspect": cmd_inspect, "verify": cmd_verify, "build": cmd_build}


def run(args: argparse.Namespace) -> int:
    """Entry point of the subcommand: maps failures to exit codes."""
    try:
        return _ACTIONS[args.cache_command](args)
    except UsageError as e:
        message, code = str(e), EXIT_USAGE
    except Failure as e:
        message, code = str(e), EXIT_FAIL
    except Exception as e:  # noqa: BLE001 - any other crash is a failure with a reason
        message, code = f"failed: {type(e).__name__}: {e}", EXIT_FAIL
    print(f"cache {args.cache_command}: {message}", file=sys.stderr)
    if getattr(args, "json", False):
        _json_error(message, code)
    return code


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m ncnn_c cache", description=__doc__.splitlines()[0])
    add_arguments(p)
    return run(p.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
