"""The Extractor contract (docs/design.md) on every executor, against the PyPI ncnn: every
blob alone and random sequences of extracts, light mode on and off, a fresh Net (the net's
first extract) and a shared one (later extracts), for every network under models/
(tests/contract.py says what is compared). The main run samples a few networks per
executor and a few blobs each; the slow run takes every network on the CPU executors and
all but the heavy ones and the decoders on Vulkan, with every blob of a network of up to WHOLE_SINGLES blobs and a
seeded WHOLE_SINGLES of a larger one (docs/design.md says why not all).

The regressions it was written for, kept as named tests: SqueezeNet's pool10 came back as
prob's values while the native plan was being recorded (the Softmax after it ran in place on
the Mat handed out), and a decoder whose kv caches were extracted before out0 with the caches
never given failed on every executor (the walk treated an unfed input as missing)."""

from __future__ import annotations

import zlib

import numpy as np
import pytest
from contract import EXECUTORS, check, make_net, networks, oracle, sample_runs
from oracle import rel_l2

import ncnn_c

ncnn = pytest.importorskip("ncnn")

NETS = networks()
# the main run's sample: the regressions' networks, an int8 one, a multi-head detector, and
# the network whose extra heads a plan learns to hand out
MAIN = {
    "numpy": ["squeezenet_real", "qwen3_2layer_unfed_caches", "nanodet_m", "efficientnetv2_b0"],
    "native": [
        "squeezenet_real",
        "qwen3_2layer_unfed_caches",
        "qwen3_2layer_empty_caches",
        "efficientnetv2_b0",
        "mobilenet_int8",
        "yolo-fastestv2",
        "nanodet_m",
    ],
    "vulkan": ["squeezenet_real", "qwen3_2layer_unfed_caches"],
}


# on lavapipe (two CPU cores running the shaders) the heavy networks (VGG16, AlexNet, the
# ViT, the large int8 ones) and the decoders' every blob would take the slow run past its
# half hour: Vulkan takes the "whole" of every other network, a sample of the decoder
VULKAN_SAMPLE = {"qwen3_2layer_empty_caches"}
VULKAN_WHOLE = {n for n, net in NETS.items() if not net.slow and not n.startswith("qwen3")}


# the slow run's "whole": every blob of a network of up to this many blobs alone, a seeded
# sample of this many (an output and an in-place layer's bottom among them) of a larger one;
# every blob of all 31 networks on each executor would take the slow run past an hour on two cores
WHOLE_SINGLES = 40


def _cases():
    for executor in EXECUTORS:
        marks = [pytest.mark.gpu] if executor == "vulkan" else []
        for name in sorted(NETS):
            if name in MAIN[executor]:
                yield pytest.param(name, executor, "sample", marks=marks, id=f"{executor}-{name}-sample")
            slow = [*marks, pytest.mark.slow]
            if (executor != "vulkan" and name != "vision_transformer") or name in VULKAN_WHOLE:
                yield pytest.param(name, executor, "whole", marks=slow, id=f"{executor}-{name}-whole")
            elif name not in MAIN[executor] and (executor != "vulkan" or name in VULKAN_SAMPLE):
                yield pytest.param(name, executor, "sample", marks=slow, id=f"{executor}-{name}-sample")


def _gpu_or_skip(executor: str) -> None:
    if executor == "vulkan" and ncnn_c.get_gpu_count() == 0:
        pytest.skip("no Vulkan device")


@pytest.fixture
def strict(monkeypatch):
    # a plan that differs from the numpy layers is an error, not a quiet fallback
    monkeypatch.setenv("NCNN_C_NATIVE_STRICT", "1")


@pytest.mark.parametrize("name,executor,extent", list(_cases()))
def test_contract(name, executor, extent, strict):
    _gpu_or_skip(executor)
    net = NETS[name]
    if extent == "sample":
        runs = sample_runs(net, seed=zlib.crc32(f"{name}/{executor}".encode()) % 1000, singles=3, sequences=2)
        tallies = check(net, executor, runs)
    else:
        runs = sample_runs(net, seed=1, singles=WHOLE_SINGLES, sequences=6)
        # the blobs alone on the shared net (its first extract of each), a third of them
        # again (later extracts), the outputs and the sequences on fresh nets too
        # (a heavy network's fresh nets, hundreds of MB of weights each, for the sequences only)
        first = [r for r in runs if len(r[1]) > 1 or (r[1][0] in net.outputs and not net.slow)]
        order = first + [r for r in runs if r not in first]
        fresh = len(first)
        again = list(range(fresh)) + list(range(fresh, len(order), 3))
        tallies = check(net, executor, order, fresh=fresh, again=again)
    failures = [f for t in tallies.values() for f in t.failures]
    assert not failures, f"{len(failures)} extracts differ from ncnn's:\n" + "\n".join(failures[:20])
    assert sum(t.equal for t in tallies.values()) > 0


def test_pool10_while_the_plan_is_recorded(strict):
    """The issue's first case, alone: a fresh Net, a fresh extractor, pool10 first."""
    net = NETS["squeezenet_real"]
    tallies = check(
        net, "native", [(True, ("pool10",)), (True, ("pool10", "prob")), (False, ("prob", "pool10"))]
    )
    assert not tallies["fresh"].failures + tallies["shared"].failures
    assert tallies["fresh"].equal == 5


@pytest.mark.parametrize("executor", EXECUTORS)
def test_kv_caches_before_out0(executor, strict):
    """ncnn's decoder, caches never given on the first step, every cache extracted before
    out0 (each SDPA keeps its other tops, so no extract needs an input back)."""
    _gpu_or_skip(executor)
    net = NETS["qwen3_2layer_unfed_caches"]
    caches = tuple(t for _, _, tops in net.layers if len(tops) == 3 for t in tops[1:])
    runs = [
        (True, (*caches, "out0")),
        (True, tuple(reversed(caches)) + ("out0",)),
        (False, ("out0", *caches)),
    ]
    tallies = check(net, executor, runs, fresh=1)
    assert not tallies["fresh"].failures + tallies["shared"].failures
    assert tallies["fresh"].equal == len(caches) + 1


def test_refusal_is_logged(caplog):
    """Where light mode released an input a later extract needs, ncnn_c refuses with a line
    saying which input and what to do, never a value."""
    net = NETS["squeezenet_real"]
    n = ncnn_c.Net()
    n.native_plan = False
    assert n.load_param_mem(net.param_text) == 0 and n.load_model_mem(net.weights) == 0
    ex = n.create_extractor()
    ex.input("data", ncnn_c.Mat(net.inputs["data"]))
    assert ex.extract("prob")[0] == 0
    with caplog.at_level("ERROR", logger="ncnn_c"):
        ret, m = ex.extract("pool1")
    assert ret != 0 and m.empty()
    assert "needs input 'data' again" in caplog.text and "set_light_mode(False)" in caplog.text
    ex.set_light_mode(False)
    ex.input("data", ncnn_c.Mat(net.inputs["data"]))
    assert ex.extract("pool1")[0] == 0
    assert np.isfinite(np.array(ex.extract("pool1")[1])).all()


@pytest.mark.gpu
def test_a_failed_vulkan_extract_hands_out_nothing_it_did_not_compute(monkeypatch):
    """A GPU layer fails after the layers before it were recorded but never submitted: those
    device blobs hold nothing, and a later extract of one must compute it, not download it."""
    _gpu_or_skip("vulkan")
    net = NETS["squeezenet_real"]
    n = make_net(net, "vulkan", 2)
    n.replay_capacity = 0
    (late,) = [layer for layer in n.layers() if layer.name == "conv10"]
    early = "fire9/concat_drop9"
    truth = oracle(net, [(False, (early,))])[0][0][1]
    ex = n.create_extractor()
    ex.set_light_mode(False)
    ex.input("data", ncnn_c.Mat(net.inputs["data"]))
    monkeypatch.setattr(late, "forward_vk", lambda *args: -1)
    assert ex.extract("prob")[0] != 0
    monkeypatch.undo()
    ret, m = ex.extract(early)
    assert ret == 0
    assert rel_l2(np.array(m), truth) <= 1e-3
