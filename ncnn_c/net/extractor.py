"""Extractor: one inference over a Net, input blobs in, requested blobs out.

The Extractor holds the inference's ``BlobState`` and hands it, with the requested blob and
its Option, to the net's executors in order (``Executor``: ``extract(state, index, opt) ->
int | None``) until one does not decline (None): the Vulkan executor (when the net's layers
are on the GPU and the options ask for it), the native CPU plan, the numpy reference
executor, which never declines. The executors are
the net's (made once, they hold no per-inference data) and see it only through its
``NetView``; none of them knows another's internals, and the state is the whole of what
passes between them.
"""

from __future__ import annotations

import logging
from typing import Protocol

import numpy as np

from ..mat import Mat
from ..option import Option
from .reference import needs_unpack, unpack_fp32
from .state import BlobState
from .view import NetView

log = logging.getLogger("ncnn_c")

# a blob name found while another thread replaces the graph: the index means nothing
_RACED = "the net was cleared or loaded a param again on another thread during this call"


class Executor(Protocol):
    """A backend: computes blob ``index`` into ``state`` (its return code: 0, or an error
    already logged), or declines with None, leaving the state as it was."""

    def extract(self, state: BlobState, index: int, opt: Option) -> int | None: ...


class Extractor:
    """ncnn::Extractor. ``opt`` is a copy of the net's Option, private to this extractor."""

    def __init__(self, net=None) -> None:
        if net is None:
            # as ncnn's binding: extractors come from Net.create_extractor() only
            raise TypeError("ncnn_c.Extractor: No constructor defined! Use Net.create_extractor()")
        self._net = net  # for its names (public queries)
        self.opt = net.opt.copy()
        # the net's view and executors: the extractor holds the state they work on
        self._view: NetView = net._view
        self._generation = self._view.generation  # the graph this extractor's blobs index
        self._state = BlobState(self._view.consumer_counts)
        # the backends, in the order they are tried: Vulkan (when the net's layers are on
        # the GPU and the options ask for it), the native plan, the numpy layers
        self._executors: tuple[Executor, ...] = net._executors

    def __enter__(self) -> Extractor:
        return self

    def __exit__(self, *exc) -> None:
        self.clear()

    def __del__(self) -> None:
        try:
            self._state.release()
        except Exception:  # noqa: BLE001 - interpreter shutdown, or no state (no net given)
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
        if not self._current():
            self._state.release()  # its blobs index a graph the net no longer has
            return
        self._state.reset(self._view.consumer_counts)

    def _current(self) -> bool:
        """Whether the net's graph is the one this extractor was made for (not replaced
        since, nor being replaced now)."""
        now = self._view.generation
        return self._generation == now and now % 2 == 0

    def _stale(self, what: str) -> bool:
        """True (logged) when the net was cleared or loaded a param again since this
        extractor was made: its blob numbers belong to a graph that is gone (ncnn reads
        freed memory there)."""
        if self._current():
            return False
        log.error(
            "%s: the net was cleared or loaded a param again after this extractor was "
            "created; create a new extractor",
            what,
        )
        return True

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
        n = len(self._state.mats)
        if not 0 <= index < n:
            log.error("%s: blob index %d out of range 0..%d", what, index, n - 1)
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
        if self._stale("input"):
            return -1
        try:
            return self._input(key, mat)
        except IndexError:
            # the blob names and the blobs disagree: another thread is replacing the graph
            # (clear, load_param) right now, so the index found means nothing
            log.error("input: %s", _RACED)
            return -1

    def _input(self, key, mat: Mat) -> int:
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
        self._state.give(index, mat, not self._view.is_source(index))
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
        if self._stale("extract"):
            return -1, Mat()
        index = self._blob_index(key, "extract")
        if index < 0:
            return -1, Mat()
        if index >= len(self._state.mats):  # a name of a graph that another thread loads now
            log.error("extract: %s", _RACED)
            return -1, Mat()
        state = self._state
        opt = self.opt
        epoch = self._view.weights_epoch
        if epoch % 2:
            log.error("extract: load_model is running on another thread; extract after it returns")
            return -1, Mat()
        try:
            if state.mats[index] is None:
                ret: int | None = None
                for executor in self._executors:
                    ret = executor.extract(state, index, opt)
                    if ret is not None:
                        break
                if ret != 0:
                    if not self._stale("extract") and not self._view.weights_loaded:
                        log.error(
                            "extract: the net has no weights: load_model was not called after load_param, or failed"
                        )
                    return ret, Mat()
                if self._view.weights_epoch != epoch:
                    log.error(
                        "extract: load_model ran on another thread during this extract, so its "
                        "result mixes two sets of weights; extract again"
                    )
                    state.reset(self._view.consumer_counts)
                    return -1, Mat()
        except Exception as e:  # noqa: BLE001 - a bug must not escape as an exception
            if not self._stale("extract"):  # another thread's clear() explains it
                log.error("extract: %s: %s", type(e).__name__, e)
            return -1, Mat()
        m = state.mats[index]
        if m is None:
            return -1, Mat()
        state.shared.add(index)
        # type 0 hands out fp32 elempack 1, as ncnn's extract: packed and fp16 blobs are
        # converted, and an int8 blob (a Quantize top, a requantizing int8 layer's) is cast
        # to fp32 by value (ncnn's cast_int8_to_float32, no scale); type 1 keeps the raw form
        if type_ == 0 and (needs_unpack(m) or (m.elemsize == m.elempack and not m.empty())):
            m = unpack_fp32(m)
        out = Mat()
        out.share_from(m)
        return 0, out
