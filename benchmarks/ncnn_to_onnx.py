"""Convert an ncnn .param + weights into an ONNX model: the same graph, the same weights.

    python benchmarks/ncnn_to_onnx.py MODEL.param [MODEL.bin] -o OUT.onnx [--shape C,H,W ...]
                                      [--heads] [--opset 17]

ONNX Runtime is a second reference for ``benchmarks/vs_onnxruntime.py``; timing it on
torchvision look-alikes would compare other networks, so this converter writes the very
graph of the .param with the very weights ncnn_c loads. The weights are read from ncnn_c's
own layer objects after ``net.load_model`` (no .bin: zero weights, ``DataReaderFromEmpty``),
the layer params from the same objects (their PARAMS tables), and the geometry that ncnn
decides at run time (SAME pads, Pooling's pad_mode 0 "full" tail, Slice parts, Crop boxes,
Reshape sizes, Interp output sizes) from the layers' own methods and from one ncnn_c forward
at the given input shape (the "shape pass": every blob the graph needs is extracted once).
So the ONNX graph has fixed shapes, those of the shape pass, with a batch axis of 1 in front
of ncnn's numpy order: a (c, h, w) blob is a (1, c, h, w) tensor, a 1-D (w,) blob (1, w).
After building, ONNX shape inference must give every blob ncnn's shape, or the conversion
fails: output sizes are reproduced exactly, not approximated (ncnn's pad_mode 0 is not ONNX's
ceil_mode, it becomes explicit pads).

Layer types: Input, Convolution, ConvolutionDepthWise, Deconvolution, DeconvolutionDepthWise
(with fused activations 0-6), Pooling (max / average, global, pad modes 0-3, adaptive when the
sizes divide), InnerProduct, ReLU (leaky), Clip, Sigmoid, TanH, AbsVal, Swish, Mish, HardSwish,
HardSigmoid, ELU, PReLU, Softmax, Concat, Split, Slice, Crop (param boxes), Eltwise, BinaryOp
(ncnn's broadcasting, ops 0-9), BatchNorm, Scale, LRN, Interp (nearest, bilinear, bicubic),
Padding, MemoryData, Reduction, Permute, Reshape, Flatten, ShuffleChannel, Dropout, Noop;
PriorBox becomes a constant (its output depends on the input shape only). Any other type raises
``UnsupportedLayer`` naming it. ``--heads`` (``heads=True``) cuts the network before its
detection layers (DetectionOutput, Yolov3DetectionOutput, YoloDetectionOutput): their inputs
become the graph's outputs, so the SSD / YOLO networks convert up to NMS, which ONNX would
spell differently anyway.

Exit codes: 0 written, 1 the model cannot be converted, 2 usage error.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

OPSET = 17
DETECTION_TYPES = frozenset(("DetectionOutput", "Yolov3DetectionOutput", "YoloDetectionOutput"))
# layers whose output depends on the input's shape only: folded to the values the shape pass gives
CONSTANT_TYPES = frozenset(("PriorBox",))
FLT_MAX = float(np.finfo(np.float32).max)
# the fp32 CPU options of the shape pass (the oracle's: no packing, every blob kept)
_SHAPE_PASS_FLAGS = dict(
    use_vulkan_compute=False,
    use_packing_layout=False,
    use_fp16_packed=False,
    use_fp16_storage=False,
    use_fp16_arithmetic=False,
    use_bf16_storage=False,
    lightmode=False,
)


class UnsupportedLayer(ValueError):
    """A layer type (or a form of one) that has no ONNX counterpart here."""


def _floats(m) -> np.ndarray:
    """A weight (ncnn_c Mat or ndarray) as flat float32."""
    t = m.tensor() if hasattr(m, "tensor") else m
    return np.ascontiguousarray(t, dtype=np.float32).reshape(-1)


class Graph:
    """The ONNX graph under construction: nodes, initializers, and each ncnn blob's shape
    (numpy order, no batch axis) and ONNX value name (a blob passed through, by Split, Noop or
    Dropout, is an alias of its source)."""

    def __init__(self, shapes: dict[str, tuple[int, ...]], values: dict[str, np.ndarray]) -> None:
        from onnx import helper, numpy_helper

        self.helper, self.numpy_helper = helper, numpy_helper
        self.shapes = shapes
        self.values = values
        self.nodes: list = []
        self.initializers: list = []
        self.alias: dict[str, str] = {}
        self._count = 0

    def shape(self, blob: str) -> tuple[int, ...]:
        return self.shapes[blob]

    def name(self, blob: str) -> str:
        return self.alias.get(blob, blob)

    def fresh(self, hint: str) -> str:
        self._count += 1
        return f"_onnx{self._count}_{hint}"

    def const(self, array, hint: str = "c", name: str | None = None) -> str:
        arr = np.asarray(array)
        name = name or self.fresh(hint)
        self.initializers.append(self.numpy_helper.from_array(arr, name))
        return name

    def ints(self, values) -> str:
        return self.const(np.asarray(values, dtype=np.int64), "i")

    def scalar(self, v: float) -> str:
        return self.const(np.asarray(v, dtype=np.float32), "s")

    def node(self, op: str, inputs: list[str], out: str | None = None, **attrs) -> str:
        """Add a node; returns its output name (``out`` or a fresh one)."""
        out = out or self.fresh(op.lower())
        self.nodes.append(self.helper.make_node(op, inputs, [out], **attrs))
        return out

    def reshape(self, x: str, shape, out: str | None = None) -> str:
        return self.node("Reshape", [x, self.ints(shape)], out)


def _batch(shape) -> tuple[int, ...]:
    return (1, *shape)


# -- converters: one per ncnn layer type ----------------------------------------------------------
Converter = Callable[[Graph, object, list[str], list[str]], None]
CONVERTERS: dict[str, Converter] = {}


def converts(*types: str):
    def register(fn: Converter) -> Converter:
        for t in types:
            CONVERTERS[t] = fn
        return fn

    return register


def _unsupported(layer, why: str) -> UnsupportedLayer:
    return UnsupportedLayer(f"layer {layer.type} {layer.name!r}: {why}")


def activation(g: Graph, layer, x: str, out: str) -> str:
    """ncnn's fused activation (params 9 / 10) of ``x`` into ``out``."""
    from ncnn_c.layer._fused_activation import activation_values

    kind = int(getattr(layer, "activation_type", 0))
    p = activation_values(getattr(layer, "activation_params", None))
    if kind == 0:
        return g.node("Identity", [x], out)
    if kind == 1:
        return g.node("Relu", [x], out)
    if kind == 2:
        return g.node("LeakyRelu", [x], out, alpha=float(p[0]))
    if kind == 3:
        return g.node("Clip", [x, g.scalar(p[0]), g.scalar(p[1])], out)
    if kind == 4:
        return g.node("Sigmoid", [x], out)
    if kind == 5:
        return _mish(g, x, out)
    if kind == 6:
        return g.node("Mul", [x, g.node("HardSigmoid", [x], alpha=float(p[0]), beta=float(p[1]))], out)
    raise _unsupported(layer, f"activation_type {kind}")


def _mish(g: Graph, x: str, out: str) -> str:
    # Mish is opset 18; x * tanh(softplus(x)) is its definition
    return g.node("Mul", [x, g.node("Tanh", [g.node("Softplus", [x])])], out)


def _fused(g: Graph, layer, y: str, out: str) -> None:
    """``y`` activated into ``out`` (y itself renamed when there is no activation)."""
    if int(getattr(layer, "activation_type", 0)) == 0:
        g.nodes[-1].output[0] = out  # the producing node writes the blob directly
        return
    activation(g, layer, y, out)


def _crop_negative(g: Graph, x: str, pads, shape) -> tuple[str, tuple[int, ...]]:
    """Negative pads crop, as ncnn's border copy does (a negative top crops rows at the bottom);
    returns the cropped value and the pads left (all >= 0)."""
    t, b, l, r = pads
    if min(pads) >= 0:
        return x, pads
    h, w = shape[-2:]
    rows = h - max(0, -t) - max(0, -b)
    x = g.node("Slice", [x, g.ints([0, max(0, -l)]), g.ints([rows, w - max(0, -r)]), g.ints([2, 3])])
    return x, tuple(max(0, p) for p in pads)


@converts("Convolution", "ConvolutionDepthWise")
def _convolution(g: Graph, layer, bottoms, tops) -> None:
    if int(getattr(layer, "int8_scale_term", 0)):
        raise _unsupported(layer, "int8 weights (int8_scale_term)")
    if int(getattr(layer, "dynamic_weight", 0)):
        raise _unsupported(layer, "dynamic weights")
    shape = g.shape(bottoms[0])
    if len(shape) != 3:
        raise _unsupported(layer, f"a {len(shape)}-D input")
    c, h, w = shape
    group = layer.group_count()
    kh, kw = int(layer.kernel_h), int(layer.kernel_w)
    weight = _floats(layer.weight_data).reshape(int(layer.num_output), c // group, kh, kw)
    x, pads = _crop_negative(g, g.name(bottoms[0]), layer.pads((h, w)), shape)
    t, b, l, r = pads
    if float(layer.pad_value) != 0.0 and any(pads):
        x = g.node("Pad", [x, g.ints([0, 0, t, l, 0, 0, b, r]), g.scalar(layer.pad_value)])
        t = b = l = r = 0
    inputs = [x, g.const(weight, "w")]
    if int(layer.bias_term):
        inputs.append(g.const(_floats(layer.bias_data), "b"))
    y = g.node(
        "Conv",
        inputs,
        kernel_shape=[kh, kw],
        strides=[int(layer.stride_h), int(layer.stride_w)],
        dilations=[int(layer.dilation_h), int(layer.dilation_w)],
        pads=[t, l, b, r],
        group=group,
    )
    _fused(g, layer, y, tops[0])


@converts("Deconvolution", "DeconvolutionDepthWise")
def _deconvolution(g: Graph, layer, bottoms, tops) -> None:
    if int(getattr(layer, "dynamic_weight", 0)):
        raise _unsupported(layer, "dynamic weights")
    shape = g.shape(bottoms[0])
    if len(shape) != 3:
        raise _unsupported(layer, f"a {len(shape)}-D input")
    c, h, w = shape
    group = int(getattr(layer, "group", 1))
    kh, kw = int(layer.kernel_h), int(layer.kernel_w)
    outch = int(layer.num_output)
    geom = layer.deconv_geometry(w, h, kw, kh)
    if geom is None:
        raise _unsupported(layer, "no output geometry")
    _, _, (t, b, l, r) = geom
    # ncnn stores [group][outch_g][inch_g][kh][kw]; ONNX wants [group * inch_g][outch_g][kh][kw]
    weight = _floats(layer.weight_data).reshape(group, outch // group, c // group, kh, kw)
    weight = np.ascontiguousarray(weight.transpose(0, 2, 1, 3, 4)).reshape(c, outch // group, kh, kw)
    inputs = [g.name(bottoms[0]), g.const(weight, "w")]
    if int(layer.bias_term):
        inputs.append(g.const(_floats(layer.bias_data), "b"))
    y = g.node(
        "ConvTranspose",
        inputs,
        kernel_shape=[kh, kw],
        strides=[int(layer.stride_h), int(layer.stride_w)],
        dilations=[int(layer.dilation_h), int(layer.dilation_w)],
        pads=[t, l, b, r],
        output_padding=[int(layer.output_pad_bottom), int(layer.output_pad_right)],
        group=group,
    )
    _fused(g, layer, y, tops[0])


@converts("Pooling")
def _pooling(g: Graph, layer, bottoms, tops) -> None:
    shape = g.shape(bottoms[0])
    if len(shape) != 3:
        raise _unsupported(layer, f"a {len(shape)}-D input")
    x = g.name(bottoms[0])
    c, h, w = shape
    is_max = int(layer.pooling_type) == 0
    out_shape = g.shape(tops[0])
    if layer.global_pooling:
        y = g.node("GlobalMaxPool" if is_max else "GlobalAveragePool", [x])
        g.reshape(y, _batch(out_shape), tops[0])
        return
    if layer.adaptive_pooling:
        if out_shape == shape:
            g.alias[tops[0]] = x
            return
        oh, ow = out_shape[1:]
        if h % oh or w % ow:
            raise _unsupported(layer, f"adaptive pooling {h}x{w} -> {oh}x{ow} (sizes that do not divide)")
        kernel = [h // oh, w // ow]
        g.node("MaxPool" if is_max else "AveragePool", [x], tops[0], kernel_shape=kernel, strides=kernel)
        return
    kh, kw = int(layer.kernel_h), int(layer.kernel_w)
    x, (t, b, l, r) = _crop_negative(g, x, layer.pads((h, w)), shape)
    attrs = dict(kernel_shape=[kh, kw], strides=[int(layer.stride_h), int(layer.stride_w)])
    fits = max(t, b) < kh and max(l, r) < kw  # ONNX Runtime wants pads smaller than the kernel
    if is_max:
        if not fits:
            x = g.node("Pad", [x, g.ints([0, 0, t, l, 0, 0, b, r]), g.scalar(-FLT_MAX)])
            t = b = l = r = 0
        g.node("MaxPool", [x], tops[0], pads=[t, l, b, r], **attrs)
        return
    include = int(layer.avgpool_count_include_pad)
    if int(layer.pad_mode) in (2, 3) and not include:
        # ncnn counts the cells inside the layer's pad params, the SAME pads included
        if any(int(getattr(layer, p)) for p in ("pad_top", "pad_bottom", "pad_left", "pad_right")):
            raise _unsupported(layer, "SAME average pooling with pad params, without count_include_pad")
        include = 1
    if not fits:
        if not include:
            raise _unsupported(layer, f"average pads {(t, b, l, r)} not smaller than the kernel")
        x = g.node("Pad", [x, g.ints([0, 0, t, l, 0, 0, b, r]), g.scalar(0.0)])
        t = b = l = r = 0
    g.node("AveragePool", [x], tops[0], pads=[t, l, b, r], count_include_pad=include, **attrs)


@converts("InnerProduct")
def _inner_product(g: Graph, layer, bottoms, tops) -> None:
    if int(getattr(layer, "int8_scale_term", 0)):
        raise _unsupported(layer, "int8 weights (int8_scale_term)")
    n = int(layer.num_output)
    weight = _floats(layer.weight_data).reshape(n, -1)
    bias = _floats(layer.bias_data) if int(layer.bias_term) else np.zeros(n, np.float32)
    shape = g.shape(bottoms[0])
    x = g.name(bottoms[0])
    if len(shape) == 2 and shape[1] == weight.shape[1]:
        # ncnn applies the weights to each row of a 2-D blob
        y = g.node("MatMul", [x, g.const(np.ascontiguousarray(weight.T), "w")])
        y = g.node("Add", [y, g.const(bias, "b")])
    else:
        x = g.reshape(x, [1, weight.shape[1]])
        y = g.node("Gemm", [x, g.const(weight, "w"), g.const(bias, "b")], transB=1)
    _fused(g, layer, y, tops[0])


@converts("ReLU")
def _relu(g: Graph, layer, bottoms, tops) -> None:
    x = g.name(bottoms[0])
    if float(layer.slope) == 0.0:
        g.node("Relu", [x], tops[0])
    else:
        g.node("LeakyRelu", [x], tops[0], alpha=float(layer.slope))


@converts("Clip")
def _clip(g: Graph, layer, bottoms, tops) -> None:
    g.node("Clip", [g.name(bottoms[0]), g.scalar(layer.min), g.scalar(layer.max)], tops[0])


_UNARY = {"Sigmoid": "Sigmoid", "TanH": "Tanh", "AbsVal": "Abs"}


@converts(*_UNARY)
def _unary(g: Graph, layer, bottoms, tops) -> None:
    g.node(_UNARY[layer.type], [g.name(bottoms[0])], tops[0])


@converts("Swish")
def _swish(g: Graph, layer, bottoms, tops) -> None:
    x = g.name(bottoms[0])
    g.node("Mul", [x, g.node("Sigmoid", [x])], tops[0])


@converts("Mish")
def _mish_layer(g: Graph, layer, bottoms, tops) -> None:
    _mish(g, g.name(bottoms[0]), tops[0])


@converts("HardSwish")
def _hardswish(g: Graph, layer, bottoms, tops) -> None:
    x = g.name(bottoms[0])
    hs = g.node("HardSigmoid", [x], alpha=float(layer.alpha), beta=float(layer.beta))
    g.node("Mul", [x, hs], tops[0])


@converts("HardSigmoid")
def _hardsigmoid(g: Graph, layer, bottoms, tops) -> None:
    g.node("HardSigmoid", [g.name(bottoms[0])], tops[0], alpha=float(layer.alpha), beta=float(layer.beta))


@converts("ELU")
def _elu(g: Graph, layer, bottoms, tops) -> None:
    g.node("Elu", [g.name(bottoms[0])], tops[0], alpha=float(layer.alpha))


def _per_channel(values: np.ndarray, dims: int) -> np.ndarray:
    """Per-axis-0 coefficients shaped to broadcast over a (1, n, ...) tensor of ``dims`` + 1 axes."""
    return values.reshape((1, -1) + (1,) * (dims - 1))


@converts("PReLU")
def _prelu(g: Graph, layer, bottoms, tops) -> None:
    dims = len(g.shape(bottoms[0]))
    slope = _floats(layer.slope_data)
    slope = slope[:1] if slope.size == 1 else _per_channel(slope, dims)
    g.node("PRelu", [g.name(bottoms[0]), g.const(slope, "slope")], tops[0])


@converts("Softmax")
def _softmax(g: Graph, layer, bottoms, tops) -> None:
    dims = len(g.shape(bottoms[0]))
    axis = 0 if dims == 1 else int(layer.axis) % dims  # a 1-D blob is normalised whole
    g.node("Softmax", [g.name(bottoms[0])], tops[0], axis=axis + 1)


@converts("Concat")
def _concat(g: Graph, layer, bottoms, tops) -> None:
    dims = len(g.shape(bottoms[0]))
    g.node("Concat", [g.name(b) for b in bottoms], tops[0], axis=int(layer.axis) % dims + 1)


@converts("Split", "Noop")
def _pass_through(g: Graph, layer, bottoms, tops) -> None:
    for i, t in enumerate(tops):
        g.alias[t] = g.name(bottoms[min(i, len(bottoms) - 1)])


@converts("Dropout")
def _dropout(g: Graph, layer, bottoms, tops) -> None:
    if float(layer.scale) == 1.0:
        g.alias[tops[0]] = g.name(bottoms[0])
    else:
        g.node("Mul", [g.name(bottoms[0]), g.scalar(layer.scale)], tops[0])


@converts("Slice")
def _slice(g: Graph, layer, bottoms, tops) -> None:
    dims = len(g.shape(bottoms[0]))
    axis = int(layer.axis) % dims
    # the parts' sizes are what the shape pass gave (ncnn's -233 shares resolved)
    sizes = [g.shape(t)[axis] for t in tops]
    g.nodes.append(
        g.helper.make_node("Split", [g.name(bottoms[0]), g.ints(sizes)], list(tops), axis=axis + 1)
    )


@converts("Crop")
def _crop(g: Graph, layer, bottoms, tops) -> None:
    shape = g.shape(bottoms[0])
    box = layer.param_box(shape)
    if box is None:
        raise _unsupported(layer, "a crop box from a reference blob or an expression")
    starts = [o for o, _ in box]
    ends = [o + s for o, s in box]
    axes = list(range(1, len(shape) + 1))
    g.node("Slice", [g.name(bottoms[0]), g.ints(starts), g.ints(ends), g.ints(axes)], tops[0])


@converts("Eltwise")
def _eltwise(g: Graph, layer, bottoms, tops) -> None:
    from ncnn_c.layer._fused_activation import activation_values

    xs = [g.name(b) for b in bottoms]
    op = int(layer.op_type)
    coeffs = activation_values(getattr(layer, "coeffs", None))  # a float-array param as numpy
    if op == 1 and coeffs.size:
        xs = [
            x if float(k) == 1.0 else g.node("Mul", [x, g.scalar(k)])
            for x, k in zip(xs, coeffs, strict=False)
        ]
    if op == 0:  # Mul is binary: a chain
        y = xs[0]
        for x in xs[1:-1]:
            y = g.node("Mul", [y, x])
        g.node("Mul", [y, xs[-1]], tops[0])
    else:
        g.node("Max" if op == 2 else "Add" if len(xs) == 2 else "Sum", xs, tops[0])


# BinaryOp: (ONNX op, operands swapped)
_BINARY = {
    0: ("Add", False),
    1: ("Sub", False),
    2: ("Mul", False),
    3: ("Div", False),
    4: ("Max", False),
    5: ("Min", False),
    6: ("Pow", False),
    7: ("Sub", True),
    8: ("Div", True),
    9: ("Pow", True),
}


@converts("BinaryOp")
def _binary_op(g: Graph, layer, bottoms, tops) -> None:
    from ncnn_c.layer.binaryop import broadcast_shapes

    op = int(layer.op_type)
    if op not in _BINARY:
        raise _unsupported(layer, f"op_type {op}")
    onnx_op, swap = _BINARY[op]
    a = g.name(bottoms[0])
    if layer.with_scalar:
        b = g.scalar(layer.b)
    else:
        sa, sb = g.shape(bottoms[0]), g.shape(bottoms[1])
        shapes = broadcast_shapes(sa, sb)
        if shapes is None:
            raise _unsupported(layer, f"shapes {sa} and {sb} do not broadcast")
        ea, eb, _ = shapes
        b = g.name(bottoms[1])
        # ncnn lines a lower-rank blob up with the outer axes: made explicit before ONNX's broadcast
        if ea != sa:
            a = g.reshape(a, _batch(ea))
        if eb != sb:
            b = g.reshape(b, _batch(eb))
    g.node(onnx_op, [b, a] if swap else [a, b], tops[0])


@converts("BatchNorm")
def _batchnorm(g: Graph, layer, bottoms, tops) -> None:
    # ncnn's own folded form, b * x + a, so the arithmetic is the same
    dims = len(g.shape(bottoms[0]))
    y = g.node("Mul", [g.name(bottoms[0]), g.const(_per_channel(_floats(layer.b_data), dims), "bn_b")])
    g.node("Add", [y, g.const(_per_channel(_floats(layer.a_data), dims), "bn_a")], tops[0])


@converts("Scale")
def _scale(g: Graph, layer, bottoms, tops) -> None:
    if int(layer.scale_data_size) == -233 or len(bottoms) > 1:
        raise _unsupported(layer, "a scale blob as second input")
    dims = len(g.shape(bottoms[0]))
    x = g.name(bottoms[0])
    y = g.node("Mul", [x, g.const(_per_channel(_floats(layer.scale_data), dims), "scale")])
    if int(layer.bias_term):
        g.node("Add", [y, g.const(_per_channel(_floats(layer.bias_data), dims), "bias")], tops[0])
    else:
        g.nodes[-1].output[0] = tops[0]


@converts("LRN")
def _lrn(g: Graph, layer, bottoms, tops) -> None:
    shape = g.shape(bottoms[0])
    ls = int(layer.local_size)
    x = g.name(bottoms[0])
    if len(shape) != 3:
        raise _unsupported(layer, f"a {len(shape)}-D input")
    if int(layer.region_type) == 0:
        if ls % 2 == 0:
            raise _unsupported(layer, "an even local_size across channels (ONNX centres it differently)")
        g.node(
            "LRN",
            [x],
            tops[0],
            size=ls,
            alpha=float(layer.alpha),
            beta=float(layer.beta),
            bias=float(layer.bias),
        )
        return
    # within channel: the mean of squares over an ls x ls zero-padded window
    half = ls // 2
    sq = g.node("Mul", [x, x])
    avg = g.node(
        "AveragePool",
        [sq],
        kernel_shape=[ls, ls],
        pads=[half, half, ls - 1 - half, ls - 1 - half],
        count_include_pad=1,
    )
    s = g.node("Add", [g.node("Mul", [avg, g.scalar(layer.alpha)]), g.scalar(layer.bias)])
    g.node("Mul", [x, g.node("Pow", [s, g.scalar(-float(layer.beta))])], tops[0])


@converts("Interp")
def _interp(g: Graph, layer, bottoms, tops) -> None:
    shape, out = g.shape(bottoms[0]), g.shape(tops[0])
    x = g.name(bottoms[0])
    if shape == out:
        g.alias[tops[0]] = x  # ncnn passes an unchanged size through
        return
    if len(shape) != 3 or len(out) != 3:
        raise _unsupported(layer, f"a {len(shape)}-D input")
    kind = int(layer.resize_type)
    if kind not in (1, 2, 3):
        raise _unsupported(layer, f"resize_type {kind}")
    align = int(layer.align_corner)
    attrs: dict = {"mode": {1: "nearest", 2: "linear", 3: "cubic"}[kind]}
    if kind == 1:
        # ncnn: min(int(x * step), w - 1)
        attrs.update(coordinate_transformation_mode="asymmetric", nearest_mode="floor")
    else:
        attrs["coordinate_transformation_mode"] = "align_corners" if align else "half_pixel"
        if kind == 3:
            attrs.update(cubic_coeff_a=-0.75, exclude_outside=0)
    step_y, step_x = layer._steps(len(bottoms) > 1)
    if step_x is not None and step_y is not None and not align:
        # the source step is 1 / scale (not in / out): scales say so, sizes would not
        scales = np.array([1, 1, float(layer.height_scale), float(layer.width_scale)], np.float32)
        g.node("Resize", [x, "", g.const(scales, "scales")], tops[0], **attrs)
    else:
        g.node("Resize", [x, "", "", g.ints(_batch(out))], tops[0], **attrs)


@converts("Padding")
def _padding(g: Graph, layer, bottoms, tops) -> None:
    shape = g.shape(bottoms[0])
    if int(layer.per_channel_pad_data_size):
        raise _unsupported(layer, "per-channel pad values")
    pads = layer.pads(len(shape))
    x = g.name(bottoms[0])
    if all(p == (0, 0) for p in pads):
        g.alias[tops[0]] = x
        return
    mode = {0: "constant", 1: "edge", 2: "reflect"}[int(layer.pad_type)]
    flat = [0] + [b for b, _ in pads] + [0] + [a for _, a in pads]
    g.node("Pad", [x, g.ints(flat), g.scalar(layer.value)], tops[0], mode=mode)


@converts("MemoryData")
def _memory_data(g: Graph, layer, bottoms, tops) -> None:
    data = np.asarray(layer.data, dtype=np.float32).reshape(_batch(g.shape(tops[0])))
    g.const(data, name=tops[0])


@converts(*CONSTANT_TYPES)
def _constant(g: Graph, layer, bottoms, tops) -> None:
    for t in tops:
        g.const(g.values[t].astype(np.float32).reshape(_batch(g.shape(t))), name=t)


# Reduction: ONNX op, or a composition (abs / square first, a function after)
_REDUCE = {
    0: ("ReduceSum", None, None),
    1: ("ReduceL1", None, None),
    2: ("ReduceSumSquare", None, None),
    3: ("ReduceMean", None, None),
    4: ("ReduceMax", None, None),
    5: ("ReduceMin", None, None),
    6: ("ReduceProd", None, None),
    7: ("ReduceL1", None, None),
    8: ("ReduceSumSquare", None, "Sqrt"),
    9: ("ReduceSum", None, "Log"),
    10: ("ReduceSum", "Exp", "Log"),  # ncnn does not subtract the max first: no ReduceLogSumExp
}


@converts("Reduction")
def _reduction(g: Graph, layer, bottoms, tops) -> None:
    dims = len(g.shape(bottoms[0]))
    axes = layer.reduced_axes(dims)
    if axes is None:
        raise _unsupported(layer, "bad axes")
    op, before, after = _REDUCE[int(layer.operation)]
    x = g.name(bottoms[0])
    if before:
        x = g.node(before, [x])
    onnx_axes = [a + 1 for a in axes]
    if op == "ReduceSum":  # axes an input from opset 13, the others' from opset 18
        y = g.node(op, [x, g.ints(onnx_axes)], keepdims=1)
    else:
        y = g.node(op, [x], axes=onnx_axes, keepdims=1)
    if after:
        y = g.node(after, [y])
    if float(layer.coeff) != 1.0:
        y = g.node("Mul", [y, g.scalar(layer.coeff)])
    g.reshape(y, _batch(g.shape(tops[0])), tops[0])


@converts("Permute")
def _permute(g: Graph, layer, bottoms, tops) -> None:
    dims = len(g.shape(bottoms[0]))
    x = g.name(bottoms[0])
    if dims == 1 or int(layer.order_type) == 0:
        g.alias[tops[0]] = x
        return
    axes = layer.transpose_axes(dims)
    if axes is None:
        raise _unsupported(layer, f"order_type {layer.order_type} on a {dims}-D blob")
    g.node("Transpose", [x], tops[0], perm=[0] + [a + 1 for a in axes])


@converts("Reshape", "Flatten")
def _reshape(g: Graph, layer, bottoms, tops) -> None:
    # the output shape the shape pass gave (ncnn's 0 / -1 / -233 resolved), row-major as ncnn
    g.reshape(g.name(bottoms[0]), _batch(g.shape(tops[0])), tops[0])


@converts("ShuffleChannel")
def _shuffle_channel(g: Graph, layer, bottoms, tops) -> None:
    shape = g.shape(bottoms[0])
    x = g.name(bottoms[0])
    if len(shape) < 3:
        g.alias[tops[0]] = x
        return
    c, rest = shape[0], tuple(shape[1:])
    groups = c // int(layer.group) if int(layer.reverse) else int(layer.group)
    y = g.reshape(x, (1, groups, c // groups, *rest))
    y = g.node("Transpose", [y], perm=[0, 2, 1, *range(3, len(shape) + 2)])
    g.reshape(y, _batch(shape), tops[0])


# -- the conversion ---------------------------------------------------------------------------------
def _load_net(param, weights, input_shapes):
    """An ncnn_c Net loaded with the shape pass's options, and its input shapes (numpy order)."""
    import ncnn_c
    from ncnn_c.tools.bench import input_specs

    net = ncnn_c.Net()
    for k, v in _SHAPE_PASS_FLAGS.items():
        setattr(net.opt, k, v)
    net.opt.num_threads = 1
    if net.load_param(str(param)) != 0:
        raise ValueError(f"{param}: load_param failed (see the ncnn_c log)")
    if isinstance(weights, bytes | bytearray):
        ret = net.load_model_mem(bytes(weights))
    else:
        ret = net.load_model(str(weights) if weights is not None else ncnn_c.DataReaderFromEmpty())
    if ret != 0:
        raise ValueError(f"{param}: load_model failed (see the ncnn_c log)")
    shapes = {}
    given = dict(input_shapes or {})
    for name, spec in input_specs(net):
        shape = given.pop(name, None) or (tuple(reversed(spec)) if spec else None)
        if shape is None:
            raise ValueError(f"{param}: input {name!r} has no shape in the .param: give it (input_shapes)")
        shapes[name] = tuple(int(v) for v in shape)
    if given:
        raise ValueError(f"{param}: no Input layer makes {sorted(given)}")
    return net, shapes


def _needed_layers(net, outputs: list[str], heads: bool):
    """(indexes of the layers the outputs depend on, in .param order; the outputs)."""
    layers, blobs = net.layers(), net.blobs()
    index = {b.name: i for i, b in enumerate(blobs)}
    if outputs is None:
        outputs = net.output_names()
        if heads:
            cut = []
            for name in outputs:
                p = blobs[index[name]].producer
                if p >= 0 and layers[p].type in DETECTION_TYPES:
                    cut += [blobs[b].name for b in layers[p].bottoms]
                else:
                    cut.append(name)
            outputs = list(dict.fromkeys(cut))
    unknown = [o for o in outputs if o not in index]
    if unknown:
        raise ValueError(f"no blob named {unknown[0]!r}")
    needed: set[int] = set()
    todo = [blobs[index[o]].producer for o in outputs]
    while todo:
        li = todo.pop()
        if li < 0 or li in needed:
            continue
        needed.add(li)
        todo += [blobs[b].producer for b in layers[li].bottoms]
    return sorted(needed), outputs


def _shape_pass(net, shapes: dict[str, tuple[int, ...]], blob_names: list[str], keep_values: set[str]):
    """Every blob's numpy shape from one ncnn_c forward on zeros (and the values of ``keep_values``)."""
    import ncnn_c
    from ncnn_c.layer.reshape import numpy_shape

    out_shapes, values = {}, {}
    with net.create_extractor() as ex:
        for name, shape in shapes.items():
            ex.input(name, ncnn_c.Mat(np.zeros(shape, np.float32)))
        for name in blob_names:
            ret, m = ex.extract(name)
            if ret != 0:
                raise ValueError(f"the shape pass could not compute blob {name!r} (see the ncnn_c log)")
            out_shapes[name] = tuple(int(v) for v in numpy_shape(m))
            if name in keep_values:
                values[name] = np.array(m.numpy(), dtype=np.float32, copy=True)
    return out_shapes, values


def convert(
    param,
    weights=None,
    input_shapes: dict[str, tuple[int, ...]] | None = None,
    outputs: list[str] | None = None,
    heads: bool = False,
    opset: int = OPSET,
):
    """The ONNX ModelProto of an ncnn model.

    ``weights``: the .bin path or its bytes (None: zero weights). ``input_shapes``: {input blob: numpy shape
    (c, h, w)} where the Input layer gives none (or to override it). ``outputs``: the blobs to
    compute (default: the net's outputs; with ``heads`` the inputs of its detection layers
    instead of their outputs). Graph inputs and outputs keep ncnn's blob names, with a batch axis
    of 1 in front. Raises UnsupportedLayer naming a layer type without a converter, ValueError
    when the model does not load or run in ncnn_c.
    """
    import onnx
    from onnx import TensorProto, helper

    net, shapes = _load_net(param, weights, input_shapes)
    layers, blobs = net.layers(), net.blobs()
    needed, outputs = _needed_layers(net, outputs, heads)
    missing = sorted({layers[i].type for i in needed} - set(CONVERTERS) - {"Input"})
    if missing:
        bad = next(layers[i] for i in needed if layers[i].type in missing)
        raise UnsupportedLayer(
            f"{Path(param).name}: no ONNX converter for layer type {missing[0]!r} (layer {bad.name!r})"
            + (f"; also {', '.join(missing[1:])}" if missing[1:] else "")
            + ("; --heads cuts before detection layers" if set(missing) & DETECTION_TYPES else "")
        )
    names = list(dict.fromkeys(blobs[b].name for i in needed for b in (*layers[i].bottoms, *layers[i].tops)))
    keep = {blobs[t].name for i in needed if layers[i].type in CONSTANT_TYPES for t in layers[i].tops}
    blob_shapes, values = _shape_pass(net, shapes, names, keep)
    g = Graph(blob_shapes, values)
    graph_inputs = []
    for li in needed:
        layer = layers[li]
        bottoms = [blobs[b].name for b in layer.bottoms]
        tops = [blobs[t].name for t in layer.tops]
        if layer.type == "Input":
            for t in tops:
                shape = _batch(blob_shapes[t])
                graph_inputs.append(helper.make_tensor_value_info(t, TensorProto.FLOAT, shape))
            continue
        CONVERTERS[layer.type](g, layer, bottoms, tops)
    graph_outputs = []
    for name in outputs:
        if g.name(name) != name:  # an output passed through: ONNX wants it produced by a node
            g.node("Identity", [g.name(name)], name)
            g.alias.pop(name)
        graph_outputs.append(
            helper.make_tensor_value_info(name, TensorProto.FLOAT, _batch(blob_shapes[name]))
        )
    graph = helper.make_graph(g.nodes, Path(param).stem, graph_inputs, graph_outputs, g.initializers)
    model = helper.make_model(
        graph,
        opset_imports=[helper.make_opsetid("", opset)],
        producer_name="ncnn_c benchmarks/ncnn_to_onnx.py",
    )
    model.ir_version = min(model.ir_version, 9)  # what ONNX Runtime releases of 2024 on read
    onnx.checker.check_model(model)
    _check_shapes(model, blob_shapes, g)
    return model


def _check_shapes(model, blob_shapes: dict[str, tuple[int, ...]], g: Graph) -> None:
    """ONNX shape inference must give every blob the shape ncnn_c computed."""
    import onnx

    inferred = onnx.shape_inference.infer_shapes(model, strict_mode=True)
    got = {}
    for vi in (*inferred.graph.value_info, *inferred.graph.output, *inferred.graph.input):
        dims = vi.type.tensor_type.shape.dim
        got[vi.name] = tuple(d.dim_value for d in dims)
    for init in model.graph.initializer:
        got.setdefault(init.name, tuple(init.dims))
    for blob, shape in blob_shapes.items():
        name = g.name(blob)
        if name in got and got[name] != _batch(shape):
            raise ValueError(f"blob {blob!r}: ONNX infers shape {got[name]}, ncnn gives {_batch(shape)}")


def save(model, path) -> None:
    import onnx

    onnx.save(model, str(path))


def _parse_shape(text: str) -> tuple[int, ...]:
    shape = tuple(int(v) for v in text.replace("x", ",").split(","))
    if not shape or min(shape) < 1:
        raise ValueError
    return shape


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("param")
    ap.add_argument("model", nargs="?", help="the .bin (default: zero weights)")
    ap.add_argument("-o", "--output", required=True, help="the .onnx to write")
    ap.add_argument(
        "--shape",
        action="append",
        metavar="NAME=C,H,W",
        help="an input's numpy shape where the .param gives none (C,H,W alone: the first input)",
    )
    ap.add_argument("--heads", action="store_true", help="stop before the detection layers")
    ap.add_argument("--opset", type=int, default=OPSET)
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(message)s")
    shapes: dict[str, tuple[int, ...]] = {}
    try:
        for s in args.shape or []:
            name, _, dims = s.rpartition("=")
            if not name:
                import ncnn_c
                from ncnn_c.tools.bench import input_specs

                net = ncnn_c.Net()
                net.load_param(args.param)
                specs = input_specs(net)
                name = specs[0][0] if specs else "data"
            shapes[name] = _parse_shape(dims)
    except ValueError:
        print(f"ncnn_to_onnx: --shape wants NAME=C,H,W or C,H,W, got {args.shape}", file=sys.stderr)
        return 2
    try:
        model = convert(args.param, args.model, shapes or None, heads=args.heads, opset=args.opset)
    except (ValueError, OSError) as e:
        print(f"ncnn_to_onnx: {e}", file=sys.stderr)
        return 1
    save(model, args.output)
    print(f"ncnn_to_onnx: wrote {args.output} ({len(model.graph.node)} nodes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
