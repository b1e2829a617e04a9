"""Run Tencent/ncnn's own ``python/tests`` unchanged against ncnn_c, and against the PyPI ncnn.

    python tests/ncnn_python_tests.py PATH/TO/ncnn/python/tests [--impl ncnn_c|ncnn|both]

ncnn's tests ``import ncnn`` and open ``tests/test.param`` relative to the working directory.
Each run copies the directory into a fresh temporary ``tests/`` (so nothing in a checkout, such
as its ``python/ncnn`` sources, shadows the package under test) and runs pytest there in a
child process. For ncnn_c a shim module named ``ncnn`` on ``sys.path`` makes ``import ncnn``
give ``ncnn_c`` itself (``ncnn.model_zoo`` and ``ncnn.utils`` included).

Prints PASS/FAIL per test and the counts per implementation. With ``--impl both`` (the
default) it also lists the tests the PyPI ncnn passes and ncnn_c does not, and exits 1 if
there are any: the bar is that every test the PyPI package passes here passes with ncnn_c.
Nothing is fetched: get the files from a checkout of https://github.com/Tencent/ncnn.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# ``import ncnn`` in the tests gives ncnn_c: the shim replaces its own module entry
SHIM = '''"""``import ncnn`` -> ncnn_c (written by tests/ncnn_python_tests.py)."""
import sys

import ncnn_c

sys.modules[__name__] = ncnn_c
'''


def run(tests_dir: Path, impl: str, verbose: bool = False) -> dict[str, str]:
    """{test id: "passed" | "failed" | "error" | "skipped"} of ncnn's tests under ``impl``."""
    with tempfile.TemporaryDirectory(prefix="ncnn-python-tests-") as tmp:
        work = Path(tmp)
        shutil.copytree(tests_dir, work / "tests", ignore=shutil.ignore_patterns("__pycache__"))
        env = dict(os.environ)
        paths = [str(ROOT)]
        if impl == "ncnn_c":
            (work / "shim").mkdir()
            (work / "shim" / "ncnn.py").write_text(SHIM)
            paths.insert(0, str(work / "shim"))
        env["PYTHONPATH"] = os.pathsep.join(paths + [p for p in [env.get("PYTHONPATH")] if p])
        probe = "import ncnn, sys; print(ncnn.__name__, ncnn.__file__)"
        which = subprocess.run(
            [sys.executable, "-c", probe], cwd=work, env=env, capture_output=True, text=True
        )
        want = "ncnn_c" if impl == "ncnn_c" else "ncnn"
        if which.returncode != 0 or which.stdout.split(" ")[0] != want:
            raise RuntimeError(f"import ncnn does not give {want}: {which.stdout or which.stderr}")
        report = work / "report.xml"
        cmd = [sys.executable, "-m", "pytest", "tests", "-q", "-p", "no:cacheprovider"]
        cmd += [f"--junitxml={report}", "--rootdir", str(work), "-c", os.devnull]  # not our settings
        proc = subprocess.run(cmd, cwd=work, env=env, capture_output=True, text=True)
        if verbose or not report.exists():
            print(proc.stdout[-6000:], proc.stderr[-3000:], sep="\n")
        if not report.exists():
            raise RuntimeError(f"pytest wrote no report ({impl}, exit {proc.returncode})")
        return _outcomes(report)


def _outcomes(report: Path) -> dict[str, str]:
    out = {}
    for case in ET.parse(report).getroot().iter("testcase"):
        name = f"{case.get('classname', '')}::{case.get('name', '')}"
        status = "passed"
        for child in case:
            if child.tag in ("failure", "error", "skipped"):
                status = {"failure": "failed"}.get(child.tag, child.tag)
        out[name] = status
    return out


def _print(impl: str, results: dict[str, str]) -> int:
    print(f"== {impl}")
    for name, status in sorted(results.items()):
        print(f"{'PASS' if status == 'passed' else status.upper():7s} {name}")
    passed = sum(s == "passed" for s in results.values())
    print(f"{impl}: {passed} of {len(results)} passed")
    return passed


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("tests_dir", type=Path, help="ncnn's python/tests directory (from a checkout)")
    ap.add_argument("--impl", choices=("ncnn_c", "ncnn", "both"), default="both")
    ap.add_argument("-v", "--verbose", action="store_true", help="show pytest's own output")
    args = ap.parse_args(argv)
    if not (args.tests_dir / "test_mat.py").is_file():
        ap.error(f"{args.tests_dir} is not ncnn's python/tests (no test_mat.py)")
    impls = ("ncnn", "ncnn_c") if args.impl == "both" else (args.impl,)
    results = {impl: run(args.tests_dir, impl, args.verbose) for impl in impls}
    for impl in impls:
        _print(impl, results[impl])
    if args.impl != "both":
        return 0
    regressions = sorted(
        n for n, s in results["ncnn"].items() if s == "passed" and results["ncnn_c"].get(n) != "passed"
    )
    for name in regressions:
        got = results["ncnn_c"].get(name, "missing")
        print(f"REGRESSION {name}: passes with the PyPI ncnn, {got} with ncnn_c")
    print(f"tests the PyPI ncnn passes that ncnn_c does not: {len(regressions)}")
    return 1 if regressions else 0


if __name__ == "__main__":
    sys.exit(main())
