"""Embed against the PyPI ncnn (exact): ncnn's tests/test_embed.cpp cases (fp32 table with and
without bias; the int8 table with its scale), tokens out of range clamped, fp16-stored tables,
the layer and net paths, bad params, weights and inputs, and a Vulkan net (ncnn has no GPU
form: the Vulkan net runs it on the CPU).

Token ids travel as the bit patterns of int32 in the fp32 input, as ncnn reads them. The int8
table is written in ncnn's int8 storage (flag 0x000D4B38); ncnn_c's ModelBin does not read
that storage yet, so the int8 cases drive the layer with an int8 Mat directly, and the net
path only has to refuse the file with a log line (or, once ModelBin reads it, match).
"""

from __future__ import annotations

import logging
import struct

import numpy as np
import pytest
from oracle import check_layer, default_option, make_bin, make_param, randn, rng, run_layer, run_ncnn, run_net

from ncnn_c.layer import create_layer_cpu
from ncnn_c.mat import Mat
from ncnn_c.modelbin import ModelBinFromMatArray
from ncnn_c.paramdict import ParamDict

PATHS = ("layer", "net")
INT8_FLAG = 0x000D4B38


def tokens(ids) -> np.ndarray:
    """int32 token ids as the fp32 input blob that carries their bits."""
    return np.asarray(ids, dtype=np.int32).view(np.float32)


def _params(words, num_output, input_dim, bias, int8=False):
    p = {0: num_output, 1: input_dim, 2: bias, 3: num_output * input_dim}
    if int8:
        p[18] = 2
    return p


# (words, num_output, input_dim) of ncnn's cases, each with and without bias
CASES = [(128, 128, 128), (127, 127, 127), (124, 124, 124), (5, 3, 1), (9, 16, 1000)]


@pytest.mark.parametrize("bias", [0, 1])
@pytest.mark.parametrize("words,num_output,input_dim", CASES, ids=str)
def test_embed(words, num_output, input_dim, bias):
    g = rng("embed", words, num_output, input_dim, bias)
    weights = [randn(g, (num_output * input_dim,))]
    if bias:
        weights.append((randn(g, (num_output,)), 1))
    x = tokens(g.integers(0, input_dim, words))
    check_layer("Embed", _params(words, num_output, input_dim, bias), weights, [x], paths=PATHS, tol=0.0)


def test_embed_clamps_tokens_and_reads_fp16_tables():
    g = rng("embed-clamp")
    x = tokens([-5, 0, 3, 6, 7, 1 << 30, -(1 << 31), 2])
    check_layer(
        "Embed", _params(8, 4, 7, 1), [randn(g, (28,)), (randn(g, (4,)), 1)], [x], paths=PATHS, tol=0.0
    )
    check_layer("Embed", _params(8, 4, 7, 0), [(randn(g, (28,)), "fp16")], [x], paths=PATHS, tol=0.0)


def _int8_case(words, num_output, input_dim, bias):
    g = rng("embed-int8", words, num_output, input_dim, bias)
    table = g.integers(-127, 128, num_output * input_dim).astype(np.int8)
    bias_v = randn(g, (num_output,)) if bias else None
    scale = np.float32(g.uniform(100.0, 200.0))
    blob = struct.pack("<I", INT8_FLAG) + table.tobytes()
    blob += b"\0" * (-len(blob) % 4)
    if bias_v is not None:
        blob += bias_v.astype("<f4").tobytes()
    blob += np.float32(scale).astype("<f4").tobytes()
    return table, bias_v, scale, blob, tokens(g.integers(0, input_dim, words))


def _run_int8_layer(params, table, bias_v, scale, x):
    layer = create_layer_cpu("Embed")
    pd = ParamDict()
    for k, v in params.items():
        pd.set(k, v)
    assert layer.load_param(pd) == 0
    mats = [Mat(table)] + ([Mat(bias_v)] if bias_v is not None else []) + [Mat(np.array([scale], np.float32))]
    if layer.load_model(ModelBinFromMatArray(mats)) != 0:
        return -1, None
    top = Mat()
    ret = layer.forward(Mat(x), top, default_option())
    return ret, np.array(top.numpy(), copy=True)


@pytest.mark.parametrize("bias", [0, 1])
@pytest.mark.parametrize("words,num_output,input_dim", CASES[:3], ids=str)
def test_embed_int8(caplog, words, num_output, input_dim, bias):
    params = _params(words, num_output, input_dim, bias, int8=True)
    table, bias_v, scale, blob, x = _int8_case(words, num_output, input_dim, bias)
    text = make_param("Embed", params, [x.shape])
    ret, (ref,) = run_ncnn(text, blob, [x])
    assert ret == 0
    ret, got = _run_int8_layer(params, table, bias_v, scale, x)
    assert ret == 0
    np.testing.assert_array_equal(got, ref)
    with caplog.at_level(logging.ERROR, logger="ncnn_c"):
        ret, outs = run_net(text, blob, [x])
    if ret == 0:
        np.testing.assert_array_equal(outs[0], ref)
    else:
        assert any("Embed" in r.getMessage() or "ModelBin" in r.getMessage() for r in caplog.records)


def test_embed_int8_with_fp32_table_is_refused(caplog):
    # ncnn would read the fp32 bytes as int8 values
    params = _params(4, 3, 5, 0, int8=True)
    with caplog.at_level(logging.ERROR, logger="ncnn_c"):
        ret, _ = run_layer(
            "Embed", params, [np.ones(15, np.float32), (np.ones(1, np.float32), 1)], [tokens([1])]
        )
    errors = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert ret != 0
    assert len(errors) == 1 and "Embed" in errors[0] and "int8" in errors[0], errors


def _errors(caplog):
    return [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]


@pytest.mark.parametrize(
    "params,word",
    [
        ({1: 5, 3: 0}, "num_output"),
        ({0: 3, 3: 15}, "input_dim"),
        ({0: 3, 1: 5, 3: 14}, "weight_data_size"),
    ],
    ids=str,
)
def test_embed_bad_params(caplog, params, word):
    x = tokens([0, 1])
    with caplog.at_level(logging.ERROR, logger="ncnn_c"):
        ret, _ = run_layer("Embed", params, [np.ones(15, np.float32)], [x])
        assert ret != 0
        errors = _errors(caplog)
        assert len(errors) == 1 and "Embed" in errors[0] and word in errors[0], errors
        assert (
            run_net(make_param("Embed", params, [x.shape]), make_bin([np.ones(15, np.float32)]), [x])[0] != 0
        )


@pytest.mark.parametrize("weights", [[], [np.ones(15, np.float32)]], ids=["no table", "no bias"])
def test_embed_missing_weights(caplog, weights):
    x = tokens([0, 1])
    text = make_param("Embed", _params(2, 3, 5, 1), [x.shape])
    with caplog.at_level(logging.ERROR, logger="ncnn_c"):
        assert run_net(text, make_bin(weights), [x])[0] != 0
    assert _errors(caplog)


def test_embed_refuses_a_2d_input(caplog):
    with caplog.at_level(logging.ERROR, logger="ncnn_c"):
        ret, _ = run_layer(
            "Embed", _params(2, 3, 5, 0), [np.ones(15, np.float32)], [tokens([[0, 1], [2, 3]])]
        )
    errors = _errors(caplog)
    assert ret != 0
    assert len(errors) == 1 and "Embed" in errors[0] and "1-D" in errors[0], errors


@pytest.mark.gpu
def test_embed_in_vulkan_net():
    # straight from the Input: a GPU layer in front would treat the token bits as floats
    g = rng("embed-vk")
    weights = [randn(g, (6 * 40,)), (randn(g, (6,)), 1)]
    x = tokens(g.integers(0, 40, 17))
    check_layer("Embed", _params(17, 6, 40, 1), weights, [x], paths=("net",), use_vulkan=True, tol=0.0)
