"""`phr-publish analyze paraphrases`: the Hallucination-R1 failure diagnostics (docs/analyses.md,
"Hallucination-R1 diagnostics"). ``register(app)`` adds the command to the ``analyze`` group."""

from __future__ import annotations

import typer

from phr.cli.common import execute
from phr.cli.options import DryRun, bind
from phr.config.ops import AnalyzeParaphrasesConfig


@bind(AnalyzeParaphrasesConfig)
def paraphrases(cfg: AnalyzeParaphrasesConfig, dry_run: DryRun = False) -> None:
    """Diagnose why paraphrases fail: surface shifts, embedding drift and the logit lens (Eq. 11-18), RF vs RP."""
    from phr.ops.analyze_paraphrases import summary

    diag = execute(cfg, dry_run=dry_run)
    for line in summary(diag, cfg) if diag is not None else []:
        typer.echo(line)


def register(app: typer.Typer) -> None:
    """Add ``paraphrases`` to the ``analyze`` command group."""
    app.command("paraphrases")(paraphrases)
