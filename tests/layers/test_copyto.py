"""CopyTo against the PyPI ncnn (exact): every self/src/offset combination of ncnn's
tests/test_copyto.cpp (1-D to 4-D self, src of the same or a lower rank, a src of self's
shape passed through, src rows running on past self's rows as ncnn's pointer walk makes
them), the numpy-style starts/axes form (negative starts, -233), the layer and net paths,
writes outside self's storage and bad params refused, and a Vulkan net (ncnn has no GPU form:
the Vulkan net runs it on the CPU)."""

from __future__ import annotations

import logging

import numpy as np
import pytest
from _vulkan_sandwich import check_in_vulkan_net
from oracle import check_layer, make_bin, make_param, randn, rng, run_layer, run_net

PATHS = ("layer", "net")


def _cases():
    """(self shape, src shape, (woffset, hoffset, doffset, coffset)) in numpy order."""
    groups = [
        ([(112,), (126,), (127,)], [(33,), (36,), (64,)], [(0, 0, 0, 0), (13, 0, 0, 0), (28, 0, 0, 0), (32, 0, 0, 0)]),
        (
            [(112, 72), (126, 87), (127, 64)],
            [(33, 14), (36, 24), (64, 16), (14,), (24,), (16,)],
            [(0, 0, 0, 0), (1, 13, 0, 0), (3, 28, 0, 0), (10, 32, 0, 0)],
        ),
        (
            [(81, 42, 32), (80, 57, 33), (88, 34, 36)],
            [(23, 14, 1), (28, 1, 12), (32, 8, 11), (14, 1), (1, 12), (8, 11), (1,), (12,), (11,)],
            [(0, 0, 0, 0), (0, 1, 0, 13), (4, 3, 0, 28), (5, 0, 0, 32)],
        ),
        (
            [(81, 7, 42, 12), (80, 5, 57, 13), (88, 6, 34, 16)],
            [(23, 2, 14, 1), (28, 3, 1, 12), (32, 1, 8, 11), (2, 14, 1), (3, 1, 12), (1, 8, 11),
             (14, 1), (1, 12), (8, 11), (1,), (12,), (11,)],
            [(0, 0, 0, 0), (0, 1, 1, 13), (4, 3, 0, 28), (5, 0, 2, 32)],
        ),
    ]  # fmt: skip
    for selfs, srcs, offsets in groups:
        for a in selfs:
            for b in srcs:
                for off in offsets:
                    yield a, b, off
    for same in [(15,), (15, 11), (16, 5, 4), (16, 5, 4, 3)]:
        yield same, same, (0, 0, 0, 0)


CASES = list(_cases())


def _offset_params(off):
    w, h, d, c = off
    return {0: w, 1: h, 13: d, 2: c}


@pytest.mark.parametrize("self_shape,src_shape,off", CASES, ids=str)
def test_copyto(self_shape, src_shape, off):
    g = rng("copyto", self_shape, src_shape)
    x, s = randn(g, self_shape), randn(g, src_shape)
    check_layer("CopyTo", _offset_params(off), [], [x, s], paths=PATHS, tol=0.0)


# numpy-style: (self shape, src shape, starts, axes)
SLICE_CASES = [
    ((20,), (7,), [5], []),
    ((20,), (7,), [-9], [0]),
    ((12, 20), (3, 7), [2, 5], []),
    ((12, 20), (3, 7), [-233, -7], [0, 1]),
    ((12, 20), (3, 7), [4], [-1]),
    ((9, 12, 20), (3, 7), [1, 8], [1, 2]),
    ((9, 12, 20), (4, 3, 7), [-4, 2, 0], []),
    ((9, 12, 20), (4, 3, 7), [3, 5], [0, -2]),
    ((6, 5, 12, 20), (2, 3, 4, 7), [1, 2, 3, 4], []),
    ((6, 5, 12, 20), (2, 4, 7), [-2, 1], [0, 2]),  # a 3-D src fills one depth plane per channel
    ((6, 5, 12, 20), (4, 7), [-1, 3, 8, 13], [1, 0, 2, 3]),
]


@pytest.mark.parametrize("self_shape,src_shape,starts,axes", SLICE_CASES, ids=str)
def test_copyto_starts_axes(self_shape, src_shape, starts, axes):
    g = rng("copyto-starts", self_shape, src_shape)
    x, s = randn(g, self_shape), randn(g, src_shape)
    params = {9: starts}
    if axes:
        params[11] = axes
    check_layer("CopyTo", params, [], [x, s], paths=PATHS, tol=0.0)


def _refused(caplog, params, x, s, *words):
    with caplog.at_level(logging.ERROR, logger="ncnn_c"):
        ret, _ = run_layer("CopyTo", params, [], [x, s])
    errors = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert ret != 0
    assert len(errors) == 1 and all(w in errors[0] for w in ("CopyTo", *words)), errors


# src rows that run past self's row: ncnn's pointer walk carries them on into the next row,
# plane, channel padding or channel (one thread: later writes win); its own tests do this
SPILL_CASES = [
    ((3, 8, 20), (2, 6, 7), {0: 16, 1: 5}),  # the last rows run into the next channel
    ((3, 7, 5), (2, 7, 5), {0: 2}),  # through the channel padding (cstep 36 > 35)
    ((8, 20), (3, 25), {0: 3, 1: 2}),  # a src row longer than self's
    ((2, 3, 4, 6), (1, 2, 4, 6), {0: 4, 13: 1}),  # depth planes into the next channel
]


@pytest.mark.parametrize("self_shape,src_shape,params", SPILL_CASES, ids=str)
def test_copyto_rows_run_on(self_shape, src_shape, params):
    g = rng("copyto-spill", self_shape, src_shape)
    x, s = randn(g, self_shape), randn(g, src_shape)
    check_layer("CopyTo", params, [], [x, s], paths=PATHS, tol=0.0)


@pytest.mark.parametrize(
    "self_shape,params,src_shape",
    [
        ((8, 20), {0: 15}, (8, 7)),  # the last row runs past the end
        ((3, 8, 20), {2: 2}, (2, 6, 7)),  # past the last channel
        ((3, 8, 20), {1: -1}, (6, 7)),  # a negative offset
        ((8, 20), {9: [-2], 11: [0]}, (6, 7)),  # a negative start that leaves too little room
    ],
    ids=str,
)
def test_copyto_outside_self(caplog, self_shape, params, src_shape):
    x, s = np.zeros(self_shape, np.float32), np.ones(src_shape, np.float32)
    _refused(caplog, params, x, s, "outside")


def test_copyto_src_of_higher_rank(caplog):
    _refused(caplog, {}, np.zeros((8, 20), np.float32), np.ones((2, 3, 4), np.float32), "src")


def test_copyto_axis_out_of_range(caplog):
    _refused(caplog, {9: [1], 11: [2]}, np.zeros((8, 20), np.float32), np.ones((3, 4), np.float32), "axis")


def test_copyto_fewer_starts_than_axes(caplog):
    x, s = np.zeros((3, 8, 20), np.float32), np.ones((2, 3, 4), np.float32)
    params = {9: [1, 2], 11: [0, 1, 2]}
    _refused(caplog, params, x, s, "starts")
    assert run_net(make_param("CopyTo", params, [x.shape, s.shape]), make_bin([]), [x, s])[0] != 0


def test_copyto_fewer_starts_than_dims(caplog):
    # no axes: one start per axis of self (ncnn reads past the array)
    _refused(caplog, {9: [1, 2]}, np.zeros((3, 8, 20), np.float32), np.ones((2, 3, 4), np.float32), "starts")


@pytest.mark.gpu
def test_copyto_in_vulkan_net():
    g = rng("copyto-vk")
    x, s = randn(g, (9, 12, 20)), randn(g, (4, 3, 7))
    check_in_vulkan_net("CopyTo", {0: 5, 1: 2, 2: 3}, [], [x, s], tol=0.0)
