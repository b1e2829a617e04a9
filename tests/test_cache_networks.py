"""A warm start compiles nothing, on real networks: benchmark models with random weights, on
lavapipe (CI), with ncnn's default options (fp16 storage and arithmetic, packing), each run in
a fresh process. The cold run saves the cache; the warm run loads it and must compile nothing
in load_model nor in the first inference (it never even loads the shader compiler), create
the same pipelines, and compute bit-identical outputs."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from _warm_child import spawn
from conftest import MODELS, ROOT

pytestmark = pytest.mark.gpu

BENCH = MODELS / "benchmark"

# small enough for the default run on lavapipe; the rest of the list runs with -m slow
QUICK = ["squeezenet", "mobilenet", "shufflenet"]
MORE = ["mobilenet_yolo", "blazeface", "nanodet_m", "yolo-fastestv2", "mobilenetv2_yolov3", "proxylessnasnet"]


def child(**kw) -> dict:
    return spawn(timeout=600, **kw)


def cold_then_warm(name: str, tmp_path) -> None:
    from ncnn_c.tools.randbin import random_weights

    param = BENCH / f"{name}.param"
    binf = tmp_path / f"{name}.bin"
    binf.write_bytes(random_weights(str(param), seed=11))
    path = tmp_path / f"{name}.vkcache"
    cold = child(param=str(param), bin=str(binf), save=str(path))
    assert cold["load_compiled"] > 0 and cold["shader_compiler_loaded"]
    warm = child(param=str(param), bin=str(binf), cache=str(path))
    assert warm["loaded"] == 0, warm["last_error"]
    assert warm["load_compiled"] == 0, f"{name}: load_model compiled {warm['load_compiled']} shaders"
    assert warm["infer_compiled"] == 0, f"{name}: the first inference compiled {warm['infer_compiled']}"
    assert warm["shader_compiler_loaded"] is False
    assert warm["spirv_hits"] > 0
    assert warm["load_pipelines"] == cold["load_pipelines"]
    assert warm["infer_pipelines"] == cold["infer_pipelines"]
    np.testing.assert_array_equal(np.array(warm["out"]), np.array(cold["out"]))


@pytest.mark.parametrize("name", QUICK)
def test_warm_start_compiles_nothing(name, tmp_path):
    cold_then_warm(name, tmp_path)


@pytest.mark.slow
@pytest.mark.parametrize("name", MORE)
def test_warm_start_compiles_nothing_more_networks(name, tmp_path):
    cold_then_warm(name, tmp_path)


@pytest.mark.slow
def test_one_cache_for_three_networks(tmp_path):
    """One file shared by three models (merging saves, as a fleet's processes would): each
    model's warm start from it compiles nothing."""
    from ncnn_c.tools.randbin import random_weights

    path = tmp_path / "shared.vkcache"
    nets = []
    for name in QUICK:
        param = BENCH / f"{name}.param"
        binf = tmp_path / f"{name}.bin"
        binf.write_bytes(random_weights(str(param), seed=11))
        nets.append((str(param), str(binf)))
        _merge_save(str(param), str(binf), path)  # cold, then merged into what the others left
    for param, binf in nets:
        warm = child(param=param, bin=binf, cache=str(path))
        assert warm["loaded"] == 0
        assert warm["load_compiled"] == 0 and warm["infer_compiled"] == 0, param


MERGE = r"""
import sys
sys.path.insert(0, {root!r})
import numpy as np
import ncnn_c as ncnn
from ncnn_c.tools import bench
cache = ncnn.PipelineCache(ncnn.get_gpu_device(0))
net = ncnn.Net()
net.opt.use_vulkan_compute = True
net.opt.pipeline_cache = cache
assert net.load_param({param!r}) == 0 and net.load_model({bin!r}) == 0
ex = net.create_extractor()
for name, shape in bench.resolve_shapes(bench.input_specs(net), None):
    ex.input(name, ncnn.Mat(np.zeros(tuple(reversed(shape)), np.float32)))
for name in net.output_names():
    assert ex.extract(name)[0] == 0
assert cache.save_cache({path!r}, merge=True) == 0
"""


def _merge_save(param: str, binf: str, path) -> None:
    code = MERGE.format(root=str(ROOT), param=param, bin=binf, path=str(path))
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr[-3000:]
