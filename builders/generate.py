"""Premise generation through the LLM layer: PROMPT_T per question, PROMPT_H per hallucinated slot.

Every call is independent and cached (a rerun of a build makes no calls). Each round asks for every open
slot, parses the JSON (re-asking on invalid output), runs the rule-based checks and, when a judge is given,
the LLM-judge pass; rejected slots stay open and are asked again with fresh sample indices in the next
round, up to the recipe's ``regeneration_rounds``. Every rejection is kept with its reason.

A model call that fails after all retries (generator or judge) is not a rejection: refilling its slot with
another sample would make the result depend on the fault. The question is set aside for the rest of the
run and the call listed in ``GenerationResult.failed``; the builder then fails, and a rerun on the same cache
replays every cached call and makes the failed ones again, ending exactly where a fault-free run ends.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from string import Template

from pydantic import BaseModel, Field

from phr.bench.prompts import Templates
from phr.bench.records import Augmentation, BaseQuestion, Domain, MutationType
from phr.builders.recipe import Recipe
from phr.core.aio import run_sync
from phr.core.report import Rejection
from phr.llm import ChatRequest, GenerationParams, agenerate_structured, as_messages
from phr.llm.summary import RunSummary
from phr.validation.checks import run_checks
from phr.validation.judge import CALL_FAILED, judge_augmentations

MUTATION_DEFINITIONS = {
    MutationType.RULE_CONTRADICTION: "states a false version of a scientific law, rule or principle.",
    MutationType.STATE_DISTORTION: (
        "misstates a specific fact, quantity, property or condition of the entities in the task (for code: the "
        "behaviour or specification of a function, builtin, edge case or input/output example)."
    ),
    MutationType.PSEUDOSCIENTIFIC_ENTANGLEMENT: (
        "ties the topic to a plausible-sounding but pseudoscientific mechanism or false causal link."
    ),
}


class TruthfulOut(BaseModel):
    statement: str = Field(min_length=1)
    truth_verification: str = Field(min_length=1)


class HallucinatedOut(BaseModel):
    mutation_strategy: str = Field(min_length=1)
    mutation_logic: str = Field(min_length=1)
    statement: str = Field(min_length=1)


@dataclass(frozen=True)
class Prompts:
    truthful: Template
    hallucinated: Template

    @classmethod
    def load(cls, directory: str | Path | None = None) -> "Prompts":
        base = Path(directory) if directory else resources.files("phr.builders").joinpath("prompts")
        return cls(
            Template(base.joinpath("prompt_t.txt").read_text()), Template(base.joinpath("prompt_h.txt").read_text())
        )


@dataclass
class _Slot:
    question: BaseQuestion
    aug_id: str
    mutation_type: MutationType | None  # None: truthful


@dataclass
class GenerationResult:
    augmentations: list[Augmentation]
    rejections: list[Rejection]
    missing: dict[str, list[str]]  # question id -> augmentation ids still open
    stats: dict[str, int] = field(default_factory=dict)
    summary: RunSummary | None = None
    failed: list[Rejection] = field(default_factory=list)  # slots whose model call failed after all retries


def _answer(q: BaseQuestion) -> str:
    if q.domain is Domain.CODE:
        return q.reference_solution or q.answer
    if q.answer_index is not None:
        return f"({q.answer_index + 1}) {q.answer}"
    return q.answer


def slots_for(questions: list[BaseQuestion], recipe: Recipe) -> list[_Slot]:
    out = []
    for q in questions:
        n_t = recipe.code_truthful if q.domain is Domain.CODE else recipe.science_truthful
        out += [_Slot(q, f"{q.id}-aug-T" if n_t == 1 else f"{q.id}-aug-T{k}", None) for k in range(1, n_t + 1)]
        out += [_Slot(q, f"{q.id}-aug-H{k}", t) for k, t in enumerate(recipe.slot_types(q), 1)]
    return out


def generate_premises(
    questions: list[BaseQuestion],
    recipe: Recipe,
    generator,
    judge=None,
    *,
    templates: Templates | None = None,
    prompts: Prompts | None = None,
    validation_config=None,
    extra_check=None,
) -> GenerationResult:
    return run_sync(
        agenerate_premises(
            questions,
            recipe,
            generator,
            judge,
            templates=templates,
            prompts=prompts,
            validation_config=validation_config,
            extra_check=extra_check,
        )
    )


async def agenerate_premises(
    questions,
    recipe: Recipe,
    generator,
    judge=None,
    *,
    templates=None,
    prompts=None,
    validation_config=None,
    extra_check=None,
) -> GenerationResult:
    """``extra_check(candidates) -> [Rejection]`` runs after the rule checks (e.g. manual review decisions)."""

    templates = templates or Templates.load()
    prompts = prompts or Prompts.load()
    params = GenerationParams(temperature=recipe.temperature, max_tokens=recipe.max_tokens, seed=recipe.seed)
    open_slots = slots_for(questions, recipe)
    next_index: Counter = Counter()
    accepted: dict[str, Augmentation] = {}
    rejections: list[Rejection] = []
    failed: list[Rejection] = []
    halted: set[str] = set()  # questions with a failed call: no further rounds (a rerun makes the call again)
    stats: Counter = Counter()
    summary = RunSummary()
    for round_no in range(recipe.regeneration_rounds + 1):
        if not open_slots:
            break
        groups: dict[tuple, list[_Slot]] = defaultdict(list)
        for s in open_slots:
            groups[(s.question.id, s.mutation_type)].append(s)
        t_reqs, t_slots, h_reqs, h_slots = [], [], [], []
        for (qid, mtype), slots in groups.items():
            q = slots[0].question
            task = templates.task(q)
            if mtype is None:
                text = prompts.truthful.substitute(task=task, answer=_answer(q))
            else:
                text = prompts.hallucinated.substitute(
                    task=task,
                    answer=_answer(q),
                    mutation_type=mtype.value,
                    mutation_definition=MUTATION_DEFINITIONS[mtype],
                )
            req = ChatRequest(as_messages(text), params, n=len(slots), tag=qid, first_index=next_index[(qid, mtype)])
            next_index[(qid, mtype)] += len(slots)
            (t_reqs if mtype is None else h_reqs).append(req)
            (t_slots if mtype is None else h_slots).append(slots)
        candidates: dict[str, Augmentation] = {}
        for reqs, slot_groups, schema in ((t_reqs, t_slots, TruthfulOut), (h_reqs, h_slots, HallucinatedOut)):
            if not reqs:
                continue
            outs = await agenerate_structured(
                generator,
                reqs,
                schema,
                desc=f"round {round_no + 1}: {'truthful' if schema is TruthfulOut else 'hallucinated'} premises",
            )
            _merge(summary, generator.last_summary)
            for slots, results in zip(slot_groups, outs):
                for slot, res in zip(slots, results):
                    stats["generated"] += 1
                    if res.failure is not None:
                        failed.append(
                            Rejection(slot.aug_id, CALL_FAILED, f"generator call failed: {res.failure.message}")
                        )
                        halted.add(slot.question.id)
                        continue
                    if not res.ok:
                        rejections.append(
                            Rejection(slot.aug_id, "generator_output", f"invalid generator output: {res.errors[-1]}")
                        )
                        continue
                    v = res.value
                    candidates[slot.aug_id] = Augmentation(
                        id=slot.aug_id,
                        question_id=slot.question.id,
                        kind="truthful" if slot.mutation_type is None else "hallucinated",
                        statement=v.statement.strip(),
                        truth_verification=getattr(v, "truth_verification", None),
                        mutation_type=slot.mutation_type,
                        mutation_strategy=getattr(v, "mutation_strategy", None),
                        mutation_logic=getattr(v, "mutation_logic", None),
                        generator=generator.spec,
                    )
        _drop_halted(candidates, halted)
        if candidates:
            qids = {a.question_id for a in candidates.values()}
            qs = [q for q in questions if q.id in qids]
            pool = [a for a in accepted.values() if a.question_id in qids] + list(candidates.values())
            report = run_checks(qs, pool, validation_config)
            extra = extra_check(list(candidates.values())) if extra_check else []
            for r in [*report.rejections, *extra]:
                if r.row_id in candidates:
                    rejections.append(r)
                    candidates.pop(r.row_id)
        if candidates and judge is not None:
            cand_q = {a.question_id for a in candidates.values()}
            outcome = judge_augmentations([q for q in questions if q.id in cand_q], list(candidates.values()), judge)
            _merge(summary, judge.last_summary)
            for r in outcome.rejections:
                if r.row_id in candidates:
                    if r.check == CALL_FAILED:
                        failed.append(r)
                        halted.add(candidates[r.row_id].question_id)
                    else:
                        rejections.append(r)
                    candidates.pop(r.row_id)
        _drop_halted(candidates, halted)
        accepted.update(candidates)
        open_slots = [s for s in open_slots if s.aug_id not in accepted and s.question.id not in halted]
    missing: dict[str, list[str]] = defaultdict(list)
    still_open = {s.aug_id for s in open_slots}
    for s in slots_for(questions, recipe):
        if s.aug_id not in accepted and (s.aug_id in still_open or s.question.id in halted):
            missing[s.question.id].append(s.aug_id)
    order = {s.aug_id: i for i, s in enumerate(slots_for(questions, recipe))}
    augs = sorted(accepted.values(), key=lambda a: order[a.id])
    stats["accepted"] = len(augs)
    stats["rejected"] = len(rejections)
    stats["call_failed"] = len(failed)
    return GenerationResult(augs, rejections, dict(missing), dict(stats), summary, failed)


def _drop_halted(candidates: dict[str, Augmentation], halted: set[str]) -> None:
    """Candidates of questions set aside after a failed call are neither checked further nor accepted."""
    for aug_id in [k for k, a in candidates.items() if a.question_id in halted]:
        candidates.pop(aug_id)


def _merge(into: RunSummary, other: RunSummary) -> None:
    for spec, m in other.models.items():
        t = into.model(spec)
        t.calls += m.calls
        t.samples += m.samples
        t.cache_hits += m.cache_hits
        t.retries += m.retries
        t.prompt_tokens += m.prompt_tokens
        t.completion_tokens += m.completion_tokens
        t.cost_usd = None if t.cost_usd is None or m.cost_usd is None else t.cost_usd + m.cost_usd
        t.failures.update(m.failures)
