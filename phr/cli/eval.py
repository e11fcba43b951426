"""`phr-publish eval phrbench|merge|score`, `score`, `submit`: bind the config, run its plan (phr.api), print the summary."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer

from phr.cli import hr1
from phr.cli.common import execute, new_app
from phr.cli.options import DryRun, bind
from phr.config.ops import (
    EvalMergeConfig,
    EvalPhrbenchConfig,
    EvalScoreConfig,
    ScoreSubmissionConfig,
    SubmitConfig,
)

if TYPE_CHECKING:  # pragma: no cover - the commands import the library when they run (--help stays fast)
    from phr.eval.results import Result
    from phr.ops.eval_merge import RescoreResult
    from phr.ops.eval_phrbench import EvalPhrbenchResult

eval_app = new_app(
    "Evaluate models on PHRBench (generate, merge shards, score) and Hallucination-R1 paraphrasers (hr1)."
)
submit_app = new_app("Score and publish submissions; render the leaderboard.")


def print_settings(result: Result) -> None:
    """The truncation share (a warning above 1%) and a note when the scorer is not the paper's."""
    st = result.get("settings") or {}
    tr = st.get("truncation") or {}
    if tr.get("share") is not None:
        line = f"truncated responses (finish_reason == length): {tr['truncated']}/{tr['responses']} = {tr['share']:.1%}"
        if tr.get("warning"):
            line = f"WARNING: {line}, above {tr['warn_above']:.0%}: raise --max-tokens (OL, BUF, BC, accuracy change)"
        typer.echo(line)
    if st.get("reference_scorer") and not st.get("reference_scorer_is_paper"):
        typer.echo(
            f"note: reference scorer {st['reference_scorer']} is not the paper's ({st['paper_reference_scorer']}): "
            "UI/BUF are not comparable to the paper's numbers"
        )


def print_table(result: Result) -> None:
    """The per-condition table and the accuracy differences of the leaderboard."""
    from rich.markup import escape
    from rich.table import Table

    from phr.bench.metrics import LEADERBOARD, TRAJECTORY, metric
    from phr.core.console import console
    from phr.eval.results import estimate_text

    t = result["tables"]
    errs = (t.get("cell_errors") or {}).get("by_condition", {})
    table = Table(title=f"PHRBench: {escape(result['model'])} @ {escape(result['revision'])}")  # never markup
    for col in ("condition", "n", "accuracy", *TRAJECTORY):
        table.add_column(col, justify="right" if col != "condition" else "left")
    for c, row in t["by_condition"].items():
        figures = (estimate_text(row[k], errs.get(c, {}).get(k)) for k in ("accuracy", *TRAJECTORY))
        table.add_row(c, str(row["n"]), *figures)
    console().print(table)
    m, se = result["metrics"], result.get("standard_errors") or {}
    deltas = []
    for d in (metric(n) for n in LEADERBOARD):
        if d.difference is None:
            continue
        a, b = d.difference
        if a in m and b in m:
            value = estimate_text(round(m[a] - m[b], 6), se.get(d.name), signed=True)
            deltas.append(f"{metric(a).condition} - {metric(b).condition} = {value}")
    if deltas:
        console().print("accuracy " + ", ".join(deltas), markup=False, highlight=False)


def print_summary(result: Result, out: Path) -> None:
    """A result as the terminal shows it: the table, resolution, what is missing, coverage and settings."""
    from phr.bench.metrics import INSIGHTFUL, REQUIRED, RESOLUTIONS, rate_of
    from phr.core.console import console

    con = console()
    print_table(result)
    res, m = result["tables"]["resolution"], result["metrics"]
    if res["judged"]:
        props = ", ".join(f"{r} {res['proportions'][r]:.3f}" for r in RESOLUTIONS)
        con.print(
            f"resolution (n={res['judged']}, unjudged {res['unjudged']}): {props}; insightful rate "
            f"{res[rate_of(INSIGHTFUL)]:.3f}",
            markup=False,
            highlight=False,
        )
    elif res["unjudged"] and (result.get("config") or {}).get("resolution_judge"):
        con.print(
            f"[yellow]resolution: none of {res['unjudged']} B+H responses could be judged (the judge's output "
            "never parsed; see the run summary above)[/yellow]"
        )
    if result["counts"]["missing"]:
        con.print(
            f"[yellow]{result['counts']['missing']} responses missing (failed calls): the result is partial "
            "(missing samples count as incorrect in its tables); rerun the same command to retry them[/yellow]"
        )
    if not all(k in m for k in REQUIRED):
        con.print("note: not a leaderboard entry (a result needs all of B, B+T and B+H)", markup=False, highlight=False)
    if result.partial:
        typer.echo(
            f"coverage: {result.coverage_text()} of {result.dataset.id}: push-results, submit and leaderboard "
            "refuse it unless --allow-partial (then shown partial and unranked)"
        )
    print_settings(result)
    typer.echo(f"results: {out / 'results.json'}  (samples.jsonl, report.md, plots/ next to it)")


def print_done(done: EvalPhrbenchResult | RescoreResult | None) -> None:
    """An operation's own lines, then the summary of its scores when it scored; exit 1 when responses are missing
    (calls that failed after every retry): the result is partial, and the rerun line retries them. None (a dry
    run): nothing."""
    if done is None:
        return
    for line in done.lines():
        typer.echo(line)
    if done.result is None:
        return
    print_summary(done.result, done.scores)  # type: ignore[arg-type]  # a scored result has its folder
    missing = done.result.counts.missing if done.result.counts else 0
    if missing:
        rerun = getattr(done, "rerun", None) or "the same command"
        typer.echo(
            f"PARTIAL: {missing} of {done.result.counts.samples} responses missing (calls failed after every retry): "  # type: ignore[union-attr]  # missing: it has counts
            f"the result is partial and is not ranked. Retry them (answered calls come from the cache): {rerun}",
            err=True,
        )
        raise typer.Exit(1)


@eval_app.command("phrbench")
@bind(EvalPhrbenchConfig)
def eval_phrbench(cfg: EvalPhrbenchConfig, dry_run: DryRun = False) -> None:
    """Generate (cached, resumable) and score a model's responses to PHRBench (under a launcher: a shard per
    rank, joined and scored by rank 0)."""
    print_done(execute(cfg, dry_run=dry_run))


@eval_app.command("merge")
@bind(EvalMergeConfig)
def eval_merge(cfg: EvalMergeConfig, dry_run: DryRun = False) -> None:
    """Join the shards of one run (refused unless all n are there, once, with the same settings) and score it
    with the settings the run was started with (a scoring option given here replaces the run's, and is recorded)."""
    print_done(execute(cfg, dry_run=dry_run))


@eval_app.command("score")
@bind(EvalScoreConfig)
def eval_score(cfg: EvalScoreConfig, dry_run: DryRun = False) -> None:
    """(Re)score a run folder with the settings it was started with; a scoring option given here (e.g. a judge
    added) replaces the run's and is recorded in the result."""
    print_done(execute(cfg, dry_run=dry_run))


@submit_app.command("score")
@bind(ScoreSubmissionConfig)
def score_cmd(cfg: ScoreSubmissionConfig, dry_run: DryRun = False) -> None:
    """Validate and score a leaderboard submission (the runner's scoring code)."""
    scored = execute(cfg, dry_run=dry_run)
    if scored is not None:
        print_summary(scored.result, scored.scores)
        typer.echo(f"rerun: {cfg.rerun()}")


@submit_app.command("submit")
@bind(SubmitConfig)
def submit_cmd(cfg: SubmitConfig, dry_run: DryRun = False) -> None:
    """Validate, score and publish a submission to the leaderboard results repo."""
    done = execute(cfg, dry_run=dry_run)
    if done is not None:
        print_summary(done.scored.result, done.scored.scores)
        for line in done.lines():
            typer.echo(line)


hr1.register_eval(eval_app)  # after phrbench, merge and score: listed last in --help
