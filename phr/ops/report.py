"""`report`: the paper's cross-model tables and figures, with the leaderboard page (docs/leaderboard.md).

from phr.api import plan, run
from phr.config.ops import ReportConfig

result = run(plan(ReportConfig(results=["runs"], out="report")))   # = phr-publish report runs --out report
"""

from __future__ import annotations

from dataclasses import dataclass, field

from phr.config.ops import ReportConfig
from phr.core.errors import UsageError
from phr.eval.results import MODEL_ACCESS
from phr.ops.leaderboard import Rendered
from phr.ops.plan import StepPlan


@dataclass
class ReportPlan(StepPlan[ReportConfig]):
    """A cross-model report: ``access``, the model access each named model is given (``--access``)."""

    access: dict[str, str] = field(default_factory=dict)


def access_of(pairs: list[str]) -> dict[str, str]:
    """``MODEL=ACCESS`` pairs (``--access``) as model -> access (one of ``MODEL_ACCESS``)."""
    out = {}
    for pair in pairs:
        model, sep, access = pair.rpartition("=")
        if not sep or not model or access not in MODEL_ACCESS:
            raise UsageError(f"--access {pair!r}: expected MODEL={'|'.join(MODEL_ACCESS)}")
        out[model] = access
    return out


def plan(cfg: ReportConfig) -> ReportPlan:
    return ReportPlan(cfg, access=access_of(cfg.access))


def run(p: ReportPlan) -> Rendered:
    from phr.leaderboard.page import write_leaderboard
    from phr.leaderboard.repo import collect_results
    from phr.leaderboard.report import write_report
    from phr.leaderboard.verify import Datasets

    cfg = p.config
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
