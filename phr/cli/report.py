"""`phr-publish leaderboard` and `phr-publish report`: the rendered views of results
(``phr.leaderboard.views``: ``plan(cfg)`` then ``run(plan)``)."""

from __future__ import annotations

import typer

from phr.cli.common import execute, new_app
from phr.cli.options import bind
from phr.config.ops import LeaderboardConfig, ReportConfig

report_app = new_app("Render the leaderboard and the paper's cross-model tables and figures.")


@report_app.command("leaderboard")
@bind(LeaderboardConfig)
def leaderboard_cmd(cfg: LeaderboardConfig) -> None:
    """Render the leaderboard (parquet, Markdown, static sortable HTML) from all PHRBench results; other results
    in a folder are skipped with a note, a partial result is refused unless --allow-partial."""
    res = execute(cfg)
    for note in res.notes:
        typer.echo(f"note: {note}")
    shown = f" ({res.partial} partial, unranked: --allow-partial)" if res.partial else ""
    typer.echo(f"leaderboard of {len(res.records)} results{shown}:")
    for p in res.paths:
        typer.echo(f"  {p}")


@report_app.command("report")
@bind(ReportConfig)
def report_cmd(cfg: ReportConfig) -> None:
    """Tables 1, 2, 5-11, Figures 3-5 and the OL/BUF/BC correlations across models, as Markdown, JSON, PNG and
    the static leaderboard page (with each result JSON it links to)."""
    res = execute(cfg)
    typer.echo(f"report of {len(res.records)} results:")
    for p in res.paths:
        typer.echo(f"  {p}")
