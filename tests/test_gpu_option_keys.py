"""Cache keys stay exact when options change shader code (issue 6): every option set that
changes a shader gets its own SPIR-V entry, option sets that do not change it share one,
equal layers share one pipeline, and the option-free layout conversion is compiled once."""

from __future__ import annotations

import numpy as np
import pytest
from oracle import GPU_GRID

import ncnn_c
from ncnn_c.option import SHADER_OPTION_BITS

pytestmark = pytest.mark.gpu

# two identical ReLUs and two convolutions of one geometry (different weights)
PARAM = """7767517
6 6
Input in 0 1 data 0=9 1=7 2=8
ReLU r1 1 1 data a 0=0.1
Convolution c1 1 1 a b 0=8 1=3 4=1 5=0 6=576
ReLU r2 1 1 b c 0=0.1
Convolution c2 1 1 c d 0=8 1=3 4=1 5=0 6=576
Softmax s 1 1 d out 0=0 1=1
"""


def _weights() -> bytes:
    g = np.random.default_rng(0)
    out = b""
    for _ in range(2):
        out += b"\0\0\0\0" + (g.standard_normal(576) * 0.1).astype("<f4").tobytes()
    return out


def _load(cache, **flags):
    net = ncnn_c.Net()
    net.opt.use_vulkan_compute = True
    for k, v in flags.items():
        setattr(net.opt, k, v)
    net.opt.pipeline_cache = cache
    assert net.load_param_mem(PARAM) == 0 and net.load_model_mem(_weights()) == 0
    x = np.random.default_rng(1).standard_normal((8, 7, 9)).astype(np.float32)
    with net.create_extractor() as ex:
        ex.input("data", ncnn_c.Mat(x))
        ret, out = ex.extract("out")
    assert ret == 0
    return net, np.array(out.numpy())


@pytest.fixture(scope="module")
def vkdev():
    assert ncnn_c.get_gpu_count() > 0
    return ncnn_c.get_gpu_device(0)


def _entries(cache, shader):
    from ncnn_c.gpu import compiler

    index = compiler.shader_index(shader)
    return {bits: rec.spirv for (i, bits), rec in cache._spirv.items() if i == index}


def test_equal_layers_share_one_pipeline(vkdev):
    cache = ncnn_c.PipelineCache(vkdev)
    net, _ = _load(cache)
    # relu, convolution_pack4 (8 -> 8 channels, packed), softmax and its pack4 form (both made
    # when packing is on), the layout conversion: one pipeline each, shared by equal layers
    assert cache.stats()["pipelines_created"] == 5
    r1, r2 = (layer for layer in net.layers() if layer.type == "ReLU")
    assert r1.pipeline_relu.vk_pipeline == r2.pipeline_relu.vk_pipeline
    c1, c2 = (layer for layer in net.layers() if layer.type == "Convolution")
    assert c1.pipeline_convolution.vk_pipeline == c2.pipeline_convolution.vk_pipeline
    net.clear()


def test_option_sets_never_share_spirv_they_should_not(vkdev):
    cache = ncnn_c.PipelineCache(vkdev)
    seen_bits = set()
    for flags in GPU_GRID.values():
        net, _ = _load(cache, **flags)
        seen_bits.add(net.opt.shader_bits())
        net.clear()
    for shader in ("relu", "softmax"):
        entries = _entries(cache, shader)
        # one entry per distinct (device-masked) shader bit set, none shared
        assert set(entries) == seen_bits, shader
    # the convolution picks its shader per packing (convolution / convolution_pack4) and, on a
    # CPU device, may drop fp16 arithmetic (faster there): its keys are the net's bits or those
    # bits without arithmetic, never anything else, and fp32 and fp16 builds are distinct entries
    arith = 1 << SHADER_OPTION_BITS.index("use_fp16_arithmetic")
    allowed = seen_bits | {b & ~arith for b in seen_bits}
    conv_keys = set(_entries(cache, "convolution")) | set(_entries(cache, "convolution_pack4"))
    assert conv_keys <= allowed and len(conv_keys) >= 2
    relu = _entries(cache, "relu")
    fp32 = ncnn_c.Option()
    fp16 = ncnn_c.Option()
    for name, flags in (("fp32", fp32), ("fp16s", fp16)):
        for k, v in GPU_GRID[name].items():
            setattr(flags, k, v)
    from ncnn_c.net.vulkan.api import mask_device_features

    mask_device_features(fp32, vkdev)
    mask_device_features(fp16, vkdev)
    # fp32 and fp16 storage of the same shader are two entries with different code
    assert relu[fp32.shader_bits()] != relu[fp16.shader_bits()]
    # the layout conversion reads no option macro: one entry for every option set
    assert len(_entries(cache, "packing")) == 1


def test_options_that_change_no_shader_share_everything(vkdev):
    cache = ncnn_c.PipelineCache(vkdev)
    net, out1 = _load(cache, lightmode=True, num_threads=1)
    net.clear()
    before = dict(cache.stats())
    net, out2 = _load(cache, lightmode=False, num_threads=2, use_winograd_convolution=False)
    net.clear()
    after = cache.stats()
    assert after["compiled"] == before["compiled"]
    assert after["pipelines_created"] == before["pipelines_created"]
    np.testing.assert_array_equal(out1, out2)
