"""`phr-publish analyze predictor`: results + dataset -> features, predictor, plots, JSON and Markdown.

    paths = analyze_predictor([Path("runs/a/results.json")], "phrbench", judge="openai:gpt-4o", out=Path("pred"))

Reads each result's ``samples.jsonl`` (named by ``samples_file``, checked against its SHA-256), the dataset's
B+H rows, extracts the 24 features (``phr.eval.features``), fits the predictor (``phr.eval.predictor``) and
writes, atomically, ``predictor.json``, ``predictor.md``, ``features.csv``, ``shap_importance.png`` and
``shap_interactions.png`` into ``out``.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import math
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from phr.core.errors import UsageError
from phr.core.figures import figure, save_png
from phr.core.fs import atomic_dir
from phr.eval.dataset import load_eval_dataset
from phr.eval.features import FEATURES, LABELS, FeatureTable, extract_features
from phr.eval.predictor import PredictorReport, PredictorSettings, fit_predictor, propensity
from phr.eval.results import ResultsError, read_result_file
from phr.eval.scoring import SampleScore

REPORT_JSON, REPORT_MD, FEATURES_CSV = "predictor.json", "predictor.md", "features.csv"
IMPORTANCE_PNG, INTERACTIONS_PNG = "shap_importance.png", "shap_interactions.png"


def read_samples(results_path: Path) -> tuple[str, list[SampleScore]]:
    """(model, its sample records) of a results.json; a missing or altered samples file is an error naming it."""
    res = read_result_file(results_path)
    if res.samples_file is None:
        raise ResultsError(f"{results_path}: names no samples_file (per-response records are needed)")
    path = results_path.parent / res.samples_file.path
    if not path.is_file():
        raise ResultsError(f"{results_path}: samples file {path} not found")
    body = path.read_bytes()
    if res.samples_file.sha256 and hashlib.sha256(body).hexdigest() != res.samples_file.sha256:
        raise ResultsError(f"{path}: SHA-256 differs from the one {results_path} records")
    samples = []
    for n, line in enumerate(body.decode("utf-8").splitlines(), 1):
        if line.strip():
            try:
                samples.append(SampleScore.from_dict(json.loads(line)))
            except (ValueError, TypeError) as e:
                raise ResultsError(f"{path}:{n}: not a sample record: {e}") from None
    return res.model, samples


def training_rows(table: FeatureTable, target: dict[tuple[str | None, str], float]):
    """X, y, groups and row ids: a feature row per target key whose prompt is in the table."""
    index = {iid: k for k, iid in enumerate(table.instance_ids)}
    unknown = sorted({iid for _, iid in target if iid not in index})
    if unknown:
        raise UsageError(f"judged B+H samples of instance(s) not in the dataset: {', '.join(unknown[:5])}")
    X = table.matrix()
    keys = list(target)
    rows = [index[iid] for _, iid in keys]
    ids = [iid if m is None else f"{m}::{iid}" for m, iid in keys]
    return X[rows], np.array([target[k] for k in keys]), [table.question_ids[r] for r in rows], ids


def features_csv(table: FeatureTable) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["instance_id", "question_id", *FEATURES])
    for iid, qid, row in zip(table.instance_ids, table.question_ids, table.rows):
        w.writerow([iid, qid, *("" if math.isnan(row[f]) else repr(row[f]) for f in FEATURES)])
    return buf.getvalue()


def _figure(width: float, height: float):
    return figure(width, height, dpi=100, layout="constrained")


def plot_importance(report: PredictorReport, path: Path) -> None:
    """Horizontal bars: each feature's share of the total mean |SHAP|, largest on top."""
    imp = report.importance
    fig = _figure(7.5, 0.28 * len(imp) + 1.2)
    ax = fig.add_subplot()
    ax.barh([LABELS.get(i.feature, i.feature) for i in reversed(imp)], [100 * i.share for i in reversed(imp)])
    ax.set_xlabel("share of total mean |SHAP| (%)")
    ax.set_title("Global feature importance (SHAP)")
    save_png(fig, path)


def plot_interactions(report: PredictorReport, path: Path) -> None:
    """Heat map of the mean |SHAP interaction| per feature pair (diagonal blanked: main effects)."""
    m = np.array(report.interactions, dtype=float)
    np.fill_diagonal(m, np.nan)
    labels = [LABELS.get(f, f) for f in report.features]
    fig = _figure(9.5, 8.5)
    ax = fig.add_subplot()
    im = ax.imshow(m, cmap="viridis")
    ax.set_xticks(range(len(labels)), labels, rotation=90, fontsize=7)
    ax.set_yticks(range(len(labels)), labels, fontsize=7)
    ax.set_title("Pairwise SHAP interactions (mean |value|)")
    fig.colorbar(im, ax=ax, shrink=0.7)
    save_png(fig, path)


def _est(e) -> str:
    if e.value is None:
        return "undefined (one class only)"
    ci = f" [{e.ci_low:.3f}, {e.ci_high:.3f}]" if e.ci_low is not None else ""
    return f"{e.value:.3f}{ci}"


def markdown(report: PredictorReport) -> str:
    s, ref = report.settings, report.paper_reference
    lines = [
        "# Insightful-trajectory predictor (PHRBench §5.3)",
        "",
        f"{report.rows} rows ({s.target} target), {report.questions} base questions, {report.positives} positive "
        f"(propensity > {s.threshold}); XGBRegressor, {s.folds}-fold CV grouped by base question, seed {s.seed}.",
        "",
        f"- AUROC: {_est(report.auroc)} (paper: {ref['auroc']})",
        f"- accuracy at {s.threshold}: {_est(report.accuracy)} (paper: {ref['accuracy']})",
        f"- {int(100 * s.confidence)}% percentile intervals from {s.resamples} bootstrap draws of the base questions",
        "",
        "| feature | SHAP share |",
        "|---|---|",
        *(f"| {LABELS.get(i.feature, i.feature)} | {100 * i.share:.1f}% |" for i in report.importance),
        "",
        "Largest pairwise interactions (mean |SHAP interaction|):",
        "",
        *(f"- {LABELS.get(p.a, p.a)} x {LABELS.get(p.b, p.b)}: {p.value:.4f}" for p in report.top_interactions[:5]),
        "",
        f"Figures: `{IMPORTANCE_PNG}`, `{INTERACTIONS_PNG}`; data: `{REPORT_JSON}`, `{FEATURES_CSV}`.",
    ]
    if report.notes:
        lines += ["", *(f"- {k}: {v}" for k, v in report.notes.items())]
    return "\n".join(lines) + "\n"


def predictor_inputs(results: Sequence[Path], dataset: str | Path, settings: PredictorSettings | None = None):
    """The analysis's inputs, read and checked (nothing is called): the samples per model, the propensity target
    and its counts, the dataset, and the B+H prompts whose features are extracted."""
    settings = settings or PredictorSettings()
    by_model: dict[str, list[SampleScore]] = {}
    for p in results:
        model, samples = read_samples(Path(p))
        if model in by_model:
            raise UsageError(f"{p}: a second result for model {model!r}")
        by_model[model] = samples
    target, counts = propensity(by_model, settings.target)
    if not target:
        raise UsageError("no judged B+H samples in the results: evaluate with a resolution judge (--judge)")
    ds = load_eval_dataset(dataset)
    wanted = {iid for _, iid in target}
    instances = [i for i in ds.instances if i.id in wanted]
    return by_model, target, counts, ds, instances


def analyze_predictor(
    results: Sequence[Path],
    dataset: str | Path,
    *,
    judge: str | None,
    out: Path,
    settings: PredictorSettings | None = None,
    progress: Callable[[str], None] | None = None,
) -> tuple[PredictorReport, dict[str, Path]]:
    """Run the whole analysis and write its files into ``out`` (replaced atomically)."""
    settings = settings or PredictorSettings()
    say = progress or (lambda _m: None)
    by_model, target, counts, ds, instances = predictor_inputs(results, dataset, settings)
    say(f"features of {len(instances)} B+H prompts" + (f" (judge {judge})" if judge else " (no judge)"))
    table = extract_features(instances, judge)
    X, y, groups, _ = training_rows(table, target)
    report = fit_predictor(X, y, groups, FEATURES, settings, progress=say)
    report = report.model_copy(
        update={
            "notes": {
                "models": sorted(by_model),
                "dataset": f"{ds.id}@{ds.revision}",
                "judged_samples": counts["judged"],
                "unjudged_samples": counts["unjudged"],
                "feature_judge": table.judge,
                "feature_prompt_sha256": table.judge_prompt_sha256,
                "prompts_without_semantic_features": len(table.unjudged),
            }
        }
    )
    out = Path(out)
    with atomic_dir(out) as tmp:
        (tmp / REPORT_JSON).write_text(report.model_dump_json(indent=2) + "\n", encoding="utf-8")
        (tmp / REPORT_MD).write_text(markdown(report), encoding="utf-8")
        (tmp / FEATURES_CSV).write_text(features_csv(table), encoding="utf-8")
        plot_importance(report, tmp / IMPORTANCE_PNG)
        plot_interactions(report, tmp / INTERACTIONS_PNG)
    names = (REPORT_JSON, REPORT_MD, FEATURES_CSV, IMPORTANCE_PNG, INTERACTIONS_PNG)
    return report, {n: out / n for n in names}
