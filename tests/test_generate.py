"""``ncnn_c.tools.generate`` (issue 30's generate loop, ``python -m ncnn_c generate`` and
``examples/llm_generate.py``): the two-layer Qwen3 cut with random weights, its tied
embedding read from the head's .bin, driven through the same code with ncnn_c and with the
PyPI ncnn (the oracle): the logits of every step (prefill, then one token a step, the caches
extracted before out0 as kvcache.md feeds them), the greedy tokens, the sampler's rules, the
command line's output and its errors."""

from __future__ import annotations

import math
import subprocess
import sys
import types

import numpy as np
import pytest
from conftest import ROOT
from test_llm import REDUCED, TOL_FP32, _model

import ncnn_c
from ncnn_c.__main__ import main as cli
from ncnn_c.tools import generate as gen

ncnn = pytest.importorskip("ncnn")

PROMPT = [11, 400, 2048, 7, 93, 3000, 1, 512]
NEW = 12


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    return _model(tmp_path_factory.mktemp("gen"), REDUCED, REDUCED)


@pytest.fixture(scope="module")
def oracle(model):
    """The PyPI ncnn's greedy run, and its logits at every step."""
    llm = gen.LLM(ncnn, *model, threads=2)
    logits = []
    out = gen.generate(llm, PROMPT, NEW, _Recorder(gen.Sampler(), logits))
    return out.tokens, logits


class _Recorder:
    """A sampler that keeps the logits it is given."""

    def __init__(self, sampler, into: list) -> None:
        self.sampler, self.into = sampler, into

    def __call__(self, logits, seen=()):
        self.into.append(np.array(logits, np.float64))
        return self.sampler(logits, seen)


def _rel(a, b) -> float:
    return float(np.linalg.norm(np.asarray(a) - b) / np.linalg.norm(b))


@pytest.mark.parametrize("device", ["cpu", pytest.param("vulkan", marks=pytest.mark.gpu)])
def test_greedy_matches_the_pypi_ncnn(model, oracle, device):
    if device == "vulkan":
        assert ncnn_c.get_gpu_count() > 0, "no Vulkan device (lavapipe is installed by ./run.sh)"
    tokens_ref, logits_ref = oracle
    # teacher-forced: ncnn_c runs the oracle's tokens, so that every step compares
    llm = gen.LLM(ncnn_c, *model, device=device, threads=2)
    ids = list(PROMPT)
    for step, ref in enumerate(logits_ref):
        ours = llm.forward(ids)
        assert ours.shape == (4096,) and np.isfinite(ours).all()
        assert float(np.std(ref)) > 0.1  # the random weights make logits that say something
        assert _rel(ours, ref) <= TOL_FP32, step
        ids = [tokens_ref[step]]
    # and free-running greedy gives the oracle's tokens wherever its choice is not a near tie
    ours = gen.generate(gen.LLM(ncnn_c, *model, device=device, threads=2), PROMPT, NEW, gen.Sampler())
    for step, ref in enumerate(logits_ref):
        top2 = np.sort(ref)[-2:]
        if top2[1] - top2[0] < 1e-3 * np.std(ref):
            break  # a near tie: either choice is right, later steps differ
        assert ours.tokens[step] == tokens_ref[step], step
    assert len(ours.tokens) == NEW and all(0 <= t < 4096 for t in ours.tokens)


def test_tied_embedding_is_the_heads_weight_matrix(model):
    """Without an embed_token net, the embedding of token t is row t of the head's (vocab,
    hidden) matrix: read from the .bin directly (a 4-byte fp32 tag, then the floats)."""
    llm = gen.LLM(ncnn_c, *model, threads=1)
    raw = open(model[1].replace("_decoder", "_proj_out"), "rb").read()
    assert raw[:4] == b"\0\0\0\0"
    table = np.frombuffer(raw[4:], np.float32).reshape(4096, 1024)
    ids = [0, 5, 4095, 5]
    np.testing.assert_array_equal(llm.embed(ids), table[ids])
    with pytest.raises(gen.UsageError, match=r"in \[0, 4096\)"):
        llm.embed([4096])


def test_an_embed_token_net_beside_the_decoder_is_used(model, tmp_path):
    """NAME_embed_token.ncnn.param/.bin (the ncnn_llm layout) takes precedence over the tie."""
    import shutil

    from ncnn_c.tools.randbin import random_weights

    param, weights = model
    for src in (
        param,
        weights,
        param.replace("_decoder", "_proj_out"),
        weights.replace("_decoder", "_proj_out"),
    ):
        shutil.copy(src, tmp_path)
    emb = tmp_path / f"{REDUCED}_embed_token.ncnn.param"
    emb.write_text("7767517\n2 2\nInput in0 0 1 in0\nEmbed embed 1 1 in0 out0 0=1024 1=4096 2=0 3=4194304\n")
    (tmp_path / f"{REDUCED}_embed_token.ncnn.bin").write_bytes(random_weights(str(emb), seed=5))
    dec = tmp_path / f"{REDUCED}_decoder.ncnn.param"
    ours = gen.LLM(ncnn_c, str(dec), str(dec.with_suffix(".bin")), threads=1)
    theirs = gen.LLM(ncnn, str(dec), str(dec.with_suffix(".bin")), threads=1)
    tied = gen.LLM(ncnn_c, *model, threads=1)
    np.testing.assert_array_equal(ours.embed([3, 9]), theirs.embed([3, 9]))
    assert not np.array_equal(ours.embed([3, 9]), tied.embed([3, 9]))
    assert _rel(ours.forward(PROMPT), theirs.forward(PROMPT)) <= TOL_FP32


def test_missing_files_are_usage_errors(model, tmp_path):
    param, weights = model
    with pytest.raises(gen.UsageError, match="no such file"):
        gen.LLM(ncnn_c, param, str(tmp_path / "missing.bin"))
    lone = tmp_path / "x_decoder.ncnn.param"
    lone.write_text(open(param).read())
    with pytest.raises(gen.UsageError, match="no head beside the decoder"):
        gen.LLM(ncnn_c, str(lone), weights)
    (tmp_path / "x_proj_out.ncnn.param").write_text(open(param.replace("_decoder", "_proj_out")).read())
    with pytest.raises(gen.UsageError, match="no weights for the head"):
        gen.LLM(ncnn_c, str(lone), weights)
    with pytest.raises(gen.UsageError, match="expected a NAME_decoder"):
        gen.LLM(ncnn_c, str(ROOT / "models" / "squeezenet_v1.1.param"), weights)


def test_sampler_rules():
    logits = np.array([1.0, 3.0, 2.0, -1.0, 2.9])
    assert gen.Sampler()(logits) == 1  # greedy
    assert gen.Sampler(temperature=1.0, top_k=1)(logits) == 1
    # the penalty divides a seen positive logit (3.0 -> 1.5) and multiplies a negative one
    assert gen.Sampler(repetition_penalty=2.0)(logits, [1]) == 4
    assert gen.Sampler(repetition_penalty=2.0)(np.array([-1.0, -1.5]), [0]) == 1
    # top-k 2 samples only the two largest; a seed repeats its draws
    draws = [gen.Sampler(temperature=1.0, top_k=2, seed=s)(logits) for s in range(200)]
    assert set(draws) == {1, 4}
    again = [gen.Sampler(temperature=1.0, top_k=2, seed=s)(logits) for s in range(200)]
    assert draws == again
    # their frequencies follow the softmax of the two (e^3 : e^2.9)
    p1 = math.exp(3.0) / (math.exp(3.0) + math.exp(2.9))
    assert abs(draws.count(1) / 200 - p1) < 0.12
    # top-p: the smallest set reaching p: {1} alone holds 0.38 of the mass at temperature 1
    assert {gen.Sampler(temperature=1.0, top_p=0.3, seed=s)(logits) for s in range(50)} == {1}
    assert {gen.Sampler(temperature=1.0, top_p=0.6, seed=s)(logits) for s in range(100)} == {1, 4}
    # non-finite logits are never drawn; none finite at all is an error
    assert gen.Sampler(temperature=1.0, seed=1)(np.array([np.nan, 0.0, np.inf])) == 1
    with pytest.raises(gen.ModelError):
        gen.Sampler()(np.array([np.nan, np.nan]))
    for bad in ({"temperature": -1}, {"top_k": -1}, {"top_p": 0}, {"top_p": 1.5}, {"repetition_penalty": 0}):
        with pytest.raises(gen.UsageError):
            gen.Sampler(**bad)


def test_rope_and_mask():
    inv = gen.inv_freq(64, 1e6)
    assert inv[0] == 1.0 and np.isclose(inv[-1], 1e6 ** (-63 / 64))
    cos, sin = gen.rope(5, 3, inv)
    assert cos.shape == (3, 64) and np.allclose(cos[:, 0], np.cos([5, 6, 7]))
    assert np.allclose(cos**2 + sin**2, 1, atol=1e-6)
    # Llama 3's scaling: the fastest frequencies unchanged, the slowest divided by the factor,
    # the ones between in between, never faster than unscaled
    plain = gen.inv_freq(32, 500000.0)
    scaled = gen.inv_freq(32, 500000.0, gen.LLAMA3_SCALING["llama3.2"])
    assert scaled[0] == plain[0] and np.isclose(scaled[-1], plain[-1] / 32)
    assert (scaled <= plain).all() and (scaled >= plain / 32 - 1e-18).all()
    m = gen.causal_mask(3, 2)
    assert m.shape == (3, 5)
    assert np.isneginf(m).tolist() == [
        [False, False, False, True, True],
        [False, False, False, False, True],
        [False, False, False, False, False],
    ]
    assert not np.isneginf(gen.causal_mask(1, 7)).any()


def test_cli_prints_tokens_and_speeds(model, oracle, capsys):
    ids = " ".join(map(str, PROMPT))
    args = ["generate", *model, "--prompt-ids", ids, "--max-new-tokens", "4", "--threads", "2"]
    assert cli(args) == 0
    out = capsys.readouterr().out.splitlines()
    tokens = [int(t) for t in out[0].split(":")[1].split()]
    assert len(tokens) == 4 and tokens[0] == oracle[0][0]
    assert "8 prompt tokens, 4 generated; time to first token" in out[1]
    assert "decode" in out[1] and "tokens/s (cpu)" in out[1]
    # an eos among the first tokens stops there
    assert cli([*args, "--eos", str(tokens[1])]) == 0
    assert capsys.readouterr().out.splitlines()[0].split(":")[1].split() == [str(t) for t in tokens[:2]]


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--prompt-ids", "1 x"], "--prompt-ids takes integers"),
        (["--prompt-ids", "99999"], "token ids must be in"),
        (["--prompt-ids", "1", "--top-p", "2"], "top_p must be in"),
        (["--prompt-ids", "1", "--max-new-tokens", "0"], "max_new_tokens must be >= 1"),
        (["--prompt", "hello"], "--prompt needs --tokenizer"),
    ],
)
def test_cli_usage_errors(model, capsys, extra, message):
    assert cli(["generate", *model, *extra]) == 2
    assert message in capsys.readouterr().err


def test_cli_tokenizer(model, capsys, monkeypatch, tmp_path):
    """--prompt with --tokenizer: the tokenizers package encodes and decodes (a stand-in
    here); without the package, a usage error that says what to install."""
    path = tmp_path / "tokenizer.json"
    path.write_text("{}")

    class Tok:
        @staticmethod
        def from_file(p):
            assert p == str(path)
            return Tok()

        def encode(self, text):
            return types.SimpleNamespace(ids=[len(w) for w in text.split()])

        def decode(self, ids):
            return "|".join(map(str, ids))

    monkeypatch.setitem(sys.modules, "tokenizers", types.SimpleNamespace(Tokenizer=Tok))
    args = ["generate", *model, "--prompt", "ab cde f", "--tokenizer", str(path), "--max-new-tokens", "2"]
    assert cli(args) == 0
    out = capsys.readouterr().out.splitlines()
    tokens = out[0].split(":")[1].split()
    assert out[1] == "text: " + "|".join(tokens)
    assert "3 prompt tokens" in out[2]
    monkeypatch.setitem(sys.modules, "tokenizers", None)
    assert cli(args) == 2
    assert "pip install tokenizers" in capsys.readouterr().err


def test_example_script_runs(model):
    """examples/llm_generate.py is the same command."""
    ids = " ".join(map(str, PROMPT))
    r = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "llm_generate.py"), *model, "--prompt-ids", ids, "--max-new-tokens", "2"],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("tokens: ") and "time to first token" in r.stdout
