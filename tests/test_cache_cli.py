"""``python -m ncnn_c cache inspect | verify | build``: reports, verdicts, exit codes, and a
built cache that a later process accepts as a full hit (nothing compiled in load_model nor in
the first inference)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from _warm_child import spawn as warm
from conftest import ROOT

pytestmark = pytest.mark.gpu


# A small network that reaches several shaders (convolution, its pack4 form, pooling, concat,
# softmax, packing) but loads and runs in a few seconds on lavapipe.
TINY = """7767517
9 10
Input data 0 1 data 0=16 1=16 2=3
Convolution conv1 1 1 data conv1 0=8 1=3 5=1 6=216 9=1
Split split 1 2 conv1 s1 s2
Convolution conva 1 1 s1 conva 0=8 1=1 5=1 6=64 9=1
Convolution convb 1 1 s2 convb 0=8 1=3 4=1 5=1 6=576 9=1
Concat cat 2 1 conva convb cat
Pooling pool1 1 1 cat pool1 0=0 1=3 2=2
Pooling gap 1 1 pool1 gap 0=1 4=1
Softmax prob 1 1 gap prob
"""

FP32 = {"use_fp16_packed": False, "use_fp16_storage": False, "use_fp16_arithmetic": False}


def cli(*args: str, timeout: int = 300) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "ncnn_c", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
        env=dict(os.environ),
    )


def inproc(capsys, *args: str) -> tuple[int, str, str]:
    """The same command line in this process (for the quick usage cases): (exit code, out, err)."""
    from ncnn_c.__main__ import main

    capsys.readouterr()
    try:
        rc = main(list(args))
    except SystemExit as e:  # argparse's usage errors and --help
        rc = int(e.code or 0)
    out, err = capsys.readouterr()
    return rc, out, err


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    from ncnn_c.tools.randbin import random_weights

    d = tmp_path_factory.mktemp("model")
    param = d / "tiny.param"
    param.write_text(TINY)
    binf = d / "tiny.bin"
    binf.write_bytes(random_weights(str(param), seed=3))
    return str(param), str(binf)


@pytest.fixture(scope="module")
def built(model, tmp_path_factory):
    """``cache build`` with default options, to a file: (path, CompletedProcess)."""
    param, binf = model
    out = tmp_path_factory.mktemp("built") / "tiny.vkcache"
    res = cli("cache", "build", param, binf, "-o", str(out))
    assert res.returncode == 0, res.stderr[-3000:]
    return out, res


# -- help and usage ---------------------------------------------------------------------------


@pytest.mark.parametrize("args", [(), ("inspect",), ("verify",), ("build",)])
def test_help_everywhere(capsys, args):
    rc, out, _ = inproc(capsys, "cache", *args, "--help")
    assert rc == 0
    assert "usage:" in out
    if not args:
        assert "inspect" in out and "verify" in out and "build" in out
        assert "exit codes" in out


def test_cache_is_listed_by_the_top_level_help():
    res = cli("--help")
    assert res.returncode == 0 and "cache" in res.stdout


@pytest.mark.parametrize(
    "args",
    [
        ("cache",),  # no action
        ("cache", "frobnicate"),
        ("cache", "verify"),  # no file
        ("cache", "inspect", "x", "--device", "0", "--no-device"),  # exclusive
        ("cache", "build", "m.param"),  # neither -o nor --store
        ("cache", "build", "m.param", "-o", "a", "--store", "sqlite:///b"),  # both
    ],
)
def test_usage_errors_exit_2(capsys, args):
    rc, out, err = inproc(capsys, *args)
    assert rc == 2, (out, err)
    assert "usage:" in err


def test_build_usage_errors_exit_2(capsys, model, tmp_path):
    param, binf = model
    out = str(tmp_path / "c.vkcache")
    cases = [
        (("cache", "build", str(tmp_path / "missing.param"), "-o", out), "no such file"),
        (("cache", "build", param, str(tmp_path / "missing.bin"), "-o", out), "no such file"),
        (("cache", "build", param, binf, "-o", out, "--input", "3xa"), "--input"),
        (("cache", "build", param, binf, "-o", out, "--input", "16x16x3", "--input", "8x8x3"), "inputs"),
        (("cache", "build", param, binf, "-o", out, "--opt", "use_fp16_storage"), "NAME=VALUE"),
        (("cache", "build", param, binf, "-o", out, "--opt", "no_such_flag=1"), "NAME=VALUE"),
        (("cache", "build", param, binf, "-o", out, "--opt", "use_fp16_storage=maybe"), "not a valid bool"),
        (("cache", "build", param, binf, "-o", out, "--model-key", "k"), "--model-key"),
        (("cache", "build", param, binf, "--store", "ftp://host/x"), "unknown store scheme"),
        (("cache", "build", param, binf, "-o", out, "--device", "99"), "Vulkan devices"),
    ]
    for args, message in cases:
        rc, _, err = inproc(capsys, *args)
        assert rc == 2, (args, err)
        assert message in err, (args, err)
    assert not os.path.exists(out)


# -- build ------------------------------------------------------------------------------------


def test_build_reports_what_it_wrote(built):
    out, res = built
    assert out.is_file()
    assert f"{out}: {out.stat().st_size} bytes" in res.stdout
    assert "SPIR-V entries" in res.stdout and "compiled" in res.stdout
    # the progress bar went to stderr and reached the end
    assert "cache build tiny" in res.stderr and "100%" in res.stderr


def test_built_cache_is_a_full_hit_in_a_fresh_process(model, built):
    param, binf = model
    r = warm(param=param, bin=binf, cache=str(built[0]))
    assert r["loaded"] == 0, r["last_error"]
    assert r["load_compiled"] == 0 and r["infer_compiled"] == 0
    assert r["load_pipelines"] > 0 and r["infer_pipelines"] == r["load_pipelines"]
    assert r["spirv_hits"] > 0
    assert r["shader_compiler_loaded"] is False


def test_without_a_cache_the_same_run_compiles(model):
    """The control of the test above: the counters do see compilation."""
    param, binf = model
    r = warm(param=param, bin=binf)
    assert r["load_compiled"] > 0


def test_build_with_zero_weights_and_options_to_a_store(model, tmp_path):
    param, _ = model
    url = f"sqlite:///{tmp_path / 'caches.db'}"
    args = ["cache", "build", param, "--store", url, "--model-key", "tiny-v1", "--quiet"]
    for k in FP32:
        args += ["--opt", f"{k}=0"]
    res = cli(*args)
    assert res.returncode == 0, res.stderr[-3000:]
    assert "[tiny-v1]" in res.stdout
    assert res.stderr == ""  # --quiet: no progress bar
    r = warm(param=param, bin=None, store=url, model_key="tiny-v1", opts=FP32)
    assert r["loaded"] == 0, r["last_error"]
    assert r["load_compiled"] == 0 and r["infer_compiled"] == 0
    # the options are part of the key: the default (fp16) options are not covered by this build
    r = warm(param=param, bin=None, store=url, model_key="tiny-v1")
    assert r["loaded"] == 0 and r["load_compiled"] > 0


def test_build_merge_keeps_what_the_file_had(model, built, tmp_path):
    param, binf = model
    path = tmp_path / "shared.vkcache"
    path.write_bytes(built[0].read_bytes())  # the fp16 (default) entries
    args = ["cache", "build", param, binf, "-o", str(path), "--merge", "--no-forward", "--quiet"]
    for k in FP32:
        args += ["--opt", f"{k}=0"]
    assert cli(*args).returncode == 0
    for opts in ({}, FP32):
        r = warm(param=param, bin=binf, cache=str(path), opts=opts)
        assert r["loaded"] == 0 and r["load_compiled"] == 0 and r["infer_compiled"] == 0, opts


def test_build_of_a_model_that_fails_exits_1(tmp_path):
    bad = tmp_path / "bad.param"
    bad.write_text("7767517\n1 1\nInput data 0 1 data 0=4 1=4 2=3 unknown=x\n")
    res = cli("cache", "build", str(bad), "-o", str(tmp_path / "c.vkcache"), "--quiet")
    assert res.returncode == 1, res.stderr
    assert "cannot load" in res.stderr
    assert not (tmp_path / "c.vkcache").exists()


def test_build_to_an_unwritable_target_exits_1(model, tmp_path):
    param, binf = model
    res = cli("cache", "build", param, binf, "-o", str(tmp_path), "--quiet", "--no-forward")  # a directory
    assert res.returncode == 1
    assert "cannot save" in res.stderr


# -- verify and inspect -----------------------------------------------------------------------


def test_verify_accepts_the_built_file(built):
    out = built[0]
    res = cli("cache", "verify", str(out))
    assert res.returncode == 0, res.stdout + res.stderr
    assert res.stdout.startswith(f"{out}: accepted: ") and len(res.stdout.strip().splitlines()) == 1


@pytest.mark.parametrize(
    "damage, reason",
    [
        (lambda b: b[:-1], "truncated"),
        (lambda b: b + b"\0", "trailing"),
        (lambda b: b[:36] + bytes([b[36] ^ 1]) + b[37:], "header_fnv1a"),
        (lambda b: b[:-1] + bytes([b[-1] ^ 0xFF]), "driver_blob_fnv1a"),
        (lambda b: b"", "shorter than"),
    ],
    ids=["truncated", "trailing", "header-byte", "blob-byte", "empty"],
)
def test_verify_rejects_a_damaged_file_with_its_reason(built, tmp_path, damage, reason):
    bad = tmp_path / "bad.vkcache"
    bad.write_bytes(damage(built[0].read_bytes()))
    res = cli("cache", "verify", str(bad))
    assert res.returncode == 1
    line = res.stdout.strip()
    assert line.startswith(f"{bad}: rejected: ") and reason in line, line
    # the library's own loader gives the same verdict
    import ncnn_c as ncnn

    cache = ncnn.PipelineCache(ncnn.get_gpu_device(0))
    assert cache.load_cache(str(bad)) != 0
    assert reason in cache.last_error


def test_verify_a_missing_file_exits_1(capsys, tmp_path):
    rc, _, err = inproc(capsys, "cache", "verify", str(tmp_path / "nope.vkcache"))
    assert rc == 1
    assert "no such file" in err


def test_inspect_lists_header_entries_and_checks(built):
    res = cli("cache", "inspect", str(built[0]))
    assert res.returncode == 0, res.stderr
    text = res.stdout
    for needle in ("header:", "magic", "sections:", "entries:", "convolution", "checks against this library"):
        assert needle in text, needle
    assert "FAIL" not in text
    assert text.strip().splitlines()[-1].startswith("accepted: ")


def test_inspect_names_the_failing_field(built, tmp_path):
    import struct

    data = bytearray(built[0].read_bytes())
    data[36:40] = struct.pack("<I", struct.unpack_from("<I", data, 36)[0] + 1)  # driver_version
    # re-seal the header so that the identity check, not the checksum, is what fails
    from ncnn_c.gpu import cachefile

    data[124:128] = struct.pack("<I", cachefile.fnv1a32(bytes(data[:124])))
    bad = tmp_path / "other-driver.vkcache"
    bad.write_bytes(bytes(data))
    res = cli("cache", "inspect", str(bad))
    assert res.returncode == 1
    fails = [line for line in res.stdout.splitlines() if "FAIL" in line]
    assert len(fails) == 1 and "driver_version (offset 36)" in fails[0], fails
    assert res.stdout.strip().splitlines()[-1].startswith("rejected: header.driver_version")
    # without a device the identity is not checked, so the same file passes what can be checked
    res = cli("cache", "inspect", str(bad), "--no-device")
    assert res.returncode == 0, res.stdout
    assert "no device" in res.stdout
    res = cli("cache", "verify", str(bad), "--no-device")
    assert res.returncode == 0 and "device fields not checked" in res.stdout


def test_inspect_json(built):
    res = cli("cache", "inspect", str(built[0]), "--json")
    assert res.returncode == 0
    report = json.loads(res.stdout)
    assert report["accepted"] is True
    assert report["size"] == built[0].stat().st_size
    assert {e["shader"] for e in report["entries"]} >= {"convolution", "softmax"}


def test_progress_without_tqdm_is_a_plain_line(monkeypatch, capsys):
    from ncnn_c.tools import cache_cli

    monkeypatch.setitem(sys.modules, "tqdm", None)  # import fails as if it were not installed
    bar = cache_cli._Bar(3, "cache build m", enabled=True)
    assert bar._tqdm is None
    for i in range(1, 4):
        bar.update_to(i, f"{i} pipelines")
    bar.close()
    err = capsys.readouterr().err
    assert "\rcache build m: 3/3 3 pipelines" in err and err.endswith("\n")
    quiet = cache_cli._Bar(3, "x", enabled=False)
    quiet.update_to(3)
    quiet.close()
    assert capsys.readouterr().err == ""
