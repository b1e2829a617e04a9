"""NetView: the loaded graph and what the executors need of a Net, read-only for them.

The Net keeps its graph here (blobs, layers, consumer counts, input blobs), with the caches
made from it (the plan of each requested blob, the per-layer options of the last option
values). Nothing here is a backend's: a backend keeps its own caches (native plans, Vulkan
recordings) and settings, and registers the caches with ``keep`` so that they are dropped
whenever the layers change. The Net is the only writer: it replaces the graph on load and
clear. The executors and the Extractor read what they need here and nothing of the Net
itself; they are handed the view, so none of them imports ``core``.

Plain attributes, not properties over the Net: an extract reads a few of them per layer,
and the view holds nothing of the Net, so no cycle keeps a Net alive after its last user.
"""

from __future__ import annotations

from typing import Any

from ..layer import Layer
from ..option import Option
from .graph import Blob
from .plan import LayerOptions, Plan

# option value sets whose per-layer Options a net keeps (and plans keyed by them stay reachable)
LAYER_OPTION_SETS = 4


class NetView:
    """A Net's graph and the caches made from it (see the module docstring)."""

    __slots__ = (
        "blobs",
        "layers",
        "consumer_counts",
        "input_indexes",
        "_caches",
        "generation",
        "weights_loaded",
        "weights_epoch",
        "_plans",
        "_layer_opts",
    )

    def __init__(self) -> None:
        self.blobs: list[Blob] = []
        self.layers: list[Layer] = []
        self.consumer_counts: list[int] = []  # layers reading each blob
        self.input_indexes: list[int] = []  # the Input layers' tops
        self._caches: list[Any] = []  # the backends' caches made from the layers (keep)
        # which graph this is (one more at the start and at the end of every set_graph): an
        # extractor of an older one, or made while it was odd, refuses to run instead of
        # indexing the new graph with the old one's blob numbers
        self.generation = 0
        self.weights_loaded = False  # load_model succeeded for this graph
        # one more at the start and at the end of each load_model: odd while one runs; an
        # extract that saw it change computed with some old and some new weights
        self.weights_epoch = 0
        self._plans: dict[int, Plan] = {}
        self._layer_opts: list[LayerOptions] = []  # the last few made, newest first

    # -- the Net's side ------------------------------------------------------------------------
    def set_graph(self, blobs: list[Blob], layers: list[Layer]) -> None:
        """A new graph (a load, or none after clear): every cache made from the old one goes."""
        counts = [0] * len(blobs)
        for layer in layers:
            for b in layer.bottoms:
                counts[b] += 1
        self.generation += 1  # odd while the graph is being replaced
        self.blobs = blobs
        self.layers = layers
        self.consumer_counts = counts
        self.input_indexes = [t for layer in layers if layer.type == "Input" for t in layer.tops]
        self.generation += 1
        self.weights_loaded = False
        self.forget_plans()

    def forget_plans(self) -> None:
        """Drop what was made from the layers (they changed, or their weights did)."""
        self._plans = {}
        self._layer_opts = []
        for cache in self._caches:
            cache.clear()

    def keep(self, cache: Any) -> None:
        """A backend's cache made from the layers (anything with ``clear()``): dropped with the
        plans, whenever the graph, the weights or the pipelines change."""
        self._caches.append(cache)

    # -- the executors' side -----------------------------------------------------------------
    def is_source(self, index: int) -> bool:
        """Whether blob ``index`` can only come from ``ex.input()``: ``plan.data_source``,
        inline (it runs twice per extract)."""
        producer = self.blobs[index].producer
        return producer < 0 or self.layers[producer].type == "Input"

    def plan(self, index: int) -> Plan:
        """The layers blob ``index`` needs, made on first use."""
        plan = self._plans.get(index)
        if plan is None:
            plan = self._plans[index] = Plan(self.blobs, self.layers, index)
        return plan

    def layer_options(self, opt: Option) -> LayerOptions:
        """Each layer's Option for the values of ``opt`` (an extractor's), made again only
        when they differ from the last few sets asked for: compared by value at each extract,
        so ``ex.opt.x = ...`` is honoured. A new object whenever made (plan keys hold it, so
        going back to earlier values, as a busy machine's one-thread runs do, finds the
        plans made for them)."""
        kept = self._layer_opts
        for lo in list(kept):  # a snapshot: threads sharing the net may add meanwhile
            if lo.matches(opt):
                return lo
        lo = LayerOptions(opt, self.layers)
        # the oldest made goes first; kept whole, never reordered, so a reader never trips
        self._layer_opts = [lo, *kept][:LAYER_OPTION_SETS]
        return lo

    def input_names(self) -> list[str]:
        return [self.blobs[i].name for i in self.input_indexes]
