"""Spectrogram on the GPU: one dispatch (spectrogram.comp), a direct DFT per frame and
frequency in fp32; padding, frames and normalisation from the CPU class."""

from __future__ import annotations

import logging
import math

import numpy as np

from ..spectrogram import Spectrogram, window_l2
from . import LOCAL_2D
from ._stft import StftGpu

log = logging.getLogger("ncnn_c")


class Spectrogram_vulkan(StftGpu, Spectrogram):
    SHADER = "spectrogram"
    LOCAL = LOCAL_2D

    def forward_vk(self, bottom, top, cmd, opt) -> int:
        if bottom.dims != 1 or bottom.elempack != 1:
            log.error("Spectrogram %r: needs a 1-D fp32 blob, got dims %d", self.name, bottom.dims)
            return -1
        frames = self.frame_count(bottom.w)
        if frames is None:
            return -1
        freqs = self.freq_count()
        if self.power == 0:
            top.create(2, frames, freqs, elemsize=bottom.elemsize, elempack=1, allocator=opt.blob_vkallocator)
        else:
            top.create(frames, freqs, elemsize=bottom.elemsize, elempack=1, allocator=opt.blob_vkallocator)
        if top.empty():
            return -100
        norm = 1.0
        if self.normalized == 1:
            norm = float(np.float32(1 / math.sqrt(self.n_fft)))
        elif self.normalized == 2:
            norm = float(np.float32(1) / window_l2(self.window()))
        constants = [
            bottom.w,
            self.n_fft,
            self.hoplen,
            frames,
            freqs,
            self.n_fft // 2 if self.center else 0,
            self.pad_type,
            self.power,
            top.cstep if self.power == 0 else 0,
            norm,
        ]
        bindings = [bottom, top, self.window_gpu, self.twiddle_gpu]
        cmd.record_pipeline(self.pipeline_stft, bindings, constants, (frames, freqs, 1))
        return 0
