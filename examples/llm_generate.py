"""Generate tokens with one of ncnn's LLM decoders: the kv-cache loop, greedy or sampled.

    python examples/llm_generate.py NAME_decoder.ncnn.param NAME_decoder.ncnn.bin \
        --prompt-ids "151644 872 198" [--max-new-tokens 32] [--temperature 0.7 --top-k 20]
    python examples/llm_generate.py ... --prompt "Hello" --tokenizer tokenizer.json

NAME_proj_out.ncnn.param (the vocabulary head) sits beside the decoder, with its weights in
NAME_proj_out.ncnn.bin or NAME_embed_token.ncnn.bin; NAME_embed_token.ncnn.param/.bin is
the token embedding when there is one, else the head's matrix is (tied embeddings). The
prompt runs as one prefill step, then one token a step: each step feeds the caches the one
before returned, as ncnn's docs/developer-guide/kvcache.md describes. Prints the tokens (the
text with --tokenizer), the time to the first token and the decode tokens/s.

The same as ``python -m ncnn_c generate``; the loop is ``ncnn_c.tools.generate`` to reuse:

    from ncnn_c.tools.generate import LLM, Sampler, generate
    import ncnn_c
    llm = LLM(ncnn_c, "qwen3_0.6b_decoder.ncnn.param", "qwen3_0.6b_decoder.ncnn.bin")
    out = generate(llm, prompt_ids, 32, Sampler(temperature=0.7, top_k=20), eos={151645})
    print(out.tokens, out.first_token_s, out.decode_tokens_per_s)
"""

from __future__ import annotations

import argparse
import sys

from ncnn_c.tools import generate


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    generate.add_arguments(ap)
    return generate.run(ap.parse_args())


if __name__ == "__main__":
    sys.exit(main())
