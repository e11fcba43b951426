"""`phr-publish build hr1-paraphrases | hr1-sft | hr1-grpo` and `eval hr1`: the Hallucination-R1 corpora and
evaluation (docs/hr1.md). Each command binds its config, runs ``execute`` (``phr.ops``' plan, then
its run) and prints the result."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer

from phr.cli.common import execute
from phr.cli.options import DryRun, bind
from phr.config.ops import BuildHr1GrpoConfig, BuildHr1ParaphrasesConfig, BuildHr1SftConfig, EvalHr1Config

if TYPE_CHECKING:  # the library is imported inside the commands: `--help` stays fast
    from phr.builders.hr1 import HR1BuildResult
    from phr.eval.hr1_runner import HR1EvalResult


def load_hint(out: Path) -> str:
    """How to load the built folder with ``datasets``: with one config, or with the ``all`` config as the default
    (a corpus of several sources), the folder; with several and no default that holds every row, each config by
    name, since ``load_dataset(PATH)`` alone loads only the default one."""
    from phr.hr1.corpora import ALL_CONFIG
    from phr.hub.card import card_configs

    configs = card_configs(out)
    if len(configs) <= 1:
        return f'load it with: load_dataset("{out}")'
    if ALL_CONFIG in configs and configs[ALL_CONFIG].default:
        one = ", ".join(f'"{name}"' for name in configs if name != ALL_CONFIG)
        return f'load it with: load_dataset("{out}") (config {ALL_CONFIG}: every row; one source: {one})'
    default = next((c.name for c in configs.values() if c.default), next(iter(configs)))
    each = " and ".join(f'load_dataset("{out}", "{name}")' for name in configs)
    return f'load it with: {each} (one config per source; load_dataset("{out}") alone loads only {default})'


def _built(res: HR1BuildResult | None) -> None:
    """Print a built corpus: the call summary, the settings and rerun, the counts, how to load it."""
    if res is None:  # a dry run
        return
    res.summary.print()
    typer.echo(res.settings)
    counts = ", ".join(f"{k} {v}" for k, v in res.counts.items())
    typer.echo(f"built {res.kind} in {res.out}: {counts}")
    typer.echo(load_hint(res.out))


@bind(BuildHr1ParaphrasesConfig)
def build_hr1_paraphrases(cfg: BuildHr1ParaphrasesConfig, dry_run: DryRun = False) -> None:
    """Build a paraphrase corpus (with no arguments: Hallucination-R1-mini, the offline preset `mini`).

    Hallucination-R1-mini: 52 packaged TruthfulQA and SimpleQuestions questions with K = 4 paraphrases
    written and labelled by the maintainers; local:smollm2 answers, graded by alias match (no judge); its
    card says so. Give --source (and models) for a real corpus."""
    _built(execute(cfg, dry_run=dry_run))


@bind(BuildHr1SftConfig)
def build_hr1_sft(cfg: BuildHr1SftConfig, dry_run: DryRun = False) -> None:
    """Build the SFT corpus: consistent paraphrases of SimpleQuestions train with the gold answer (appendix E.1).
    The training questions are screened for split leakage before any model call. With no --source: the
    offline smoke corpus of preset mini (no model is run)."""
    _built(execute(cfg, dry_run=dry_run))


@bind(BuildHr1GrpoConfig)
def build_hr1_grpo(cfg: BuildHr1GrpoConfig, dry_run: DryRun = False) -> None:
    """Build the GRPO prompt corpus: SimpleQuestions train questions the QA model answers correctly (appendix C.1).
    The training questions are screened for split leakage before any model call. With no --source: the
    offline smoke corpus of preset mini (no model is run, no QA filter)."""
    _built(execute(cfg, dry_run=dry_run))


@bind(EvalHr1Config)
def eval_hr1(cfg: EvalHr1Config, dry_run: DryRun = False) -> None:
    """Evaluate a paraphraser against a QA model: Tables 1-3 (or 4), and 7 with --judges/--human."""
    res: HR1EvalResult | None = execute(cfg, dry_run=dry_run)
    if res is None:  # a dry run
        return
    res.summary.print()
    typer.echo((res.out / "report.md").read_text())
    typer.echo(f"results: {res.out / 'results.json'}; per-question records: {res.out / 'records'}")
    typer.echo(res.settings)
    if res.partial:
        typer.echo(
            f"PARTIAL: {len(res.failures)} value(s) missing (a call failed after all retries): left out of the "
            f"tables, listed in results.json. {res.rerun}",
            err=True,
        )


def register(build_app: typer.Typer) -> None:
    """Add the three hr1 build commands to ``phr-publish build``."""
    build_app.command("hr1-paraphrases")(build_hr1_paraphrases)
    build_app.command("hr1-sft")(build_hr1_sft)
    build_app.command("hr1-grpo")(build_hr1_grpo)


def register_eval(eval_app: typer.Typer) -> None:
    """Add ``phr-publish eval hr1``."""
    eval_app.command("hr1")(eval_hr1)
