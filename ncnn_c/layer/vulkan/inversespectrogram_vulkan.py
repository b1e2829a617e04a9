"""InverseSpectrogram on the GPU: one dispatch (inversespectrogram.comp), each output sample
summing the inverse DFT terms of the frames over it in fp32; shapes from the CPU class."""

from __future__ import annotations

import math

import numpy as np

from ..inversespectrogram import InverseSpectrogram
from ..spectrogram import window_l2
from ._stft import StftGpu


class InverseSpectrogram_vulkan(StftGpu, InverseSpectrogram):
    SHADER = "inversespectrogram"

    def forward_vk(self, bottom, top, cmd, opt) -> int:
        if not self.accepts(bottom):
            return -1
        frames = bottom.h
        outsize = self.output_size(frames)
        if self.returns == 0:
            top.create(2, outsize, elemsize=bottom.elemsize, elempack=1, allocator=opt.blob_vkallocator)
        else:
            top.create(outsize, elemsize=bottom.elemsize, elempack=1, allocator=opt.blob_vkallocator)
        if top.empty():
            return -100
        norm = np.float32(1)
        if self.normalized == 1:
            norm = np.float32(math.sqrt(self.n_fft))
        elif self.normalized == 2:
            norm = window_l2(self.window())
        constants = [
            self.n_fft,
            self.hoplen,
            frames,
            bottom.c,
            bottom.cstep,
            self.n_fft // 2 if self.center else 0,
            outsize,
            self.returns,
            float(norm / np.float32(self.n_fft)),
        ]
        bindings = [bottom, top, self.window_gpu, self.twiddle_gpu]
        cmd.record_pipeline(self.pipeline_stft, bindings, constants, (outsize, 1, 1))
        return 0
