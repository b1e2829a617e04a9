"""Net: the loaded graph of layers and blobs, custom layer registration, weights,
pipelines and the Vulkan device.

The structure follows ncnn's: a Net owns blobs (with their producer and
consumer layers) and layers; an Extractor (``extractor.py``) runs them through executors
that see the Net only through a ``NetView`` (``view.py``). Loaders never raise: they return
0 / -1 and log one line that says which line, layer or byte offset was wrong. The Vulkan
modules are reached only through ``vulkan_forward._gpu()``, so a CPU-only run never imports
``ncnn_c.gpu`` (nor ``vulkan``).
"""

from __future__ import annotations

import logging
import os
import sys
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from .. import layer as layer_mod
from ..datareader import DataReaderFromMemory
from ..errors import ModelFormatError
from ..layer import CUSTOM_BIT, LAYER_TYPES, Layer
from ..layer.vulkan import is_cpu_device
from ..modelbin import ModelBinFromDataReader
from ..option import FEAT_NO_VULKAN, Option, get_layer_option
from . import vulkan_forward
from .extractor import Extractor
from .graph import MAX_LAYER_COUNT, Blob, CustomEntry, Graph, call_hook, desc
from .native import NativeExecutor, NativePlans
from .parse import gc_paused, open_reader, parse_binary, parse_text
from .reference import ReferenceExecutor
from .view import NetView
from .vulkan_forward import ReplayCache, VulkanExecutor

log = logging.getLogger("ncnn_c")


class Net:
    """ncnn::Net. ``opt`` is the net's own Option: set flags on it before load_param."""

    def __init__(self) -> None:
        self.opt = Option()
        # the graph, its caches and the Vulkan device, as the executors read them: blobs,
        # layers, consumer counts, input indexes, plans, per-layer options, the native plans
        # (CPU, per input shape: they hold what they read of the weights, so they go with
        # the layers) and the recorded extracts (Vulkan replay, per input shape)
        self._view = NetView(NativePlans(), ReplayCache())
        reference = ReferenceExecutor(self._view)
        # the CPU tries the native plan first, then the numpy layers
        # the backends an extract tries, in order: each declines (None) what it does not run
        self._executors = (
            VulkanExecutor(self._view, reference),
            NativeExecutor(self._view, reference),
            reference,
        )
        self._entries: list[CustomEntry | None] = []  # the custom creator of each layer
        self._output_indexes: list[int] = []
        self._custom: list[CustomEntry | None] = []  # index = typeindex & ~CUSTOM_BIT
        self._overwrite: dict[int, CustomEntry] = {}
        self._owned_cache = None
        self._pipelines = False
        # the Vulkan device being made on a thread (set_vulkan_device(index), load_param):
        # its instance and device take long on some drivers (0.4 s on an H200) while the
        # param is parsed meanwhile; resolved by _vkdev at first need
        self._vkdev_pending: Future | None = None
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
        return self._view.native_enabled

    @native_plan.setter
    def native_plan(self, on: bool) -> None:
        self._view.native_enabled = on

    @property
    def replay_capacity(self) -> int:
        """Vulkan: the most input shapes whose recorded extracts are kept for replay (each
        keeps its blobs' GPU memory); 0: no replay."""
        return self._view.replay_capacity

    @replay_capacity.setter
    def replay_capacity(self, n: int) -> None:
        self._view.replay_capacity = n

    @property
    def _vkdev(self) -> Any:
        """The VulkanDevice (kept in the view, where the Vulkan executor reads it); waits for
        one being made on a thread."""
        pending = self._vkdev_pending
        if pending is not None:
            self._vkdev_pending = None
            self._view.vkdev = pending.result()
        return self._view.vkdev

    @_vkdev.setter
    def _vkdev(self, vkdev: Any) -> None:
        self._vkdev_pending = None
        self._view.vkdev = vkdev

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
        if device is None:
            self._vkdev = None
            return
        if isinstance(device, int):
            # made on a thread: the caller goes on (load_param) while the driver starts
            self._make_vkdev(self._device_at, device)
            return
        self._vkdev = device

    def vulkan_device(self):
        """The VulkanDevice the net runs on, or None (no GPU chosen or available)."""
        return self._vkdev

    def _make_vkdev(self, find: Callable[[Any, Any], Any], arg) -> None:
        """Start ``find(gpu, arg)`` (the device, or None: logged) on a thread of its own; the
        device module is imported here first, so that two threads never import it at once.
        Only that module: the other GPU modules are imported by this thread while the driver
        starts on the other one."""
        try:
            gpu = vulkan_forward._devices()
        except Exception:  # noqa: BLE001 - reported by find, the net stays on the CPU
            self._vkdev = find(None, arg)
            return
        pending: Future = Future()

        def run() -> None:
            try:
                pending.set_result(find(gpu, arg))
            except BaseException as e:  # noqa: BLE001 - handed to the thread that waits
                pending.set_exception(e)

        self._vkdev = None
        self._vkdev_pending = pending
        threading.Thread(target=run, name="ncnn_c-vulkan-device").start()

    @staticmethod
    def _device_at(gpu, index: int):
        """set_vulkan_device(index): that GPU's device, None (logged) when there is none."""
        try:
            if gpu is None:
                gpu = vulkan_forward._devices()
            return gpu.get_gpu_device(index)
        except Exception as e:  # noqa: BLE001 - reported, the net stays on the CPU
            log.error("set_vulkan_device: no Vulkan device %d: %s", index, e)
            return None

    @staticmethod
    def _default_device(gpu, index):
        """The device of GPU ``index`` (None or < 0: the default GPU); None when no GPU."""
        try:
            if gpu is None:
                gpu = vulkan_forward._devices()
            if gpu.get_gpu_count() <= 0:
                return None
            if index is None or index < 0:
                index = gpu.get_default_gpu_index()
            return gpu.get_gpu_device(index)
        except Exception as e:  # noqa: BLE001 - any failure means "no GPU": fall back
            log.warning("Vulkan unavailable (%s: %s)", type(e).__name__, e)
            return None

    def _start_vkdev(self) -> None:
        """Start making the device ``opt`` asks for on a thread, unless one is there or coming."""
        if self._vkdev_pending is None and self._view.vkdev is None:
            self._make_vkdev(self._default_device, self.opt.vulkan_device_index)

    def _acquire_vkdev(self):
        if self._vkdev is None:  # none chosen, or set_vulkan_device's GPU has none
            self._vkdev = self._default_device(None, self.opt.vulkan_device_index)
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
        # The device is made on a thread while the param is parsed, with the layers it asks
        # for (the GPU forms); should there be no device after all, it is parsed again, for
        # the CPU. Only where that second parse is as the first: a source read again from its
        # start, and no application layer whose creator would be called twice.
        ahead = (
            bool(self.opt.use_vulkan_compute)
            and self._view.vkdev is None
            and isinstance(src, (str, os.PathLike, bytes, bytearray, memoryview))
            and not self._custom
            and not self._overwrite
        )
        if ahead:
            self._start_vkdev()
        else:
            self._check_vulkan(what)
        error = self._parse(what, src, parse, graph)
        if ahead:
            pending = self._vkdev_pending
            if error is None and pending is not None and not pending.done():
                # the driver is still at work: import what load_model and a PipelineCache
                # need now, instead of after it (20-40 ms of a warm start on the H200 host)
                vulkan_forward.import_gpu_modules()
            for_gpu = self.opt.use_vulkan_compute
            self._check_vulkan(what)
            if error is None and for_gpu and not self.opt.use_vulkan_compute:
                graph = Graph()  # the GPU forms of built-in layers only: nothing to destroy
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
        mb = ModelBinFromDataReader(dr, log_errors=False)  # _read_weights logs, naming the layer

        # the device first: with a pool, GPU layers build while later weights are still read
        use_vk = bool(self.opt.use_vulkan_compute) and self._acquire_vkdev() is not None
        if self.opt.use_vulkan_compute and not use_vk:
            log.warning("load_model: no Vulkan device available; running on the CPU")
            self.opt.use_vulkan_compute = False
        gpu = vulkan_forward._gpu() if use_vk else None
        if gpu is not None and self.opt.pipeline_cache is None:
            self._owned_cache = gpu.PipelineCache(self._vkdev)
            self.opt.pipeline_cache = self._owned_cache
        if gpu is not None:
            vulkan_forward.mask_device_features(self.opt, self._vkdev)
        opts = [get_layer_option(self.opt, layer) for layer in self._view.layers]
        on_gpu = [
            i
            for i, layer in enumerate(self._view.layers)
            if use_vk and layer.support_vulkan and opts[i].use_vulkan_compute
        ]
        if gpu is not None:  # int8 layers quantize fp32 blobs, as on the CPU: storage per layer
            vulkan_forward.keep_fp32_before_int8(self._view, on_gpu, opts)
            opts = [get_layer_option(self.opt, layer) for layer in self._view.layers]
        threads = self._pipeline_threads(len(on_gpu)) if use_vk else 1
        if gpu is not None and threads > 1:
            ret = self._load_streamed(mb, gpu, opts, on_gpu, threads)
        else:
            ret = self._load_serial(mb, gpu, opts, on_gpu)
        if ret != 0:
            return ret
        if gpu is not None:
            self._view.vk_layout = vulkan_forward.create_layout_pipeline(self._vkdev, self.opt)
            if self._view.vk_layout is None:
                return -1
        self._view.gpu_ready = use_vk
        self._view.weights_loaded = True
        left = dr.remaining_bytes()
        if left:  # ncnn loads such a file silently, and its later layers get garbage weights
            log.warning(
                "load_model: %d trailing bytes after the last weight (byte offset %d): "
                "the .bin does not match the .param",
                left, mb.offset,
            )  # fmt: skip
        return 0

    def _read_weights(self, mb, i: int, layer) -> int:
        """One layer's load_model; a failure is one log line, with ModelBin's reason."""
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

    def _load_serial(self, mb, gpu, opts: list, on_gpu: list[int]) -> int:
        """Every layer's weights, then every create_pipeline, then the uploads: one thread."""
        for i, layer in enumerate(self._view.layers):
            if self._read_weights(mb, i, layer) != 0:
                return -1
        self._pipelines = True
        self._view.forget_plans()  # create_pipeline may change a layer's flags
        for i in on_gpu:
            self._view.layers[i].vkdev = self._vkdev
        if self._create_pipelines(opts) != 0:
            return -1
        if gpu is not None and self._upload_weights(gpu) != 0:
            return -1
        return 0

    def _load_streamed(self, mb, gpu, opts: list, on_gpu: list[int], threads: int) -> int:
        """Weights read in order on this thread; as soon as a GPU layer has its weights, a
        pool thread creates its pipelines and uploads them (a VkCompute per worker), while
        this thread goes on reading: file reads, numpy repacks, pipeline creation and
        allocation overlap (all release the GIL). CPU layers' create_pipeline follows on this
        thread. Failures are reported as a serial load would: a weight failure first, then
        the first failing layer in layer order."""
        self._pipelines = True
        self._view.forget_plans()  # create_pipeline may change a layer's flags
        gpu_set = set(on_gpu)
        local = threading.local()
        cmds: list = []
        cmds_lock = threading.Lock()

        def build(i: int):
            layer = self._view.layers[i]
            ret = call_hook(layer.create_pipeline, opts[i])
            if ret != 0:
                return "create_pipeline", ret
            cmd = getattr(local, "cmd", None)
            if cmd is None:
                cmd = local.cmd = gpu.VkCompute(self._vkdev)
                with cmds_lock:
                    cmds.append(cmd)
            ret = call_hook(layer.upload_model, cmd, get_layer_option(self.opt, layer))
            return ("upload_model", ret) if ret != 0 else None

        total = len(self._view.layers)
        done = 0

        def tick() -> None:
            nonlocal done
            done += 1
            if self.load_progress is not None:
                self.load_progress(done, total)

        futures: dict[int, Future] = {}
        failed = None
        read_failed = False
        pool = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="ncnn_c-pipeline")
        try:
            for i, layer in enumerate(self._view.layers):
                if self._read_weights(mb, i, layer) != 0:
                    read_failed = True
                    break
                if i in gpu_set:
                    layer.vkdev = self._vkdev
                    futures[i] = pool.submit(build, i)
            if not read_failed:
                for i, layer in enumerate(self._view.layers):
                    if i in gpu_set:
                        continue
                    ret = call_hook(layer.create_pipeline, opts[i])
                    if ret != 0:
                        failed = (i, "create_pipeline", ret)
                        break
                    tick()
                for i, fut in futures.items():
                    r = fut.result()
                    if r is not None and (failed is None or i < failed[0]):
                        failed = (i, *r)
                    if failed is None:
                        tick()
        finally:
            # after a failure, builds not yet started are cancelled; running ones finish
            pool.shutdown(wait=True, cancel_futures=read_failed or failed is not None)
        ret = 0
        for cmd in cmds:
            if not read_failed and failed is None and ret == 0:
                ret = cmd.submit_and_wait()
            else:
                cmd.reset()  # nothing of a failed load is submitted
        if read_failed:
            return -1
        if failed is not None:
            i, stage, r = failed
            log.error("load_model: %s %s failed (%s)", desc(i, self._view.layers[i]), stage, r)
            return -1
        if ret != 0:
            log.error("load_model: uploading weights to the GPU failed (%d)", ret)
            return -1
        return 0

    def _upload_weights(self, gpu) -> int:
        """upload_model of every GPU layer into one VkCompute, then one submit."""
        cmd = gpu.VkCompute(self._vkdev)
        for i, layer in enumerate(self._view.layers):
            if layer.vkdev is None:
                continue
            ret = call_hook(layer.upload_model, cmd, get_layer_option(self.opt, layer))
            if ret != 0:
                cmd.reset()  # nothing of a failed load is submitted
                log.error("load_model: %s upload_model failed (%s)", desc(i, layer), ret)
                return -1
        ret = cmd.submit_and_wait()
        if ret != 0:
            log.error("load_model: uploading weights to the GPU failed (%d)", ret)
            return -1
        return 0

    def _pipeline_threads(self, gpu_layers: int) -> int:
        """How many threads create the GPU layers' pipelines in this load_model.

        ``net.pipeline_threads`` (or ``NCNN_C_PIPELINE_THREADS``) decides when set; 1 is
        serial. Otherwise the heuristic (docs/cache-startup.md, "Parallel pipeline creation"):
        parallel where there are at least 4 GPU layers and more than one core: up to 8 threads
        on a GPU, whose driver compiles in vkCreateComputePipelines; 2 on a CPU implementation
        such as lavapipe, whose vkCreateComputePipelines runs Mesa's NIR passes (its LLVM
        compile waits for the first dispatch) on the same cores as everything else.
        """
        n = self.pipeline_threads
        if n is None:
            env = os.environ.get("NCNN_C_PIPELINE_THREADS", "").strip()
            if env:
                try:
                    n = int(env)
                except ValueError:
                    log.warning("NCNN_C_PIPELINE_THREADS=%r is not an integer: ignored", env)
        cores = os.cpu_count() or 1
        if n is None:
            cpu_device = is_cpu_device(self._vkdev.info)
            n = 1 if gpu_layers < 4 else min(2 if cpu_device else 8, cores)
        return max(1, min(int(n), max(gpu_layers, 1)))

    def _create_pipelines(self, opts: list) -> int:
        """create_pipeline of every layer, in order, on this thread."""
        total = len(self._view.layers)
        for i, layer in enumerate(self._view.layers):
            ret = call_hook(layer.create_pipeline, opts[i])
            if ret != 0:
                log.error("load_model: %s create_pipeline failed (%s)", desc(i, layer), ret)
                return -1
            if self.load_progress is not None:
                self.load_progress(i + 1, total)
        return 0

    def _destroy_pipelines(self) -> None:
        if not self._pipelines:
            return
        self._pipelines = False
        self._view.replays.clear()
        self._view.native_plans.clear()
        for layer in self._view.layers:
            try:
                layer.destroy_pipeline(get_layer_option(self.opt, layer))
            except Exception as e:  # noqa: BLE001 - teardown continues
                log.error("destroy_pipeline of %r raised %s: %s", layer.name, type(e).__name__, e)
            layer.vkdev = None
        self._view.vk_layout = None
        self._view.gpu_ready = False

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
        self._destroy_pipelines()
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
        if self._owned_cache is not None:
            try:
                self._owned_cache.clear()
            except Exception as e:  # noqa: BLE001
                log.error("clearing the net's pipeline cache raised %s: %s", type(e).__name__, e)
            if self.opt.pipeline_cache is self._owned_cache:
                self.opt.pipeline_cache = None
            self._owned_cache = None

    def create_extractor(self) -> Extractor:
        """A new Extractor: one inference's inputs and results, with a copy of ``opt``."""
        return Extractor(self)
