"""`repair`: bring a local hub repo back to a consistent state after a damage (docs/publishing.md)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from phr.config.ops import RepairConfig
from phr.core.errors import UsageError
from phr.ops.plan import StepPlan


@dataclass
class RepairPlan(StepPlan[RepairConfig]):
    """A repair of a local hub repo: ``hub`` is the local hub folder it works on."""

    hub: Path | None = None


def plan(cfg: RepairConfig) -> RepairPlan:
    from phr.hub.repo import check_repo_id, hub_dir

    check_repo_id(cfg.repo)
    p = RepairPlan(cfg, hub=hub_dir(cfg.hub))
    if p.hub is None:
        raise UsageError("repair works on a local hub: pass --hub HUBDIR or set PHR_HUB_DIR")
    return p


def run(p: RepairPlan) -> str:
    from phr.hub.local import LocalHub, repair

    assert p.hub is not None  # plan refuses a repair without a local hub
    return repair(LocalHub(p.hub), p.config.repo, p.config.repo_type)
