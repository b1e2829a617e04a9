"""``python -m ncnn_c run``: one image through a model, on the CPU or on Vulkan.

    python -m ncnn_c run MODEL.param MODEL.bin IMAGE [--device cpu|vulkan] [--gpu N]
                         [--size WxH] [--mean B,G,R] [--norm B,G,R] [--rgb]
                         [--labels FILE] [--top K] [--cache URL | --no-cache] [--json]

The image (any format Pillow reads: ``pip install 'ncnn_c[image]'``) is resized to the
model's input size (``--size``, else its Input layer's, else 224x224), as packed BGR unless
``--rgb``, and ``--mean`` / ``--norm`` are applied as ``Mat.substract_mean_normalize`` does.
A model knows none of these, so they are printed on stderr (and in ``--json``'s ``input``)
with where each came from. The one default taken from the model's file name: for a file
named ``squeezenet*`` the mean is ImageNet's 104,117,123 (``--mean 0`` for none).

Every output blob is printed with its shape and min / mean / max. An output of N scores
whose labels file has N lines is classified: the top K with class names. The labels file is
``--labels`` or ``synset_words.txt`` next to the .param (one class a line; a leading WordNet id
such as ``n01440764`` is dropped); without one, class indexes are printed.

On Vulkan the pipeline cache is kept in a store (``--cache``, default
``sqlite:///<cache dir>/pipelines.sqlite3`` under ``ncnn_c.cachestore.default_cache_dir()``),
keyed by the .param's digest and the device, so a second run compiles nothing.

Exit codes: 0 done, 1 the model or the image failed to load or to run, 2 usage error.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import logging
import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

EXIT_OK, EXIT_FAIL, EXIT_USAGE = 0, 1, 2
LABEL_FILES = ("synset_words.txt", "labels.txt")
SQUEEZENET_MEAN = (104.0, 117.0, 123.0)


class Failure(Exception):
    """The model or the image failed: exit code 1."""


class UsageError(Exception):
    """Bad option values: exit code 2."""


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("param", help="the model's .param (text) file")
    p.add_argument("bin", help="the model's .bin weights")
    p.add_argument("image", help="an image file (PNG, JPEG, ... anything Pillow reads)")
    p.add_argument("--device", choices=("cpu", "vulkan"), default="cpu", help="where to run (default cpu)")
    p.add_argument("--gpu", type=int, default=None, help="Vulkan device index (default: the default GPU)")
    p.add_argument("--size", help="input size WxH when the Input layer does not give it (default 224x224)")
    p.add_argument("--mean", help="per-channel mean to subtract, e.g. 104,117,123")
    p.add_argument("--norm", help="per-channel scale applied after the mean, e.g. 0.017,0.017,0.017")
    p.add_argument("--rgb", action="store_true", help="feed RGB instead of BGR (ncnn's usual order)")
    p.add_argument("--labels", help="class names, one a line (default: synset_words.txt next to the .param)")
    p.add_argument("--top", type=int, default=5, help="how many classes to print (default 5)")
    cache = p.add_mutually_exclusive_group()
    cache.add_argument(
        "--cache", help="pipeline cache store URL (sqlite:///..., file:///..., postgresql://...)"
    )
    cache.add_argument("--no-cache", action="store_true", help="do not load or save a pipeline cache")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of text")


def _floats(text: str | None, what: str) -> list[float]:
    if not text:
        return []
    try:
        vals = [float(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise UsageError(f"{what} {text!r}: expected comma-separated numbers") from None
    if len(vals) not in (1, 3):
        raise UsageError(f"{what} {text!r}: expected 1 or 3 values")
    return vals * 3 if len(vals) == 1 else vals


def _size(text: str | None) -> tuple[int, int] | None:
    if not text:
        return None
    parts = text.lower().split("x")
    try:
        w, h = (int(v) for v in parts) if len(parts) == 2 else (int(parts[0]), int(parts[0]))
    except ValueError:
        raise UsageError(f"--size {text!r}: expected WxH") from None
    if w <= 0 or h <= 0:
        raise UsageError(f"--size {text!r}: sizes must be positive")
    return w, h


def read_labels(path: str | os.PathLike) -> list[str]:
    """Class names from a text file, one a line; a leading WordNet id (``n01440764 ``) is dropped."""
    names = []
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        line = line.strip()
        head, _, rest = line.partition(" ")
        if rest and len(head) == 9 and head[0] == "n" and head[1:].isdigit():
            line = rest
        names.append(line)
    return names


def find_labels(param: str, given: str | None) -> list[str] | None:
    if given:
        try:
            return read_labels(given)
        except OSError as e:
            raise UsageError(f"--labels: {e}") from None
    for name in LABEL_FILES:
        cand = Path(param).resolve().parent / name
        if cand.is_file():
            return read_labels(cand)
    return None


def _progress(total: int, desc: str):
    """A tqdm bar on stderr that appears only once the work has taken a second, and only
    on a terminal: in a log its carriage-return frames are noise."""
    if not sys.stderr.isatty():
        return None
    try:
        from tqdm import tqdm  # type: ignore[import-untyped,unused-ignore]
    except ImportError:  # tqdm is optional: no bar
        return None
    return tqdm(total=total, desc=desc, delay=1.0, file=sys.stderr, leave=False)


def _step(bar, label: str) -> None:
    if bar is not None:
        bar.set_postfix_str(label, refresh=False)
        bar.update(1)


def _load_image(path: str, rgb: bool):
    import numpy as np

    try:
        from PIL import Image
    except ImportError:
        raise Failure("reading images needs Pillow: pip install 'ncnn_c[image]'") from None
    try:
        with Image.open(path) as im:
            arr = np.asarray(im.convert("RGB"))
    except (OSError, ValueError) as e:
        raise Failure(f"cannot read image {path}: {e}") from None
    return np.ascontiguousarray(arr if rgb else arr[:, :, ::-1])


def _input_size(net, given: tuple[int, int] | None) -> tuple[str, int, int, str]:
    """(input blob, w, h, where the size came from)."""
    from .bench import input_specs

    specs = input_specs(net)
    if not specs:
        raise Failure("the model has no Input layer")
    name, shape = specs[0]
    if given:
        return name, given[0], given[1], "--size"
    if shape is not None and len(shape) == 3:
        return name, shape[0], shape[1], "the model's Input layer"
    return name, 224, 224, "default: the Input layer gives no size (--size WxH to set it)"


def _mean(args: argparse.Namespace) -> tuple[list[float], str]:
    """(mean, where it came from): --mean, else the one file-name default, else none."""
    if args.mean:
        return _floats(args.mean, "--mean"), "--mean"
    if Path(args.param).name.lower().startswith("squeezenet"):
        return list(SQUEEZENET_MEAN), (
            "default for a model file named squeezenet*: ImageNet's mean (--mean B,G,R to change, --mean 0 for none)"
        )
    return [], "(--mean B,G,R to subtract one)"


def describe_preprocessing(pre: dict[str, Any]) -> str:
    """The preprocessing of ``run``'s ``input`` entry as lines for stderr."""

    def vals(v: list[float]) -> str:
        return ",".join(f"{x:g}" for x in v) if v else "none"

    src = pre["source"]
    rows = [
        ("size", f"{pre['w']}x{pre['h']}", src["size"]),
        ("order", pre["order"], src["order"]),
        ("mean", vals(pre["mean"]), src["mean"]),
        ("norm", vals(pre["norm"]), src["norm"]),
    ]
    lines = [
        f"ncnn_c run: preprocessing of input {pre['blob']!r} (a .param does not record it: check it is the model's):"
    ]
    lines += [f"  {k:<5} {v:<16} {how}" for k, v, how in rows]
    return "\n".join(lines)


@contextlib.contextmanager
def _quiet_log() -> Iterator[list[str]]:
    """ncnn_c's log lines kept back (a list of their messages) while a device is probed:
    the user sees one clear message instead of the library's internal ones."""
    logger = logging.getLogger("ncnn_c")
    kept: list[str] = []

    def keep(record: logging.LogRecord) -> bool:
        kept.append(record.getMessage())
        return False

    logger.addFilter(keep)
    try:
        yield kept
    finally:
        logger.removeFilter(keep)


def _vulkan_device(index: int | None):
    """The VulkanDevice to run on, or a Failure saying in one line why there is none."""
    import ncnn_c as ncnn

    with _quiet_log() as kept:
        count = ncnn.get_gpu_count()
        if count == 0:
            why = f" ({kept[0]})" if kept else ""
            raise Failure(f"no Vulkan device{why}: run with --device cpu; `ncnn_c info` lists the devices")
        if index is not None and not 0 <= index < count:
            raise Failure(
                f"no Vulkan device {index}: this machine has {count} (--gpu 0..{count - 1}); "
                "`ncnn_c info` lists them"
            )
        vkdev = ncnn.get_gpu_device(index)
    if vkdev is None:
        why = f": {kept[-1]}" if kept else ""
        raise Failure(f"the Vulkan device could not be opened{why}; run with --device cpu")
    return vkdev


def infer(args: argparse.Namespace) -> dict[str, Any]:
    import numpy as np

    import ncnn_c as ncnn

    size = _size(args.size)
    mean, mean_source = _mean(args)
    norm = _floats(args.norm, "--norm")
    if args.top <= 0:
        raise UsageError("--top must be positive")
    labels = find_labels(args.param, args.labels)
    for f in (args.param, args.bin, args.image):
        if not os.path.isfile(f):
            raise Failure(f"{f}: no such file")

    bar = _progress(4, f"run {Path(args.param).stem}")
    try:
        net = ncnn.Net()
        cache = store = None
        cache_loaded = False
        model_key = ""
        if args.device == "vulkan":
            vkdev = _vulkan_device(args.gpu)
            net.opt.use_vulkan_compute = True
            net.set_vulkan_device(vkdev)
            if not args.no_cache:
                from ncnn_c.cache.paths import default_store_url
                from ncnn_c.cachestore import open_store, redact_url

                # open_store creates the default cache directory, and refuses a URL whose
                # directory does not exist rather than making directories anywhere
                url = args.cache or default_store_url()
                try:
                    store = open_store(url)
                except Exception as e:
                    raise UsageError(f"--cache {redact_url(url)!r}: {e}") from None
                digest = hashlib.sha256(Path(args.param).read_bytes()).hexdigest()[:16]
                model_key = f"{Path(args.param).stem}-{digest}"
                cache = ncnn.PipelineCache(vkdev)
                cache_loaded = store.load_into(cache, model_key) == 0  # a miss is not an error
                net.opt.pipeline_cache = cache

        t0 = time.perf_counter()
        if net.load_param(args.param) != 0:
            raise Failure(f"cannot load {args.param} (see the message above)")
        _step(bar, "param")
        if net.load_model(args.bin) != 0:
            raise Failure(f"cannot load {args.bin} (see the message above)")
        _step(bar, "weights")
        t1 = time.perf_counter()

        in_name, w, h, size_source = _input_size(net, size)
        pre: dict[str, Any] = {
            "blob": in_name,
            "w": w,
            "h": h,
            "mean": mean,
            "norm": norm,
            "order": "RGB" if args.rgb else "BGR",
            "source": {
                "size": size_source,
                "order": "--rgb" if args.rgb else "default: ncnn's usual BGR (--rgb for RGB)",
                "mean": mean_source,
                "norm": "--norm" if norm else "(--norm B,G,R to scale after the mean)",
            },
        }
        print(describe_preprocessing(pre), file=sys.stderr)
        pixels = _load_image(args.image, args.rgb)
        ptype = ncnn.Mat.PixelType.PIXEL_RGB if args.rgb else ncnn.Mat.PixelType.PIXEL_BGR
        mat = ncnn.Mat.from_pixels_resize(pixels, ptype, pixels.shape[1], pixels.shape[0], w, h)
        if mean or norm:
            mat.substract_mean_normalize(mean, norm)
        _step(bar, "image")

        ex = net.create_extractor()
        if ex.input(in_name, mat) != 0:
            raise Failure(f"cannot feed input blob {in_name!r}")
        outputs = []
        for name in net.output_names():
            ret, out = ex.extract(name)
            if ret != 0:
                raise Failure(f"extracting {name!r} failed ({ret})")
            a = np.array(out, dtype=np.float32)
            entry: dict[str, Any] = {
                "name": name,
                "shape": _ncnn_shape(out),
                "min": float(a.min()) if a.size else 0.0,
                "mean": float(a.mean()) if a.size else 0.0,
                "max": float(a.max()) if a.size else 0.0,
            }
            flat = a.reshape(-1)
            # scores of N classes: N labels, or ImageNet's 1000 when there is no labels file
            if flat.size == (len(labels) if labels is not None else 1000):
                top = np.argsort(-flat, kind="stable")[: args.top]
                entry["top"] = [
                    {"class": int(i), "score": float(flat[i]), "label": labels[i] if labels else None}
                    for i in top
                ]
            outputs.append(entry)
        _step(bar, "inference")
        t2 = time.perf_counter()
    finally:
        if bar is not None:
            bar.close()

    result: dict[str, Any] = {
        "model": args.param,
        "device": args.device,
        "input": pre,
        "load_ms": (t1 - t0) * 1000,
        "inference_ms": (t2 - t1) * 1000,
        "outputs": outputs,
        "labels": labels is not None,
    }
    if cache is not None and store is not None:
        saved = store.save_from(cache, model_key, merge=True) == 0
        st = cache.stats()
        result["cache"] = {
            "store": repr(store),
            "loaded": cache_loaded,
            "saved": saved,
            "compiled": st.get("compiled"),
        }
        store.close()
    return result


def _ncnn_shape(m) -> list[int]:
    """The shape in ncnn's order: w, h, d, c, as many of them as the Mat has dims."""
    sizes = {1: (m.w,), 2: (m.w, m.h), 3: (m.w, m.h, m.c), 4: (m.w, m.h, m.d, m.c)}
    return [int(v) for v in sizes.get(int(m.dims), ())]


def _print_text(r: dict[str, Any]) -> None:
    i = r["input"]
    print(
        f"{r['model']} on {r['device']}: load {r['load_ms']:.1f} ms, inference {r['inference_ms']:.1f} ms; "
        f"input {i['blob']!r} {i['w']}x{i['h']} {i['order']}"
    )
    if "cache" in r:
        c = r["cache"]
        print(
            f"pipeline cache {c['store']}: loaded={c['loaded']} compiled={c['compiled']} saved={c['saved']}"
        )
    for o in r["outputs"]:
        shape = "x".join(map(str, o["shape"]))
        print(f"output {o['name']!r} [{shape}] min {o['min']:.6g} mean {o['mean']:.6g} max {o['max']:.6g}")
        for t in o.get("top", []):
            label = t["label"] if t["label"] is not None else "(no labels file)"
            print(f"  {t['score']:.4f}  class {t['class']:4d}  {label}")


def run(args: argparse.Namespace) -> int:
    try:
        r = infer(args)
    except UsageError as e:
        print(f"ncnn_c run: {e}", file=sys.stderr)
        return EXIT_USAGE
    except Failure as e:
        print(f"ncnn_c run: {e}", file=sys.stderr)
        return EXIT_FAIL
    if args.json:
        print(json.dumps(r, indent=2))
    else:
        _print_text(r)
    return EXIT_OK


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m ncnn_c run", description=__doc__.splitlines()[0])
    add_arguments(p)
    return run(p.parse_args(argv))
