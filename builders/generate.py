"""Premise generation through the LLM layer: PROMPT_T per question, PROMPT_H per hallucinated slot.

Every call is independent and cached (a rerun of a build makes no calls). Each round asks for every open
slot, parses the JSON (re-asking on invalid output), runs the rule-based checks and, when a judge is given,
the LLM-judge pass; rejected slots stay open and are asked again with fresh sample indices in the next
round, up to the recipe's ``regeneration_rounds``. Every rejection is kept with its reason.

A model call that fails after all retries (generator or judge) is not a rejection: refilling its slot with
another sample would make the result depend on the fault. The question is set aside for the rest of the
run and the call listed in ``GenerationResult.failed``; the builder then fails, and a rerun on the same cache
replays every cached call and makes the failed ones again, ending exactly where a fault-free run ends.

Prompt sets (builders/prompts/README.md): with ``paper`` (the default, §A.2 verbatim) the generator chooses
each premise's mutation type and the builder parses it from ``mutation_strategy``; an optional per-type quota
in the recipe keeps premises only until each type's quota is met. With ``v0`` every slot has a fixed type.
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from string import Template
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field

from phr.bench.prompts import Templates
from phr.bench.records import Augmentation, BaseQuestion, Domain, MutationType, PremiseKind
from phr.builders.recipe import Recipe, SlotSpec
from phr.config.ops import BuildPhrbenchConfig
from phr.core.aio import blocking
from phr.core.errors import UsageError
from phr.core.report import Rejection
from phr.llm import ChatRequest, GenerationParams, agenerate_structured, as_messages
from phr.llm.structured import StructuredResult
from phr.llm.summary import RunSummary
from phr.validation.checks import run_checks
from phr.validation.judge import CALL_FAILED, judge_augmentations

if TYPE_CHECKING:  # pragma: no cover - the callers make the clients and configs
    from phr.llm.client import LLM
    from phr.validation.config import ValidationConfig
    from phr.validation.judge import JudgeConfig

# The v0 prompt set's type definitions (ours; shown to the generator as $mutation_definition). The paper's
# definitions are part of its PROMPT_H text (builders/prompts/paper/prompt_h.txt, §A.2).
V0_MUTATION_DEFINITIONS = {
    MutationType.RULE_CONTRADICTION: "states a false version of a scientific law, rule or principle.",
    MutationType.STATE_DISTORTION: (
        "misstates a specific fact, quantity, property or condition of the entities in the task (for code: the "
        "behaviour or specification of a function, builtin, edge case or input/output example)."
    ),
    MutationType.PSEUDOSCIENTIFIC_ENTANGLEMENT: (
        "ties the topic to a plausible-sounding but pseudoscientific mechanism or false causal link."
    ),
}
PROMPT_SETS = ("paper", "v0")
#: the prompt set when none is named: the config's default (one definition, ``BuildPhrbenchConfig.prompts``)
DEFAULT_PROMPTS: str = BuildPhrbenchConfig.model_fields["prompts"].default
MUTATION_TYPE_CHECK = "mutation_type"
QUOTA_CHECK = "quota"

_TYPE_KEYS = {
    "rulecontradiction": MutationType.RULE_CONTRADICTION,
    "statedistortion": MutationType.STATE_DISTORTION,
    "pseudoscientificentanglement": MutationType.PSEUDOSCIENTIFIC_ENTANGLEMENT,
    "pseudoscienceentanglement": MutationType.PSEUDOSCIENTIFIC_ENTANGLEMENT,
}
_INITIALS = {"rc": MutationType.RULE_CONTRADICTION, "sd": MutationType.STATE_DISTORTION}
_INITIALS["pe"] = MutationType.PSEUDOSCIENTIFIC_ENTANGLEMENT
_LABEL = re.compile(r"^\s*(?:(?:augmentation|mutation)\s+)?(?:type|strategy)\s*[:=\-]\s*", re.I)


def parse_mutation_type(text: str | None) -> MutationType:
    """The mutation type named by a generator's ``mutation_strategy`` (§A.2: it "records its augmentation type").

    Accepted: one of the three names, in any case, with ``-``/``_``/spaces between the words, a plural, a
    leading ``Type:`` label or a trailing explanation; or the initials RC / SD / PE alone. Anything else raises
    ValueError saying why (no type named, or more than one).
    """
    raw = (text or "").strip()
    if not raw:
        raise ValueError("mutation_strategy is empty: it must name the mutation type")
    body = _LABEL.sub("", raw)
    key = re.sub(r"[^a-z]", "", body.lower())
    if key in _INITIALS:
        return _INITIALS[key]
    named = {t for k, t in _TYPE_KEYS.items() if k in key}
    if len(named) > 1:
        names = " and ".join(sorted(t.value for t in named))
        raise ValueError(f"mutation_strategy {raw!r} names more than one mutation type ({names})")
    starts = [t for k, t in _TYPE_KEYS.items() if key.startswith(k)]
    if starts:
        return starts[0]
    why = "names a type only after other words" if named else "names none of the mutation types"
    raise ValueError(
        f"mutation_strategy {raw!r} {why}: expected Rule Contradiction, State Distortion or "
        "Pseudoscientific Entanglement"
    )


class TruthfulOut(BaseModel):
    statement: str = Field(min_length=1)
    truth_verification: str = Field(min_length=1)


class HallucinatedOut(BaseModel):
    mutation_strategy: str = Field(min_length=1)
    mutation_logic: str = Field(min_length=1)
    statement: str = Field(min_length=1)


@dataclass(frozen=True)
class Prompts:
    """One prompt set: PROMPT_T, PROMPT_H and (optional) the instruction appended to PROMPT_H for code."""

    truthful: Template
    hallucinated: Template
    code_suffix: str | None = None
    name: str = "custom"
    hashes: dict[str, str] = field(default_factory=dict)  # "prompts/<file>" -> SHA-256 of its bytes

    @property
    def fixed_types(self) -> bool:
        """True when PROMPT_H takes the type ($mutation_type, v0); False when the generator chooses (paper)."""
        return "mutation_type" in self.hallucinated.get_identifiers()

    @classmethod
    def load(cls, which: str | Path | None = None) -> "Prompts":
        """A packaged set by name (paper, v0; None = paper) or a folder with prompt_t.txt / prompt_h.txt."""
        which = DEFAULT_PROMPTS if which is None else which
        if str(which) in PROMPT_SETS:
            base, name = resources.files("phr.builders").joinpath("prompts", str(which)), str(which)
        else:
            base, name = Path(which), f"custom:{which}"
            if not (base / "prompt_t.txt").is_file() or not (base / "prompt_h.txt").is_file():
                raise UsageError(
                    f"unknown prompt set {str(which)!r}: use {' or '.join(PROMPT_SETS)}, or a folder with "
                    "prompt_t.txt and prompt_h.txt"
                )
        files = {n: base.joinpath(n) for n in ("prompt_t.txt", "prompt_h.txt", "code_h.txt")}
        data = {n: f.read_bytes() for n, f in files.items() if f.is_file()}
        suffix = data["code_h.txt"].decode().strip() if "code_h.txt" in data else None
        return cls(
            Template(data["prompt_t.txt"].decode()),
            Template(data["prompt_h.txt"].decode()),
            suffix,
            name,
            {f"prompts/{n}": hashlib.sha256(b).hexdigest() for n, b in data.items()},
        )

    def hallucinated_text(self, q: BaseQuestion, task: str, mtype: MutationType | None) -> str:
        fields = {"task": task, "answer": _answer(q)}
        if mtype is not None:
            fields |= {"mutation_type": mtype.value, "mutation_definition": V0_MUTATION_DEFINITIONS[mtype]}
        text = self.hallucinated.substitute(**fields)
        if mtype is None and self.code_suffix and q.domain is Domain.CODE:
            text = text.rstrip("\n") + "\n\n" + self.code_suffix + "\n"
        return text


@dataclass
class _Slot:
    question: BaseQuestion
    aug_id: str
    kind: PremiseKind
    mutation_type: MutationType | None  # the slot's fixed type (v0 prompts); None: truthful or generator's choice


@dataclass
class GenerationResult:
    augmentations: list[Augmentation]
    rejections: list[Rejection]
    missing: dict[str, list[str]]  # question id -> augmentation ids still open
    stats: dict[str, int] = field(default_factory=dict)
    summary: RunSummary | None = None
    failed: list[Rejection] = field(default_factory=list)  # slots whose model call failed after all retries
    quota_short: dict[str, dict[str, tuple[int, int]]] = field(default_factory=dict)  # qid -> type -> (kept, quota)


def _answer(q: BaseQuestion) -> str:
    if q.domain is Domain.CODE:
        return q.reference_solution or q.answer
    if q.answer_index is not None:
        return f"({q.answer_index + 1}) {q.answer}"
    return q.answer


def slots_for(questions: list[BaseQuestion], recipe: Recipe, *, fixed_types: bool = True) -> list[_Slot]:
    """Every premise slot in order; with ``fixed_types`` each hallucinated slot carries its type (v0)."""
    out = []
    for q in questions:
        spec = recipe.slots(q)
        n_t = spec.truthful
        out += [
            _Slot(q, f"{q.id}-aug-T" if n_t == 1 else f"{q.id}-aug-T{k}", "truthful", None) for k in range(1, n_t + 1)
        ]
        types = spec.slot_types() if fixed_types else (None,) * spec.hallucinated
        out += [_Slot(q, f"{q.id}-aug-H{k}", "hallucinated", t) for k, t in enumerate(types, 1)]
    return out


def _round_requests(
    open_slots: list[_Slot], templates: Templates, prompts: Prompts, params: GenerationParams, next_index: Counter
) -> tuple[list[ChatRequest], list[list[_Slot]], list[ChatRequest], list[list[_Slot]]]:
    """One generation round's requests, one per (question, kind, mutation type) with n = its open slots:
    (truthful requests, their slot groups, hallucinated requests, their slot groups); ``next_index`` advances."""
    groups: dict[tuple, list[_Slot]] = defaultdict(list)
    for s in open_slots:
        groups[(s.question.id, s.kind, s.mutation_type)].append(s)
    t_reqs: list[ChatRequest] = []
    h_reqs: list[ChatRequest] = []
    t_slots: list[list[_Slot]] = []
    h_slots: list[list[_Slot]] = []
    for key, slots in groups.items():
        qid, kind, mtype = key
        q = slots[0].question
        task = templates.task(q)
        if kind == "truthful":
            text = prompts.truthful.substitute(task=task, answer=_answer(q))
        else:
            text = prompts.hallucinated_text(q, task, mtype)
        req = ChatRequest(as_messages(text), params, n=len(slots), tag=qid, first_index=next_index[key])
        next_index[key] += len(slots)
        (t_reqs if kind == "truthful" else h_reqs).append(req)
        (t_slots if kind == "truthful" else h_slots).append(slots)
    return t_reqs, t_slots, h_reqs, h_slots


def first_round_requests(
    questions: list[BaseQuestion], recipe: Recipe, *, templates: Templates | None = None, prompts: Prompts | None = None
) -> list[ChatRequest]:
    """The generator's requests of the first round (every premise slot open): what a build calls at least, and
    exactly the cache entries a build looks up first (the preflight counts them)."""
    templates = templates or Templates.load()
    prompts = prompts or Prompts.load()
    params = GenerationParams(temperature=recipe.temperature, max_tokens=recipe.max_tokens, seed=recipe.seed)
    slots = slots_for(questions, recipe, fixed_types=prompts.fixed_types)
    t_reqs, _, h_reqs, _ = _round_requests(slots, templates, prompts, params, Counter())
    return t_reqs + h_reqs


@dataclass
class _Generation:
    """One premise generation run: its inputs and what its rounds gave so far (the accepted premises, the
    rejections, the failed calls, the questions set aside after a failed call, the counts, the calls' summary)."""

    questions: list[BaseQuestion]
    recipe: Recipe
    generator: Any
    judge: Any
    validation_config: Any
    extra_check: Callable[[list[Augmentation]], list[Rejection]] | None
    judge_config: Any
    accepted: dict[str, Augmentation] = field(default_factory=dict)
    rejections: list[Rejection] = field(default_factory=list)
    failed: list[Rejection] = field(default_factory=list)
    halted: set[str] = field(default_factory=set)  # questions with a failed call: no further rounds
    stats: Counter[str] = field(default_factory=Counter)
    summary: RunSummary = field(default_factory=RunSummary)


async def _generate_round(
    g: _Generation,
    round_no: int,
    requests: tuple[list[ChatRequest], list[list[_Slot]], list[ChatRequest], list[list[_Slot]]],
) -> dict[str, Augmentation]:
    """Ask the generator for one round's ``requests`` (from ``_round_requests``); the candidate premises by id
    (failed calls, invalid outputs and unusable type choices are recorded in ``g``)."""
    t_reqs, t_slots, h_reqs, h_slots = requests
    candidates: dict[str, Augmentation] = {}
    for reqs, slot_groups, schema in ((t_reqs, t_slots, TruthfulOut), (h_reqs, h_slots, HallucinatedOut)):
        if not reqs:
            continue
        outs = await agenerate_structured(
            g.generator,
            reqs,
            schema,
            desc=f"round {round_no + 1}: {'truthful' if schema is TruthfulOut else 'hallucinated'} premises",
        )
        _merge(g.summary, g.generator.last_summary)
        for slots, results in zip(slot_groups, outs):
            for slot, res in zip(slots, results):
                aug = _candidate(g, slot, res)
                if aug is not None:
                    candidates[slot.aug_id] = aug
    return candidates


def _candidate(g: _Generation, slot: _Slot, res: StructuredResult[Any]) -> Augmentation | None:
    """The premise of one generator output for ``slot``, or None when the call failed (the question is set
    aside), the output is invalid or the generator's type choice is unusable (a rejection)."""
    g.stats["generated"] += 1
    if res.failure is not None:
        g.failed.append(Rejection(slot.aug_id, CALL_FAILED, f"generator call failed: {res.failure.message}"))
        g.halted.add(slot.question.id)
        return None
    if not res.ok:
        g.rejections.append(Rejection(slot.aug_id, "generator_output", f"invalid generator output: {res.errors[-1]}"))
        return None
    v: Any = res.value  # the parsed output model (truthful or hallucinated)
    mtype = slot.mutation_type
    if slot.kind == "hallucinated" and mtype is None:
        mtype, why = _chosen_type(v.mutation_strategy, g.recipe.slots(slot.question), slot.question)
        if why:
            g.rejections.append(Rejection(slot.aug_id, MUTATION_TYPE_CHECK, why))
            return None
    return Augmentation(
        id=slot.aug_id,
        question_id=slot.question.id,
        kind=slot.kind,
        statement=v.statement.strip(),
        truth_verification=getattr(v, "truth_verification", None),
        mutation_type=mtype,
        mutation_strategy=getattr(v, "mutation_strategy", None),
        mutation_logic=getattr(v, "mutation_logic", None),
        generator=g.generator.spec,
    )


def _rule_check(g: _Generation, candidates: dict[str, Augmentation]) -> None:
    """Run the rule checks (with the accepted premises of the same questions) and ``extra_check`` on the
    candidates; a rejected candidate leaves ``candidates`` for ``g.rejections``."""
    if not candidates:
        return
    qids = {a.question_id for a in candidates.values()}
    qs = [q for q in g.questions if q.id in qids]
    pool = [a for a in g.accepted.values() if a.question_id in qids] + list(candidates.values())
    report = run_checks(qs, pool, g.validation_config)
    extra = g.extra_check(list(candidates.values())) if g.extra_check else []
    for r in [*report.rejections, *extra]:
        if r.row_id in candidates:
            g.rejections.append(r)
            candidates.pop(r.row_id)


def _judge_check(g: _Generation, candidates: dict[str, Augmentation]) -> None:
    """The LLM judge's pass over the candidates: a rejected one leaves ``candidates`` for ``g.rejections``,
    one whose judge call failed for ``g.failed`` (its question is set aside)."""
    cand_q = {a.question_id for a in candidates.values()}
    outcome = judge_augmentations(
        [q for q in g.questions if q.id in cand_q], list(candidates.values()), g.judge, config=g.judge_config
    )
    _merge(g.summary, g.judge.last_summary)
    for r in outcome.rejections:
        if r.row_id in candidates:
            if r.check == CALL_FAILED:
                g.failed.append(r)
                g.halted.add(candidates[r.row_id].question_id)
            else:
                g.rejections.append(r)
            candidates.pop(r.row_id)


def _generation_result(g: _Generation, open_slots: list[_Slot], *, fixed: bool) -> GenerationResult:
    """The run's result: the accepted premises in slot order, the slots still open (or set aside) per
    question, the counts and, when the generator chose the types, the types short of their quota."""
    missing: dict[str, list[str]] = defaultdict(list)
    still_open = {s.aug_id for s in open_slots}
    for s in slots_for(g.questions, g.recipe):
        if s.aug_id not in g.accepted and (s.aug_id in still_open or s.question.id in g.halted):
            missing[s.question.id].append(s.aug_id)
    order = {s.aug_id: i for i, s in enumerate(slots_for(g.questions, g.recipe))}
    augs = sorted(g.accepted.values(), key=lambda a: order[a.id])
    g.stats["accepted"] = len(augs)
    g.stats["rejected"] = len(g.rejections)
    g.stats["call_failed"] = len(g.failed)
    short = {} if fixed else _quota_short(g.questions, g.recipe, augs)
    return GenerationResult(augs, g.rejections, dict(missing), dict(g.stats), g.summary, g.failed, short)


async def agenerate_premises(
    questions: list[BaseQuestion],
    recipe: Recipe,
    generator: LLM,
    judge: LLM | None = None,
    *,
    templates: Templates | None = None,
    prompts: Prompts | None = None,
    validation_config: ValidationConfig | None = None,
    extra_check: Callable[[list[Augmentation]], list[Rejection]] | None = None,
    judge_config: JudgeConfig | None = None,
) -> GenerationResult:
    """``extra_check(candidates) -> [Rejection]`` runs after the rule checks (e.g. manual review decisions);
    ``judge_config``: the judge's criteria (phr.validation.judge.JudgeConfig; default the paper's).
    :func:`generate_premises` is the blocking form."""

    templates = templates or Templates.load()
    prompts = prompts or Prompts.load()
    params = GenerationParams(temperature=recipe.temperature, max_tokens=recipe.max_tokens, seed=recipe.seed)
    fixed = prompts.fixed_types
    open_slots = slots_for(questions, recipe, fixed_types=fixed)
    next_index: Counter = Counter()
    g = _Generation(questions, recipe, generator, judge, validation_config, extra_check, judge_config)
    for round_no in range(recipe.regeneration_rounds + 1):
        if not open_slots:
            break
        requests = _round_requests(open_slots, templates, prompts, params, next_index)
        candidates = await _generate_round(g, round_no, requests)
        _drop_halted(candidates, g.halted)
        _rule_check(g, candidates)
        if not fixed:
            for r in _over_quota(questions, recipe, g.accepted, candidates):
                g.rejections.append(r)
                candidates.pop(r.row_id)
        if candidates and judge is not None:
            _judge_check(g, candidates)
        _drop_halted(candidates, g.halted)
        g.accepted.update(candidates)
        open_slots = [s for s in open_slots if s.aug_id not in g.accepted and s.question.id not in g.halted]
    return _generation_result(g, open_slots, fixed=fixed)


generate_premises = blocking(agenerate_premises)


def _chosen_type(strategy: str, spec: SlotSpec, q: BaseQuestion) -> tuple[MutationType | None, str | None]:
    """(type, None) for an accepted choice of the generator, else (None, why it is rejected)."""
    try:
        mtype = parse_mutation_type(strategy)
    except ValueError as e:
        return None, str(e)
    if mtype not in spec.types:
        allowed = ", ".join(t.value for t in spec.types)
        return None, f"the generator chose {mtype.value}; {q.domain.value} questions take only {allowed}"
    return mtype, None


def _over_quota(questions: list[BaseQuestion], recipe: Recipe, accepted: dict, candidates: dict) -> list[Rejection]:
    """Candidates (in slot order) whose type's quota is met and for which no free slot is left."""
    out = []
    by_id = {q.id: q for q in questions}
    kept: dict[str, Counter] = defaultdict(Counter)
    for a in accepted.values():
        if a.kind == "hallucinated":
            kept[a.question_id][a.mutation_type] += 1
    for a in list(candidates.values()):
        spec = recipe.slots(by_id[a.question_id])
        quota = spec.selection_quota()
        if a.kind != "hallucinated" or not quota:
            continue
        have = kept[a.question_id]
        free = spec.hallucinated - sum(quota.values())
        used_free = sum(max(0, n - quota.get(t, 0)) for t, n in have.items())
        if have[a.mutation_type] < quota.get(a.mutation_type, 0) or used_free < free:
            have[a.mutation_type] += 1
            continue
        out.append(
            Rejection(
                a.id,
                QUOTA_CHECK,
                f"{a.mutation_type.value} quota of {quota.get(a.mutation_type, 0)} already met for {a.question_id} "
                "and no free slot is left",
            )
        )
    return out


def _quota_short(
    questions: list[BaseQuestion], recipe: Recipe, augs: list[Augmentation]
) -> dict[str, dict[str, tuple[int, int]]]:
    """Per question, the types whose quota was not met: {type: (kept, quota)}."""
    have: dict[str, Counter] = defaultdict(Counter)
    for a in augs:
        if a.kind == "hallucinated":
            have[a.question_id][a.mutation_type] += 1
    out = {}
    for q in questions:
        quota = recipe.slots(q).selection_quota()
        short = {t.value: (have[q.id][t], n) for t, n in quota.items() if have[q.id][t] < n}
        if short:
            out[q.id] = short
    return out


def _drop_halted(candidates: dict[str, Augmentation], halted: set[str]) -> None:
    """Candidates of questions set aside after a failed call are neither checked further nor accepted."""
    for aug_id in [k for k, a in candidates.items() if a.question_id in halted]:
        candidates.pop(aug_id)


def _merge(into: RunSummary, other: RunSummary) -> None:
    into.merge(other)
