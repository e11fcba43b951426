"""`phr-publish review ...`: the manual review round trip of a built PHRBench folder.

Mounted by ``phr/cli.py`` with ``app.add_typer(review_app, name="review")``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from phr.core.errors import PHRError

review_app = typer.Typer(
    help="Manual review of a built PHRBench folder: export a review sheet, import the decisions.",
    no_args_is_help=True,
)


def _fail(message: str) -> None:
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(2)


@review_app.command("export")
def review_export(
    folder: Annotated[Path, typer.Argument(help="A built PHRBench folder.")],
    out: Annotated[Path, typer.Option("--out", help="The CSV review sheet to write (the HTML page goes next to it).")] = Path("review.csv"),
    include_baseline: Annotated[bool, typer.Option("--include-baseline", help="Also list the baseline rows (context only).")] = False,
) -> None:
    """Write a CSV review sheet (one row per premise) and a readable HTML page of the same premises."""
    from phr.validation.review import export_review, sheet_rows

    try:
        sheet, page = export_review(folder, out, include_baseline=include_baseline)
        n = sum(1 for r in sheet_rows(folder, include_baseline=include_baseline) if r["augmentation_id"])
    except PHRError as e:
        _fail(str(e))
    typer.echo(f"exported {n} premises of {folder} for review")
    typer.echo(f"sheet: {sheet}")
    typer.echo(f"page:  {page}")
    typer.echo(f"fill decision (accept/reject), reviewer and note in the sheet, then: "
               f"phr-publish review import {sheet} --to {folder}")


@review_app.command("import")
def review_import(
    sheet: Annotated[Path, typer.Argument(help="The filled CSV review sheet.")],
    to: Annotated[Path, typer.Option("--to", help="The PHRBench folder the sheet was exported from.")],
    reviewer: Annotated[Optional[str], typer.Option("--reviewer", help="Reviewer name for decided rows whose reviewer cell is blank.")] = None,
) -> None:
    """Check a filled review sheet and merge its decisions into <folder>/review/decisions.json.

    Exit 2, writing nothing, when any row has a problem (every problem is listed with its row and column).
    """
    from phr.validation.review import ReviewSheetError, import_review

    try:
        res = import_review(sheet, to, reviewer=reviewer)
    except ReviewSheetError as e:
        typer.echo(f"error: {e.sheet}: {len(e.problems)} problem(s), nothing was imported:", err=True)
        for p in e.problems:
            typer.echo(f"  {p}", err=True)
        raise typer.Exit(2)
    except PHRError as e:
        _fail(str(e))
    typer.echo(f"imported {sheet}: {res.summary()}")
    if res.total_rejected:
        typer.echo(f"`phr-publish validate {to}` now reports the {res.total_rejected} rejected premise(s) (check manual_review)")
