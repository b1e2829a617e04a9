"""The Vulkan side of the Extractor: layers recorded into one VkCompute, CPU layers in between.

The GPU modules are imported only through ``_gpu()`` (tests replace it with a fake), so a
CPU-only run never imports ``ncnn_c.gpu`` nor ``vulkan``. Blobs live in ``_vkmats`` while
on the device; a CPU layer gets its GPU-only bottoms downloaded first, a GPU layer gets
its host-only bottoms uploaded.
"""

from __future__ import annotations

import logging
import types
from collections.abc import Callable
from typing import TYPE_CHECKING

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


class VulkanForward:
    """Mixed into Extractor; uses its ``_mats``, ``_vkmats``, ``_pending``, ``_run_plan`` ..."""

    _net: Net
    opt: Option
    _mats: list
    _vkmats: list
    _pending: list[int]
    _vk_garbage: list
    _run_plan: Callable[..., int]
    _forward_cpu: Callable[..., int]
    _consumed: Callable[..., None]

    def _extract_vk(self, index: int) -> int:
        gpu = _gpu()
        net = self._net
        cmd = gpu.VkCompute(net._vkdev)
        if self._vkmats[index] is None:

            def step(li, opt, light):
                return self._forward_layer_vk(li, cmd, gpu, opt, light)

            ret = self._run_plan(index, step)
            if ret != 0:
                return ret
        if self._mats[index] is None:
            m = Mat()
            self._record_download(cmd, gpu, self._vkmats[index], m, self.opt)
            ret = cmd.submit_and_wait()
            if ret != 0:
                log.error("extract: GPU submit failed (%d)", ret)
                return ret
            self._mats[index] = m
        else:
            ret = cmd.submit_and_wait()
        self._vk_garbage.clear()
        return ret

    def _forward_layer_vk(self, li: int, cmd, gpu, opt, light: bool) -> int:
        layer = self._net._layers[li]
        if layer.support_vulkan and layer.vkdev is not None and opt.use_vulkan_compute:
            return self._do_forward_layer_vk(li, layer, cmd, gpu, opt, light)
        # a CPU layer: bring GPU-only bottoms back first
        downloads = False
        for b in layer.bottoms:
            if self._mats[b] is None:
                m = Mat()
                self._record_download(cmd, gpu, self._vkmats[b], m, opt)
                self._mats[b] = m
                downloads = True
        if downloads:
            ret = cmd.submit_and_wait()
            if ret != 0:
                log.error("forward: GPU submit before layer %r failed (%d)", layer.name, ret)
                return ret
            cmd.reset()
            self._vk_garbage.clear()
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

    def _upload(self, cmd, gpu, mat: Mat, layer: Layer, opt):
        """Upload a host blob as fp32 elempack 1 and convert it on the GPU to the form its
        consumer ``layer`` works in: its storage type, packed when the layer packs."""
        from .extractor import _needs_unpack, _unpack_fp32

        if _needs_unpack(mat):
            mat = _unpack_fp32(mat)
        vk = gpu.VkMat()
        cmd.record_upload(mat, vk, opt)
        if getattr(gpu, "layer", None) is None or vk.dims == 0:
            return vk
        elempack = gpu.layer.preferred_elempack(vk, opt) if layer.support_packing else 1
        return self._convert(cmd, gpu, vk, elempack, gpu.layer.storage_fp16(opt, self._net._vkdev), opt)

    def _do_forward_layer_vk(self, li: int, layer: Layer, cmd, gpu, opt, light: bool) -> int:
        for b in layer.bottoms:
            if self._vkmats[b] is None:
                self._vkmats[b] = self._upload(cmd, gpu, self._mats[b], layer, opt)
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
