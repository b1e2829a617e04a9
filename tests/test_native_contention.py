"""A busy machine: two-thread native runs take one thread or two, whichever ran faster there
(net/native/contention.py), the one-thread run with a plan of its own, and go back to two
threads (and their plan) once the machine is quiet. The machine's load is a stand-in here:
the real one would make the test depend on it."""

from __future__ import annotations

import logging

import numpy as np
import pytest
from test_native_plan import SQUEEZE, _x

import ncnn_c
from ncnn_c.net.native import contention


class Load:
    """Runnable tasks the stand-in reports; one read per extract of a two-thread run."""

    def __init__(self, running: int | None) -> None:
        self.running = running
        self.reads = 0

    def __call__(self) -> int | None:
        self.reads += 1
        return self.running


@pytest.fixture
def load(monkeypatch):
    monkeypatch.setenv("NCNN_C_CONTENTION", "1")
    stand_in = Load(1)
    # no span to wait out: each read is one step of the streak (the span has a test of its own)
    monkeypatch.setattr(contention, "STATE", contention.Contention(stand_in, cpus=16, hold=0.0))
    return stand_in


def test_busy_after_a_streak_and_quiet_after_one(load):
    state = contention.STATE
    assert [state.threads(2) for _ in range(3)] == [2, 2, 2]
    load.running = 18  # 16 busy processes beside this run's two threads
    assert [state.threads(2) for _ in range(3)] == [2, 1, 1]  # one busy read is not enough
    load.running = 15  # 13 others leave three CPUs: two are enough
    assert [state.threads(2) for _ in range(3)] == [1, 2, 2]


def test_the_streak_must_span_the_hold(monkeypatch):
    """Busy reads in a row flip the state only once they span ``hold`` seconds (a kernel
    thread's blip does not), and a quiet read in between starts the span again."""
    monkeypatch.setenv("NCNN_C_CONTENTION", "1")
    load = Load(18)
    now = [100.0]
    state = contention.Contention(load, cpus=16, hold=0.3, clock=lambda: now[0])

    def at(t: float) -> int:
        now[0] = 100.0 + t
        return state.threads(2)

    assert [at(0.0), at(0.1), at(0.2)] == [2, 2, 2]  # three busy reads within 0.2 s
    load.running = 1
    assert at(0.35) == 2 and not state.busy  # a quiet read: the span starts again
    load.running = 18
    assert [at(0.4), at(0.6)] == [2, 2] and not state.busy
    assert at(0.71) == 1 and state.busy  # 0.31 s of busy reads
    load.running = 1
    assert [at(0.8), at(1.0), at(1.11)] == [1, 1, 2]  # as long to be quiet again
    assert not state.busy


def test_an_isolated_read_does_not_flip(load):
    state = contention.STATE
    seq = []
    for running in (18, 1, 18, 1, 18):
        load.running = running
        seq.append(state.threads(2))
    assert seq == [2, 2, 2, 2, 2]


@pytest.mark.parametrize("threads", [1, 3, 4, 8])
def test_other_thread_counts_are_the_callers(load, threads):
    load.running = 64
    assert [contention.STATE.threads(threads) for _ in range(3)] == [threads] * 3
    assert load.reads == 0  # nothing read either


def test_no_load_figure_or_switched_off(load, monkeypatch):
    load.running = None  # no /proc/loadavg
    assert [contention.STATE.threads(2) for _ in range(3)] == [2, 2, 2]
    load.running = 64
    monkeypatch.setenv("NCNN_C_CONTENTION", "0")
    assert [contention.STATE.threads(2) for _ in range(3)] == [2, 2, 2]


def test_the_real_load_reads():
    running = contention._read_running()
    assert running is not None and running >= 1  # this test's thread is running


def run(net, x) -> np.ndarray:
    ex = net.create_extractor()
    ex.input("data", ncnn_c.Mat(x))
    ret, out = ex.extract("prob")
    assert ret == 0
    return np.array(out).copy()


def test_a_busy_machine_runs_a_one_thread_plan_then_two_again(load, caplog):
    net = ncnn_c.Net()
    net.opt.num_threads = 2
    assert net.load_param(SQUEEZE[0]) == 0 and net.load_model(SQUEEZE[1]) == 0
    plans = net._native.plans
    x = _x(3)
    quiet = [run(net, x) for _ in range(2)]  # records the two-thread plan, runs it
    assert plans.built == 1
    load.running = 18
    with caplog.at_level(logging.INFO, logger="ncnn_c"):
        # one extract before the streak, one that records the one-thread plan, then the
        # measured runs: SAMPLES on one thread, SAMPLES on two
        busy = [run(net, x) for _ in range(2 + 2 * contention.SAMPLES)]
    assert "the machine is busy (18 runnable tasks, 16 CPUs)" in caplog.text
    assert plans.built == 2  # the one-thread plan, recorded once; the two-thread one reused
    (timings,) = contention.STATE._timings.values()
    assert [len(timings.seconds[t]) for t in (1, 2)] == [contention.SAMPLES] * 2
    assert all(v > 0 for t in (1, 2) for v in timings.seconds[t])
    load.running = 1
    again = [run(net, x) for _ in range(4)]
    assert plans.built == 2  # back on the two-thread plan: nothing recorded
    for out in busy + again:
        np.testing.assert_allclose(out, quiet[0], rtol=1e-5, atol=1e-6)
    # the extractor's own option is left as the caller set it
    assert net.create_extractor().opt.num_threads == 2


def test_no_loadavg_file_reads_none_once(monkeypatch):
    monkeypatch.setattr(contention, "LOADAVG", "/nonexistent/loadavg")
    monkeypatch.setattr(contention, "_fd", None)
    assert contention._read_running() is None
    assert contention._fd == -1  # not tried again at every extract
    assert contention._read_running() is None


def _busy(state, load) -> None:
    load.running = 18
    while not state.busy:
        state.threads(2)


def test_busy_runs_measure_both_counts_then_take_the_faster(load):
    state = contention.STATE
    _busy(state, load)
    key = ("net", 0, ((0, (3, 8, 8)),))
    n = contention.SAMPLES
    seen = []
    for _ in range(2 * n):
        t = state.threads(2, key)
        seen.append(t)
        state.record(key, t, 0.010 if t == 1 else 0.004)  # two threads faster here
    assert seen == [1] * n + [2] * n
    choices = [state.threads(2, key) for _ in range(contention.PROBE)]
    # two threads from now on, one probe of one thread among every PROBE extracts
    assert choices.count(2) == contention.PROBE - 1 and choices.count(1) == 1


def test_a_probe_that_finds_one_thread_faster_switches_back(load):
    state = contention.STATE
    _busy(state, load)
    key = "k"
    for _ in range(2 * contention.SAMPLES):
        t = state.threads(2, key)
        state.record(key, t, 0.010 if t == 1 else 0.004)
    # the load changes: one thread is now the faster; each probe brings a new sample
    picks = []
    for _ in range(contention.PROBE * (contention.SAMPLES + 1)):
        t = state.threads(2, key)
        picks.append(t)
        state.record(key, t, 0.002 if t == 1 else 0.004)
    assert picks[-5:] == [1] * 5


def test_timings_are_kept_only_while_busy_and_per_spell(load):
    state = contention.STATE
    key = "k"
    state.record(key, 2, 0.001)  # quiet: nothing kept
    assert not state._timings
    _busy(state, load)
    for _ in range(2 * contention.SAMPLES):
        t = state.threads(2, key)
        state.record(key, t, 0.010 if t == 1 else 0.004)
    assert state.threads(2, key) == 2
    load.running = 1
    while state.busy:
        assert state.threads(2, key) in (1, 2)
    assert not state._timings  # the next busy spell measures afresh
    _busy(state, load)
    assert state.threads(2, key) == 1


def test_busy_timings_keep_a_bounded_number_of_keys(load):
    state = contention.STATE
    _busy(state, load)
    for k in range(contention.KEYS + 10):
        state.threads(2, k)
    assert len(state._timings) == contention.KEYS
    assert 0 not in state._timings and contention.KEYS + 9 in state._timings
