"""Test helper for layers with string (expression) params, which oracle.check_layer cannot write.

String values are written quoted into the .param text, as pnnx does (ncnn only reads a value
as a string when it starts with a letter or a quote), and set as type-7 strings in the
ParamDict of the direct layer path. Everything else goes through tests/oracle.py.
"""

from __future__ import annotations

import numpy as np
from oracle import (
    _fmt_param,
    _input_params,
    _weight_values,
    assert_close,
    default_option,
    run_ncnn,
    run_net,
)


def make_param_str(layer_type: str, params: dict, input_shapes, n_outputs: int = 1) -> str:
    n_in = len(input_shapes)
    lines = ["7767517", f"{n_in + 1} {n_in + n_outputs}"]
    for i, shape in enumerate(input_shapes):
        lines.append(f"Input in{i} 0 1 in{i} {_input_params(shape)}")
    bottoms = " ".join(f"in{i}" for i in range(n_in))
    tops = " ".join(f"out{i}" for i in range(n_outputs))
    parts = []
    for k, v in sorted(params.items()):
        parts.append(f'{k}="{v}"' if isinstance(v, str) else _fmt_param(k, v))
    lines.append(f"{layer_type} op {n_in} {n_outputs} {bottoms} {tops} {' '.join(parts)}".rstrip())
    return "\n".join(lines) + "\n"


def run_layer_str(layer_type: str, params: dict, inputs, n_outputs: int = 1, weights=()):
    """ncnn_c's layer object driven directly, string params included. Returns (ret, [arrays])."""
    from ncnn_c.layer import create_layer_cpu
    from ncnn_c.mat import Mat
    from ncnn_c.modelbin import ModelBinFromMatArray
    from ncnn_c.paramdict import ParamDict

    opt = default_option()
    layer = create_layer_cpu(layer_type)
    assert layer is not None
    pd = ParamDict()
    for k, v in params.items():
        if isinstance(v, (list, tuple, np.ndarray)):
            pd.set(k, np.asarray(v).ravel())
        elif isinstance(v, str):
            pd.set(k, v)
        elif isinstance(v, (int, np.integer)):
            pd.set(k, int(v))
        else:
            pd.set(k, float(v))
    ret = layer.load_param(pd)
    if ret != 0:
        return ret, []
    ret = layer.load_model(ModelBinFromMatArray([Mat(_weight_values(w)) for w in weights]))
    if ret != 0:
        return ret, []
    bottoms = [Mat(np.ascontiguousarray(x, dtype=np.float32)) for x in inputs]
    if layer.one_blob_only:
        tops = [Mat()]
        ret = layer.forward(bottoms[0], tops[0], opt)
    else:
        tops = [Mat() for _ in range(n_outputs)]
        ret = layer.forward(bottoms, tops, opt)
    if ret != 0:
        return ret, []
    return 0, [np.array(t.numpy(), dtype=np.float32, copy=True) for t in tops]


def check_str(layer_type: str, params: dict, inputs, tol: float = 0.0, paths=("layer", "net")) -> float:
    """Oracle vs the chosen ncnn_c paths (exact by default); returns the max error."""
    inputs = [np.asarray(x, dtype=np.float32) for x in inputs]
    text = make_param_str(layer_type, params, [x.shape for x in inputs])
    ret, ref = run_ncnn(text, b"", inputs)
    assert ret == 0, f"oracle failed ({ret}) on\n{text}"
    worst = 0.0
    for path in paths:
        if path == "net":
            ret, got = run_net(text, b"", inputs)
        else:
            ret, got = run_layer_str(layer_type, params, inputs)
        assert ret == 0, f"ncnn_c {path} failed ({ret}) on\n{text}"
        assert len(got) == 1
        worst = max(worst, assert_close(got[0], ref[0], tol, f"{layer_type} {path} {params}"))
    return worst
