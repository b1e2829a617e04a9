"""The Vulkan executor: layers recorded into one VkCompute, CPU layers in between.

The executor is also the Vulkan backend of the Net (``net/backend.py``): it owns the net's
device (``device.py``), loads the GPU layers (``load.py``), and keeps the recorded extracts.
The GPU modules are reached only through ``api.py``. Blobs live in the state's ``device``
list (VkMats) while on the device; a CPU layer (run by the reference executor) gets its GPU-only bottoms downloaded
first, a GPU layer gets its host-only bottoms uploaded.

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

A recording is used by one extractor at a time (its BlobState's Vulkan slot holds it as its ``lease``
until ``clear()`` or until it is dropped, because its blobs stay in the recording's
buffers), so a few are kept per shape for concurrent extractors; later extracts of the same
extractor record (and then replay) as children of the first (the slot's ``cursor``).
``Net.replay_capacity`` bounds the shapes kept (0 turns replay off).
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from typing import Any

import numpy as np

from ...errors import PipelineGone
from ...layer import Layer
from ...mat import Mat
from ...option import Option
from ..backend import Backend, ModelLoad
from ..graph import call_hook, desc
from ..reference import ReferenceExecutor, needs_unpack, unpack_fp32
from ..state import BlobState
from ..view import NetView
from ..walk import walk
from . import api
from .api import GpuApi
from .device import DeviceChoice
from .load import create_layout_pipeline, load_on_gpu

log = logging.getLogger("ncnn_c")


def _signature(m: Mat) -> tuple:
    return (m.dims, m.w, m.h, m.d, m.c, m.elemsize, m.elempack)


def _is_int8(m: Mat | None) -> bool:
    """Whether host blob ``m`` is an 8-bit Mat (int8, or uint8 bytes kept as int8)."""
    return m is not None and m.elemsize == m.elempack == 1


def _as_int8(m: Mat) -> Mat:
    """A downloaded blob (fp32 elempack 1) that holds int8 values, as the int8 Mat the CPU
    net has there: a GPU blob has no 8-bit form, so the int8 values of a Quantize, a
    Requantize or a requantizing int8 layer travel widened (layer/vulkan/_int8.py), and come
    back as what a CPU layer reading them, or extract, gets on the CPU."""
    return Mat.from_tensor(np.asarray(m.tensor(), dtype=np.float32).astype(np.int8))


def _upload_source(mat: Mat | None) -> Mat | None:
    """What an upload of host blob ``mat`` copies: fp32 elempack 1 in a fresh Mat's layout.
    8-bit Mats (int8, and uint8 arrays, whose bytes Mat keeps as int8) are widened by value,
    as the CPU layers read them; GPU blobs have no 8-bit form. A Mat whose channels sit
    closer than a fresh Mat's (``Mat(w,h,d,c).channel(q)``, ``depth_range``) is copied into
    that layout, so that a recording and its replays write the same bytes where the device
    blob's channels are."""
    if mat is not None and (needs_unpack(mat) or _is_int8(mat)):
        return unpack_fp32(mat)
    if mat is not None and mat.c > 1 and mat.dims >= 3 and mat.cstep != _fresh_cstep(mat):
        return mat.clone()
    return mat


def _fresh_cstep(m: Mat) -> int:
    """The channel stride of a fresh Mat of ``m``'s shape (channels 16-byte aligned)."""
    es = m.elemsize
    return -(-m.w * m.h * m.d * es // 16) * 16 // es


class _Segment:
    """One command buffer of a recording: where each upload's bytes go, which blob each
    download fills."""

    __slots__ = ("cmd", "uploads", "downloads", "int8")

    def __init__(self, cmd) -> None:
        self.cmd = cmd
        self.uploads: list[tuple[int, int, int, tuple]] = []  # (blob, address, nbytes, signature)
        self.downloads: list[int] = []  # blob of each download, in recording order
        self.int8: set[int] = set()  # downloaded blobs that hold int8 values (_as_int8)


SLOT = "vulkan"  # this executor's slot of a BlobState


class _ReplaySlot:
    """What the Vulkan executor keeps of a state: ``cursor``, the recording this state is the
    final state of (or None), and ``lease``, the recording its blobs live in (held until the
    state is released: a recording is used by one extractor at a time)."""

    __slots__ = ("cursor", "lease")

    def __init__(self) -> None:
        self.cursor: Recording | None = None
        self.lease: Recording | None = None

    def changed(self) -> None:
        self.cursor = None  # the state no longer matches a recording's

    def release(self) -> None:
        lease, self.lease = self.lease, None
        self.cursor = None
        if lease is not None:
            lease.release()


def _slot(state: BlobState) -> _ReplaySlot:
    return state.slot(SLOT, _ReplaySlot)


def final_of(state: BlobState) -> tuple:
    """What a recording keeps of the state after it: which blobs have a host Mat (not the
    Mats: they are the next replay's results), the device blobs, pending and shared."""
    return (
        tuple(i for i, m in enumerate(state.mats) if m is not None),
        list(state.device),
        list(state.pending),
        set(state.shared),
    )


def restore_final(state: BlobState, final: tuple, cursor: Recording) -> None:
    """The state a replay of the recording ``cursor`` (whose ``final_of`` is ``final``)
    leaves: host Mats the recording did not keep are dropped."""
    with_mat, device, pending, shared = final
    keep = set(with_mat)
    mats = state.mats
    for i, m in enumerate(mats):
        if m is not None and i not in keep:
            mats[i] = None
    state.device = list(device)
    state.pending = list(pending)
    state.shared = set(shared)
    state.partial = True
    state.changed(by=SLOT)  # no other executor's knowledge of the state holds
    _slot(state).cursor = cursor


class Recording:
    """An extract's GPU work kept for replay (see the module docstring)."""

    __slots__ = ("lock", "steps", "final", "children", "broken")

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.steps: list[_Segment | int] = []  # segments, and CPU layer indexes between them
        # the state afterwards (final_of): blobs with a host Mat, device blobs, pending, shared
        self.final: tuple | None = None
        # (the next extract's target, its LayerOptions) -> its recording
        self.children: dict[tuple, Recording] = {}
        self.broken = False  # its replay met a different shape: never replayed again

    def release(self) -> None:
        """The extractor holding it (as its state's lease) is done with it."""
        self.lock.release()

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

    __slots__ = ("gpu", "vkdev", "cmd", "rec", "seg", "int8")

    def __init__(self, gpu, vkdev, rec: Recording | None) -> None:
        self.gpu = gpu
        self.vkdev = vkdev
        self.rec = rec
        self.int8: list[int] = []  # int8 downloads to narrow after the next submit
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

    def downloaded(self, blob: int, int8: bool) -> None:
        if int8:
            self.int8.append(blob)
        if self.seg is not None:
            self.seg.downloads.append(blob)
            if int8:
                self.seg.int8.add(blob)

    def narrow(self, mats: list) -> None:
        """After a submit: the downloaded int8 blobs become int8 Mats (_as_int8)."""
        for b in self.int8:
            mats[b] = _as_int8(mats[b])
        self.int8.clear()


class VulkanExecutor(Backend):
    """Runs a blob's plan with the GPU layers on the device, the others on the reference
    executor, over a ``BlobState``; replays recorded extracts (module docstring)."""

    __slots__ = (
        "_view",
        "_reference",
        "device",
        "replays",
        "replay_capacity",
        "ready",
        "layout",
        "_owned_cache",
        "_ahead",
    )

    def __init__(self, view: NetView, reference: ReferenceExecutor) -> None:
        self._view = view
        self._reference = reference
        self.device = DeviceChoice()  # the VulkanDevice, chosen or default, maybe still coming
        self.replays = ReplayCache()  # the recorded extracts per input shape
        view.keep(self.replays)  # dropped whenever the layers change
        self.replay_capacity = 8  # net.replay_capacity
        self.ready = False  # the layers' pipelines are made for the device
        self.layout: Any = None  # the layout-conversion Pipeline of a GPU net
        self._owned_cache: list = []  # the PipelineCache the net made for itself (none given)
        self._ahead = False  # begin_param started the device on a thread

    # -- the Net's side: loading (net/backend.py) -------------------------------------------
    def begin_param(self, opt: Option, what: str, reparse_ok: bool) -> None:
        """With Vulkan asked for and no device yet, the device is made on a thread while the
        param is parsed, with the layers it asks for (the GPU forms); should there be no
        device after all, ``end_param`` asks for a second parse, for the CPU. Only where that
        parse is as the first (``reparse_ok``): a source read again from its start, and no
        application layer whose creator would be called twice."""
        if opt.use_vulkan_compute and reparse_ok and not self.device.made:
            self.device.start(opt)  # (or one set_vulkan_device(index) is making already)
            self._ahead = True
        else:
            self.device.check(opt, what)
            self._ahead = False

    def end_param(self, opt: Option, what: str) -> bool:
        if not self._ahead:
            return False
        self._ahead = False
        if self.device.coming:
            # the driver is still at work: import what load_model and a PipelineCache need
            # now, instead of after it (20-40 ms of a warm start on the H200 host)
            api.import_gpu_modules()
        for_gpu = opt.use_vulkan_compute
        self.device.check(opt, what)
        return bool(for_gpu and not opt.use_vulkan_compute)

    def prepare(self, load: ModelLoad) -> int | None:
        """The GPU load (``load.py``); None when the net runs on the CPU."""
        opt = load.opt
        if not opt.use_vulkan_compute:
            return None
        vkdev = self.device.acquire(opt)
        if vkdev is None:
            log.warning("load_model: no Vulkan device available; running on the CPU")
            opt.use_vulkan_compute = False
            return None
        ret = load_on_gpu(vkdev, load, self._owned_cache)
        if ret != 0:
            return ret
        self.layout = create_layout_pipeline(vkdev, opt)
        if self.layout is None:
            return -1
        self.ready = True
        return 0

    def release(self, opt: Option, clear: bool) -> None:
        self.replays.clear()
        for layer in self._view.layers:
            layer.vkdev = None
        self.layout = None
        self.ready = False
        if not clear:
            return
        for cache in self._owned_cache:
            try:
                cache.clear()
            except Exception as e:  # noqa: BLE001
                log.error("clearing the net's pipeline cache raised %s: %s", type(e).__name__, e)
            if opt.pipeline_cache is cache:
                opt.pipeline_cache = None
        self._owned_cache = []

    def extract(self, state: BlobState, index: int, opt: Option) -> int | None:
        """Compute blob ``index`` holding a use of the device and of the pipeline cache, so
        neither frees a handle while this extract records or runs (gpu/lifetime.py); -1 when
        one of them is destroyed or going. None (the CPU executors run it) when the net's
        layers are not on the GPU or the extractor's options turn Vulkan off."""
        if not (self.ready and opt.use_vulkan_compute):
            return None
        cache = opt.pipeline_cache
        counts = (self.device.vkdev.uses, cache.uses if cache is not None else None)
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
            return self._extract(state, index, opt)
        finally:
            for c in reversed(held):
                c.exit()

    def _replay_key(self, state: BlobState, index: int, opt: Option) -> tuple | None:
        """The key of a fresh extractor's extract of ``index``: target, option values (the
        net's LayerOptions object, replaced whenever they change; held by the key, so its
        identity is never reused) and the given inputs' shapes. None when not fresh."""
        if state.partial:
            return None
        lo = self._view.layer_options(opt)
        # a fresh extractor's shared blobs are exactly the ones given with input()
        mats = state.mats
        inputs = tuple((b, _signature(m)) for b in sorted(state.shared) if (m := mats[b]) is not None)
        return (index, lo, inputs)

    def _extract(self, state: BlobState, index: int, opt: Option) -> int:
        view = self._view
        rec = None
        key = None
        child_key = None
        fresh = False
        capacity = self.replay_capacity
        slot = _slot(state)
        if capacity > 0:
            cursor = slot.cursor
            if cursor is not None:
                child_key = (index, view.layer_options(opt))
                child = cursor.children.get(child_key)
                if child is not None and not child.broken:
                    return self._replay(state, child, index, opt)
                if child is None:
                    rec, fresh = Recording(), True
            elif slot.lease is None:
                key = self._replay_key(state, index, opt)
                if key is not None:
                    rec, fresh = self.replays.take(key, capacity)
                    if rec is not None and not fresh:
                        slot.lease = rec
                        return self._replay(state, rec, index, opt)
        run = _Run(api._gpu(), self.device.vkdev, rec if fresh else None)
        ret = self._extract_run(state, index, run, opt)
        if rec is None:
            slot.cursor = None  # the state now differs from every recording's
            return ret
        if ret != 0 or run.rec is None:
            slot.cursor = None
            if key is not None:
                self.replays.drop(key, rec)
            else:
                rec.destroy()
            return ret
        rec.final = final_of(state)
        self.replays.recorded += 1
        if key is not None:
            slot.lease = rec
        else:
            assert slot.cursor is not None and child_key is not None
            slot.cursor.children[child_key] = rec
        slot.cursor = rec
        return 0

    def _extract_run(self, state: BlobState, index: int, run: _Run, opt: Option) -> int:
        gpu = run.gpu
        if state.device[index] is None:

            def step(state: BlobState, li: int, layer: Layer, layer_opt: Option, light: bool) -> int:
                return self._forward_layer(state, li, layer, run, layer_opt, light)

            before = list(state.device)
            ret = walk(self._view, state, index, opt, step)
            if ret != 0:
                # the device blobs this run recorded were never submitted: their buffers hold
                # nothing, and a later extract must not download them as results
                vkmats = state.device
                for b, vk in enumerate(vkmats):
                    if vk is not None and vk is not before[b]:
                        vkmats[b] = None
                return ret
        if state.mats[index] is None:
            m = Mat()
            vk = state.device[index]
            self._record_download(run.cmd, gpu, vk, m, opt)
            run.downloaded(index, api._int8_marks().holds_int8(vk))
            ret = run.cmd.submit_and_wait()
            if ret != 0:
                log.error("extract: GPU submit failed (%d)", ret)
                return ret
            state.mats[index] = m
            run.narrow(state.mats)
        else:
            ret = run.cmd.submit_and_wait()
        state.device_garbage.clear()
        return ret

    def _replay(self, state: BlobState, rec: Recording, index: int, opt: Option) -> int:
        """Run ``rec`` again with this state's inputs; fall back to recording afresh when
        a CPU layer's output no longer has the recorded shape."""
        view = self._view
        gpu = api._gpu()
        opts = view.layer_options(opt).per_layer
        layers = view.layers
        light = bool(opt.lightmode)
        mats = state.mats
        saved = state.copy()
        forward = self._reference.forward
        for step in rec.steps:
            if isinstance(step, int):
                ret = forward(state, step, layers[step], opts[step], light)
                if ret != 0:
                    return ret
                continue
            for b, address, n, sig in step.uploads:
                m = _upload_source(mats[b])
                if m is None or _signature(m) != sig:
                    log.info("extract: a CPU layer's output shape changed; recording this extract afresh")
                    return self._replay_fallback(state, rec, index, saved, opt)
                # a Mat over an array (one channel) ends where its data does, before the padding
                src = m.raw()[:n]
                gpu.host_view(address, len(src))[:] = src
            try:
                outs = step.cmd.replay(opt)
            except PipelineGone:
                # the plain path reports it, or records with the pipelines made since
                return self._replay_fallback(state, rec, index, saved, opt)
            if outs is None:
                return -1
            for b, m in zip(step.downloads, outs, strict=True):
                mats[b] = _as_int8(m) if b in step.int8 else m
        assert rec.final is not None
        restore_final(state, rec.final, rec)
        self.replays.replayed += 1
        return 0

    def _replay_fallback(
        self, state: BlobState, rec: Recording, index: int, saved: BlobState, opt: Option
    ) -> int:
        """``rec`` cannot be replayed (a recorded upload no longer has the recorded shape,
        or a pipeline is gone): never replay it again; put the state back as it was before
        the replay and compute this extract without replay."""
        rec.broken = True
        state.restore(saved)
        _slot(state).cursor = None
        return self._extract_run(state, index, _Run(api._gpu(), self.device.vkdev, None), opt)

    def _forward_layer(
        self, state: BlobState, li: int, layer: Layer, run: _Run, opt: Option, light: bool
    ) -> int:
        if layer.support_vulkan and layer.vkdev is not None and opt.use_vulkan_compute:
            return self._forward_layer_gpu(state, li, layer, run, opt, light)
        # a CPU layer: bring GPU-only bottoms back first
        downloads = False
        mats = state.mats
        for b in layer.bottoms:
            if mats[b] is None:
                m = Mat()
                vk = state.device[b]
                self._record_download(run.cmd, run.gpu, vk, m, opt)
                run.downloaded(b, api._int8_marks().holds_int8(vk))
                mats[b] = m
                downloads = True
        if downloads:
            ret = run.submit()
            if ret != 0:
                log.error("forward: GPU submit before layer %r failed (%d)", layer.name, ret)
                return ret
            run.narrow(mats)
            state.device_garbage.clear()
        run.cpu_layer(li)
        return self._reference.forward(state, li, layer, opt, light)

    # -- blob forms -------------------------------------------------------------------------
    def _convert(self, cmd, gpu: GpuApi, m, elempack: int, fp16: bool, opt: Option):
        """``m`` in the form (elempack, fp16): ``m`` itself, or a converted copy."""
        if m.elempack == elempack and gpu.is_fp16(m) == fp16:
            return m
        out = gpu.VkMat()
        gpu.record_convert(cmd, self.layout, m, out, elempack, fp16, opt)
        marks = api._int8_marks()
        marks.mark_int8(out, marks.holds_int8(m))  # fp16 holds every int8 value
        return out

    def _record_download(self, cmd, gpu: GpuApi, m, dst: Mat, opt: Option) -> None:
        """Download ``m`` as fp32 elempack 1 (converted on the GPU first when it is not)."""
        cmd.record_download(self._convert(cmd, gpu, m, 1, False, opt), dst, opt)

    def _upload(self, state: BlobState, run: _Run, b: int, layer: Layer, opt: Option):
        """Upload host blob ``b`` as fp32 elempack 1 and convert it on the GPU to the form
        its consumer ``layer`` works in: its storage type, packed when the layer packs."""
        cmd, gpu = run.cmd, run.gpu
        host = state.mats[b]
        mat = _upload_source(host)
        assert mat is not None  # the plan runs every producer first
        vk = gpu.VkMat()
        run.uploaded(b, cmd.record_upload(mat, vk, opt), _signature(mat))
        if vk.dims == 0:
            return vk
        # an int8 Mat goes up widened: the mark says so to the int8 layers (layer/vulkan/_int8.py)
        api._int8_marks().mark_int8(vk, _is_int8(host))
        elempack = gpu.preferred_elempack(vk, opt) if layer.support_packing else 1
        return self._convert(cmd, gpu, vk, elempack, gpu.storage_fp16(opt, self.device.vkdev), opt)

    def _forward_layer_gpu(
        self, state: BlobState, li: int, layer: Layer, run: _Run, opt: Option, light: bool
    ) -> int:
        cmd, gpu = run.cmd, run.gpu
        vkmats = state.device
        for b in layer.bottoms:
            if vkmats[b] is None:
                vkmats[b] = self._upload(state, run, b, layer, opt)
        inplace = light and layer.support_inplace
        fp16 = gpu.storage_fp16(opt, self.device.vkdev)
        pending = state.pending
        marks = api._int8_marks()

        def aliased(b, m) -> bool:
            data = getattr(m, "data", None)
            if data is None:
                return False
            return any(
                o is not None and i != b and pending[i] > 0 and getattr(o, "data", None) is data
                for i, o in enumerate(vkmats)
            )

        def bottom_vk(b):
            m = vkmats[b]
            if m.dims:
                # the form this layer works in: its storage type, unpacked unless it packs
                elempack = m.elempack if layer.support_packing else 1
                c = self._convert(cmd, gpu, m, elempack, fp16, opt)
                if c is not m:
                    return c  # a private copy: in place needs no clone
            # device blobs are never handed to callers (extract downloads), so only other
            # pending consumers force a copy: of this blob, or of another one over the same
            # buffer (a Split's tops, a Reshape's view), as ncnn's refcount > 1 rule
            if inplace and (pending[b] > 1 or aliased(b, m)):
                c = gpu.VkMat()
                cmd.record_clone(m, c, opt)
                marks.mark_int8(c, marks.holds_int8(m))
                return c
            return m

        if layer.one_blob_only:
            bottoms = [bottom_vk(layer.bottoms[0])]
            if inplace:
                # rewritten: no longer what was marked (unless the layer only moves values)
                marks.mark_int8(bottoms[0], marks.holds_int8(bottoms[0]) and marks.moves_int8(layer))
                ret = call_hook(layer.forward_inplace_vk, bottoms[0], cmd, opt)
                tops = bottoms
            else:
                tops = [gpu.VkMat()]
                ret = call_hook(layer.forward_vk, bottoms[0], tops[0], cmd, opt)
        else:
            bottoms = [bottom_vk(b) for b in layer.bottoms]
            if inplace:
                for m in bottoms:
                    marks.mark_int8(m, marks.holds_int8(m) and marks.moves_int8(layer))
                ret = call_hook(layer.forward_inplace_vk, bottoms, cmd, opt)
                tops = bottoms
            else:
                tops = [gpu.VkMat() for _ in layer.tops]
                ret = call_hook(layer.forward_vk, bottoms, tops, cmd, opt)
        if ret != 0:
            log.error("forward: %s failed on the GPU (%s)", desc(li, layer), ret)
            return ret if isinstance(ret, int) else -1
        if not inplace:
            marks.share_marks(bottoms, tops, layer)
        state.consume(layer.bottoms, light)
        mats = state.mats
        for t, m in zip(layer.tops, tops, strict=False):
            vkmats[t] = m
            mats[t] = None
        return 0
