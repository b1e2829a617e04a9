"""Start-up: the Vulkan device made on a thread while the param is parsed (net/core.py), and
what gpu/device.py records of it. The behaviour must be the one of a device made first."""

from __future__ import annotations

import threading

import numpy as np
import pytest
from test_net import FAKE_DEVICE, RELU_NET, ReLU_fakevk, _fake_gpu_api, data_in

import ncnn_c
import ncnn_c.net.vulkan.api as vkf_mod
from ncnn_c.datareader import DataReaderFromEmpty, DataReaderFromMemory
from ncnn_c.layer import Layer, layer_to_index
from ncnn_c.mat import Mat
from ncnn_c.net import Net


@pytest.fixture
def gpu(monkeypatch):
    """A stand-in GPU API whose device appears when the test says so (``gpu.ready``), with
    count 1 or 0 (``gpu.count``); every call recorded with its thread."""
    ns = _fake_gpu_api()
    calls: list[tuple[str, str]] = []
    ready = threading.Event()
    state = {"count": 1}

    def count():
        calls.append(("count", threading.current_thread().name))
        assert ready.wait(10)
        return state["count"]

    def device(i=0):
        calls.append((f"device {i}", threading.current_thread().name))
        assert ready.wait(10)
        return FAKE_DEVICE if state["count"] else None

    ns = ns._replace(get_gpu_count=count, get_gpu_device=device)
    monkeypatch.setattr(vkf_mod, "_gpu", lambda: ns)
    monkeypatch.setattr(vkf_mod, "_devices", lambda: ns)
    relu = layer_to_index("ReLU")

    def create_vk(t):
        if t in (relu, "ReLU"):
            layer = ReLU_fakevk()
            layer.typeindex, layer.type = relu, "ReLU"
            return layer
        return None

    monkeypatch.setattr(ncnn_c.layer, "create_layer_vulkan", create_vk)
    return ready, calls, state


def _vk_net() -> Net:
    net = Net()
    net.opt.use_vulkan_compute = True
    net.replay_capacity = 0
    return net


def test_set_vulkan_device_returns_before_the_device_exists(gpu):
    ready, calls, _ = gpu
    net = _vk_net()
    net.set_vulkan_device(0)  # would block here if the device were made on this thread
    assert not ready.is_set()
    ready.set()
    assert net.vulkan_device() is FAKE_DEVICE
    assert calls == [("device 0", "ncnn_c-vulkan-device")]


def test_load_param_parses_while_the_device_is_made(gpu):
    ready, calls, _ = gpu
    net = _vk_net()
    parsed = threading.Event()
    # the device comes only once the parse is done: a load_param that waited for it first
    # would never get there (the fake's wait times out and fails the test)
    threading.Thread(target=lambda: parsed.wait(10) and ready.set()).start()
    real = net._parse

    def parse(*a):
        ret = real(*a)
        parsed.set()
        return ret

    net._parse = parse
    assert net.load_param_mem(RELU_NET) == 0
    assert net.vulkan_device() is FAKE_DEVICE and net.opt.use_vulkan_compute
    assert isinstance(net.layers()[1], ReLU_fakevk)
    assert [c[1] for c in calls] == ["ncnn_c-vulkan-device"] * 2


@pytest.mark.parametrize("source", ["path", "bytes"])
def test_no_device_after_all_parses_again_for_the_cpu(gpu, caplog, tmp_path, source):
    ready, _, state = gpu
    state["count"] = 0
    ready.set()
    path = tmp_path / "relu.param"
    path.write_text(RELU_NET)
    net = _vk_net()
    assert (net.load_param(str(path)) if source == "path" else net.load_param_mem(RELU_NET)) == 0
    assert caplog.text.count("no Vulkan device is available; running on the CPU") == 1
    assert net.opt.use_vulkan_compute is False and net.vulkan_device() is None
    assert not isinstance(net.layers()[1], ReLU_fakevk)  # the CPU form, as without a thread
    assert net.load_model(DataReaderFromEmpty()) == 0
    ex = net.create_extractor()
    x = data_in()
    ex.input("data", Mat(x))
    np.testing.assert_allclose(np.asarray(ex.extract("y")[1]), np.maximum(x, 0))


def test_reader_sources_and_custom_layers_wait_for_the_device_first(gpu):
    """A DataReader cannot be read twice and a custom creator must not run twice: these
    parse only once the device is known, as before."""
    ready, calls, state = gpu
    state["count"] = 0
    ready.set()
    net = _vk_net()
    assert net.load_param(DataReaderFromMemory(RELU_NET.encode())) == 0
    assert net.opt.use_vulkan_compute is False
    made = []

    class Mine(Layer):
        def __init__(self):
            super().__init__()
            made.append(self)

    net = _vk_net()
    net.register_custom_layer("Mine", Mine)
    assert net.load_param_mem(RELU_NET.replace("ReLU r", "Mine r")) == 0
    assert len(made) == 1 and net.opt.use_vulkan_compute is False
    assert all(thread == "MainThread" for _, thread in calls)


@pytest.mark.gpu
def test_device_timings_are_recorded():
    from ncnn_c.gpu import device

    net = Net()
    net.opt.use_vulkan_compute = True
    assert net.load_param_mem(RELU_NET) == 0
    assert net.vulkan_device() is not None
    t = device.init_timings()
    assert t["instance_s"] > 0 and t["instance_at"] > 0
    assert {"instance_thread"} <= set(t)


def test_gpu_modules_are_imported_while_the_device_is_made(gpu, monkeypatch):
    """load_param imports the GPU modules (those load_model and a PipelineCache need) during
    its wait for the driver: the device here comes only after that import, so a load_param
    that imported them after its wait would never get there."""
    ready, _, _ = gpu
    api = vkf_mod._gpu()
    imported: list[bool] = []

    def gpu_modules():
        imported.append(ready.is_set())
        ready.set()
        return api

    monkeypatch.setattr(vkf_mod, "_gpu", gpu_modules)
    net = _vk_net()
    assert net.load_param_mem(RELU_NET) == 0
    assert imported and imported[0] is False
    assert net.vulkan_device() is FAKE_DEVICE


def test_start_gpu_device_rejects_a_non_index():
    with pytest.raises(TypeError, match="device_index"):
        ncnn_c.start_gpu_device("0")  # type: ignore[arg-type]


_EARLY = """
import logging, sys, threading
logging.basicConfig(level=logging.ERROR, stream=sys.stdout)
import ncnn_c
ncnn_c.start_gpu_device({index})
for t in threading.enumerate():
    if t.name == "ncnn_c-vulkan-device":
        t.join(60)
from ncnn_c.gpu import device
print("modules", "ncnn_c.gpu.pipelinecache" in sys.modules)
print("thread", device.init_timings().get("device_thread"))
net = ncnn_c.Net()
net.opt.use_vulkan_compute = True
print("param", net.load_param_mem({net!r}), net.opt.use_vulkan_compute)
"""


@pytest.mark.gpu
def test_start_gpu_device_makes_the_device_on_a_thread():
    """The fast-start idiom: the device is made on a thread of its own, with the GPU modules
    imported after it, and a Net takes that device."""
    import subprocess
    import sys

    out = subprocess.run(
        [sys.executable, "-c", _EARLY.format(index="", net=RELU_NET)],
        capture_output=True, text=True, timeout=120, check=True,
    ).stdout  # fmt: skip
    assert "modules True" in out and "thread ncnn_c-vulkan-device" in out
    assert "param 0 True" in out


@pytest.mark.gpu
def test_start_gpu_device_with_no_such_gpu_logs_it_and_a_net_takes_its_own():
    import subprocess
    import sys

    out = subprocess.run(
        [sys.executable, "-c", _EARLY.format(index="7", net=RELU_NET)],
        capture_output=True, text=True, timeout=120, check=True,
    ).stdout  # fmt: skip
    assert "invalid gpu index 7" in out
    assert "modules False" in out and "thread None" in out
    assert "param 0 True" in out  # the net's own device (opt.vulkan_device_index), as without it
