"""Loading a Net from untrusted sources: paths that are not regular files (a FIFO without a
writer must not hang the loader) and the caps on the layer and blob counts of a param header.

Anything that could hang runs in a child process under a timeout.
"""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys
import textwrap

import pytest

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
