"""Net: the loaded graph of layers and blobs, custom layer registration, loading.

The structure follows ncnn's: a Net owns blobs (with their producer and consumer layers)
and layers; an Extractor (``extractor.py``) runs them through the net's backends, which
see the Net only through a ``NetView`` (``view.py``). The Net knows its backends only as
``Backend``s (``backend.py``): it calls each at the load steps, in order, and none of the
device code is here (the Vulkan backend's is in ``vulkan/``). Loaders never raise: they
return 0 / -1 and log one line that says which line, layer or byte offset was wrong.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Callable

from .. import layer as layer_mod
from ..datareader import DataReaderFromMemory
from ..errors import ModelFormatError
from ..layer import CUSTOM_BIT, LAYER_TYPES, Layer
from ..modelbin import ModelBinFromDataReader
from ..option import FEAT_NO_VULKAN, Option, get_layer_option
from .backend import Backend, ModelLoad
from .extractor import Extractor
from .graph import MAX_LAYER_COUNT, Blob, CustomEntry, Graph
from .native import NativeExecutor
from .parse import gc_paused, open_reader, parse_binary, parse_text
from .reference import ReferenceExecutor
from .view import NetView
from .vulkan import VulkanExecutor

log = logging.getLogger("ncnn_c")


class Net:
    """ncnn::Net. ``opt`` is the net's own Option: set flags on it before load_param."""

    def __init__(self) -> None:
        self.opt = Option()
        # the graph and its plans, as the backends read them: blobs, layers, consumer
        # counts, input indexes, plans, per-layer options
        self._view = NetView()
        reference = ReferenceExecutor(self._view)
        self._vulkan = VulkanExecutor(self._view, reference)  # the device, GPU load, replay
        self._native = NativeExecutor(self._view, reference)  # the CPU plans per input shape
        # the backends, in the order an extract tries them (each declines with None what it
        # does not run) and the load steps call them: the GPU, the native plan, numpy
        self._executors: tuple[Backend, ...] = (self._vulkan, self._native, reference)
        self._entries: list[CustomEntry | None] = []  # the custom creator of each layer
        self._output_indexes: list[int] = []
        self._custom: list[CustomEntry | None] = []  # index = typeindex & ~CUSTOM_BIT
        self._overwrite: dict[int, CustomEntry] = {}
        self._pipelines = False
        # load_model: threads creating the GPU layers' pipelines (None: decided per load, see
        # _pipeline_threads), and a callable(done, total) told after each layer's pipelines
        self.pipeline_threads: int | None = None
        self.load_progress: Callable[[int, int], None] | None = None
        self._blob_by_name: dict[str, int] = {}

    # -- settings the executors read ----------------------------------------------------------
    @property
    def native_plan(self) -> bool:
        """False: the CPU runs the numpy layers only (the reference path); NCNN_C_NATIVE_PLAN=0
        switches the plan off for the whole process."""
        return self._native.enabled

    @native_plan.setter
    def native_plan(self, on: bool) -> None:
        self._native.enabled = on

    @property
    def replay_capacity(self) -> int:
        """Vulkan: the most input shapes whose recorded extracts are kept for replay (each
        keeps its blobs' GPU memory); 0: no replay."""
        return self._vulkan.replay_capacity

    @replay_capacity.setter
    def replay_capacity(self, n: int) -> None:
        self._vulkan.replay_capacity = n

    # -- context manager / lifetime -------------------------------------------------------
    def __enter__(self) -> Net:
        return self

    def __exit__(self, *exc) -> None:
        self.clear()

    def __del__(self) -> None:
        if sys.is_finalizing():
            # atexit already destroyed the Vulkan devices (and every pipeline on them); the
            # modules teardown needs may be gone, and the process frees the rest
            return
        try:
            self.clear()
        except Exception:  # noqa: BLE001 - interpreter shutdown may have torn modules down
            pass

    # -- custom layers --------------------------------------------------------------------
    def register_custom_layer(self, type_or_index, creator, destroyer=None, userdata=None) -> int:
        """Register ``creator`` for a new type name, or overwrite a built-in type (name or index)."""
        if not callable(creator) or (destroyer is not None and not callable(destroyer)):
            log.error("register_custom_layer: creator/destroyer must be callable")
            return -1
        entry = CustomEntry(None, creator, destroyer, userdata)
        if isinstance(type_or_index, str):
            builtin = layer_mod.layer_to_index(type_or_index)
            if builtin >= 0:
                entry.name = type_or_index
                self._overwrite[builtin] = entry
                return 0
            entry.name = type_or_index
            for i, e in enumerate(self._custom):
                if e is not None and e.name == type_or_index:
                    self._custom[i] = entry
                    return 0
            self._custom.append(entry)
            return 0
        try:
            index = int(type_or_index)
        except (TypeError, ValueError):
            log.error("register_custom_layer: type must be a name or an index, got %r", type_or_index)
            return -1
        if index < 0:
            log.error("register_custom_layer: negative type index %d", index)
            return -1
        if index & CUSTOM_BIT:
            ci = index & ~CUSTOM_BIT
            if ci >= MAX_LAYER_COUNT:
                log.error("register_custom_layer: custom index %d too large", ci)
                return -1
            while len(self._custom) <= ci:
                self._custom.append(None)
            old = self._custom[ci]
            entry.name = old.name if old is not None else f"custom{ci}"
            self._custom[ci] = entry
            return 0
        if index >= len(LAYER_TYPES):
            log.error("register_custom_layer: built-in type index %d out of range", index)
            return -1
        entry.name = LAYER_TYPES[index]
        self._overwrite[index] = entry
        return 0

    def _resolve_type(self, type_name: str) -> int:
        index = layer_mod.layer_to_index(type_name)
        if index >= 0:
            return index
        for i, e in enumerate(self._custom):
            if e is not None and e.name == type_name:
                return CUSTOM_BIT | i
        return -1

    def _create_layer(self, typeindex: int, featmask: int):
        """(layer, custom_entry_or_None); layer None when the type cannot be created."""
        if typeindex < 0:
            return None, None
        if typeindex & CUSTOM_BIT:
            ci = typeindex & ~CUSTOM_BIT
            entry = self._custom[ci] if ci < len(self._custom) else None
            if entry is None:
                return None, None
            return entry.create(), entry
        entry = self._overwrite.get(typeindex)
        if entry is not None:
            return entry.create(), entry
        layer = None
        if self.opt.use_vulkan_compute and not featmask & FEAT_NO_VULKAN:
            layer = layer_mod.create_layer_vulkan(typeindex)
        if layer is None:
            layer = layer_mod.create_layer_cpu(typeindex)
        return layer, None

    # -- Vulkan device ----------------------------------------------------------------------
    def set_vulkan_device(self, device) -> None:
        """Run on ``device``, a VulkanDevice or a GPU index (None: the default GPU, taken at load)."""
        self._vulkan.device.set(device)

    def vulkan_device(self):
        """The VulkanDevice the net runs on, or None (no GPU chosen or available)."""
        return self._vulkan.device.vkdev

    # -- load_param -------------------------------------------------------------------------
    def load_param(self, src) -> int:
        """Text .param from a path, a file object or a DataReader."""
        return self._load("load_param", src, parse_text)

    def load_param_mem(self, text) -> int:
        """Text .param from a str or bytes in memory; 0, or -1 with one log line."""
        if isinstance(text, str):
            text = text.encode("utf-8")
        if not isinstance(text, (bytes, bytearray, memoryview)):
            log.error("load_param_mem: expected str or bytes, got %s", type(text).__name__)
            return -1
        return self._load("load_param_mem", text, parse_text)

    def load_param_bin(self, src) -> int:
        """Binary .param.bin from a path, a file object, a DataReader or bytes."""
        return self._load("load_param_bin", src, parse_binary)

    def _load(self, what: str, src, parse) -> int:
        graph = Graph()
        try:
            self.clear()
        except Exception as e:  # noqa: BLE001 - a loader never raises
            return self._load_failed(graph, (what, f"unexpected {type(e).__name__}: {e}"))
        # A backend may start work while the param is parsed (the Vulkan device, on a
        # thread) and ask for a second parse when the layer forms asked for turn out not to
        # run (no GPU after all). Only where that parse is as the first: a source read again
        # from its start, and no application layer whose creator would be called twice.
        reparse_ok = (
            isinstance(src, (str, os.PathLike, bytes, bytearray, memoryview))
            and not self._custom
            and not self._overwrite
        )
        for b in self._executors:
            b.begin_param(self.opt, what, reparse_ok)
        error = self._parse(what, src, parse, graph)
        again = [b.end_param(self.opt, what) for b in self._executors]
        if error is None and any(again):
            graph = Graph()  # the other forms of built-in layers only: nothing to destroy
            error = self._parse(what, src, parse, graph)
        if error is not None:
            return self._load_failed(graph, error)
        self._install(graph)
        return 0

    def _parse(self, what: str, src, parse, graph: Graph) -> tuple[str, str] | None:
        """Parse ``src`` into ``graph``; None, or (what, the line to log) on failure."""
        fp = None
        try:
            dr, fp = open_reader(src, what)
            with gc_paused():
                parse(dr, graph, self)
        except ModelFormatError as e:
            return what, str(e)
        except OSError as e:
            return what, f"cannot open {src!r}: {e}"
        except Exception as e:  # noqa: BLE001 - a loader never raises
            return what, f"unexpected {type(e).__name__}: {e}"
        finally:
            if fp is not None:
                fp.close()
        return None

    def _load_failed(self, graph: Graph, error: tuple[str, str]) -> int:
        log.error("%s: %s", *error)
        # layers made before the failure still go back to their custom destroyers
        self._view.layers, self._entries = graph.layers, graph.entries
        self.clear()
        return -1

    def _install(self, graph: Graph) -> None:
        self._entries = graph.entries
        self._view.set_graph(graph.blobs, graph.layers)
        blobs = graph.blobs
        self._output_indexes = [i for i, b in enumerate(blobs) if b.consumer == -1]
        if graph.by_name:  # a text param's names: unique and already indexed by the parser
            self._blob_by_name = graph.by_name
        else:  # a binary param's: all ""
            self._blob_by_name = {}
            for i, blob in enumerate(blobs):
                self._blob_by_name.setdefault(blob.name, i)

    # -- load_model -------------------------------------------------------------------------
    def load_model(self, src) -> int:
        """Weights from a path, a file object, a DataReader or bytes."""
        fp = None
        try:
            dr, fp = open_reader(src, "load_model")
            return self._load_model(dr)
        except ModelFormatError as e:
            log.error("load_model: %s", e)
            return -1
        except OSError as e:
            log.error("load_model: cannot open %r: %s", src, e)
            return -1
        except Exception as e:  # noqa: BLE001 - a loader never raises
            log.error("load_model: unexpected %s: %s", type(e).__name__, e)
            return -1
        finally:
            if fp is not None:
                fp.close()

    def load_model_mem(self, mem) -> int:
        """Weights from bytes in memory (a .bin's content); 0, or -1 with one log line."""
        if not isinstance(mem, (bytes, bytearray, memoryview)):
            log.error("load_model_mem: expected bytes, got %s", type(mem).__name__)
            return -1
        return self.load_model(DataReaderFromMemory(mem))

    def _load_model(self, dr) -> int:
        if not self._view.layers:
            log.error("load_model: no layers, call load_param first")
            return -1
        self._view.weights_epoch += 1
        try:
            return self._load_model_weights(dr)
        finally:
            self._view.weights_epoch += 1

    def _load_model_weights(self, dr) -> int:
        self._destroy_pipelines()
        self._view.weights_loaded = False
        mb = ModelBinFromDataReader(dr, log_errors=False)  # ModelLoad.read logs, naming the layer
        load = ModelLoad(self._view, self.opt, mb, self.pipeline_threads, self.load_progress)
        ret = None
        try:
            for b in self._executors:  # the first that does not decline loads
                ret = b.prepare(load)
                if ret is not None:
                    break
        finally:
            self._pipelines = self._pipelines or load.pipelines
        if ret != 0:
            return -1
        self._view.weights_loaded = True
        left = dr.remaining_bytes()
        if left:  # ncnn loads such a file silently, and its later layers get garbage weights
            log.warning(
                "load_model: %d trailing bytes after the last weight (byte offset %d): "
                "the .bin does not match the .param",
                left, mb.offset,
            )  # fmt: skip
        return 0

    def _destroy_pipelines(self, clear: bool = False) -> None:
        """Every layer's destroy_pipeline, then the backends drop what they made of them."""
        if self._pipelines:
            self._pipelines = False
            for layer in self._view.layers:
                try:
                    layer.destroy_pipeline(get_layer_option(self.opt, layer))
                except Exception as e:  # noqa: BLE001 - teardown continues
                    log.error("destroy_pipeline of %r raised %s: %s", layer.name, type(e).__name__, e)
        for b in self._executors:
            b.release(self.opt, clear)

    # -- queries ----------------------------------------------------------------------------
    def blobs(self) -> list[Blob]:
        """The blobs (name, producer and consumer layer indexes), in index order."""
        return list(self._view.blobs)

    def layers(self) -> list[Layer]:
        """The layers, in the .param's order."""
        return list(self._view.layers)

    def input_indexes(self) -> list[int]:
        """Blob indexes of the Input layers' tops."""
        return list(self._view.input_indexes)

    def output_indexes(self) -> list[int]:
        """Blob indexes no layer consumes: the net's outputs."""
        return list(self._output_indexes)

    def input_names(self) -> list[str]:
        """Names of the input blobs (the Input layers' tops), for ``Extractor.input``."""
        return [self._view.blobs[i].name for i in self._view.input_indexes]

    def output_names(self) -> list[str]:
        """Names of the output blobs (consumed by no layer), for ``Extractor.extract``."""
        return [self._view.blobs[i].name for i in self._output_indexes]

    def find_blob_index_by_name(self, name: str) -> int:
        """The index of blob ``name``, or -1."""
        return self._blob_by_name.get(name, -1)

    def find_layer_index_by_name(self, name: str) -> int:
        """The index of the first layer named ``name``, or -1."""
        for i, layer in enumerate(self._view.layers):
            if layer.name == name:
                return i
        return -1

    # -- teardown ---------------------------------------------------------------------------
    def clear(self) -> None:
        """Destroy pipelines and layers, forget the graph and the pipeline cache the net made."""
        self._destroy_pipelines(clear=True)
        for layer, entry in zip(self._view.layers, self._entries, strict=True):
            if entry is not None:
                try:
                    entry.destroy(layer)
                except Exception as e:  # noqa: BLE001
                    log.error("custom layer destroyer for %r raised %s: %s", layer.name, type(e).__name__, e)
        self._view.set_graph([], [])
        self._entries = []
        self._output_indexes = []
        self._blob_by_name = {}

    def create_extractor(self) -> Extractor:
        """A new Extractor: one inference's inputs and results, with a copy of ``opt``."""
        return Extractor(self)
