"""The reference executor: the numpy layers, one Python call each.

Each extract runs the net's ``Plan`` for the requested blob: a flat list of layers with
producers first, computed once per blob, with each layer's Option resolved once
(``LayerOptions``). Per layer the executor only picks the bottoms, calls the layer and
does ncnn's bookkeeping: in light mode an in-place layer works on its bottom's memory
(cloned first when another consumer or the caller still holds it) and a blob is dropped
as soon as its last consumer ran. It is the readable reference the other executors are
checked against, and the fallback where they cannot run: the native plan runs its numpy
segments through ``forward``, the Vulkan executor its CPU layers.
"""

from __future__ import annotations

import logging

import numpy as np

from .._native.blas import single_threaded as single_threaded_blas
from ..layer import Layer
from ..mat import Mat
from ..option import Option
from .backend import Backend, ModelLoad
from .graph import desc
from .state import BlobState
from .view import NetView
from .walk import walk

log = logging.getLogger("ncnn_c")


def unpack_fp32(m: Mat) -> Mat:
    """``m`` as fp32 with elempack 1 (a copy), as ``extract(type=0)`` hands out."""
    arr = np.asarray(m.tensor(), dtype=np.float32)
    p = m.elempack
    if p > 1:
        # the packed lanes belong to the outermost axis: move them next to it and merge
        arr = np.moveaxis(arr, -1, 1)
        arr = arr.reshape((arr.shape[0] * p,) + arr.shape[2:])
    return Mat.from_tensor(arr)


def needs_unpack(m: Mat, layer: Layer | None = None) -> bool:
    """Whether ``m`` must become fp32 elempack 1 before ``layer`` (None: a caller) reads it."""
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


class ReferenceExecutor(Backend):
    """Runs a blob's plan with the numpy layers over a ``BlobState``; as the last backend,
    it never declines, and loads the net the plain way (every weight, then every pipeline)."""

    __slots__ = ("_view",)

    def __init__(self, view: NetView) -> None:
        self._view = view

    def prepare(self, load: ModelLoad) -> int:
        if load.read_all() != 0:
            return -1
        load.begin_pipelines()
        return load.create_all(load.layer_options())

    def extract(self, state: BlobState, index: int, opt: Option) -> int:
        """The Executor protocol: the contract's walk with this executor's ``forward``. Our
        kernels split large products over their own pool, so BLAS runs on one thread here
        (``_native.blas``; not around the Vulkan executor's CPU layers, as before: a process
        forked after touching OpenBLAS's thread settings hangs at exit)."""
        with single_threaded_blas():
            return walk(self._view, state, index, opt, self.forward)

    # -- one layer ------------------------------------------------------------------------------
    @staticmethod
    def _take_bottom(state: BlobState, b: int, layer: Layer, opt: Option, inplace: bool) -> Mat:
        m = state.mats[b]
        assert m is not None  # the plan runs every producer first
        if needs_unpack(m, layer):
            return unpack_fp32(m)
        if inplace and (state.pending[b] > 1 or b in state.shared):
            return m.clone(opt.blob_allocator)
        return m

    def forward(self, state: BlobState, li: int, layer: Layer, opt: Option, light: bool) -> int:
        """Run layer ``li`` (``layer``): bottoms from ``state.mats``, tops into ``state.mats``."""
        inplace = light and layer.support_inplace
        mats = state.mats
        ret: int | str
        tops: list[Mat]
        try:
            # NaN and inf are data, not errors: ncnn prints nothing for them and neither do we
            # (numpy would warn "overflow" / "invalid value" on stderr)
            with np.errstate(all="ignore"):
                if layer.one_blob_only:
                    b = layer.bottoms[0]
                    bottom = mats[b]
                    # _take_bottom's common case inline: fp32 unpacked, nobody else holding it
                    if (
                        bottom is None
                        or bottom.elemsize != 4
                        or bottom.elempack != 1
                        or (inplace and (state.pending[b] > 1 or b in state.shared))
                    ):
                        bottom = self._take_bottom(state, b, layer, opt, inplace)
                    if inplace:
                        ret = layer.forward_inplace(bottom, opt)
                        top = bottom
                    else:
                        top = Mat()
                        ret = layer.forward(bottom, top, opt)
                    tops = [top]
                else:
                    bottoms = [self._take_bottom(state, b, layer, opt, inplace) for b in layer.bottoms]
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
            self._mark_aliases(state, layer, tops)
        state.consume(layer.bottoms, light)
        for t, m in zip(layer.tops, tops, strict=False):
            mats[t] = m
        return 0

    @staticmethod
    def _mark_aliases(state: BlobState, layer: Layer, tops: list[Mat]) -> None:
        """A top over a bottom's storage (Split, Reshape, Flatten, a whole-blob Crop ...) is one
        buffer under two names: an in-place consumer of either must copy it first (ncnn's
        refcount > 1 rule). Runs before the bottoms are released, so an alias of a caller's
        input is caught even in light mode."""
        mats = state.mats
        for t, m in zip(layer.tops, tops, strict=False):
            data = m._data
            if data is None:
                continue
            for b in layer.bottoms:
                src = mats[b]
                src_data = src._data if src is not None else None
                if src_data is not None and np.may_share_memory(data, src_data):
                    state.shared.add(t)
                    state.shared.add(b)
