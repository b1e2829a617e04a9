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

    assert [at(0.0), at(0.2)] == [2, 2]  # two busy reads within 0.2 s
    load.running = 1
    assert at(0.35) == 2 and not state.busy  # a third read, quiet: the span starts again
    load.running = 18
    assert [at(0.4), at(0.6)] == [2, 2] and not state.busy
    assert at(0.71) == 1 and state.busy  # 0.31 s of busy reads
    load.running = 1
    assert [at(0.8), at(1.0), at(1.11)] == [1, 1, 2]  # as long to be quiet again
    assert not state.busy


@pytest.mark.parametrize(
    ("running", "own", "busy"),
    [
        (2, 2, False),  # the caller and its worker, still spinning: a quiet 2-CPU machine
        (2, 1, True),  # the caller and another runtime's spinning worker
        (3, 2, True),
        (1, 1, False),
        (4, 4, True),  # this process's threads beyond the run's two compete as others do
        (2, None, False),  # no own count: the run's two threads are taken as runnable
    ],
)
def test_own_runnable_threads_are_counted_when_the_load_cannot_tell(monkeypatch, running, own, busy):
    monkeypatch.setenv("NCNN_C_CONTENTION", "1")
    asked = []

    def own_threads(num_threads):
        asked.append(num_threads)
        return own

    state = contention.Contention(Load(running), cpus=2, hold=0.0, own=own_threads)
    for _ in range(contention.STREAK + 1):
        state.threads(2)
    assert state.busy is busy
    # the own threads are read only where the load figure alone is ambiguous
    assert bool(asked) == (running == 2)


def _thread(target):
    """A started thread running ``target(stop)``, and its kernel id once it runs."""
    import threading

    stop = threading.Event()
    ids = []

    def run():
        ids.append(threading.get_native_id())
        target(stop)

    t = threading.Thread(target=run, daemon=True)
    t.start()
    while not ids:
        pass
    return t, stop, ids[0]


def _asleep(tid: int) -> None:
    """Wait until thread ``tid`` is blocked (its state no longer R), 5 s at most."""
    import time

    end = time.monotonic() + 5
    while time.monotonic() < end:
        stat = open(f"/proc/self/task/{tid}/stat", "rb").read()
        if stat[stat.rfind(b")") + 2 : stat.rfind(b")") + 3] != b"R":
            return
        time.sleep(0.001)
    raise AssertionError(f"thread {tid} never blocked")


def _gone(tid: int) -> None:
    """Wait until thread ``tid`` has left the kernel (``join`` returns a little before the
    OS thread has finished exiting, still runnable), 5 s at most."""
    import time

    end = time.monotonic() + 5
    while time.monotonic() < end:
        try:
            open(f"/proc/self/task/{tid}/stat", "rb").close()
        except OSError:
            return
        time.sleep(0.001)
    raise AssertionError(f"thread {tid} never ended")


def _spin(stop) -> None:
    """Runnable the whole time: numpy's loops over large arrays run without the GIL (a
    pure-Python loop would wait, asleep, for the GIL whenever the test's thread holds it)."""
    import numpy as np

    a = np.ones(1 << 22, np.float32)
    while not stop.is_set():
        np.multiply(a, 1.0001, out=a)


def test_own_threads_count_the_team_alone():
    """A spinning thread of this process counts only when it is one of the team's; a
    sleeping one never does."""
    import threading
    import time

    spinner, stop_spin, spin_id = _thread(_spin)
    sleeper, stop_sleep, sleep_id = _thread(lambda stop: stop.wait())
    _asleep(sleep_id)
    me = threading.get_native_id()
    try:
        outside = contention.OwnThreads(team=lambda n: [me])
        assert [outside(2) for _ in range(5)] == [1] * 5  # the spinner is not the team's
        inside = contention.OwnThreads(team=lambda n: [me, spin_id, sleep_id])
        counts = []
        for _ in range(50):
            counts.append(inside(3))
            time.sleep(0.0005)  # the GIL to the spinner, which then runs without it
        assert max(counts) == 2 and min(counts) >= 1  # caller + spinner; the sleeper never
        assert contention.OwnThreads(team=lambda n: None)(2) is None
    finally:
        stop_spin.set()
        stop_sleep.set()
        spinner.join()
        sleeper.join()
    # a worker of the team ends (libgomp made its pool anew): its file fails, the team is
    # asked again
    brief, stop_brief, brief_id = _thread(lambda stop: stop.wait())
    try:
        _asleep(brief_id)
        teams = [[me, brief_id], [me]]
        gone = contention.OwnThreads(team=lambda n: teams.pop(0))
        assert gone(2) == 1 and len(teams) == 1
    finally:
        stop_brief.set()  # a failed assert must not leave a thread that keeps pytest alive
        brief.join()
    _gone(brief_id)
    assert gone(2) == 1 and not teams


def test_own_threads_real_team():
    """The OpenMP team of the native extensions: its size, the caller first."""
    import threading

    from ncnn_c.net.native.ops import winograd

    if winograd.kernels() is None:
        pytest.fail("the _winograd extension is not built")
    tids = winograd.team_tids(2)
    assert tids is not None and len(tids) == 2 and tids[0] == threading.get_native_id()
    assert len(set(tids)) == 2
    assert winograd.team_tids(2) == tids  # libgomp keeps the caller's pool workers
    own = contention.OwnThreads()
    assert 1 <= own(2) <= 2


def test_a_quarter_of_quiet_reads_does_not_restart_the_span(monkeypatch):
    """A load the reads see three times in four (a spinning worker now and then off its
    core) still makes the machine busy once the span is over; more quiet reads restart it."""
    monkeypatch.setenv("NCNN_C_CONTENTION", "1")
    load = Load(18)
    now = [0.0]
    state = contention.Contention(load, cpus=16, hold=0.3, clock=lambda: now[0])
    seen = []
    for i, running in enumerate([18, 18, 18, 1, 18, 18, 18]):
        now[0] = 0.05 * i
        load.running = running
        state.threads(2)
        seen.append(state.busy)
    # busy at the first busy read 0.3 s after the first, the quiet one between not counting
    assert seen == [False] * 6 + [True]
    # quiet again, with half of the reads busy: never
    state2 = contention.Contention(load, cpus=16, hold=0.3, clock=lambda: now[0])
    for i in range(20):
        now[0] = 0.05 * i
        load.running = 18 if i % 2 else 1
        state2.threads(2)
    assert not state2.busy


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
    # two threads from now on, one probe of one thread after PROBE extracts
    assert choices.count(2) == contention.PROBE - 1 and choices.count(1) == 1


def test_probes_that_change_nothing_come_less_often(load):
    state = contention.STATE
    _busy(state, load)
    key = "k"
    for _ in range(2 * contention.SAMPLES):
        t = state.threads(2, key)
        state.record(key, t, 0.010 if t == 1 else 0.004)
    picks = []
    for _ in range(600):
        t = state.threads(2, key)
        picks.append(t)
        state.record(key, t, 0.010 if t == 1 else 0.004)
    at = [i for i, t in enumerate(picks) if t == 1]
    gaps = [b - a for a, b in zip(at, at[1:], strict=False)]
    assert gaps[:3] == [contention.PROBE, contention.PROBE * 2, contention.PROBE * 4]
    assert max(gaps) == contention.PROBE_MAX


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
