"""Detect objects with NanoDet-m (real COCO weights in models/): boxes, labels and scores.

    python examples/detect.py IMAGE_OR_FOLDER [--out DIR] [--threads N] [--gpu] [--repeat N]
    python examples/detect.py models/cat.jpg                # -> ./detections/cat-jpg.png

Each image is letterboxed to 320 on its longer side (padded to multiples of 32), run
through the network, and its three heads decoded as ncnn's ``examples/nanodet.cpp`` does
(score threshold 0.4, per-class NMS at IoU 0.5). It prints each image's latency and
detections and writes the picture with the boxes drawn (``ncnn_c.drawing``) as a PNG into
``--out`` (default ``./detections``). A folder runs every image in it, whatever their sizes.

The same as ``python -m ncnn_c detect``; the steps (``letterbox``, ``decode``, ``nms``,
``draw``) are functions of ``ncnn_c.tools.detect`` to reuse in your own code:

    from ncnn_c.tools.detect import NanoDet
    found = NanoDet("models/nanodet_m.param", "models/nanodet_m.bin")(bgr_uint8_hwc)
"""

from __future__ import annotations

import argparse
import os
import sys

from ncnn_c.tools import detect

MODELS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "models")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    detect.add_arguments(ap)
    ap.set_defaults(models=MODELS)
    return detect.run(ap.parse_args())


if __name__ == "__main__":
    sys.exit(main())
