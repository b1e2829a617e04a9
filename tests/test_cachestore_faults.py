"""Cache stores under faults: server restarts, stuck lock holders, corrupt rows, hostile URLs and keys.

Each test is a break found by probing ``ncnn_c.cachestore`` from outside. PostgreSQL runs
for real (``PgServer`` of ``test_cachestore.py``): a server of this module for most tests,
and one of its own for each test that restarts or stops it.
"""

from __future__ import annotations

import logging
import os
import sqlite3
import threading
import time
import traceback
import types

import pytest
from test_cachestore import PgServer

from ncnn_c import cachestore
from ncnn_c.cache.format import CACHE_FILE_SIZE_LIMIT
from ncnn_c.cachestore import CacheStoreError, DirectoryStore, PostgresStore, SqliteStore, open_store

_tables = iter(range(10**6))


@pytest.fixture(scope="module")
def pg():
    server = PgServer()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def own_pg():
    """A server of this test alone: restarting it disturbs no other test."""
    server = PgServer()
    try:
        yield server
    finally:
        server.stop()


def make_store(kind: str, tmp_path, request, **kw) -> cachestore.CacheStore:
    if kind == "dir":
        return DirectoryStore(tmp_path / "store")
    if kind == "sqlite":
        return SqliteStore(tmp_path / "cache.db", **kw)
    return PostgresStore(request.getfixturevalue("pg").dsn, table=f"f{next(_tables)}", **kw)


@pytest.fixture(params=["dir", "sqlite", "postgres"])
def store(request, tmp_path):
    s = make_store(request.param, tmp_path, request)
    yield s
    s.close()


class FakeCache:
    """What ``load_into``/``save_from`` use of a PipelineCache: its device, ``load_cache``, ``save_cache``."""

    vkdev = types.SimpleNamespace(vendor_id=1, device_id=2, driver_version=3, pipeline_cache_uuid=bytes(16))

    def __init__(self, data: bytes = b"cache bytes") -> None:
        self.data = data
        self.loaded: list[bytes] = []

    def save_cache(self, buf: bytearray, merge: bool = False) -> int:
        buf[:] = self.data
        return 0

    def load_cache(self, data, **kw) -> int:
        self.loaded.append(bytes(data))
        return 0


DK = cachestore.device_key(FakeCache.vkdev)


def raw_pg(dsn: str, autocommit: bool = True):
    import psycopg

    return psycopg.connect(dsn, autocommit=autocommit)


# -- 1. PostgreSQL reconnects -------------------------------------------------------------------------


def test_postgres_reconnects_after_a_server_restart(own_pg, caplog):
    s = PostgresStore(own_pg.dsn)
    try:
        s.put("m", "d", b"one")
        own_pg.restart()
        with caplog.at_level(logging.WARNING, logger="ncnn_c"):
            assert s.get("m", "d") == b"one"  # was AdminShutdown, then "the connection is closed"
        assert "reconnecting" in caplog.text
        own_pg.restart()
        s.put("m", "d", b"two")
        own_pg.restart()
        assert s.update("m", "d", lambda old: (old or b"") + b"+") == b"two+"
        assert s.get("m", "d") == b"two+"
    finally:
        s.close()


def test_postgres_gives_up_after_its_reconnect_delays(own_pg):
    s = PostgresStore(own_pg.dsn, connect_timeout=2)
    s.reconnect_delays = (0.05, 0.1)
    try:
        s.put("m", "d", b"x")
        own_pg.halt()
        t0 = time.monotonic()
        with pytest.raises(CacheStoreError, match="no connection"):
            s.get("m", "d")
        assert time.monotonic() - t0 < 5
        own_pg.start()
        assert s.get("m", "d") == b"x"  # the store is usable again without reopening it
    finally:
        s.close()


# -- 2. PostgreSQL timeouts ---------------------------------------------------------------------------


@pytest.mark.parametrize("timeouts", [{"lock_timeout": 0.3}, {"lock_timeout": 0, "statement_timeout": 0.3}])
def test_postgres_save_fails_fast_on_a_locked_row(pg, timeouts, caplog):
    s = PostgresStore(pg.dsn, table=f"f{next(_tables)}", **timeouts)
    holder = raw_pg(pg.dsn, autocommit=False)
    try:
        s.put("m", DK, b"old")
        holder.execute(f"SELECT data FROM {s.table} WHERE model_key = 'm' FOR UPDATE").fetchall()
        for call in (
            lambda: s.put("m", DK, b"new"),
            lambda: s.update("m", DK, lambda old: b"new"),
        ):
            t0 = time.monotonic()
            with pytest.raises(CacheStoreError, match="timeout"):
                call()
            assert time.monotonic() - t0 < 3
        t0 = time.monotonic()
        with caplog.at_level(logging.ERROR, logger="ncnn_c"):
            assert s.save_from(FakeCache(), "m", merge=True) == -1  # a logged failure, no hang
        assert time.monotonic() - t0 < 3 and "timeout" in caplog.text
        assert s.get("m", DK) == b"old"  # readers do not wait for the row lock
        holder.rollback()
        assert s.save_from(FakeCache(), "m", merge=True) == 0
    finally:
        holder.close()
        s.close()


# -- 3. rows of the wrong type or size ----------------------------------------------------------------


@pytest.mark.parametrize("value", ["text", 1.5, 2**20], ids=["text", "real", "integer"])
def test_sqlite_wrong_typed_row_is_corrupt(tmp_path, value, caplog):
    s = SqliteStore(tmp_path / "c.db")
    raw = sqlite3.connect(tmp_path / "c.db", isolation_level=None)
    try:
        s.put("m", DK, b"x")
        raw.execute(f"UPDATE {s.table} SET data = ?", (value,))
        with pytest.raises(CacheStoreError, match="corrupt"):
            s.get("m", DK)  # was TypeError, or 2**20 zero bytes for an INTEGER
        with caplog.at_level(logging.INFO, logger="ncnn_c"):
            assert s.load_into(FakeCache(), "m") == -1
        assert "corrupt" in caplog.text
        # a merging save replaces the corrupt entry, as documented
        assert s.save_from(FakeCache(b"merged"), "m", merge=True) == 0
        assert s.get("m", DK) == b"merged"
        raw.execute(f"UPDATE {s.table} SET data = ?", (value,))
        assert s.update("m", DK, lambda old: b"new" if old is None else b"kept") == b"new"
    finally:
        raw.close()
        s.close()


def test_oversized_entry_is_corrupt(store, caplog):
    store.put("m", DK, b"x" * 200)
    store.max_size = 100
    with pytest.raises(CacheStoreError, match="over the 100-byte limit"):
        store.get("m", DK)
    with caplog.at_level(logging.INFO, logger="ncnn_c"):
        assert store.load_into(FakeCache(), "m") == -1
    assert "100-byte limit" in caplog.text
    assert store.update("m", DK, lambda old: b"new" if old is None else b"kept") == b"new"
    with pytest.raises(CacheStoreError, match="over the 100-byte limit"):
        store.put("m", DK, b"y" * 101)  # never written: it could not be read back
    with pytest.raises(CacheStoreError, match="over the 100-byte limit"):
        store.update("m", DK, lambda old: b"y" * 101)
    assert store.get("m", DK) == b"new"
    assert store.save_from(FakeCache(b"z" * 101), "m") == -1
    assert cachestore.MAX_ENTRY_SIZE == CACHE_FILE_SIZE_LIMIT


# -- 4. hostile URLs, keys and peers ------------------------------------------------------------------


def _shows(err: BaseException) -> str:
    return "".join(traceback.format_exception(type(err), err, err.__traceback__))


@pytest.mark.parametrize(
    "url",
    [
        "redis://user:pa55word@host/x",
        "sqlite://user:pa55word@host/x.db",
        "file://user:pa55word@host/x",
        "postgresql://user:pa55word%zz@/db",  # psycopg quotes the malformed token, password and all
        "postgresql://user:pa55word@/db?host=/nonexistent-dir&port=1&connect_timeout=1",
        "host=/nonexistent-dir port=1 user=u password=pa55word connect_timeout=1",
        "postgresql://user@/db?host=/nonexistent-dir&port=1&password=pa55word&connect_timeout=1",
    ],
)
def test_errors_never_show_a_password(url):
    with pytest.raises(CacheStoreError) as info:
        if "://" in url:
            open_store(url)
        else:
            PostgresStore(url)
    assert "pa55word" not in _shows(info.value), _shows(info.value)


def test_reconnect_log_lines_never_show_a_password(own_pg, caplog):
    s = PostgresStore(own_pg.dsn.replace("postgres@", "postgres:pa55word@"))
    try:
        s.put("m", "d", b"x")
        own_pg.restart()
        with caplog.at_level(logging.DEBUG, logger="ncnn_c"):
            assert s.get("m", "d") == b"x"
        assert "reconnecting" in caplog.text and "pa55word" not in caplog.text
    finally:
        s.close()


def test_sqlite_memory_is_an_in_memory_database():
    s = open_store("sqlite:///:memory:")
    other = open_store("sqlite:///:memory:")
    try:
        assert isinstance(s, SqliteStore) and s.path == ":memory:"  # was a file /:memory:
        s.put("m", "d", b"x")
        seen = []
        th = threading.Thread(target=lambda: seen.append(s.get("m", "d")))
        th.start()
        th.join()
        assert seen == [b"x"]  # every thread sees the one database
        assert other.get("m", "d") is None  # and each store has its own

        def work(t: int) -> None:
            for _ in range(20):
                s.update("n", "d", lambda old, t=t: (old or b"") + bytes([65 + t]))

        threads = [threading.Thread(target=work, args=(t,)) for t in range(4)]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        assert sorted(s.get("n", "d") or b"") == sorted(bytes(range(65, 69)) * 20)
    finally:
        s.close()
        other.close()
    with pytest.raises(CacheStoreError):
        open_store("sqlite:///:memory:?mode=ro")


def test_sqlite_mode_ro_is_read_only(tmp_path):
    db = tmp_path / "c.db"
    with SqliteStore(db) as w:
        w.put("m", "d", b"x")
        before = db.read_bytes()
        r = open_store(f"sqlite://{db}?mode=ro")  # was ignored: put went through
        try:
            assert r.get("m", "d") == b"x"
            assert r.get("m", "other") is None
            with pytest.raises(CacheStoreError, match="read-only"):
                r.put("m", "d", b"y")
            with pytest.raises(CacheStoreError, match="read-only"):
                r.update("m", "d", lambda old: b"y")
            assert r.save_from(FakeCache(), "m") == -1
            w.put("m", "d", b"z")  # a writer beside it still writes, the reader sees it
            assert r.get("m", "d") == b"z"
        finally:
            r.close()
    assert SqliteStore(db).get("m", "d") == b"z" and before
    with pytest.raises(CacheStoreError):
        open_store(f"sqlite://{tmp_path / 'missing.db'}?mode=ro")
    with pytest.raises(CacheStoreError):
        open_store(f"sqlite://{tmp_path / 'missing.db'}?mode=rw")
    assert not (tmp_path / "missing.db").exists()


@pytest.mark.parametrize(
    "url",
    [
        "sqlite://{}/c.db?mode=bogus",
        "sqlite://{}/c.db?timeout=3",
        "sqlite://{}/c.db?mode=ro&mode=rw",
        "file://{}/s?x=1",
    ],
)
def test_unknown_url_parameters_are_refused(tmp_path, url):
    with pytest.raises(CacheStoreError):
        open_store(url.format(tmp_path))
    assert sorted(os.listdir(tmp_path)) == []


@pytest.mark.parametrize("scheme", ["sqlite", "file"])
def test_missing_parent_directory_is_refused(tmp_path, monkeypatch, scheme):
    monkeypatch.setenv("NCNN_C_CACHE_DIR", str(tmp_path / "home" / "cache"))
    name = "x.db" if scheme == "sqlite" else "store"
    with pytest.raises(CacheStoreError, match="does not exist"):
        open_store(f"{scheme}://{tmp_path}/a/b/c/{name}")
    assert not (tmp_path / "a").exists()  # nothing created on the way
    # the default cache directory (and what is inside it) is created
    s = open_store(f"{scheme}://{tmp_path}/home/cache/sub/{name}")
    s.put("m", "d", b"x")
    s.close()
    assert (tmp_path / "home" / "cache" / "sub" / name).exists()
    # a store's own directory is made where its parent exists
    if scheme == "file":
        open_store(f"file://{tmp_path}/a").close()
        assert (tmp_path / "a").is_dir()


@pytest.mark.parametrize("bad", ["a\udcff", "\ud800", "a\x00b"])
def test_unencodable_key_is_a_store_error(store, bad):
    # was UnicodeEncodeError from the hash, the driver or the SQL binding
    for call in (
        lambda: store.get(bad, "d"),
        lambda: store.get("m", bad),
        lambda: store.put(bad, "d", b"x"),
        lambda: store.update("m", bad, lambda old: b"x"),
    ):
        with pytest.raises(CacheStoreError):
            call()
    assert store.save_from(FakeCache(), bad) == -1
    assert store.load_into(FakeCache(), bad) == -1


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_dropped_table_is_recreated(kind, tmp_path, request):
    s = make_store(kind, tmp_path, request)
    try:
        for write in (lambda: s.put("m", "d", b"new"), lambda: s.update("m", "d", lambda old: b"new")):
            s.put("m", "d", b"x")
            s.get("m", "d")
            if kind == "sqlite":
                raw = sqlite3.connect(tmp_path / "cache.db", isolation_level=None)
                raw.execute(f"DROP TABLE {s.table}")
                raw.close()
            else:
                with raw_pg(request.getfixturevalue("pg").dsn) as raw:
                    raw.execute(f"DROP TABLE {s.table}")
            assert s.get("m", "d") is None  # a miss, not an error
            write()  # was "no such table" until the store was reopened
            assert s.get("m", "d") == b"new"
    finally:
        s.close()
