"""Trajectory metrics cache: a ``trajectory`` table in the call cache's SQLite file (``--cache`` / PHR_CACHE).

A key is the SHA-256 of the trajectory scorer's config (``phr.eval.scorers.TrajectoryConfig``: the reference
model's fingerprint, tau, clip, the cue list), the prompt and the response: rescoring a run, or resuming an
interrupted scoring, recomputes nothing already scored. Each chunk is committed as soon as it is scored.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any, Sequence

from phr.core.sqlite import connect
from phr.eval.trajectory import TrajectoryMetrics
from phr.llm.cache import default_cache_path

SCHEMA = """
CREATE TABLE IF NOT EXISTS trajectory (
    key TEXT PRIMARY KEY,
    scorer TEXT NOT NULL,
    value TEXT NOT NULL,
    created_at REAL NOT NULL
);
"""


def metric_key(identity: dict, prompt: Any, response: str) -> str:
    text = json.dumps(
        {**identity, "prompt": prompt, "response": response},
        sort_keys=True,
        ensure_ascii=False,
        separators=(",", ":"),
        default=str,
    )
    return hashlib.sha256(text.encode()).hexdigest()


class MetricCache:
    def __init__(self, path: str | Path | None = None):
        self.path = Path(path).expanduser() if path else default_cache_path()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._local = threading.local()
        self._conn().executescript(SCHEMA)

    def _conn(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = self._local.conn = connect(self.path)
        return conn

    def get_many(self, keys: Sequence[str]) -> dict[str, TrajectoryMetrics]:
        out: dict[str, TrajectoryMetrics] = {}
        conn = self._conn()
        for j in range(0, len(keys), 500):
            part = list(keys[j : j + 500])
            q = f"SELECT key, value FROM trajectory WHERE key IN ({','.join('?' * len(part))})"
            for key, value in conn.execute(q, part):
                d = json.loads(value)
                d["kls"] = tuple(d.get("kls", ()))
                out[key] = TrajectoryMetrics(**d)
        return out

    def put_many(self, scorer: str, items: Sequence[tuple[str, TrajectoryMetrics]]) -> None:
        now = time.time()
        conn = self._conn()
        conn.execute("BEGIN")
        try:
            conn.executemany(
                "INSERT OR REPLACE INTO trajectory(key, scorer, value, created_at) VALUES (?, ?, ?, ?)",
                [(k, scorer, json.dumps(m.as_dict()), now) for k, m in items],
            )
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise

    def count(self) -> int:
        return self._conn().execute("SELECT COUNT(*) FROM trajectory").fetchone()[0]
