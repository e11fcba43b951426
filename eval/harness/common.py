"""What the lm-evaluation-harness and inspect_ai tasks share with ``eval phrbench``: the instances (the same
selection as ``--limit``), per-response scoring (``AccuracyScorer``: extraction, grading, the sandbox for code)
and the headline metrics (``phr.eval.aggregate``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import cache
from typing import Any

from phr.bench.instance import Instance
from phr.bench.metrics import ACCURACY, ACCURACY_H_MINUS_T, RETENTION, name_of
from phr.config.ops import DEFAULT_DATASET
from phr.eval.dataset import CONDITIONS, check_conditions, load_eval_dataset
from phr.eval.scorers import AccuracyScorer
from phr.eval.scoring import SampleScore, score_responses

#: the metrics the harness tasks report, as a result names them: accuracy per condition, H - T, retention H / T
HEADLINE = (*(name_of(ACCURACY, c) for c in CONDITIONS), ACCURACY_H_MINUS_T, RETENTION)


def instance_rows(
    dataset: str = DEFAULT_DATASET,
    *,
    conditions: str = ",".join(CONDITIONS),
    hub: str | None = None,
    revision: str | None = None,
    limit: int | None = None,
) -> list[dict[str, Any]]:
    """The instances ``eval phrbench --dataset DATASET --conditions ... --limit N`` runs, as plain rows (the data
    files' columns; ``prompt`` is the text the model gets as its one user turn)."""
    from phr.eval.runner import select_instances

    ds = load_eval_dataset(dataset, revision=revision, hub=hub)
    chosen = select_instances(ds, check_conditions(conditions), None if limit is None else int(limit))
    return [{**inst.model_dump(), "options": list(inst.options)} for inst in chosen]


def instance_of(row: Mapping[str, Any]) -> Instance:
    """The instance of a row ``instance_rows`` gave (a harness may hand it back with extra keys)."""
    return Instance.from_row(dict(row))


@cache
def _accuracy() -> AccuracyScorer:
    return AccuracyScorer(progress=False)


def score_row(row: Mapping[str, Any], responses: Sequence[str]) -> list[SampleScore]:
    """Samples 0..n-1 of one instance scored as ``eval phrbench`` scores them with ``--scorer none --judge none
    --grader none``: the same extraction and grading, code run only in our sandbox."""
    inst = instance_of(row)
    return score_responses(
        [inst], {(inst.id, k): r for k, r in enumerate(responses)}, samples=len(responses), scorers=[_accuracy()]
    )


def headline(scores: Sequence[SampleScore]) -> dict[str, float]:
    """The headline metrics of scored samples (``HEADLINE``; those its conditions allow), computed by
    ``phr.eval.aggregate`` as for a run's result."""
    from phr.eval.aggregate import aggregate

    metrics = aggregate(scores, bootstrap=None).metrics
    return {k: metrics[k] for k in HEADLINE if k in metrics}
