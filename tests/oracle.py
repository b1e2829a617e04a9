"""Test helper: run one layer through the PyPI ``ncnn`` oracle and through ncnn_c, and compare.

A one-layer network is described by a layer type, its param dict, its weight blobs and
its input arrays. From that description the helper writes an ncnn ``.param`` text and a
``.bin`` byte string, so the very same model runs in

* the oracle (PyPI ``ncnn``, CPU, fp32, one thread),
* ncnn_c's layer object driven directly (ParamDict / ModelBinFromMatArray / forward),
* ncnn_c's ``Net`` (CPU, or Vulkan with ``use_vulkan=True`` for GPU tests).

Weights are ``(array, kind)`` pairs; ``kind`` is how the layer reads the blob:
``0`` (a 4-byte storage flag then fp32 data, ``mb.load(n, 0)``), ``1`` (raw fp32,
``mb.load(n, 1)``) or ``"fp16"`` (the fp16 flag then half data, read through type 0).
Param values: ``int``, ``float`` or a list/tuple/ndarray (an array param, written with
ncnn's ``-23300 - id`` key; float elements as floats, int elements as ints).
Input arrays use ncnn's numpy shapes: ``(w,)``, ``(h, w)``, ``(c, h, w)``, ``(c, d, h, w)``.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import struct
import tempfile

import numpy as np

FP16_FLAG = 0x01306B47


# -- reproducible inputs ------------------------------------------------------------------------
def rng(*key) -> np.random.Generator:
    """A generator seeded from the case itself, so every case is reproducible on its own."""
    import zlib

    return np.random.default_rng(zlib.crc32(repr(key).encode()))


def randn(g: np.random.Generator, shape, scale: float = 1.0) -> np.ndarray:
    return (g.standard_normal(shape) * scale).astype(np.float32)


# numpy shapes of every rank a layer test should cover: odd sizes, size 1, and a big one
SHAPES_1D = [(1,), (7,), (64,)]
SHAPES_2D = [(1, 5), (7, 13), (16, 32)]
SHAPES_3D = [(1, 1, 1), (3, 7, 13), (16, 8, 8), (3, 227, 227)]
SHAPES_4D = [(2, 3, 5, 7), (4, 1, 6, 6)]
SHAPES_ALL = SHAPES_1D + SHAPES_2D + SHAPES_3D + SHAPES_4D


# -- comparison ----------------------------------------------------------------------------
def rel_l2(a, b) -> float:
    """||a - b|| / ||b|| (absolute error when b is all zeros); shapes must match exactly."""
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    if a.shape != b.shape:
        raise AssertionError(f"shape mismatch: got {a.shape}, expected {b.shape}")
    # non-finite values (nan for an empty average window, inf) must agree exactly
    if not np.array_equal(a[~np.isfinite(b)], b[~np.isfinite(b)], equal_nan=True) or not np.all(
        np.isfinite(a[np.isfinite(b)])
    ):
        return float("inf")
    fin = np.isfinite(b)
    num = np.linalg.norm(a[fin] - b[fin])
    den = np.linalg.norm(b[fin])
    return float(num / den) if den > 0 else float(num)


def assert_close(got, expected, tol: float = 1e-5, what: str = "") -> float:
    """Assert rel_l2(got, expected) <= tol; returns the error."""
    err = rel_l2(got, expected)
    assert err <= tol, f"{what}: relative L2 error {err:.3g} > {tol:g}"
    return err


# -- what ncnn's CPU dispatch paths may produce --------------------------------------------------
# The PyPI ncnn picks a body of each layer per CPU at run time. For fp32 -> bf16 its scalar code
# (and every path on a CPU without AVX-512 BF16) adds half an ulp and truncates, so ties round up
# in magnitude; its AVX-512 BF16 vector loops use VCVTNEPS2BF16, which rounds to nearest even and
# reads fp32 subnormals as zero. Which path converts an element depends on the CPU and on the
# element's position (the vector loops leave a scalar tail), so a test accepts, element by
# element, exactly those two results and no others.
def bf16_half_up(x) -> np.ndarray:
    """ncnn_c's fp32 -> bf16 bits (and ncnn's scalar path): wrapping add of 0x8000, top half."""
    u = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    return (((u + 0x8000) & 0xFFFFFFFF) >> 16).astype(np.uint16)


def bf16_nearest_even_daz(x) -> np.ndarray:
    """VCVTNEPS2BF16's bits: nearest even, fp32 subnormals read as signed zero, NaN quieted."""
    u = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    rounded = (u + 0x7FFF + ((u >> 16) & 1)) >> 16
    subnormal = (u & 0x7F800000) == 0
    nan = ((u & 0x7F800000) == 0x7F800000) & ((u & 0x007FFFFF) != 0)
    bits = np.where(subnormal, (u >> 16) & 0x8000, rounded)
    bits = np.where(nan, (u >> 16) | 0x40, bits)
    return bits.astype(np.uint16)


def assert_bf16_bits(got_bits, ref_bits, x, what: str = "") -> None:
    """ncnn_c gives its documented rounding (half up) everywhere; the oracle gives, per element,
    one of the two results of ncnn's dispatch paths. Anything else fails."""
    got_bits = np.asarray(got_bits, dtype=np.uint16).ravel()
    ref_bits = np.asarray(ref_bits, dtype=np.uint16).ravel()
    up, even = bf16_half_up(x).ravel(), bf16_nearest_even_daz(x).ravel()
    bad = np.flatnonzero(got_bits != up)
    assert bad.size == 0, f"{what}: ncnn_c bf16 {got_bits[bad[:4]]} != half-up {up[bad[:4]]} at {bad[:4]}"
    odd = np.flatnonzero((ref_bits != up) & (ref_bits != even))
    assert odd.size == 0, (
        f"{what}: oracle bf16 {ref_bits[odd[:4]]} at {odd[:4]} is neither half-up {up[odd[:4]]} "
        f"nor nearest-even {even[odd[:4]]}"
    )


# fp32 -> fp16 has two results in ncnn too: CPUs with F16C (and ncnn_c, through numpy) round to
# nearest even with fp16 subnormals kept; ncnn's software conversion, used where the CPU lacks
# F16C (e.g. Sandy Bridge), rounds ties away from zero and flushes what would be an fp16
# subnormal to a signed zero. Seen under `qemu-x86_64 -cpu SandyBridge`: 1.3779296875 for a tie
# that IEEE rounds to 1.376953125, 0 for 6.1e-5.
def fp16_ieee(x) -> np.ndarray:
    with np.errstate(over="ignore"):
        return np.ascontiguousarray(x, dtype=np.float32).astype(np.float16).view(np.uint16)


def fp16_ties_away_ftz(x) -> np.ndarray:
    """ncnn's software fp32 -> fp16 bits: ties away from zero, fp16 subnormals flushed to zero."""
    u = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32).astype(np.int64)
    sign = (u >> 16) & 0x8000
    exp = ((u >> 23) & 0xFF) - 127 + 15
    mant = u & 0x7FFFFF
    normal = np.minimum((exp << 10) + ((mant + 0x1000) >> 13), 0x7C00)
    bits = np.where(exp <= 0, 0, np.where(exp >= 31, 0x7C00, normal))
    special = ((u >> 23) & 0xFF) == 0xFF
    bits = np.where(special, np.where(mant != 0, 0x7E00, 0x7C00), bits)
    return (sign | bits).astype(np.uint16)


def assert_fp16_bits(got_bits, ref_bits, x, what: str = "") -> None:
    """ncnn_c gives IEEE fp16 everywhere; the oracle gives, per element, IEEE or ncnn's software
    form (fp16_ties_away_ftz). Anything else fails. NaNs compare as NaNs."""
    got_bits = np.asarray(got_bits, dtype=np.uint16).ravel()
    ref_bits = np.asarray(ref_bits, dtype=np.uint16).ravel()
    ieee, soft = fp16_ieee(x).ravel(), fp16_ties_away_ftz(x).ravel()
    nan = lambda b: ((b & 0x7C00) == 0x7C00) & ((b & 0x3FF) != 0)  # noqa: E731
    bad = np.flatnonzero((got_bits != ieee) & ~(nan(got_bits) & nan(ieee)))
    assert bad.size == 0, f"{what}: ncnn_c fp16 {got_bits[bad[:4]]} != IEEE {ieee[bad[:4]]} at {bad[:4]}"
    odd = np.flatnonzero((ref_bits != ieee) & (ref_bits != soft) & ~(nan(ref_bits) & nan(ieee)))
    assert odd.size == 0, (
        f"{what}: oracle fp16 {ref_bits[odd[:4]]} at {odd[:4]} is neither IEEE {ieee[odd[:4]]} "
        f"nor ncnn's software form {soft[odd[:4]]}"
    )


def fp16_view_bits(a) -> np.ndarray:
    """The 16 bits of a 2-byte blob that an extract widened to fp32 as if it were fp16."""
    return np.asarray(a, dtype=np.float32).astype(np.float16).view(np.uint16)


# -- model text and bytes ---------------------------------------------------------------------
def _fmt_scalar(v) -> str:
    if isinstance(v, (bool, np.bool_)):
        return str(int(v))
    if isinstance(v, (int, np.integer)):
        return str(int(v))
    # repr of a Python float always holds '.' or 'e', which is how ncnn tells floats from ints
    return repr(float(v))


def _fmt_param(key: int, value) -> str:
    if isinstance(value, (list, tuple, np.ndarray)):
        items = list(np.asarray(value).ravel().tolist()) if isinstance(value, np.ndarray) else list(value)
        body = ",".join([str(len(items))] + [_fmt_scalar(x) for x in items])
        return f"{-23300 - key}={body}"
    return f"{key}={_fmt_scalar(value)}"


def _input_params(shape) -> str:
    shape = tuple(shape)
    if len(shape) == 1:
        keys = {0: shape[0]}
    elif len(shape) == 2:
        keys = {0: shape[1], 1: shape[0]}
    elif len(shape) == 3:
        keys = {0: shape[2], 1: shape[1], 2: shape[0]}
    else:
        keys = {0: shape[3], 1: shape[2], 11: shape[1], 2: shape[0]}
    return " ".join(f"{k}={v}" for k, v in keys.items())


def make_param(layer_type: str, params: dict, input_shapes, n_outputs: int = 1) -> str:
    """ncnn .param text: one Input per input (blobs in0, in1 ...), then the layer (tops out0 ...)."""
    n_in = len(input_shapes)
    lines = ["7767517", f"{n_in + 1} {n_in + n_outputs}"]
    for i, shape in enumerate(input_shapes):
        lines.append(f"Input in{i} 0 1 in{i} {_input_params(shape)}")
    bottoms = " ".join(f"in{i}" for i in range(n_in))
    tops = " ".join(f"out{i}" for i in range(n_outputs))
    pstr = " ".join(_fmt_param(k, v) for k, v in sorted(params.items()))
    lines.append(f"{layer_type} op {n_in} {n_outputs} {bottoms} {tops} {pstr}".rstrip())
    return "\n".join(lines) + "\n"


def _weight_kind(w):
    if isinstance(w, tuple):
        return np.asarray(w[0]), w[1]
    return np.asarray(w), 0


def make_bin(weights) -> bytes:
    """ncnn .bin bytes for the weight blobs, each written in the form its ``kind`` says."""
    out = bytearray()
    for w in weights:
        arr, kind = _weight_kind(w)
        if kind == 0:
            out += struct.pack("<I", 0) + np.ascontiguousarray(arr, dtype="<f4").tobytes()
        elif kind == 1:
            out += np.ascontiguousarray(arr, dtype="<f4").tobytes()
        elif kind == "fp16":
            data = np.ascontiguousarray(arr, dtype="<f2").tobytes()
            out += struct.pack("<I", FP16_FLAG) + data
        else:
            raise ValueError(f"unknown weight kind {kind!r}")
        out += b"\0" * (-len(out) % 4)
    return bytes(out)


def _weight_values(w) -> np.ndarray:
    """The fp32 values the layer sees for one weight blob (fp16 blobs rounded as stored)."""
    arr, kind = _weight_kind(w)
    if kind == "fp16":
        arr = arr.astype(np.float16)
    return np.ascontiguousarray(arr, dtype=np.float32).ravel()


# -- runners --------------------------------------------------------------------------------
FP32_FLAGS = dict(
    use_vulkan_compute=False,
    use_fp16_packed=False,
    use_fp16_storage=False,
    use_fp16_arithmetic=False,
    use_packing_layout=False,
    use_bf16_storage=False,
    num_threads=1,
)


def _apply(opt, flags: dict) -> None:
    for k, v in flags.items():
        setattr(opt, k, v)


def _names(names, prefix: str, n: int) -> list[str]:
    return list(names) if names is not None else [f"{prefix}{i}" for i in range(n)]


def run_ncnn(
    param_text: str, bin_bytes: bytes, inputs, n_outputs: int = 1, input_names=None, output_names=None
):
    """The reference: PyPI ncnn on the CPU with fp32 options. Returns (ret, [arrays]).

    Any network works: blob names default to make_param's in0.. / out0.. .
    """
    input_names = _names(input_names, "in", len(inputs))
    output_names = _names(output_names, "out", n_outputs)
    import ncnn

    net = ncnn.Net()
    _apply(net.opt, FP32_FLAGS)
    with tempfile.TemporaryDirectory() as tmp:
        ppath = os.path.join(tmp, "m.param")
        bpath = os.path.join(tmp, "m.bin")
        with open(ppath, "w") as f:
            f.write(param_text)
        with open(bpath, "wb") as f:
            f.write(bin_bytes)
        if net.load_param(ppath) != 0:
            return -1, []
        if net.load_model(bpath) != 0:
            return -1, []
    outs = []
    with net.create_extractor() as ex:
        keep = [np.ascontiguousarray(x, dtype=np.float32) for x in inputs]
        for name, x in zip(input_names, keep, strict=True):
            # PyPI ncnn.Mat(ndarray) wraps the array without a refcount; an in-place layer right
            # after Input then crashes the oracle (segfault), a clone owns its memory
            ex.input(name, ncnn.Mat(x).clone())
        for name in output_names:
            ret, m = ex.extract(name)
            if ret == 0:
                outs.append(np.array(m, dtype=np.float32, copy=True))
            # an oracle Mat alive past its extractor trips ncnn's "pool allocator destroyed too early"
            del m
            if ret != 0:
                return ret, []
    net.clear()
    return 0, outs


def _run_ncnn_child(args):
    ret, outs = run_ncnn(*args)
    return ret, [np.ascontiguousarray(o) for o in outs]


def run_ncnn_isolated(
    param_text: str, bin_bytes: bytes, inputs, n_outputs: int = 1, input_names=None, output_names=None
):
    """run_ncnn in a child process, for cases where the oracle itself is memory-unsafe.

    ncnn's border copy writes out of bounds for negative pads (SAME padding with a kernel
    smaller than the stride); in-process that can corrupt the heap of the test run.
    """
    import concurrent.futures
    import multiprocessing

    args = (param_text, bin_bytes, [np.asarray(x) for x in inputs], n_outputs, input_names, output_names)
    ctx = multiprocessing.get_context("spawn")
    with concurrent.futures.ProcessPoolExecutor(max_workers=1, mp_context=ctx) as pool:
        return pool.submit(_run_ncnn_child, args).result()


# The oracle's results for the last few models: one case checked on several backends (the
# CPU paths, then each GPU option set; pytest runs a case's backends back to back) runs the
# oracle once. Results are copied out, so a test cannot change what the next one compares to.
_ORACLE_MEMO: dict[bytes, tuple[int, list[np.ndarray]]] = {}
_ORACLE_MEMO_SIZE = 4


def oracle_outputs(param_text: str, bin_bytes: bytes, inputs, n_outputs: int = 1, isolate: bool = False):
    """run_ncnn (or run_ncnn_isolated) memoised on the model and inputs. Returns (ret, [arrays])."""
    h = hashlib.sha256()
    for part in (param_text.encode(), bin_bytes, str(n_outputs).encode()):
        h.update(len(part).to_bytes(8, "little") + part)
    for x in inputs:
        x = np.ascontiguousarray(x, dtype=np.float32)
        h.update(repr(x.shape).encode() + x.tobytes())
    key = h.digest()
    if key not in _ORACLE_MEMO:
        ret, outs = (run_ncnn_isolated if isolate else run_ncnn)(param_text, bin_bytes, inputs, n_outputs)
        if len(_ORACLE_MEMO) >= _ORACLE_MEMO_SIZE:
            _ORACLE_MEMO.pop(next(iter(_ORACLE_MEMO)))
        _ORACLE_MEMO[key] = (ret, outs)
    ret, outs = _ORACLE_MEMO[key]
    return ret, [o.copy() for o in outs]


def default_option(**overrides):
    from ncnn_c.option import Option

    opt = Option()
    _apply(opt, FP32_FLAGS)
    _apply(opt, overrides)
    return opt


def run_layer(layer_type: str, params: dict, weights, inputs, n_outputs: int = 1, opt=None, inplace=False):
    """ncnn_c's CPU layer object, driven directly. Returns (ret, [arrays])."""
    from ncnn_c.layer import create_layer_cpu
    from ncnn_c.mat import Mat
    from ncnn_c.modelbin import ModelBinFromMatArray
    from ncnn_c.paramdict import ParamDict

    opt = opt or default_option()
    layer = create_layer_cpu(layer_type)
    assert layer is not None, f"{layer_type} is not implemented"
    pd = ParamDict()
    for k, v in params.items():
        if isinstance(v, (list, tuple, np.ndarray)):
            # ParamDict.set types an int array 5 (int32 bits) and a float array 6, as the parser does
            pd.set(k, np.asarray(v).ravel())
        elif isinstance(v, (int, np.integer)):
            pd.set(k, int(v))
        else:
            pd.set(k, float(v))
    ret = layer.load_param(pd)
    if ret != 0:
        return ret, []
    mb = ModelBinFromMatArray([Mat(_weight_values(w)) for w in weights])
    ret = layer.load_model(mb)
    if ret != 0:
        return ret, []
    ret = layer.create_pipeline(opt)
    if ret != 0:
        return ret, []
    # copies: Mat(array) wraps the array's memory (as ncnn does), and an in-place forward
    # would change the caller's inputs, which the other paths then read
    bottoms = [Mat(np.array(x, dtype=np.float32, copy=True)) for x in inputs]
    if layer.one_blob_only:
        if inplace:
            ret = layer.forward_inplace(bottoms[0], opt)
            tops = [bottoms[0]]
        else:
            tops = [Mat()]
            ret = layer.forward(bottoms[0], tops[0], opt)
    else:
        if inplace:
            ret = layer.forward_inplace(bottoms, opt)
            tops = bottoms
        else:
            tops = [Mat() for _ in range(n_outputs)]
            ret = layer.forward(bottoms, tops, opt)
    layer.destroy_pipeline(opt)
    if ret != 0:
        return ret, []
    return 0, [np.array(t.numpy(), dtype=np.float32, copy=True) for t in tops]


def net_available() -> bool:
    return importlib.util.find_spec("ncnn_c.net") is not None


def run_net(
    param_text: str,
    bin_bytes: bytes,
    inputs,
    n_outputs: int = 1,
    use_vulkan=False,
    input_names=None,
    output_names=None,
    require_gpu: bool = False,
    native: bool = False,
    **opt_overrides,
):
    """ncnn_c's Net over the same .param/.bin (FP32_FLAGS, then ``opt_overrides``). Returns
    (ret, [arrays]). ``require_gpu`` asserts that every layer got the Vulkan device (no silent
    CPU fallback). ``native``: the results of a second extractor, which runs the native plan
    the first one recorded, in strict mode (a plan that differs from the numpy layers is an
    error; the first extract's numpy results are the "net" path's)."""
    import ncnn_c

    input_names = _names(input_names, "in", len(inputs))
    output_names = _names(output_names, "out", n_outputs)
    net = ncnn_c.Net()
    _apply(net.opt, FP32_FLAGS)
    net.opt.use_vulkan_compute = bool(use_vulkan or require_gpu)
    _apply(net.opt, opt_overrides)
    if native:
        net.native_plan = True
    if net.load_param_mem(param_text) != 0 or net.load_model_mem(bin_bytes) != 0:
        return -1, []
    if require_gpu:
        on_cpu = [layer.name for layer in net.layers() if layer.vkdev is None]
        assert not on_cpu, f"layers {on_cpu} did not get the GPU"
    strict = os.environ.get("NCNN_C_NATIVE_STRICT")
    if native:
        os.environ["NCNN_C_NATIVE_STRICT"] = "1"
    try:
        for _ in range(2 if native else 1):
            outs = []
            with net.create_extractor() as ex:
                for name, x in zip(input_names, inputs, strict=True):
                    ret = ex.input(name, ncnn_c.Mat(np.ascontiguousarray(x, dtype=np.float32)))
                    if ret != 0:
                        return ret, []
                for name in output_names:
                    ret, m = ex.extract(name)
                    if ret != 0:
                        return ret, []
                    outs.append(np.array(m.numpy(), dtype=np.float32, copy=True))
    finally:
        if native:
            if strict is None:
                os.environ.pop("NCNN_C_NATIVE_STRICT", None)
            else:
                os.environ["NCNN_C_NATIVE_STRICT"] = strict
    net.clear()
    return 0, outs


def has_native_form(layer_type: str) -> bool:
    """Whether the native CPU plan has a builder for the type (in some shapes and settings)."""
    from ncnn_c.net.native.ops import NATIVE_TYPES

    return layer_type in NATIVE_TYPES


def _check_runs(layer_type: str, params: dict, weights, inputs, n_outputs: int, isolate: bool, runs) -> dict:
    """The one comparison loop of check_layer and check_layer_gpu: the oracle once (memoised),
    then each run. ``runs`` maps a name to ``(run, compare)``: ``run(param_text, bin_bytes,
    weights, inputs) -> (ret, [arrays])`` and ``compare(got, ref, what) -> error`` (which
    asserts). Returns {name: max error over the outputs}."""
    weights = list(weights)
    inputs = [np.asarray(x, dtype=np.float32) for x in inputs]
    param_text = make_param(layer_type, params, [x.shape for x in inputs], n_outputs)
    bin_bytes = make_bin(weights)
    ret, ref = oracle_outputs(param_text, bin_bytes, inputs, n_outputs, isolate)
    assert ret == 0, f"oracle failed ({ret}) on\n{param_text}"
    errs = {}
    for name, (run, compare) in runs.items():
        ret, got = run(param_text, bin_bytes, weights, inputs)
        assert ret == 0, f"ncnn_c {name} failed ({ret}) on\n{param_text}"
        assert len(got) == len(ref), f"ncnn_c {name}: {len(got)} outputs, the oracle {len(ref)}"
        errs[name] = max(
            (
                compare(g, r, f"{layer_type} {name} out{i} {params}")
                for i, (g, r) in enumerate(zip(got, ref, strict=True))
            ),
            default=0.0,
        )
    return errs


def check_layer(
    layer_type: str,
    params: dict,
    weights=(),
    inputs=(),
    n_outputs: int = 1,
    tol: float = 1e-5,
    paths=("layer", "net"),
    use_vulkan: bool = False,
    isolate: bool = False,
    compare=None,
    native: bool = True,
    **opt_overrides,
) -> dict:
    """Compare ncnn_c against the oracle over the chosen paths; returns {path: max rel L2 error}.

    ``compare(got, ref, what) -> error`` replaces the rel L2 check where one number cannot say
    what is right (e.g. bf16 bits, which differ between the oracle's CPU dispatch paths).

    ``paths``: "layer" (direct layer object, CPU), "inplace" (forward_inplace, CPU),
    "net" (ncnn_c.Net, its first extract: the numpy layers), "native" (the Net's native plan,
    its second extract; added wherever "net" runs on the CPU and the type has a native form,
    unless ``native`` is False: a test that switches the executors itself). ``use_vulkan`` and
    ``opt_overrides`` apply to the Net path (GPU tests). ``isolate`` runs the oracle in a
    child process (see run_ncnn_isolated).
    """
    check = compare or (lambda g, r, what: assert_close(g, r, tol, what))

    if native and "net" in paths and not use_vulkan and has_native_form(layer_type) and "native" not in paths:
        # every case that runs a CPU Net runs its native plan too: the net's second extract
        paths = (*paths, "native")

    def runner(path):
        if path == "native":
            return lambda text, data, w, x: run_net(text, data, x, n_outputs, native=True, **opt_overrides)
        if path == "net":
            return lambda text, data, w, x: run_net(text, data, x, n_outputs, use_vulkan, **opt_overrides)
        return lambda text, data, w, x: run_layer(
            layer_type, params, w, x, n_outputs, inplace=path == "inplace"
        )

    runs = {f"{path} path": (runner(path), check) for path in paths}
    errs = _check_runs(layer_type, params, weights, inputs, n_outputs, isolate, runs)
    return {name.removesuffix(" path"): err for name, err in errs.items()}


# -- the GPU option grid ---------------------------------------------------------------------
# Every option set a GPU layer must be right under: fp32, fp16 storage, fp16 storage plus
# fp16 arithmetic, each with packing off and on, and fp16 packed (no storage) + arithmetic. Flags a device lacks are switched off by
# the Net (as ncnn does), so on such a device a set degrades to one it can run.
_FP32_GPU = dict(use_fp16_packed=False, use_fp16_storage=False, use_fp16_arithmetic=False)
_FP16S_GPU = dict(use_fp16_packed=True, use_fp16_storage=True, use_fp16_arithmetic=False)
_FP16SA_GPU = dict(use_fp16_packed=True, use_fp16_storage=True, use_fp16_arithmetic=True)
GPU_GRID = {
    "fp32": dict(_FP32_GPU, use_packing_layout=False),
    "fp32-pack": dict(_FP32_GPU, use_packing_layout=True),
    "fp16s": dict(_FP16S_GPU, use_packing_layout=False),
    "fp16s-pack": dict(_FP16S_GPU, use_packing_layout=True),
    "fp16sa": dict(_FP16SA_GPU, use_packing_layout=False),
    "fp16sa-pack": dict(_FP16SA_GPU, use_packing_layout=True),
    # fp16 packed without fp16 storage (what a device lacking 16-bit storage runs): blobs stay
    # fp32, shaders compile with the packed-half macros and fp16 arithmetic
    "fp16pa-pack": dict(_FP16SA_GPU, use_fp16_storage=False, use_packing_layout=True),
}


# x * a + b: ncnn rounds once where the CPU has FMA and twice (the product, then the sum) where
# it has not (seen under `qemu-x86_64 -cpu SandyBridge`); ncnn_c rounds once everywhere.
def mul_add_forms(x, a, b) -> tuple[np.ndarray, np.ndarray]:
    """(rounded once, rounded twice) float32 results of x*a+b; a float64 product of two float32
    values is exact, so rounding its sum once gives the fused result."""
    x32, a32, b32 = (np.asarray(v, dtype=np.float32) for v in (x, a, b))
    once = (x32.astype(np.float64) * a32.astype(np.float64) + b32.astype(np.float64)).astype(np.float32)
    twice = (x32 * a32 + b32).astype(np.float32)
    return once, twice


def assert_mul_add(got, ref, x, a, b, what: str = "") -> float:
    """ncnn_c's x*a+b must be the single rounding; the oracle's, per element, either."""
    once, twice = mul_add_forms(x, a, b)
    got, ref = np.asarray(got, dtype=np.float32), np.asarray(ref, dtype=np.float32)
    np.testing.assert_array_equal(got, once, err_msg=f"{what}: ncnn_c's x*a+b is not rounded once")
    odd = (ref != once) & (ref != twice)
    assert not odd.any(), f"{what}: oracle {ref[odd][:4]} is neither {once[odd][:4]} nor {twice[odd][:4]}"
    return 0.0


# Two sets at the two ends of the grid (exact fp32 unpacked; packed fp16 storage and arithmetic):
# what a module's long sweeps (every axis of every rank ...) run on the GPU, where the whole grid
# over every case would cost minutes on lavapipe; the full grid runs on the module's main cases.
SPOT_GRID = ("fp32", "fp16sa-pack")
# the per-layer bars against the CPU fp32 oracle
GPU_TOL_FP32 = 1e-4
GPU_TOL_FP16 = 1e-2


def _fp16_range(r: np.ndarray) -> np.ndarray:
    """The oracle's values as fp16 can hold them: beyond +-65504 they are infinities (e.g. the
    -FLT_MAX of a max-pooling window that lies wholly in the padding)."""
    with np.errstate(invalid="ignore"):
        return np.where(np.abs(r) > 65504.0, np.sign(r) * np.inf, r).astype(np.float32)


# Oracle values this close to fp16's largest finite value may legitimately come out either
# finite or infinite in an fp16 run: fp16 arithmetic rounds a layer's input by up to 2^-11
# relative, which exp() turns into 0.5% at x = 11 (measured on the H200: Exp of 11.09 gave
# inf where the oracle has 65503). Such positions are left out of fp16 comparisons.
_FP16_EDGE = (65504.0 / 1.02, 65504.0 * 1.02)


def _fp16_compare(got: np.ndarray, ref: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(got, expected) for an fp16 run: the oracle mapped by _fp16_range, positions at the
    edge of fp16's range zeroed on both sides. Beyond the range a result may be the infinity
    or the largest finite half of the same sign: Vulkan lets a device convert to fp16 rounding
    toward zero (shaderRoundingModeRTZFloat16), which turns 3.4e38 into 65504."""
    r = np.asarray(ref, dtype=np.float32)
    g = np.array(got, dtype=np.float32, copy=True)
    with np.errstate(invalid="ignore"):
        edge = (np.abs(r) > _FP16_EDGE[0]) & (np.abs(r) < _FP16_EDGE[1])
        beyond = np.abs(r) >= _FP16_EDGE[1]
        edge |= beyond & (g.shape == r.shape) & (np.sign(g) == np.sign(r)) & (np.abs(g) >= 65504.0)
    expected = _fp16_range(r)
    if edge.any():
        g[edge] = 0.0
        expected[edge] = 0.0
    return g, expected


def run_net_gpu(param_text: str, bin_bytes: bytes, inputs, n_outputs: int = 1, **opt_overrides):
    """run_net on the GPU, asserting that every layer really got the device. Returns (ret, [arrays])."""
    return run_net(
        param_text, bin_bytes, inputs, n_outputs, use_vulkan=True, require_gpu=True, **opt_overrides
    )


def check_layer_gpu(
    layer_type: str,
    params: dict,
    weights=(),
    inputs=(),
    n_outputs: int = 1,
    grid=None,
    tol_fp32: float = GPU_TOL_FP32,
    tol_fp16: float = GPU_TOL_FP16,
    isolate: bool = False,
    compare=None,
    **opt_overrides,
) -> dict:
    """Run the layer in a Vulkan Net under every option set of ``grid`` (default GPU_GRID,
    a dict name -> option flags, or a list of its names) and compare each with the PyPI ncnn
    CPU fp32 oracle: rel L2 <= tol_fp32 for fp32 sets, <= tol_fp16 for fp16 ones (the oracle's
    values as fp16 holds them, see _fp16_compare). Returns {set name: max rel L2 error}.
    ``opt_overrides`` apply to every set (e.g. lightmode); ``compare(got, ref, what)`` replaces
    the fp32 sets' check (as in check_layer)."""
    if grid is None:
        grid = GPU_GRID
    elif not isinstance(grid, dict):
        grid = {name: GPU_GRID[name] for name in grid}

    def runner(flags):
        return lambda text, data, w, x: run_net_gpu(text, data, x, n_outputs, **dict(flags, **opt_overrides))

    def comparer(flags):
        if flags.get("use_fp16_storage") or flags.get("use_fp16_arithmetic"):
            return lambda g, r, what: assert_close(*_fp16_compare(g, r), tol_fp16, what)
        return compare or (lambda g, r, what: assert_close(g, r, tol_fp32, what))

    runs = {f"GPU {name}": (runner(flags), comparer(flags)) for name, flags in grid.items()}
    errs = _check_runs(layer_type, params, weights, inputs, n_outputs, isolate, runs)
    return {name.removeprefix("GPU "): err for name, err in errs.items()}


# -- one case list, every backend ----------------------------------------------------------------
# A layer's test module keeps one list of cases and runs each on every backend:
#
#     @pytest.mark.parametrize("case", CASES, ids=str)
#     @pytest.mark.parametrize("backend", backends("Softplus"))
#     def test_softplus(case, backend):
#         check(backend, "Softplus", {}, [], [x_for(case)], paths=("layer", "inplace", "net"))
#
# backends() is "cpu" (the layer object and the Net on the CPU, the paths given to check) plus,
# marked ``gpu``, one "vk-<set>" per GPU option set when the type has a Vulkan form, or one
# "vk-cpu" when it has none (the layer runs on the CPU inside a Vulkan net; the net must
# download, run it and upload again). conftest.py runs a case's backends back to back, so they
# share one oracle run (oracle_outputs) whatever the order of the parametrize decorators.

CPU_BACKEND = "cpu"
VK_CPU_BACKEND = "vk-cpu"


def has_vulkan_form(layer_type: str) -> bool:
    """Whether ncnn_c has a GPU class for the type (the registry finds it by file name)."""
    return importlib.util.find_spec(f"ncnn_c.layer.vulkan.{layer_type.lower()}_vulkan") is not None


def backends(layer_type: str, grid=None, cpu: bool = True, gpu: bool = True, slow_gpu: bool = False) -> list:
    """pytest params for ``backend``: "cpu", then the GPU ones (``grid``: names of GPU_GRID,
    default all of them) marked ``gpu``, and ``slow`` too with ``slow_gpu`` (a long sweep whose
    CPU runs are quick but whose GPU runs belong to the slow job).

    The main run checks each case on the first GPU set only (fp32 with the default grid, the
    first name of a ``grid`` given); the other sets are marked ``slow`` as well, and the slow
    run (CI runs both) checks them. Over ~25k cases every set in the main run took it past 20
    minutes on two cores (lavapipe compiles each shader once per option set)."""
    import pytest

    out = [pytest.param(CPU_BACKEND, id=CPU_BACKEND)] if cpu else []
    marks = [pytest.mark.gpu, pytest.mark.slow] if slow_gpu else [pytest.mark.gpu]
    if gpu:
        if has_vulkan_form(layer_type):
            names = list(GPU_GRID) if grid is None else list(grid)
            later = [pytest.mark.gpu, pytest.mark.slow]
            out += [
                pytest.param(f"vk-{n}", id=f"vk-{n}", marks=marks if i == 0 else later)
                for i, n in enumerate(names)
            ]
        else:
            out.append(pytest.param(VK_CPU_BACKEND, id=VK_CPU_BACKEND, marks=marks))
    return out


def case_backends(layer_type: str, cases, grid_of=None, gpu_main=None) -> list:
    """pytest params of ``(*case, backend)``: each case (a tuple, or a pytest.param of one) on
    backends(layer_type, grid_of(case)); a case with ``gpu_main(case)`` false runs its GPU sets
    in the slow run only (``slow_gpu``). For a case list where backends() differ per case, e.g.
    the main run keeping a few GPU cases of a long sweep whose CPU runs all stay there."""
    import pytest

    out = []
    for case in cases:
        marks = []
        if isinstance(case, type(pytest.param(0))):
            case, marks = case.values, list(case.marks)
        grid = grid_of(case) if grid_of else None
        slow = gpu_main is not None and not gpu_main(case)
        for p in backends(layer_type, grid=grid, slow_gpu=slow):
            out.append(pytest.param(*case, p.values[0], marks=marks + list(p.marks), id=f"{p.id}-{case}"))
    return out


def check(
    backend: str,
    layer_type: str,
    params: dict,
    weights=(),
    inputs=(),
    n_outputs: int = 1,
    tol: float = 1e-5,
    paths=("layer", "net"),
    tol_fp32: float = GPU_TOL_FP32,
    tol_fp16: float = GPU_TOL_FP16,
    isolate: bool = False,
    compare=None,
    native: bool = True,
    **opt_overrides,
) -> dict:
    """One case on one backend against the oracle (the PyPI ncnn, CPU fp32).

    "cpu": check_layer over ``paths`` within ``tol`` (``compare`` replaces the rel L2 check);
    "vk-<set>": check_layer_gpu on that GPU_GRID set (fp32 within ``tol_fp32`` or by ``compare``,
    fp16 within ``tol_fp16``); "vk-cpu": the layer inside a Vulkan net (check_in_vulkan_net, fp32 within
    ``max(tol, 1e-5)``, default options within GPU_TOL_FP16). ``opt_overrides`` apply to the
    Net paths. Returns {path or set: max rel L2 error}."""
    if backend == CPU_BACKEND:
        return check_layer(
            layer_type, params, weights, inputs, n_outputs, tol=tol, paths=paths, isolate=isolate,
            compare=compare, native=native, **opt_overrides,
        )  # fmt: skip
    if backend == VK_CPU_BACKEND:
        from _vulkan_sandwich import check_in_vulkan_net

        return {backend: check_in_vulkan_net(layer_type, params, weights, inputs, n_outputs, max(tol, 1e-5))}
    if backend.startswith("vk-") and backend[3:] in GPU_GRID:
        return check_layer_gpu(
            layer_type, params, weights, inputs, n_outputs, grid=[backend[3:]], tol_fp32=tol_fp32,
            tol_fp16=tol_fp16, isolate=isolate, compare=compare, **opt_overrides,
        )  # fmt: skip
    raise ValueError(f"unknown backend {backend!r}: 'cpu', 'vk-cpu' or 'vk-' + one of {list(GPU_GRID)}")
