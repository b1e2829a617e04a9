"""Pipelines created in parallel during load_model: the same artifacts, the same cache file
(byte for byte) and the same outputs as a serial load; failures reported in layer order; the
heuristic that keeps it off where it does not help (a CPU Vulkan device such as lavapipe)."""

from __future__ import annotations

import logging
import os
import threading

import numpy as np
import pytest
from _warm_child import spawn as child
from conftest import MODELS

import ncnn_c as ncnn
from ncnn_c.net.vulkan.load import pipeline_threads

pytestmark = pytest.mark.gpu


# Eight GPU layers with different shaders and shapes: enough work for every thread.
NET = """7767517
10 11
Input data 0 1 data 0=24 1=20 2=3
Convolution conv1 1 1 data conv1 0=8 1=3 5=1 6=216 9=1
Split split 1 2 conv1 s1 s2
Convolution conva 1 1 s1 conva 0=8 1=1 5=1 6=64 9=1
Convolution convb 1 1 s2 convb 0=8 1=3 4=1 5=1 6=576 9=1
Concat cat 2 1 conva convb cat
Pooling pool1 1 1 cat pool1 0=0 1=3 2=2
Convolution conv2 1 1 pool1 conv2 0=12 1=1 5=1 6=192
Pooling gap 1 1 conv2 gap 0=1 4=1
Softmax prob 1 1 gap prob
"""


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    from ncnn_c.tools.randbin import random_weights

    d = tmp_path_factory.mktemp("par")
    param = d / "net.param"
    param.write_text(NET)
    binf = d / "net.bin"
    binf.write_bytes(random_weights(str(param), seed=5))
    return str(param), str(binf), d


@pytest.mark.parametrize(
    "which",
    ["small", "squeezenet"],
)
def test_parallel_and_serial_give_identical_caches_and_outputs(model, which):
    """Cold loads in fresh processes, serial and on 4 threads (forced: the heuristic gives
    lavapipe 2): the same pipelines, the same cache bytes (SPIR-V section ordered, the same
    driver blob), bit-identical outputs; and each file is a full hit for the other mode."""
    param, binf, d = model
    if which == "squeezenet":
        param, binf = str(MODELS / "squeezenet_v1.1.param"), str(MODELS / "squeezenet_v1.1.bin")
    runs = {}
    for threads in (1, 4):
        path = d / f"{which}-{threads}.vkcache"
        runs[threads] = child(param=param, bin=binf, pipeline_threads=threads, save=str(path))
        runs[threads]["bytes"] = path.read_bytes()
    serial, parallel = runs[1], runs[4]
    assert serial["load_compiled"] > 0
    for key in ("load_compiled", "load_pipelines", "infer_compiled", "infer_pipelines"):
        assert parallel[key] == serial[key], key
    assert parallel["bytes"] == serial["bytes"]
    np.testing.assert_array_equal(np.array(parallel["out"]), np.array(serial["out"]))
    # warm, each mode from the other's file: nothing compiled, the same output
    for threads, src in ((4, 1), (1, 4)):
        r = child(param=param, bin=binf, pipeline_threads=threads, cache=str(d / f"{which}-{src}.vkcache"))
        assert r["loaded"] == 0
        assert r["load_compiled"] == 0 and r["infer_compiled"] == 0
        np.testing.assert_array_equal(np.array(r["out"]), np.array(serial["out"]))


def _gpu_net(param: str, threads: int | None, cache=None) -> ncnn.Net:
    net = ncnn.Net()
    net.opt.use_vulkan_compute = True
    net.opt.pipeline_cache = cache
    net.pipeline_threads = threads
    assert net.load_param(param) == 0
    return net


def test_in_process_parallel_load_shares_artifacts(model):
    """Two nets, serial then parallel, on one cache: the parallel load finds every artifact
    the serial one made (no duplicates), and a parallel load on a fresh cache makes as many."""
    param, binf, _ = model
    vkdev = ncnn.get_gpu_device(0)
    cache = ncnn.PipelineCache(vkdev)
    a = _gpu_net(param, 1, cache)
    assert a.load_model(binf) == 0
    made = cache.stats()["pipelines_created"]
    b = _gpu_net(param, 4, cache)
    assert b.load_model(binf) == 0
    assert cache.stats()["pipelines_created"] == made
    assert cache.size() == made
    fresh = ncnn.PipelineCache(vkdev)
    c = _gpu_net(param, 4, fresh)
    assert c.load_model(binf) == 0
    assert fresh.stats()["pipelines_created"] == made
    x = np.random.RandomState(1).uniform(-1, 1, (3, 20, 24)).astype(np.float32)
    outs = []
    for net in (a, b, c):
        ex = net.create_extractor()
        ex.input("data", ncnn.Mat(x))
        ret, out = ex.extract("prob")
        assert ret == 0
        outs.append(np.array(out).copy())
    np.testing.assert_array_equal(outs[0], outs[1])
    np.testing.assert_array_equal(outs[0], outs[2])
    for net in (a, b, c):
        net.clear()
    cache.destroy()
    fresh.destroy()


# -- the thread pool itself, with custom GPU layers -------------------------------------------


class _Probe(ncnn.Layer):
    """A "GPU" layer whose create_pipeline records its thread and can fail on request."""

    seen: list = []
    fail: set = set()
    uploads: list = []
    fail_upload: set = set()
    events: list = []
    hold_last_read: threading.Event | None = None
    lock = threading.Lock()

    def __init__(self) -> None:
        super().__init__()
        self.one_blob_only = True
        self.support_inplace = True
        self.support_vulkan = True

    def load_model(self, mb) -> int:
        if self.name == "p5" and _Probe.hold_last_read is not None:
            # the last read waits until p0 has been built, which only a streamed load does
            # (a serial one would fail the load here after 30 s)
            if not _Probe.hold_last_read.wait(30):
                return -1
        with _Probe.lock:
            _Probe.events.append(("load", self.name))
        return 0

    def create_pipeline(self, opt) -> int:
        with _Probe.lock:
            _Probe.seen.append((self.name, threading.current_thread().name, self.vkdev is not None))
            _Probe.events.append(("create", self.name))
        if self.name == "p0" and _Probe.hold_last_read is not None:
            _Probe.hold_last_read.set()
        return -1 if self.name in _Probe.fail else 0

    def upload_model(self, cmd, opt) -> int:
        with _Probe.lock:
            _Probe.uploads.append((self.name, threading.current_thread().name, id(cmd)))
        return -1 if self.name in _Probe.fail_upload else 0

    def forward_inplace(self, bottom_top, opt) -> int:
        return 0


PROBES = "7767517\n7 7\nInput data 0 1 data 0=4 1=4 2=1\n" + "".join(
    f"Probe p{i} 1 1 {'data' if i == 0 else f'b{i - 1}'} b{i}\n" for i in range(6)
)


def _probe_net(threads) -> ncnn.Net:
    net = ncnn.Net()
    net.opt.use_vulkan_compute = True
    net.pipeline_threads = threads
    assert net.register_custom_layer("Probe", _Probe) == 0
    assert net.load_param_mem(PROBES) == 0
    return net


@pytest.fixture
def probe():
    _Probe.seen, _Probe.fail, _Probe.uploads, _Probe.fail_upload = [], set(), [], set()
    _Probe.events, _Probe.hold_last_read = [], None
    yield _Probe
    _Probe.seen, _Probe.fail, _Probe.uploads, _Probe.fail_upload = [], set(), [], set()
    _Probe.events, _Probe.hold_last_read = [], None


def test_pool_threads_create_the_gpu_layers(probe):
    net = _probe_net(3)
    done = []
    net.load_progress = lambda n, total: done.append((n, total))
    assert net.load_model(ncnn.DataReaderFromEmpty()) == 0
    threads = {t for _, t, _ in probe.seen}
    assert len(probe.seen) == 6 and all(gpu for *_, gpu in probe.seen)
    assert all(t.startswith("ncnn_c-pipeline") for t in threads)
    # progress: every layer (the Input too) once, in order, ending at the total
    assert done == [(i, 7) for i in range(1, 8)]
    net.clear()


def test_pool_builds_layers_while_later_weights_are_read(probe):
    """A streamed load: p0's pipelines are created (and its weights uploaded) on the pool
    before the last layer's weights have been read; each layer builds only after its read."""
    probe.hold_last_read = threading.Event()
    net = _probe_net(3)
    assert net.load_model(ncnn.DataReaderFromEmpty()) == 0
    events = probe.events
    assert events.index(("create", "p0")) < events.index(("load", "p5"))
    for i in range(6):
        assert events.index(("load", f"p{i}")) < events.index(("create", f"p{i}"))
    assert sorted(n for n, _, _ in probe.uploads) == [f"p{i}" for i in range(6)]
    net.clear()


def test_a_weight_failure_stops_the_streamed_load(probe, caplog):
    """A read failure midway: reported as the weight failure, no layer after it is built, and
    the layers already built are not submitted (nothing of a failed load runs)."""

    class _Short(_Probe):
        def load_model(self, mb) -> int:
            return -100 if self.name == "p3" else super().load_model(mb)

    net = ncnn.Net()
    net.opt.use_vulkan_compute = True
    net.pipeline_threads = 3
    assert net.register_custom_layer("Probe", _Short) == 0
    assert net.load_param_mem(PROBES) == 0
    with caplog.at_level(logging.ERROR, logger="ncnn_c"):
        assert net.load_model(ncnn.DataReaderFromEmpty()) != 0
    errors = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert len(errors) == 1 and "p3" in errors[0] and "weights" in errors[0], errors
    assert {n for n, _, _ in probe.seen} <= {"p0", "p1", "p2"}
    net.clear()


def test_serial_creates_on_the_calling_thread(probe):
    net = _probe_net(1)
    assert net.load_model(ncnn.DataReaderFromEmpty()) == 0
    assert [n for n, _, _ in probe.seen] == [f"p{i}" for i in range(6)]
    assert {t for _, t, _ in probe.seen} == {threading.current_thread().name}
    net.clear()


@pytest.mark.parametrize("threads", [1, 4])
def test_first_failing_layer_in_order_is_reported(probe, caplog, threads):
    probe.fail = {"p4", "p2"}
    net = _probe_net(threads)
    with caplog.at_level(logging.ERROR, logger="ncnn_c"):
        assert net.load_model(ncnn.DataReaderFromEmpty()) != 0
    lines = [r.getMessage() for r in caplog.records if "create_pipeline failed" in r.getMessage()]
    assert len(lines) == 1 and "p2" in lines[0], lines
    net.clear()


def test_heuristic_and_overrides(monkeypatch, caplog):
    def threads_for(net, gpu_layers: int) -> int:
        return pipeline_threads(net.vulkan_device(), net.pipeline_threads, gpu_layers)

    net = ncnn.Net()
    net.opt.use_vulkan_compute = True
    assert net._vulkan.device.acquire(net.opt) is not None
    monkeypatch.delenv("NCNN_C_PIPELINE_THREADS", raising=False)
    info = net.vulkan_device().info
    cores = os.cpu_count() or 1
    # lavapipe (a CPU device): 2 threads at most, it competes for the cores it runs on
    if int(info.physical_device_type) == 4:
        assert threads_for(net, 50) == min(2, cores)
    else:
        assert threads_for(net, 50) == min(8, cores)
    assert threads_for(net, 3) == 1  # too few GPU layers to be worth a pool
    net.pipeline_threads = 6
    assert threads_for(net, 50) == 6
    assert threads_for(net, 3) == 3  # never more threads than layers
    assert threads_for(net, 0) == 1
    net.pipeline_threads = None
    monkeypatch.setenv("NCNN_C_PIPELINE_THREADS", "5")
    assert threads_for(net, 50) == 5
    monkeypatch.setenv("NCNN_C_PIPELINE_THREADS", "many")
    with caplog.at_level(logging.WARNING, logger="ncnn_c"):
        n = threads_for(net, 50)
    assert "NCNN_C_PIPELINE_THREADS" in caplog.text
    assert n == min(2 if int(info.physical_device_type) == 4 else 8, cores)

    # a discrete GPU with many layers and cores goes parallel; few layers stay serial
    class _Info:
        physical_device_type = 2

    class _Dev:
        info = _Info()

    monkeypatch.delenv("NCNN_C_PIPELINE_THREADS", raising=False)
    monkeypatch.setattr("os.cpu_count", lambda: 16)
    net._vulkan.device.vkdev = _Dev()
    assert threads_for(net, 50) == 8
    assert threads_for(net, 3) == 1
    monkeypatch.setattr("os.cpu_count", lambda: 1)
    assert threads_for(net, 50) == 1
    # a CPU device (lavapipe) never gets more than 2, however many cores
    _Info.physical_device_type = 4
    monkeypatch.setattr("os.cpu_count", lambda: 16)
    assert threads_for(net, 50) == 2


def test_concurrent_requests_for_one_pipeline_build_it_once():
    """Many threads asking a cold cache for the same request: one compile, one artifact."""
    from ncnn_c.option import Option

    vkdev = ncnn.get_gpu_device(0)
    cache = ncnn.PipelineCache(vkdev)
    opt = Option()
    barrier = threading.Barrier(6)
    arts = []

    def ask() -> None:
        barrier.wait()
        arts.append(cache.get_pipeline("softmax_pack4", opt, [], (64, 1, 1)))

    try:
        ts = [threading.Thread(target=ask) for _ in range(6)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        assert len(arts) == 6 and all(a is arts[0] for a in arts)
        st = cache.stats()
        assert st["compiled"] == 1 and st["pipelines_created"] == 1 and cache.size() == 1
    finally:
        cache.destroy()


def test_a_failed_build_is_retried_by_the_waiters_and_leaks_nothing():
    """Threads waiting on a build that fails try themselves (and fail the same way): every
    caller gets the error, nothing is left in flight, the cache still works afterwards."""
    from ncnn_c.gpu.pipelinecache import PipelineCacheError
    from ncnn_c.option import Option

    cache = ncnn.PipelineCache(ncnn.get_gpu_device(0))
    opt = Option()
    barrier = threading.Barrier(4)
    errors = []

    def ask() -> None:
        barrier.wait()
        try:
            cache.get_pipeline("softmax_pack4", opt, [1, 2, 3], (64, 1, 1))  # it declares none
        except PipelineCacheError as e:
            errors.append(str(e))

    try:
        ts = [threading.Thread(target=ask) for _ in range(4)]
        for t in ts:
            t.start()
        for t in ts:
            t.join(60)
        assert not any(t.is_alive() for t in ts)
        assert len(errors) == 4 and all("specializations" in e for e in errors)
        assert cache.size() == 0 and cache._inflight == 0 and not cache._building
        assert cache.get_pipeline("softmax_pack4", opt, [], (64, 1, 1)) is not None
        assert cache.size() == 1
    finally:
        cache.destroy()


def test_weights_upload_on_the_pool_with_a_command_buffer_per_thread(probe):
    net = _probe_net(3)
    assert net.load_model(ncnn.DataReaderFromEmpty()) == 0
    assert sorted(n for n, _, _ in probe.uploads) == [f"p{i}" for i in range(6)]
    by_thread: dict = {}
    for _, thread, cmd in probe.uploads:
        assert thread.startswith("ncnn_c-pipeline")
        by_thread.setdefault(thread, set()).add(cmd)
    # one VkCompute per worker, never shared between workers
    assert all(len(cmds) == 1 for cmds in by_thread.values())
    assert len({c for cmds in by_thread.values() for c in cmds}) == len(by_thread)
    net.clear()


@pytest.mark.parametrize("threads", [1, 4])
def test_first_failing_upload_in_order_is_reported(probe, caplog, threads):
    probe.fail_upload = {"p5", "p1"}
    net = _probe_net(threads)
    with caplog.at_level(logging.ERROR, logger="ncnn_c"):
        assert net.load_model(ncnn.DataReaderFromEmpty()) != 0
    lines = [r.getMessage() for r in caplog.records if "upload_model failed" in r.getMessage()]
    assert len(lines) == 1 and "p1" in lines[0], lines
    net.clear()
