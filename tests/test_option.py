"""Option defaults, the feature mask, and the per-layer option the net derives."""

from __future__ import annotations

import ncnn
import pytest

from ncnn_c.layer import Layer
from ncnn_c.option import (
    FEAT_NO_FP16_STORAGE,
    FEAT_NO_THREADING,
    FEAT_NO_VULKAN,
    SHADER_OPTION_BITS,
    Option,
    get_layer_option,
    get_masked_option,
)

FLAGS = [a for a in dir(ncnn.Option()) if a.startswith("use_") or a in ("lightmode", "openmp_blocktime")]


@pytest.mark.parametrize("name", FLAGS)
def test_every_flag_of_the_pypi_option_exists_with_its_default(name):
    assert getattr(Option(), name) == getattr(ncnn.Option(), name)


def test_masked_option_copies_and_leaves_the_original():
    opt = Option()
    assert get_masked_option(opt, 0) is opt
    m = get_masked_option(opt, FEAT_NO_VULKAN | FEAT_NO_FP16_STORAGE | FEAT_NO_THREADING)
    assert m is not opt
    assert (m.use_vulkan_compute, m.use_fp16_storage, m.use_fp16_packed, m.num_threads) == (
        False,
        False,
        False,
        1,
    )
    assert opt.use_fp16_storage and opt.use_fp16_packed


def test_layer_option_switches_off_storage_the_layer_cannot_take():
    opt = Option()
    plain = Layer()
    o = get_layer_option(opt, plain)
    assert not (o.use_fp16_storage or o.use_fp16_packed or o.use_fp16_arithmetic)
    assert opt.use_fp16_storage  # the net's option is untouched
    fp16 = Layer()
    fp16.support_fp16_storage = True
    assert get_layer_option(opt, fp16) is opt
    fp32 = Option()
    fp32.use_fp16_storage = fp32.use_fp16_packed = fp32.use_fp16_arithmetic = False
    assert get_layer_option(fp32, plain) is fp32


def test_shader_bits_follow_the_flags_in_order():
    opt = Option()
    for name in SHADER_OPTION_BITS:
        setattr(opt, name, False)
    assert opt.shader_bits() == 0
    opt.use_fp16_storage = True
    assert opt.shader_bits() == 1 << SHADER_OPTION_BITS.index("use_fp16_storage")
