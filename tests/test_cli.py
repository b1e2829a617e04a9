"""``python -m ncnn_c``: the subcommands info, run and capi, their help and exit codes.

End-to-end cases run the command in a fresh process, as a user or a script runs it; help,
usage errors and failures call ``ncnn_c.__main__.main`` in this process (the same code,
without a second interpreter start each). The per-user cache directory points into the
test's temporary directory.
"""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from conftest import MODELS, ROOT

PARAM = MODELS / "squeezenet_v1.1.param"
BIN = MODELS / "squeezenet_v1.1.bin"
IMAGE = MODELS / "256-ncnn.png"


def cli(*args, tmp: Path, timeout: int = 300) -> subprocess.CompletedProcess:
    env = dict(os.environ, NCNN_C_CACHE_DIR=str(tmp / "user-cache"))
    return subprocess.run(
        [sys.executable, "-m", "ncnn_c", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
        cwd=tmp,
    )


def inproc(*args, tmp: Path, capsys, monkeypatch) -> tuple[int, str, str]:
    """(exit code, stdout, stderr) of ``main(args)`` in this process."""
    from ncnn_c.__main__ import main

    monkeypatch.setenv("NCNN_C_CACHE_DIR", str(tmp / "user-cache"))
    monkeypatch.chdir(tmp)
    monkeypatch.setattr(sys, "argv", ["/usr/local/bin/ncnn_c"])  # as the console script runs
    capsys.readouterr()
    try:
        code = main([str(a) for a in args])
    except SystemExit as e:  # argparse: --help (0) and usage errors (2)
        code = e.code if isinstance(e.code, int) else 1
    out, err = capsys.readouterr()
    return code, out, err


def ok(*args, tmp: Path) -> str:
    r = cli(*args, tmp=tmp)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    return r.stdout


# ------------------------------------------------------------------ help and usage errors


def test_help_lists_every_command(tmp_path):
    out = ok("--help", tmp=tmp_path)
    for name in ("info", "run", "capi", "bench"):
        assert re.search(rf"^\s+{name}\s", out, re.M), name


@pytest.mark.parametrize("command", ["info", "run", "capi", "bench"])
def test_every_command_has_help(command, tmp_path, capsys, monkeypatch):
    code, out, _ = inproc(command, "--help", tmp=tmp_path, capsys=capsys, monkeypatch=monkeypatch)
    assert code == 0
    assert re.sub(r"\s+", " ", out).startswith(f"usage: ncnn_c {command}")


def test_usage_names_the_program_as_it_was_run(tmp_path):
    assert ok("--help", tmp=tmp_path).startswith("usage: python -m ncnn_c ")
    script = "import sys; from ncnn_c.__main__ import main; sys.argv[0] = '/opt/bin/ncnn_c'; sys.exit(main())"
    r = subprocess.run(
        [sys.executable, "-c", script, "run", "--help"], capture_output=True, text=True, cwd=tmp_path
    )
    assert r.returncode == 0 and r.stdout.startswith("usage: ncnn_c run "), r.stdout + r.stderr


@pytest.mark.parametrize(
    "args",
    [
        [],  # no command
        ["nosuchcommand"],
        ["run", str(PARAM)],  # missing operands
        ["run", str(PARAM), str(BIN), str(IMAGE), "--device", "tpu"],
        ["run", str(PARAM), str(BIN), str(IMAGE), "--size", "abc"],
        ["run", str(PARAM), str(BIN), str(IMAGE), "--size", "0x5"],
        ["run", str(PARAM), str(BIN), str(IMAGE), "--mean", "1,2"],
        ["run", str(PARAM), str(BIN), str(IMAGE), "--norm", "x"],
        ["run", str(PARAM), str(BIN), str(IMAGE), "--top", "0"],
        ["run", str(PARAM), str(BIN), str(IMAGE), "--labels", "/nonexistent/labels.txt"],
        ["run", str(PARAM), str(BIN), str(IMAGE), "--cache", "ftp://x", "--no-cache"],
        ["capi"],  # one of --build / --cflags / --libs is required
        ["capi", "--cflags", "--libs"],
        ["info", "--bogus"],
    ],
)
def test_usage_errors_exit_2(args, tmp_path, capsys, monkeypatch):
    code, out, err = inproc(*args, tmp=tmp_path, capsys=capsys, monkeypatch=monkeypatch)
    assert code == 2, (out, err)
    assert err.strip(), "a usage error says what is wrong"


def test_a_usage_error_exits_2_from_the_command_line(tmp_path):
    r = cli("run", PARAM, BIN, IMAGE, "--size", "abc", tmp=tmp_path)
    assert r.returncode == 2 and "--size" in r.stderr


# ------------------------------------------------------------------ info


def test_info_text_and_json_agree(tmp_path):
    text = ok("info", tmp=tmp_path)
    assert f"cache directory: {tmp_path / 'user-cache'}" in text
    r = json.loads(ok("info", "--json", tmp=tmp_path))
    assert r["cache_dir"] == str(tmp_path / "user-cache")
    assert r["version"] == "0.1.0"
    assert set(r["native"]) == {"_shaderc", "_hash", "_cpu", "_plan"}
    assert r["cpu_plan"] in text and (r["cpu_plan"] == "on (oneDNN)") == (r["native"]["_plan"] is not None)
    assert r["cpu"]["count"] >= 1
    assert len(r["vulkan_devices"]) == text.count("\nGPU ")


@pytest.mark.gpu
def test_info_lists_the_vulkan_device(tmp_path):
    r = json.loads(ok("info", "--json", tmp=tmp_path))
    assert r["vulkan_devices"], "lavapipe should be there"
    d = r["vulkan_devices"][0]
    assert d["name"] and d["driver"] and re.fullmatch(r"\d+\.\d+\.\d+", d["api_version"])
    assert re.fullmatch(r"[0-9a-f]{32}", d["pipeline_cache_uuid"])
    assert {"fp16_storage", "int8_storage", "subgroup_ops"} <= set(d["features"])
    assert r["default_gpu"] == 0


# ------------------------------------------------------------------ run


def _oracle_scores() -> np.ndarray:
    """SqueezeNet's scores for the test image from the PyPI ncnn, preprocessed as `run` does."""
    import ncnn
    from PIL import Image

    with Image.open(IMAGE) as im:
        bgr = np.ascontiguousarray(np.asarray(im.convert("RGB"))[:, :, ::-1])
    net = ncnn.Net()
    net.opt.use_vulkan_compute = False
    net.load_param(str(PARAM))
    net.load_model(str(BIN))
    mat = ncnn.Mat.from_pixels_resize(bgr, ncnn.Mat.PixelType.PIXEL_BGR, bgr.shape[1], bgr.shape[0], 227, 227)
    mat.substract_mean_normalize([104.0, 117.0, 123.0], [])
    ex = net.create_extractor()
    ex.input("data", mat)
    _, out = ex.extract("prob")
    return np.array(out).reshape(-1)


def test_run_classifies_with_labels_like_the_oracle(tmp_path):
    r = json.loads(ok("run", PARAM, BIN, IMAGE, "--json", tmp=tmp_path))
    source = r["input"].pop("source")
    assert source["size"] == "the model's Input layer" and source["mean"].startswith(
        "default for a model file"
    )
    assert r["input"] == {
        "blob": "data",
        "w": 227,
        "h": 227,
        "mean": [104.0, 117.0, 123.0],
        "norm": [],
        "order": "BGR",
    }
    (out,) = r["outputs"]
    assert out["name"] == "prob" and out["shape"] == [1000]
    ref = _oracle_scores()
    want = np.argsort(-ref, kind="stable")[:5]
    assert [t["class"] for t in out["top"]] == list(want)
    np.testing.assert_allclose([t["score"] for t in out["top"]], ref[want], rtol=1e-4)
    labels = (MODELS / "synset_words.txt").read_text().splitlines()
    assert [t["label"] for t in out["top"]] == [labels[i].partition(" ")[2] for i in want]
    text = ok("run", PARAM, BIN, IMAGE, "--top", "3", tmp=tmp_path)
    assert re.search(r"class\s+532\s+dining table, board", text)
    assert len(re.findall(r"^\s+\d\.\d{4}\s+class", text, re.M)) == 3


def test_run_options_change_the_input(tmp_path):
    r = json.loads(
        ok("run", PARAM, BIN, IMAGE, "--rgb", "--mean", "1", "--norm", "0.5,0.5,0.5", "--size", "200x190", "--json",
           tmp=tmp_path)
    )  # fmt: skip
    # an explicit size overrides the Input layer's; SqueezeNet's global pooling takes any size
    assert r["input"].pop("source") == {
        "size": "--size",
        "order": "--rgb",
        "mean": "--mean",
        "norm": "--norm",
    }
    assert r["input"] == {
        "blob": "data",
        "w": 200,
        "h": 190,
        "mean": [1.0] * 3,
        "norm": [0.5] * 3,
        "order": "RGB",
    }
    assert r["outputs"][0]["shape"] == [1000]


def test_run_without_labels_prints_class_indexes(tmp_path):
    d = tmp_path / "model"
    d.mkdir()
    for f in (PARAM, BIN):
        shutil.copy(f, d / f.name)
    text = ok("run", d / PARAM.name, d / BIN.name, IMAGE, tmp=tmp_path)
    assert re.search(r"class\s+532\s+\(no labels file\)", text)
    # a labels file given explicitly names the classes
    labels = tmp_path / "names.txt"
    labels.write_text("".join(f"thing {i}\n" for i in range(1000)))
    text = ok("run", d / PARAM.name, d / BIN.name, IMAGE, "--labels", labels, tmp=tmp_path)
    assert re.search(r"class\s+532\s+thing 532$", text, re.M)


def test_run_dumps_outputs_of_other_models(tmp_path):
    param = tmp_path / "tiny.param"
    param.write_text("7767517\n2 2\nInput data 0 1 data 0=9 1=7 2=3\nReLU relu 1 1 data out 0=0.5\n")
    weights = tmp_path / "tiny.bin"
    weights.write_bytes(b"")
    r = json.loads(ok("run", param, weights, IMAGE, "--json", tmp=tmp_path))
    assert r["input"]["w"] == 9 and r["input"]["h"] == 7 and r["input"]["mean"] == []
    (out,) = r["outputs"]
    assert out["name"] == "out" and out["shape"] == [9, 7, 3] and "top" not in out
    assert 0.0 <= out["min"] <= out["mean"] <= out["max"] <= 255.0
    text = ok("run", param, weights, IMAGE, tmp=tmp_path)
    assert re.search(r"output 'out' \[9x7x3\] min \S+ mean \S+ max \S+", text)


@pytest.mark.parametrize("case", ["no image", "not an image", "no model", "bad param"])
def test_run_failures_exit_1(case, tmp_path, capsys, monkeypatch):
    args = [PARAM, BIN, IMAGE]
    if case == "no image":
        args[2] = tmp_path / "missing.png"
    elif case == "not an image":
        args[2] = tmp_path / "text.png"
        args[2].write_text("hello")
    elif case == "no model":
        args[0] = tmp_path / "missing.param"
    else:
        args[0] = tmp_path / "bad.param"
        args[0].write_text("7767517\n1 1\nNoSuchLayer x 0 1 data\n")
    code, out, err = inproc("run", *args, tmp=tmp_path, capsys=capsys, monkeypatch=monkeypatch)
    assert code == 1, (out, err)
    assert "ncnn_c run: " in err and not out


@pytest.mark.gpu
def test_run_on_vulkan_keeps_the_pipeline_cache(tmp_path):
    # the first run uses the default store, in the per-user cache directory
    first = json.loads(ok("run", PARAM, BIN, IMAGE, "--device", "vulkan", "--json", tmp=tmp_path))
    db = tmp_path / "user-cache" / "pipelines.sqlite3"
    assert db.is_file()
    assert first["cache"]["loaded"] is False and first["cache"]["compiled"] > 0 and first["cache"]["saved"]
    # the second names the same store by URL: warm, nothing compiled
    url = f"sqlite:///{db}"
    second = json.loads(
        ok("run", PARAM, BIN, IMAGE, "--device", "vulkan", "--cache", url, "--json", tmp=tmp_path)
    )
    assert second["cache"]["loaded"] is True and second["cache"]["compiled"] == 0
    assert first["outputs"][0]["top"][0]["class"] == second["outputs"][0]["top"][0]["class"] == 532


@pytest.mark.gpu
def test_run_refuses_a_cache_url_whose_directory_does_not_exist(tmp_path, capsys, monkeypatch):
    url = f"sqlite:///{tmp_path}/a/b/c/x.db"
    code, _, err = inproc(
        "run", PARAM, BIN, IMAGE, "--device", "vulkan", "--cache", url, tmp=tmp_path, capsys=capsys,
        monkeypatch=monkeypatch,
    )  # fmt: skip
    assert code == 2 and "does not exist" in err, err
    assert not (tmp_path / "a").exists()
    pw = "postgresql://user:hunter2@127.0.0.1:1/db?connect_timeout=1"
    code, _, err = inproc(
        "run", PARAM, BIN, IMAGE, "--device", "vulkan", "--cache", "redis://u:hunter2@h/0", tmp=tmp_path,
        capsys=capsys, monkeypatch=monkeypatch,
    )  # fmt: skip
    assert code == 2 and "hunter2" not in err and "***" in err, err
    assert pw  # the PostgreSQL case is covered by tests/test_cachestore_faults.py


def test_run_on_a_missing_gpu_exits_1(tmp_path, capsys, monkeypatch):
    code, _, err = inproc(
        "run",
        PARAM,
        BIN,
        IMAGE,
        "--device",
        "vulkan",
        "--gpu",
        "99",
        tmp=tmp_path,
        capsys=capsys,
        monkeypatch=monkeypatch,
    )
    assert code == 1 and "no Vulkan device" in err


# ------------------------------------------------------------------ capi


def test_capi_flags_match_the_module_entry_point(tmp_path):
    for flag in ("--cflags", "--libs"):
        via_cli = ok("capi", flag, tmp=tmp_path)
        direct = subprocess.run(
            [sys.executable, "-m", "ncnn_c.capi", flag],
            capture_output=True,
            text=True,
            cwd=tmp_path,
            check=True,
        ).stdout
        assert via_cli == direct
    assert ok("capi", "--cflags", tmp=tmp_path).split() == [
        f"-I{ROOT}/capi/include",
        f"-I{ROOT}/capi/include/ncnn",
    ]
    prefix = tmp_path / "p"
    assert ok("capi", "--libs", "--prefix", prefix, tmp=tmp_path).split() == [
        f"-L{prefix}/lib",
        "-lncnn_c",
        f"-Wl,-rpath,{prefix}/lib",
    ]


@pytest.mark.capi
def test_capi_build_into_a_directory(tmp_path):
    out = ok("capi", "--build", "--build-dir", tmp_path / "lib", tmp=tmp_path)
    assert Path(out.split()[-1]) == tmp_path / "lib" / "libncnn_c.so"
    assert (tmp_path / "lib" / "ncnn_c.pc").is_file()


# ------------------------------------------------------------------ the first hour


def test_run_prints_the_preprocessing_and_where_each_value_came_from(tmp_path):
    r = cli("run", PARAM, BIN, IMAGE, "--top", "1", tmp=tmp_path)
    assert r.returncode == 0, r.stderr
    lines = r.stderr.splitlines()
    assert lines[0].startswith("ncnn_c run: preprocessing of input 'data'")
    rows = {line.split()[0]: line for line in lines[1:5]}
    assert re.match(r"\s+size\s+227x227\s+the model's Input layer$", rows["size"])
    assert re.match(r"\s+order\s+BGR\s+default: .*--rgb for RGB", rows["order"])
    assert re.match(
        r"\s+mean\s+104,117,123\s+default for a model file named squeezenet\*.*--mean", rows["mean"]
    )
    assert re.match(r"\s+norm\s+none\s+\(--norm", rows["norm"])
    assert "preprocessing" not in r.stdout  # stdout stays the result


def test_a_renamed_model_says_it_gets_no_mean(tmp_path):
    # the file-name default is the only one: a renamed SqueezeNet runs without a mean, and says so
    d = tmp_path / "model"
    d.mkdir()
    shutil.copy(PARAM, d / "classifier.param")
    r = cli("run", d / "classifier.param", BIN, IMAGE, "--json", tmp=tmp_path)
    assert r.returncode == 0, r.stderr
    pre = json.loads(r.stdout)["input"]
    assert pre["mean"] == [] and "--mean B,G,R" in pre["source"]["mean"]
    assert re.search(r"^\s+mean\s+none\s+\(--mean B,G,R", r.stderr, re.M)
    r = cli("run", d / "classifier.param", BIN, IMAGE, "--mean", "104,117,123", "--json", tmp=tmp_path)
    assert json.loads(r.stdout)["outputs"][0]["top"][0]["class"] == 532  # as the original name gives


def test_a_missing_pillow_names_the_extra(tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "PIL", None)  # import fails as if Pillow were not installed
    code, out, err = inproc("run", PARAM, BIN, IMAGE, tmp=tmp_path, capsys=capsys, monkeypatch=monkeypatch)
    assert code == 1 and "reading images needs Pillow: pip install 'ncnn_c[image]'" in err
    import tomllib

    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert [d.lower() for d in extras["image"]] == ["pillow"]


def _no_gpu_env() -> dict[str, str]:
    """A Vulkan loader that finds no driver: the machine as one without a GPU."""
    return {"VK_ICD_FILENAMES": "/nonexistent/icd.json", "VK_DRIVER_FILES": "/nonexistent/icd.json"}


def test_bench_reports_the_device_that_ran(tmp_path, monkeypatch):
    for k, v in _no_gpu_env().items():
        monkeypatch.setenv(k, v)
    r = cli("bench", PARAM, "--device", "vulkan", "--loops", "1", "--input", "32x32x3", tmp=tmp_path)
    assert r.returncode == 0, r.stderr
    assert ", cpu, input 32x32x3)" in r.stdout and "vulkan" not in r.stdout
    assert "no Vulkan device, running on the CPU" in r.stderr


def test_run_without_a_gpu_prints_one_clear_line(tmp_path, monkeypatch):
    for k, v in _no_gpu_env().items():
        monkeypatch.setenv(k, v)
    r = cli("run", PARAM, BIN, IMAGE, "--device", "vulkan", tmp=tmp_path)
    assert r.returncode == 1 and not r.stdout
    (line,) = r.stderr.splitlines()
    assert line.startswith("ncnn_c run: no Vulkan device") and "--device cpu" in line
    assert "gpu index" not in line


def test_run_on_a_gpu_index_out_of_range_says_how_many(tmp_path, capsys, monkeypatch):
    import ncnn_c

    n = ncnn_c.get_gpu_count()
    code, _, err = inproc(
        "run", PARAM, BIN, IMAGE, "--device", "vulkan", "--gpu", "99", tmp=tmp_path, capsys=capsys,
        monkeypatch=monkeypatch,
    )  # fmt: skip
    assert code == 1
    assert (
        err.strip().splitlines()[-1].startswith("ncnn_c run: no Vulkan device")
        and "invalid gpu index" not in err
    )
    if n:
        assert f"this machine has {n}" in err


def test_no_progress_bar_off_a_terminal(monkeypatch):
    from ncnn_c.tools import run

    monkeypatch.setattr(sys, "stderr", io.StringIO())
    assert run._progress(4, "run x") is None


def test_a_closed_pipe_ends_quietly(tmp_path):
    # `ncnn_c run --json | head`: the reader is gone before the output is written
    r_fd, w_fd = os.pipe()
    os.close(r_fd)
    try:
        p = subprocess.run(
            [sys.executable, "-m", "ncnn_c", "run", PARAM, BIN, IMAGE, "--json"],
            stdout=w_fd, stderr=subprocess.PIPE, text=True, cwd=tmp_path, timeout=300,
            env=dict(os.environ, NCNN_C_CACHE_DIR=str(tmp_path / "user-cache")),
        )  # fmt: skip
    finally:
        os.close(w_fd)
    assert p.returncode == 1
    assert "Traceback" not in p.stderr and "BrokenPipeError" not in p.stderr, p.stderr
