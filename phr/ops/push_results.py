"""`push-results`: admit result JSONs (re-derived from their evidence) to a leaderboard results repo
(``phr.leaderboard.repo.push_results``; docs/leaderboard.md)."""

from __future__ import annotations

from dataclasses import dataclass

from phr.config.ops import PushResultsConfig
from phr.hub import PushResult
from phr.ops.plan import StepPlan


@dataclass
class PushResultsPlan(StepPlan[PushResultsConfig]):
    """A push of result JSONs to a leaderboard results repo (``PushResultsConfig``)."""


def plan(cfg: PushResultsConfig) -> PushResultsPlan:
    return PushResultsPlan(cfg)


def run(p: PushResultsPlan) -> PushResult:
    from phr.leaderboard.repo import push_results

    return push_results(p.config)
