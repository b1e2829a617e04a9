"""On a machine whose cores are all busy, a two-thread native plan runs on one thread or
two, whichever is faster there.

Measured beside one CPU-bound process per core (``benchmarks/contention.py``,
docs/decisions.md, contention): a lone thread mostly keeps its speed (0.95-1.3x of its quiet
latency on the 16-core host and on the 2-core VM), while two threads lose 1.3-12x. Every parallel
region ends in a join, and a worker that slept must wait for a core that a busy process holds.
Two threads at best halve the time, so on a busy machine one thread is often faster. With more
threads the split gains more than the joins lose (8 threads beside 16 busy processes:
1.2-2.7x of quiet, one thread 3-4x), so only ``num_threads == 2`` falls back.

Which of the two is faster on a busy machine depends on the network and the host (16-core
host, 2026-12-02: SqueezeNet 7.5 ms on one thread against 8.3 on two, ResNet50 92 against
67), so while the machine is busy each plan key measures both: its first busy extracts run on
one thread, then ``SAMPLES`` on two, and from then on it runs the one with the lower median
of its last ``SAMPLES`` extracts, trying the other after ``PROBE`` extracts so that a change in
the load is seen; each probe that leaves the choice as it was doubles the interval to the
next, up to ``PROBE_MAX``.

Busy: the runnable tasks of the whole system (``/proc/loadavg``'s fourth field, read at each
extract, about 2 µs) less this run's own runnable threads leave fewer than two of the online
CPUs free, on at least ``STREAK`` extracts spanning at least ``HOLD_S``, among which no more
than a quarter of the reads were quiet; quiet again after as many quiet ones over as long.
The span keeps short-lived tasks out: on a quiet 2-core VM a kernel thread or a worker still
spinning after the last step made a third runnable task at two reads in a row about once in
30 extracts (ResNet50 at two threads: 3-5 busy spells in 60 extracts), and each spell ran
extracts on one thread while it measured the two counts afresh. The quarter lets a load
that the reads see most of the time through: beside numpy's spinning OpenBLAS workers one
read in four or five found them off their cores (2-core VM), which with every read
required never made the span. The one-thread
run is a plan of its own (recorded once, on the first busy extract of a shape), whose results
agree with the two-thread plan's as every thread count's do (relative 1e-5). Off the Linux
``/proc`` (or ``NCNN_C_CONTENTION=0``), the thread count is always the caller's.

This run's own runnable threads are the caller and the workers of its OpenMP team that
``/proc/self/task/<tid>/stat`` shows running (``OwnThreads``). They are read only when the
load alone cannot tell (about 3 µs a worker): when counting only the caller would leave too
few CPUs free and counting all ``num_threads`` would not. Counting ``num_threads`` always, as
before 2026-12-08, missed a runtime in this very process: after numpy's OpenBLAS has run a
multi-threaded product its workers spin for a long while, and on the 2-core VM one of them
beside the caller made two runnable tasks, read as this run's own two (its OpenMP worker
usually sleeps by then), so two threads ran on one free core, 2.3-6x their quiet latency
(``benchmarks/beside_torch.py --other numpy``). Such workers are threads of this process:
only the team's count as the run's.
"""

from __future__ import annotations

import logging
import os
import statistics
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Hashable

log = logging.getLogger("ncnn_c")

# extracts whose reads disagree with the state before it changes (a quarter of the reads
# among them may agree) ...
STREAK = 2
# ... and the seconds they must span (from the first of them to the last)
HOLD_S = 0.3
LOADAVG = "/proc/loadavg"
# busy extracts per thread count measured before choosing, and kept for the median
SAMPLES = 3
# on a busy machine, the PROBE-th extract of a plan key after its samples runs the thread
# count not chosen; the interval doubles at each probe that leaves the choice as it was, up to
# PROBE_MAX (a two-thread probe beside a spinning runtime can take 5x the one-thread run)
PROBE = 16
PROBE_MAX = 128
# plan keys whose busy timings are kept (least recently used dropped first)
KEYS = 64


def enabled() -> bool:
    return os.environ.get("NCNN_C_CONTENTION", "1") != "0"


_fd: int | None = None  # None: not open yet; -1: the system has no such file


def _read_running() -> int | None:
    """Runnable tasks on the whole system now, or None where the kernel does not say. The
    file stays open (a pread regenerates it: 2 µs, against 5-10 for an open each time)."""
    global _fd
    for _attempt in range(2):
        if _fd == -1:
            return None
        try:
            if _fd is None:
                _fd = os.open(LOADAVG, os.O_RDONLY | os.O_CLOEXEC)
            return int(os.pread(_fd, 128, 0).split()[3].split(b"/")[0])
        except FileNotFoundError:
            _fd = -1
        except OSError:
            _fd = None  # closed under us (a daemonising fork, say): open it once more
        except (ValueError, IndexError):
            return None
    return None


def _team_tids(n: int) -> list[int] | None:
    from .ops.winograd import team_tids  # the OpenMP pool is the native extensions'

    return team_tids(n)


class OwnThreads:
    """How many of this run's threads are runnable now: the caller, plus each worker of its
    OpenMP team of ``num_threads`` whose ``/proc/self/task/<tid>/stat`` state is ``R`` (a
    worker that still spins after the last region). Only the team counts: another runtime's
    workers in this process (numpy's OpenBLAS, PyTorch's own OpenMP) compete for the cores as
    another process does. The team's thread ids are asked (one OpenMP region) every
    ``RELIST_S`` seconds per calling thread and team size, and again when a file fails; the
    files stay open."""

    RELIST_S = 1.0
    TEAMS = 16  # (calling thread, size) pairs kept, least recently used dropped first

    def __init__(self, team=_team_tids, clock=time.monotonic) -> None:
        self._team = team
        self._clock = clock
        self._lock = threading.Lock()
        # (caller's tid, size) -> (when listed, [fds of the workers' stat files])
        self._teams: OrderedDict[tuple[int, int], tuple[float, list[int]]] = OrderedDict()

    def _list(self, key: tuple[int, int]) -> list[int] | None:
        me, n = key
        try:
            tids = self._team(n)
        except Exception as e:  # the extension failed: the caller's count stands for all
            log.debug("native plan: the OpenMP team's thread ids: %s", e)
            tids = None
        if tids is None:
            return None
        fds = []
        for tid in tids:
            if tid == me:
                continue
            try:
                fds.append(os.open(f"/proc/self/task/{tid}/stat", os.O_RDONLY | os.O_CLOEXEC))
            except OSError:
                pass
        return fds

    def _drop(self, key: tuple[int, int]) -> None:
        entry = self._teams.pop(key, None)
        for fd in entry[1] if entry else ():
            os.close(fd)

    def __call__(self, num_threads: int) -> int | None:
        key = (threading.get_native_id(), num_threads)
        with self._lock:
            entry = self._teams.get(key)
            for _attempt in range(2):
                if entry is None or self._clock() - entry[0] > self.RELIST_S:
                    self._drop(key)
                    fds = self._list(key)
                    if fds is None:
                        return None
                    entry = self._teams[key] = (self._clock(), fds)
                    if len(self._teams) > self.TEAMS:
                        self._drop(next(iter(self._teams)))
                self._teams.move_to_end(key)
                running, gone = 1, False
                for fd in entry[1]:
                    try:
                        stat = os.pread(fd, 512, 0)
                    except OSError:
                        gone = True  # the worker ended (a pool made anew): list again
                        break
                    # the state follows the command name's closing parenthesis
                    end = stat.rfind(b")")
                    running += end >= 0 and stat[end + 2 : end + 3] == b"R"
                if not gone:
                    return running
                entry = None
            return None


class _Timings:
    """One plan key's busy extract times per thread count, and its busy extract count."""

    __slots__ = ("best", "count", "due", "interval", "seconds")

    def __init__(self) -> None:
        self.count = 0
        self.seconds: dict[int, deque[float]] = {1: deque(maxlen=SAMPLES), 2: deque(maxlen=SAMPLES)}
        self.best = 0  # the choice at the last probe (0: none yet)
        self.interval = PROBE
        self.due = PROBE  # the count at which the next probe runs

    def choose(self) -> int:
        """The thread count for this key's next busy extract."""
        self.count += 1
        one, two = self.seconds[1], self.seconds[2]
        if len(one) < SAMPLES:
            return 1
        if len(two) < SAMPLES:
            return 2
        best = 1 if statistics.median(one) <= statistics.median(two) else 2
        if self.count < self.due:
            return best
        self.interval = min(2 * self.interval, PROBE_MAX) if best == self.best else PROBE
        self.best = best
        self.due = self.count + self.interval
        return 3 - best


class Contention:
    """The busy / quiet state with its streak (one per process: the machine is one), and the
    busy timings of each plan key."""

    def __init__(
        self,
        read=_read_running,
        cpus: int | None = None,
        hold: float = HOLD_S,
        clock=time.monotonic,
        own=None,
    ) -> None:
        # ``own(num_threads)``: how many of the run's threads are runnable now
        # (``OwnThreads``), or None to count all ``num_threads`` of them as runnable
        self._read = read
        self._own = own
        self._cpus = cpus or os.cpu_count() or 1
        self._hold = hold
        self._clock = clock
        self._lock = threading.Lock()
        self.busy = False
        self._streak = 0  # reads against ``busy`` since ``_since``
        self._agreed = 0  # ... and reads that agreed with it among them
        self._since = 0.0  # when the reads began to disagree with ``busy``
        self._timings: OrderedDict[Hashable, _Timings] = OrderedDict()

    def record(self, key: Hashable, threads: int, seconds: float) -> None:
        """A plan run of ``key`` on ``threads`` threads took ``seconds``: kept while the
        machine is busy (what ``threads`` then chooses by), ignored otherwise."""
        if not self.busy or threads not in (1, 2):
            return
        with self._lock:
            # keys are made only while busy, and dropped at every change of state
            t = self._timings.get(key)
            if t is not None:
                t.seconds[threads].append(seconds)

    def _busy_now(self, running: int, num_threads: int) -> bool:
        """Whether the others among ``running`` leave fewer than ``num_threads`` CPUs free.
        Of this run's threads the caller is runnable, its workers may be (still spinning)."""

        def busy(own: int) -> bool:
            return self._cpus - max(0, running - own) < num_threads

        if self._own is None or busy(num_threads) or not busy(1):
            return busy(num_threads)  # the same whatever the own count
        own = self._own(num_threads)
        return busy(num_threads if own is None else max(1, min(own, num_threads)))

    def threads(self, num_threads: int, key: Hashable = None) -> int:
        """The thread count to run a plan with: for a two-thread run on a busy machine 1 or 2,
        whichever ran ``key``'s extracts faster lately (without a key, 1); else
        ``num_threads``."""
        if num_threads != 2 or not enabled():
            return num_threads
        running = self._read()
        if running is None:
            return num_threads
        busy_now = self._busy_now(running, num_threads)
        with self._lock:
            if busy_now == self.busy:
                # a read that agrees with the state: the spell of reads against it ends if
                # more than a quarter of its reads now agree
                self._agreed += self._streak > 0
                if 3 * self._agreed > self._streak:
                    self._streak = self._agreed = 0
            else:
                now = self._clock()
                if self._streak == 0:
                    self._since = now
                self._streak += 1
                if self._streak >= STREAK and now - self._since >= self._hold:
                    self.busy, self._streak, self._agreed = busy_now, 0, 0
                    self._timings.clear()  # a new spell of load: measured afresh
                    log.info(
                        "native plan: %s (%d runnable tasks, %d CPUs): two-thread runs %s",
                        "the machine is busy" if busy_now else "the machine is quiet again",
                        running, self._cpus,
                        "measure one and two threads" if busy_now else "take two again",
                    )  # fmt: skip
            if not self.busy:
                return num_threads
            if key is None:
                return 1
            t = self._timings.get(key)
            if t is None:
                t = self._timings[key] = _Timings()
                if len(self._timings) > KEYS:
                    self._timings.popitem(last=False)
            else:
                self._timings.move_to_end(key)
            return t.choose()


STATE = Contention(own=OwnThreads())
