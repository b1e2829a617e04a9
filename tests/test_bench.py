"""The bench subcommand (``python -m ncnn_c bench``) and benchmarks/vs_ncnn.py: output format
and exit codes, on SqueezeNet with one or two loops."""

from __future__ import annotations

import io
import pathlib
import re
import subprocess
import sys

import pytest

from ncnn_c.__main__ import main as cli
from ncnn_c.tools.bench import Progress, UsageError, parse_shape

ROOT = pathlib.Path(__file__).resolve().parents[1]
PARAM = ROOT / "models" / "squeezenet_v1.1.param"
BIN = ROOT / "models" / "squeezenet_v1.1.bin"
LINE = re.compile(
    r"^squeezenet_v1\.1  min = (\d+\.\d\d) ms  median = (\d+\.\d\d) ms  max = (\d+\.\d\d) ms"
    r"  \((\d+) loops, (\d+) threads, cpu, input (\S+)\)$"
)


def test_bench_prints_min_median_max(capsys):
    assert cli(["bench", str(PARAM), str(BIN), "--loops", "2", "--warmup", "0", "--threads", "1"]) == 0
    out = capsys.readouterr().out.strip()
    m = LINE.match(out)
    assert m, out
    lo, med, hi = (float(m.group(i)) for i in (1, 2, 3))
    assert 0 < lo <= med <= hi
    assert m.group(4, 5, 6) == ("2", "1", "227x227x3")  # the shape from the Input params


def test_bench_zero_weights_and_given_input_shape(capsys):
    assert cli(["bench", str(PARAM), "--loops", "1", "--threads", "1", "--input", "64x48x3"]) == 0
    m = LINE.match(capsys.readouterr().out.strip())
    assert m and m.group(6) == "64x48x3"


@pytest.mark.parametrize(
    "args, message",
    [
        (["bench", "missing.param"], "no such file"),
        (["bench", str(PARAM), "--input", "3x"], "expected W, WxH, WxHxC"),
        (["bench", str(PARAM), "--input", "8x8x3", "--input", "8x8x3"], "2 --input shapes given"),
        (["bench", str(PARAM), "--loops", "0"], "must be >= 1"),
    ],
)
def test_bench_usage_errors_exit_2(capsys, args, message):
    assert cli(args) == 2
    assert message in capsys.readouterr().err


@pytest.mark.parametrize("args", [[], ["nosuchcommand"], ["bench"], ["bench", str(PARAM), "--loops", "x"]])
def test_argparse_usage_errors_exit_2(args):
    with pytest.raises(SystemExit) as e:
        cli(args)
    assert e.value.code == 2


def test_bench_model_failures_exit_1(tmp_path, capsys):
    bad = tmp_path / "bad.param"
    bad.write_text("7767517\n2 2\nInput in 0 1 data 0=8\nNoSuchLayer x 1 1 data y\n")
    assert cli(["bench", str(bad)]) == 1
    assert "cannot load" in capsys.readouterr().err
    # 1x1 is smaller than conv1's 3x3 kernel: the run fails
    assert cli(["bench", str(PARAM), "--input", "1x1x3", "--loops", "1"]) == 1
    assert "extract('prob') failed" in capsys.readouterr().err


def test_parse_shape():
    assert parse_shape("227x227x3") == (227, 227, 3)
    assert parse_shape("10") == (10,) and parse_shape("4x5x6x7") == (4, 5, 6, 7)
    for bad in ("", "0x3", "1x2x3x4x5", "axb"):
        with pytest.raises(UsageError):
            parse_shape(bad)


def test_progress_line_only_after_a_second():
    s = io.StringIO()
    p = Progress(10, "bench m", stream=s, tty=True)
    p.update(1)
    assert s.getvalue() == ""  # a short run stays quiet
    p.start -= 2.0
    p.update(5)
    p.close()
    assert re.fullmatch(r"\rbench m: 5/10 runs, 2\.\d s\n", s.getvalue())


def test_no_progress_line_off_a_terminal():
    s = io.StringIO()  # a log file or a pipe: no carriage-return frames in it
    p = Progress(10, "bench m", stream=s)
    p.start -= 2.0
    p.update(5)
    p.close()
    assert s.getvalue() == ""


def test_module_entry_point():
    r = subprocess.run(
        [sys.executable, "-m", "ncnn_c", "bench", str(PARAM), "--loops", "1", "--input", "32x32x3"],
        cwd=ROOT, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    m = LINE.match(r.stdout.strip())
    assert m and m.group(6) == "32x32x3"


def test_vs_ncnn_table_chart_and_failures(tmp_path):
    bad = tmp_path / "broken.param"
    bad.write_text("7767517\n2 2\nInput in 0 1 data 0=8 1=8 2=3\nNoSuchLayer x 1 1 data y\n")
    png = tmp_path / "chart.png"
    cmd = [sys.executable, str(ROOT / "benchmarks" / "vs_ncnn.py"), "--loops", "2", "--warmup", "0"]
    cmd += ["--threads", "1", "--models", "squeezenet_v1.1", str(bad), "--png", str(png)]
    r = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    # the title, then the machine and its load average (a figure means little without them)
    assert lines[1].startswith("machine: ") and "load average" in lines[1]
    assert lines[2].split() == [
        "model",
        "ours",
        "ms",
        "ncnn",
        "ms",
        "ratio",
        "ours",
        "RSS",
        "MB",
        "ncnn",
        "RSS",
        "MB",
    ]
    row = next(line for line in lines if line.startswith("squeezenet_v1.1"))
    m = re.fullmatch(r"squeezenet_v1\.1 +(\d+\.\d\d) +(\d+\.\d\d) +(\d+\.\d\d)x +(\d+\.\d) +(\d+\.\d)", row)
    assert m, row
    ours, ref, ratio = (float(m.group(i)) for i in (1, 2, 3))
    assert abs(ratio - ours / ref) < 0.01 + 0.01 * ratio
    assert float(m.group(4)) > 10 and float(m.group(5)) > 10  # peak RSS in MB of the children
    broken = next(line for line in lines if line.startswith("broken"))
    assert "fails: " in broken and "unknown layer type 'NoSuchLayer'" in broken
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "ncnn_c slower with" not in r.stdout  # one thread count: nothing to compare
    r = subprocess.run(cmd[:2] + ["--models", "nosuchmodel"], cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 2 and "unknown model 'nosuchmodel'" in r.stderr


def test_vs_ncnn_separate_rounds(tmp_path):
    """--separate --rounds 2: two pairs of children per model, one row from all their timed
    runs; a model that fails says why; --rounds without --separate is a usage error."""
    bad = tmp_path / "broken.param"
    bad.write_text("7767517\n2 2\nInput in 0 1 data 0=8 1=8 2=3\nNoSuchLayer x 1 1 data y\n")
    cmd = [sys.executable, str(ROOT / "benchmarks" / "vs_ncnn.py"), "--loops", "2", "--warmup", "0"]
    cmd += [
        "--threads",
        "1",
        "--models",
        "squeezenet_v1.1",
        str(bad),
        "--no-rss",
        "--separate",
        "--rounds",
        "2",
    ]
    r = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert "separate processes, 2 rounds" in r.stdout.splitlines()[0]
    row = next(line for line in r.stdout.splitlines() if line.startswith("squeezenet_v1.1"))
    m = re.fullmatch(r"squeezenet_v1\.1 +(\d+\.\d\d) +(\d+\.\d\d) +(\d+\.\d\d)x +- +-", row)
    assert m, row
    ours, ref, ratio = (float(m.group(i)) for i in (1, 2, 3))
    assert abs(ratio - ours / ref) < 0.01 + 0.01 * ratio
    broken = next(line for line in r.stdout.splitlines() if line.startswith("broken"))
    assert "fails: " in broken and "NoSuchLayer" in broken
    r = subprocess.run([*cmd[:2], "--rounds", "2"], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "needs --separate" in r.stderr


def test_vs_ncnn_warm_up_lasts_its_seconds(monkeypatch):
    """Untimed runs: at least --warmup of them, and more until --warmup-seconds have passed;
    a bad value is a usage error."""
    import argparse
    import importlib.util
    import time

    spec = importlib.util.spec_from_file_location("vs_ncnn_under_test", ROOT / "benchmarks" / "vs_ncnn.py")
    assert spec and spec.loader
    vs = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, spec.name, vs)  # its dataclasses look themselves up there
    spec.loader.exec_module(vs)

    class Fake:
        error = ""

        def __init__(self) -> None:
            self.calls = 0

        def timed(self, keep: bool) -> None:
            assert not keep
            self.calls += 1
            time.sleep(0.01)

    a, b = Fake(), Fake()
    vs.warm_up([a, b], argparse.Namespace(warmup=2, warmup_seconds=0.0))
    assert (a.calls, b.calls) == (2, 2)
    start = time.perf_counter()
    vs.warm_up([a, b], argparse.Namespace(warmup=1, warmup_seconds=0.2))
    assert time.perf_counter() - start >= 0.2 and a.calls == b.calls >= 2 + 5
    r = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "vs_ncnn.py"), "--warmup-seconds", "-1"],
        cwd=ROOT, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert r.returncode == 2 and "--warmup(-seconds) >= 0" in r.stderr


def test_contention_benchmark_line_per_policy():
    """benchmarks/contention.py: one line per wait policy, quiet/busy=ratio per model; a
    malformed --env is a usage error."""
    cmd = [sys.executable, str(ROOT / "benchmarks" / "contention.py"), "--loops", "2", "--busy", "1"]
    cmd += ["--models", "squeezenet_v1.1", "--env", "", "GOMP_SPINCOUNT=1000"]
    r = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0].startswith("# ") and "1 busy processes" in lines[0]
    assert [ln.split()[0] for ln in lines[1:]] == ["default", "GOMP_SPINCOUNT=1000"]
    for ln in lines[1:]:
        m = re.search(r"squeezenet_v1\.1 (\d+\.\d\d)/(\d+\.\d\d)=(\d+\.\d\d)x  load ", ln)
        assert m, ln
        quiet, busy, ratio = (float(m.group(i)) for i in (1, 2, 3))
        assert abs(ratio - busy / quiet) < 0.01 + 0.01 * ratio
    bad = subprocess.run(
        [*cmd[:2], "--env", "nonsense"], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert bad.returncode == 2 and "NAME=VALUE" in bad.stderr


def test_fair_share_benchmark_runtimes_agree():
    """benchmarks/fair_share.py: a row per thread count and runtime, busy / quiet consistent
    with its two times, and the same checksum for both runtimes (the redo pool, in which
    threads recompute stalled items and the first to finish commits, keeps every result);
    bad arguments are usage errors."""
    cmd = [sys.executable, str(ROOT / "benchmarks" / "fair_share.py")]
    r = subprocess.run(
        [*cmd, "--threads", "1", "2", "--busy", "1", "--runs", "3", "--scale", "0.05"],
        cwd=ROOT, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0].startswith("# ") and "1 busy processes" in lines[0]
    rows = [ln.split() for ln in lines if ln[:1] == " "]
    assert [(row[0], row[1]) for row in rows] == [("1", "join"), ("1", "redo"), ("2", "join"), ("2", "redo")]
    for row in rows:
        quiet, busy, ratio = float(row[2]), float(row[3]), float(row[4].rstrip("x"))
        assert quiet > 0 and busy > 0 and abs(ratio - busy / quiet) < 0.01 + 0.01 * ratio
    assert rows[0][5] == rows[1][5] and rows[2][5] == rows[3][5]
    bad = subprocess.run([*cmd, "--threads", "0"], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and "--threads" in bad.stderr


def test_winograd_rule_ab_line_per_model_and_thread_count():
    """benchmarks/winograd_rule_ab.py: both rules' plans timed in turn, a line per model and
    thread count with new / old consistent with its times; an unknown model is a usage error."""
    cmd = [sys.executable, str(ROOT / "benchmarks" / "winograd_rule_ab.py")]
    r = subprocess.run(
        [*cmd, "squeezenet_v1.1", "--threads", "1", "2", "--loops", "2"],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    rows = [ln for ln in r.stdout.splitlines() if not ln.startswith("#")]
    assert len(rows) == 2
    for row, threads in zip(rows, (1, 2), strict=True):
        m = re.match(
            rf"squeezenet_v1\.1 +{threads} threads +old rule +([\d.]+) ms +new +([\d.]+) ms +new/old ([\d.]+)$",
            row,
        )
        assert m, row
        old, new, ratio = (float(m.group(i)) for i in (1, 2, 3))
        assert old > 0 and abs(ratio - new / old) < 0.002 + 0.002 * ratio
    bad = subprocess.run([*cmd, "nosuchmodel"], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and "nosuchmodel" in bad.stderr
