"""The Extractor contract as a property, checked against the PyPI ncnn (docs/design.md,
"The Extractor contract").

A *run* is one fresh extractor, a light mode and a sequence of blob names extracted in that
order. The PyPI ncnn (CPU, fp32, one thread, in a child process: it can crash, and its
spinning threads must not share our cores) does each run, and so does ncnn_c on one executor
(numpy layers, native plan in strict mode, Vulkan with fp32 options), on a fresh Net per run
or on one Net shared by all runs (twice, so that the later extracts of every shape run the
plans and recordings the first ones made). For every extract:

* where ncnn returns 0 with data, ncnn_c returns 0 and the same values (rel L2 within the
  network's bar; detections matched box by box);
* where ncnn refuses (or hands out an empty Mat, what its light mode does for a blob whose
  input it already released), ncnn_c may refuse too, with a log line, or return the blob's
  true value (ncnn's own for that blob from a fresh extractor); a wrong value never passes.

The kv-cache tops of SDPA layers are laid out by each backend its own way (the PyPI ncnn's
x86 SDPA keeps K transposed): those are compared with ncnn_c's numpy layers doing the same
run, and only their shapes with ncnn.
"""

from __future__ import annotations

import concurrent.futures
import functools
import multiprocessing
import os
import pathlib
import tempfile
from dataclasses import dataclass, field

import numpy as np
from oracle import FP32_FLAGS, rel_l2

ROOT = pathlib.Path(__file__).resolve().parents[1]
MODELS = ROOT / "models"

NET_TOL = 1e-4  # fp32 networks (tests/test_networks.py)
INT8_TOL = 1e-2  # int8 networks (tests/test_networks_int8.py)
VK_TOL = 1e-3  # Vulkan with fp32 options (tests/test_networks_vulkan.py)
DETECTION_TYPES = {"DetectionOutput", "Yolov3DetectionOutput", "YoloDetectionOutput"}

Run = tuple[bool, tuple[str, ...]]  # (light mode, blob names in extract order)


@dataclass
class Network:
    """A model the contract is checked on: its .param text, a maker of its weights, and its
    inputs (None: given as an empty Mat; a name left out is never given)."""

    name: str
    param_text: str
    make_weights: object  # () -> bytes
    inputs: dict[str, np.ndarray | None]
    tol: float = NET_TOL
    slow: bool = False  # large weights or slow layers: the slow run only
    layers: list[tuple[str, list[str], list[str]]] = field(default_factory=list)

    def __post_init__(self) -> None:
        lines = self.param_text.split("\n")
        # the header's layer count bounds what ncnn reads (nanodet_m.param has a line after it)
        count = int(lines[1].split()[0])
        for line in lines[2 : 2 + count]:
            tok = line.split()
            if len(tok) < 4:
                continue
            nb, nt = int(tok[2]), int(tok[3])
            self.layers.append((tok[0], tok[4 : 4 + nb], tok[4 + nb : 4 + nb + nt]))

    @functools.cached_property
    def weights(self) -> bytes:
        return self.make_weights()  # type: ignore[operator]

    @property
    def blobs(self) -> list[str]:
        """Every blob, in the order the layers produce them."""
        return [t for _, _, tops in self.layers for t in tops]

    @property
    def producer_type(self) -> dict[str, str]:
        return {t: typ for typ, _, tops in self.layers for t in tops}

    @property
    def cache_tops(self) -> set[str]:
        """The kv-cache outputs (each SDPA with 3 tops: its last two)."""
        return {t for typ, _, tops in self.layers if typ == "SDPA" and len(tops) == 3 for t in tops[1:]}

    @property
    def outputs(self) -> list[str]:
        consumed = {b for _, bottoms, _ in self.layers for b in bottoms}
        return [t for typ, _, tops in self.layers if typ != "Input" for t in tops if t not in consumed]

    def detection_thresholds(self) -> tuple[float, float]:
        from test_networks import detection_thresholds

        return detection_thresholds(self.param_text)


# -- the networks under models/ ------------------------------------------------------------------
def _input_shapes(text: str, default=(3, 224, 224)) -> list[tuple[str, tuple[int, int, int]]]:
    out = []
    for line in text.split("\n")[2:]:
        tok = line.split()
        if len(tok) >= 5 and tok[0] == "Input":
            kv = dict(p.split("=", 1) for p in tok[5:] if "=" in p and not p.startswith("-"))
            shape = (int(kv.get("2", 0)), int(kv.get("1", 0)), int(kv.get("0", 0)))
            out.append((tok[4], shape if all(shape) else default))
    return out


def _image_network(
    name: str, path: pathlib.Path, tol: float, slow: bool, shape=None, weights=None
) -> Network:
    from ncnn_c.tools.randbin import random_weights

    text = path.read_text()
    shapes = _input_shapes(text, shape or (3, 224, 224))
    g = np.random.default_rng(0)
    inputs = {n: g.standard_normal(s).astype(np.float32) for n, s in shapes}
    cal = shapes[0][1]

    def make() -> bytes:
        if weights is not None:
            return weights.read_bytes()
        return random_weights(str(path), seed=7, input_shape=cal)

    return Network(name, text, make, inputs, tol, slow)


def _decoder(given_caches: bool) -> Network:
    from ncnn_c.tools.bench import LLMSpec, llm_inputs
    from ncnn_c.tools.randbin import random_weights

    path = MODELS / "llm" / "qwen3_0.6b_2layer_decoder.ncnn.param"
    spec = LLMSpec(str(path))
    arrays = llm_inputs(spec, 16, 0, np.random.default_rng(0))
    inputs: dict[str, np.ndarray | None] = dict(zip(("in0", "in1", "in2", "in3"), arrays, strict=True))
    if given_caches:
        inputs.update({n: None for n in spec.cache_in})
    name = "qwen3_2layer" + ("_empty_caches" if given_caches else "_unfed_caches")
    return Network(name, path.read_text(), lambda: random_weights(str(path), seed=0), inputs)


# networks the main run samples from is every one not marked slow; heavy weights or layers
# that take seconds on two cores go to the slow run
SLOW_NETWORKS = {"vgg16", "alexnet", "vgg16_int8", "vision_transformer", "resnet50_int8", "googlenet_int8"}
SHAPES = {
    "FastestDet": (3, 352, 352),
    "vision_transformer": (3, 384, 384),
    "PP_OCRv5_mobile_det.ncnn": (3, 256, 256),
}


@functools.cache
def networks() -> dict[str, Network]:
    nets: dict[str, Network] = {}
    sq = MODELS / "squeezenet_v1.1.param"
    nets["squeezenet_real"] = _image_network(
        "squeezenet_real", sq, NET_TOL, False, (3, 227, 227), MODELS / "squeezenet_v1.1.bin"
    )
    for folder, tol in (("benchmark", NET_TOL), ("benchmark_int8", INT8_TOL), ("benchmark_extra", NET_TOL)):
        for p in sorted((MODELS / folder).glob("*.param")):
            name = p.stem.replace(".ncnn", "")
            shape = SHAPES.get(p.stem, (3, 224, 224))
            nets[name] = _image_network(name, p, tol, name in SLOW_NETWORKS, shape)
    for given in (False, True):
        d = _decoder(given)
        nets[d.name] = d
    return nets


# -- runs ------------------------------------------------------------------------------------------
def sample_runs(net: Network, seed: int, singles: int | None, sequences: int) -> list[Run]:
    """Runs for one check: ``singles`` blobs alone (None: every blob), always an output and
    a blob an in-place layer reads among them, then ``sequences`` seeded random sequences of
    2-6 blobs, alternating light mode on and off."""
    g = np.random.default_rng(seed)
    blobs = net.blobs
    if singles is None or singles >= len(blobs):
        chosen = list(blobs)
    else:
        inplace_read = [b for typ, bottoms, _ in net.layers if typ in INPLACE_TYPES for b in bottoms]
        picks = [net.outputs[int(g.integers(len(net.outputs)))]]
        if inplace_read:
            picks.append(inplace_read[int(g.integers(len(inplace_read)))])
        while len(picks) < singles:
            picks.append(blobs[int(g.integers(len(blobs)))])
        chosen = list(dict.fromkeys(picks))
    runs: list[Run] = [(True, (b,)) for b in chosen]
    for i in range(sequences):
        n = int(g.integers(2, 7))
        # outputs and the blobs next to them come up more often: that is where orders matter
        pool = blobs + net.outputs * 3 + sorted(net.cache_tops) * 2
        seq = tuple(pool[int(j)] for j in g.integers(len(pool), size=n))
        runs.append((i % 2 == 0, seq))
    return runs


# layer types that run in place in light mode (ncnn's support_inplace), read from ncnn_c's
# registry so that the list follows the layers
def _inplace_types() -> set[str]:
    from ncnn_c.layer import create_layer, registry

    out = set()
    for t in (e.name for e in registry()):
        try:
            layer = create_layer(t)
        except Exception:  # noqa: BLE001 - a type that needs parameters to be made
            continue
        if layer is not None and layer.support_inplace:
            out.add(t)
    return out


INPLACE_TYPES = _inplace_types()


# -- the oracle ---------------------------------------------------------------------------------
def _oracle_child(param_text: str, bin_bytes: bytes, inputs: dict, runs: list[Run]) -> list:
    import ncnn

    net = ncnn.Net()
    for k, v in FP32_FLAGS.items():
        setattr(net.opt, k, v)
    with tempfile.TemporaryDirectory() as tmp:
        pp, bp = os.path.join(tmp, "m.param"), os.path.join(tmp, "m.bin")
        pathlib.Path(pp).write_text(param_text)
        pathlib.Path(bp).write_bytes(bin_bytes)
        if net.load_param(pp) != 0 or net.load_model(bp) != 0:
            raise RuntimeError("the oracle cannot load the model")
    results = []
    for light, names in runs:
        ex = net.create_extractor()
        ex.set_light_mode(light)
        # clones: the PyPI binding's Mat(ndarray) crashes an in-place layer after Input
        keep = {n: (ncnn.Mat() if a is None else ncnn.Mat(a).clone()) for n, a in inputs.items()}
        for n, m in keep.items():
            ex.input(n, m)
        out = []
        for name in names:
            ret, m = ex.extract(name)
            out.append((ret, np.array(m).copy() if ret == 0 and not m.empty() else None))
        results.append(out)
        del ex
    return results


CRASHED = "crashed"  # the ret of an extract in a run during which the PyPI ncnn crashed


def _in_child(net: Network, runs: list[Run]) -> list:
    ctx = multiprocessing.get_context("spawn")
    with concurrent.futures.ProcessPoolExecutor(max_workers=1, mp_context=ctx) as pool:
        return pool.submit(_oracle_child, net.param_text, net.weights, net.inputs, runs).result()


def oracle(net: Network, runs: list[Run]) -> list:
    """The PyPI ncnn's [(ret, array or None)] of every extract of every run. It crashes on
    some orders (an SDPA reading a kv cache given as an empty Mat after light mode released
    it, for one): then each run goes to a child of its own, and a run that crashes there
    reports CRASHED for each of its extracts."""
    try:
        return _in_child(net, runs)
    except concurrent.futures.process.BrokenProcessPool:
        pass
    out = []
    for run in runs:
        try:
            out.append(_in_child(net, [run])[0])
        except concurrent.futures.process.BrokenProcessPool:
            out.append([(CRASHED, None)] * len(run[1]))
    return out


# -- ncnn_c -------------------------------------------------------------------------------------
EXECUTORS = ("numpy", "native", "vulkan")


def make_net(net: Network, executor: str, threads: int):
    import ncnn_c

    n = ncnn_c.Net()
    for k, v in FP32_FLAGS.items():
        setattr(n.opt, k, v)
    n.opt.num_threads = threads
    n.opt.use_vulkan_compute = executor == "vulkan"
    n.native_plan = executor == "native"
    assert n.load_param_mem(net.param_text) == 0, net.name
    assert n.load_model_mem(net.weights) == 0, net.name
    if executor == "vulkan":
        on_cpu = [layer.name for layer in n.layers() if layer.vkdev is None and layer.type != "Input"]
        assert len(on_cpu) < len(n.layers()), f"{net.name}: no layer got the GPU"
    return n


def run_ours(n, net: Network, run: Run) -> list:
    import ncnn_c

    light, names = run
    out = []
    with n.create_extractor() as ex:
        ex.set_light_mode(light)
        keep = {k: (ncnn_c.Mat() if a is None else ncnn_c.Mat(a)) for k, a in net.inputs.items()}
        for k, m in keep.items():
            assert ex.input(k, m) == 0
        for name in names:
            ret, m = ex.extract(name)
            out.append((ret, np.array(m).copy() if ret == 0 and not m.empty() else None))
    # the caller's inputs are never written (ncnn_c wraps the arrays)
    for k, a in net.inputs.items():
        if a is not None:
            assert np.array_equal(np.asarray(keep[k]), a, equal_nan=True), f"input {k} was modified"
    return out


@dataclass
class Tally:
    """What one check compared: extracts equal to ncnn's, refusals where ncnn refused too,
    true values where ncnn refused."""

    equal: int = 0
    refused_as_ncnn: int = 0
    true_where_ncnn_refused: int = 0
    unchecked: int = 0
    failures: list[str] = field(default_factory=list)

    def judge(self, where: str, why: str | None) -> bool:
        """True when there is nothing wrong (``why`` None), else the failure noted."""
        if why:
            self.failures.append(f"{where}: {why}")
        return not why

    def __iadd__(self, other: Tally) -> Tally:
        self.equal += other.equal
        self.refused_as_ncnn += other.refused_as_ncnn
        self.true_where_ncnn_refused += other.true_where_ncnn_refused
        self.unchecked += other.unchecked
        self.failures += other.failures
        return self


def _same(net: Network, name: str, got: np.ndarray, ref: np.ndarray, tol: float) -> str | None:
    """None when ``got`` is ``ref`` within the bar, else why not."""
    typ = net.producer_type.get(name, "")
    if typ in DETECTION_TYPES:
        from test_networks import assert_same_detections

        try:
            assert_same_detections(got, ref, name, net.detection_thresholds())
        except AssertionError as e:
            return str(e)
        return None
    if got.shape != ref.shape:
        return f"shape {got.shape} against {ref.shape}"
    err = rel_l2(got, ref)
    return None if err <= tol else f"relative L2 {err:.3g} > {tol:g}"


def compare(
    net: Network,
    runs: list[Run],
    ours: list,
    theirs: list,
    truth: dict[str, np.ndarray],
    tol: float,
    own: list | None = None,
    what: str = "",
) -> Tally:
    """Tally one executor's results (``ours``) against ncnn's (``theirs``) run by run; ``own``:
    the numpy layers' results of the same runs, the reference for kv caches."""
    t = Tally()
    caches = net.cache_tops
    for r, (run, o_run, t_run) in enumerate(zip(runs, ours, theirs, strict=True)):
        light, names = run
        for i, (name, (ret, got), (tret, ref)) in enumerate(zip(names, o_run, t_run, strict=True)):
            where = f"{what} run {r} (light={light}, {list(names)}) extract #{i} {name!r}"
            if name in caches:
                # the layout is the backend's: our numpy layers' values, ncnn's shape
                base = own[r][i] if own is not None else (ret, got)
                if ret != 0 or got is None:
                    if tret == 0 and ref is not None:
                        t.failures.append(f"{where}: ret {ret} where ncnn returned 0")
                    else:
                        t.refused_as_ncnn += 1
                    continue
                why = None
                if ref is not None and got.shape != ref.shape:
                    why = f"shape {got.shape} against ncnn's {ref.shape}"
                elif base[0] == 0 and base[1] is not None:
                    why = _same(net, name, got, base[1], tol)
                elif truth.get(name) is not None and got.shape != truth[name].shape:
                    why = f"shape {got.shape} against ncnn's {truth[name].shape}"
                if t.judge(where, why):
                    t.equal += 1
                continue
            if tret == 0 and ref is None and ret == 0 and got is None:
                t.equal += 1  # both hand out an empty Mat (an input given empty)
                continue
            if tret == 0 and ref is not None:
                if ret != 0 or got is None:
                    t.failures.append(f"{where}: ret {ret} where ncnn returned 0")
                elif t.judge(where, _same(net, name, got, ref, tol)):
                    t.equal += 1
                continue
            if ret != 0:
                t.refused_as_ncnn += 1
                continue
            true = truth.get(name)
            if tret == CRASHED and true is None:
                t.unchecked += 1  # ncnn crashed, and crashes on that blob alone too
                continue
            if got is None or true is None:
                t.failures.append(f"{where}: ret 0 where ncnn refused ({tret}) and no true value to check")
                continue
            if t.judge(f"{where}: where ncnn refused ({tret})", _same(net, name, got, true, tol)):
                t.true_where_ncnn_refused += 1
    return t


# every check's tallies of this test session, by executor (the terminal summary prints them)
TOTALS: dict[str, Tally] = {}


def check(
    net: Network, executor: str, runs: list[Run], threads: int = 2, fresh: int | None = None, again=None
) -> dict:
    """Every run of ``runs`` on ``executor`` on one shared Net, then again the runs indexed by
    ``again`` (None: all of them; the later extracts of a shape run the plans and recordings
    the first ones made), and, for the first ``fresh`` runs (None: all), on a fresh Net each,
    against the PyPI ncnn doing the same: {"fresh": Tally, "shared": Tally}."""
    singles = sorted({n for _, names in runs for n in names})
    theirs_all = oracle(net, list(runs) + [(True, (b,)) for b in singles])
    theirs, truth_runs = theirs_all[: len(runs)], theirs_all[len(runs) :]
    truth = {b: res[0][1] for b, res in zip(singles, truth_runs, strict=True) if res[0][0] == 0}
    tol = max(net.tol, VK_TOL) if executor == "vulkan" else net.tol
    own = None
    if net.cache_tops:
        ref_net = make_net(net, "numpy", threads)
        own = [run_ours(ref_net, net, run) for run in runs]
    what = f"{net.name} {executor}"
    # fresh Nets: each run is the net's first extract
    k = len(runs) if fresh is None else fresh
    ours = [run_ours(make_net(net, executor, threads), net, run) for run in runs[:k]]
    tallies = {
        "fresh": compare(net, runs[:k], ours, theirs[:k], truth, tol, own and own[:k], f"{what} fresh")
    }
    shared = make_net(net, executor, threads)
    t = Tally()
    passes = [list(range(len(runs))), list(range(len(runs))) if again is None else list(again)]
    for rep, idx in enumerate(passes):
        sub = [runs[i] for i in idx]
        ours = [run_ours(shared, net, run) for run in sub]
        t += compare(
            net, sub, ours, [theirs[i] for i in idx], truth, tol, own and [own[i] for i in idx],
            f"{what} shared#{rep}",
        )  # fmt: skip
    tallies["shared"] = t
    total = TOTALS.setdefault(executor, Tally())
    for part in tallies.values():
        total += Tally(
            part.equal,
            part.refused_as_ncnn,
            part.true_where_ncnn_refused,
            part.unchecked,
            list(part.failures),
        )
    return tallies
