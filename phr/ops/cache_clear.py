"""`cache clear`: delete the call cache's entries (of one model, or all) (docs/scaling.md)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from phr.config.ops import CacheClearConfig
from phr.llm.cache import CallCache, default_cache_path
from phr.ops.plan import QuietPlan


@dataclass
class ClearPlan(QuietPlan[CacheClearConfig]):
    """The cache file ``cache clear`` empties."""

    path: Path | None = None


def plan(cfg: CacheClearConfig) -> ClearPlan:
    return ClearPlan(config=cfg, path=default_cache_path())


def run(p: ClearPlan) -> int:
    """How many entries were deleted."""
    return CallCache(p.path).clear(p.config.model)
