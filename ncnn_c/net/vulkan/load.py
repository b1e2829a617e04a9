"""load_model for a net on the GPU: weights, pipelines, uploads, the layout pipeline.

The device's shader features are masked into the net's Option first (as ncnn's Net does),
so every layer sees, and every cache key holds, what really runs. With a pool (see
``pipeline_threads``) the GPU layers' pipelines are made and their weights uploaded while
later weights are still being read; otherwise every weight, then every pipeline, then one
upload submit.
"""

from __future__ import annotations

import logging
import os
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from ...option import Option, get_layer_option
from ..backend import ModelLoad
from ..graph import call_hook, desc
from . import api

log = logging.getLogger("ncnn_c")


def load_on_gpu(vkdev: Any, load: ModelLoad, owned_cache: list) -> int:
    """Load the weights and make the pipelines of a net whose GPU layers run on ``vkdev``;
    a pipeline cache the net must own (none given) is appended to ``owned_cache``."""
    gpu = api._gpu()
    opt = load.opt
    view = load.view
    if opt.pipeline_cache is None:
        cache = gpu.PipelineCache(vkdev)
        owned_cache.append(cache)
        opt.pipeline_cache = cache
    api.mask_device_features(opt, vkdev)
    opts = load.layer_options()
    on_gpu = [i for i, layer in enumerate(view.layers) if layer.support_vulkan and opts[i].use_vulkan_compute]
    # int8 layers quantize fp32 blobs, as on the CPU: storage per layer
    api.keep_fp32_before_int8(view, on_gpu, opts)
    opts = load.layer_options()
    threads = pipeline_threads(vkdev, load.pipeline_threads, len(on_gpu))
    if threads > 1:
        return _load_streamed(gpu, vkdev, load, opts, on_gpu, threads)
    return _load_serial(gpu, vkdev, load, opts, on_gpu)


def pipeline_threads(vkdev: Any, asked: int | None, gpu_layers: int) -> int:
    """How many threads create the GPU layers' pipelines in one load_model.

    ``net.pipeline_threads`` (``asked``, or ``NCNN_C_PIPELINE_THREADS``) decides when set; 1
    is serial. Otherwise the heuristic (docs/cache-startup.md, "Parallel pipeline
    creation"): parallel where there are at least 4 GPU layers and more than one core: up to
    8 threads on a GPU, whose driver compiles in vkCreateComputePipelines; 2 on a CPU
    implementation such as lavapipe, whose vkCreateComputePipelines runs Mesa's NIR passes
    (its LLVM compile waits for the first dispatch) on the same cores as everything else.
    """
    n = asked
    if n is None:
        env = os.environ.get("NCNN_C_PIPELINE_THREADS", "").strip()
        if env:
            try:
                n = int(env)
            except ValueError:
                log.warning("NCNN_C_PIPELINE_THREADS=%r is not an integer: ignored", env)
    cores = os.cpu_count() or 1
    if n is None:
        n = 1 if gpu_layers < 4 else min(2 if api.is_cpu_device(vkdev.info) else 8, cores)
    return max(1, min(int(n), max(gpu_layers, 1)))


def create_layout_pipeline(vkdev: Any, opt: Option) -> Any:
    """The one pipeline every blob-form conversion of a net uses (packing.comp), made in
    load_model so that the first inference creates and compiles nothing; None on failure."""
    gpu = api._gpu()
    pipeline = gpu.Pipeline(vkdev)
    pipeline.set_local_size_xyz(*gpu.LOCAL_1D)
    if pipeline.create("packing", gpu.without_shader_bits(opt), []) != 0:
        log.error("load_model: cannot create the GPU layout conversion pipeline")
        return None
    return pipeline


def _load_serial(gpu, vkdev: Any, load: ModelLoad, opts: list, on_gpu: list[int]) -> int:
    """Every layer's weights, then every create_pipeline, then the uploads: one thread."""
    if load.read_all() != 0:
        return -1
    load.begin_pipelines()
    for i in on_gpu:
        load.view.layers[i].vkdev = vkdev
    if load.create_all(opts) != 0:
        return -1
    return _upload_weights(gpu, vkdev, load)


def _upload_weights(gpu, vkdev: Any, load: ModelLoad) -> int:
    """upload_model of every GPU layer into one VkCompute, then one submit."""
    cmd = gpu.VkCompute(vkdev)
    for i, layer in enumerate(load.view.layers):
        if layer.vkdev is None:
            continue
        ret = call_hook(layer.upload_model, cmd, get_layer_option(load.opt, layer))
        if ret != 0:
            cmd.reset()  # nothing of a failed load is submitted
            log.error("load_model: %s upload_model failed (%s)", desc(i, layer), ret)
            return -1
    ret = cmd.submit_and_wait()
    if ret != 0:
        log.error("load_model: uploading weights to the GPU failed (%d)", ret)
        return -1
    return 0


def _load_streamed(gpu, vkdev: Any, load: ModelLoad, opts: list, on_gpu: list[int], threads: int) -> int:
    """Weights read in order on this thread; as soon as a GPU layer has its weights, a pool
    thread creates its pipelines and uploads them (a VkCompute per worker), while this
    thread goes on reading: file reads, numpy repacks, pipeline creation and allocation
    overlap (all release the GIL). CPU layers' create_pipeline follows on this thread.
    Failures are reported as a serial load would: a weight failure first, then the first
    failing layer in layer order."""
    load.begin_pipelines()
    layers = load.view.layers
    gpu_set = set(on_gpu)
    local = threading.local()
    cmds: list = []
    cmds_lock = threading.Lock()

    def build(i: int):
        layer = layers[i]
        ret = call_hook(layer.create_pipeline, opts[i])
        if ret != 0:
            return "create_pipeline", ret
        cmd = getattr(local, "cmd", None)
        if cmd is None:
            cmd = local.cmd = gpu.VkCompute(vkdev)
            with cmds_lock:
                cmds.append(cmd)
        ret = call_hook(layer.upload_model, cmd, get_layer_option(load.opt, layer))
        return ("upload_model", ret) if ret != 0 else None

    total = len(layers)
    done = 0

    def tick() -> None:
        nonlocal done
        done += 1
        if load.progress is not None:
            load.progress(done, total)

    futures: dict[int, Future] = {}
    failed = None
    read_failed = False
    pool = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="ncnn_c-pipeline")
    try:
        for i, layer in enumerate(layers):
            if load.read(i) != 0:
                read_failed = True
                break
            if i in gpu_set:
                layer.vkdev = vkdev
                futures[i] = pool.submit(build, i)
        if not read_failed:
            for i, layer in enumerate(layers):
                if i in gpu_set:
                    continue
                ret = call_hook(layer.create_pipeline, opts[i])
                if ret != 0:
                    failed = (i, "create_pipeline", ret)
                    break
                tick()
            for i, fut in futures.items():
                r = fut.result()
                if r is not None and (failed is None or i < failed[0]):
                    failed = (i, *r)
                if failed is None:
                    tick()
    finally:
        # after a failure, builds not yet started are cancelled; running ones finish
        pool.shutdown(wait=True, cancel_futures=read_failed or failed is not None)
    ret = 0
    for cmd in cmds:
        if not read_failed and failed is None and ret == 0:
            ret = cmd.submit_and_wait()
        else:
            cmd.reset()  # nothing of a failed load is submitted
    if read_failed:
        return -1
    if failed is not None:
        i, stage, r = failed
        log.error("load_model: %s %s failed (%s)", desc(i, layers[i]), stage, r)
        return -1
    if ret != 0:
        log.error("load_model: uploading weights to the GPU failed (%d)", ret)
        return -1
    return 0
