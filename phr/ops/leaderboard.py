"""`leaderboard`: the ranked page, parquet and Markdown of a set of results, every number re-derived from its
evidence (docs/leaderboard.md).

    from phr.api import plan, run
    from phr.config.ops import LeaderboardConfig

    rendered = run(plan(LeaderboardConfig(sources=["runs"], out="lb")))   # = phr-publish leaderboard runs --out lb
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from phr.config.ops import LeaderboardConfig
from phr.core.errors import UsageError
from phr.eval.results import Result
from phr.hub.repo import PushResult
from phr.ops.plan import StepPlan


@dataclass
class LeaderboardPlan(StepPlan[LeaderboardConfig]):
    """A leaderboard rendering (``LeaderboardConfig``)."""


@dataclass
class Rendered:
    """What a rendering wrote: the results it read, the files (in the order printed) and notes on skipped
    files."""

    records: list[Result]
    paths: list[Path]
    notes: list[str] = field(default_factory=list)
    space: PushResult | None = None  # the Space push (``--space``)

    @property
    def partial(self) -> int:
        return sum(r.partial for r in self.records)


def plan(cfg: LeaderboardConfig) -> LeaderboardPlan:
    if not cfg.sources and not cfg.repo:
        raise UsageError("give result JSON files / folders, or --repo ORG/NAME")
    return LeaderboardPlan(cfg)


def run(p: LeaderboardPlan) -> Rendered:
    from phr.config.ops import PullConfig
    from phr.hub import pull
    from phr.leaderboard.page import write_leaderboard
    from phr.leaderboard.repo import collect_results
    from phr.leaderboard.verify import Datasets

    cfg = p.config
    sources = list(cfg.sources)
    notes: list[str] = []
    with tempfile.TemporaryDirectory(prefix="phr-results-") as tmp:  # the pulled repo goes when we are done
        if cfg.repo:
            sources.append(pull(PullConfig(repo=cfg.repo, out=Path(tmp) / "repo", hub=cfg.hub)))
        datasets = Datasets(cfg.datasets, hub=cfg.hub)
        records = collect_results(sources, allow_partial=cfg.allow_partial, notes=notes, datasets=datasets)
        paths = write_leaderboard(records, cfg.out, title=cfg.title)
        space = _push_space(cfg, records, Path(tmp)) if cfg.space else None
    return Rendered(records, list(paths.values()), notes, space)


def _push_space(cfg: LeaderboardConfig, records: list[Result], tmp: Path) -> PushResult:
    """Render the page afresh (no file of an earlier rendering in ``--out``) as a Space, and push it."""
    from phr.config.ops import PushConfig
    from phr.hub import push
    from phr.leaderboard.page import write_leaderboard
    from phr.leaderboard.space import space_folder

    assert cfg.space is not None  # only called with --space
    write_leaderboard(records, tmp / "page", title=cfg.title)
    folder = space_folder(
        tmp / "page",
        tmp / "space",
        title=cfg.title,
        license=cfg.space_license,
        results_repo=cfg.repo,
        count=len(records),
    )
    push_cfg = PushConfig(
        folder=folder, repo=cfg.space, repo_type="space", hub=cfg.hub, message=f"leaderboard of {len(records)} results"
    )
    return push(push_cfg, rerun=cfg.rerun())
