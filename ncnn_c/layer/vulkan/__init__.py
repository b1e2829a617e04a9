"""Plumbing shared by the Vulkan layers: pipeline bookkeeping and blob-shape arithmetic.

Every GPU layer mixes in ``VulkanLayer`` ahead of its CPU class
(``class ReLU_vulkan(VulkanLayer, ReLU)``), creates its pipelines through
``new_pipeline`` inside ``create_pipeline_vk`` (which ``create_pipeline`` calls when the
layer has a device; without one it stays a CPU layer) and records work only with
``cmd.record_pipeline`` (or ``record_upload`` / ``record_clone``). Shapes travel as push
constants, so a pipeline never depends on a blob size and is built in forward only when a
shape hint was wrong (below).

Local sizes are fixed per shader rather than fitted to shapes: shapes are unknown when
pipelines are created, and a fixed size keeps identical layers on one cached pipeline.

A layer holds a pipeline per blob form it serves (elempack 1 or 4). When the .param's shape
hints (or what the layer knows of its channels) say which form a blob will have, the
pipelines of the other forms are passed ``needed=False`` and come back deferred: built at
their first dispatch if the hint was wrong, never otherwise (``gpu.pipeline.DeferredPipeline``).
Each pipeline not built saves its creation in every ``load_model``, warm or cold.
"""

from __future__ import annotations

import logging
import os
import weakref
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from ...gpu.device import VulkanDevice
    from ...gpu.vkmat import VkMat

log = logging.getLogger("ncnn_c")

# VkPhysicalDeviceType (GpuInfo.physical_device_type; GpuInfo.type is ncnn's code, where 3
# means CPU *or* other)
_VK_PHYSICAL_DEVICE_TYPE_CPU = 4


def is_cpu_device(info) -> bool:
    """Whether a device (its GpuInfo) is a CPU implementation of Vulkan such as lavapipe:
    shaders and pipeline threads are tuned differently there."""
    return int(getattr(info, "physical_device_type", 0) or 0) == _VK_PHYSICAL_DEVICE_TYPE_CPU


def shader_policy(env: str, default: str) -> str:
    """A per-device shader choice: "auto", "always" or "never", from the environment
    variable ``env`` when set (case and spaces ignored), else ``default``; ValueError
    naming ``env`` for anything else."""
    policy = os.environ.get(env, "").strip().lower() or default
    if policy not in ("auto", "always", "never"):
        raise ValueError(f"{env} must be auto, always or never, not {policy!r}")
    return policy


# Work-group shapes: 64 invocations fill a warp/wavefront-sized SIMD unit everywhere and
# stay under every device's minimum limit of 128 invocations.
LOCAL_1D = (64, 1, 1)
LOCAL_2D = (8, 8, 1)


class VulkanLayer:
    """Mixin for ``<Type>_vulkan`` classes; goes first in the bases so its hooks run."""

    # Layer attributes this mixin uses (it always precedes a Layer subclass in the bases)
    vkdev: VulkanDevice | None
    type: str
    name: str
    support_fp16_storage: bool
    support_packing: bool

    def __init__(self) -> None:
        super().__init__()
        self.support_vulkan = True
        self._pipelines: list = []

    def cpu_device(self) -> bool:
        """Whether the layer's device is a CPU implementation of Vulkan (lavapipe), where
        shaders are tuned differently (big register tiles, no shared-memory GEMM)."""
        assert self.vkdev is not None  # asked only once the layer has a device
        return is_cpu_device(self.vkdev.info)

    def check_params(self) -> int:
        ret = super().check_params()  # type: ignore[misc]  # the Layer after this mixin in the MRO
        if ret == 0 and getattr(self, "dynamic_weight", 0):
            # weights arriving as a blob (the convolution family) are handled on the CPU
            self.support_vulkan = False
        return ret

    def create_pipeline(self, opt) -> int:
        # without a device (no GPU, or the layer masked off Vulkan) the layer runs on the CPU,
        # where it takes fp32 elempack-1 blobs like any CPU layer
        if self.vkdev is None:
            self.support_packing = False
            self.support_fp16_storage = False
            return super().create_pipeline(opt)  # type: ignore[misc]  # the Layer after this mixin in the MRO
        return self.create_pipeline_vk(opt)

    def create_pipeline_vk(self, opt) -> int:
        """Create every Pipeline the GPU forward needs; shapes are not known yet."""
        return 0

    def new_pipeline(
        self, shader: str, opt, specializations, local_size=LOCAL_1D, option_free=False, needed=True
    ):
        """A Pipeline for ``shader`` owned by this layer; None (logged) when creation fails.

        ``option_free``: the shader's code uses no option macro (sfp, afp, NCNN_*), so it is
        compiled once for every option set (see ``without_shader_bits``). ``needed=False``:
        the layer does not expect to dispatch it (see ``hinted_elempack``); a DeferredPipeline
        is returned, built with these arguments at its first dispatch."""
        from ...gpu.pipeline import DeferredPipeline, Pipeline

        if not needed:
            frozen = (shader, opt.copy(), list(specializations), local_size, option_free)
            # weakly: the layer holds the DeferredPipeline, which must not keep the layer alive
            owner = weakref.ref(self)

            def build():
                layer = owner()
                return layer.new_pipeline(*frozen) if layer is not None else None

            return DeferredPipeline(build, f"{self.type} {self.name!r} ({shader})")

        pipeline = Pipeline(self.vkdev)
        pipeline.set_local_size_xyz(*local_size)
        # the net already switched off the storage types this layer does not declare
        if option_free:
            opt = without_shader_bits(opt)
        if pipeline.create(shader, opt, list(specializations)) != 0:
            log.error("%s %r: cannot create the %s pipeline", self.type, self.name, shader)
            return None
        self._pipelines.append(pipeline)
        return pipeline

    def hinted_elempack(self, opt, which: str = "bottom", index: int = 0, extent: int = 0) -> int | None:
        """The elempack blob ``index`` of the layer's bottoms (``which="bottom"``) or tops
        will have, by ncnn's rule (4 when packing is on and the packed axis divides by 4),
        from the .param's shape hint of that blob; None when there is no hint. ``extent``,
        when the layer knows it (a depthwise convolution's channels), stands in for a missing
        hint: the length of the packed axis of a 3-D blob.

        Layers use it to pass ``needed=False`` for the pipelines of the other elempack: a
        wrong hint then costs a build at the first dispatch, never a wrong result."""
        if not getattr(opt, "use_packing_layout", False):
            return 1
        shapes = self.bottom_shapes if which == "bottom" else self.top_shapes  # type: ignore[attr-defined]
        shape = shapes[index] if index < len(shapes) else None
        if shape is not None and getattr(shape, "dims", 0) in (1, 2, 3):
            return preferred_elempack(shape, opt)
        if extent > 0:
            return 4 if extent % 4 == 0 else 1
        return None

    def may_see_elempack(
        self, elempack: int, opt, which: str = "bottom", index: int = 0, extent: int = 0
    ) -> bool:
        """Whether a blob of the layer may come in ``elempack``: no hint, or the hint's."""
        hinted = self.hinted_elempack(opt, which, index, extent)
        return hinted is None or hinted == elempack

    def storage_fp16(self, opt) -> bool:
        """Whether this layer's blobs are fp16 (elemsize 2 per lane) under ``opt``."""
        return storage_fp16(opt, self.vkdev)

    def new_packing_pipeline(self, opt):
        """The shared layout-conversion pipeline (``packing.comp``), for layers that convert
        a blob themselves (Concat of mixed packings, Packing, Cast)."""
        return self.new_pipeline("packing", opt, [], LOCAL_1D, option_free=True)

    def accepts_3d(self, bottom) -> bool:
        """Whether ``bottom`` is the 3-D elempack-1 blob this slice's shaders index; logs if not."""
        if bottom.dims == 3 and bottom.elempack == 1:
            return True
        log.error(
            "%s %r: needs a 3-D elempack 1 blob, got dims %d elempack %d",
            self.type, self.name, bottom.dims, bottom.elempack,
        )  # fmt: skip
        return False

    def in_elempack(self, cmd, bottom, elempack: int, opt):
        """``bottom`` in ``elempack``: itself, or a copy converted on the GPU by the layer's
        ``pipeline_packing``; an int error code (logged) when it cannot be converted."""
        if bottom.elempack == elempack:
            return bottom
        pipeline = getattr(self, "pipeline_packing", None)
        if bottom.elempack not in (1, 4) or pipeline is None:
            log.error("%s %r: cannot take an elempack %d blob", self.type, self.name, bottom.elempack)
            return -1
        converted = type(bottom)()
        record_convert(cmd, pipeline, bottom, converted, elempack, is_fp16(bottom), opt)
        return -100 if converted.empty() else converted

    def accepts_vec4_channels(self, bottom) -> bool:
        """Whether ``bottom``'s channels start 16-byte aligned, as shaders that read a blob
        as vec4s need (every VkMat's are: ncnn aligns cstep); logs if not."""
        if bottom.cstep % 4 == 0:
            return True
        log.error("%s %r: input cstep %d is not a multiple of 4", self.type, self.name, bottom.cstep)
        return False

    def destroy_pipeline(self, opt) -> int:
        self.release_gpu_data()
        for pipeline in self._pipelines:
            pipeline.destroy()
        self._pipelines = []
        return super().destroy_pipeline(opt)  # type: ignore[misc]  # the Layer after this mixin in the MRO

    def release_gpu_data(self) -> None:
        """Drop device-side weights (layers with uploaded data override this)."""


def numpy_shape(m) -> tuple[int, ...]:
    """A blob's shape in ncnn's numpy order: (w,), (h, w), (c, h, w) or (c, d, h, w)."""
    return {1: (m.w,), 2: (m.h, m.w), 3: (m.c, m.h, m.w), 4: (m.c, m.d, m.h, m.w)}[m.dims]


def channel_split(m) -> tuple[int, tuple[int, ...]]:
    """(channels, in-channel extents slow to fast); 1-D/2-D blobs are one dense channel."""
    shape = numpy_shape(m)
    return (shape[0], shape[1:]) if m.dims >= 3 else (1, shape)


def shape4(m) -> tuple[int, int, int, int, int]:
    """(w, h, d, c, cstep) with absent axes as 1; a 1-D/2-D blob is a single channel."""
    shape = numpy_shape(m)
    w = shape[-1]
    h = shape[-2] if m.dims >= 2 else 1
    d = shape[1] if m.dims == 4 else 1
    c = shape[0] if m.dims >= 3 else 1
    return w, h, d, c, (m.cstep if m.dims >= 3 else w * h)


def create_like_shape(top, shape, bottom, opt) -> None:
    """``top.create`` for a numpy-order ``shape`` with ``bottom``'s element type and packing."""
    top.create(
        *shape[::-1], elemsize=bottom.elemsize, elempack=bottom.elempack, allocator=opt.blob_vkallocator
    )


def record_elementwise(cmd, pipeline, blob) -> None:
    """Dispatch a scalar shader over every scalar of ``blob`` as a (w*h*d*elempack, c) grid,
    skipping cstep padding. The lanes of a packed element are consecutive scalars, so one
    pipeline serves elempack 1 and 4 alike."""
    w, h, d, c, cstep = shape4(blob)
    p = blob.elempack
    cmd.record_pipeline(pipeline, [blob], [w * h * d * p, c, cstep * p], (w * h * d * p, c, 1))


# -- storage forms and the layout conversion --------------------------------------------------


def storage_fp16(opt, vkdev) -> bool:
    """Blobs are fp16 when fp16 storage is on and the device has it. ``use_fp16_packed``
    alone (a device without 16-bit storage) keeps blobs fp32: see docs/gpu-layers.md."""
    if not getattr(opt, "use_fp16_storage", False):
        return False
    info = getattr(vkdev, "info", None)
    return bool(getattr(info, "support_fp16_storage", False)) if info is not None else False


def elemsize_for(elempack: int, fp16: bool) -> int:
    return (2 if fp16 else 4) * elempack


def is_fp16(m) -> bool:
    return m.elemsize // max(1, m.elempack) == 2


def without_shader_bits(opt):
    """An Option with every shader bit off and ``opt``'s cache and device: the key under which
    a shader that reads no option macro is compiled, so every option set shares its SPIR-V."""
    from ...option import SHADER_OPTION_BITS

    o = opt.copy()
    for name in SHADER_OPTION_BITS:
        setattr(o, name, False)
    return o


def outer_extent(m) -> int:
    """The logical (unpacked) size of the axis that elempack packs: w, h or c by dims."""
    packed = {1: m.w, 2: m.h}.get(m.dims, m.c)
    return packed * m.elempack


def preferred_elempack(m, opt) -> int:
    """ncnn's choice for a blob: 4 when packing is on and the packed axis divides by 4."""
    return 4 if getattr(opt, "use_packing_layout", False) and outer_extent(m) % 4 == 0 else 1


def _lines(m) -> tuple[int, int, int]:
    """(outer, inner, stride) of ``m`` as packing.comp sees it (stride in elements)."""
    if m.dims == 1:
        return m.w * m.elempack, 1, 1
    if m.dims == 2:
        return m.h * m.elempack, m.w, m.w
    return m.c * m.elempack, m.w * m.h * m.d, m.cstep


# grid row width of packing.comp (invocations), a multiple of LOCAL_1D
_PACKING_ROW = 16384


def record_convert(cmd, pipeline, src, dst, elempack: int, fp16: bool, opt) -> None:
    """Record ``dst`` = ``src`` in the form (elempack, fp16); ``dst`` is created here. The
    packed axis is padded with zeros when elempack does not divide it."""
    outer, inner, in_stride = _lines(src)
    packed = -(-outer // elempack)
    shape = {1: (packed,), 2: (src.w, packed), 3: (src.w, src.h, packed), 4: (src.w, src.h, src.d, packed)}
    dst.create(
        *shape[src.dims],
        elemsize=elemsize_for(elempack, fp16),
        elempack=elempack,
        allocator=opt.blob_vkallocator,
    )
    if dst.empty():
        return
    out_stride = _lines(dst)[2]
    total = packed * out_stride * elempack
    words = -(-total // 2) if fp16 else total
    row = min(_PACKING_ROW, words)
    constants = [outer, inner, in_stride, out_stride, src.elempack, elempack, int(is_fp16(src)), int(fp16)]
    constants += [total, row]
    cmd.record_pipeline(pipeline, [src, dst], constants, (row, -(-words // row), 1))


# -- weights --------------------------------------------------------------------------------

# values tried before a full fp16 round trip: a float32 model fails here at once
_FP16_PROBE = 4096


def fp16_exact(weights: np.ndarray) -> np.ndarray | None:
    """``weights`` as float16 when every value converts to fp16 and back unchanged (a model
    stored as fp16), else None (NaN and overflow never fit). A prefix decides first, so
    float32 weights cost no full conversion; the halves returned serve the upload."""
    flat = weights.reshape(-1)
    with np.errstate(over="ignore", invalid="ignore"):
        head = flat[:_FP16_PROBE]
        if not np.array_equal(head.astype(np.float16).astype(np.float32), head):
            return None
        halves = flat.astype(np.float16)
        if not np.array_equal(halves.astype(np.float32), flat):
            return None
    return halves.reshape(weights.shape)


def upload_weights(cmd, array: np.ndarray, opt) -> VkMat:
    """Record the upload of ``array`` (float32, or float16 of an even count: pairs of halves
    per 32-bit word, the first in the low half) as a 1-D VkMat of 32-bit words in ``array``'s
    C order. ``array`` may be any strided view (a transposition): the repack is the one copy
    into the mapped buffer (host visible, as on lavapipe) or into the staging buffer."""
    from ...gpu.vkmat import VkMat

    if array.dtype not in (np.float32, np.float16) or (array.size * array.itemsize) % 4:
        raise ValueError(f"upload_weights: {array.dtype} x {array.size} is not a whole number of words")
    words = array.size * array.itemsize // 4
    dst = VkMat()
    if words == 0:
        return dst
    allocator = getattr(opt, "blob_vkallocator", None) or cmd.vkdev.default_blob_allocator
    dst.create(words, elemsize=4, elempack=1, allocator=allocator)

    def fill(view: np.ndarray) -> None:
        _repack(view[: words * 4].view(array.dtype).reshape(array.shape), array)

    cmd.record_staged_upload(dst, fill, opt)
    return dst


# tile of a large 2-D transposition: source rows x columns copied at a time
_TILE_ROWS = 32
_TILE_COLS = 1024


def _repack(dst: np.ndarray, src: np.ndarray) -> None:
    """``dst[...] = src`` for a C-contiguous ``dst``. A large transposed matrix (an
    InnerProduct's [num_output][num_input] read as [num_input][num_output]) is copied in
    tiles: numpy's element order would stride through the source a row apart per element
    (VGG16's 411 MB fc6: 0.7 s against 0.3 s tiled, same bytes)."""
    if src.ndim != 2 or not src.T.flags.c_contiguous or src.size < (1 << 20):
        np.copyto(dst, src)
        return
    rows, cols = src.shape  # dst is [rows][cols]; src[i, j] lies at src.T[j, i]
    st = src.T
    for j in range(0, cols, _TILE_ROWS):
        for i in range(0, rows, _TILE_COLS):
            dst[i : i + _TILE_COLS, j : j + _TILE_ROWS] = st[j : j + _TILE_ROWS, i : i + _TILE_COLS].T


def vec4_weights(weight2d: np.ndarray, bias: np.ndarray | None, group: int):
    """A grouped layer's weights [group * outc_g][K] (K = inc_g * kernel taps) as the
    [group][ceil(outc_g / 4)][K][4] vec4s the convolution family's elempack-1 shaders read
    (4 output channels of one tap per vec4, zero past outc_g), and its bias as
    [group][ceil(outc_g / 4) * 4] (None without one)."""
    outc_g = weight2d.shape[0] // group
    vec4s = -(-outc_g // 4)
    padded = np.zeros((group, vec4s * 4, weight2d.shape[1]), np.float32)
    padded[:, :outc_g] = weight2d.reshape(group, outc_g, -1)
    weight = padded.reshape(group, vec4s, 4, -1).transpose(0, 1, 3, 2)
    if bias is None:
        return weight, None
    padded_bias = np.zeros((group, vec4s * 4), np.float32)
    padded_bias[:, :outc_g] = np.asarray(bias, np.float32).reshape(group, outc_g)
    return weight, padded_bias
