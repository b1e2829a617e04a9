"""benchmarks/beside_torch.py end to end with numpy's BLAS as the other runtime (PyTorch is
not a test dependency): a row per library with positive medians and their ratio, the load
average, and a clear failure for a model it cannot find."""

from __future__ import annotations

import pathlib
import re
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "benchmarks" / "beside_torch.py"


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=300)


def test_beside_rows():
    pytest.importorskip("ncnn")
    r = run("--other", "numpy", "--models", "squeezenet", "--threads", "1", "--loops", "2")
    assert r.returncode == 0, r.stderr + r.stdout
    assert r.stdout.count("load ") == 2, r.stdout
    for lib in ("ncnn_c", "ncnn"):
        m = re.search(rf"^squeezenet\s+1 {lib}\s+(\d+\.\d\d)\s+(\d+\.\d\d)\s+(\d+\.\d\d)x$", r.stdout, re.M)
        assert m, f"no {lib} row in:\n{r.stdout}"
        alone, beside, ratio = map(float, m.groups())
        assert alone > 0 and beside > 0
        assert ratio == pytest.approx(beside / alone, abs=0.01)


def test_usage_errors():
    r = run("--loops", "0")
    assert r.returncode == 2 and "at least 1" in r.stderr
    r = run("--models", "no_such_model", "--other", "numpy")
    assert r.returncode == 2 and "unknown model 'no_such_model'" in r.stderr
