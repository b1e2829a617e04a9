"""InverseSpectrogram: inverse short-time Fourier transform (librosa's istft), fp32.

Input (freqs, frames, 2): real and imaginary parts, freqs n_fft or n_fft / 2 + 1 (onesided:
the rest mirrored as conjugates). Each frame is scaled back (``normalized`` 1: sqrt(n_fft),
2: the window's L2 norm), inverse-transformed, windowed and overlap-added every hoplen
samples (less n_fft / 2 when ``center``); the sum is divided by the overlapped squared
window where that is not 0 (as ncnn). returns 0 gives (outsize, 2) complex, 1 the real
part, 2 the imaginary part. Window and params as Spectrogram's (spectrogram.py).
"""

from __future__ import annotations

import logging
import math
from typing import ClassVar

import numpy as np

from . import Layer, Param
from ._window_nd import create_top
from .spectrogram import dft_angles, load_stft_param, stft_window, window_l2

log = logging.getLogger("ncnn_c")


class InverseSpectrogram(Layer):
    PARAMS: ClassVar[tuple[Param, ...]] = (
        Param(0, "n_fft", 0),
        Param(1, "returns", 0),
        Param(2, "hoplen", 0),
        Param(3, "winlen", "n_fft"),
        Param(4, "window_type", 0),
        Param(5, "center", 1),
        Param(7, "normalized", 0),
    )

    def __init__(self) -> None:
        super().__init__()
        self.one_blob_only = True
        self.support_inplace = False
        self._window: np.ndarray | None = None

    def load_param(self, pd) -> int:
        return load_stft_param(self, pd)

    def check_params(self) -> int:
        if self.returns not in (0, 1, 2):
            log.error("InverseSpectrogram %r: returns %d is not 0, 1 or 2", self.name, self.returns)
            return -1
        self._window = stft_window(self)
        return 0 if self._window is not None else -1

    def accepts(self, bottom) -> bool:
        """Whether ``bottom`` (a Mat or a VkMat) is a (freqs, frames, 2) elempack 1 blob with
        freqs n_fft or n_fft / 2 + 1; logs if not."""
        n_fft, half = self.n_fft, self.n_fft // 2 + 1
        if bottom.dims == 3 and bottom.elempack == 1 and bottom.w == 2 and bottom.c in (n_fft, half):
            return True
        log.error(
            "InverseSpectrogram %r: needs a (freqs, frames, 2) blob with freqs %d or %d, got dims %d (%dx%dx%d)",
            self.name, n_fft, half, bottom.dims, bottom.w, bottom.h, bottom.c,
        )  # fmt: skip
        return False

    def output_size(self, frames: int) -> int:
        """Samples out of ``frames`` frames: the overlap-add span, less n_fft / 2 at each end
        when ``center``."""
        return (frames - 1) * self.hoplen + (self.n_fft % 2 if self.center else self.n_fft)

    def forward(self, bottom, top, opt) -> int:
        assert self._window is not None
        n_fft, hop = self.n_fft, self.hoplen
        half = n_fft // 2 + 1
        if not self.accepts(bottom):
            return -1
        x = np.asarray(bottom.tensor(), dtype=np.float32)
        re, im = x[..., 0], x[..., 1]
        if x.shape[0] == half and half != n_fft:
            k = np.arange(half, n_fft)
            re = np.concatenate([re, re[n_fft - k]])
            im = np.concatenate([im, -im[n_fft - k]])
        frames = x.shape[1]
        if self.normalized:
            norm = np.float32(math.sqrt(n_fft)) if self.normalized == 1 else window_l2(self._window)
            re, im = re * norm, im * norm
        angles = dft_angles(n_fft, n_fft)
        cos, sin = np.cos(angles), np.sin(angles)
        re64, im64 = re.astype(np.float64), im.astype(np.float64)
        # (n_fft samples, frames)
        out_re = ((cos @ re64 - sin @ im64).astype(np.float32) / np.float32(n_fft)) * self._window[:, None]
        out_im = ((sin @ re64 + cos @ im64).astype(np.float32) / np.float32(n_fft)) * self._window[:, None]
        outsize = self.output_size(frames)
        shift = n_fft // 2 if self.center else 0
        acc_re = np.zeros(outsize + n_fft, np.float32)
        acc_im = np.zeros(outsize + n_fft, np.float32)
        wsum = np.zeros(outsize + n_fft, np.float32)
        square = self._window * self._window
        for j in range(frames):
            idx = j * hop + np.arange(n_fft) - shift
            ok = (idx >= 0) & (idx < outsize)
            acc_re[idx[ok]] += out_re[ok, j]
            acc_im[idx[ok]] += out_im[ok, j]
            wsum[idx[ok]] += square[ok]
        # samples no window weight reaches keep their (zero) sums, as ncnn's
        wsum = wsum[:outsize]
        covered = wsum != 0
        acc_re, acc_im = acc_re[:outsize], acc_im[:outsize]
        acc_re[covered] /= wsum[covered]
        acc_im[covered] /= wsum[covered]
        out = (
            np.stack([acc_re, acc_im], axis=-1)
            if self.returns == 0
            else (acc_re if self.returns == 1 else acc_im)
        )
        dst = create_top(top, out.shape, opt)
        if dst is None:
            return -100
        dst[...] = out
        return 0
