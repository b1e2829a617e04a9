"""ncnn's C API from Python: the ``ncnn_*`` functions of ``libncnn_c.so`` over integer handles.

    python examples/handle_api.py [IMAGE] [--models DIR] [--vulkan]

``ncnn_c.capi`` offers every function of ncnn's ``c_api.h`` with the same name and arguments;
handles (nets, Mats, options, extractors) are plain ints and are destroyed explicitly, as in C.
Out-parameters become return values (``ret, mat = ncnn_extractor_extract(ex, name)``). The
same program written in C is ``examples/c/squeezenet.c``. This one classifies an image with
SqueezeNet and prints the top 5.
"""

from __future__ import annotations

import argparse
import ctypes
import os
import sys

import numpy as np
from PIL import Image

from ncnn_c import capi

MODELS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "models")
MODEL = "squeezenet_v1.1"
# c_api.h's pixel types: NCNN_MAT_PIXEL_X2Y(NCNN_MAT_PIXEL_RGB, NCNN_MAT_PIXEL_BGR)
NCNN_MAT_PIXEL_RGB, NCNN_MAT_PIXEL_BGR = 1, 2
NCNN_MAT_PIXEL_RGB2BGR = NCNN_MAT_PIXEL_RGB | (NCNN_MAT_PIXEL_BGR << 16)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("image", nargs="?", default=os.path.join(MODELS, "256-ncnn.png"))
    ap.add_argument("--models", default=MODELS)
    ap.add_argument("--vulkan", action="store_true", help="run on Vulkan device 0")
    args = ap.parse_args()

    print("ncnn C API version", capi.ncnn_version())
    net = capi.ncnn_net_create()
    opt = capi.ncnn_net_get_option(net)  # the net's own option: flags set here change the net
    capi.ncnn_option_set_num_threads(opt, 2)
    if args.vulkan:
        capi.ncnn_net_set_vulkan_device(net, 0)
        capi.ncnn_option_set_use_vulkan_compute(opt, 1)
    if (
        capi.ncnn_net_load_param(net, os.path.join(args.models, MODEL + ".param")) != 0
        or capi.ncnn_net_load_model(net, os.path.join(args.models, MODEL + ".bin")) != 0
    ):
        print("failed to load the model", file=sys.stderr)
        capi.ncnn_net_destroy(net)
        return 1
    print(
        "inputs:", [capi.ncnn_net_get_input_name(net, i) for i in range(capi.ncnn_net_get_input_count(net))]
    )
    print(
        "outputs:",
        [capi.ncnn_net_get_output_name(net, i) for i in range(capi.ncnn_net_get_output_count(net))],
    )

    with Image.open(args.image) as im:
        rgb = np.ascontiguousarray(np.asarray(im.convert("RGB")))
    h, w = rgb.shape[:2]
    # raw pixels go in as bytes with their row stride, as a C caller passes a pointer
    mat = capi.ncnn_mat_from_pixels_resize(rgb.tobytes(), NCNN_MAT_PIXEL_RGB2BGR, w, h, w * 3, 227, 227, 0)
    capi.ncnn_mat_substract_mean_normalize(mat, [104.0, 117.0, 123.0], None)

    ex = capi.ncnn_extractor_create(net)
    capi.ncnn_extractor_input(ex, "data", mat)
    ret, out = capi.ncnn_extractor_extract(ex, "prob")
    if ret != 0:
        print("extract failed", file=sys.stderr)
        return 1
    n = capi.ncnn_mat_get_w(out)
    # ncnn_mat_get_data is the address of the Mat's floats, as in C; copy them before destroying it
    scores = np.array((ctypes.c_float * n).from_address(capi.ncnn_mat_get_data(out)), np.float32)

    for handle, destroy in (
        (out, capi.ncnn_mat_destroy),
        (mat, capi.ncnn_mat_destroy),
        (ex, capi.ncnn_extractor_destroy),
        (net, capi.ncnn_net_destroy),
    ):
        destroy(handle)

    with open(os.path.join(args.models, "synset_words.txt"), encoding="utf-8") as f:
        labels = [line.partition(" ")[2].strip() for line in f]
    print(f"{n} classes; top 5:")
    for i in np.argsort(-scores)[:5]:
        print(f"  {scores[i]:.4f}  class {int(i):3d}  {labels[i]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
