"""Pipelines the shape hints rule out are deferred, not built in load_model.

A GPU layer holds one pipeline per blob form it serves (elempack 1 or 4 in and out). With
the .param's ``-23330`` shape hints the layer knows which form it will see and defers the
others (``gpu.pipeline.DeferredPipeline``): fewer pipelines per ``load_model``, warm or
cold. A wrong hint must still give the right result: the deferred pipeline is then built at
its first dispatch. Both are checked against the PyPI ncnn (CPU, fp32).
"""

from __future__ import annotations

import logging

import numpy as np
import pytest
from oracle import rel_l2, run_ncnn

import ncnn_c
from ncnn_c.gpu.pipeline import DeferredPipeline

TOL = 1e-5

# Pooling, Sigmoid and Softmax hold an elempack 1 and an elempack 4 pipeline, Interp one per
# (in, out) pair; the hints say 8 channels throughout (elempack 4)
HINTED = """7767517
5 5
Input            in       0 1 data -23330=4,3,16,12,8 0=16 1=12 2=8
Pooling          pool     1 1 data p -23330=4,3,8,6,8 0=0 1=2 2=2
Sigmoid          sig      1 1 p s -23330=4,3,8,6,8
Interp           up       1 1 s u -23330=4,3,16,12,8 0=2 1=2.0 2=2.0
Softmax          sm       1 1 u out -23330=4,3,16,12,8 0=0
"""


def _without_hints(text: str) -> str:
    return "\n".join(
        " ".join(t for t in line.split() if not t.startswith("-23330=")) for line in text.split("\n")
    )


@pytest.fixture(scope="module")
def vkdev():
    assert ncnn_c.get_gpu_count() > 0, "no Vulkan device (lavapipe is installed by ./run.sh)"
    return ncnn_c.get_gpu_device(0)


def _files(tmp_path, text: str):
    param = tmp_path / "m.param"
    param.write_text(text)
    model = tmp_path / "m.bin"
    model.write_bytes(b"")
    return str(param), str(model)


def _oracle(param: str, model: str, x: np.ndarray) -> np.ndarray:
    with open(param) as f, open(model, "rb") as g:
        ret, outs = run_ncnn(f.read(), g.read(), [x], input_names=["data"], output_names=["out"])
    assert ret == 0
    return outs[0]


def _gpu_net(vkdev, param: str, model: str):
    """fp32 blobs with packing on, on a fresh cache of its own (so stats count this net)."""
    net = ncnn_c.Net()
    net.opt.use_vulkan_compute = True
    net.opt.use_fp16_packed = net.opt.use_fp16_storage = net.opt.use_fp16_arithmetic = False
    net.opt.use_packing_layout = True
    net.set_vulkan_device(vkdev)
    net.opt.pipeline_cache = ncnn_c.PipelineCache(vkdev)
    assert net.load_param(param) == 0 and net.load_model(model) == 0
    return net


def _run(net, x: np.ndarray) -> np.ndarray:
    with net.create_extractor() as ex:
        ex.input("data", ncnn_c.Mat(x))
        ret, m = ex.extract("out")
        assert ret == 0
        return np.array(m.numpy(), dtype=np.float32, copy=True)


def _deferred(net) -> list[DeferredPipeline]:
    found = []
    for layer in net.layers():
        for value in vars(layer).values():
            items = value.values() if isinstance(value, dict) else [value]
            found += [p for p in items if isinstance(p, DeferredPipeline)]
    return found


def test_hints_defer_the_other_packing(vkdev, tmp_path):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((8, 12, 16)).astype(np.float32)
    hinted = _files(tmp_path, HINTED)
    (tmp_path / "plain").mkdir()
    plain = _files(tmp_path / "plain", _without_hints(HINTED))

    net = _gpu_net(vkdev, *hinted)
    ref_net = _gpu_net(vkdev, *plain)
    built = net.opt.pipeline_cache.stats()["pipelines_created"]
    built_plain = ref_net.opt.pipeline_cache.stats()["pipelines_created"]
    deferred = _deferred(net)
    # Pooling, Sigmoid, Softmax: the elempack 1 pipeline; Interp: the three pairs but (4, 4)
    assert len(deferred) == 6, deferred
    assert not _deferred(ref_net)
    assert built < built_plain

    out = _run(net, x)
    # the hints were right: nothing deferred was needed
    assert net.opt.pipeline_cache.stats()["pipelines_created"] == built
    assert not any(p.built for p in deferred)
    assert np.array_equal(out, _run(ref_net, x))
    assert rel_l2(out, _oracle(*hinted, x)) <= TOL
    net.clear()
    ref_net.clear()


def test_a_wrong_hint_builds_the_pipeline_at_first_use(vkdev, tmp_path, caplog):
    """The hints say 8 channels, the input has 6 (elempack 1): the deferred pipelines are
    built at the first dispatch and the result is still right."""
    rng = np.random.default_rng(1)
    x = rng.standard_normal((6, 12, 16)).astype(np.float32)
    files = _files(tmp_path, HINTED)
    net = _gpu_net(vkdev, *files)
    built = net.opt.pipeline_cache.stats()["pipelines_created"]
    with caplog.at_level(logging.INFO, logger="ncnn_c"):
        out = _run(net, x)
    assert "building a pipeline the shape hints did not predict" in caplog.text
    assert net.opt.pipeline_cache.stats()["pipelines_created"] > built
    assert any(p.built for p in _deferred(net))
    assert rel_l2(out, _oracle(*files, x)) <= TOL
    # a second run uses what the first built
    again = net.opt.pipeline_cache.stats()["pipelines_created"]
    assert np.array_equal(_run(net, x), out)
    assert net.opt.pipeline_cache.stats()["pipelines_created"] == again
    net.clear()


def test_depthwise_knows_its_channels_without_hints(vkdev, tmp_path):
    """A depthwise convolution's channels are its num_output: with 8 of them and packing on
    it defers its elempack 1 pipeline even without hints, and runs right."""
    text = """7767517
2 2
Input                  in   0 1 data 0=10 1=9 2=8
ConvolutionDepthWise   dw   1 1 data out 0=8 1=3 4=1 5=1 6=72 7=8
"""
    param, model = _files(tmp_path, text)
    rng = np.random.default_rng(2)
    weights = rng.standard_normal(72 + 8).astype(np.float32)
    with open(model, "wb") as f:
        f.write(np.zeros(1, np.uint32).tobytes() + weights[:72].tobytes() + weights[72:].tobytes())
    x = rng.standard_normal((8, 9, 10)).astype(np.float32)
    net = _gpu_net(vkdev, param, model)
    assert len(_deferred(net)) == 1
    out = _run(net, x)
    assert not _deferred(net)[0].built
    assert rel_l2(out, _oracle(param, model, x)) <= TOL
    net.clear()


def test_a_deferred_pipeline_that_cannot_be_built_fails_the_dispatch():
    from ncnn_c.errors import PipelineGone

    d = DeferredPipeline(lambda: None, "Test 'x' (nothing)")
    with pytest.raises(PipelineGone, match="could not be created"):
        d.resolve()
    assert not d.built
