"""SQLite connections the way every cache of the toolkit uses them: WAL, autocommit, a generous busy timeout, and
errors that name their file (``phr.core.faults.note_path``: the CLI prints the file and the remedy)."""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

from phr.core.faults import note_path


def make_private(path: str | Path) -> None:
    """Create the database file readable by its owner only (0600; SQLite gives its -wal and -shm files the same
    mode) and take other users' access away from one an older version left readable."""
    if str(path) in ("", ":memory:") or str(path).startswith("file:"):
        return
    p = Path(path)
    try:
        os.close(os.open(p, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
    except OSError:
        pass  # it exists, or cannot be made (sqlite3.connect then says why)
    for f in (p, p.with_name(p.name + "-wal"), p.with_name(p.name + "-shm")):
        try:
            if f.stat().st_mode & 0o077 and f.stat().st_uid == os.geteuid():
                f.chmod(0o600)
        except FileNotFoundError:
            pass


class NamedConnection(sqlite3.Connection):
    """A connection whose SQLite errors carry the database file (``phr_path``)."""

    path = ""

    def _named(self, method: Callable[..., sqlite3.Cursor], *args: Any) -> sqlite3.Cursor:
        try:
            return method(*args)
        except sqlite3.Error as e:
            note_path(e, self.path)
            raise

    def execute(self, *args: Any) -> sqlite3.Cursor:
        return self._named(super().execute, *args)

    def executemany(self, *args: Any) -> sqlite3.Cursor:
        return self._named(super().executemany, *args)

    def executescript(self, *args: Any) -> sqlite3.Cursor:
        return self._named(super().executescript, *args)


def connect(path: str | Path, *, busy_timeout_s: float = 60.0) -> NamedConnection:
    """A connection in WAL mode with ``synchronous=NORMAL`` (durable across process crashes), autocommit and
    ``check_same_thread=False`` (callers keep one connection per thread), on a file only its owner can read
    (answers and prompts are private, and the code sandbox's weakest mode must not read them)."""
    make_private(path)
    try:
        conn = sqlite3.connect(
            path, timeout=busy_timeout_s, isolation_level=None, check_same_thread=False, factory=NamedConnection
        )
    except sqlite3.Error as e:
        note_path(e, path)
        raise
    conn.path = str(path)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")
    conn.execute(f"PRAGMA busy_timeout={int(busy_timeout_s * 1000)}")
    return conn
