"""DeepCopy: the top is a copy of the bottom in new memory (never shared, unlike Split)."""

from __future__ import annotations

from . import Layer


class DeepCopy(Layer):
    def __init__(self) -> None:
        super().__init__()
        self.one_blob_only = True
        self.support_inplace = False

    def forward(self, bottom, top, opt) -> int:
        top.clone_from(bottom, opt.blob_allocator)
        return -100 if top.empty() else 0
