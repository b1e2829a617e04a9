"""The examples run as a user runs them, in fresh processes."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest
from conftest import MODELS, ROOT

EXAMPLES = ROOT / "examples"


def _models_copy(tmp_path):
    """The cache file goes next to the model: give each test its own model directory."""
    d = tmp_path / "models"
    d.mkdir()
    for name in ("squeezenet_v1.1.param", "squeezenet_v1.1.bin", "256-ncnn.png"):
        os.symlink(MODELS / name, d / name)
    return d


def _run(*args, timeout=300):
    r = subprocess.run([sys.executable, *map(str, args)], capture_output=True, text=True, timeout=timeout)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    return r.stdout


@pytest.mark.gpu
def test_squeezenet_cold_then_warm(tmp_path):
    models = _models_copy(tmp_path)
    out = _run(EXAMPLES / "squeezenet.py", "--cold-warm", "--models", models)
    cold = re.search(r"^cold: cache file loaded=False .* compiled=(\d+)", out, re.M)
    warm = re.search(r"^warm: cache file loaded=True .* compiled=(\d+)", out, re.M)
    assert cold and warm, out
    assert int(cold.group(1)) > 0 and int(warm.group(1)) == 0
    assert "cold and warm agree on the top class: True" in out
    assert (models / "squeezenet_v1.1.ncnn.vkcache").exists()


def test_squeezenet_on_the_cpu_agrees_with_the_gpu_top_class(tmp_path):
    models = _models_copy(tmp_path)
    cpu = _run(EXAMPLES / "squeezenet.py", "--cpu", "--models", models)
    top_cpu = re.search(r"class (\d+):", cpu).group(1)
    gpu = _run(EXAMPLES / "squeezenet.py", "--models", models)
    top_gpu = re.search(r"class (\d+):", gpu).group(1)
    assert top_cpu == top_gpu


@pytest.mark.gpu
def test_cache_bytes_kept_in_sqlite(tmp_path):
    db = tmp_path / "cache.sqlite3"
    first = _run(EXAMPLES / "cache_sqlite.py", "--db", db)
    second = _run(EXAMPLES / "cache_sqlite.py", "--db", db)
    assert "cache from SQLite: miss" in first
    assert "cache from SQLite: loaded" in second
    sizes = [int(re.search(r"(\d+) cache bytes", s).group(1)) for s in (first, second)]
    assert sizes[0] == sizes[1] > 128
