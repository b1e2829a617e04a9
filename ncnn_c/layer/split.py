"""Split: one blob fanned out to several consumers; every top shares the bottom's storage."""

from __future__ import annotations

from . import Layer


class Split(Layer):
    def __init__(self) -> None:
        super().__init__()
        self.one_blob_only = False
        self.support_inplace = False

    def forward(self, bottoms, tops, opt) -> int:
        # sharing is safe: the net clones a shared blob before an in-place consumer writes it
        for t in tops:
            t.share_from(bottoms[0])
        return 0
