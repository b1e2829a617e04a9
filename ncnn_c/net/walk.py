"""The walk of the Extractor contract (docs/design.md), once for every executor.

``walk(view, state, index, opt, step)`` computes blob ``index`` into ``state``: ncnn's
recursion, flattened. Only the layers whose needed tops are missing run (``Plan.select``;
a fresh state runs the blob's whole plan), each through ``step`` (the executor's own: a
numpy layer, a recorded GPU layer, a recording numpy layer of the native plan); a layer
stores all its tops, so a multi-top layer keeps the ones not asked for. Input-only blobs
never given run as empty Mats, as ncnn's; one that light mode released is refused with a
log line. The executors differ only in what a step does and in what they keep of a run
(plans, recordings): none of them decides which layers an extract runs.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from ..layer import Layer
from ..mat import Mat
from ..option import Option
from .state import BlobState
from .view import NetView

log = logging.getLogger("ncnn_c")

# step(state, layer index, the layer, its Option, light mode) -> 0 or an error
Step = Callable[[BlobState, int, Layer, Option, bool], int]


def no_data(view: NetView, index: int) -> int:
    name = view.blobs[index].name
    log.error(
        "extract: blob %r has no data: give it with ex.input(%r, mat) (inputs: %s)",
        name, name, ", ".join(view.input_names()) or "none",
    )  # fmt: skip
    return -1


def released(view: NetView, index: int, source: int) -> int:
    src = view.blobs[source].name
    log.error(
        "extract: blob %r needs input %r again, which light mode released after its last "
        "reader ran; extract it before, give %r again, or use ex.set_light_mode(False)",
        view.blobs[index].name, src, src,
    )  # fmt: skip
    return -1


def walk(view: NetView, state: BlobState, index: int, opt: Option, step: Step) -> int:
    """Compute blob ``index`` with ``step(state, li, layer, layer opt, light)`` for each layer
    it needs: 0, or the failing step's code (logged)."""
    if view.is_source(index):
        return no_data(view, index)
    plan = view.plan(index)
    mats, device = state.mats, state.device
    if state.partial:
        layers = view.layers
        order, missing = plan.select(layers, state.present)
        steps = [(li, layers[li]) for li in order]
    else:
        steps = plan.steps
        missing = [s for s in plan.sources if mats[s] is None and device[s] is None]
    unfed: list[int] = []
    if missing:
        blobs = view.blobs
        counts = view.consumer_counts
        for s in missing:
            if blobs[s].producer < 0:
                return no_data(view, s)  # a blob nobody makes: no Input layer either
            if state.pending[s] < counts[s]:
                return released(view, index, s)
        unfed = missing
        for s in unfed:
            mats[s] = Mat()
    opts = view.layer_options(opt).per_layer
    light = bool(opt.lightmode)
    state.partial = True
    for li, layer in steps:
        ret = step(state, li, layer, opts[li], light)
        if ret != 0:
            for s in unfed:
                no_data(view, s)  # the likeliest reason, as a hint
            return ret
    if unfed:
        out = state.mats[index]
        if out is None:  # on the device (the Vulkan executor downloads it after this)
            dev = state.device[index]
            empty = dev is None or not dev.dims
        else:
            empty = out.empty()
        if empty:
            # nothing came of the empty inputs: the caller most likely forgot them
            for s in unfed:
                no_data(view, s)
            return -1
    return 0
