"""Pipeline cache stores: where a fleet keeps its cache files, one per (model, device class).

A store maps ``(model_key, device_key)`` to the bytes of a cache file (``cache/format.py``).
Three implementations share one small interface:

* ``DirectoryStore(path)``: one file per key pair in a directory, atomic writes, merges
  serialised by the same advisory lock as ``PipelineCache.save_cache(path, merge=True)``.
* ``SqliteStore(path)``: the embedded default (``paths.default_store_url()``), one table in a
  WAL-mode database file that many processes share; a merge runs in a ``BEGIN IMMEDIATE``
  transaction.
* ``PostgresStore(dsn)``: a PostgreSQL table (psycopg 3) for caches shared between
  machines; a merge holds the row lock (``SELECT ... FOR UPDATE``) of its key.

``open_store(url)`` opens one from ``file:///dir``, ``sqlite:///path.db`` or
``postgresql://...``. Reading a store never raises into the application: ``load_into``
turns a missing, unreadable, rejected or corrupt entry into a logged miss (non-zero
return), and ``save_from`` reports failures by its return value. An entry over
``MAX_ENTRY_SIZE`` or, in SQLite, not a BLOB is corrupt. PostgresStore reconnects after a
broken connection and bounds lock waits (``lock_timeout``, ``statement_timeout``); no error
message or log line shows a password. The design is documented in ``docs/cache-stores.md``.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import re
import threading
import time
import urllib.parse
from collections.abc import Callable

from ..errors import NcnnError
from . import fileio
from .format import CACHE_FILE_SIZE_LIMIT, CacheMissing, CacheRejected, resolve_key
from .paths import default_cache_dir, device_key

log = logging.getLogger("ncnn_c")


class CacheStoreError(NcnnError):
    """A store that cannot be opened, read or written (connection, permissions, bad key)."""


def _check_key(what: str, key) -> str:
    if not isinstance(key, str) or not key:
        raise CacheStoreError(f"{what} must be a non-empty string, got {key!r}")
    try:
        key.encode("utf-8")  # a lone surrogate cannot be hashed, bound or stored
    except UnicodeEncodeError as e:
        raise CacheStoreError(f"{what} {key!r} is not valid Unicode ({e.reason})") from None
    if "\x00" in key:  # PostgreSQL text cannot hold NUL: refused by every store alike
        raise CacheStoreError(f"{what} {key!r} contains a NUL character")
    return key


MAX_ENTRY_SIZE = CACHE_FILE_SIZE_LIMIT
"""The largest entry a store writes or reads (256 MiB, the cache file limit); a bigger one is corrupt."""


_URL_PASSWORD_RE = re.compile(r"(://[^/?#@:\s]*:)[^@/?#\s]*@")
_KEYWORD_PASSWORD_RE = re.compile(r"(\bpassword\s*=\s*)('(?:[^'\\]|\\.)*'|[^\s&]*)", re.IGNORECASE)


def _redact(text: str, secrets: tuple[str, ...] = ()) -> str:
    """``text`` with the passwords of URLs (``user:***@``), of ``password=`` settings and ``secrets`` masked."""
    text = _URL_PASSWORD_RE.sub(r"\1***@", text)
    text = _KEYWORD_PASSWORD_RE.sub(r"\1***", text)
    for secret in secrets:
        # a secret of one to three characters would mask letters all over the message; it
        # is still masked where it stands in a URL or a password= setting
        if len(secret) >= 4:
            text = text.replace(secret, "***")
    return text


def _ensure_dir(d: str, may_create: bool) -> None:
    """Make sure the directory ``d`` exists, creating as little as possible.

    A store creates its own directory (``may_create``) when the parent exists, and any
    directory inside the default cache directory; it never creates directories elsewhere,
    so a mistyped URL fails instead of leaving a tree of directories behind.
    """
    if d.startswith("//"):
        d = "/" + d.lstrip("/")  # sqlite:////abs/path: POSIX keeps a leading // as it is
    if os.path.isdir(d):
        return
    # another process may create it between the two checks: only a non-directory is an error
    if os.path.exists(d) and not os.path.isdir(d):
        raise CacheStoreError(f"{d!r} is not a directory")
    home = default_cache_dir()
    inside = d == home or d.startswith(home.rstrip(os.sep) + os.sep)
    if not inside and not (may_create and os.path.isdir(os.path.dirname(d))):
        raise CacheStoreError(
            f"the directory {os.path.dirname(d) if may_create else d!r} does not exist"
            f" (stores create only the default cache directory {home!r} and directories inside it)"
        )
    try:
        os.makedirs(d, mode=0o700, exist_ok=True)
    except OSError as e:
        raise CacheStoreError(f"cannot create the directory {d!r}: {e}") from e


class CacheStore:
    """The interface: raw ``get``/``put``/``update`` of cache bytes, and ``load_into``/``save_from`` of a PipelineCache.

    ``get``, ``put`` and ``update`` raise CacheStoreError when the store itself fails;
    ``load_into`` and ``save_from`` never raise. An entry over ``max_size`` bytes
    (MAX_ENTRY_SIZE unless set on the store) is never written, and one found stored (or a
    value of the wrong type in a database) is corrupt: ``get`` raises CacheStoreError
    without reading it, ``update`` replaces it as a missing one.
    """

    max_size: int = MAX_ENTRY_SIZE
    # The cache key of this store's entries (``open_store(url, key=...)`` or set it): entries
    # are saved with an HMAC-SHA256 made with it and loaded only with a valid one, whatever
    # key the PipelineCache has. None: the PipelineCache's own (by default $NCNN_C_CACHE_KEY).
    key: bytes | None = None

    def _check_data(self, data) -> bytes:
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise CacheStoreError(f"{self!r}: entry data must be bytes, got {type(data).__name__}")
        data = bytes(data)
        if len(data) > self.max_size:
            raise self._oversize("an entry", len(data))
        return data

    def _oversize(self, what: str, size: int) -> CacheStoreError:
        return CacheStoreError(f"{self!r}: {what} of {size} bytes is over the {self.max_size}-byte limit")

    def get(self, model_key: str, device_key: str) -> bytes | None:
        """The stored bytes, or None when there are none."""
        raise NotImplementedError

    def put(self, model_key: str, device_key: str, data: bytes) -> None:
        """Replace the stored bytes (last writer wins)."""
        raise NotImplementedError

    def update(self, model_key: str, device_key: str, fn: Callable[[bytes | None], bytes]) -> bytes:
        """Store ``fn(current bytes or None)``, with no other ``update`` of the key in between; returns it."""
        raise NotImplementedError

    def model_keys(self, device_key: str) -> list[str]:
        """The model keys stored for ``device_key``, sorted (``cache inspect --store`` without
        ``--key``); CacheStoreError where the store cannot list them."""
        raise CacheStoreError(f"{self!r} cannot list its entries: give the model key")

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
        keyed = {} if self.key is None else {"key": self.key}
        return cache.load_cache(
            data, rejection_log_level=logging.WARNING, source_name=f"{self!r} entry {model_key!r}", **keyed
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
            keyed = {} if self.key is None else {"key": self.key}
            if not merge:
                buf = bytearray()
                if cache.save_cache(buf, **keyed) != 0:
                    return -1
                self.put(model_key, dkey, bytes(buf))
                return 0

            def merged(old: bytes | None) -> bytes:
                buf = bytearray(old or b"")
                if cache.save_cache(buf, merge=True, **keyed) != 0:
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

    Hashed names make any key a safe file name (and the keys cannot be listed back). Writes are atomic (``fileio.write_atomic``,
    fsynced with ``durable``); ``update`` holds the file's ``.lock`` like a merging
    ``save_cache`` does, so a store directory and plain ``save_cache`` merges can mix.
    The directory is created (mode 0700) when its parent exists or when it is inside the
    default cache directory; a missing parent elsewhere is refused.
    """

    def __init__(self, path, durable: bool = False) -> None:
        self.path = os.path.abspath(os.fsdecode(os.fspath(path)))
        self.durable = durable
        _ensure_dir(self.path, may_create=True)

    def __repr__(self) -> str:
        return f"DirectoryStore({self.path!r})"

    def file_of(self, model_key: str, device_key: str) -> str:
        return os.path.join(
            self.path,
            f"{_digest(_check_key('model_key', model_key))}-{_digest(_check_key('device_key', device_key))}.vkcache",
        )

    def _read(self, path: str) -> bytes | None:
        try:
            size = os.stat(path).st_size
        except OSError:
            size = 0  # missing or unreadable: read_source says which
        if size > self.max_size:
            raise self._oversize(f"the file {path!r}", size)
        try:
            return fileio.read_source(path)
        except CacheMissing:
            return None
        except CacheRejected as e:
            raise CacheStoreError(str(e)) from e

    def get(self, model_key: str, device_key: str) -> bytes | None:
        return self._read(self.file_of(model_key, device_key))

    def put(self, model_key: str, device_key: str, data: bytes) -> None:
        path = self.file_of(model_key, device_key)
        data = self._check_data(data)
        try:
            fileio.write_atomic(path, data, durable=self.durable)
        except OSError as e:
            raise CacheStoreError(str(e)) from e

    def update(self, model_key: str, device_key: str, fn: Callable[[bytes | None], bytes]) -> bytes:
        path = self.file_of(model_key, device_key)
        try:
            with fileio.locked(path):
                try:
                    old = self._read(path)
                except CacheStoreError as e:
                    log.info("%r: replacing an unreadable entry: %s", self, e)
                    old = None
                data = self._check_data(fn(old))
                fileio.write_atomic(path, data, durable=self.durable)
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
    """One connection per (process, thread): neither sqlite3 nor psycopg connections may cross a fork.

    With ``shared`` one connection per process instead, for callers that serialise its use.
    """

    def __init__(self, connect: Callable[[], object], shared: bool = False) -> None:
        self._connect = connect
        self._shared = shared
        self._local = threading.local()
        self._one = _Slot()
        self._lock = threading.Lock()
        self._all: list[tuple[int, object]] = []

    def _slot(self):
        return self._one if self._shared else self._local

    def get(self):
        slot = self._slot()
        conn = getattr(slot, "conn", None)
        if conn is None or slot.pid != os.getpid():
            conn = self._connect()
            slot.conn, slot.pid = conn, os.getpid()
            with self._lock:
                self._all.append((os.getpid(), conn))
        return conn

    def drop(self) -> None:
        """Forget (and close) the calling thread's connection: the next ``get`` makes a new one."""
        slot = self._slot()
        conn, slot.conn = getattr(slot, "conn", None), None
        if conn is not None:
            with self._lock:
                self._all = [(pid, c) for pid, c in self._all if c is not conn]
            _close_quietly(conn)

    def close_all(self) -> None:
        with self._lock:
            conns, self._all = self._all, []
        self._local = threading.local()
        self._one = _Slot()
        for pid, conn in conns:
            if pid == os.getpid():  # a parent's connection is left to the parent
                _close_quietly(conn)


class _Slot:
    conn: object = None
    pid: int = -1


def _close_quietly(conn) -> None:
    try:
        conn.close()
    except Exception:
        pass


MEMORY = ":memory:"
_SQLITE_MODES = ("rwc", "rw", "ro")


class SqliteStore(CacheStore):
    """A table ``(model_key, device_key, data, updated_at)`` in a SQLite file, WAL mode.

    Safe for many threads (one connection each) and processes on one machine (not on a
    network filesystem, where SQLite's locks are unreliable). ``timeout`` is the
    busy_timeout: how long a writer waits for another one, after which the write fails
    with CacheStoreError (a logged failure in ``save_from``), never hangs.

    ``mode`` is SQLite's: ``"rwc"`` creates the file, ``"rw"`` needs it to exist, ``"ro"``
    only reads (``put`` and ``update`` raise CacheStoreError). The file's directory must
    exist, unless it is inside the default cache directory. ``path`` ``":memory:"`` is a
    database in memory, private to this store and process: its threads share one
    connection, one call at a time (a shared-cache database would give each thread a
    table lock that ignores busy_timeout).

    A ``data`` value that is not a BLOB (SQLite keeps any type in any column) or is longer
    than ``max_size`` is a corrupt entry, checked in SQL before it is read.
    """

    def __init__(self, path, timeout: float = 30.0, table: str = DEFAULT_TABLE, mode: str = "rwc") -> None:
        import sqlite3

        self._sqlite3 = sqlite3
        raw = os.fsdecode(os.fspath(path))
        self.memory = raw == MEMORY
        self.path = raw if self.memory else os.path.abspath(raw)
        self.timeout = float(timeout)
        self.table = _table_name(table)
        if mode not in _SQLITE_MODES:
            raise CacheStoreError(f"SQLite mode {mode!r} is not one of {', '.join(_SQLITE_MODES)}")
        if self.memory and mode != "rwc":
            raise CacheStoreError(f"an in-memory SQLite store cannot be opened with mode {mode!r}")
        self.mode = mode
        # one call at a time on the in-memory store's one connection
        self._serial: contextlib.AbstractContextManager = (
            threading.RLock() if self.memory else contextlib.nullcontext()
        )
        if not self.memory:
            _ensure_dir(os.path.dirname(self.path), may_create=False)
        self._conns = _PerThread(self._connect, shared=self.memory)
        try:
            self._conns.get()  # fail here, not at the first get(), when the file cannot be opened
        except Exception as e:
            self._conns.close_all()
            raise CacheStoreError(f"cannot open the SQLite store {self.path!r}: {e}") from e

    def __repr__(self) -> str:
        return f"SqliteStore({self.path!r}{'' if self.mode == 'rwc' else f', mode={self.mode!r}'})"

    def _connect(self):
        sqlite3 = self._sqlite3
        # autocommit mode; transactions are explicit. check_same_thread off only so that
        # close() may close every thread's connection: each thread still uses its own.
        # a URI, for its mode; one leading "/" (POSIX keeps "//x", which a URI reads as a host)
        uri_path = urllib.parse.quote(os.fsencode("/" + self.path.lstrip("/")))
        target = MEMORY if self.memory else f"file:{uri_path}?mode={self.mode}"
        conn = sqlite3.connect(
            target, timeout=self.timeout, isolation_level=None, check_same_thread=False, uri=not self.memory
        )
        conn.execute(f"PRAGMA busy_timeout = {int(self.timeout * 1000)}")
        if self.mode == "ro":
            return conn  # reads only: the journal mode and the table are the writers' business
        deadline = time.monotonic() + self.timeout
        while True:
            # switching to WAL needs a moment alone with the file; the busy handler does not
            # always cover it, so retry while other processes are opening the store too
            try:
                mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
                self._create_table(conn)
                break
            except sqlite3.OperationalError as e:
                if "locked" not in str(e) and "busy" not in str(e) or time.monotonic() > deadline:
                    conn.close()
                    raise
                time.sleep(0.01)
        if str(mode).lower() != "wal" and not self.memory:
            log.warning("%r: journal_mode is %s, not WAL (the filesystem may not support it)", self, mode)
        return conn

    def _create_table(self, conn) -> None:
        conn.execute(
            f"CREATE TABLE IF NOT EXISTS {self.table} ("
            " model_key TEXT NOT NULL, device_key TEXT NOT NULL, data BLOB NOT NULL,"
            " updated_at REAL NOT NULL, PRIMARY KEY (model_key, device_key))"
        )

    def _run(self, fn, write: bool):
        if write and self.mode == "ro":
            raise CacheStoreError(f"{self!r} is read-only")
        with self._serial:
            for attempt in range(2):
                conn = None
                try:
                    conn = self._conns.get()
                    return fn(conn)
                except self._sqlite3.OperationalError as e:
                    # another process dropped the table: a miss for readers, made anew for writers
                    if attempt == 0 and conn is not None and "no such table" in str(e):
                        if not write:
                            return None
                        try:
                            self._create_table(conn)
                            continue
                        except self._sqlite3.Error as e2:
                            raise CacheStoreError(f"{self!r}: {type(e2).__name__}: {e2}") from e2
                    raise CacheStoreError(f"{self!r}: {type(e).__name__}: {e}") from e
                except self._sqlite3.Error as e:
                    raise CacheStoreError(f"{self!r}: {type(e).__name__}: {e}") from e

    def _select(self, conn, key, suffix: str = ""):
        """The stored bytes of ``key`` or None; CacheStoreError for a corrupt row, which is not read."""
        row = conn.execute(
            f"SELECT typeof(data), length(data), CASE WHEN typeof(data) = 'blob' AND length(data) <= ? THEN data END"
            f" FROM {self.table} WHERE model_key = ? AND device_key = ?{suffix}",
            (self.max_size, *key),
        ).fetchone()
        if row is None:
            return None
        kind, size, data = row
        if kind != "blob":
            raise CacheStoreError(f"{self!r}: the entry {key!r} is corrupt: a {kind} value, not a blob")
        if data is None:
            raise self._oversize(f"the entry {key!r}", size)
        return bytes(data)

    def get(self, model_key: str, device_key: str) -> bytes | None:
        key = (_check_key("model_key", model_key), _check_key("device_key", device_key))
        return self._run(lambda conn: self._select(conn, key), write=False)

    def _upsert(self, conn, key, data: bytes) -> None:
        conn.execute(
            f"INSERT INTO {self.table} (model_key, device_key, data, updated_at) VALUES (?, ?, ?, ?)"
            " ON CONFLICT (model_key, device_key) DO UPDATE SET data = excluded.data, updated_at = excluded.updated_at",
            (*key, self._sqlite3.Binary(data), time.time()),
        )

    def put(self, model_key: str, device_key: str, data: bytes) -> None:
        key = (_check_key("model_key", model_key), _check_key("device_key", device_key))
        data = self._check_data(data)
        self._run(lambda conn: self._upsert(conn, key, data), write=True)

    def update(self, model_key: str, device_key: str, fn: Callable[[bytes | None], bytes]) -> bytes:
        key = (_check_key("model_key", model_key), _check_key("device_key", device_key))

        def tx(conn):
            # IMMEDIATE takes the write lock before the read: two merging writers never both
            # read the old row and then overwrite each other
            conn.execute("BEGIN IMMEDIATE")
            try:
                try:
                    old = self._select(conn, key)
                except CacheStoreError as e:
                    log.info("%s (replacing it)", e)
                    old = None
                data = self._check_data(fn(old))
                self._upsert(conn, key, data)
                conn.execute("COMMIT")
                return data
            except BaseException:
                conn.execute("ROLLBACK")
                raise

        return self._run(tx, write=True)

    def model_keys(self, device_key: str) -> list[str]:
        dkey = _check_key("device_key", device_key)
        rows = self._run(
            lambda conn: conn.execute(
                f"SELECT model_key FROM {self.table} WHERE device_key = ? ORDER BY model_key", (dkey,)
            ).fetchall(),
            write=False,
        )
        return [row[0] for row in rows or ()]

    def close(self) -> None:
        self._conns.close_all()


# --------------------------------------------------------------------------- PostgreSQL


class PostgresStore(CacheStore):
    """The same table in PostgreSQL (psycopg 3), for caches shared between machines.

    ``put`` is one ``INSERT ... ON CONFLICT DO UPDATE``. ``update`` makes sure the row
    exists (an empty placeholder, never committed on its own), then reads it with
    ``SELECT ... FOR UPDATE``: the row lock serialises merging writers of one key, also when
    the key is new.

    Every session sets ``lock_timeout`` and ``statement_timeout`` (seconds; 0 turns one
    off): a writer that waits for a stuck peer's row lock fails with CacheStoreError (a
    logged failure in ``save_from``) instead of hanging. A broken connection (a server
    restart, a dropped network) is replaced: the call is tried again on a new connection
    after each of ``reconnect_delays`` and fails only when they are used up. ``update``
    may therefore call ``fn`` again; its result must depend only on its argument. Error
    messages, log lines and ``repr()`` never show the password.
    """

    reconnect_delays: tuple[float, ...] = (0.1, 0.5, 2.0)

    def __init__(
        self,
        dsn: str,
        table: str = DEFAULT_TABLE,
        connect_timeout: int = 10,
        lock_timeout: float = 5.0,
        statement_timeout: float = 10.0,
    ) -> None:
        try:
            import psycopg
        except ImportError as e:
            raise CacheStoreError("PostgresStore needs psycopg 3 (pip install psycopg)") from e
        self._psycopg = psycopg
        self.dsn = dsn
        self._secrets = _dsn_passwords(dsn)
        self.table = _table_name(table)
        self.connect_timeout = int(connect_timeout)
        self.lock_timeout = float(lock_timeout)
        self.statement_timeout = float(statement_timeout)
        self._conns = _PerThread(self._connect)
        try:
            self._conns.get()
        except Exception as e:
            self._conns.close_all()
            raise self._error("cannot open the PostgreSQL store: ", e) from None

    def __repr__(self) -> str:
        # never show a password in a log line
        parts = urllib.parse.urlsplit(self.dsn) if "://" in self.dsn else None
        where = f"{parts.hostname or 'local'}{parts.path}" if parts else "dsn"
        return f"PostgresStore({where!r})"

    def _error(self, what: str, e: BaseException) -> CacheStoreError:
        # psycopg's messages may quote the DSN (a malformed one, say): the cause is left off
        # the error, so that a logged traceback does not show it either
        return CacheStoreError(_redact(f"{self!r}: {what}{type(e).__name__}: {e}", self._secrets))

    def _connect(self):
        psycopg = self._psycopg
        conn = psycopg.connect(self.dsn, autocommit=True, connect_timeout=self.connect_timeout)
        try:
            conn.execute(
                "SELECT set_config('lock_timeout', %s, false), set_config('statement_timeout', %s, false)",
                (f"{int(self.lock_timeout * 1000)}ms", f"{int(self.statement_timeout * 1000)}ms"),
            )
            self._create_table(conn)
        except BaseException:
            conn.close()
            raise
        return conn

    def _create_table(self, conn) -> None:
        with conn.transaction():
            # CREATE TABLE IF NOT EXISTS races with itself in PostgreSQL (a duplicate key in
            # pg_type): one creator at a time, by a transaction-scoped advisory lock
            conn.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (self.table,))
            conn.execute(
                f"CREATE TABLE IF NOT EXISTS {self.table} ("
                " model_key text NOT NULL, device_key text NOT NULL, data bytea NOT NULL,"
                " updated_at timestamptz NOT NULL DEFAULT now(), PRIMARY KEY (model_key, device_key))"
            )

    def _run(self, fn, write: bool):
        psycopg = self._psycopg
        delays = iter(self.reconnect_delays)
        created = False
        while True:
            conn = None
            try:
                conn = self._conns.get()
                return fn(conn)
            except psycopg.errors.UndefinedTable as e:
                # another session dropped the table: a miss for readers, made anew for writers
                if not write:
                    return None
                if created or conn is None:
                    raise self._error("", e) from None
                created = True
                try:
                    self._create_table(conn)
                except psycopg.Error as e2:
                    raise self._error("", e2) from None
            except psycopg.Error as e:
                if conn is not None and not conn.closed and not getattr(conn, "broken", False):
                    raise self._error("", e) from None  # the statement failed, not the connection
                delay = next(delays, None)
                if delay is None:
                    raise self._error("no connection: ", e) from None
                self._conns.drop()
                log.warning(
                    "%r: %s (reconnecting in %.1f s)",
                    self,
                    _redact(f"{type(e).__name__}: {e}".strip(), self._secrets),
                    delay,
                )
                time.sleep(delay)

    def _select(self, conn, key, suffix: str = ""):
        """The stored bytes of ``key`` or None; CacheStoreError for a row over the limit, which is not read."""
        row = conn.execute(
            f"SELECT octet_length(data), CASE WHEN octet_length(data) <= %s THEN data END"
            f" FROM {self.table} WHERE model_key = %s AND device_key = %s{suffix}",
            (self.max_size, *key),
        ).fetchone()
        # an empty row is update()'s placeholder, seen only if it was ever committed
        if row is None or row[0] == 0:
            return None
        if row[1] is None:
            raise self._oversize(f"the entry {key!r}", row[0])
        return bytes(row[1])

    def get(self, model_key: str, device_key: str) -> bytes | None:
        key = (_check_key("model_key", model_key), _check_key("device_key", device_key))
        return self._run(lambda conn: self._select(conn, key), write=False)

    def put(self, model_key: str, device_key: str, data: bytes) -> None:
        key = (_check_key("model_key", model_key), _check_key("device_key", device_key))
        data = self._check_data(data)
        self._run(
            lambda conn: conn.execute(
                f"INSERT INTO {self.table} (model_key, device_key, data, updated_at) VALUES (%s, %s, %s, now())"
                " ON CONFLICT (model_key, device_key) DO UPDATE SET data = EXCLUDED.data, updated_at = now()",
                (*key, data),
            ),
            write=True,
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
                try:
                    old = self._select(conn, key, " FOR UPDATE")
                except CacheStoreError as e:
                    log.info("%s (replacing it)", e)
                    old = None
                data = self._check_data(fn(old))
                conn.execute(
                    f"UPDATE {self.table} SET data = %s, updated_at = now() WHERE model_key = %s AND device_key = %s",
                    (data, *key),
                )
                return data

        return self._run(tx, write=True)

    def model_keys(self, device_key: str) -> list[str]:
        dkey = _check_key("device_key", device_key)
        rows = self._run(
            lambda conn: conn.execute(
                # an empty row is update()'s placeholder, not an entry
                f"SELECT model_key FROM {self.table} WHERE device_key = %s AND octet_length(data) > 0"
                " ORDER BY model_key",
                (dkey,),
            ).fetchall(),
            write=False,
        )
        return [row[0] for row in rows or ()]

    def close(self) -> None:
        self._conns.close_all()


def redact_url(url: str) -> str:
    """``url`` as messages may show it: any password masked."""
    return _redact(url, _dsn_passwords(url))


def _dsn_passwords(dsn: str) -> tuple[str, ...]:
    """The password of a DSN as written and as decoded, to mask in messages."""
    found: set[str] = set()
    if "://" in dsn:
        try:
            raw = urllib.parse.urlsplit(dsn).password
        except ValueError:
            raw = None
        if raw:
            found.update((raw, urllib.parse.unquote(raw)))
    try:
        from psycopg.conninfo import conninfo_to_dict

        decoded = conninfo_to_dict(dsn).get("password")
    except Exception:
        decoded = None
    if isinstance(decoded, str) and decoded:
        found.add(decoded)
    return tuple(sorted(found, key=len, reverse=True))


# --------------------------------------------------------------------------- URLs


def open_store(url: str, key: bytes | str | None = None) -> CacheStore:
    """A store from a URL: ``file:///dir``, ``sqlite:///path.db`` or ``postgresql://...`` (also ``postgres://``).

    ``sqlite:///path.db?mode=ro`` opens read-only (``mode=rw``: the file must exist);
    ``sqlite:///:memory:`` is an in-memory database of this store alone. Other query
    parameters of ``file`` and ``sqlite`` URLs are refused. A missing directory above the
    store is refused, except inside the default cache directory, which is created. Raises
    CacheStoreError for an unknown scheme or a store that cannot be opened; its message
    never shows a password. ``key`` sets the store's cache key (``CacheStore.key``).
    """
    store = _open_store(url)
    if key is not None:
        store.key = resolve_key(key)
    return store


def _open_store(url: str) -> CacheStore:
    if not isinstance(url, str):
        raise CacheStoreError(f"store URL must be a string, got {type(url).__name__}")
    shown = _redact(url, _dsn_passwords(url))
    try:
        parts = urllib.parse.urlsplit(url)
    except ValueError as e:
        raise CacheStoreError(f"{shown!r}: not a URL ({_redact(str(e))})") from None
    scheme = parts.scheme.lower()
    if scheme in ("file", "sqlite"):
        if parts.netloc not in ("", "localhost"):
            raise CacheStoreError(f"{shown!r}: a {scheme} store is local; write {scheme}:///path")
        path = urllib.parse.unquote(parts.path)
        if not path:
            raise CacheStoreError(f"{shown!r}: no path")
        try:
            query = urllib.parse.parse_qs(
                parts.query, keep_blank_values=True, strict_parsing=bool(parts.query)
            )
        except ValueError:
            raise CacheStoreError(f"{shown!r}: cannot read the query {parts.query!r}") from None
        known = {"mode"} if scheme == "sqlite" else set()
        unknown = sorted(set(query) - known)
        if unknown or parts.fragment or any(len(v) > 1 for v in query.values()):
            what = ", ".join(unknown) or "a repeated parameter or a fragment"
            allowed = "mode=ro|rw|rwc" if scheme == "sqlite" else "none"
            raise CacheStoreError(f"{shown!r}: unsupported URL parameters ({what}); allowed: {allowed}")
        if scheme == "file":
            return DirectoryStore(path)
        if path == "/" + MEMORY:
            path = MEMORY
        return SqliteStore(path, mode=query.get("mode", ["rwc"])[0])
    if scheme in ("postgresql", "postgres"):
        return PostgresStore(url)
    raise CacheStoreError(f"{shown!r}: unknown store scheme {parts.scheme!r} (file, sqlite, postgresql)")
