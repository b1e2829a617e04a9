"""The op builders of the native plan, by family, and the registry the plan dispatches on.

``BUILDERS`` maps a layer type to its builder: ``build(plan, layer, segment, opt, chain)``
adds the layer's primitives to the plan, raises ``Unsupported`` where the layer (in this
shape, with these params) has no native form (it then runs as a numpy layer), and returns
the layers of ``chain`` it took in. A type missing here is always numpy.

* ``conv``: Convolution, ConvolutionDepthWise, Deconvolution(DepthWise), InnerProduct,
  and the fusions around them (folded affine layers, post-ops, zero padding).
* ``int8``: those of them with ``int8_scale_term`` (quantize, int32 sums, dequantize), and
  Quantize, Dequantize, Requantize.
* ``eltwise``: activations, BinaryOp, Eltwise, BatchNorm / Scale / Bias, PReLU.
* ``reduce``: Pooling, Reduction, Softmax, LRN, Interp.
* ``shape``: Split / Dropout / Noop, Concat, Flatten / Reshape, ShuffleChannel, Slice,
  Crop, Padding, Permute.
* ``transformer``: Gemm, RMSNorm, RotaryEmbed, the grouped-query head repeat (ExpandDims ->
  Tile -> Reshape).
"""

from __future__ import annotations

from ..plan import Builder, NativePlan, Ops, Segment
from . import conv, eltwise, int8, reduce, shape, transformer


def _fusing(build: Builder) -> Builder:
    """A BinaryOp / Eltwise of two blobs with an activation after it (``conv.chains``) is
    built as a producer, which takes the activation in as a post-op; else by ``build``."""

    def fused(plan: NativePlan, layer, seg: Segment, opt, chain: list[int]) -> list[int] | None:
        if chain:
            return conv.producer(plan, layer, seg, opt, chain)
        return build(plan, layer, seg, opt, chain)

    return fused


def _producer(plan: NativePlan, layer, seg: Segment, opt, chain: list[int]) -> list[int] | None:
    """An int8 convolution or inner product by ``int8``, the others by ``conv``."""
    if int8.quantized(layer):
        return int8.producer(plan, layer, seg, opt, chain)
    return conv.producer(plan, layer, seg, opt, chain)


BUILDERS: dict[str, Builder] = {
    **dict.fromkeys(conv.PRODUCERS, _producer),
    "BinaryOp": _fusing(eltwise.binaryop),
    "Eltwise": _fusing(eltwise.eltwise),
    **dict.fromkeys(eltwise.ACTIVATIONS, eltwise.activation),
    "PReLU": eltwise.prelu,
    **dict.fromkeys(conv.AFFINE_TYPES, eltwise.channel_affine),
    "Pooling": reduce.pooling,
    "Reduction": reduce.reduction,
    "Softmax": reduce.softmax,
    "LRN": reduce.lrn,
    "Interp": reduce.interp,
    **dict.fromkeys(("Split", "Dropout", "Noop"), shape.passthrough),
    "Concat": shape.concat,
    "Flatten": shape.reshape,
    "Reshape": transformer.reshape(shape.reshape),
    "ShuffleChannel": shape.shufflechannel,
    "Slice": shape.slice_layer,
    "Crop": shape.crop,
    "Padding": shape.padding,
    "Permute": shape.permute,
    "Quantize": int8.quantize,
    **dict.fromkeys(("Dequantize", "Requantize"), int8.dequantize_layer),
    "Gemm": transformer.gemm,
    "RMSNorm": transformer.rmsnorm,
    "RotaryEmbed": transformer.rotaryembed,
}

# an int8 layer must quantize what the numpy layers give, bit for bit
BUILDERS = {t: int8.exact_before_int8(b) for t, b in BUILDERS.items()}

OPS = Ops(
    builders=BUILDERS,
    chains=conv.chains,
    deferrals=(conv.pad_folds, shape.shuffled_concats, transformer.repeated_heads),
)

# layer types with a native form (in some shapes and settings): their inputs need no copy;
# MemoryData and PriorBox (and what reads only them) are constants of a plan
NATIVE_TYPES = frozenset([*BUILDERS, "MemoryData", "PriorBox"])
