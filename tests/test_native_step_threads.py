"""A thread count per native plan step (ncnn_c/net/native/threads.py): a layer below
``MIN_WORK`` runs on one thread inside a plan of several, its primitives created under that
count; the rule can be turned off; results stay bit-identical; the fit tool runs."""

from __future__ import annotations

import ctypes
import platform
from pathlib import Path

import numpy as np
import pytest

import ncnn_c
from ncnn_c.net.native import threads, threads_fit

MODELS = Path(__file__).resolve().parents[1] / "models"
SQUEEZE = (str(MODELS / "squeezenet_v1.1.param"), str(MODELS / "squeezenet_v1.1.bin"))

pytestmark = pytest.mark.skipif(
    platform.machine() not in ("x86_64", "AMD64"), reason="no oneDNN wheel for this architecture"
)


@pytest.fixture(autouse=True)
def _strict(monkeypatch):
    monkeypatch.setenv("NCNN_C_NATIVE_STRICT", "1")
    monkeypatch.delenv("NCNN_C_STEP_WORK", raising=False)
    monkeypatch.delenv("NCNN_C_STEP_THREADS", raising=False)


def _squeezenet(n: int):
    """SqueezeNet's output at ``n`` threads (its second extract: the plan), the plan, and
    a function that extracts again."""
    net = ncnn_c.Net()
    net.opt.num_threads = n
    assert net.load_param(SQUEEZE[0]) == 0 and net.load_model(SQUEEZE[1]) == 0
    x = np.random.default_rng(0).random((3, 227, 227), dtype=np.float32)

    def run() -> np.ndarray:
        ex = net.create_extractor()
        ex.input("data", ncnn_c.Mat(x))
        ret, m = ex.extract("prob")
        assert ret == 0
        return np.array(m).copy()

    run()
    out = run()
    (plan,) = [p for ps in net._native.plans._plans.values() for p in ps]
    return out, plan, run


def _counts(plan) -> list[int]:
    return [t for s in plan.segments if s.steps is not None for t in s.steps.threads]


def test_choose_gives_one_thread_below_min_work_and_all_above(monkeypatch):
    assert threads.choose(threads.MIN_WORK - 1, 8) == 1
    assert threads.choose(threads.MIN_WORK, 8) == 8
    assert threads.choose(10**12, 1) == 1
    monkeypatch.setenv("NCNN_C_STEP_WORK", "10")
    assert threads.choose(9, 4) == 1 and threads.choose(10, 4) == 4
    monkeypatch.setenv("NCNN_C_STEP_THREADS", "0")
    assert threads.choose(0, 4) == 4


def test_layer_work_counts_products_and_values():
    conv = ncnn_c.layer.create_layer_cpu("Convolution")
    conv.num_output, conv.weight_data_size = 16, 16 * 8 * 9
    conv.bottoms, conv.tops = [0], [1]
    shapes = {0: (3, 10, 10, 1, 8, 4, 1), 1: (3, 10, 10, 1, 16, 4, 1)}
    # 1600 outputs of 72 products each, 800 + 1600 values read and written, 1152 weights
    assert threads.layer_work(conv, shapes) == 1600 * 72 + threads.MACS_PER_ELEMENT * (2400 + 1152)
    relu = ncnn_c.layer.create_layer_cpu("ReLU")
    relu.bottoms, relu.tops = [0], [1]
    assert threads.layer_work(relu, {0: shapes[0], 1: shapes[0]}) == threads.MACS_PER_ELEMENT * 1600


def test_small_layers_run_on_one_thread_with_the_same_result(monkeypatch):
    one, _, _ = _squeezenet(1)
    ruled, plan, _ = _squeezenet(2)
    counts = _counts(plan)
    assert set(counts) == {1, 2}, counts
    # the build leaves the caller's OpenMP count at num_threads
    assert ctypes.CDLL(None).omp_get_max_threads() == 2
    monkeypatch.setenv("NCNN_C_STEP_THREADS", "0")
    off, plan_off, _ = _squeezenet(2)
    assert set(_counts(plan_off)) == {2}
    assert len(_counts(plan_off)) == len(counts)
    # bit-identical: every primitive's split over threads keeps each sum's order
    assert np.array_equal(ruled, off) and np.array_equal(ruled, one)


def test_a_threshold_of_zero_keeps_every_step_at_num_threads(monkeypatch):
    monkeypatch.setenv("NCNN_C_STEP_WORK", "0")
    _, plan, _ = _squeezenet(3)
    assert set(_counts(plan)) == {3}


def test_a_timed_run_gives_each_step_a_time_and_the_same_result():
    out, plan, run = _squeezenet(2)
    plan.timing = []
    assert np.array_equal(run(), out)
    steps = sum(s.steps.count for s in plan.segments if s.steps is not None)
    assert len(plan.timing) == steps and all(t > 0 for t in plan.timing)
    owners = [o for s in plan.segments if s.steps is not None for o in s.owners]
    assert len(owners) == steps
    # the layers' steps carry their layer and work; the copy out at the end is nobody's
    assert all(li >= 0 and work > 0 for li, work in owners[:-1]) and owners[-1][0] == -1


def test_the_fit_tool_runs(capsys, tmp_path):
    param = tmp_path / "m.param"
    param.write_text(
        "7767517\n3 3\nInput in 0 1 data 0=16 1=16 2=8\n"
        "Convolution c 1 1 data a 0=8 1=3 4=1 5=1 6=576\nReLU r 1 1 a out\n"
    )
    assert threads_fit.main([str(param), "--runs", "3", "--threads", "2", "--verbose"]) == 0
    out = capsys.readouterr().out
    assert "m.param: steps' sum" in out and "least total" in out and "Convolution" in out
