"""Rejections and the report that collects them: what every check (validation, the hub gate) returns."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass, field


@dataclass(frozen=True, slots=True)
class Rejection:
    """One row that failed one check.

    `row_id` is the id of the offending row (an augmentation, question or instance id; for a pair, the
    row the rejection is filed under, the other one is named in `reason`). `check` names the check
    ("schema:augmentations", "single_mutation", "distinctness", "leakage", ...). `reason` says what was
    found, in words a reviewer can act on.
    """

    row_id: str
    check: str
    reason: str


@dataclass
class ValidationReport:
    """All rejections of one validation run (empty = every row passed)."""

    rejections: list[Rejection] = field(default_factory=list)
    rows: dict[str, int] = field(default_factory=dict)  # rows looked at, per frame
    seconds: dict[str, float] = field(default_factory=dict)  # wall time per check

    @property
    def ok(self) -> bool:
        return not self.rejections

    def __iter__(self) -> Iterator[Rejection]:
        return iter(self.rejections)

    def extend(self, rejections: Iterable[Rejection]) -> None:
        self.rejections.extend(rejections)

    def by_check(self) -> dict[str, int]:
        """Number of rejections per check name, most frequent first."""
        return dict(Counter(r.check for r in self.rejections).most_common())

    def rejected_ids(self, check: str | None = None) -> set[str]:
        """Ids of the rejected rows (optionally only those rejected by `check`, or a prefix such as 'schema')."""
        return {
            r.row_id for r in self.rejections if check is None or r.check == check or r.check.startswith(check + ":")
        }

    def for_row(self, row_id: str) -> list[Rejection]:
        return [r for r in self.rejections if r.row_id == row_id]

    def to_dict(self) -> dict:
        return {
            "ok": self.ok,
            "rows": dict(self.rows),
            "by_check": self.by_check(),
            "rejections": [asdict(r) for r in self.rejections],
        }

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent, ensure_ascii=False)

    @classmethod
    def from_json(cls, text: str) -> ValidationReport:
        data = json.loads(text)
        return cls([Rejection(**r) for r in data.get("rejections", [])], rows=dict(data.get("rows", {})))

    def render(self, limit: int | None = None) -> str:
        """Readable text: a summary line, counts per check, then every failing row id (at most `limit`
        rows) with its reason(s) indented below it."""
        rows = ", ".join(f"{n} {frame}" for frame, n in self.rows.items())
        if self.ok:
            return f"validation passed ({rows or 'no rows'})"
        ids = {r.row_id for r in self.rejections}
        lines = [
            f"validation FAILED: {len(self.rejections)} rejection(s) on {len(ids)} row(s)"
            + (f" ({rows})" if rows else "")
        ]
        lines += [f"  {check}: {n}" for check, n in self.by_check().items()]
        lines.append("")
        by_row: dict[str, list[Rejection]] = {}
        for r in self.rejections:
            by_row.setdefault(r.row_id, []).append(r)
        shown = list(by_row.items()) if limit is None else list(by_row.items())[:limit]
        for row_id, found in shown:
            lines.append(row_id)
            lines += [f"    [{r.check}] {r.reason}" for r in found]
        if limit is not None and len(by_row) > limit:
            lines.append(f"... and {len(by_row) - limit} more row(s)")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.render()
