"""`phr-publish analyze ...`: the papers' analyses (docs/analyses.md).

- ``analyze predictor``: the insightful-trajectory predictor of PHRBench §5.3 (phr.eval.predictor_run).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from phr.cli import analyze_hr1
from phr.cli.common import new_app, spec_or_none
from phr.cli.options import DryRun, bind
from phr.config.ops import AnalyzePredictorConfig
from phr.llm.preflight import Preflight, writable

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
    from phr.eval.predictor import PredictorSettings
    from phr.eval.predictor_run import analyze_predictor, predictor_inputs

    settings = PredictorSettings(
        target=cfg.target, threshold=cfg.threshold, folds=cfg.folds, resamples=cfg.resamples, seed=cfg.seed
    )
    _check_judge(cfg.judge)
    results = [*cfg.results, *(more or [])]
    pf = Preflight()
    pf.model("judge", cfg.judge)
    if not pf.problems:
        inputs = pf.check("inputs", lambda: predictor_inputs(results, cfg.dataset, settings))
        if inputs is not None:
            _plan_features(pf, cfg.judge, inputs[4])
    pf.check("--out", lambda: writable(cfg.out))
    pf.finish(dry_run, echo=typer.echo)
    if dry_run:
        return
    report, paths = analyze_predictor(
        results,
        cfg.dataset,
        judge=spec_or_none(cfg.judge),
        out=cfg.out,
        settings=settings,
        progress=typer.echo,
    )
    top = ", ".join(f"{i.feature} {100 * i.share:.1f}%" for i in report.importance[:3])
    auc = "undefined" if report.auroc.value is None else f"{report.auroc.value:.3f}"
    acc = "undefined" if report.accuracy.value is None else f"{report.accuracy.value:.3f}"
    typer.echo(f"predictor: {report.rows} rows, {report.questions} questions, AUROC {auc}, accuracy {acc}; top: {top}")
    for p in paths.values():
        typer.echo(f"  {p}")


def _plan_features(pf: Preflight, judge: str, instances) -> None:
    """The feature judge's calls: one per B+H prompt, exact (with the share already cached)."""
    from phr.eval.features import SEMANTIC_JUDGE, judge_item
    from phr.llm import LLM

    pf.note(f"features of {len(instances)} B+H prompts (12 structural, 12 semantic)")
    if spec_or_none(judge) is None:
        pf.note("no feature judge: the 12 semantic features are left missing")
        return
    provider = LLM(judge, progress=False, show_summary=False).provider
    pf.calls(judge, SEMANTIC_JUDGE.requests([judge_item(i) for i in instances]), provider=provider)


def _check_judge(judge: str) -> None:
    """Fail at once when the feature judge cannot run here (no API key), naming the flags that work offline."""
    if spec_or_none(judge) is None:
        return
    from phr.core.errors import MissingAPIKeyError
    from phr.llm.spec import make_provider

    try:
        make_provider(judge)
    except MissingAPIKeyError as e:
        raise MissingAPIKeyError(
            f"--judge {judge}: {e} Offline: --judge none (the 12 semantic features are left missing) or "
            "--judge local:smollm2."
        ) from None


analyze_hr1.register(analyze_app)  # `analyze paraphrases` (Hallucination-R1 diagnostics)
