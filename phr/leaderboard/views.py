"""The rendering operations of the command line: ``leaderboard`` (the ranked page, parquet and Markdown) and
``report`` (the paper's cross-model tables and figures, with the page), each ``plan(cfg)`` then ``run(plan)``
(``phr.api``).

    from phr.api import plan, run
    from phr.config.ops import ReportConfig

    result = run(plan(ReportConfig(results=["runs"], out="report")))   # = phr-publish report runs --out report
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from phr.bench.metrics import RANK_BY, label
from phr.config.ops import LeaderboardConfig, LeaderboardVerifyConfig, ReportConfig
from phr.core.errors import UsageError
from phr.eval.results import MODEL_ACCESS, Result
from phr.llm.preflight import StepPlan, step_dispatch


@dataclass
class LeaderboardPlan(StepPlan):
    """A leaderboard rendering (``LeaderboardConfig``)."""


@dataclass
class LeaderboardVerifyPlan(StepPlan):
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


@dataclass
class ReportPlan(StepPlan):
    """A cross-model report: ``access``, the model access each named model is given (``--access``)."""

    access: dict[str, str] = field(default_factory=dict)


@dataclass
class Rendered:
    """What a rendering wrote: the results it read, the files (in the order printed) and notes on skipped
    files."""

    records: list[Result]
    paths: list[Path]
    notes: list[str] = field(default_factory=list)

    @property
    def partial(self) -> int:
        return sum(r.partial for r in self.records)


def access_of(pairs: list[str]) -> dict[str, str]:
    """``MODEL=ACCESS`` pairs (``--access``) as model -> access (one of ``MODEL_ACCESS``)."""
    out = {}
    for pair in pairs:
        model, sep, access = pair.rpartition("=")
        if not sep or not model or access not in MODEL_ACCESS:
            raise UsageError(f"--access {pair!r}: expected MODEL={'|'.join(MODEL_ACCESS)}")
        out[model] = access
    return out


plan, run = step_dispatch("a rendering operation")


@plan.register
def _(cfg: LeaderboardConfig) -> LeaderboardPlan:
    if not cfg.sources and not cfg.repo:
        raise UsageError("give result JSON files / folders, or --repo ORG/NAME")
    return LeaderboardPlan(cfg)


@plan.register
def _(cfg: LeaderboardVerifyConfig) -> LeaderboardVerifyPlan:
    if not cfg.sources and not cfg.repo:
        raise UsageError("give result JSON files / folders, or --repo ORG/NAME")
    return LeaderboardVerifyPlan(cfg)


@plan.register
def _(cfg: ReportConfig) -> ReportPlan:
    return ReportPlan(cfg, access=access_of(cfg.access))


@run.register
def _(p: LeaderboardPlan) -> Rendered:
    from phr.config.ops import PullConfig
    from phr.hub import pull
    from phr.leaderboard.page import write_leaderboard
    from phr.leaderboard.repo import collect_results
    from phr.leaderboard.verify import Datasets

    cfg: LeaderboardConfig = p.config
    sources = list(cfg.sources)
    notes: list[str] = []
    with tempfile.TemporaryDirectory(prefix="phr-results-") as tmp:  # the pulled repo goes when we are done
        if cfg.repo:
            sources.append(pull(PullConfig(repo=cfg.repo, out=Path(tmp) / "repo", hub=cfg.hub)))
        datasets = Datasets(cfg.datasets, hub=cfg.hub)
        records = collect_results(sources, allow_partial=cfg.allow_partial, notes=notes, datasets=datasets)
        paths = write_leaderboard(records, cfg.out, title=cfg.title)
    return Rendered(records, list(paths.values()), notes)


def _claim(metrics: dict[str, float] | None, coverage: str | None) -> str:
    acc = None if metrics is None else metrics.get(RANK_BY)
    return f"{label(RANK_BY)} {'—' if acc is None else f'{acc:.3f}'}, {coverage or 'coverage —'}"


@run.register
def _(p: LeaderboardVerifyPlan) -> Verification:
    from phr.config.ops import PullConfig
    from phr.eval.results import ResultsError, read_result_file
    from phr.hub import pull
    from phr.leaderboard.repo import result_files
    from phr.leaderboard.verify import Datasets, check, samples_near

    cfg: LeaderboardVerifyConfig = p.config
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


@run.register
def _(p: ReportPlan) -> Rendered:
    from phr.leaderboard.page import write_leaderboard
    from phr.leaderboard.repo import collect_results
    from phr.leaderboard.report import write_report
    from phr.leaderboard.verify import Datasets

    cfg: ReportConfig = p.config
    datasets = Datasets(cfg.datasets)
    records = [
        r.model_copy(update={"model_access": p.access[r.model]}) if r.model in p.access else r
        for r in collect_results(cfg.results, allow_partial=cfg.allow_partial, datasets=datasets)  # as `leaderboard`
    ]
    unknown = sorted(set(p.access) - {r.model for r in records})
    if unknown:
        raise UsageError(f"--access names model(s) not in the results: {', '.join(unknown)}")
    paths = write_report(records, cfg.out)
    page = write_leaderboard(records, cfg.out, title=cfg.title)
    return Rendered(records, [*paths.values(), *page.values()])
