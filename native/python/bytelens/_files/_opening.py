"""Opening a file to read (a regular file only, refused otherwise before a
byte is read), and the messages of the errors doing so."""

from __future__ import annotations

import os
import stat
from typing import BinaryIO


# What each kind of file that is not a regular file is called in errors.
_NOT_REGULAR = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
)


def _not_regular(path: str, mode: int) -> OSError:
    what = next((name for test, name in _NOT_REGULAR if test(mode)), "not a file")
    error = IsADirectoryError if stat.S_ISDIR(mode) else OSError
    return error(f"{path}: not a regular file ({what})")


def _open(path: str, what: str = "") -> tuple[BinaryIO, os.stat_result]:
    """``path`` opened for reading, and its ``fstat``; anything but a
    regular file (through symlinks too) is refused before a byte is read.
    ``what`` goes before the path in messages (``"plan file "``)."""
    # Non-blocking: `open` of a FIFO with no writer (or of a device that
    # waits) would block forever before the check below could refuse it.
    # The flag changes nothing for a regular file, the only kind read.
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)
    try:
        fd = os.open(path, flags)
    except OSError as err:
        # Windows opens no folder with os.open ("permission denied"), where
        # POSIX opens it for the fstat below to refuse: the same error here.
        if os.name == "nt" and isinstance(err, PermissionError) and os.path.isdir(path):
            raise _not_regular(f"{what}{path}", stat.S_IFDIR) from None
        raise type(err)(f"{what}{path}: {_reason(err)}") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise _not_regular(f"{what}{path}", info.st_mode)
        return os.fdopen(fd, "rb"), info
    except BaseException:
        os.close(fd)
        raise


def _reason(err: OSError) -> str:
    """What went wrong, lowercase and without the errno: ``"no such file
    or directory"``."""
    text = err.strerror or str(err)
    return text[:1].lower() + text[1:]


def _fspath(path: str | bytes | os.PathLike[str] | os.PathLike[bytes]) -> str:
    """``path`` as a str; a bytes path is decoded as ``os`` decodes it
    (``os.fsdecode``), so that it names the same file."""
    return os.fsdecode(os.fspath(path))
