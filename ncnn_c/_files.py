"""File helpers shared by the model readers and the pipeline cache: the standard library
only, so that reading a model does not import the cache's hashing and crypto (a few MB)."""

from __future__ import annotations

import stat


def file_kind(mode: int) -> str:
    """What a non-regular file is, for messages ("a directory", "a FIFO", ...)."""
    for test, name in (
        (stat.S_ISDIR, "a directory"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISSOCK, "a socket"),
    ):
        if test(mode):
            return name
    return "not a regular file"
