"""Layer base class and the layer registry.

The contract is ncnn's: ``load_param(pd)``, ``load_model(mb)``,
``create_pipeline(opt)``, ``destroy_pipeline(opt)``, and the forward template:
``forward`` falls back to ``clone + forward_inplace`` for layers that support
in-place operation. Flags (``one_blob_only``, ``support_inplace``, ``support_vulkan`` ...)
tell the net how to call a layer.

CPU forward signatures (the same as the PyPI ``ncnn`` package, so user layers port):

* one_blob_only:  ``forward(bottom: Mat, top: Mat, opt) -> int`` fills ``top`` in place
  (``top.create(...)``, ``top.clone_from(...)`` or ``top.share_from(...)``);
  ``forward_inplace(bottom_top: Mat, opt) -> int``.
* otherwise:      ``forward(bottoms: list[Mat], tops: list[Mat], opt) -> int`` where ``tops``
  holds one empty Mat per top blob, to be filled; ``forward_inplace(bottom_tops: list[Mat], opt)``.

GPU forward (layers with ``support_vulkan``), recorded into a ``VkCompute``:

* ``forward_vk(bottom: VkMat, top: VkMat, cmd, opt)`` / ``forward_vk(bottoms, tops, cmd, opt)``
* ``forward_inplace_vk(bottom_top: VkMat, cmd, opt)`` / list form
* ``upload_model(cmd, opt)`` uploads weights after ``create_pipeline``.

The registry is built from the files that exist: ``layer/<typename lowercased>.py`` holds
the CPU class named after the ncnn type, ``layer/vulkan/<name>_vulkan.py`` holds
``<Type>_vulkan`` (a subclass of the CPU class, so it can still run on the CPU).
Type indexes are ncnn's, because binary param files store them.

Parameters are declared once per layer class, as ncnn's operator docs list them::

    class Clip(Layer):
        PARAMS = (Param(0, "min", -FLT_MAX), Param(1, "max", FLT_MAX))

The base ``load_param`` reads every declared id into the attribute of that name (the
default's type decides int / float; ``"ints"`` / ``"floats"`` kinds give numpy arrays;
a default naming an earlier param, e.g. ``Param(11, "kernel_h", "kernel_w")``, copies that
param's value) and then calls ``check_params()``, the one place a layer validates them
(log why and return -1). GPU subclasses reuse the same attributes and geometry helpers.
"""

from __future__ import annotations

import importlib
import logging
import os
from typing import TYPE_CHECKING, Any, ClassVar, NamedTuple

import numpy as np

if TYPE_CHECKING:
    from ..gpu.device import VulkanDevice

# not "log": importing the Log layer (layer/log.py) sets this package's attribute "log"
_log = logging.getLogger("ncnn_c")

# ncnn's layer type indexes (binary .param files store these numbers). Order matters.
LAYER_TYPES = (
    "AbsVal", "ArgMax", "BatchNorm", "Bias", "BNLL", "Concat", "Convolution", "Crop",
    "Deconvolution", "Dropout", "Eltwise", "ELU", "Embed", "Exp", "Flatten", "InnerProduct",
    "Input", "Log", "LRN", "MemoryData", "MVN", "Pooling", "Power", "PReLU", "Proposal",
    "Reduction", "ReLU", "Reshape", "ROIPooling", "Scale", "Sigmoid", "Slice", "Softmax",
    "Split", "SPP", "TanH", "Threshold", "Tile", "RNN", "LSTM", "BinaryOp", "UnaryOp",
    "ConvolutionDepthWise", "Padding", "Squeeze", "ExpandDims", "Normalize", "Permute",
    "PriorBox", "DetectionOutput", "Interp", "DeconvolutionDepthWise", "ShuffleChannel",
    "InstanceNorm", "Clip", "Reorg", "YoloDetectionOutput", "Quantize", "Dequantize",
    "Yolov3DetectionOutput", "PSROIPooling", "ROIAlign", "Packing", "Requantize", "Cast",
    "HardSigmoid", "SELU", "HardSwish", "Noop", "PixelShuffle", "DeepCopy", "Mish",
    "StatisticsPooling", "Swish", "Gemm", "GroupNorm", "LayerNorm", "Softplus", "GRU",
    "MultiHeadAttention", "GELU", "Convolution1D", "Pooling1D", "ConvolutionDepthWise1D",
    "Convolution3D", "ConvolutionDepthWise3D", "Pooling3D", "MatMul", "Deconvolution1D",
    "DeconvolutionDepthWise1D", "Deconvolution3D", "DeconvolutionDepthWise3D", "Einsum",
    "DeformableConv2D", "GLU", "Fold", "Unfold", "GridSample", "CumulativeSum", "CopyTo",
    "Erf", "Diag", "CELU", "Shrink", "RMSNorm", "Spectrogram", "InverseSpectrogram", "Flip",
    "SDPA", "RotaryEmbed",
)  # fmt: skip

# Custom layer types get indexes with this bit set (ncnn's LayerType::CustomBit).
CUSTOM_BIT = 1 << 8

_TYPE_INDEX = {name: i for i, name in enumerate(LAYER_TYPES)}


FLT_MAX = 3.4028234663852886e38


class Param(NamedTuple):
    """One entry of a layer's parameter table: ncnn's id, our attribute name, the default.

    ``kind`` is inferred from the default (int or float) unless given: ``"ints"`` and
    ``"floats"`` are array params (numpy int32 / float32, empty when absent). A ``str``
    default is the name of an earlier param whose loaded value becomes the default.
    ``valid``: the values a scalar param may take (a ``range`` or a tuple; None: any), checked
    at load_param for every layer by the table (an unknown op type, a negative size).
    """

    id: int
    name: str
    default: Any = 0
    kind: str = ""
    valid: range | tuple | None = None


# ``Param.valid`` of the common cases
POSITIVE = range(1, 1 << 31)
NON_NEGATIVE = range(0, 1 << 31)


def _show_valid(valid: range | tuple) -> str:
    if isinstance(valid, range) and valid.step == 1:
        if valid.stop >= 1 << 31:
            return f">= {valid.start}"
        return f"{valid.start}..{valid.stop - 1}"
    return "one of " + ", ".join(str(v) for v in valid)


def _param_kind(p: Param, table: dict[str, Param]) -> str:
    if p.kind:
        return p.kind
    d = p.default
    if isinstance(d, str):
        return _param_kind(table[d], table)
    return "float" if isinstance(d, float) else "int"


def read_array_param(pd, pid: int, kind: str) -> np.ndarray:
    """An array param as numpy (int32 for ``"ints"``, float32 for ``"floats"``); empty if absent.

    ncnn keeps array params as raw 32-bit words and a layer reads them as the type it wants,
    so the bits are reinterpreted, never converted: models rely on it (YOLOv3 masks are written
    as the int bit patterns of floats, ``1077936128`` meaning 3.0).
    """
    from ..mat import Mat

    m = pd.get(pid, Mat())
    if m is None or m.empty():
        return np.zeros(0, np.int32 if kind == "ints" else np.float32)
    raw = np.ascontiguousarray(np.asarray(m.tensor()).ravel())
    if raw.dtype.itemsize != 4:
        raw = raw.astype(np.float32)
    return raw.view(np.int32 if kind == "ints" else np.float32).copy()


def load_params(layer, pd, params) -> int:
    """Set one attribute per declared Param from ``pd`` (see Param); -1, logged naming the
    param id, when a value is outside the param's ``valid`` set."""
    table = {p.name: p for p in params}
    for p in params:
        kind = _param_kind(p, table)
        if kind in ("ints", "floats"):
            setattr(layer, p.name, read_array_param(pd, p.id, kind))
            continue
        default = getattr(layer, p.default) if isinstance(p.default, str) else p.default
        value = pd.get(p.id, float(default) if kind == "float" else int(default))
        value = float(value) if kind == "float" else int(value)
        if p.valid is not None and value not in p.valid:
            _log.error(
                "%s %r: %s = %s is out of range (%s)",
                layer.type or type(layer).__name__, layer.name, param_ref(layer, p.name), value,
                _show_valid(p.valid),
            )  # fmt: skip
            return -1
        setattr(layer, p.name, value)
    return 0


def param_error(layer, name: str, why: str) -> int:
    """Log that ``layer``'s param ``name`` cannot work (``why``), naming its id; returns -1."""
    value = getattr(layer, name, None)
    shown = f" = {value}" if isinstance(value, (int, float)) else ""
    _log.error(
        "%s %r: %s%s %s", layer.type or type(layer).__name__, layer.name, param_ref(layer, name), shown, why
    )
    return -1


def param_ref(layer, name: str) -> str:
    """How a log line names one of ``layer``'s params: ``param 9 (activation_type)``."""
    for p in type(layer).PARAMS:
        if p.name == name:
            return f"param {p.id} ({name})"
    return name


def weight_error(layer, mb, message: str) -> None:
    """Say why ``layer.load_model`` fails. The Net's ModelBin (a reader, with ``error``) carries
    the reason into the Net's one log line, which names the layer and the byte offset; with any
    other ModelBin (a user's, ModelBinFromMatArray) it is logged here."""
    if hasattr(mb, "error"):
        mb.error = f"{message}: {mb.error}" if mb.error else message
    else:
        _log.error("%s %r: %s", layer.type or type(layer).__name__, layer.name, message)


def load_weight(layer, mb, what: str, *args):
    """``mb.load(*args)`` of the weight ncnn calls ``what``; an empty Mat on failure, with the
    reason naming the weight (weight_error)."""
    m = mb.load(*args)
    if m is None or m.empty():
        count = 1
        for s in args[:-1]:
            count *= int(s)
        weight_error(layer, mb, f"could not load {count} {what} values")
        from ..mat import Mat

        return Mat()
    return m


class Layer:
    """Base class of every layer, built-in or user-defined (``class MyLayer(ncnn_c.Layer)``)."""

    # the parameter table (see Param); subclasses list theirs
    PARAMS: ClassVar[tuple[Param, ...]] = ()

    # attributes of every layer that a param must not shadow (a param "type" would rename the layer)
    _RESERVED: ClassVar[frozenset[str]] = frozenset(
        ("type", "typeindex", "name", "bottoms", "tops", "featmask", "vkdev", "userdata", "one_blob_only",
         "support_inplace", "support_vulkan", "support_packing", "bottom_shapes", "top_shapes")
    )  # fmt: skip

    def __init_subclass__(cls, **kwargs) -> None:
        super().__init_subclass__(**kwargs)
        clash = [p.name for p in cls.PARAMS if p.name in Layer._RESERVED or p.name.startswith("support_")]
        if clash:
            raise TypeError(f"{cls.__name__}.PARAMS: names {clash} would shadow Layer attributes")

    def __init__(self) -> None:
        self.one_blob_only = False
        self.support_inplace = False
        self.support_vulkan = False
        self.support_packing = False
        self.support_bf16_storage = False
        self.support_fp16_storage = False
        self.support_int8_storage = False
        self.support_image_storage = False
        self.support_tensor_storage = False
        self.support_vulkan_packing = False
        self.support_any_packing = False
        self.support_vulkan_any_packing = False
        self.support_reserved = False

        self.featmask = 0
        self.typeindex = -1
        self.type = ""
        self.name = ""
        self.bottoms: list[int] = []
        self.tops: list[int] = []
        self.bottom_shapes: list = []
        self.top_shapes: list = []
        self.vkdev: VulkanDevice | None = None  # set by the net for layers that run on the GPU
        self.userdata = None
        # declared params start at their defaults, so a layer is usable before load_param
        table = {p.name: p for p in self.PARAMS}
        for p in self.PARAMS:
            kind = _param_kind(p, table)
            if kind in ("ints", "floats"):
                setattr(self, p.name, np.zeros(0, np.int32 if kind == "ints" else np.float32))
            elif isinstance(p.default, str):
                setattr(self, p.name, getattr(self, p.default))
            else:
                setattr(self, p.name, float(p.default) if kind == "float" else int(p.default))

    if TYPE_CHECKING:
        # declared params (PARAMS) become attributes at run time; tell the type checker
        def __getattr__(self, name: str) -> Any: ...

    # -- loading ---------------------------------------------------------------------
    def load_param(self, pd) -> int:
        if self.PARAMS and load_params(self, pd, self.PARAMS) != 0:
            return -1
        return self.check_params()

    def check_params(self) -> int:
        """Validate the loaded params: log the reason and return -1 when they cannot work."""
        return 0

    def load_model(self, mb) -> int:
        return 0

    def create_pipeline(self, opt) -> int:
        return 0

    def destroy_pipeline(self, opt) -> int:
        return 0

    # -- CPU forward (ncnn's template) ----------------------------------------------------
    def forward(self, bottom, top, opt) -> int:
        if not self.support_inplace:
            return -1
        if isinstance(bottom, list):
            from ..mat import Mat

            # as ncnn's: every bottom cloned and run in place, the first len(top) of them
            # handed out (a Noop gathering two heads into one top)
            work = [Mat() for _ in bottom]
            for m, b in zip(work, bottom, strict=True):
                m.clone_from(b, opt.blob_allocator)
                if m.empty():
                    return -100
            ret = self.forward_inplace(work, opt)
            for t, m in zip(top, work, strict=False):
                t.share_from(m)
            return ret
        else:
            top.clone_from(bottom, opt.blob_allocator)
            if top.empty():
                return -100
        return self.forward_inplace(top, opt)

    def forward_inplace(self, bottom_top, opt) -> int:
        return -1

    # -- GPU forward --------------------------------------------------------------------
    def upload_model(self, cmd, opt) -> int:
        return 0

    def forward_vk(self, bottom, top, cmd, opt) -> int:
        if not self.support_inplace:
            return -1
        if isinstance(bottom, list):
            # as the CPU forward: every bottom cloned, the first len(top) handed out
            work = [type(top[0])() for _ in bottom]
            for m, b in zip(work, bottom, strict=True):
                cmd.record_clone(b, m, opt)
            ret = self.forward_inplace_vk(work, cmd, opt)
            for t, m in zip(top, work, strict=False):
                t.share_from(m)
            return ret
        cmd.record_clone(bottom, top, opt)
        return self.forward_inplace_vk(top, cmd, opt)

    def forward_inplace_vk(self, bottom_top, cmd, opt) -> int:
        return -1

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.type} {self.name!r}>"


def workspace(opt, shape: tuple[int, ...]):
    """Scratch memory for one forward call, from ``opt.workspace_allocator`` as in ncnn.

    Returns ``(keep, array)``: a float32 array of ``shape`` and the object that owns its memory;
    hold ``keep`` while the array is in use, then drop it (a pool allocator gets the block back).
    """
    from ..mat import Mat

    n = 1
    for s in shape:
        n *= int(s)
    if opt is None or getattr(opt, "workspace_allocator", None) is None or n == 0:
        return None, np.empty(shape, dtype=np.float32)
    m = Mat(n, elemsize=4, elempack=1, allocator=opt.workspace_allocator)
    if m.empty():
        raise MemoryError(f"workspace allocator could not provide {n * 4} bytes")
    return m, m.tensor()[:n].reshape(shape)


# -- registry ----------------------------------------------------------------------------
class _Entry:
    """One registry row: the type name and where its CPU / GPU classes live.

    Classes are imported on first use, so a CPU-only program never imports a GPU layer module.
    """

    __slots__ = ("name", "_cpu_module", "_vk_module", "_cpu", "_vk")

    def __init__(self, name: str, cpu_module: str | None, vk_module: str | None) -> None:
        self.name = name
        self._cpu_module = cpu_module
        self._vk_module = vk_module
        self._cpu = self._vk = None

    @property
    def cpu(self):
        if self._cpu is None and self._cpu_module:
            self._cpu = getattr(importlib.import_module(self._cpu_module), self.name)
        return self._cpu

    @property
    def vulkan(self):
        if self._vk is None and self._vk_module:
            self._vk = getattr(importlib.import_module(self._vk_module), self.name + "_vulkan")
        return self._vk

    @property
    def has_vulkan(self) -> bool:
        return self._vk_module is not None


_registry: list[_Entry] | None = None


def _build_registry() -> list[_Entry]:
    here = os.path.dirname(__file__)
    present = {f[:-3] for f in os.listdir(here) if f.endswith(".py")}
    vkdir = os.path.join(here, "vulkan")
    vk_present = {f[:-3] for f in os.listdir(vkdir) if f.endswith(".py")} if os.path.isdir(vkdir) else set()
    entries = []
    for name in LAYER_TYPES:
        mod = name.lower()
        cpu = f"{__name__}.{mod}" if mod in present else None
        vk = f"{__name__}.vulkan.{mod}_vulkan" if mod + "_vulkan" in vk_present else None
        entries.append(_Entry(name, cpu, vk))
    return entries


def registry() -> list[_Entry]:
    global _registry
    if _registry is None:
        _registry = _build_registry()
    return _registry


def layer_to_index(type_name: str) -> int:
    """ncnn's type index for a type name, -1 if unknown."""
    return _TYPE_INDEX.get(type_name, -1)


def _create(type_or_index, which: str) -> Layer | None:
    index = type_or_index if isinstance(type_or_index, int) else layer_to_index(type_or_index)
    if index < 0 or index >= len(LAYER_TYPES):
        return None
    cls = getattr(registry()[index], which)
    if cls is None:
        return None
    layer = cls()
    layer.typeindex = index
    layer.type = LAYER_TYPES[index]
    return layer


def create_layer_cpu(type_or_index) -> Layer | None:
    """A new CPU layer by ncnn type name or index; None when the type is not implemented."""
    return _create(type_or_index, "cpu")


def create_layer_vulkan(type_or_index) -> Layer | None:
    """A new Vulkan-capable layer, None when the type has no GPU implementation."""
    return _create(type_or_index, "vulkan")


def create_layer(type_or_index) -> Layer | None:
    """The PyPI-ncnn-shaped factory: the CPU implementation of a built-in type."""
    return create_layer_cpu(type_or_index)
