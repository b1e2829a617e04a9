"""Shared test settings: where the models are, and the oracle's fp32 CPU options."""

from __future__ import annotations

import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
MODELS = ROOT / "models"


@pytest.fixture(scope="session")
def models_dir() -> pathlib.Path:
    return MODELS


def pytest_collection_modifyitems(config, items) -> None:
    """Run a case's backends back to back (oracle.backends / oracle.check): items that differ
    only in their ``backend`` parameter go together, in the order of the first of them, so the
    memoised oracle (oracle.oracle_outputs) runs once per case whatever order the parametrize
    decorators are stacked in. Everything else keeps its collection order."""
    groups: dict[tuple, list] = {}
    for item in items:
        spec = getattr(item, "callspec", None)
        if spec is None or "backend" not in spec.params:
            groups[(id(item),)] = [item]
            continue
        rest = tuple(sorted((k, repr(v)) for k, v in spec.params.items() if k != "backend"))
        groups.setdefault((item.path, item.originalname, rest), []).append(item)
    items[:] = [item for group in groups.values() for item in group]
