"""`phr-publish eval phrbench|merge|score`, `score`, `submit`, `leaderboard`: thin commands over phr.eval."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Annotated

import typer

from phr.cli import hr1
from phr.cli.common import Hub, MaxRetryAfter, Timeout, new_app, spec_or_none
from phr.core.errors import UsageError
from phr.eval.presets import DEFAULT_MAX_TOKENS, PAPER_SCORER, PRESETS
from phr.eval.trajectory import BC_COUNTINGS, DEFAULT_SCORER, KL_DIRECTIONS, STEP_RULES, TrajectorySettings

eval_app = new_app(
    "Evaluate models on PHRBench (generate, merge shards, score) and Hallucination-R1 paraphrasers (hr1)."
)
submit_app = new_app("Score and publish submissions; render the leaderboard.")

Dataset = Annotated[
    str, typer.Option("--dataset", help="A built PHRBench folder, or a repo id ORG/NAME ($PHR_HUB_DIR, else the Hub).")
]
Revision = Annotated[str | None, typer.Option("--revision", help="Dataset revision (tag or commit) for a repo id.")]
Scorer = Annotated[
    str,
    typer.Option(
        "--scorer", help="Reference scorer for OL/UI/BUF/BC (paper: hf:Qwen/Qwen2.5-7B-Instruct); 'none' skips them."
    ),
]
Judge = Annotated[
    str, typer.Option("--judge", help="LLM judge for behavioural resolution of B+H responses; 'none' skips it.")
]
Plots = Annotated[bool, typer.Option("--plots/--no-plots", help="Write PNG plots.")]
Grader = Annotated[
    str,
    typer.Option(
        "--grader",
        help="LLM equivalence grader for free-text open-ended answers (GPQA); 'none': normalised match.",
    ),
]
KLDirection = Annotated[
    str,
    typer.Option("--kl-direction", help=f"BUF's Delta_k: {' | '.join(KL_DIRECTIONS)} (docs/metrics.md)."),
]
StepRule = Annotated[str, typer.Option("--step-rule", help=f"BUF step splitting: {' | '.join(STEP_RULES)}.")]
BCCounting = Annotated[str, typer.Option("--bc-counting", help=f"BC cue counting: {' | '.join(BC_COUNTINGS)}.")]
_TRAJ = TrajectorySettings()


def _options(
    scorer: str,
    judge: str,
    code_timeout: float = 10.0,
    llm_options: dict | None = None,
    grader: str = "none",
    trajectory: TrajectorySettings | None = None,
):
    """Scoring options; with ``llm_options`` (timeout, max_retry_after) the judge and grader are LLMs built
    with them."""
    from phr.eval.scoring import ScoreOptions
    from phr.llm import LLM

    judge_spec, grader_spec = spec_or_none(judge), spec_or_none(grader)
    if judge_spec is not None and llm_options:
        judge_spec = LLM(judge_spec, **llm_options)
    if grader_spec is not None and llm_options:
        grader_spec = LLM(grader_spec, **llm_options)
    try:
        return ScoreOptions(
            scorer=spec_or_none(scorer),
            judge=judge_spec,
            code_timeout_s=code_timeout,
            grader=grader_spec,
            trajectory=trajectory,
        )
    except ValueError as e:
        raise UsageError(str(e)) from None


def _trajectory(kl_direction: str, step_rule: str, bc_counting: str) -> TrajectorySettings:
    try:
        return TrajectorySettings(kl_direction, step_rule, bc_counting)
    except ValueError as e:
        raise UsageError(str(e)) from None


def _print_settings(result) -> None:
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


def _print_summary(result, out: Path) -> None:
    from rich.console import Console
    from rich.table import Table

    from phr.bench.metrics import INSIGHTFUL, LEADERBOARD, REQUIRED, RESOLUTIONS, TRAJECTORY, metric, rate_of
    from phr.eval.results import estimate_text

    con = Console()
    t = result["tables"]
    errs = (t.get("cell_errors") or {}).get("by_condition", {})
    table = Table(title=f"PHRBench: {result['model']} @ {result['revision']}")
    for col in ("condition", "n", "accuracy", *TRAJECTORY):
        table.add_column(col, justify="right" if col != "condition" else "left")
    for c, row in t["by_condition"].items():
        figures = (estimate_text(row[k], errs.get(c, {}).get(k)) for k in ("accuracy", *TRAJECTORY))
        table.add_row(c, str(row["n"]), *figures)
    con.print(table)
    m, se = result["metrics"], result.get("standard_errors") or {}
    deltas = []
    for d in (metric(n) for n in LEADERBOARD if metric(n).difference):
        a, b = d.difference
        if a in m and b in m:
            value = estimate_text(round(m[a] - m[b], 6), se.get(d.name), signed=True)
            deltas.append(f"{metric(a).condition} - {metric(b).condition} = {value}")
    if deltas:
        con.print("accuracy " + ", ".join(deltas), markup=False, highlight=False)
    res = t["resolution"]
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
            f"[yellow]{result['counts']['missing']} responses missing (failed calls): scored as incorrect; "
            "rerun the same command to retry them[/yellow]"
        )
    if not all(k in m for k in REQUIRED):
        con.print("note: not a leaderboard entry (a result needs all of B, B+T and B+H)", markup=False, highlight=False)
    _print_settings(result)
    typer.echo(f"results: {out / 'results.json'}  (samples.jsonl, report.md, plots/ next to it)")


@eval_app.command("phrbench")
def eval_phrbench(
    model: Annotated[
        str,
        typer.Option(
            "--model", help="Model spec: local:smollm2, hf:ORG/NAME, openai:..., anthropic:..., google:..., vllm:..."
        ),
    ],
    dataset: Dataset = "phrbench",
    revision: Revision = None,
    hub: Hub = None,
    preset: Annotated[
        str | None,
        typer.Option(
            "--preset",
            help="'paper': 10 samples, temperature 0.7, the model's maximum output length, scorer "
            f"{PAPER_SCORER}; explicit options override it.",
        ),
    ] = None,
    samples: Annotated[
        int | None, typer.Option("--samples", help="Samples per prompt (default and paper: 10).")
    ] = None,
    temperature: Annotated[
        float | None, typer.Option("--temperature", help="Sampling temperature (default and paper: 0.7).")
    ] = None,
    max_tokens: Annotated[
        int | None,
        typer.Option(
            "--max-tokens",
            help=f"Maximum new tokens (default {DEFAULT_MAX_TOKENS}; --preset paper: the model's maximum).",
        ),
    ] = None,
    limit: Annotated[
        int | None, typer.Option("--limit", help="Only the first N base questions (with all their conditions).")
    ] = None,
    shard: Annotated[
        str | None,
        typer.Option("--shard", help="i/n: every n-th question starting at the i-th (merge with `eval merge`)."),
    ] = None,
    conditions: Annotated[str, typer.Option("--conditions", help="Comma-separated: B,B+T,B+H.")] = "B,B+T,B+H",
    out: Annotated[Path | None, typer.Option("--out", help="Run folder (default: RUNS/<model>/<run id>).")] = None,
    runs: Annotated[Path, typer.Option("--runs", help="Root of run folders.")] = Path("runs"),
    scorer: Annotated[
        str | None,
        typer.Option(
            "--scorer",
            help=f"Reference scorer for OL/UI/BUF/BC (default {DEFAULT_SCORER}; paper and --preset paper: "
            f"{PAPER_SCORER}); 'none' skips them.",
        ),
    ] = None,
    judge: Judge = "none",
    grader: Grader = "none",
    kl_direction: KLDirection = _TRAJ.kl_direction,
    step_rule: StepRule = _TRAJ.step_rule,
    bc_counting: BCCounting = _TRAJ.bc_counting,
    concurrency: Annotated[int, typer.Option("--concurrency", help="Concurrent API calls.")] = 16,
    score: Annotated[bool, typer.Option("--score/--no-score", help="Score after generating (not for shards).")] = True,
    plots: Plots = True,
    timeout: Timeout = 120.0,
    max_retry_after: MaxRetryAfter = 600.0,
) -> None:
    """Generate (cached, resumable) and score a model's responses to PHRBench."""
    from phr.eval.pipeline import score_run
    from phr.eval.runner import RunConfig, generate_run, model_max_output, parse_shard
    from phr.llm import LLM

    if preset is not None and preset not in PRESETS:
        raise UsageError(f"--preset {preset!r}: expected one of {', '.join(PRESETS)}")
    base = PRESETS.get(preset or "", {})
    trajectory = _trajectory(kl_direction, step_rule, bc_counting)
    calls = {"timeout": timeout, "max_retry_after": max_retry_after}
    llm = LLM(model, concurrency=concurrency, **calls)
    llm.provider.purpose = "as the model under evaluation"
    source = "--max-tokens"
    if max_tokens is None:
        if preset is not None and base.get("max_tokens") is None:
            max_tokens, source = model_max_output(llm.provider), "model"
            if max_tokens is None:
                raise UsageError(
                    f"--preset {preset}: {model} does not say its maximum output length; give --max-tokens"
                )
        else:
            max_tokens, source = DEFAULT_MAX_TOKENS, "default"
    cfg = RunConfig(
        model=model,
        dataset=dataset,
        dataset_revision=revision,
        conditions=conditions,
        samples=samples if samples is not None else base.get("samples", 10),
        temperature=temperature if temperature is not None else base.get("temperature", 0.7),
        max_tokens=max_tokens,
        limit=limit,
        shard=parse_shard(shard),
    )
    scorer = scorer if scorer is not None else base.get("scorer", DEFAULT_SCORER)
    run = generate_run(cfg, out=out, root=runs, hub=hub, llm=llm)
    typer.echo(f"run: {run.path}  ({len(run.responses)} responses, {len(run.failures)} failed calls)")
    if cfg.shard is not None:
        typer.echo(
            f"shard {shard} done; when every shard is done: phr-publish eval merge "
            f"{run.path.parent}/{run.meta['run_id']}-shard-*-of-{cfg.shard[1]} --out {run.path.parent / run.meta['run_id']}"
        )
        return
    if score:
        # the generator's weights serve a same-model trajectory scorer (phr.eval.scorers.trajectory_engine)
        options = replace(
            _options(scorer, judge, llm_options=calls, grader=grader, trajectory=trajectory), generator=llm
        )
        result, where = score_run(run.path, options, hub=hub, plots=plots, preset=preset, max_tokens_source=source)
        _print_summary(result, where)


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

    run = merge_runs(shards, out)
    typer.echo(f"merged {len(shards)} shards into {run.path} ({len(run.responses)} responses)")
    if score:
        result, where = score_run(run.path, _options(scorer, judge), hub=hub, plots=plots)
        _print_summary(result, where)


@eval_app.command("score")
def eval_score(
    run: Annotated[Path, typer.Argument(help="A run folder (unsharded or merged).")],
    scorer: Scorer = "local:smollm2",
    judge: Judge = "none",
    grader: Grader = "none",
    kl_direction: KLDirection = _TRAJ.kl_direction,
    step_rule: StepRule = _TRAJ.step_rule,
    bc_counting: BCCounting = _TRAJ.bc_counting,
    hub: Hub = None,
    plots: Plots = True,
) -> None:
    """(Re)score a run folder, e.g. with a judge added."""
    from phr.eval.pipeline import score_run

    options = _options(scorer, judge, grader=grader, trajectory=_trajectory(kl_direction, step_rule, bc_counting))
    result, where = score_run(run, options, hub=hub, plots=plots)
    _print_summary(result, where)


@dataclass(frozen=True)
class SubmissionOptions:
    """What the ``score`` and ``submit`` commands share: the submission, its dataset, its metadata, the scorers."""

    submission: Path
    dataset: str
    revision: str | None
    hub: Path | None
    meta: Path | None
    model: str | None
    model_revision: str | None
    link: str | None
    samples: int | None
    conditions: str | None
    submitted_by: str | None
    notes: str | None
    scorer: str
    judge: str
    out: Path | None

    def score(self, plots: bool = True):
        """Validate the submission against the dataset, score it; (result, scored folder)."""
        from phr.eval.dataset import load_eval_dataset
        from phr.eval.pipeline import score_submission
        from phr.eval.submission import load_meta

        if not self.submission.is_file():
            raise UsageError(f"no such submission file: {self.submission}")
        meta = load_meta(
            self.meta,
            submission=self.submission,
            model=self.model,
            revision=self.model_revision,
            link=self.link,
            samples=self.samples,
            conditions=self.conditions,
            submitted_by=self.submitted_by,
            notes=self.notes,
        )
        ds = load_eval_dataset(self.dataset, revision=self.revision, hub=self.hub)
        out = self.out or self.submission.with_name(self.submission.stem + ".scored")
        return score_submission(self.submission, ds, meta, _options(self.scorer, self.judge), out=out, plots=plots)


Model = Annotated[str | None, typer.Option("--model", help="Model name (repo id); or in the sidecar JSON.")]
ModelRev = Annotated[str | None, typer.Option("--model-revision", help="Model revision (commit or tag).")]
Link = Annotated[str | None, typer.Option("--link", help="http(s) link to the model or write-up.")]
Samples = Annotated[int | None, typer.Option("--samples", help="Declared samples per instance (default 1).")]
Conds = Annotated[str | None, typer.Option("--conditions", help="Comma-separated conditions covered (default all).")]
MetaFile = Annotated[Path | None, typer.Option("--meta", help="Sidecar JSON (default: SUBMISSION.meta.json).")]
By = Annotated[str | None, typer.Option("--submitted-by", help="Who submits.")]
Notes = Annotated[str | None, typer.Option("--notes", help="Free text shown with the result.")]


@submit_app.command("score")
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
    opts = SubmissionOptions(
        submission,
        dataset,
        revision,
        hub,
        meta,
        model,
        model_revision,
        link,
        samples,
        conditions,
        submitted_by,
        notes,
        scorer,
        judge,
        out,
    )
    result, where = opts.score(plots)
    _print_summary(result, where)


@submit_app.command("submit")
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
    to: Annotated[
        Path | None,
        typer.Option("--to", help="Local hub for the results repo (default: $PHR_HUB_DIR; unset: the Hub)."),
    ] = None,
    replace: Annotated[bool, typer.Option("--replace", help="Overwrite a stored result with the same run id.")] = False,
    create_pr: Annotated[bool, typer.Option("--create-pr", help="Open a pull request on the results repo.")] = False,
    model_pr: Annotated[
        bool,
        typer.Option(
            "--model-pr", help="Also open a pull request on the model's repo adding .eval_results/phrbench.yaml."
        ),
    ] = False,
) -> None:
    """Validate, score and publish a submission to the leaderboard results repo."""
    from phr.cards.eval_yaml import model_eval_results_yaml
    from phr.eval.results import normalize
    from phr.leaderboard.repo import open_model_pr, push_results

    opts = SubmissionOptions(
        submission,
        dataset,
        revision,
        hub,
        meta,
        model,
        model_revision,
        link,
        samples,
        conditions,
        submitted_by,
        notes,
        scorer,
        judge,
        out,
    )
    result, where = opts.score()
    _print_summary(result, where)
    res = push_results([where / "results.json"], repo, to=to, replace=replace, create_pr=create_pr)
    for line in res.lines():
        typer.echo(line)
    if model_pr:
        pr = open_model_pr(result["model"], model_eval_results_yaml(normalize(result)), to=to)
        typer.echo(
            f"model repo {result['model']}: "
            + (f"pull request {pr.pr_url or pr.pr_ref}" if pr.changed else "already holds these results")
        )


@submit_app.command("leaderboard")
def leaderboard_cmd(
    sources: Annotated[
        list[Path] | None, typer.Argument(help="Result JSON files or folders (a pulled results repo).")
    ] = None,
    repo: Annotated[
        str | None, typer.Option("--repo", help="Read the results repo ORG/NAME instead (local hub or the Hub).")
    ] = None,
    hub: Hub = None,
    out: Annotated[Path, typer.Option("--out", help="Where leaderboard.parquet/.md/.html go.")] = Path("leaderboard"),
    title: Annotated[str, typer.Option("--title", help="Page title.")] = "PHRBench leaderboard",
) -> None:
    """Render the leaderboard (parquet, Markdown, static sortable HTML) from all results."""
    import tempfile

    from phr.hub import pull
    from phr.leaderboard.page import write_leaderboard
    from phr.leaderboard.repo import collect_results

    srcs = list(sources or [])
    if not srcs and not repo:
        raise UsageError("give result JSON files / folders, or --repo ORG/NAME")
    with tempfile.TemporaryDirectory(prefix="phr-results-") as tmp:  # the pulled repo goes when we are done
        if repo:
            srcs.append(pull(repo, to=Path(tmp) / "repo", hub=hub))
        records = collect_results(srcs)
        paths = write_leaderboard(records, out, title=title)
    typer.echo(f"leaderboard of {len(records)} results:")
    for p in paths.values():
        typer.echo(f"  {p}")


hr1.register_eval(eval_app)  # after phrbench, merge and score: listed last in --help
