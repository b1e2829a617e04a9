"""A fresh process's warm start, for the cache tests: load a cache, load a network on the GPU,
run one inference, and print (as one JSON line) what the cache compiled and created when.

    python tests/_warm_child.py '{"param": ..., "bin": ..., "cache": PATH | null,
                                  "store": URL | null, "model_key": K, "opts": {...},
                                  "pipeline_threads": N | null, "save": PATH | null}'

``bin`` null means zero weights. The inputs are zeros of the Input layers' shapes (or
``shapes``: a list of ncnn-order shapes); ``out`` holds the first output's values.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def spawn(timeout: float = 300, **kw) -> dict:
    """Run this script in a fresh process with the arguments ``kw``; its JSON result (the
    test fails with the child's stderr when it does)."""
    import subprocess

    res = subprocess.run(
        [sys.executable, __file__, json.dumps(kw)], capture_output=True, text=True, timeout=timeout
    )
    assert res.returncode == 0, res.stderr[-3000:]
    return json.loads(res.stdout.strip().splitlines()[-1])


def main() -> None:
    import numpy as np

    import ncnn_c as ncnn
    from ncnn_c.tools import bench

    a = json.loads(sys.argv[1])
    vkdev = ncnn.get_gpu_device(0)
    cache = ncnn.PipelineCache(vkdev)
    loaded = None
    if a.get("cache"):
        loaded = cache.load_cache(a["cache"])
    elif a.get("store"):
        from ncnn_c.cachestore import open_store

        with open_store(a["store"]) as store:
            loaded = store.load_into(cache, a["model_key"])
    net = ncnn.Net()
    net.opt.use_vulkan_compute = True
    for k, v in (a.get("opts") or {}).items():
        setattr(net.opt, k, v)
    net.set_vulkan_device(vkdev)
    net.opt.pipeline_cache = cache
    if a.get("pipeline_threads") is not None:
        net.pipeline_threads = a["pipeline_threads"]
    assert net.load_param(a["param"]) == 0
    t0 = time.perf_counter()
    assert net.load_model(a["bin"] if a.get("bin") else ncnn.DataReaderFromEmpty()) == 0
    load_s = time.perf_counter() - t0
    after_load = cache.stats()
    shapes = [tuple(s) for s in a["shapes"]] if a.get("shapes") else None
    specs = bench.resolve_shapes(bench.input_specs(net), shapes)
    ex = net.create_extractor()
    for name, shape in specs:
        ex.input(name, ncnn.Mat(np.zeros(tuple(reversed(shape)), np.float32)))
    outs = []
    t0 = time.perf_counter()
    for name in net.output_names():
        ret, out = ex.extract(name)
        assert ret == 0, (name, ret)
        outs.append(np.array(out).reshape(-1))
    infer_s = time.perf_counter() - t0
    after_infer = cache.stats()
    if a.get("save"):
        assert cache.save_cache(a["save"]) == 0
    print(
        json.dumps(
            dict(
                loaded=loaded,
                last_error=cache.last_error,
                load_compiled=after_load["compiled"],
                load_pipelines=after_load["pipelines_created"],
                infer_compiled=after_infer["compiled"],
                infer_pipelines=after_infer["pipelines_created"],
                spirv_hits=after_infer["spirv_hits"],
                shader_compiler_loaded="ncnn_c._native._shaderc" in sys.modules,
                load_s=load_s,
                infer_s=infer_s,
                out=outs[0].tolist() if outs else [],
            )
        )
    )


if __name__ == "__main__":
    main()
