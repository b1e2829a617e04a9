"""Cast: fp32 <-> fp16 / bf16 / int8, against the oracle where its output can be read back.

What the oracle lets us compare, bit for bit (tol=0):

* fp32 -> fp16: its extract widens the fp16 blob to fp32, as ours does;
* fp32 -> bf16: its extract reads the bf16 bits as if they were fp16 (ncnn cannot tell the two
  2-byte types apart), and so does our net's extract and the test helper's ``numpy()`` view,
  so the bits can be read back from both. The oracle's bits depend on its CPU dispatch path
  (see ``oracle.assert_bf16_bits``): ncnn_c must give its documented half-up rounding and the
  oracle one of ncnn's two results, element by element;
* fp16 / bf16 -> fp32: a two-Cast chain (fp32 -> 16-bit -> fp32) in both nets.

ncnn has no fp32 -> int8 nor fp16 <-> bf16 code (its output is left unwritten), so those are
checked against numpy references and by round trips instead.
"""

from __future__ import annotations

import logging

import numpy as np
import pytest
from oracle import (
    SHAPES_ALL,
    assert_bf16_bits,
    assert_fp16_bits,
    bf16_half_up,
    check_layer,
    fp16_ieee,
    fp16_view_bits,
    make_param,
    randn,
    rng,
    run_layer,
    run_ncnn,
    run_net,
)

from ncnn_c.layer import create_layer_cpu
from ncnn_c.mat import Mat
from ncnn_c.option import Option
from ncnn_c.paramdict import ParamDict


def _special_values() -> np.ndarray:
    bits = np.array(
        [
            0x3F808000,  # bf16 tie: rounds up
            0x3F818000,
            0x3F807FFF,
            0x3F80FFFF,
            0x7F7FFFFF,  # fp32 max: inf in bf16 and fp16
            0x7F800000,
            0xFF800000,
            0x00000001,  # subnormals
            0x80018000,
            0x33000000,  # 2**-25: fp16 tie to zero
            0x33000001,
            0x387FC000,  # fp16 subnormal range
            0x477FE000,  # 65504 and just above: fp16 max and the overflow edge
            0x477FF000,
            0x477FEFFF,
            0x3F801000,  # fp16 ties to even
            0x3F803000,
            0x00000000,
            0x80000000,
        ],
        np.uint32,
    )
    return bits.view(np.float32)


def _input_line(shape) -> str:
    keys = {1: (0,), 2: (1, 0), 3: (2, 1, 0), 4: (2, 11, 1, 0)}[len(shape)]
    return " ".join(f"{k}={v}" for k, v in zip(keys, shape, strict=True))


def _chain(t: int, x: np.ndarray) -> str:
    """fp32 -> type t -> fp32 as two Cast layers."""
    lines = [
        "7767517",
        "3 3",
        f"Input in0 0 1 in0 {_input_line(x.shape)}",
        f"Cast to 1 1 in0 mid 0=1 1={t}",
        f"Cast back 1 1 mid out0 0={t} 1=1",
    ]
    return "\n".join(lines) + "\n"


def _layer(type_from: int, type_to: int):
    layer = create_layer_cpu("Cast")
    pd = ParamDict()
    pd.set(0, type_from)
    pd.set(1, type_to)
    assert layer.load_param(pd) == 0
    return layer


def _forward(layer, m: Mat) -> Mat:
    top = Mat()
    assert layer.forward(m, top, Option()) == 0
    return top


# -- against the oracle -------------------------------------------------------------------------------
# the oracle helper's rel_l2 computes inf - inf on the infinite cells before masking them
@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("to", [2, 4])
def test_fp32_to_16bit(to):
    def bits_of(x):
        if to == 4:
            return lambda g, r, what: assert_bf16_bits(fp16_view_bits(g), fp16_view_bits(r), x, what) or 0.0
        # the extracts widen fp16 to fp32, exactly: narrowing again gives the bits back
        return lambda g, r, what: assert_fp16_bits(fp16_ieee(g), fp16_ieee(r), x, what) or 0.0

    for x in [randn(rng("cast", to, shape), shape, 3.0) for shape in SHAPES_ALL] + [_special_values()]:
        check_layer("Cast", {0: 1, 1: to}, [], [x], tol=0, compare=bits_of(x))


@pytest.mark.parametrize("to", [2, 4])
def test_round_trip_chain(to):
    for shape in [(7,), (7, 13), (3, 7, 13), (2, 3, 5, 7), (3, 227, 227)]:
        x = randn(rng("cast-chain", to, shape), shape, 3.0)
        ret, ref = run_ncnn(_chain(to, x), b"", [x])
        assert ret == 0
        ret, got = run_net(_chain(to, x), b"", [x])
        assert ret == 0
        _same_16bit_round_trip(to, x, got[0], ref[0])
        # and the result is the 16-bit rounding of x, not x
        assert not np.array_equal(got[0], x)
    x = _special_values()
    ret, ref = run_ncnn(_chain(to, x), b"", [x])
    ret2, got = run_net(_chain(to, x), b"", [x])
    assert ret == 0 and ret2 == 0
    _same_16bit_round_trip(to, x, got[0], ref[0])


def _same_16bit_round_trip(to: int, x, got, ref) -> None:
    """16-bit round trips carry, per element, the bits of either of ncnn's paths (ours: IEEE fp16,
    half-up bf16)."""
    if to == 2:
        assert_fp16_bits(fp16_ieee(got), fp16_ieee(ref), x, "Cast chain 2")
        return
    top = lambda a: (np.asarray(a, np.float32).view(np.uint32) >> 16).astype(np.uint16)  # noqa: E731
    assert not (np.asarray(got).view(np.uint32) & 0xFFFF).any(), "bf16 round trip kept low bits"
    assert_bf16_bits(top(got), top(ref), x, "Cast chain 4")


def test_same_type_passes_through():
    x = randn(rng("cast-same"), (3, 7, 13))
    for t in (0, 1):
        check_layer("Cast", {0: t, 1: t}, [], [x], tol=0)
    check_layer("Cast", {}, [], [x], tol=0)
    m = Mat(x)
    top = _forward(_layer(1, 1), m)
    assert top.data_ptr() == m.data_ptr()


# -- our own conversions ------------------------------------------------------------------------------
def test_fp16_values_and_elemsize():
    x = randn(rng("cast-fp16"), (3, 7, 13), 100.0)
    top = _forward(_layer(1, 2), Mat(x))
    assert top.elemsize == 2 and top.tensor().dtype == np.float16
    np.testing.assert_array_equal(top.tensor(), x.astype(np.float16))
    back = _forward(_layer(2, 1), top)
    assert back.elemsize == 4
    np.testing.assert_array_equal(back.tensor(), x.astype(np.float16).astype(np.float32))


def test_bf16_bits_and_round_trip():
    x = np.concatenate([randn(rng("cast-bf16"), (50,), 10.0), _special_values()])
    top = _forward(_layer(1, 4), Mat(x))
    assert top.elemsize == 2
    bits = top.tensor(np.uint16)
    expected = bf16_half_up(x)
    np.testing.assert_array_equal(bits, expected)
    back = _forward(_layer(4, 1), top)
    np.testing.assert_array_equal(back.tensor().view(np.uint32), expected.astype(np.uint32) << 16)
    finite = np.isfinite(back.tensor()) & np.isfinite(x)
    np.testing.assert_allclose(back.tensor()[finite], x[finite], rtol=2**-8, atol=1e-38)


def test_int8_round_half_away_and_saturate():
    x = np.array(
        [0.0, 0.49999997, 0.5, 1.5, 2.5, -0.5, -1.5, -2.4, 126.6, 127.5, 1e9, -128.4, -128.6, -1e9, np.nan],
        np.float32,
    )
    top = _forward(_layer(1, 3), Mat(x))
    assert top.elemsize == 1 and top.tensor().dtype == np.int8
    np.testing.assert_array_equal(
        top.tensor(), [0, 1, 1, 2, 3, -1, -2, -2, 127, 127, 127, -128, -128, -128, 0]
    )
    back = _forward(_layer(3, 1), top)
    np.testing.assert_array_equal(back.tensor(), top.tensor().astype(np.float32))


def test_int8_net_round_trip_every_rank():
    for shape in SHAPES_ALL:
        x = randn(rng("cast-int8", shape), shape, 60.0)
        ret, got = run_net(_chain(3, x), b"", [x])
        assert ret == 0
        ref = np.clip(np.trunc(x + np.copysign(np.float32(0.5), x)), -128, 127)
        np.testing.assert_array_equal(got[0], ref)


def test_fp16_bf16_between_each_other():
    x = randn(rng("cast-16-16"), (2, 3, 5, 7), 5.0)
    half = Mat(x.astype(np.float16))
    bf = _forward(_layer(2, 4), half)
    assert bf.elemsize == 2
    ref = _forward(_layer(1, 4), Mat(x.astype(np.float16).astype(np.float32)))
    np.testing.assert_array_equal(bf.tensor(np.uint16), ref.tensor(np.uint16))
    back = _forward(_layer(4, 2), bf)
    np.testing.assert_array_equal(back.tensor(), _forward(_layer(4, 1), bf).tensor().astype(np.float16))


def test_fp32_input_to_a_16bit_reader_is_taken_by_value():
    x = randn(rng("cast-widened"), (7, 13))
    for t in (2, 4):
        ret, out = run_layer("Cast", {0: t, 1: 1}, [], [x])
        assert ret == 0
        np.testing.assert_array_equal(out[0], x)


@pytest.mark.parametrize("params", [{0: 5, 1: 1}, {0: 1, 1: -1}, {0: 1, 1: 7}])
def test_unknown_types_rejected(params, caplog):
    with caplog.at_level(logging.ERROR, logger="ncnn_c"):
        ret, _ = run_layer("Cast", params, [], [np.ones(3, np.float32)])
    assert ret != 0 and "unknown type" in caplog.text


def test_oracle_int8_output_is_not_comparable():
    """Documents why fp32 -> int8 is not checked against the oracle: it writes nothing."""
    x = np.array([1.0, 2.0, -3.0, 100.0], np.float32)
    ret, ref = run_ncnn(make_param("Cast", {0: 1, 1: 3}, [x.shape]), b"", [x])
    assert ret == 0
    assert not np.array_equal(ref[0], [1, 2, -3, 100])
