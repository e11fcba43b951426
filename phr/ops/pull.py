"""`pull`: download a repo's served version from the Hub or a local hub folder (docs/publishing.md)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from phr.config.ops import PullConfig
from phr.ops.plan import StepPlan


@dataclass
class PullPlan(StepPlan[PullConfig]):
    """A pull (``PullConfig``)."""


def plan(cfg: PullConfig) -> PullPlan:
    return PullPlan(cfg)


def run(p: PullPlan) -> Path:
    from phr.hub import pull

    return pull(p.config)
