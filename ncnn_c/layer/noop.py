"""Noop: passes its blobs through unchanged (any number, in place)."""

from __future__ import annotations

from . import Layer


class Noop(Layer):
    def __init__(self) -> None:
        super().__init__()
        self.support_inplace = True

    def forward_inplace(self, bottom_top, opt) -> int:
        return 0
