"""Malformed params and weights for every registered layer type (issue 16): a bad model is
refused at load_param / load_model with a log line naming the layer and what is wrong, never
a crash and never a silent success.

Each type has a minimal valid one-layer model (SPECS; the types left out load with their
defaults). Its weights come from the layer itself: a recording ModelBin hands out what
``load_model`` asks for and writes the blobs as ncnn stores them, so the .bin fits by
construction; the PyPI ncnn loads every one of those models too (we may be stricter than
ncnn, never on a model it accepts). Then:

* (a) the .bin cut at several points (nothing, 1 byte, half, one byte short of the end,
  each blob boundary): load_model returns -1 and logs ONE line naming the layer and the
  weight that is missing;
* (b) a weight count param larger than the .bin holds (the load runs out: as (a)), and one
  that does not fit the layer's other params (load_param fails naming the param id);
* (c) int8 layers whose .bin stops before their scales: one line naming the scales;
* (d) out-of-range enum params (unknown activation / op / mode types, negative kernels):
  load_param or load_model fails with a line naming the layer and the param id.
"""

from __future__ import annotations

import logging
import re
import struct
import tempfile
from pathlib import Path

import numpy as np
import pytest
from oracle import make_param

import ncnn_c
from ncnn_c.layer import LAYER_TYPES, create_layer_cpu
from ncnn_c.mat import Mat
from ncnn_c.modelbin import INT8_TAG, ModelBin
from ncnn_c.paramdict import ParamDict

# conv-like geometry shared by the weighted window layers: 4 outputs, 3x3 (x3) kernels
_K2, _K3 = 9, 27
# per type: (params, number of input blobs); 1 input and no params when left out
SPECS: dict[str, tuple[dict, int]] = {
    "BatchNorm": ({0: 4}, 1),
    "Bias": ({0: 4}, 1),
    "Convolution": ({0: 4, 1: 3, 5: 1, 6: 4 * 2 * _K2}, 1),
    "Deconvolution": ({0: 4, 1: 3, 5: 1, 6: 4 * 2 * _K2}, 1),
    "Embed": ({0: 4, 1: 10, 2: 1, 3: 40}, 1),
    "InnerProduct": ({0: 4, 1: 1, 2: 12}, 1),
    "Input": ({0: 5, 1: 4, 2: 3}, 0),
    "MemoryData": ({0: 4, 1: 3, 2: 2}, 0),
    "PReLU": ({0: 4}, 1),
    "Scale": ({0: 4, 1: 1}, 1),
    "RNN": ({0: 4, 1: 4 * 3}, 1),
    "LSTM": ({0: 4, 1: 4 * 4 * 3}, 1),
    "GRU": ({0: 4, 1: 3 * 4 * 3}, 1),
    "BinaryOp": ({0: 2}, 2),
    "ConvolutionDepthWise": ({0: 4, 1: 3, 5: 1, 6: 4 * _K2, 7: 4}, 1),
    "Padding": ({0: 1, 6: 4}, 1),
    "Normalize": ({3: 4}, 1),
    "DeconvolutionDepthWise": ({0: 4, 1: 3, 5: 1, 6: 4 * _K2, 7: 4}, 1),
    "InstanceNorm": ({0: 4, 2: 1}, 1),
    "Quantize": ({0: 1}, 1),
    "Dequantize": ({0: 1, 1: 1}, 1),
    "Requantize": ({0: 1, 1: 1, 2: 1}, 1),
    "Gemm": ({4: 1, 5: 1, 6: 1, 7: 2, 8: 3, 9: 4, 10: 3}, 0),
    "GroupNorm": ({0: 2, 1: 4, 3: 1}, 1),
    "LayerNorm": ({0: 4, 2: 1}, 1),
    "MultiHeadAttention": ({0: 8, 1: 2, 2: 64, 3: 8, 4: 8}, 3),
    "Convolution1D": ({0: 4, 1: 3, 5: 1, 6: 4 * 2 * 3}, 1),
    "ConvolutionDepthWise1D": ({0: 4, 1: 3, 5: 1, 6: 4 * 3, 7: 4}, 1),
    "Convolution3D": ({0: 4, 1: 3, 5: 1, 6: 4 * 2 * _K3}, 1),
    "ConvolutionDepthWise3D": ({0: 4, 1: 3, 5: 1, 6: 4 * _K3, 7: 4}, 1),
    "Deconvolution1D": ({0: 4, 1: 3, 5: 1, 6: 4 * 2 * 3}, 1),
    "DeconvolutionDepthWise1D": ({0: 4, 1: 3, 5: 1, 6: 4 * 3, 7: 4}, 1),
    "Deconvolution3D": ({0: 4, 1: 3, 5: 1, 6: 4 * 2 * _K3}, 1),
    "DeconvolutionDepthWise3D": ({0: 4, 1: 3, 5: 1, 6: 4 * _K3, 7: 4}, 1),
    "DeformableConv2D": ({0: 4, 1: 3, 5: 1, 6: 4 * 2 * _K2}, 3),
    "RMSNorm": ({0: 4, 2: 1}, 1),
    "Concat": ({}, 2),
    "Eltwise": ({}, 2),
    "MatMul": ({}, 2),
    "CopyTo": ({}, 2),
    "SDPA": ({}, 3),
    "RotaryEmbed": ({}, 3),
    "GridSample": ({}, 2),
    "ROIAlign": ({0: 2, 1: 2}, 2),
    "PSROIPooling": ({0: 2, 1: 2, 3: 2}, 2),
    "Proposal": ({}, 3),
    "DetectionOutput": ({0: 3}, 3),
    "PriorBox": ({0: [8.0]}, 2),
    "Einsum": ({0: [105, 106, 45, 62, 105]}, 1),  # "ij->i"
    "Pooling": ({1: 2}, 1),
    "Pooling1D": ({1: 2}, 1),
    "Pooling3D": ({1: 2}, 1),
    "Reshape": ({0: -1}, 1),
    "ROIPooling": ({0: 2, 1: 2}, 2),
    "YoloDetectionOutput": ({4: [1.0] * 10}, 1),
    "Yolov3DetectionOutput": ({0: 2, 1: 3, 4: [1.0] * 6, 5: [0.0, 1.0, 2.0], 6: [32.0]}, 1),
    "Fold": ({0: 2, 1: 2, 20: 4, 21: 4}, 1),
    "Unfold": ({0: 2, 1: 2}, 1),
    "Spectrogram": ({0: 8}, 1),
    "InverseSpectrogram": ({0: 8}, 1),
}
# int8 forms: the params added to the type's SPECS entry
INT8 = {
    "Convolution": {8: 1},
    "Convolution/requant": {8: 101},
    "ConvolutionDepthWise": {8: 1},
    "ConvolutionDepthWise/requant": {8: 101},
    "InnerProduct": {8: 1},
    "Embed": {18: 2},
    "Gemm": {18: 2},
}
# out-of-range enum / geometry params: type -> [(param id, value)]
_ACT = [(9, 99), (1, -3)]
BAD_ENUMS: dict[str, list[tuple[int, object]]] = {
    "Convolution": _ACT,
    "ConvolutionDepthWise": _ACT,
    "Convolution1D": _ACT,
    "ConvolutionDepthWise1D": _ACT,
    "Convolution3D": _ACT,
    "ConvolutionDepthWise3D": _ACT,
    "Deconvolution": _ACT,
    "DeconvolutionDepthWise": _ACT,
    "Deconvolution1D": _ACT,
    "DeconvolutionDepthWise1D": _ACT,
    "Deconvolution3D": _ACT,
    "DeconvolutionDepthWise3D": _ACT,
    "DeformableConv2D": _ACT,
    "InnerProduct": [(9, 99)],
    "Requantize": [(3, 99)],
    "Pooling": [(0, 9), (1, -3), (5, 9)],
    "Pooling1D": [(0, 9), (1, -3), (5, 9)],
    "Pooling3D": [(0, 9), (1, -3), (5, 9)],
    "BinaryOp": [(0, 99), (0, -1)],
    "UnaryOp": [(0, 99), (0, -1)],
    "Eltwise": [(0, 9)],
    "Reduction": [(0, 99)],
    "Interp": [(0, 9)],
    "Padding": [(4, 9)],
    "Cast": [(0, 9), (1, 9)],
    "GridSample": [(0, 9), (1, 9)],
    "Permute": [(0, 99)],
    "LRN": [(0, 9)],
    "SPP": [(0, 9)],
    "Spectrogram": [(4, 9), (0, -8)],
    "InverseSpectrogram": [(4, 9), (0, -8)],
    "PixelShuffle": [(0, -2)],
    "Reorg": [(0, -2)],
    "ShuffleChannel": [(0, -2)],
    "Normalize": [(9, 9)],
    "RNN": [(2, 9), (8, 1)],
    "LSTM": [(2, 9), (8, 1)],
    "GRU": [(2, 9), (8, 1)],
    "MultiHeadAttention": [(1, 3), (18, 1)],
    "SDPA": [(18, 1)],
    "Gemm": [(10, 9)],
    "Unfold": [(1, -3)],
    "Fold": [(1, -3)],
    "Softmax": [],
}


def _spec(type_name: str, variant: str = "") -> tuple[dict, int]:
    params, n_in = SPECS.get(type_name, ({}, 1))
    params = dict(params)
    if variant:
        params.update(INT8[variant])
    return params, n_in


class _Recorder(ModelBin):
    """Hands a layer what it asks for and records each blob as ncnn stores it (type 0 with
    the fp32 flag, type 1 raw; int8 where ``int8`` names the blob's index)."""

    def __init__(self, int8: frozenset[int] = frozenset()) -> None:
        self.blobs: list[bytes] = []
        self.int8 = int8
        self.gen = np.random.default_rng(0)

    def load_1d(self, w: int, type_: int) -> Mat:
        if w <= 0:
            return Mat()
        if len(self.blobs) in self.int8:
            values = self.gen.integers(-127, 128, w).astype(np.int8)
            data = struct.pack("<I", INT8_TAG) + values.tobytes()
        else:
            # positive and near 1: variances, scales and slopes take any of them
            values = self.gen.uniform(0.5, 1.5, w).astype(np.float32)
            data = values.astype("<f4").tobytes()
            if type_ == 0:
                data = struct.pack("<I", 0) + data
        self.blobs.append(data + b"\0" * (-len(data) % 4))
        return Mat(values)


def _int8_blobs(type_name: str, params: dict) -> frozenset[int]:
    """Blobs that ncnn's int8 forms store as int8: an int8 Embed's table, an int8 Gemm's
    constants."""
    if type_name == "Embed" and params.get(18):
        return frozenset({0})
    if type_name == "Gemm" and params.get(18):
        return frozenset({0, 1})
    return frozenset()


def _pd(params: dict) -> ParamDict:
    pd = ParamDict()
    for k, v in params.items():
        pd.set(
            k,
            np.asarray(v, np.float32 if isinstance(v[0], float) else np.int32) if isinstance(v, list) else v,
        )
    return pd


def model(type_name: str, variant: str = "") -> tuple[str, list[bytes]]:
    """The .param text and the weight blobs of the type's minimal valid model."""
    params, n_in = _spec(type_name, variant)
    layer = create_layer_cpu(type_name)
    assert layer is not None
    layer.type, layer.name = type_name, "op"
    assert layer.load_param(_pd(params)) == 0, f"{type_name}: the spec's params do not load"
    rec = _Recorder(_int8_blobs(type_name, params))
    assert layer.load_model(rec) == 0, f"{type_name}: the recorded weights do not load"
    return _param_text(type_name, params, n_in), rec.blobs


def _param_text(type_name: str, params: dict, n_in: int) -> str:
    if type_name == "Input":
        pstr = " ".join(f"{k}={v}" for k, v in params.items())
        return f"7767517\n1 1\nInput op 0 1 out0 {pstr}\n"
    return make_param(type_name, params, [(4, 5, 6)] * n_in)


def _load(param: str, weights: bytes, caplog) -> tuple[int, int, list[logging.LogRecord]]:
    """(load_param ret, load_model ret, the ncnn_c warning / error records)."""
    caplog.clear()
    net = ncnn_c.Net()
    net.opt.use_vulkan_compute = False
    with caplog.at_level(logging.WARNING, logger="ncnn_c"):
        rp = net.load_param_mem(param)
        rm = net.load_model_mem(weights) if rp == 0 else None
    records = [r for r in caplog.records if r.name == "ncnn_c" and r.levelno >= logging.WARNING]
    return rp, rm, records


def _ncnn_loads(param: str, weights: bytes) -> bool:
    import ncnn

    net = ncnn.Net()
    net.opt.use_vulkan_compute = False
    with tempfile.TemporaryDirectory() as tmp:
        p, b = Path(tmp, "m.param"), Path(tmp, "m.bin")
        p.write_text(param)
        b.write_bytes(weights)
        ok = net.load_param(str(p)) == 0 and net.load_model(str(b)) == 0
    net.clear()
    return ok


def _names_layer(line: str, type_name: str) -> bool:
    return "'op'" in line and type_name in line


# the types that load weights (their minimal models have a .bin)
WEIGHTED = [t for t in LAYER_TYPES if model(t)[1]]
# types the PyPI ncnn does not build
NOT_IN_NCNN = frozenset(("ArgMax", "SPP"))
VARIANTS = sorted(INT8)


def test_every_type_has_a_valid_model():
    assert len(LAYER_TYPES) == 110
    unknown = set(SPECS) | set(BAD_ENUMS) | {v.split("/")[0] for v in INT8}
    assert unknown <= set(LAYER_TYPES), unknown - set(LAYER_TYPES)
    # the weighted types are all there (a spec that loads nothing would hide one)
    assert len(WEIGHTED) == 34, WEIGHTED


@pytest.mark.parametrize("type_name", LAYER_TYPES)
def test_valid_model_loads_quietly_here_and_in_ncnn(type_name, caplog):
    param, blobs = model(type_name)
    rp, rm, records = _load(param, b"".join(blobs), caplog)
    assert (rp, rm) == (0, 0), [r.getMessage() for r in records]
    assert not records, [r.getMessage() for r in records]
    if type_name not in NOT_IN_NCNN:
        assert _ncnn_loads(param, b"".join(blobs)), "the PyPI ncnn refuses the model"


def _cuts(blobs: list[bytes]) -> list[int]:
    total = sum(map(len, blobs))
    bounds = np.cumsum([0] + [len(b) for b in blobs])[:-1].tolist()
    return sorted({0, 1, total // 2, total - 1, total - 4, *bounds} - {total})


def _assert_one_line(records, type_name: str, *words: str) -> str:
    lines = [r.getMessage() for r in records if r.levelno >= logging.ERROR]
    assert len(lines) == 1, lines
    assert _names_layer(lines[0], type_name), lines[0]
    for w in words:
        assert w in lines[0], (w, lines[0])
    return lines[0]


@pytest.mark.parametrize("type_name", WEIGHTED + VARIANTS)
def test_truncated_bin_fails_with_one_line(type_name, caplog):
    base, _, variant = type_name.partition("/")
    variant = type_name if type_name in INT8 else ""
    param, blobs = model(base, variant)
    data = b"".join(blobs)
    for cut in _cuts(blobs):
        rp, rm, records = _load(param, data[:cut], caplog)
        assert rp == 0
        assert rm == -1, f"cut at {cut} of {len(data)} bytes loaded"
        line = _assert_one_line(records, base)
        assert re.search(r"truncated|ended", line), line


def _count_param(type_name: str) -> int | None:
    """The id of the param that sizes the type's first weight blob."""
    ids = {
        "Bias": 0, "BatchNorm": 0, "PReLU": 0, "Scale": 0, "Padding": 6, "Normalize": 3,
        "InstanceNorm": 0, "GroupNorm": 1, "LayerNorm": 0, "RMSNorm": 0, "Quantize": 0,
        "Dequantize": 0, "Requantize": 0, "Embed": 3, "InnerProduct": 2, "RNN": 1, "LSTM": 1,
        "GRU": 1, "MultiHeadAttention": 2, "MemoryData": 0, "Gemm": 7,
    }  # fmt: skip
    return ids.get(type_name, 6)


@pytest.mark.parametrize("type_name", WEIGHTED)
def test_weight_count_beyond_the_bin(type_name, caplog):
    params, n_in = _spec(type_name)
    pid = _count_param(type_name)
    _, blobs = model(type_name)
    bigger = dict(params)
    # twice the count: still consistent with the other params, but the .bin is too short
    bigger[pid] = params.get(pid, 0) * 2
    if type_name == "GroupNorm":
        bigger[0] = params[0] * 2
    param = _param_text(type_name, bigger, n_in)
    rp, rm, records = _load(param, b"".join(blobs), caplog)
    assert rp == 0, [r.getMessage() for r in records]
    assert rm == -1
    _assert_one_line(records, type_name)


# weight counts that do not fit the layer's other params: (type, param id, value)
INCONSISTENT = [
    ("Convolution", 6, 4 * 2 * _K2 + 1),
    ("ConvolutionDepthWise", 6, 4 * _K2 - 1),
    ("Convolution1D", 6, 4 * 2 * 3 + 2),
    ("ConvolutionDepthWise1D", 6, 13),
    ("Convolution3D", 6, 4 * 2 * _K3 + 5),
    ("ConvolutionDepthWise3D", 6, 4 * _K3 + 5),
    ("Deconvolution", 6, 4 * 2 * _K2 + 1),
    ("DeconvolutionDepthWise", 6, 4 * _K2 - 1),
    ("Deconvolution1D", 6, 4 * 2 * 3 + 2),
    ("DeconvolutionDepthWise1D", 6, 13),
    ("Deconvolution3D", 6, 4 * 2 * _K3 + 5),
    ("DeconvolutionDepthWise3D", 6, 4 * _K3 + 5),
    ("DeformableConv2D", 6, 4 * 2 * _K2 + 1),
    ("InnerProduct", 2, 13),
    ("Embed", 3, 39),
    ("RNN", 1, 13),
    ("LSTM", 1, 47),
    ("GRU", 1, 35),
    ("MultiHeadAttention", 2, 63),
    ("GroupNorm", 1, 5),
    ("Convolution", 6, 0),
    ("InnerProduct", 2, 0),
    ("BatchNorm", 0, 0),
    ("Scale", 0, -4),
    ("PReLU", 0, 0),
    ("Bias", 0, 0),
    ("Quantize", 0, 0),
    ("Dequantize", 0, 0),
    ("Requantize", 0, 0),
    ("InstanceNorm", 0, 0),
    ("LayerNorm", 0, 0),
    ("RMSNorm", 0, 0),
    ("MemoryData", 0, -1),
]


def _names_param(line: str, type_name: str, pid: int) -> bool:
    """Whether ``line`` names param ``pid``: by id (``param 9``, ``9=``) or by the name the
    layer's table (ncnn's operator docs) gives it."""
    if re.search(rf"\bparam {pid}\b|(?<![\w.-]){pid}=", line):
        return True
    names = [p.name for p in create_layer_cpu(type_name).PARAMS if p.id == pid]
    return any(re.search(rf"\b{n}\b", line) for n in names)


def _fails_naming(param: str, weights: bytes, caplog, type_name: str, pid: int) -> None:
    rp, rm, records = _load(param, weights, caplog)
    assert rp != 0 or rm != 0, f"param {pid} accepted"
    lines = [r.getMessage() for r in records if r.levelno >= logging.ERROR]
    assert lines, "no log line"
    ok = [ln for ln in lines if _names_layer(ln, type_name) and _names_param(ln, type_name, pid)]
    assert ok, f"no line names the layer and param {pid}: {lines}"
    if rp == 0:  # a load_model failure: one line
        assert len(lines) == 1, lines


@pytest.mark.parametrize(("type_name", "pid", "value"), INCONSISTENT, ids=lambda v: str(v))
def test_weight_count_that_does_not_fit(type_name, pid, value, caplog):
    params, n_in = _spec(type_name)
    _, blobs = model(type_name)
    params[pid] = value
    _fails_naming(_param_text(type_name, params, n_in), b"".join(blobs), caplog, type_name, pid)


def _int8_scale_start(variant: str) -> int:
    """Bytes of the int8 model before its first scale blob (the fp32 model's blob count)."""
    base = variant.split("/")[0]
    _, plain = model(base)
    _, blobs = model(base, variant)
    n = len(plain) if base != "Embed" else 2  # Embed: table and bias, then the scale
    return sum(len(b) for b in blobs[:n])


@pytest.mark.parametrize("variant", VARIANTS)
def test_int8_scales_missing(variant, caplog):
    base = variant.split("/")[0]
    param, blobs = model(base, variant)
    data = b"".join(blobs)
    rp, rm, records = _load(param, data, caplog)
    assert (rp, rm) == (0, 0), [r.getMessage() for r in records]
    assert _ncnn_loads(param, data)
    rp, rm, records = _load(param, data[: _int8_scale_start(variant)], caplog)
    assert (rp, rm) == (0, -1)
    _assert_one_line(records, base, "scale")


CASES = [(t, pid, v) for t, bad in BAD_ENUMS.items() for pid, v in bad]


@pytest.mark.parametrize(("type_name", "pid", "value"), CASES, ids=lambda v: str(v))
def test_out_of_range_enum(type_name, pid, value, caplog):
    params, n_in = _spec(type_name)
    _, blobs = model(type_name)
    params[pid] = value
    _fails_naming(_param_text(type_name, params, n_in), b"".join(blobs), caplog, type_name, pid)
