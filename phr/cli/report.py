"""`phr-publish report RESULTS... --out DIR`: the paper's cross-model views (phr.leaderboard.report)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from phr.cli.common import new_app
from phr.core.errors import UsageError

report_app = new_app("Render the paper's cross-model tables and figures.")


def _access(pairs: list[str]) -> dict[str, str]:
    from phr.eval.results import MODEL_ACCESS

    out = {}
    for pair in pairs:
        model, sep, access = pair.rpartition("=")
        if not sep or not model or access not in MODEL_ACCESS:
            raise UsageError(f"--access {pair!r}: expected MODEL={'|'.join(MODEL_ACCESS)}")
        out[model] = access
    return out


@report_app.command("report")
def report_cmd(
    results: Annotated[list[Path], typer.Argument(help="Result JSON files or folders (runs, a pulled results repo).")],
    out: Annotated[Path, typer.Option("--out", help="Where report.md/.json, figures/ and the page go.")] = Path(
        "report"
    ),
    access: Annotated[
        list[str] | None,
        typer.Option("--access", help="MODEL=proprietary|open, for results that do not say (repeatable)."),
    ] = None,
    title: Annotated[str, typer.Option("--title", help="Page title.")] = "PHRBench leaderboard",
) -> None:
    """Tables 1, 2, 5-11, Figures 3-5 and the OL/BUF/BC correlations across models, as Markdown, JSON, PNG and
    the static leaderboard page (with each result JSON it links to)."""
    from phr.leaderboard.page import write_leaderboard
    from phr.leaderboard.repo import collect_results
    from phr.leaderboard.report import write_report

    overrides = _access(access or [])
    records = [
        r.model_copy(update={"model_access": overrides[r.model]}) if r.model in overrides else r
        for r in collect_results(results, allow_partial=True)  # the cross-model views; the page marks partial rows
    ]
    unknown = sorted(set(overrides) - {r.model for r in records})
    if unknown:
        raise UsageError(f"--access names model(s) not in the results: {', '.join(unknown)}")
    paths = write_report(records, out)
    page = write_leaderboard(records, out, title=title)
    typer.echo(f"report of {len(records)} results:")
    for p in [*paths.values(), *page.values()]:
        typer.echo(f"  {p}")
