"""`phr-publish build phrbench` and `phr-publish validate`: build a dataset folder, re-check one."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from phr.cli import hr1
from phr.cli.common import new_app
from phr.cli.options import DryRun, bind
from phr.config.ops import BuildPhrbenchConfig
from phr.core.errors import PHRError, UsageError
from phr.core.fs import folder_links
from phr.core.report import Rejection, ValidationReport
from phr.hr1.names import SOURCES
from phr.llm.preflight import Preflight, writable

UNDECIDED = "manual review: undecided"  # a QC row of a build (phr.validation.review.ReviewStatus.qc_rows)

build_app = new_app("Build datasets (PHRBench; the Hallucination-R1 corpora: hr1-paraphrases, hr1-sft, hr1-grpo).")
validate_app = new_app("Re-check a built folder.")
hr1.register(build_app)


@build_app.command("phrbench")
@bind(BuildPhrbenchConfig)
def build_phrbench(cfg: BuildPhrbenchConfig, dry_run: DryRun = False) -> None:
    """Build PHRBench (default: PHRBench-mini offline) into a validated Hub-layout folder."""
    from phr.builders.phrbench import DEFAULT_GENERATOR, build
    from phr.builders.recipe import load_recipe

    pf = Preflight()
    rec = pf.check(f"--recipe {cfg.recipe}", lambda: load_recipe(cfg.recipe))
    if rec is not None:
        judge = rec.judge if cfg.judge is None else cfg.judge
        pf.model("judge", judge)
        generator = cfg.generator or rec.generator or DEFAULT_GENERATOR
        if not rec.curated:
            pf.model("generator", generator)
        pf.note(
            f"recipe {rec.name}: {'curated premises (no generator calls)' if rec.curated else 'generated premises'}"
        )
        if not rec.curated and dry_run and not pf.problems:
            from phr.builders.recipe import SourcesMissingError

            try:
                _plan_premises(pf, cfg, rec, generator, judge)
            except SourcesMissingError as e:  # every missing source, each its own problem
                for problem in e.problems:
                    pf.problem(problem)
            except (PHRError, OSError, ValueError) as e:
                pf.problem(f"sources: {e}")
    if cfg.source_dir is not None and not cfg.source_dir.is_dir():
        pf.problem(f"--source-dir {cfg.source_dir}: not a folder")
    if cfg.out.exists() and not cfg.overwrite:
        pf.problem(f"--out {cfg.out}: already exists (pass --overwrite to replace it)")
    pf.check("--out", lambda: writable(cfg.out))
    pf.finish(dry_run, echo=typer.echo)
    if dry_run:
        return
    # build()'s keyword names
    options = cfg.model_dump(exclude={"recipe", "out", "timeout", "max_retry_after", "batch"})
    res = build(cfg.recipe, cfg.out, **options, llm_options=cfg.llm_kwargs(), config=cfg)
    total = sum(res.counts.values())
    counts = ", ".join(f"{k} {v}" for k, v in res.counts.items())
    typer.echo(f"built PHRBench ({cfg.recipe}) in {res.out}: {counts} = {total} instances")
    for k, v in res.qc.items():
        typer.echo(f"  {k}: {v}")
    if rec is not None and rec.curated and res.qc.get(UNDECIDED):
        typer.echo(
            "  (undecided: premises no one has decided on with `phr-publish review` yet; the "
            "maintainers wrote and checked these curated premises, so this recipe needs no review to load, "
            "validate or push; a review is optional: docs/review.md)"
        )
    typer.echo(f'load it with: load_dataset("{cfg.out}", "all")')
    for line in res.next_steps:
        typer.echo(line)
    typer.echo(f"rerun: {cfg.rerun()}")


def _plan_premises(pf: Preflight, cfg: BuildPhrbenchConfig, rec, generator: str, judge: str | None) -> None:
    """The calls of a generated build: the first round's generator requests (exact, with their cached share; a
    regeneration round adds calls for the slots rejected), and one judge verdict per premise slot (estimated: the
    premises are written during the run; each stood in by its question)."""
    from phr.bench.records import Augmentation
    from phr.builders.generate import Prompts, first_round_requests
    from phr.builders.recipe import select_questions
    from phr.config.defaults import is_no_model
    from phr.llm import LLM, ChatRequest, as_messages
    from phr.validation.judge import PARAMS, judge_prompt

    questions, _ = select_questions(
        rec, cfg.source_dir, online=cfg.online, allow_short=cfg.allow_short, allow_stand_in=cfg.allow_stand_in
    )
    requests = first_round_requests(questions, rec, prompts=Prompts.load(cfg.prompts))
    slots = sum(r.n for r in requests)
    pf.note(
        f"{len(questions)} base questions, {slots} premise slots; up to {rec.regeneration_rounds} regeneration round(s)"
    )
    provider = LLM(generator, progress=False, show_summary=False, **cfg.llm_kwargs()).provider
    pf.calls(generator, requests, provider=provider)
    if not is_no_model(judge):
        by_id = {q.id: q for q in questions}
        stand_ins = [
            ChatRequest(
                as_messages(
                    judge_prompt(
                        q,
                        Augmentation(
                            id=f"{q.id}-{i}",
                            question_id=q.id,
                            kind="truthful",
                            statement=q.question,
                            generator=generator,
                        ),
                    )
                ),
                PARAMS,
            )
            for r in requests
            for q in [by_id[str(r.tag)]]
            for i in range(r.n)
        ]
        pf.calls(str(judge), stand_ins, estimated=True)


@validate_app.command("validate")
def validate(
    folder: Annotated[
        Path, typer.Argument(metavar="FOLDER", help="A built PHRBench folder or Hallucination-R1 corpus.")
    ],
    eval_set: Annotated[
        list[str] | None,
        typer.Option(
            "--eval-set",
            metavar="NAME=PATH",
            help="Hallucination-R1 training corpora: also check split leakage against this evaluation set "
            f"(source NAME of {', '.join(SOURCES)}, released files at PATH). Repeatable.",
        ),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
) -> None:
    """Run every check on a built folder; exit 0 when all pass, 1 otherwise (each failing row listed)."""
    if not folder.exists():
        raise UsageError(f"no such folder: {folder}")
    if not folder.is_dir():
        raise UsageError(f"{folder} is a file, not a folder: give the folder `phr-publish build` wrote")
    links = folder_links(folder)
    if links:  # never followed: report them and stop (what they point to is not this folder's content)
        report = ValidationReport([Rejection(rel, "link", what) for rel, what in links])
        typer.echo(report.to_json() if as_json else report.render())
        raise typer.Exit(1)
    from phr.builders.hr1_sources import load_hr1_source
    from phr.hr1.corpora import KINDS
    from phr.validation.folder import validate_folder
    from phr.validation.hr1_folder import card_kind, validate_corpus
    from phr.validation.hr1_leakage import check_corpus_folder

    kind = card_kind(folder)
    if kind is not None and kind not in KINDS:
        raise UsageError(f"{folder}: the card's phr_kind {kind!r} is not one of {', '.join(KINDS)}")
    if kind is None:
        if eval_set:
            raise UsageError("--eval-set applies to Hallucination-R1 corpora (hr1-paraphrases, hr1-sft, hr1-grpo)")
        report = validate_folder(folder)
    else:
        report = validate_corpus(folder, kind)
        sets = {}
        for v in eval_set or []:
            name, _, path = v.partition("=")
            if name not in SOURCES or not path:
                raise UsageError(f"--eval-set {v}: give NAME=PATH with NAME one of {', '.join(SOURCES)}")
            sets[name] = [(q.id, q.question) for q in load_hr1_source(name, path).questions]
        if sets:
            report.extend(check_corpus_folder(folder, kind, sets).rejections)
    typer.echo(report.to_json() if as_json else report.render())
    raise typer.Exit(0 if report.ok else 1)
