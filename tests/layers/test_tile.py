"""Tile against the PyPI ncnn (exact): every case of ncnn's tests/test_tile.cpp (the axis +
tiles form and the numpy-style repeats of 1-4 entries on blobs of every rank, including
ncnn's channel-keeping form for a 3-D blob with 4 repeats), the layer and net paths, each case
on every backend (oracle.backends: the CPU and the GPU option grid), and bad params and axes."""

from __future__ import annotations

import logging

import numpy as np
import pytest
from oracle import backends, check, make_bin, make_param, randn, rng, run_layer, run_net

PATHS = ("layer", "net")

A4, B4, C4 = (24, 7, 6, 5), (12, 9, 8, 7), (13, 5, 4, 3)
A3, B3, C3 = (24, 7, 5), (12, 9, 7), (13, 5, 3)
A2, B2, C2 = (24, 15), (12, 17), (13, 19)
A1, B1, C1 = (128,), (124,), (127,)

# (numpy shape, axis, tiles)
AXIS_CASES = [
    (A4, 0, 3), (A4, 1, 4), (A4, 2, 5), (A4, 3, 2), (B4, 0, 3), (B4, 1, 4), (B4, 2, 1), (B4, 3, 2),
    (C4, 0, 3), (C4, 1, 4), (C4, 2, 5), (C4, 3, 2),
    (A3, 0, 5), (A3, 1, 4), (A3, 2, 4), (B3, 0, 3), (B3, 1, 3), (B3, 2, 3), (C3, 0, 1), (C3, 1, 2), (C3, 2, 2),
    (A2, 0, 2), (A2, 1, 1), (B2, 0, 3), (B2, 1, 4), (C2, 0, 5), (C2, 1, 6),
    (A1, 0, 1), (A1, 0, 2), (B1, 0, 3), (C1, 0, 4), (C1, 2, 3),  # a 1-D blob ignores the axis
]  # fmt: skip

# (numpy shape, repeats)
REPEAT_CASES = [
    (A4, [3]), (A4, [2, 4]), (A4, [2, 2, 5]), (A4, [3, 1, 3, 2]), (B4, [3, 1]), (B4, [4, 1, 4]),
    (B4, [2, 2, 2, 1]), (B4, [3, 2, 1]), (C4, [3]), (C4, [1, 1, 4]), (C4, [2, 2, 5]), (C4, [3, 2, 1, 9]),
    (A3, [5]), (A3, [1, 4]), (A3, [2, 1, 4]), (A3, [1, 2, 1, 4]), (B3, [3]), (B3, [1, 3, 3]), (B3, [2, 3]),
    (B3, [2, 3, 3, 3]), (C3, [1]), (C3, [2, 1]), (C3, [2, 2, 2]), (C3, [2, 1, 2, 1]),
    (A2, [2]), (A2, [1, 1]), (A2, [4, 1, 1]), (A2, [2, 4, 4, 1]), (B2, [3]), (B2, [2, 4]),
    (B2, [2, 4, 3, 1]), (B2, [1, 2, 1, 4]), (C2, [5]), (C2, [6, 1]), (C2, [6, 1, 6]), (C2, [3, 2, 1, 1]),
    (A1, [10]), (A1, [10, 1]), (A1, [5, 2, 1]), (A1, [2, 2, 2, 3]), (B1, [2]), (B1, [2, 2]),
    (B1, [2, 2, 1]), (B1, [4, 1, 2, 2]), (C1, [3]), (C1, [4, 3]), (C1, [1]), (C1, [1, 1]),
    (C1, [1, 1, 1]), (C1, [1, 3, 2, 2]),
]  # fmt: skip


@pytest.mark.parametrize("shape,axis,tiles", AXIS_CASES, ids=str)
@pytest.mark.parametrize("backend", backends("Tile"))
def test_tile_axis(shape, axis, tiles, backend):
    x = randn(rng("tile", shape), shape)
    check(backend, "Tile", {0: axis, 1: tiles}, [], [x], paths=PATHS, tol=0.0, tol_fp32=0.0)


@pytest.mark.parametrize("shape,repeats", REPEAT_CASES, ids=str)
@pytest.mark.parametrize("backend", backends("Tile"))
def test_tile_repeats(shape, repeats, backend):
    x = randn(rng("tile", shape), shape)
    check(backend, "Tile", {2: repeats}, [], [x], paths=PATHS, tol=0.0, tol_fp32=0.0)


@pytest.mark.parametrize("backend", backends("Tile"))
def test_tile_defaults_pass_through(backend):
    check(backend, "Tile", {}, [], [randn(rng("tile-default"), A3)], paths=PATHS, tol=0.0, tol_fp32=0.0)


def _errors(caplog):
    return [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]


@pytest.mark.parametrize(
    "params,word",
    [({1: 0}, "tiles"), ({2: [2, 0]}, "repeats"), ({2: [1, 2, 1, 2, 1]}, "repeats")],
    ids=str,
)
def test_tile_bad_params(caplog, params, word):
    x = np.ones(A3, np.float32)
    with caplog.at_level(logging.ERROR, logger="ncnn_c"):
        ret, _ = run_layer("Tile", params, [], [x])
        assert ret != 0
        errors = _errors(caplog)
        assert len(errors) == 1 and "Tile" in errors[0] and word in errors[0], errors
        assert run_net(make_param("Tile", params, [x.shape]), make_bin([]), [x])[0] != 0


@pytest.mark.parametrize("shape,axis", [(A3, 3), (A2, -1), (A4, 4)], ids=str)
def test_tile_axis_out_of_range(caplog, shape, axis):
    # ncnn silently passes the blob through; we say the axis is wrong
    with caplog.at_level(logging.ERROR, logger="ncnn_c"):
        ret, _ = run_layer("Tile", {0: axis, 1: 2}, [], [np.ones(shape, np.float32)])
    errors = _errors(caplog)
    assert ret != 0
    assert len(errors) == 1 and "Tile" in errors[0] and "axis" in errors[0], errors
