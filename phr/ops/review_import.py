"""`review import`: a filled review sheet's decisions into a built PHRBench folder (docs/review.md)."""

from __future__ import annotations

from dataclasses import dataclass

from phr.config.ops import ReviewImportConfig
from phr.ops.plan import StepPlan
from phr.validation.review import ReviewDecisions, import_review


@dataclass
class ReviewImportPlan(StepPlan[ReviewImportConfig]):
    """A review sheet import (``ReviewImportConfig``)."""


def plan(cfg: ReviewImportConfig) -> ReviewImportPlan:
    return ReviewImportPlan(cfg)


def run(p: ReviewImportPlan) -> ReviewDecisions:
    cfg = p.config
    return import_review(cfg.sheet, cfg.folder, reviewer=cfg.reviewer)  # a ReviewSheetError lists every problem
