"""The insightful-trajectory predictor of PHRBench §5.3 (Appendix E lost: the choices are settings, documented in
docs/analyses.md).

    target = propensity(samples_by_model, mode="pooled")          # (model, instance_id) -> share insightful
    report = fit_predictor(X, y, groups, FEATURES, PredictorFit())  # phr.config.ops: the fitting choices

Target: a prompt's insightful propensity, the share of its judged B+H responses that are insightful
(Heuristic Correction and correct), pooled over the models (one row per prompt) or per model (one row per
(model, prompt)). Model: ``xgboost.XGBRegressor``. Validation: K-fold cross-validation grouped by base question
(a question's prompts are all in one test fold). Out-of-fold predictions give AUROC and accuracy against the
target binarised at ``threshold`` (positive: propensity > threshold; predicted positive: prediction >
threshold), with percentile bootstrap intervals over base questions. A model refitted on every row gives the
SHAP ``TreeExplainer`` global importance (shares of the total mean |SHAP|) and the mean |interaction| per pair.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Literal

import numpy as np
from pydantic import BaseModel

from phr.bench.conditions import Condition
from phr.config.ops import PredictorFit
from phr.eval.bootstrap import QuestionResampler
from phr.eval.scoring import SampleScore

if TYPE_CHECKING:  # pragma: no cover - xgboost is imported where a model is fitted
    from xgboost import XGBRegressor

TargetMode = Literal["pooled", "per_model"]

#: the paper's reported figures (§5.3, Figure 7): documentation, never a test
PAPER_REFERENCE = {
    "auroc": 0.847,
    "accuracy": 0.863,
    "shap_share": {"total_prompt_length": 0.207, "domain_rule_violation": 0.074, "error_locality": 0.072},
    "largest_interaction": {"pair": ["total_prompt_length", "question_length"], "value": 0.020},
}


class Estimate(BaseModel):
    value: float | None
    ci_low: float | None = None
    ci_high: float | None = None


class Importance(BaseModel):
    feature: str
    share: float  # of the total mean |SHAP| over all features
    mean_abs_shap: float


class Interaction(BaseModel):
    a: str
    b: str
    value: float  # mean |SHAP interaction| of the pair (one off-diagonal entry; the pair's total is twice it)


class PredictorReport(BaseModel):
    settings: PredictorFit  # the fitting choices only (an AnalyzePredictorConfig's other fields are not kept)
    rows: int
    questions: int
    positives: int
    features: list[str]
    auroc: Estimate
    accuracy: Estimate
    folds: list[list[str]]  # the base questions of each test fold
    importance: list[Importance]  # largest share first
    interactions: list[list[float]]  # features x features, mean |SHAP interaction|, diagonal = main effects
    top_interactions: list[Interaction]
    paper_reference: dict = PAPER_REFERENCE
    notes: dict = {}


def propensity(
    samples_by_model: Mapping[str, Iterable[SampleScore]], mode: TargetMode = "pooled"
) -> tuple[dict[tuple[str | None, str], float], dict[str, int]]:
    """The insightful share of each prompt's judged B+H responses: keys ``(None, instance_id)`` pooled over
    the models, or ``(model, instance_id)`` per model. Also the counts: judged and unjudged B+H samples."""
    num: dict[tuple[str | None, str], int] = defaultdict(int)
    den: dict[tuple[str | None, str], int] = defaultdict(int)
    counts = {"judged": 0, "unjudged": 0}
    for model, samples in samples_by_model.items():
        for s in samples:
            if s.condition != Condition.B_H.value:
                continue
            if s.insightful is None or s.resolution is None:
                counts["unjudged"] += 1
                continue
            counts["judged"] += 1
            key = (model if mode == "per_model" else None, s.instance_id)
            den[key] += 1
            num[key] += bool(s.insightful)
    return {k: num[k] / den[k] for k in sorted(den, key=lambda k: (k[0] or "", k[1]))}, counts


def grouped_folds(groups: Sequence[str], folds: int, seed: int = 0) -> list[tuple[np.ndarray, np.ndarray]]:
    """(train, test) row indices of K folds grouped by ``groups`` (sklearn's shuffled GroupKFold): no group has
    rows in two test folds, nor in the train and test rows of one fold."""
    from sklearn.model_selection import GroupKFold

    n_groups = len(set(groups))
    if n_groups < folds:
        raise ValueError(f"{folds} folds need at least {folds} base questions, got {n_groups}")
    splitter = GroupKFold(n_splits=folds, shuffle=True, random_state=seed)
    idx = np.zeros(len(groups))
    return [(tr, te) for tr, te in splitter.split(idx, groups=np.asarray(groups))]


def _regressor(settings: PredictorFit) -> XGBRegressor:
    from xgboost import XGBRegressor

    return XGBRegressor(**settings.xgb_params())


def _auroc(labels: np.ndarray, scores: np.ndarray, weights: np.ndarray | None = None) -> float | None:
    from sklearn.metrics import roc_auc_score

    keep = weights > 0 if weights is not None else np.ones(len(labels), bool)
    if len(set(labels[keep].tolist())) < 2:
        return None
    return float(roc_auc_score(labels[keep], scores[keep], sample_weight=None if weights is None else weights[keep]))


def _accuracy(labels: np.ndarray, predicted: np.ndarray, weights: np.ndarray | None = None) -> float | None:
    w = np.ones(len(labels)) if weights is None else weights
    return float(np.sum(w * (labels == predicted)) / np.sum(w)) if np.sum(w) > 0 else None


def _interval(draws: list[float | None], confidence: float) -> tuple[float | None, float | None]:
    ok = np.array([d for d in draws if d is not None and np.isfinite(d)])
    if ok.size < 2:
        return None, None
    alpha = (1 - confidence) / 2
    return round(float(np.quantile(ok, alpha)), 6), round(float(np.quantile(ok, 1 - alpha)), 6)


def bootstrap_metrics(
    labels: np.ndarray, scores: np.ndarray, groups: Sequence[str], settings: PredictorFit
) -> tuple[Estimate, Estimate]:
    """AUROC and accuracy with percentile intervals from ``resamples`` draws of the base questions (a drawn
    question brings all its rows, weighted by how often it was drawn)."""
    predicted = (scores > settings.threshold).astype(int)
    rs = QuestionResampler(groups, resamples=settings.resamples, seed=settings.seed)
    col = np.array([rs.index[g] for g in groups])
    aucs, accs = [], []
    for w in rs.weights:
        rw = w[col]
        aucs.append(_auroc(labels, scores, rw))
        accs.append(_accuracy(labels, predicted, rw))
    auc, acc = _auroc(labels, scores), _accuracy(labels, predicted)
    return (
        Estimate(
            value=None if auc is None else round(auc, 6),
            **dict(zip(("ci_low", "ci_high"), _interval(aucs, settings.confidence))),
        ),
        Estimate(
            value=None if acc is None else round(acc, 6),
            **dict(zip(("ci_low", "ci_high"), _interval(accs, settings.confidence))),
        ),
    )


def shap_analysis(model: XGBRegressor, X: np.ndarray, features: Sequence[str]) -> tuple[list[Importance], np.ndarray]:
    """Global importance (shares of the total mean |SHAP|, largest first) and the mean |interaction| matrix."""
    import shap

    explainer = shap.TreeExplainer(model)
    values = np.asarray(explainer.shap_values(X))
    mean_abs = np.abs(values).mean(axis=0)
    total = float(mean_abs.sum())
    imp = [
        Importance(feature=f, share=round(float(m) / total, 6) if total > 0 else 0.0, mean_abs_shap=round(float(m), 6))
        for f, m in zip(features, mean_abs)
    ]
    inter = np.abs(np.asarray(explainer.shap_interaction_values(X))).mean(axis=0)
    return sorted(imp, key=lambda i: (-i.share, i.feature)), inter


def top_pairs(matrix: np.ndarray, features: Sequence[str], k: int = 10) -> list[Interaction]:
    pairs = [
        Interaction(a=features[i], b=features[j], value=round(float(matrix[i, j]), 6))
        for i in range(len(features))
        for j in range(i + 1, len(features))
    ]
    return sorted(pairs, key=lambda p: (-p.value, p.a, p.b))[:k]


def fit_predictor(
    X: np.ndarray,
    y: np.ndarray,
    groups: Sequence[str],
    features: Sequence[str],
    settings: PredictorFit | None = None,
    *,
    progress: Callable[[str], None] | None = None,
) -> PredictorReport:
    """Grouped K-fold out-of-fold predictions, their AUROC/accuracy with bootstrap intervals, and SHAP on a model
    refitted on every row. ``progress(message)`` is told each step."""
    settings = settings or PredictorFit()
    say = progress or (lambda _m: None)
    X, y = np.asarray(X, dtype=np.float64), np.asarray(y, dtype=np.float64)
    if X.shape != (len(y), len(features)) or len(groups) != len(y):
        raise ValueError(f"shapes disagree: X {X.shape}, y {len(y)}, groups {len(groups)}, features {len(features)}")
    oof = np.full(len(y), np.nan)
    splits = grouped_folds(groups, settings.folds, settings.seed)
    for k, (tr, te) in enumerate(splits, 1):
        say(f"fold {k}/{len(splits)}: training on {len(tr)} rows, testing on {len(te)}")
        model = _regressor(settings).fit(X[tr], y[tr])
        oof[te] = model.predict(X[te])
    labels = (y > settings.threshold).astype(int)
    say(f"bootstrap: {settings.resamples} draws of {len(set(groups))} base questions")
    auroc, accuracy = bootstrap_metrics(labels, oof, groups, settings)
    say("SHAP: refit on every row, TreeExplainer values and interactions")
    importance, inter = shap_analysis(_regressor(settings).fit(X, y), X, features)
    g = np.asarray(groups)
    return PredictorReport(
        settings=settings,
        rows=len(y),
        questions=len(set(groups)),
        positives=int(labels.sum()),
        features=list(features),
        auroc=auroc,
        accuracy=accuracy,
        folds=[sorted(set(g[te].tolist())) for _, te in splits],
        importance=importance,
        interactions=[[round(float(v), 6) for v in row] for row in inter],
        top_interactions=top_pairs(inter, features),
    )
