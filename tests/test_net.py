"""Net / Extractor: loading from every source, rejection of bad files, the forward
recursion with custom layers, light mode, featmask, the Vulkan scheduling (with a fake
GPU), and whole-SqueezeNet parity against the PyPI ncnn oracle."""

from __future__ import annotations

import gc
import io
import pathlib
import struct
import subprocess
import sys
import types
import warnings
import weakref

import numpy as np
import pytest

import ncnn_c
import ncnn_c.net.parse as parse_mod
import ncnn_c.net.vulkan.api as vkf_mod
from ncnn_c.datareader import DataReader, DataReaderFromEmpty, DataReaderFromMemory
from ncnn_c.layer import CUSTOM_BIT, LAYER_TYPES, Layer, create_layer_cpu, layer_to_index
from ncnn_c.mat import Mat
from ncnn_c.net import Net

ROOT = pathlib.Path(__file__).resolve().parents[1]
MODELS = ROOT / "models"
PARAM = MODELS / "squeezenet_v1.1.param"
UNFUSED = MODELS / "squeezenet_v1.1_unfused.param"
PARAM_BIN = MODELS / "squeezenet_v1.1.param.bin"
BIN = MODELS / "squeezenet_v1.1.bin"
FP32_FLAGS = dict(
    use_vulkan_compute=False,
    use_fp16_packed=False,
    use_fp16_storage=False,
    use_fp16_arithmetic=False,
    use_packing_layout=False,
    use_bf16_storage=False,
)


# -- stand-in layers -----------------------------------------------------------------------
CREATED: list = []  # weakrefs to Mats the stand-ins produce (light-mode checks)


def _out(arr) -> Mat:
    return Mat.from_tensor(np.ascontiguousarray(arr, dtype=np.float32))


def _fill(top: Mat, arr) -> None:
    top.share_from(_out(arr))
    CREATED.append(weakref.ref(top))


class AddOne(Layer):
    def __init__(self):
        super().__init__()
        self.one_blob_only = True

    def forward(self, bottom, top, opt):
        _fill(top, np.asarray(bottom) + 1)
        return 0


class Scale2(Layer):
    """In-place: doubles its blob (the net must clone when the data is shared)."""

    def __init__(self):
        super().__init__()
        self.one_blob_only = True
        self.support_inplace = True
        self.calls = 0

    def forward_inplace(self, bottom_top, opt):
        self.calls += 1
        bottom_top.tensor()[...] *= 2
        return 0


class Dup(Layer):
    def forward(self, bottoms, tops, opt):
        a = np.asarray(bottoms[0])
        _fill(tops[0], a)
        _fill(tops[1], a)
        return 0


class Sum2(Layer):
    def load_param(self, pd):
        self.k = pd.get(0, 1.0)
        return 0

    def forward(self, bottoms, tops, opt):
        _fill(tops[0], np.asarray(bottoms[0]) + self.k * np.asarray(bottoms[1]))
        return 0


class Failing(Layer):
    def __init__(self):
        super().__init__()
        self.one_blob_only = True

    def forward(self, bottom, top, opt):
        return -7


class Raising(Failing):
    def forward(self, bottom, top, opt):
        raise ZeroDivisionError("boom")


GRAPH = """7767517
6 7
Input in 0 1 data 0=4 1=3 2=2
AddOne a 1 1 data x
Dup d 1 2 x x1 x2
Scale2 s 1 1 x1 y
AddOne b 1 1 x2 z
Sum2 c 2 1 y z out 0=1.0
"""


def custom_net(text=GRAPH, light=True) -> Net:
    net = Net()
    net.opt.lightmode = light
    for name, cls in (
        ("AddOne", AddOne),
        ("Scale2", Scale2),
        ("Dup", Dup),
        ("Sum2", Sum2),
        ("Failing", Failing),
        ("Raising", Raising),
    ):
        assert net.register_custom_layer(name, cls) == 0
    assert net.load_param_mem(text) == 0
    assert net.load_model(DataReaderFromEmpty()) == 0
    return net


def data_in(seed=0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((2, 3, 4)).astype(np.float32)


# -- graph and forward ---------------------------------------------------------------------
def test_graph_structure():
    net = custom_net()
    assert [b.name for b in net.blobs()] == ["data", "x", "x1", "x2", "y", "z", "out"]
    assert net.input_names() == ["data"] and net.input_indexes() == [0]
    assert net.output_names() == ["out"] and net.output_indexes() == [6]
    layers = net.layers()
    assert [layer.type for layer in layers] == ["Input", "AddOne", "Dup", "Scale2", "AddOne", "Sum2"]
    assert layers[1].typeindex == CUSTOM_BIT | 0 and layers[2].typeindex == CUSTOM_BIT | 2
    assert layers[2].name == "d" and layers[2].bottoms == [1] and layers[2].tops == [2, 3]
    assert net.blobs()[1].producer == 1 and net.blobs()[1].consumer == 2


@pytest.mark.parametrize("light", [True, False])
def test_forward_custom_layers(light):
    net = custom_net(light=light)
    x = data_in()
    with net.create_extractor() as ex:
        assert ex.input("data", Mat(x)) == 0
        ret, out = ex.extract("out")
        assert ret == 0
        np.testing.assert_allclose(np.asarray(out), 3 * x + 4, rtol=1e-5, atol=1e-5)
    assert np.array_equal(x, data_in())


def test_input_and_extract_by_index_and_feat_overload():
    net = custom_net()
    x = data_in(1)
    ex = net.create_extractor()
    assert ex.input(0, Mat(x)) == 0
    feat = Mat()
    assert ex.extract(6, feat) == 0
    np.testing.assert_allclose(np.asarray(feat), 3 * x + 4, rtol=1e-5, atol=1e-5)
    assert ex.input(99, Mat(x)) == -1
    ret, m = ex.extract(-1)
    assert ret == -1 and m.empty()


def test_unknown_blob_name_lists_valid_names(caplog):
    net = custom_net()
    ex = net.create_extractor()
    assert ex.input("nope", Mat(data_in())) == -1
    ret, m = ex.extract("missing_blob")
    assert ret == -1 and m.empty()
    assert "'missing_blob'" in caplog.text and "['data']" in caplog.text and "['out']" in caplog.text
    assert ex.extract("missing_blob", Mat()) == -1


def test_extract_without_input_fails_cleanly(caplog):
    net = custom_net()
    ret, m = net.create_extractor().extract("out")
    assert ret != 0 and m.empty()
    assert "has no data: give it with ex.input('data', mat)" in caplog.text


def test_layer_failure_is_reported(caplog):
    net = custom_net(GRAPH.replace("6 7", "7 8") + "Failing f 1 1 out bad\n")
    ex = net.create_extractor()
    ex.input("data", Mat(data_in()))
    ret, m = ex.extract("bad")
    assert ret == -7 and m.empty()
    assert "layer #6 'f' (Failing) failed (-7)" in caplog.text


def test_layer_exception_becomes_an_error_return(caplog):
    net = custom_net(GRAPH.replace("6 7", "7 8") + "Raising f 1 1 out bad\n")
    ex = net.create_extractor()
    ex.input("data", Mat(data_in()))
    ret, m = ex.extract("bad")
    assert ret == -1 and m.empty()
    assert "layer #6 'f' (Raising) failed (raised ZeroDivisionError: boom)" in caplog.text


def test_light_mode_releases_intermediates():
    for light, expect_alive in ((True, False), (False, True)):
        CREATED.clear()
        net = custom_net(light=light)
        ex = net.create_extractor()
        ex.input("data", Mat(data_in()))
        ret, out = ex.extract("out")
        assert ret == 0
        gc.collect()
        # the AddOne/Dup products (x, x1, x2, z) are intermediates; out is still held
        intermediates = [r for r in CREATED[:-1]]
        assert len(intermediates) == 4
        assert all((r() is not None) == expect_alive for r in intermediates), light
        if not light:
            # kept blobs are unchanged by the in-place layer, which worked on a clone
            ret, x = ex.extract("x")
            np.testing.assert_allclose(np.asarray(x), data_in() + 1, rtol=1e-6)


def test_inplace_layer_does_not_modify_callers_input():
    text = "7767517\n2 2\nInput in 0 1 data\nScale2 s 1 1 data y\n"
    net = custom_net(text)
    x = data_in()
    m = Mat(x)
    ex = net.create_extractor()
    ex.input("data", m)
    ret, y = ex.extract("y")
    assert ret == 0
    np.testing.assert_allclose(np.asarray(y), 2 * x)
    np.testing.assert_array_equal(np.asarray(m), x)


def test_extractor_options_and_clear():
    net = custom_net()
    ex = net.create_extractor()
    ex.set_light_mode(False)
    ex.set_num_threads(1)
    ex.set_blob_allocator(None)
    ex.set_workspace_allocator(None)
    assert ex.opt.lightmode is False and ex.opt.num_threads == 1
    assert net.opt.lightmode is True  # the extractor has its own copy
    opt = ncnn_c.Option()
    opt.num_threads = 3
    ex.set_option(opt)
    assert ex.opt.num_threads == 3
    ex.input("data", Mat(data_in()))
    assert ex.extract("out")[0] == 0
    ex.clear()
    assert ex.extract("out")[0] != 0  # the input is gone too


# -- custom layers -------------------------------------------------------------------------
class TimesTen(Layer):
    def __init__(self):
        super().__init__()
        self.one_blob_only = True
        self.support_inplace = True

    def forward_inplace(self, bottom_top, opt):
        bottom_top.tensor()[...] *= 10
        return 0


RELU_NET = "7767517\n2 2\nInput in 0 1 data\nReLU r 1 1 data y\n"


@pytest.mark.parametrize("key", ["ReLU", layer_to_index("ReLU")])
def test_overwrite_builtin_relu(key):
    destroyed = []
    net = Net()
    assert net.register_custom_layer(key, TimesTen, lambda layer: destroyed.append(layer)) == 0
    assert net.load_param_mem(RELU_NET) == 0 and net.load_model(DataReaderFromEmpty()) == 0
    layer = net.layers()[1]
    assert isinstance(layer, TimesTen) and layer.type == "ReLU" and layer.typeindex == layer_to_index("ReLU")
    ex = net.create_extractor()
    x = data_in()
    ex.input("data", Mat(x))
    np.testing.assert_allclose(np.asarray(ex.extract("y")[1]), 10 * x, rtol=1e-6)
    net.clear()
    assert destroyed == [layer]
    assert net.layers() == [] and net.blobs() == []


def test_builtin_relu_without_registration():
    net = Net()
    assert net.load_param_mem(RELU_NET) == 0 and net.load_model(DataReaderFromEmpty()) == 0
    ex = net.create_extractor()
    x = data_in()
    ex.input("data", Mat(x))
    np.testing.assert_allclose(np.asarray(ex.extract("y")[1]), np.maximum(x, 0))


def test_custom_layer_in_binary_param_by_index(caplog):
    def ints(*v):
        return struct.pack(f"<{len(v)}i", *v)

    blob = ints(7767517, 2, 2)
    blob += ints(layer_to_index("Input"), 0, 1, 0, -233)
    blob += ints(CUSTOM_BIT | 0, 1, 1, 0, 1, -233)
    net = Net()
    assert net.load_param_bin(blob) == -1  # the custom index is not registered yet
    assert "is not registered or not implemented" in caplog.text
    assert net.register_custom_layer(CUSTOM_BIT | 0, AddOne) == 0
    assert net.load_param_bin(io.BytesIO(blob)) == 0
    assert net.load_model(DataReaderFromEmpty()) == 0
    ex = net.create_extractor()
    x = data_in()
    ex.input(0, Mat(x))
    np.testing.assert_allclose(np.asarray(ex.extract(1)[1]), x + 1, rtol=1e-6)


def test_register_custom_layer_rejects_bad_arguments(caplog):
    net = Net()
    assert net.register_custom_layer("X", 5) == -1
    assert net.register_custom_layer(-3, AddOne) == -1
    assert net.register_custom_layer(len(LAYER_TYPES) + 5, AddOne) == -1
    assert net.register_custom_layer(1.5j, AddOne) == -1
    assert "register_custom_layer" in caplog.text


def test_pipeline_lifecycle_and_context_manager():
    events = []

    class Tracked(AddOne):
        def create_pipeline(self, opt):
            events.append("create")
            return 0

        def destroy_pipeline(self, opt):
            events.append("destroy")
            return 0

    with Net() as net:
        net.register_custom_layer("AddOne", Tracked)
        assert net.load_param_mem("7767517\n2 2\nInput in 0 1 data\nAddOne a 1 1 data y\n") == 0
        assert net.load_model(DataReaderFromEmpty()) == 0
        assert events == ["create"]
    assert events == ["create", "destroy"] and net.layers() == []


def test_failed_load_param_still_destroys_created_layers(caplog):
    class BadParam(AddOne):
        def load_param(self, pd):
            return -1 if pd.get(0, 0) == 1 else 0

    destroyed = []
    net = Net()
    net.register_custom_layer("AddOne", BadParam, destroyed.append)
    text = "7767517\n3 3\nInput in 0 1 data\nAddOne a 1 1 data y\nAddOne b 1 1 y z 0=1\n"
    assert net.load_param_mem(text) == -1
    assert "line 5: layer b: AddOne.load_param failed (-1)" in caplog.text
    assert [layer.name for layer in destroyed] == ["a", "b"]
    assert net.layers() == []


def test_create_pipeline_failure_fails_load_model(caplog):
    class Bad(AddOne):
        def create_pipeline(self, opt):
            return -1

    net = Net()
    net.register_custom_layer("AddOne", Bad)
    assert net.load_param_mem("7767517\n2 2\nInput in 0 1 data\nAddOne a 1 1 data y\n") == 0
    assert net.load_model(DataReaderFromEmpty()) == -1
    assert "'a' (AddOne) create_pipeline failed" in caplog.text


def test_shape_hints_reach_the_layer():
    net = custom_net(
        "7767517\n2 2\nInput in 0 1 data -23330=4,3,4,3,2\nAddOne a 1 1 data y -23330=4,1,24,1,1\n"
    )
    a = net.layers()[1]
    assert (a.bottom_shapes[0].dims, a.bottom_shapes[0].w, a.bottom_shapes[0].h, a.bottom_shapes[0].c) == (
        3,
        4,
        3,
        2,
    )
    assert (a.top_shapes[0].dims, a.top_shapes[0].w) == (1, 24)
    assert net.blobs()[0].shape.w == 4


# -- rejection of bad files ------------------------------------------------------------------
BAD_TEXT = [
    ("", "empty param"),
    ("hello\n", "line 1: bad magic"),
    ("7767517\n", "missing the layer count"),
    ("7767517\n2\n", "line 2: expected '<layer count> <blob count>'"),
    (
        "7767517\n1000000000 1000000000\nInput in 0 1 data\n",
        "layer count 1000000000 is over the limit of 100000",
    ),
    ("7767517\n-1 2\n", "absurd layer count"),
    ("7767517\n3 3\nInput in 0 1 data\nReLU r 1 1 data y\n", "layer count is 3 but the file has only 2"),
    ("7767517\n2 3\nInput in 0 1 data\nReLU r 1 1 data y\n", "blob count is 3 but the layers define 2"),
    ("7767517\n2 1\nInput in 0 1 data\nReLU r 1 1 data y\n", "more blobs than the blob count 1"),
    ("7767517\n2 2\nInput in 0 1 data\nReLU r 1 1 data data\n", "duplicate blob name 'data'"),
    (
        "7767517\n2 2\nInput in 0 1 data\nReLU r 1 1 nothere y\n",
        "line 4: layer r: bottom blob 'nothere' is not produced",
    ),
    (
        "7767517\n2 2\nInput in 0 1 data\nNoSuchLayer r 1 1 data y\n",
        "line 4: layer r: unknown layer type 'NoSuchLayer'",
    ),
    ("7767517\n2 2\nInput in 0 1 data\nReLU r 5 1 data y\n", "line 4: layer r: 5 bottoms + 1 tops"),
    ("7767517\n2 2\nInput in 0 1 data\nReLU r x 1 data y\n", "bad blob counts"),
    ("7767517\n2 2\nInput in 0 1 data\nReLU r 1 1 data y 0=abc,1\n", "line 4: layer r: param 0: bad number"),
    ("7767517\n2 2\nInput in 0 1 data\nReLU\n", "line 4: expected"),
]


@pytest.mark.parametrize("text, message", BAD_TEXT)
def test_bad_text_param_is_rejected(caplog, text, message):
    net = Net()
    assert net.load_param_mem(text) == -1
    assert message in caplog.text
    assert net.layers() == []


def test_extra_lines_after_the_layers_are_ignored_with_a_warning(caplog):
    net = Net()
    assert net.load_param_mem(RELU_NET + "ReLU r2 1 1 y z\n") == 0
    assert len(net.layers()) == 2 and "line 5: ignoring 1 line(s)" in caplog.text


def test_garbage_and_truncated_text_params_never_raise(caplog):
    text = PARAM.read_bytes()
    rng = np.random.default_rng(7)
    for cut in range(0, len(text), 331):
        assert Net().load_param_mem(text[:cut]) == -1
    for _ in range(20):
        assert Net().load_param_mem(rng.integers(0, 256, 500, dtype=np.uint8).tobytes()) == -1
    # flip bytes inside the valid file: either loads or is rejected, never raises
    for _ in range(30):
        b = bytearray(text)
        b[int(rng.integers(0, len(b)))] = int(rng.integers(0, 256))
        assert Net().load_param_mem(bytes(b)) in (0, -1)


def test_oversized_text_param_is_rejected(caplog, monkeypatch):
    monkeypatch.setattr(parse_mod, "MAX_PARAM_TEXT", 1000)
    assert Net().load_param(str(PARAM)) == -1
    assert "larger than 1000 bytes" in caplog.text


def test_bad_binary_param_is_rejected(caplog):
    good = PARAM_BIN.read_bytes()
    for cut in list(range(0, 64, 4)) + list(range(64, len(good), 97)):
        assert Net().load_param_bin(good[:cut]) == -1
    assert "truncated while reading" in caplog.text

    def ints(*v):
        return struct.pack(f"<{len(v)}i", *v)

    cases = [
        (b"garbage!" * 8, "bad magic"),
        (ints(7767517, 10**9, 10**9), "layer count 1000000000 is over the limit of 100000"),
        (ints(7767517, 0, 1), "absurd layer count"),
        (ints(7767517, 1, 1, 16, 0, 10**9, -233, 0), "absurd bottom/top count"),
        (ints(7767517, 1, 1, 16, 0, 1, 5, -233), "top blob index 5 out of range"),
        (ints(7767517, 1, 1, 16, 1, 1, 0, 0, -233), "bottom blob 0 is not produced"),
        (ints(7767517, 2, 1, 16, 0, 1, 0, -233, 16, 0, 1, 0, -233), "blob 0 produced twice"),
        (ints(7767517, 1, 2, 16, 0, 1, 0, -233, 0), "blob count is 2 but the layers define 1"),
        (ints(7767517, 1, 2, 16, 0, 1, 0, -233), "need at least 24 bytes but only 20 follow the header"),
        (ints(7767517, 1, 1, 200, 0, 1, 0, -233), "unknown layer type index 200"),
        (ints(7767517, 1, 1, 999, 0, 1, 0, -233), "layer type index 999 is not registered"),
        (ints(7767517, 1, 1, 16, 0, 1, 0, 40, 1, -233), "layer #0: param key 40 out of range"),
    ]
    for data, message in cases:
        caplog.clear()
        assert Net().load_param_bin(data) == -1, message
        assert message in caplog.text


def test_bin_too_short_names_the_layer(caplog):
    weights = BIN.read_bytes()
    net = Net()
    assert net.load_param(str(PARAM)) == 0
    assert net.load_model_mem(weights[: len(weights) // 2]) == -1
    # one line: where the data ended, and that the files do not belong together
    (record,) = caplog.records
    assert "load_model: the .bin ended at layer #43 'fire9/expand3x3'" in record.getMessage()
    assert "it does not match the .param" in record.getMessage()
    assert "truncated fp16 weight at byte offset" in record.getMessage()
    caplog.clear()
    assert net.load_model_mem(b"") == -1
    assert "'conv1' (Convolution)" in caplog.text


def test_bad_sources(caplog, tmp_path):
    net = Net()
    assert net.load_param(str(tmp_path / "missing.param")) == -1
    assert "cannot open" in caplog.text
    assert net.load_param(12345) == -1
    assert net.load_param_mem(None) == -1
    assert net.load_model(str(PARAM)) == -1  # no layers yet
    assert "load_param first" in caplog.text
    assert net.load_model_mem("text") == -1


# -- loading from every source -----------------------------------------------------------------
class FileReader(DataReader):
    """A PyPI-style user reader over a file."""

    def __init__(self, path):
        super().__init__()
        self.f = open(path, "rb")  # noqa: SIM115

    def read(self, buf, size):
        data = self.f.read(size)
        buf[: len(data)] = data
        return len(data)


def _ref_input():
    return np.random.default_rng(42).uniform(-128, 128, (3, 227, 227)).astype(np.float32)


def _run_ours(net: Net, x: np.ndarray) -> np.ndarray:
    with net.create_extractor() as ex:
        assert ex.input(net.input_indexes()[0], Mat(x)) == 0
        ret, out = ex.extract(net.output_indexes()[0])
        assert ret == 0
        return np.array(out, dtype=np.float32, copy=True)


def _run_oracle(param: pathlib.Path, x: np.ndarray) -> np.ndarray:
    import ncnn

    net = ncnn.Net()
    for k, v in FP32_FLAGS.items():
        setattr(net.opt, k, v)
    if param.suffix == ".bin":
        assert net.load_param_bin(str(param)) == 0
    else:
        assert net.load_param(str(param)) == 0
    assert net.load_model(str(BIN)) == 0
    ex = net.create_extractor()
    ex.input(net.input_indexes()[0], ncnn.Mat(x).clone())
    ret, out = ex.extract(net.output_indexes()[0])
    assert ret == 0
    return np.array(out, dtype=np.float32, copy=True)


def rel_l2(a, b) -> float:
    return float(np.linalg.norm(a.astype(np.float64) - b) / np.linalg.norm(b.astype(np.float64)))


def test_every_param_and_model_source_gives_the_same_result():
    x = _ref_input()
    results = []
    param_text = PARAM.read_text()
    weights = BIN.read_bytes()
    param_sources = [
        lambda n: n.load_param(str(PARAM)),
        lambda n: n.load_param(PARAM),
        lambda n: n.load_param(io.BytesIO(param_text.encode())),
        lambda n: n.load_param(io.StringIO(param_text)),
        lambda n: n.load_param_mem(param_text),
        lambda n: n.load_param(FileReader(PARAM)),
        lambda n: n.load_param(DataReaderFromMemory(param_text.encode())),
    ]
    model_sources = [
        lambda n: n.load_model(str(BIN)),
        lambda n: n.load_model(open(BIN, "rb")),  # noqa: SIM115
        lambda n: n.load_model_mem(weights),
        lambda n: n.load_model(FileReader(BIN)),
        lambda n: n.load_model(weights),
    ]
    for i, ps in enumerate(param_sources):
        net = Net()
        assert ps(net) == 0, i
        assert net.input_names() == ["data"] and net.output_names() == ["prob"]
        ms = model_sources[i % len(model_sources)]
        assert ms(net) == 0, i
        results.append(_run_ours(net, x))
    for r in results[1:]:
        np.testing.assert_array_equal(r, results[0])


def test_memory_reader_reports_consumed_bytes():
    weights = BIN.read_bytes()
    net = Net()
    assert net.load_param(str(PARAM)) == 0
    dr = DataReaderFromMemory(weights + b"trailing")
    assert net.load_model(dr) == 0
    assert dr.consumed == len(weights)
    pbin = PARAM_BIN.read_bytes()
    dr = DataReaderFromMemory(pbin + b"more")
    assert Net().load_param_bin(dr) == 0
    assert dr.consumed == len(pbin)


# -- parity with the PyPI ncnn oracle ---------------------------------------------------------
@pytest.mark.parametrize("param", [PARAM, UNFUSED, PARAM_BIN], ids=["fused", "unfused", "binary"])
def test_squeezenet_parity_random_input(param):
    x = _ref_input()
    net = Net()
    for k, v in FP32_FLAGS.items():
        setattr(net.opt, k, v)
    assert (net.load_param_bin(str(param)) if param.suffix == ".bin" else net.load_param(str(param))) == 0
    assert net.load_model(str(BIN)) == 0
    ours = _run_ours(net, x)
    ref = _run_oracle(param, x)
    assert ours.shape == ref.shape == (1000,)
    assert rel_l2(ours, ref) <= 1e-4


def _image_input() -> np.ndarray:
    from PIL import Image

    img = Image.open(MODELS / "256-ncnn.png").convert("RGB").resize((227, 227), Image.BILINEAR)
    bgr = np.asarray(img, dtype=np.float32)[:, :, ::-1].transpose(2, 0, 1)
    mean = np.array([104.0, 117.0, 123.0], dtype=np.float32)[:, None, None]
    return np.ascontiguousarray(bgr - mean)


@pytest.mark.parametrize("param", [PARAM, UNFUSED], ids=["fused", "unfused"])
def test_squeezenet_parity_real_image(param):
    x = _image_input()
    net = Net()
    assert net.load_param(str(param)) == 0 and net.load_model(str(BIN)) == 0
    ours = _run_ours(net, x)
    ref = _run_oracle(param, x)
    assert rel_l2(ours, ref) <= 1e-4
    assert int(ours.argmax()) == int(ref.argmax())
    assert abs(float(ours.sum()) - 1.0) < 1e-3  # softmax output


def test_benchmark_structures_load_with_zero_weights():
    stub_types = [t for t in LAYER_TYPES if create_layer_cpu(t) is None]
    for param in sorted((MODELS / "benchmark").glob("*.param")):
        net = Net()
        for t in stub_types:
            net.register_custom_layer(t, Layer)
        assert net.load_param(str(param)) == 0, param.name
        assert net.load_model(DataReaderFromEmpty()) == 0, param.name
        assert net.input_names() and net.output_names()


def test_cpu_path_never_imports_the_gpu_package():
    code = (
        "import sys, numpy as np, ncnn_c\n"
        f"n = ncnn_c.Net(); assert n.load_param({str(PARAM)!r}) == 0 and n.load_model({str(BIN)!r}) == 0\n"
        "ex = n.create_extractor(); ex.input('data', ncnn_c.Mat(np.zeros((3, 227, 227), np.float32)))\n"
        "assert ex.extract('prob')[0] == 0\n"
        "bad = [m for m in sys.modules if m.startswith('ncnn_c.gpu') or m == 'vulkan']\n"
        "assert not bad, bad\n"
    )
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr


# -- Vulkan scheduling, with a fake GPU ----------------------------------------------------------
class FakeVkMat:
    """Device memory stand-in: holds a host copy, always fp32 with elempack 1."""

    def __init__(self):
        self.host = None
        self.elempack = 1

    @property
    def dims(self):
        return 0 if self.host is None else self.host.ndim

    def empty(self):
        return self.host is None


class FakeUses:
    """gpu.lifetime.UseCount's interface: every use is granted."""

    what = "fake"

    def enter(self):
        return True

    def exit(self):
        pass


class FakeDevice:
    info = types.SimpleNamespace(physical_device_type=2)  # a discrete GPU
    uses = FakeUses()


FAKE_DEVICE = FakeDevice()


class FakeCompute:
    log: list = []

    def __init__(self, vkdev, reusable=False):
        assert vkdev is FAKE_DEVICE and not reusable  # the tests switch replay off

    def record_upload(self, src, dst, opt):
        FakeCompute.log.append("upload")
        dst.host = np.array(src, dtype=np.float32, copy=True)

    def record_download(self, src, dst, opt):
        FakeCompute.log.append("download")
        dst.share_from(Mat.from_tensor(src.host))

    def record_clone(self, src, dst, opt):
        FakeCompute.log.append("clone")
        dst.host = src.host.copy()

    def submit_and_wait(self):
        FakeCompute.log.append("submit")
        return 0

    def reset(self):
        return 0


class FakeCache:
    uses = FakeUses()

    def __init__(self, vkdev):
        self.cleared = False

    def clear(self):
        self.cleared = True


class ReLU_fakevk(Layer):
    """A GPU ReLU over FakeVkMat (in place)."""

    def __init__(self):
        super().__init__()
        self.one_blob_only = True
        self.support_inplace = True
        self.support_vulkan = True
        self.uploaded = False

    def forward_inplace(self, bottom_top, opt):
        t = bottom_top.tensor()
        t[...] = np.maximum(t, 0)
        return 0

    def upload_model(self, cmd, opt):
        self.uploaded = True
        return 0

    def forward_inplace_vk(self, bottom_top, cmd, opt):
        FakeCompute.log.append("relu_vk")
        bottom_top.host = np.maximum(bottom_top.host, 0)
        return 0


class FakePipeline:
    def __init__(self, vkdev):
        assert vkdev is FAKE_DEVICE

    def set_local_size_xyz(self, x, y, z):
        pass

    def create(self, shader, opt, specializations):
        return 0


def _fake_gpu_api(gpu_count: int = 1) -> vkf_mod.GpuApi:
    """A complete stand-in for the GPU modules: blobs stay fp32 elempack 1, so no layout
    conversion is ever recorded, and nothing is replayed (the tests set replay_capacity 0)."""

    def no_conversion(*args):
        raise AssertionError("a fake GPU blob is never converted")

    return vkf_mod.GpuApi(
        get_gpu_count=lambda: gpu_count,
        get_default_gpu_index=lambda: 0 if gpu_count else -1,
        get_gpu_device=lambda i=0: FAKE_DEVICE,
        PipelineCache=FakeCache,
        Pipeline=FakePipeline,
        VkCompute=FakeCompute,
        VkMat=FakeVkMat,
        effective_flags=lambda bits, info: {},
        host_view=no_conversion,
        LOCAL_1D=(64, 1, 1),
        without_shader_bits=lambda opt: opt,
        is_fp16=lambda m: False,
        storage_fp16=lambda opt, vkdev: False,
        preferred_elempack=lambda m, opt: 1,
        record_convert=no_conversion,
    )


def _fake_net() -> Net:
    net = Net()
    net.opt.use_vulkan_compute = True
    net.replay_capacity = 0  # replay is tested on a real device (test_replay.py)
    return net


@pytest.fixture
def fake_gpu(monkeypatch):
    ns = _fake_gpu_api()
    monkeypatch.setattr(vkf_mod, "_gpu", lambda: ns)
    monkeypatch.setattr(vkf_mod, "_devices", lambda: ns)
    relu = layer_to_index("ReLU")

    def create_vk(t):
        if t in (relu, "ReLU"):
            layer = ReLU_fakevk()
            layer.typeindex, layer.type = relu, "ReLU"
            return layer
        return None

    monkeypatch.setattr(ncnn_c.layer, "create_layer_vulkan", create_vk)
    FakeCompute.log = []
    return ns


FEAT_NET = """7767517
5 5
Input in 0 1 data
ReLU gpu_relu 1 1 data a
ReLU cpu_relu 1 1 a b 31=16
AddOne cpu_only 1 1 b c
ReLU gpu_relu2 1 1 c out
"""


def test_featmask_forces_cpu_and_vulkan_scheduling(fake_gpu):
    net = _fake_net()
    net.register_custom_layer("AddOne", AddOne)
    assert net.load_param_mem(FEAT_NET) == 0
    assert net.load_model(DataReaderFromEmpty()) == 0
    layers = net.layers()
    assert isinstance(layers[1], ReLU_fakevk) and isinstance(layers[4], ReLU_fakevk)
    assert not isinstance(layers[2], ReLU_fakevk) and layers[2].support_vulkan is False  # 31=16
    assert layers[1].vkdev is FAKE_DEVICE and layers[2].vkdev is None and layers[3].vkdev is None
    assert layers[1].uploaded and layers[4].uploaded
    assert net.vulkan_device() is FAKE_DEVICE
    cache = net.opt.pipeline_cache
    assert isinstance(cache, FakeCache)
    FakeCompute.log = []
    x = data_in()
    ex = net.create_extractor()
    ex.input("data", Mat(x))
    ret, out = ex.extract("out")
    assert ret == 0
    np.testing.assert_allclose(np.asarray(out), np.maximum(np.maximum(x, 0) + 1, 0), rtol=1e-6)
    # upload the input, ReLU on the GPU in place (the upload is a private copy), download
    # for the CPU layers, upload again, ReLU on the GPU, download the result
    assert FakeCompute.log == [
        "upload", "relu_vk", "download", "submit", "upload", "relu_vk", "download", "submit",
    ]  # fmt: skip
    np.testing.assert_array_equal(x, data_in())
    net.clear()
    assert cache.cleared and net.opt.pipeline_cache is None


def test_vulkan_inplace_clones_a_blob_with_pending_consumers(fake_gpu):
    net = _fake_net()
    net.register_custom_layer("Sum2", Sum2)
    text = "7767517\n3 3\nInput in 0 1 data\nReLU r1 1 1 data a\nSum2 s 2 1 a data out 0=-1.0\n"
    assert net.load_param_mem(text) == 0 and net.load_model(DataReaderFromEmpty()) == 0
    FakeCompute.log = []
    x = data_in()
    ex = net.create_extractor()
    ex.input("data", Mat(x))
    ret, out = ex.extract("out")
    assert ret == 0
    # relu(x) - x: the in-place GPU ReLU must not have touched the blob Sum2 still needs
    np.testing.assert_allclose(np.asarray(out), np.maximum(x, 0) - x, atol=1e-6)
    assert FakeCompute.log[:3] == ["upload", "clone", "relu_vk"]


def test_user_pipeline_cache_is_not_owned(fake_gpu):
    net = _fake_net()
    mine = FakeCache(FAKE_DEVICE)
    net.opt.pipeline_cache = mine
    assert net.load_param_mem(RELU_NET) == 0 and net.load_model(DataReaderFromEmpty()) == 0
    net.clear()
    assert net.opt.pipeline_cache is mine and not mine.cleared


def test_no_vulkan_device_falls_back_to_cpu(monkeypatch, caplog):
    ns = _fake_gpu_api(gpu_count=0)
    monkeypatch.setattr(vkf_mod, "_gpu", lambda: ns)
    monkeypatch.setattr(vkf_mod, "_devices", lambda: ns)
    net = Net()
    net.opt.use_vulkan_compute = True
    assert net.load_param_mem(RELU_NET) == 0
    assert "no Vulkan device is available; running on the CPU" in caplog.text
    assert net.opt.use_vulkan_compute is False
    assert net.load_model(DataReaderFromEmpty()) == 0
    ex = net.create_extractor()
    x = data_in()
    ex.input("data", Mat(x))
    np.testing.assert_allclose(np.asarray(ex.extract("y")[1]), np.maximum(x, 0))


# -- the real Vulkan path (lavapipe in CI) -------------------------------------------------------
@pytest.mark.gpu
def test_squeezenet_on_the_gpu_matches_the_oracle():
    x = _ref_input()
    net = Net()
    for k, v in FP32_FLAGS.items():
        setattr(net.opt, k, v)
    net.opt.use_vulkan_compute = True
    assert net.load_param(str(PARAM)) == 0 and net.load_model(str(BIN)) == 0
    assert net.vulkan_device() is not None
    assert any(layer.vkdev is not None for layer in net.layers())
    cache = net.opt.pipeline_cache
    assert cache is not None and cache.size() > 0  # created and owned by the net
    ours = _run_ours(net, x)
    assert rel_l2(ours, _run_oracle(PARAM, x)) <= 1e-4
    net.clear()
    assert net.opt.pipeline_cache is None and cache.size() == 0


def test_pool_allocators_serve_blobs_and_workspace_of_a_real_net():
    """SqueezeNet on the CPU with pool allocators for blobs and scratch memory: both are used,
    blocks come back to the pools, and the output does not change."""
    from ncnn_c.allocator import PoolAllocator, UnlockedPoolAllocator

    x = np.random.RandomState(3).rand(3, 227, 227).astype(np.float32)

    def run(net):
        ex = net.create_extractor()
        ex.input("data", Mat(x))
        ret, out = ex.extract("prob")
        assert ret == 0
        return np.array(out).copy()

    plain = Net()
    plain.native_plan = False  # the numpy layers' allocations (the native plan has an arena)
    assert plain.load_param(str(MODELS / "squeezenet_v1.1.param")) == 0
    assert plain.load_model(str(MODELS / "squeezenet_v1.1.bin")) == 0
    ref = run(plain)

    blob, work = PoolAllocator(), UnlockedPoolAllocator()
    net = Net()
    net.native_plan = False
    net.opt.blob_allocator = blob
    net.opt.workspace_allocator = work
    assert net.load_param(str(MODELS / "squeezenet_v1.1.param")) == 0
    assert net.load_model(str(MODELS / "squeezenet_v1.1.bin")) == 0
    np.testing.assert_array_equal(run(net), ref)
    gc.collect()
    pooled = len(work.budgets)
    # every scratch block went back to the workspace pool ...
    assert pooled > 0 and not work.payouts
    assert blob.budgets
    np.testing.assert_array_equal(run(net), ref)
    gc.collect()
    # ... and the second run was served from them instead of growing the pool
    assert len(work.budgets) == pooled and not work.payouts


# -- the execution plan ------------------------------------------------------------------------
def _reference_extract(net: Net, given: dict[int, np.ndarray], target: int) -> np.ndarray:
    """ncnn's recursive forward_layer, written plainly: producers of missing bottoms first,
    every layer through its out-of-place ``forward`` on copies. The plan must agree."""
    from ncnn_c.option import get_layer_option

    mats = {i: Mat(x) for i, x in given.items()}
    blobs, layers = net.blobs(), net.layers()

    def produce(b):
        if b in mats:
            return
        layer = layers[blobs[b].producer]
        for bottom in layer.bottoms:
            produce(bottom)
        opt = get_layer_option(net.opt, layer)
        if layer.one_blob_only:
            top = Mat()
            assert layer.forward(mats[layer.bottoms[0]].clone(), top, opt) == 0
            tops = [top]
        else:
            tops = [Mat() for _ in layer.tops]
            assert layer.forward([mats[x].clone() for x in layer.bottoms], tops, opt) == 0
        mats.update(zip(layer.tops, tops, strict=True))

    produce(target)
    return np.array(mats[target], copy=True)


@pytest.mark.parametrize("light", [True, False])
def test_plan_matches_the_recursive_forward_for_every_blob(light):
    net = custom_net(light=light)
    net.native_plan = False  # bit for bit: the numpy executor against the numpy recursion
    x = data_in(3)
    for target in range(1, len(net.blobs())):
        ex = net.create_extractor()
        ex.input("data", Mat(x))
        ret, out = ex.extract(target)
        assert ret == 0, target
        np.testing.assert_array_equal(np.asarray(out), _reference_extract(net, {0: x}, target))


@pytest.mark.parametrize("light", [True, False])
def test_plan_reuses_present_blobs_and_injected_inputs(light):
    net = custom_net(light=light)
    x = data_in(4)
    ref = _reference_extract(net, {0: x}, 6)
    ex = net.create_extractor()
    ex.input("data", Mat(x))
    # a second extract on the same extractor runs only what is still missing
    assert ex.extract("z")[0] == 0
    ret, out = ex.extract("out")
    assert ret == 0
    np.testing.assert_array_equal(np.asarray(out), ref)
    # an intermediate blob given with input(): its producers must not run
    y = np.full((2, 3, 4), 5.0, np.float32)
    ex = net.create_extractor()
    ex.input("data", Mat(x))
    ex.input("y", Mat(y))
    ret, out = ex.extract("out")
    assert ret == 0
    np.testing.assert_array_equal(np.asarray(out), _reference_extract(net, {0: x, 4: y}, 6))
    # everything needed given, the Input blob is not required at all
    ex = net.create_extractor()
    ex.input("y", Mat(y))
    ex.input("z", Mat(y))
    ret, out = ex.extract("out")
    assert ret == 0
    np.testing.assert_allclose(np.asarray(out), 2 * y)


def test_plan_reports_a_missing_second_input(caplog):
    net = custom_net("7767517\n3 3\nInput a 0 1 a\nInput b 0 1 b\nSum2 s 2 1 a b out\n")
    ex = net.create_extractor()
    ex.input("a", Mat(data_in()))
    ret, m = ex.extract("out")
    assert ret != 0 and m.empty()
    assert "blob 'b' has no data: give it with ex.input('b', mat)" in caplog.text


def test_plan_matches_the_recursive_forward_on_squeezenet():
    net = Net()
    net.native_plan = False  # bit for bit: the numpy executor against the numpy recursion
    assert net.load_param(str(UNFUSED)) == 0 and net.load_model(str(BIN)) == 0
    x = np.random.default_rng(5).uniform(-1, 1, (3, 64, 64)).astype(np.float32)
    names = [b.name for b in net.blobs()]
    for name in ("fire2/concat", "fire5/squeeze1x1", "pool10", "prob"):
        ex = net.create_extractor()
        ex.input("data", Mat(x))
        ret, out = ex.extract(name)
        assert ret == 0, name
        np.testing.assert_array_equal(np.asarray(out), _reference_extract(net, {0: x}, names.index(name)))


def test_plan_runs_chains_deeper_than_the_recursion_limit():
    depth = sys.getrecursionlimit() + 500
    lines = ["7767517", f"{depth + 1} {depth + 1}", "Input in 0 1 b0"]
    lines += [f"ReLU r{i} 1 1 b{i} b{i + 1} 0=0.5" for i in range(depth)]
    net = Net()
    assert net.load_param_mem("\n".join(lines) + "\n") == 0 and net.load_model(DataReaderFromEmpty()) == 0
    x = np.array([-1.0, 2.0], np.float32)
    ex = net.create_extractor()
    ex.input("b0", Mat(x))
    ret, out = ex.extract(f"b{depth}")
    assert ret == 0
    np.testing.assert_array_equal(np.asarray(out), [-(0.5**depth), 2.0])


def test_layer_options_follow_changes_of_the_extractor_option():
    seen = []

    class Record(AddOne):
        def forward(self, bottom, top, opt):
            seen.append((opt.num_threads, opt.use_fp16_storage))
            return super().forward(bottom, top, opt)

    net = Net()
    net.register_custom_layer("AddOne", Record)
    assert net.load_param_mem("7767517\n2 2\nInput in 0 1 data\nAddOne a 1 1 data y\n") == 0
    assert net.load_model(DataReaderFromEmpty()) == 0
    for threads in (1, 3, 1):
        ex = net.create_extractor()
        ex.opt.num_threads = threads  # changed in place, not through a setter
        ex.input("data", Mat(data_in()))
        assert ex.extract("y")[0] == 0
    # the layer declares no fp16 storage: its option has it switched off
    assert seen == [(1, False), (3, False), (1, False)]


ALIAS_NETS = {
    "split": """7767517
3 4
Input in0 0 1 in0
Split sp 1 2 in0 a b
ReLU r 1 1 a out0
""",
    "reshape": """7767517
4 5
Input in0 0 1 in0
Split sp 1 2 in0 x y
Reshape rs 1 1 x a 0=4
ReLU r 1 1 a out0
""",
    "flatten-of-input": """7767517
3 3
Input in0 0 1 in0
Flatten f 1 1 in0 a
ReLU r 1 1 a out0
""",
}


@pytest.mark.parametrize("light", [True, False], ids=["light", "nolight"])
@pytest.mark.parametrize("name", list(ALIAS_NETS))
def test_in_place_layer_never_writes_through_an_alias(name, light):
    # Split / Reshape / Flatten hand out views of their bottom; an in-place ReLU after them must
    # copy first, or the other branch (or the caller's input) would see its writes
    net = ncnn_c.Net()
    net.opt.use_vulkan_compute = False
    assert net.load_param_mem(ALIAS_NETS[name]) == 0
    assert net.load_model_mem(b"") == 0
    x = np.array([-1.0, 2.0, -3.0, 4.0], np.float32)
    inp = ncnn_c.Mat(x.copy())
    ex = net.create_extractor()
    ex.set_light_mode(light)
    ex.input("in0", inp)
    ret, out = ex.extract("out0")
    assert ret == 0
    np.testing.assert_array_equal(np.array(out).ravel(), np.maximum(x, 0))
    np.testing.assert_array_equal(np.array(inp), x)  # the caller's input is untouched
    for other in ("b", "y"):
        if net.find_blob_index_by_name(other) >= 0:
            ret, o = ex.extract(other)
            assert ret == 0
            np.testing.assert_array_equal(np.array(o).ravel(), x)


# -- NaN and inf inputs: data, not errors ------------------------------------------------------
NONFINITE_NET = """7767517
10 15
Input in 0 1 data 0=8 1=8 2=3
Split sp 1 6 data a b c d e f
Sigmoid sig 1 1 a sa
Softmax sm 1 1 b sb 0=0 1=1
Exp ex 1 1 c ec
Log lg 1 1 d ld
BinaryOp bo 2 1 sa sb bo 0=2
Pooling pl 1 1 ec pl 0=1 1=2 2=2
InnerProduct ip 1 1 e ip 0=4 1=1 2=768
UnaryOp un 1 1 f un 0=6
"""


def _nonfinite_input(fill: float) -> np.ndarray:
    x = np.full((3, 8, 8), fill, np.float32)
    x[0, 0, 0], x[1, 1, 1], x[2, 2, 2] = -np.inf, np.nan, np.inf
    return x


@pytest.mark.parametrize("fill", [np.nan, np.inf, -np.inf, 1e38], ids=["nan", "inf", "-inf", "huge"])
def test_nonfinite_inputs_run_without_numpy_warnings(fill):
    # ncnn prints nothing for NaN/inf; numpy's "overflow" / "invalid value" RuntimeWarnings must
    # not reach stderr (as errors here they would fail the layer)
    net = Net()
    net.opt.use_vulkan_compute = False
    assert net.load_param_mem(NONFINITE_NET) == 0
    weights = struct.pack("<i", 0) + np.ones(768 + 4, np.float32).tobytes()  # fp32 flag, weight, bias
    assert net.load_model_mem(weights) == 0
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for out in ("ld", "bo", "pl", "ip", "un"):
            ex = net.create_extractor()
            assert ex.input("data", Mat(_nonfinite_input(fill))) == 0
            ret, m = ex.extract(out)
            assert ret == 0, out
            assert not m.empty()


def _squeezenet_on(x: np.ndarray, num_threads: int | None = None) -> tuple[int, list[str]]:
    net = Net()
    for k, v in FP32_FLAGS.items():
        setattr(net.opt, k, v)
    if num_threads is not None:
        net.opt.num_threads = num_threads
    assert net.load_param(str(PARAM)) == 0 and net.load_model(str(BIN)) == 0
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ex = net.create_extractor()
        assert ex.input("data", Mat(x)) == 0
        ret, _ = ex.extract("prob")
    return ret, [str(w.message) for w in caught]


def test_squeezenet_all_nan_input_gives_no_warning():
    ret, caught = _squeezenet_on(np.full((3, 227, 227), np.nan, np.float32))
    assert ret == 0 and caught == []


def test_squeezenet_all_inf_input_gives_no_warning_with_threads():
    ret, caught = _squeezenet_on(np.full((3, 227, 227), np.inf, np.float32), num_threads=4)
    assert ret == 0 and caught == []
