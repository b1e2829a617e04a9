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
of its last ``SAMPLES`` extracts, trying the other once every ``PROBE`` extracts so that a
change in the load is seen.

Busy: the runnable tasks of the whole system (``/proc/loadavg``'s fourth field, read at each
extract, about 2 µs) less this run's own threads leave fewer than two of the online CPUs
free, on ``STREAK`` extracts in a row spanning at least ``HOLD_S``; quiet again after as many
quiet ones over as long. The span keeps short-lived tasks out: on a quiet 2-core VM a kernel
thread or a worker still spinning after the last step made a third runnable task at two
reads in a row about once in 30 extracts (ResNet50 at two threads: 3-5 busy spells in 60
extracts), and each spell ran extracts on one thread while it measured the two counts
afresh. The one-thread
run is a plan of its own (recorded once, on the first busy extract of a shape), whose results
agree with the two-thread plan's as every thread count's do (relative 1e-5). Off the Linux
``/proc`` (or ``NCNN_C_CONTENTION=0``), the thread count is always the caller's.
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

# consecutive extracts that must agree before the thread count changes
STREAK = 2
# ... and the seconds they must span (from the first of them to the last)
HOLD_S = 0.3
LOADAVG = "/proc/loadavg"
# busy extracts per thread count measured before choosing, and kept for the median
SAMPLES = 3
# on a busy machine, every PROBE-th extract of a plan key runs the thread count not chosen
PROBE = 16
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


class _Timings:
    """One plan key's busy extract times per thread count, and its busy extract count."""

    __slots__ = ("count", "seconds")

    def __init__(self) -> None:
        self.count = 0
        self.seconds: dict[int, deque[float]] = {1: deque(maxlen=SAMPLES), 2: deque(maxlen=SAMPLES)}

    def choose(self) -> int:
        """The thread count for this key's next busy extract."""
        self.count += 1
        one, two = self.seconds[1], self.seconds[2]
        if len(one) < SAMPLES:
            return 1
        if len(two) < SAMPLES:
            return 2
        best = 1 if statistics.median(one) <= statistics.median(two) else 2
        return 3 - best if self.count % PROBE == 0 else best


class Contention:
    """The busy / quiet state with its streak (one per process: the machine is one), and the
    busy timings of each plan key."""

    def __init__(
        self, read=_read_running, cpus: int | None = None, hold: float = HOLD_S, clock=time.monotonic
    ) -> None:
        self._read = read
        self._cpus = cpus or os.cpu_count() or 1
        self._hold = hold
        self._clock = clock
        self._lock = threading.Lock()
        self.busy = False
        self._streak = 0
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

    def threads(self, num_threads: int, key: Hashable = None) -> int:
        """The thread count to run a plan with: for a two-thread run on a busy machine 1 or 2,
        whichever ran ``key``'s extracts faster lately (without a key, 1); else
        ``num_threads``."""
        if num_threads != 2 or not enabled():
            return num_threads
        running = self._read()
        if running is None:
            return num_threads
        # this run's own threads may be among the runnable ones (a worker still spinning)
        busy_now = self._cpus - max(0, running - num_threads) < num_threads
        with self._lock:
            if busy_now == self.busy:
                self._streak = 0
            else:
                now = self._clock()
                if self._streak == 0:
                    self._since = now
                self._streak += 1
                if self._streak >= STREAK and now - self._since >= self._hold:
                    self.busy, self._streak = busy_now, 0
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


STATE = Contention()
