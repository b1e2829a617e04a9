"""Pipeline: one compute shader specialised for one layer, as ncnn's ``ncnn::Pipeline``.

A Pipeline chooses its workgroup (local) size and asks a PipelineCache for the Vulkan
objects; the cache owns them and may hand the same objects to several Pipelines, so
``destroy()`` only forgets the handles. Without ``opt.pipeline_cache`` a per-device
default cache is used, so a Pipeline always works.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from ..errors import NcnnError, PipelineGone
from . import _vk_pipeline
from .pipelinecache import default_cache
from .spirv import ShaderInfo

log = logging.getLogger("ncnn_c")

# Byte stride of the per-binding records a descriptor update template reads.
DESCRIPTOR_INFO_STRIDE = _vk_pipeline.DESCRIPTOR_INFO_STRIDE

# Aim for this many invocations per workgroup: large enough to fill a SIMD unit on
# every vendor (32/64 lanes), small enough to keep many groups in flight.
_TARGET_INVOCATIONS = 256
_UNKNOWN_EXTENT = 1 << 20


def _limits(vkdev) -> tuple[tuple[int, int, int], int]:
    info = getattr(vkdev, "info", None)
    size = tuple(getattr(info, "max_workgroup_size", None) or (1024, 1024, 64))
    invocations = int(getattr(info, "max_workgroup_invocations", 0) or 128)
    return (int(size[0]), int(size[1]), int(size[2])), invocations


def optimal_local_size(w: int, h: int, c: int, max_size=(1024, 1024, 64), max_invocations: int = 128):
    """Power-of-two local size for a (w, h, c) grid: double the axis with the most work
    per invocation until the group reaches 256 invocations (or the device limit), never
    growing an axis past its extent. Extents <= 0 mean "unknown, assume large"."""
    extents = [e if e > 0 else _UNKNOWN_EXTENT for e in (w, h, c)]
    sizes = [1, 1, 1]
    budget = max(1, min(_TARGET_INVOCATIONS, max_invocations))
    while sizes[0] * sizes[1] * sizes[2] * 2 <= budget:
        best, best_ratio = -1, 1.0
        for axis in range(3):
            if sizes[axis] * 2 > max_size[axis] or sizes[axis] >= extents[axis]:
                continue
            ratio = extents[axis] / sizes[axis]
            if ratio > best_ratio:
                best, best_ratio = axis, ratio
        if best < 0:
            break
        sizes[best] *= 2
    return sizes[0], sizes[1], sizes[2]


class Pipeline:
    """ncnn's Pipeline: local size selection plus borrowed handles from a PipelineCache."""

    def __init__(self, vkdev) -> None:
        self.vkdev = vkdev
        self.local_size_x = 1
        self.local_size_y = 1
        self.local_size_z = 1
        info = getattr(vkdev, "info", None)
        self.subgroup_size = int(getattr(info, "subgroup_size", 0) or 0)
        self._clear_handles()

    def _clear_handles(self) -> None:
        self._artifact = None
        self.shader_info = ShaderInfo()
        self.pipeline_cache = None

    # The handles are read through the cache's artifact, so once the cache destroys it
    # (clear(), destroy()) they read None and a dispatch refuses them instead of using
    # freed Vulkan objects.
    @property
    def vk_shader_module(self):
        return self._artifact.shader_module if self._artifact is not None else None

    @property
    def vk_descriptorset_layout(self):
        return self._artifact.descriptorset_layout if self._artifact is not None else None

    @property
    def vk_pipeline_layout(self):
        return self._artifact.pipeline_layout if self._artifact is not None else None

    @property
    def vk_pipeline(self):
        return self._artifact.pipeline if self._artifact is not None else None

    @property
    def vk_descriptor_update_template(self):
        return self._artifact.descriptor_update_template if self._artifact is not None else None

    # -- local size ----------------------------------------------------------------------

    def set_optimal_local_size_xyz(self, w=4, h=4, c=4) -> None:
        """Local size for a dispatch grid given as ints or as a Mat/VkMat (its w, h, c)."""
        if not isinstance(w, int) and hasattr(w, "w"):
            # A blob dispatches as (w, h*d, c), the grid VkCompute.record_pipeline uses.
            m = w
            dims = getattr(m, "dims", 3)
            w, h, c = m.w, m.h * (getattr(m, "d", 1) or 1), m.c
            if dims == 1:
                h, c = 1, 1
            elif dims == 2:
                c = 1
        max_size, max_inv = _limits(self.vkdev)
        self.local_size_x, self.local_size_y, self.local_size_z = optimal_local_size(
            int(w), int(h), int(c), max_size, max_inv
        )

    def set_local_size_xyz(self, x: int, y: int, z: int) -> None:
        self.local_size_x, self.local_size_y, self.local_size_z = int(x), int(y), int(z)

    # -- creation ----------------------------------------------------------------------

    def _cache(self, opt):
        cache = getattr(opt, "pipeline_cache", None)
        return cache if cache is not None else default_cache(self.vkdev)

    def _create(self, shader, opt, specializations) -> int:
        cache = self._cache(opt)
        if getattr(cache.vkdev, "vk_device", None) != getattr(self.vkdev, "vk_device", None):
            # Objects made on another VkDevice would be unusable (and crash) on ours.
            log.error("Pipeline.create: opt.pipeline_cache belongs to another Vulkan device")
            self._clear_handles()
            return -1
        try:
            art = cache.get_pipeline(
                shader,
                opt,
                list(specializations or ()),
                (self.local_size_x, self.local_size_y, self.local_size_z),
                self.subgroup_size,
            )
        except NcnnError as e:
            what = shader if isinstance(shader, (str, int)) else "raw SPIR-V"
            log.error("Pipeline.create(%s): %s", what, e)
            self._clear_handles()
            return -1
        self._artifact = art
        self.shader_info = art.shader_info
        self.pipeline_cache = cache
        return 0

    def create(self, shader_name_or_index, opt, specializations=()) -> int:
        """Create from a builtin shader (registry name or type index); 0 on success."""
        return self._create(shader_name_or_index, opt, specializations)

    def create_spirv(self, spirv, opt, specializations=()) -> int:
        """Create from caller-provided SPIR-V (bytes or 32-bit words); 0 on success."""
        if isinstance(spirv, (str, int)):
            log.error("Pipeline.create_spirv: expected SPIR-V bytes or words, got %s", type(spirv).__name__)
            return -1
        return self._create(spirv, opt, specializations)

    def destroy(self) -> None:
        """Forget the handles; the PipelineCache that created them destroys them."""
        self._clear_handles()

    def __repr__(self) -> str:
        return (
            f"<Pipeline local_size=({self.local_size_x},{self.local_size_y},{self.local_size_z})"
            f" bindings={self.shader_info.binding_count} created={self.vk_pipeline is not None}>"
        )


class DeferredPipeline:
    """A pipeline its layer expects not to use, built at its first dispatch if it is used
    after all.

    A layer holds one pipeline per blob form it can serve (elempack 1 or 4 in, and out);
    when the .param's shape hints say which form a blob will have, the others are deferred
    rather than built in ``load_model``. Hints can be wrong (a hand-edited file, another
    input size, a producer that hands over another packing): then ``resolve()`` builds the
    pipeline on first use, through the same cache, and the dispatch goes on. ``build``
    returns a created Pipeline, or None when creation failed (logged by it)."""

    def __init__(self, build: Callable[[], Pipeline | None], what: str) -> None:
        self._build = build
        self.what = what
        self._pipeline: Pipeline | None = None
        self._lock = threading.Lock()

    @property
    def built(self) -> bool:
        return self._pipeline is not None

    def resolve(self) -> Pipeline:
        """The pipeline, built now if this is its first use; PipelineGone if that fails."""
        with self._lock:
            if self._pipeline is None:
                log.info("%s: building a pipeline the shape hints did not predict", self.what)
                pipeline = self._build()
                if pipeline is None:
                    raise PipelineGone(f"{self.what}: the deferred pipeline could not be created")
                self._pipeline = pipeline
            return self._pipeline

    def __repr__(self) -> str:
        return f"<DeferredPipeline {self.what} built={self.built}>"
