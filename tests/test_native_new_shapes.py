"""New input shapes on the native plan, as users run it (not strict): against the PyPI ncnn.

A net's second and later input shapes are planned from inferred shapes (``shapes.py``), with
no numpy recording, reuse the weights its earlier plans packed (``plan.Packs``) and, when
their plan has the structure of one already checked against the numpy layers
(``NativePlan.signature``), run unchecked. That is what a user's first extract of a new size
gets, so it is compared with the oracle here: every extract of every size, an intermediate
blob and the output, in both orders, light mode on and off.
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
# an intermediate blob of each: a Concat's (SqueezeNet's fire5), a residual add's, a Slice's half
MIDDLE = {"squeezenet_real": "fire5/concat", "mobilenet_v2": "block_4_4", "shufflenet_v2": "branch4_2"}
# letterbox-like sizes: square, smaller, a landscape and a portrait one, the first again
SIZES = [(3, 224, 224), (3, 160, 160), (3, 192, 256), (3, 256, 160), (3, 224, 224)]


@pytest.mark.parametrize("lightmode", [True, False])
@pytest.mark.parametrize("name", sorted(NETS))
def test_new_shapes_match_ncnn(name, lightmode, monkeypatch, caplog):
    monkeypatch.delenv("NCNN_C_NATIVE_STRICT", raising=False)
    monkeypatch.delenv("NCNN_C_NATIVE_CHECK", raising=False)
    param, binf, in_name, out_name = NETS[name]
    text = param.read_text()
    bin_bytes = binf.read_bytes() if binf else random_weights(str(param), seed=7, input_shape=(3, 224, 224))
    net = ncnn_c.Net()
    _apply(net.opt, FP32_FLAGS)
    net.opt.num_threads = 2
    net.opt.lightmode = lightmode
    mid = MIDDLE[name]
    assert net.load_param_mem(text) == 0 and net.load_model_mem(bin_bytes) == 0
    g = np.random.default_rng(3)
    with caplog.at_level(logging.INFO, logger="ncnn_c"):
        for shape in SIZES:
            x = g.standard_normal(shape).astype(np.float32)
            ret, ref = run_ncnn(text, bin_bytes, [x], 2, [in_name], [mid, out_name])
            assert ret == 0
            want = dict(zip((mid, out_name), ref, strict=True))
            # the first extract of the size (its plan is made), then the plan's, in the
            # other order
            for run, names in enumerate([(mid, out_name), (out_name, mid)]):
                ex = net.create_extractor()
                ex.input(in_name, ncnn_c.Mat(x))
                for blob in names:
                    ret, out = ex.extract(blob)
                    assert ret == 0, (shape, run, blob)
                    err = rel_l2(np.array(out), want[blob])
                    assert err <= 1e-4, f"{name} {shape} extract {run} {blob}: relative L2 {err:.3g}"
    text_log = caplog.text
    assert "from inferred shapes" in text_log, "no new shape was planned from inferred shapes"
    assert len(net._native.plans.packs) > 0
    net.clear()
    assert len(net._native.plans.packs) == 0


def _squeezenet() -> ncnn_c.Net:
    param, binf, _in, _out = NETS["squeezenet_real"]
    net = ncnn_c.Net()
    _apply(net.opt, FP32_FLAGS)
    net.opt.num_threads = 1
    assert net.load_param(str(param)) == 0 and net.load_model(str(binf)) == 0
    return net


def _extract(net: ncnn_c.Net, x: np.ndarray) -> tuple[int, np.ndarray]:
    ex = net.create_extractor()
    ex.input("data", ncnn_c.Mat(x))
    ret, out = ex.extract("prob")
    return ret, np.array(out)


def test_a_wrong_shape_rule_is_caught_at_the_recording(monkeypatch, caplog):
    """A rule that disagrees with the numpy layers is found by the next recording: in strict
    mode (the test suite's) an error, otherwise the net plans from recordings alone and its
    results stay right."""
    from ncnn_c.net.native import shapes

    def wrong(layer, b, opt):
        c, h, w = b[0]
        return [(c, h + 1, w)]

    monkeypatch.setitem(shapes.RULES, "Pooling", wrong)
    x = np.random.default_rng(1).standard_normal((3, 227, 227)).astype(np.float32)
    monkeypatch.setenv("NCNN_C_NATIVE_STRICT", "1")
    with caplog.at_level(logging.ERROR, logger="ncnn_c"):
        ret, _ = _extract(_squeezenet(), x)
    assert ret != 0 and "AssertionError: native plan: the shape rules are wrong" in caplog.text
    caplog.clear()

    monkeypatch.delenv("NCNN_C_NATIVE_STRICT")
    text, binb = NETS["squeezenet_real"][0].read_text(), NETS["squeezenet_real"][1].read_bytes()
    net = _squeezenet()
    with caplog.at_level(logging.INFO, logger="ncnn_c"):
        for size in (227, 160, 192):
            x = np.random.default_rng(size).standard_normal((3, size, size)).astype(np.float32)
            ret, out = _extract(net, x)
            assert ret == 0
            _, ref = run_ncnn(text, binb, [x], 1, ["data"], ["prob"])
            assert rel_l2(out, ref[0]) <= 1e-4
    assert "shape rules are wrong" in caplog.text
    assert "from inferred shapes" not in caplog.text
    assert not net._native.plans.trusts_shapes()
    net.clear()  # new weights, new trust
    assert net._native.plans.trusts_shapes()


def test_inferred_shapes_equal_the_recorded_ones():
    """The rules against a recording, blob by blob, on every network of this module: every
    blob the plan makes has an inferred shape (none left to a recording)."""
    from ncnn_c.net.native.plan import shape_of
    from ncnn_c.net.native.shapes import infer

    for name, (param, binf, in_name, _out) in NETS.items():
        text = param.read_text()
        bin_bytes = (
            binf.read_bytes() if binf else random_weights(str(param), seed=7, input_shape=(3, 224, 224))
        )
        net = ncnn_c.Net()
        _apply(net.opt, FP32_FLAGS)
        net.opt.lightmode = False
        assert net.load_param_mem(text) == 0 and net.load_model_mem(bin_bytes) == 0
        for h, w in ((224, 224), (161, 203)):
            x = np.random.default_rng(h).standard_normal((3, h, w)).astype(np.float32)
            ex = net.create_extractor()
            ex.input(in_name, ncnn_c.Mat(x))
            view = net._view
            got = {}
            for b, blob in enumerate(view.blobs):
                ret, m = ex.extract(blob.name)
                assert ret == 0, (name, blob.name)
                got[b] = shape_of(m)
            order = list(range(len(view.layers)))
            opts = view.layer_options(net.opt).per_layer
            src = next(b for b, blob in enumerate(view.blobs) if blob.name == in_name)
            inferred = infer(view.layers, order, {src: got[src]}, opts)
            assert inferred.keys() == got.keys(), (name, sorted(set(got) - set(inferred)))
            assert inferred == got, name


def _decoder(tmp_path):
    """The two-layer Qwen3 cut with fp16-stored random weights (its Gemms read fp16 copies)."""
    from ncnn_c.tools.bench import LLMSpec

    param = tmp_path / "qwen3_0.6b_2layer_decoder.ncnn.param"
    param.write_text((MODELS / "llm" / "qwen3_0.6b_2layer_decoder.ncnn.param").read_text())
    weights = tmp_path / "qwen3_0.6b_2layer_decoder.ncnn.bin"
    weights.write_bytes(random_weights(str(param), seed=0, fp16=True))
    return str(param), str(weights), LLMSpec(str(param))


def test_decoder_prefills_of_new_lengths_match_ncnn(tmp_path, monkeypatch, caplog):
    """A decoder fed prompts of new lengths (the kv caches empty): from the second length on
    each prefill is planned from inferred shapes (Gemm, RMSNorm, RotaryEmbed, the kv-head
    repeat, SDPA with an empty past), and its hidden states and one decode step after it
    are the PyPI ncnn's."""
    from ncnn_c.tools.bench import llm_inputs, llm_step, load_llm

    monkeypatch.delenv("NCNN_C_NATIVE_STRICT", raising=False)
    monkeypatch.delenv("NCNN_C_NATIVE_CHECK", raising=False)
    param, weights, spec = _decoder(tmp_path)
    nets = {lib: load_llm(lib, param, weights, "cpu", 2)[0] for lib in (ncnn_c, ncnn)}
    with caplog.at_level(logging.INFO, logger="ncnn_c"):
        for cur in (6, 9, 4, 13, 9):
            out = {}
            for lib, net in nets.items():
                prefill = llm_inputs(spec, cur, 0, np.random.default_rng(cur))
                hidden, cache = llm_step(lib, net, None, spec, prefill, None)
                step = llm_inputs(spec, 1, cur, np.random.default_rng(100 + cur))
                after, _ = llm_step(lib, net, None, spec, step, cache)
                out[lib] = (hidden, after)
            for ours, theirs in zip(out[ncnn_c], out[ncnn], strict=True):
                assert rel_l2(ours, theirs) <= 1e-4, cur
    assert caplog.text.count("from inferred shapes") >= 3, caplog.text


def test_decoder_inferred_shapes_equal_the_recorded_ones(tmp_path):
    """The transformer rules against a recording, blob by blob: a prefill with empty caches
    and a decode step with the caches it returned; every blob gets an inferred shape."""
    from ncnn_c.net.native.plan import shape_of
    from ncnn_c.net.native.shapes import infer
    from ncnn_c.tools.bench import llm_inputs, load_llm

    param, weights, spec = _decoder(tmp_path)
    net = load_llm(ncnn_c, param, weights, "cpu", 1)[0]
    net.opt.lightmode = False
    view = net._view
    index = {blob.name: b for b, blob in enumerate(view.blobs)}
    cache = None
    for cur, past in ((7, 0), (1, 7)):
        arrays = llm_inputs(spec, cur, past, np.random.default_rng(cur))
        ex = net.create_extractor()
        mats = [ncnn_c.Mat(a).clone() for a in arrays]
        for name, m in zip(("in0", "in1", "in2", "in3"), mats, strict=True):
            ex.input(name, m)
        for i, name in enumerate(spec.cache_in):
            ex.input(name, cache[i] if cache is not None else ncnn_c.Mat())
        got = {}
        for b, blob in enumerate(view.blobs):
            ret, m = ex.extract(blob.name)
            assert ret == 0, blob.name
            got[b] = shape_of(m)
        cache = [ex.extract(name, 1)[1] for name in spec.cache_out]
        given = {index[n]: got[index[n]] for n in ("in0", "in1", "in2", "in3", *spec.cache_in)}
        order = list(range(len(view.layers)))
        inferred = infer(view.layers, order, given, view.layer_options(net.opt).per_layer)
        missing = sorted(view.blobs[b].name for b in set(got) - set(inferred) if got[b][0])
        assert not missing, (cur, missing)
        assert {b: s for b, s in inferred.items() if b in got} == {
            b: s for b, s in got.items() if b in inferred
        }
