"""Shared test settings: where the models are, and the oracle's fp32 CPU options."""

from __future__ import annotations

import os
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
MODELS = ROOT / "models"

# A busy machine turns two-thread native runs into one-thread ones (net/native/contention.py).
# The test machine is busy with the suite itself at times, and what a test counts (plans made)
# must not depend on that: off here and in the processes tests start, on in
# tests/test_native_contention.py, with a stand-in for the machine's load.
os.environ.setdefault("NCNN_C_CONTENTION", "0")


@pytest.fixture(scope="session")
def models_dir() -> pathlib.Path:
    return MODELS


# The main run samples the long layer sweeps so that it stays within its 15-minute budget on two
# cores: MAIN_CASES cases of a test function, spread evenly over its sweep, run there on their
# main-run backends (the CPU and the first GPU option set). Every other item of the sweep is in
# the slow run, which CI also runs: nothing is left out of CI. NCNN_C_TEST_MAIN_ALL=1 puts every
# case of every sweep in the main run (about 7.5 instead of 5 minutes on two cores).
MAIN_CASES = 48


def _spread(n: int, k: int) -> set[int]:
    return set(range(n)) if n <= k else {(j * n) // k for j in range(k)}


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items) -> None:
    """Run a case's backends back to back (oracle.backends / oracle.check): items that differ
    only in their ``backend`` parameter go together, in the order of the first of them, so the
    memoised oracle (oracle.oracle_outputs) runs once per case whatever order the parametrize
    decorators are stacked in. Everything else keeps its collection order. Then sample the long
    sweeps (MAIN_CASES above); this runs before ``-m`` selects, so the slow marks added count."""
    groups: dict[tuple, list] = {}
    for item in items:
        spec = getattr(item, "callspec", None)
        if spec is None or "backend" not in spec.params:
            groups[(id(item),)] = [item]
            continue
        rest = tuple(sorted((k, repr(v)) for k, v in spec.params.items() if k != "backend"))
        groups.setdefault((item.path, item.originalname, rest), []).append(item)
    items[:] = [item for group in groups.values() for item in group]
    if os.environ.get("NCNN_C_TEST_MAIN_ALL", "") not in ("", "0"):
        return
    sweeps: dict[tuple, list[list]] = {}
    for key, group in groups.items():
        if len(key) == 3:
            sweeps.setdefault(key[:2], []).append(group)
    for sweep in sweeps.values():
        main = _spread(len(sweep), MAIN_CASES)
        for i, group in enumerate(sweep):
            if i not in main:
                for it in group:
                    it.add_marker(pytest.mark.slow)


def pytest_terminal_summary(terminalreporter) -> None:
    """The Extractor contract's counts per executor (tests/contract.py), when it ran."""
    import sys

    contract = sys.modules.get("contract")
    totals = getattr(contract, "TOTALS", None)
    if not totals:
        return
    terminalreporter.section("Extractor contract (extracts compared with the PyPI ncnn)")
    for executor, t in sorted(totals.items()):
        terminalreporter.write_line(
            f"{executor:7s} equal {t.equal:6d}  refused where ncnn refused {t.refused_as_ncnn:5d}  "
            f"true value where ncnn refused {t.true_where_ncnn_refused:4d}  "
            f"ncnn crashed {t.unchecked:3d}  differing {len(t.failures):3d}"
        )
