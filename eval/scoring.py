"""Score responses to PHRBench, one record per (instance, sample): the runner and submissions share this.

    scores = score_responses(instances, responses, samples=2, scoring=Scoring(judge="openai:gpt-4o"))

``score_responses`` runs a list of scorers (``phr.eval.scorers``; by default ``build_scorers(scoring)``, the
settings of ``phr.config.ops.Scoring`` or a ``ScoringRun`` of them):

- accuracy: multiple choice by the extracted candidate number, open-ended by the final answer
  (phr.eval.extract), code by running the extracted program against the problem's tests in the sandbox;
- trajectory metrics OL, UI, BUF, BC under the reference scorer (``scorer``; 'none' skips them);
- behavioural resolution of every B+H response by the judge (``judge``; 'none' skips it) and
  insightful = Heuristic Correction and correct.

A missing response (a failed call in a run) scores as incorrect with no metrics, and is counted.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, fields
from typing import Any

from phr.config.ops import Scoring
from phr.eval.dataset import Instance
from phr.eval.scorers import ScoreItem, Scorer, ScoringRun, answer_correct, build_scorers, code_program

__all__ = ["SampleScore", "ScoringRun", "answer_correct", "code_program", "score_responses"]


@dataclass
class SampleScore:
    instance_id: str
    sample: int
    question_id: str
    condition: str
    domain: str
    subtype: str
    task_type: str
    source: str | None
    mutation_type: str | None
    missing: bool
    correct: bool
    extracted: str | None = None  # the candidate number, the final answer line, or the sandbox verdict
    grader: str | None = None  # what scored it: choice, numeric, normalised-match, llm:<spec>, sandbox
    ol: int | None = None
    ol_words: int | None = None
    ui: float | None = None
    buf: float | None = None
    bc: float | None = None
    steps: int | None = None
    resolution: str | None = None
    accepts_premise: bool | None = None
    corrects_premise: bool | None = None
    insightful: bool | None = None
    judge_rationale: str | None = None

    def as_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def of(cls, inst: Instance, sample: int, *, missing: bool, correct: bool = False) -> SampleScore:
        """Sample ``sample`` of ``inst``, named by the instance's fields; the scorers fill in the rest."""
        return cls(
            inst.id,
            sample,
            inst.question_id,
            inst.condition,
            inst.domain,
            inst.subtype,
            inst.task_type,
            inst.source,
            inst.mutation_type,
            missing=missing,
            correct=correct,
        )

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> SampleScore:
        names = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in d.items() if k in names})


#: The fields a scorer may set (the rest say which sample it is).
SCORED_FIELDS = frozenset(f.name for f in fields(SampleScore)) - {
    "instance_id",
    "sample",
    "question_id",
    "condition",
    "domain",
    "subtype",
    "task_type",
    "source",
    "mutation_type",
    "missing",
}


def score_responses(
    instances: Sequence[Instance],
    responses: Mapping[tuple[str, int], str],
    *,
    samples: int,
    scoring: ScoringRun | Scoring | None = None,
    progress: bool = True,
    scorers: Sequence[Scorer] | None = None,
) -> list[SampleScore]:
    """Score samples 0..samples-1 of every instance (in order) with ``scorers`` (default: ``build_scorers
    (scoring)``, the default ``Scoring`` when None), each in turn over all present responses; see the module
    docstring."""
    rows: list[SampleScore] = []
    present: list[tuple[SampleScore, ScoreItem]] = []
    for inst in instances:
        for k in range(samples):
            text = responses.get((inst.id, k))
            s = SampleScore.of(inst, k, missing=text is None)
            rows.append(s)
            if text is not None:
                present.append((s, ScoreItem(inst, text, k)))
    if not present:
        return rows
    scorers = build_scorers(scoring, progress=progress) if scorers is None else scorers
    scored: list[dict[str, Any]] = [{} for _ in present]
    for scorer in scorers:
        batch = [ScoreItem(it.instance, it.response, it.sample, dict(done)) for (_, it), done in zip(present, scored)]
        updates = scorer.score(batch)
        if len(updates) != len(batch):
            raise ValueError(f"scorer {scorer.name!r} returned {len(updates)} results for {len(batch)} responses")
        for done, update in zip(scored, updates):
            unknown = set(update) - SCORED_FIELDS
            if unknown:
                raise ValueError(f"scorer {scorer.name!r} set unknown field(s) {', '.join(sorted(unknown))}")
            done.update(update)
    for (s, _), done in zip(present, scored):
        for name, value in done.items():
            setattr(s, name, value)
    return rows
