"""Keep the Vulkan pipeline cache in SQLite, as a service keeps its state in a database.

    python examples/cache_sqlite.py [IMAGE] [--db FILE] [--models DIR]

``ncnn_c.cachestore.SqliteStore`` holds one row per (model, device class): the cache is
loaded into a ``PipelineCache`` before the model is loaded (a missing or rejected row is a
cache miss, never an error) and saved back, merged with what other processes stored, after
the first inference. Run it twice: the second run loads the cache and compiles nothing.
The database defaults to the per-user default store, ``pipelines.sqlite3`` in the per-user
cache directory, which ``python -m ncnn_c run`` and ``examples/squeezenet.py`` share: one
row per model key. Look into a row with
``python -m ncnn_c cache inspect --store sqlite:///DB --key squeezenet_v1.1``.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np
from PIL import Image

import ncnn_c as ncnn
from ncnn_c.cache.paths import default_store_path, device_key
from ncnn_c.cache.stores import SqliteStore

MODELS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "models")
MODEL = "squeezenet_v1.1"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("image", nargs="?", default=os.path.join(MODELS, "256-ncnn.png"))
    ap.add_argument("--db", default=default_store_path(), help="the SQLite store (default: %(default)s)")
    ap.add_argument("--models", default=MODELS)
    args = ap.parse_args()

    vkdev = ncnn.get_gpu_device(0)
    if vkdev is None:
        print("no Vulkan device", file=sys.stderr)
        return 1
    os.makedirs(os.path.dirname(os.path.abspath(args.db)), exist_ok=True)
    with SqliteStore(args.db) as store:
        cache = ncnn.PipelineCache(vkdev)
        loaded = store.load_into(cache, MODEL) == 0

        net = ncnn.Net()
        net.opt.use_vulkan_compute = True
        net.set_vulkan_device(vkdev)
        net.opt.pipeline_cache = cache
        t0 = time.perf_counter()
        if (
            net.load_param(os.path.join(args.models, MODEL + ".param")) != 0
            or net.load_model(os.path.join(args.models, MODEL + ".bin")) != 0
        ):
            print("failed to load the model", file=sys.stderr)
            return 1
        load_ms = (time.perf_counter() - t0) * 1000

        with Image.open(args.image) as im:
            bgr = np.ascontiguousarray(np.asarray(im.convert("RGB"))[:, :, ::-1])
        mat = ncnn.Mat.from_pixels_resize(
            bgr, ncnn.Mat.PixelType.PIXEL_BGR, bgr.shape[1], bgr.shape[0], 227, 227
        )
        mat.substract_mean_normalize([104.0, 117.0, 123.0], [])
        ex = net.create_extractor()
        ex.input("data", mat)
        ret, out = ex.extract("prob")
        if ret != 0:
            print("extract failed", file=sys.stderr)
            return 1
        top = int(np.argmax(np.array(out)))

        # merge: another process may have stored pipelines of other shapes meanwhile
        if store.save_from(cache, MODEL, merge=True) != 0:
            print("saving the cache failed", file=sys.stderr)
            return 1
        dkey = device_key(vkdev)
        size = len(store.get(MODEL, dkey) or b"")

    with open(os.path.join(args.models, "synset_words.txt"), encoding="utf-8") as f:
        label = f.read().splitlines()[top].partition(" ")[2]
    stats = cache.stats()
    print(
        f"cache from SQLite: {'loaded' if loaded else 'miss'}; load_model {load_ms:.1f} ms; "
        f"compiled {stats['compiled']} shaders; {size} cache bytes stored for device {dkey} in {args.db}"
    )
    print(f"top class {top}: {label}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
