"""``python -m ncnn_c generate``: generate tokens with one of ncnn's LLM decoders.

    python -m ncnn_c generate DECODER.param DECODER.bin (--prompt-ids "ID ..." | --prompt TEXT
                              --tokenizer tokenizer.json) [--max-new-tokens N]
                              [--temperature T] [--top-k K] [--top-p P]
                              [--repetition-penalty R] [--seed S] [--eos ID ...]
                              [--device cpu|vulkan] [--threads N] [--rope-theta THETA]

The files are those of an ncnn-converted decoder (ncnn's ``benchmark/models/llm`` layout, as
the ncnn_llm project writes them): ``NAME_decoder.ncnn.param/.bin``, its head
``NAME_proj_out.ncnn.param`` beside it (weights in ``NAME_proj_out.ncnn.bin``, or in
``NAME_embed_token.ncnn.bin`` when the head shares the embedding table), and the token
embedding ``NAME_embed_token.ncnn.param/.bin`` when there is one. Without an embedding net
the table is the head's weight matrix (tied embeddings, as Qwen3-0.6B, Qwen2.5-0.5B and
Llama-3.2-1B have): an Embed layer over the head's .bin.

Each step follows ncnn's kv-cache protocol (``docs/developer-guide/kvcache.md``): the
decoder takes the new tokens' embeddings (``in0``), the attention mask over past and new
positions (``in1``: 0, or -inf above the diagonal), the rotary cos / sin of the new
positions (``in2``, ``in3``) and, for each attention layer, the cache the step before
returned (empty Mats at the first step); it returns the hidden states (``out0``) and the
grown caches, extracted raw (type 1) and fed back unchanged. The prompt runs in one prefill
step; every later step is one token. The last position's hidden state goes through the head
to the logits, which are sampled: greedy by default (``--temperature 0``), else softmax at
the temperature, cut to the ``--top-k`` most likely and the smallest set reaching
``--top-p``, drawn from a generator seeded with ``--seed``; ``--repetition-penalty`` divides
the positive logits of tokens already seen and multiplies the negative ones first.

Prints the generated token ids (and the text, with ``--tokenizer``: a Hugging Face
``tokenizer.json``, read with the ``tokenizers`` package when it is installed), then the time
to the first token (the prefill, its head and sampling), the prefill's tokens/s and the
decode tokens/s.

Rotary frequencies: ``theta ** (-i / half)`` with the model's theta (a table by file-name
prefix, or ``--rope-theta``); Llama 3's frequency scaling for ``llama3.2_*``. Models whose
rope has other scaling (MiniCPM4's LongRoPE) run with the plain frequencies: their outputs
then drift from the original model's on long contexts.

Exit codes: 0 done, 1 the model failed to load or to run, 2 usage error.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .bench import EXIT_OK, LLMSpec, ModelError, UsageError, llm_step, proj_out_path, run_command

# rope theta by file-name prefix (the models of ncnn's benchmark/models/llm); others: 10000
ROPE_THETA = {
    "qwen3": 1e6,
    "qwen2.5": 1e6,
    "llama3.2": 500000.0,
    "tinyllama": 10000.0,
    "minicpm4": 10000.0,
    "hunyuan": 10000.0,
    "youtu_llm": 10000.0,
}
# Llama 3's rope scaling (factor, low_freq_factor, high_freq_factor, original context)
LLAMA3_SCALING = {"llama3.2": (32.0, 1.0, 4.0, 8192)}


def model_prefix(param: str | Path) -> str:
    """``qwen3_0.6b`` of ``.../qwen3_0.6b_decoder.ncnn.param``."""
    return Path(param).name.split("_decoder")[0].split(".ncnn")[0]


def _lookup(table: dict, prefix: str, default):
    best = [k for k in table if prefix.startswith(k)]
    return table[max(best, key=len)] if best else default


def inv_freq(half: int, theta: float, scaling: tuple[float, float, float, int] | None = None) -> np.ndarray:
    """The ``half`` rotary frequencies ``theta ** (-i / half)``, with Llama 3's scaling when
    given: wavelengths beyond the original context / low_freq_factor slowed by ``factor``,
    those below it / high_freq_factor kept, and a smooth blend between."""
    inv = theta ** (-np.arange(half, dtype=np.float64) / half)
    if scaling is None:
        return inv
    factor, low, high, context = scaling
    wavelen = 2 * math.pi / inv
    smooth = np.clip((context / wavelen - low) / (high - low), 0.0, 1.0)
    scaled = (1 - smooth) * inv / factor + smooth * inv
    return np.where(wavelen < context / high, inv, np.where(wavelen > context / low, inv / factor, scaled))


def rope(past: int, cur: int, inv: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """cos and sin (cur, half) of positions past .. past + cur - 1."""
    angle = np.arange(past, past + cur, dtype=np.float64)[:, None] * inv[None]
    return np.cos(angle).astype(np.float32), np.sin(angle).astype(np.float32)


def causal_mask(cur: int, past: int) -> np.ndarray:
    """(cur, past + cur): 0 where new position i may look (every past one and new ones up to
    itself), -inf after."""
    mask = np.zeros((cur, past + cur), np.float32)
    for i in range(cur - 1):
        mask[i, past + i + 1 :] = -np.inf
    return mask


@dataclass
class Sampler:
    """Chooses the next token from the logits: greedy at temperature 0 (or top_k 1)."""

    temperature: float = 0.0
    top_k: int = 0
    top_p: float = 1.0
    repetition_penalty: float = 1.0
    seed: int = 0
    rng: np.random.Generator = field(init=False, repr=False)

    def __post_init__(self) -> None:
        if not (self.temperature >= 0 and math.isfinite(self.temperature)):
            raise UsageError(f"temperature must be a finite number >= 0, not {self.temperature}")
        if self.top_k < 0:
            raise UsageError(f"top_k must be >= 0 (0: no cut), not {self.top_k}")
        if not 0 < self.top_p <= 1:
            raise UsageError(f"top_p must be in (0, 1], not {self.top_p}")
        if not (self.repetition_penalty > 0 and math.isfinite(self.repetition_penalty)):
            raise UsageError(f"repetition_penalty must be > 0, not {self.repetition_penalty}")
        self.rng = np.random.default_rng(self.seed)

    def __call__(self, logits: np.ndarray, seen: list[int] | tuple[int, ...] = ()) -> int:
        z = np.asarray(logits, np.float64).reshape(-1).copy()
        if not np.isfinite(z).any():
            raise ModelError("the logits hold no finite value")
        z[~np.isfinite(z)] = -np.inf
        if self.repetition_penalty != 1.0 and len(seen):
            ids = np.unique(np.asarray(seen, np.int64))
            ids = ids[(ids >= 0) & (ids < z.size)]
            z[ids] = np.where(z[ids] > 0, z[ids] / self.repetition_penalty, z[ids] * self.repetition_penalty)
        if self.temperature == 0 or self.top_k == 1:
            return int(np.argmax(z))
        if 0 < self.top_k < z.size:
            cut = np.partition(z, -self.top_k)[-self.top_k]
            z[z < cut] = -np.inf
        p = np.exp((z - z.max()) / self.temperature)
        p /= p.sum()
        if self.top_p < 1:
            order = np.argsort(-p, kind="stable")
            keep = np.searchsorted(np.cumsum(p[order]), self.top_p) + 1  # the smallest set reaching it
            p[order[keep:]] = 0
            p /= p.sum()
        return int(self.rng.choice(z.size, p=p))


def _gemm_head(param: Path) -> tuple[int, int]:
    """(vocab, hidden) of a proj_out .param: its one Gemm's constant N and K."""
    for line in param.read_text().splitlines()[2:]:
        p = line.split()
        if p and p[0] == "Gemm":
            kv = dict(item.split("=", 1) for item in p[6:] if "=" in item)
            return int(kv.get("8", 0)), int(kv.get("9", 0))
    raise UsageError(f"{param}: no Gemm: not a proj_out head")


def _first(*paths: Path) -> Path | None:
    return next((p for p in paths if p.is_file()), None)


class LLM:
    """A decoder, its head and its token embeddings, run with ``lib`` (``ncnn_c``, or the
    PyPI ``ncnn``, which the tests drive through the same code), fp32. Keeps the kv cache
    and the position between calls of ``forward``."""

    def __init__(
        self,
        lib,
        decoder_param: str,
        decoder_bin: str,
        device: str = "cpu",
        threads: int | None = None,
        rope_theta: float | None = None,
    ) -> None:
        from .bench import _load_fp32

        self.runtime = lib
        param = Path(decoder_param)
        for p in (param, Path(decoder_bin)):
            if not p.is_file():
                raise UsageError(f"no such file: {p}")
        if "_decoder" not in param.name:
            raise UsageError(f"{param}: expected a NAME_decoder.ncnn.param beside NAME_proj_out.ncnn.param")
        self.spec = LLMSpec(str(param))
        threads = threads or lib.Option().num_threads
        prefix = model_prefix(param)
        proj_param = proj_out_path(param)
        if proj_param is None:
            raise UsageError(
                f"no head beside the decoder: {param.name.replace('_decoder', '_proj_out')} is missing"
            )
        embed_param = param.with_name(param.name.replace("_decoder", "_embed_token"))
        embed_bin = embed_param.with_suffix(".bin")
        proj_bin = _first(proj_param.with_suffix(".bin"), embed_bin)
        if proj_bin is None:
            raise UsageError(f"no weights for the head: {proj_param.with_suffix('.bin')} (or {embed_bin})")
        self.vocab, hidden = _gemm_head(proj_param)
        if hidden != self.spec.hidden:
            raise UsageError(
                f"{proj_param}: the head takes {hidden} values, the decoder gives {self.spec.hidden}"
            )
        self.decoder = _load_fp32(lib, param, decoder_bin, device, threads)
        self.head = _load_fp32(lib, proj_param, str(proj_bin), device, threads)
        if embed_param.is_file() and embed_bin.is_file():
            self.embedding = _load_fp32(lib, embed_param, str(embed_bin), device, threads)
        else:  # tied: an Embed layer over the head's weight matrix (the same flagged blob)
            self.embedding = lib.Net()
            self.embedding.opt.num_threads = threads
            text = (
                f"7767517\n2 2\nInput in0 0 1 in0\n"
                f"Embed embed 1 1 in0 out0 0={hidden} 1={self.vocab} 2=0 3={hidden * self.vocab}\n"
            )
            if self.embedding.load_param_mem(text) != 0 or self.embedding.load_model(str(proj_bin)) != 0:
                raise ModelError(f"cannot read the embedding table from {proj_bin}")
        theta = rope_theta if rope_theta is not None else _lookup(ROPE_THETA, prefix, 10000.0)
        self.inv = inv_freq(self.spec.rope_half, theta, _lookup(LLAMA3_SCALING, prefix, None))
        self.reset()

    def reset(self) -> None:
        """Forget the context: the next ``forward`` is a prefill from position 0."""
        self.cache = None
        self.past = 0

    def embed(self, ids: list[int]) -> np.ndarray:
        """(len(ids), hidden) token embeddings."""
        bad = [i for i in ids if not 0 <= i < self.vocab]
        if bad:
            raise UsageError(f"token ids must be in [0, {self.vocab}): {bad[:5]}")
        ex = self.embedding.create_extractor()
        words = self.runtime.Mat(np.asarray(ids, np.int32).view(np.float32)).clone()
        ex.input("in0", words)
        ret, out = ex.extract("out0")
        if ret != 0:
            raise ModelError(f"the embedding failed ({ret})")
        return np.array(out).reshape(len(ids), self.spec.hidden).copy()

    def forward(self, ids: list[int]) -> np.ndarray:
        """Run ``ids`` after the context so far: the last position's logits (vocab,)."""
        if not ids:
            raise UsageError("no tokens to run")
        cur = len(ids)
        cos, sin = rope(self.past, cur, self.inv)
        arrays = [self.embed(ids), causal_mask(cur, self.past), cos, sin]
        logits, self.cache = llm_step(self.runtime, self.decoder, self.head, self.spec, arrays, self.cache)
        self.past += cur
        return logits


@dataclass
class Generation:
    tokens: list[int]
    first_token_s: float  # the prefill, its head and the first sampling
    prefill_tokens: int
    decode_s: list[float]  # each later step, its head and sampling

    @property
    def decode_tokens_per_s(self) -> float:
        return len(self.decode_s) / sum(self.decode_s) if self.decode_s else 0.0


def generate(
    llm: LLM, prompt: list[int], max_new_tokens: int, sampler: Sampler, eos=(), on_token=None
) -> Generation:
    """Up to ``max_new_tokens`` tokens after ``prompt`` (a fresh context), stopping after a
    token of ``eos``. ``on_token(id)`` is called as each comes."""
    if max_new_tokens < 1:
        raise UsageError("max_new_tokens must be >= 1")
    llm.reset()
    seen = list(prompt)
    tokens: list[int] = []
    times = []
    ids = list(prompt)
    for _ in range(max_new_tokens):
        t0 = time.perf_counter()
        token = sampler(llm.forward(ids), seen)
        times.append(time.perf_counter() - t0)
        tokens.append(token)
        seen.append(token)
        if on_token is not None:
            on_token(token)
        if token in eos:
            break
        ids = [token]
    return Generation(tokens, times[0], len(prompt), times[1:])


def _tokenizer(path: str | None):
    if path is None:
        return None
    try:
        from tokenizers import Tokenizer
    except ImportError as e:
        raise UsageError("--tokenizer needs the tokenizers package (pip install tokenizers)") from e
    if not Path(path).is_file():
        raise UsageError(f"no such file: {path}")
    return Tokenizer.from_file(path)


def _ids(text: str) -> list[int]:
    try:
        ids = [int(t) for t in text.replace(",", " ").split()]
    except ValueError as e:
        raise UsageError(f"--prompt-ids takes integers separated by spaces or commas: {e}") from e
    if not ids:
        raise UsageError("--prompt-ids is empty")
    return ids


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("param", help="NAME_decoder.ncnn.param (NAME_proj_out.ncnn.param beside it)")
    p.add_argument("model", help="NAME_decoder.ncnn.bin")
    what = p.add_mutually_exclusive_group(required=True)
    what.add_argument("--prompt-ids", help='the prompt as token ids: "151644 872 ..."')
    what.add_argument("--prompt", help="the prompt as text (needs --tokenizer)")
    p.add_argument("--tokenizer", help="a Hugging Face tokenizer.json (the tokenizers package reads it)")
    p.add_argument("--max-new-tokens", type=int, default=32)
    p.add_argument("--temperature", type=float, default=0.0, help="0: greedy (default)")
    p.add_argument("--top-k", type=int, default=0, help="sample among the K most likely (0: all)")
    p.add_argument("--top-p", type=float, default=1.0, help="... and the smallest set reaching P")
    p.add_argument("--repetition-penalty", type=float, default=1.0)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--eos", type=int, nargs="*", default=[], help="token ids that end the generation")
    p.add_argument("--device", choices=("cpu", "vulkan"), default="cpu")
    p.add_argument("--threads", type=int, default=None, help="num_threads (default: every core)")
    p.add_argument("--rope-theta", type=float, default=None, help="override the model's rope theta")


def generate_cli(args: argparse.Namespace) -> int:
    import ncnn_c

    tok = _tokenizer(args.tokenizer)
    if args.prompt is not None:
        if tok is None:
            raise UsageError("--prompt needs --tokenizer (or give --prompt-ids)")
        prompt = list(tok.encode(args.prompt).ids)
    else:
        prompt = _ids(args.prompt_ids)
    if args.threads is not None and args.threads < 1:
        raise UsageError("--threads must be >= 1")
    sampler = Sampler(args.temperature, args.top_k, args.top_p, args.repetition_penalty, args.seed)
    llm = LLM(ncnn_c, args.param, args.model, args.device, args.threads, args.rope_theta)
    out = generate(llm, prompt, args.max_new_tokens, sampler, set(args.eos))
    print("tokens:", " ".join(map(str, out.tokens)))
    if tok is not None:
        print("text:", tok.decode(out.tokens))
    print(
        f"{model_prefix(args.param)}: {len(prompt)} prompt tokens, {len(out.tokens)} generated;"
        f" time to first token {out.first_token_s * 1e3:.1f} ms"
        f" (prefill {len(prompt) / out.first_token_s:.1f} tokens/s),"
        f" decode {out.decode_tokens_per_s:.2f} tokens/s ({args.device})"
    )
    return EXIT_OK


def run(args: argparse.Namespace) -> int:
    """Entry point of the subcommand: maps failures to exit codes."""
    return run_command("generate", generate_cli, args)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m ncnn_c generate", description=__doc__.splitlines()[0])
    add_arguments(p)
    return run(p.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
