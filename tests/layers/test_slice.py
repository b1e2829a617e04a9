"""Slice against the oracle: equal splits (-233), explicit sizes, mixed, the indices form
(negative too), every axis incl. negative ones, 1-4 dims, parts whose channel counts do and do
not divide by 4, many outputs, parts short of the axis; bad cuts rejected. One case list, every
backend (oracle.backends)."""

from __future__ import annotations

import logging

import numpy as np
import pytest
from oracle import (
    CPU_BACKEND,
    GPU_GRID,
    backends,
    check,
    make_bin,
    make_param,
    randn,
    rng,
    run_layer,
    run_net_gpu,
)

# a pure copy: results are bit-exact on the CPU and the fp32 GPU sets
EXACT = dict(tol=0, tol_fp32=0)
# the GPU sets whose layouts differ (packing, storage), for the sweeps; the short list of other
# cuts runs on the whole grid
FAST = ["fp32", "fp32-pack", "fp16s-pack", "fp16pa-pack"]


def _x(shape):
    return randn(rng("slice", shape), shape)


def _cuts(size):
    """(params without the axis, outputs): equal shares (uneven: the last parts take the
    remainder), explicit sizes, mixed, indices."""
    cuts = [({0: [-233] * n}, n) for n in (1, 2, 3) if size >= n]
    if size >= 3:
        cuts += [({0: [1, size - 1]}, 2), ({0: [1, -233, -233]}, 3), ({2: [1, -1]}, 3), ({2: [size - 2]}, 2)]
    return cuts


def _axis_cases(shapes):
    out = []
    for shape in shapes:
        dims = len(shape)
        for axis in range(-dims, dims):
            for params, n in _cuts(shape[axis if dims > 1 else 0]):
                out.append((shape, {**params, 1: axis}, n))
    return out


# the GPU's main run takes these shapes (one per rank, packed and not); the others run on the
# GPU in the slow job only
SHAPES = [(7,), (16, 32), (3, 7, 13), (12, 5, 7), (8, 6, 6, 6)]
MORE_SHAPES = [(64,), (7, 13), (16, 8, 8), (2, 3, 5, 7), (4, 6, 6, 6)]


@pytest.mark.parametrize("shape,params,n", _axis_cases(SHAPES), ids=str)
@pytest.mark.parametrize("backend", backends("Slice", grid=FAST))
def test_every_axis(shape, params, n, backend):
    check(backend, "Slice", params, [], [_x(shape)], n_outputs=n, **EXACT)


@pytest.mark.parametrize("shape,params,n", _axis_cases(MORE_SHAPES), ids=str)
@pytest.mark.parametrize("backend", backends("Slice", grid=FAST, slow_gpu=True))
def test_every_axis_more_shapes(shape, params, n, backend):
    check(backend, "Slice", params, [], [_x(shape)], n_outputs=n, **EXACT)


def _short_cases():
    for shape in [
        (7,),
        (64,),
        (7, 13),
        (16, 32),
        (3, 7, 13),
        (8, 7, 13),
        (16, 8, 8),
        (2, 3, 5, 7),
        (4, 6, 6, 6),
    ]:
        for axis in range(len(shape)):
            if shape[axis] >= 3:
                yield shape, axis


@pytest.mark.parametrize("shape,axis", list(_short_cases()), ids=str)
@pytest.mark.parametrize("backend", backends("Slice", grid=FAST))
def test_parts_short_of_the_axis(shape, axis, backend):
    """Sizes that leave the end of the axis out: the tail is dropped.

    The oracle's x86 Slice gets this wrong when cutting w of a 3-D/4-D blob or h of a 4-D one
    (it walks the blob assuming the parts fill the axis, so later rows come out shifted);
    ncnn's reference slice.cpp and ours take each part from its own offset. Those cases are
    checked against numpy.
    """
    x = _x(shape)
    dims = len(shape)
    params = {0: [1, -233, 1], 1: axis}  # -233 shares what is left among the last two
    if not ((dims >= 3 and axis == dims - 1) or (dims == 4 and axis == 2)):
        check(backend, "Slice", params, [], [x], n_outputs=3, **EXACT)
        return
    if backend == CPU_BACKEND:
        ret, got = run_layer("Slice", params, [], [x], n_outputs=3)
        want = x
    else:
        flags = GPU_GRID[backend.removeprefix("vk-")]
        text = make_param("Slice", params, [x.shape], 3)
        ret, got = run_net_gpu(text, make_bin([]), [x], 3, **flags)
        # fp16 storage holds the values rounded to fp16, which a copy keeps exactly
        want = x.astype(np.float16).astype(np.float32) if flags["use_fp16_storage"] else x
    assert ret == 0
    size = shape[axis]
    mid = (size - 1) // 2
    for g, (a, b) in zip(got, [(0, 1), (1, 1 + mid), (1 + mid, 2 + mid)], strict=True):
        np.testing.assert_array_equal(g, np.take(want, range(a, b), axis=axis), err_msg=backend)


OTHER_CASES = [
    ((16, 8, 8), {0: [-233] * 16}, 16),  # many outputs
    ((16, 8, 8), {0: [-233] * 5, 1: -1}, 5),
    ((16, 8, 8), {2: [1, 2, 4, 6, -1], 1: 1}, 6),
    ((3, 7, 13), {0: [1, 1], 2: [5], 1: 2}, 2),  # indices win over slices
    ((7,), {0: [3, -233], 1: 2}, 2),  # a 1-D blob ignores the axis
    ((3, 227, 227), {0: [-233] * 3, 1: 1}, 3),
    ((3, 227, 227), {0: [100, -233], 1: 2}, 2),
] + [
    # parts of 4, 8 and 4 (packable on the GPU) and of 3, 5, 8 (mixed)
    (shape, params, 3)
    for shape in [(16,), (12, 5), (16, 8, 8), (12, 3, 4, 5)]
    for params in ({0: [4, -233, 4]}, {2: [3, 8]})
]


@pytest.mark.parametrize("shape,params,n", OTHER_CASES, ids=str)
@pytest.mark.parametrize("backend", backends("Slice"))
def test_other_cuts(shape, params, n, backend):
    check(backend, "Slice", params, [], [_x(shape)], n_outputs=n, **EXACT)


@pytest.mark.parametrize(
    "params,shape,n",
    [
        ({0: [5, 5]}, (7,), 2),  # more than there is
        ({0: [0, -233]}, (7,), 2),  # an empty part
        ({0: [3]}, (7,), 2),  # fewer sizes than tops
        ({2: [5, 3]}, (7,), 3),  # indices going back
        ({2: []}, (7,), 2),  # no sizes at all
        ({0: [-233] * 8}, (7,), 8),  # 8 equal shares of 7
        ({0: [-233, -233], 1: 3}, (3, 7, 13), 2),  # no axis 3
        ({0: [-233, -233], 1: -4}, (3, 7, 13), 2),
    ],
)
def test_bad_cuts(params, shape, n, caplog):
    with caplog.at_level(logging.ERROR, logger="ncnn_c"):
        ret, _ = run_layer("Slice", params, [], [_x(shape)], n_outputs=n)
    assert ret != 0 and "Slice" in caplog.text


@pytest.mark.gpu
@pytest.mark.parametrize(
    "params,shape,n",
    [({0: [5, 5]}, (7,), 2), ({0: [-233] * 8}, (7,), 8), ({0: [-233, -233], 1: 3}, (8, 7, 13), 2)],
)
def test_bad_cuts_on_the_gpu(params, shape, n, caplog):
    with caplog.at_level(logging.ERROR, logger="ncnn_c"):
        ret, _ = run_net_gpu(
            make_param("Slice", params, [shape], n), make_bin([]), [_x(shape)], n, use_packing_layout=True
        )
    assert ret != 0 and "Slice" in caplog.text
