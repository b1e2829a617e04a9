"""randbin for int8 models: fp32 weights + scales, or int8-stored weights (``--int8``), with
scales from the calibration forward; the quantized layer types without a network around them."""

from __future__ import annotations

import pathlib
import struct
import subprocess
import sys

import numpy as np

import ncnn_c
from ncnn_c.modelbin import INT8_TAG
from ncnn_c.tools.randbin import random_weights

ROOT = pathlib.Path(__file__).resolve().parents[1]
SQUEEZENET = str(ROOT / "models" / "benchmark_int8" / "squeezenet_int8.param")


def _net(param: str, weights: bytes) -> ncnn_c.Net:
    net = ncnn_c.Net()
    net.opt.num_threads = 1
    assert net.load_param(param) == 0 and net.load_model_mem(weights) == 0
    return net


def test_int8_weights_deterministic_and_stored_both_ways():
    fp32 = random_weights(SQUEEZENET, seed=3, input_shape=(3, 227, 227))
    assert fp32 == random_weights(SQUEEZENET, seed=3, input_shape=(3, 227, 227))
    int8 = random_weights(SQUEEZENET, seed=3, input_shape=(3, 227, 227), int8=True)
    assert len(int8) < len(fp32) / 3
    assert struct.unpack("<I", int8[:4])[0] == INT8_TAG and struct.unpack("<I", fp32[:4])[0] == 0
    a, b = _net(SQUEEZENET, fp32), _net(SQUEEZENET, int8)
    convs = [(x, y) for x, y in zip(a.layers(), b.layers(), strict=True) if x.type == "Convolution"]
    assert len(convs) == 26
    for x, y in convs:
        # the same int8 weights (fp32 ones quantized at load), the same scales
        assert np.mean(x._w8 != y._w8) < 1e-3
        assert np.abs(x._w8.astype(int) - y._w8.astype(int)).max() <= 1
        np.testing.assert_allclose(x._int8.weight, y._int8.weight, rtol=1e-6)
        assert x._int8.bottom == y._int8.bottom and x._int8.top == y._int8.top


def test_int8_scales_follow_the_calibration():
    net = _net(SQUEEZENET, random_weights(SQUEEZENET, seed=3, input_shape=(3, 227, 227)))
    layers = {layer.name: layer for layer in net.layers()}
    first = layers["conv1"]
    # weight scales map each output channel's largest weight onto 127
    assert np.abs(first._w8.astype(int)).max(axis=1).tolist() == [127] * 64
    # a requantizing layer's top scale is its consumers' bottom scale
    squeeze = layers["fire2/squeeze1x1"]
    assert squeeze.int8_scale_term == 102 and squeeze._int8.top is not None
    for name in ("fire2/expand1x1", "fire2/expand3x3"):
        assert layers[name]._int8.bottom == squeeze._int8.top
    # inputs and outputs use the int8 range without saturating it
    x = np.random.default_rng(0).standard_normal((3, 227, 227)).astype(np.float32)
    with net.create_extractor() as ex:
        ex.input("data", ncnn_c.Mat(x))
        ret, m = ex.extract("fire2/squeeze1x1_fire2/relu_squeeze1x1", 1)  # type 1: the raw int8 blob
        assert ret == 0 and m.elemsize == 1
        q = np.abs(m.numpy().astype(int))
    assert q.max() >= 64 and np.mean(q == 127) < 1e-3


def test_randbin_command_int8(tmp_path):
    out = tmp_path / "m.bin"
    cmd = [
        sys.executable,
        "-m",
        "ncnn_c.tools.randbin",
        SQUEEZENET,
        str(out),
        "--seed",
        "3",
        "--shape",
        "3,227,227",
    ]
    r = subprocess.run([*cmd, "--int8"], capture_output=True, text=True, check=False)
    assert r.returncode == 0, r.stderr
    assert out.read_bytes() == random_weights(SQUEEZENET, seed=3, input_shape=(3, 227, 227), int8=True)


QUANTIZED_LAYERS = """7767517
8 8
Input            data  0 1 data 0=6 1=5 2=4
Input            tok   0 1 tok 0=8
Quantize         q     1 1 data q 0=4
Embed            emb   1 1 tok e 0=3 1=10 2=1 3=30 18=2
Convolution      conv  1 1 data c 0=8 1=3 4=1 5=1 6=288 8=101 9=1
ConvolutionDepthWise dw 1 1 c d 0=8 1=3 4=1 5=0 6=72 7=8 8=2 9=1
InnerProduct     fc    1 1 d f 0=5 1=1 2=1200 8=2
Requantize       rq    1 1 f r 0=1 1=1 2=1 3=1
"""


def test_randbin_writes_every_quantized_layer_type(tmp_path):
    param = tmp_path / "q.param"
    param.write_text(QUANTIZED_LAYERS)
    x = np.random.default_rng(2).standard_normal((4, 5, 6)).astype(np.float32)
    tokens = np.arange(8, dtype=np.int32).view(np.float32)
    for int8 in (False, True):
        data = random_weights(str(param), seed=1, int8=int8)
        net = _net(str(param), data)
        layers = {layer.name: layer for layer in net.layers()}
        assert layers["emb"].weight_data.shape == (10, 3)
        assert layers["q"].scale_data.shape == (4,) and (layers["q"].scale_data > 0).all()
        for blob in ("q", "e", "f", "r"):
            with net.create_extractor() as ex:
                ex.input("data", ncnn_c.Mat(x))
                ex.input("tok", ncnn_c.Mat(tokens))
                ret, m = ex.extract(blob)
                assert ret == 0 and np.isfinite(m.numpy().astype(np.float32)).all(), blob


GEMM_INT8 = """7767517
4 4
Input            x     0 1 x 0=24 1=1 2=6
Gemm             g1    1 1 x y 3=1 5=1 6=1 8=16 9=24 10=4 18=2
Gemm             g2    1 1 y z 2=1 4=1 7=5 9=6 18=2
Gemm             g3    1 1 z w 4=1 5=1 6=0 7=5 8=16 9=16 3=0 18=2
"""


def test_randbin_int8_gemm_matches_ncnn(tmp_path):
    # int8 Gemm constants must be int8-stored for ncnn's x86 kernels: the PyPI ncnn reads them
    import ncnn
    from oracle import rel_l2, run_ncnn

    param = tmp_path / "g.param"
    param.write_text(GEMM_INT8)
    data = random_weights(str(param), seed=5)
    x = np.random.default_rng(3).standard_normal((6, 1, 24)).astype(np.float32)
    assert ncnn is not None
    ret, ref = run_ncnn(GEMM_INT8, data, [x], 1, ["x"], ["w"])
    assert ret == 0
    net = _net(str(param), data)
    with net.create_extractor() as ex:
        ex.input("x", ncnn_c.Mat(x))
        ret, m = ex.extract("w")
        assert ret == 0
        got = np.array(m.numpy())
    assert got.shape == ref[0].shape and np.std(ref[0]) > 0
    assert rel_l2(got, ref[0]) <= 1e-6
