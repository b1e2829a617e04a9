"""``download(url, path, overwrite, sha1_hash)`` and ``check_sha1`` of ``ncnn.utils``, on urllib."""

from __future__ import annotations

import hashlib
import logging
import os
import shutil
import tempfile
import urllib.request

log = logging.getLogger("ncnn_c")


def check_sha1(filename: str | os.PathLike, sha1_hash: str) -> bool:
    """Whether the file's SHA-1 starts with ``sha1_hash`` (a prefix, e.g. 8 digits, will do)."""
    sha1 = hashlib.sha1()
    with open(filename, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            sha1.update(chunk)
    digest = sha1.hexdigest()
    n = min(len(digest), len(sha1_hash))
    return digest[:n] == sha1_hash[:n].lower()


def _target(url: str, path: str | os.PathLike | None) -> str:
    name = url.rstrip("/").split("/")[-1]
    if path is None:
        return name
    path = os.path.expanduser(os.fspath(path))
    return os.path.join(path, name) if os.path.isdir(path) else path


def download(
    url: str, path: str | os.PathLike | None = None, overwrite: bool = False, sha1_hash: str | None = None
) -> str:
    """Fetch ``url`` to ``path`` (a file, or a directory to keep the URL's file name in; default:
    that name in the current directory) and return the file's path.

    Nothing is fetched when the file exists, ``overwrite`` is false and it matches ``sha1_hash``
    (if given). The bytes go to a temporary file first, renamed into place when complete, so an
    interrupted download never leaves a partial file behind. A fetched file that does not match
    ``sha1_hash`` raises ``UserWarning`` (as ncnn's) and is kept for inspection.
    """
    fname = _target(url, path)
    if os.path.exists(fname) and not overwrite and (not sha1_hash or check_sha1(fname, sha1_hash)):
        return fname
    dirname = os.path.dirname(os.path.abspath(fname))
    os.makedirs(dirname, exist_ok=True)
    log.info("downloading %s from %s", fname, url)
    fd, tmp = tempfile.mkstemp(dir=dirname, prefix=".download-")
    try:
        # urllib raises HTTPError (a RuntimeError's cousin, OSError) for a failed HTTP status
        with os.fdopen(fd, "wb") as out, urllib.request.urlopen(url) as response:  # noqa: S310
            shutil.copyfileobj(response, out, 1 << 20)
        os.replace(tmp, fname)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    if sha1_hash and not check_sha1(fname, sha1_hash):
        raise UserWarning(
            f"File {fname} is downloaded but the content hash does not match {sha1_hash}: "
            "the repository may be outdated or the download incomplete."
        )
    return fname
