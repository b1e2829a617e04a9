"""The native plan as an executor: record a plan on the first extract of a shape, check it
against the numpy layers, run it on the later ones.

Recording runs the reference executor and logs every blob's shape (and copies of what a
plan will have to reproduce); the plan is then built from the log and run once on a fresh
``BlobState`` beside the caller's: it must give the numpy result at every blob it writes out
(relative L2 <= ``VERIFY_TOL``, the same non-finite cells), or that shape keeps the numpy
path (logged; ``NCNN_C_NATIVE_STRICT=1`` makes it an error, for tests).
"""

from __future__ import annotations

import logging
import os
import time

import numpy as np

from ..._native.blas import single_threaded as single_threaded_blas
from ..._native.onednn import release_code
from ..._native.onednn import set_threads as set_omp_threads
from ...layer import Layer
from ...mat import Mat
from ...option import Option
from ..backend import Backend
from ..reference import ReferenceExecutor
from ..state import BlobState
from ..view import NetView
from ..walk import walk
from . import contention
from .ops import NATIVE_TYPES, OPS
from .plan import NativePlan, NativePlans, Unsupported, available, builtin, shape_of, skipped_types
from .shapes import infer as infer_shapes
from .shapes import mismatches

log = logging.getLogger("ncnn_c")

VERIFY_TOL = 1e-4
VERIFY_CHUNK = 1 << 13  # values compared at a time


def strict() -> bool:
    return os.environ.get("NCNN_C_NATIVE_STRICT") == "1"


def check_every_plan() -> bool:
    """Whether every plan is checked against the numpy layers before it is kept: in strict
    mode and with ``NCNN_C_NATIVE_CHECK=every`` (debugging). Otherwise a plan is checked when
    its structure is new to the net (``NativePlan.signature``): a new input shape with the
    same segments and native layers as a checked plan runs unchecked."""
    return strict() or os.environ.get("NCNN_C_NATIVE_CHECK", "").strip().lower() == "every"


def close_enough(got: np.ndarray, ref: np.ndarray) -> bool:
    """Relative L2 <= VERIFY_TOL over the finite cells, the same non-finite cells. In float64,
    a chunk at a time: whole float64 copies of the largest blobs would set the first
    extract's peak memory."""
    got, ref = np.asarray(got), np.asarray(ref)
    if got.shape != ref.shape:
        return False
    g, r = got.reshape(-1), ref.reshape(-1)
    num = den = 0.0
    for s in range(0, r.size, VERIFY_CHUNK):
        gc = g[s : s + VERIFY_CHUNK].astype(np.float64)
        rc = r[s : s + VERIFY_CHUNK].astype(np.float64)
        fin = np.isfinite(rc)
        if not np.array_equal(np.isfinite(gc), fin):
            return False
        if not fin.all() and not np.array_equal(gc[~fin], rc[~fin], equal_nan=True):
            return False
        rf = rc[fin]
        d = gc[fin] - rf
        den += float(rf @ rf)
        num += float(d @ d)
    num, den = np.sqrt(num), np.sqrt(den)
    return bool(num <= VERIFY_TOL * den or (den == 0 and num <= 1e-6))


SLOT = "native"  # this executor's slot of a BlobState


class _PlanSlot:
    """What the native executor keeps of a state: ``key``, the plan whose run (or recording)
    computed its blobs, or None: a later extract of a blob that run did not hand out teaches
    the plan to (``NativePlans.also``)."""

    __slots__ = ("key",)

    def __init__(self) -> None:
        self.key: tuple | None = None

    def changed(self) -> None:
        self.key = None

    def release(self) -> None:
        self.key = None


class NativeExecutor(Backend):
    """The native plan as an executor: ``extract`` runs the plan of the state's input shapes,
    records one (on the reference executor) when there is none, or returns None when the
    reference executor must run (no plan possible; the state is then untouched). As a
    backend it has no load step: plans are made at an extract, and ``plans`` is dropped
    with the view's plans (``NetView.keep``)."""

    __slots__ = ("_view", "_reference", "plans", "enabled")

    def __init__(self, view: NetView, reference: ReferenceExecutor) -> None:
        self._view = view
        self._reference = reference
        self.plans = NativePlans()  # the plans per input shape (they hold what they read of the weights)
        view.keep(self.plans)
        self.enabled = True  # net.native_plan

    def release(self, opt: Option, clear: bool) -> None:
        self.plans.clear()

    def _outputs(self, index: int, given: set[int], extras: frozenset[int] = frozenset()) -> list[int]:
        """``index`` and every other output of the net (a blob nobody reads) that the given
        inputs can compute: a plan computes them all, since callers extract them all; and
        the ``extras`` callers were seen to extract after such a plan (``NativePlans.also``)."""
        view = self._view
        blobs = view.blobs
        outs = [index]
        for b, n in enumerate(view.consumer_counts):
            if (n == 0 or b in extras) and b != index and blobs[b].producer >= 0:
                if not view.is_source(b) and set(view.plan(b).sources) <= given:
                    outs.append(b)
        return outs

    def extract(self, state: BlobState, index: int, opt: Option) -> int | None:
        """Compute blob ``index`` with the native plan of this input shape: its return code,
        or None when the numpy path must run. BLAS on one thread, as the numpy layers'
        (``ReferenceExecutor.extract``)."""
        with single_threaded_blas():
            return self._extract(state, index, opt)

    def _extract(self, state: BlobState, index: int, opt: Option) -> int | None:
        view = self._view
        if state.partial:
            key = state.slot(SLOT, _PlanSlot).key
            if key is not None and self.enabled and not view.is_source(index):
                # a blob the plan that just ran did not hand out: its next plan will
                self.plans.also(key, index)
            return None
        if not self.enabled or not available():
            return None
        mats = state.mats
        inputs = {i: m for i, m in enumerate(mats) if m is not None}
        for m in inputs.values():
            # an empty Mat (a decoder's first kv cache) is only read by numpy layers
            if (m.elemsize != 4 or m.elempack != 1) and not m.empty():
                return None
        if not set(view.plan(index).sources) <= inputs.keys():
            return None  # an unfed input runs as an empty Mat: the numpy path does that
        shapes = tuple((i, shape_of(m)) for i, m in inputs.items())
        busy_key = (id(view), index, shapes)  # the same for every thread count
        threads = contention.STATE.threads(opt.num_threads, busy_key)
        if threads != opt.num_threads:
            opt = opt.copy()  # a plan of its own: the key holds the option values
            opt.num_threads = threads
        lo = view.layer_options(opt)
        opts = lo.per_layer
        key = (index, lo, shapes)
        plans: NativePlans = self.plans
        plan = plans.take(key)
        if plan is None:
            loose = plans.loose_key(key)
            plan = plans.take(loose) if loose is not None else None
        if plan is not None:
            saved = list(mats)
            start = time.perf_counter()
            try:
                ret = plan.run(state, self._reference.forward, opts, opt)
            finally:
                plan.lock.release()
            if ret == 0:
                contention.STATE.record(busy_key, threads, time.perf_counter() - start)
                state.partial = True
                state.slot(SLOT, _PlanSlot).key = key
                return 0
            log.info("native plan: a numpy layer's output changed shape; this extract runs in numpy")
            if plan.dynamic:
                plans.set_loose(key, None)  # more varies than it knew: record afresh
            state.mats = saved
            return None
        if not plans.wanted(key):
            return None
        ret = self._from_shapes(state, index, key, inputs, opt, opts)
        if ret is None:
            ret = self._record(state, index, key, inputs, opt, opts)
        if ret == 0:
            state.slot(SLOT, _PlanSlot).key = key
        return ret

    def _check_rules(
        self, order: list[int], inputs: dict[int, Mat], recorded: dict[int, tuple], opts
    ) -> None:
        """The shape rules against what a recording gave: a net where one is wrong makes no
        plan from inferred shapes again (an error in strict mode, which the tests run in)."""
        plans: NativePlans = self.plans
        if not plans.trusts_shapes():
            return
        given = {i: shape_of(m) for i, m in inputs.items()}
        wrong = mismatches(infer_shapes(self._view.layers, order, given, opts), recorded)
        if not wrong:
            return
        layers = self._view.layers
        names = [
            f"{layers[self._view.blobs[b].producer].type} -> {self._view.blobs[b].name}" for b in wrong[:4]
        ]
        msg = f"native plan: the shape rules are wrong at {names}"
        if strict():
            raise AssertionError(msg)
        log.warning("%s: this net records every new input shape", msg)
        plans.distrust_shapes()

    def _constant_layers(self, order: list[int]) -> set[int]:
        """Layers whose output is the same on every run of a plan: MemoryData, PriorBox (it
        reads only its inputs' shapes, fixed per plan), and layers that read only those. A plan
        keeps what they gave on its recording run."""
        if "constant" in skipped_types():
            return set()
        layers = self._view.layers
        blobs: set[int] = set()
        out: set[int] = set()
        for li in order:
            layer = layers[li]
            if not builtin(layer) or not layer.tops or layer.type in skipped_types():
                continue
            if layer.type in ("MemoryData", "PriorBox") or (layer.bottoms and set(layer.bottoms) <= blobs):
                out.add(li)
                blobs.update(layer.tops)
        return out

    def _from_shapes(
        self, state: BlobState, index: int, key: tuple, inputs: dict[int, Mat], opt: Option, opts
    ) -> int | None:
        """A plan for a new input shape built from inferred shapes (``shapes.py``), with no
        numpy recording, and run: when the net trusts its shape rules, the plan's structure
        is one a checked plan had, and nothing of it is a constant computed on a recording.
        None when it cannot be made so (the caller records one)."""
        view = self._view
        plans: NativePlans = self.plans
        if check_every_plan() or not plans.trusts_shapes() or plans.loose_key(key) is not None:
            return None
        era = plans.era
        outputs = self._outputs(index, set(inputs), plans.extras(key))
        order = sorted({li for o in outputs for li in view.plan(o).order})
        if self._constant_layers(order):
            return None
        given = {i: shape_of(m) for i, m in inputs.items()}
        prev = plans.last_seen(key)
        if prev is not None and len(inputs) > 1:
            varying = {i for i, s in given.items() if prev.get(i) != s}
            if varying and any(not inputs[i].empty() for i in set(inputs) - varying):
                return None  # a decode step: the recording makes a shape-loose plan
        shapes = infer_shapes(view.layers, order, given, opts)
        set_omp_threads(opt.num_threads)
        try:
            plan = NativePlan(
                OPS, view.layers, order, outputs, shapes, opts, None, frozenset(), plans.packs, False
            )
        except Exception as e:  # noqa: BLE001 - the recording path decides (and logs) what fails
            log.debug("native plan: none from inferred shapes for %r: %s", view.blobs[index].name, e)
            return None
        finally:
            release_code()
        if plan.native_layers == 0 or not plans.checked(plan.signature()):
            return None
        saved = list(state.mats)
        with plan.lock:
            ret = plan.run(state, self._reference.forward, opts, opt)
        if ret != 0:
            # a numpy layer's output differs from its inferred shape: record this one
            log.info("native plan: a numpy layer's output is not of its inferred shape; recording")
            state.mats = saved
            return None
        plans.seen(key, shapes)
        plans.add(key, plan, era)
        state.partial = True
        log.info(
            "native plan for %r from inferred shapes: %d of %d layers native, %d segments, arena %d KiB",
            view.blobs[index].name, plan.native_layers, len(order), len(plan.segments), plan.arena_bytes // 1024,
        )  # fmt: skip
        return 0

    def _record(
        self, state: BlobState, index: int, key: tuple, inputs: dict[int, Mat], opt: Option, opts
    ) -> int:
        """The numpy path, logging every blob's shape; then a plan built from the log, checked
        against what the numpy path computed."""
        view = self._view
        reference = self._reference
        plans: NativePlans = self.plans
        era = plans.era  # the weights this recording reads (see NativePlans.add)
        layers = view.layers
        shapes = {i: shape_of(m) for i, m in inputs.items()}
        extras = plans.extras(key)
        outputs = self._outputs(index, set(inputs), extras)
        order = sorted({li for o in outputs for li in view.plan(o).order})
        # what a plan writes out for numpy layers (and hands out) is checked against these
        # copies, taken as the numpy path makes them (in-place layers change them afterwards)
        watch = set(outputs)
        for li in order:
            if layers[li].type not in NATIVE_TYPES:
                watch.update(layers[li].bottoms)
        refs: dict[int, np.ndarray] = {}
        const_layers = self._constant_layers(order)
        consts: dict[int, np.ndarray] = {}
        # the recording's convolutions skip Winograd (its transformed weights, 4x the kernel,
        # would be made for layers the plan then runs natively) and the net's own workspace
        # pool (it would keep the largest im2col buffers of layers that never run again)
        recording: dict[int, Option] = {}

        def step(state: BlobState, li: int, layer: Layer, layer_opt: Option, light: bool) -> int:
            o = recording.get(id(layer_opt))
            if o is None:
                o = recording[id(layer_opt)] = layer_opt.copy()
                o.use_winograd_convolution = False
                if opt.workspace_allocator is None:
                    o.workspace_allocator = None
            ret = reference.forward(state, li, layer, o, light)
            if ret == 0:
                for t in layer.tops:
                    m = state.mats[t]
                    if m is not None:
                        shapes[t] = shape_of(m)
                        if t in watch:
                            refs[t] = np.array(m.numpy(), copy=True)
                        if li in const_layers:
                            consts[t] = np.array(m.numpy(), dtype=np.float32, copy=True)
            return ret

        for o in outputs:
            # what the recording hands out must survive the later outputs' numpy layers (light
            # mode's release, an in-place reader: the Softmax after pool10), as plan.run does
            state.pending[o] += 1
        for o in outputs:
            if state.mats[o] is None:
                ret = walk(view, state, o, opt, step)
                if ret != 0:
                    return ret
            if state.mats[o] is None:
                return -1
        # the extra outputs computed here must not cost a later extract its inputs
        for i, m in inputs.items():
            if state.mats[i] is None:
                state.mats[i] = m
        if not all(np.isfinite(refs[o]).all() for o in outputs if o in refs):
            # nothing to check a plan against: build one with the next (finite) input; a
            # non-finite blob inside (a causal mask's -inf) is checked cell by cell. (The
            # inputs are not judged: an elemsize-4 Mat may hold int32 values, a Dequantize's)
            return 0
        name = view.blobs[index].name
        self._check_rules(order, inputs, shapes, opts)
        # blobs whose shapes differ from the family's last recording: a shape-loose plan
        # (numpy layers for them, their inputs' shapes masked in its key) when some non-empty
        # inputs kept theirs (a decode step: the kv cache and mask grow, the token's blobs
        # do not)
        prev = plans.seen(key, shapes)
        dynamic: frozenset[int] = frozenset()
        loose = None
        if prev is not None:
            changed = frozenset(b for b in set(prev) | set(shapes) if prev.get(b) != shapes.get(b))
            varying = changed.intersection(inputs)
            # an input kept must hold something: a prefill of another length keeps only
            # its empty caches, and all it computes varies (a loose plan would be all numpy)
            if varying and any(not inputs[i].empty() for i in set(inputs) - varying):
                dynamic, loose = changed, plans.loose_key(key, varying)
        # oneDNN splits a primitive's work for the OpenMP count it sees at creation; the
        # runs set their own (plan.c) and put the caller's back
        set_omp_threads(opt.num_threads)
        try:
            plan = NativePlan(OPS, layers, order, outputs, shapes, opts, consts, dynamic, plans.packs)
        except Exception as e:  # noqa: BLE001 - the numpy result stands; this shape stays numpy
            # strict mode is about wrong values: a plan that cannot be made at all (an int8
            # blob handed out, which a plan cannot write as a Mat) leaves the numpy layers,
            # which are right
            if strict() and not isinstance(e, Unsupported):
                raise
            log.warning("native plan: cannot build one for %r: %s", name, e)
            plans.fail(key, era)
            return 0
        finally:
            release_code()
        if plan.native_layers == 0:
            plans.fail(key, era)
            return 0
        signature = plan.signature()
        unchecked = not check_every_plan() and plans.checked(signature)
        if not unchecked:
            check = BlobState(view.consumer_counts)
            for i, m in inputs.items():
                check.mats[i] = m
                # the caller's Mat (maybe over the caller's array): in-place layers copy first
                check.shared.add(i)
            got: dict[int, np.ndarray] = {}
            with plan.lock:
                ret = plan.run(check, reference.forward, opts, opt, got)
            bad = [o for o in outputs if ret != 0 or check.mats[o] is None]
            # every blob the native segments wrote out (the numpy layers after them are the same code)
            bad += [b for b, a in got.items() if b in refs and b not in bad and not close_enough(a, refs[b])]
            if plans.era != era:  # load_model or clear() on another thread: the weights changed
                return 0
            if bad and set(bad) <= extras.intersection(outputs[1:]):
                # only blobs learnt from callers came out wrong: the next plan leaves them out
                log.info("native plan: cannot hand out %s as well", [view.blobs[o].name for o in bad])
                plans.refuse(key, bad)
                return 0
            if bad:
                msg = f"native plan differs from the numpy layers at {[view.blobs[o].name for o in bad]}"
                if strict():
                    raise AssertionError(msg)
                log.warning("%s: this shape keeps the numpy path", msg)
                plans.fail(key, era)
                return 0
            plans.mark_checked(signature, era)
        plans.add(loose or key, plan, era)
        if loose is not None:
            plans.set_loose(key, frozenset(i for i, s in loose[2] if s is None))
        log.info(
            "native plan for %r: %d of %d layers native, %d segments, arena %d KiB%s%s",
            name, plan.native_layers, len(order), len(plan.segments), plan.arena_bytes // 1024,
            f", {len(dynamic)} blobs of varying shape" if dynamic else "",
            ", kept unchecked (a new shape of a checked plan)" if unchecked else "",
        )  # fmt: skip
        return 0
