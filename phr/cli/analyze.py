"""`phr-publish analyze ...`: the papers' analyses (docs/analyses.md).

- ``analyze predictor``: the insightful-trajectory predictor of PHRBench §5.3 (phr.eval.predictor_run).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from phr.cli import analyze_hr1
from phr.cli.common import new_app, spec_or_none

analyze_app = new_app("The papers' analyses: PHRBench's insightful-trajectory predictor, Hallucination-R1 diagnostics.")


@analyze_app.command("predictor")
def predictor_cmd(
    results: Annotated[
        list[Path], typer.Option("--results", help="results.json files (with their samples.jsonl); more may follow.")
    ],
    dataset: Annotated[str, typer.Option("--dataset", help="The PHRBench dataset the results were scored on.")],
    judge: Annotated[
        str, typer.Option("--judge", help="LLM for the 12 semantic features; 'none' leaves them missing.")
    ] = "openai:gpt-4o",
    out: Annotated[Path, typer.Option("--out", help="Output folder (replaced).")] = Path("analysis/predictor"),
    target: Annotated[str, typer.Option("--target", help="pooled (one row per prompt) or per_model.")] = "pooled",
    threshold: Annotated[float, typer.Option("--threshold", help="Positive: insightful propensity > this.")] = 0.5,
    folds: Annotated[int, typer.Option("--folds", help="Cross-validation folds, grouped by base question.")] = 5,
    resamples: Annotated[int, typer.Option("--resamples", help="Bootstrap draws of the base questions.")] = 1000,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the folds, the bootstrap and XGBoost.")] = 0,
    more: Annotated[list[Path] | None, typer.Argument(help="Further results.json files (--results R1 R2 ...).")] = None,
) -> None:
    """Extract the 24 prompt features, fit the XGBoost predictor of insightful propensity with grouped CV, and
    write predictor.json/.md, features.csv and the SHAP importance and interaction PNGs."""
    from phr.eval.predictor import PredictorSettings
    from phr.eval.predictor_run import analyze_predictor

    if target not in ("pooled", "per_model"):
        raise typer.BadParameter("use pooled or per_model", param_hint="--target")
    settings = PredictorSettings(target=target, threshold=threshold, folds=folds, resamples=resamples, seed=seed)
    report, paths = analyze_predictor(
        [*results, *(more or [])], dataset, judge=spec_or_none(judge), out=out, settings=settings, progress=typer.echo
    )
    top = ", ".join(f"{i.feature} {100 * i.share:.1f}%" for i in report.importance[:3])
    auc = "undefined" if report.auroc.value is None else f"{report.auroc.value:.3f}"
    acc = "undefined" if report.accuracy.value is None else f"{report.accuracy.value:.3f}"
    typer.echo(f"predictor: {report.rows} rows, {report.questions} questions, AUROC {auc}, accuracy {acc}; top: {top}")
    for p in paths.values():
        typer.echo(f"  {p}")


analyze_hr1.register(analyze_app)  # `analyze paraphrases` (Hallucination-R1 diagnostics)
