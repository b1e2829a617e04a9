"""8-bit input Mats on Vulkan: an int8 Mat (or a uint8 array, whose bytes Mat keeps as int8,
as the PyPI ncnn does) was uploaded as if its bytes were fp32 and came back all NaN with ret
0. The upload now widens it by value, as the CPU layers read it; both backends must agree
with the oracle fed the same values as fp32 (the PyPI ncnn itself aborts on 8-bit inputs).
"""

from __future__ import annotations

import numpy as np
import pytest
from oracle import GPU_GRID, make_bin, make_param, rng, run_ncnn

import ncnn_c

pytestmark = pytest.mark.gpu

WEIGHTS = [
    (rng("8bit-w").standard_normal((8, 3, 3, 3)).astype(np.float32) * 0.05, 0),
    (rng("8bit-b").standard_normal(8).astype(np.float32), 1),
]


def _model(shape) -> tuple[str, bytes]:
    return make_param("Convolution", {0: 8, 1: 3, 4: 1, 5: 1, 6: 8 * 3 * 3 * 3, 9: 1}, [shape]), make_bin(
        WEIGHTS
    )


def _run(param: str, weights: bytes, m, tmp_path, vulkan: bool, flags: dict) -> tuple[int, np.ndarray]:
    (tmp_path / "m.param").write_text(param)
    (tmp_path / "m.bin").write_bytes(weights)
    net = ncnn_c.Net()
    net.opt.use_vulkan_compute = vulkan
    for k, v in flags.items():
        setattr(net.opt, k, v)
    assert net.load_param(str(tmp_path / "m.param")) == 0
    assert net.load_model(str(tmp_path / "m.bin")) == 0
    ex = net.create_extractor()
    ex.input("in0", m)
    ret, out = ex.extract("out0")
    return ret, np.array(out, dtype=np.float32)


@pytest.mark.parametrize("grid", ["fp32", "fp32-pack", "fp16s-pack"])
@pytest.mark.parametrize("dtype", [np.uint8, np.int8])
def test_8bit_input_matches_its_values(dtype, grid, tmp_path):
    assert ncnn_c.get_gpu_count() > 0, "no Vulkan device (lavapipe is installed by ./run.sh)"
    shape = (3, 13, 17)
    a = (rng("8bit-x", dtype.__name__).integers(0, 120, shape)).astype(dtype)
    m = ncnn_c.Mat(a)
    assert m.elemsize == 1
    param, weights = _model(shape)
    ret, ref = run_ncnn(param, weights, [a.astype(np.float32)])
    assert ret == 0
    tol = 1e-4 if grid.startswith("fp32") else 1e-2
    for vulkan in (False, True):
        ret, got = _run(param, weights, m, tmp_path, vulkan, GPU_GRID[grid])
        assert ret == 0
        assert not np.isnan(got).any()
        err = np.linalg.norm(got - ref[0]) / np.linalg.norm(ref[0])
        assert err <= tol, f"vulkan={vulkan} {grid}: rel L2 {err:.3g}"
