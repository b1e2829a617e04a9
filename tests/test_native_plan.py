"""The native CPU plan (ncnn_c/net/native/): recorded once per input shape, then run in
oneDNN primitives; numpy layers in between where there is no native form.

Checked here: the plan agrees with the numpy path and with the PyPI ncnn; its lifetime
(input shapes, option values, Net.clear, load_model again, LRU); threads; what it refuses
(custom layers, non-finite first inputs, layers it cannot express). The whole suite also
runs through it: every CPU Net test reaches the plan from its second extract of a shape.
"""

from __future__ import annotations

import platform
import threading
import time
import traceback
from pathlib import Path

import numpy as np
import pytest
from oracle import FP32_FLAGS, assert_close, run_ncnn
from test_networks import parse_param

import ncnn_c
from ncnn_c.net import native
from ncnn_c.tools.randbin import random_weights

MODELS = Path(__file__).resolve().parents[1] / "models"
SQUEEZE = (str(MODELS / "squeezenet_v1.1.param"), str(MODELS / "squeezenet_v1.1.bin"))

# oneDNN's CPU wheels exist for x86-64 only: elsewhere the plan is off by design (the numpy
# layers run); on x86-64 a missing plan is a broken install and these tests fail
pytestmark = pytest.mark.skipif(
    platform.machine() not in ("x86_64", "AMD64"), reason="no oneDNN wheel for this architecture"
)


def _net(param=SQUEEZE[0], model=SQUEEZE[1], threads=2) -> ncnn_c.Net:
    net = ncnn_c.Net()
    net.opt.num_threads = threads
    assert net.load_param(param) == 0
    assert net.load_model(model) == 0
    return net


def _run(net, x, name="prob", inp="data") -> np.ndarray:
    ex = net.create_extractor()
    ex.input(inp, ncnn_c.Mat(x))
    ret, out = ex.extract(name)
    assert ret == 0
    return np.array(out).copy()


def _x(seed=0, shape=(3, 227, 227)) -> np.ndarray:
    return np.random.default_rng(seed).random(shape, dtype=np.float32)


def test_squeezenet_plan_matches_numpy_and_the_oracle():
    net = _net()
    x = _x()
    first = _run(net, x)  # numpy, recorded
    assert len(net._native.plans) == 1
    plan = native.NativePlans.take(net._native.plans, next(iter(net._native.plans._plans)))
    assert plan is not None and plan.native_layers == len(
        net._view.plan(net.find_blob_index_by_name("prob")).order
    )
    plan.lock.release()
    second = _run(net, x)  # native
    assert_close(second, first, 1e-5, "native vs numpy")
    ret, ref = run_ncnn(
        Path(SQUEEZE[0]).read_text(), Path(SQUEEZE[1]).read_bytes(), [x], 1, ["data"], ["prob"]
    )
    assert ret == 0
    assert_close(second, ref[0].reshape(second.shape), 1e-4, "native vs PyPI ncnn")
    assert int(second.argmax()) == int(ref[0].argmax())


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_thread_counts_agree(threads):
    x = _x(1)
    ref = _run(_net(threads=1), x)
    net = _net(threads=threads)
    _run(net, x)
    assert_close(_run(net, x), ref, 1e-5, f"{threads} threads")


def test_a_new_input_shape_records_a_new_plan_and_both_stay():
    net = _net()
    a, b = _x(2, (3, 227, 227)), _x(3, (3, 160, 160))
    ref_a, ref_b = _run(net, a), _run(net, b)
    assert len(net._native.plans) == 2
    assert_close(_run(net, a), ref_a, 1e-5)
    assert_close(_run(net, b), ref_b, 1e-5)


def test_plans_are_bounded_and_dropped_with_the_weights(monkeypatch):
    monkeypatch.setattr(native.plan, "CAPACITY", 2)
    net = _net()
    for size in (64, 80, 96):
        _run(net, _x(size, (3, size, size)))
    assert len(net._native.plans._plans) == 2
    x = _x(4)
    _run(net, x)
    plan = net._native.plans
    assert len(plan) >= 1
    assert net.load_model(SQUEEZE[1]) == 0  # load_model again: new weights, no old plans
    assert len(net._native.plans) == 0
    before = _run(net, x)
    assert len(net._native.plans) == 1
    net.clear()
    assert len(net._native.plans) == 0
    del before


def test_changed_options_record_anew():
    net = _net()
    x = _x(5)
    _run(net, x)
    net.opt.num_threads = 1
    _run(net, x)
    assert len(net._native.plans) == 2


def test_switched_off_per_net():
    net = _net()
    net.native_plan = False
    x = _x(6)
    _run(net, x)
    _run(net, x)
    assert len(net._native.plans) == 0


def test_non_finite_first_input_builds_no_plan_yet():
    # pool10, not prob: ncnn's Softmax turns pool10's NaNs into finite zeros (ncnn_c/layer/
    # softmax.py), and the recording judges the result it hands out
    net = _net()
    bad = _x(7)
    bad[0, 0, 0] = np.nan
    assert np.isnan(_run(net, bad, "pool10")).any()
    assert len(net._native.plans) == 0 and not net._native.plans.failed
    _run(net, _x(8), "pool10")
    assert len(net._native.plans) == 1


def test_threads_sharing_a_net_get_their_own_plan_instances():
    net = _net()
    xs = [_x(10 + i) for i in range(3)]
    refs = [_run(net, x) for x in xs]
    errors: list = []

    def work(i: int) -> None:
        for _ in range(6):
            try:
                assert_close(_run(net, xs[i]), refs[i], 1e-5, f"thread {i}")
            except Exception as e:  # noqa: BLE001
                errors.append(e)

    ts = [threading.Thread(target=work, args=(i,)) for i in range(3)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert not errors, errors[0]
    assert 1 <= len(net._native.plans) <= native.INSTANCES


def test_outputs_come_from_the_blob_allocator():
    from ncnn_c.allocator import PoolAllocator

    net = _net()
    pool = PoolAllocator()
    net.opt.blob_allocator = pool
    x = _x(9)
    _run(net, x)
    ex = net.create_extractor()
    ex.input("data", ncnn_c.Mat(x))
    ret, out = ex.extract("prob")
    assert ret == 0 and out.allocator is pool


def test_a_layer_without_a_native_form_splits_the_plan(tmp_path):
    # UnaryOp floor has no oneDNN form: the plan runs convolution | floor (numpy) | convolution
    rng = np.random.default_rng(0)
    w1 = rng.standard_normal(8 * 3 * 9).astype(np.float32)
    w2 = rng.standard_normal(4 * 8 * 9).astype(np.float32)
    param = "\n".join(
        [
            "7767517",
            "4 4",
            "Input in 0 1 data 0=16 1=16 2=3",
            "Convolution c1 1 1 data a 0=8 1=3 4=1 5=0 6=216 9=1",
            "UnaryOp floor 1 1 a b 0=2",
            "Convolution c2 1 1 b out 0=4 1=3 4=1 5=0 6=288",
        ]
    )
    (tmp_path / "m.param").write_text(param + "\n")
    import struct

    (tmp_path / "m.bin").write_bytes(
        struct.pack("<I", 0) + w1.tobytes() + struct.pack("<I", 0) + w2.tobytes()
    )
    net = _net(str(tmp_path / "m.param"), str(tmp_path / "m.bin"))
    x = _x(11, (3, 16, 16))
    ref = _run(net, x, "out")
    got = _run(net, x, "out")
    assert_close(got, ref, 1e-5)
    (plan,) = next(iter(net._native.plans._plans.values()))
    assert plan.native_layers == 2 and len(plan.segments) == 3
    ret, oracle = run_ncnn(param + "\n", (tmp_path / "m.bin").read_bytes(), [x], 1, ["data"], ["out"])
    assert ret == 0
    assert_close(got, oracle[0], 1e-4)


def test_fp32_flags_of_the_oracle_run_native_too():
    net = ncnn_c.Net()
    for k, v in FP32_FLAGS.items():
        setattr(net.opt, k, v)
    assert net.load_param(SQUEEZE[0]) == 0 and net.load_model(SQUEEZE[1]) == 0
    x = _x(12)
    _run(net, x)
    _run(net, x)
    assert len(net._native.plans) == 1


# the layers of each benchmark network that stay numpy in its plan: detection heads (NMS and
# box decoding have no oneDNN form); everything else runs in one native segment
BENCH = MODELS / "benchmark"
NUMPY_LAYERS = {
    "mobilenet_ssd": ["DetectionOutput"],
    "squeezenet_ssd": ["DetectionOutput"],
    "mobilenet_yolo": ["YoloDetectionOutput"],
    "mobilenetv2_yolov3": ["Yolov3DetectionOutput"],
    "yolo-fastest-1.1": ["Yolov3DetectionOutput"],
    "yolov4-tiny": ["Yolov3DetectionOutput"],
}
INPUT_SHAPES = {"FastestDet": (3, 352, 352)}


def bench_models(main: tuple[str, ...]) -> list:
    """The benchmark networks as parameters: ``main`` in the main run (15 minutes on two
    cores), each of the others (3-14 s there) in the slow run CI also runs."""
    return [
        p.stem if p.stem in main else pytest.param(p.stem, marks=pytest.mark.slow)
        for p in sorted(BENCH.glob("*.param"))
    ]


@pytest.mark.parametrize("model", bench_models(("squeezenet", "mobilenet", "shufflenet", "FastestDet")))
def test_benchmark_networks_run_natively(model, monkeypatch):
    monkeypatch.setenv("NCNN_C_NATIVE_STRICT", "1")
    _inputs, outputs = parse_param(BENCH / f"{model}.param")
    # numpy (recorded, the plan checked against it), then the plan
    net, results = _outputs_at(model, 1, runs=2)
    (plan,) = [p for ps in net._native.plans._plans.values() for p in ps]
    numpy_layers = [plan.layers[s.layer].type for s in plan.segments if s.layer >= 0]
    assert numpy_layers == NUMPY_LAYERS.get(model, [])
    for (name, typ), got, ref in zip(outputs, results[1], results[0], strict=True):
        if "Detection" not in typ:
            assert_close(got, ref, 1e-4, f"{model}:{name}")


def test_a_chain_of_tiny_layers_is_one_native_segment():
    """benchmarks/layer_overhead.py's chain (ReLU, Dropout with a scale, leaky ReLU): every layer
    native, one segment, the numpy result."""
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
    from layer_overhead import chain_param

    net = ncnn_c.Net()
    net.opt.num_threads = 2
    assert net.load_param_mem(chain_param(30)) == 0 and net.load_model(ncnn_c.DataReaderFromEmpty()) == 0
    x = np.array([-2.0, -0.5, 0.5, 3.0], np.float32)
    ref = _run(net, x, "b30", "b0")
    got = _run(net, x, "b30", "b0")
    (plan,) = next(iter(net._native.plans._plans.values()))
    assert plan.native_layers == 30 and len(plan.segments) == 1
    np.testing.assert_allclose(got, ref, rtol=1e-6)


def test_shapes_that_change_on_every_extract_stop_recording(monkeypatch):
    """An LLM's decode steps grow the kv cache by one token per extract: every shape is new,
    so plans would be built and never used. After WASTED_LIMIT unused recorded plans leave
    the LRU, the net records no more (the numpy layers run, correctly). Plans made from
    inferred shapes cost little and do not count (a letterbox stream keeps native speed):
    every plan is recorded here (NCNN_C_NATIVE_CHECK=every), as a decoder's are."""
    monkeypatch.setattr(native.plan, "CAPACITY", 2)
    monkeypatch.setenv("NCNN_C_NATIVE_CHECK", "every")
    net = _net()
    plans = net._native.plans
    sizes = list(range(64, 64 + 8 * (2 + native.plan.WASTED_LIMIT + 2), 8))
    for size in sizes:
        _run(net, _x(size, (3, size, size)))
    assert plans.wasted == native.plan.WASTED_LIMIT
    built = plans.built
    x = _x(1, (3, 227, 227))
    ref = _run(net, x)
    assert_close(_run(net, x), ref, 1e-5)
    assert plans.built == built  # nothing recorded any more
    net.clear()
    assert plans.wasted == 0


def test_cheap_plans_never_stop_the_recording(monkeypatch):
    """Sizes that change on every extract, planned from inferred shapes: none counts as
    wasted (only the first size's recorded one does), every size gets a native plan, and the arenas of all but the RESIDENT plans used
    last go back to the system (their pages), coming back at their next run."""
    monkeypatch.setattr(native.plan, "CAPACITY", 6)
    monkeypatch.delenv("NCNN_C_NATIVE_STRICT", raising=False)
    monkeypatch.delenv("NCNN_C_NATIVE_CHECK", raising=False)
    net = _net()
    plans = net._native.plans
    sizes = list(range(64, 64 + 8 * 12, 8))
    for size in sizes:
        _run(net, _x(size, (3, size, size)))
    # the first size's plan, recorded, left the LRU unused: the one that counts
    assert plans.wasted == 1 and plans.built == len(sizes)
    kept = list(plans._plans.values())
    resident = [p.arena_resident for ps in kept for p in ps]
    assert resident == [False] * (len(resident) - native.plan.RESIDENT) + [True] * native.plan.RESIDENT
    size = sizes[-6]  # the oldest kept: its arena went back
    x = _x(size, (3, size, size))
    got = _run(net, x)
    assert plans.built == len(sizes)  # it ran its plan again, nothing new
    net._native.enabled = False
    assert_close(got, _run(net, x), 1e-5)  # against the numpy layers


# -- lifetime against other threads ------------------------------------------------------------
# An extract racing a load_model, clear() or the net's end on another thread: each extract
# gives a result of one whole set of weights or fails with a line that says why, never a
# crash, an exception or a mix; no plan recorded from replaced weights survives the race.

_LINES = (
    "load_model is running on another thread",
    "load_model ran on another thread during this extract",
    "the net was cleared or loaded a param again",
    "no blob named",  # between clear() and load_param on the other thread
    "the net has no weights",  # between load_param and load_model
)


def _race(net_of, change, seconds=2.0, workers=2, pause=0.06) -> tuple[list, list]:
    """``workers`` threads extract SqueezeNet from ``net_of()`` while this one calls
    ``change(i)`` every ``pause`` seconds until ``seconds`` pass: (results of the successful
    extracts, failures)."""
    x = _x(5)
    done, failed, errors = [], [], []
    stop = threading.Event()

    def work() -> None:
        while not stop.is_set():
            net = net_of()
            try:
                ex = net.create_extractor()
                r = ex.input("data", ncnn_c.Mat(x))
                ret, out = ex.extract("prob") if r == 0 else (r, None)
                (done if ret == 0 else failed).append(np.array(out).copy() if ret == 0 else ret)
            except Exception:  # noqa: BLE001 - the test's finding
                errors.append(traceback.format_exc())
            del net

    ts = [threading.Thread(target=work) for _ in range(workers)]
    for t in ts:
        t.start()
    end, i = time.monotonic() + seconds, 0
    try:
        while time.monotonic() < end:
            time.sleep(pause)
            change(i)
            i += 1
    finally:
        stop.set()
        for t in ts:
            t.join()
    assert not errors, errors[0]
    return done, failed


def _refs() -> tuple[np.ndarray, np.ndarray]:
    """SqueezeNet's output on _x(5) with its weights and with zero weights."""
    from ncnn_c.datareader import DataReaderFromEmpty

    net = _net()
    real = _run(net, _x(5))
    assert net.load_model(DataReaderFromEmpty()) == 0
    return real, _run(net, _x(5))


def _one_of(got: np.ndarray, refs) -> bool:
    return any(np.abs(got.ravel() - r.ravel()).max() <= 1e-5 * max(1.0, np.abs(r).max()) for r in refs)


def test_load_model_on_another_thread_never_mixes_weights(caplog):
    from ncnn_c.datareader import DataReaderFromEmpty

    real, zero = _refs()
    net = _net()
    # real and zero weights in turns: a result mixing the two matches neither
    done, failed = _race(
        lambda: net,
        lambda i: net.load_model(DataReaderFromEmpty() if i % 2 == 0 else SQUEEZE[1]),
        pause=0.2,  # time for whole extracts between the loads (a load takes about as long)
    )
    assert done, "no extract completed between the loads"
    assert all(_one_of(d, (real, zero)) for d in done)
    assert all(any(line in r.message for line in _LINES) for r in caplog.records if r.levelname == "ERROR")
    assert net.load_model(SQUEEZE[1]) == 0
    # the plans made in the race went with their weights: the next ones have today's
    for _ in range(3):
        assert_close(_run(net, _x(5)), real, 1e-5, "after the race")
    assert len(net._native.plans) >= 1 and not net._native.plans.failed


def test_clear_and_load_again_on_another_thread(caplog):
    real, _ = _refs()
    net = _net()

    def reload(i: int) -> None:
        net.clear()
        time.sleep(0.005)
        assert net.load_param(SQUEEZE[0]) == 0 and net.load_model(SQUEEZE[1]) == 0

    done, failed = _race(lambda: net, reload, pause=0.2)
    assert done and all(_one_of(d, (real,)) for d in done)
    assert failed and all(r == -1 for r in failed)
    errors = [r.message for r in caplog.records if r.levelname == "ERROR"]
    # a layer that ran without its weights (between load_param and load_model, or destroyed
    # under a running extract) says what failed, and the extract then says why; every other
    # line is one of the reasons above
    other = {m for m in errors if not any(line in m for line in _LINES)}
    assert errors and all("weights expect 0" in m or "(Convolution) failed" in m for m in other), other
    assert not other or any("no weights" in m or "cleared or loaded" in m for m in errors)
    assert_close(_run(net, _x(5)), real, 1e-5, "after the race")


def test_dropping_the_net_while_other_threads_extract():
    import gc

    real, _ = _refs()
    holder = [_net()]

    def replace(i: int) -> None:
        holder[0] = _net()  # the old net goes once the extracting threads let it go
        gc.collect()

    done, failed = _race(lambda: holder[0], replace)
    assert done and all(_one_of(d, (real,)) for d in done)
    assert not failed


# -- blobs extracted after a plan ran ----------------------------------------------------------


def _heads(net, x, names=("794", "796")) -> list[np.ndarray]:
    ex = net.create_extractor()
    assert ex.input("input.1", ncnn_c.Mat(x)) == 0
    outs = []
    for name in names:
        ret, m = ex.extract(name)
        assert ret == 0
        outs.append(np.array(m).copy())
    return outs


def test_blobs_extracted_after_the_plan_are_handed_out_by_the_next_one(monkeypatch):
    """ncnn's YOLO-FastestV2 example extracts the two heads ('794', '796') that the net's Noop
    output reads, not the output: the plan of the first head used to leave the second to the
    numpy layers on every extract (26 ms against 1.7 on the 2-core VM). The second extract
    teaches the plan; from the next extractor on, the plan hands out both."""
    from ncnn_c.net.reference import ReferenceExecutor

    param = BENCH / "yolo-fastestv2.param"
    weights = random_weights(str(param), seed=7, input_shape=(3, 352, 352))
    x = np.random.default_rng(8).standard_normal((3, 352, 352)).astype(np.float32)
    nets = {}
    for threads in (1, 2):
        net = nets[threads] = ncnn_c.Net()
        for k, v in FP32_FLAGS.items():
            setattr(net.opt, k, v)
        net.opt.num_threads = threads
        assert net.load_param(str(param)) == 0 and net.load_model_mem(weights) == 0
    ref = _heads(nets[1], x)  # the numpy layers (the recording)
    for net in nets.values():
        _heads(net, x)  # the plan of '794'; '796' in numpy, which it learns
        _heads(net, x)  # recorded again, handing out '796' too
    calls = []
    real = ReferenceExecutor.extract
    monkeypatch.setattr(ReferenceExecutor, "extract", lambda self, *a: calls.append(a) or real(self, *a))
    got = {t: _heads(net, x) for t, net in nets.items()}
    assert not calls, "a head came from the numpy layers"
    for g, r, name in zip(got[1], ref, ("794", "796"), strict=True):
        assert_close(g, r, 1e-4, name)
    # the order of the extracts does not matter, and every thread count gives the same bits
    for a, b in zip(got[1], got[2], strict=True):
        assert np.array_equal(a, b), float(np.abs(a - b).max())
    for _ in range(2):  # a plan of its own ('796' first), taught as above
        _heads(nets[2], x, ("796", "794"))
    calls.clear()
    swapped = _heads(nets[2], x, ("796", "794"))[::-1]
    assert not calls
    for a, b in zip(swapped, got[1], strict=True):
        assert np.array_equal(a, b), float(np.abs(a - b).max())


def test_learnt_extras_are_bounded_and_go_with_clear():
    plans = native.plan.NativePlans()
    key = (5, "opts", ((0, (3, 8, 8)),))
    plans.add(key, _Idle())
    plans.also(key, 7)
    assert len(plans) == 0 and plans.extras(key) == {7}  # the family's plans went
    plans.add(key, _Idle())
    plans.also(key, 7)  # once per blob: a plan that cannot hand it out is not dropped again
    assert len(plans) == 1
    for b in range(100, 100 + 2 * native.plan.EXTRAS):
        plans.also(key, b)
    assert len(plans.extras(key)) == native.plan.EXTRAS
    plans.refuse(key, [7])
    assert 7 not in plans.extras(key)
    plans.also(key, 7)  # refused: never learnt again
    assert 7 not in plans.extras(key)
    plans.clear()
    assert plans.extras(key) == frozenset()


class _Idle:
    """A stand-in plan for NativePlans' bookkeeping."""

    def __init__(self) -> None:
        self.lock = threading.Lock()


# -- the same bits at every thread count -------------------------------------------------------


def _outputs_at(model: str, threads: int, runs: int = 3) -> tuple[ncnn_c.Net, list[list[np.ndarray]]]:
    """The net of benchmark ``model`` (random weights, the oracle's fp32 options) and every
    output on each of ``runs`` extractors: the first from the numpy layers (the recording),
    the others from the plan."""
    param = BENCH / f"{model}.param"
    weights = random_weights(str(param), seed=7, input_shape=INPUT_SHAPES.get(model, (3, 224, 224)))
    inputs, outputs = parse_param(param)
    net = ncnn_c.Net()
    for k, v in FP32_FLAGS.items():
        setattr(net.opt, k, v)
    net.opt.num_threads = threads
    assert net.load_param(str(param)) == 0 and net.load_model_mem(weights) == 0
    g = np.random.default_rng(0)
    arrays = [g.standard_normal(s).astype(np.float32) for _, s in inputs]
    got = []
    for _ in range(runs):
        ex = net.create_extractor()
        for (name, _), a in zip(inputs, arrays, strict=True):
            assert ex.input(name, ncnn_c.Mat(a)) == 0
        outs = []
        for name, _ in outputs:
            ret, m = ex.extract(name)
            assert ret == 0
            outs.append(np.array(m).copy())
        got.append(outs)
    return net, got


@pytest.mark.parametrize("model", bench_models(("squeezenet", "mobilenet", "shufflenet", "yolo-fastestv2")))
def test_thread_counts_give_the_same_bits(model):
    """ncnn's fp32 results do not change with the thread count (each sum keeps its order):
    neither do ours, on the numpy layers' first extract nor on the plan's later ones. Found
    and mended with this test: products split by thread count on the numpy path, oneDNN's
    brgemm inner product splitting its sums at 4 threads (AlexNet), and YOLO-FastestV2's
    second head left to the numpy layers."""
    _, ref = _outputs_at(model, 1)
    for threads in (2, 4):
        _, got = _outputs_at(model, threads)
        for run, (g_outs, r_outs) in enumerate(zip(got, ref, strict=True)):
            for i, (g, r) in enumerate(zip(g_outs, r_outs, strict=True)):
                assert np.array_equal(g.view(np.uint32), r.view(np.uint32)), (
                    f"{model}: output {i}, extract {run + 1}, {threads} threads: "
                    f"{np.sum(g != r)} values differ, by up to {float(np.abs(g - r).max()):.3g}"
                )


@pytest.mark.parametrize("k,n", [(4096, 1000), (9216, 64), (100000, 16)])
def test_inner_product_sums_in_one_order_at_any_thread_count(k, n):
    """A one-row inner product runs as a GEMV whose every output one thread sums (oneDNN's
    brgemm kernels split 4096 -> 1000 over 4 threads, which changed the last bits)."""
    text = f"7767517\n2 2\nInput in 0 1 data 0={k}\nInnerProduct ip 1 1 data out 0={n} 1=1 2={k * n} 9=1\n"
    g = np.random.default_rng(k)
    w = g.standard_normal(k * n + n).astype(np.float32)
    x = g.standard_normal(k).astype(np.float32)
    outs = []
    for threads in (1, 2, 3, 4, 8):
        net = ncnn_c.Net()
        net.opt.num_threads = threads
        assert net.load_param_mem(text) == 0
        assert net.load_model_mem(np.concatenate([np.zeros(1, np.float32), w]).tobytes()) == 0
        _run(net, x, "out", "data")
        outs.append(_run(net, x, "out", "data"))
        assert len(net._native.plans) == 1
    ref = np.maximum(w[: k * n].reshape(n, k).astype(np.float64) @ x + w[k * n :], 0)
    assert_close(outs[0], ref.astype(np.float32), 1e-5, "against float64")
    for threads, o in zip((2, 3, 4, 8), outs[1:], strict=True):
        assert np.array_equal(o, outs[0]), f"{threads} threads"
