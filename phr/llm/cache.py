"""Content-addressed call cache in SQLite (WAL).

A key is the SHA-256 of the canonical JSON of everything that determines one sample: provider, model id,
model revision, every generation parameter, the messages and the sample index. Each finished sample is
committed on its own, so a process killed with SIGKILL loses at most the calls still in flight; WAL plus
a busy timeout lets many processes write at once. API keys are never part of a key or a row.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
import time
from dataclasses import dataclass
from enum import Enum
from pathlib import Path

from phr.core.settings import cache_path
from phr.core.sqlite import connect
from phr.llm.types import GenerationParams, Message, Sample

SCHEMA = """
CREATE TABLE IF NOT EXISTS calls (
    key TEXT PRIMARY KEY,
    provider TEXT NOT NULL,
    model TEXT NOT NULL,
    revision TEXT,
    sample_index INTEGER NOT NULL,
    request TEXT NOT NULL,
    text TEXT NOT NULL,
    finish_reason TEXT,
    prompt_tokens INTEGER NOT NULL,
    completion_tokens INTEGER NOT NULL,
    latency_s REAL NOT NULL,
    created_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS failures (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    key TEXT NOT NULL,
    provider TEXT NOT NULL,
    model TEXT NOT NULL,
    sample_index INTEGER NOT NULL,
    reason TEXT NOT NULL,
    message TEXT NOT NULL,
    attempts INTEGER NOT NULL,
    created_at REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS calls_model ON calls(provider, model);
"""


class CacheMode(str, Enum):
    USE = "use"  # read hits, write misses
    REFRESH = "refresh"  # ignore hits, overwrite with fresh calls
    OFF = "off"  # neither read nor write


def default_cache_path() -> Path:
    return cache_path()


def call_key(
    provider: str,
    model: str,
    revision: str | None,
    params: GenerationParams,
    messages: tuple[Message, ...],
    sample_index: int,
) -> tuple[str, str]:
    """Return (key, canonical request JSON) for one sample."""
    request = json.dumps(
        {
            "provider": provider,
            "model": model,
            "revision": revision,
            "params": params.as_dict(),
            "messages": [[m.role, m.content] for m in messages],
            "sample_index": sample_index,
        },
        sort_keys=True,
        ensure_ascii=False,
        separators=(",", ":"),
    )
    return hashlib.sha256(request.encode()).hexdigest(), request


@dataclass(frozen=True)
class CacheStats:
    path: Path
    entries: int
    failures: int
    size_bytes: int
    by_model: list[tuple[str, str, int, int, int]]  # provider, model, entries, prompt tokens, completion tokens


class CallCache:
    """Thread-safe handle on the cache file; one connection per thread, shared file across processes."""

    def __init__(self, path: str | Path | None = None, mode: CacheMode | str = CacheMode.USE):
        self.mode = CacheMode(mode)
        self.path = Path(path).expanduser() if path else default_cache_path()
        self._local = threading.local()
        if self.mode is not CacheMode.OFF:
            self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)  # e.g. $PHR_HOME: its owner's only
            with self._conn() as c:
                c.executescript(SCHEMA)

    def _conn(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = self._local.conn = connect(self.path)
        return conn

    def get(self, key: str) -> Sample | None:
        if self.mode is not CacheMode.USE:
            return None
        row = (
            self._conn()
            .execute(
                "SELECT sample_index, text, finish_reason, prompt_tokens, completion_tokens, latency_s, model,"
                " created_at FROM calls WHERE key = ?",
                (key,),
            )
            .fetchone()
        )
        if row is None:
            return None
        return Sample(row[0], row[1], row[2], row[3], row[4], row[5], row[6], cached=True, created_at=row[7])

    def put(self, key: str, request: str, provider: str, revision: str | None, sample: Sample) -> None:
        if self.mode is CacheMode.OFF:
            return
        verb = "INSERT OR REPLACE" if self.mode is CacheMode.REFRESH else "INSERT OR IGNORE"
        self._conn().execute(
            f"{verb} INTO calls (key, provider, model, revision, sample_index, request, text, finish_reason,"
            " prompt_tokens, completion_tokens, latency_s, created_at) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
            (
                key,
                provider,
                sample.model,
                revision,
                sample.index,
                request,
                sample.text,
                sample.finish_reason,
                sample.prompt_tokens,
                sample.completion_tokens,
                sample.latency_s,
                sample.created_at,
            ),
        )

    def record_failure(
        self, key: str, provider: str, model: str, index: int, reason: str, message: str, attempts: int
    ) -> None:
        if self.mode is CacheMode.OFF:
            return
        self._conn().execute(
            "INSERT INTO failures (key, provider, model, sample_index, reason, message, attempts, created_at)"
            " VALUES (?,?,?,?,?,?,?,?)",
            (key, provider, model, index, reason, message, attempts, time.time()),
        )

    def stats(self) -> CacheStats:
        if not self.path.exists():
            return CacheStats(self.path, 0, 0, 0, [])
        c = self._conn()
        entries = c.execute("SELECT COUNT(*) FROM calls").fetchone()[0]
        failures = c.execute("SELECT COUNT(*) FROM failures").fetchone()[0]
        by_model = c.execute(
            "SELECT provider, model, COUNT(*), SUM(prompt_tokens), SUM(completion_tokens) FROM calls"
            " GROUP BY provider, model ORDER BY provider, model"
        ).fetchall()
        size = sum(p.stat().st_size for p in self.path.parent.glob(self.path.name + "*") if p.is_file())
        return CacheStats(self.path, entries, failures, size, [tuple(r) for r in by_model])

    def clear(self, model: str | None = None) -> int:
        """Delete entries (all, or one model's); returns how many were deleted."""
        if not self.path.exists():
            return 0
        c = self._conn()
        if model:
            n = c.execute("DELETE FROM calls WHERE model = ?", (model,)).rowcount
            c.execute("DELETE FROM failures WHERE model = ?", (model,))
        else:
            n = c.execute("DELETE FROM calls").rowcount
            c.execute("DELETE FROM failures")
        c.execute("VACUUM")
        return n

    def close(self) -> None:
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None
