"""`phr-publish review ...`: the manual review round trip of a built PHRBench folder.

Mounted by ``phr.cli`` as the ``review`` group.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from phr.cli.common import new_app

review_app = new_app("Manual review of a built PHRBench folder: export a review sheet, import the decisions.")


@review_app.command("export")
def review_export(
    folder: Annotated[Path, typer.Argument(metavar="FOLDER", help="A built PHRBench folder.")],
    out: Annotated[
        Path, typer.Option("--out", help="The CSV review sheet to write (the HTML page goes next to it).")
    ] = Path("review.csv"),
    include_baseline: Annotated[
        bool, typer.Option("--include-baseline", help="Also list the baseline rows (context only).")
    ] = False,
) -> None:
    """Write a CSV review sheet (one row per premise) and a readable HTML page of the same premises."""
    from phr.validation.review import export_review, sheet_rows

    sheet, page = export_review(folder, out, include_baseline=include_baseline)
    n = sum(1 for r in sheet_rows(folder, include_baseline=include_baseline) if r["augmentation_id"])
    typer.echo(f"exported {n} premises of {folder} for review")
    typer.echo(f"sheet: {sheet}")
    typer.echo(f"page:  {page}")
    typer.echo(
        "fill decision (accept / reject / revise; revise: the edited premise in revised_premise), reviewer and "
        f"note (required for reject) in the sheet, then: phr-publish review import {sheet} --to {folder}, and "
        "rebuild the folder (rejected premises are regenerated; the LLM judge runs over the reviewed premises)"
    )


@review_app.command("import")
def review_import(
    sheet: Annotated[Path, typer.Argument(metavar="SHEET", help="The filled CSV review sheet.")],
    to: Annotated[Path, typer.Option("--to", help="The PHRBench folder the sheet was exported from.")],
    reviewer: Annotated[
        str | None, typer.Option("--reviewer", help="Reviewer name for decided rows whose reviewer cell is blank.")
    ] = None,
) -> None:
    """Check a filled review sheet and merge its decisions into <folder>/review/decisions.json.

    Exit 2, writing nothing, when any row has a problem (every problem is listed with its row and column).
    """
    from phr.validation.review import import_review

    res = import_review(sheet, to, reviewer=reviewer)  # a ReviewSheetError lists every problem (exit 2)
    typer.echo(f"imported {sheet}: {res.summary()}")
    typer.echo(
        f"next: rebuild {to} (phr-publish build phrbench ... --out {to} --overwrite): revisions go in place, rejected "
        "premises are regenerated and the LLM judge runs over the reviewed premises"
    )
    if res.total_rejected:
        typer.echo(
            f"`phr-publish validate {to}` now reports the {res.total_rejected} rejected premise(s) (check manual_review)"
        )
