"""Einsum (fp32): sums of products over 1-D to 4-D blobs, in ncnn's subset of einsum.

The equation is param 0, an int array of character codes. ``"ii"`` alone is the trace of a
2-D blob (the first h diagonal elements; a 1-element blob). Otherwise ``lhs->rhs``: one
comma-separated token per input, one letter per axis of that input (numpy order, outermost
first), letters ``i`` to ``x``; a letter in two places means those axes agree (the diagonal
when both are in one token). The output is ``i``, ``ij``, ``ijk`` or ``ijkl`` (pnnx writes
equations so), each of its letters taken from some input; every other letter is summed over.
Other equations (a permuted or empty output, an empty token, ellipses) fail at load_param, as
in ncnn.
"""

from __future__ import annotations

import logging
from typing import ClassVar

import numpy as np

from . import Layer, Param
from ._blob import store_array

log = logging.getLogger("ncnn_c")


class Einsum(Layer):
    PARAMS: ClassVar[tuple[Param, ...]] = (Param(0, "equation", kind="ints"),)
    equation: np.ndarray

    def __init__(self) -> None:
        super().__init__()
        self.one_blob_only = False
        self.support_inplace = False
        self.lhs_tokens: list[str] = []
        self.rhs_token = ""
        self.trace = False

    def check_params(self) -> int:
        codes = [int(c) for c in self.equation]
        if not codes or any(not 32 < c < 127 for c in codes):
            log.error("Einsum %r: equation 0=%s is not an ASCII equation", self.name, codes[:16])
            return -1
        text = "".join(chr(c) for c in codes)
        self.trace = text == "ii"
        if self.trace:
            self.lhs_tokens, self.rhs_token = ["ii"], "ii"
            return 0
        if "->" not in text:
            log.error("Einsum %r: equation 0=%r has no '->'", self.name, text)
            return -1
        lhs, rhs = text.split("->", 1)
        tokens = lhs.split(",")
        bad = any(not 1 <= len(t) <= 4 or any(not "i" <= ch <= "x" for ch in t) for t in tokens)
        if bad or rhs not in ("i", "ij", "ijk", "ijkl") or any(ch not in lhs for ch in rhs):
            log.error(
                "Einsum %r: equation 0=%r: inputs need 1-4 letters of i..x each, the output is "
                "i, ij, ijk or ijkl of letters the inputs have",
                self.name,
                text,
            )
            return -1
        self.lhs_tokens, self.rhs_token = tokens, rhs
        return 0

    def forward(self, bottoms, tops, opt) -> int:
        if len(bottoms) != len(self.lhs_tokens) or not tops:
            log.error(
                "Einsum %r: equation has %d inputs, got %d", self.name, len(self.lhs_tokens), len(bottoms)
            )
            return -1
        arrays = []
        sizes: dict[str, int] = {}
        for n, (m, token) in enumerate(zip(bottoms, self.lhs_tokens, strict=True)):
            t = m.tensor()
            if m.elempack != 1 or m.dims != len(token):
                log.error(
                    "Einsum %r: input %d must be a %d-D fp32 blob for %r, got dims %d",
                    self.name,
                    n,
                    len(token),
                    token,
                    m.dims,
                )
                return -1
            for letter, size in zip(token, t.shape, strict=True):
                if not self.trace and sizes.setdefault(letter, size) != size:
                    log.error(
                        "Einsum %r: axis %r is %d long in input %d but %d before",
                        self.name,
                        letter,
                        size,
                        n,
                        sizes[letter],
                    )
                    return -1
            arrays.append(t)

        if self.trace:
            if arrays[0].shape[0] > arrays[0].shape[1]:
                log.error(
                    "Einsum %r: the trace needs a 2-D blob no taller than wide, got %s",
                    self.name,
                    arrays[0].shape,
                )
                return -1
            result = np.trace(arrays[0]).reshape(1).astype(np.float32)
        else:
            spec = ",".join(self.lhs_tokens) + "->" + self.rhs_token
            result = np.einsum(spec, *arrays, optimize=len(arrays) > 1)

        return store_array(tops[0], result, opt)
