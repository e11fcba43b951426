"""SQLite connections the way every cache of the toolkit uses them: WAL, autocommit, a generous busy timeout."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path


def connect(path: str | Path, *, busy_timeout_s: float = 60.0) -> sqlite3.Connection:
    """A connection in WAL mode with ``synchronous=NORMAL`` (durable across process crashes), autocommit and
    ``check_same_thread=False`` (callers keep one connection per thread)."""
    conn = sqlite3.connect(path, timeout=busy_timeout_s, isolation_level=None, check_same_thread=False)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")
    conn.execute(f"PRAGMA busy_timeout={int(busy_timeout_s * 1000)}")
    return conn


class PerThreadConnection:
    """One connection per thread on a shared file: ``conn = self._db()``."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self._local = threading.local()

    def __call__(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = self._local.conn = connect(self.path)
        return conn
