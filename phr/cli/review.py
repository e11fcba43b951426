"""`phr-publish review ...`: the manual review round trip of a built PHRBench folder (``phr.validation.review``:
``plan(cfg)`` then ``run(plan)``).

Mounted by ``phr.cli`` as the ``review`` group.
"""

from __future__ import annotations

import typer

from phr.cli.common import execute, new_app
from phr.cli.options import bind
from phr.config.ops import ReviewExportConfig, ReviewImportConfig

review_app = new_app("Manual review of a built PHRBench folder: export a review sheet, import the decisions.")


@review_app.command("export")
@bind(ReviewExportConfig)
def review_export(cfg: ReviewExportConfig) -> None:
    """Write a CSV review sheet (one row per premise) and a readable HTML page of the same premises."""
    res = execute(cfg)
    typer.echo(f"exported {res.premises} premises of {cfg.folder} for review")
    typer.echo(f"sheet: {res.sheet}")
    typer.echo(f"page:  {res.page}")
    typer.echo(
        "fill decision (accept / reject / revise; revise: the edited premise in revised_premise), reviewer and "
        f"note (required for reject) in the sheet, then: phr-publish review import {res.sheet} --folder "
        f"{cfg.folder}, and rebuild the folder (rejected premises are regenerated; the LLM judge runs over the "
        "reviewed premises)"
    )


@review_app.command("import")
@bind(ReviewImportConfig)
def review_import(cfg: ReviewImportConfig) -> None:
    """Check a filled review sheet and merge its decisions into <folder>/review/decisions.json.

    Exit 2, writing nothing, when any row has a problem (every problem is listed with its row and column).
    """
    res = execute(cfg)
    folder = cfg.folder
    typer.echo(f"imported {cfg.sheet}: {res.summary()}")
    typer.echo(
        f"next: rebuild {folder} (phr-publish build phrbench ... --out {folder} --overwrite): revisions go in place, "
        "rejected premises are regenerated and the LLM judge runs over the reviewed premises"
    )
    if res.total_rejected:
        typer.echo(
            f"`phr-publish validate {folder}` now reports the {res.total_rejected} rejected premise(s) (check "
            "manual_review)"
        )
