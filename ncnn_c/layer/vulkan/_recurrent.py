"""What the GPU forms of LSTM and GRU share: one recurrent.comp dispatch runs the whole sequence,
a work group per direction (the shader's header says how).

The weights are uploaded once as fp32, per direction in the CPU layer's layout; the blobs are
elempack 1 (``support_packing`` stays off: a sequence is a handful of rows) in fp32 or fp16
storage, the state lives in an fp32 scratch buffer for the dispatch. The optional state blobs
follow the CPU layer's rules (_recurrent.py): inputs of dirs x n values in any 1-D or 2-D
shape, outputs in the input state's shape or (dirs, n).
"""

from __future__ import annotations

import logging

import numpy as np

from . import LOCAL_1D, VulkanLayer, numpy_shape, upload_weights

log = logging.getLogger("ncnn_c")


class RecurrentVulkan(VulkanLayer):
    """Mixin ahead of ``VulkanLayer``'s Recurrent partner (LSTM or GRU); ``GRU_SHADER`` picks
    the shader's gate arithmetic."""

    GRU_SHADER = 0

    # the Recurrent attributes this mixin uses (and STATES, state_sizes())
    num_output: int
    units: int
    input_size: int
    num_directions: int
    direction: int
    _wxc: list
    _bias: list
    _whc: list
    _whr: list

    def __init__(self) -> None:
        super().__init__()
        self.support_fp16_storage = True
        self.pipeline_recurrent = None
        self._weights_gpu: list = []

    def create_pipeline_vk(self, opt) -> int:
        self.pipeline_recurrent = self.new_pipeline("recurrent", opt, [self.GRU_SHADER], LOCAL_1D)
        return 0 if self.pipeline_recurrent else -1

    def upload_model(self, cmd, opt) -> int:
        arrays = [self._wxc, self._bias, self._whc]
        if self._whr and self._whr[0] is not None:
            arrays.append(self._whr)
        self._weights_gpu = [upload_weights(cmd, np.ascontiguousarray(np.stack(a)), opt) for a in arrays]
        return 0

    def release_gpu_data(self) -> None:
        self._weights_gpu = []

    def _states_ok(self, bottoms, names: tuple[str, ...]) -> bool:
        """Whether the state inputs (if any) hold dirs x n values in a 1-D or 2-D blob; logs if not."""
        dirs = self.num_directions
        for i, n in enumerate(self.state_sizes()):  # type: ignore[attr-defined]  # Recurrent's
            if len(bottoms) == 1:
                break
            s = bottoms[1 + i]
            if s.dims not in (1, 2) or s.w * s.h != dirs * n:
                log.error(
                    "%s %r: %s state must hold %d x %d values in a 1-D or 2-D blob, got shape %s",
                    self.type, self.name, names[i], dirs, n, numpy_shape(s) if s.dims else (),
                )  # fmt: skip
                return False
        return True

    def forward_vk(self, bottoms, tops, cmd, opt) -> int:
        from ...gpu.vkmat import VkMat

        names: tuple[str, ...] = self.STATES  # type: ignore[attr-defined]  # Recurrent's
        n_states = len(names)
        if len(bottoms) not in (1, 1 + n_states) or len(tops) not in (1, 1 + n_states):
            log.error(
                "%s %r: takes the sequence [+ %s] and gives the output [+ the same]; got %d inputs, %d outputs",
                self.type, self.name, " + ".join(names), len(bottoms), len(tops),
            )  # fmt: skip
            return -1
        x = bottoms[0]
        size = self.input_size
        if x.dims not in (1, 2) or x.w != size:
            log.error(
                "%s %r: input must be a (T, %d) sequence, got dims %d shape %s",
                self.type, self.name, size, x.dims, numpy_shape(x) if x.dims else (),
            )  # fmt: skip
            return -1
        if not self._states_ok(bottoms, names):
            return -1
        T = x.h if x.dims == 2 else 1
        dirs, n, units = self.num_directions, self.num_output, self.units
        lane = x.elemsize  # elempack 1: bytes per value, 2 or 4

        out = tops[0]
        out.create(n * dirs, T, elemsize=lane, elempack=1, allocator=opt.blob_vkallocator)
        outs = [out]
        for i, size_i in enumerate(self.state_sizes()[: len(tops) - 1]):  # type: ignore[attr-defined]
            s = tops[1 + i]
            like = bottoms[1 + i] if len(bottoms) > 1 else None
            shape = (like.w, like.h)[: like.dims] if like is not None else (size_i, dirs)
            s.create(*shape, elemsize=lane, elempack=1, allocator=opt.blob_vkallocator)
            outs.append(s)
        rows = (3 if self.GRU_SHADER else 4) * units
        scratch = VkMat()
        scratch.create(
            dirs * (n + 3 * units + 2 * rows), elemsize=4, elempack=1, allocator=opt.blob_vkallocator
        )
        if any(m.empty() for m in outs) or scratch.empty():
            return -100

        empty = VkMat()
        states_in = list(bottoms[1:]) + [empty] * (2 - (len(bottoms) - 1))
        states_out = list(tops[1:]) + [empty] * (2 - (len(tops) - 1))
        weights = list(self._weights_gpu) + [empty] * (4 - len(self._weights_gpu))
        bindings = [x, *states_in[:2], out, *states_out[:2], *weights, scratch]
        constants = [
            T, size, units, n, self.direction, int(len(bottoms) > 1), int(len(tops) > 1), int(units != n)
        ]  # fmt: skip
        cmd.record_pipeline(self.pipeline_recurrent, bindings, constants, (LOCAL_1D[0] * dirs, 1, 1))
        return 0
