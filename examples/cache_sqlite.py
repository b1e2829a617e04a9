"""Keep the Vulkan pipeline cache as bytes in SQLite, as a service would keep it in its database.

    python examples/cache_sqlite.py [--db cache.sqlite3]

Uses the handle API (``ncnn_c.capi``: the functions of the C library, callable from Python):
``ncnn_pipelinecache_load_memory`` before loading the model, ``ncnn_pipelinecache_save_memory``
after it. One row per (model, device identity): a cache made for another GPU or driver would be
rejected by the library anyway, keying by identity just keeps one valid row per device.
Run it twice: the second run loads the cache from the database and compiles nothing.
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

import ncnn_c  # noqa: E402
from ncnn_c import capi  # noqa: E402

MODELS = os.path.join(os.path.dirname(HERE), "models")
MODEL = "squeezenet_v1.1"

SCHEMA = """
CREATE TABLE IF NOT EXISTS pipeline_cache (
    model   TEXT NOT NULL,
    device  TEXT NOT NULL,
    data    BLOB NOT NULL,
    saved   REAL NOT NULL,
    PRIMARY KEY (model, device)
)
"""


def device_key(index: int) -> str:
    info = ncnn_c.get_gpu_info(index)
    return f"{info.device_name()}|{info.driver_name()}|{info.driver_version()}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--db", default=os.path.join(MODELS, "pipeline_cache.sqlite3"))
    ap.add_argument("--models", default=MODELS)
    args = ap.parse_args()

    db = sqlite3.connect(args.db)
    db.execute(SCHEMA)
    key = (MODEL, device_key(0))

    pc = capi.ncnn_pipelinecache_create(0)
    row = db.execute("SELECT data FROM pipeline_cache WHERE model = ? AND device = ?", key).fetchone()
    # a missing or rejected cache is a cache miss, never an error for the application
    loaded = row is not None and capi.ncnn_pipelinecache_load_memory(pc, row[0], len(row[0])) == 0

    net = capi.ncnn_net_create()
    capi.ncnn_net_set_vulkan_device(net, 0)
    opt = capi.ncnn_net_get_option(net)  # the net's own option: flags set here change the net
    capi.ncnn_option_set_use_vulkan_compute(opt, 1)
    capi.ncnn_option_set_pipeline_cache(opt, pc)
    t0 = time.perf_counter()
    if (
        capi.ncnn_net_load_param(net, os.path.join(args.models, MODEL + ".param")) != 0
        or capi.ncnn_net_load_model(net, os.path.join(args.models, MODEL + ".bin")) != 0
    ):
        print("failed to load the model", file=sys.stderr)
        return 1
    load_ms = (time.perf_counter() - t0) * 1000

    # one inference, so that every pipeline has been used once before saving
    mat = capi.ncnn_mat_create_3d(227, 227, 3, 0)
    capi.ncnn_mat_fill_float(mat, 0.5)
    ex = capi.ncnn_extractor_create(net)
    capi.ncnn_extractor_input(ex, "data", mat)
    ret, out = capi.ncnn_extractor_extract(ex, "prob")
    if ret != 0:
        print("extract failed", file=sys.stderr)
        return 1
    classes = capi.ncnn_mat_get_w(out)

    data = capi.ncnn_pipelinecache_save_memory(pc)
    if data is None:
        print("saving the cache failed", file=sys.stderr)
        return 1
    db.execute(
        "INSERT OR REPLACE INTO pipeline_cache (model, device, data, saved) VALUES (?, ?, ?, ?)",
        (*key, sqlite3.Binary(data), time.time()),
    )
    db.commit()
    db.close()

    for h, destroy in (
        (out, capi.ncnn_mat_destroy),
        (mat, capi.ncnn_mat_destroy),
        (ex, capi.ncnn_extractor_destroy),
        (net, capi.ncnn_net_destroy),
        (pc, capi.ncnn_pipelinecache_destroy),
    ):
        destroy(h)

    print(
        f"cache from SQLite: {'loaded' if loaded else 'miss'}; load_model {load_ms:.1f} ms; "
        f"{classes} classes out; {len(data)} cache bytes stored for {key[1]!r}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
