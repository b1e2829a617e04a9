"""Classify an image with SqueezeNet v1.1, keeping the Vulkan pipeline cache between runs.

    python examples/squeezenet.py [IMAGE] [--cpu] [--models DIR] [--cache URL]
    python examples/squeezenet.py --cold-warm    # twice in fresh processes: without the cache, then with it

The first run on a machine compiles every shader (cold); later runs load the cache and
compile nothing (warm). The cache is kept in the per-user default store, the one
``python -m ncnn_c run`` uses (``sqlite:///<cache dir>/pipelines.sqlite3``,
``$NCNN_C_CACHE_DIR`` to move it), as the entry of model key ``squeezenet_v1.1`` and this
device, unless ``--cache`` names another store (``file:///dir``, ``sqlite:///path.db``,
``postgresql://...``). Look into it with
``python -m ncnn_c cache inspect --store URL --key squeezenet_v1.1``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np
from PIL import Image

import ncnn_c as ncnn
from ncnn_c.cache.paths import default_store_url
from ncnn_c.cache.stores import open_store, redact_url

DEFAULT_MODELS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "models")
MODEL = "squeezenet_v1.1"


def load_labels(models: str) -> list[str]:
    """ImageNet's class names (``synset_words.txt``: a WordNet id, then the names)."""
    with open(os.path.join(models, "synset_words.txt"), encoding="utf-8") as f:
        return [line.strip().partition(" ")[2] for line in f if line.strip()]


def classify(image_path: str, models: str, use_gpu: bool, cache_url: str | None, load: bool = True) -> dict:
    """Load the net (with the pipeline cache on the GPU), run one image, return timings and the top 5.

    ``load`` False starts without the stored cache (the cold run of ``--cold-warm``); the
    cache is saved either way."""
    net = ncnn.Net()
    net.opt.use_vulkan_compute = use_gpu
    cache = store = None
    cache_loaded = False
    if use_gpu:
        vkdev = ncnn.get_gpu_device(0)
        if vkdev is None:
            raise SystemExit("no Vulkan device: run with --cpu")
        net.set_vulkan_device(vkdev)
        cache_url = cache_url or default_store_url()
        store = open_store(cache_url)
        cache = ncnn.PipelineCache(vkdev)
        # a missing or rejected entry is only a cache miss
        cache_loaded = load and store.load_into(cache, MODEL) == 0
        net.opt.pipeline_cache = cache  # before load_model: pipelines are made there

    t0 = time.perf_counter()
    if net.load_param(os.path.join(models, MODEL + ".param")) != 0:
        raise SystemExit("failed to load the param file")
    if net.load_model(os.path.join(models, MODEL + ".bin")) != 0:
        raise SystemExit("failed to load the weights")
    t1 = time.perf_counter()

    # SqueezeNet was trained on BGR images with the mean subtracted and no scaling
    with Image.open(image_path) as im:
        bgr = np.ascontiguousarray(np.asarray(im.convert("RGB"))[:, :, ::-1])
    h, w = bgr.shape[:2]
    mat_in = ncnn.Mat.from_pixels_resize(bgr, ncnn.Mat.PixelType.PIXEL_BGR, w, h, 227, 227)
    mat_in.substract_mean_normalize([104.0, 117.0, 123.0], [])

    ex = net.create_extractor()
    ex.input("data", mat_in)
    ret, out = ex.extract("prob")
    t2 = time.perf_counter()
    if ret != 0:
        raise SystemExit(f"extract failed: {ret}")
    scores = np.array(out).reshape(-1)
    top5 = [(int(i), float(scores[i])) for i in np.argsort(-scores)[:5]]

    stats = {}
    if cache is not None and store is not None:
        stats = cache.stats()
        # merged: other models' and other processes' pipelines in the entry stay
        store.save_from(cache, MODEL, merge=True)
        store.close()
    return {
        "device": "vulkan" if use_gpu else "cpu",
        "cache": redact_url(cache_url) if use_gpu and cache_url else None,
        "cache_loaded": cache_loaded,
        "load_model_s": t1 - t0,
        "first_inference_s": t2 - t1,
        "top5": top5,
        "stats": {k: v for k, v in stats.items() if isinstance(v, (int, float, str))},
    }


def cold_warm(image_path: str, models: str, cache_url: str | None) -> int:
    """Classify twice in fresh processes: without the stored cache, then with the one the first run saved."""
    cache_url = cache_url or default_store_url()
    runs = []
    for label in ("cold", "warm"):
        cmd = [sys.executable, __file__, image_path, "--models", models, "--cache", cache_url, "--json"]
        if label == "cold":
            cmd.append("--no-load")  # the store is shared: its entry stays, this run ignores it
        res = subprocess.run(cmd, capture_output=True, text=True)
        if res.returncode != 0:
            sys.stderr.write(res.stdout + res.stderr)
            return res.returncode
        runs.append((label, json.loads(res.stdout.strip().splitlines()[-1])))
    for label, r in runs:
        s = r["stats"]
        print(
            f"{label}: cache loaded={r['cache_loaded']}  load_model {r['load_model_s'] * 1000:.1f} ms  "
            f"first inference {r['first_inference_s'] * 1000:.1f} ms  "
            f"compiled={s.get('compiled')} spirv_hits={s.get('spirv_hits')} "
            f"artifact_hits={s.get('artifact_hits')} pipelines={s.get('pipelines_created')}"
        )
    print(f"cache store: {redact_url(cache_url)} (model key {MODEL})")
    labels = load_labels(models)
    for i, p in runs[-1][1]["top5"]:
        print(f"  {p:.4f}  class {i:3d}  {labels[i]}")
    same = runs[0][1]["top5"][0][0] == runs[1][1]["top5"][0][0]
    print("cold and warm agree on the top class:", same)
    return 0 if same else 1


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("image", nargs="?", default=os.path.join(DEFAULT_MODELS, "256-ncnn.png"))
    ap.add_argument("--models", default=DEFAULT_MODELS, help="directory with the model and synset_words.txt")
    ap.add_argument("--cpu", action="store_true", help="run on the CPU instead of Vulkan")
    ap.add_argument(
        "--cache",
        metavar="URL",
        help="the pipeline cache store (default: sqlite:///<per-user cache dir>/pipelines.sqlite3)",
    )
    ap.add_argument(
        "--no-load", action="store_true", help="start without the stored cache (it is still saved)"
    )
    ap.add_argument("--cold-warm", action="store_true", help="time a cold and a warm start")
    ap.add_argument("--json", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.cold_warm:
        return cold_warm(args.image, args.models, args.cache)
    r = classify(args.image, args.models, not args.cpu, args.cache, load=not args.no_load)
    if args.json:
        print(json.dumps(r))
        return 0
    cache = f", cache loaded from {r['cache']}: {r['cache_loaded']}" if r["cache"] else ""
    print(
        f"{r['device']}: load_model {r['load_model_s'] * 1000:.1f} ms, first inference "
        f"{r['first_inference_s'] * 1000:.1f} ms{cache}"
    )
    labels = load_labels(args.models)
    for i, p in r["top5"]:
        print(f"  {p:.4f}  class {i:3d}  {labels[i]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
