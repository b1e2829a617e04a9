"""Extractor: one inference over a Net, input blobs in, requested blobs out, on the CPU.

Each extract runs the net's ``Plan`` for the requested blob: a flat list of layers with
producers first, computed once per blob, with each layer's Option resolved once
(``LayerOptions``). Per layer the executor only picks the bottoms, calls the layer and
does ncnn's bookkeeping: in light mode an in-place layer works on its bottom's memory
(cloned first when another consumer or the caller still holds it) and a blob is dropped
as soon as its last consumer ran. The Vulkan variant is in ``vulkan_forward.py``.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import numpy as np

from .._native.blas import single_threaded as single_threaded_blas
from .._native.onednn import set_threads as set_omp_threads
from ..layer import Layer
from ..mat import Mat
from ..option import Option
from . import native
from .graph import desc
from .plan import LayerOptions, data_source
from .vulkan_forward import VulkanForward

if TYPE_CHECKING:
    from .core import Net

log = logging.getLogger("ncnn_c")


def _unpack_fp32(m: Mat) -> Mat:
    """``m`` as fp32 with elempack 1 (a copy), as ``extract(type=0)`` hands out."""
    arr = np.asarray(m.tensor(), dtype=np.float32)
    p = m.elempack
    if p > 1:
        # the packed lanes belong to the outermost axis: move them next to it and merge
        arr = np.moveaxis(arr, -1, 1)
        arr = arr.reshape((arr.shape[0] * p,) + arr.shape[2:])
    return Mat.from_tensor(arr)


def _needs_unpack(m: Mat, layer: Layer | None = None) -> bool:
    if m.elempack == 1 and m.elemsize == 4:
        return False  # the common case, decided without empty()'s arithmetic
    if m.empty():
        return False
    packed = m.elempack > 1 and not (layer is not None and layer.support_packing)
    scalar = m.elemsize // max(1, m.elempack)
    narrow = scalar == 2 and not (
        layer is not None and (layer.support_fp16_storage or layer.support_bf16_storage)
    )
    return packed or narrow


class Extractor(VulkanForward):
    """ncnn::Extractor. ``opt`` is a copy of the net's Option, private to this extractor."""

    def __init__(self, net: Net | None = None) -> None:
        if net is None:
            # as ncnn's binding: extractors come from Net.create_extractor() only
            raise TypeError("ncnn_c.Extractor: No constructor defined! Use Net.create_extractor()")
        self._net = net
        self.opt = net.opt.copy()
        n = len(net._blobs)
        self._mats: list[Mat | None] = [None] * n
        self._vkmats: list = [None] * n
        self._pending = list(net._consumer_counts)
        # blobs whose memory a caller may still hold: never modified in place
        self._shared: set[int] = set()
        self._vk_garbage: list = []
        # False while no blob that a layer produces is present: every plan then runs whole
        self._partial = False

    def __enter__(self) -> Extractor:
        return self

    def __exit__(self, *exc) -> None:
        self.clear()

    def __del__(self) -> None:
        try:
            self._release_replay()
        except Exception:  # noqa: BLE001 - interpreter shutdown
            pass

    # -- options --------------------------------------------------------------------------
    def set_light_mode(self, enable: bool) -> None:
        """Light mode (default on): free each intermediate blob once its last consumer ran."""
        self.opt.lightmode = bool(enable)

    def set_num_threads(self, num_threads: int) -> None:
        """CPU threads for this extractor's layers."""
        self.opt.num_threads = int(num_threads)

    def set_blob_allocator(self, allocator) -> None:
        """The CPU allocator for blobs (None: the default)."""
        self.opt.blob_allocator = allocator

    def set_workspace_allocator(self, allocator) -> None:
        """The CPU allocator for layers' scratch memory (None: the default)."""
        self.opt.workspace_allocator = allocator

    def set_blob_vkallocator(self, allocator) -> None:
        """The Vulkan allocator for blobs on the GPU (None: the device's)."""
        self.opt.blob_vkallocator = allocator

    def set_workspace_vkallocator(self, allocator) -> None:
        """The Vulkan allocator for layers' scratch memory on the GPU (None: the device's)."""
        self.opt.workspace_vkallocator = allocator

    def set_staging_vkallocator(self, allocator) -> None:
        """The Vulkan allocator for host-visible upload/download buffers (None: the device's)."""
        self.opt.staging_vkallocator = allocator

    def set_kvcache_allocator(self, allocator) -> None:
        """The CPU allocator for key/value caches."""
        self.opt.kvcache_allocator = allocator

    def set_kvcache_vkallocator(self, allocator) -> None:
        """The Vulkan allocator for key/value caches."""
        self.opt.kvcache_vkallocator = allocator

    def set_kvcache_max_seqlen_hint(self, max_seqlen_hint: int) -> None:
        """The longest sequence a key/value cache should plan for."""
        self.opt.kvcache_max_seqlen_hint = int(max_seqlen_hint)

    def set_option(self, opt: Option) -> None:
        """Replace this extractor's options by a copy of ``opt``."""
        self.opt = opt.copy()

    def clear(self) -> None:
        """Forget every input and computed blob: the extractor can be fed again."""
        self._release_replay()
        n = len(self._mats)
        self._mats = [None] * n
        self._vkmats = [None] * n
        self._pending = list(self._net._consumer_counts)
        self._shared.clear()
        self._vk_garbage.clear()
        self._partial = False

    def _layer_options(self) -> list[Option]:
        """Each layer's Option for the current ``self.opt``, cached on the net by value."""
        net = self._net
        lo = net._layer_opts
        if lo is None or not lo.matches(self.opt):
            lo = net._layer_opts = LayerOptions(self.opt, net._layers)
        return lo.per_layer

    # -- blob lookup ------------------------------------------------------------------------
    def _blob_index(self, key, what: str) -> int:
        net = self._net
        if isinstance(key, str):
            index = net.find_blob_index_by_name(key)
            if index < 0:
                log.error(
                    "%s: no blob named %r; inputs: %s, outputs: %s",
                    what, key, net.input_names(), net.output_names(),
                )  # fmt: skip
            return index
        if isinstance(key, bool) or not isinstance(key, (int, np.integer)):
            # a programming error, not a data problem: PyPI's binding raises TypeError too
            raise TypeError(
                f"{what}(): blob must be a name (str) or an index (int), got {type(key).__name__}"
            )
        index = int(key)
        if not 0 <= index < len(self._mats):
            log.error("%s: blob index %d out of range 0..%d", what, index, len(self._mats) - 1)
            return -1
        return index

    # -- input / extract ----------------------------------------------------------------------
    def input(self, key, mat: Mat) -> int:
        """Feed blob ``key`` (its name, or its index) with ``mat``: 0, or -1 (logged) when the
        net has no such blob. The Mat is shared, not copied: keep it unchanged until the
        extracts that need it are done. Mats are CHW (numpy shape ``(c, h, w)``); an image as
        an HWC array goes in through ``Mat.from_pixels``. Not a Mat: TypeError, as ncnn's."""
        if not isinstance(mat, Mat):
            hint = ": wrap it with ncnn.Mat(array)" if isinstance(mat, np.ndarray) else ""
            raise TypeError(f"input(): expected an ncnn_c.Mat, got {type(mat).__name__}{hint}")
        index = self._blob_index(key, "input")
        if index < 0:
            return -1
        # an image is at least 32 pixels a side; a small CHW feature map with w=3 is no image
        if mat.dims == 3 and mat.w in (3, 4) and mat.c not in (3, 4) and min(mat.h, mat.c) >= 32:
            log.warning(
                "input %r: a Mat of c=%d h=%d w=%d looks like an HWC image; Mats are CHW: "
                "transpose the array (arr.transpose(2, 0, 1)) or use Mat.from_pixels",
                key, mat.c, mat.h, mat.w,
            )  # fmt: skip
        m = Mat()
        m.share_from(mat)
        self._mats[index] = m
        self._vkmats[index] = None
        self._shared.add(index)
        self._cursor = None  # the state no longer matches a recording's
        if not data_source(self._net._blobs, self._net._layers, index):
            self._partial = True  # an intermediate blob given: its producers must not run
        return 0

    def extract(self, key, feat_or_type=None, type: int = 0):  # noqa: A002 - PyPI's name
        """``extract(blob) -> (ret, Mat)``; ``extract(blob, feat) -> ret`` fills ``feat``."""
        feat = None
        if isinstance(feat_or_type, Mat):
            feat = feat_or_type
        elif feat_or_type is not None:
            type = int(feat_or_type)
        ret, out = self._extract(key, type)
        if feat is None:
            return ret, out
        if ret == 0:
            feat.share_from(out)
        return ret

    def _extract(self, key, type_: int):
        index = self._blob_index(key, "extract")
        if index < 0:
            return -1, Mat()
        try:
            if self._mats[index] is None:
                if self._net._gpu_ready and self.opt.use_vulkan_compute:
                    ret = self._extract_vk_held(index)
                else:
                    # our kernels split large products over their own pool (see _native.blas)
                    with single_threaded_blas():
                        set_omp_threads(self.opt.num_threads)
                        done = native.extract(self, index)
                        ret = self._run_plan(index, self._forward_cpu) if done is None else done
                if ret != 0:
                    return ret, Mat()
        except Exception as e:  # noqa: BLE001 - a bug must not escape as an exception
            log.error("extract: %s: %s", type(e).__name__, e)
            return -1, Mat()
        m = self._mats[index]
        if m is None:
            return -1, Mat()
        self._shared.add(index)
        if type_ == 0 and _needs_unpack(m):
            m = _unpack_fp32(m)
        out = Mat()
        out.share_from(m)
        return 0, out

    def _no_data(self, index: int) -> int:
        name = self._net._blobs[index].name
        log.error(
            "extract: blob %r has no data: give it with ex.input(%r, mat) (inputs: %s)",
            name, name, ", ".join(self._net.input_names()) or "none",
        )  # fmt: skip
        return -1

    def _present(self, index: int) -> bool:
        return self._mats[index] is not None or self._vkmats[index] is not None

    def _run_plan(self, index: int, step) -> int:
        """Compute blob ``index`` with ``step(li, opt, light)`` for each layer it needs."""
        net = self._net
        if data_source(net._blobs, net._layers, index):
            return self._no_data(index)
        plan = net._plan(index)
        if self._partial:
            order, missing = plan.select(net._layers, self._present)
        else:
            order, missing = plan.order, -1
            for s in plan.sources:
                if self._mats[s] is None and self._vkmats[s] is None:
                    missing = s
                    break
        unfed: list[int] = []
        if missing >= 0:
            # ncnn runs an Input blob nobody fed as an empty Mat (an LLM's first step gives no
            # kv cache); the hint comes with the failure when a layer cannot take that
            unfed = [s for s in plan.sources if self._mats[s] is None and self._vkmats[s] is None]
            if any(net._blobs[s].producer < 0 for s in unfed):
                return self._no_data(missing)
            for s in unfed:
                self._mats[s] = Mat()
        opts = self._layer_options()
        light = bool(self.opt.lightmode)
        self._partial = True
        for li in order:
            ret = step(li, opts[li], light)
            if ret != 0:
                for s in unfed:
                    self._no_data(s)
                return ret
        if unfed:
            out = self._mats[index]
            if out is None or out.empty():
                # nothing came of the empty inputs: the caller most likely forgot them
                for s in unfed:
                    self._no_data(s)
                return -1
        return 0

    # -- CPU forward ---------------------------------------------------------------------------
    def _take_bottom(self, b: int, layer: Layer, opt, inplace: bool) -> Mat:
        m = self._mats[b]
        assert m is not None  # the plan runs every producer first
        if _needs_unpack(m, layer):
            return _unpack_fp32(m)
        if inplace and (self._pending[b] > 1 or b in self._shared):
            return m.clone(opt.blob_allocator)
        return m

    def _consumed(self, layer: Layer, light: bool) -> None:
        pending = self._pending
        for b in layer.bottoms:
            pending[b] -= 1
            if light and pending[b] <= 0:
                self._mats[b] = None
                if self._vkmats[b] is not None:
                    self._vk_garbage.append(self._vkmats[b])
                    self._vkmats[b] = None

    def _forward_cpu(self, li: int, opt: Option, light: bool) -> int:
        """Run layer ``li`` on the CPU: bottoms from ``_mats``, tops into ``_mats``."""
        layer = self._net._layers[li]
        inplace = light and layer.support_inplace
        ret: int | str
        tops: list[Mat]
        try:
            # NaN and inf are data, not errors: ncnn prints nothing for them and neither do we
            # (numpy would warn "overflow" / "invalid value" on stderr)
            with np.errstate(all="ignore"):
                if layer.one_blob_only:
                    b = layer.bottoms[0]
                    bottom = self._mats[b]
                    # _take_bottom's common case inline: fp32 unpacked, nobody else holding it
                    if (
                        bottom is None
                        or bottom.elemsize != 4
                        or bottom.elempack != 1
                        or (inplace and (self._pending[b] > 1 or b in self._shared))
                    ):
                        bottom = self._take_bottom(b, layer, opt, inplace)
                    if inplace:
                        ret = layer.forward_inplace(bottom, opt)
                        top = bottom
                    else:
                        top = Mat()
                        ret = layer.forward(bottom, top, opt)
                    tops = [top]
                else:
                    bottoms = [self._take_bottom(b, layer, opt, inplace) for b in layer.bottoms]
                    if inplace:
                        ret = layer.forward_inplace(bottoms, opt)
                        tops = bottoms
                    else:
                        tops = [Mat() for _ in layer.tops]
                        ret = layer.forward(bottoms, tops, opt)
        except Exception as e:  # noqa: BLE001 - layer code must not break the extractor
            ret = f"raised {type(e).__name__}: {e}"
        if ret != 0:
            log.error("forward: %s failed (%s)", desc(li, layer), ret)
            return ret if isinstance(ret, int) else -1
        if not inplace:
            self._mark_aliases(layer, tops)
        self._consumed(layer, light)
        mats = self._mats
        for t, m in zip(layer.tops, tops, strict=False):
            mats[t] = m
        return 0

    def _mark_aliases(self, layer: Layer, tops: list[Mat]) -> None:
        """A top over a bottom's storage (Split, Reshape, Flatten, a whole-blob Crop ...) is one
        buffer under two names: an in-place consumer of either must copy it first (ncnn's
        refcount > 1 rule). Runs before the bottoms are released, so an alias of a caller's
        input is caught even in light mode."""
        mats = self._mats
        for t, m in zip(layer.tops, tops, strict=False):
            data = m._data
            if data is None:
                continue
            for b in layer.bottoms:
                src = mats[b]
                src_data = src._data if src is not None else None
                if src_data is not None and np.may_share_memory(data, src_data):
                    self._shared.add(t)
                    self._shared.add(b)
