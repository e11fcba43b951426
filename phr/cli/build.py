"""`phr-publish build phrbench` and `phr-publish validate`: build a dataset folder, re-check one (the operations:
``phr.ops.build_phrbench`` and ``phr.ops.validate``, each ``plan(cfg)`` then ``run(plan)``)."""

from __future__ import annotations

import typer

from phr.cli import hr1
from phr.cli.common import execute, new_app
from phr.cli.options import DryRun, bind
from phr.config.ops import BuildPhrbenchConfig, ValidateConfig

UNDECIDED = "manual review: undecided"  # a QC row of a build (phr.validation.review.ReviewStatus.qc_rows)

build_app = new_app("Build datasets (PHRBench; the Hallucination-R1 corpora: hr1-paraphrases, hr1-sft, hr1-grpo).")
validate_app = new_app("Re-check a built folder.")
hr1.register(build_app)


@build_app.command("phrbench")
@bind(BuildPhrbenchConfig)
def build_phrbench(cfg: BuildPhrbenchConfig, dry_run: DryRun = False) -> None:
    """Build PHRBench (default: PHRBench-mini offline) into a validated Hub-layout folder."""
    res = execute(cfg, dry_run=dry_run)
    if res is None:
        return
    counts = ", ".join(f"{k} {v}" for k, v in res.counts.items())
    typer.echo(f"built PHRBench ({cfg.recipe}) in {res.out}: {counts} = {sum(res.counts.values())} instances")
    for k, v in res.qc.items():
        typer.echo(f"  {k}: {v}")
    if res.curated and res.qc.get(UNDECIDED):
        typer.echo(
            "  (undecided: premises no one has decided on with `phr-publish review` yet; the "
            "maintainers wrote and checked these curated premises, so this recipe needs no review to load, "
            "validate or push; a review is optional: docs/review.md)"
        )
    typer.echo(f'load it with: load_dataset("{cfg.out}", "all")')
    for line in res.next_steps:
        typer.echo(line)
    typer.echo(f"rerun: {cfg.rerun()}")


@validate_app.command("validate")
@bind(ValidateConfig)
def validate(cfg: ValidateConfig) -> None:
    """Run every check on a built folder; exit 0 when all pass, 1 otherwise (each failing row listed)."""
    report = execute(cfg)
    typer.echo(report.to_json() if cfg.as_json else report.render())
    raise typer.Exit(0 if report.ok else 1)
