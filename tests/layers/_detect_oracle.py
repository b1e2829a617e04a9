"""Helpers for the detection layer tests: run the oracle where outputs may be empty, and
compare detection tables (labels exact, scores and boxes within 1e-5, tied rows in either order).

The PyPI ncnn crashes converting an empty Mat to numpy, which is what these layers return
when nothing is detected; ``oracle_outputs`` checks ``empty()`` first and hands back a
(0,) array for it, the same thing ncnn_c's empty Mat turns into.
"""

from __future__ import annotations

import os
import tempfile

import numpy as np
from oracle import FP32_FLAGS, make_bin, make_param, net_available, run_layer, run_net


def oracle_outputs(param_text: str, bin_bytes: bytes, inputs, n_outputs: int = 1):
    """(ret, [arrays]) from the PyPI ncnn, with empty output Mats as np.zeros(0)."""
    import ncnn

    net = ncnn.Net()
    for k, v in FP32_FLAGS.items():
        setattr(net.opt, k, v)
    with tempfile.TemporaryDirectory() as tmp:
        ppath = os.path.join(tmp, "m.param")
        bpath = os.path.join(tmp, "m.bin")
        with open(ppath, "w") as f:
            f.write(param_text)
        with open(bpath, "wb") as f:
            f.write(bin_bytes)
        if net.load_param(ppath) != 0 or net.load_model(bpath) != 0:
            return -1, []
    outs = []
    ret = 0
    with net.create_extractor() as ex:
        keep = [np.ascontiguousarray(x, dtype=np.float32) for x in inputs]
        for i, x in enumerate(keep):
            ex.input(f"in{i}", ncnn.Mat(x).clone())
        for i in range(n_outputs):
            ret, m = ex.extract(f"out{i}")
            if ret == 0:
                outs.append(
                    np.zeros(0, np.float32) if m.empty() else np.array(m, dtype=np.float32, copy=True)
                )
            del m
            if ret != 0:
                break
    net.clear()
    return ret, (outs if ret == 0 else [])


def compare_detections(got: np.ndarray, ref: np.ndarray, what: str = "", tol: float = 1e-5) -> float:
    """The same detections in the same score order: the score column equal within ``tol``
    relative, row by row; each reference row matched by one ncnn_c row with its label and
    score and box within ``tol``. Rows whose scores tie (within ``tol``) may come in either
    order: the oracle's sigmoid/exp differ in the last ulp between its CPU dispatch paths, so
    which of two tied rows sorts first is not one answer."""
    assert got.shape == ref.shape, f"{what}: got {got.shape}, expected {ref.shape}"
    if ref.size == 0:
        return 0.0
    err_s = np.abs(got[:, 1] - ref[:, 1]) / np.maximum(np.abs(ref[:, 1]), 1e-30)
    assert err_s.max() <= tol, f"{what}: score column differs by {err_s.max():.3g} (order or values)"
    scale = np.maximum(np.abs(ref[:, 2:]).max(axis=1, keepdims=True), 1e-6)
    unused = list(range(got.shape[0]))
    worst = float(err_s.max())
    for i, row in enumerate(ref):
        best = None
        for j in unused:
            if got[j, 0] != row[0]:
                continue
            e_s = abs(got[j, 1] - row[1]) / max(abs(row[1]), 1e-30)
            e_b = float((np.abs(got[j, 2:] - row[2:]) / scale[i]).max())
            if e_s <= tol and e_b <= tol:
                best = (j, max(e_s, e_b))
                break
        assert best is not None, f"{what}: no ncnn_c row matches reference row {i} {row} in\n{got}"
        unused.remove(best[0])
        worst = max(worst, best[1])
    return worst


def check_detect(
    layer_type: str,
    params: dict,
    inputs,
    n_outputs: int = 1,
    compare=compare_detections,
    paths=("layer", "net"),
    expect_rows: bool | None = None,
):
    """Run the oracle and ncnn_c's paths, compare every output with ``compare``; returns the
    oracle outputs and the largest error. ``expect_rows`` asserts the oracle found detections
    (True) or none (False), so a test cannot pass vacuously."""
    inputs = [np.asarray(x, dtype=np.float32) for x in inputs]
    param_text = make_param(layer_type, params, [x.shape for x in inputs], n_outputs)
    bin_bytes = make_bin([])
    ret, ref = oracle_outputs(param_text, bin_bytes, inputs, n_outputs)
    assert ret == 0, f"oracle failed ({ret}) on\n{param_text}"
    if expect_rows is not None:
        assert (ref[0].size > 0) == expect_rows, f"oracle rows: {ref[0].shape}"
    worst = 0.0
    for path in paths:
        if path == "net":
            if not net_available():
                continue
            ret, got = run_net(param_text, bin_bytes, inputs, n_outputs)
        else:
            ret, got = run_layer(layer_type, params, [], inputs, n_outputs, inplace=path == "inplace")
        assert ret == 0, f"ncnn_c {path} failed ({ret}) on\n{param_text}"
        for i in range(n_outputs):
            g = got[i] if got[i].size else np.zeros(0, np.float32)
            worst = max(worst, compare(g, ref[i], f"{layer_type} {path} out{i} {params}"))
    return ref, worst
