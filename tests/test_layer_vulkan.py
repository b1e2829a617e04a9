"""The Vulkan layers against the PyPI ncnn CPU oracle (fp32, elempack 1), layer by layer.

Each case builds a one-layer model, runs it through the oracle and through the
``<Type>_vulkan`` layer driven directly on the GPU (upload, forward_vk or
forward_inplace_vk, download), and compares by relative L2 error. A smaller set also
goes through ``ncnn_c.Net`` with ``use_vulkan_compute`` (which also exercises Input_vulkan).

Tolerance is 1e-5 everywhere: measured on lavapipe the worst case is ~3e-7 (different
summation order in convolution/average pooling, driver exp() in softmax and the fused
sigmoid/mish), so 1e-5 leaves room for other drivers without hiding indexing bugs,
which produce errors of order 1.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from oracle import (
    GPU_GRID,
    _weight_values,
    check_layer,
    check_layer_gpu,
    default_option,
    make_bin,
    make_param,
    rel_l2,
    run_ncnn,
)

pytestmark = pytest.mark.gpu

TOL = 1e-5


@pytest.fixture(scope="module")
def vkdev():
    from ncnn_c.gpu.device import get_gpu_count, get_gpu_device

    assert get_gpu_count() > 0, "no Vulkan device (lavapipe is installed by ./run.sh)"
    return get_gpu_device()


def _param_dict(params: dict):
    from ncnn_c.mat import Mat
    from ncnn_c.paramdict import ParamDict

    pd = ParamDict()
    for k, v in params.items():
        if isinstance(v, (list, tuple)):
            pd.set(k, Mat(np.asarray(v, dtype=np.float32)))
        else:
            pd.set(k, v)
    return pd


def run_gpu(vkdev, layer_type, params, weights, inputs, n_outputs=1, inplace=False):
    """Drive the Vulkan layer object directly; returns the downloaded tops as arrays."""
    from ncnn_c.gpu.command import VkCompute
    from ncnn_c.gpu.vkmat import VkMat
    from ncnn_c.layer import create_layer_vulkan
    from ncnn_c.mat import Mat
    from ncnn_c.modelbin import ModelBinFromMatArray

    opt = default_option(use_vulkan_compute=True)
    layer = create_layer_vulkan(layer_type)
    assert layer is not None and layer.support_vulkan
    layer.vkdev = vkdev
    assert layer.load_param(_param_dict(params)) == 0
    assert layer.load_model(ModelBinFromMatArray([Mat(_weight_values(w)) for w in weights])) == 0
    assert layer.create_pipeline(opt) == 0
    cmd = VkCompute(vkdev)
    try:
        assert layer.upload_model(cmd, opt) == 0
        bottoms = []
        for x in inputs:
            b = VkMat()
            cmd.record_upload(Mat(np.ascontiguousarray(x, dtype=np.float32)), b, opt)
            bottoms.append(b)
        if layer.one_blob_only:
            if inplace:
                ret, tops = layer.forward_inplace_vk(bottoms[0], cmd, opt), bottoms[:1]
            else:
                tops = [VkMat()]
                ret = layer.forward_vk(bottoms[0], tops[0], cmd, opt)
        else:
            tops = [VkMat() for _ in range(n_outputs)]
            ret = layer.forward_vk(bottoms, tops, cmd, opt)
        assert ret == 0
        outs = [Mat() for _ in tops]
        for t, o in zip(tops, outs, strict=True):
            cmd.record_download(t, o, opt)
        assert cmd.submit_and_wait() == 0
    finally:
        cmd.destroy()
        layer.destroy_pipeline(opt)
    return [np.array(o.numpy(), dtype=np.float32, copy=True) for o in outs]


def check_gpu(vkdev, layer_type, params, weights=(), inputs=(), n_outputs=1, inplace=False, tol=TOL):
    weights = list(weights)
    inputs = [np.asarray(x, dtype=np.float32) for x in inputs]
    text = make_param(layer_type, params, [x.shape for x in inputs], n_outputs)
    ret, ref = run_ncnn(text, make_bin(weights), inputs, n_outputs)
    assert ret == 0, f"oracle failed on\n{text}"
    got = run_gpu(vkdev, layer_type, params, weights, inputs, n_outputs, inplace)
    assert len(got) == len(ref)
    for i, (g, r) in enumerate(zip(got, ref, strict=True)):
        err = rel_l2(g, r)
        assert err <= tol, f"{layer_type} {params} out{i}: relative L2 {err:.3g} > {tol:g}"


def _rand(shape, seed):
    return np.random.default_rng(seed).uniform(-2, 2, shape).astype(np.float32)


SHAPES = {1: (37,), 2: (6, 11), 3: (5, 7, 9), 4: (3, 4, 5, 7)}


# -- Convolution -------------------------------------------------------------------------------
ACT_PARAMS = {0: None, 1: None, 2: [0.1], 3: [-0.5, 0.8], 4: None, 5: None, 6: [0.2, 0.5]}


def conv_case(
    vkdev, geometry: dict, bias=1, act=0, shape=(3, 11, 13), num_output=7, seed=0, fp16_weights=False
):
    kw = geometry.get(1, 1)
    kh = geometry.get(11, kw)
    params = dict(geometry)
    params.update({0: num_output, 5: bias, 6: kw * kh * shape[0] * num_output})
    if act:
        params[9] = act
        if ACT_PARAMS[act]:
            params[10] = ACT_PARAMS[act]
    weights = [_rand(params[6], seed + 1) * 0.5]
    if fp16_weights:
        # values fp16 holds exactly: the layer uploads them as halves
        weights = [weights[0].astype(np.float16).astype(np.float32)]
    if bias:
        weights.append((_rand(num_output, seed + 2), 1))
    check_gpu(vkdev, "Convolution", params, weights, [_rand(shape, seed)])


CONV_GEOMETRIES = [
    {1: 1},  # 1x1 stride 1: the flat variant
    {1: 1, 3: 2},  # 1x1 stride 2
    {1: 1, 4: 1, 18: 0.5},  # 1x1 with a border of pad_value (SqueezeNet's conv10 shape)
    {1: 3, 3: 2},  # SqueezeNet's conv1 shape
    {1: 3, 4: 1},
    {1: 3, 2: 2, 4: 2},  # dilation
    {1: 2, 11: 3, 3: 1, 13: 2, 4: 1, 15: 0, 14: 2, 16: 1, 18: -1.5},  # rectangular, asymmetric
    {1: 3, 3: 2, 4: -233},  # SAME_UPPER
    {1: 4, 4: -233},  # even kernel: odd SAME pad goes after
    {1: 4, 3: 2, 4: -234},  # SAME_LOWER
    {1: 3, 2: 2, 3: 3, 4: -234, 18: 0.25},
    {1: 5, 3: 2, 12: 2, 4: 1},  # dilation_h only
]


@pytest.mark.parametrize("geometry", CONV_GEOMETRIES, ids=str)
@pytest.mark.parametrize("bias", [0, 1])
def test_convolution_geometry(vkdev, geometry, bias):
    conv_case(vkdev, geometry, bias=bias, act=1, shape=(3, 11, 13) if bias else (8, 9, 7))


@pytest.mark.parametrize("act", range(7))
@pytest.mark.parametrize("geometry", [{1: 1}, {1: 3, 4: 1}], ids=str)
def test_convolution_activation(vkdev, act, geometry):
    conv_case(vkdev, geometry, bias=1, act=act, shape=(6, 9, 10), num_output=5)


# The shader tiles 8 output positions x 8 (1x1: 16) output channels per invocation and
# reads input rows as aligned vec4s: rows of several tiles with a partial last one, row
# starts at every alignment, planes that are no multiple of 8, and output channel counts
# that leave a partial group all need covering.
TILE_GEOMETRIES = [
    {1: 1},  # flat 1x1
    {1: 1, 4: 1},  # 1x1 with a border (conv10)
    {1: 3, 4: 1},  # 3x3 s1 (fire expand)
    {1: 3, 3: 2},  # 3x3 s2 (conv1)
    {1: 3, 2: 2, 4: 2},  # dilated
    {1: 5, 3: 3, 4: 1, 18: 0.5},  # wide window, stride 3
]


@pytest.mark.parametrize("geometry", TILE_GEOMETRIES, ids=str)
@pytest.mark.parametrize("shape,num_output", [((5, 17, 23), 19), ((9, 6, 7), 16), ((2, 3, 30), 33)])
def test_convolution_tiles(vkdev, geometry, shape, num_output):
    conv_case(vkdev, geometry, bias=1, act=1, shape=shape, num_output=num_output)


@pytest.mark.parametrize("geometry", TILE_GEOMETRIES, ids=str)
@pytest.mark.parametrize("shape,num_output", [((5, 17, 23), 19), ((2, 3, 30), 33)])
@pytest.mark.parametrize("fp16_weights", [False, True])
def test_convolution_gpu_tile_shape(vkdev, monkeypatch, geometry, shape, num_output, fp16_weights):
    """The small tiles discrete GPUs get, checked here on lavapipe (a CPU device gets big ones)."""
    from ncnn_c.layer.vulkan.convolution_vulkan import Convolution_vulkan

    monkeypatch.setattr(Convolution_vulkan, "_tile_shape", lambda self: (4, 2))
    conv_case(vkdev, geometry, bias=1, act=1, shape=shape, num_output=num_output, fp16_weights=fp16_weights)


@pytest.mark.parametrize("geometry", TILE_GEOMETRIES, ids=str)
@pytest.mark.parametrize("bias", [0, 1])
def test_convolution_fp16_weights(vkdev, geometry, bias):
    conv_case(vkdev, geometry, bias=bias, act=1, shape=(5, 17, 23), num_output=19, fp16_weights=True)


@pytest.mark.slow
@pytest.mark.parametrize(
    "k,s,d,pad,bias,act",
    list(itertools.product([1, 2, 3], [1, 2], [1, 2], [0, 1, -233, -234], [0, 1], range(7))),
)
def test_convolution_exhaustive(vkdev, k, s, d, pad, bias, act):
    conv_case(
        vkdev, {1: k, 2: d, 3: s, 4: pad}, bias=bias, act=act, shape=(4, 10, 9), num_output=3, seed=k + s
    )


# -- Pooling -----------------------------------------------------------------------------------
POOL_CASES = [
    {1: 3, 2: 2},  # SqueezeNet's max pooling
    {1: 2, 2: 1},
    {1: 2, 11: 3, 2: 2, 12: 1, 3: 1, 13: 0, 14: 0, 15: 2},  # rectangular, asymmetric pads
    {4: 1},  # global
    {7: 1, 8: 3, 18: 4},  # adaptive
    {7: 1, 8: 5, 18: -233},  # adaptive, keeps h
] + [{1: 3, 2: 2, 3: 1, 5: mode, 6: inc} for mode in range(4) for inc in (0, 1)]


@pytest.mark.parametrize("params", POOL_CASES, ids=str)
@pytest.mark.parametrize("pooling_type", [0, 1])
def test_pooling(vkdev, params, pooling_type):
    params = {0: pooling_type, **params}
    for i, shape in enumerate([(4, 11, 13), (3, 8, 7)]):
        check_gpu(vkdev, "Pooling", params, [], [_rand(shape, i)])


@pytest.mark.slow
@pytest.mark.parametrize(
    "ptype,k,s,pad,mode,inc",
    # ncnn requires pad < kernel
    [
        c
        for c in itertools.product([0, 1], [1, 2, 3, 4], [1, 2, 3], [0, 1, 2], range(4), [0, 1])
        if c[3] < c[1]
    ],
)
def test_pooling_exhaustive(vkdev, ptype, k, s, pad, mode, inc):
    params = {0: ptype, 1: k, 2: s, 3: pad, 5: mode, 6: inc}
    for shape in [(2, 9, 10), (3, 12, 7)]:
        check_gpu(vkdev, "Pooling", params, [], [_rand(shape, k)])


@pytest.mark.parametrize("params", POOL_CASES[:3] + POOL_CASES[4:], ids=str)
def test_pooling_tiles(vkdev, params):
    # windowed pooling computes 8 outputs of a row per invocation from vec4-aligned row
    # reads: rows of several tiles with a partial last one and rows starting at every alignment
    for pooling_type in (0, 1):
        check_gpu(vkdev, "Pooling", {0: pooling_type, **params}, [], [_rand((3, 19, 37), 7)])


def test_global_pooling_large(vkdev):
    # more elements per channel than one workgroup: exercises the strided fold
    for ptype in (0, 1):
        check_gpu(vkdev, "Pooling", {0: ptype, 4: 1}, [], [_rand((3, 29, 31), 5)])


@pytest.mark.parametrize("shape", [(2, 5, 5), (2, 3, 6), (3, 1, 1), (70, 2, 2)], ids=str)
def test_global_pooling_tail(vkdev, shape):
    # the shader reads channels as vec4s: plane sizes of every remainder mod 4, and more
    # channels than one workgroup
    for ptype in (0, 1):
        check_gpu(vkdev, "Pooling", {0: ptype, 4: 1}, [], [_rand(shape, 6) - 3])


# -- Concat ------------------------------------------------------------------------------------
CONCAT_CASES = [(dims, axis) for dims in range(1, 5) for axis in range(-dims, dims)]


@pytest.mark.parametrize("dims,axis", CONCAT_CASES)
def test_concat(vkdev, dims, axis):
    base = list(SHAPES[dims])
    inputs = []
    for i, n in enumerate((3, 1, 5)):
        shape = list(base)
        shape[axis] = n
        inputs.append(_rand(shape, i))
    check_gpu(vkdev, "Concat", {0: axis}, [], inputs)


# -- Softmax -----------------------------------------------------------------------------------
@pytest.mark.parametrize("dims,axis", CONCAT_CASES)
@pytest.mark.parametrize("inplace", [True, False])
def test_softmax(vkdev, dims, axis, inplace):
    check_gpu(vkdev, "Softmax", {0: axis, 1: 1}, [], [_rand(SHAPES[dims], dims) * 4], inplace=inplace)


# -- elementwise in-place layers ---------------------------------------------------------------
@pytest.mark.parametrize("dims", range(1, 5))
@pytest.mark.parametrize("inplace", [True, False])
def test_relu(vkdev, dims, inplace):
    for slope in (0.0, 0.1):
        check_gpu(vkdev, "ReLU", {0: slope}, [], [_rand(SHAPES[dims], dims)], inplace=inplace)


@pytest.mark.parametrize("dims", range(1, 5))
@pytest.mark.parametrize("inplace", [True, False])
def test_dropout(vkdev, dims, inplace):
    for scale in (1.0, 0.5):
        check_gpu(vkdev, "Dropout", {0: scale}, [], [_rand(SHAPES[dims], dims)], inplace=inplace)


@pytest.mark.parametrize("n", [1, 2, 3])
def test_split(vkdev, n):
    check_gpu(vkdev, "Split", {}, [], [_rand((5, 7, 9), n)], n_outputs=n)


# -- through the Net: Input_vulkan, blob handoff, in-place clones ------------------------------
NET_CASES = [
    (
        "Convolution",
        {0: 4, 1: 3, 4: -233, 5: 1, 6: 4 * 9 * 3, 9: 2, 10: [0.2]},
        [_rand(108, 1), (_rand(4, 2), 1)],
        [(3, 10, 11)],
        1,
    ),
    ("Pooling", {0: 1, 1: 3, 2: 2, 3: 1}, [], [(4, 11, 13)], 1),
    ("Pooling", {0: 1, 4: 1}, [], [(4, 11, 13)], 1),
    ("ReLU", {0: 0.1}, [], [(2, 5, 7)], 1),
    ("Dropout", {0: 0.5}, [], [(2, 5, 7)], 1),
    ("Softmax", {0: -1, 1: 1}, [], [(3, 5, 7)], 1),
    ("Concat", {0: 0}, [], [(2, 5, 7), (3, 5, 7)], 1),
    ("Split", {}, [], [(2, 5, 7)], 2),
]


NET_OPTIONS = {"light": dict(lightmode=True), "nolight": dict(lightmode=False)}


@pytest.mark.parametrize(
    "layer_type,params,weights,shapes,n_outputs", NET_CASES, ids=[c[0] for c in NET_CASES]
)
@pytest.mark.parametrize("options", NET_OPTIONS.values(), ids=NET_OPTIONS.keys())
def test_net_vulkan(vkdev, layer_type, params, weights, shapes, n_outputs, options):
    inputs = [_rand(s, i) for i, s in enumerate(shapes)]
    errs = check_layer(
        layer_type, params, weights, inputs, n_outputs, paths=("net",), use_vulkan=True, **options
    )
    assert "net" in errs


@pytest.mark.parametrize(
    "layer_type,params,weights,shapes,n_outputs", NET_CASES, ids=[c[0] for c in NET_CASES]
)
def test_net_vulkan_grid(vkdev, layer_type, params, weights, shapes, n_outputs):
    """The same cases over the whole option grid (fp16 storage/arithmetic, packing)."""
    inputs = [_rand(s, i) for i, s in enumerate(shapes)]
    errs = check_layer_gpu(layer_type, params, weights, inputs, n_outputs)
    assert set(errs) == set(GPU_GRID)


@pytest.mark.parametrize("fp32_flags", [True, False], ids=["fp32", "default"])
def test_squeezenet_pipelines(vkdev, models_dir, fp32_flags):
    """SqueezeNet v1.1 end to end on the GPU; identical layers must share pipelines."""
    import ncnn
    from oracle import FP32_FLAGS, _apply

    import ncnn_c

    param, model = str(models_dir / "squeezenet_v1.1.param"), str(models_dir / "squeezenet_v1.1.bin")
    x = _rand((3, 227, 227), 0) * 0.5

    ref_net = ncnn.Net()
    _apply(ref_net.opt, FP32_FLAGS)
    assert ref_net.load_param(param) == 0 and ref_net.load_model(model) == 0
    with ref_net.create_extractor() as ex:
        ex.input("data", ncnn.Mat(x).clone())
        ret, m = ex.extract("prob")
        ref = np.array(m, dtype=np.float32, copy=True)

    net = ncnn_c.Net()
    if fp32_flags:
        _apply(net.opt, FP32_FLAGS)
    net.opt.use_vulkan_compute = True
    assert net.load_param(param) == 0 and net.load_model(model) == 0
    assert all(layer.vkdev is not None for layer in net.layers())
    # 3 general convolutions (3x3 s2, 3x3 s1, 1x1 padded), the flat 1x1, max and global
    # pooling, concat, softmax, and the net's layout conversion; with packing on (default)
    # the two poolings also get their elempack 4 variants, and the packed convolutions
    # use convolution_pack4 (the 16-output squeeze 1x1s with a smaller channel tile)
    assert net.opt.pipeline_cache.stats()["pipelines_created"] == (9 if fp32_flags else 13)
    with net.create_extractor() as ex:
        ex.input("data", ncnn_c.Mat(x))
        ret, m = ex.extract("prob")
    assert ret == 0
    # default options run fp16 storage and arithmetic: the per-network bar is 2e-2
    # (measured on lavapipe: 4e-3; the PyPI ncnn's own Vulkan path: 3e-3)
    assert rel_l2(np.array(m.numpy()), ref) <= (TOL if fp32_flags else 2e-2)
    net.clear()


@pytest.mark.parametrize(
    "layer_type", ["Input", "Convolution", "ReLU", "Pooling", "Concat", "Split", "Dropout", "Softmax"]
)
def test_without_device_stays_cpu(layer_type):
    """A GPU layer class given no device creates no pipelines and still works on the CPU."""
    from ncnn_c.layer import create_layer_vulkan

    layer = create_layer_vulkan(layer_type)
    assert layer is not None and layer.support_vulkan and layer.vkdev is None
    params = {"Convolution": {0: 2, 1: 1, 6: 6}, "Pooling": {1: 2}}.get(layer_type, {})
    assert layer.load_param(_param_dict(params)) == 0
    if layer_type == "Convolution":
        from ncnn_c.mat import Mat
        from ncnn_c.modelbin import ModelBinFromMatArray

        assert layer.load_model(ModelBinFromMatArray([Mat(_rand(6, 0))])) == 0
    assert layer.create_pipeline(default_option()) == 0
    assert layer._pipelines == []


@pytest.mark.parametrize(
    "layer_type",
    ["Convolution", "ConvolutionDepthWise", "Convolution1D", "Deconvolution", "DeconvolutionDepthWise"],
)
def test_dynamic_weight_layers_stay_on_the_cpu(layer_type):
    """Weights arriving as a blob (param 19) have no GPU form: the layer says so at load_param."""
    from ncnn_c.layer import create_layer_vulkan
    from ncnn_c.paramdict import ParamDict

    for dynamic in (0, 1):
        layer = create_layer_vulkan(layer_type)
        pd = ParamDict()
        pd.set(0, 4)
        pd.set(1, 3)
        pd.set(6, 4 * 4 * 9)
        pd.set(28 if layer_type.startswith("Deconvolution") else 19, dynamic)  # dynamic_weight
        assert layer.load_param(pd) == 0
        assert layer.support_vulkan is (not dynamic)
