"""Destroying what running inferences use: a pipeline cache destroyed or cleared, or the
Vulkan instance destroyed, while threads run Vulkan inference. These crashed the process
(the handles were freed under recorded or running command buffers); now the call waits for
the inferences in flight and later ones fail cleanly with -1 and a log line.

The threaded cases run in a child process (``_lifetime_child.py``), where a crash is an exit
status rather than the end of the test run. ``UseCount`` itself is tested without a GPU.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from ncnn_c.errors import NcnnError
from ncnn_c.gpu.lifetime import UseCount

CHILD = Path(__file__).with_name("_lifetime_child.py")


@pytest.mark.gpu
# two threads in the main run (each teardown against concurrent inference); one and three
# threads, a child process each of 5-8 s on two cores, in the slow run CI also runs
@pytest.mark.parametrize(
    "threads", [pytest.param(1, marks=pytest.mark.slow), 2, pytest.param(3, marks=pytest.mark.slow)]
)
@pytest.mark.parametrize("what", ["destroy", "clear", "instance"])
def test_destroy_while_threads_infer(what, threads):
    res = subprocess.run(
        [sys.executable, str(CHILD), what, str(threads)], capture_output=True, text=True, timeout=300
    )
    assert res.returncode == 0, f"child died ({res.returncode}):\n{res.stderr[-3000:]}"
    out = json.loads(res.stdout.strip().splitlines()[-1])
    assert out["before"] == [0]
    # after the call every inference fails cleanly, and each one said why
    assert out["n_after"] > 0 and out["after"] == [-1], out
    assert "was destroyed or cleared" in res.stderr or "PipelineGone" in res.stderr


def test_close_waits_for_uses_in_flight():
    uses = UseCount("thing")
    assert uses.enter()
    closed = threading.Event()

    def closer() -> None:
        uses.close()
        closed.set()

    t = threading.Thread(target=closer)
    t.start()
    time.sleep(0.1)
    assert not closed.is_set(), "close() returned while a use was in flight"
    uses.exit()
    t.join(5)
    assert closed.is_set() and uses.closed
    assert not uses.enter()


def test_drained_reopens_for_clear_and_refuses_meanwhile():
    uses = UseCount("thing")
    with uses.drained(final=False):
        refused = []
        t = threading.Thread(target=lambda: refused.append(uses.enter()))
        t.start()
        t.join()
        assert refused == [False]
    assert uses.enter()
    uses.exit()
    assert not uses.closed


def test_closing_from_a_thread_that_holds_a_use_is_refused():
    uses = UseCount("PipelineCache")
    assert uses.enter() and uses.in_flight() == 1
    with pytest.raises(NcnnError, match="running an inference"):
        uses.close()
    uses.exit()
    assert uses.in_flight() == 0 and not uses.closed
    uses.close()
    assert uses.closed
