"""A CPU-only layer inside a Vulkan net: every input comes off a GPU layer and every output
goes through one, so the net must download, run the layer on the CPU and upload again.

Used by the layers a GPU net runs on the CPU (RNN, LSTM, GRU, MatMul, Einsum; RotaryEmbed and
SDPA until their Vulkan forms exist): the result must be the oracle's CPU result. The GPU
layers are identity Clips (no bounds)."""

from __future__ import annotations

import numpy as np
from oracle import (
    FP32_FLAGS,
    GPU_TOL_FP16,
    _apply,
    _fmt_param,
    _input_params,
    assert_close,
    make_bin,
    run_ncnn,
)


def sandwich_param(layer_type: str, params: dict, input_shapes, n_outputs: int) -> str:
    n_in = len(input_shapes)
    lines = ["7767517", f"{2 * n_in + 1 + n_outputs} {2 * n_in + 2 * n_outputs}"]
    for i, shape in enumerate(input_shapes):
        lines.append(f"Input in{i} 0 1 in{i} {_input_params(shape)}")
    for i in range(n_in):
        lines.append(f"Clip gpu_in{i} 1 1 in{i} x{i}")
    bottoms = " ".join(f"x{i}" for i in range(n_in))
    tops = " ".join(f"y{i}" for i in range(n_outputs))
    pstr = " ".join(_fmt_param(k, v) for k, v in sorted(params.items()))
    lines.append(f"{layer_type} op {n_in} {n_outputs} {bottoms} {tops} {pstr}".rstrip())
    for i in range(n_outputs):
        lines.append(f"Clip gpu_out{i} 1 1 y{i} out{i}")
    return "\n".join(lines) + "\n"


def check_in_vulkan_net(
    layer_type: str, params: dict, weights, inputs, n_outputs: int = 1, tol: float = 1e-5
) -> float:
    """The sandwich on ncnn_c's Vulkan net against the oracle's CPU fp32 run of the same net:
    with fp32 options within ``tol``, with the default options (fp16 storage and arithmetic where
    the device has them) within GPU_TOL_FP16. Asserts the Clips ran on the GPU and the layer on
    the CPU. Returns the max rel L2 error of the fp32 run."""
    import ncnn_c

    inputs = [np.asarray(x, dtype=np.float32) for x in inputs]
    text = sandwich_param(layer_type, params, [x.shape for x in inputs], n_outputs)
    bin_bytes = make_bin(weights)
    ret, ref = run_ncnn(text, bin_bytes, inputs, n_outputs)
    assert ret == 0, f"oracle failed on\n{text}"
    worst = {}
    for name, flags, bound in (("fp32", FP32_FLAGS, tol), ("default", {}, GPU_TOL_FP16)):
        net = ncnn_c.Net()
        _apply(net.opt, flags)
        net.opt.use_vulkan_compute = True
        assert net.load_param_mem(text) == 0 and net.load_model_mem(bin_bytes) == 0
        where = {layer.name: layer.vkdev is not None for layer in net.layers()}
        assert where["op"] is False and all(v for k, v in where.items() if k.startswith("gpu_")), where
        errs = []
        with net.create_extractor() as ex:
            for i, x in enumerate(inputs):
                assert ex.input(f"in{i}", ncnn_c.Mat(x)) == 0
            for i in range(n_outputs):
                ret, m = ex.extract(f"out{i}")
                assert ret == 0, f"{layer_type} in a Vulkan net ({name}): extract out{i} failed"
                got = np.array(m.numpy(), dtype=np.float32, copy=True)
                errs.append(assert_close(got, ref[i], bound, f"{layer_type} Vulkan net {name} out{i}"))
        net.clear()
        worst[name] = max(errs)
    return worst["fp32"]
