"""The tests of RNN, LSTM and GRU, one class each test_<layer>.py subclasses with its KIND.

The cases are those of ncnn's tests/test_rnn.cpp, test_lstm.cpp and test_gru.cpp (one list: the
three files run the same shapes), built as (params, weights, inputs, n_outputs) for any of the
three layers; each runs against the PyPI ncnn oracle on every backend (oracle.backends: the CPU,
then the GPU option grid for LSTM and GRU, a Vulkan net running RNN on the CPU, since ncnn has no
GPU form of RNN), and some against a float64 reference."""

from __future__ import annotations

import logging

import numpy as np
import pytest
from oracle import assert_close, backends, check, make_bin, make_param, rng, run_layer, run_net

# (size, T, num_output, direction[, hidden_size]); the hidden_size ones are LSTM-only
PLAIN = [(4, 1, 2, 2), (8, 2, 2, 2), (16, 8, 7, 2), (17, 8, 8, 2), (19, 15, 8, 2), (5, 16, 16, 2)]
PLAIN += [(3, 16, 8, 2), (8, 16, 16, 2), (31, 3, 31, 2), (2, 5, 17, 2, 15)]
PLAIN += [(4, 1, 1, 0), (8, 2, 2, 0), (16, 8, 7, 0), (17, 8, 8, 0), (19, 15, 8, 0), (5, 16, 16, 0)]
PLAIN += [(3, 16, 8, 0), (8, 16, 16, 0), (2, 5, 17, 0, 15)]
PLAIN += [(4, 1, 1, 1), (8, 2, 2, 1), (16, 8, 7, 1), (17, 8, 8, 1), (19, 15, 8, 1), (5, 16, 16, 1)]
PLAIN += [(3, 16, 8, 1), (8, 16, 16, 1), (2, 5, 17, 1, 15)]
STATEFUL = [
    (4, 4, 1, 2), (8, 2, 2, 2), (16, 8, 7, 2), (17, 8, 8, 2), (19, 15, 8, 2), (5, 16, 16, 2),
    (3, 16, 8, 2), (2, 5, 79, 2, 33),
    (4, 4, 1, 1), (8, 2, 2, 1), (16, 8, 7, 1), (17, 8, 8, 1), (19, 15, 8, 1), (5, 16, 16, 1),
    (3, 16, 8, 1), (2, 5, 79, 1, 33),
    (4, 2, 1, 0), (8, 2, 2, 0), (16, 8, 7, 0), (17, 8, 8, 0), (19, 15, 8, 0), (5, 16, 16, 0),
    (3, 16, 8, 0), (2, 5, 17, 0, 15),
]  # fmt: skip
# how the state blobs are wired: (state inputs, state outputs)
MODES = {"with_hidden": (True, True), "hidden_input": (True, False), "hidden_output": (False, True)}

GATES = {"RNN": 1, "LSTM": 4, "GRU": 3}
BIAS_ROWS = {"RNN": 1, "LSTM": 4, "GRU": 4}


def uniform(g: np.random.Generator, shape, lo: float = -1.2, hi: float = 1.2) -> np.ndarray:
    """ncnn's RandomMat range."""
    return g.uniform(lo, hi, shape).astype(np.float32)


def ncnn_case(kind: str, case: tuple, mode: str = "plain"):
    """(params, weights, inputs, n_outputs) for one case; for RNN and GRU a hidden_size entry is
    num_output (their test files run the same case with the fifth number left out)."""
    size, T, outch, direction = case[:4]
    hidden = case[4] if len(case) > 4 and kind == "LSTM" else outch
    dirs = 2 if direction == 2 else 1
    gates = GATES[kind]
    g = rng(kind, case, mode)
    params = {0: outch, 1: hidden * size * gates * dirs, 2: direction}
    if kind == "LSTM":
        params[3] = hidden
    weights = [
        uniform(g, (hidden * size * gates * dirs,)),
        uniform(g, (hidden * BIAS_ROWS[kind] * dirs,)),
        uniform(g, (outch * hidden * gates * dirs,)),
    ]
    if hidden != outch:
        weights.append(uniform(g, (hidden * outch * dirs,)))
    inputs = [uniform(g, (T, size))]
    state_in, state_out = MODES.get(mode, (False, False))
    if state_in:
        inputs.append(uniform(g, (dirs, outch)))
        if kind == "LSTM":
            inputs.append(uniform(g, (dirs, hidden)))
    n_outputs = 1 + ((2 if kind == "LSTM" else 1) if state_out else 0)
    return params, weights, inputs, n_outputs


def all_cases() -> list[tuple[tuple, str]]:
    """Every case of the ncnn test files as (case, mode)."""
    out = [(c, "plain") for c in PLAIN]
    for mode in MODES:
        out += [(c, mode) for c in STATEFUL]
    return out


# -- a float64 reference, written from ncnn's src/layer/{rnn,lstm,gru}.cpp -----------------------
def _sigmoid(v):
    return 1.0 / (1.0 + np.exp(-v))


def reference(kind: str, params: dict, weights, inputs, n_outputs: int):
    """The layer in float64: [output, final states...] shaped as ncnn's blobs."""
    outch, direction = params[0], params.get(2, 0)
    hidden = params.get(3, outch) if kind == "LSTM" else outch
    dirs = 2 if direction == 2 else 1
    gates = GATES[kind]
    x = np.asarray(inputs[0], np.float64)
    T, size = x.shape
    wxc = np.asarray(weights[0], np.float64).reshape(dirs, gates * hidden, size)
    bias = np.asarray(weights[1], np.float64).reshape(dirs, BIAS_ROWS[kind], hidden)
    whc = np.asarray(weights[2], np.float64).reshape(dirs, gates * hidden, outch)
    whr = np.asarray(weights[3], np.float64).reshape(dirs, outch, hidden) if hidden != outch else None
    h0 = (
        np.asarray(inputs[1], np.float64).reshape(dirs, outch) if len(inputs) > 1 else np.zeros((dirs, outch))
    )
    c0 = (
        np.asarray(inputs[2], np.float64).reshape(dirs, hidden)
        if len(inputs) > 2
        else np.zeros((dirs, hidden))
    )
    outs, hs, cs = [], [], []
    for d in range(dirs):
        h, c = h0[d].copy(), c0[d].copy()
        out = np.zeros((T, outch))
        steps = range(T - 1, -1, -1) if d == 1 or direction == 1 else range(T)
        for t in steps:
            xg, hg = wxc[d] @ x[t], whc[d] @ h
            if kind == "RNN":
                h = np.tanh(xg + bias[d][0] + hg)
            elif kind == "LSTM":
                a = xg + bias[d].reshape(-1) + hg
                i, f, o = (_sigmoid(a[k * hidden : (k + 1) * hidden]) for k in range(3))
                c = f * c + i * np.tanh(a[3 * hidden :])
                h = o * np.tanh(c)
                if whr is not None:
                    h = whr[d] @ h
            else:
                n = outch
                r = _sigmoid(xg[:n] + bias[d][0] + hg[:n])
                u = _sigmoid(xg[n : 2 * n] + bias[d][1] + hg[n : 2 * n])
                new = np.tanh(xg[2 * n :] + bias[d][2] + r * (hg[2 * n :] + bias[d][3]))
                h = (1 - u) * new + u * h
            out[t] = h
        outs.append(out)
        hs.append(h)
        cs.append(c)
    result = [np.concatenate(outs, axis=1), np.array(hs)]
    if kind == "LSTM":
        result.append(np.array(cs))
    return result[:n_outputs]


# -- the checks each test_<layer>.py runs ---------------------------------------------------------
# The oracle and ncnn_c both run the recurrence in float32, and a recurrence carries each step's
# rounding into the next: on the widest case (LSTM num_output 79 projected from hidden_size 33,
# bidirectional) the oracle itself is 1.2e-5 (rel L2) from the float64 result and ncnn_c 1.0e-5,
# so the two are 1.35e-5 apart. RNN and GRU stay within 3e-6 of the oracle.
TOL = {"RNN": 1e-5, "GRU": 1e-5, "LSTM": 3e-5}


def gpu_inputs(backend: str, inputs: list) -> list:
    """On the GPU backends, ``inputs`` rounded to fp16 values, which fp16 storage holds exactly:
    the widest LSTM case (num_output 79 from hidden_size 33, states in) turns an input rounding
    of 2^-11 into 1.5e-2 of its output (measured on the float64 reference), beyond the fp16 bar
    whatever the layer computes. The CPU keeps the float32 inputs its TOL was measured on."""
    if backend == "cpu":
        return inputs
    return [x.astype(np.float16).astype(np.float32) for x in inputs]


def check_case(backend: str, kind: str, case) -> None:
    params, weights, inputs, n_outputs = case
    inputs = gpu_inputs(backend, inputs)
    check(backend, kind, params, weights, inputs, n_outputs=n_outputs, tol=TOL[kind])


def check_float64(kind: str, case) -> None:
    """ncnn_c within float32 rounding of the float64 reference (the oracle's own distance is
    about the same, see TOL)."""
    params, weights, inputs, n_outputs = case
    ret, got = run_layer(kind, params, weights, inputs, n_outputs)
    assert ret == 0
    for i, (g, r) in enumerate(zip(got, reference(kind, params, weights, inputs, n_outputs), strict=True)):
        assert_close(g, r, TOL[kind], f"{kind} out{i} vs float64")


def rejects(caplog, kind: str, params, weights, inputs, words: str, n_outputs: int = 1) -> None:
    """run_layer fails, and one error line names the layer type and ``words``."""
    caplog.clear()
    with caplog.at_level(logging.ERROR, logger="ncnn_c"):
        ret, _ = run_layer(kind, params, weights, inputs, n_outputs=n_outputs)
    assert ret != 0
    assert any(kind in r.getMessage() and words in r.getMessage() for r in caplog.records), caplog.text


def check_bad_params(caplog, kind: str) -> None:
    params, weights, inputs, _ = ncnn_case(kind, (5, 4, 6, 2), "with_hidden")
    x = inputs[0]
    rejects(caplog, kind, {**params, 2: 3}, weights, [x], "direction")
    rejects(caplog, kind, {**params, 0: 0}, weights, [x], "num_output")
    rejects(caplog, kind, {**params, 1: params[1] + 1}, weights, [x], "weight_data_size")
    rejects(caplog, kind, {**params, 8: 2}, weights, [x], "int8")
    rejects(caplog, kind, params, weights[:2], [x], "weight_hc_data")
    rejects(caplog, kind, params, [weights[0][:-1], *weights[1:]], [x], "weight_xc_data")
    rejects(caplog, kind, params, weights, [x[:, :4]], "input")
    rejects(caplog, kind, params, weights, [x[None]], "input")
    rejects(caplog, kind, params, weights, [x, inputs[1][:, :5], *inputs[2:]], "hidden", len(inputs))
    rejects(caplog, kind, params, weights, [x, *inputs[1:], x], "inputs", len(inputs))


def check_bad_inputs_in_vulkan_net(caplog, kind: str) -> None:
    """A Vulkan net refuses a sequence of the wrong width and a state of the wrong size, one
    error line naming the layer type and the blob (the GPU form's checks; RNN's CPU ones)."""
    params, weights, inputs, n_outputs = ncnn_case(kind, (5, 4, 6, 2), "with_hidden")
    x = inputs[0]
    bad = {"input": [x[:, :4], *inputs[1:]], "hidden": [x, inputs[1][:, :5], *inputs[2:]]}
    for word, given in bad.items():
        caplog.clear()
        text = make_param(kind, params, [b.shape for b in given], n_outputs)
        with caplog.at_level(logging.ERROR, logger="ncnn_c"):
            ret, _ = run_net(text, make_bin(weights), given, n_outputs, use_vulkan=True)
        assert ret != 0
        assert any(kind in r.getMessage() and word in r.getMessage() for r in caplog.records), caplog.text


def check_one_d_blobs(backend: str, kind: str, direction: int) -> None:
    """1-D state blobs of a one-direction layer (kept 1-D on the way out) and a 1-D sequence
    (one step), as the oracle takes them."""
    params, weights, inputs, n_outputs = ncnn_case(kind, (5, 6, 7, direction), "with_hidden")
    inputs = gpu_inputs(backend, inputs)
    flat = [inputs[0]] + [s.reshape(-1) for s in inputs[1:]]
    check(backend, kind, params, weights, flat, n_outputs=n_outputs, tol=TOL[kind])
    check(backend, kind, params, weights, [inputs[0][0]], tol=TOL[kind])


CASES = all_cases()


class RecurrentTests:
    """Subclassed as Test<KIND> by each layer's test file."""

    KIND = ""

    def pytest_generate_tests(self, metafunc):
        # the backends of the subclass's KIND, parametrized last so that a case's backends run
        # back to back and share one oracle run
        if "backend" in metafunc.fixturenames:
            metafunc.parametrize("backend", backends(self.KIND))

    @pytest.mark.parametrize("case,mode", CASES, ids=[f"{m}{c}" for c, m in CASES])
    def test_ncnn_cases(self, case, mode, backend):
        check_case(backend, self.KIND, ncnn_case(self.KIND, case, mode))

    @pytest.mark.parametrize("mode", ["plain", "with_hidden"])
    @pytest.mark.parametrize("case", [(19, 15, 8, 0), (17, 8, 8, 1), (2, 5, 79, 2, 33)], ids=str)
    def test_float64_reference(self, case, mode):
        check_float64(self.KIND, ncnn_case(self.KIND, case, mode))

    @pytest.mark.parametrize("direction", [0, 1])
    def test_one_d_blobs(self, direction, backend):
        check_one_d_blobs(backend, self.KIND, direction)

    def test_bad_params(self, caplog):
        check_bad_params(caplog, self.KIND)

    @pytest.mark.gpu
    def test_bad_inputs_in_vulkan_net(self, caplog):
        check_bad_inputs_in_vulkan_net(caplog, self.KIND)
