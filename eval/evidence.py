"""A result re-derived from its evidence: nothing ``results.json`` claims is believed (docs/leaderboard.md, "Trust").

    fp = dataset_fingerprint(dataset.instances)
    problems = recompute(result, samples_bytes, dataset.instances)   # [] : every number is what the evidence gives

The evidence of a result (``phr.eval.results.Evidence``) is the per-sample scores file the scorer wrote (instance
id, sample, extracted answer, correctness, per-sample metrics), the SHA-256 of the responses it was scored from
and the fingerprint of the dataset (its instance ids, conditions, base questions and gold answers).
``recompute`` checks the scores file against the dataset (every instance of the dataset, its identity fields, the
samples 0..k-1 of each scored instance once, the rule-graded verdicts re-graded from the extracted answers), then
runs the runner's own aggregation (``phr.eval.aggregate.aggregate``, ``coverage_of``) and names every field of the
result that differs: ``metrics.accuracy_bh: claimed 0.9, recomputed 0.5``.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from phr.bench.instance import Instance
from phr.eval.aggregate import aggregate
from phr.eval.extract import REL_TOL, normalised_match, numbers_match, numeric_gold
from phr.eval.results import Coverage, Result, coverage_of
from phr.eval.scorers import GRADER_CHOICE, GRADER_MATCH, GRADER_NUMERIC, GRADER_SANDBOX
from phr.eval.scoring import SampleScore

#: a claimed and a recomputed number are the same when they differ by no more than this (results round to 6 places)
TOLERANCE = 1e-6
#: differences named one by one; the rest are counted
SHOWN = 8
#: the fields of a sample that say which instance it is: they must be the dataset's
IDENTITY = ("question_id", "condition", "domain", "subtype", "task_type", "source", "mutation_type")


def dataset_fingerprint(instances: Sequence[Instance]) -> str:
    """``sha256:<hex>`` of every instance's id, condition, base question and gold answer (answer, answer index,
    code tests), in id order: two datasets with the same fingerprint grade every response the same way."""
    h = hashlib.sha256()
    for i in sorted(instances, key=lambda i: i.id):
        row = [i.id, i.condition, i.question_id, i.answer, i.answer_index, i.code_tests]
        h.update(json.dumps(row, ensure_ascii=False).encode() + b"\n")
    return "sha256:" + h.hexdigest()


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _shown(value: Any) -> str:
    text = json.dumps(value, sort_keys=True, ensure_ascii=False) if not isinstance(value, str) else value
    return text if len(text) <= 80 else text[:77] + "..."


def differences(claimed: Any, recomputed: Any, path: str = "") -> Iterator[str]:
    """``path: claimed X, recomputed Y`` for every leaf where the two JSON values differ (numbers within
    ``TOLERANCE`` are equal)."""
    if isinstance(claimed, Mapping) and isinstance(recomputed, Mapping):
        for key in sorted(set(claimed) | set(recomputed), key=str):
            sub = f"{path}.{key}" if path else str(key)
            if key not in claimed:
                yield f"{sub}: claimed nothing, recomputed {_shown(recomputed[key])}"
            elif key not in recomputed:
                yield f"{sub}: claimed {_shown(claimed[key])}, recomputed nothing"
            else:
                yield from differences(claimed[key], recomputed[key], sub)
        return
    if isinstance(claimed, list) and isinstance(recomputed, list) and len(claimed) == len(recomputed):
        for n, (a, b) in enumerate(zip(claimed, recomputed)):
            yield from differences(a, b, f"{path}[{n}]")
        return
    if _same(claimed, recomputed):
        return
    yield f"{path}: claimed {_shown(claimed)}, recomputed {_shown(recomputed)}"


def _same(a: Any, b: Any) -> bool:
    numbers = (int, float)
    if isinstance(a, bool) or isinstance(b, bool) or not (isinstance(a, numbers) and isinstance(b, numbers)):
        return bool(a == b)
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    return abs(a - b) <= TOLERANCE


def read_samples(data: bytes) -> tuple[list[SampleScore], list[str]]:
    """The per-sample scores of a samples file, and a problem per line that is not one."""
    scores, problems = [], []
    for n, line in enumerate(data.decode("utf-8", errors="replace").splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            if not isinstance(row, dict):
                raise ValueError("not a JSON object")
            s = SampleScore.from_dict(row)
            if not isinstance(s.sample, int) or not isinstance(s.correct, bool) or not isinstance(s.missing, bool):
                raise ValueError("sample must be an integer, correct and missing booleans")
        except (ValueError, TypeError) as e:
            problems.append(f"samples line {n}: {e}")
            continue
        scores.append(s)
    return scores, problems


def _regraded(s: SampleScore, inst: Instance, rel_tol: float) -> bool | None:
    """The verdict a rule grader gives the sample's extracted answer (None: not rule-graded, or nothing to grade)."""
    if s.missing:
        return False
    if s.grader == GRADER_CHOICE:
        return s.extracted is not None and s.extracted.isdigit() and int(s.extracted) - 1 == inst.answer_index
    if s.grader == GRADER_NUMERIC:
        nums = numeric_gold(inst.answer or "")
        return s.extracted is not None and nums is not None and numbers_match(s.extracted, nums, rel_tol)
    if s.grader == GRADER_MATCH:
        return s.extracted is not None and normalised_match(s.extracted, inst.answer or "")
    if s.grader == GRADER_SANDBOX:
        return s.extracted == "passed"
    return None


def _graded_by_us(grader: str | None, llm_grader: str | None) -> bool:
    """A grader the scorer writes: a rule grader, or the run's own LLM equivalence grader."""
    if grader in (GRADER_CHOICE, GRADER_NUMERIC, GRADER_MATCH, GRADER_SANDBOX):
        return True
    return llm_grader is not None and grader is not None and grader.startswith("llm:") and llm_grader in grader


def sample_problems(
    scores: Sequence[SampleScore],
    instances: Sequence[Instance],
    samples: int,
    rel_tol: float = REL_TOL,
    llm_grader: str | None = None,
) -> list[str]:
    """Why the per-sample scores are not a scoring of ``instances`` with ``samples`` samples each: unknown ids,
    identity fields other than the dataset's, a sample outside 0..samples-1 or given twice, an instance scored
    with samples left out, a verdict the rule grader does not give its extracted answer."""
    by_id = {i.id: i for i in instances}
    problems: list[str] = []
    seen: dict[str, set[int]] = {}
    for s in scores:
        inst = by_id.get(s.instance_id)
        where = f"sample {s.instance_id!r}#{s.sample}"
        if inst is None:
            problems.append(f"{where}: no such instance in the dataset")
            continue
        wrong = [f for f in IDENTITY if getattr(s, f) != getattr(inst, f)]
        if wrong:
            problems.append(f"{where}: {', '.join(wrong)} differ from the dataset's")
        if not 0 <= s.sample < samples or s.sample in seen.setdefault(s.instance_id, set()):
            problems.append(f"{where}: sample outside 0..{samples - 1} or given twice")
        seen[s.instance_id].add(s.sample)
        if s.missing and s.correct:
            problems.append(f"{where}: missing but correct")
        if not s.missing and not _graded_by_us(s.grader, llm_grader):
            problems.append(f"{where}: grader {s.grader!r} is not one this scoring used")
        verdict = _regraded(s, inst, rel_tol)
        if verdict is not None and verdict != s.correct:
            problems.append(
                f"{where}: correct is {s.correct}, but the {s.grader} grader gives {verdict} for {s.extracted!r}"
            )
    short = [i for i, got in seen.items() if len(got) != samples]
    if short:
        problems.append(f"{len(short)} instance(s) scored without all {samples} samples (e.g. {short[0]!r})")
    return problems


def samples_of(result: Result) -> int:
    """The samples per instance the result claims to have scored."""
    value = (result.settings.samples if result.settings else None) or (result.config or {}).get("samples")
    return int(value) if isinstance(value, int) and value >= 1 else 1


@dataclass
class Recomputed:
    """What re-deriving a result from its evidence gave: the differences (empty: every number re-derived), and the
    recomputed metrics and coverage (None when the evidence could not be read as a scoring of the dataset)."""

    problems: list[str]
    metrics: dict[str, float] | None = None
    coverage: Coverage | None = None


def recompute(result: Result, samples: bytes, instances: Sequence[Instance]) -> Recomputed:
    """Every way ``result`` is not what its evidence (the samples file ``samples``) gives against the dataset
    ``instances``: one line each, ``field: claimed X, recomputed Y`` (empty: every number re-derived)."""
    ev = result.evidence
    if ev is None:
        return Recomputed(["evidence: none recorded (a result without evidence cannot be recomputed)"])
    problems = []
    if (digest := sha256_hex(samples)) != ev.samples_sha256:
        problems.append(f"evidence.samples_sha256: claimed {ev.samples_sha256}, recomputed {digest}")
    if (fp := dataset_fingerprint(instances)) != ev.dataset_fingerprint:
        problems.append(f"evidence.dataset_fingerprint: claimed {ev.dataset_fingerprint}, recomputed {fp}")
    if problems:
        return Recomputed(problems)
    scores, problems = read_samples(samples)
    rel_tol = result.settings.open_ended_rel_tol if result.settings else REL_TOL
    llm_grader = result.settings.open_ended_grader if result.settings else None
    problems += sample_problems(scores, instances, samples_of(result), rel_tol, llm_grader)
    if problems:
        return Recomputed(problems[:SHOWN] + _more(len(problems)))
    report = aggregate(scores, result.bootstrap if result.bootstrap is not None else None)
    claimed = result.as_json()
    coverage = coverage_of(scores, instances)
    if result.coverage is not None:
        coverage = coverage.model_copy(update={"allow_partial": result.coverage.allow_partial})
    again = {
        "metrics": report.metrics,
        "standard_errors": report.standard_errors,
        "counts": report.counts.model_dump(mode="json"),
        "tables": report.as_tables().model_dump(mode="json", by_alias=True),
        "coverage": coverage.model_dump(mode="json"),
    }
    found: list[str] = []
    for key, value in again.items():
        if claimed.get(key) is None:
            shown = coverage.text() if key == "coverage" else _shown(value)
            found.append(f"{key}: claimed nothing, recomputed {shown}")
        else:
            found += differences(claimed[key], value, key)
    return Recomputed(found[:SHOWN] + _more(len(found)), report.metrics, coverage)


def _more(n: int) -> list[str]:
    return [f"... and {n - SHOWN} more difference(s)"] if n > SHOWN else []
