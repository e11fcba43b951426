"""`phr-publish eval phrbench|merge|score`, `score`, `submit`, `leaderboard`: thin commands over phr.eval."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from phr.cli import hr1
from phr.cli.common import Hub, new_app, spec_or_none
from phr.cli.options import DryRun, bind
from phr.config.ops import (
    SCORING_FIELDS,
    EvalMergeConfig,
    EvalPhrbenchConfig,
    EvalScoreConfig,
    ScoreSubmissionConfig,
    Scoring,
    SubmitConfig,
)
from phr.core.errors import UsageError
from phr.core.progress import start_heartbeat
from phr.llm.preflight import Preflight, max_output_of, writable

if TYPE_CHECKING:  # imported where used: `--help` stays fast
    from phr.eval.trajectory import TrajectorySettings

eval_app = new_app(
    "Evaluate models on PHRBench (generate, merge shards, score) and Hallucination-R1 paraphrasers (hr1)."
)
submit_app = new_app("Score and publish submissions; render the leaderboard.")


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
    from phr.eval.trajectory import TrajectorySettings

    try:
        return TrajectorySettings(kl_direction, step_rule, bc_counting)
    except ValueError as e:
        raise UsageError(str(e)) from None


def _announce_sandbox(*, others_code: bool = False, allow_weak: bool = False) -> None:
    """Say which code sandbox the run's code answers will run in (a WARNING on stderr when it is weak); for
    someone else's code (``score``, ``submit``) refuse a weak one unless ``allow_weak`` (--allow-weak-sandbox)."""
    from phr.eval.sandbox import isolation_report

    report = isolation_report()
    if report.weak and others_code and not allow_weak:
        raise UsageError(report.refusal())
    typer.echo(report.line(), err=report.weak)


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
    from rich.markup import escape
    from rich.table import Table

    from phr.bench.metrics import INSIGHTFUL, LEADERBOARD, REQUIRED, RESOLUTIONS, TRAJECTORY, metric, rate_of
    from phr.core.console import console
    from phr.eval.results import estimate_text

    con = console()
    t = result["tables"]
    errs = (t.get("cell_errors") or {}).get("by_condition", {})
    table = Table(title=f"PHRBench: {escape(result['model'])} @ {escape(result['revision'])}")  # never markup
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
    if result.partial:
        typer.echo(
            f"coverage: {result.coverage_text()} of {result.dataset.id}: push-results, submit and leaderboard "
            "refuse it unless --allow-partial (then shown partial and unranked)"
        )
    _print_settings(result)
    typer.echo(f"results: {out / 'results.json'}  (samples.jsonl, report.md, plots/ next to it)")


@eval_app.command("phrbench")
@bind(EvalPhrbenchConfig)
def eval_phrbench(cfg: EvalPhrbenchConfig, hub: Hub = None, dry_run: DryRun = False) -> None:
    """Generate (cached, resumable) and score a model's responses to PHRBench."""
    from phr.eval.ranks import launched, over_ranks

    if launched(cfg.shard, dry_run):  # under a launcher: a shard per rank, rank 0 merges and scores (eval/ranks.py)
        from phr.cli import invoke

        return over_ranks(invoke, out=cfg.out, runs=cfg.runs, model=cfg.model, score=cfg.score, plots=cfg.plots,
                          hub=hub, dry_run=dry_run)  # fmt: skip
    from phr.eval.pipeline import score_run
    from phr.eval.runner import RunConfig, generate_run, parse_shard
    from phr.llm import LLM

    typer.echo(f"preset: {cfg.preset or 'none (the defaults)'}")
    if cfg.score and cfg.shard is None:
        _announce_sandbox()
    # 20 s on a busy CPU; stopped before the report (pf.check turns every expected error into a problem)
    checking = start_heartbeat("checking the run (models, dataset, selection)")
    try:  # stopped on every path, an unexpected error included
        pf = Preflight()
        trajectory = _trajectory(cfg.kl_direction, cfg.step_rule, cfg.bc_counting)
        shard = pf.check("--shard", lambda: parse_shard(cfg.shard))
        usable = pf.model("model", cfg.model)
        for role in ("scorer", "judge", "grader"):
            pf.model(role, getattr(cfg, role))
        llm = (
            pf.check(cfg.model, lambda: LLM(cfg.model, concurrency=cfg.concurrency, **cfg.llm_kwargs()))
            if usable
            else None
        )
        if llm is not None:
            llm.provider.purpose = "as the model under evaluation"
        max_tokens, source = _max_tokens(cfg, llm, pf)
        run_cfg = pf.check(
            "settings",
            lambda: RunConfig(
                model=cfg.model,
                dataset=cfg.dataset,
                dataset_revision=cfg.revision,
                conditions=cfg.conditions,
                samples=cfg.samples,
                temperature=cfg.temperature,
                max_tokens=max_tokens or 1,
                limit=cfg.limit,
                shard=shard,
            ),
        )
        if run_cfg is not None:
            from phr.eval.dataset import load_eval_dataset

            ds = pf.check(
                f"--dataset {cfg.dataset}", lambda: load_eval_dataset(cfg.dataset, revision=cfg.revision, hub=hub)
            )
            if ds is not None:
                pf.check("selection", lambda: _plan_run(pf, run_cfg, ds, llm))
        if cfg.out is not None:
            pf.check("--out", lambda: writable(cfg.out))
    finally:
        checking()
    pf.finish(dry_run, echo=typer.echo)
    if dry_run:
        return
    settings = {"config": cfg.record(), "max_tokens_source": source, "rerun": cfg.rerun()}
    run = generate_run(run_cfg, out=cfg.out, root=cfg.runs, hub=hub, llm=llm, settings=settings)
    typer.echo(f"run: {run.path}  ({len(run.responses)} responses, {len(run.failures)} failed calls)")
    typer.echo(f"settings recorded in {run.path / 'run.json'}; rerun: {settings['rerun']}")
    if run_cfg.shard is not None:
        i, n = run_cfg.shard
        typer.echo(
            f"shard {i}/{n} done; when every shard is done: phr-publish eval merge "
            f"{run.path.parent}/{run.meta['run_id']}-shard-*-of-{n} --out {run.path.parent / run.meta['run_id']}"
        )
        return
    if cfg.score:
        # the generator's weights serve a same-model trajectory scorer (phr.eval.scorers.trajectory_engine)
        options = replace(
            _options(cfg.scorer, cfg.judge, llm_options=cfg.llm_kwargs(), grader=cfg.grader, trajectory=trajectory),
            generator=llm,
        )
        result, where = score_run(
            run.path, options, hub=hub, plots=cfg.plots, preset=cfg.preset, max_tokens_source=source
        )
        _print_summary(result, where)


def _max_tokens(cfg: EvalPhrbenchConfig, llm, pf: Preflight) -> tuple[int | None, str]:
    """The output limit and where it came from: the option, the model's maximum, or the default."""
    if cfg.max_tokens != "model":
        return cfg.max_tokens, "--max-tokens" if "max_tokens" in cfg.model_fields_set else "default"
    from phr.eval.runner import model_max_output

    limit = (model_max_output(llm.provider) if llm is not None else None) or max_output_of(cfg.model)
    if limit is None:
        pf.problem(
            f"max_tokens 'model' ({'--preset ' + cfg.preset if cfg.preset else 'the config'}): the maximum output "
            f"length of {cfg.model} is not known (not reported by the provider, not in phr/llm/model_limits.toml): "
            "give --max-tokens, or add it to a TOML file in $PHR_MODEL_LIMITS"
        )
    return limit, "model"


def _plan_run(pf: Preflight, run_cfg, ds, llm) -> None:
    """The generation calls of a run (per prompt, ``samples`` each) and how many are cached."""
    from phr.eval.runner import run_requests

    requests = run_requests(run_cfg, ds)
    if not requests:
        raise UsageError("nothing to run: the limit / shard / conditions select no instance")
    pf.note(f"{len(requests)} prompts x {run_cfg.samples} samples, max_tokens {run_cfg.max_tokens}")
    pf.calls(run_cfg.model, requests, provider=llm.provider if llm is not None else None)


def _run_settings(meta, cfg) -> tuple[dict, str | None, str | None, dict]:
    """The scoring settings of a later step: the run's own (``meta``: its run.json; its stored config, the
    defaults for an older run), overridden by what ``cfg`` asks for. (settings, preset, max_tokens source, what
    was asked)."""
    stored = meta.settings or {}
    started = stored.get("config") or {}
    own = {k: started.get(k, Scoring.model_fields[k].default) for k in SCORING_FIELDS}
    preset = started.get("preset")
    asked = {k: v for k in (*SCORING_FIELDS, "preset") if (v := getattr(cfg, k)) is not None}
    settings = dict(own)
    if asked.get("preset", preset) != preset:  # another preset: its scoring values, then what else was asked
        preset = asked["preset"]
        settings.update({k: v for k, v in EvalPhrbenchConfig.presets[preset].items() if k in SCORING_FIELDS})
    settings.update({k: v for k, v in asked.items() if k in SCORING_FIELDS})
    changed = {k: settings[k] for k in SCORING_FIELDS if settings[k] != own[k]}
    if preset != started.get("preset"):
        changed = {"preset": preset, **changed}
    return settings, preset, stored.get("max_tokens_source"), changed


def _scoring(run, cfg, hub) -> tuple[Preflight, tuple]:
    """The preflight of scoring ``run`` (a loaded run folder, or shards joined in memory by ``join_shards``) with
    its own settings and those ``cfg`` asks for: every model spec and key, the run's dataset, the judge's calls;
    and the settings (``_run_settings``), which it prints."""
    from phr.eval.pipeline import dataset_of_run
    from phr.eval.scoring_plan import add_scoring_calls

    resolved = _run_settings(run.meta, cfg)
    settings, changed = resolved[0], resolved[3]
    if changed:
        typer.echo("scoring with settings other than the run's: " + ", ".join(f"{k}={v}" for k, v in changed.items()))
    else:
        typer.echo("scoring with the settings the run was started with")
    pf = Preflight()
    for role in ("scorer", "judge", "grader"):
        pf.model(role, settings[role])
    if not pf.problems:
        ds = pf.check("the run's dataset", lambda: dataset_of_run(run.meta, hub))
        if ds is not None:
            by_id = ds.by_id()
            instances = [by_id[i] for i in run.instance_ids if i in by_id]
            add_scoring_calls(pf, instances, run.responses, run.meta.samples, scorer=settings["scorer"],
                              judge=settings["judge"], grader=settings["grader"])  # fmt: skip
    return pf, resolved


def _rescore(run: Path, resolved: tuple, hub, plots: bool) -> None:
    """Score a run folder with the settings ``_scoring`` resolved."""
    from phr.eval.pipeline import score_run

    settings, preset, source, changed = resolved
    options = _options(
        settings["scorer"],
        settings["judge"],
        grader=settings["grader"],
        trajectory=_trajectory(settings["kl_direction"], settings["step_rule"], settings["bc_counting"]),
    )
    result, where = score_run(
        run, options, hub=hub, plots=plots, preset=preset, max_tokens_source=source, rescored=changed or None
    )
    _print_summary(result, where)


@eval_app.command("merge")
@bind(EvalMergeConfig)
def eval_merge(cfg: EvalMergeConfig, hub: Hub = None, dry_run: DryRun = False) -> None:
    """Join the shards of one run (refused unless all n are there, once, with the same settings) and score it
    with the settings the run was started with (a scoring option given here replaces the run's, and is recorded)."""

    from phr.eval.runner import join_shards, write_joined

    joined, log_rows = join_shards(cfg.shards)  # checked in memory: nothing is written before the preflight passed
    typer.echo(f"{len(cfg.shards)} shards join into one run ({len(joined.responses)} responses)")
    resolved = None
    if cfg.score:
        _announce_sandbox()
        pf, resolved = _scoring(joined, cfg, hub)
        pf.finish(dry_run, echo=typer.echo)
    if dry_run:
        typer.echo("dry run: nothing was written")
        return
    run = write_joined(joined, log_rows, cfg.out)
    typer.echo(f"merged {len(cfg.shards)} shards into {run.path} ({len(run.responses)} responses)")
    if resolved is not None:
        _rescore(run.path, resolved, hub, cfg.plots)


@eval_app.command("score")
@bind(EvalScoreConfig)
def eval_score(cfg: EvalScoreConfig, hub: Hub = None, dry_run: DryRun = False) -> None:
    """(Re)score a run folder with the settings it was started with; a scoring option given here (e.g. a judge
    added) replaces the run's and is recorded in the result."""

    from phr.eval.runner import load_run

    run = load_run(cfg.run)
    _announce_sandbox()
    pf, resolved = _scoring(run, cfg, hub)
    pf.finish(dry_run, echo=typer.echo)
    if not dry_run:
        _rescore(cfg.run, resolved, hub, cfg.plots)


def _score_submission(cfg: ScoreSubmissionConfig, hub, dry_run: bool):
    """Validate the submission against its dataset and score it (the preflight first: its file, its dataset,
    the scorers' specs and keys, the judge's calls); (result, scored folder), or None after a dry run."""
    from phr.eval.dataset import load_eval_dataset
    from phr.eval.pipeline import score_submission
    from phr.eval.scoring_plan import add_scoring_calls
    from phr.eval.submission import load_meta, validate_submission

    if not cfg.submission.is_file():
        raise UsageError(f"no such submission file: {cfg.submission}")
    typer.echo(f"preset: {cfg.preset or 'none (the defaults)'}")
    meta = load_meta(
        cfg.meta,
        submission=cfg.submission,
        model=cfg.model,
        revision=cfg.model_revision,
        link=cfg.link,
        samples=cfg.samples,
        conditions=cfg.conditions,
        submitted_by=cfg.submitted_by,
        notes=cfg.notes,
    )
    _announce_sandbox(others_code=True, allow_weak=cfg.allow_weak_sandbox)  # after the metadata: bad input first
    out = cfg.out or cfg.submission.with_name(cfg.submission.stem + ".scored")
    pf = Preflight()
    for role in ("scorer", "judge", "grader"):
        pf.model(role, getattr(cfg, role))
    ds = pf.check(f"--dataset {cfg.dataset}", lambda: load_eval_dataset(cfg.dataset, revision=cfg.revision, hub=hub))
    sub = None
    if ds is not None and not pf.problems:
        sub = pf.check(
            str(cfg.submission),
            lambda: validate_submission(cfg.submission, ds, meta, allow_partial=cfg.allow_partial),
        )
        if sub is not None:
            add_scoring_calls(pf, ds.select(meta.conditions), sub.responses, meta.samples, scorer=cfg.scorer,
                              judge=cfg.judge, grader=cfg.grader)  # fmt: skip
    pf.check("--out", lambda: writable(out))
    pf.finish(dry_run, echo=typer.echo)
    if dry_run:
        return None
    options = _options(
        cfg.scorer,
        cfg.judge,
        grader=cfg.grader,
        trajectory=_trajectory(cfg.kl_direction, cfg.step_rule, cfg.bc_counting),
    )
    options = replace(options, allow_weak_sandbox=cfg.allow_weak_sandbox)
    return score_submission(
        cfg.submission, ds, meta, options, out=out, plots=cfg.plots, validated=sub, allow_partial=cfg.allow_partial
    )


@submit_app.command("score")
@bind(ScoreSubmissionConfig)
def score_cmd(cfg: ScoreSubmissionConfig, hub: Hub = None, dry_run: DryRun = False) -> None:
    """Validate and score a leaderboard submission (the runner's scoring code)."""
    scored = _score_submission(cfg, hub, dry_run)
    if scored is not None:
        _print_summary(*scored)
        typer.echo(f"rerun: {cfg.rerun()}")


@submit_app.command("submit")
@bind(SubmitConfig)
def submit_cmd(cfg: SubmitConfig, hub: Hub = None, dry_run: DryRun = False) -> None:
    """Validate, score and publish a submission to the leaderboard results repo."""
    from phr.cards.eval_yaml import model_eval_results_yaml
    from phr.config.ops import PushResultsConfig
    from phr.eval.results import normalize
    from phr.leaderboard.repo import open_model_pr, push_results

    scored = _score_submission(cfg, hub, dry_run)
    if scored is None:
        return
    result, where = scored
    _print_summary(result, where)
    pushed = PushResultsConfig(
        results=[where / "results.json"],
        repo=cfg.repo,
        hub=cfg.to,
        replace=cfg.replace,
        create_pr=cfg.create_pr,
        allow_partial=cfg.allow_partial,
    )
    res = push_results(pushed)
    for line in res.lines():
        typer.echo(line)
    if cfg.model_pr:
        pr = open_model_pr(result["model"], model_eval_results_yaml(normalize(result)), to=cfg.to)
        typer.echo(
            f"model repo {result['model']}: "
            + (f"pull request {pr.pr_url or pr.pr_ref}" if pr.changed else "already holds these results")
        )


hr1.register_eval(eval_app)  # after phrbench, merge and score: listed last in --help
