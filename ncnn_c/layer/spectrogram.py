"""Spectrogram: short-time Fourier transform of a 1-D signal (torchaudio's spectrogram), fp32.

The signal is padded by n_fft / 2 at both ends when ``center`` (0 constant, 1 replicate,
2 reflect), cut into frames of n_fft every hoplen samples, windowed (0 ones, 1 hann,
2 hamming, winlen wide, centred in n_fft) and transformed; ``normalized`` 1 scales by
1 / sqrt(n_fft), 2 by 1 / the window's L2 norm. power 0 gives (freqs, frames, 2) real and
imaginary parts, 1 the magnitude, 2 its square, as (freqs, frames); ``onesided`` keeps the
n_fft / 2 + 1 non-negative frequencies. The DFT runs as one product in float64 (ncnn
accumulates fp32 sums of double terms).
"""

from __future__ import annotations

import logging
import math
from typing import ClassVar, Literal

import numpy as np

from . import Layer, Param, load_params
from ._window_nd import create_top

log = logging.getLogger("ncnn_c")


def stft_window(layer) -> np.ndarray | None:
    """The n_fft window of a (Inverse)Spectrogram's window_type and winlen, as ncnn builds it
    (fp32); None, logged, for params it cannot build from."""
    n_fft, winlen = layer.n_fft, layer.winlen
    if n_fft <= 0 or layer.hoplen <= 0 or not 0 < winlen <= n_fft:
        log.error(
            "%s %r: n_fft %d, hoplen %d and winlen %d (<= n_fft) must be positive",
            layer.type or type(layer).__name__,
            layer.name,
            n_fft,
            layer.hoplen,
            winlen,
        )
        return None
    if layer.window_type not in (0, 1, 2):
        log.error(
            "%s %r: window_type %d is not 0, 1 or 2",
            layer.type or type(layer).__name__,
            layer.name,
            layer.window_type,
        )
        return None
    if layer.normalized not in (0, 1, 2):
        log.error(
            "%s %r: normalized %d is not 0, 1 or 2",
            layer.type or type(layer).__name__,
            layer.name,
            layer.normalized,
        )
        return None
    i = np.arange(winlen, dtype=np.float64)
    if layer.window_type == 0:
        core = np.ones(winlen)
    elif layer.window_type == 1:
        core = 0.5 * (1 - np.cos(2 * math.pi * i / winlen))
    else:
        core = np.float32(0.54) - np.float32(0.46) * np.cos(2 * math.pi * i / winlen)
    window = np.zeros(n_fft, np.float32)
    start = (n_fft - winlen) // 2
    window[start : start + winlen] = core
    return window


def load_stft_param(layer, pd) -> int:
    """Layer.load_param, then hoplen's default n_fft / 4 (a default no Param row can say)."""
    if load_params(layer, pd, layer.PARAMS) != 0:
        return -1
    if 2 not in pd:
        layer.hoplen = layer.n_fft // 4
    return layer.check_params()


def window_l2(window: np.ndarray) -> np.float32:
    """sqrt of the window's sum of squares, summed in fp32 as ncnn does."""
    total = np.float32(0)
    for v in window:
        total = np.float32(total + v * v)
    return np.float32(math.sqrt(total))


def dft_angles(n_fft: int, rows: int) -> np.ndarray:
    """2 pi i k / n_fft for i < rows, k < n_fft (float64)."""
    return 2 * math.pi * np.outer(np.arange(rows), np.arange(n_fft)) / n_fft


class Spectrogram(Layer):
    PARAMS: ClassVar[tuple[Param, ...]] = (
        Param(0, "n_fft", 0),
        Param(1, "power", 0),
        Param(2, "hoplen", 0),
        Param(3, "winlen", "n_fft"),
        Param(4, "window_type", 0),
        Param(5, "center", 1),
        Param(6, "pad_type", 2),
        Param(7, "normalized", 0),
        Param(8, "onesided", 1),
    )

    def __init__(self) -> None:
        super().__init__()
        self.one_blob_only = True
        self.support_inplace = False
        self._window: np.ndarray | None = None

    def load_param(self, pd) -> int:
        return load_stft_param(self, pd)

    def check_params(self) -> int:
        if self.power not in (0, 1, 2):
            log.error("Spectrogram %r: power %d is not 0, 1 or 2", self.name, self.power)
            return -1
        if self.pad_type not in (0, 1, 2):
            log.error("Spectrogram %r: pad_type %d is not 0, 1 or 2", self.name, self.pad_type)
            return -1
        self._window = stft_window(self)
        return 0 if self._window is not None else -1

    def frame_count(self, size: int) -> int | None:
        """The frames of a ``size``-sample signal (padded by n_fft / 2 each side when
        ``center``); None, logged, when it cannot reflect the padding or holds no frame."""
        n_fft = self.n_fft
        padded = size + (n_fft // 2) * 2 if self.center else size
        if self.center and self.pad_type == 2 and size <= n_fft // 2:
            log.error(
                "Spectrogram %r: a %d-sample signal cannot reflect %d samples", self.name, size, n_fft // 2
            )
            return None
        if padded < n_fft:
            log.error("Spectrogram %r: %d samples are fewer than n_fft %d", self.name, padded, n_fft)
            return None
        return (padded - n_fft) // self.hoplen + 1

    def freq_count(self) -> int:
        """Output rows: the n_fft / 2 + 1 non-negative frequencies when ``onesided``."""
        return self.n_fft // 2 + 1 if self.onesided else self.n_fft

    def forward(self, bottom, top, opt) -> int:
        if bottom.dims != 1 or bottom.elempack != 1:
            log.error("Spectrogram %r: needs a 1-D fp32 blob, got dims %d", self.name, bottom.dims)
            return -1
        assert self._window is not None
        x = np.asarray(bottom.tensor(), dtype=np.float32).reshape(-1)
        n_fft = self.n_fft
        frames = self.frame_count(x.size)
        if frames is None:
            return -1
        if self.center:
            modes: tuple[Literal["constant", "edge", "reflect"], ...] = ("constant", "edge", "reflect")
            x = np.pad(x, (n_fft // 2, n_fft // 2), mode=modes[self.pad_type])
        freqs_half = n_fft // 2 + 1
        segments = np.lib.stride_tricks.sliding_window_view(x, n_fft)[:: self.hoplen][:frames]
        v = (segments * self._window).astype(np.float64)
        angles = dft_angles(n_fft, freqs_half)
        re = (np.cos(angles) @ v.T).astype(np.float32)
        im = (-(np.sin(angles) @ v.T)).astype(np.float32)
        if self.normalized:
            norm = (
                np.float32(1 / math.sqrt(n_fft))
                if self.normalized == 1
                else np.float32(1) / window_l2(self._window)
            )
            re *= norm
            im *= norm
        if not self.onesided:
            mirror = np.arange(freqs_half, n_fft)
            re = np.concatenate([re, re[n_fft - mirror]])
            im = np.concatenate([im, -im[n_fft - mirror]])
        if self.power == 0:
            out = np.stack([re, im], axis=-1)
        elif self.power == 1:
            out = np.sqrt(re * re + im * im)
        else:
            out = re * re + im * im
        dst = create_top(top, out.shape, opt)
        if dst is None:
            return -100
        dst[...] = out
        return 0
