"""ParamDict: text and binary parameter parsing, typed get/set, and the SqueezeNet text/binary graphs."""

from __future__ import annotations

import pathlib
import struct

import numpy as np
import pytest

from ncnn_c.datareader import DataReaderFromEmpty, DataReaderFromMemory
from ncnn_c.errors import ModelFormatError
from ncnn_c.mat import Mat
from ncnn_c.net import Net
from ncnn_c.paramdict import ParamDict

MODELS = pathlib.Path(__file__).resolve().parents[1] / "models"


def text_pd(*tokens: str) -> ParamDict:
    pd = ParamDict()
    pd.load_text_tokens(list(tokens))
    return pd


def test_text_ints_and_floats():
    pd = text_pd("0=64", "1=-3", "2=1.5", "3=1e-3", "4=2E2", "5=-0.25")
    assert pd.get(0, 0) == 64 and pd.type(0) == 2
    assert pd.get(1, 0) == -3
    assert pd.get(2, 0.0) == 1.5 and pd.type(2) == 3
    assert pd.get(3, 0.0) == pytest.approx(1e-3)
    assert pd.get(4, 0.0) == 200.0 and pd.type(4) == 3
    assert pd.get(5, 0.0) == -0.25
    # defaults for absent keys, and numeric conversion between int and float
    assert pd.get(9, 7) == 7 and pd.get(9, 0.5) == 0.5 and pd.type(9) == 0
    assert pd.get(0, 0.0) == 64.0 and isinstance(pd.get(0, 0.0), float)
    assert pd.get(2, 0) == 1 and isinstance(pd.get(2, 0), int)


def test_text_arrays_with_and_without_count():
    pd = text_pd("-23303=3,1.0,2.0,3.0", "4=2.0,3.0", "-23305=2,7,-9", "6=1,2,3")
    a = pd.get(3, Mat())
    assert pd.type(3) == 6
    np.testing.assert_array_equal(np.asarray(a), [1.0, 2.0, 3.0])
    np.testing.assert_array_equal(np.asarray(pd.get(4, Mat())), [2.0, 3.0])
    # int arrays keep int32 bit patterns, as ncnn stores them
    assert pd.type(5) == 5
    np.testing.assert_array_equal(np.asarray(pd.get(5, Mat())).view(np.int32), [7, -9])
    np.testing.assert_array_equal(np.asarray(pd.get(6, Mat())).view(np.int32), [1, 2, 3])
    # an array asked for as a scalar gives the default
    assert pd.get(3, 11) == 11
    assert pd.get(0, Mat()).empty()


def test_text_strings_and_featmask():
    pd = text_pd("4=hello", '5="quoted"', "31=16")
    assert pd.get(4, "") == "hello" and pd.type(4) == 7
    assert pd.get(5, "") == "quoted"
    assert pd.get(31, 0) == 16
    assert pd.get(4, 3) == 3  # a string is not an int


@pytest.mark.parametrize(
    "token, message",
    [
        ("0", "not key=value"),
        ("x=1", "not an integer"),
        ("32=1", "out of range"),
        ("-23340=1,1.0", "out of range"),
        ("-23303=3,1.0,2.0", "count 3 but 2 values"),
        ("-23303=a,1.0", "bad count"),
        ("1=1.2.3", "bad number"),
        ("2=", "no value"),
        ("3=1,x", "bad number"),
        ("0=99999999999", "out of 32-bit range"),
    ],
)
def test_text_errors(token, message):
    with pytest.raises(ModelFormatError, match=message):
        text_pd(token)


def test_set_and_get():
    pd = ParamDict()
    pd.set(0, 5)
    pd.set(1, 2.5)
    pd.set(2, "abc")
    pd.set(3, [1.0, 2.0])
    pd.set(4, [3, 4])
    pd.set(5, Mat(np.array([9.0], dtype=np.float32)))
    assert (pd.type(0), pd.type(1), pd.type(2), pd.type(3), pd.type(4), pd.type(5)) == (2, 3, 7, 6, 5, 4)
    assert pd.get(0, 0) == 5 and pd.get(1, 0.0) == 2.5 and pd.get(2, "") == "abc"
    np.testing.assert_array_equal(np.asarray(pd.get(3, Mat())), [1.0, 2.0])
    np.testing.assert_array_equal(np.asarray(pd.get(4, Mat())).view(np.int32), [3, 4])
    assert np.asarray(pd.get(5, Mat()))[0] == 9.0
    assert pd.get(0, np.float32(0)) == 5.0
    with pytest.raises(ValueError):
        pd.set(40, 1)


def _bin(*ints_or_floats) -> bytes:
    out = b""
    for v in ints_or_floats:
        out += struct.pack("<f", v) if isinstance(v, float) else struct.pack("<i", v)
    return out


def test_binary_scalars_are_reinterpreted_by_the_default_type():
    dr = DataReaderFromMemory(_bin(0, 64, 1, 0.5, -23302, 3, 1.0, 2.0, 4.0, -233, 99))
    pd = ParamDict()
    pd.load_binary(dr)
    assert dr.consumed == 40  # stops right after the -233 terminator
    assert pd.type(0) == 1 and pd.get(0, 0) == 64
    assert pd.get(1, 0.0) == 0.5  # raw bits read as a float
    assert pd.type(2) == 4
    np.testing.assert_array_equal(np.asarray(pd.get(2, Mat())), [1.0, 2.0, 4.0])


@pytest.mark.parametrize(
    "data, message",
    [
        (_bin(0, 1), "truncated"),
        (_bin(0), "truncated"),
        (_bin(-23302, 5, 1.0), "truncated"),
        (_bin(-23302, 10**9), "absurd length"),
        (_bin(77, 1, -233), "out of range"),
    ],
)
def test_binary_errors(data, message):
    with pytest.raises(ModelFormatError, match=message):
        ParamDict().load_binary(DataReaderFromMemory(data))


def test_binary_without_terminator_does_not_loop_forever():
    with pytest.raises(ModelFormatError, match="terminator"):
        ParamDict().load_binary(DataReaderFromEmpty())


def _graph(net: Net):
    return [(layer.type, layer.bottoms, layer.tops) for layer in net.layers()]


def test_squeezenet_text_and_binary_param_give_the_same_graph():
    text = Net()
    assert text.load_param(str(MODELS / "squeezenet_v1.1_unfused.param")) == 0
    binary = Net()
    assert binary.load_param_bin(str(MODELS / "squeezenet_v1.1.param.bin")) == 0
    assert len(text.layers()) == 75 and len(text.blobs()) == 83
    assert _graph(text) == _graph(binary)
    assert text.input_indexes() == binary.input_indexes() == [0]
    assert text.output_indexes() == binary.output_indexes() == [82]
    assert [(b.producer, b.consumer) for b in text.blobs()] == [
        (b.producer, b.consumer) for b in binary.blobs()
    ]
    # every layer that exists in both reads the same effective parameters
    for lt, lb in zip(text.layers(), binary.layers(), strict=True):
        if lt.type == "Convolution":
            for attr in ("num_output", "kernel_w", "stride_w", "pad_left", "bias_term", "weight_data_size"):
                if hasattr(lt, attr):
                    assert getattr(lt, attr) == getattr(lb, attr), (lt.name, attr)
        if lt.type == "Pooling":
            for attr in ("pooling_type", "kernel_w", "stride_w", "global_pooling"):
                if hasattr(lt, attr):
                    assert getattr(lt, attr) == getattr(lb, attr), (lt.name, attr)
    conv1 = binary.layers()[1]
    assert (conv1.num_output, conv1.kernel_w, conv1.stride_w, conv1.weight_data_size) == (64, 3, 2, 1728)
    # names exist only in the text form
    assert text.layers()[1].name == "conv1" and binary.layers()[1].name == ""
