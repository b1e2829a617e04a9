"""The native CPU plan: record once per input shape, then run the whole net in native code.

The numpy layers are the reference and the fallback; they cost a Python call per layer and
hand threads over in Python. After the first extract of a shape has run them (and logged
every blob's shape), ``NativePlan`` turns the layers it can into oneDNN primitives
(``ncnn_c._native.dnnl``). Their intermediate blobs live in one arena whose offsets follow
the blobs' lifetimes, in the layouts oneDNN picked (blocked channels, or channels
innermost, by machine). A later extract of the same shape runs the plan: one C call per
native segment, the GIL released, oneDNN's threads inside. Layers with no native form
split the plan into segments: their inputs are written out as ordinary Mats, the numpy
layer runs, its output is read back in.

What is native, and how:

* convolutions, deconvolutions, inner products; the BatchNorm / Scale / Bias after them
  folded into their weights and bias, a residual add and an activation after them as
  post-ops, a zero Padding before a convolution as its own padding;
* elementwise layers as oneDNN eltwise ops (ReLU .. HardSwish, ELU, HardSigmoid, PReLU,
  the Exp / Log / Power / UnaryOp / scalar BinaryOp forms oneDNN computes alike);
* BinaryOp / Eltwise with ncnn's broadcasting where oneDNN's binary op has a kernel,
  per-channel affine layers on their own, pooling, reductions, softmax on any axis, LRN,
  nearest / bilinear Interp where a probe shows oneDNN's source positions are ncnn's;
* data movement without a primitive where it can: Split / Noop / Reshape / Flatten and
  contiguous Slice / Crop parts are views of the same bytes; other parts, Permute,
  ShuffleChannel (with the Concat before it) and Padding are strided copies or concats;
* MemoryData and PriorBox (and what reads only them) are constants of the plan.

A plan checks itself before it is used: its first run must give the numpy result
(relative L2 <= ``VERIFY_TOL``, the same non-finite cells), or it is dropped and that shape
keeps the numpy path (logged; ``NCNN_C_NATIVE_STRICT=1`` makes it an error, for tests).
Where oneDNN has only its reference code for a case, or where its result differs from the
numpy layer's by construction, the layer stays numpy.

* ``plan``: the machinery: values, segments, layouts, the arena, the run, the LRU of plans;
* ``ops``: the op builders by layer family and the registry (type -> builder);
* ``executor``: ``NativeExecutor``: recording, checking, running a plan over a BlobState.
"""

from __future__ import annotations

from .executor import VERIFY_TOL, NativeExecutor, close_enough, strict
from .ops import BUILDERS, NATIVE_TYPES, OPS
from .plan import CAPACITY, INSTANCES, NativePlan, NativePlans, Unsupported, available, shape_of

__all__ = [
    "BUILDERS",
    "CAPACITY",
    "INSTANCES",
    "NATIVE_TYPES",
    "OPS",
    "VERIFY_TOL",
    "NativeExecutor",
    "NativePlan",
    "NativePlans",
    "Unsupported",
    "available",
    "close_enough",
    "shape_of",
    "strict",
]
