"""Memory type choice per allocator kind on the memory layouts of real drivers (no GPU
needed: the choice reads only the device's memory types and heaps)."""

from __future__ import annotations

import types

import pytest

from ncnn_c.gpu import _vk
from ncnn_c.gpu.device import VulkanDevice, _resizable_bar

DL, HV, HC, CACHED = (
    _vk.MEMORY_DEVICE_LOCAL,
    _vk.MEMORY_HOST_VISIBLE,
    _vk.MEMORY_HOST_COHERENT,
    _vk.MEMORY_HOST_CACHED,
)
HEAP_DL = _vk.MEMORY_HEAP_DEVICE_LOCAL
GiB = 1 << 30

# (flags, heap) per type, (size, flags) per heap
# a discrete GPU with resizable BAR (NVIDIA's layout with ReBAR on: the whole VRAM heap has a
# host-visible coherent type)
REBAR = (
    [(DL, 0), (HV | HC, 1), (HV | HC | CACHED, 1), (DL | HV | HC, 0)],
    [(80 * GiB, HEAP_DL), (64 * GiB, 0)],
)
# the same GPU without it: host-visible device-local memory is a 256 MiB window of its own heap
SMALL_BAR = (
    [(DL, 0), (HV | HC, 1), (HV | HC | CACHED, 1), (DL | HV | HC, 2)],
    [(24 * GiB, HEAP_DL), (64 * GiB, 0), (256 << 20, HEAP_DL)],
)
# a driver that calls part of host memory device local (a cached type in that heap)
CACHED_DL = (
    [(DL, 0), (DL | HV | HC | CACHED, 0), (DL | HV | HC, 0), (HV | HC, 1)],
    [(8 * GiB, HEAP_DL), (16 * GiB, 0)],
)
# a mappable device-local type that is not coherent: uploads write it without a flush
NONCOHERENT = (
    [(DL, 0), (HV | HC, 1), (DL | HV, 0)],
    [(16 * GiB, HEAP_DL), (64 * GiB, 0)],
)
# unified memory (lavapipe, integrated GPUs): every device-local type is host visible
UMA = ([(DL | HV | HC | CACHED, 0), (DL | HV | HC, 0)], [(16 * GiB, HEAP_DL)])


def fake_device(layout):
    mem_types, heaps = layout
    dl = [f for f, _ in mem_types if f & DL]
    uma = bool(dl) and all(f & HV for f in dl)
    info = types.SimpleNamespace(
        memory_types=mem_types,
        memory_heaps=heaps,
        unified_memory=uma,
        resizable_bar=uma or _resizable_bar(mem_types, heaps),
    )
    dev = types.SimpleNamespace(info=info)
    dev._memory_type = VulkanDevice._memory_type.__get__(dev)
    dev.memory_type_for = VulkanDevice.memory_type_for.__get__(dev)
    return dev


@pytest.mark.parametrize(
    "layout, rebar", [(REBAR, True), (SMALL_BAR, False), (CACHED_DL, False), (NONCOHERENT, True)]
)
def test_resizable_bar_rule(layout, rebar):
    assert _resizable_bar(*layout) is rebar


@pytest.mark.parametrize(
    "layout, blob, weight, staging",
    [
        (REBAR, 0, 3, 2),  # weights in mappable VRAM, blobs in plain VRAM
        (SMALL_BAR, 0, 0, 2),  # the small window is left alone
        (CACHED_DL, 0, 0, 3),
        (NONCOHERENT, 0, 0, 1),  # no coherent mappable VRAM: weights staged as before
        (UMA, 0, 0, 0),  # every kind in the one mappable type
    ],
)
def test_memory_type_per_kind(layout, blob, weight, staging):
    dev = fake_device(layout)
    assert dev.memory_type_for("blob")[0] == blob
    assert dev.memory_type_for("weight")[0] == weight
    assert dev.memory_type_for("staging")[0] == staging


def test_type_bits_restrict_the_choice():
    dev = fake_device(REBAR)
    # a buffer whose requirements exclude the BAR type falls back to plain device memory
    assert dev.memory_type_for("weight", 0b0111)[0] == 0
    with pytest.raises(_vk.VulkanError, match="no memory type for staging"):
        dev.memory_type_for("staging", 0b0001)
