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
    from ..gpu import command, device, pipelinecache, vkmat

    return types.SimpleNamespace(
        get_gpu_count=device.get_gpu_count,
        get_default_gpu_index=device.get_default_gpu_index,
        get_gpu_device=device.get_gpu_device,
        PipelineCache=pipelinecache.PipelineCache,
        VkCompute=command.VkCompute,
        VkMat=vkmat.VkMat,
    )


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

    def _forward_layer_vk(self, li: int, cmd, gpu, opt, light: bool) -> int:
        layer = self._net._layers[li]
        if layer.support_vulkan and layer.vkdev is not None and opt.use_vulkan_compute:
            return self._do_forward_layer_vk(li, layer, cmd, gpu, opt, light)
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
        return self._forward_cpu(li, opt, light)

    def _do_forward_layer_vk(self, li: int, layer: Layer, cmd, gpu, opt, light: bool) -> int:
        for b in layer.bottoms:
            if self._vkmats[b] is None:
                vk = gpu.VkMat()
                cmd.record_upload(self._mats[b], vk, opt)
                self._vkmats[b] = vk
        inplace = light and layer.support_inplace

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
