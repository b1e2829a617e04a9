"""Loading a Net from untrusted sources: paths that are not regular files (a FIFO without a
writer must not hang the loader) and the caps on the layer and blob counts of a param header.

Anything that could hang runs in a child process under a timeout.
"""

from __future__ import annotations

import gc
import os
import pathlib
import struct
import subprocess
import sys
import textwrap

import pytest

import ncnn_c.net.parse as parse_mod
from ncnn_c.layer import LAYER_TYPES
from ncnn_c.net import Net

ROOT = pathlib.Path(__file__).resolve().parents[1]

needs_fifo = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this platform")


def _run_child(code: str, timeout: float = 60) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True, text=True, timeout=timeout, env=env, cwd=ROOT,
    )  # fmt: skip


# -- paths that are not regular files -------------------------------------------------------
@needs_fifo
def test_fifo_without_a_writer_is_refused_not_waited_on(tmp_path):
    fifo = tmp_path / "model.fifo"
    os.mkfifo(fifo)
    code = f"""
        import logging, sys
        logging.basicConfig(stream=sys.stdout, level=logging.ERROR, format="%(message)s")
        from ncnn_c import capi
        from ncnn_c.net import Net
        path = {str(fifo)!r}
        net = Net()
        print("load_param", net.load_param(path))
        print("load_param_bin", net.load_param_bin(path))
        net.load_param_mem("7767517\\n1 1\\nInput in 0 1 data 0=4\\n")
        print("load_model", net.load_model(path))
        h = capi.ncnn_net_create()
        print("capi_load_param", capi.ncnn_net_load_param(h, path))
        print("capi_load_param_bin", capi.ncnn_net_load_param_bin(h, path))
        print("capi_load_model", capi.ncnn_net_load_model(h, path))
        capi.ncnn_net_destroy(h)
    """
    try:
        r = _run_child(code, timeout=60)
    except subprocess.TimeoutExpired:
        pytest.fail("a loader blocked on a FIFO without a writer")
    assert r.returncode == 0, r.stderr
    for what in ("load_param", "load_param_bin", "load_model"):
        assert f"\n{what} -1\n" in "\n" + r.stdout, r.stdout
        assert f"\ncapi_{what} -1\n" in "\n" + r.stdout, r.stdout
    assert f"{what}: {str(fifo)!r} is not a regular file (a FIFO)" in r.stdout


@pytest.mark.parametrize("loader", ["load_param", "load_param_bin", "load_model"])
def test_directory_is_refused_with_its_kind(caplog, tmp_path, loader):
    net = Net()
    if loader == "load_model":
        assert net.load_param_mem("7767517\n1 1\nInput in 0 1 data 0=4\n") == 0
    assert getattr(net, loader)(str(tmp_path)) == -1
    assert f"{str(tmp_path)!r} is not a regular file (a directory)" in caplog.text


def test_character_device_is_refused(caplog):
    if not os.path.exists("/dev/zero"):
        pytest.skip("no /dev/zero")
    assert Net().load_param("/dev/zero") == -1
    assert "is not a regular file (a character device)" in caplog.text


def test_regular_files_still_load(tmp_path):
    p = tmp_path / "one.param"
    p.write_text("7767517\n1 1\nInput in 0 1 data 0=4\n")
    net = Net()
    assert net.load_param(p) == 0 and net.load_param(str(p)) == 0
    assert net.input_names() == ["data"]


# -- caps on the header's counts ------------------------------------------------------------
def _relu_chain(layers: int, blobs: int | None = None) -> str:
    lines = ["7767517", f"{layers + 1} {blobs if blobs is not None else layers + 1}", "Input data 0 1 b0 0=4"]
    lines += [f"ReLU r{i} 1 1 b{i} b{i + 1}" for i in range(layers)]
    return "\n".join(lines) + "\n"


class CountingNet(Net):
    """Counts the layers a load creates: a count the file cannot hold must fail before any."""

    def __init__(self) -> None:
        super().__init__()
        self.created = 0

    def _create_layer(self, typeindex, featmask):
        self.created += 1
        return super()._create_layer(typeindex, featmask)


def test_layer_count_over_the_default_cap_fails_before_any_layer(caplog, monkeypatch):
    monkeypatch.delenv("NCNN_C_MAX_LAYERS", raising=False)
    assert parse_mod.DEFAULT_MAX_LAYERS == 100_000
    net = CountingNet()
    text = _relu_chain(100_000)  # a valid file of 100,001 layers
    assert net.load_param_mem(text) == -1
    assert "line 2: layer count 100001 is over the limit of 100000 layers (NCNN_C_MAX_LAYERS" in caplog.text
    assert net.created == 0 and net.layers() == []


def test_env_sets_the_layer_cap(caplog, monkeypatch):
    monkeypatch.setenv("NCNN_C_MAX_LAYERS", "4")
    assert Net().load_param_mem(_relu_chain(3)) == 0  # 4 layers
    assert Net().load_param_mem(_relu_chain(4)) == -1
    assert "layer count 5 is over the limit of 4 layers" in caplog.text
    # the blob cap follows: 4 x the layer cap
    assert Net().load_param_mem(_relu_chain(3, blobs=17)) == -1
    assert "blob count 17 is over the limit of 16 blobs" in caplog.text
    # the same caps hold for the binary param
    assert Net().load_param_bin(struct.pack("<3i", 7767517, 5, 5)) == -1
    assert "layer count 5 is over the limit of 4 layers" in caplog.text


@pytest.mark.parametrize("value", ["lots", "0", "-3"])
def test_bad_env_cap_falls_back_to_the_default_with_a_warning(caplog, monkeypatch, value):
    monkeypatch.setenv("NCNN_C_MAX_LAYERS", value)
    assert Net().load_param_mem(_relu_chain(3)) == 0
    assert f"NCNN_C_MAX_LAYERS={value!r} is not a positive integer: using 100000" in caplog.text


def test_text_counts_the_file_cannot_hold_fail_before_any_layer(caplog):
    net = CountingNet()
    assert net.load_param_mem("7767517\n50000 2\nInput in 0 1 data\nReLU r 1 1 data y\n") == -1
    assert "layer count is 50000 but the file has only 2 layer lines" in caplog.text
    assert net.load_param_mem("7767517\n2 90000\nInput in 0 1 data\nReLU r 1 1 data y\n") == -1
    assert "blob count 90000 is more than a 52-character file can name" in caplog.text
    assert net.created == 0


def test_binary_counts_the_file_cannot_hold_fail_before_any_layer(caplog):
    net = CountingNet()
    one_layer = struct.pack("<5i", 16, 0, 1, 0, -233)  # Input, no bottoms, top 0, no params
    assert net.load_param_bin(struct.pack("<3i", 7767517, 1, 1) + one_layer) == 0
    assert net.load_param_bin(struct.pack("<3i", 7767517, 50000, 1) + one_layer) == -1
    assert "layer count 50000 / blob count 1 need at least 800004 bytes but only 20 follow" in caplog.text
    assert net.load_param_bin(struct.pack("<3i", 7767517, 1, 90000) + one_layer) == -1
    assert "need at least 360016 bytes but only 20 follow" in caplog.text
    assert net.created == 1  # the valid load only


# -- the cost of a layer ----------------------------------------------------------------------
def test_load_param_does_not_run_the_cyclic_collector_per_layer():
    # the collector's passes over the growing graph were ~half of a large load's time
    text = _relu_chain(20_000)
    runs = []

    def count(phase, info):
        if phase == "start":
            runs.append(info["generation"])

    gc.collect()
    gc.callbacks.append(count)
    try:
        assert Net().load_param_mem(text) == 0
    finally:
        gc.callbacks.remove(count)
    assert runs == [] or len(runs) <= 1, f"{len(runs)} collections during one load"
    assert gc.isenabled()


def test_load_param_leaves_a_disabled_collector_disabled():
    gc.disable()
    try:
        assert Net().load_param_mem(_relu_chain(2)) == 0
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_builtin_layers_share_their_type_name_and_the_blob_index():
    net = Net()
    assert net.load_param_mem(_relu_chain(3)) == 0
    # a built-in layer's type is ncnn's one name string, not a copy from each param line
    assert all(layer.type is LAYER_TYPES[layer.typeindex] for layer in net.layers())
    assert net.find_blob_index_by_name("b3") == 3 and net.find_blob_index_by_name("nope") == -1
    assert Net().load_param_bin(struct.pack("<8i", 7767517, 1, 1, 16, 0, 1, 0, -233)) == 0
