"""int8 on the GPU: the quantize dispatch Quantize shares with the int8 layers of a Vulkan net.

How int8 blobs live on the GPU. ncnn_c's GPU blobs have no 8-bit type: conversions and
downloads know fp32 and fp16 only. So an int8 blob is stored **widened by value** in the
blob's float storage (fp32, or fp16, which holds -127..127 exactly), and the VkMat carries a
mark saying so (``mark_int8`` / ``holds_int8``: what ncnn reads off an 8-bit elemsize).
Quantize, Requantize and the requantizing int8 layers mark their tops; the net marks an
upload of an int8 host Mat, carries the mark through its conversions, to the tops of a layer
that hands a marked bottom's buffer on (Split, a Reshape view) or only moves its marked
bottoms' values (``MOVES_INT8``: Concat, Slice, Crop, Padding ..., whose CPU forms keep an
int8 blob int8), and downloads a marked blob as the int8 Mat the CPU net holds there
(net/vulkan/forward.py). int32 blobs (what
Dequantize and Requantize read) keep their bits in a 32-bit blob: those two layers take fp32
elempack 1 blobs, so no conversion touches the bits.

The int8 layers (Convolution, ConvolutionDepthWise, InnerProduct with ``int8_scale_term``,
under ``opt.use_int8_inference``) do what ncnn's Vulkan does where it has no int8 path, run
in float, but arranged so that the arithmetic is the CPU's int8 one (``Int8Passes``):

* the bottom is quantized with the bottom scale (quantize.comp), unless it is marked int8
  already (it is then used as it is, as ncnn's CPU and Vulkan int8 layers take an 8-bit
  bottom): the blob then holds the int8 values exactly;
* the layer's own float shader runs on the int8 weights with no bias and no activation: its
  fp32 sums of int8 products are the exact int32 sums while they stay within 2^24 (K <= 1040
  terms; a longer sum rounds, ~1e-7 relative);
* one pass (dequantize.comp on the fp32 sums) applies ``sum * scale_in + bias`` rounded once,
  the activation, and for a requantizing layer (``int8_scale_term > 100``) the requantization
  with the top scale: the int8 values ``q``, marked, as on the CPU.

These layers are fp32 islands (``support_fp16_storage`` off for them): integer sums beyond
2048 do not fit fp16. For the same reason the blob an int8 layer quantizes is kept fp32 on
the way from its producer (``keep_fp32_before_int8``, at load): quantizing an fp16-rounded
value moves ~1 % of the int8 values by one step, which random-weight SSDs carried to 5e-2.
Quantize reads fp32 blobs for the same reason.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import numpy as np

from . import LOCAL_1D, VulkanLayer, outer_extent, shape4, upload_weights

if TYPE_CHECKING:
    from ...gpu.vkmat import VkMat

log = logging.getLogger("ncnn_c")


INT8_MARK = "int8_values"


def mark_int8(m, on: bool = True) -> None:
    """Mark GPU blob ``m`` as holding int8 values (widened), or clear the mark."""
    if on or getattr(m, INT8_MARK, False):
        setattr(m, INT8_MARK, on)


def holds_int8(m) -> bool:
    """Whether GPU blob ``m`` holds int8 values (see the module docstring)."""
    return bool(getattr(m, INT8_MARK, False))


# the layers whose tops hold their bottoms' values moved about, nothing computed, and whose
# CPU forms give an int8 top for int8 bottoms (as ncnn's): the mark follows the values
# (Permute, Reorg, Pooling, ReLU widen an int8 blob on the CPU: their tops are fp32 there)
MOVES_INT8 = frozenset(
    ["Concat", "Slice", "Split", "Crop", "Padding", "Flatten", "Reshape", "Noop", "Squeeze"]
    + ["ExpandDims", "ShuffleChannel", "PixelShuffle", "Tile", "Flip", "DeepCopy", "Dropout"]
)


def moves_int8(layer) -> bool:
    """Whether ``layer`` only moves its bottoms' values (``MOVES_INT8``; a Dropout that scales
    computes)."""
    if layer.type == "Dropout":
        return float(getattr(layer, "scale", 1.0)) == 1.0
    return layer.type in MOVES_INT8


def share_marks(bottoms, tops, layer=None) -> None:
    """After a layer's forward: a top over the buffer of a marked bottom (a Split's tops, a
    Reshape view) holds the same int8 values, and so does every top of a layer that only
    moves values (``moves_int8``) when all its bottoms are marked."""
    if layer is not None and moves_int8(layer):
        if all(holds_int8(b) for b in bottoms if b.dims):
            for t in tops:
                if t.dims:
                    mark_int8(t)
        return
    marked = [b.data for b in bottoms if holds_int8(b) and getattr(b, "data", None) is not None]
    if marked:
        for t in tops:
            if getattr(t, "data", None) is not None and any(t.data is d for d in marked):
                mark_int8(t)


# the layers an int8 bottom passes through unchanged on its way from its producer: their
# storage is fp32 too when they feed an int8 layer (keep_fp32_before_int8)
PASS_THROUGH = frozenset(
    (
        "Split",
        "Concat",
        "Slice",
        "Permute",
        "Flatten",
        "Reshape",
        "Crop",
        "Padding",
        "Noop",
        "ReLU",
        "Pooling",
    )
)


def is_int8_layer(layer, opt) -> bool:
    """Whether GPU layer ``layer`` runs int8 (Int8Passes) under ``opt``."""
    return (
        hasattr(layer, "_int8_passes")
        and bool(getattr(layer, "int8_scale_term", 0))
        and opt.use_int8_inference
    )


def _fp32_storage(layer) -> None:
    if layer.support_fp16_storage:
        layer._fp16_storage_declared = True
        layer.support_fp16_storage = False


def keep_fp32_before_int8(blobs, layers, on_gpu, opts) -> None:
    """Before the pipelines are made: every GPU layer whose top an int8 layer or a Quantize
    quantizes (directly or through PASS_THROUGH layers), and the Quantize itself, keep fp32
    storage, so the quantization reads the fp32 values the CPU's does. Run again at every
    load: what an earlier load turned off is put back first. ``on_gpu``: indexes of the
    layers that get the device; ``opts``: each layer's Option."""
    for layer in layers:
        saved = getattr(layer, "_fp16_storage_declared", None)
        if saved is not None:
            layer.support_fp16_storage = saved
            layer._fp16_storage_declared = None
    gpu = set(on_gpu)
    quantizers = [i for i in gpu if is_int8_layer(layers[i], opts[i]) or layers[i].type == "Quantize"]
    for i in quantizers:
        if not is_int8_layer(layers[i], opts[i]):  # those see to their own (Int8Passes.setup)
            _fp32_storage(layers[i])
    todo = [b for i in quantizers for b in layers[i].bottoms]
    seen: set[int] = set()
    while todo:
        b = todo.pop()
        if b in seen:
            continue
        seen.add(b)
        i = blobs[b].producer
        if i < 0 or i not in gpu:
            continue  # an input or a CPU layer's top: uploaded to the consumer's storage
        layer = layers[i]
        if is_int8_layer(layer, opts[i]):
            continue  # fp32 already
        _fp32_storage(layer)
        if layer.type in PASS_THROUGH:
            todo.extend(layer.bottoms)


def quantize_rows(m) -> tuple[int, int, int]:
    """(scalars per row, rows, row stride in scalars) of blob ``m`` for quantize.comp and
    dequantize.comp: the rows are ncnn's per-scale axis (2-D rows, 3-D / 4-D channels; a
    1-D blob is one row), a packed element's lanes consecutive scalars."""
    p = m.elempack
    if m.dims == 1:
        return m.w * p, 1, m.w * p
    if m.dims == 2:
        return m.w * p, m.h, m.w * p
    w, h, d, c, cstep = shape4(m)
    return w * h * d * p, c, cstep * p


def logical_rows(m) -> tuple[int]:
    """The unpacked length of ``m``'s per-scale axis as a 1-tuple (what ``count_fits`` reads
    of a shape): 1 for a 1-D blob, which takes the first value only."""
    return (1 if m.dims == 1 else outer_extent(m),)


def record_quantize(cmd, pipeline, src, dst, scales=None, scale: float = 1.0, out_mul: float = 1.0) -> None:
    """Record ``dst = float2int8(src * scale) * out_mul`` (quantize.comp); ``scales`` (a
    VkMat of fp32 per-row scales) replaces ``scale`` when given and the blob has rows. ``dst``
    must have ``src``'s shape and storage type; it may be ``src`` (in place)."""
    size, rows, stride = quantize_rows(src)
    per_row = int(scales is not None and src.dims > 1)
    constants = [size, rows, stride, src.elempack, per_row, float(scale), float(out_mul)]
    cmd.record_pipeline(pipeline, [src, dst, scales if per_row else None], constants, (size, rows, 1))


def folded_weights(w8: np.ndarray, scale_in: np.ndarray) -> np.ndarray:
    """The int8 weight rows (one per output channel) times their ``1 / (bottom scale * weight
    scale)``, fp32: what a float shader multiplies a quantized bottom by (see the docstring)."""
    return np.multiply(w8.astype(np.float32), scale_in.reshape(-1, 1), dtype=np.float32)


class Int8Passes:
    """The dispatches around an int8 layer's float shader (see the module docstring).

    ``Int8Passes.setup(layer, opt, attr)`` first thing in ``create_pipeline_vk``: None for a
    layer that runs in fp32 (no ``int8_scale_term``, or no ``use_int8_inference``), -1 on
    failure, else the passes. Then the layer's float shader is set up to give the raw sums:
    ``layer.<attr>`` (the weight rows its shaders read) holds the int8 weights, its bias and
    fused activation are off (the last pass applies them), it takes and makes fp32 blobs
    (``support_fp16_storage`` off: integer sums beyond 2048 do not fit fp16), and the layer
    creates its pipelines with ``passes.opt``. What setup changed is put back by the next
    setup, so a later ``create_pipeline`` without int8 inference runs the plain layer."""

    def __init__(self, layer, opt, bias, activation: list) -> None:
        self.layer = layer
        scales = layer._int8
        self.scale_in = np.asarray(scales.scale_in, np.float32).reshape(-1)
        self.bottom_scale = float(scales.bottom)
        self.top_scale = None if scales.top is None else float(scales.top)
        self.bias = bias
        self.opt = opt.copy()
        for name in ("use_fp16_storage", "use_fp16_packed", "use_fp16_arithmetic"):
            setattr(self.opt, name, False)
        self.pipeline_quantize = layer.new_pipeline("quantize", self.opt, [], LOCAL_1D)
        specs = [int(self.top_scale is not None), *activation, 1]
        self.pipeline_dequantize = layer.new_pipeline(
            "dequantize", self.opt, specs, LOCAL_1D, option_free=True
        )
        self.vectors: list = []

    @classmethod
    def setup(cls, layer, opt, attr: str) -> Int8Passes | int | None:
        from .._fused_activation import activation_specs, activation_values

        saved = getattr(layer, "_int8_saved", None)
        if saved is not None:  # an earlier create_pipeline set the layer up: put it back
            weights, layer.pad_value, layer.bias_term, layer.activation_type, layer.support_fp16_storage = (
                saved
            )
            setattr(layer, attr, weights)
            layer._int8_saved = None
        if not getattr(layer, "int8_scale_term", 0) or not getattr(opt, "use_int8_inference", False):
            return None
        if getattr(layer, attr, None) is None:
            layer._prepare()
        scales, w8 = getattr(layer, "_int8", None), getattr(layer, "_w8", None)
        weights = getattr(layer, attr)
        if scales is None or w8 is None or weights is None:
            log.error("%s %r: int8 weights are not loaded", layer.type, layer.name)
            return -1
        pad = float(getattr(layer, "pad_value", 0.0))
        layer._int8_saved = (weights, pad, layer.bias_term, layer.activation_type, layer.support_fp16_storage)
        act_params = getattr(layer, "_act", None)
        if act_params is None:
            act_params = activation_values(getattr(layer, "activation_params", None))
        activation = activation_specs(layer.activation_type, act_params)
        bias = None
        if layer.bias_term:
            bias = np.asarray(layer._bias, np.float32).reshape(-1)
        setattr(layer, attr, np.ascontiguousarray(w8, dtype=np.float32).reshape(weights.shape))
        # the CPU borders the quantized bottom with (signed char) pad_value
        layer.pad_value = float(np.clip(np.trunc(pad), -128, 127))
        layer.bias_term = 0
        layer.activation_type = 0
        layer.support_fp16_storage = False
        passes = cls(layer, opt, bias, activation)
        return passes if passes.pipeline_quantize and passes.pipeline_dequantize else -1

    def upload_model(self, cmd, opt) -> None:
        """The per-output-channel scale_in and bias, and the top scale (from the layer's
        upload_model)."""
        top = None if self.top_scale is None else np.array([self.top_scale], np.float32)
        self.vectors = [upload_vector(cmd, v, opt) for v in (self.scale_in, self.bias, top)]

    @staticmethod
    def run(passes, forward_float, bottom, top, cmd, opt) -> int:
        """``forward_float`` (the layer's float forward), between the passes when ``passes``
        (what ``setup`` gave) is an Int8Passes."""
        if isinstance(passes, Int8Passes):
            return passes.forward(forward_float, bottom, top, cmd, opt)
        return forward_float(bottom, top, cmd, opt)

    def forward(self, forward_float, bottom, top, cmd, opt) -> int:
        """Quantize the bottom (unless marked int8), run ``forward_float`` (the raw sums), then
        dequantize in place (scale_in, bias, activation) and, with a top scale, requantize
        (the top is then marked int8)."""
        q = bottom
        if not holds_int8(bottom):
            q = type(bottom)()
            q.create_like(bottom, opt.blob_vkallocator)
            if q.empty():
                return -100
            record_quantize(cmd, self.pipeline_quantize, bottom, q, scale=self.bottom_scale)
        ret = forward_float(q, top, cmd, opt)
        if ret != 0:
            return ret
        size, rows, stride = quantize_rows(top)
        scale_in, bias, top_scale = self.vectors
        per_channel = int(self.scale_in.size > 1)
        bias_mode = 0 if bias is None else 2
        # the output channels: a 1-D top's scalars (its lanes are consecutive), a 2-D top's
        # columns (an InnerProduct over rows), a 3-D top's channels
        if top.dims == 1:
            size, rows, stride = 1, size, 1
        constants = [size, rows, stride, per_channel, bias_mode, 0, 1 if top.dims == 1 else top.elempack]
        constants += [int(top.dims == 2), 1.0]
        bindings = [top, top, scale_in, bias, top_scale]
        cmd.record_pipeline(self.pipeline_dequantize, bindings, constants, (constants[0], constants[1], 1))
        mark_int8(top, self.top_scale is not None)
        return 0


def upload_vector(cmd, values: np.ndarray | None, opt) -> VkMat | None:
    """A scale / bias vector on the device (fp32, padded to 4 values), or None without one."""
    if values is None:
        return None
    v = np.zeros(max(4, -(-values.size // 4) * 4), np.float32)
    v[: values.size] = values.reshape(-1)
    return upload_weights(cmd, v, opt)


class DequantizeGpu(VulkanLayer):
    """The GPU half of Dequantize and Requantize (dequantize.comp), ahead of the CPU class:
    int32 in as the bits of an fp32 elempack 1 blob, fp32 elempack 1 out. The vectors the
    CPU class loaded (``VECTORS``: attribute names, None for an absent one) go up as fp32."""

    # (attribute of the CPU class, its name in error lines), in the shader's binding order
    VECTORS: tuple[tuple[str, str], ...] = ()
    REQUANTIZE = 0

    def __init__(self) -> None:
        super().__init__()
        # fp16 storage or packing would run the int32 bits through a float conversion
        self.support_fp16_storage = False
        self.support_packing = False
        self.pipeline_dequantize = None
        self.vectors_gpu: dict[str, VkMat | None] = {}

    def create_pipeline_vk(self, opt) -> int:
        from .._fused_activation import activation_specs

        if self.REQUANTIZE:
            act = activation_specs(self.activation_type, self.activation_params)  # type: ignore[attr-defined]
        else:
            act = [0, 0.0, 0.0]
        specs = [self.REQUANTIZE, *act, 0]
        self.pipeline_dequantize = self.new_pipeline("dequantize", opt, specs, LOCAL_1D, option_free=True)
        return 0 if self.pipeline_dequantize else -1

    def upload_model(self, cmd, opt) -> int:
        self.vectors_gpu = {attr: upload_vector(cmd, getattr(self, attr), opt) for attr, _ in self.VECTORS}
        return 0

    def release_gpu_data(self) -> None:
        self.vectors_gpu = {}

    def forward_vk(self, bottom, top, cmd, opt) -> int:
        from .._int8 import count_fits

        if bottom.dims < 1 or bottom.elempack != 1 or bottom.elemsize != 4:
            log.error(
                "%s %r: needs an elempack-1 blob of int32, got dims %d elemsize %d elempack %d",
                self.type, self.name, bottom.dims, bottom.elemsize, bottom.elempack,
            )  # fmt: skip
            return -1
        rows = logical_rows(bottom)
        sizes = {attr: getattr(self, attr) for attr, _ in self.VECTORS}
        for attr, what in self.VECTORS:
            v = sizes[attr]
            if v is not None and not count_fits(self, what, v.size, rows, bottom.dims):
                return -1
        top.create_like(bottom, opt.blob_vkallocator)
        if top.empty():
            return -100
        size, nrows, stride = quantize_rows(bottom)

        def per_row(attr: str) -> int:
            v = sizes.get(attr)
            return int(v is not None and v.size > 1 and bottom.dims > 1)

        bias = sizes.get("bias_data")
        bias_mode = 0 if bias is None else 2 if per_row("bias_data") else 1
        constants: list = [
            size,
            nrows,
            stride,
            per_row(self.VECTORS[0][0]),
            bias_mode,
            per_row("scale_out_data"),
        ]
        constants += [1, 0, 1.0]
        vg = self.vectors_gpu
        bindings = [bottom, top, vg.get(self.VECTORS[0][0]), vg.get("bias_data"), vg.get("scale_out_data")]
        cmd.record_pipeline(self.pipeline_dequantize, bindings, constants, (size, nrows, 1))
        mark_int8(top, bool(self.REQUANTIZE))
        return 0
