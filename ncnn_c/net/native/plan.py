"""The plan machinery: a NativePlan is one recorded input shape of one target, built once.

From the blobs' recorded shapes and the graph, ``NativePlan`` asks the op builders
(``ops``: a registry from layer type to builder) for each layer's oneDNN primitives; a layer
no builder takes (``Unsupported``) splits the plan into segments and runs as a numpy layer.
This module owns what every builder shares: ``Value`` (a blob inside a native segment: its
descriptor, its place in the arena, its views and copies in other layouts), reads into and
writes out of a segment, layout changes and views, the arena (first-fit by lifetime), the
run (one C call per native segment, the GIL released), and ``NativePlans``, a net's LRU of
plans.

Builders see a plan through its public methods: ``value`` (a blob's value, read in when it
comes from outside the segment), ``top`` / ``set_top`` / ``same`` (a layer's results),
``run1`` / ``add`` (primitives), ``copy``, ``alias``, ``box``, ``as_md`` / ``as_dims`` /
``canon`` / ``plain`` (layouts and views), ``const`` / ``const_value`` / ``prepack``
(constants), ``defer`` / ``deferred`` / ``take_deferred`` (a layer whose only reader does
its work: made for real only if something else needs its blob).
"""

from __future__ import annotations

import logging
import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping
from types import SimpleNamespace
from typing import NamedTuple

import numpy as np

from ..._native.csteps import CSteps, Unsupported  # noqa: F401 - the ops import both from here
from ..._native.onednn import give_back_pages, release_code
from ..._native.onednn import set_threads as set_omp_threads
from ...layer import Layer
from ...mat import Mat, _cstep_for
from ...option import Option
from ..state import BlobState
from ..walk import Step
from . import threads as step_threads

log = logging.getLogger("ncnn_c")

# plans kept per net (LRU over input shapes and option values), instances per shape
# (threads); the arenas of all but the RESIDENT plans used last go back to the system until
# their next run (a letterbox stream of 32 sizes keeps 32 plans, not 32 arenas' pages)
CAPACITY = 32
INSTANCES = 4
RESIDENT = 4


def dnnl_module():
    from ..._native import dnnl

    return dnnl


def available() -> bool:
    return dnnl_module().get() is not None


def shape_of(m: Mat) -> tuple:
    return (m.dims, m.w, m.h, m.d, m.c, m.elemsize, m.elempack)


class Value:
    """A blob inside a native segment: its descriptor, memory and place in the arena.

    An alias (``base`` set) is another view of ``base``'s bytes from ``base_off`` on: a
    reshape, a channel range, a strided window a reorder writes through. A constant
    (``addr`` set) lives in a numpy array the plan keeps, outside the arena.
    """

    __slots__ = (
        "md",
        "mem",
        "shape",
        "size",
        "first",
        "last",
        "offset",
        "base",
        "base_off",
        "const",
        "addr",
        "copies",
    )

    def __init__(self, md, shape: tuple, first: int) -> None:
        self.md = md
        self.shape = shape
        self.mem = None
        self.size = md.size
        self.first = first
        self.last = first
        self.offset = -1
        self.base: Value | None = None
        self.base_off = 0
        self.const = False
        self.addr = 0  # a constant's address
        self.copies: dict[str, Value] = {}  # this value in other layouts (by tag), once made


def mat_dims(shape: tuple) -> tuple[int, ...] | None:
    dims, w, h, _d, c, elemsize, elempack = shape
    if elemsize != 4 or elempack != 1:
        return None
    return {1: (1, w), 2: (1, h, w), 3: (1, c, h, w)}.get(dims)


def numpy_shape(shape: tuple) -> tuple[int, ...]:
    dims, w, h, d, c, _es, _ep = shape
    return ((w,), (h, w), (c, h, w), (c, d, h, w))[dims - 1]


def plan_cstep(shape: tuple) -> int:
    """The channel stride (elements) at which a plan reads and writes every Mat of ``shape``:
    a fresh Mat's. A Mat bound to the plan has it (``bindable``); one channel has no stride."""
    dims, w, h, d, c, elemsize, _ep = shape
    return _cstep_for(dims, w, h, d, elemsize) if c > 1 else w * h * d


def bindable(m: Mat, shape: tuple) -> Mat | None:
    """``m`` (of the recorded ``shape``) in the layout the plan reads: itself, or a copy with
    a fresh Mat's channel stride when its channels sit elsewhere (``Mat(w, h, d, c).channel(q)``,
    ``depth_range``: unpadded). None when ``m`` is not of ``shape`` or the copy cannot be
    made (the caller then runs the numpy path)."""
    if shape_of(m) != shape:
        return None
    if m.c == 1 or m.cstep == plan_cstep(shape):
        return m
    out = Mat(*_ncnn_size(shape), elemsize=m.elemsize, elempack=m.elempack)
    if out.empty():
        return None
    np.copyto(out.tensor(), m.tensor())
    return out


def _mat_strides(shape: tuple, dims: tuple[int, ...]) -> tuple[int, ...] | None:
    """Strides of a Mat of ``shape`` (laid out as ``plan_cstep`` says) seen with oneDNN
    ``dims`` (None: not expressible)."""
    mdims, w, h, _d, c, _es, _ep = shape
    total = int(np.prod(dims))
    if mdims == 3:
        cstep = plan_cstep(shape)
        if dims == (1, c, h, w):
            return (c * cstep, cstep, w, 1)
        if cstep != w * h or total != w * h * c:
            return None
    elif total != {1: w, 2: w * h}.get(mdims, -1):
        return None
    return dense_strides(dims)


def tag_strides(tag: str, dims) -> tuple[int, ...]:
    """The strides of a dense layout given by a plain format tag ("abcd", "acdb": the
    letters from the outermost axis in memory to the innermost)."""
    strides = [0] * len(dims)
    acc = 1
    for letter in reversed(tag):
        axis = ord(letter) - ord("a")
        strides[axis] = acc
        acc *= dims[axis]
    return tuple(strides)


def dense_strides(dims) -> tuple[int, ...]:
    strides = []
    acc = 1
    for n in reversed(dims):
        strides.append(acc)
        acc *= n
    return tuple(reversed(strides))


PLAIN = {1: "a", 2: "ab", 3: "abc", 4: "abcd", 5: "abcde"}
# the layouts oneDNN picks for activations, by rank: a value in one of them can be sliced
# and copied in the same layout
_TAGS = {
    3: ("abc", "aBc16b", "aBc8b", "aBc4b", "acb"),
    4: ("abcd", "aBcd16b", "aBcd8b", "aBcd4b", "acdb"),
}
BLOCK = {"aBc16b": 16, "aBc8b": 8, "aBc4b": 4, "aBcd16b": 16, "aBcd8b": 8, "aBcd4b": 4}


def builtin(layer) -> bool:
    """One of ncnn_c's own layer classes (an application may register its own under a
    built-in type name: that one is opaque)."""
    return type(layer).__module__.startswith("ncnn_c.layer.")


def shape_like(shape: tuple):
    """Something with a Mat's dims / w / h / d / c for a layer's shape-only helpers."""
    dims, w, h, d, c, _es, _ep = shape
    return SimpleNamespace(dims=dims, w=w, h=h, d=d, c=c)


class Segment:
    """A run of primitives (one C call), or one numpy layer (``layer`` >= 0)."""

    __slots__ = ("steps", "imports", "exports", "layer", "owners")

    def __init__(self, steps=None, layer: int = -1) -> None:
        self.steps = steps
        self.layer = layer  # >= 0: a numpy layer
        self.owners: list[tuple[int, int]] = []  # per step: (its layer or -1, that one's work)
        self.imports: list[tuple[object, int]] = []  # (Mem, blob): read from state.mats[blob]
        self.exports: list[tuple[object, int, tuple]] = []  # (Mem, blob, mat shape): fresh Mats


# a layer type's builder: adds the layer's primitives to the plan (raises Unsupported when
# it has no native form in this case) and returns the layers of ``chain`` it took in
Builder = Callable[["NativePlan", Layer, Segment, Option, list[int]], "list[int] | None"]
# makes a deferred layer's top for real after all (plan, segment, that layer): ``set_top``
Make = Callable[["NativePlan", Segment, Layer], None]
# graph analyses over (plan, order, consumers per blob, readers per blob)
Chains = Callable[["NativePlan", list[int], dict[int, int], dict[int, list[int]]], dict[int, list[int]]]
Deferrals = Callable[["NativePlan", list[int], dict[int, int], dict[int, list[int]]], dict[int, Make]]


class Ops(NamedTuple):
    """What the plan knows of the layers: their builders by type, the chains of layers a
    producer may take in (post-ops, folded weights) and the layers whose only reader does
    their work (deferred)."""

    builders: Mapping[str, Builder]
    chains: Chains
    deferrals: tuple[Deferrals, ...]


class NativePlan:
    """One recorded input shape of one target: segments of primitives and numpy layers."""

    def __init__(
        self,
        ops: Ops,
        layers: list[Layer],
        order: list[int],
        outputs: list[int],
        shapes: dict[int, tuple],
        opts,
        consts=None,
        dynamic: frozenset[int] = frozenset(),
        packs: Packs | None = None,
        release_as_built: bool = True,
    ) -> None:
        d = dnnl_module()
        self.dnnl = d.get()
        # weights already packed for the net's earlier plans (a new input shape mostly wants
        # the same layouts): reused instead of read and reordered again
        self._packs = packs
        self._packs_era = packs.era if packs is not None else 0  # weights a clear() replaced are not offered
        self._backing: dict[int, np.ndarray] = {}  # id(a prepacked memory) -> its buffer
        self._parked_as: dict[int, object] = {}  # id(a prepacked memory) -> the plain md its layer parked
        self.lock = threading.Lock()
        self.outputs = outputs
        self.native_layers = 0
        self.layers = layers  # the net's, as built (a plan is dropped with them)
        self.shapes = shapes  # every blob's recorded Mat shape (shape_of)
        # blobs whose shape may change from run to run (a decoder's growing kv cache and
        # mask): only numpy layers read or write them, and their shapes are not checked
        self.dynamic = dynamic
        self.step = 0  # primitives added so far: a value's lifetime is counted in these
        self._ops = ops
        self._consts: dict[int, np.ndarray] = consts or {}
        self._keep: list = []  # weights and constant memories the primitives read
        # constants' arrays while the plan is built: kept after it only where a step reads
        # them (weights a primitive wants in another layout live on as that copy alone)
        self._const_arrays: dict[int, tuple[object, np.ndarray]] = {}  # id(memory) -> (it, its array)
        self._stepped: set[int] = set()  # ids of the memories the steps read or write
        # constants whose array went once they were prepacked: no step may read them
        self._spent: dict[int, object] = {}
        self._values: dict[int, Value] = {}
        self._all_values: list[Value] = []
        self.segments: list[Segment] = []
        # blob -> (its layer, make): layers whose only reader does their work (a Padding a
        # convolution reads through its own padding, a Concat a ShuffleChannel writes part
        # by part); made for real only if something else needs the blob
        self._deferred: dict[int, tuple[int, Make]] = {}
        self._li = -1  # the layer being built
        self._producer_of: dict[int, int] = {}
        # OpenMP threads: the plan's (the extractor's num_threads, which the caller set for
        # this thread), and the building layer's (threads.py), under which its primitives are
        # created and run
        self.num_threads = max(1, int(opts[order[0]].num_threads)) if order else 1
        self.threads = self.num_threads
        self._work = 0
        # a list: each step's wall time is appended to it by every run (threads.py's fit)
        self.timing: list | None = None
        self._release_as_built = release_as_built
        # made from inferred shapes (no recording): dropping it unused wastes little
        self.cheap = not release_as_built
        self.arena_resident = True
        self._build(order, opts)

    # -- building ---------------------------------------------------------------------------
    def _build(self, order: list[int], opts) -> None:
        d = dnnl_module()
        layers = self.layers
        consumers: dict[int, int] = {}
        readers: dict[int, list[int]] = {}
        for li in order:
            for b in layers[li].bottoms:
                consumers[b] = consumers.get(b, 0) + 1
                readers.setdefault(b, []).append(li)
        self._producer_of = {t: li for li in order for t in layers[li].tops}
        chains = self._ops.chains(self, order, consumers, readers)
        deferrals: dict[int, Make] = {}
        for find in self._ops.deferrals:
            deferrals.update(find(self, order, consumers, readers))
        folded: dict[int, int] = {}  # layer taken by its producer -> that producer
        seg: Segment | None = None
        for li in order:
            layer = layers[li]
            self._li = li
            if li in folded:
                # taken into its producer: its top is the producer's result
                self._values[layer.tops[0]] = self._values[layers[folded[li]].tops[0]]
                self.native_layers += 1
                continue
            if layer.tops and all(t in self._consts for t in layer.tops) and builtin(layer):
                try:
                    for t in layer.tops:
                        self._values[t] = self.const_value(self._consts[t], self.shape(t))
                    self.native_layers += 1
                    continue
                except Unsupported as e:
                    log.debug("native plan: constant %r (%s) is computed: %s", layer.name, layer.type, e)
            if li in deferrals:
                self._deferred[layer.tops[0]] = (li, deferrals[li])
                self.native_layers += 1
                continue
            if seg is None:
                seg = Segment(d.Steps(self.dnnl))
            # primitive creation runs code the runs never need: given back as the build goes
            # (onednn.release_code), else all of it is resident at the end, the first
            # extract's peak. A later plan of the net (a new input shape, whose peak the first
            # one's recording set) gives it back at the end alone: each release makes the next
            # layer's creation fault its code in again
            if self._release_as_built:
                release_code(when_grown=True)
            try:
                self._use_threads(step_threads.layer_work(layer, self.shapes))
                taken = self._build_layer(layer, seg, chains.get(li, []), opts[li])
                self.native_layers += 1
                for x in taken or ():
                    folded[x] = li
                continue
            except Unsupported as e:
                log.debug("native plan: layer %r (%s) runs in numpy: %s", layer.name, layer.type, e)
            except d.DnnlError as e:
                log.debug("native plan: layer %r (%s) runs in numpy: %s", layer.name, layer.type, e)
            finally:
                self._use_threads(None)
            # a numpy layer: what it reads leaves the native segment, what it writes comes back
            for b in layer.bottoms:
                self._export(seg, b)
            self.segments.append(seg)
            self.segments.append(Segment(layer=li))
            seg = None
            for t in layer.tops:
                self._values.pop(t, None)
        if seg is None:
            seg = Segment(d.Steps(self.dnnl))
        for b in self.outputs:
            self._export(seg, b)
        self.segments.append(seg)
        self._place()
        self._keep += [a for mem, a in self._const_arrays.values() if id(mem) in self._stepped]
        self._const_arrays, self._stepped, self._spent = {}, set(), {}
        for s in self.segments:
            if s.steps is not None:
                s.steps.seal()
        self.runner = d.Runner(self.dnnl)

    def _use_threads(self, work: int | None) -> None:
        """The steps added next run with the thread count of ``work`` (None: the plan's),
        and are created under it: oneDNN sizes a primitive's work split by the OpenMP count
        it sees then, and the Winograd chunks read it too."""
        k = self.num_threads if work is None else step_threads.choose(work, self.num_threads)
        self._work = 0 if work is None else work
        if k != self.threads:
            set_omp_threads(k)
            self.threads = k

    def shape(self, blob: int) -> tuple:
        s = self.shapes.get(blob)
        if s is None:
            raise Unsupported(f"blob {blob} has no recorded shape")
        return s

    def value(self, seg: Segment, blob: int, want=None) -> Value:
        """The value of ``blob``; one from outside the segment is read in (in the layout
        ``want`` when its reader says which it takes)."""
        v = self._values.get(blob)
        if v is not None:
            v.last = self.step
            return v
        deferred = self._deferred.pop(blob, None)
        if deferred is not None:
            li, make = deferred
            make(self, seg, self.layers[li])
            v = self._values[blob]
            v.last = self.step
            return v
        # a blob from the caller or from a numpy layer: read in through a strided memory
        if blob in self.dynamic:
            raise Unsupported(f"blob {blob} changes shape from run to run")
        shape = self.shape(blob)
        dims = mat_dims(shape)
        if dims is None:
            raise Unsupported(f"blob {blob} is not an fp32 1/2/3-D Mat")
        strides = _mat_strides(shape, dims)
        if strides is None:
            raise Unsupported(f"blob {blob} layout")
        src_md = self.dnnl.md(dims, strides=strides)
        src = self.dnnl.memory(src_md, None)
        md = want if want is not None and want.dims == dims else self.dnnl.md(dims, PLAIN[len(dims)])
        v = self.new_value(md, shape)
        self.reorder(seg, src, v)
        seg.imports.append((src, blob))
        self._values[blob] = v
        return v

    def new_value(self, md, shape: tuple) -> Value:
        v = Value(md, shape, self.step)
        self._all_values.append(v)
        return v

    def alias(self, v: Value, md, byte_off: int = 0, shape: tuple | None = None) -> Value:
        """Another view (``md``) of ``v``'s bytes from ``byte_off`` on: no copy."""
        root = v.base if v.base is not None else v
        a = self.new_value(md, v.shape if shape is None else shape)
        a.base = root
        a.base_off = v.base_off + byte_off
        if not root.const:
            self.mem(root)  # the root takes its place in the arena even if only views are read
        return a

    def const_value(self, arr: np.ndarray, shape: tuple, dims=None, md=None) -> Value:
        """A constant value (not in the arena): ``arr`` with ``dims`` (default: the
        canonical dims of ``shape``), reordered once into ``md`` if given."""
        dims = tuple(dims) if dims is not None else mat_dims(shape)
        if dims is None:
            raise Unsupported("a constant that is not an fp32 1/2/3-D blob")
        a = np.ascontiguousarray(arr, dtype=np.float32)
        if a.size != int(np.prod(dims)):
            raise Unsupported("constant size")
        plain = self.dnnl.md(dims, PLAIN[len(dims)])
        mem, addr = self.dnnl.memory(plain, a.ctypes.data), a.ctypes.data
        self._const_arrays[id(mem)] = (mem, a)
        if md is not None and md != plain:
            mem, addr = self.prepack_at(mem, md)
        v = Value(mem.md, shape, -1)
        v.const, v.addr, v.mem = True, addr, mem
        return v

    def add(self, seg: Segment, prim, args) -> None:
        if any(id(mem) in self._spent for _, mem in args):
            raise RuntimeError("native plan: a step reads a constant whose array went at its prepack")
        seg.steps.add(prim, args, self.threads)
        seg.owners.append((self._li, self._work))
        self._stepped.update(id(mem) for _, mem in args)
        self.step += 1

    def reorder(self, seg: Segment, src, dst: Value) -> None:
        d = dnnl_module()
        pd = self.dnnl.reorder(src.md, dst.md)
        no_reference(pd)
        self.add(seg, pd.primitive(), [(d.ARG_SRC, src), (d.ARG_DST, self.mem(dst))])

    def copy(self, seg: Segment, src: Value, dst: Value) -> None:
        """dst = src by a reorder (layouts, or views with strides, may differ)."""
        self.reorder(seg, self.mem(src), dst)
        src.last = self.step

    def mem(self, v: Value):
        if v.mem is None:
            v.mem = self.dnnl.memory(v.md, None)
        return v.mem

    def _export(self, seg: Segment, blob: int) -> None:
        if blob in self._deferred:
            self.value(seg, blob)
        v = self._values.get(blob)
        if v is None:
            return  # given by the caller or made by a numpy layer: already a Mat
        shape = self.shape(blob)
        dims = v.md.dims
        strides = _mat_strides(shape, dims)
        if strides is None or mat_dims(shape) is None:
            raise Unsupported(f"blob {blob} cannot be written out as a Mat")
        dst = self.dnnl.memory(self.dnnl.md(dims, strides=strides), None)
        d = dnnl_module()
        li = self._li
        self._li = -1
        self._use_threads(step_threads.export_work(shape))
        try:
            pd = self.dnnl.reorder(v.md, dst.md)
            v.last = self.step
            self.add(seg, pd.primitive(), [(d.ARG_SRC, self.mem(v)), (d.ARG_DST, dst)])
        finally:
            self._use_threads(None)
            self._li = li
        seg.exports.append((dst, blob, shape))

    def const(self, arr: np.ndarray, dims, tag: str):
        a = np.ascontiguousarray(arr, dtype=np.float32)
        mem = self.dnnl.memory(self.dnnl.md(dims, tag), a.ctypes.data)
        self._const_arrays[id(mem)] = (mem, a)
        return mem

    def prepack(self, src_mem, md):
        """A constant (weights) reordered once into the layout ``md`` a primitive wants. When
        that is a copy, ``src_mem``'s own array goes at once (weights with a BatchNorm folded
        in: as large as the layer's; not at the end of the build, where every layer's would
        add to the first extract's peak), and when it is the building layer's own weights
        the layer parks them (``_park``): no step may read ``src_mem`` afterwards."""
        if src_mem.md == md:
            return src_mem
        out, _addr, buf = self._reordered(src_mem, md)
        self._backing[id(out)] = buf
        entry = self._const_arrays.get(id(src_mem))
        if entry is not None and id(src_mem) not in self._stepped:
            del self._const_arrays[id(src_mem)]
            self._spent[id(src_mem)] = src_mem  # held: its id stays its own
            if self._park(entry[1], src_mem.md, out, buf):
                self._parked_as[id(out)] = src_mem.md
        return out

    def signature(self) -> tuple:
        """The plan's structure, without its shapes: per segment, the numpy layer it runs or
        the layers its primitives belong to (each once, in order: a layout change or another
        Winograd form is not a new structure), and the outputs. Two plans of one net
        with the same signature differ only in the sizes their steps were made for."""
        return (
            tuple(self.outputs),
            tuple((seg.layer, tuple(dict.fromkeys(li for li, _work in seg.owners))) for seg in self.segments),
        )

    def packed(self, key: tuple, md) -> tuple | None:
        """(weights memory, bias memory or None) the building layer packed into layout ``md``
        for an earlier plan of the net, under ``key`` (what else decides their values: the
        weights' dims, the affine layers folded in), or None. The plan then holds them."""
        if self._packs is None:
            return None
        hit = self._packs.get(self._li, key, md)
        if hit is None:
            return None
        self._keep.append(hit)
        wmem, bmem, arrays, plain_md = hit
        if plain_md is not None:
            # the recording's numpy layers read the weights back: they go again, restorable
            # from the shared packed copy, as at the prepack that made it
            self._park_layer(plain_md, wmem, arrays[0])
        return wmem, bmem

    def keep_packed(self, key: tuple, md, wmem, bmem) -> None:
        """Offer ``wmem`` (as ``prepack`` gave it for layout ``md``) and ``bmem`` to the net's
        later plans (``packed``), with the arrays they are over."""
        if self._packs is None:
            return
        arrays = []
        for mem in (wmem, bmem):
            if mem is None:
                continue
            a = self._backing.get(id(mem))
            if a is None:
                entry = self._const_arrays.get(id(mem))
                if entry is None:
                    return  # not a memory this plan made: nothing known to hold it
                a = entry[1]
            arrays.append(a)
        held = (wmem, bmem, arrays, self._parked_as.get(id(wmem)))
        self._packs.put(self._li, key, md, held, self._packs_era)

    def shared(self, key: tuple, md, make: Callable[[], tuple]) -> tuple:
        """What ``make()`` gives for the building layer (constants it derives from its
        weights, with the arrays they are over), made once for the net's plans under (``key``,
        ``md``) and kept beside its packed weights (``Packs``)."""
        if self._packs is not None:
            hit = self._packs.get(self._li, key, md)
            if hit is not None:
                self._keep.append(hit)
                return hit
        held = make()
        self._keep.append(held)
        if self._packs is not None:
            self._packs.put(self._li, key, md, held, self._packs_era)
        return held

    def buffer_of(self, mem) -> np.ndarray:
        """The array a memory ``prepack`` made is over."""
        return self._backing[id(mem)]

    def prepack_at(self, src_mem, md):
        """``src_mem`` reordered into a new constant of layout ``md``: (memory, address)."""
        return self._reordered(src_mem, md)[:2]

    def _reordered(self, src_mem, md):
        buf = np.empty(max(1, md.size // 4 + 16), np.float32)
        self._keep.append(buf)
        addr = buf.ctypes.data
        addr += (-addr) % 64
        dst = self.dnnl.memory(md, addr)
        reorder(self.dnnl, src_mem, dst)
        return dst, addr, buf

    def _park(self, arr: np.ndarray, plain_md, packed, buf: np.ndarray) -> bool:
        """The building layer lets its weights go when ``arr`` (what ``packed`` was reordered
        from) is exactly them: a reorder of ``packed`` back into ``plain_md`` restores them
        (``buf`` holds its bytes). Weights with a BatchNorm folded in, transformed (Winograd)
        or of another type are not the layer's and stay."""
        layer = self.layers[self._li]
        if not hasattr(layer, "park_weights") or not builtin(layer):
            return False
        own = layer.weight_data
        if own.elemsize != 4 or own.elempack != 1 or own.empty():
            return False
        flat = own.tensor()
        if arr.ctypes.data != flat.ctypes.data or arr.nbytes != flat.nbytes:
            return False
        self._park_layer(plain_md, packed, buf)
        return True

    def _park_layer(self, plain_md, packed, buf: np.ndarray) -> None:
        """The building layer's weights go; a reorder of ``packed`` into ``plain_md`` gives
        them back when read again."""
        layer = self.layers[self._li]
        dn = self.dnnl
        count = int(np.prod(plain_md.dims))

        def restore() -> Mat:
            m = Mat(count)
            if m.empty():
                raise MemoryError(f"cannot restore the {count} weights of {layer.name!r}")
            reorder(dn, packed, dn.memory(plain_md, m.data_ptr()), buf)
            return m

        layer.park_weights(restore)

    # -- layouts ------------------------------------------------------------------------------
    def tag_of(self, md) -> str | None:
        """The format tag of a dense descriptor among the ones activations use, or None."""
        n = len(md.dims)
        for tag in _TAGS.get(n, (PLAIN.get(n, ""),)):
            if tag and self.dnnl.md(md.dims, tag) == md:
                return tag
        return None

    def plain(self, seg: Segment, v: Value) -> Value:
        """``v`` in the plain (row-major) layout of its dims: itself, or a copy (made once)."""
        return self.as_md(seg, v, self.dnnl.md(v.md.dims, PLAIN[len(v.md.dims)]))

    def as_md(self, seg: Segment, v: Value, md) -> Value:
        """``v`` with descriptor ``md`` (same dims): itself, or a copy (one per layout)."""
        if v.md == md:
            return v
        if v.const:
            mem, addr = self.prepack_at(v.mem, md)
            c = Value(md, v.shape, -1)
            c.const, c.addr, c.mem = True, addr, mem
            return c
        tag = self.tag_of(md)
        if tag is not None and tag in v.copies:
            out = v.copies[tag]
            out.last = self.step
            return out
        out = self.new_value(md, v.shape)
        self.copy(seg, v, out)
        if tag is not None:
            v.copies[tag] = out
        return out

    def as_dims(self, seg: Segment, v: Value, dims: tuple[int, ...]) -> Value:
        """``v`` seen with other dims of the same elements (a reshape): a view, after a copy
        into the plain layout where its own layout cannot be reshaped."""
        dims = tuple(dims)
        if v.md.dims == dims:
            return v
        if int(np.prod(dims)) != int(np.prod(v.md.dims)):
            raise Unsupported(f"cannot see {v.md.dims} as {dims}")
        try:
            md = v.md.reshaped(dims)
        except dnnl_module().DnnlError:
            v = self.plain(seg, v)
            md = v.md.reshaped(dims)
        return self.alias(v, md)

    def canon(self, seg: Segment, v: Value) -> Value:
        """``v`` with the dims of its ncnn shape (1, c, h, w) / (1, h, w) / (1, w)."""
        dims = mat_dims(v.shape)
        if dims is None:
            raise Unsupported("not an fp32 1/2/3-D blob")
        return self.as_dims(seg, v, dims)

    def box(self, seg: Segment, v: Value, dims, offsets, shape: tuple) -> Value:
        """The part of ``v`` of size ``dims`` at ``offsets``: a view where those bytes are
        contiguous in ``v``'s layout, else a copy in the same layout (plain if that fails)."""
        dims, offsets = tuple(dims), tuple(offsets)
        full = v.md.dims
        if dims == full:
            return v
        tag = self.tag_of(v.md)
        if tag is not None:
            first = next(i for i, (n, m) in enumerate(zip(dims, full, strict=True)) if n != m)
            rest_full = dims[first + 1 :] == full[first + 1 :] and all(n == 1 for n in dims[:first])
            if tag == PLAIN[len(full)] and rest_full:
                off = sum(o * s for o, s in zip(offsets, dense_strides(full), strict=True))
                return self.alias(v, self.dnnl.md(dims, tag), off * 4, shape)
            blk = BLOCK.get(tag, 0)
            if (
                blk
                and first == 1
                and rest_full
                and offsets[1] % blk == 0
                and (dims[1] % blk == 0 or offsets[1] + dims[1] == full[1])
            ):
                off = offsets[1] * int(np.prod(full[2:]))
                return self.alias(v, self.dnnl.md(dims, tag), off * 4, shape)
        try:
            sub = self.alias(v, v.md.sub(dims, offsets), 0, shape)
            out = self.new_value(self.dnnl.md(dims, tag or PLAIN[len(dims)]), shape)
            self.copy(seg, sub, out)
            return out
        except (dnnl_module().DnnlError, Unsupported):
            if tag == PLAIN[len(full)]:
                raise
        return self.box(seg, self.plain(seg, v), dims, offsets, shape)

    # -- the layers ---------------------------------------------------------------------------
    def _build_layer(self, layer: Layer, seg: Segment, chain: list[int], opt: Option) -> list[int] | None:
        """Add ``layer``'s primitives (its type's builder); the layers of ``chain`` it took in."""
        t = layer.type
        if getattr(layer, "featmask", 0):
            raise Unsupported("feature mask")
        if not builtin(layer):
            raise Unsupported("a custom layer (registered by the application)")
        if t in skipped_types():
            raise Unsupported("listed in NCNN_C_NATIVE_SKIP")
        if self.dynamic.intersection(layer.bottoms) or self.dynamic.intersection(layer.tops):
            raise Unsupported("a blob whose shape changes from run to run")
        for b in layer.bottoms:
            if b not in self._deferred:
                self.shape(b)
        for tp in layer.tops:
            self.shape(tp)
        build = self._ops.builders.get(t)
        if build is None:
            raise Unsupported(f"no native {t}")
        return build(self, layer, seg, opt, chain)

    # -- what builders share --------------------------------------------------------------------
    def deferred(self, blob: int) -> Layer | None:
        """The layer a deferral left ``blob`` to (its reader may do its work), or None."""
        d = self._deferred.get(blob)
        return self.layers[d[0]] if d is not None else None

    def take_deferred(self, blob: int) -> Layer:
        """The deferred layer of ``blob``, whose work its reader now does: never made."""
        return self.layers[self._deferred.pop(blob)[0]]

    def top(self, layer, md, index: int = 0) -> Value:
        # a primitive's choice in the words of a format tag: with one image "Bacd16b" equals
        # "aBcd16b", but oneDNN's binary post-ops read the former wrongly
        tag = self.tag_of(md)
        if tag is not None:
            md = self.dnnl.md(md.dims, tag)
        return self.set_top(layer, self.new_value(md, self.shape(layer.tops[index])), index)

    def set_top(self, layer, v: Value, index: int = 0) -> Value:
        blob = layer.tops[index]
        shape = self.shape(blob)
        # an int8 blob (elemsize 1) is counted in elements as an fp32 one (ops/int8.py)
        want = mat_dims(shape if shape[5] != 1 else (*shape[:5], 4, shape[6]))
        if want is None or int(np.prod(want)) != int(np.prod(v.md.dims)):
            raise Unsupported(f"native result {v.md.dims} does not match the recorded shape {shape}")
        self._values[blob] = v
        return v

    def same(self, layer, seg, v: Value, index: int = 0) -> None:
        """Top ``index`` is ``v`` itself (ncnn shares the blob, or copies it unchanged)."""
        if v.shape != self.shape(layer.tops[index]):
            v = self.alias(v, v.md, 0, self.shape(layer.tops[index]))
        self.set_top(layer, v, index)

    def run1(self, seg, pd, src: Value, out: Value, extra=()) -> None:
        """One primitive reading ``src`` (and ``extra`` arguments), writing ``out``."""
        d = dnnl_module()
        no_reference(pd)
        src.last = self.step
        self.add(seg, pd.primitive(), [(d.ARG_SRC, self.mem(src)), *extra, (d.ARG_DST, self.mem(out))])

    def ready(self, blob: int) -> bool:
        """Whether ``blob`` exists at this point of the plan (a value, a deferred layer's, an
        input, a numpy layer's result): a post-op can read it."""
        return blob in self._values or blob in self._deferred or self._producer_of.get(blob, -1) < self._li

    # -- memory ------------------------------------------------------------------------------
    def _place(self) -> None:
        """Offsets in one arena: a blob's bytes are free again after its last reader (its
        views' readers included)."""
        for v in self._all_values:
            if v.base is not None and not v.base.const:
                v.base.last = max(v.base.last, v.last)
        values = [v for v in self._all_values if v.mem is not None and v.base is None and not v.const]
        values.sort(key=lambda v: v.first)
        live: list[tuple[int, int, Value]] = []  # (offset, end, value)
        top = 0
        for v in values:
            live = [x for x in live if x[2].last >= v.first]
            live.sort(key=lambda x: (x[0], x[1]))
            size = (v.size + 63) // 64 * 64
            pos = 0
            for off, end, _ in live:
                if off - pos >= size:
                    break
                pos = max(pos, end)
            v.offset = pos
            live.append((pos, pos + size, v))
            top = max(top, pos + size)
        self.arena = np.empty(top // 4 + 16, np.float32)
        base = self.arena.ctypes.data
        base += (-base) % 64
        d = self.dnnl
        for v in self._all_values:
            if v.mem is None or v.const:
                continue
            root = v.base if v.base is not None else v
            addr = root.addr if root.const else base + root.offset
            d.bind(v.mem, addr + v.base_off)
        self.arena_bytes = top

    # -- running ------------------------------------------------------------------------------
    def release_arena(self) -> None:
        """Give the arena's pages back to the system while the plan is idle (a run touches
        them in again, as a fresh plan's first run does): nothing lives in it between runs."""
        if not self.arena_resident or not self.lock.acquire(blocking=False):
            return
        try:
            give_back_pages(self.arena.ctypes.data, self.arena.nbytes)
            self.arena_resident = False
        finally:
            self.lock.release()

    def run(self, state: BlobState, forward: Step, opts, opt: Option, capture: dict | None = None) -> int:
        """Compute the outputs into ``state.mats``, the numpy layers with ``forward``; 0, or
        non-zero when a native segment's input (a numpy layer's output) no longer has the
        shape the plan was made for (the caller then runs the numpy path). ``capture`` gets a copy of every blob a native segment writes
        out, when it is written."""
        self.arena_resident = True
        mats = state.mats
        light = bool(opt.lightmode)
        blob_allocator = opt.blob_allocator
        num_threads = opt.num_threads
        for o in self.outputs:
            # what the plan hands out must survive the numpy layers' light-mode release
            # (and their in-place writes): one more reader than the graph has
            state.pending[o] += 1
        binds: list = []
        for seg in self.segments:
            if seg.layer >= 0:
                ret = forward(state, seg.layer, self.layers[seg.layer], opts[seg.layer], light)
                if ret != 0:
                    return ret
                # a numpy layer's result may take another shape than it had when the plan
                # was made (a detection layer's box count): only a native segment that reads
                # it needs the recorded one, and its import checks (``bindable``)
                if any(mats[t] is None for t in self.layers[seg.layer].tops):
                    return 1
                continue
            # the imports are read at the recorded layout's strides (_mat_strides): a Mat of
            # the recorded shape whose channels sit elsewhere goes in as a repacked copy,
            # held (in ``held``) until the run read it
            held: list[Mat] = []
            for mem, blob in seg.imports:
                m = mats[blob]
                m = None if m is None else bindable(m, self.shapes[blob])
                if m is None:
                    return 1
                held.append(m)
                binds.append((mem, m.data_ptr()))
            outs = []
            for mem, blob, shape in seg.exports:
                m = Mat(*_ncnn_size(shape), allocator=blob_allocator)  # a fresh Mat: plan_cstep
                binds.append((mem, m.data_ptr()))
                outs.append((blob, m))
            self.runner.run(seg.steps, num_threads, binds, self.timing)
            binds, held = [], []
            for blob, m in outs:
                mats[blob] = m
                if capture is not None:
                    capture[blob] = np.array(m.numpy(), copy=True)
        return 0


def reorder(dn, src_mem, dst_mem, *keep) -> None:
    """dst = src now (a oneDNN reorder on this thread; ``keep``: arrays its memories are over,
    held until it ran)."""
    d = dnnl_module()
    steps = d.Steps(dn)
    steps.add(dn.reorder(src_mem.md, dst_mem.md).primitive(), [(d.ARG_SRC, src_mem), (d.ARG_DST, dst_mem)])
    steps.seal()
    d.Runner(dn).run(steps, 1, [])
    del keep


def no_reference(pd) -> None:
    """oneDNN falls back to its reference code for what its fast kernels do not cover (a
    padded 1x1 convolution in a blocked layout: seconds instead of a millisecond); that
    layer then runs in numpy instead."""
    impl = pd.impl
    if impl.startswith("ref"):
        raise Unsupported(f"oneDNN has only its reference implementation ({impl}) here")


def _ncnn_size(shape: tuple) -> tuple:
    dims, w, h, d, c, _es, _ep = shape
    return {1: (w,), 2: (w, h), 3: (w, h, c), 4: (w, h, d, c)}[dims]


# plans dropped from the LRU without one use before the net stops recording new shapes
WASTED_LIMIT = 4
# blobs besides the net's outputs a family's plans learn to hand out (NativePlans.also)
EXTRAS = 8


class Packs:
    """Weights in the layouts a net's plans' primitives read, shared by the plans: a new
    input shape mostly wants the layouts an earlier one did (oneDNN picks a weights layout
    from the channels and the kernel, rarely from the spatial size), so its plan reuses them
    instead of reading the layer's weights again (unparking them, folding affine layers in)
    and reordering. Per layer, the ``PER_LAYER`` layouts used last; dropped with the plans."""

    PER_LAYER = 2

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by_layer: dict[int, list[tuple]] = {}  # layer -> [(key, md, held)], newest last
        self.era = 0  # one more on every clear: a plan built from older weights offers none

    def get(self, li: int, key: tuple, md) -> tuple | None:
        with self._lock:
            entries = self._by_layer.get(li, [])
            for i, (k, m, held) in enumerate(entries):
                if k == key and m == md:
                    entries.append(entries.pop(i))
                    return held
        return None

    def put(self, li: int, key: tuple, md, held: tuple, era: int) -> None:
        with self._lock:
            if era != self.era:
                return
            entries = self._by_layer.setdefault(li, [])
            entries[:] = [e for e in entries if not (e[0] == key and e[1] == md)]
            entries.append((key, md, held))
            del entries[: -self.PER_LAYER]

    def clear(self) -> None:
        with self._lock:
            self.era += 1
            self._by_layer.clear()

    def __len__(self) -> int:
        return sum(len(v) for v in self._by_layer.values())


class NativePlans:
    """A net's plans: LRU over (target, input shapes, option values); a few instances per
    key so that threads sharing a net do not wait for each other.

    A net whose input shape changes on every extract (an LLM's decode steps: the kv cache
    grows by one token each time) would record a plan per extract and never use one: after
    ``WASTED_LIMIT`` plans left the LRU unused, the net records no new ones (logged once;
    plans already made keep running) until ``clear()``.

    Shape-loose plans serve those decode steps: when two recordings of one family (target,
    options, input blobs) differ in some inputs' shapes but not all, the blobs whose shapes
    differed are ``dynamic`` in the next plan (numpy layers alone touch them) and its key
    masks those inputs' shapes (``loose_key``), so one plan runs every later step."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._plans: OrderedDict[tuple, list] = OrderedDict()
        self._uses: dict[int, int] = {}  # id(plan) -> runs
        self.failed: set[tuple] = set()
        self.built = 0
        self.wasted = 0
        self._seen: dict[tuple, dict[int, tuple]] = {}  # family -> last recording's blob shapes
        self._loose: dict[tuple, frozenset[int]] = {}  # family -> inputs whose shapes vary
        # one more on every clear(): a plan recorded from weights that a load_model on
        # another thread has replaced since is neither kept nor marked failed
        self.era = 0
        # family -> blobs besides the net's outputs that callers extract after a plan of it
        # ran (the two heads before a Noop that ncnn's yolo-fastestv2 example reads), so
        # that its plans hand them out too; and those a plan could not hand out
        self._extras: dict[tuple, set[int]] = {}
        self._refused: dict[tuple, set[int]] = {}
        self.packs = Packs()  # the weights packed for the plans, which new shapes reuse
        self._checked: set[tuple] = set()  # signatures of plans checked against the numpy layers
        self._shapes_wrong = False  # a recording found a shape rule wrong (shapes.py)

    def seen(self, key: tuple, shapes: dict[int, tuple]) -> dict[int, tuple] | None:
        """The blob shapes of the last recording of ``key``'s family (None: the first);
        ``shapes`` become the last."""
        with self._lock:
            prev = self._seen.get(_family(key))
            self._seen[_family(key)] = dict(shapes)
            return prev

    def last_seen(self, key: tuple) -> dict[int, tuple] | None:
        """The blob shapes of the last recording of ``key``'s family, left as they are."""
        with self._lock:
            return self._seen.get(_family(key))

    def trusts_shapes(self) -> bool:
        """Whether plans may be made from inferred shapes (no recording found a rule wrong)."""
        return not self._shapes_wrong

    def distrust_shapes(self) -> None:
        self._shapes_wrong = True

    def loose_key(self, key: tuple, inputs: frozenset[int] | None = None) -> tuple | None:
        """``key`` with the shapes of its family's varying inputs masked (``inputs``, or the
        ones ``set_loose`` gave), or None when the family has none."""
        with self._lock:
            dyn = inputs if inputs is not None else self._loose.get(_family(key))
        if dyn is None:
            return None
        return (*key[:2], tuple((i, None if i in dyn else s) for i, s in key[2]), "loose")

    def set_loose(self, key: tuple, inputs: frozenset[int] | None) -> None:
        with self._lock:
            if inputs is None:
                self._loose.pop(_family(key), None)
            else:
                self._loose[_family(key)] = inputs

    def extras(self, key: tuple) -> frozenset[int]:
        """The blobs learnt for ``key``'s family (``also``) that its plans also hand out."""
        with self._lock:
            return frozenset(self._extras.get(_family(key), ()))

    def also(self, key: tuple, blob: int) -> None:
        """After a plan of ``key`` ran, the caller extracted ``blob``, which it did not hand
        out (so the numpy layers computed it again): the family's plans are dropped and the
        next recording hands it out too. Once per blob, at most ``EXTRAS`` per family."""
        fam = _family(key)
        with self._lock:
            have = self._extras.setdefault(fam, set())
            if blob in have or blob in self._refused.get(fam, ()) or len(have) >= EXTRAS:
                return
            have.add(blob)
            for k in [k for k in self._plans if _family(k) == fam]:
                for p in self._plans.pop(k):
                    self._uses.pop(id(p), None)
        log.info(
            "native plan: blob %d is extracted after the plan's outputs; the next plan hands it out", blob
        )

    def refuse(self, key: tuple, blobs) -> None:
        """A plan could not hand ``blobs`` out correctly: the family's plans leave them out."""
        fam = _family(key)
        with self._lock:
            self._extras.get(fam, set()).difference_update(blobs)
            self._refused.setdefault(fam, set()).update(blobs)

    def take(self, key: tuple):
        """A free plan of ``key`` (locked for the caller), or None."""
        with self._lock:
            plans = self._plans.get(key)
            if not plans:
                return None
            self._plans.move_to_end(key)
            got = None
            for p in plans:
                if p.lock.acquire(blocking=False):
                    self._uses[id(p)] = self._uses.get(id(p), 0) + 1
                    got = p
                    break
            idle = self._idle()
        self._release_idle(idle)
        return got

    def _idle(self) -> list:
        """The plans past the RESIDENT keys used last whose arenas are resident (lock held)."""
        if len(self._plans) <= RESIDENT:
            return []
        keys = list(self._plans)[:-RESIDENT]
        return [p for k in keys for p in self._plans[k] if getattr(p, "arena_resident", False)]

    @staticmethod
    def _release_idle(idle: list) -> None:
        for p in idle:
            p.release_arena()

    def wanted(self, key: tuple) -> bool:
        with self._lock:
            if self.wasted >= WASTED_LIMIT:
                return False
            return key not in self.failed and len(self._plans.get(key, ())) < INSTANCES

    def add(self, key: tuple, plan, era: int | None = None) -> None:
        """Keep ``plan`` for ``key`` (when ``era`` is given: only if no clear() came since)."""
        with self._lock:
            if era is not None and era != self.era:
                return
            self._plans.setdefault(key, []).append(plan)
            self._plans.move_to_end(key)
            while len(self._plans) > CAPACITY:
                _, dropped = self._plans.popitem(last=False)
                for p in dropped:
                    # a plan made from inferred shapes cost little: only recorded ones count
                    if not self._uses.pop(id(p), 0) and not getattr(p, "cheap", False):
                        self.wasted += 1
                        if self.wasted == WASTED_LIMIT:
                            log.info(
                                "native plan: the input shapes change on every extract; this net "
                                "records no new plans (its numpy layers run)"
                            )
            self.built += 1
            idle = self._idle()
        self._release_idle(idle)

    def checked(self, signature: tuple) -> bool:
        """Whether a plan of this structure was checked against the numpy layers."""
        with self._lock:
            return signature in self._checked

    def mark_checked(self, signature: tuple, era: int) -> None:
        with self._lock:
            if era == self.era:
                self._checked.add(signature)

    def fail(self, key: tuple, era: int | None = None) -> None:
        with self._lock:
            if era is None or era == self.era:
                self.failed.add(key)

    def clear(self) -> None:
        with self._lock:
            self.era += 1
            self._plans.clear()
            self._uses.clear()
            self.failed.clear()
            self.wasted = 0
            self._seen.clear()
            self._loose.clear()
            self._extras.clear()
            self._refused.clear()
            self._checked.clear()
            self._shapes_wrong = False
        self.packs.clear()

    def __len__(self) -> int:
        return sum(len(v) for v in self._plans.values())


def _family(key: tuple) -> tuple:
    """(target, options, input blobs) of a plan key."""
    return (key[0], key[1], tuple(i for i, _ in key[2]))


def skipped_types() -> set[str]:
    """Layer types kept in numpy: ``NCNN_C_NATIVE_SKIP=Pooling,Concat`` (a way around a
    native op that misbehaves on some machine, and for bisecting one)."""
    return {t.strip() for t in os.environ.get("NCNN_C_NATIVE_SKIP", "").split(",") if t.strip()}
