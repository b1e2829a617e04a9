"""VkCompute: records uploads, downloads, copies and dispatches into one command buffer,
submits it once and waits (ncnn's command.h).

Synchronisation is VkCompute's job, not the layers': every GPU command is preceded by a
global memory barrier from whatever the previous commands wrote, so any dependency
(read-after-write, write-after-read) between consecutive dispatches and copies is honoured.
A global barrier costs the same as a buffer barrier on current drivers and cannot miss a
binding.

Every VkMat a recorded command touches is kept alive until the command buffer has
finished, so its buffer range cannot be reused (and overwritten by a record-time host copy)
while the GPU may still read it.

A ``reusable`` VkCompute keeps its command buffer, descriptor sets and every VkMat after
``submit_and_wait()``; ``replay()`` submits the same work again (the Extractor's per-shape
replay, see net/vulkan/forward.py). Its buffers hold the same ranges for its whole life, so
writing new bytes where ``record_upload`` wrote the first ones is all a new input needs.
"""

from __future__ import annotations

import logging

import numpy as np

from ..errors import NcnnError, PipelineGone
from . import _vk
from .device import check_process
from .pipeline import DeferredPipeline
from .vkmat import VkMat

log = logging.getLogger("ncnn_c")

_WRITE_ACCESS = {_vk.STAGE_COMPUTE: _vk.ACCESS_SHADER_WRITE, _vk.STAGE_TRANSFER: _vk.ACCESS_TRANSFER_WRITE}
_COMPUTE_RW = _vk.ACCESS_SHADER_READ | _vk.ACCESS_SHADER_WRITE
_TRANSFER_RW = _vk.ACCESS_TRANSFER_READ | _vk.ACCESS_TRANSFER_WRITE


def _pc_code(v) -> str:
    t = type(v)
    if t is int or t is bool:
        return "i" if -0x80000000 <= v < 0x80000000 else "I"
    if t is float:
        return "f"
    if isinstance(v, np.floating):
        return "f"
    if isinstance(v, (np.integer, np.bool_)):
        return "i" if -0x80000000 <= int(v) < 0x80000000 else "I"
    raise TypeError(f"record_pipeline: push constant {v!r} is neither int nor float")


def _pc_values(fmt: str, constants) -> list:
    # struct wants Python scalars for 'i'/'I'; numpy scalars convert cleanly
    return [int(v) if c != "f" else float(v) for c, v in zip(fmt[1:], constants, strict=True)]


def host_layout(src, cstep: int, view: np.ndarray) -> None:
    """Write host Mat ``src``'s channels into ``view`` (uint8, at least ``cstep * c * elemsize``
    bytes) ``cstep`` elements apart, the padding zeroed: a blob's bytes in a device layout
    whose channel stride is not ``src``'s. Reads only ``src``'s own channels, never the bytes
    its stride would reach past the last one."""
    c, step = src.c, src.cstep * src.elemsize
    per = src.w * src.h * src.d * src.elemsize  # bytes of one channel's data
    raw = src.raw()
    if (c - 1) * step + per > raw.nbytes or per > cstep * src.elemsize:
        raise ValueError(f"host_layout: a Mat of {c} channels of {per} bytes does not fit its storage")
    chans = np.lib.stride_tricks.as_strided(raw, (c, per), (step, 1), writeable=False)
    out = view[: c * cstep * src.elemsize].reshape(c, cstep * src.elemsize)
    out[:, :per] = chans
    out[:, per:] = 0


class VkCompute:
    """One command buffer's worth of GPU work; reusable after ``submit_and_wait()``/``reset()``."""

    def __init__(self, vkdev, reusable: bool = False) -> None:
        check_process("VkCompute")
        if vkdev is None or vkdev.destroyed:
            raise NcnnError("VkCompute: the VulkanDevice is destroyed")
        self.vkdev = vkdev
        self.reusable = reusable
        self._rec: _vk.CommandRecorder | None = _vk.CommandRecorder(
            vkdev.vk_device, vkdev.compute_queue_family, one_time=not reusable
        )
        self._submitted = False  # a reusable buffer, recorded and run once: replay() may run it
        # id -> (Pipeline, its VkPipeline when recorded): a replay checks that none was destroyed
        self._pipes: dict[int, tuple] = {}
        self._recording = False
        self._pending_stages = 0  # stages whose writes no barrier has covered yet
        self._pending_access = 0
        self._keep: list = []  # objects the GPU may still use
        self._downloads: list = []  # (host address, nbytes, dst Mat)
        self.dispatch_count = 0

    # -- internal ------------------------------------------------------------------------------
    def _begin(self) -> None:
        if not self._recording:
            assert self._rec is not None, "VkCompute used after destroy()"
            self._rec.begin()
            self._recording = True

    def _sync(self, dst_stage: int, dst_access: int) -> None:
        if self._pending_stages:
            assert self._rec is not None, "VkCompute used after destroy()"
            self._rec.barrier(self._pending_stages, self._pending_access, dst_stage, dst_access)
        self._pending_stages = 0
        self._pending_access = 0

    def _wrote(self, stage: int) -> None:
        self._pending_stages |= stage
        self._pending_access |= _WRITE_ACCESS[stage]

    def _blob_allocator(self, opt):
        a = getattr(opt, "blob_vkallocator", None) if opt is not None else None
        return a if a is not None else self.vkdev.default_blob_allocator

    def _staging_allocator(self, opt):
        a = getattr(opt, "staging_vkallocator", None) if opt is not None else None
        return a if a is not None else self.vkdev.default_staging_allocator

    def _copy(self, src: VkMat, dst: VkMat, nbytes: int) -> None:
        self._begin()
        self._sync(_vk.STAGE_TRANSFER, _TRANSFER_RW)
        assert self._rec is not None, "VkCompute used after destroy()"
        assert src.data is not None and dst.data is not None  # callers copy only allocated VkMats
        self._rec.copy_buffer(src.data.buffer, src.data.offset, dst.data.buffer, dst.data.offset, nbytes)
        self._wrote(_vk.STAGE_TRANSFER)
        self._keep.append(src)
        self._keep.append(dst)

    # -- transfers -------------------------------------------------------------------------------
    def record_upload(self, src, dst: VkMat, opt=None) -> tuple[int, int] | None:
        """Copy host Mat ``src`` into ``dst`` (created here with src's shape).

        The bytes go unchanged (fp32 stays fp32; no fp16 conversion or repacking yet), each
        channel at dst's channel stride (``host_layout`` when src's differs).
        Returns (host address, byte count) of the mapped memory the bytes were written to,
        where a replay writes its new input, or None when nothing was copied.
        """
        if src.dims == 0:
            dst.release()
            return None
        dst.create_like(src, self._blob_allocator(opt))
        if dst.data is None:
            return None  # a zero-size Mat (e.g. Mat(0)): nothing to copy
        if src.c > 1 and src.cstep != dst.cstep:
            # channels not at dst's stride (a Mat(w, h, d, c).channel(q) or depth_range view
            # packs them unpadded): channel by channel into dst's layout
            return self.record_staged_upload(dst, lambda view: host_layout(src, dst.cstep, view), opt)
        raw = src.raw()
        n = min(raw.nbytes, dst.nbytes())

        def fill(view) -> None:
            view[:] = raw[:n]

        return self.record_staged_upload(dst, fill, opt, n)

    def record_staged_upload(
        self, dst: VkMat, fill, opt=None, nbytes: int | None = None
    ) -> tuple[int, int] | None:
        """Upload into ``dst`` (allocated) the first ``nbytes`` (default: all) that
        ``fill(view)`` writes into a numpy uint8 view of host memory: ``dst``'s own when it is
        host visible (unified memory: vkQueueSubmit makes the write visible), else a staging
        buffer copied to it on the GPU. Lets a caller repack straight into the upload memory.
        Returns (host address, byte count) of that memory, or None when ``dst`` is empty."""
        if dst.data is None:
            return None
        n = dst.nbytes() if nbytes is None else nbytes
        host = dst.host_view()
        if host is not None:
            fill(host[:n])
            self._keep.append(dst)
            assert dst.data.mapped_ptr is not None  # host_view() exists only for mapped memory
            return dst.data.mapped_ptr, n
        staging = VkMat()
        staging.create_like(dst, self._staging_allocator(opt))
        # allocated (same size as dst) from host-visible staging memory
        assert staging.data is not None and staging.data.mapped_ptr is not None
        fill(_vk.host_view(staging.data.mapped_ptr, n))
        self._copy(staging, dst, n)
        return staging.data.mapped_ptr, n

    def record_download(self, src: VkMat, dst, opt=None) -> None:
        """Make ``dst`` (a Mat) a copy of ``src``; it holds the data after ``submit_and_wait()``."""
        if src.dims == 0 or src.data is None:
            dst.release()
            return
        dst.create_like(src, getattr(opt, "blob_allocator", None) if opt is not None else None)
        n = min(dst.raw().nbytes, src.nbytes())
        if src.data.mapped_ptr:
            self._begin()  # even with no GPU command, the barrier to the host must be recorded
            self._keep.append(src)
            self._downloads.append((src.data.mapped_ptr, n, dst))
            return
        staging = VkMat()
        staging.create_like(src, self._staging_allocator(opt))
        self._copy(src, staging, n)
        assert staging.data is not None  # same size as src, which is allocated
        self._downloads.append((staging.data.mapped_ptr, n, dst))

    def record_clone(self, src, dst, opt=None) -> None:
        """GPU copy VkMat → VkMat (dst created like src); a Mat on either side means upload/download."""
        if not isinstance(src, VkMat):
            self.record_upload(src, dst, opt)
            return None
        if not isinstance(dst, VkMat):
            return self.record_download(src, dst, opt)
        if src.dims == 0 or src.data is None:
            dst.release()
            return None
        dst.create_like(src, self._blob_allocator(opt))
        self._copy(src, dst, src.nbytes())
        return None

    # -- dispatch ---------------------------------------------------------------------------------
    def record_pipeline(self, pipeline, bindings, constants, dispatcher) -> None:
        """Dispatch ``pipeline`` over ``dispatcher`` (a VkMat: (w, h*d, c) invocations, or (x, y, z)).

        ``bindings`` are VkMats for the storage buffers in binding order (an empty VkMat binds a
        dummy buffer); ``constants`` are the push constants, int → int32 and float → float32.
        """
        if isinstance(pipeline, DeferredPipeline):
            pipeline = pipeline.resolve()
        if pipeline.vk_pipeline is None:
            raise PipelineGone(
                "record_pipeline: the pipeline has no live Vulkan objects (never created, or its "
                "PipelineCache was cleared or destroyed while a net still used it)"
            )
        info = pipeline.shader_info
        nb = getattr(info, "binding_count", len(bindings))
        if len(bindings) != nb:
            raise ValueError(f"record_pipeline: {len(bindings)} bindings for a shader with {nb}")
        npc = getattr(info, "push_constant_count", len(constants))
        if len(constants) != npc:
            raise ValueError(f"record_pipeline: {len(constants)} push constants for a shader with {npc}")

        if isinstance(dispatcher, (tuple, list)):
            gx, gy, gz = (int(v) for v in dispatcher)
        else:
            gx, gy, gz = dispatcher.w, dispatcher.h * dispatcher.d, dispatcher.c
        lx, ly, lz = pipeline.local_size_x, pipeline.local_size_y, pipeline.local_size_z
        groups = ((gx + lx - 1) // lx, (gy + ly - 1) // ly, (gz + lz - 1) // lz)

        buffers = []
        for m in bindings:
            bm = m.data if m is not None and m.data is not None else self.vkdev.dummy_buffer
            buffers.append((bm.buffer, bm.offset, bm.capacity))

        fmt = None
        values: list[int | float] | tuple[()] = ()
        if constants:
            fmt = "<" + "".join(_pc_code(v) for v in constants)
            values = _pc_values(fmt, constants)

        self._begin()
        self._sync(_vk.STAGE_COMPUTE, _COMPUTE_RW)
        assert self._rec is not None, "VkCompute used after destroy()"
        self._rec.dispatch(
            _vk.to_handle("VkPipeline", pipeline.vk_pipeline),
            _vk.to_handle("VkPipelineLayout", pipeline.vk_pipeline_layout),
            _vk.to_handle("VkDescriptorSetLayout", pipeline.vk_descriptorset_layout),
            buffers,
            fmt,
            values,
            *groups,
        )
        self._wrote(_vk.STAGE_COMPUTE)
        if self.reusable:
            self._pipes[id(pipeline)] = (pipeline, pipeline.vk_pipeline)
        self._keep.append(pipeline)
        self._keep.extend(bindings)
        self.dispatch_count += 1

    # -- execution -------------------------------------------------------------------------------
    def submit_and_wait(self) -> int:
        """Run everything recorded, wait, fill download destinations. 0 ok, -1 on a Vulkan error."""
        if not self._recording:
            if self.reusable and not self._downloads:
                self._submitted = True  # nothing to run: a replay has nothing to do either
                return 0
            self._finish()
            return 0
        ret = 0
        assert self._rec is not None, "VkCompute used after destroy()"
        check_process("VkCompute.submit_and_wait")
        try:
            if self._downloads:
                self._pending_stages |= _vk.STAGE_COMPUTE | _vk.STAGE_TRANSFER
                self._pending_access |= _vk.ACCESS_SHADER_WRITE | _vk.ACCESS_TRANSFER_WRITE
                self._sync(_vk.STAGE_HOST, _vk.ACCESS_HOST_READ)
            self._rec.end()
            self._recording = False
            with self.vkdev.queue() as q:
                self._rec.submit_and_wait(q)
            for address, n, dst in self._downloads:
                dst.raw()[:n] = _vk.host_view(address, n)
        except _vk.VulkanError as e:
            log.error("VkCompute.submit_and_wait: %s", e)
            ret = -1
        if self.reusable and ret == 0:
            self._submitted = True  # keep it all for replay()
            return 0
        self._finish()
        return ret

    def replay(self, opt=None) -> list | None:
        """Run a reusable VkCompute's recorded work again; returns a fresh Mat per recorded
        download, in recording order, or None when it cannot run (logged)."""
        if not self._submitted:
            log.error("VkCompute.replay: nothing recorded and run to replay")
            return None
        for pipeline, handle in self._pipes.values():
            if pipeline.vk_pipeline is not handle:
                raise PipelineGone(
                    "VkCompute.replay: a recorded pipeline was destroyed (its PipelineCache was "
                    "cleared or destroyed while a net still used it)"
                )
        assert self._rec is not None, "VkCompute used after destroy()"
        if not self._keep and not self._downloads:
            return []  # nothing was recorded
        check_process("VkCompute.replay")
        try:
            with self.vkdev.queue() as q:
                self._rec.submit_and_wait(q)
        except _vk.VulkanError as e:
            log.error("VkCompute.replay: %s", e)
            return None
        allocator = getattr(opt, "blob_allocator", None) if opt is not None else None
        out = []
        for address, n, template in self._downloads:
            m = type(template)()
            m.create_like(template, allocator)
            m.raw()[:n] = _vk.host_view(address, n)
            out.append(m)
        return out

    def reset(self) -> int:
        """Drop everything recorded and not submitted; ready to record again."""
        self._finish()
        return 0

    def _finish(self) -> None:
        assert self._rec is not None, "VkCompute used after destroy()"
        if self._recording:
            try:
                self._rec.end()
            except _vk.VulkanError:
                pass
            self._recording = False
        try:
            self._rec.reset()
        except _vk.VulkanError as e:
            log.error("VkCompute.reset: %s", e)
        self._pending_stages = 0
        self._pending_access = 0
        self._keep = []
        self._downloads = []
        self._pipes = {}
        self._submitted = False
        self.dispatch_count = 0

    def destroy(self) -> None:
        rec = self._rec
        if rec is None:
            return
        self._rec = None
        self._keep = []
        self._downloads = []
        if not self.vkdev.destroyed:
            rec.destroy()

    def __del__(self) -> None:
        try:
            self.destroy()
        except Exception:  # interpreter shutdown
            pass

    def __enter__(self) -> VkCompute:
        return self

    def __exit__(self, *exc) -> None:
        self.destroy()
