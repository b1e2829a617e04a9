"""Replay of recorded GPU extracts (net/vulkan_forward.py).

The first extract of an input shape is recorded and kept; later extracts of that shape
submit the same command buffers with new input bytes. Every test here compares a replaying
net with one that records every extract (``replay_capacity = 0``, the path the network
tests check against the PyPI ncnn): the results must be bit-identical, since the same
shaders run on the same data.
"""

from __future__ import annotations

import logging
import threading

import numpy as np
import pytest
from test_networks import BENCH, ROOT, parse_param, weights

import ncnn_c
from ncnn_c.gpu.command import VkCompute
from ncnn_c.layer import Layer

pytestmark = pytest.mark.gpu

SQUEEZENET = ROOT / "models"


def _net(param_text: str, bin_bytes: bytes, capacity: int, **opts) -> ncnn_c.Net:
    net = ncnn_c.Net()
    net.opt.use_vulkan_compute = True
    for k, v in opts.items():
        setattr(net.opt, k, v)
    net.replay_capacity = capacity
    assert net.load_param_mem(param_text) == 0
    assert net.load_model_mem(bin_bytes) == 0
    return net


def _run(net, inputs: dict, outputs: list[str], light: bool = True) -> list[np.ndarray]:
    ex = net.create_extractor()
    ex.set_light_mode(light)
    for name, x in inputs.items():
        assert ex.input(name, ncnn_c.Mat(x)) == 0
    outs = []
    for name in outputs:
        ret, m = ex.extract(name)
        assert ret == 0, name
        outs.append(np.array(m, dtype=np.float32, copy=True))
    return outs


def _model(name: str):
    param = BENCH / f"{name}.param"
    inputs, outputs = parse_param(param)
    return param.read_text(), weights(str(param), False), inputs, [n for n, _ in outputs]


def _random_inputs(inputs, seed: int) -> dict:
    g = np.random.default_rng(seed)
    return {n: g.standard_normal(shape).astype(np.float32) for n, shape in inputs}


def _assert_same(a: list, b: list, what: str) -> None:
    assert len(a) == len(b)
    for i, (x, y) in enumerate(zip(a, b, strict=True)):
        assert x.shape == y.shape, f"{what} out{i}: {x.shape} vs {y.shape}"
        np.testing.assert_array_equal(x, y, err_msg=f"{what} out{i}")


# squeezenet: one segment; mobilenet_ssd: PriorBox and DetectionOutput on the CPU between and
# after GPU segments; nanodet_m and yolo-fastestv2: several outputs (later extracts replay as
# children of the first); blazeface: two outputs of different heads
# the SSD's two runs (10-12 s each on two cores) in the slow run CI also runs
@pytest.mark.parametrize(
    "model",
    [
        "squeezenet",
        pytest.param("mobilenet_ssd", marks=pytest.mark.slow),
        "nanodet_m",
        "yolo-fastestv2",
        "blazeface",
    ],
)
@pytest.mark.parametrize("light", [True, False], ids=["light", "nolight"])
def test_replay_gives_what_recording_gives(model, light):
    text, bin_bytes, inputs, outputs = _model(model)
    replaying = _net(text, bin_bytes, 8)
    recording = _net(text, bin_bytes, 0)
    for seed in range(3):
        x = _random_inputs(inputs, seed)
        _assert_same(
            _run(replaying, x, outputs, light), _run(recording, x, outputs, light), f"{model} #{seed}"
        )
    stats = replaying._vulkan.replays
    # the first extractor records each output, the two others replay every one of them
    assert stats.recorded == len(outputs)
    assert stats.replayed == 2 * len(outputs)
    assert recording._vulkan.replays.recorded == 0 and len(recording._vulkan.replays) == 0


def test_squeezenet_real_weights_replayed_top1_and_no_layer_code(monkeypatch):
    text = (SQUEEZENET / "squeezenet_v1.1.param").read_text()
    bin_bytes = (SQUEEZENET / "squeezenet_v1.1.bin").read_bytes()
    net = _net(text, bin_bytes, 8)
    ref = _net(text, bin_bytes, 0)
    g = np.random.default_rng(1)
    first = g.uniform(-1, 1, (3, 227, 227)).astype(np.float32)
    _run(net, {"data": first}, ["prob"])

    dispatches = []
    real = VkCompute.record_pipeline

    def counting(self, *args, **kwargs):
        dispatches.append(1)
        return real(self, *args, **kwargs)

    monkeypatch.setattr(VkCompute, "record_pipeline", counting)
    for _ in range(3):
        x = g.uniform(-1, 1, (3, 227, 227)).astype(np.float32)
        n = len(dispatches)
        (got,) = _run(net, {"data": x}, ["prob"])
        assert len(dispatches) == n, "a replayed extract recorded dispatches"
        (want,) = _run(ref, {"data": x}, ["prob"])
        assert len(dispatches) > n  # the recording net records (the counter works)
        np.testing.assert_array_equal(got, want)
        assert int(np.argmax(got)) == int(np.argmax(want))


def test_each_input_shape_has_its_recordings_and_capacity_bounds_them():
    text, bin_bytes, inputs, outputs = _model("squeezenet")
    net = _net(text, bin_bytes, 2)
    ref = _net(text, bin_bytes, 0)
    g = np.random.default_rng(2)
    for size in (227, 64, 227, 96, 64, 227):
        x = g.standard_normal((3, size, size)).astype(np.float32)
        _assert_same(_run(net, {"data": x}, outputs), _run(ref, {"data": x}, outputs), f"{size}")
        assert len(net._vulkan.replays) <= 2
    off = _net(text, bin_bytes, 0)
    _run(off, {"data": g.standard_normal((3, 64, 64)).astype(np.float32)}, outputs)
    assert len(off._vulkan.replays) == 0


def test_live_extractors_never_share_a_recording():
    text, bin_bytes, inputs, outputs = _model("squeezenet")
    net = _net(text, bin_bytes, 8)
    ref = _net(text, bin_bytes, 0)
    xs = [_random_inputs(inputs, s) for s in range(3)]
    held = []
    for x in xs:  # each extractor keeps its recording (its blobs live there) until dropped
        ex = net.create_extractor()
        for name, v in x.items():
            ex.input(name, ncnn_c.Mat(v))
        ret, m = ex.extract(outputs[0])
        assert ret == 0
        held.append((ex, np.array(m, copy=True)))
    assert len(net._vulkan.replays) == 3
    for (ex, got), x in zip(held, xs, strict=True):
        _assert_same([got], _run(ref, x, outputs[:1]), "held")
        # the blobs an extractor still holds are its own, not overwritten by the others
        ret, again = ex.extract(outputs[0])
        np.testing.assert_array_equal(np.array(again), got)
        ex.clear()
    _run(net, xs[0], outputs)
    assert net._vulkan.replays.replayed >= 1


def test_input_after_extract_and_intermediate_extracts_match():
    text, bin_bytes, inputs, outputs = _model("squeezenet")
    net = _net(text, bin_bytes, 8)
    ref = _net(text, bin_bytes, 0)
    mids = [b.name for b in net.blobs()][5:40:7]
    (inp,) = [n for n, _ in inputs]
    for seed in range(3):
        x, y = _random_inputs(inputs, seed)[inp], _random_inputs(inputs, seed + 10)[inp]
        results = []
        for n in (net, ref):
            ex = n.create_extractor()
            ex.set_light_mode(False)
            ex.input(inp, ncnn_c.Mat(x))
            outs = [np.array(ex.extract(outputs[0])[1], copy=True)]
            outs += [np.array(ex.extract(b)[1], copy=True) for b in mids]
            ex.input(inp, ncnn_c.Mat(y))  # as in ncnn: blobs already computed stay
            outs += [np.array(ex.extract(outputs[0])[1], copy=True)]
            results.append(outs)
        _assert_same(results[0], results[1], f"seed {seed}")
    assert net._vulkan.replays.replayed > 0


class KeepPositive(Layer):
    """A CPU layer whose output size depends on the data: the positive values of its input."""

    def __init__(self):
        super().__init__()
        self.one_blob_only = True

    def forward(self, bottom, top, opt):
        v = np.asarray(bottom.tensor()).ravel()
        v = v[v > 0]
        if v.size == 0:
            v = np.zeros(1, np.float32)
        top.share_from(ncnn_c.Mat(np.ascontiguousarray(v, dtype=np.float32)))
        return 0


DATA_DEPENDENT = """7767517
4 4
Input in0 0 1 in0
ReLU relu0 1 1 in0 a 0=0.5
KeepPositive keep 1 1 a b
TanH tanh 1 1 b out0
"""


def test_a_cpu_layer_with_data_dependent_shape_falls_back(caplog):
    nets = []
    for capacity in (8, 0):
        net = ncnn_c.Net()
        net.opt.use_vulkan_compute = True
        net.replay_capacity = capacity
        assert net.register_custom_layer("KeepPositive", KeepPositive) == 0
        assert net.load_param_mem(DATA_DEPENDENT) == 0 and net.load_model_mem(b"") == 0
        nets.append(net)
    g = np.random.default_rng(3)
    with caplog.at_level(logging.INFO, logger="ncnn_c"):
        for i in range(4):
            x = g.standard_normal(100 + i).astype(np.float32)
            if i == 0:
                g0 = x
            got, want = (_run(n, {"in0": x}, ["out0"]) for n in nets)
            _assert_same(got, want, f"#{i}")
            np.testing.assert_allclose(want[0], np.tanh(x[x > 0]), rtol=1e-3, atol=1e-3)
        # the length of the first input, another count of positives: the shape check catches it
        x = np.linspace(-1, 1, 100, dtype=np.float32)
        assert np.count_nonzero(x > 0) != np.count_nonzero(g0 > 0)
        got, want = (_run(n, {"in0": x}, ["out0"]) for n in nets)
        _assert_same(got, want, "linspace")
        np.testing.assert_allclose(got[0], np.tanh(x[x > 0]), rtol=1e-3, atol=1e-3)
    assert "recording this extract afresh" in caplog.text


def test_threads_replaying_one_net():
    text, bin_bytes, inputs, outputs = _model("squeezenet")
    net = _net(text, bin_bytes, 8)
    ref = _net(text, bin_bytes, 0)
    xs = [_random_inputs(inputs, 100 + s) for s in range(4)]
    want = [_run(ref, x, outputs) for x in xs]
    errors = []

    def work(k):
        try:
            for r in range(6):
                i = (k + r) % len(xs)
                _assert_same(_run(net, xs[i], outputs), want[i], f"thread {k} round {r}")
        except Exception as e:  # noqa: BLE001 - reported by the main thread
            errors.append(e)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[0]
    assert net._vulkan.replays.replayed > 0
    assert len(net._vulkan.replays) <= 4


def test_cleared_pipeline_cache_is_an_error_not_a_crash(caplog):
    text, bin_bytes, inputs, outputs = _model("squeezenet")
    net = _net(text, bin_bytes, 8)
    x = _random_inputs(inputs, 0)
    _run(net, x, outputs)
    _run(net, x, outputs)
    assert net._vulkan.replays.replayed == 1
    net.opt.pipeline_cache.clear()
    ex = net.create_extractor()
    for name, v in x.items():
        ex.input(name, ncnn_c.Mat(v))
    with caplog.at_level(logging.ERROR, logger="ncnn_c"):
        ret, _ = ex.extract(outputs[0])
    assert ret != 0
    assert "PipelineCache was cleared" in caplog.text


def test_net_clear_drops_the_recordings():
    text, bin_bytes, inputs, outputs = _model("squeezenet")
    net = _net(text, bin_bytes, 8)
    _run(net, _random_inputs(inputs, 0), outputs)
    assert len(net._vulkan.replays) == 1
    net.clear()
    assert len(net._vulkan.replays) == 0
