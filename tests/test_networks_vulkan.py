"""Whole networks on Vulkan (lavapipe in CI) against the PyPI ncnn on the CPU in fp32.

The same random-weight networks as tests/test_networks.py. With fp32 options every output
is within 1e-3; with ncnn's default GPU options (fp16 storage and arithmetic where the
device has them, packing) within 2e-2, top-1 equal on classifiers, detections matched by
class, score and IoU. Layers without a GPU form (the detection post-processing) run on the
CPU inside the GPU net, so every network here also covers the device handoff.
"""

from __future__ import annotations

import pytest
from test_networks import BENCH, BENCH_MODELS, ROOT, compare_network, detection_heads, weights

pytestmark = pytest.mark.gpu

# ncnn's defaults for a GPU net; load_model switches off what the device lacks
DEFAULT_GPU = dict(
    use_fp16_packed=True, use_fp16_storage=True, use_fp16_arithmetic=True, use_packing_layout=True
)
# lavapipe runs these for tens of seconds: the slow sweep takes them
HEAVY = {
    "vgg16",
    "alexnet",
    "resnet50",
    "yolov4-tiny",
    "squeezenet_ssd",
    "mobilenet_yolo",
    "efficientnetv2_b0",
}


TOL_FP32 = 1e-3
TOL_DEFAULT = 2e-2


def compare_gpu(param, bin_bytes: bytes, default_options: bool) -> dict:
    """One network on the GPU against the CPU fp32 oracle, with fp32 options (every output
    within TOL_FP32) or ncnn's default GPU options (TOL_DEFAULT). With default options a
    detection network is compared at its heads: the post-processing runs on the CPU (the
    same code test_networks.py checks detection by detection in fp32), and with fp16 heads its
    thresholds and NMS legitimately keep a different set of the borderline boxes. Returns
    {output name: rel L2} (0.0 for a matched detection output); tests/network_errors.py
    prints the same comparisons as a table."""
    if not default_options:
        return compare_network(param, bin_bytes, tol=TOL_FP32, use_vulkan=True)
    heads = detection_heads(param.read_text()) or None
    return compare_network(param, bin_bytes, tol=TOL_DEFAULT, use_vulkan=True, outputs=heads, **DEFAULT_GPU)


def _param(name: str):
    return pytest.param(name, marks=pytest.mark.slow) if name in HEAVY else name


@pytest.mark.parametrize("model", [_param(m) for m in BENCH_MODELS])
def test_network_vulkan_fp32(model):
    param = BENCH / f"{model}.param"
    compare_gpu(param, weights(str(param), False), default_options=False)


@pytest.mark.parametrize("model", [_param(m) for m in BENCH_MODELS])
def test_network_vulkan_default_options(model):
    # every network within 2e-2: randbin's calibrated weights keep activations near RMS 1, so
    # fp16 storage and arithmetic cost ~1e-3 (measured <= 4.0e-3 on lavapipe, FastestDet and
    # Yolo-Fastest the largest; <= 6.9e-3 with lavapipe posing as a discrete GPU, where the
    # convolutions run fp16 arithmetic too)
    param = BENCH / f"{model}.param"
    compare_gpu(param, weights(str(param), False), default_options=True)


def test_squeezenet_real_weights_vulkan_default_options():
    param = ROOT / "models" / "squeezenet_v1.1.param"
    bin_bytes = (ROOT / "models" / "squeezenet_v1.1.bin").read_bytes()
    compare_gpu(param, bin_bytes, default_options=True)
