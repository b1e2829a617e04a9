"""Weights the native plan holds (ncnn_c/net/native/plan.py ``_park``, WeightBias.park_weights).

A layer whose weights the plan reordered into its primitive's layout lets its own go (they
were the largest part of a network's memory, held twice); reading ``weight_data`` again
restores them bit for bit from the plan's copy. Checked here: which layers park, the restore,
and every numpy path after parking (a new input shape, the plan switched off, a plan
dropped from the LRU) giving what a net that never parked gives.
"""

from __future__ import annotations

import platform

import numpy as np
import pytest
from oracle import assert_close
from test_native_plan import SQUEEZE, _net, _run, _x

import ncnn_c
from ncnn_c.layer._geometry import WeightBias

pytestmark = pytest.mark.skipif(
    platform.machine() not in ("x86_64", "AMD64"), reason="no oneDNN wheel for this architecture"
)


def _weights(net) -> dict[str, np.ndarray]:
    return {
        layer.name: np.array(layer.weight_data.numpy(), copy=True)
        for layer in net.layers()
        if isinstance(layer, WeightBias)
    }


def _parked(net) -> list[str]:
    return [
        layer.name for layer in net.layers() if isinstance(layer, WeightBias) and layer._restore is not None
    ]


def _winograd_layers(net) -> set[str]:
    """The layers the net's plans run as Winograd (their transformed weights are no copy)."""
    from ncnn_c.net.native.ops import winograd

    plans = [p for ps in net._native.plans._plans.values() for p in ps]
    return {name for p in plans for name, form in winograd.forms(p).items() if form != "direct"}


def test_squeezenet_parks_every_convolution_and_restores_it_bit_for_bit():
    net = _net()
    before = _weights(net)
    assert len(before) == 26 and not _parked(net)
    x = _x()
    first = _run(net, x)  # recorded: the plan is built and checked
    parked = _parked(net)
    assert parked and sorted(parked) == sorted(set(before) - _winograd_layers(net))
    for layer in net.layers():
        if layer.name in parked:
            assert layer._weight_data.empty() and layer._weight2d is None
    np.testing.assert_array_equal(_run(net, x), _run(net, x))
    assert _parked(net) == parked  # the plan's runs read its own copy
    after = _weights(net)  # reading weight_data restores them
    assert not _parked(net)
    for name, w in before.items():
        np.testing.assert_array_equal(after[name], w, err_msg=name)
    assert_close(_run(net, x), first, 1e-5, "native vs numpy")


def _numpy_net() -> ncnn_c.Net:
    net = _net()
    net.native_plan = False
    return net


def test_a_new_input_shape_after_parking():
    net = _net()
    _run(net, _x())
    assert _parked(net)
    y = _x(1, (3, 199, 211))
    want = _run(_numpy_net(), y)
    got = _run(net, y)  # recorded on restored weights, then parked again behind the new plan
    assert_close(got, want, 1e-5, "native vs numpy")
    assert _parked(net)
    assert_close(_run(net, y), want, 1e-5, "native vs numpy")
    assert_close(_run(net, _x()), _run(_numpy_net(), _x()), 1e-5, "native vs numpy")


def test_the_numpy_path_after_parking_is_the_unparked_one():
    net = _net()
    x = _x(2)
    _run(net, x)
    assert _parked(net)
    net.native_plan = False
    np.testing.assert_array_equal(_run(net, x), _run(_numpy_net(), x))


def test_dropped_plans_leave_restorable_weights(monkeypatch):
    from ncnn_c.net.native import plan

    monkeypatch.setattr(plan, "CAPACITY", 1)
    net = _net()
    x, y = _x(3), _x(4, (3, 231, 229))
    _run(net, x)
    _run(net, y)  # x's plan leaves the LRU; the layers are parked behind y's
    assert len(net._native.plans) == 1 and _parked(net)
    assert_close(_run(net, x), _run(_numpy_net(), x), 1e-5, "native vs numpy")
    net.clear()
    assert net.load_param(SQUEEZE[0]) == 0 and net.load_model(SQUEEZE[1]) == 0
    assert not _parked(net)


def test_folded_weights_stay_with_their_layer(tmp_path):
    """A BatchNorm folded into a convolution makes the plan's copy differ from the layer's
    weights: those stay; the 1x1 convolution after it parks."""
    c, n, m = 16, 16, 32
    param = tmp_path / "m.param"
    param.write_text(
        "7767517\n4 4\n"
        f"Input in 0 1 x 0=12 1=12 2={c}\n"
        f"Convolution conv 1 1 x y 0={n} 1=3 2=2 5=1 6={n * c * 9}\n"
        f"BatchNorm bn 1 1 y z 0={n}\n"
        f"Convolution pw 1 1 z out 0={m} 1=1 5=1 6={m * n}\n"
    )
    g = np.random.default_rng(5)
    flag = np.zeros(1, np.uint32).tobytes()
    parts = [
        flag + g.standard_normal(n * c * 9).astype(np.float32).tobytes(),  # conv weights
        g.standard_normal(n).astype(np.float32).tobytes(),  # conv bias
        (g.random(n) + 0.5).astype(np.float32).tobytes(),  # bn slope
        g.standard_normal(n).astype(np.float32).tobytes(),  # bn mean
        (g.random(n) + 0.5).astype(np.float32).tobytes(),  # bn var
        g.standard_normal(n).astype(np.float32).tobytes(),  # bn bias
        flag + g.standard_normal(m * n).astype(np.float32).tobytes(),  # pw weights
        g.standard_normal(m).astype(np.float32).tobytes(),  # pw bias
    ]
    model = tmp_path / "m.bin"
    model.write_bytes(b"".join(parts))
    net = _net(str(param), str(model))
    x = g.standard_normal((c, 12, 12)).astype(np.float32)
    first = _run(net, x, "out", "x")
    assert _parked(net) == ["pw"]
    assert not net.layers()[1]._weight_data.empty()
    assert_close(_run(net, x, "out", "x"), first, 1e-5, "native vs numpy")
