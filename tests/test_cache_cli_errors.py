"""``python -m ncnn_c cache`` on what a hostile or careless caller gives it: devices that do
not exist, symlink loops, FIFOs, SQLite databases given as cache files, ``--json`` on every
failure, and ``--store [URL] [--key K]`` for looking into a store's entry."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys

import pytest
from conftest import ROOT

pytestmark = pytest.mark.gpu

ONE_LAYER = "7767517\n1 1\nInput data 0 1 data 0=4 1=4 2=1\n"


def cli(*args: str, timeout: int = 120) -> subprocess.CompletedProcess:
    """In a child process: a command that blocks (a FIFO) fails the test by its timeout."""
    return subprocess.run(
        [sys.executable, "-m", "ncnn_c", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
        env=dict(os.environ),
    )


def inproc(capsys, *args: str) -> tuple[int, str, str]:
    from ncnn_c.__main__ import main

    capsys.readouterr()
    try:
        rc = main(list(args))
    except SystemExit as e:
        rc = int(e.code or 0)
    out, err = capsys.readouterr()
    return rc, out, err


def _cache_bytes() -> bytes:
    """A valid (empty) cache of device 0."""
    import ncnn_c

    cache = ncnn_c.PipelineCache(ncnn_c.get_gpu_device(0))
    try:
        buf = bytearray()
        assert cache.save_cache(buf) == 0
        return bytes(buf)
    finally:
        cache.destroy()


def _device_key() -> str:
    import ncnn_c
    from ncnn_c.cachestore import device_key

    return device_key(ncnn_c.get_gpu_device(0))


@pytest.fixture
def files(tmp_path):
    """A valid cache file, a one-layer model, a SQLite store holding the cache under "m", a
    directory store holding it too, and a SQLite database that is not a store."""
    from ncnn_c.cachestore import DirectoryStore, SqliteStore

    data = _cache_bytes()
    good = tmp_path / "good.vkcache"
    good.write_bytes(data)
    damaged = tmp_path / "damaged.vkcache"
    damaged.write_bytes(data[:-1])
    param = tmp_path / "m.param"
    param.write_text(ONE_LAYER)
    with SqliteStore(tmp_path / "store.db") as s:
        s.put("m", _device_key(), data)
    DirectoryStore(tmp_path / "dirstore").put("m", _device_key(), data)
    foreign = tmp_path / "foreign.db"
    conn = sqlite3.connect(foreign)
    conn.execute("CREATE TABLE t (a)")
    conn.commit()
    conn.close()
    return {
        "good": str(good),
        "damaged": str(damaged),
        "param": str(param),
        "sqlite": f"sqlite://{tmp_path / 'store.db'}",
        "dir": f"file://{tmp_path / 'dirstore'}",
        "foreign": str(foreign),
    }


# -- --device that names no device ------------------------------------------------------------


@pytest.mark.parametrize("index", ["7", "-1"])
@pytest.mark.parametrize(
    "command",
    [
        ("inspect", "{good}"),
        ("inspect", "{good}", "--json"),
        ("verify", "{good}"),
        ("inspect", "--store", "{sqlite}", "--key", "m"),
        ("verify", "--store", "{sqlite}", "--key", "m"),
        ("build", "{param}", "-o", "{good}.new"),
    ],
    ids=["inspect", "inspect-json", "verify", "inspect-store", "verify-store", "build"],
)
def test_a_device_that_does_not_exist_is_a_usage_error(capsys, files, command, index):
    args = [a.format(**files) for a in command]
    rc, out, err = inproc(capsys, "cache", *args, f"--device={index}")
    assert rc == 2, (out, err)
    assert f"--device {index}: no such device" in err, err
    assert "accepted" not in out
    assert not os.path.exists(files["good"] + ".new")


def test_the_library_refuses_a_device_index_that_names_no_device():
    from ncnn_c.gpu import cacheinspect

    with pytest.raises(ValueError, match="device index 7"):
        cacheinspect.verify(_cache_bytes(), 7)
    with pytest.raises(ValueError, match="device index 7"):
        cacheinspect.inspect(_cache_bytes(), 7)
    assert cacheinspect.verify(_cache_bytes(), 0)[0]


# -- files that are not cache files -----------------------------------------------------------


@pytest.mark.parametrize("action", ["inspect", "verify"])
def test_a_symlink_loop_is_named_as_one(capsys, tmp_path, action):
    loop = tmp_path / "loop"
    loop.symlink_to(loop)
    rc, out, err = inproc(capsys, "cache", action, str(loop))
    assert rc == 1
    assert "symbolic link loop" in err and "no such file" not in err, err


def test_a_dangling_symlink_is_a_missing_file_and_says_so(capsys, tmp_path):
    link = tmp_path / "dangling"
    link.symlink_to(tmp_path / "gone")
    rc, _, err = inproc(capsys, "cache", "verify", str(link))
    assert rc == 1 and "no such file (a dangling symbolic link)" in err, err


@pytest.mark.parametrize("action", ["inspect", "verify"])
def test_a_sqlite_database_is_named_not_parsed(capsys, files, action):
    path = files["foreign"]
    rc, out, err = inproc(capsys, "cache", action, path, "--no-device")
    assert rc == 1, (out, err)
    assert "this is a SQLite database" in out
    assert f"--store sqlite://{os.path.abspath(path)} (with --key MODEL_KEY" in out, out
    assert "FAIL" not in out and "header:" not in out and "magic" not in out


def test_the_library_names_a_sqlite_database(files):
    from ncnn_c.gpu import cacheinspect

    with open(files["foreign"], "rb") as f:
        data = f.read()
    ok, why = cacheinspect.verify(data, False)
    assert not ok and "SQLite database" in why and "sqlite:///PATH" in why
    report = cacheinspect.inspect(data, False)
    assert report["format"] == "sqlite" and report["checks"] == [] and "header" not in report


# -- --json: one document on stdout for every outcome -----------------------------------------


def _json_cases(files, tmp_path):
    loop = tmp_path / "loop"
    loop.symlink_to(loop)
    return [
        (("inspect", files["good"]), 0),
        (("inspect", str(tmp_path / "missing.vkcache")), 1),
        (("inspect", str(loop)), 1),
        (("inspect", files["foreign"]), 1),
        (("inspect", files["damaged"]), 1),
        (("inspect", files["good"], "--device", "7"), 2),
        (("inspect", files["good"], "--device", "0", "--no-device"), 2),  # argparse's own error
        (("inspect", "--device", "nan"), 2),
        (("inspect",), 2),
        (("inspect", "--store", files["sqlite"]), 0),  # its one entry for the device
        (("inspect", "--store", files["dir"]), 2),  # a directory store cannot list its keys
        (("inspect", "--store", files["sqlite"], "--key", "m"), 0),
        (("inspect", "--store", files["sqlite"], "--key", "nope"), 1),
        (("inspect", "--store", "ftp://host/x", "--key", "m"), 2),
    ]


def test_json_is_one_document_for_every_outcome(capsys, files, tmp_path):
    for args, code in _json_cases(files, tmp_path):
        rc, out, err = inproc(capsys, "cache", *args, "--json")
        assert rc == code, (args, out, err)
        doc = json.loads(out)  # exactly one document, nothing else on stdout
        if code == 0:
            assert doc["accepted"] is True and doc["exit_code"] == 0 and "error" not in doc, args
        else:
            assert doc["error"] and doc["exit_code"] == code, (args, doc)
            if "accepted" not in doc:  # not a report: the reason went to stderr too
                assert doc["error"] in err or "error:" in err, (args, err)


# -- --store URL --key K ----------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["sqlite", "dir"])
def test_inspect_and_verify_a_store_entry(capsys, files, kind):
    url = files[kind]
    rc, out, err = inproc(capsys, "cache", "verify", "--store", url, "--key", "m")
    assert rc == 0, err
    assert out.startswith(f"{url} [m] device {_device_key()}: accepted: "), out
    rc, out, err = inproc(capsys, "cache", "inspect", "--store", url, "--key", "m")
    assert rc == 0, err
    assert out.splitlines()[0] == f"entry: {url} [m] device {_device_key()}"
    assert "FAIL" not in out and out.strip().splitlines()[-1].startswith("accepted: ")
    rc, out, _ = inproc(capsys, "cache", "inspect", "--store", url, "--key", "m", "--json")
    assert rc == 0 and json.loads(out)["source"] == f"{url} [m] device {_device_key()}"
    # another machine's view: an explicit device key, no device
    rc, out, err = inproc(
        capsys, "cache", "verify", "--store", url, "--key", "m", "--no-device", "--device-key", _device_key()
    )
    assert rc == 0 and "device fields not checked" in out, (out, err)
    rc, _, err = inproc(capsys, "cache", "verify", "--store", url, "--key", "other")
    assert rc == 1 and "no entry for model key 'other'" in err, err


@pytest.mark.parametrize(
    "args, message",
    [
        (("--store", "{dir}"), "needs --key MODEL_KEY"),
        (("{good}", "--store", "{sqlite}", "--key", "m"), "not both"),
        (("{good}", "--key", "m"), "only go with --store"),
        (("{good}", "--device-key", "d"), "only go with --store"),
        ((), "give a cache FILE"),
        (("--store", "{sqlite}", "--key", "m", "--no-device"), "needs --device-key"),
        (("--store", "ftp://host/x", "--key", "m"), "unknown store scheme"),
    ],
)
@pytest.mark.parametrize("action", ["inspect", "verify"])
def test_store_usage_errors(capsys, files, action, args, message):
    rc, out, err = inproc(capsys, "cache", action, *[a.format(**files) for a in args])
    assert rc == 2 and message in err, (out, err)


def test_without_key_the_one_entry_is_read_else_the_keys_are_listed(capsys, files, tmp_path, monkeypatch):
    from ncnn_c.cachestore import SqliteStore

    url = files["sqlite"]
    rc, out, err = inproc(capsys, "cache", "verify", "--store", url)
    assert rc == 0 and out.startswith(f"{url} [m] device {_device_key()}: accepted: "), (out, err)
    with SqliteStore(url.removeprefix("sqlite://")) as s:
        s.put("squeezenet-0123", _device_key(), _cache_bytes())
        s.put("other-device-only", "v4-other", _cache_bytes())
    rc, out, err = inproc(capsys, "cache", "inspect", "--store", url)
    assert rc == 2 and "holds 2 entries" in err and "one of m, squeezenet-0123" in err, err
    rc, out, err = inproc(capsys, "cache", "inspect", "--store", url, "--device-key", "v4-nothing")
    assert rc == 1 and "no entry for device key v4-nothing" in err, err
    # no URL: the default store, where `run`, the examples and save_cache() keep their caches
    monkeypatch.setenv("NCNN_C_CACHE_DIR", str(tmp_path / "user-cache"))
    rc, out, err = inproc(capsys, "cache", "verify", "--store")
    assert rc == 1 and "no such store" in err and "pipelines.sqlite3" in err, err
    import ncnn_c

    cache = ncnn_c.PipelineCache(ncnn_c.get_gpu_device(0))
    assert cache.save_cache() == 0
    cache.destroy()
    rc, out, err = inproc(capsys, "cache", "verify", "--store")
    default = "sqlite:///" + str(tmp_path / "user-cache" / "pipelines.sqlite3").lstrip("/")
    assert rc == 0 and out.startswith(f"{default} [default] device {_device_key()}: accepted"), (out, err)


def test_looking_into_a_store_creates_and_changes_nothing(capsys, files, tmp_path):
    for url in (f"sqlite://{tmp_path / 'new.db'}", f"file://{tmp_path / 'newdir'}"):
        rc, _, err = inproc(capsys, "cache", "inspect", "--store", url, "--key", "m")
        assert rc == 1 and "no such store" in err, err
    assert not (tmp_path / "new.db").exists() and not (tmp_path / "newdir").exists()
    before = open(files["foreign"], "rb").read()
    rc, _, err = inproc(capsys, "cache", "verify", "--store", f"sqlite://{files['foreign']}", "--key", "m")
    assert rc == 1 and "not a cache store" in err, err
    assert open(files["foreign"], "rb").read() == before  # no table, no WAL switch
    rc, _, err = inproc(capsys, "cache", "verify", "--store", f"file://{files['good']}", "--key", "m")
    assert rc == 1 and "not a directory" in err, err


# -- FIFOs never block (child processes: a hang fails by the timeout) ------------------------


def test_no_cache_command_blocks_on_a_fifo(files, tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    bad_param = tmp_path / "bad.param"
    bad_param.write_text("not a param file\n")
    cases = [
        (("inspect", str(fifo)), 1),
        (("inspect", str(fifo), "--json"), 1),
        (("verify", str(fifo)), 1),
        (("verify", "--store", f"sqlite://{fifo}", "--key", "m"), 1),
        (("inspect", "--store", f"file://{fifo}", "--key", "m"), 1),
        (("build", str(fifo), "-o", str(tmp_path / "x.vkcache")), 2),
        (("build", files["param"], str(fifo), "-o", str(tmp_path / "x.vkcache")), 2),
        # refused before the model is even loaded (this model would fail to load)
        (("build", str(bad_param), "-o", str(fifo), "--quiet"), 1),
    ]
    for args, code in cases:
        res = cli("cache", *args, timeout=60)
        assert res.returncode == code, (args, res.stdout, res.stderr)
        assert "FIFO" in res.stdout + res.stderr, (args, res.stdout, res.stderr)
        assert "cannot load" not in res.stderr
    assert not (tmp_path / "x.vkcache").exists()
