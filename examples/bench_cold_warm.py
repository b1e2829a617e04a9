"""Cold vs warm start of SqueezeNet on Vulkan, against the PyPI ``ncnn`` in the same run.

Each measurement runs in a fresh process (nothing survives in memory), the Vulkan device
is created before the clock starts, and the median of --repeat runs is printed:

* ncnn_c cold : no cache (every shader compiled)
* ncnn_c warm : the cache the cold run stored is loaded first
* ncnn (PyPI) : its load_model on the same device (it keeps no cache between runs)

The cache is kept as applications keep it, in a SQLite store (``ncnn_c.cache.stores``), here
a throwaway one in a temporary directory, one model key per repetition so that every cold run
starts empty. The PyPI ``ncnn`` is only used here, as the yardstick; ncnn_c never imports it.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODELS = os.path.join(ROOT, "models")

CHILD_NCNN_C = r"""
import json, time
import numpy as np
import ncnn_c as ncnn
from ncnn_c.cache.stores import open_store
store = open_store({store!r})
vkdev = ncnn.get_gpu_device(0)
cache = ncnn.PipelineCache(vkdev)
loaded = store.load_into(cache, {model_key!r}) == 0 if {warm} else False
net = ncnn.Net()
net.opt.use_vulkan_compute = True
net.set_vulkan_device(vkdev)
net.opt.pipeline_cache = cache
net.load_param({param!r})
t0 = time.perf_counter()
ret = net.load_model({bin!r})
t1 = time.perf_counter()
ex = net.create_extractor()
ex.input("data", ncnn.Mat(np.random.RandomState(0).rand(3, 227, 227).astype(np.float32)))
r, out = ex.extract("prob")
t2 = time.perf_counter()
if not {warm}:
    store.save_from(cache, {model_key!r})
s = cache.stats()
print(json.dumps(dict(ret=ret, loaded=loaded, load_model=t1 - t0, first_inference=t2 - t1,
                      compiled=s["compiled"], spirv_hits=s["spirv_hits"], artifact_hits=s["artifact_hits"])))
"""

CHILD_NCNN = r"""
import json, time
import numpy as np
import ncnn
net = ncnn.Net()
net.opt.use_vulkan_compute = True
net.set_vulkan_device(0)
net.load_param({param!r})
t0 = time.perf_counter()
ret = net.load_model({bin!r})
t1 = time.perf_counter()
ex = net.create_extractor()
ex.input("data", ncnn.Mat(np.random.RandomState(0).rand(3, 227, 227).astype(np.float32)))
r, out = ex.extract("prob")
t2 = time.perf_counter()
print(json.dumps(dict(ret=ret, load_model=t1 - t0, first_inference=t2 - t1)))
"""


def run_child(code: str) -> dict:
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    if res.returncode != 0:
        raise SystemExit(f"child failed:\n{res.stdout}\n{res.stderr}")
    return json.loads(res.stdout.strip().splitlines()[-1])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    import importlib.util

    if importlib.util.find_spec("ncnn") is None:  # say so before minutes of ncnn_c runs
        print(
            "bench_cold_warm: the PyPI ncnn is not installed (pip install ncnn): nothing to compare with",
            file=sys.stderr,
        )
        return 1
    param = os.path.join(MODELS, "squeezenet_v1.1.param")
    weights = os.path.join(MODELS, "squeezenet_v1.1.bin")
    load_before = "/".join(f"{v:.2f}" for v in os.getloadavg())
    with tempfile.TemporaryDirectory() as tmp:
        store = "sqlite:///" + os.path.join(tmp, "pipelines.sqlite3").lstrip("/")
        cold, warm, ref = [], [], []
        for i in range(args.repeat):
            fmt = dict(store=store, model_key=f"squeezenet_v1.1-{i}", param=param, bin=weights)
            cold.append(run_child(CHILD_NCNN_C.format(warm=False, **fmt)))
            warm.append(run_child(CHILD_NCNN_C.format(warm=True, **fmt)))
            ref.append(run_child(CHILD_NCNN.format(**fmt)))

    def med(rows, key):
        return statistics.median(r[key] for r in rows) * 1000

    print(f"{'':14s} {'load_model ms':>14s} {'1st infer ms':>13s} {'compiled':>9s}")
    print(
        f"{'ncnn_c cold':14s} {med(cold, 'load_model'):14.1f} {med(cold, 'first_inference'):13.1f} {cold[-1]['compiled']:9d}"
    )
    print(
        f"{'ncnn_c warm':14s} {med(warm, 'load_model'):14.1f} {med(warm, 'first_inference'):13.1f} {warm[-1]['compiled']:9d}"
    )
    print(f"{'ncnn (PyPI)':14s} {med(ref, 'load_model'):14.1f} {med(ref, 'first_inference'):13.1f} {'-':>9s}")
    ratio = med(warm, "load_model") / med(ref, "load_model")
    print(f"warm load_model / PyPI ncnn load_model = {ratio:.2f}  (target <= 1.00)")
    print(f"cold load_model / warm load_model      = {med(cold, 'load_model') / med(warm, 'load_model'):.2f}")
    load_after = "/".join(f"{v:.2f}" for v in os.getloadavg())
    print(
        f"medians of {args.repeat} fresh processes each; load average (1/5/15 min) before {load_before}, after {load_after}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
