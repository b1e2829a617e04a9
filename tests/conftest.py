"""Shared test settings: where the models are, and the oracle's fp32 CPU options."""

from __future__ import annotations

import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
MODELS = ROOT / "models"


@pytest.fixture(scope="session")
def models_dir() -> pathlib.Path:
    return MODELS
