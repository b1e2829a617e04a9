"""New input shapes on the native plan, as users run it (not strict): against the PyPI ncnn.

A net's second and later input shapes reuse the weights its earlier plans packed
(``plan.Packs``) and, when their plan has the structure of one already checked against the
numpy layers (``NativePlan.signature``), run unchecked. Both are what a user's first extract
of a new size gets, so both are compared with the oracle here, every extract of every size.
"""

from __future__ import annotations

import logging
import pathlib

import ncnn  # noqa: F401  (the oracle must be installed)
import numpy as np
import pytest
from oracle import FP32_FLAGS, _apply, rel_l2, run_ncnn

import ncnn_c
from ncnn_c.tools.randbin import random_weights

ROOT = pathlib.Path(__file__).resolve().parents[1]
MODELS = ROOT / "models"
NETS = {
    "squeezenet_real": (MODELS / "squeezenet_v1.1.param", MODELS / "squeezenet_v1.1.bin", "data", "prob"),
    "mobilenet_v2": (MODELS / "benchmark_cpu" / "mobilenet_v2.param", None, "data", "output"),
    "shufflenet_v2": (MODELS / "benchmark_cpu" / "shufflenet_v2.param", None, "data", "output"),
}
# letterbox-like sizes: square, smaller, a landscape and a portrait one, the first again
SIZES = [(3, 224, 224), (3, 160, 160), (3, 192, 256), (3, 256, 160), (3, 224, 224)]


@pytest.mark.parametrize("name", sorted(NETS))
def test_new_shapes_match_ncnn(name, monkeypatch, caplog):
    monkeypatch.delenv("NCNN_C_NATIVE_STRICT", raising=False)
    monkeypatch.delenv("NCNN_C_NATIVE_CHECK", raising=False)
    param, binf, in_name, out_name = NETS[name]
    text = param.read_text()
    bin_bytes = binf.read_bytes() if binf else random_weights(str(param), seed=7, input_shape=(3, 224, 224))
    net = ncnn_c.Net()
    _apply(net.opt, FP32_FLAGS)
    net.opt.num_threads = 2
    assert net.load_param_mem(text) == 0 and net.load_model_mem(bin_bytes) == 0
    g = np.random.default_rng(3)
    with caplog.at_level(logging.INFO, logger="ncnn_c"):
        for shape in SIZES:
            x = g.standard_normal(shape).astype(np.float32)
            ret, ref = run_ncnn(text, bin_bytes, [x], 1, [in_name], [out_name])
            assert ret == 0
            for run in range(2):  # the recording extract, then the plan's
                ex = net.create_extractor()
                ex.input(in_name, ncnn_c.Mat(x))
                ret, out = ex.extract(out_name)
                assert ret == 0, (shape, run)
                err = rel_l2(np.array(out), ref[0])
                assert err <= 1e-4, f"{name} {shape} extract {run}: relative L2 {err:.3g}"
    text_log = caplog.text
    assert "kept unchecked" in text_log, "no new shape took the unchecked path"
    assert len(net._native.plans.packs) > 0
    net.clear()
    assert len(net._native.plans.packs) == 0
