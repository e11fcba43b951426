"""Content-addressed call cache in SQLite (WAL).

A key is the SHA-256 of the canonical JSON of everything that determines one sample: provider, model id,
model revision, every generation parameter, the messages and the sample index. Each finished sample is
committed on its own, so a process killed with SIGKILL loses at most the calls still in flight; WAL plus
a busy timeout lets many processes write at once. API keys are never part of a key or a row.

The batch ledger (``batch_requests``, docs/scaling.md "Batch mode") lives in the same file: one row per sample
submitted through a provider's batch API and not yet answered. Before the request that creates a batch, its rows
are written under the submission's tag, with the submission itself (``batch_intents``: the tag, put into the
batch's metadata where the API keeps it, and the uploaded file's id where there is one); once the provider answers,
the rows get the batch id and the intent goes. A command killed while waiting finds its samples there on the rerun
and polls the same batches instead of submitting (paying for) them again; one killed while the batch was being
created finds the intent and looks for the batch in the provider's list before submitting again. A row goes when
its answer is stored or its failure recorded. Rows that do not read as the toolkit wrote them are a
``LedgerDamaged`` error naming the file and the batch; ``python -m phr.llm.cache forget-batch CACHE BATCH`` forgets
that batch's rows (their samples are submitted again by the next run).

Each row stores a checksum of its answer (``answer_checksum``: key, text, finish reason, token counts). A row
whose answer no longer matches it, or has none, is damaged (bytes changed inside the file by a disk, a copy, a
crash of another program, an edit by hand): ``lookup`` says it is corrupt, the client asks again (counted as
``corrupt`` in the run summary) and ``put`` replaces the row. The checksum detects damage, not tampering: it is
an unkeyed hash that anyone who can write the file can compute again. A cache written before checksums gets the
column on first open and every existing row its checksum then (old answers are trusted as they are); after that
migration no row is without one, so a row without one (NULL) is damaged like a row whose checksum differs.
"""

from __future__ import annotations

import hashlib
import json
import shlex
import sqlite3
import threading
import time
from dataclasses import dataclass
from enum import Enum
from pathlib import Path

from phr.core.errors import EnvironmentFault
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
    created_at REAL NOT NULL,
    checksum TEXT
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
CREATE TABLE IF NOT EXISTS batch_requests (
    key TEXT PRIMARY KEY,
    batch_id TEXT NOT NULL,
    spec TEXT NOT NULL,
    endpoint TEXT,
    custom_id TEXT NOT NULL,
    position INTEGER NOT NULL,
    sample_index INTEGER NOT NULL,
    request TEXT NOT NULL,
    revision TEXT,
    created_at REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS batch_requests_batch ON batch_requests(batch_id);
CREATE TABLE IF NOT EXISTS batch_intents (
    tag TEXT PRIMARY KEY,
    spec TEXT NOT NULL,
    endpoint TEXT,
    file_id TEXT,
    lines INTEGER NOT NULL,
    created_at REAL NOT NULL
);
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


def answer_checksum(key: str, text: str, finish_reason: str | None, prompt_tokens: int, completion_tokens: int) -> str:
    """SHA-256 of a stored answer and the key it answers (a row edited inside the file no longer matches)."""
    data = json.dumps([key, text, finish_reason, prompt_tokens, completion_tokens], ensure_ascii=False)
    return hashlib.sha256(data.encode()).hexdigest()


_ANSWER = "key, text, finish_reason, prompt_tokens, completion_tokens"  # the columns answer_checksum covers
_COLUMNS = (
    "provider",
    "model",
    "revision",
    "sample_index",
    "request",
    "text",
    "finish_reason",
    "prompt_tokens",
    "completion_tokens",
    "latency_s",
    "created_at",
    "checksum",
)
_UPSERT = (
    f"INSERT INTO calls (key, {', '.join(_COLUMNS)}) VALUES ({', '.join('?' * (len(_COLUMNS) + 1))})"
    f" ON CONFLICT(key) DO UPDATE SET {', '.join(f'{c} = excluded.{c}' for c in _COLUMNS)}"
)
#: Replace an existing row only when it failed its checksum or has none (``use`` mode: the first writer wins
#: otherwise).
_UNLESS_SOUND = (
    " WHERE calls.checksum IS NULL OR calls.checksum != answer_checksum("
    + ", ".join(f"calls.{c}" for c in _ANSWER.split(", "))
    + ")"
)


@dataclass(frozen=True)
class Lookup:
    """A cache lookup: the stored sample (``None``: a miss), and whether a stored row failed its checksum."""

    sample: Sample | None
    corrupt: bool = False


@dataclass(frozen=True)
class LedgerRow:
    """One sample of a submitted batch: its cache key, the batch line (``custom_id``) that asks for it and its place
    among that line's samples (``position``), its sample index and canonical request JSON."""

    key: str
    custom_id: str
    position: int
    index: int
    request: str
    revision: str | None = None
    #: when its batch was submitted (read back from the ledger)
    created_at: float = 0.0


@dataclass(frozen=True)
class BatchIntent:
    """A batch submission recorded before the request that creates the batch: its tag (in the batch's metadata where
    the API keeps one), the uploaded file's id (OpenAI, once uploaded), its number of requests and when it was
    recorded (``time.time()``)."""

    tag: str
    spec: str
    endpoint: str | None
    file_id: str | None
    lines: int
    created_at: float


class LedgerDamaged(EnvironmentFault):
    """Rows of the batch ledger that do not read as the toolkit wrote them: the toolkit cannot tell which samples
    they wait for, so it neither polls nor submits anything for them."""

    def __init__(self, path: Path, batch_id: object, spec: str, what: str):
        self.path, self.batch_id = path, batch_id
        way_out = f"python -m phr.llm.cache forget-batch {shlex.quote(str(path))} {shlex.quote(str(batch_id))}"
        super().__init__(
            f"call cache {path}: the batch ledger's rows of batch {batch_id!r} ({spec}) are damaged ({what}); nothing "
            f"was polled or submitted for them. Forget that batch's rows with `{way_out}` (docs/scaling.md, "
            '"A damaged batch ledger"): the next run submits their samples again'
        )


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
                _add_checksums(c)

    def _conn(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = self._local.conn = connect(self.path)
            conn.create_function("answer_checksum", 5, answer_checksum, deterministic=True)
        return conn

    def get(self, key: str) -> Sample | None:
        """The stored sample, or ``None`` (a miss, or a row that failed its checksum)."""
        return self.lookup(key).sample

    def lookup(self, key: str) -> Lookup:
        """The stored sample for ``key``, checked against its checksum (a mismatch: no sample, ``corrupt``)."""
        if self.mode is not CacheMode.USE:
            return Lookup(None)
        row = (
            self._conn()
            .execute(
                "SELECT sample_index, text, finish_reason, prompt_tokens, completion_tokens, latency_s, model,"
                " created_at, checksum FROM calls WHERE key = ?",
                (key,),
            )
            .fetchone()
        )
        if row is None:
            return Lookup(None)
        if row[8] is None or row[8] != answer_checksum(key, row[1], row[2], row[3], row[4]):
            return Lookup(None, corrupt=True)  # changed inside the file, or its checksum lost (NULL): damaged
        return Lookup(Sample(row[0], row[1], row[2], row[3], row[4], row[5], row[6], cached=True, created_at=row[7]))

    def put(self, key: str, request: str, provider: str, revision: str | None, sample: Sample) -> None:
        """Store ``sample``; an existing row is kept (first writer wins) unless it failed its checksum, or the
        mode is ``refresh``."""
        if self.mode is CacheMode.OFF:
            return
        sql = _UPSERT if self.mode is CacheMode.REFRESH else _UPSERT + _UNLESS_SOUND
        self._conn().execute(
            sql,
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
                answer_checksum(key, sample.text, sample.finish_reason, sample.prompt_tokens, sample.completion_tokens),
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

    # ---- the batch ledger ------------------------------------------------------------------------------------

    def _transaction(self, statements: list[tuple[str, list[tuple]]]) -> None:
        """Run ``statements`` (SQL with its parameter rows) in one transaction: all of them or none."""
        c = self._conn()
        c.execute("BEGIN IMMEDIATE")
        try:
            for sql, params in statements:
                c.executemany(sql, params)
            c.execute("COMMIT")
        except BaseException:
            c.execute("ROLLBACK")
            raise

    def ledger_intend(self, intent: BatchIntent, rows: list[LedgerRow]) -> None:
        """Record a batch submission and its samples (under its tag) before the request that creates the batch."""
        if self.mode is CacheMode.OFF:
            return
        i = intent
        where = (i.tag, i.spec, i.endpoint)
        samples = [(r.key, *where, r.custom_id, r.position, r.index, r.request, r.revision, i.created_at) for r in rows]
        self._transaction(
            [
                (
                    "INSERT OR REPLACE INTO batch_intents (tag, spec, endpoint, file_id, lines, created_at)"
                    " VALUES (?,?,?,?,?,?)",
                    [(*where, i.file_id, i.lines, i.created_at)],
                ),
                (
                    "INSERT OR REPLACE INTO batch_requests (key, batch_id, spec, endpoint, custom_id, position,"
                    " sample_index, request, revision, created_at) VALUES (?,?,?,?,?,?,?,?,?,?)",
                    samples,
                ),
            ]
        )

    def ledger_uploaded(self, tag: str, file_id: str) -> None:
        """The submission ``tag`` uploaded its requests as the file ``file_id``."""
        if self.mode is not CacheMode.OFF:
            self._conn().execute("UPDATE batch_intents SET file_id = ? WHERE tag = ?", (file_id, tag))

    def ledger_created(self, tag: str, batch_id: str) -> None:
        """The submission ``tag`` created the batch ``batch_id``: its samples wait on that batch now."""
        if self.mode is CacheMode.OFF:
            return
        self._transaction(
            [
                ("UPDATE batch_requests SET batch_id = ? WHERE batch_id = ?", [(batch_id, tag)]),
                ("DELETE FROM batch_intents WHERE tag = ?", [(tag,)]),
            ]
        )

    def ledger_intent(self, tag: str) -> BatchIntent | None:
        """The submission recorded under ``tag`` whose batch is not known yet, or None (``tag`` is a batch id)."""
        if self.mode is CacheMode.OFF:
            return None
        row = (
            self._conn()
            .execute("SELECT tag, spec, endpoint, file_id, lines, created_at FROM batch_intents WHERE tag = ?", (tag,))
            .fetchone()
        )
        return BatchIntent(*row) if row else None

    def ledger_batch_ids(self, spec: str, endpoint: str | None) -> set[str]:
        """Every batch id (and submission tag) the ledger holds for this model and endpoint."""
        if self.mode is CacheMode.OFF:
            return set()
        rows = self._conn().execute(
            "SELECT DISTINCT batch_id FROM batch_requests WHERE spec = ? AND endpoint IS ?", (spec, endpoint)
        )
        return {r[0] for r in rows}

    def ledger_forget(self, batch_id: str) -> int:
        """Forget the rows of ``batch_id`` (a batch id or a submission's tag) and its submission; returns how many
        samples were forgotten (a later run submits them again)."""
        c = self._conn()
        n = c.execute("SELECT COUNT(*) FROM batch_requests WHERE batch_id = ?", (batch_id,)).fetchone()[0]
        self._transaction(
            [
                ("DELETE FROM batch_requests WHERE batch_id = ?", [(batch_id,)]),
                ("DELETE FROM batch_intents WHERE tag = ?", [(batch_id,)]),
            ]
        )
        return int(n)

    def ledger_batch(self, key: str, spec: str, endpoint: str | None) -> str | None:
        """The id of the batch that holds ``key`` for this model and endpoint, or None."""
        if self.mode is CacheMode.OFF:
            return None
        row = (
            self._conn()
            .execute(
                "SELECT batch_id FROM batch_requests WHERE key = ? AND spec = ? AND endpoint IS ?",
                (key, spec, endpoint),
            )
            .fetchone()
        )
        return row[0] if row else None

    def ledger_rows(self, batch_id: str) -> list[LedgerRow]:
        """Every sample still waiting on ``batch_id``."""
        rows = self._conn().execute(
            "SELECT key, custom_id, position, sample_index, request, revision, created_at FROM batch_requests"
            " WHERE batch_id = ?"
            " ORDER BY custom_id, position",
            (batch_id,),
        )
        return [LedgerRow(*r) for r in rows]

    def ledger_clear(self, keys: list[str]) -> None:
        """Forget ``keys`` (answered, or failed: a rerun submits a failed one again)."""
        if self.mode is CacheMode.OFF or not keys:
            return
        self._conn().executemany("DELETE FROM batch_requests WHERE key = ?", [(k,) for k in keys])

    def throughput(self, provider: str, model: str) -> float | None:
        """The completion tokens per second this cache's answers of one in-process model were made at (a batch's
        answers share its latency, so they count once), or None when it holds none."""
        if not self.path.exists():
            return None
        row = (
            self._conn()
            .execute(
                "SELECT SUM(c), SUM(l) FROM (SELECT latency_s AS l, SUM(completion_tokens) AS c FROM calls"
                " WHERE provider = ? AND model = ? GROUP BY latency_s)",
                (provider, model),
            )
            .fetchone()
        )
        return row[0] / row[1] if row and row[0] and row[1] else None

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


def _add_checksums(conn: sqlite3.Connection) -> None:
    """Migrate a cache written before checksums: add the column and checksum every row (trusted as it is)."""
    if any(col[1] == "checksum" for col in conn.execute("PRAGMA table_info(calls)")):
        return
    conn.execute("BEGIN IMMEDIATE")  # one process migrates; the others wait, then see the column
    try:
        if not any(col[1] == "checksum" for col in conn.execute("PRAGMA table_info(calls)")):
            conn.execute("ALTER TABLE calls ADD COLUMN checksum TEXT")
            conn.execute(f"UPDATE calls SET checksum = answer_checksum({_ANSWER}) WHERE checksum IS NULL")
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise


def main(argv: list[str] | None = None) -> int:
    """``python -m phr.llm.cache forget-batch CACHE BATCH``: the way out of a damaged batch ledger (LedgerDamaged)."""
    import argparse

    ap = argparse.ArgumentParser(prog="python -m phr.llm.cache", description="Repair the batch ledger of a call cache.")
    sub = ap.add_subparsers(dest="command", required=True)
    forget = sub.add_parser(
        "forget-batch",
        help="forget the ledger rows of one batch (the next run submits their samples again)",
        description="Forget the batch ledger's rows of BATCH (a batch id or a submission's tag, as the error names "
        "it). The answers already stored stay; the next run with --batch submits the forgotten samples again. A real "
        "batch still running at the provider is not cancelled: cancel it in the provider's console if you wish.",
    )
    forget.add_argument("cache", type=Path, help="the call cache file (the error names it)")
    forget.add_argument("batch", help="the batch id or tag (the error names it)")
    args = ap.parse_args(argv)
    if not args.cache.is_file():
        ap.error(f"{args.cache}: no such call cache file")
    n = CallCache(args.cache).ledger_forget(args.batch)
    print(f"{args.cache}: forgot {n} sample(s) of batch {args.batch!r}; the next run submits them again")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
