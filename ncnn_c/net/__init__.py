"""Net and Extractor: the graph loaded from .param/.bin and the per-inference state.

* ``graph``: blobs, custom layer entries, the graph under construction, limits.
* ``parse``: text .param and binary .param.bin into a graph (never trusting a count).
* ``core``: ``Net``: layer creation and custom layers, loading through its backends.
* ``backend``: what the Net asks of a backend at load time (``Backend``, ``ModelLoad``).
* ``plan``: execution plans (layer order per requested blob, per-layer options), made once.
* ``view``: ``NetView``: what executors may read of a Net (the graph, its plans).
* ``state``: ``BlobState``: one extractor's blobs, handed to whichever executor runs.
* ``reference``: the numpy reference executor.
* ``native``: the native CPU plan executor (oneDNN).
* ``vulkan``: the Vulkan backend (device, GPU load, recording/replay); the only door to ``ncnn_c.gpu``.
* ``extractor``: ``Extractor``: inputs, extract, the choice of executor.

Every name importable from the former single module still is: ``from ncnn_c.net import Net``.
"""

from __future__ import annotations

from ..option import get_layer_option
from .core import Net
from .extractor import Extractor
from .graph import MAX_BLOB_COUNT, MAX_LAYER_COUNT, PARAM_MAGIC, Blob, CustomEntry, Graph
from .parse import MAX_PARAM_TEXT, open_reader
from .plan import LayerOptions, Plan
from .reference import needs_unpack as _needs_unpack
from .reference import unpack_fp32 as _unpack_fp32
from .vulkan import _gpu

__all__ = [
    "MAX_BLOB_COUNT",
    "MAX_LAYER_COUNT",
    "MAX_PARAM_TEXT",
    "PARAM_MAGIC",
    "Blob",
    "CustomEntry",
    "Extractor",
    "Graph",
    "LayerOptions",
    "Net",
    "Plan",
    "get_layer_option",
    "open_reader",
    "_gpu",
    "_needs_unpack",
    "_unpack_fp32",
]
