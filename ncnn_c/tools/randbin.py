"""Deterministic random weights for a .param that ships without its .bin.

``python -m ncnn_c.tools.randbin MODEL.param OUT.bin [--seed N] [--fp16] [--shape C,H,W]``

The weight layout is the one the layers read: every layer of the network is loaded from
the .param, then its ``load_model`` pulls its blobs from a recording ModelBin, which hands
out random values and writes each blob to the output exactly as ncnn stores it (type-0
blobs with the storage flag, fp32 or fp16-tagged with ``--fp16``; type-1 blobs raw fp32;
every blob 4-byte aligned). So the file fits our loader by construction, and the PyPI
``ncnn`` reading the same file checks that the layout is ncnn's.

Random weights must keep activations in a sane range over fifty layers, or a comparison
proves nothing (everything 0 or inf agrees trivially), and fp16 runs need them inside
fp16's range. Weight blobs start He-scaled (variance 2 / fan_in, fan_in = values per
output), biases and shifts small, scales and variances near 1. That alone does not hold
the scale: residual sums, per-channel MemoryData adds and linear depthwise layers grow it
geometrically (BlazeFace passed 65504, EfficientNetV2's squeeze-excite gates saw logits
in the hundreds). So the weights are then calibrated, layer by layer in network order
(the LSUV idea): one fp32 CPU forward on a standard-normal input, where each layer of the
convolution family and InnerProduct has its weights and bias multiplied by a factor that
brings its output *before* the fused activation to RMS 1 (RMS 3 for the heads a
detection layer reads; the factor is a power of 2^(1/4), so the bytes do not hang on the
last bit of a sum). Every later layer sees calibrated inputs, so one pass suffices. Inputs
without a shape in the .param take ``input_shape`` (``--shape``, default 3x224x224). When a
layer fails at that size, the error names it and, where the layers before it show what it
needs (a position embedding, a Reshape's or an InnerProduct's fixed size), the square input
that fits (``needed_input_size``; ViT's 384x384).

int8 layers (Convolution, ConvolutionDepthWise, InnerProduct with ``int8_scale_term``) get
their scales as ncnn's calibration tools would write them: weight scales 127 / max|w| per
output channel (per group, or one, as the layer stores them), the bottom scale 127 / max|x| of
the layer's input in the calibration forward (which runs in fp32), and with 8 > 100 the top
scale 127 / max|y| of its activated output, which is the next layer's input, so a requantized
int8 blob means what its consumer's bottom scale says. The weights are written as fp32 (the
layer quantizes them at load) or, with ``--int8``, in ncnn's int8 storage (flag 0x000D4B38),
quantized with those scales. Quantize's scales come from the calibration too; Dequantize's and
Requantize's are near 1/127 in, 1 out. An int8 Embed table is written as int8 with a scale
that makes its values unit-sized, an int8 Gemm's constant A / B as int8 with their scales
(ncnn's x86 int8 Gemm reads its constants as int8 storage only).
"""

from __future__ import annotations

import argparse
import io
import logging
import struct
import sys

import numpy as np

from ..mat import Mat
from ..modelbin import FP16_TAG, INT8_TAG, ModelBin

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
    "RMSNorm": ("scale",),
}
# layers whose int8_scale_term adds scales after their weights and bias
_INT8_LAYERS = frozenset(("Convolution", "ConvolutionDepthWise", "InnerProduct"))
# an int8 Embed table's values are integers; this scale makes them unit-sized
_EMBED_INT8_SCALE = 127.0 / 3.0
# the He gain: 2 for ReLU-like activations, which most of these networks use
_GAIN = 2.0


# layers whose output scales with their weight and bias blobs (before the fused activation)
_CALIBRATED = frozenset(
    (
        "Convolution",
        "ConvolutionDepthWise",
        "Convolution1D",
        "Deconvolution",
        "DeconvolutionDepthWise",
        "InnerProduct",
    )
)
# calibration factors are powers of 2^(1/_STEPS)
_STEPS = 4
# a detection layer thresholds sigmoid/softmax scores of its heads: logits of RMS 1 leave
# almost nothing above its threshold (MobileNet-YOLO kept 2 boxes), RMS 3 a few hundred
_DETECTION_TYPES = frozenset(("DetectionOutput", "Yolov3DetectionOutput", "YoloDetectionOutput"))
_HEAD_RMS = 3.0
_DEFAULT_SHAPE = (3, 224, 224)


class _RecordingModelBin(ModelBin):
    """Hands out random blobs for one layer and records each one (values, type, role)."""

    def __init__(self, layer, gen: np.random.Generator, fp16: bool, blobs: list) -> None:
        self.layer = layer
        self.gen = gen
        self.fp16 = fp16
        self.blobs = blobs
        self.count = 0
        self.gemm_scales: dict[str, np.ndarray] = {}

    def _role(self) -> str:
        roles = _roles(self.layer)
        return roles[self.count] if self.count < len(roles) else "data"

    def _values(self, n: int, role: str) -> np.ndarray:
        g = self.gen
        if role == "weight":
            outputs = max(1, int(getattr(self.layer, "num_output", 0) or 0))
            fan_in = max(1, n // outputs)
            if self.layer.type == "Gemm" and int(self.layer.constantK) > 0:
                fan_in = int(self.layer.constantK)  # a constant A (M x K) or B (N x K)
            return g.standard_normal(n) * np.sqrt(_GAIN / fan_in)
        if role == "bias":
            return g.standard_normal(n) * 0.05
        if role == "shift":
            return g.standard_normal(n) * 0.1
        if role in ("scale", "variance"):
            return g.uniform(0.7, 1.3, n)
        if role == "slope":
            return g.uniform(0.0, 0.3, n)
        if role in ("bottom scale", "top scale"):
            return np.ones(n)  # set from the calibration forward when written
        if role == "dequantize scale":
            return g.uniform(0.7, 1.3, n) / 127.0
        if role == "embed scale":
            return np.full(n, _EMBED_INT8_SCALE)
        return g.standard_normal(n)

    def load_1d(self, w: int, type_: int) -> Mat:
        if w < 0 or type_ not in (0, 1):
            log.error(
                "randbin: %s %r asks for %d values of type %d", self.layer.type, self.layer.name, w, type_
            )
            return Mat()
        role = self._role()
        if role in ("gemm A", "gemm B"):
            return self._gemm_int8(w, type_, role)
        if role in ("gemm A scales", "gemm B scale"):
            values = self.gemm_scales.pop(role)
            self.count += 1
            self.blobs.append((values, type_, role))
            return Mat.from_tensor(values)
        if role == "int8 table":  # an Embed whose table must be int8-stored
            table = self.gen.integers(-127, 128, w).astype(np.int8)
            self.count += 1
            self.blobs.append((table, type_, role))
            return Mat.from_tensor(table) if w else Mat()
        if role == "weight scale":
            # 127 / max|w| per row of the layer's first blob: per output channel, per group or one
            weight = self.blobs[0][0]
            absmax = np.abs(weight.reshape(w, -1)).max(axis=1) if w else weight[:0]
            values = (127.0 / np.where(absmax > 0, absmax, 1.0)).astype(np.float32)
        else:
            values = self._values(w, role).astype(np.float32)
        self.count += 1
        self.blobs.append((values, type_, role))
        if type_ == 0 and self.fp16:
            # the layer sees what the file holds: the values rounded to half
            values = values.astype(np.float16).astype(np.float32)
        if w == 0:
            return Mat()
        return Mat.from_tensor(values)

    def _gemm_int8(self, w: int, type_: int, role: str) -> Mat:
        """An int8 Gemm's constant A (one scale per row of A) or B (one scale): He-scaled
        values quantized into int8 storage, which ncnn's x86 int8 Gemm requires."""
        from ..layer._int8 import float2int8

        layer = self.layer
        k = max(1, int(layer.constantK))
        values = (self.gen.standard_normal(w) * np.sqrt(_GAIN / k)).astype(np.float32)
        if role == "gemm A":
            m = max(1, int(layer.constantM))
            a = values.reshape(k, m).T if layer.transA else values.reshape(m, k)
            absmax = np.abs(a).max(axis=1)
            scales = (127.0 / np.where(absmax > 0, absmax, 1.0)).astype(np.float32)
            q = float2int8(a * scales[:, None])
            stored = (q.T if layer.transA else q).reshape(-1)
            self.gemm_scales["gemm A scales"] = scales
        else:
            absmax = float(np.abs(values).max()) if w else 0.0
            scale = np.float32(127.0 / absmax if absmax > 0 else 1.0)
            stored = float2int8(values * scale)
            self.gemm_scales["gemm B scale"] = np.array([scale], np.float32)
        self.count += 1
        self.blobs.append((stored, type_, role))
        return Mat.from_tensor(stored) if w else Mat()


def _roles(layer) -> tuple[str, ...]:
    """The role of each blob ``layer`` loads, in load order (see _ROLES)."""
    term = int(getattr(layer, "int8_scale_term", 0) or 0)
    if layer.type in _INT8_LAYERS and term:
        roles = ("weight",) + (("bias",) if layer.bias_term else ())
        roles += ("weight scale", "bottom scale")
        return roles + (("top scale",) if term > 100 and layer.type != "InnerProduct" else ())
    if layer.type == "Gemm" and int(getattr(layer, "quantize_term", 0) or 0):
        roles = ("gemm A",) * bool(layer.constantA) + ("gemm B",) * bool(layer.constantB)
        roles += ("shift",) * bool(layer.constantC and layer.constant_broadcast_type_C != -1)
        return roles + ("gemm A scales",) * bool(layer.constantA) + ("gemm B scale",) * bool(layer.constantB)
    if layer.type == "Embed" and term:
        return ("int8 table",) + (("shift",) if layer.bias_term else ()) + ("embed scale",)
    if layer.type == "Quantize":
        return ("bottom scale",)
    if layer.type == "Dequantize":
        return ("dequantize scale", "shift")
    if layer.type == "Requantize":
        return ("dequantize scale", "scale", "shift")
    return _ROLES.get(layer.type, ())


def _write_blob(out: io.BytesIO, values: np.ndarray, type_: int, fp16: bool) -> None:
    """One blob as ncnn stores it: type 1 raw fp32, type 0 flagged fp32, fp16 or (int8 values)
    int8; 4-byte aligned."""
    if values.dtype == np.int8:
        out.write(struct.pack("<I", INT8_TAG) + values.tobytes())
    elif type_ == 1:
        out.write(values.astype("<f4").tobytes())
    elif fp16:
        out.write(struct.pack("<I", FP16_TAG) + values.astype("<f2").tobytes())
    else:
        out.write(struct.pack("<I", 0) + values.astype("<f4").tobytes())
    out.write(b"\0" * (-out.tell() % 4))


class LayerFailed(ValueError):
    """A layer of the calibration forward failed; ``index`` is its place in the net."""

    def __init__(self, message: str, index: int) -> None:
        super().__init__(message)
        self.index = index


def _fp32_option():
    """The calibration's options: fp32 on the CPU, no packing, one thread."""
    from ..option import Option

    opt = Option()
    opt.use_vulkan_compute = False
    opt.use_packing_layout = False
    opt.use_fp16_storage = opt.use_fp16_packed = opt.use_fp16_arithmetic = False
    opt.use_bf16_storage = False
    # int8 layers run in fp32 (on their dequantized weights): the scales are what is measured
    opt.use_int8_inference = False
    opt.lightmode = False
    # one thread: np.errstate in the callers is per thread
    opt.num_threads = 1
    return opt


def _run_layer(layer, li: int, mats: dict[int, Mat], opt) -> list[Mat]:
    """``layer``'s forward on its bottoms in ``mats``; its tops, or LayerFailed."""
    try:
        if layer.create_pipeline(opt) != 0:
            raise LayerFailed(f"layer {layer.type} {layer.name!r}: create_pipeline failed", li)
        if layer.one_blob_only:
            tops = [Mat()]
            ret = layer.forward(mats[layer.bottoms[0]], tops[0], opt)
        else:
            tops = [Mat() for _ in layer.tops]
            ret = layer.forward([mats[b] for b in layer.bottoms], tops, opt)
    except LayerFailed:
        raise
    except Exception as e:  # noqa: BLE001 - a layer's failure becomes randbin's error
        raise LayerFailed(f"layer {layer.type} {layer.name!r} raised {type(e).__name__}: {e}", li) from e
    if ret != 0:
        raise LayerFailed(f"layer {layer.type} {layer.name!r} failed in the calibration forward", li)
    return tops


def _input_mats(layer, input_shape, gen: np.random.Generator) -> list[Mat]:
    """Standard-normal tops of an Input layer: its own shape, else ``input_shape``."""
    dims = (int(layer.c), int(layer.h), int(layer.w))
    shape = dims if all(d > 0 for d in dims) else tuple(input_shape)
    return [Mat.from_tensor(gen.standard_normal(shape).astype(np.float32)) for _ in layer.tops]


def _quantized_gain(rms: float, target: float = 1.0) -> float:
    """target / rms rounded to a power of 2^(1/_STEPS); 1 when rms says nothing (0, inf, nan)."""
    if not np.isfinite(rms) or rms <= 0:
        return 1.0
    return float(2.0 ** (round(np.log2(target / rms) * _STEPS) / _STEPS))


def _calibrate(
    net, seed: int, input_shape: tuple[int, int, int]
) -> tuple[dict[int, float], dict[int, tuple[np.ndarray, float]]]:
    """The weight factor of each calibrated layer (by index), from one fp32 CPU forward, and
    for each layer that takes int8 scales its input's max|x| (per channel) and its activated
    output's max|y|.

    Layers run in .param order (ncnn's files list producers first) on numpy-backed Mats; a
    calibrated layer runs without its fused activation, its output is rescaled by the
    factor (exactly what scaled weights and bias give) and then activated, so no layer runs
    twice. Layers nothing later reads are skipped (unless calibrated), blobs are dropped
    after their last consumer.
    """
    from ..layer._fused_activation import activation_values, fused_activation

    opt = _fp32_option()
    layers = net.layers()
    last_use: dict[int, int] = {}
    heads: set[int] = set()
    for li, layer in enumerate(layers):
        for b in layer.bottoms:
            last_use[b] = li
        if layer.type in _DETECTION_TYPES:
            heads.update(layer.bottoms)
    gen = np.random.default_rng([seed, 1])
    mats: dict[int, Mat] = {}
    gains: dict[int, float] = {}
    ranges: dict[int, tuple[np.ndarray, float]] = {}
    # layers add whole padded channel storage (Eltwise), whose gaps hold whatever the
    # allocator left there: overflow there is noise, not a calibration error
    with np.errstate(over="ignore", invalid="ignore"):
        for li, layer in enumerate(layers):
            if layer.type == "Input":
                mats.update(zip(layer.tops, _input_mats(layer, input_shape, gen), strict=True))
                continue
            if any(b not in mats for b in layer.bottoms):
                raise LayerFailed(
                    f"layer {layer.type} {layer.name!r} reads a blob no earlier layer makes", li
                )
            calibrated = layer.type in _CALIBRATED and hasattr(layer, "activation_type")
            if not calibrated and not any(t in last_use for t in layer.tops):
                continue  # an output (or a Noop gathering outputs): nothing later depends on it
            activation = int(layer.activation_type) if calibrated else 0
            measured = any(r in ("bottom scale", "top scale") for r in _roles(layer))
            if measured:
                x = np.abs(np.asarray(mats[layer.bottoms[0]].numpy(), dtype=np.float32))
                in_absmax = x.reshape(x.shape[0], -1).max(axis=1) if x.ndim > 1 else x.max(keepdims=True)
            if calibrated:
                layer.activation_type = 0
            try:
                tops = _run_layer(layer, li, mats, opt)
            finally:
                if calibrated:
                    layer.activation_type = activation
            if calibrated:
                pre = np.array(tops[0].numpy(), dtype=np.float32)
                rms = float(np.sqrt(np.mean(np.square(pre, dtype=np.float64))))
                gain = _quantized_gain(rms, _HEAD_RMS if layer.tops[0] in heads else 1.0)
                gains[li] = gain
                pre *= np.float32(gain)
                fused_activation(
                    pre, activation, activation_values(getattr(layer, "activation_params", None))
                )
                tops = [Mat.from_tensor(pre)]
            if measured:
                ranges[li] = (in_absmax, float(np.abs(np.asarray(tops[0].numpy(), dtype=np.float32)).max()))
            for t, m in zip(layer.tops, tops, strict=False):
                if t in last_use:
                    mats[t] = m
            for b in layer.bottoms:
                if last_use.get(b) == li:
                    del mats[b]
    return gains, ranges


def _int8_scale(absmax) -> np.ndarray:
    """127 / max|x|: the scale that maps a range onto int8 (1 for an all-zero range)."""
    a = np.asarray(absmax, dtype=np.float64)
    return (127.0 / np.where(a > 0, a, 1.0)).astype(np.float32)


def _written(layer_blobs: list, gain: float, measured, int8: bool) -> list:
    """(values, type) of a layer's blobs as written: weight and bias times the layer's
    calibration factor (its weight scales divided by it), the blob scales from the calibration,
    with ``int8`` the weights quantized into int8 storage."""
    g = np.float32(gain)
    stored = {role: values for values, _, role in layer_blobs}
    out = []
    for values, type_, role in layer_blobs:
        if role == "weight" and "weight scale" in stored:
            scale = stored["weight scale"]
            if int8:  # the int8 values do not change with the factor, their scale does
                from ..layer._int8 import float2int8

                rows = values.reshape(scale.size, -1)
                values = float2int8(rows * scale[:, None]).reshape(-1)
            else:
                values = values * g
        elif role in ("weight", "bias"):
            values = values * g
        elif role == "weight scale":
            values = values / g
        elif role == "bottom scale" and measured is not None:
            absmax = measured[0]
            values = _int8_scale(absmax.max() if values.size == 1 or values.size != absmax.size else absmax)
        elif role == "top scale" and measured is not None:
            values = _int8_scale(np.full(values.size, measured[1]))
        out.append((values, type_))
    return out


class _Quiet:
    """The ncnn_c log silenced: the size search's probes fail on purpose."""

    def __enter__(self) -> None:
        self.level = log.level
        log.setLevel(logging.CRITICAL)

    def __exit__(self, *exc) -> None:
        log.setLevel(self.level)


def _prefix(net, index: int, input_shape, seed: int) -> list[Mat] | None:
    """Layer ``index``'s bottoms after a forward of the layers it depends on, every Input at
    ``input_shape`` (where the .param gives none); None when one of those layers fails."""
    layers = net.layers()
    producer = {t: li for li, layer in enumerate(layers) for t in layer.tops}
    needed: set[int] = set()
    todo = [index]
    while todo:
        for b in layers[todo.pop()].bottoms:
            p = producer.get(b)
            if p is not None and p not in needed:
                needed.add(p)
                todo.append(p)
    opt = _fp32_option()
    gen = np.random.default_rng([seed, 1])
    mats: dict[int, Mat] = {}
    with np.errstate(all="ignore"):
        for li in sorted(needed):
            layer = layers[li]
            try:
                if layer.type == "Input":
                    tops = _input_mats(layer, input_shape, gen)
                elif any(b not in mats for b in layer.bottoms):
                    return None
                else:
                    tops = _run_layer(layer, li, mats, opt)
            except LayerFailed:
                return None
            mats.update(zip(layer.tops, tops, strict=False))
    if any(b not in mats for b in layers[index].bottoms):
        return None
    return [mats[b] for b in layers[index].bottoms]


def _count(m: Mat) -> int:
    return int(m.w * m.h * m.d * m.c)


def _expected(layer, counts: list[int], moved: list[int]) -> tuple[int, int] | None:
    """(which bottom, the element count it must have) for a layer whose input-sized bottom
    (one of ``moved``, those whose count changed with the input size) must match something
    fixed: InnerProduct's weights, Reshape's target shape, or a bottom that does not move with
    the input (a MemoryData position embedding, a class token)."""
    if not moved:
        return None
    i = moved[0]
    if layer.type == "InnerProduct" and layer.num_output > 0:
        return i, int(layer.weight_data_size) // int(layer.num_output)
    if layer.type == "Reshape":
        dims = [int(v) for v in (layer.w, layer.h, layer.d, layer.c) if int(v) != -233]
        return (i, int(np.prod(dims))) if dims and min(dims) > 0 else None
    fixed = [j for j in range(len(counts)) if j not in moved]
    return (i, counts[fixed[0]]) if fixed else None


def needed_input_size(net, index: int, input_shape, seed: int = 0) -> int | None:
    """The side of the square input at which layer ``index`` (which failed at ``input_shape``)
    gets a bottom of the size it needs; None where that cannot be derived.

    The forward of the layers before it is run at two sizes to see which bottom moves with the
    input, _expected says what its element count must be, and bisections over square sides
    find the sides that give it (counts grow with the input); the roundest of them is kept
    if the layer then runs."""
    c, h, w = input_shape
    layer = net.layers()[index]
    memo: dict[int, list[Mat] | None] = {}

    def at(side: int) -> list[Mat] | None:
        if side not in memo:
            memo[side] = _prefix(net, index, (c, side, side), seed)
        return memo[side]

    with _Quiet():
        base, probe = _prefix(net, index, input_shape, seed), _prefix(net, index, (c, 2 * h, 2 * w), seed)
        if base is None or probe is None:
            return None
        counts = [_count(m) for m in base]
        moved = [j for j, m in enumerate(probe) if _count(m) != counts[j]]
        target = _expected(layer, counts, moved)
        if target is None:
            return None
        i, need = target

        def count(side: int) -> int:
            mats = at(side)
            return -1 if mats is None else _count(mats[i])

        def first(above: int) -> int | None:
            """The smallest side whose count exceeds ``above`` (counts grow with the side)."""
            lo, hi = 0, max(h, w)
            while count(hi) <= above:
                lo, hi = hi, hi * 2
                if hi > _MAX_SIDE:
                    return None
            while hi - lo > 1:
                mid = (lo + hi) // 2
                lo, hi = (lo, mid) if count(mid) > above else (mid, hi)
            return hi

        smallest, past = first(need - 1), first(need)
        if smallest is None or count(smallest) != need:
            return None
        # every side in [smallest, past) gives that count (a stride's rounding): the one with
        # the most factors of 2, as models are made (16 over 15, 384 over 385)
        largest = past - 1 if past is not None else smallest
        side = max(range(smallest, largest + 1), key=lambda s: (s & -s, -s))
        mats = at(side)
        if mats is None:
            return None
        try:
            _run_layer(layer, index, dict(zip(layer.bottoms, mats, strict=True)), _fp32_option())
        except LayerFailed:
            return None
    return side


# the largest input side the size search tries
_MAX_SIDE = 4096


def random_weights(
    param_path: str,
    seed: int = 0,
    fp16: bool = False,
    input_shape: tuple[int, int, int] = _DEFAULT_SHAPE,
    int8: bool = False,
) -> bytes:
    """The .bin bytes for ``param_path``; raises ValueError naming the layer that cannot load.

    ``input_shape`` (c, h, w) is the calibration input of an Input layer whose shape the
    .param leaves out. ``int8``: the weights of int8 layers in ncnn's int8 storage."""
    from ..net import Net

    net = Net()
    if net.load_param(param_path) != 0:
        raise ValueError(f"{param_path}: load_param failed (see the log)")
    gen = np.random.default_rng(seed)
    blobs: list[list] = []
    for layer in net.layers():
        blobs.append([])
        mb = _RecordingModelBin(layer, gen, fp16, blobs[-1])
        if layer.load_model(mb) != 0:
            raise ValueError(f"{param_path}: layer {layer.type} {layer.name!r} failed to load its weights")
    try:
        # nothing to calibrate (an LLM decoder's Gemm / RMSNorm): no forward, whose inputs
        # (token embeddings, mask, rope tables) the default image shape would not fit
        measures = any(
            li.type in _CALIBRATED or any(r in ("bottom scale", "top scale") for r in _roles(li))
            for li in net.layers()
        )
        gains, ranges = _calibrate(net, seed, input_shape) if measures else ({}, {})
    except LayerFailed as e:
        c, h, w = input_shape
        side = needed_input_size(net, e.index, input_shape, seed)
        if side is not None:
            hint = f"it needs a {side}x{side} input: --shape {c},{side},{side}"
        else:
            hint = (
                "no input size that suits it could be derived: try --shape C,H,W of the size the model takes"
            )
        raise ValueError(
            f"{param_path}: {e} at a {w}x{h} input ({c} channels; inputs the .param gives no shape "
            f"run at --shape {c},{h},{w}); {hint}"
        ) from None
    out = io.BytesIO()
    for li, layer_blobs in enumerate(blobs):
        for values, type_ in _written(layer_blobs, gains.get(li, 1.0), ranges.get(li), int8):
            _write_blob(out, values, type_, fp16)
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
    ap.add_argument(
        "--int8", action="store_true", help="store the weights of int8 layers as int8 (ncnn's int8 storage)"
    )
    ap.add_argument(
        "--shape",
        default="3,224,224",
        help="C,H,W of the calibration input where the .param gives none (default 3,224,224); "
        "when the calibration forward fails, the error names the layer and, where it can be "
        "derived, the input size it needs",
    )
    args = ap.parse_args(argv)
    try:
        shape = tuple(int(v) for v in args.shape.split(","))
        if len(shape) != 3 or min(shape) < 1:
            raise ValueError
    except ValueError:
        print(f"randbin: --shape wants three positive integers C,H,W, got {args.shape!r}", file=sys.stderr)
        return 2
    logging.basicConfig(level=logging.WARNING, format="%(message)s")
    try:
        data = random_weights(args.param, args.seed, args.fp16, shape, args.int8)
    except (ValueError, OSError) as e:
        print(f"randbin: {e}", file=sys.stderr)
        return 1
    with open(args.out, "wb") as f:
        f.write(data)
    print(f"randbin: wrote {len(data)} bytes to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
