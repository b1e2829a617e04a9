"""The graph a Net holds: blobs (named edges with producer/consumer layers), the
custom-layer registry entries, and the graph under construction while a param file loads.

Also the two helpers every stage uses to talk about and call layers: ``desc`` names a
layer in log lines, ``call_hook`` turns an exception from (user) layer code into text.
"""

from __future__ import annotations

from ..layer import Layer
from ..mat import Mat

PARAM_MAGIC = 7767517
# Sanity limits, checked before anything is allocated from an untrusted count.
MAX_LAYER_COUNT = 1 << 20
MAX_BLOB_COUNT = 1 << 22


class Blob:
    """A named edge of the graph: ``producer``/``consumer`` are layer indexes (-1: none)."""

    def __init__(self, name: str = "") -> None:
        self.name = name
        self.producer = -1
        self.consumer = -1
        self.shape = Mat()

    def __repr__(self) -> str:
        return f"<Blob {self.name!r} producer={self.producer} consumer={self.consumer}>"


class CustomEntry:
    """A registered custom layer: its type name, creator and optional destroyer."""

    __slots__ = ("name", "creator", "destroyer", "userdata")

    def __init__(self, name, creator, destroyer, userdata) -> None:
        self.name = name
        self.creator = creator
        self.destroyer = destroyer
        self.userdata = userdata

    def create(self) -> Layer | None:
        return self.creator() if self.userdata is None else self.creator(self.userdata)

    def destroy(self, layer) -> None:
        if self.destroyer is None:
            return
        if self.userdata is None:
            self.destroyer(layer)
        else:
            self.destroyer(layer, self.userdata)


class Graph:
    """Blobs and layers under construction; handed to the Net only when complete."""

    def __init__(self) -> None:
        self.blobs: list[Blob] = []
        self.by_name: dict[str, int] = {}
        self.layers: list[Layer] = []
        self.entries: list[CustomEntry | None] = []


def desc(i: int, layer: Layer) -> str:
    return f"layer #{i} {layer.name!r} ({layer.type})"


def call_hook(fn, *args):
    """A layer hook's int result; an exception from (user) layer code becomes its text."""
    try:
        return fn(*args)
    except Exception as e:  # noqa: BLE001 - layer code must not break a loader
        return f"raised {type(e).__name__}: {e}"
