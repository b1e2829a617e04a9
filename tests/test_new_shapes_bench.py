"""benchmarks/new_shapes.py end to end on SqueezeNet with tiny settings: exit codes, the rows
of both tables, positive timings and the raw JSON."""

from __future__ import annotations

import json
import pathlib
import re
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "benchmarks" / "new_shapes.py"
NUM = r"(\d+\.\d)"


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=120)


def test_new_shapes_tables(tmp_path):
    pytest.importorskip("ncnn")
    raw = tmp_path / "raw.json"
    r = run(
        *("--models", "squeezenet", "--sizes", "64", "96", "--rounds", "1", "--threads", "1"),
        *("--steady-loops", "1", "--sweep-count", "3", "--json", str(raw)),
    )
    assert r.returncode == 0, r.stderr
    out = r.stdout
    assert out.count("machine: ") == 2 and out.count("load average (1/5/15 min) before ") == 2
    cells = rf"\s+{NUM}\s+{NUM}\s+(\d+\.\d\d)x\s+{NUM}\s+{NUM}\s+(\d+\.\d\d)x$"
    rows = {
        "224x224 first of process": rf"^squeezenet\s+224x224 first of process{cells}",
        "64x64": rf"^squeezenet\s+64x64 new size{cells}",
        "96x96": rf"^squeezenet\s+96x96 new size{cells}",
        "sum": rf"^squeezenet\s+sum new sizes{cells}",
    }
    for what, pattern in rows.items():
        m = re.search(pattern, out, re.M)
        assert m, f"no {what} row in:\n{out}"
        assert all(float(v) > 0 for v in m.groups()), m.group(0)
    sweep = re.search(r"^sizes of squeezenet \(seed 0\): (\d+x\d+) (\d+x\d+) (\d+x\d+)$", out, re.M)
    assert sweep, out
    for w, h in (map(int, s.split("x")) for s in sweep.groups()):
        assert 160 <= w <= 640 and 160 <= h <= 640 and w % 32 == 0 and h % 32 == 0
    pass1 = re.search(rf"^squeezenet\s+1: every size new\s+{NUM}\s+{NUM}\s+(\d+\.\d\d)x$", out, re.M)
    pass2 = re.search(
        rf"^squeezenet\s+2: the same again\s+{NUM}\s+{NUM}\s+(\d+\.\d\d)x\s+{NUM}\s+{NUM}$", out, re.M
    )
    assert pass1 and pass2, out
    assert all(float(v) > 0 for v in pass1.groups() + pass2.groups())
    # SqueezeNet runs with its real weights: both libraries must give the same outputs
    diffs = re.findall(r"squeezenet max diff (\S+)$", out, re.M)
    assert len(diffs) == 2 and all(float(d) < 1e-4 for d in diffs), out
    tables = json.loads(raw.read_text())["tables"]
    assert [t["mode"] for t in tables] == ["first", "sweep"]
    for t in tables:
        for lib in ("ncnn", "ncnn_c"):
            got = t["models"]["squeezenet"][lib]
            assert got["error"] == "" and len(got["results"]) == 1
    # never both libraries in one process: the ncnn child loads nothing of ncnn_c's native side
    for t in tables:
        assert t["models"]["squeezenet"]["ncnn_c"]["results"][0]["other_lib_modules"] == []
        held = t["models"]["squeezenet"]["ncnn"]["results"][0]["other_lib_modules"]
        assert set(held) <= {"ncnn_c", "ncnn_c.tools", "ncnn_c.tools.bench"}, held


@pytest.mark.parametrize(
    "args", [["--models", "nosuchnet"], ["--rounds", "0"], ["--sizes", "0"], ["--sweep-count", "1000"]]
)
def test_new_shapes_usage_errors_exit_2(args):
    assert run(*args).returncode == 2
