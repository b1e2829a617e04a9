"""Net and Extractor: the graph loaded from .param/.bin and the per-inference state.

The structure follows ncnn (seed 003): a Net owns blobs (with their producer and
consumer layers) and layers; an Extractor owns one Mat slot per blob and computes a
requested blob by recursively running the producers of missing inputs
(``forward_layer``). Loaders never raise: they return 0 / -1 and log one line that
says which line, layer or byte offset was wrong.

The Vulkan path is reached only through ``_gpu()``, so a CPU-only run never imports
``ncnn_c.gpu`` (nor ``vulkan``).
"""

from __future__ import annotations

import logging
import os
import re
import sys
import types

import numpy as np

from . import layer as layer_mod
from .datareader import DataReader, DataReaderFromMemory, DataReaderFromStdio
from .errors import ModelFormatError
from .layer import CUSTOM_BIT, LAYER_TYPES, Layer
from .mat import Mat
from .modelbin import ModelBinFromDataReader
from .option import FEAT_NO_VULKAN, Option, get_layer_option
from .paramdict import ParamDict

log = logging.getLogger("ncnn_c")

PARAM_MAGIC = 7767517
# Sanity limits, checked before anything is allocated from an untrusted count.
MAX_LAYER_COUNT = 1 << 20
MAX_BLOB_COUNT = 1 << 22
MAX_PARAM_TEXT = 64 << 20
_MAX_HINT_ELEMENTS = 1 << 26

_TOKEN = re.compile(r'[^\s"]*"[^"]*"\S*|\S+')


def _gpu() -> types.SimpleNamespace:
    """The GPU modules, imported on first use (tests may replace this function)."""
    from .gpu import command, device, pipelinecache, vkmat

    return types.SimpleNamespace(
        get_gpu_count=device.get_gpu_count,
        get_default_gpu_index=device.get_default_gpu_index,
        get_gpu_device=device.get_gpu_device,
        PipelineCache=pipelinecache.PipelineCache,
        VkCompute=command.VkCompute,
        VkMat=vkmat.VkMat,
    )


class Blob:
    """A named edge of the graph: ``producer``/``consumer`` are layer indexes (-1: none)."""

    def __init__(self, name: str = "") -> None:
        self.name = name
        self.producer = -1
        self.consumer = -1
        self.shape = Mat()

    def __repr__(self) -> str:
        return f"<Blob {self.name!r} producer={self.producer} consumer={self.consumer}>"


class _CustomEntry:
    __slots__ = ("name", "creator", "destroyer", "userdata")

    def __init__(self, name, creator, destroyer, userdata) -> None:
        self.name = name
        self.creator = creator
        self.destroyer = destroyer
        self.userdata = userdata

    def create(self) -> Layer | None:
        return self.creator() if self.userdata is None else self.creator(self.userdata)

    def destroy(self, layer) -> None:
        if self.destroyer is None:
            return
        if self.userdata is None:
            self.destroyer(layer)
        else:
            self.destroyer(layer, self.userdata)


def _open_reader(src, what: str):
    """(reader, file_to_close) for a path, a file object or a DataReader."""
    if isinstance(src, DataReader):
        return src, None
    if isinstance(src, (str, os.PathLike)):
        fp = open(src, "rb")  # noqa: SIM115 - closed by the caller
        return DataReaderFromStdio(fp), fp
    if isinstance(src, (bytes, bytearray, memoryview)):
        return DataReaderFromMemory(src), None
    if hasattr(src, "read"):
        return DataReaderFromStdio(src), None
    raise ModelFormatError(f"{what}: cannot read from a {type(src).__name__}")


def _desc(i: int, layer: Layer) -> str:
    return f"layer #{i} {layer.name!r} ({layer.type})"


def _call(fn, *args):
    """A layer hook's int result; an exception from (user) layer code becomes its text."""
    try:
        return fn(*args)
    except Exception as e:  # noqa: BLE001 - layer code must not break a loader
        return f"raised {type(e).__name__}: {e}"


class _Graph:
    """Blobs and layers under construction; handed to the Net only when complete."""

    def __init__(self) -> None:
        self.blobs: list[Blob] = []
        self.by_name: dict[str, int] = {}
        self.layers: list[Layer] = []
        self.entries: list[_CustomEntry | None] = []


class Net:
    """ncnn::Net. ``opt`` is the net's own Option: set flags on it before load_param."""

    def __init__(self) -> None:
        self.opt = Option()
        self._blobs: list[Blob] = []
        self._layers: list[Layer] = []
        self._entries: list[_CustomEntry | None] = []  # the custom creator of each layer
        self._consumer_counts: list[int] = []
        self._input_indexes: list[int] = []
        self._output_indexes: list[int] = []
        self._custom: list[_CustomEntry | None] = []  # index = typeindex & ~CUSTOM_BIT
        self._overwrite: dict[int, _CustomEntry] = {}
        self._vkdev = None
        self._owned_cache = None
        self._gpu_ready = False
        self._pipelines = False

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
        entry = _CustomEntry(None, creator, destroyer, userdata)
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
        if device is None:
            self._vkdev = None
            return
        if isinstance(device, int):
            try:
                self._vkdev = _gpu().get_gpu_device(device)
            except Exception as e:  # noqa: BLE001 - reported, the net stays on the CPU
                log.error("set_vulkan_device: no Vulkan device %d: %s", device, e)
                self._vkdev = None
            return
        self._vkdev = device

    def vulkan_device(self):
        return self._vkdev

    def _acquire_vkdev(self):
        if self._vkdev is not None:
            return self._vkdev
        try:
            gpu = _gpu()
            if gpu.get_gpu_count() <= 0:
                return None
            index = self.opt.vulkan_device_index
            if index is None or index < 0:
                index = gpu.get_default_gpu_index()
            self._vkdev = gpu.get_gpu_device(index)
        except Exception as e:  # noqa: BLE001 - any failure means "no GPU": fall back
            log.warning("Vulkan unavailable (%s: %s)", type(e).__name__, e)
            self._vkdev = None
        return self._vkdev

    def _check_vulkan(self, where: str) -> None:
        # ncnn behaviour: without a device the net silently runs on the CPU; we say so.
        if self.opt.use_vulkan_compute and self._acquire_vkdev() is None:
            log.warning(
                "%s: use_vulkan_compute is set but no Vulkan device is available; running on the CPU", where
            )
            self.opt.use_vulkan_compute = False

    # -- load_param -------------------------------------------------------------------------
    def load_param(self, src) -> int:
        """Text .param from a path, a file object or a DataReader."""
        return self._load("load_param", src, self._parse_text)

    def load_param_mem(self, text) -> int:
        if isinstance(text, str):
            text = text.encode("utf-8")
        if not isinstance(text, (bytes, bytearray, memoryview)):
            log.error("load_param_mem: expected str or bytes, got %s", type(text).__name__)
            return -1
        return self._load("load_param_mem", DataReaderFromMemory(text), self._parse_text)

    def load_param_bin(self, src) -> int:
        """Binary .param.bin from a path, a file object, a DataReader or bytes."""
        return self._load("load_param_bin", src, self._parse_binary)

    def _load(self, what: str, src, parse) -> int:
        fp = None
        graph = _Graph()
        try:
            self.clear()
            self._check_vulkan(what)
            dr, fp = _open_reader(src, what)
            parse(dr, graph)
        except ModelFormatError as e:
            log.error("%s: %s", what, e)
        except OSError as e:
            log.error("%s: cannot open %r: %s", what, src, e)
        except Exception as e:  # noqa: BLE001 - a loader never raises
            log.error("%s: unexpected %s: %s", what, type(e).__name__, e)
        else:
            self._install(graph)
            return 0
        finally:
            if fp is not None:
                fp.close()
        # layers made before the failure still go back to their custom destroyers
        self._layers, self._entries = graph.layers, graph.entries
        self.clear()
        return -1

    def _parse_text(self, dr, graph: _Graph) -> None:
        raw = dr.read_text(MAX_PARAM_TEXT)
        if raw is None:
            raise ModelFormatError(f"param text larger than {MAX_PARAM_TEXT} bytes")
        text = raw.decode("utf-8", errors="replace")
        lines = [(n + 1, ln) for n, ln in enumerate(text.splitlines()) if ln.strip()]
        if not lines:
            raise ModelFormatError("empty param")
        lineno, first = lines[0]
        head = first.split()
        if len(head) != 1 or head[0] != str(PARAM_MAGIC):
            raise ModelFormatError(f"line {lineno}: bad magic {first.strip()[:40]!r}, expected {PARAM_MAGIC}")
        if len(lines) < 2:
            raise ModelFormatError(f"line {lineno}: missing the layer count / blob count line")
        lineno, second = lines[1]
        counts = second.split()
        try:
            if len(counts) != 2:
                raise ValueError
            layer_count, blob_count = int(counts[0]), int(counts[1])
        except ValueError:
            raise ModelFormatError(
                f"line {lineno}: expected '<layer count> <blob count>', got {second.strip()[:60]!r}"
            ) from None
        if not 0 < layer_count <= MAX_LAYER_COUNT or not 0 < blob_count <= MAX_BLOB_COUNT:
            raise ModelFormatError(
                f"line {lineno}: absurd layer count {layer_count} / blob count {blob_count}"
            )
        body = lines[2:]
        if len(body) < layer_count:
            last = body[-1][0] if body else lineno
            raise ModelFormatError(
                f"line {last}: layer count is {layer_count} but the file has only {len(body)} layer lines"
            )
        if len(body) > layer_count:
            # ncnn reads exactly layer_count lines; real files (nanodet_m) carry an extra one
            log.warning(
                "load_param: line %d: ignoring %d line(s) after the %d layers the header announces",
                body[layer_count][0], len(body) - layer_count, layer_count,
            )  # fmt: skip
            body = body[:layer_count]

        for lineno, line in body:
            toks = _TOKEN.findall(line)
            if len(toks) < 4:
                raise ModelFormatError(
                    f"line {lineno}: expected '<type> <name> <bottom count> <top count> ...'"
                )
            type_name, name = toks[0], toks[1]
            try:
                nb, nt = int(toks[2]), int(toks[3])
            except ValueError:
                raise ModelFormatError(
                    f"line {lineno}: layer {name}: bad blob counts {toks[2]!r} {toks[3]!r}"
                ) from None
            if nb < 0 or nt < 0 or 4 + nb + nt > len(toks):
                raise ModelFormatError(
                    f"line {lineno}: layer {name}: {nb} bottoms + {nt} tops but only {len(toks) - 4} names"
                )
            bottom_names = toks[4 : 4 + nb]
            top_names = toks[4 + nb : 4 + nb + nt]
            pd = ParamDict()
            try:
                pd.load_text_tokens(toks[4 + nb + nt :])
            except ModelFormatError as e:
                raise ModelFormatError(f"line {lineno}: layer {name}: {e}") from None
            where = f"line {lineno}: layer {name}"
            bottoms = []
            for bname in bottom_names:
                bi = graph.by_name.get(bname)
                if bi is None:
                    raise ModelFormatError(
                        f"{where}: bottom blob {bname!r} is not produced by an earlier layer"
                    )
                bottoms.append(bi)
            tops = []
            for tname in top_names:
                if tname in graph.by_name:
                    raise ModelFormatError(f"{where}: duplicate blob name {tname!r}")
                if len(graph.blobs) >= blob_count:
                    raise ModelFormatError(f"{where}: more blobs than the blob count {blob_count}")
                graph.by_name[tname] = len(graph.blobs)
                tops.append(len(graph.blobs))
                graph.blobs.append(Blob(tname))
            typeindex = self._resolve_type(type_name)
            if typeindex < 0:
                raise ModelFormatError(f"{where}: unknown layer type {type_name!r}")
            self._add_layer(graph, where, typeindex, type_name, name, bottoms, tops, pd)
        if len(graph.blobs) != blob_count:
            raise ModelFormatError(
                f"blob count is {blob_count} but the layers define {len(graph.blobs)} blobs"
            )

    def _parse_binary(self, dr, graph: _Graph) -> None:
        def read_int(what: str) -> int:
            data = dr.read_bytes(4)
            if len(data) != 4:
                raise ModelFormatError(f"truncated while reading {what}")
            return int.from_bytes(data, "little", signed=True)

        magic = read_int("magic")
        if magic != PARAM_MAGIC:
            raise ModelFormatError(f"bad magic {magic}, expected {PARAM_MAGIC}")
        layer_count = read_int("layer count")
        blob_count = read_int("blob count")
        if not 0 < layer_count <= MAX_LAYER_COUNT or not 0 < blob_count <= MAX_BLOB_COUNT:
            raise ModelFormatError(f"absurd layer count {layer_count} / blob count {blob_count}")
        produced: dict[int, Blob] = {}
        for i in range(layer_count):
            where = f"layer #{i}"
            typeindex = read_int(f"{where} type")
            nb = read_int(f"{where} bottom count")
            nt = read_int(f"{where} top count")
            if not 0 <= nb <= blob_count or not 0 <= nt <= blob_count:
                raise ModelFormatError(f"{where}: absurd bottom/top count {nb}/{nt}")
            bottoms = [read_int(f"{where} bottom index") for _ in range(nb)]
            tops = [read_int(f"{where} top index") for _ in range(nt)]
            for b in bottoms:
                if not 0 <= b < blob_count:
                    raise ModelFormatError(f"{where}: bottom blob index {b} out of range 0..{blob_count - 1}")
                if b not in produced:
                    raise ModelFormatError(f"{where}: bottom blob {b} is not produced by an earlier layer")
            for t in tops:
                if not 0 <= t < blob_count:
                    raise ModelFormatError(f"{where}: top blob index {t} out of range 0..{blob_count - 1}")
                if t in produced:
                    raise ModelFormatError(f"{where}: blob {t} produced twice")
                produced[t] = Blob("")
            pd = ParamDict()
            try:
                pd.load_binary(dr)
            except ModelFormatError as e:
                raise ModelFormatError(f"{where}: {e}") from None
            if typeindex < 0 or (not typeindex & CUSTOM_BIT and typeindex >= len(LAYER_TYPES)):
                raise ModelFormatError(f"{where}: unknown layer type index {typeindex}")
            type_name = LAYER_TYPES[typeindex] if not typeindex & CUSTOM_BIT else ""
            self._add_layer(graph, where, typeindex, type_name, "", bottoms, tops, pd, produced)
        if len(produced) != blob_count:
            raise ModelFormatError(f"blob count is {blob_count} but the layers define {len(produced)} blobs")
        graph.blobs = [produced[i] for i in range(blob_count)]

    def _add_layer(self, graph, where, typeindex, type_name, name, bottoms, tops, pd, blob_map=None) -> None:
        blobs = blob_map if blob_map is not None else graph.blobs
        layer, entry = self._create_layer(typeindex, pd.get(31, 0))
        if layer is None:
            shown = type_name or f"index {typeindex}"
            raise ModelFormatError(f"{where}: layer type {shown} is not registered or not implemented")
        if not isinstance(layer, Layer):
            raise ModelFormatError(f"{where}: creator returned {type(layer).__name__}, not a Layer")
        li = len(graph.layers)
        layer.typeindex = typeindex
        if entry is not None:
            layer.type = entry.name or type_name
        elif type_name:
            layer.type = type_name
        layer.name = name
        layer.bottoms = list(bottoms)
        layer.tops = list(tops)
        layer.featmask = pd.get(31, 0)
        for t in tops:
            blobs[t].producer = li
        for b in bottoms:
            blobs[b].consumer = li
        graph.layers.append(layer)
        graph.entries.append(entry)
        self._apply_shape_hints(where, pd, layer, blobs)
        ret = _call(layer.load_param, pd)
        if ret != 0:
            raise ModelFormatError(f"{where}: {layer.type}.load_param failed ({ret})")

    @staticmethod
    def _apply_shape_hints(where, pd, layer, blobs) -> None:
        hints = pd.get(30, Mat())
        if not hints.empty():
            ints = np.asarray(hints).reshape(-1).view(np.int32)
            for j, t in enumerate(layer.tops):
                rec = ints[4 * j : 4 * j + 4]
                if len(rec) < 4:
                    break
                dims, w, h, c = (int(x) for x in rec)
                if dims not in (1, 2, 3) or min(w, h, c) < 1 or w * h * c > _MAX_HINT_ELEMENTS:
                    log.warning("%s: ignoring shape hint %s for top #%d", where, (dims, w, h, c), j)
                    continue
                blobs[t].shape = Mat(*(w, h, c)[:dims])
        layer.bottom_shapes = [blobs[b].shape for b in layer.bottoms]
        layer.top_shapes = [blobs[t].shape for t in layer.tops]

    def _install(self, graph: _Graph) -> None:
        self._blobs = graph.blobs
        self._layers = graph.layers
        self._entries = graph.entries
        counts = [0] * len(self._blobs)
        for layer in self._layers:
            for b in layer.bottoms:
                counts[b] += 1
        self._consumer_counts = counts
        self._input_indexes = [t for layer in self._layers if layer.type == "Input" for t in layer.tops]
        self._output_indexes = [i for i, b in enumerate(self._blobs) if b.consumer == -1]

    # -- load_model -------------------------------------------------------------------------
    def load_model(self, src) -> int:
        """Weights from a path, a file object, a DataReader or bytes."""
        fp = None
        try:
            dr, fp = _open_reader(src, "load_model")
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
        if not isinstance(mem, (bytes, bytearray, memoryview)):
            log.error("load_model_mem: expected bytes, got %s", type(mem).__name__)
            return -1
        return self.load_model(DataReaderFromMemory(mem))

    def _load_model(self, dr) -> int:
        if not self._layers:
            log.error("load_model: no layers, call load_param first")
            return -1
        self._destroy_pipelines()
        mb = ModelBinFromDataReader(dr)
        for i, layer in enumerate(self._layers):
            start = mb.offset
            ret = _call(layer.load_model, mb)
            if ret != 0:
                log.error(
                    "load_model: %s failed to load its weights (%s) at byte offset %d",
                    _desc(i, layer),
                    ret,
                    start,
                )
                return -1

        use_vk = bool(self.opt.use_vulkan_compute) and self._acquire_vkdev() is not None
        if self.opt.use_vulkan_compute and not use_vk:
            log.warning("load_model: no Vulkan device available; running on the CPU")
            self.opt.use_vulkan_compute = False
        gpu = _gpu() if use_vk else None
        if gpu is not None and self.opt.pipeline_cache is None:
            self._owned_cache = gpu.PipelineCache(self._vkdev)
            self.opt.pipeline_cache = self._owned_cache

        self._pipelines = True
        for i, layer in enumerate(self._layers):
            opt = get_layer_option(self.opt, layer)
            if use_vk and layer.support_vulkan and opt.use_vulkan_compute:
                layer.vkdev = self._vkdev
            ret = _call(layer.create_pipeline, opt)
            if ret != 0:
                log.error("load_model: %s create_pipeline failed (%s)", _desc(i, layer), ret)
                return -1

        if gpu is not None:
            cmd = gpu.VkCompute(self._vkdev)
            for i, layer in enumerate(self._layers):
                if layer.vkdev is None:
                    continue
                ret = _call(layer.upload_model, cmd, get_layer_option(self.opt, layer))
                if ret != 0:
                    log.error("load_model: %s upload_model failed (%s)", _desc(i, layer), ret)
                    return -1
            ret = cmd.submit_and_wait()
            if ret != 0:
                log.error("load_model: uploading weights to the GPU failed (%d)", ret)
                return -1
        self._gpu_ready = use_vk
        return 0

    def _destroy_pipelines(self) -> None:
        if not self._pipelines:
            return
        self._pipelines = False
        for layer in self._layers:
            try:
                layer.destroy_pipeline(get_layer_option(self.opt, layer))
            except Exception as e:  # noqa: BLE001 - teardown continues
                log.error("destroy_pipeline of %r raised %s: %s", layer.name, type(e).__name__, e)
            layer.vkdev = None
        self._gpu_ready = False

    # -- queries ----------------------------------------------------------------------------
    def blobs(self) -> list[Blob]:
        return list(self._blobs)

    def layers(self) -> list[Layer]:
        return list(self._layers)

    def input_indexes(self) -> list[int]:
        return list(self._input_indexes)

    def output_indexes(self) -> list[int]:
        return list(self._output_indexes)

    def input_names(self) -> list[str]:
        return [self._blobs[i].name for i in self._input_indexes]

    def output_names(self) -> list[str]:
        return [self._blobs[i].name for i in self._output_indexes]

    def find_blob_index_by_name(self, name: str) -> int:
        for i, b in enumerate(self._blobs):
            if b.name == name:
                return i
        return -1

    def find_layer_index_by_name(self, name: str) -> int:
        for i, layer in enumerate(self._layers):
            if layer.name == name:
                return i
        return -1

    # -- teardown ---------------------------------------------------------------------------
    def clear(self) -> None:
        """Destroy pipelines and layers, forget the graph and the pipeline cache the net made."""
        self._destroy_pipelines()
        for layer, entry in zip(self._layers, self._entries, strict=True):
            if entry is not None:
                try:
                    entry.destroy(layer)
                except Exception as e:  # noqa: BLE001
                    log.error("custom layer destroyer for %r raised %s: %s", layer.name, type(e).__name__, e)
        self._blobs = []
        self._layers = []
        self._entries = []
        self._consumer_counts = []
        self._input_indexes = []
        self._output_indexes = []
        if self._owned_cache is not None:
            try:
                self._owned_cache.clear()
            except Exception as e:  # noqa: BLE001
                log.error("clearing the net's pipeline cache raised %s: %s", type(e).__name__, e)
            if self.opt.pipeline_cache is self._owned_cache:
                self.opt.pipeline_cache = None
            self._owned_cache = None

    def create_extractor(self) -> Extractor:
        return Extractor(self)


def _unpack_fp32(m: Mat) -> Mat:
    """``m`` as fp32 with elempack 1 (a copy), as ``extract(type=0)`` hands out."""
    arr = np.asarray(m.tensor(), dtype=np.float32)
    p = m.elempack
    if p > 1:
        # the packed lanes belong to the outermost axis: move them next to it and merge
        arr = np.moveaxis(arr, -1, 1)
        arr = arr.reshape((arr.shape[0] * p,) + arr.shape[2:])
    return Mat.from_tensor(arr)


def _needs_unpack(m: Mat, layer: Layer | None = None) -> bool:
    if m.empty():
        return False
    packed = m.elempack > 1 and not (layer is not None and layer.support_packing)
    scalar = m.elemsize // max(1, m.elempack)
    narrow = scalar == 2 and not (
        layer is not None and (layer.support_fp16_storage or layer.support_bf16_storage)
    )
    return packed or narrow


class Extractor:
    """One inference over a Net: input blobs in, requested blobs out."""

    def __init__(self, net: Net) -> None:
        self._net = net
        self.opt = net.opt.copy()
        n = len(net._blobs)
        self._mats: list[Mat | None] = [None] * n
        self._vkmats: list = [None] * n
        self._pending = list(net._consumer_counts)
        # blobs whose memory a caller may still hold: never modified in place
        self._shared: set[int] = set()
        self._vk_garbage: list = []

    def __enter__(self) -> Extractor:
        return self

    def __exit__(self, *exc) -> None:
        self.clear()

    # -- options --------------------------------------------------------------------------
    def set_light_mode(self, enable: bool) -> None:
        self.opt.lightmode = bool(enable)

    def set_num_threads(self, num_threads: int) -> None:
        self.opt.num_threads = int(num_threads)

    def set_blob_allocator(self, allocator) -> None:
        self.opt.blob_allocator = allocator

    def set_workspace_allocator(self, allocator) -> None:
        self.opt.workspace_allocator = allocator

    def set_blob_vkallocator(self, allocator) -> None:
        self.opt.blob_vkallocator = allocator

    def set_workspace_vkallocator(self, allocator) -> None:
        self.opt.workspace_vkallocator = allocator

    def set_staging_vkallocator(self, allocator) -> None:
        self.opt.staging_vkallocator = allocator

    def set_option(self, opt: Option) -> None:
        self.opt = opt.copy()

    def clear(self) -> None:
        n = len(self._mats)
        self._mats = [None] * n
        self._vkmats = [None] * n
        self._pending = list(self._net._consumer_counts)
        self._shared.clear()
        self._vk_garbage.clear()

    # -- blob lookup ------------------------------------------------------------------------
    def _blob_index(self, key, what: str) -> int:
        net = self._net
        if isinstance(key, str):
            index = net.find_blob_index_by_name(key)
            if index < 0:
                log.error(
                    "%s: no blob named %r; inputs: %s, outputs: %s",
                    what, key, net.input_names(), net.output_names(),
                )  # fmt: skip
            return index
        try:
            index = int(key)
        except (TypeError, ValueError):
            log.error("%s: blob must be a name or an index, got %r", what, key)
            return -1
        if not 0 <= index < len(self._mats):
            log.error("%s: blob index %d out of range 0..%d", what, index, len(self._mats) - 1)
            return -1
        return index

    # -- input / extract ----------------------------------------------------------------------
    def input(self, key, mat: Mat) -> int:
        index = self._blob_index(key, "input")
        if index < 0:
            return -1
        if not isinstance(mat, Mat):
            log.error("input: expected a Mat, got %s", type(mat).__name__)
            return -1
        m = Mat()
        m.share_from(mat)
        self._mats[index] = m
        self._vkmats[index] = None
        self._shared.add(index)
        return 0

    def extract(self, key, feat_or_type=None, type: int = 0):  # noqa: A002 - PyPI's name
        """``extract(blob) -> (ret, Mat)``; ``extract(blob, feat) -> ret`` fills ``feat``."""
        feat = None
        if isinstance(feat_or_type, Mat):
            feat = feat_or_type
        elif feat_or_type is not None:
            type = int(feat_or_type)
        ret, out = self._extract(key, type)
        if feat is None:
            return ret, out
        if ret == 0:
            feat.share_from(out)
        return ret

    def _extract(self, key, type_: int):
        index = self._blob_index(key, "extract")
        if index < 0:
            return -1, Mat()
        try:
            if self._mats[index] is None:
                if self._net._gpu_ready and self.opt.use_vulkan_compute:
                    ret = self._extract_vk(index)
                else:
                    ret = self._produce(index)
                if ret != 0:
                    return ret, Mat()
        except Exception as e:  # noqa: BLE001 - a layer bug must not escape as an exception
            log.error("extract: %s: %s", type(e).__name__, e)
            return -1, Mat()
        m = self._mats[index]
        if m is None:
            return -1, Mat()
        self._shared.add(index)
        if type_ == 0 and _needs_unpack(m):
            m = _unpack_fp32(m)
        out = Mat()
        out.share_from(m)
        return 0, out

    def _producer_of(self, index: int) -> int:
        """The layer that makes blob ``index``, or -1 (logged) when only ``input()`` can."""
        blob = self._net._blobs[index]
        producer = blob.producer
        if producer < 0 or self._net._layers[producer].type == "Input":
            # an Input layer only passes on what ex.input() gave it (MemoryData and the like,
            # which have no bottoms either, do produce their blob)
            log.error(
                "extract: blob %r has no data: give it with ex.input(%r, mat) (inputs: %s)",
                blob.name,
                blob.name,
                ", ".join(self._net.input_names()) or "none",
            )
            return -1
        return producer

    def _produce(self, index: int) -> int:
        producer = self._producer_of(index)
        return -1 if producer < 0 else self._forward_layer(producer)

    # -- CPU forward (seed 003: producers of missing bottoms first) --------------------------------
    def _forward_layer(self, li: int) -> int:
        net = self._net
        layer = net._layers[li]
        for b in layer.bottoms:
            if self._mats[b] is None:
                ret = self._produce(b)
                if ret != 0:
                    return ret
        opt = get_layer_option(self.opt, layer)
        return self._do_forward_layer(li, layer, opt)

    def _take_bottom(self, b: int, layer: Layer, opt, inplace: bool) -> Mat:
        m = self._mats[b]
        assert m is not None  # _forward_layer produced every bottom first
        if _needs_unpack(m, layer):
            return _unpack_fp32(m)
        if inplace and (self._pending[b] > 1 or b in self._shared):
            return m.clone(opt.blob_allocator)
        return m

    def _consumed(self, layer: Layer, opt) -> None:
        for b in layer.bottoms:
            self._pending[b] -= 1
            if opt.lightmode and self._pending[b] <= 0:
                self._mats[b] = None
                if self._vkmats[b] is not None:
                    self._vk_garbage.append(self._vkmats[b])
                    self._vkmats[b] = None

    def _do_forward_layer(self, li: int, layer: Layer, opt) -> int:
        inplace = bool(opt.lightmode and layer.support_inplace)
        if layer.one_blob_only:
            bottom = self._take_bottom(layer.bottoms[0], layer, opt, inplace)
            if inplace:
                ret = _call(layer.forward_inplace, bottom, opt)
                top = bottom
            else:
                top = Mat()
                ret = _call(layer.forward, bottom, top, opt)
            if ret != 0:
                log.error("forward: %s failed (%s)", _desc(li, layer), ret)
                return ret if isinstance(ret, int) else -1
            self._consumed(layer, opt)
            self._mats[layer.tops[0]] = top
            return 0
        bottoms = [self._take_bottom(b, layer, opt, inplace) for b in layer.bottoms]
        if inplace:
            ret = _call(layer.forward_inplace, bottoms, opt)
            tops = bottoms
        else:
            tops = [Mat() for _ in layer.tops]
            ret = _call(layer.forward, bottoms, tops, opt)
        if ret != 0:
            log.error("forward: %s failed (%s)", _desc(li, layer), ret)
            return ret if isinstance(ret, int) else -1
        self._consumed(layer, opt)
        for t, m in zip(layer.tops, tops, strict=False):
            self._mats[t] = m
        return 0

    # -- Vulkan forward -------------------------------------------------------------------------
    def _extract_vk(self, index: int) -> int:
        gpu = _gpu()
        cmd = gpu.VkCompute(self._net._vkdev)
        producer = self._producer_of(index)
        if producer < 0:
            return -1
        if self._vkmats[index] is None:
            ret = self._forward_layer_vk(producer, cmd, gpu)
            if ret != 0:
                return ret
        if self._mats[index] is None:
            m = Mat()
            cmd.record_download(self._vkmats[index], m, self.opt)
            ret = cmd.submit_and_wait()
            if ret != 0:
                log.error("extract: GPU submit failed (%d)", ret)
                return ret
            self._mats[index] = m
        else:
            ret = cmd.submit_and_wait()
        self._vk_garbage.clear()
        return ret

    def _forward_layer_vk(self, li: int, cmd, gpu) -> int:
        net = self._net
        layer = net._layers[li]
        for b in layer.bottoms:
            if self._mats[b] is None and self._vkmats[b] is None:
                producer = self._producer_of(b)
                if producer < 0:
                    return -1
                ret = self._forward_layer_vk(producer, cmd, gpu)
                if ret != 0:
                    return ret
        opt = get_layer_option(self.opt, layer)
        if layer.support_vulkan and layer.vkdev is not None and opt.use_vulkan_compute:
            return self._do_forward_layer_vk(li, layer, cmd, gpu, opt)
        # a CPU layer: bring GPU-only bottoms back first
        downloads = False
        for b in layer.bottoms:
            if self._mats[b] is None:
                m = Mat()
                cmd.record_download(self._vkmats[b], m, opt)
                self._mats[b] = m
                downloads = True
        if downloads:
            ret = cmd.submit_and_wait()
            if ret != 0:
                log.error("forward: GPU submit before layer %r failed (%d)", layer.name, ret)
                return ret
            cmd.reset()
            self._vk_garbage.clear()
        return self._do_forward_layer(li, layer, opt)

    def _do_forward_layer_vk(self, li: int, layer: Layer, cmd, gpu, opt) -> int:
        for b in layer.bottoms:
            if self._vkmats[b] is None:
                vk = gpu.VkMat()
                cmd.record_upload(self._mats[b], vk, opt)
                self._vkmats[b] = vk
        inplace = bool(opt.lightmode and layer.support_inplace)

        def bottom_vk(b):
            m = self._vkmats[b]
            # device blobs are never handed to callers (extract downloads), so only
            # other pending consumers force a copy
            if inplace and self._pending[b] > 1:
                c = gpu.VkMat()
                cmd.record_clone(m, c, opt)
                return c
            return m

        if layer.one_blob_only:
            bottom = bottom_vk(layer.bottoms[0])
            if inplace:
                ret = _call(layer.forward_inplace_vk, bottom, cmd, opt)
                top = bottom
            else:
                top = gpu.VkMat()
                ret = _call(layer.forward_vk, bottom, top, cmd, opt)
            tops = [top]
        else:
            bottoms = [bottom_vk(b) for b in layer.bottoms]
            if inplace:
                ret = _call(layer.forward_inplace_vk, bottoms, cmd, opt)
                tops = bottoms
            else:
                tops = [gpu.VkMat() for _ in layer.tops]
                ret = _call(layer.forward_vk, bottoms, tops, cmd, opt)
        if ret != 0:
            log.error("forward: %s failed on the GPU (%s)", _desc(li, layer), ret)
            return ret if isinstance(ret, int) else -1
        self._consumed(layer, opt)
        for t, m in zip(layer.tops, tops, strict=False):
            self._vkmats[t] = m
            self._mats[t] = None
        return 0
