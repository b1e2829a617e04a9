"""The PyPI ``ncnn.model_zoo``: pretrained networks by name, with their pre- and post-processing.

``get_model(name, target_size=..., num_threads=1, use_gpu=False)`` builds a model whose call
on a BGR uint8 image (h, w, 3) returns what ncnn's returns: class scores for the classifiers,
a list of ``utils.Detect_Object`` for the detectors. Model files come from ``model_store``
(downloaded once into ``$NCNN_HOME/models`` or ``~/.ncnn/models`` and checked by SHA-1).

Of ncnn's 20 models the 11 whose output is class scores or ncnn's detection rows
(``[label, prob, x1, y1, x2, y2]``) are here. ``ABSENT`` names the other 9 with the reason:
each decodes its raw heads with its own anchors, proposals, masks or heatmaps, which is not
ported; ``get_model`` raises ``NotImplementedError`` for them.
"""

from __future__ import annotations

from . import model_store
from .model_zoo import ABSENT, get_model, get_model_list

__all__ = ["ABSENT", "get_model", "get_model_list", "model_store"]
