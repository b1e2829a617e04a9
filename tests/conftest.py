"""Shared test settings: where the models are, and the oracle's fp32 CPU options."""

from __future__ import annotations

import os
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
MODELS = ROOT / "models"


@pytest.fixture(scope="session")
def models_dir() -> pathlib.Path:
    return MODELS


# The layer sweeps are sampled so that the main run stays within its 15-minute budget on two
# cores and the slow run (which CI also runs) within about twice that. Per test function:
# - MAIN_CASES of its cases, spread evenly over the sweep, run in the main run on the CPU and
#   the first GPU option set (the others are in the main run only when the sweep is shorter);
# - GRID_CASES of them, spread likewise, run on every other GPU option set in the slow run;
# - every case runs on the CPU (in the slow run when it is not in the main sample), and every
#   other case outside the grid sample on one GPU option set, the set rotating from case to
#   case so that each set sees an even share of the sweep.
# NCNN_C_TEST_FULL_GRID=1 runs every case on every set (about twice the slow run's time).
MAIN_CASES = 48
GRID_CASES = 24


def _spread(n: int, k: int) -> set[int]:
    return set(range(n)) if n <= k else {(j * n) // k for j in range(k)}


def _is_gpu_set(backend: object) -> bool:
    return isinstance(backend, str) and backend.startswith("vk-") and backend != "vk-cpu"


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
    if os.environ.get("NCNN_C_TEST_FULL_GRID", "") not in ("", "0"):
        items[:] = [item for group in groups.values() for item in group]
        return
    cases: dict[tuple, list[list]] = {}
    for key, group in groups.items():
        if len(key) == 3:
            cases.setdefault(key[:2], []).append(group)
    dropped = []
    for sweep in cases.values():
        main, grid = _spread(len(sweep), MAIN_CASES), _spread(len(sweep), GRID_CASES)
        for i, group in enumerate(sweep):
            if i in grid and i in main:
                continue
            gpu = [it for it in group if _is_gpu_set(it.callspec.params["backend"])]
            keep = gpu[(i // 2) % len(gpu)] if gpu and i % 2 == 0 else None
            for it in group:
                in_main = it.get_closest_marker("slow") is None
                if in_main and i in main:
                    continue
                if _is_gpu_set(it.callspec.params["backend"]) and i not in grid and it is not keep:
                    dropped.append(it)
                elif in_main:
                    it.add_marker(pytest.mark.slow)
    gone = {id(it) for it in dropped}
    items[:] = [item for group in groups.values() for item in group if id(item) not in gone]
    if dropped:
        config.hook.pytest_deselected(items=dropped)
