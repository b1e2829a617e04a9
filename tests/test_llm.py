"""ncnn's LLM decoders (benchmark/models/llm, copies in models/llm/) with random weights: a
prefill of 16 tokens and 16 decode steps with the kv cache, fed as ncnn's benchncnn_llm.cpp
and kvcache.md do (ncnn_c.tools.bench's llm_* helpers drive both libraries), each step's
logits against the PyPI ncnn's. The caches are not compared: each backend returns them in its
own layout (the PyPI ncnn's x86 SDPA keeps K transposed) and gets them back unchanged.

CI runs the two-layer Qwen3 cut (models/llm/README in models/README.md) and every decoder cut
to two layers at test time; the full Qwen3-0.6B decoder is a ``slow`` test."""

from __future__ import annotations

import importlib.util
import re
import shutil

import numpy as np
import pytest
from conftest import MODELS

import ncnn_c
from ncnn_c.__main__ import main as cli
from ncnn_c.tools.bench import LLMSpec, llm_generate, llm_inputs, load_llm
from ncnn_c.tools.randbin import random_weights

ncnn = pytest.importorskip("ncnn")

LLM = MODELS / "llm"
REDUCED = "qwen3_0.6b_2layer"
DECODERS = sorted(
    p.name.split("_decoder")[0] for p in LLM.glob("*_decoder.ncnn.param") if "2layer" not in p.name
)
TOL_FP32 = 1e-3
TOL_FP16 = 2e-2
TOL_INT8 = 5e-2
PREFILL, DECODE = 16, 16


def _reducer():
    spec = importlib.util.spec_from_file_location("reduce_decoder", LLM / "reduce_decoder.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.reduce_decoder


def _model(tmp, name: str, proj_name: str | None = None, layers: int | None = None, fp16=False, int8=False):
    """The decoder param (cut to ``layers`` when given; with ``int8`` every Gemm quantized,
    18=2, its weights int8-stored) and its proj_out, with random weights, in ``tmp`` under the
    names bench's load_llm pairs: returns the decoder's (param, bin)."""
    param = tmp / f"{name}_decoder.ncnn.param"
    lines = (LLM / f"{name}_decoder.ncnn.param").read_text().splitlines(keepends=True)
    lines = _reducer()(lines, layers) if layers else lines
    if int8:
        lines = [line.rstrip("\n") + " 18=2\n" if line.startswith("Gemm") else line for line in lines]
    param.write_text("".join(lines))
    weights = tmp / f"{name}_decoder.ncnn.bin"
    weights.write_bytes(random_weights(str(param), seed=0, fp16=fp16, int8=int8))
    if proj_name is not None:
        proj = tmp / f"{name}_proj_out.ncnn.param"
        shutil.copy(LLM / f"{proj_name}_proj_out.ncnn.param", proj)
        (tmp / f"{name}_proj_out.ncnn.bin").write_bytes(random_weights(str(proj), seed=1))
    return str(param), str(weights)


def _generate(lib, param: str, weights: str, device="cpu", decode=DECODE) -> list[np.ndarray]:
    decoder, proj = load_llm(lib, param, weights, device, 2)
    return llm_generate(lib, decoder, proj, LLMSpec(param), PREFILL, decode)[0]


def _compare(ours: list[np.ndarray], theirs: list[np.ndarray], tol: float) -> list[float]:
    """rel L2 of each step (prefill first); every step within ``tol``, none trivially small."""
    assert len(ours) == len(theirs)
    errors = []
    for step, (a, b) in enumerate(zip(ours, theirs, strict=True)):
        assert a.shape == b.shape, (step, a.shape, b.shape)
        assert np.isfinite(b).all() and float(np.std(b)) > 0.1, (step, "the oracle's logits say nothing")
        errors.append(float(np.linalg.norm(a - b) / np.linalg.norm(b)))
    assert max(errors) <= tol, [f"{e:.1e}" for e in errors]
    return errors


@pytest.fixture(scope="module")
def reduced(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("llm")
    return _model(tmp, REDUCED, REDUCED)


@pytest.fixture(scope="module")
def reduced_oracle(reduced):
    return _generate(ncnn, *reduced)


def test_reduced_decoder_cpu(reduced, reduced_oracle):
    logits = _generate(ncnn_c, *reduced)
    assert logits[0].shape == (4096,)  # the cut's proj_out keeps 4096 of the vocabulary
    _compare(logits, reduced_oracle, TOL_FP32)


def test_reduced_decoder_fp16_weights(tmp_path):
    """fp16-stored weights (randbin --fp16, as ncnn's converters write LLMs), fp32 arithmetic:
    the decode steps' Gemms read the fp16 copy (Gemm.fp16_weights, _native/llm.c's gemm16)."""
    param, weights = _model(tmp_path, REDUCED, REDUCED, fp16=True)
    _compare(_generate(ncnn_c, param, weights), _generate(ncnn, param, weights), TOL_FP32)


def test_reduced_decoder_int8_gemm(tmp_path):
    """Every Gemm int8 (quantize_term 18=2: inputs quantized per row at run time, weights
    int8-stored with their scales). Most steps agree to ~3e-7 (the int32 products are exact);
    an input within an ulp of a rounding boundary can quantize one level apart in the two
    libraries and that level's error carries through the later steps (1.6e-2 at worst seen
    here), so the bar is int8's, not fp32's."""
    param, weights = _model(tmp_path, REDUCED, layers=None, int8=True)
    _compare(_generate(ncnn_c, param, weights), _generate(ncnn, param, weights), TOL_INT8)


def _vulkan_nets(param: str, weights: str, fp32: bool):
    """The decoder and its proj_out in Vulkan nets: fp32 options (bench's loader), or ncnn's
    defaults (fp16 storage and arithmetic, packing, where the device has them). Asserts that
    every layer got the device: no silent CPU fallback."""
    if fp32:
        nets = load_llm(ncnn_c, param, weights, "vulkan", 2)
    else:
        nets = []
        for p, w in (
            (param, weights),
            (param.replace("_decoder", "_proj_out"), weights.replace("_decoder", "_proj_out")),
        ):
            net = ncnn_c.Net()
            net.opt.num_threads = 2
            net.opt.use_vulkan_compute = True
            assert net.load_param(p) == 0 and net.load_model(w) == 0
            nets.append(net)
    on_cpu = {layer.type for net in nets for layer in net.layers() if layer.vkdev is None}
    assert not on_cpu, on_cpu
    return nets


@pytest.mark.gpu
@pytest.mark.parametrize(
    "fp32", [True, pytest.param(False, marks=pytest.mark.slow)], ids=["fp32", "default-fp16"]
)
def test_reduced_decoder_vulkan(reduced, reduced_oracle, fp32):
    """The prefill and the decode steps wholly on the GPU (RMSNorm, RotaryEmbed and SDPA with
    its kv cache included) against the PyPI ncnn's CPU steps: fp32 options within TOL_FP32
    (2e-6 measured on lavapipe), the default options within TOL_FP16 (fp16 storage rounds
    every blob, the kv cache included, between layers: 1.4e-3 measured on lavapipe)."""
    assert ncnn_c.get_gpu_count() > 0, "no Vulkan device (lavapipe is installed by ./run.sh)"
    decoder, proj = _vulkan_nets(*reduced, fp32)
    logits = llm_generate(ncnn_c, decoder, proj, LLMSpec(reduced[0]), PREFILL, DECODE)[0]
    _compare(logits, reduced_oracle, TOL_FP32 if fp32 else TOL_FP16)


def test_unfed_cache_inputs_run_as_empty(reduced):
    """The first step's cache inputs left unfed are empty Mats, as in ncnn (benchncnn_llm.cpp
    feeds none on its first run): the same hidden states as the PyPI ncnn's."""
    param, weights = reduced
    spec = LLMSpec(param)
    arrays = llm_inputs(spec, PREFILL, 0, np.random.default_rng(0))
    out = []
    for lib in (ncnn_c, ncnn):
        decoder, _ = load_llm(lib, param, weights, "cpu", 2)
        ex = decoder.create_extractor()
        mats = [lib.Mat(a).clone() for a in arrays]
        for name, m in zip(("in0", "in1", "in2", "in3"), mats, strict=True):
            ex.input(name, m)
        ret, hidden = ex.extract("out0")
        assert ret == 0
        out.append(np.array(hidden).copy())
    assert out[0].shape == (PREFILL, spec.hidden)
    assert np.linalg.norm(out[0] - out[1]) <= TOL_FP32 * np.linalg.norm(out[1])


# the main run cuts one decoder (Qwen3: q/k norms, the benchmark's LLM); the others, each a
# 5-30 s build and generate on two cores, run in the slow run CI also runs
@pytest.mark.parametrize(
    "name", [n if n == "qwen3_0.6b" else pytest.param(n, marks=pytest.mark.slow) for n in DECODERS]
)
def test_every_decoder_cut_to_two_layers(tmp_path, name):
    """Every decoder of ncnn's benchmark (its own layer mix: Qwen3's q/k norms, MiniCPM4's
    scaled residuals, Youtu's split rope heads), cut to two layers, last hidden state per
    step (no proj_out: the vocabulary head is the same Gemm everywhere)."""
    param, weights = _model(tmp_path, name, layers=2)
    _compare(_generate(ncnn_c, param, weights), _generate(ncnn, param, weights), TOL_FP32)


@pytest.mark.slow
def test_full_qwen3_decoder(tmp_path):
    """All 28 layers of Qwen3-0.6B (1.8 GB of fp32 weights), the cut's 4096-token proj_out."""
    param, weights = _model(tmp_path, "qwen3_0.6b", REDUCED)
    _compare(_generate(ncnn_c, param, weights), _generate(ncnn, param, weights), TOL_FP32)


LINE = r"qwen3_0\.6b_2layer_decoder  {} +prefill = (\d+\.\d\d) tokens/s  decode = (\d+\.\d\d) tokens/s"


def test_bench_llm(reduced, capsys):
    args = ["bench", "--llm", *reduced, "--threads", "1", "--prefill", "4", "--decode", "2", "--warmup", "0"]
    assert cli(args) == 0
    out = capsys.readouterr().out
    for lib in ("ncnn_c", "PyPI ncnn"):
        m = re.search(LINE.format(re.escape(lib)), out)
        assert m and float(m.group(1)) > 0 and float(m.group(2)) > 0, out
    assert "(4 prefill + 2 decode tokens, 1 loops, 1 threads, cpu)" in out
    # what a decode step reads: the cut's weights (125.9 MB decoder + 16.8 MB head in fp32,
    # random ones: no fp16 copies) and its kv cache, against the CPU's read rate measured then
    traffic = re.findall(
        r"decode reads (\d+\.\d+) GB a token \(weights 0\.143 GB, kv cache (\d+\.\d+) MB\): "
        r"(\d+\.\d+) GB/s, (\d+\.\d)% of (\d+\.\d) GB/s measured \(CPU read, 1 threads\)",
        out,
    )
    assert len(traffic) == 2, out
    for total, cache, achieved, share, rate in traffic:
        assert float(cache) > 0 and float(total) >= 0.143
        assert float(achieved) > 0 and float(rate) > 0
        # the share as printed, against the printed rates (rounded to 0.01 and 0.1 GB/s)
        expect = 100 * float(achieved) / float(rate)
        assert abs(float(share) - expect) <= 0.1 + 0.1 / float(rate) * expect


def test_bench_llm_without_pypi_ncnn(reduced, capsys, monkeypatch, tmp_path):
    # the PyPI ncnn runs in a child process; a stand-in module first on its path hides it
    (tmp_path / "ncnn.py").write_text("raise ImportError('hidden by the test')\n")
    import os

    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")]))
    assert cli(["bench", "--llm", *reduced, "--threads", "1", "--prefill", "2", "--decode", "1"]) == 0
    out = capsys.readouterr().out
    assert re.search(LINE.format("ncnn_c"), out), out
    assert "PyPI ncnn  not installed" in out


def test_bench_llm_rejects_a_model_without_kv_cache(capsys):
    assert cli(["bench", "--llm", str(MODELS / "squeezenet_v1.1.param")]) == 2
    assert "not an LLM decoder" in capsys.readouterr().err
