"""`review export`: the review sheet (CSV) and its page of a built PHRBench folder (docs/review.md)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from phr.config.ops import ReviewExportConfig
from phr.ops.plan import StepPlan
from phr.validation.review import export_review, sheet_rows


@dataclass
class ReviewExportPlan(StepPlan[ReviewExportConfig]):
    """A review sheet export (``ReviewExportConfig``)."""


@dataclass
class Exported:
    """What ``review export`` wrote: the sheet, the page and the number of premises listed."""

    sheet: Path
    page: Path
    premises: int


def plan(cfg: ReviewExportConfig) -> ReviewExportPlan:
    return ReviewExportPlan(cfg)


def run(p: ReviewExportPlan) -> Exported:
    cfg = p.config
    sheet, page = export_review(cfg.folder, cfg.out, include_baseline=cfg.include_baseline)
    n = sum(1 for r in sheet_rows(cfg.folder, include_baseline=cfg.include_baseline) if r["augmentation_id"])
    return Exported(sheet, page, n)
