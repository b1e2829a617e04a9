"""Blob shapes from the graph and the input shapes, with no layer run: how a plan for a new
input shape is made without recording it on the numpy layers first.

A rule per layer type (``RULES``) gives the numpy shapes of a layer's tops from those of its
bottoms, with the layer's own geometry (``Window.pads`` / ``output_shape``, ``Slice.part_sizes``,
``Crop.param_box``, ``Reshape.out_shape``, ``broadcast_shapes``: the code its forward calls), or
None where the shape depends on values (a detection layer's box count, a Crop by a roi blob) or
on something this rule does not cover. A blob with no inferred shape makes every layer that
reads it a numpy layer of the plan, and such a plan's structure is new, so it is recorded
as before (``executor.py``).

Rules are checked at every recording: the recorded shapes must equal the inferred ones
wherever a rule gave one (``mismatches``); a net where one differs makes no plan from
inferred shapes again (logged; an error in strict mode). The test suite records every plan
in strict mode, so every network and layer test checks the rules too.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from types import SimpleNamespace

import numpy as np

from ...layer import Layer
from ...layer.binaryop import broadcast_shapes
from ...layer.crop import UNSET as CROP_UNSET
from .plan import builtin, numpy_shape

NpShape = tuple[int, ...]
# (layer, the numpy shapes of its bottoms, its option) -> the numpy shapes of its tops, or None
Rule = Callable[[Layer, list[NpShape], object], "list[NpShape] | None"]


def mat_shape(np_shape: NpShape) -> tuple:
    """The ``shape_of`` tuple of a fresh fp32 Mat of numpy shape (c, d, h, w) (as many axes
    as it has dims)."""
    dims = len(np_shape)
    w = np_shape[-1]
    h = np_shape[-2] if dims >= 2 else 1
    d = np_shape[1] if dims == 4 else 1
    c = np_shape[0] if dims >= 3 else 1
    return (dims, w, h, d, c, 4, 1)


def _like(s: NpShape) -> SimpleNamespace:
    """Something with a Mat's dims / w / h / d / c, for the layers' shape helpers."""
    dims, w, h, d, c, _es, _ep = mat_shape(s)
    return SimpleNamespace(dims=dims, w=w, h=h, d=d, c=c)


def _same(layer, b, opt):
    return [b[0]] * len(layer.tops)


def _window(layer, b, opt):
    """Convolution and its depthwise form, with static fp32 weights on a 3-D blob."""
    if len(b) != 1 or len(b[0]) != 3 or getattr(layer, "dynamic_weight", 0):
        return None
    if getattr(layer, "int8_scale_term", 0) and opt.use_int8_inference:
        return None
    c, h, w = b[0]
    ksize = layer.kernel_w * layer.kernel_h
    if not layer.num_output or not ksize:
        return None
    groups = layer.group_count() if hasattr(layer, "group_count") else 1
    if layer.weight_data_size != layer.num_output * c * ksize // max(1, groups):
        return None  # the forward refuses it
    pads = layer.pads((h, w))
    out = layer.output_shape((h, w), pads)
    if out is None:
        return None
    return [(layer.num_output, *out)]


def _pooling(layer, b, opt):
    if len(b[0]) not in (2, 3):
        return None
    c, h, w = b[0] if len(b[0]) == 3 else (1, *b[0])
    if layer.global_pooling:
        return [(c,)]
    if layer.adaptive_pooling:
        oh = h if layer.out_h == -233 else layer.out_h
        ow = w if layer.out_w == -233 else layer.out_w
        return [b[0]] if (oh, ow) == (h, w) else [(c, oh, ow)]
    out = layer.output_shape((h, w), layer.pads((h, w)))
    return None if out is None else [(c, *out)]


def _inner_product(layer, b, opt):
    if getattr(layer, "int8_scale_term", 0) and opt.use_int8_inference:
        return None
    if not layer.num_output or layer.weight_data_size % layer.num_output:
        return None
    num_input = layer.weight_data_size // layer.num_output
    s = b[0]
    if len(s) == 2 and s[1] == num_input:
        return [(s[0], layer.num_output)]
    return [(layer.num_output,)] if math.prod(s) == num_input else None


def _concat(layer, b, opt):
    dims = len(b[0])
    axis = 0 if dims == 1 else (layer.axis + dims if layer.axis < 0 else layer.axis)
    if not 0 <= axis < dims or any(len(s) != dims for s in b):
        return None
    rest = b[0][:axis] + b[0][axis + 1 :]
    if any(s[:axis] + s[axis + 1 :] != rest for s in b):
        return None
    out = list(b[0])
    out[axis] = sum(s[axis] for s in b)
    return [tuple(out)]


def _slice(layer, b, opt):
    s = b[0]
    dims = len(s)
    axis = 0 if dims == 1 else layer.axis + dims if layer.axis < 0 else layer.axis
    if not 0 <= axis < dims:
        return None
    sizes = layer.part_sizes(s[axis], len(layer.tops))
    if sizes is None:
        return None
    return [s[:axis] + (n,) + s[axis + 1 :] for n in sizes]


def _crop(layer, b, opt):
    s = b[0]
    box = layer.param_box(s)
    if box is None:
        if layer._exprs is not None or len(b) < 2 or layer.woffset == CROP_UNSET:
            return None  # offsets from expressions or from a roi blob's values
        box = layer._box_from_reference(s, _like(b[1]))
    if box is None or any(o < 0 or n <= 0 or o + n > m for (o, n), m in zip(box, s, strict=True)):
        return None
    return [tuple(n for _o, n in box)]


def _interp(layer, b, opt):
    if layer._size_expr is not None:
        return None
    s = b[0]
    dims = len(s)
    if dims not in (1, 2, 3):
        return None
    if len(b) == 2:
        ref = _like(b[1])
        outw, outh = ref.w, ref.h
    else:
        w, h = (1, 1) if dims == 1 else (s[-1], s[-2])
        outw, outh = layer.output_width, layer.output_height
        if outw == 0 or outh == 0:
            outw = int(np.float32(w) * np.float32(layer.width_scale))
            outh = int(np.float32(h) * np.float32(layer.height_scale))
    if outw <= 0 or (dims != 2 and outh <= 0):
        return None
    if dims == 1:
        return [(s[0], outh, outw)]
    if dims == 2:
        return [b[0]] if outw == s[1] else [(s[0], outw)]
    if (outh, outw) == s[1:]:
        return [b[0]]
    return None if layer.resize_type == 0 else [(s[0], outh, outw)]


def _permute(layer, b, opt):
    s = b[0]
    if len(s) == 1 or layer.order_type == 0:
        return [s]
    axes = layer.transpose_axes(len(s))
    return None if axes is None else [tuple(s[a] for a in axes)]


def _flatten(layer, b, opt):
    return [layer.out_shape(_like(b[0]))]


def _reshape(layer, b, opt):
    if layer._shape_expr is not None:
        return None
    out = layer.out_shape(_like(b[0]), None)
    if out is None:
        return None
    return [tuple(out)] if math.prod(out) == math.prod(b[0]) else None


def _binary(layer, b, opt):
    if layer.with_scalar:
        return [b[0]]
    if len(b) != 2:
        return None
    fit = broadcast_shapes(b[0], b[1])
    return None if fit is None else [fit[2]]


def _noop(layer, b, opt):
    return list(b) if len(b) == len(layer.tops) else None


def _eltwise(layer, b, opt):
    return [b[0]] if len(b) >= 2 and all(s == b[0] for s in b) else None


def _gemm(layer, b, opt):
    """Gemm of an input A (M, K) and a constant B: (M, N); a 1-D A is one row, a (c, 1, w)
    one c rows (the native builder's reading). Other forms: numpy decides."""
    if layer.constantA or not layer.constantB or layer.transA or len(b) != 1:
        return None
    if layer.output_transpose or layer.output_N1M:
        return None
    s = b[0]
    if len(s) == 1:
        m, k = 1, s[0]
    elif len(s) == 2:
        m, k = s
    elif len(s) == 3 and s[1] == 1:
        m, k = s[0], s[2]
    else:
        return None
    return [(m, layer.constantN)] if k == layer.constantK and layer.constantN > 0 else None


def _expanddims(layer, b, opt):
    if len(b) != 1 or not b[0]:
        return None
    out = layer.out_shape(_like(b[0]))
    return None if out is None else [tuple(out)]


def _tile(layer, b, opt):
    """Tile's forward: its (c, d, h, w) counts over the blob's, in max(dims, repeats) dims."""
    if len(b) != 1 or not 1 <= len(b[0]) <= 4:
        return None
    dims = len(b[0])
    counts = layer._counts(dims)
    if counts is None:
        return None
    _, w, h, d, c, _, _ = mat_shape(b[0])
    outdims = max(dims, layer.repeats.size)
    if counts == (1, 1, 1, 1) and outdims == dims:
        return [b[0]]
    c, d, h, w = c * counts[0], d * counts[1], h * counts[2], w * counts[3]
    if outdims < 4 and d != 1 or outdims < 3 and c != 1 or outdims < 2 and h != 1:
        return None
    return [((w,), (h, w), (c, h, w), (c, d, h, w))[outdims - 1]]


def _sdpa(layer, b, opt):
    """SDPA: (heads, src, dv) from q (heads, src, d), k (groups, cur, d), v (groups, cur, dv);
    with a kv cache the two caches grown by this step's k and v, or k and v themselves after
    an empty past (an empty blob is ``()`` here)."""
    n_in = 3 + (1 if layer.attn_mask else 0) + (2 if layer.kv_cache else 0)
    if len(b) != n_in:
        return None

    def heads(s):
        return (1, *s) if len(s) == 2 else s if len(s) == 3 else None

    q, k, v = heads(b[0]), heads(b[1]), heads(b[2])
    if q is None or k is None or v is None:
        return None
    nh, src, d = q
    groups, cur, dk = k
    if dk != d or v[:2] != (groups, cur) or nh % groups:
        return None
    out = (nh, src, v[2])
    if not layer.kv_cache:
        return [out]
    pk, pv = b[-2], b[-1]
    if not pk or (len(pk) >= 2 and pk[-2] == 0):
        return [out, b[1], b[2]]  # no past: the caches are this step's k and v
    pk, pv = heads(pk), heads(pv)
    if pk is None or pv is None:
        return None
    past = pk[1]
    if pk != (groups, past, d) or pv != (groups, past, v[2]):
        return None
    return [out, (groups, past + cur, d), (groups, past + cur, v[2])]


# layers whose one top has the shape of their (first) bottom
_SAME_TYPES = (
    "AbsVal", "BatchNorm", "Bias", "BNLL", "Clip", "Dropout", "ELU", "Erf", "Exp", "GELU",
    "HardSigmoid", "HardSwish", "LRN", "Log", "Mish", "Power", "PReLU", "ReLU", "RMSNorm",
    "RotaryEmbed", "SELU", "Scale", "ShuffleChannel", "Sigmoid", "Softmax", "Softplus",
    "Split", "Swish", "TanH", "Threshold", "UnaryOp",
)  # fmt: skip

RULES: dict[str, Rule] = {
    **dict.fromkeys(_SAME_TYPES, _same),
    "Convolution": _window,
    "ConvolutionDepthWise": _window,
    "Pooling": _pooling,
    "InnerProduct": _inner_product,
    "Concat": _concat,
    "Slice": _slice,
    "Crop": _crop,
    "Interp": _interp,
    "Permute": _permute,
    "Flatten": _flatten,
    "Reshape": _reshape,
    "BinaryOp": _binary,
    "Eltwise": _eltwise,
    "Noop": _noop,
    "Gemm": _gemm,
    "ExpandDims": _expanddims,
    "Tile": _tile,
    "SDPA": _sdpa,
}


def infer(layers: Sequence[Layer], order: Sequence[int], given: dict[int, tuple], opts) -> dict[int, tuple]:
    """The ``shape_of`` tuple of every blob of ``order`` a rule can tell, from the ``given``
    blobs' (the inputs'). A blob missing from the result has no inferred shape."""
    shapes = dict(given)
    for li in order:
        layer = layers[li]
        rule = RULES.get(layer.type)
        if rule is None or not builtin(layer) or int(getattr(layer, "featmask", 0) or 0):
            continue
        got: list[tuple] = []
        for b in layer.bottoms:
            s = shapes.get(b)
            if s is None or (s[0] != 0 and (s[5] != 4 or s[6] != 1)):
                break  # an unknown, 8-bit or packed bottom (an empty one is () to the rule)
            got.append(s)
        if not got or len(got) != len(layer.bottoms):
            continue
        try:
            tops = rule(layer, [numpy_shape(s) if s[0] else () for s in got], opts[li])
        except (AttributeError, TypeError, ValueError, ZeroDivisionError, IndexError):
            tops = None  # params this rule does not understand: numpy decides
        if tops is None or len(tops) != len(layer.tops) or any(min(t, default=0) <= 0 for t in tops):
            continue
        for t, s in zip(layer.tops, tops, strict=True):
            shapes[t] = mat_shape(s)
    return shapes


def mismatches(inferred: dict[int, tuple], recorded: dict[int, tuple]) -> list[int]:
    """Blobs whose inferred shape differs from the one a recording gave."""
    return [b for b, s in inferred.items() if b in recorded and recorded[b] != s]
