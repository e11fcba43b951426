"""Faults of the machine a command runs on, each said in one line: the file and the remedy.

The CLI's error boundary (``phr.cli.common.Root``) passes every ``OSError`` (a full disk, a denied or read-only
path), ``sqlite3.Error`` (a damaged call cache), ``json.JSONDecodeError`` (a truncated JSON file), failed ``git``
run (``subprocess.CalledProcessError``), unreadable archive (``tarfile.TarError``) and unreadable parquet or Arrow
data (a ``pyarrow.ArrowException``: a cut or damaged parquet file; :func:`is_arrow_error`) to :func:`describe`, which
returns the line and the exit code: 1 for a fault of the environment, 2 for an input path that is not there or a
JSON or parquet file that does not parse (the command cannot run as given; README, "Exit codes").

The file is the one the exception names (``filename``), else the one a writer noted with :func:`note_path`
(``phr.core.fs.atomic_dir`` / ``atomic_write`` note their destination, ``phr.core.sqlite`` its database), else an
open file in the innermost frames of the traceback; an SQLite error without one names the call cache.
"""

from __future__ import annotations

import errno
import io
import json
import os
import re
import sqlite3
import subprocess
import sys
import tarfile
from pathlib import Path
from types import TracebackType

#: What the error boundary turns into one line (``describe``).
ENVIRONMENT_ERRORS = (OSError, sqlite3.Error, json.JSONDecodeError, subprocess.CalledProcessError, tarfile.TarError)

_NOT_THERE = {errno.ENOENT, errno.ENOTDIR, errno.EISDIR}
_REMEDY = {
    errno.ENOSPC: "free space on that disk (or write somewhere else), then rerun",
    errno.EDQUOT: "free space within your disk quota (or write somewhere else), then rerun",
    errno.EACCES: "give this user access to it (or use another path), then rerun",
    errno.EPERM: "give this user access to it (or use another path), then rerun",
    errno.EROFS: "the file system is read-only: write somewhere else (--out, --cache / PHR_CACHE, PHR_HOME), then rerun",
    errno.EIO: "the disk reported an input/output error: check it, then rerun",
    errno.EMFILE: "too many open files: raise the limit (ulimit -n), then rerun",
    errno.ENFILE: "too many open files: raise the limit (ulimit -n), then rerun",
}
_ERRNO_IN_TEXT = re.compile(r"\[errno (\d+)\]", re.I)
_PATH_LOCALS = ("path", "file", "filename", "dest", "target")


def note_path(exc: BaseException, path: str | Path, *, replace: bool = False) -> None:
    """Record on ``exc`` the file it happened on (one already noted is kept, the innermost writer knowing best,
    unless ``replace``)."""
    if replace or getattr(exc, "phr_path", None) is None:
        try:
            setattr(exc, "phr_path", str(path))  # an attribute of our own on any exception
        except AttributeError:  # an exception type without a __dict__
            pass


def is_arrow_error(exc: BaseException) -> bool:
    """Whether ``exc`` is pyarrow's (a parquet file cut short or damaged: ``ArrowInvalid``, ...). pyarrow is not
    imported here: an exception of it exists only once something imported it."""
    pa = sys.modules.get("pyarrow")
    arrow = getattr(pa, "ArrowException", None)
    return isinstance(arrow, type) and isinstance(exc, arrow)


_QUOTED_PATH = re.compile(r"'([^']+)'")


def _arrow(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    where = getattr(exc, "phr_path", None)
    m = _QUOTED_PATH.search(text)
    if where is None and m and ("/" in m[1] or m[1].endswith(".parquet")):
        where = m[1]
        text = text[m.end() :].lstrip(":. ") or text
    where = where or _path_of(exc) or "a parquet file"
    reason = text.split(". ")[0].rstrip(".")
    return (
        f"{where}: cannot be read as parquet ({reason}): the file is truncated or damaged: restore it or build it "
        "again, then rerun"
    )


def describe(exc: BaseException) -> tuple[str, int]:
    """The one-line message (file and remedy) and exit code for an exception in ``ENVIRONMENT_ERRORS`` (or one of
    pyarrow's: ``is_arrow_error``)."""
    if is_arrow_error(exc) and not isinstance(exc, OSError):
        return _arrow(exc), 2
    if isinstance(exc, sqlite3.Error):
        return _sqlite(exc), 1
    if isinstance(exc, json.JSONDecodeError):
        where = _path_of(exc) or "a JSON file"
        return (
            f"{where}: not valid JSON at line {exc.lineno} column {exc.colno} ({exc.msg}): the file is truncated or "
            "damaged: restore it or write it again, then rerun",
            2,
        )
    if isinstance(exc, subprocess.CalledProcessError):
        cmd = exc.cmd if isinstance(exc.cmd, str) else " ".join(map(str, exc.cmd[:4]))
        stderr = exc.stderr.decode(errors="replace") if isinstance(exc.stderr, bytes) else (exc.stderr or "")
        detail = stderr.strip().splitlines()[-1] if stderr.strip() else f"exit status {exc.returncode}"
        return f"{cmd} failed: {detail}", 1
    if isinstance(exc, tarfile.TarError):
        return f"{_path_of(exc) or 'an archive'}: cannot be read ({exc}): it is truncated or damaged", 1
    assert isinstance(exc, OSError)
    return _os_error(exc)


def _os_error(exc: OSError) -> tuple[str, int]:
    code = exc.errno
    if code is None and (m := _ERRNO_IN_TEXT.search(str(exc))):  # pyarrow: "... [errno 28] No space left ..."
        code = int(m[1])
    reason = os.strerror(code) if code else str(exc) or type(exc).__name__
    name = errno.errorcode.get(code, "") if code else ""
    where = _path_of(exc)
    if exc.filename2 is not None and where == str(exc.filename):
        where = f"{exc.filename} -> {exc.filename2}"
    head = f"{where}: {reason}" if where else f"{reason} (the file is not known: --log-level DEBUG shows where)"
    if name:
        head += f" ({name})"
    if code in _NOT_THERE:
        return f"{head}: check the path", 2
    return f"{head}: {_REMEDY.get(code or 0, 'fix the cause, then rerun')}", 1


def _sqlite(exc: sqlite3.Error) -> str:
    from phr.core.settings import cache_path

    where = _path_of(exc, scan=False) or f"{cache_path()} (the call cache)"
    text = str(exc)
    low = text.lower()
    if any(word in low for word in ("not a database", "malformed", "corrupt")):
        path = where.removesuffix(" (the call cache)")
        return (
            f"{where}: {text}: the SQLite file is damaged: move it aside (mv {path} {path}.bad) and rerun; the calls "
            "it held are made again"
        )
    if "disk is full" in low or "disk i/o" in low:
        return f"{where}: {text}: free space on that disk, then rerun (finished calls are kept)"
    if "readonly" in low or "unable to open" in low:
        return (
            f"{where}: {text}: give this user write access to it and its folder (or use another --cache / "
            "PHR_CACHE), then rerun"
        )
    if "locked" in low:
        return f"{where}: {text}: another process holds it: wait for it to finish, then rerun"
    return f"{where}: SQLite error: {text}"


def _path_of(exc: BaseException, scan: bool = True) -> str | None:
    """The file ``exc`` is about: a noted path, its ``filename``, or an open file in its traceback."""
    noted = getattr(exc, "phr_path", None)
    if noted is not None:
        return noted
    filename = getattr(exc, "filename", None)
    if isinstance(filename, (str, bytes)) and filename:
        return filename.decode(errors="replace") if isinstance(filename, bytes) else filename
    return _file_in_traceback(exc.__traceback__) if scan else None


def _file_in_traceback(tb: TracebackType | None) -> str | None:
    """The innermost frame's open file, else its path to an existing file (a ``Path``, or a string named like a
    path): best effort, for an exception that names no file (a write that fails on a full disk does not)."""
    frames = []
    while tb is not None:
        frames.append(tb.tb_frame)
        tb = tb.tb_next
    for frame in reversed(frames):
        values = frame.f_locals
        for value in values.values():
            name = getattr(value, "name", None) if isinstance(value, io.IOBase) else None
            if isinstance(name, str):
                return name
        named = [v for key in _PATH_LOCALS if isinstance(v := values.get(key), str)]
        paths = [str(v) for v in values.values() if isinstance(v, Path)]
        for value in (*named, *paths):
            if str(value) and Path(value).is_file():
                return str(value)
    return None
