"""`phr-publish analyze ...`: the papers' analyses (docs/analyses.md).

- ``analyze predictor``: the insightful-trajectory predictor of PHRBench §5.3 (phr.ops.analyze_predictor).
- ``analyze paraphrases``: the Hallucination-R1 failure diagnostics (phr.ops.analyze_paraphrases).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from phr.cli import analyze_hr1
from phr.cli.common import execute, new_app
from phr.cli.options import DryRun, bind
from phr.config.ops import AnalyzePredictorConfig

analyze_app = new_app("The papers' analyses: PHRBench's insightful-trajectory predictor, Hallucination-R1 diagnostics.")


@analyze_app.command("predictor")
@bind(AnalyzePredictorConfig)
def predictor_cmd(
    cfg: AnalyzePredictorConfig,
    more: Annotated[list[Path] | None, typer.Argument(help="Further results.json files (--results R1 R2 ...).")] = None,
    dry_run: DryRun = False,
) -> None:
    """Extract the 24 prompt features, fit the XGBoost predictor of insightful propensity with grouped CV, and
    write predictor.json/.md, features.csv and the SHAP importance and interaction PNGs."""
    if more:
        cfg = cfg.model_copy(update={"results": [*cfg.results, *more]})
    result = execute(cfg, dry_run=dry_run)
    for line in result.lines() if result is not None else []:
        typer.echo(line)


analyze_hr1.register(analyze_app)  # `analyze paraphrases` (Hallucination-R1 diagnostics)
