"""Deterministic random weights for a .param that ships without its .bin.

``python -m ncnn_c.tools.randbin MODEL.param OUT.bin [--seed N] [--fp16]``

The weight layout is the one the layers read: every layer of the network is loaded from
the .param, then its ``load_model`` pulls its blobs from a recording ModelBin, which hands
out random values and writes each blob to the output exactly as ncnn stores it (type-0
blobs with the storage flag, fp32 or fp16-tagged with ``--fp16``; type-1 blobs raw fp32;
every blob 4-byte aligned). So the file fits our loader by construction, and the PyPI
``ncnn`` reading the same file checks that the layout is ncnn's.

Random weights must keep activations in a sane range over fifty layers, or a comparison
proves nothing (everything 0 or inf agrees trivially): weight blobs get He-scaled normal
values (variance 2 / fan_in, fan_in = values per output), biases and shifts are small,
scales and variances sit near 1, so each layer roughly preserves the variance it gets.
"""

from __future__ import annotations

import argparse
import io
import logging
import struct
import sys

import numpy as np

from ..mat import Mat
from ..modelbin import FP16_TAG, ModelBin

log = logging.getLogger("ncnn_c")

# the role of each weight blob a layer loads, in load order; missing types/indexes are "data"
_ROLES: dict[str, tuple[str, ...]] = {
    "Convolution": ("weight", "bias"),
    "ConvolutionDepthWise": ("weight", "bias"),
    "Convolution1D": ("weight", "bias"),
    "Convolution3D": ("weight", "bias"),
    "ConvolutionDepthWise1D": ("weight", "bias"),
    "ConvolutionDepthWise3D": ("weight", "bias"),
    "Deconvolution": ("weight", "bias"),
    "DeconvolutionDepthWise": ("weight", "bias"),
    "InnerProduct": ("weight", "bias"),
    "BatchNorm": ("scale", "shift", "variance", "shift"),  # slope, mean, var, bias
    "Scale": ("scale", "shift"),
    "Bias": ("shift",),
    "PReLU": ("slope",),
    "Normalize": ("scale",),
    "InstanceNorm": ("scale", "shift"),
    "GroupNorm": ("scale", "shift"),
    "LayerNorm": ("scale", "shift"),
    "MultiHeadAttention": ("weight", "bias", "weight", "bias", "weight", "bias", "weight", "bias"),
    "Gemm": ("weight", "weight", "shift"),
}
# the He gain: 2 for ReLU-like activations, which most of these networks use
_GAIN = 2.0


class _RecordingModelBin(ModelBin):
    """Hands out random blobs for one layer and appends each one, as stored, to ``out``."""

    def __init__(self, layer, gen: np.random.Generator, fp16: bool, out: io.BytesIO) -> None:
        self.layer = layer
        self.gen = gen
        self.fp16 = fp16
        self.out = out
        self.count = 0

    def _values(self, n: int) -> np.ndarray:
        roles = _ROLES.get(self.layer.type, ())
        role = roles[self.count] if self.count < len(roles) else "data"
        g = self.gen
        if role == "weight":
            outputs = max(1, int(getattr(self.layer, "num_output", 0) or 0))
            fan_in = max(1, n // outputs)
            return g.standard_normal(n) * np.sqrt(_GAIN / fan_in)
        if role == "bias":
            return g.standard_normal(n) * 0.05
        if role == "shift":
            return g.standard_normal(n) * 0.1
        if role in ("scale", "variance"):
            return g.uniform(0.7, 1.3, n)
        if role == "slope":
            return g.uniform(0.0, 0.3, n)
        return g.standard_normal(n)

    def load_1d(self, w: int, type_: int) -> Mat:
        if w < 0 or type_ not in (0, 1):
            log.error(
                "randbin: %s %r asks for %d values of type %d", self.layer.type, self.layer.name, w, type_
            )
            return Mat()
        values = self._values(w).astype(np.float32)
        self.count += 1
        if type_ == 1:
            self.out.write(values.astype("<f4").tobytes())
        elif self.fp16:
            # the layer sees what the file holds: the values rounded to half
            values = values.astype(np.float16).astype(np.float32)
            self.out.write(struct.pack("<I", FP16_TAG) + values.astype("<f2").tobytes())
        else:
            self.out.write(struct.pack("<I", 0) + values.astype("<f4").tobytes())
        self.out.write(b"\0" * (-self.out.tell() % 4))
        if w == 0:
            return Mat()
        return Mat.from_tensor(values)


def random_weights(param_path: str, seed: int = 0, fp16: bool = False) -> bytes:
    """The .bin bytes for ``param_path``; raises ValueError naming the layer that cannot load."""
    from ..net import Net

    net = Net()
    if net.load_param(param_path) != 0:
        raise ValueError(f"{param_path}: load_param failed (see the log)")
    out = io.BytesIO()
    gen = np.random.default_rng(seed)
    for layer in net.layers():
        mb = _RecordingModelBin(layer, gen, fp16, out)
        if layer.load_model(mb) != 0:
            raise ValueError(f"{param_path}: layer {layer.type} {layer.name!r} failed to load its weights")
    return out.getvalue()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m ncnn_c.tools.randbin",
        description="Write deterministic random weights in the layout ncnn reads for MODEL.param.",
    )
    ap.add_argument("param", help="the model's .param (text)")
    ap.add_argument("out", help="the .bin to write")
    ap.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    ap.add_argument("--fp16", action="store_true", help="store flagged weights as fp16, as ncnn2table does")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(message)s")
    try:
        data = random_weights(args.param, args.seed, args.fp16)
    except (ValueError, OSError) as e:
        print(f"randbin: {e}", file=sys.stderr)
        return 1
    with open(args.out, "wb") as f:
        f.write(data)
    print(f"randbin: wrote {len(data)} bytes to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
