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
from functools import singledispatch
from pathlib import Path

from phr.config.ops import LeaderboardConfig, ReportConfig
from phr.core.errors import UsageError
from phr.eval.results import MODEL_ACCESS, Result
from phr.llm.preflight import StepPlan


@dataclass
class LeaderboardPlan(StepPlan):
    """A leaderboard rendering (``LeaderboardConfig``)."""


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


@singledispatch
def plan(cfg) -> StepPlan:
    raise TypeError(f"{type(cfg).__name__} is not a rendering operation's config")


@plan.register
def _(cfg: LeaderboardConfig) -> LeaderboardPlan:
    if not cfg.sources and not cfg.repo:
        raise UsageError("give result JSON files / folders, or --repo ORG/NAME")
    return LeaderboardPlan(cfg)


@plan.register
def _(cfg: ReportConfig) -> ReportPlan:
    return ReportPlan(cfg, access=access_of(cfg.access))


@singledispatch
def run(p: StepPlan) -> Rendered:
    raise TypeError(f"{type(p).__name__} is not a rendering operation's plan")


@run.register
def _(p: LeaderboardPlan) -> Rendered:
    from phr.config.ops import PullConfig
    from phr.hub import pull
    from phr.leaderboard.page import write_leaderboard
    from phr.leaderboard.repo import collect_results

    cfg: LeaderboardConfig = p.config
    sources = list(cfg.sources)
    notes: list[str] = []
    with tempfile.TemporaryDirectory(prefix="phr-results-") as tmp:  # the pulled repo goes when we are done
        if cfg.repo:
            sources.append(pull(PullConfig(repo=cfg.repo, out=Path(tmp) / "repo", hub=cfg.hub)))
        records = collect_results(sources, allow_partial=cfg.allow_partial, notes=notes)
        paths = write_leaderboard(records, cfg.out, title=cfg.title)
    return Rendered(records, list(paths.values()), notes)


@run.register
def _(p: ReportPlan) -> Rendered:
    from phr.leaderboard.page import write_leaderboard
    from phr.leaderboard.repo import collect_results
    from phr.leaderboard.report import write_report

    cfg: ReportConfig = p.config
    records = [
        r.model_copy(update={"model_access": p.access[r.model]}) if r.model in p.access else r
        for r in collect_results(cfg.results, allow_partial=True)  # the cross-model views; the page marks partial rows
    ]
    unknown = sorted(set(p.access) - {r.model for r in records})
    if unknown:
        raise UsageError(f"--access names model(s) not in the results: {', '.join(unknown)}")
    paths = write_report(records, cfg.out)
    page = write_leaderboard(records, cfg.out, title=cfg.title)
    return Rendered(records, [*paths.values(), *page.values()])
