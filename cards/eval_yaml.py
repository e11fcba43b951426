"""The benchmark's ``eval.yaml`` (Hugging Face Hub "Evaluation Results", benchmark datasets) and the matching
``.eval_results/*.yaml`` entries for model repos.

Format followed: the Hub documentation page "Evaluation Results" (``docs/hub/eval-results.md`` of
huggingface/hub-docs, https://huggingface.co/docs/hub/eval-results), section "Eval.yaml specification":

- top level: ``name`` (display name), ``description``, ``evaluation_framework`` (one id from the Hub's enum,
  ``EVALUATION_FRAMEWORKS`` in huggingface.js ``packages/tasks/src/eval.ts``; e.g. ``inspect-ai``), ``tasks[]``;
- each task: ``id`` (required; one leaderboard per task), ``config`` and ``split`` (optional; default config,
  ``test``); with ``evaluation_framework: inspect-ai`` also ``field_spec`` (``input``, ``target``, optional
  ``choices`` / ``input_image``), ``solvers`` and ``scorers`` (``name`` + optional ``args``), as in the page's
  HLE example.

A model repo reports one value per task in ``.eval_results/<name>.yaml``: a list of ``{dataset: {id, task_id,
revision?}, value, date?, source?: {url, name?, user?, org?}, notes?}``; ``eval_results_yaml`` builds it with
``huggingface_hub.EvalResultEntry`` / ``eval_result_entries_to_yaml`` where the installed huggingface_hub has them
(the same dicts written by hand otherwise).

PHRBench's leaderboards: one task per metric, since a Hub task carries exactly one value per model. Accuracy per
condition on its own config (``accuracy_b`` on ``baseline``, ``accuracy_bt`` on ``truthful``, ``accuracy_bh`` on
``hallucinated``) and the trajectory metrics ``OL``, ``UI``, ``BUF``, ``BC`` on ``all`` (they compare a model's
answers across B, B+T and B+H of the same question). Each task also lists its metric id under ``metrics`` (an
extension key beyond the Hub's documented fields, as community benchmark repos use it; ``metrics=False``
leaves it out). The ``inspect-ai`` block (input ``prompt``, target ``answer``, ``generate``, a model-graded
scorer) lets the Hub run per-instance correctness; the reference scoring (code execution for code questions,
answer parsing, the trajectory metrics) is PHR's own evaluation.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from phr.bench.conditions import ALL_CONFIG, CONDITIONS
from phr.bench.metrics import HUB_METRICS
from phr.eval.results import Result, leaderboard_result

EVAL_YAML = "eval.yaml"
SPLIT = "test"
FRAMEWORK = "inspect-ai"
DEFAULT_NAME = "PHRBench"
DEFAULT_DESCRIPTION = (
    "PHRBench measures post-hallucination reasoning: how a model reasons after a hallucinated premise has "
    "entered its context. Each base question (Chemistry, Biomedicine, Physics, Code) is asked plain (B), with "
    "one truthful premise (B+T) and with single-mutation hallucinated premises (B+H: Rule Contradiction, State "
    "Distortion, Pseudoscientific Entanglement); the premise is added as context, the question is unchanged. "
    "Leaderboards: accuracy under each condition and the trajectory metrics OL, UI, BUF and BC."
)

#: the dataset config a condition's accuracy task runs on; the trajectory tasks run on ``all``
_CONFIG = {c.value: c.config for c in CONDITIONS}
_ALL = ALL_CONFIG

# (metric id, task id, config, what it is): the catalogue's metrics with a Hub task
METRICS: tuple[tuple[str, str, str, str], ...] = tuple(
    (
        m.name,
        m.hub_task or m.name,
        _CONFIG[m.condition] if m.kind == "accuracy" and m.condition else _ALL,
        m.description,
    )
    for m in HUB_METRICS
)


def _inspect_block(grader_model: str | None) -> dict:
    scorer: dict = {"name": "model_graded_fact"}
    if grader_model:
        scorer["args"] = {"model": grader_model}
    return {
        "field_spec": {"input": "prompt", "target": "answer"},
        "solvers": [{"name": "generate"}],
        "scorers": [scorer],
    }


def eval_config(
    *,
    name: str = DEFAULT_NAME,
    description: str = DEFAULT_DESCRIPTION,
    evaluation_framework: str = FRAMEWORK,
    split: str = SPLIT,
    configs: tuple[str, ...] | list[str] | None = None,
    metrics: bool = True,
    grader_model: str | None = None,
) -> dict:
    """The ``eval.yaml`` content as a dict. ``configs`` limits the tasks to those configs (default: all four)."""
    tasks = []
    for metric, task_id, config, _ in METRICS:
        if configs is not None and config not in configs:
            continue
        task: dict = {"id": task_id, "config": config, "split": split}
        if evaluation_framework == "inspect-ai":
            task.update(_inspect_block(grader_model))
        if metrics:
            task["metrics"] = [metric]
        tasks.append(task)
    return {"name": name, "description": description, "evaluation_framework": evaluation_framework, "tasks": tasks}


def eval_yaml(**options: Any) -> str:
    """``eval.yaml`` text (``options`` as for ``eval_config``): a header comment naming each task's metric, then
    the YAML (keys in the documented order; deterministic)."""
    cfg = eval_config(**options)
    ids = {t["id"] for t in cfg["tasks"]}
    header = [
        "# PHRBench benchmark definition for the Hugging Face Hub (https://huggingface.co/docs/hub/eval-results).",
        "# Generated by phr.cards.eval_yaml; one task (leaderboard) per metric:",
    ]
    header += [
        f"#   {task_id}: {metric}, config {config}: {what}"
        for metric, task_id, config, what in METRICS
        if task_id in ids
    ]
    body = yaml.safe_dump(cfg, sort_keys=False, allow_unicode=True, width=100, default_flow_style=False)
    return "\n".join(header) + "\n" + body


def write_eval_yaml(folder: str | Path, **kwargs: Any) -> Path:
    """Write ``<folder>/eval.yaml`` (the repo root of the benchmark dataset); ``kwargs`` as for ``eval_yaml``."""
    path = Path(folder) / EVAL_YAML
    path.write_text(eval_yaml(**kwargs), encoding="utf-8")
    return path


def eval_results_yaml(
    dataset_id: str,
    scores: dict[str, float],
    *,
    revision: str | None = None,
    date: str | None = None,
    source_url: str | None = None,
    source_name: str | None = None,
    notes: str | None = None,
) -> str:
    """A model repo's ``.eval_results/phrbench.yaml``: one entry per metric in ``scores`` (keys: metric ids
    such as ``accuracy_bh`` or ``OL``, or task ids), ``dataset.task_id`` being the task of that metric."""
    task_of = {m: t for m, t, _, _ in METRICS} | {t: t for _, t, _, _ in METRICS}
    unknown = sorted(set(scores) - set(task_of))
    if unknown:
        raise ValueError(f"unknown PHRBench metric(s) {unknown}; known: {[m for m, *_ in METRICS]}")
    try:
        from huggingface_hub import EvalResultEntry, eval_result_entries_to_yaml
    except ImportError:  # an older huggingface_hub: the same entries, written by hand
        written: list[dict] = []
        for m, v in scores.items():
            dataset = {"id": dataset_id, "task_id": task_of[m]} | ({"revision": revision} if revision else {})
            entry: dict = {"dataset": dataset, "value": float(v)}
            entry |= {"date": date} if date else {}
            if source_url:
                entry["source"] = {"url": source_url} | ({"name": source_name} if source_name else {})
            entry |= {"notes": notes} if notes else {}
            written.append(entry)
        return yaml.safe_dump(written, sort_keys=False, allow_unicode=True)
    entries = [
        EvalResultEntry(
            dataset_id=dataset_id,
            task_id=task_of[m],
            value=float(v),
            dataset_revision=revision,
            date=date,
            source_url=source_url,
            source_name=source_name,
            notes=notes,
        )
        for m, v in scores.items()
    ]
    return yaml.safe_dump(eval_result_entries_to_yaml(entries), sort_keys=False, allow_unicode=True)


def model_eval_results_yaml(
    rec: Result | Mapping[str, Any], *, source_url: str | None = None, source_name: str | None = None
) -> str:
    """``.eval_results/phrbench.yaml`` for the model of result ``rec`` (its metrics known to PHRBench's
    ``eval.yaml``)."""

    rec = leaderboard_result(rec)
    known = {m for m, *_ in METRICS}
    scores = {k: v for k, v in rec.metrics.items() if k in known}
    return eval_results_yaml(
        rec.dataset.id,
        scores,
        revision=rec.dataset.revision,
        date=rec.date,
        source_url=source_url or rec.source_url,
        source_name=source_name,
        notes=rec.notes,
    )
