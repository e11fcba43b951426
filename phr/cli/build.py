"""`phr-publish build phrbench` and `phr-publish validate`: build a dataset folder, re-check one."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from phr.cli import hr1
from phr.cli.common import CallOptions, MaxRetryAfter, Timeout, new_app
from phr.core.errors import UsageError
from phr.core.fs import folder_links
from phr.core.report import Rejection, ValidationReport
from phr.hr1.names import SOURCES

build_app = new_app("Build datasets (PHRBench; the Hallucination-R1 corpora: hr1-paraphrases, hr1-sft, hr1-grpo).")
validate_app = new_app("Re-check a built folder.")
hr1.register(build_app)


@build_app.command("phrbench")
def build_phrbench(
    recipe: Annotated[
        str, typer.Option(help="mini (offline, curated premises), paper, or a recipe YAML file.")
    ] = "mini",
    generator: Annotated[
        str | None, typer.Option(metavar="SPEC", help="Premise generator spec (paper: openai:gpt-4o).")
    ] = None,
    judge: Annotated[
        str | None,
        typer.Option(
            metavar="SPEC",
            help="LLM judge spec for the second validation pass ('none' to skip; paper: google:gemini-3-pro-preview).",
        ),
    ] = None,
    source_dir: Annotated[
        Path | None, typer.Option(metavar="DIR", help="Folder with one sub-folder of released files per source.")
    ] = None,
    online: Annotated[bool, typer.Option("--online", help="Load sources missing locally from the Hub.")] = False,
    out: Annotated[Path, typer.Option("--out", metavar="DIR", help="Output folder (Hub layout).")] = Path("phrbench"),
    overwrite: Annotated[bool, typer.Option("--overwrite", help="Replace an existing output folder.")] = False,
    allow_short: Annotated[
        bool, typer.Option("--allow-short", help="Build even if some questions lack premises.")
    ] = False,
    prompts: Annotated[
        str,
        typer.Option(
            metavar="SET",
            help="Generation prompts: paper (the paper's A.2 prompts, verbatim; the generator chooses each "
            "premise's mutation type), v0 (the toolkit's earlier prompts, types fixed per slot; reproduces "
            "earlier builds), or a folder with prompt_t.txt and prompt_h.txt.",
        ),
    ] = "paper",
    allow_stand_in: Annotated[
        bool,
        typer.Option(
            "--allow-stand-in",
            help="Build with the offline B3DB stand-in when no MoleculeNet BBBP copy is found (refused "
            "otherwise); the manifest and card say so.",
        ),
    ] = False,
    skip_review: Annotated[
        bool,
        typer.Option(
            "--skip-review",
            help="QC fast path: rule checks and LLM judge during generation, no manual review before push "
            "(recorded in manifest.json and on the card). Default: the paper's order (rule checks -> manual "
            "review -> judge; see docs/review.md).",
        ),
    ] = False,
    timeout: Timeout = 120.0,
    max_retry_after: MaxRetryAfter = 600.0,
) -> None:
    """Build PHRBench (default: PHRBench-mini offline) into a validated Hub-layout folder."""
    from phr.builders.phrbench import build

    calls = CallOptions(timeout=timeout, max_retry_after=max_retry_after)
    res = build(
        recipe,
        out,
        generator=generator,
        judge=judge,
        source_dir=source_dir,
        online=online,
        overwrite=overwrite,
        allow_short=allow_short,
        prompts=prompts,
        allow_stand_in=allow_stand_in,
        llm_options=calls.llm_kwargs(),
        skip_review=skip_review,
    )
    total = sum(res.counts.values())
    counts = ", ".join(f"{k} {v}" for k, v in res.counts.items())
    typer.echo(f"built PHRBench ({recipe}) in {res.out}: {counts} = {total} instances")
    for k, v in res.qc.items():
        typer.echo(f"  {k}: {v}")
    typer.echo(f'load it with: load_dataset("{out}", "all")')
    for line in res.next_steps:
        typer.echo(line)


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
