"""What the Vulkan Spectrogram and InverseSpectrogram share: the window and a twiddle table
uploaded as fp32, so their shaders take DFT terms from a table instead of GPU sin / cos."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from . import LOCAL_1D, VulkanLayer, upload_weights

if TYPE_CHECKING:
    from ...gpu.vkmat import VkMat


def twiddles(n_fft: int) -> np.ndarray:
    """(cos, sin) of 2 pi m / n_fft for m < n_fft, interleaved, fp32 (from float64)."""
    angles = 2 * math.pi * np.arange(n_fft) / n_fft
    return np.stack([np.cos(angles), np.sin(angles)], axis=-1).astype(np.float32).reshape(-1)


class StftGpu(VulkanLayer):
    """The GPU half of both layers, ahead of the CPU class: elempack 1 blobs (the net unpacks
    a packed one), fp16 storage read and written through sfp, sums in fp32."""

    SHADER = ""
    LOCAL = LOCAL_1D

    def __init__(self) -> None:
        super().__init__()
        self.support_fp16_storage = True
        self.pipeline_stft = None
        self.window_gpu: VkMat | None = None
        self.twiddle_gpu: VkMat | None = None

    def create_pipeline_vk(self, opt) -> int:
        self.pipeline_stft = self.new_pipeline(self.SHADER, opt, [], self.LOCAL)
        return 0 if self.pipeline_stft else -1

    def upload_model(self, cmd, opt) -> int:
        self.window_gpu = upload_weights(cmd, self.window(), opt)
        self.twiddle_gpu = upload_weights(cmd, twiddles(self.n_fft), opt)  # type: ignore[attr-defined]
        return 0

    def window(self) -> np.ndarray:
        """The CPU class's window (made by its check_params, which load_param ran)."""
        window = self._window  # type: ignore[attr-defined]
        assert window is not None
        return window

    def release_gpu_data(self) -> None:
        self.window_gpu = None
        self.twiddle_gpu = None
