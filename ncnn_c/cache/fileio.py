"""Cache files on disk: bounded reads, atomic writes, the advisory lock, temp file cleanup.

Readers see either the old file or the complete new one (``write_atomic``: a unique temp
file, then ``os.replace``); merging writers of one path serialise on ``<path>.lock``
(``locked``); a read never takes more than ``CACHE_FILE_SIZE_LIMIT + 1`` bytes and never
blocks on a FIFO (``read_source``). What these guarantee is in ``docs/cache-format.md`` ("I/O").
"""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
import threading
import time
from collections.abc import Iterator

from .._files import file_kind
from . import format as fmt
from .format import CacheMissing, CacheRejected
from .hashing import as_view


def _read_limited(f, limit: int, what: str) -> bytes:
    chunks = []
    got = 0
    while got <= limit:
        chunk = f.read(min(limit + 1 - got, 1 << 20))
        if not chunk:
            break
        if not isinstance(chunk, (bytes, bytearray)):
            raise CacheRejected(
                f"{what}: read() returned {type(chunk).__name__}, expected bytes (open the file in binary mode)"
            )
        chunks.append(chunk)
        got += len(chunk)
    if got > limit:
        raise CacheRejected(f"{what}: more than {limit} bytes, over the cache file size limit")
    return b"".join(chunks)


def read_source(src) -> bytes:
    """The bytes of a cache source: bytes-like, a path, or a binary file object (from its current position).

    Never reads more than CACHE_FILE_SIZE_LIMIT + 1 bytes. Raises CacheRejected
    (CacheMissing for a path that does not exist).
    """
    limit = fmt.CACHE_FILE_SIZE_LIMIT
    if isinstance(src, (bytes, bytearray, memoryview)):
        n = src.nbytes if isinstance(src, memoryview) else len(src)
        if n > limit:
            raise CacheRejected(f"cache data is {n} bytes, over the {limit}-byte limit")
        return src if isinstance(src, bytes) else bytes(src)
    if isinstance(src, (str, os.PathLike)):
        what = f"cache file {os.fsdecode(src)!r}"
        try:
            # O_NONBLOCK: opening a FIFO without a writer must not hang; it is refused below
            fd = os.open(src, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
        except FileNotFoundError as e:
            raise CacheMissing(f"{what}: no such file (a first start)") from e
        except OSError as e:
            raise CacheRejected(f"{what}: cannot read ({e.strerror or e})") from e
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                raise CacheRejected(f"{what}: not a regular file ({file_kind(st.st_mode)})")
            if st.st_size > limit:
                raise CacheRejected(f"{what}: {st.st_size} bytes, over the {limit}-byte limit")
            with os.fdopen(fd, "rb") as f:
                fd = -1
                return _read_limited(f, limit, what)
        except OSError as e:
            raise CacheRejected(f"{what}: cannot read ({e.strerror or e})") from e
        finally:
            if fd >= 0:
                os.close(fd)
    if callable(getattr(src, "read", None)):
        what = f"cache file object {getattr(src, 'name', type(src).__name__)!r}"
        try:
            return _read_limited(src, limit, what)
        except CacheRejected:
            raise
        except Exception as e:  # OSError, a closed file's ValueError, whatever a custom reader raises
            raise CacheRejected(f"{what}: cannot read ({type(e).__name__}: {e})") from e
    raise CacheRejected(
        f"cannot read a cache from {type(src).__name__}: expected bytes, a path or a binary file object"
    )


_tmp_lock = threading.Lock()
# this process's temp files being written right now, by _canonical name: registered by
# write_atomic and compared by remove_stale_temps, which must agree however the caller
# spelled the path (relative, "./x", absolute, through a symlinked directory)
_tmp_in_flight: set[str] = set()


def _canonical(path: str) -> str:
    """``path`` absolute, with its directory resolved (not the last component: a symlinked
    cache file is replaced next to the link, as before)."""
    directory, name = os.path.split(os.path.abspath(path))
    return os.path.join(os.path.realpath(directory), name)


def _tmp_path(path: str) -> str:
    # Same directory as the target, so os.replace is a rename within one filesystem. A random
    # part, not a counter: in containers the same pid recurs, and old names must never block.
    return f"{path}.tmp.{os.getpid()}.{secrets.token_hex(6)}"


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OSError):
        return True  # exists, owned by someone else
    return True


def remove_stale_temps(path) -> int:
    """Remove ``<path>.tmp.<pid>.*`` files left by dead processes (or by this one, not in use).

    Temp files of live processes are left alone. Returns how many were removed.
    """
    path = os.fsdecode(os.fspath(path))
    directory, base = os.path.split(_canonical(path))
    prefix = base + ".tmp."
    removed = 0
    try:
        names = os.listdir(directory)
    except OSError:
        return 0
    me = os.getpid()
    for name in names:
        if not name.startswith(prefix):
            continue
        pid_s, _, _rest = name[len(prefix) :].partition(".")
        if not pid_s.isdigit():
            continue
        full = os.path.join(directory, name)
        pid = int(pid_s)
        with _tmp_lock:
            if pid == me and full in _tmp_in_flight:
                continue
        if pid != me and _pid_alive(pid):
            continue
        try:
            os.unlink(full)
            removed += 1
        except OSError:
            pass
    return removed


def _fsync_dir(path) -> None:
    d = os.path.dirname(os.path.abspath(path)) or "."
    try:
        fd = os.open(d, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass  # some filesystems cannot fsync a directory; the rename itself already happened
    finally:
        os.close(fd)


def check_target(path) -> None:
    """Raise OSError unless ``path`` is missing or a regular file (or a symlink to one).

    ``write_atomic`` checks the same; merging savers call it first, before they create a lock
    file next to a target that must be left alone (``/dev/null.lock`` would be a new file).
    """
    path = os.fsdecode(os.fspath(path))
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return
    if not stat.S_ISREG(st.st_mode):
        raise OSError(f"writing {path!r} refused: it is {file_kind(st.st_mode)}, not a regular file")


LOCK_TIMEOUT = 60.0


def lock_path(path) -> str:
    """The advisory lock file of a cache path: ``<path>.lock``, created on first use and never removed.

    Never removed because removing it would let two writers lock two different inodes.
    """
    return os.fsdecode(os.fspath(path)) + ".lock"


@contextlib.contextmanager
def locked(path, timeout: float = LOCK_TIMEOUT) -> Iterator[None]:
    """Hold an exclusive ``flock`` on ``<path>.lock`` (serialises merging writers of ``path``).

    Works between processes and between threads of one process (each call opens its own file
    description). Polls instead of blocking so that a writer stuck while holding the lock
    makes the others fail after ``timeout`` seconds (OSError) rather than hang forever. The
    lock goes away with its holder, so a killed writer never leaves the cache locked.
    """
    import fcntl

    lp = lock_path(path)
    flags = os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOFOLLOW", 0)
    fd = os.open(lp, flags | getattr(os, "O_NONBLOCK", 0), 0o666)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise OSError(f"lock file {lp!r} is {file_kind(st.st_mode)}, not a regular file")
        deadline = time.monotonic() + timeout
        delay = 0.0005
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise OSError(f"timed out after {timeout:g} s waiting for the lock {lp!r}") from None
                time.sleep(delay)
                delay = min(delay * 2, 0.01)
        try:
            yield
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def write_atomic(path, data: bytes, *, durable: bool = False) -> None:
    """Write ``data`` to ``path`` through a unique temp file ``<path>.tmp.<pid>.<n>`` and os.replace.

    Readers see either the old file or the complete new one. With ``durable`` the temp file
    is fsynced before the rename and the directory after it (survives power loss, not only
    a killed process). On failure the temp file is removed and OSError is raised.
    """
    path = os.fsdecode(os.fspath(path))
    try:
        view = as_view(data)
    except TypeError as e:
        raise OSError(f"writing {path!r} failed: data is not bytes-like ({e})") from e
    # only a regular file (or nothing) is replaced: a device node, FIFO, directory or a
    # symlink to one of those stays as it was (as root, /dev/zero would become a file)
    mode = None
    try:
        st = os.stat(path)
    except FileNotFoundError:
        pass
    else:
        if not stat.S_ISREG(st.st_mode):
            raise OSError(f"writing {path!r} refused: it is {file_kind(st.st_mode)}, not a regular file")
        mode = stat.S_IMODE(st.st_mode)
    remove_stale_temps(path)
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0) | getattr(os, "O_CLOEXEC", 0)
    for _ in range(16):
        tmp = _tmp_path(path)
        key = _canonical(tmp)
        with _tmp_lock:  # registered before it exists: another thread's cleanup must not take it
            _tmp_in_flight.add(key)
        try:
            fd = os.open(tmp, flags, 0o666)  # new files follow the umask
            break
        except FileExistsError:
            with _tmp_lock:
                _tmp_in_flight.discard(key)
            continue
        except BaseException:
            with _tmp_lock:
                _tmp_in_flight.discard(key)
            raise
    else:
        raise FileExistsError(f"no free temporary name next to {path!r}")
    try:
        with os.fdopen(fd, "wb") as f:
            if mode is not None:
                os.fchmod(f.fileno(), mode)  # an existing 0600 cache stays 0600
            f.write(view)
            f.flush()
            if durable:
                os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException as e:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        if isinstance(e, OSError) or not isinstance(e, Exception):
            raise
        raise OSError(f"writing {path!r} failed: {e}") from e
    finally:
        with _tmp_lock:
            _tmp_in_flight.discard(key)
    if durable:
        _fsync_dir(path)


def write_target(dst, data: bytes) -> None:
    """Store ``data`` in a bytearray (contents replaced), a path (atomically), or a writable binary file object."""
    if isinstance(dst, bytearray):
        dst[:] = data
        return
    if isinstance(dst, (str, os.PathLike)):
        write_atomic(dst, data)
        return
    if isinstance(dst, (bytes, memoryview)):  # immutable, or fixed-size: cannot take new contents
        raise TypeError(
            f"cannot write a cache into {type(dst).__name__}: pass a bytearray, a path or a binary file object"
        )
    write = getattr(dst, "write", None)
    if not callable(write):
        raise TypeError(
            f"cannot write a cache to {type(dst).__name__}: expected a bytearray, a path or a binary file object"
        )
    try:
        view = as_view(data)
        pos = 0
        while pos < len(view):
            n = write(view[pos:])
            if n is None:  # non-blocking raw stream with nothing written; BufferedWriter never does this
                raise OSError("write() wrote nothing")
            if n <= 0:
                raise OSError(f"write() returned {n}")
            pos += n
        flush = getattr(dst, "flush", None)
        if callable(flush):
            flush()
    except OSError:
        raise
    except Exception as e:
        raise OSError(f"writing the cache to {type(dst).__name__} failed: {e}") from e
