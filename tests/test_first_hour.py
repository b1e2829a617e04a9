"""What a new user meets in the first hour: types in an IDE, the hints a wrong file or a wrong
array gets, the packaging extras the README's commands need.

The command-line side (preprocessing shown, device reported, pipes, help) is in test_cli.py.
"""

from __future__ import annotations

import ast
import logging
import os
import re
import subprocess
import sys

import numpy as np
import pytest
from conftest import MODELS, ROOT

import ncnn_c as ncnn

PARAM = MODELS / "squeezenet_v1.1.param"
PARAM_BIN = MODELS / "squeezenet_v1.1.param.bin"
BIN = MODELS / "squeezenet_v1.1.bin"


# ------------------------------------------------------------------ types


def test_every_lazy_name_is_visible_to_type_checkers():
    tree = ast.parse((ROOT / "ncnn_c" / "__init__.py").read_text())
    guarded = next(n for n in tree.body if isinstance(n, ast.If) and ast.unparse(n.test) == "TYPE_CHECKING")
    imported = {
        (a.name, a.asname, (n.module or "").lstrip("."))
        for n in guarded.body
        if isinstance(n, ast.ImportFrom)
        for a in n.names
    }
    # ``X as X``: an explicit re-export, also under mypy's --no-implicit-reexport
    assert {(name, name, mod) for name, mod in ncnn._EXPORTS.items()} == imported


def test_mypy_sees_the_public_classes(tmp_path):
    pytest.importorskip("mypy")
    snippet = tmp_path / "user_code.py"
    snippet.write_text(
        "import ncnn_c\n"
        "net = ncnn_c.Net()\n"
        "reveal_type(net)\n"
        "reveal_type(ncnn_c.Mat(3))\n"
        "reveal_type(ncnn_c.get_gpu_device(0))\n"
        "reveal_type(net.create_extractor())\n"
        "reveal_type(ncnn_c.Option().pipeline_cache)\n"
    )
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--no-error-summary",
            "--cache-dir",
            str(tmp_path / "cache"),
            str(snippet),
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=600,
    )
    revealed = re.findall(r'Revealed type is "(.*)"', r.stdout)
    assert len(revealed) == 5, r.stdout + r.stderr
    assert not any(t == "Any" for t in revealed), revealed
    assert revealed[0] == "ncnn_c.net.core.Net"
    assert revealed[1].endswith(".Mat")
    assert "VulkanDevice | None" in revealed[2]
    assert revealed[3].endswith(".Extractor")
    assert "PipelineCache" in revealed[4]


# ------------------------------------------------------------------ hints: arrays


@pytest.fixture(scope="module")
def squeezenet():
    net = ncnn.Net()
    net.opt.use_vulkan_compute = False
    assert net.load_param(str(PARAM)) == 0 and net.load_model(str(BIN)) == 0
    return net


def _ncnn_records(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "ncnn_c" and r.levelno >= logging.WARNING]


def test_a_raw_ndarray_given_to_input_says_wrap_it(squeezenet):
    ex = squeezenet.create_extractor()
    with pytest.raises(TypeError, match=r"wrap it with ncnn\.Mat"):
        ex.input("data", np.zeros((3, 227, 227), np.float32))
    with pytest.raises(TypeError, match="expected an ncnn_c.Mat, got list$"):
        ex.input("data", [1.0])


def test_an_hwc_array_gets_one_hint_and_still_runs(squeezenet, caplog):
    ex = squeezenet.create_extractor()
    hwc = np.zeros((227, 227, 3), np.float32)
    with caplog.at_level(logging.WARNING, "ncnn_c"):
        assert ex.input("data", ncnn.Mat(hwc)) == 0
    (msg,) = _ncnn_records(caplog)
    assert "Mats are CHW: transpose" in msg and "Mat.from_pixels" in msg
    caplog.clear()
    with caplog.at_level(logging.WARNING, "ncnn_c"):  # CHW: no hint
        assert ex.input("data", ncnn.Mat(np.zeros((3, 227, 227), np.float32))) == 0
        assert ex.input("data", ncnn.Mat(np.zeros((16, 8, 3), np.float32))) == 0  # c=16 h=8 w=3: plausible
    assert _ncnn_records(caplog) == []


# ------------------------------------------------------------------ hints: model files


def _load(caplog, method: str, src, param=None) -> tuple[int, list[str]]:
    """(ret, the ncnn_c warnings and errors) of one Net load call."""
    net = ncnn.Net()
    net.opt.use_vulkan_compute = False
    if param is not None:
        assert net.load_param(str(param)) == 0
    caplog.clear()
    with caplog.at_level(logging.WARNING, "ncnn_c"):
        ret = getattr(net, method)(src)
    return ret, _ncnn_records(caplog)


@pytest.mark.parametrize(
    "method, path, hint",
    [
        ("load_param", BIN, "binary data, a .bin: are the .param and the .bin swapped?"),
        ("load_param", PARAM_BIN, "it is a binary .param.bin: load it with load_param_bin"),
        ("load_param_bin", PARAM, "this is a text .param: load it with load_param"),
        ("load_param_bin", BIN, "are the .param.bin and the .bin swapped?"),
    ],
)
def test_a_param_loader_given_the_wrong_file_says_which(caplog, method, path, hint):
    ret, msgs = _load(caplog, method, str(path))
    assert ret == -1
    (msg,) = msgs
    assert msg.startswith(f"{method}: ") and hint in msg


@pytest.mark.parametrize("path, kind", [(PARAM, "a text .param"), (PARAM_BIN, "a binary .param.bin")])
def test_load_model_given_the_param_says_swapped(caplog, path, kind):
    ret, msgs = _load(caplog, "load_model", str(path), param=PARAM)
    assert ret == -1
    (msg,) = msgs
    assert f"starts like {kind}" in msg and "are the .param and the .bin swapped?" in msg


def test_a_bin_longer_than_the_model_loads_with_a_warning(caplog, tmp_path):
    weights = BIN.read_bytes()
    ret, msgs = _load(caplog, "load_model", str(BIN), param=PARAM)
    assert ret == 0 and msgs == []  # the matching pair: not a word
    longer = tmp_path / "longer.bin"
    longer.write_bytes(weights + bytes(100))
    for src in (str(longer), weights + bytes(100)):  # a file, and memory
        ret, msgs = _load(caplog, "load_model", src, param=PARAM)
        assert ret == 0
        (msg,) = msgs
        assert f"100 trailing bytes after the last weight (byte offset {len(weights)})" in msg
        assert "does not match the .param" in msg
    # zero weights (structure only) have no end: no warning
    ret, msgs = _load(caplog, "load_model", ncnn.DataReaderFromEmpty(), param=PARAM)
    assert ret == 0 and msgs == []


def test_a_short_bin_names_the_layer_where_it_ended(caplog):
    weights = BIN.read_bytes()
    ret, msgs = _load(caplog, "load_model", weights[:-1000], param=PARAM)
    assert ret == -1
    (msg,) = msgs
    assert msg.startswith("load_model: the .bin ended at layer #") and "it does not match the .param" in msg
    ret, msgs = _load(caplog, "load_model", b"", param=PARAM)
    assert ret == -1 and len(msgs) == 1 and "'conv1'" in msgs[0]


# ------------------------------------------------------------------ the README, the shipped files

# user-facing text speaks for itself: no pointers into the project's internal design notes
_INTERNAL = re.compile(r"\bseed \d{3}\b|§", re.I)


def test_no_internal_references_in_user_facing_text():
    files = [ROOT / "README.md", ROOT / "capi" / "README.md", ROOT / "models" / "README.md"]
    files += [p for p in (ROOT / "examples").rglob("*") if p.suffix in (".c", ".h", ".py", ".txt")]
    files += list((ROOT / "ncnn_c").rglob("*.py")) + list((ROOT / "docs").rglob("*.md"))
    found = {str(p.relative_to(ROOT)) for p in files if _INTERNAL.search(p.read_text(errors="replace"))}
    assert not found, sorted(found)


def test_the_readme_quick_start_runs(tmp_path):
    block = re.search(r"### `pip install`\n+```sh\n(.*?)```", (ROOT / "README.md").read_text(), re.S)
    assert block, "README.md lost its pip install quick start"
    lines = block.group(1).splitlines()
    assert any(re.match(r"pip install '\.\[image\]'", line) for line in lines)  # Pillow comes with it
    (run,) = [line.split("#")[0].split() for line in lines if line.startswith("python -m ncnn_c run ")]
    r = subprocess.run(
        [sys.executable, *run[1:], "--top", "1"],
        capture_output=True, text=True, cwd=ROOT, timeout=300,
        env={**os.environ, "NCNN_C_CACHE_DIR": str(tmp_path)},
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert re.search(r"class\s+285\s+Egyptian cat", r.stdout)  # the shipped photo, classified
    assert "preprocessing of input 'data'" in r.stderr


def test_the_shipped_photo_has_a_ppm_twin():
    from PIL import Image

    with Image.open(MODELS / "cat.jpg") as jpg, Image.open(MODELS / "cat.ppm") as ppm:
        assert jpg.size == ppm.size and ppm.mode == "RGB"
        diff = np.abs(np.asarray(jpg.convert("RGB"), np.int16) - np.asarray(ppm, np.int16))
    assert diff.mean() < 4  # the same picture, but for JPEG's loss


@pytest.mark.parametrize("cls", [ncnn.Net, ncnn.Extractor])
def test_the_public_methods_say_what_they_do(cls):
    import inspect

    bare = [
        n for n, f in vars(cls).items() if not n.startswith("_") and callable(f) and not inspect.getdoc(f)
    ]
    assert bare == [], f"{cls.__name__}: {bare}"
