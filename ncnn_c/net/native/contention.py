"""On a machine whose cores are all busy, a two-thread native plan runs on one thread.

Measured beside one CPU-bound process per core (``benchmarks/contention.py``,
docs/decisions.md, contention): a lone thread mostly keeps its speed (0.95-1.3x of its quiet
latency on the 16-core host and on the 2-core VM), while two threads lose 1.3-12x. Every parallel
region ends in a join, and a worker that slept must wait for a core that a busy process holds.
Two threads at best halve the time, so on a busy machine one thread is faster. With more
threads the split gains more than the joins lose (8 threads beside 16 busy processes:
1.2-2.7x of quiet, one thread 3-4x), so only ``num_threads == 2`` falls back.

Busy: the runnable tasks of the whole system (``/proc/loadavg``'s fourth field, read at each
extract, about 2 µs) less this run's own threads leave fewer than two of the online CPUs
free, on ``STREAK`` extracts in a row; quiet again after as many quiet ones. The one-thread
run is a plan of its own (recorded once, on the first busy extract of a shape), whose results
agree with the two-thread plan's as every thread count's do (relative 1e-5). Off the Linux
``/proc`` (or ``NCNN_C_CONTENTION=0``), the thread count is always the caller's.
"""

from __future__ import annotations

import logging
import os
import threading

log = logging.getLogger("ncnn_c")

# consecutive extracts that must agree before the thread count changes
STREAK = 2
LOADAVG = "/proc/loadavg"


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


class Contention:
    """The busy / quiet state with its streak (one per process: the machine is one)."""

    def __init__(self, read=_read_running, cpus: int | None = None) -> None:
        self._read = read
        self._cpus = cpus or os.cpu_count() or 1
        self._lock = threading.Lock()
        self.busy = False
        self._streak = 0

    def threads(self, num_threads: int) -> int:
        """The thread count to run a plan with: 1 for a two-thread run on a busy machine,
        else ``num_threads``."""
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
                self._streak += 1
                if self._streak >= STREAK:
                    self.busy, self._streak = busy_now, 0
                    log.info(
                        "native plan: %s (%d runnable tasks, %d CPUs): two-thread runs %s",
                        "the machine is busy" if busy_now else "the machine is quiet again",
                        running, self._cpus, "take one thread" if busy_now else "take two again",
                    )  # fmt: skip
            return 1 if self.busy else num_threads


STATE = Contention()
