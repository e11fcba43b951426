"""`phr-publish leaderboard` and `phr-publish report`: the rendered views of results
(``phr.ops.leaderboard``, ``leaderboard_verify``, ``report``: ``plan(cfg)`` then ``run(plan)``)."""

from __future__ import annotations

import typer

from phr.cli.common import execute, new_app
from phr.cli.options import bind
from phr.config.ops import LeaderboardConfig, LeaderboardQueueConfig, LeaderboardVerifyConfig, ReportConfig

report_app = new_app("Render the leaderboard and the paper's cross-model tables and figures.")


@report_app.command("leaderboard")
@bind(LeaderboardConfig)
def leaderboard_cmd(cfg: LeaderboardConfig) -> None:
    """Render the leaderboard (parquet, Markdown, static sortable HTML) from all PHRBench results; other results
    in a folder are skipped with a note, a partial result is refused unless --allow-partial."""
    res = execute(cfg)
    for note in res.notes:
        typer.echo(f"note: {note}")
    unverified = sum(r.unverified for r in res.records)
    parts = [f"{res.partial} partial"] * bool(res.partial) + [f"{unverified} unverified"] * bool(unverified)
    shown = f" ({', '.join(parts)}, unranked: --allow-partial)" if parts else ""
    typer.echo(f"leaderboard of {len(res.records)} results{shown}:")
    for p in res.paths:
        typer.echo(f"  {p}")
    for r in res.records:
        for problem in r.problems or []:
            typer.echo(f"unverified {r.model} {r.run_id}: {problem}", err=True)
    if res.space is not None:
        for line in res.space.lines():
            typer.echo(f"space: {line}")


@report_app.command("leaderboard-verify")
@bind(LeaderboardVerifyConfig)
def leaderboard_verify_cmd(cfg: LeaderboardVerifyConfig) -> None:
    """Re-derive every result (a results repo, files or folders) from its evidence: result, claimed, recomputed,
    verdict; exit 2 when one is not verified."""
    res = execute(cfg)
    for line in res.lines():
        typer.echo(line)
    if res.unverified:
        raise typer.Exit(2)


@report_app.command("leaderboard-queue")
@bind(LeaderboardQueueConfig)
def leaderboard_queue_cmd(cfg: LeaderboardQueueConfig) -> None:
    """The maintainers' queue: score every open submission pull request of a results repo here, then merge it
    with its result and evidence, or close it with a comment stating every problem; a rerun changes nothing."""
    for line in execute(cfg).lines():
        typer.echo(line)


@report_app.command("report")
@bind(ReportConfig)
def report_cmd(cfg: ReportConfig) -> None:
    """Tables 1, 2, 5-11, Figures 3-5 and the OL/BUF/BC correlations across models, as Markdown, JSON, PNG and
    the static leaderboard page (with each result JSON it links to); a partial result is refused unless
    --allow-partial (then tagged and left out of every average), as by `leaderboard`."""
    res = execute(cfg)
    shown = f" ({res.partial} partial, unranked and not averaged: --allow-partial)" if res.partial else ""
    typer.echo(f"report of {len(res.records)} results{shown}:")
    for p in res.paths:
        typer.echo(f"  {p}")
