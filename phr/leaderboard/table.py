"""The leaderboard table: one ``LeaderboardEntry`` per result (a view of ``phr.eval.results.Result``), as rows and
as an Arrow table (the ``leaderboard`` parquet of a results repo and of a rendered page).

Columns: the entry's identity, each leaderboard metric of the catalogue (``phr.bench.metrics.LEADERBOARD``) followed
by its standard error ``<metric>_se`` (null for results without standard errors, e.g. those of 0.1.0), then date,
source URL, the model's access (proprietary / open, where the result says) and the coverage (``complete``,
``partial: 10/330 instances, 2/34 questions`` or ``not recorded``). Best ``accuracy_bh`` first (ties: model, run id);
partial results, shown only with ``--allow-partial``, follow all others, unranked.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from phr.bench.metrics import LEADERBOARD, RANK_BY, metric, se_name
from phr.config.ops import LEADERBOARD_TITLE
from phr.eval.results import Result, estimate_text, leaderboard_result

if TYPE_CHECKING:  # pragma: no cover - pyarrow is imported where a table is made
    import pyarrow as pa

TITLE = LEADERBOARD_TITLE  # the page's title when the command names none (one definition: phr.config.ops)
#: the statement under a table whose entries carry standard errors
SE_NOTE = "± one standard error (bootstrap over base questions; B, B+T and B+H paired)."
IDENTITY = ("model", "revision", "run_id", "dataset", "dataset_revision")
TRAILING = ("date", "source_url", "model_access", "coverage", "tags")
COLUMNS: tuple[tuple[str, str], ...] = (
    *((c, "string") for c in IDENTITY),
    *((c, "float64") for m in LEADERBOARD for c in (m, se_name(m))),
    *((c, "string") for c in TRAILING),
)


class LeaderboardEntry(BaseModel):
    """One leaderboard row: who, on which dataset, the leaderboard metrics and their standard errors."""

    model: str
    revision: str
    run_id: str
    dataset: str
    dataset_revision: str
    values: dict[str, float | None]
    errors: dict[str, float | None]
    date: str | None = None
    source_url: str | None = None
    model_access: str | None = None
    coverage: str = "not recorded"
    #: False for a partial or unverified result: listed after the ranked ones, without a rank
    ranked: bool = True
    #: what a reader must see next to the model name: "partial", "missing N", "unverified", "weak sandbox"
    tags: tuple[str, ...] = ()

    @classmethod
    def of(cls, result: Result) -> LeaderboardEntry:
        """The entry of a leaderboard result; a difference (delta_bt, ...) or ratio (retention) the result does not
        carry is computed from its parts."""
        m = result.metrics
        values = {}
        for name in LEADERBOARD:
            values[name] = m.get(name)
            diff, ratio = metric(name).difference, metric(name).ratio
            if values[name] is None and diff and all(p in m for p in diff):
                values[name] = round(m[diff[0]] - m[diff[1]], 6)
            elif values[name] is None and ratio and all(p in m for p in ratio) and m[ratio[1]] > 0:
                values[name] = round(m[ratio[0]] / m[ratio[1]], 6)
        return cls(
            model=result.model,
            revision=result.revision,
            run_id=result.run_id or "",
            dataset=result.dataset.id,
            dataset_revision=result.dataset.revision,
            values=values,
            errors={name: result.standard_errors.get(name) for name in LEADERBOARD},
            date=result.date,
            source_url=result.source_url,
            model_access=result.model_access,
            coverage=result.coverage_text(),
            ranked=result.ranked,
            tags=result.tags(),
        )

    def row(self) -> dict[str, Any]:
        """The flat row (``COLUMNS``)."""
        metrics = {
            c: v for name in LEADERBOARD for c, v in ((name, self.values[name]), (se_name(name), self.errors[name]))
        }
        trailing = {c: getattr(self, c) for c in TRAILING} | {"tags": ", ".join(self.tags)}
        return {**{c: getattr(self, c) for c in IDENTITY}, **metrics, **trailing}

    def text(self, name: str) -> str:
        """A metric's cell text: ``0.512 ± 0.021`` (differences signed), '' when not reported."""
        return estimate_text(self.values[name], self.errors[name], signed=metric(name).difference is not None)


def as_result(record: Result | Mapping[str, Any]) -> Result:
    """A leaderboard result from a ``Result`` or its JSON form (any readable schema_version)."""
    return leaderboard_result(record)


def entries(records: Iterable[Result | Mapping[str, Any]]) -> list[LeaderboardEntry]:
    """One entry per record, best ``accuracy_bh`` first (ties: model, run id), the unranked (partial) ones last."""
    out = [LeaderboardEntry.of(as_result(r)) for r in records]
    out.sort(key=lambda e: (not e.ranked, -(e.values[RANK_BY] or 0.0), e.model, e.run_id))
    return out


def ranks(rows: Sequence[LeaderboardEntry]) -> list[int | None]:
    """The rank of each row of ``entries`` (1, 2, ...), None for an unranked (partial) one."""
    return [i if e.ranked else None for i, e in enumerate(rows, 1)]


def has_errors(rows: Sequence[LeaderboardEntry]) -> bool:
    return any(v is not None for e in rows for v in e.errors.values())


def leaderboard_rows(records: Iterable[Result | Mapping[str, Any]]) -> list[dict[str, Any]]:
    """One flat row (``COLUMNS``) per record, best ``accuracy_bh`` first."""
    return [e.row() for e in entries(records)]


def leaderboard_table(records: Iterable[Result | Mapping[str, Any]]) -> pa.Table:
    import pyarrow as pa

    schema = pa.schema([(name, getattr(pa, typ)()) for name, typ in COLUMNS])
    return pa.Table.from_pylist(leaderboard_rows(records), schema=schema)
