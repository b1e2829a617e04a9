"""Cache stores (ncnn_c.cache.stores, also imported as ncnn_c.cachestore): directory, SQLite and PostgreSQL behind one interface.

PostgreSQL runs for real: a session fixture starts Debian's server (initdb / pg_ctl in a
temporary directory, as the ``postgres`` user when running as root, listening on a unix
socket only) and stops it afterwards. Skipped, with the reason shown, only where the
PostgreSQL binaries are not installed (./run.sh installs them).
"""

from __future__ import annotations

import glob
import logging
import os
import pathlib
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading

import pytest
from glsl_samples import SCALE

from ncnn_c import cachestore
from ncnn_c.cache.format import CACHE_FILE_VERSION
from ncnn_c.cachestore import CacheStoreError, DirectoryStore, PostgresStore, SqliteStore, open_store

ROOT = pathlib.Path(__file__).resolve().parents[1]

ADD = SCALE.replace("* afp(scale)", "+ afp(scale)")


# -- PostgreSQL server ----------------------------------------------------------------------------


def _pg_bin() -> str | None:
    for d in sorted(
        glob.glob("/usr/lib/postgresql/*/bin"), key=lambda p: int(p.split("/")[-2]), reverse=True
    ):
        if os.path.exists(os.path.join(d, "initdb")) and os.path.exists(os.path.join(d, "pg_ctl")):
            return d
    for name in ("initdb", "pg_ctl"):
        if shutil.which(name) is None:
            return None
    return os.path.dirname(shutil.which("initdb") or "")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class PgServer:
    """A throwaway PostgreSQL cluster in a temporary directory, on a unix socket only.

    As the ``postgres`` user when running as root (the server refuses root). ``restart()``
    is a real ``pg_ctl restart``: it ends every session, as a server restart in a fleet does.
    """

    def __init__(self) -> None:
        bindir = _pg_bin()
        if bindir is None:
            pytest.skip("PostgreSQL is not installed (initdb/pg_ctl not found; apt-get install postgresql)")
        self.bindir = bindir
        self.base = tempfile.mkdtemp(prefix="ncnnc-pg-")  # short: the socket path must stay under 107 bytes
        self.prefix: list[str] = []
        if os.geteuid() == 0:
            import pwd

            pw = pwd.getpwnam("postgres")
            os.chown(self.base, pw.pw_uid, pw.pw_gid)
            self.prefix = ["runuser", "-u", "postgres", "--"]
        self.data = os.path.join(self.base, "data")
        self.port = _free_port()
        self.dsn = f"postgresql://postgres@/postgres?host={self.base}&port={self.port}"
        try:
            self._run("initdb", "-D", self.data, "-A", "trust", "-U", "postgres", "--no-sync")
            self._ctl("start")
        except subprocess.CalledProcessError as e:
            log = pathlib.Path(self.base, "log")
            text = log.read_text() if log.exists() else ""
            shutil.rmtree(self.base, ignore_errors=True)
            pytest.fail(f"PostgreSQL did not start: {e.stderr}\n{text}")

    def _run(self, tool: str, *args: str) -> None:
        cmd = [*self.prefix, os.path.join(self.bindir, tool), *args]
        subprocess.run(cmd, check=True, capture_output=True, text=True)

    def _ctl(self, action: str, *args: str) -> None:
        opts = f"-k {self.base} -p {self.port} -c listen_addresses='' -c fsync=off"
        log = os.path.join(self.base, "log")
        self._run("pg_ctl", "-D", self.data, "-o", opts, "-l", log, *args, "-w", action)

    def restart(self) -> None:
        self._ctl("restart", "-m", "fast")

    def halt(self) -> None:
        """Stop the server, keeping its data: ``start()`` brings it back."""
        self._ctl("stop", "-m", "fast")

    def start(self) -> None:
        self._ctl("start")

    def stop(self) -> None:
        try:
            self._run("pg_ctl", "-D", self.data, "-m", "immediate", "-w", "stop")
        except subprocess.CalledProcessError:
            pass
        shutil.rmtree(self.base, ignore_errors=True)


@pytest.fixture(scope="session")
def pg_dsn():
    server = PgServer()
    try:
        yield server.dsn
    finally:
        server.stop()


_pg_tables = iter(range(10**6))


@pytest.fixture(params=["dir", "sqlite", "postgres"])
def store(request, tmp_path):
    kind = request.param
    if kind == "dir":
        s = DirectoryStore(tmp_path / "store")
    elif kind == "sqlite":
        s = SqliteStore(tmp_path / "cache.db")
    else:
        # one table per test: tests stay independent on the one session server
        s = PostgresStore(request.getfixturevalue("pg_dsn"), table=f"t{next(_pg_tables)}")
    yield s
    s.close()


def store_url(kind: str, tmp_path: pathlib.Path, request) -> str:
    if kind == "dir":
        return f"file://{tmp_path / 'store'}"
    if kind == "sqlite":
        return f"sqlite://{tmp_path / 'cache.db'}"
    return request.getfixturevalue("pg_dsn")


# -- raw bytes --------------------------------------------------------------------------------------


def test_get_put(store):
    assert store.get("model", "dev") is None
    store.put("model", "dev", b"one")
    assert store.get("model", "dev") == b"one"
    store.put("model", "dev", b"two" * 1000)
    assert store.get("model", "dev") == b"two" * 1000
    assert store.get("model", "other-dev") is None
    assert store.get("other model with spaces / and ../", "dev") is None
    store.put("other model with spaces / and ../", "dev", b"x")
    assert store.get("other model with spaces / and ../", "dev") == b"x"
    assert store.get("model", "dev") == b"two" * 1000


def test_update(store):
    assert store.update("m", "d", lambda old: (old or b"") + b"a") == b"a"
    assert store.update("m", "d", lambda old: (old or b"") + b"b") == b"ab"
    assert store.get("m", "d") == b"ab"

    def boom(old):
        raise RuntimeError("no")

    with pytest.raises(RuntimeError):
        store.update("m", "d", boom)
    assert store.get("m", "d") == b"ab"  # a failed update leaves the entry as it was
    with pytest.raises(RuntimeError):
        store.update("new", "d", boom)
    assert store.get("new", "d") is None  # no placeholder row survives


def test_bad_keys(store):
    for bad in ("", None, 3):
        with pytest.raises(CacheStoreError):
            store.get(bad, "d")
        with pytest.raises(CacheStoreError):
            store.put("m", bad, b"x")


def test_update_is_atomic_across_threads(store):
    def work(t: int) -> None:
        for _ in range(10):
            store.update("m", "d", lambda old, t=t: (old or b"") + bytes([65 + t]))

    threads = [threading.Thread(target=work, args=(t,)) for t in range(6)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    data = store.get("m", "d")
    assert len(data) == 60
    assert all(data.count(65 + t) == 10 for t in range(6))  # no update lost


WORKER = """
import sys
from ncnn_c.cachestore import open_store
s = open_store(sys.argv[1])
for _ in range(15):
    s.update("m", "d", lambda old: (old or b"") + sys.argv[2].encode())
s.close()
"""


@pytest.mark.parametrize("kind", ["dir", "sqlite", "postgres"])
def test_update_is_atomic_across_processes(kind, tmp_path, request):
    url = store_url(kind, tmp_path, request)
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    procs = [subprocess.Popen([sys.executable, "-c", WORKER, url, chr(65 + i)], env=env) for i in range(4)]
    assert [p.wait(timeout=120) for p in procs] == [0] * 4
    s = open_store(url)
    try:
        data = s.get("m", "d")
        assert all(data.count(65 + i) == 15 for i in range(4)), data
    finally:
        s.close()


def test_sqlite_is_wal(tmp_path):
    import sqlite3

    s = SqliteStore(tmp_path / "c.db")
    s.put("m", "d", b"x")
    s.close()
    assert sqlite3.connect(tmp_path / "c.db").execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_open_store_urls(tmp_path, request):
    s = open_store(f"file://{tmp_path / 'a'}")
    assert isinstance(s, DirectoryStore) and s.path == str(tmp_path / "a")
    s = open_store(f"sqlite://{tmp_path / 'b.db'}")
    assert isinstance(s, SqliteStore) and s.path == str(tmp_path / "b.db")
    s.close()
    for bad in ("redis://x", "file://host/x", "sqlite://", "nonsense", 42):
        with pytest.raises(CacheStoreError):
            open_store(bad)
    with pytest.raises(CacheStoreError):
        SqliteStore(tmp_path)  # a directory is not a database
    with pytest.raises(CacheStoreError):
        PostgresStore(f"postgresql://postgres@/postgres?host={tmp_path}&port=1", connect_timeout=2)
    with pytest.raises(CacheStoreError):
        SqliteStore(tmp_path / "c.db", table="x; DROP TABLE y")


def test_open_store_postgres(pg_dsn):
    # trust authentication ignores the password; it must not show up in log lines
    s = open_store(pg_dsn.replace("postgres@", "postgres:s3cret@"))
    assert isinstance(s, PostgresStore)
    s.put("m", "d", b"x")
    assert "s3cret" not in repr(s)
    s.close()


def test_default_cache_dir(monkeypatch, tmp_path):
    monkeypatch.setenv("NCNN_C_CACHE_DIR", str(tmp_path / "x"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cachestore.default_cache_dir() == str(tmp_path / "x")
    monkeypatch.delenv("NCNN_C_CACHE_DIR")
    assert cachestore.default_cache_dir() == str(tmp_path / "xdg" / "ncnn_c")
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/ignored")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert cachestore.default_cache_dir() == str(tmp_path / "home" / ".cache" / "ncnn_c")


# -- with a device ------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def vkdev():
    from ncnn_c.gpu import device

    assert device.get_gpu_count() > 0, "no Vulkan device (lavapipe is installed by ./run.sh)"
    return device.get_gpu_device(0)


@pytest.fixture
def shaders(tmp_path):
    from ncnn_c.gpu import compiler

    d = tmp_path / "shaders"
    d.mkdir()
    (d / "add.comp").write_text(ADD)
    (d / "scale.comp").write_text(SCALE)
    compiler.set_shader_dir(d)
    yield d
    compiler.set_shader_dir(None)


def fp32_option(cache):
    from ncnn_c.option import Option

    opt = Option()
    opt.use_fp16_packed = opt.use_fp16_storage = opt.use_fp16_arithmetic = False
    opt.use_int8_storage = opt.use_int8_arithmetic = False
    opt.pipeline_cache = cache
    return opt


def cache_with(vkdev, *names):
    from ncnn_c.gpu.pipeline import Pipeline
    from ncnn_c.gpu.pipelinecache import PipelineCache

    c = PipelineCache(vkdev)
    for name in names:
        p = Pipeline(vkdev)
        p.set_local_size_xyz(64, 1, 1)
        assert p.create(name, fp32_option(c), [2.0]) == 0
    return c


def compiles_after_load(vkdev, store, *names) -> tuple[int, int]:
    c = cache_with(vkdev)
    rc = store.load_into(c, "net")
    before = c.stats()["compiled"]
    for name in names:
        from ncnn_c.gpu.pipeline import Pipeline

        p = Pipeline(vkdev)
        p.set_local_size_xyz(64, 1, 1)
        assert p.create(name, fp32_option(c), [2.0]) == 0
    n = c.stats()["compiled"] - before
    c.destroy()
    return rc, n


def test_device_key(vkdev):
    k = cachestore.device_key(vkdev)
    assert k == cachestore.device_key(vkdev.info)
    assert re.fullmatch(r"v\d+-[0-9a-f]{4,8}-[0-9a-f]{4,8}-[0-9a-f]{8}-[0-9a-f]{32}", k), k
    assert k.startswith(f"v{CACHE_FILE_VERSION}-")
    assert bytes(vkdev.info.pipeline_cache_uuid).hex() in k


def test_load_into_and_save_from(vkdev, shaders, store, caplog):
    with caplog.at_level(logging.INFO, logger="ncnn_c"):
        assert store.load_into(cache_with(vkdev), "net") == -1
    assert any(r.levelno == logging.INFO and "cache miss" in r.message for r in caplog.records)

    a = cache_with(vkdev, "add")
    assert store.save_from(a, "net") == 0
    assert compiles_after_load(vkdev, store, "add") == (0, 0)
    assert store.get("net", cachestore.device_key(vkdev)) is not None
    # plain save: last writer wins
    b = cache_with(vkdev, "scale")
    assert store.save_from(b, "net") == 0
    assert compiles_after_load(vkdev, store, "add", "scale") == (0, 1)
    # merge: both
    assert store.save_from(a, "net", merge=True) == 0
    assert compiles_after_load(vkdev, store, "add", "scale") == (0, 0)
    a.destroy()
    b.destroy()


def test_concurrent_merging_savers_lose_nothing(vkdev, shaders, store):
    caches = [cache_with(vkdev, name) for name in ("add", "scale") for _ in range(3)]
    barrier = threading.Barrier(len(caches))
    results = []

    def save(c) -> None:
        barrier.wait()
        results.append(store.save_from(c, "net", merge=True))

    threads = [threading.Thread(target=save, args=(c,)) for c in caches]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert results == [0] * len(caches)
    assert compiles_after_load(vkdev, store, "add", "scale") == (0, 0)
    for c in caches:
        c.destroy()


def test_rejected_or_corrupt_entry_is_a_miss(vkdev, shaders, store, caplog):
    a = cache_with(vkdev, "add")
    assert store.save_from(a, "net") == 0
    good = store.get("net", cachestore.device_key(vkdev))
    dk = cachestore.device_key(vkdev)
    for bad in (b"garbage" * 40, good[:-1], good[:200] + bytes([good[200] ^ 1]) + good[201:], b""):
        store.put("net", dk, bad)
        c = cache_with(vkdev)
        caplog.clear()
        with caplog.at_level(logging.INFO, logger="ncnn_c"):
            assert store.load_into(c, "net") == -1
        assert c.stats()["spirv_entries"] == 0  # left as it was
        assert caplog.records and all(r.levelno in (logging.INFO, logging.WARNING) for r in caplog.records)
        c.destroy()
    # a merging save over a corrupt entry replaces it
    store.put("net", dk, b"garbage" * 40)
    assert store.save_from(a, "net", merge=True) == 0
    assert compiles_after_load(vkdev, store, "add") == (0, 0)
    a.destroy()


def test_store_failure_is_a_miss(vkdev, shaders, caplog):
    class Broken(cachestore.CacheStore):
        def get(self, model_key, device_key):
            raise CacheStoreError("connection lost")

        def put(self, model_key, device_key, data):
            raise CacheStoreError("connection lost")

        def update(self, model_key, device_key, fn):
            raise CacheStoreError("connection lost")

    a = cache_with(vkdev, "add")
    with caplog.at_level(logging.INFO, logger="ncnn_c"):
        assert Broken().load_into(a, "net") == -1
        assert Broken().save_from(a, "net") == -1
        assert Broken().save_from(a, "net", merge=True) == -1
        assert Broken().load_into(a, "") == -1
    assert "connection lost" in caplog.text
    a.destroy()


def test_directory_store_files(vkdev, shaders, tmp_path):
    s = DirectoryStore(tmp_path / "st")
    a = cache_with(vkdev, "add")
    assert s.save_from(a, "net", merge=True) == 0
    assert s.save_from(a, "net") == 0
    names = sorted(p.name for p in (tmp_path / "st").iterdir())
    f = pathlib.Path(s.file_of("net", cachestore.device_key(vkdev))).name
    assert names == [f, f + ".lock"]
    # the file is an ordinary cache file: PipelineCache.load_cache reads it directly
    c = cache_with(vkdev)
    assert c.load_cache(tmp_path / "st" / f) == 0
    c.destroy()
    a.destroy()


def test_default_location(vkdev, shaders, tmp_path, monkeypatch):
    monkeypatch.setenv("NCNN_C_CACHE_DIR", str(tmp_path / "deep" / "dir"))
    fresh = cache_with(vkdev)
    assert fresh.load_cache() == -1 and "no such file (a first start)" in fresh.last_error
    assert not (tmp_path / "deep").exists()  # a load creates nothing
    a = cache_with(vkdev, "add")
    # the default store: the SQLite file `run` and the examples use, its entry "default"
    assert (
        a.default_path()
        == cachestore.default_store_path()
        == str(tmp_path / "deep" / "dir" / "pipelines.sqlite3")
    )
    assert cachestore.default_store_url() == "sqlite:///" + a.default_path().lstrip("/")
    with open_store(cachestore.default_store_url()) as store:  # run's entries, not the default one
        assert store.save_from(a, "squeezenet-0123") == 0
    assert fresh.load_cache() == -1 and "no entry 'default'" in fresh.last_error
    assert a.save_cache() == 0
    assert os.path.exists(a.default_path())
    b = cache_with(vkdev, "scale")
    assert b.save_cache(merge=True) == 0
    c = cache_with(vkdev)
    assert c.load_cache() == 0
    assert c.stats()["loaded_spirv_entries"] == 2
    with open_store(cachestore.default_store_url()) as store:
        stored = store.get(cachestore.DEFAULT_MODEL_KEY, cachestore.device_key(vkdev))
        assert stored and cache_with(vkdev).load_cache(stored) == 0
    for x in (fresh, a, b, c):
        x.destroy()
