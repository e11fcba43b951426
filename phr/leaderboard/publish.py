"""The hub operations of the command line: ``push``, ``pull``, ``repair`` and ``push-results``, each
``plan(cfg)`` then ``run(plan)`` (``phr.api``) over the generic hub layer (``phr.hub``) and the results repo
(``phr.leaderboard.repo``).

    from phr.api import plan, run
    from phr.config.ops import PushConfig

    result = run(plan(PushConfig(folder="phrbench", repo="org/phrbench", hub="hub")))   # = phr-publish push ...

Nothing is resolved twice: the plan keeps the config, ``run`` passes it to ``phr.hub.push`` / ``pull`` /
``phr.leaderboard.repo.push_results``, which read the settings from it (the rerun command of a failed push is
rendered from the same config).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import singledispatch
from pathlib import Path

from phr.config.ops import PullConfig, PushConfig, PushResultsConfig, RepairConfig
from phr.core.errors import UsageError
from phr.hub import PushResult
from phr.llm.preflight import StepPlan


@dataclass
class PushPlan(StepPlan):
    """A push (``PushConfig``)."""


@dataclass
class PullPlan(StepPlan):
    """A pull (``PullConfig``)."""


@dataclass
class RepairPlan(StepPlan):
    """A repair of a local hub repo: ``hub`` is the local hub folder it works on."""

    hub: Path | None = None


@dataclass
class PushResultsPlan(StepPlan):
    """A push of result JSONs to a leaderboard results repo (``PushResultsConfig``)."""


@singledispatch
def plan(cfg) -> StepPlan:
    raise TypeError(f"{type(cfg).__name__} is not a hub operation's config")


@plan.register
def _(cfg: PushConfig) -> PushPlan:
    return PushPlan(cfg)


@plan.register
def _(cfg: PullConfig) -> PullPlan:
    return PullPlan(cfg)


@plan.register
def _(cfg: PushResultsConfig) -> PushResultsPlan:
    return PushResultsPlan(cfg)


@plan.register
def _(cfg: RepairConfig) -> RepairPlan:
    from phr.hub.repo import check_repo_id, hub_dir

    check_repo_id(cfg.repo)
    p = RepairPlan(cfg, hub=hub_dir(cfg.hub))
    if p.hub is None:
        raise UsageError("repair works on a local hub: pass --hub HUBDIR or set PHR_HUB_DIR")
    return p


@singledispatch
def run(p: StepPlan) -> object:
    raise TypeError(f"{type(p).__name__} is not a hub operation's plan")


@run.register
def _(p: PushPlan) -> PushResult:
    from phr.core.progress import still_working
    from phr.hub import push

    with still_working(f"validating and pushing {p.config.folder}"):  # the checks take 15-30 s: a line every 10 s
        return push(p.config)


@run.register
def _(p: PullPlan) -> Path:
    from phr.hub import pull

    return pull(p.config)


@run.register
def _(p: RepairPlan) -> str:
    from phr.hub.local import LocalHub, repair

    assert p.hub is not None  # plan refuses a repair without a local hub
    return repair(LocalHub(p.hub), p.config.repo, p.config.repo_type)


@run.register
def _(p: PushResultsPlan) -> PushResult:
    from phr.leaderboard.repo import push_results

    return push_results(p.config)
