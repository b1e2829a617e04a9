"""Issue 28's minor points that have no layer or subsystem module of their own: an explicit
``NCNN_C_DNNL_LIBRARY`` that cannot serve the native plan switches the plan off with one log
line saying which library and why, instead of the default search finding another oneDNN, or
blaming the ``_plan`` extension. (The others: tests/test_mat.py, an allocation that fails;
tests/layers/test_sdpa.py, no tokens and fully masked rows; tests/layers/test_gridsample.py,
a NaN grid.)

Each case runs in a child process: the library is loaded once per process.
"""

from __future__ import annotations

import glob
import json
import os
import platform
import subprocess
import sys

import pytest

pytestmark = pytest.mark.skipif(
    platform.machine() not in ("x86_64", "AMD64"), reason="no oneDNN wheel for this architecture"
)

CHILD = r"""
import json, logging
logging.basicConfig(level=logging.INFO, format="%(name)s %(levelname)s %(message)s")
from ncnn_c._native import onednn
from ncnn_c.net.native import plan
print(json.dumps({"plan": plan.available(), "reason": onednn.reason()}))
"""


def _child(library: str) -> tuple[dict, list[str]]:
    env = dict(os.environ, NCNN_C_DNNL_LIBRARY=library)
    env.pop("NCNN_C_NATIVE_PLAN", None)
    out = subprocess.run([sys.executable, "-c", CHILD], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    lines = [line for line in out.stderr.splitlines() if "native CPU plan off" in line]
    return json.loads(out.stdout.strip().splitlines()[-1]), lines


def test_a_missing_library_switches_the_plan_off():
    got, lines = _child("/nonexistent/libdnnl.so.3")
    assert got["plan"] is False
    assert len(lines) == 1, lines
    assert "NCNN_C_DNNL_LIBRARY=/nonexistent/libdnnl.so.3 cannot be loaded" in lines[0]
    assert "No such file" in lines[0] and "WARNING" in lines[0]


def test_a_library_that_is_not_onednn_says_so():
    got, lines = _child("libc.so.6")
    assert got["plan"] is False
    assert len(lines) == 1, lines
    assert "NCNN_C_DNNL_LIBRARY=libc.so.6 loads but is not oneDNN" in lines[0]
    assert "not built" not in lines[0]


def test_the_right_library_named_explicitly_runs_the_plan():
    found = sorted(glob.glob(os.path.join(sys.prefix, "lib", "libdnnl.so.3")))
    if not found:
        pytest.skip("onednn-cpu-gomp is not installed in this environment's prefix")
    got, lines = _child(found[0])
    assert got == {"plan": True, "reason": ""} and not lines
