"""Cut an ncnn LLM decoder .param (Tencent/ncnn benchmark/models/llm) to its first N layers.

    python models/llm/reduce_decoder.py IN.param OUT.param N

Keeps every layer up to the residual add that ends decoder layer N-1 (the last BinaryOp
before the N-th SDPA's block), feeds that blob to the final RMSNorm (the file's last layer),
and drops the Split outputs and kv-cache inputs nothing kept reads. Layer types, params and
per-layer shapes are unchanged; only the depth shrinks.
"""

from __future__ import annotations

import sys


def reduce_decoder(lines: list[str], n: int) -> list[str]:
    layers = [line.split() for line in lines[2:] if line.strip()]
    sdpa = [i for i, p in enumerate(layers) if p[0] == "SDPA"]
    if n >= len(sdpa):
        return lines
    cut = max(i for i in range(sdpa[n]) if layers[i][0] == "BinaryOp")
    residual = layers[cut][4 + int(layers[cut][2])]
    final = layers[-1]
    final[4] = residual
    kept = layers[: cut + 1] + [final]
    read = {b for p in kept for b in p[4 : 4 + int(p[2])]}
    out = []
    for p in kept:
        nin, nout = int(p[2]), int(p[3])
        if p[0] in ("Split", "Input") and p is not final:
            tops = [t for t in p[4 + nin : 4 + nin + nout] if t in read]
            p = p[:2] + [str(nin), str(len(tops))] + p[4 : 4 + nin] + tops + p[4 + nin + nout :]
        out.append(p)
    blobs = {b for p in out for b in p[4 + int(p[2]) : 4 + int(p[2]) + int(p[3])]}
    head = [lines[0].strip(), f"{len(out)} {len(blobs)}"]
    return [h + "\n" for h in head] + [f"{p[0]:<24} {p[1]:<24} " + " ".join(p[2:]) + "\n" for p in out]


if __name__ == "__main__":
    src, dst, depth = sys.argv[1], sys.argv[2], int(sys.argv[3])
    with open(src) as f:
        text = f.readlines()
    with open(dst, "w") as f:
        f.writelines(reduce_decoder(text, depth))
