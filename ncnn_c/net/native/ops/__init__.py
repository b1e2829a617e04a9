"""The op builders of the native plan, by family, and the registry the plan dispatches on.

``BUILDERS`` maps a layer type to its builder: ``build(plan, layer, segment, opt, chain)``
adds the layer's primitives to the plan, raises ``Unsupported`` where the layer (in this
shape, with these params) has no native form (it then runs as a numpy layer), and returns
the layers of ``chain`` it took in. A type missing here is always numpy. It is collected
from the families' own ``BUILDERS`` tables (and their ``DEFERRALS``), module by module in
file-name order, as the layer registry is built from file names: a new family is a new file,
and a type claimed by two families is an error at import.

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

import importlib
import pathlib

from ..plan import Builder, Ops
from . import conv, int8


def _families() -> list:
    """Every module of this package, in file-name order: a new family is a new file."""
    here = pathlib.Path(__file__).parent
    names = sorted(p.stem for p in here.glob("*.py") if not p.stem.startswith("_"))
    return [importlib.import_module(f"{__name__}.{n}") for n in names]


def _collect() -> tuple[dict[str, Builder], tuple]:
    builders: dict[str, Builder] = {}
    deferrals: list = []
    for family in _families():
        for t, build in getattr(family, "BUILDERS", {}).items():
            if t in builders:
                raise ImportError(f"native ops: {t} is built by two families ({family.__name__})")
            builders[t] = build
        deferrals += getattr(family, "DEFERRALS", ())
    return builders, tuple(deferrals)


_builders, _deferrals = _collect()
# an int8 layer must quantize what the numpy layers give, bit for bit
BUILDERS: dict[str, Builder] = {t: int8.exact_before_int8(b) for t, b in _builders.items()}

OPS = Ops(builders=BUILDERS, chains=conv.chains, deferrals=_deferrals)

# layer types with a native form (in some shapes and settings): their inputs need no copy;
# MemoryData and PriorBox (and what reads only them) are constants of a plan
NATIVE_TYPES = frozenset([*BUILDERS, "MemoryData", "PriorBox"])
