"""PHRBench as lm-evaluation-harness tasks: the functions the task YAML files name (``lm_eval_tasks/phrbench``).

lm-eval gives ``load`` the values of ``--metadata`` (JSON) and ``--model_args``: ``dataset`` (a built folder or a
repo id, default ``phrbench``), ``hub``, ``revision`` and ``limit`` (the first N base questions, as ``eval
phrbench --limit``; lm-eval's own ``--limit`` counts instances and splits a question's conditions). Each task's
``dataset_kwargs`` say its conditions.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from phr.bench.metrics import ACCURACY, name_of
from phr.config.ops import DEFAULT_DATASET
from phr.eval.dataset import CONDITIONS
from phr.eval.harness.common import HEADLINE, headline, instance_rows, score_row
from phr.eval.scoring import SampleScore

__all__ = [
    "accuracy_b",
    "accuracy_bh",
    "accuracy_bt",
    "delta_accuracy",
    "doc_to_target",
    "doc_to_text",
    "load",
    "process_results",
    "process_results_headline",
    "retention",
]


def load(
    dataset: str = DEFAULT_DATASET,
    hub: str | None = None,
    revision: str | None = None,
    limit: int | None = None,
    conditions: str = ",".join(CONDITIONS),
    **_: Any,
) -> Any:
    """The instances as a ``DatasetDict`` with one split, ``test`` (lm-eval's ``custom_dataset``)."""
    from datasets import Dataset, DatasetDict

    rows = instance_rows(dataset, conditions=conditions, hub=hub, revision=revision, limit=limit)
    return DatasetDict({"test": Dataset.from_list(rows)})


def doc_to_text(doc: dict) -> str:
    """The instance's prompt: the model's one user turn (``--apply_chat_template`` wraps it as ``eval phrbench``
    does)."""
    return str(doc["prompt"])


def doc_to_target(doc: dict) -> str:
    return str(doc.get("answer") or "")


def _responses(results: Sequence[Any]) -> list[str]:
    """The responses of one document: ``[text]`` (one sample) or ``[[text, ...]]`` (``take_first_k``)."""
    if len(results) == 1 and isinstance(results[0], list | tuple):
        return [str(r) for r in results[0]]
    return [str(r) for r in results]


def _scored(doc: dict, results: Sequence[Any]) -> list[dict]:
    return [s.as_dict() for s in score_row(doc, _responses(results))]


def process_results(doc: dict, results: Sequence[Any]) -> dict[str, list[dict]]:
    """A one-condition task: the document's scored samples under its condition's accuracy."""
    return {name_of(ACCURACY, doc["condition"]): _scored(doc, results)}


def process_results_headline(doc: dict, results: Sequence[Any]) -> dict[str, list[dict]]:
    """The all-conditions task: the scored samples under every headline metric (each aggregation reads the
    conditions it needs from them, so lm-eval counts every metric over the same documents)."""
    scored = _scored(doc, results)
    return dict.fromkeys(HEADLINE, scored)


def _metric(name: str, items: Sequence[Sequence[dict]]) -> float:
    scores = [SampleScore.from_dict(d) for per_doc in items for d in per_doc]
    return headline(scores).get(name, float("nan"))


def accuracy_b(items: Sequence[Sequence[dict]]) -> float:
    return _metric("accuracy_b", items)


def accuracy_bt(items: Sequence[Sequence[dict]]) -> float:
    return _metric("accuracy_bt", items)


def accuracy_bh(items: Sequence[Sequence[dict]]) -> float:
    return _metric("accuracy_bh", items)


def delta_accuracy(items: Sequence[Sequence[dict]]) -> float:
    """H - T: accuracy under B+H minus under B+T (``phr.eval.aggregate``)."""
    return _metric("delta_accuracy", items)


def retention(items: Sequence[Sequence[dict]]) -> float:
    """H / T: accuracy under B+H over accuracy under B+T."""
    return _metric("retention", items)
