"""Every example runs as a user runs it: in a fresh process, from another directory, with the
per-user cache directory pointed into the test's temporary directory, and nothing written
into the repository. The C examples build against the library installed under a prefix
(CMake's ``find_package(ncnn_c)``) and run there.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import MODELS, ROOT

EXAMPLES = ROOT / "examples"
LABELS = [line.partition(" ")[2] for line in (MODELS / "synset_words.txt").read_text().splitlines()]
TOP_CLASS = 532  # what SqueezeNet sees in models/256-ncnn.png


def _env(tmp: Path) -> dict[str, str]:
    return dict(os.environ, NCNN_C_CACHE_DIR=str(tmp / "user-cache"))


def _run(cmd, tmp: Path, timeout: int = 300) -> str:
    r = subprocess.run(
        [str(c) for c in cmd], capture_output=True, text=True, timeout=timeout, env=_env(tmp), cwd=tmp
    )
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    return r.stdout


def _py(tmp: Path, script: str, *args, timeout: int = 300) -> str:
    return _run([sys.executable, EXAMPLES / script, *args], tmp, timeout)


def _top5(out: str) -> list[tuple[int, str]]:
    """(class, name) of the lines ``  0.1635  class 532  dining table, board``."""
    return [(int(c), n) for c, n in re.findall(r"^\s+\d\.\d{4}\s+class\s+(\d+)\s+(.*)$", out, re.M)]


def _repo_files() -> set[str]:
    """Files an example could leave next to the model or itself (caches, databases)."""
    return {
        str(p)
        for d in (MODELS, EXAMPLES)
        for pattern in ("*.vkcache", "*.sqlite3", "*.db", "*.ppm")
        for p in d.rglob(pattern)
    }


@pytest.fixture(autouse=True)
def nothing_written_into_the_repository():
    before = _repo_files()
    yield
    assert _repo_files() == before


def test_examples_need_no_path_edits_and_use_pillow():
    for f in EXAMPLES.glob("*.py"):
        text = f.read_text()
        assert "sys.path" not in text, f.name
    assert not (EXAMPLES / "pngread.py").exists()
    for f in ("squeezenet.py", "cache_sqlite.py", "handle_api.py"):
        assert "from PIL import Image" in (EXAMPLES / f).read_text(), f


def test_squeezenet_on_the_cpu_prints_class_names(tmp_path):
    top = _top5(_py(tmp_path, "squeezenet.py", "--cpu"))
    assert len(top) == 5 and top[0][0] == TOP_CLASS
    assert all(name == LABELS[c] for c, name in top)


@pytest.mark.gpu
def test_squeezenet_cold_then_warm(tmp_path):
    out = _py(tmp_path, "squeezenet.py", "--cold-warm")
    cold = re.search(r"^cold: cache loaded=False .* compiled=(\d+)", out, re.M)
    warm = re.search(r"^warm: cache loaded=True .* compiled=(\d+)", out, re.M)
    assert cold and warm, out
    assert int(cold.group(1)) > 0 and int(warm.group(1)) == 0
    assert "cold and warm agree on the top class: True" in out
    assert _top5(out)[0] == (TOP_CLASS, LABELS[TOP_CLASS])
    # the cache went to the per-user default store, the one `run` uses
    store = tmp_path / "user-cache" / "pipelines.sqlite3"
    assert re.search(
        rf"^cache store: sqlite:///{str(store).lstrip('/')} \(model key squeezenet_v1.1\)$", out, re.M
    )
    assert store.is_file()
    # a second cold/warm pair shares the store: the cold run still compiles (it does not load)
    again = _py(tmp_path, "squeezenet.py", "--cold-warm")
    assert re.search(r"^cold: cache loaded=False .* compiled=[1-9]", again, re.M), again
    # and the entry is what `cache inspect --store` reads
    from ncnn_c.tools import cache_cli

    url = "sqlite:///" + str(store).lstrip("/")
    assert cache_cli.main(["verify", "--store", url, "--key", "squeezenet_v1.1"]) == 0


def test_squeezenet_on_the_cpu_names_no_cache(tmp_path):
    out = _py(tmp_path, "squeezenet.py", "--cpu")
    assert "cache" not in out.splitlines()[0], out
    assert not (tmp_path / "user-cache").exists()


@pytest.mark.gpu
def test_squeezenet_on_vulkan_agrees_with_the_cpu(tmp_path):
    cpu = _top5(_py(tmp_path, "squeezenet.py", "--cpu"))
    out = _py(tmp_path, "squeezenet.py", "--cache", f"sqlite://{tmp_path / 'mine.sqlite3'}")
    assert cpu[0] == _top5(out)[0]
    assert (tmp_path / "mine.sqlite3").is_file() and not (tmp_path / "user-cache").exists()


@pytest.mark.gpu
def test_cache_kept_in_sqlite(tmp_path):
    first = _py(tmp_path, "cache_sqlite.py")
    second = _py(tmp_path, "cache_sqlite.py")
    assert "cache from SQLite: miss" in first
    assert "cache from SQLite: loaded" in second
    assert re.search(r"compiled 0 shaders", second) and not re.search(r"compiled 0 shaders", first)
    sizes = [int(re.search(r"(\d+) cache bytes", s).group(1)) for s in (first, second)]
    assert sizes[0] == sizes[1] > 128
    assert (tmp_path / "user-cache" / "pipelines.sqlite3").is_file()  # the default store, as `run`'s
    assert f"top class {TOP_CLASS}: {LABELS[TOP_CLASS]}" in second


def test_handle_api(tmp_path):
    out = _py(tmp_path, "handle_api.py")
    assert "inputs: ['data']" in out and "outputs: ['prob']" in out
    top = _top5(out)
    assert top[0] == (TOP_CLASS, LABELS[TOP_CLASS]) and len(top) == 5


@pytest.mark.gpu
@pytest.mark.slow
def test_bench_cold_warm(tmp_path):
    out = _py(tmp_path, "bench_cold_warm.py", "--repeat", "1", timeout=600)
    assert re.search(r"^ncnn_c cold\s+[\d.]+\s+[\d.]+\s+[1-9]\d*$", out, re.M), out
    assert re.search(r"^ncnn_c warm\s+[\d.]+\s+[\d.]+\s+0$", out, re.M), out


# ------------------------------------------------------------------ C examples


@pytest.fixture(scope="module")
def c_examples(tmp_path_factory) -> Path:
    """The C examples built with CMake against the library installed under a prefix."""
    tmp = tmp_path_factory.mktemp("c_examples")
    prefix = tmp / "prefix"
    _run([sys.executable, "-m", "ncnn_c.capi", "--build", "--prefix", prefix], tmp)
    _run(["cmake", "-S", EXAMPLES / "c", "-B", tmp / "build", f"-DCMAKE_PREFIX_PATH={prefix}"], tmp)
    _run(["cmake", "--build", tmp / "build"], tmp)
    return tmp / "build"


@pytest.fixture(scope="module")
def ppm(tmp_path_factory) -> Path:
    from PIL import Image

    path = tmp_path_factory.mktemp("img") / "256-ncnn.ppm"
    with Image.open(MODELS / "256-ncnn.png") as im:
        im.convert("RGB").save(path)
    return path


MODEL_ARGS = (MODELS / "squeezenet_v1.1.param", MODELS / "squeezenet_v1.1.bin")


@pytest.mark.capi
def test_c_squeezenet(c_examples, ppm, tmp_path):
    out = _run([c_examples / "squeezenet", *MODEL_ARGS, ppm, "cpu"], tmp_path)
    assert out.startswith(f"{TOP_CLASS} = 0.16")
    # the class names come from the synset_words.txt beside the .param
    assert out.splitlines()[0].endswith(f"  {LABELS[TOP_CLASS]}")


@pytest.mark.capi
def test_c_squeezenet_on_the_shipped_photo(c_examples, tmp_path):
    # models/cat.ppm is models/cat.jpg as a PPM: a real photo works on the first run
    out = _run([c_examples / "squeezenet", *MODEL_ARGS, MODELS / "cat.ppm", "cpu"], tmp_path)
    top = re.match(r"(\d+) = ([\d.]+)  (.*)$", out.splitlines()[0])
    assert top and int(top.group(1)) == 285 and top.group(3) == "Egyptian cat", out


@pytest.mark.capi
def test_c_custom_layer(c_examples, ppm, tmp_path):
    unfused = MODELS / "squeezenet_v1.1_unfused.param"
    out = _run(
        [c_examples / "custom_layer", unfused, MODEL_ARGS[1], ppm, MODELS / "synset_words.txt"], tmp_path
    )
    builtin, custom = out.split("MyReLU (C, ")
    calls = int(re.match(r"(\d+) forward calls", custom).group(1))
    assert calls == open(unfused).read().count("\nReLU ")  # every ReLU of the net ran in C
    assert _top5(builtin) == _top5(custom)[:5] and _top5(builtin)[0] == (TOP_CLASS, LABELS[TOP_CLASS])
    assert "same top class: yes" in out


@pytest.mark.capi
def test_c_datareader(c_examples, ppm, tmp_path):
    out = _run([c_examples / "datareader", *MODEL_ARGS, ppm, MODELS / "synset_words.txt"], tmp_path)
    sizes = [os.path.getsize(p) for p in MODEL_ARGS]
    assert f"asset pack: {sum(sizes)} bytes (param {sizes[0]}, weights {sizes[1]})" in out
    m = re.search(
        r"param: \d+ scan \+ \d+ read calls, (\d+) of (\d+) bytes; weights: \d+ read calls, (\d+) of (\d+)",
        out,
    )
    assert m and int(m.group(3)) == int(m.group(4)) == sizes[1], out
    assert _top5(out)[0] == (TOP_CLASS, LABELS[TOP_CLASS])


@pytest.mark.capi
@pytest.mark.gpu
def test_c_cache_service_cold_then_warm(c_examples, ppm, tmp_path):
    args = [
        c_examples / "cache_service",
        tmp_path / "service.sqlite3",
        *MODEL_ARGS,
        ppm,
        MODELS / "synset_words.txt",
    ]
    cold = _run(args, tmp_path)
    warm = _run(args, tmp_path)
    assert re.search(r"^cache: miss for \(squeezenet_v1.1.param, vulkan:0@", cold, re.M), cold
    assert "load_model" in cold and "(cold)" in cold
    stored = int(re.search(r"^cache: stored (\d+) bytes", cold, re.M).group(1))
    assert re.search(rf"^cache: loaded {stored} bytes for \(squeezenet_v1.1.param, vulkan:0@", warm, re.M), (
        warm
    )
    assert "(warm)" in warm
    assert _top5(cold)[0] == _top5(warm)[0] == (TOP_CLASS, LABELS[TOP_CLASS])
    # a corrupt row is a miss, then replaced
    import sqlite3

    with sqlite3.connect(tmp_path / "service.sqlite3") as db:
        db.execute("UPDATE pipeline_cache SET data = x'00010203'")
    again = _run(args, tmp_path)
    assert "cache: miss" in again and re.search(r"^cache: stored \d+ bytes", again, re.M)
