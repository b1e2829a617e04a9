"""Classify an image with SqueezeNet v1.1, keeping the Vulkan pipeline cache next to the model.

    python examples/squeezenet.py [image.png] [--cpu] [--models DIR]
    python examples/squeezenet.py --cold-warm     # run twice in fresh processes: no cache, then with it

The first run on a machine compiles every shader (cold); later runs load
``squeezenet_v1.1.ncnn.vkcache`` and compile nothing (warm).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(HERE))

from pngread import read_png  # noqa: E402

import ncnn_c as ncnn  # noqa: E402

DEFAULT_MODELS = os.path.join(os.path.dirname(HERE), "models")


def classify(image_path: str, models: str, use_gpu: bool) -> dict:
    """Load the net (with the cache on the GPU), run one image, return timings and the top 5."""
    param = os.path.join(models, "squeezenet_v1.1.param")
    weights = os.path.join(models, "squeezenet_v1.1.bin")
    cache_path = os.path.join(models, "squeezenet_v1.1.ncnn.vkcache")

    net = ncnn.Net()
    net.opt.use_vulkan_compute = use_gpu
    cache = None
    cache_loaded = False
    if use_gpu:
        vkdev = ncnn.get_gpu_device(0)
        if vkdev is None:
            raise SystemExit("no Vulkan device: run with --cpu")
        net.set_vulkan_device(vkdev)
        cache = ncnn.PipelineCache(vkdev)
        # a rejected or missing cache file is only a cache miss
        cache_loaded = os.path.exists(cache_path) and cache.load_cache(cache_path) == 0
        net.opt.pipeline_cache = cache

    t0 = time.perf_counter()
    if net.load_param(param) != 0 or net.load_model(weights) != 0:
        raise SystemExit("failed to load the model")
    t1 = time.perf_counter()

    rgba = read_png(image_path)
    bgr = np.ascontiguousarray(rgba[:, :, [2, 1, 0]])
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
    if cache is not None:
        stats = cache.stats()
        cache.save_cache(cache_path)
    return {
        "device": "vulkan" if use_gpu else "cpu",
        "cache_loaded": cache_loaded,
        "load_model_s": t1 - t0,
        "first_inference_s": t2 - t1,
        "top5": top5,
        "stats": {k: v for k, v in stats.items() if isinstance(v, (int, float, str))},
    }


def cold_warm(image_path: str, models: str) -> int:
    """Run the classification twice in fresh processes: without the cache file, then with it."""
    cache_path = os.path.join(models, "squeezenet_v1.1.ncnn.vkcache")
    if os.path.exists(cache_path):
        os.remove(cache_path)
    runs = []
    for label in ("cold", "warm"):
        cmd = [sys.executable, __file__, image_path, "--models", models, "--json"]
        res = subprocess.run(cmd, capture_output=True, text=True)
        if res.returncode != 0:
            sys.stderr.write(res.stdout + res.stderr)
            return res.returncode
        r = json.loads(res.stdout.strip().splitlines()[-1])
        runs.append((label, r))
    for label, r in runs:
        s = r["stats"]
        print(
            f"{label}: cache file loaded={r['cache_loaded']}  load_model {r['load_model_s'] * 1000:.1f} ms  "
            f"first inference {r['first_inference_s'] * 1000:.1f} ms  "
            f"compiled={s.get('compiled')} spirv_hits={s.get('spirv_hits')} "
            f"artifact_hits={s.get('artifact_hits')} pipelines={s.get('pipelines_created')}"
        )
    top = runs[-1][1]["top5"]
    print("top-5 (class index, score):", ", ".join(f"{i}:{p:.4f}" for i, p in top))
    same = runs[0][1]["top5"][0][0] == runs[1][1]["top5"][0][0]
    print("cold and warm agree on the top class:", same)
    return 0 if same else 1


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("image", nargs="?", default=os.path.join(DEFAULT_MODELS, "256-ncnn.png"))
    ap.add_argument("--models", default=DEFAULT_MODELS)
    ap.add_argument("--cpu", action="store_true", help="run on the CPU instead of Vulkan")
    ap.add_argument("--cold-warm", action="store_true", help="time a cold and a warm start")
    ap.add_argument("--json", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.cold_warm:
        return cold_warm(args.image, args.models)
    r = classify(args.image, args.models, use_gpu=not args.cpu)
    if args.json:
        print(json.dumps(r))
    else:
        print(
            f"{r['device']}: load_model {r['load_model_s'] * 1000:.1f} ms, first inference "
            f"{r['first_inference_s'] * 1000:.1f} ms, cache file loaded: {r['cache_loaded']}"
        )
        for i, p in r["top5"]:
            print(f"  class {i}: {p:.4f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
