"""The LLM-judge pass over augmentations: factual validity, relevance, type consistency, mutation logic and
semantic answer leakage (PHRBench's second validation pass, after the rule-based checks).

    outcome = judge_augmentations(questions, augmentations, LLM("openai:gpt-4o"))
    outcome.rejections    # Rejection(aug id, "judge" | "judge_leakage", "<criterion>: <judge's reason>")
    outcome.judgements    # one phr.bench.records.Judgement per augmentation
    outcome.failures      # judge replies still invalid after re-asks (also rejected, never accepted)

A judge call that fails after all retries rejects its augmentation with check ``call_failed`` (not judged).

Every prompt goes out in one batched call of the LLM-judge helper (``phr.llm.judge``; temperature 0, n=1,
re-asks on invalid JSON), so the calls are cached and a rerun resumes from the cache. Prompts:
validation/prompts/ (README.md there).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Literal

from pydantic import BaseModel

from phr.bench.records import Augmentation, BaseQuestion, Judgement, TaskType
from phr.core.aio import blocking
from phr.core.report import Rejection, ValidationReport
from phr.llm.judge import JudgeItem, JudgeTemplate, LLMJudge

if TYPE_CHECKING:  # pragma: no cover - the caller makes the client
    from phr.llm.client import LLM

__all__ = [
    "JudgeVerdict",
    "JudgeFailure",
    "JudgeOutcome",
    "judge_augmentations",
    "ajudge_augmentations",
    "judge_prompt",
    "failed_criteria",
    "PARAMS",
    "CALL_FAILED",
    "JudgeConfig",
    "LEAK_DEFINITION",
    "OPTIONAL_CRITERIA",
]

#: Rejection check of an augmentation whose judge call failed after all retries (it was not judged).
CALL_FAILED = "call_failed"

MAX_REFERENCE_CHARS = 2000

#: Criteria that must be true, per premise kind (leaks_answer must be false for both): the paper's (§A.2, Quality
#: Control, third step): factual validity, relevance, type consistency and mutation logic; for a truthful premise
#: also "does not conflict with the original task" (``task_consistent``).
REQUIRED = {
    "truthful": ("factual_validity", "relevance", "task_consistent"),
    "hallucinated": ("factual_validity", "mutation_logic_consistent", "type_consistency", "relevance"),
}
#: Criteria of ours that the paper does not name, each switchable for hallucinated premises
#: (``JudgeConfig.extra_criteria``; off by default, as in the paper): its prompt line and its reply field.
OPTIONAL_CRITERIA = {
    "plausible": "the premise sounds plausible to a non-expert; the error is not absurd or self-evidently false.",
    "single_claim": "the premise makes one dominant claim (not a list or chain of independent claims).",
}
_PROMPTS = Path(__file__).with_name("prompts")
#: The one definition of an answer leak, shared by both judge prompts (``$leak_definition``) and implemented
#: lexically by the rule checks (``phr.validation.checks.leakage``): the answer named AS the answer, or directly
#: implied; naming the correct candidate otherwise is no leak. Text: validation/prompts/leak_definition.txt.
LEAK_DEFINITION = (_PROMPTS / "leak_definition.txt").read_text(encoding="utf-8").strip()


@dataclass(frozen=True)
class JudgeConfig:
    """The judge's criteria. ``extra_criteria``: names from ``OPTIONAL_CRITERIA`` that a hallucinated premise
    must also pass (default none: the paper's criteria only)."""

    extra_criteria: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        unknown = [c for c in self.extra_criteria if c not in OPTIONAL_CRITERIA]
        if unknown:
            raise ValueError(
                f"unknown judge criterion {unknown[0]!r}: the switchable ones are {', '.join(OPTIONAL_CRITERIA)}"
            )

    def required(self, kind: str) -> tuple[str, ...]:
        return REQUIRED[kind] + (tuple(self.extra_criteria) if kind == "hallucinated" else ())


class JudgeVerdict(BaseModel):
    """The judge's JSON reply. Hallucinated-only fields are null for truthful premises."""

    reason: str
    factual_validity: bool
    relevance: bool
    task_consistent: bool | None = None
    type_consistency: bool | None = None
    mutation_logic_consistent: bool | None = None
    plausible: bool | None = None
    single_claim: bool | None = None
    leaks_answer: bool
    verdict: Literal["accept", "reject"]


@dataclass(frozen=True)
class JudgeFailure:
    """An augmentation whose judge reply stayed invalid: every raw reply and error, in order."""

    augmentation_id: str
    errors: list[str]
    raw_texts: list[str]


@dataclass
class JudgeOutcome:
    rejections: list[Rejection] = field(default_factory=list)
    judgements: list[Judgement] = field(default_factory=list)
    failures: list[JudgeFailure] = field(default_factory=list)

    @property
    def rejected_ids(self) -> set[str]:
        return {r.row_id for r in self.rejections}

    def report(self) -> ValidationReport:
        return ValidationReport(list(self.rejections), rows={"augmentations": len(self.judgements)})


# ---- prompts ----------------------------------------------------------------------------------------------


#: The judge prompts per premise kind (``string.Template``), read once; ``.version`` is each file's SHA-256.
TEMPLATES = {
    kind: JudgeTemplate(_PROMPTS / f"judge_{kind}.txt", syntax="dollar") for kind in ("truthful", "hallucinated")
}
#: The judge: the ``JudgeVerdict`` model at the helper's default sampling; each item carries its rendered prompt
#: (two templates).
JUDGE = LLMJudge(JudgeVerdict, desc="judging")
#: Sampling for the judge: deterministic, one sample, 512 tokens (the judge helper's defaults).
PARAMS = JUDGE.params


def _question_block(q: BaseQuestion) -> str:
    if q.task_type is TaskType.MULTIPLE_CHOICE:
        cands = "; ".join(f"({i}) {opt}" for i, opt in enumerate(q.options, 1))
        return f"Question: {q.question}\nCandidates: {cands}"
    if q.task_type is TaskType.CODE:  # signature + docstring only: the tests are never shown
        return f"Task: complete this Python function.\n```python\n{(q.code_signature or q.question).rstrip()}\n```"
    return f"Question: {q.question}"


def _gold(q: BaseQuestion) -> str:
    if q.task_type is TaskType.MULTIPLE_CHOICE:
        idx = (
            q.answer_index
            if q.answer_index is not None
            else (q.options.index(q.answer) if q.answer in q.options else None)
        )
        return f"({idx + 1}) {q.answer}" if idx is not None else q.answer
    if q.task_type is TaskType.CODE:
        ref = (q.reference_solution or q.answer).rstrip()
        if len(ref) > MAX_REFERENCE_CHARS:
            ref = ref[:MAX_REFERENCE_CHARS] + "\n# ... (truncated)"
        return f"a reference solution:\n```python\n{ref}\n```"
    return q.answer


def judge_prompt(q: BaseQuestion, aug: Augmentation, config: JudgeConfig | None = None) -> str:
    """The user prompt the judge gets for one augmentation."""
    config = config or JudgeConfig()
    fields = {
        "domain": q.domain.value,
        "question_block": _question_block(q),
        "gold_answer": _gold(q),
        "premise": aug.statement.strip(),
        "leak_definition": LEAK_DEFINITION,
    }
    if aug.kind == "hallucinated":
        required = config.required("hallucinated")
        fields |= {
            "mutation_type": aug.mutation_type.value if aug.mutation_type else "(none declared)",
            "mutation_strategy": aug.mutation_strategy or "(none declared)",
            "mutation_logic": aug.mutation_logic or "(none declared)",
            "extra_criteria": "".join(f"- {c}: {OPTIONAL_CRITERIA[c]}\n" for c in config.extra_criteria),
            "extra_fields": "".join(f'"{c}": true, ' for c in config.extra_criteria),
            "required": ", ".join(required[:-1]) + " and " + required[-1],
        }
    return TEMPLATES[aug.kind].render(fields)


# ---- verdicts ---------------------------------------------------------------------------------------------


def failed_criteria(kind: str, v: JudgeVerdict, config: JudgeConfig | None = None) -> list[str]:
    """Required criteria that are not true (leaks_answer listed when true). Empty + accept verdict = pass."""
    failed = [c for c in (config or JudgeConfig()).required(kind) if getattr(v, c) is not True]
    return failed + (["leaks_answer"] if v.leaks_answer else [])


def _missing(kind: str, v: JudgeVerdict, config: JudgeConfig) -> list[str]:
    return [c for c in config.required(kind) if getattr(v, c) is None]


def _records(rows: Any, model: type[BaseModel]) -> list:
    """Records from records, dicts or a DataFrame (NaN -> None, arrays -> lists)."""
    if hasattr(rows, "to_dict") and hasattr(rows, "columns"):
        rows = rows.to_dict("records")
    out = []
    for r in rows:
        if not isinstance(r, model):
            r = {
                k: (None if isinstance(v, float) and math.isnan(v) else v.tolist() if hasattr(v, "tolist") else v)
                for k, v in dict(r).items()
            }
            r = model.model_validate(r)
        out.append(r)
    return out


async def ajudge_augmentations(
    questions: Iterable,
    augmentations: Iterable,
    judge: LLM,
    *,
    max_reasks: int = 2,
    desc: str = "judging",
    config: JudgeConfig | None = None,
) -> JudgeOutcome:
    """Judge every augmentation with ``judge`` (a phr.llm.LLM) against its question; see the module docstring.

    ``questions`` / ``augmentations``: BaseQuestion / Augmentation records, dicts or DataFrames. An
    augmentation whose question is missing is rejected without a call. ``config``: the criteria
    (``JudgeConfig``; default the paper's). :func:`judge_augmentations` is the blocking form.
    """
    config = config or JudgeConfig()
    qs = {q.id: q for q in _records(questions, BaseQuestion)}
    augs: list[Augmentation] = _records(augmentations, Augmentation)
    out = JudgeOutcome()

    def reject(aug: Augmentation, check: str, reason: str) -> None:
        out.rejections.append(Rejection(aug.id, check, reason))

    def judged(aug: Augmentation, passed: bool, rationale: str) -> None:
        out.judgements.append(
            Judgement(
                target_id=aug.id,
                judge=judge.spec,
                label="accept" if passed else "reject",
                passed=passed,
                rationale=rationale,
            )
        )

    todo = []
    for aug in augs:
        if aug.question_id not in qs:
            reason = f"judge skipped: question {aug.question_id!r} not found"
            reject(aug, "judge", reason)
            judged(aug, False, reason)
        else:
            todo.append(aug)
    items = [JudgeItem(tag=a.id, prompt=judge_prompt(qs[a.question_id], a, config)) for a in todo]
    results = await JUDGE.ajudge(judge, items, max_reasks=max_reasks, desc=desc)
    for aug, res in zip(todo, results):
        if res.failure is not None:
            reason = f"judge call failed: {res.failure.message}"
            reject(aug, CALL_FAILED, reason)
            judged(aug, False, reason)
            continue
        v = res.verdict
        missing = _missing(aug.kind, v, config) if v is not None else []
        if v is None or missing:
            errors = [*res.errors] + ([f"null {', '.join(missing)} for a {aug.kind} premise"] if v is not None else [])
            reason = f"judge output invalid: {errors[-1] if errors else 'no reply'}"
            out.failures.append(JudgeFailure(aug.id, errors, list(res.raw_texts)))
            reject(aug, "judge", reason)
            judged(aug, False, reason)
            continue
        failed = failed_criteria(aug.kind, v, config)
        content = [c for c in failed if c != "leaks_answer"]
        if "leaks_answer" in failed:
            reject(aug, "judge_leakage", f"leaks_answer: {v.reason}")
        if content or (v.verdict == "reject" and not failed):
            reject(aug, "judge", f"{', '.join(content) or 'verdict'}: {v.reason}")
        passed = not failed and v.verdict == "accept"
        judged(aug, passed, v.reason if passed else f"{', '.join(failed) or 'verdict'}: {v.reason}")
    return out


#: Blocking :func:`ajudge_augmentations` (the same parameters).
judge_augmentations = blocking(ajudge_augmentations)
