"""Execution plans: what the executor decides once per net instead of once per layer call.

* ``Plan``: the layers one requested blob depends on, in an order where every producer
  comes first, and the blobs only ``ex.input()`` can provide. Built once per (net, blob).
* ``LayerOptions``: the Option each layer runs with (``get_layer_option``: feature mask,
  storage types the layer does not support), resolved once per distinct option values,
  with a local workspace pool when the caller set no workspace allocator (as ncnn's Net).

ncnn walks the graph recursively on every extract; the result is the same (any order
in which producers precede consumers computes the same blobs), but a flat list keeps
the per-layer cost of Python low and has no recursion limit on deep nets.
"""

from __future__ import annotations

from ..allocator import PoolAllocator
from ..layer import Layer
from ..option import Option, get_layer_option
from .graph import Blob


def data_source(blobs: list[Blob], layers: list[Layer], index: int) -> bool:
    """True when blob ``index`` can only come from ``ex.input()`` (no producer, or an Input layer).

    An Input layer only passes on what ex.input() gave it; MemoryData and the like, which have
    no bottoms either, do produce their blob.
    """
    producer = blobs[index].producer
    return producer < 0 or layers[producer].type == "Input"


class Plan:
    """The layers that compute blob ``target`` (ascending layer index, which is topological:
    a param file may only use blobs of earlier layers) and its input-only ``sources``;
    ``steps``: (index, layer) of each, as an executor's loop takes them."""

    __slots__ = ("target", "order", "steps", "sources")

    def __init__(self, blobs: list[Blob], layers: list[Layer], target: int) -> None:
        needed: set[int] = set()
        sources: list[int] = []
        seen = {target}
        stack = [target]
        while stack:
            b = stack.pop()
            if data_source(blobs, layers, b):
                sources.append(b)
                continue
            li = blobs[b].producer
            if li in needed:
                continue
            needed.add(li)
            for bottom in layers[li].bottoms:
                if bottom not in seen:
                    seen.add(bottom)
                    stack.append(bottom)
        self.target = target
        self.order = sorted(needed)
        self.steps = [(li, layers[li]) for li in self.order]
        self.sources = sorted(sources)

    def select(self, layers: list[Layer], present) -> tuple[list[int], list[int]]:
        """(layers to run, input-only blobs they read that are not present) given
        ``present(blob)``: ncnn's recursion, which stops at every blob that holds data.

        Only layers with a needed top that is missing run: blobs kept from an earlier extract
        (light mode off, a multi-top layer's other tops, what a plan handed out) or given with
        ``ex.input()`` are not computed again. The missing sources are the caller's to judge:
        never given (ncnn runs them as empty Mats) or released by light mode.
        """
        if present(self.target):
            return [], []
        need = {self.target}
        run = []
        for li in reversed(self.order):
            layer = layers[li]
            for t in layer.tops:
                if t in need and not present(t):
                    run.append(li)
                    need.update(layer.bottoms)
                    break
        missing = [s for s in self.sources if s in need and not present(s)]
        run.reverse()
        return run, missing


def _local_pool() -> PoolAllocator:
    pool = PoolAllocator()
    pool.set_size_compare_ratio(0.0)  # any free block large enough, as ncnn's local pools
    return pool


class LayerOptions:
    """The per-layer Options derived from one set of option values.

    Holds a private copy of the options, so later changes to the caller's Option object are
    seen as a mismatch (``matches``) rather than leaking into cached per-layer copies.
    """

    __slots__ = ("values", "per_layer")

    def __init__(self, opt: Option, layers: list[Layer]) -> None:
        base = opt.copy()
        self.values = dict(vars(base))
        if base.use_local_pool_allocator and base.workspace_allocator is None:
            # as ncnn's Net: scratch memory from a pool of its own. A fresh large array each
            # call costs its page faults again (measured: a 104x104x64 Winograd convolution
            # spent 17 ms instead of 7 writing into new workspaces). Blobs keep numpy's
            # allocator: a blob pool measured no faster end to end, and it holds memory
            base.workspace_allocator = _local_pool()  # type: ignore[assignment]  # Option types it None
        derived: dict[tuple, Option] = {}
        self.per_layer: list[Option] = []
        for layer in layers:
            # the only layer attributes get_layer_option reads
            key = (layer.featmask, layer.support_fp16_storage, layer.support_bf16_storage)
            o = derived.get(key)
            if o is None:
                o = derived[key] = get_layer_option(base, layer)
            self.per_layer.append(o)

    def matches(self, opt: Option) -> bool:
        return vars(opt) == self.values
