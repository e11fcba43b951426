"""`phr-publish eval phrbench|merge|score`, `score`, `submit`, `leaderboard`: thin commands over phr.eval."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from phr.errors import PHRError
from phr.secrets import redact

eval_app = typer.Typer(help="Evaluate models on PHRBench (generate, merge shards, score).", no_args_is_help=True)

Dataset = Annotated[str, typer.Option("--dataset", help="A built PHRBench folder, or a repo id ORG/NAME ($PHR_HUB_DIR, else the Hub).")]
Revision = Annotated[str | None, typer.Option("--revision", help="Dataset revision (tag or commit) for a repo id.")]
Hub = Annotated[Path | None, typer.Option("--hub", help="Local hub folder (default: $PHR_HUB_DIR).")]
Scorer = Annotated[str, typer.Option("--scorer", help="Reference scorer for OL/UI/BUF/BC (paper: hf:Qwen/Qwen2.5-7B-Instruct); 'none' skips them.")]
Judge = Annotated[str, typer.Option("--judge", help="LLM judge for behavioural resolution of B+H responses; 'none' skips it.")]
Plots = Annotated[bool, typer.Option("--plots/--no-plots", help="Write PNG plots.")]


def _fail(e: PHRError) -> None:
    typer.echo(f"error: {redact(str(e))}", err=True)
    raise typer.Exit(2)


def _options(scorer: str, judge: str, code_timeout: float = 10.0):
    from phr.eval.scoring import ScoreOptions

    none = ("none", "", "off")
    return ScoreOptions(scorer=None if scorer.lower() in none else scorer,
                        judge=None if judge.lower() in none else judge, code_timeout_s=code_timeout)


def _print_summary(result: dict, out: Path) -> None:
    from rich.console import Console
    from rich.table import Table

    from phr.eval.aggregate import RESOLUTIONS, TRAJ

    con = Console()
    t = result["tables"]
    table = Table(title=f"PHRBench: {result['model']} @ {result['revision']}")
    for col in ("condition", "n", "accuracy", *TRAJ):
        table.add_column(col, justify="right" if col != "condition" else "left")
    fmt = lambda v: "" if v is None else (f"{v:.3f}" if isinstance(v, float) else str(v))
    for c, row in t["by_condition"].items():
        table.add_row(c, *(fmt(row[k]) for k in ("n", "accuracy", *TRAJ)))
    con.print(table)
    m = result["metrics"]
    if "accuracy_b" in m:
        deltas = [f"B+{x.upper()} - B = {m[f'accuracy_b{x}'] - m['accuracy_b']:+.3f}" for x in ("t", "h")
                  if f"accuracy_b{x}" in m]
        con.print("accuracy " + ", ".join(deltas), markup=False, highlight=False)
    res = t["resolution"]
    if res["judged"]:
        props = ", ".join(f"{r} {res['proportions'][r]:.3f}" for r in RESOLUTIONS)
        con.print(f"resolution (n={res['judged']}, unjudged {res['unjudged']}): {props}; insightful rate "
                  f"{res['insightful_rate']:.3f}", markup=False, highlight=False)
    elif res["unjudged"] and (result.get("config") or {}).get("resolution_judge"):
        con.print(f"[yellow]resolution: none of {res['unjudged']} B+H responses could be judged (the judge's output "
                  "never parsed; see the run summary above)[/yellow]")
    if result["counts"]["missing"]:
        con.print(f"[yellow]{result['counts']['missing']} responses missing (failed calls): scored as incorrect; "
                  "rerun the same command to retry them[/yellow]")
    if not all(f"accuracy_{x}" in m for x in ("b", "bt", "bh")):
        con.print("note: not a leaderboard entry (a result needs all of B, B+T and B+H)", markup=False,
                  highlight=False)
    typer.echo(f"results: {out / 'results.json'}  (samples.jsonl, report.md, plots/ next to it)")


@eval_app.command("phrbench")
def eval_phrbench(
    model: Annotated[str, typer.Option("--model", help="Model spec: local:smollm2, hf:ORG/NAME, openai:..., anthropic:..., google:..., vllm:...")],
    dataset: Dataset = "phrbench",
    revision: Revision = None,
    hub: Hub = None,
    samples: Annotated[int, typer.Option("--samples", help="Samples per prompt (paper: 10).")] = 10,
    temperature: Annotated[float, typer.Option("--temperature", help="Sampling temperature (paper: 0.7).")] = 0.7,
    max_tokens: Annotated[int, typer.Option("--max-tokens", help="Maximum new tokens (paper: the model's maximum).")] = 2048,
    limit: Annotated[int | None, typer.Option("--limit", help="Only the first N base questions (with all their conditions).")] = None,
    shard: Annotated[str | None, typer.Option("--shard", help="i/n: every n-th question starting at the i-th (merge with `eval merge`).")] = None,
    conditions: Annotated[str, typer.Option("--conditions", help="Comma-separated: B,B+T,B+H.")] = "B,B+T,B+H",
    out: Annotated[Path | None, typer.Option("--out", help="Run folder (default: RUNS/<model>/<run id>).")] = None,
    runs: Annotated[Path, typer.Option("--runs", help="Root of run folders.")] = Path("runs"),
    scorer: Scorer = "local:smollm2",
    judge: Judge = "none",
    concurrency: Annotated[int, typer.Option("--concurrency", help="Concurrent API calls.")] = 16,
    score: Annotated[bool, typer.Option("--score/--no-score", help="Score after generating (not for shards).")] = True,
    plots: Plots = True,
) -> None:
    """Generate (cached, resumable) and score a model's responses to PHRBench."""
    from phr.eval.pipeline import score_run
    from phr.eval.runner import RunConfig, generate_run, parse_shard

    try:
        cfg = RunConfig(model=model, dataset=dataset, dataset_revision=revision, conditions=conditions,
                        samples=samples, temperature=temperature, max_tokens=max_tokens, limit=limit,
                        shard=parse_shard(shard))
        from phr.llm import LLM

        llm = LLM(model, concurrency=concurrency)
        run = generate_run(cfg, out=out, root=runs, hub=hub, llm=llm)
        typer.echo(f"run: {run.path}  ({len(run.responses)} responses, {len(run.failures)} failed calls)")
        if cfg.shard is not None:
            typer.echo(f"shard {shard} done; when every shard is done: phr-publish eval merge "
                       f"{run.path.parent}/{run.meta['run_id']}-shard-*-of-{cfg.shard[1]} --out {run.path.parent / run.meta['run_id']}")
            return
        if score:
            from dataclasses import replace

            options = replace(_options(scorer, judge), generator=llm)  # its weights serve a same-model scorer
            result, where = score_run(run.path, options, hub=hub, plots=plots)
            _print_summary(result, where)
    except PHRError as e:
        _fail(e)


@eval_app.command("merge")
def eval_merge(
    shards: Annotated[list[Path], typer.Argument(help="The run folders of shards 1..n.")],
    out: Annotated[Path, typer.Option("--out", help="The merged run folder.")],
    scorer: Scorer = "local:smollm2",
    judge: Judge = "none",
    score: Annotated[bool, typer.Option("--score/--no-score", help="Score the merged run.")] = True,
    hub: Hub = None,
    plots: Plots = True,
) -> None:
    """Join the shards of one run (refused unless all n are there, once, with the same settings)."""
    from phr.eval.pipeline import score_run
    from phr.eval.runner import merge_runs

    try:
        run = merge_runs(shards, out)
        typer.echo(f"merged {len(shards)} shards into {run.path} ({len(run.responses)} responses)")
        if score:
            result, where = score_run(run.path, _options(scorer, judge), hub=hub, plots=plots)
            _print_summary(result, where)
    except PHRError as e:
        _fail(e)


@eval_app.command("score")
def eval_score(
    run: Annotated[Path, typer.Argument(help="A run folder (unsharded or merged).")],
    scorer: Scorer = "local:smollm2",
    judge: Judge = "none",
    hub: Hub = None,
    plots: Plots = True,
) -> None:
    """(Re)score a run folder, e.g. with a judge added."""
    from phr.eval.pipeline import score_run

    try:
        result, where = score_run(run, _options(scorer, judge), hub=hub, plots=plots)
    except PHRError as e:
        _fail(e)
    _print_summary(result, where)


def _score_submission(submission, dataset, revision, hub, meta_file, model, model_revision, link, samples,
                      conditions, submitted_by, notes, scorer, judge, out, plots):
    from phr.eval.dataset import load_eval_dataset
    from phr.eval.pipeline import score_submission
    from phr.eval.submission import load_meta

    meta = load_meta(meta_file, submission=submission, model=model, revision=model_revision, link=link,
                     samples=samples, conditions=conditions, submitted_by=submitted_by, notes=notes)
    ds = load_eval_dataset(dataset, revision=revision, hub=hub)
    out = out or submission.with_name(submission.stem + ".scored")
    return score_submission(submission, ds, meta, _options(scorer, judge), out=out, plots=plots)


Model = Annotated[str | None, typer.Option("--model", help="Model name (repo id); or in the sidecar JSON.")]
ModelRev = Annotated[str | None, typer.Option("--model-revision", help="Model revision (commit or tag).")]
Link = Annotated[str | None, typer.Option("--link", help="http(s) link to the model or write-up.")]
Samples = Annotated[int | None, typer.Option("--samples", help="Declared samples per instance (default 1).")]
Conds = Annotated[str | None, typer.Option("--conditions", help="Comma-separated conditions covered (default all).")]
MetaFile = Annotated[Path | None, typer.Option("--meta", help="Sidecar JSON (default: SUBMISSION.meta.json).")]
By = Annotated[str | None, typer.Option("--submitted-by", help="Who submits.")]
Notes = Annotated[str | None, typer.Option("--notes", help="Free text shown with the result.")]


def score_cmd(
    submission: Annotated[Path, typer.Argument(help="Submission JSONL: {instance_id, sample, response} per line.")],
    dataset: Dataset = "phrbench",
    revision: Revision = None,
    hub: Hub = None,
    meta: MetaFile = None,
    model: Model = None,
    model_revision: ModelRev = None,
    link: Link = None,
    samples: Samples = None,
    conditions: Conds = None,
    submitted_by: By = None,
    notes: Notes = None,
    scorer: Scorer = "local:smollm2",
    judge: Judge = "none",
    out: Annotated[Path | None, typer.Option("--out", help="Output folder (default: SUBMISSION.scored/).")] = None,
    plots: Plots = True,
) -> None:
    """Validate and score a leaderboard submission (the runner's scoring code)."""
    try:
        result, where = _score_submission(submission, dataset, revision, hub, meta, model, model_revision, link,
                                          samples, conditions, submitted_by, notes, scorer, judge, out, plots)
    except PHRError as e:
        _fail(e)
    _print_summary(result, where)


def submit_cmd(
    submission: Annotated[Path, typer.Argument(help="Submission JSONL: {instance_id, sample, response} per line.")],
    repo: Annotated[str, typer.Option("--repo", help="The leaderboard results repo, ORG/NAME.")],
    dataset: Dataset = "phrbench",
    revision: Revision = None,
    hub: Hub = None,
    meta: MetaFile = None,
    model: Model = None,
    model_revision: ModelRev = None,
    link: Link = None,
    samples: Samples = None,
    conditions: Conds = None,
    submitted_by: By = None,
    notes: Notes = None,
    scorer: Scorer = "local:smollm2",
    judge: Judge = "none",
    out: Annotated[Path | None, typer.Option("--out", help="Output folder (default: SUBMISSION.scored/).")] = None,
    to: Annotated[Path | None, typer.Option("--to", help="Local hub for the results repo (default: $PHR_HUB_DIR; unset: the Hub).")] = None,
    replace: Annotated[bool, typer.Option("--replace", help="Overwrite a stored result with the same run id.")] = False,
    create_pr: Annotated[bool, typer.Option("--create-pr", help="Open a pull request on the results repo.")] = False,
    model_pr: Annotated[bool, typer.Option("--model-pr", help="Also open a pull request on the model's repo adding .eval_results/phrbench.yaml.")] = False,
) -> None:
    """Validate, score and publish a submission to the leaderboard results repo."""
    from phr.publish.results import model_eval_results_yaml, normalize, open_model_pr, push_results

    try:
        result, where = _score_submission(submission, dataset, revision, hub, meta, model, model_revision, link,
                                          samples, conditions, submitted_by, notes, scorer, judge, out, True)
        _print_summary(result, where)
        res = push_results([where / "results.json"], repo, to=to, replace=replace, create_pr=create_pr)
        for line in res.lines():
            typer.echo(line)
        if model_pr:
            pr = open_model_pr(result["model"], model_eval_results_yaml(normalize(result)), to=to)
            typer.echo(f"model repo {result['model']}: " + (f"pull request {pr.pr_url or pr.pr_ref}" if pr.changed
                                                           else "already holds these results"))
    except PHRError as e:
        _fail(e)


def leaderboard_cmd(
    sources: Annotated[list[Path] | None, typer.Argument(help="Result JSON files or folders (a pulled results repo).")] = None,
    repo: Annotated[str | None, typer.Option("--repo", help="Read the results repo ORG/NAME instead (local hub or the Hub).")] = None,
    hub: Hub = None,
    out: Annotated[Path, typer.Option("--out", help="Where leaderboard.parquet/.md/.html go.")] = Path("leaderboard"),
    title: Annotated[str, typer.Option("--title", help="Page title.")] = "PHRBench leaderboard",
) -> None:
    """Render the leaderboard (parquet, Markdown, static sortable HTML) from all results."""
    import tempfile

    from phr.eval.leaderboard import collect_results, write_leaderboard

    try:
        srcs = list(sources or [])
        if repo:
            from phr.publish import pull

            tmp = Path(tempfile.mkdtemp(prefix="phr-results-"))
            srcs.append(pull(repo, to=tmp / "repo", hub=hub))
        if not srcs:
            raise PHRError("give result JSON files / folders, or --repo ORG/NAME")
        records = collect_results(srcs)
        paths = write_leaderboard(records, out, title=title)
    except PHRError as e:
        _fail(e)
    typer.echo(f"leaderboard of {len(records)} results:")
    for p in paths.values():
        typer.echo(f"  {p}")


def register(app: typer.Typer) -> None:
    """Add ``eval``, ``score``, ``submit`` and ``leaderboard`` to ``app``."""
    app.add_typer(eval_app, name="eval")
    app.command("score")(score_cmd)
    app.command("submit")(submit_cmd)
    app.command("leaderboard")(leaderboard_cmd)
