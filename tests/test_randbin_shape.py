"""randbin's calibration forward at the wrong input size: the error names the failing layer and,
where the layers before it let it be derived, the input size it needs (issue 16: ViT needs
384x384, not the default 224x224)."""

from __future__ import annotations

import pathlib
import subprocess
import sys

import numpy as np
import pytest

import ncnn_c
from ncnn_c.tools.randbin import random_weights

ROOT = pathlib.Path(__file__).resolve().parents[1]
VIT = ROOT / "models" / "benchmark_extra" / "vision_transformer.param"


def _cnn(tmp_path, fc_inputs: int) -> str:
    """Input (no shape) -> 3x3 conv (8 channels, same size) -> 2x2 max pooling -> InnerProduct
    reading ``fc_inputs`` values per output: 8*16*16 fits a 32x32 input."""
    text = "\n".join(
        [
            "7767517",
            "4 4",
            "Input data 0 1 data",
            "Convolution conv 1 1 data c 0=8 1=3 4=1 5=1 6=216 9=1",
            "Pooling pool 1 1 c p 0=0 1=2 2=2",
            f"InnerProduct fc 1 1 p out 0=10 1=1 2={10 * fc_inputs}",
        ]
    )
    path = tmp_path / "cnn.param"
    path.write_text(text + "\n")
    return str(path)


def test_vit_says_it_needs_384():
    with pytest.raises(ValueError) as e:
        random_weights(str(VIT))
    msg = str(e.value)
    assert "BinaryOp 'Add_11'" in msg and "224x224" in msg
    assert "it needs a 384x384 input: --shape 3,384,384" in msg


def test_inner_product_fixes_the_input_size(tmp_path):
    param = _cnn(tmp_path, 8 * 16 * 16)
    with pytest.raises(ValueError) as e:
        random_weights(param)
    msg = str(e.value)
    assert "InnerProduct 'fc'" in msg and "--shape 3,32,32" in msg
    # and at that size the weights come out and run
    data = random_weights(param, input_shape=(3, 32, 32))
    net = ncnn_c.Net()
    assert net.load_param(param) == 0 and net.load_model_mem(data) == 0
    with net.create_extractor() as ex:
        ex.input("data", ncnn_c.Mat(np.ones((3, 32, 32), np.float32)))
        ret, out = ex.extract("out")
    assert ret == 0 and out.w == 10


def test_no_size_fits(tmp_path):
    # 8 x 16 x 15 values: no square input gives them, so the message says what to try
    param = _cnn(tmp_path, 8 * 16 * 15)
    with pytest.raises(ValueError) as e:
        random_weights(param, input_shape=(3, 40, 40))
    msg = str(e.value)
    assert "InnerProduct 'fc'" in msg and "at a 40x40 input" in msg
    assert "no input size that suits it could be derived: try --shape C,H,W" in msg


def test_command_line_names_the_size(tmp_path):
    out = tmp_path / "m.bin"
    cmd = [sys.executable, "-m", "ncnn_c.tools.randbin", _cnn(tmp_path, 8 * 8 * 8), str(out)]
    r = subprocess.run(cmd, capture_output=True, text=True, check=False)
    assert r.returncode == 1 and not out.exists()
    assert "--shape 3,16,16" in r.stderr.splitlines()[-1], r.stderr
    r = subprocess.run([*cmd, "--shape", "3,16,16"], capture_output=True, text=True, check=False)
    assert r.returncode == 0 and out.stat().st_size > 0, r.stderr
