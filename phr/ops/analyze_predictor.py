"""`phr-publish analyze predictor`: results + dataset -> features, predictor, plots, JSON and Markdown.

    from phr.api import plan, run
    cfg = AnalyzePredictorConfig(results=[Path("runs/a/results.json")], dataset="phrbench", out=Path("pred"))
    result = run(plan(cfg))              # result.report, result.paths

``plan(cfg)`` reads and checks the inputs and lists the feature judge's calls (nothing is called); ``run(plan)``

reads each result's ``samples.jsonl`` (named by ``samples_file``, checked against its SHA-256), the dataset's
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
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from phr.bench.instance import Instance
from phr.config.defaults import model_or_none
from phr.config.ops import AnalyzePredictorConfig, PredictorFit
from phr.core.errors import MissingAPIKeyError, UsageError
from phr.core.figures import figure, save_png
from phr.core.fs import atomic_dir
from phr.eval.dataset import EvalDataset, load_eval_dataset
from phr.eval.features import FEATURES, LABELS, SEMANTIC_JUDGE, FeatureTable, extract_features, judge_item
from phr.eval.predictor import Estimate, PredictorReport, fit_predictor, propensity
from phr.eval.results import ResultsError, read_result_file
from phr.eval.scoring import SampleScore
from phr.llm.preflight import writable
from phr.ops.plan import Plan

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


def training_rows(
    table: FeatureTable, target: dict[tuple[str | None, str], float]
) -> tuple[np.ndarray, np.ndarray, list[str], list[str]]:
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


def _figure(width: float, height: float) -> Any:  # a matplotlib Figure
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


def _est(e: Estimate) -> str:
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


@dataclass
class PredictorInputs:
    """The analysis's inputs, read and checked: the samples per model, the propensity target and its counts, the
    dataset, and the B+H prompts whose features are extracted."""

    by_model: dict[str, list[SampleScore]]
    target: dict[tuple[str | None, str], float]
    counts: dict[str, int]
    dataset: EvalDataset
    instances: list[Instance]


def predictor_inputs(results: Sequence[Path], dataset: str | Path, fit: PredictorFit | None = None) -> PredictorInputs:
    """Read and check the analysis's inputs (nothing is called)."""
    fit = fit or PredictorFit()
    by_model: dict[str, list[SampleScore]] = {}
    for p in results:
        model, samples = read_samples(Path(p))
        if model in by_model:
            raise UsageError(f"{p}: a second result for model {model!r}")
        by_model[model] = samples
    target, counts = propensity(by_model, fit.target)
    if not target:
        raise UsageError("no judged B+H samples in the results: evaluate with a resolution judge (--judge)")
    ds = load_eval_dataset(dataset)
    wanted = {iid for _, iid in target}
    instances = [i for i in ds.instances if i.id in wanted]
    return PredictorInputs(by_model, target, counts, ds, instances)


@dataclass
class PredictorPlan(Plan[AnalyzePredictorConfig]):
    """``analyze predictor`` resolved: the inputs read (None only in a plan with problems) and the feature judge
    (None: the 12 semantic features are left missing)."""

    inputs: PredictorInputs | None = None
    judge: str | None = None


@dataclass
class PredictorResult:
    report: PredictorReport
    paths: dict[str, Path] = field(default_factory=dict)

    def lines(self) -> list[str]:
        """The summary a command prints: rows, questions, AUROC, accuracy, the top features and the files."""
        r = self.report
        top = ", ".join(f"{i.feature} {100 * i.share:.1f}%" for i in r.importance[:3])
        auc = "undefined" if r.auroc.value is None else f"{r.auroc.value:.3f}"
        acc = "undefined" if r.accuracy.value is None else f"{r.accuracy.value:.3f}"
        head = f"predictor: {r.rows} rows, {r.questions} questions, AUROC {auc}, accuracy {acc}; top: {top}"
        return [head, *(f"  {p}" for p in self.paths.values())]


def _check_judge(judge: str) -> None:
    """Fail at once when the feature judge cannot run here (no API key), naming the flags that work offline."""
    if model_or_none(judge) is None:
        return
    from phr.llm.spec import make_provider

    try:
        make_provider(judge)
    except MissingAPIKeyError as e:
        raise MissingAPIKeyError(
            f"--judge {judge}: {e} Offline: --judge none (the 12 semantic features are left missing) or "
            "--judge local:smollm2."
        ) from None


def plan(cfg: AnalyzePredictorConfig) -> PredictorPlan:
    """The inputs read and checked, the feature judge's calls (one per B+H prompt, with the share already cached)
    and the output folder checked; nothing is called."""
    _check_judge(cfg.judge)
    p = PredictorPlan(config=cfg, judge=model_or_none(cfg.judge))
    pf = p.preflight
    pf.model("judge", cfg.judge)
    if not pf.problems:
        p.inputs = pf.check("inputs", lambda: predictor_inputs(cfg.results, cfg.dataset, cfg))
        if p.inputs is not None:
            _plan_features(p)
    pf.check("--out", lambda: writable(cfg.out))
    return p


def _plan_features(p: PredictorPlan) -> None:
    from phr.llm import LLM

    assert p.inputs is not None
    instances = p.inputs.instances
    p.preflight.note(f"features of {len(instances)} B+H prompts (12 structural, 12 semantic)")
    if p.judge is None:
        p.preflight.note("no feature judge: the 12 semantic features are left missing")
        return
    provider = LLM(p.judge, progress=False, show_summary=False).provider
    p.preflight.calls(p.judge, SEMANTIC_JUDGE.requests([judge_item(i) for i in instances]), provider=provider)


def _say(message: str) -> None:
    print(message, file=sys.stdout, flush=True)


def run(p: PredictorPlan) -> PredictorResult:
    """Extract the features, fit the predictor and write its files into ``out`` (replaced atomically); each step
    is told on stdout."""
    cfg, inputs, judge = p.config, p.inputs, p.judge
    assert isinstance(cfg, AnalyzePredictorConfig) and inputs is not None
    _say(f"features of {len(inputs.instances)} B+H prompts" + (f" (judge {judge})" if judge else " (no judge)"))
    table = extract_features(inputs.instances, judge)
    X, y, groups, _ = training_rows(table, inputs.target)
    report = fit_predictor(X, y, groups, FEATURES, cfg, progress=_say)
    ds = inputs.dataset
    notes = {
        "models": sorted(inputs.by_model),
        "dataset": f"{ds.id}@{ds.revision}",
        "judged_samples": inputs.counts["judged"],
        "unjudged_samples": inputs.counts["unjudged"],
        "feature_judge": table.judge,
        "feature_prompt_sha256": table.judge_prompt_sha256,
        "prompts_without_semantic_features": len(table.unjudged),
    }
    report = report.model_copy(update={"notes": notes})
    out = Path(cfg.out)
    with atomic_dir(out) as tmp:
        (tmp / REPORT_JSON).write_text(report.model_dump_json(indent=2) + "\n", encoding="utf-8")
        (tmp / REPORT_MD).write_text(markdown(report), encoding="utf-8")
        (tmp / FEATURES_CSV).write_text(features_csv(table), encoding="utf-8")
        plot_importance(report, tmp / IMPORTANCE_PNG)
        plot_interactions(report, tmp / INTERACTIONS_PNG)
    names = (REPORT_JSON, REPORT_MD, FEATURES_CSV, IMPORTANCE_PNG, INTERACTIONS_PNG)
    return PredictorResult(report, {n: out / n for n in names})
