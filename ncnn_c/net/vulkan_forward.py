"""The Vulkan side of the Extractor: layers recorded into one VkCompute, CPU layers in between.

The GPU modules are imported only through ``_gpu()`` (tests replace it with a fake), so a
CPU-only run never imports ``ncnn_c.gpu`` nor ``vulkan``. Blobs live in ``_vkmats`` while
on the device; a CPU layer gets its GPU-only bottoms downloaded first, a GPU layer gets
its host-only bottoms uploaded.

Replay. Recording an extract costs Python work per layer (shapes, bindings, descriptor
writes: 50-150 us each), which on a fast GPU is most of the latency. What an extract records
depends only on the net, the option values, the target blob and the shapes of the given
inputs, never on their values. So the first extract of a shape keeps what it recorded (a
``Recording``: its command buffers, every VkMat it touched, where it wrote each input and
where each download comes from) and later extracts of the same shape write their inputs
there, submit the same command buffers and copy the results out: no layer code runs. CPU
layers between GPU layers split a recording into segments and run as usual in between;
a CPU layer whose output shape depends on the data (detection post-processing feeding a
GPU layer) is noticed at its upload and the extract falls back to recording afresh.

A recording is used by one extractor at a time (it holds the recording until ``clear()``
or until it is dropped, because its blobs stay in the recording's buffers), so a few are
kept per shape for concurrent extractors; later extracts of the same extractor record (and
then replay) as children of the first. ``Net.replay_capacity`` bounds the shapes kept (0
turns replay off).
"""

from __future__ import annotations

import logging
import threading
import types
from collections import OrderedDict
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..layer import Layer
from ..mat import Mat
from ..option import Option
from .graph import call_hook, desc

if TYPE_CHECKING:
    from .core import Net

log = logging.getLogger("ncnn_c")


def _gpu() -> types.SimpleNamespace:
    """The GPU modules, imported on first use (tests may replace this function)."""
    from ..gpu import command, compiler, device, pipeline, pipelinecache, vkmat
    from ..layer import vulkan as vklayer

    return types.SimpleNamespace(
        get_gpu_count=device.get_gpu_count,
        get_default_gpu_index=device.get_default_gpu_index,
        get_gpu_device=device.get_gpu_device,
        PipelineCache=pipelinecache.PipelineCache,
        Pipeline=pipeline.Pipeline,
        VkCompute=command.VkCompute,
        VkMat=vkmat.VkMat,
        effective_flags=compiler.effective_flags,
        layer=vklayer,
    )


def mask_device_features(opt: Option, vkdev) -> None:
    """Switch off the shader features ``vkdev`` lacks, as ncnn's Net does at load time, so
    every layer sees (and every cache key holds) what really runs."""
    info = getattr(vkdev, "info", None)
    effective_flags = getattr(_gpu(), "effective_flags", None)
    if info is None or effective_flags is None:
        return
    for name, on in effective_flags(opt.shader_bits(), info).items():
        setattr(opt, name, on)
    # fp16 arithmetic without fp16 blobs is not what the user asked for (ncnn's rule)
    if not opt.use_fp16_packed and not opt.use_fp16_storage:
        opt.use_fp16_arithmetic = False


def create_layout_pipeline(net: Net) -> int:
    """The one pipeline every blob-form conversion of ``net`` uses (packing.comp), made in
    load_model so that the first inference creates and compiles nothing."""
    gpu = _gpu()
    if not hasattr(gpu, "Pipeline"):
        return 0  # a stand-in GPU module set (tests): blobs stay fp32 elempack 1
    pipeline = gpu.Pipeline(net._vkdev)
    pipeline.set_local_size_xyz(*gpu.layer.LOCAL_1D)
    if pipeline.create("packing", gpu.layer.without_shader_bits(net.opt), []) != 0:
        log.error("load_model: cannot create the GPU layout conversion pipeline")
        return -1
    net._vk_layout = pipeline
    return 0


def _host_view(address: int, n: int):
    from ..gpu._vk import host_view

    return host_view(address, n)


def _signature(m: Mat) -> tuple:
    return (m.dims, m.w, m.h, m.d, m.c, m.elemsize, m.elempack)


class _Segment:
    """One command buffer of a recording: where each upload's bytes go, which blob each
    download fills."""

    __slots__ = ("cmd", "uploads", "downloads")

    def __init__(self, cmd) -> None:
        self.cmd = cmd
        self.uploads: list[tuple[int, int, int, tuple]] = []  # (blob, address, nbytes, signature)
        self.downloads: list[int] = []  # blob of each download, in recording order


class Recording:
    """An extract's GPU work kept for replay (see the module docstring)."""

    __slots__ = ("lock", "steps", "final", "children", "broken")

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.steps: list[_Segment | int] = []  # segments, and CPU layer indexes between them
        # the extractor's state afterwards: blobs with a host Mat, _vkmats, _pending, _shared
        self.final: tuple | None = None
        # (the next extract's target, its LayerOptions) -> its recording
        self.children: dict[tuple, Recording] = {}
        self.broken = False  # its replay met a different shape: never replayed again

    def destroy(self) -> None:
        """Free its command buffers now, or, while an extractor holds it, mark it never to
        be replayed again (they are freed with it)."""
        self.broken = True
        if not self.lock.acquire(blocking=False):
            return
        try:
            self._destroy()
        finally:
            self.lock.release()

    def _destroy(self) -> None:
        for child in self.children.values():
            child._destroy()
        self.children = {}
        for step in self.steps:
            if isinstance(step, _Segment):
                step.cmd.destroy()
        self.steps = []
        self.final = None


class ReplayCache:
    """The recordings of one Net: up to ``per_shape`` per (target, options, input shapes)
    key, the ``capacity`` keys used last."""

    per_shape = 4

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._roots: OrderedDict[tuple, list[Recording]] = OrderedDict()
        # extracts recorded for replay, and extracts replayed (roots and children)
        self.recorded = 0
        self.replayed = 0

    def take(self, key: tuple, capacity: int) -> tuple[Recording | None, bool]:
        """(a recording to replay, False), (a new one to record into, True), or (None, False)
        when every recording of ``key`` is in use and no more may be made. The returned
        recording is locked by the caller."""
        with self._lock:
            recs = self._roots.get(key)
            if recs is None:
                recs = self._roots[key] = []
                while len(self._roots) > capacity and self._evict(key):
                    pass
            else:
                self._roots.move_to_end(key)
            for rec in list(recs):
                if rec.lock.acquire(blocking=False):
                    if not rec.broken:
                        return rec, False
                    recs.remove(rec)  # never replayed again: free it
                    rec._destroy()
                    rec.lock.release()
            if len(recs) >= self.per_shape:
                return None, False
            rec = Recording()
            rec.lock.acquire()
            recs.append(rec)
            return rec, True

    def drop(self, key: tuple, rec: Recording) -> None:
        """Forget ``rec`` (its recording failed); the caller holds its lock."""
        with self._lock:
            recs = self._roots.get(key)
            if recs is not None and rec in recs:
                recs.remove(rec)
        rec._destroy()
        rec.broken = True
        rec.lock.release()

    def _evict(self, keep: tuple) -> bool:
        """Drop the least recently used key (not ``keep``) whose recordings are all idle."""
        for key, recs in self._roots.items():
            if key != keep and all(not r.lock.locked() for r in recs):
                del self._roots[key]
                for r in recs:
                    r.destroy()
                return True
        return False

    def __len__(self) -> int:
        return sum(len(recs) for recs in self._roots.values())

    def clear(self) -> None:
        with self._lock:
            roots, self._roots = self._roots, OrderedDict()
        for recs in roots.values():
            for r in recs:
                r.destroy()


class _Run:
    """One extract's recording state: the VkCompute being recorded, and the Recording
    (with its current segment) when the work is kept for replay."""

    __slots__ = ("gpu", "vkdev", "cmd", "rec", "seg")

    def __init__(self, gpu, vkdev, rec: Recording | None) -> None:
        self.gpu = gpu
        self.vkdev = vkdev
        self.rec = rec
        self.cmd: Any = None  # a VkCompute (or a test's stand-in)
        self.seg: _Segment | None = None
        self._new_cmd()

    def _new_cmd(self) -> None:
        if self.rec is None:
            self.cmd = self.gpu.VkCompute(self.vkdev)
        else:
            self.cmd = self.gpu.VkCompute(self.vkdev, reusable=True)
            self.seg = _Segment(self.cmd)
            self.rec.steps.append(self.seg)

    def submit(self) -> int:
        """Run what is recorded; a kept recording then starts a new segment."""
        ret = self.cmd.submit_and_wait()
        if ret == 0 and self.rec is not None:
            self._new_cmd()
        elif ret == 0:
            self.cmd.reset()
        return ret

    def cpu_layer(self, li: int) -> None:
        # its inputs are on the host already, so at replay it runs before the segment being
        # recorded now (which may upload its output)
        if self.rec is not None:
            self.rec.steps.insert(len(self.rec.steps) - 1, li)

    def uploaded(self, blob: int, where, sig: tuple) -> None:
        if self.seg is not None and where is not None:
            self.seg.uploads.append((blob, where[0], where[1], sig))

    def downloaded(self, blob: int) -> None:
        if self.seg is not None:
            self.seg.downloads.append(blob)


class VulkanForward:
    """Mixed into Extractor; uses its ``_mats``, ``_vkmats``, ``_pending``, ``_run_plan`` ..."""

    _net: Net
    opt: Option
    _mats: list
    _vkmats: list
    _pending: list[int]
    _shared: set[int]
    _partial: bool
    _vk_garbage: list
    _run_plan: Callable[..., int]
    _forward_cpu: Callable[..., int]
    _consumed: Callable[..., None]
    _layer_options: Callable[[], list]
    # replay: the root recording this extractor holds, the node its state now matches
    # (None once an input() or a plain extract made it differ), and that node's key
    _held: Recording | None = None
    _held_key: tuple | None = None
    _cursor: Recording | None = None

    def _release_replay(self) -> None:
        """Give back the recording this extractor holds (its state must not use it any more)."""
        held = self._held
        self._cursor = None
        if held is not None:
            self._held = self._held_key = None
            held.lock.release()

    def _replay_key(self, index: int) -> tuple | None:
        """The key of a fresh extractor's extract of ``index``: target, option values (the
        net's LayerOptions object, replaced whenever they change; held by the key, so its
        identity is never reused) and the given inputs' shapes. None when not fresh."""
        if self._partial:
            return None
        self._layer_options()  # make sure _layer_opts is for the current option values
        # a fresh extractor's shared blobs are exactly the ones given with input()
        mats = self._mats
        inputs = tuple((b, _signature(mats[b])) for b in sorted(self._shared) if mats[b] is not None)
        return (index, self._net._layer_opts, inputs)

    def _extract_vk_held(self, index: int) -> int:
        """``_extract_vk`` holding a use of the device and of the pipeline cache, so neither
        frees a handle while this extract records or runs (gpu/lifetime.py); -1 when one of
        them is destroyed or going."""
        counts = (getattr(self._net._vkdev, "uses", None), getattr(self.opt.pipeline_cache, "uses", None))
        held = []
        try:
            for c in counts:
                if c is None:
                    continue
                if not c.enter():
                    log.error(
                        "extract: the %s was destroyed or cleared, or is being (load the net again)", c.what
                    )
                    return -1
                held.append(c)
            return self._extract_vk(index)
        finally:
            for c in reversed(held):
                c.exit()

    def _extract_vk(self, index: int) -> int:
        gpu = _gpu()
        net = self._net
        rec = None
        key = None
        child_key = None
        fresh = False
        capacity = getattr(net, "replay_capacity", 0)
        if capacity > 0 and getattr(gpu, "layer", None) is not None:
            if self._cursor is not None:
                self._layer_options()
                child_key = (index, net._layer_opts)
                child = self._cursor.children.get(child_key)
                if child is not None and not child.broken:
                    return self._replay(child, index)
                if child is None:
                    rec, fresh = Recording(), True
            elif self._held is None:
                key = self._replay_key(index)
                if key is not None:
                    rec, fresh = net._replays.take(key, capacity)
                    if rec is not None and not fresh:
                        self._held, self._held_key = rec, key
                        return self._replay(rec, index)
        run = _Run(gpu, net._vkdev, rec if fresh else None)
        ret = self._extract_run(index, run)
        if rec is None:
            self._cursor = None  # the state now differs from every recording's
            return ret
        if ret != 0 or run.rec is None:
            self._cursor = None
            if key is not None:
                net._replays.drop(key, rec)
            else:
                rec.destroy()
            return ret
        rec.final = (
            tuple(i for i, m in enumerate(self._mats) if m is not None),
            list(self._vkmats),
            list(self._pending),
            set(self._shared),
        )
        net._replays.recorded += 1
        if key is not None:
            self._held, self._held_key = rec, key
        else:
            assert self._cursor is not None and child_key is not None
            self._cursor.children[child_key] = rec
        self._cursor = rec
        return 0

    def _extract_run(self, index: int, run: _Run) -> int:
        gpu = run.gpu
        if self._vkmats[index] is None:

            def step(li, opt, light):
                return self._forward_layer_vk(li, run, gpu, opt, light)

            ret = self._run_plan(index, step)
            if ret != 0:
                return ret
        if self._mats[index] is None:
            m = Mat()
            self._record_download(run.cmd, gpu, self._vkmats[index], m, self.opt)
            run.downloaded(index)
            ret = run.cmd.submit_and_wait()
            if ret != 0:
                log.error("extract: GPU submit failed (%d)", ret)
                return ret
            self._mats[index] = m
        else:
            ret = run.cmd.submit_and_wait()
        self._vk_garbage.clear()
        return ret

    def _replay(self, rec: Recording, index: int) -> int:
        """Run ``rec`` again with this extractor's inputs; fall back to recording afresh when
        a CPU layer's output no longer has the recorded shape."""
        from ..errors import PipelineGone

        opts = self._layer_options()
        light = bool(self.opt.lightmode)
        mats = self._mats
        saved = (list(mats), list(self._vkmats), list(self._pending), set(self._shared), self._partial)
        for step in rec.steps:
            if isinstance(step, int):
                ret = self._forward_cpu(step, opts[step], light)
                if ret != 0:
                    return ret
                continue
            for b, address, n, sig in step.uploads:
                m = self._upload_source(mats[b])
                if m is None or _signature(m) != sig:
                    log.info("extract: a CPU layer's output shape changed; recording this extract afresh")
                    return self._replay_fallback(rec, index, saved)
                # a Mat over an array (one channel) ends where its data does, before the padding
                src = m.raw()[:n]
                _host_view(address, len(src))[:] = src
            try:
                outs = step.cmd.replay(self.opt)
            except PipelineGone:
                # the plain path reports it, or records with the pipelines made since
                return self._replay_fallback(rec, index, saved)
            if outs is None:
                return -1
            for b, m in zip(step.downloads, outs, strict=True):
                mats[b] = m
        assert rec.final is not None
        with_mat, vkmats, pending, shared = rec.final
        keep = set(with_mat)
        for i, m in enumerate(mats):
            if m is not None and i not in keep:
                mats[i] = None
        self._vkmats = list(vkmats)
        self._pending = list(pending)
        self._shared = set(shared)
        self._partial = True
        self._cursor = rec
        self._net._replays.replayed += 1
        return 0

    def _replay_fallback(self, rec: Recording, index: int, saved: tuple) -> int:
        """``rec`` cannot be replayed (a recorded upload no longer has the recorded shape,
        or a pipeline is gone): never replay it again; put the state back as it was before
        the replay and compute this extract without replay."""
        rec.broken = True
        mats, vkmats, pending, shared, partial = saved
        self._mats, self._vkmats, self._pending, self._shared, self._partial = (
            mats, vkmats, pending, shared, partial,
        )  # fmt: skip
        self._cursor = None
        return self._extract_run(index, _Run(_gpu(), self._net._vkdev, None))

    def _forward_layer_vk(self, li: int, run: _Run, gpu, opt, light: bool) -> int:
        layer = self._net._layers[li]
        if layer.support_vulkan and layer.vkdev is not None and opt.use_vulkan_compute:
            return self._do_forward_layer_vk(li, layer, run, gpu, opt, light)
        # a CPU layer: bring GPU-only bottoms back first
        downloads = False
        for b in layer.bottoms:
            if self._mats[b] is None:
                m = Mat()
                self._record_download(run.cmd, gpu, self._vkmats[b], m, opt)
                run.downloaded(b)
                self._mats[b] = m
                downloads = True
        if downloads:
            ret = run.submit()
            if ret != 0:
                log.error("forward: GPU submit before layer %r failed (%d)", layer.name, ret)
                return ret
            self._vk_garbage.clear()
        run.cpu_layer(li)
        return self._forward_cpu(li, opt, light)

    # -- blob forms -------------------------------------------------------------------------
    def _convert(self, cmd, gpu, m, elempack: int, fp16: bool, opt):
        """``m`` in the form (elempack, fp16): ``m`` itself, or a converted copy."""
        if getattr(gpu, "layer", None) is None or (m.elempack == elempack and gpu.layer.is_fp16(m) == fp16):
            return m
        out = gpu.VkMat()
        gpu.layer.record_convert(cmd, self._net._vk_layout, m, out, elempack, fp16, opt)
        return out

    def _record_download(self, cmd, gpu, m, dst: Mat, opt) -> None:
        """Download ``m`` as fp32 elempack 1 (converted on the GPU first when it is not)."""
        cmd.record_download(self._convert(cmd, gpu, m, 1, False, opt), dst, opt)

    @staticmethod
    def _upload_source(mat: Mat | None) -> Mat | None:
        """What an upload of host blob ``mat`` copies: fp32 elempack 1. 8-bit Mats (int8, and
        uint8 arrays, whose bytes Mat keeps as int8) are widened by value, as the CPU layers
        read them; GPU blobs have no 8-bit form."""
        from .extractor import _needs_unpack, _unpack_fp32

        if mat is not None and (_needs_unpack(mat) or mat.elemsize == mat.elempack == 1):
            return _unpack_fp32(mat)
        return mat

    def _upload(self, run: _Run, gpu, b: int, layer: Layer, opt):
        """Upload host blob ``b`` as fp32 elempack 1 and convert it on the GPU to the form
        its consumer ``layer`` works in: its storage type, packed when the layer packs."""
        cmd = run.cmd
        mat = self._upload_source(self._mats[b])
        assert mat is not None  # the plan runs every producer first
        vk = gpu.VkMat()
        run.uploaded(b, cmd.record_upload(mat, vk, opt), _signature(mat))
        if getattr(gpu, "layer", None) is None or vk.dims == 0:
            return vk
        elempack = gpu.layer.preferred_elempack(vk, opt) if layer.support_packing else 1
        return self._convert(cmd, gpu, vk, elempack, gpu.layer.storage_fp16(opt, self._net._vkdev), opt)

    def _do_forward_layer_vk(self, li: int, layer: Layer, run: _Run, gpu, opt, light: bool) -> int:
        cmd = run.cmd
        for b in layer.bottoms:
            if self._vkmats[b] is None:
                self._vkmats[b] = self._upload(run, gpu, b, layer, opt)
        inplace = light and layer.support_inplace
        fp16 = getattr(gpu, "layer", None) is not None and gpu.layer.storage_fp16(opt, self._net._vkdev)

        def bottom_vk(b):
            m = self._vkmats[b]
            if getattr(m, "dims", 0):
                # the form this layer works in: its storage type, unpacked unless it packs
                elempack = m.elempack if layer.support_packing else 1
                c = self._convert(cmd, gpu, m, elempack, fp16, opt)
                if c is not m:
                    return c  # a private copy: in place needs no clone
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
                ret = call_hook(layer.forward_inplace_vk, bottom, cmd, opt)
                top = bottom
            else:
                top = gpu.VkMat()
                ret = call_hook(layer.forward_vk, bottom, top, cmd, opt)
            tops = [top]
        else:
            bottoms = [bottom_vk(b) for b in layer.bottoms]
            if inplace:
                ret = call_hook(layer.forward_inplace_vk, bottoms, cmd, opt)
                tops = bottoms
            else:
                tops = [gpu.VkMat() for _ in layer.tops]
                ret = call_hook(layer.forward_vk, bottoms, tops, cmd, opt)
        if ret != 0:
            log.error("forward: %s failed on the GPU (%s)", desc(li, layer), ret)
            return ret if isinstance(ret, int) else -1
        self._consumed(layer, light)
        for t, m in zip(layer.tops, tops, strict=False):
            self._vkmats[t] = m
            self._mats[t] = None
        return 0
