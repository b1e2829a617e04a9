"""What the Net asks of its backends, beside the Extractor's ``extract``.

A backend is an executor (``extract(state, index, opt) -> int | None``, see
``extractor.py``) that may also take part in loading: ``Net`` calls every backend, in its
order (Vulkan, native plan, numpy layers), at four points, and knows nothing of what each
does there:

* ``begin_param(opt, what, reparse_ok)`` before a param is parsed: the Vulkan backend starts
  making its device on a thread, or switches ``opt.use_vulkan_compute`` off (logged) when
  there is none;
* ``end_param(opt, what)`` after a good parse: True when the graph must be parsed again
  because the layer forms asked for are not the ones that will run (no GPU after all);
* ``prepare(load)`` in load_model: the first backend that does not decline (None) reads the
  weights and makes the layers' pipelines, its way (the Vulkan backend streams the GPU
  layers' pipelines and uploads on a pool); the numpy backend does the plain serial load;
* ``release(opt, clear)`` after the layers' pipelines are destroyed (a new load_model, or
  ``clear``): the backend drops what it made from them (clear: everything, the pipeline
  cache it owns too).

Per-inference data never lives in a backend: that is the ``BlobState``'s, in a slot per
backend (``state.slot``). Caches made from the layers (plans, recordings) are the backend's
own and are registered with the view (``NetView.keep``), which drops them whenever the
layers change.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from ..option import Option, get_layer_option
from .graph import call_hook, desc
from .view import NetView

log = logging.getLogger("ncnn_c")


class Backend:
    """The loading hooks with nothing to do; a backend overrides what it needs."""

    __slots__ = ()

    def begin_param(self, opt: Option, what: str, reparse_ok: bool) -> None:
        """A param is about to be parsed with ``opt`` (reparse_ok: ``end_param`` may ask for a
        second parse of the same source)."""

    def end_param(self, opt: Option, what: str) -> bool:
        """The param parsed; True: parse it again (``opt`` changed what the layers are)."""
        return False

    def prepare(self, load: ModelLoad) -> int | None:
        """Load the weights and make the pipelines (0 or -1, logged), or None: not this backend's."""
        return None

    def release(self, opt: Option, clear: bool) -> None:
        """The layers' pipelines were destroyed; ``clear``: the net forgets its graph too."""


class ModelLoad:
    """One load_model as the backends see it: the graph, the net's Option, the weights'
    reader, the net's load settings, and the steps every loader shares (each logs its own
    failure, naming the layer)."""

    __slots__ = ("view", "opt", "mb", "pipeline_threads", "progress", "pipelines")

    def __init__(
        self,
        view: NetView,
        opt: Option,
        mb: Any,
        pipeline_threads: int | None,
        progress: Callable[[int, int], None] | None,
    ) -> None:
        self.view = view
        self.opt = opt
        self.mb = mb  # the ModelBin the weights are read from, in layer order
        self.pipeline_threads = pipeline_threads  # net.pipeline_threads (None: the backend decides)
        self.progress = progress  # net.load_progress: callable(done, total) or None
        self.pipelines = False  # some create_pipeline ran: the Net destroys them on the next load

    def layer_options(self) -> list[Option]:
        """Each layer's Option (the net's, with the layer's own featmask applied)."""
        return [get_layer_option(self.opt, layer) for layer in self.view.layers]

    def read(self, i: int) -> int:
        """Layer ``i``'s load_model; a failure is one log line, with ModelBin's reason."""
        mb = self.mb
        layer = self.view.layers[i]
        start = mb.offset
        mb.error, mb.truncated = None, False
        ret = call_hook(layer.load_model, mb)
        if ret != 0:
            if mb.truncated:
                log.error(
                    "load_model: the .bin ended at %s: it does not match the .param (%s)",
                    desc(i, layer), mb.error,
                )  # fmt: skip
            else:
                log.error(
                    "load_model: %s failed to load its weights (%s) at byte offset %d%s",
                    desc(i, layer), ret, start, f": {mb.error}" if mb.error else "",
                )  # fmt: skip
        elif mb.error:  # the layer went on without that weight: still worth a line
            log.warning("load_model: %s: %s", desc(i, layer), mb.error)
        return ret

    def read_all(self) -> int:
        """Every layer's weights, in order: 0, or -1 at the first failure (logged)."""
        for i in range(len(self.view.layers)):
            if self.read(i) != 0:
                return -1
        return 0

    def begin_pipelines(self) -> None:
        """Pipelines are about to be made: the Net must destroy them later, and every plan
        made from the layers goes (create_pipeline may change a layer's flags)."""
        self.pipelines = True
        self.view.forget_plans()

    def create_pipeline(self, i: int, opt: Option) -> int:
        """Layer ``i``'s create_pipeline with ``opt``; a failure is logged."""
        layer = self.view.layers[i]
        ret = call_hook(layer.create_pipeline, opt)
        if ret != 0:
            log.error("load_model: %s create_pipeline failed (%s)", desc(i, layer), ret)
        return ret

    def create_all(self, opts: list[Option]) -> int:
        """create_pipeline of every layer, in order, on this thread, told to ``progress``."""
        total = len(self.view.layers)
        for i in range(total):
            if self.create_pipeline(i, opts[i]) != 0:
                return -1
            if self.progress is not None:
                self.progress(i + 1, total)
        return 0
