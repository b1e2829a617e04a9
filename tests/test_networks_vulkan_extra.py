"""Networks beyond ncnn's benchmark set on Vulkan, against the PyPI ncnn on the CPU in fp32.

models/benchmark_extra: ncnn's ViT-B/32 (vision_transformer.param, 384x384: Gemm,
MultiHeadAttention, LayerNorm, GELU, a Crop on a 2-D blob) and PaddleOCR v5's mobile text
detector (its squeeze-excite blocks feed 1x1 Convolutions a 1-D blob, ncnn's deprecated form).
Random weights calibrated on the input size each network takes; the bars of
tests/test_networks_vulkan.py: fp32 options within 1e-3, ncnn's default GPU options within 2e-2.
"""

from __future__ import annotations

import functools

import pytest
import test_networks
from test_networks import ROOT, compare_network
from test_networks_vulkan import DEFAULT_GPU, TOL_DEFAULT, TOL_FP32

from ncnn_c.tools.randbin import random_weights

pytestmark = pytest.mark.gpu

EXTRA = ROOT / "models" / "benchmark_extra"
# (param, input shape c, h, w): the ViT takes ~30 s per option set on lavapipe
NETWORKS = {
    "vision_transformer": ("vision_transformer.param", (3, 384, 384)),
    "ppocrv5_det": ("PP_OCRv5_mobile_det.ncnn.param", (3, 256, 256)),
}
# blobs compared instead of the outputs: the ViT's Softmax runs over axis 0 of its 1 x 1000
# logits, so its output is all ones whatever the weights; the logits carry the signal
COMPARED = {"vision_transformer": [("cls_score", "Gemm")]}
SLOW = {"vision_transformer"}


@functools.lru_cache(maxsize=2)
def _weights(name: str) -> bytes:
    file, shape = NETWORKS[name]
    return random_weights(str(EXTRA / file), seed=7, input_shape=shape)


def _param(name: str):
    marks = [pytest.mark.slow] if name in SLOW else []
    return pytest.param(name, marks=marks)


@pytest.mark.parametrize("default_options", [False, True], ids=["fp32", "default"])
@pytest.mark.parametrize("name", [_param(n) for n in NETWORKS])
def test_extra_network_vulkan(name, default_options, monkeypatch):
    file, shape = NETWORKS[name]
    param = EXTRA / file
    # the .params leave the Input shape out: compare_network feeds the shape given here
    monkeypatch.setitem(test_networks.INPUT_SHAPES, param.stem, shape)
    opts = DEFAULT_GPU if default_options else {}
    tol = TOL_DEFAULT if default_options else TOL_FP32
    compare_network(param, _weights(name), tol=tol, use_vulkan=True, outputs=COMPARED.get(name), **opts)
