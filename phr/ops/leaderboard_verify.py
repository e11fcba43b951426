"""`leaderboard-verify`: each result's claims beside what its evidence gives (docs/leaderboard.md, "Trust")."""

from __future__ import annotations

import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from phr.bench.metrics import RANK_BY, label
from phr.config.ops import LeaderboardVerifyConfig
from phr.core.errors import UsageError
from phr.ops.plan import StepPlan


@dataclass
class LeaderboardVerifyPlan(StepPlan[LeaderboardVerifyConfig]):
    """A verification of results (``LeaderboardVerifyConfig``)."""


@dataclass
class VerifyRow:
    """One result checked: its file, what it claims, what its evidence gives, the verdict and the problems."""

    result: str
    claimed: str
    recomputed: str
    verdict: str
    problems: list[str] = field(default_factory=list)


@dataclass
class Verification:
    """What ``leaderboard-verify`` found, one row per result file."""

    rows: list[VerifyRow]

    @property
    def unverified(self) -> int:
        return sum(r.verdict != "verified" for r in self.rows)

    def lines(self) -> list[str]:
        """The table (result, claimed, recomputed, verdict), then every problem of each unverified result."""
        head = ("result", "claimed", "recomputed", "verdict")
        table = [head, *((r.result, r.claimed, r.recomputed, r.verdict) for r in self.rows)]
        widths = [max(len(row[i]) for row in table) for i in range(4)]
        out = ["  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip() for row in table]
        out += [f"{r.result}: {p}" for r in self.rows for p in r.problems]
        n = len(self.rows)
        out.append(
            f"{n - self.unverified} of {n} result(s) verified" + (f", {self.unverified} not" if self.unverified else "")
        )
        return out


def plan(cfg: LeaderboardVerifyConfig) -> LeaderboardVerifyPlan:
    if not cfg.sources and not cfg.repo:
        raise UsageError("give result JSON files / folders, or --repo ORG/NAME")
    return LeaderboardVerifyPlan(cfg)


def _claim(metrics: dict[str, float] | None, coverage: str | None) -> str:
    acc = None if metrics is None else metrics.get(RANK_BY)
    return f"{label(RANK_BY)} {'—' if acc is None else f'{acc:.3f}'}, {coverage or 'coverage —'}"


def run(p: LeaderboardVerifyPlan) -> Verification:
    from phr.config.ops import PullConfig
    from phr.eval.results import ResultsError, read_result_file
    from phr.hub import pull
    from phr.leaderboard.repo import result_files
    from phr.leaderboard.verify import Datasets, check, samples_near

    cfg = p.config
    datasets = Datasets(cfg.datasets, hub=cfg.hub)
    rows = []
    with tempfile.TemporaryDirectory(prefix="phr-results-") as tmp:
        sources = [Path(s) for s in cfg.sources]
        if cfg.repo:
            sources.append(pull(PullConfig(repo=cfg.repo, out=Path(tmp) / "repo", hub=cfg.hub)))
        for source in sources:
            for path, shown in result_files(source):
                try:
                    res = read_result_file(path)
                except ResultsError as e:
                    rows.append(VerifyRow(shown, "invalid", "—", "unverified", [str(e)]))
                    continue
                found = check(res, samples_near(res, path), datasets, path.parent)
                verdict = "unverified" if found.problems else "verified"
                again = _claim(found.recomputed, found.coverage)
                rows.append(VerifyRow(shown, _claim(res.metrics, res.coverage_text()), again, verdict, found.problems))
    return Verification(rows)
