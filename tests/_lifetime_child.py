"""Child process for tests/test_gpu_lifetime.py: SqueezeNet on Vulkan with its own
PipelineCache, N threads looping create_extractor / input / extract, then one of
``destroy`` (cache.destroy()), ``clear`` (cache.clear()) or ``instance``
(destroy_gpu_instance()) while they run. Prints one JSON line: the return codes seen before
and after the call. A crash shows as the child's exit status, which is why this is a child.

    python tests/_lifetime_child.py WHAT THREADS
"""

from __future__ import annotations

import json
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
MODELS = ROOT / "models"


def main(what: str, nthreads: int) -> None:
    import numpy as np

    import ncnn_c as ncnn

    vkdev = ncnn.get_gpu_device(0)
    cache = ncnn.PipelineCache(vkdev)
    net = ncnn.Net()
    net.opt.use_vulkan_compute = True
    net.set_vulkan_device(vkdev)
    net.opt.pipeline_cache = cache
    assert net.load_param(str(MODELS / "squeezenet_v1.1.param")) == 0
    assert net.load_model(str(MODELS / "squeezenet_v1.1.bin")) == 0
    x = ncnn.Mat(np.random.default_rng(0).random((3, 227, 227), dtype=np.float32))
    stop = threading.Event()
    calling = threading.Event()  # set just before the call
    called = threading.Event()  # set once it returned
    before: set[int] = set()
    after: set[int] = set()
    counts = [0, 0]

    def work() -> None:
        # an extract that ended before the call must have worked, one that began after it
        # must fail cleanly; one that overlaps it may do either (it did not crash)
        while not stop.is_set():
            late = called.is_set()
            ex = net.create_extractor()
            ex.input("data", x)
            ret, _ = ex.extract("prob")
            if late:
                after.add(ret)
                counts[1] += 1
            elif not calling.is_set():
                before.add(ret)
                counts[0] += 1

    threads = [threading.Thread(target=work) for _ in range(nthreads)]
    for t in threads:
        t.start()
    while counts[0] < 2 * nthreads:  # every worker is in its loop: replays are in flight
        time.sleep(0.02)
    time.sleep(0.2)
    calling.set()
    if what == "destroy":
        cache.destroy()
    elif what == "clear":
        cache.clear()
    else:
        ncnn.destroy_gpu_instance()
    called.set()
    time.sleep(0.3)
    stop.set()
    for t in threads:
        t.join()
    print(json.dumps({"before": sorted(before), "after": sorted(after), "n_after": counts[1]}))


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]))
