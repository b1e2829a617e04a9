"""Pipeline cache stores: where a fleet keeps its cache files, one per (model, device class).

A store maps ``(model_key, device_key)`` to the bytes of a cache file
(``gpu/cachefile.py`` format). Three implementations share one small interface:

* ``DirectoryStore(path)``: one file per key pair in a directory, atomic writes, merges
  serialised by the same advisory lock as ``PipelineCache.save_cache(path, merge=True)``.
* ``SqliteStore(path)``: the embedded default, one table in a WAL-mode database file that
  many processes share; a merge runs in a ``BEGIN IMMEDIATE`` transaction.
* ``PostgresStore(dsn)``: a PostgreSQL table (psycopg 3) for caches shared between
  machines; a merge holds the row lock (``SELECT ... FOR UPDATE``) of its key.

``open_store(url)`` opens one from ``file:///dir``, ``sqlite:///path.db`` or
``postgresql://...``. ``device_key(vkdev)`` names a device class (vendor, device, driver
version, pipelineCacheUUID, cache format version). Reading a store never raises into the
application: ``load_into`` turns a missing, unreadable, rejected or corrupt entry into a
logged miss (non-zero return), and ``save_from`` reports failures by its return value.
The design is documented in ``docs/cache-stores.md``.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import threading
import time
import urllib.parse
from collections.abc import Callable

from .errors import NcnnError
from .gpu import cachefile

log = logging.getLogger("ncnn_c")

CACHE_DIR_ENV = "NCNN_C_CACHE_DIR"


class CacheStoreError(NcnnError):
    """A store that cannot be opened, read or written (connection, permissions, bad key)."""


def default_cache_dir() -> str:
    """The per-user cache directory: $NCNN_C_CACHE_DIR, else $XDG_CACHE_HOME/ncnn_c, else ~/.cache/ncnn_c."""
    env = os.environ.get(CACHE_DIR_ENV)
    if env:
        return os.path.abspath(os.path.expanduser(env))
    xdg = os.environ.get("XDG_CACHE_HOME")
    # the XDG spec says a relative value is invalid and must be ignored
    if xdg and os.path.isabs(xdg):
        return os.path.join(xdg, "ncnn_c")
    return os.path.join(os.path.expanduser("~"), ".cache", "ncnn_c")


def device_key(vkdev) -> str:
    """A stable, file-name-safe name of a device class, e.g. ``v4-10005-0000-00000001-6d657361...``.

    Cache format version, vendor id, device id, driver version and pipelineCacheUUID: two
    machines with equal keys can share a cache file. (The file itself checks more fields;
    a key that matches but a file that does not is still only a miss.) ``vkdev`` is a
    VulkanDevice or its GpuInfo.
    """
    info = getattr(vkdev, "info", vkdev)
    uuid = bytes(info.pipeline_cache_uuid)
    return (
        f"v{cachefile.CACHE_FILE_VERSION}-{int(info.vendor_id):04x}-{int(info.device_id):04x}"
        f"-{int(info.driver_version):08x}-{uuid.hex()}"
    )


def _check_key(what: str, key) -> str:
    if not isinstance(key, str) or not key:
        raise CacheStoreError(f"{what} must be a non-empty string, got {key!r}")
    return key


class CacheStore:
    """The interface: raw ``get``/``put``/``update`` of cache bytes, and ``load_into``/``save_from`` of a PipelineCache.

    ``get``, ``put`` and ``update`` raise CacheStoreError when the store itself fails;
    ``load_into`` and ``save_from`` never raise.
    """

    def get(self, model_key: str, device_key: str) -> bytes | None:
        """The stored bytes, or None when there are none."""
        raise NotImplementedError

    def put(self, model_key: str, device_key: str, data: bytes) -> None:
        """Replace the stored bytes (last writer wins)."""
        raise NotImplementedError

    def update(self, model_key: str, device_key: str, fn: Callable[[bytes | None], bytes]) -> bytes:
        """Store ``fn(current bytes or None)``, with no other ``update`` of the key in between; returns it."""
        raise NotImplementedError

    def close(self) -> None:
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def load_into(self, cache, model_key: str) -> int:
        """Load the entry of ``model_key`` for the cache's device into ``cache``; 0 on success.

        A missing entry is logged at INFO, an unreadable store, a rejected or corrupt entry at
        WARNING; each returns -1 (a cache miss) and leaves ``cache`` as it was.
        """
        try:
            dkey = device_key(cache.vkdev)
            data = self.get(_check_key("model_key", model_key), dkey)
        except Exception as e:
            log.warning("%r: cannot read %r: %s (a cache miss)", self, model_key, e)
            return -1
        if data is None:
            log.info("%r: no cache for model %r on device %s yet (a cache miss)", self, model_key, dkey)
            return -1
        return cache.load_cache(
            data, rejection_log_level=logging.WARNING, source_name=f"{self!r} entry {model_key!r}"
        )

    def save_from(self, cache, model_key: str, merge: bool = False) -> int:
        """Store ``cache`` under ``model_key`` and its device; 0 on success.

        With ``merge`` the entry already stored is merged with the cache (as
        ``PipelineCache.save_cache(..., merge=True)`` does) inside the store's lock or
        transaction, so that concurrent savers lose no entry.
        """
        try:
            dkey = device_key(cache.vkdev)
            _check_key("model_key", model_key)
            if not merge:
                buf = bytearray()
                if cache.save_cache(buf) != 0:
                    return -1
                self.put(model_key, dkey, bytes(buf))
                return 0

            def merged(old: bytes | None) -> bytes:
                buf = bytearray(old or b"")
                if cache.save_cache(buf, merge=True) != 0:
                    raise CacheStoreError("PipelineCache.save_cache failed (logged above)")
                return bytes(buf)

            self.update(model_key, dkey, merged)
            return 0
        except Exception as e:
            log.error("%r: cannot save %r: %s", self, model_key, e)
            return -1


# --------------------------------------------------------------------------- directory


def _digest(key: str) -> str:
    return hashlib.sha256(key.encode("utf-8")).hexdigest()[:32]


class DirectoryStore(CacheStore):
    """One cache file per key pair: ``<dir>/<sha256(model)[:32]>-<sha256(device)[:32]>.vkcache``.

    Hashed names make any key a safe file name. Writes are atomic (``cachefile.write_atomic``,
    fsynced with ``durable``); ``update`` holds the file's ``.lock`` like a merging
    ``save_cache`` does, so a store directory and plain ``save_cache`` merges can mix.
    """

    def __init__(self, path, durable: bool = False) -> None:
        self.path = os.path.abspath(os.fsdecode(os.fspath(path)))
        self.durable = durable
        try:
            os.makedirs(self.path, mode=0o700, exist_ok=True)
        except OSError as e:
            raise CacheStoreError(f"cannot create the store directory {self.path!r}: {e}") from e

    def __repr__(self) -> str:
        return f"DirectoryStore({self.path!r})"

    def file_of(self, model_key: str, device_key: str) -> str:
        return os.path.join(
            self.path,
            f"{_digest(_check_key('model_key', model_key))}-{_digest(_check_key('device_key', device_key))}.vkcache",
        )

    def _read(self, path: str) -> bytes | None:
        try:
            return cachefile.read_source(path)
        except cachefile.CacheMissing:
            return None
        except cachefile.CacheRejected as e:
            raise CacheStoreError(str(e)) from e

    def get(self, model_key: str, device_key: str) -> bytes | None:
        return self._read(self.file_of(model_key, device_key))

    def put(self, model_key: str, device_key: str, data: bytes) -> None:
        try:
            cachefile.write_atomic(self.file_of(model_key, device_key), data, durable=self.durable)
        except OSError as e:
            raise CacheStoreError(str(e)) from e

    def update(self, model_key: str, device_key: str, fn: Callable[[bytes | None], bytes]) -> bytes:
        path = self.file_of(model_key, device_key)
        try:
            with cachefile.locked(path):
                try:
                    old = self._read(path)
                except CacheStoreError as e:
                    log.info("%r: replacing an unreadable entry: %s", self, e)
                    old = None
                data = fn(old)
                cachefile.write_atomic(path, data, durable=self.durable)
                return data
        except OSError as e:
            raise CacheStoreError(str(e)) from e


# --------------------------------------------------------------------------- SQLite

_TABLE_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,62}$")
DEFAULT_TABLE = "ncnn_c_pipeline_cache"


def _table_name(table: str) -> str:
    if not isinstance(table, str) or not _TABLE_RE.match(table):
        raise CacheStoreError(f"table name {table!r} is not a plain SQL identifier")
    return table


class _PerThread:
    """One connection per (process, thread): neither sqlite3 nor psycopg connections may cross a fork."""

    def __init__(self, connect: Callable[[], object]) -> None:
        self._connect = connect
        self._local = threading.local()
        self._lock = threading.Lock()
        self._all: list[tuple[int, object]] = []

    def get(self):
        conn = getattr(self._local, "conn", None)
        if conn is None or self._local.pid != os.getpid():
            conn = self._connect()
            self._local.conn, self._local.pid = conn, os.getpid()
            with self._lock:
                self._all.append((os.getpid(), conn))
        return conn

    def close_all(self) -> None:
        with self._lock:
            conns, self._all = self._all, []
        self._local = threading.local()
        for pid, conn in conns:
            if pid == os.getpid():  # a parent's connection is left to the parent
                try:
                    conn.close()  # type: ignore[attr-defined]
                except Exception:
                    pass


class SqliteStore(CacheStore):
    """A table ``(model_key, device_key, data, updated_at)`` in a SQLite file, WAL mode.

    Safe for many threads (one connection each) and processes on one machine (not on a
    network filesystem, where SQLite's locks are unreliable). ``timeout`` is the
    busy_timeout: how long a writer waits for another one.
    """

    def __init__(self, path, timeout: float = 30.0, table: str = DEFAULT_TABLE) -> None:
        import sqlite3

        self._sqlite3 = sqlite3
        self.path = os.path.abspath(os.fsdecode(os.fspath(path)))
        self.timeout = float(timeout)
        self.table = _table_name(table)
        self._conns = _PerThread(self._connect)
        try:
            self._conns.get()  # fail here, not at the first get(), when the file cannot be opened
        except Exception as e:
            self._conns.close_all()
            raise CacheStoreError(f"cannot open the SQLite store {self.path!r}: {e}") from e

    def __repr__(self) -> str:
        return f"SqliteStore({self.path!r})"

    def _connect(self):
        sqlite3 = self._sqlite3
        # autocommit mode; transactions are explicit. check_same_thread off only so that
        # close() may close every thread's connection: each thread still uses its own.
        conn = sqlite3.connect(self.path, timeout=self.timeout, isolation_level=None, check_same_thread=False)
        conn.execute(f"PRAGMA busy_timeout = {int(self.timeout * 1000)}")
        deadline = time.monotonic() + self.timeout
        while True:
            # switching to WAL needs a moment alone with the file; the busy handler does not
            # always cover it, so retry while other processes are opening the store too
            try:
                mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
                conn.execute(
                    f"CREATE TABLE IF NOT EXISTS {self.table} ("
                    " model_key TEXT NOT NULL, device_key TEXT NOT NULL, data BLOB NOT NULL,"
                    " updated_at REAL NOT NULL, PRIMARY KEY (model_key, device_key))"
                )
                break
            except sqlite3.OperationalError as e:
                if "locked" not in str(e) and "busy" not in str(e) or time.monotonic() > deadline:
                    conn.close()
                    raise
                time.sleep(0.01)
        if str(mode).lower() != "wal":
            log.warning("%r: journal_mode is %s, not WAL (the filesystem may not support it)", self, mode)
        return conn

    def _run(self, fn):
        try:
            return fn(self._conns.get())
        except self._sqlite3.Error as e:
            raise CacheStoreError(f"{self!r}: {type(e).__name__}: {e}") from e

    def get(self, model_key: str, device_key: str) -> bytes | None:
        key = (_check_key("model_key", model_key), _check_key("device_key", device_key))

        def q(conn):
            row = conn.execute(
                f"SELECT data FROM {self.table} WHERE model_key = ? AND device_key = ?", key
            ).fetchone()
            return None if row is None else bytes(row[0])

        return self._run(q)

    def _upsert(self, conn, key, data) -> None:
        conn.execute(
            f"INSERT INTO {self.table} (model_key, device_key, data, updated_at) VALUES (?, ?, ?, ?)"
            " ON CONFLICT (model_key, device_key) DO UPDATE SET data = excluded.data, updated_at = excluded.updated_at",
            (*key, self._sqlite3.Binary(bytes(data)), time.time()),
        )

    def put(self, model_key: str, device_key: str, data: bytes) -> None:
        key = (_check_key("model_key", model_key), _check_key("device_key", device_key))
        self._run(lambda conn: self._upsert(conn, key, data))

    def update(self, model_key: str, device_key: str, fn: Callable[[bytes | None], bytes]) -> bytes:
        key = (_check_key("model_key", model_key), _check_key("device_key", device_key))

        def tx(conn):
            # IMMEDIATE takes the write lock before the read: two merging writers never both
            # read the old row and then overwrite each other
            conn.execute("BEGIN IMMEDIATE")
            try:
                row = conn.execute(
                    f"SELECT data FROM {self.table} WHERE model_key = ? AND device_key = ?", key
                ).fetchone()
                data = fn(None if row is None else bytes(row[0]))
                self._upsert(conn, key, data)
                conn.execute("COMMIT")
                return data
            except BaseException:
                conn.execute("ROLLBACK")
                raise

        return self._run(tx)

    def close(self) -> None:
        self._conns.close_all()


# --------------------------------------------------------------------------- PostgreSQL


class PostgresStore(CacheStore):
    """The same table in PostgreSQL (psycopg 3), for caches shared between machines.

    ``put`` is one ``INSERT ... ON CONFLICT DO UPDATE``. ``update`` makes sure the row
    exists (an empty placeholder, never committed on its own), then reads it with
    ``SELECT ... FOR UPDATE``: the row lock serialises merging writers of one key, also when
    the key is new.
    """

    def __init__(self, dsn: str, table: str = DEFAULT_TABLE, connect_timeout: int = 10) -> None:
        try:
            import psycopg
        except ImportError as e:
            raise CacheStoreError("PostgresStore needs psycopg 3 (pip install psycopg)") from e
        self._psycopg = psycopg
        self.dsn = dsn
        self.table = _table_name(table)
        self.connect_timeout = int(connect_timeout)
        self._conns = _PerThread(self._connect)
        try:
            self._conns.get()
        except Exception as e:
            self._conns.close_all()
            raise CacheStoreError(f"cannot open the PostgreSQL store: {type(e).__name__}: {e}") from e

    def __repr__(self) -> str:
        # never show a password in a log line
        parts = urllib.parse.urlsplit(self.dsn) if "://" in self.dsn else None
        where = f"{parts.hostname or 'local'}{parts.path}" if parts else "dsn"
        return f"PostgresStore({where!r})"

    def _connect(self):
        psycopg = self._psycopg
        conn = psycopg.connect(self.dsn, autocommit=True, connect_timeout=self.connect_timeout)
        try:
            with conn.transaction():
                # CREATE TABLE IF NOT EXISTS races with itself in PostgreSQL (a duplicate key in
                # pg_type): one creator at a time, by a transaction-scoped advisory lock
                conn.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (self.table,))
                conn.execute(
                    f"CREATE TABLE IF NOT EXISTS {self.table} ("
                    " model_key text NOT NULL, device_key text NOT NULL, data bytea NOT NULL,"
                    " updated_at timestamptz NOT NULL DEFAULT now(), PRIMARY KEY (model_key, device_key))"
                )
        except BaseException:
            conn.close()
            raise
        return conn

    def _run(self, fn):
        try:
            return fn(self._conns.get())
        except self._psycopg.Error as e:
            raise CacheStoreError(f"{self!r}: {type(e).__name__}: {e}") from e

    def get(self, model_key: str, device_key: str) -> bytes | None:
        key = (_check_key("model_key", model_key), _check_key("device_key", device_key))

        def q(conn):
            row = conn.execute(
                f"SELECT data FROM {self.table} WHERE model_key = %s AND device_key = %s", key
            ).fetchone()
            # an empty row is update()'s placeholder, seen only if it was ever committed
            return bytes(row[0]) if row is not None and len(row[0]) else None

        return self._run(q)

    def put(self, model_key: str, device_key: str, data: bytes) -> None:
        key = (_check_key("model_key", model_key), _check_key("device_key", device_key))
        self._run(
            lambda conn: conn.execute(
                f"INSERT INTO {self.table} (model_key, device_key, data, updated_at) VALUES (%s, %s, %s, now())"
                " ON CONFLICT (model_key, device_key) DO UPDATE SET data = EXCLUDED.data, updated_at = now()",
                (*key, bytes(data)),
            )
        )

    def update(self, model_key: str, device_key: str, fn: Callable[[bytes | None], bytes]) -> bytes:
        key = (_check_key("model_key", model_key), _check_key("device_key", device_key))

        def tx(conn):
            with conn.transaction():
                # a row to lock even for a new key; waits for a concurrent inserter to finish
                conn.execute(
                    f"INSERT INTO {self.table} (model_key, device_key, data) VALUES (%s, %s, ''::bytea)"
                    " ON CONFLICT (model_key, device_key) DO NOTHING",
                    key,
                )
                row = conn.execute(
                    f"SELECT data FROM {self.table} WHERE model_key = %s AND device_key = %s FOR UPDATE", key
                ).fetchone()
                old = bytes(row[0]) if row is not None and len(row[0]) else None
                data = fn(old)
                conn.execute(
                    f"UPDATE {self.table} SET data = %s, updated_at = now() WHERE model_key = %s AND device_key = %s",
                    (bytes(data), *key),
                )
                return data

        return self._run(tx)

    def close(self) -> None:
        self._conns.close_all()


# --------------------------------------------------------------------------- URLs


def open_store(url: str) -> CacheStore:
    """A store from a URL: ``file:///dir``, ``sqlite:///path.db`` or ``postgresql://...`` (also ``postgres://``).

    Raises CacheStoreError for an unknown scheme or a store that cannot be opened.
    """
    if not isinstance(url, str):
        raise CacheStoreError(f"store URL must be a string, got {type(url).__name__}")
    parts = urllib.parse.urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme in ("file", "sqlite"):
        if parts.netloc not in ("", "localhost"):
            raise CacheStoreError(f"{url!r}: a {scheme} store is local; write {scheme}:///path")
        path = urllib.parse.unquote(parts.path)
        if not path:
            raise CacheStoreError(f"{url!r}: no path")
        return DirectoryStore(path) if scheme == "file" else SqliteStore(path)
    if scheme in ("postgresql", "postgres"):
        return PostgresStore(url)
    raise CacheStoreError(f"{url!r}: unknown store scheme {parts.scheme!r} (file, sqlite, postgresql)")
