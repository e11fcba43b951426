"""`push`: validate a built folder and publish it to a Hub repo or a local hub folder (docs/publishing.md).

    from phr.api import plan, run
    from phr.config.ops import PushConfig

    result = run(plan(PushConfig(folder="phrbench", repo="org/phrbench", hub="hub")))   # = phr-publish push ...

The plan is the config alone; ``phr.hub.push`` reads the settings from it (the rerun command of a failed push is
rendered from the same config).
"""

from __future__ import annotations

from dataclasses import dataclass

from phr.config.ops import PushConfig
from phr.hub import PushResult
from phr.ops.plan import StepPlan


@dataclass
class PushPlan(StepPlan[PushConfig]):
    """A push (``PushConfig``)."""


def plan(cfg: PushConfig) -> PushPlan:
    return PushPlan(cfg)


def run(p: PushPlan) -> PushResult:
    from phr.core.progress import still_working
    from phr.hub import push

    with still_working(f"validating and pushing {p.config.folder}"):  # the checks take 15-30 s: a line every 10 s
        return push(p.config)
