"""PHRBench's behavioural resolution (paper Appendix D.1): how a response to a B+H instance handled its
hallucinated premise, as labelled by an LLM judge.

    res = judge_resolutions("openai:gpt-4o", [(instance, response), ...])
    res[0].label   # "Heuristic Correction" | "Hallucination Compliance" | "Hallucination Avoidance" (or None)
    insightful(res[0].label, correct=True)

The judge answers two booleans: ``uses_premise``, the paper's A(r,h) (Appendix D.1: the response "treats h as
valid and materially uses it as evidence, a constraint, or an intermediate premise in deriving its answer"),
and ``corrects_premise`` (C(r,h), ours: the second property is lost from the paper's text);
:func:`resolution_label` maps them to the paper's labels (``phr.bench.metrics.RESOLUTIONS``). Prompt:
``eval/prompts/resolution_judge.txt`` (version ``PROMPT_VERSION``, recorded in results; docs/metrics.md).
Calls go through the LLM-judge helper (``phr.llm.judge``) at temperature 0, n=1, so they are cached and a
rerun makes no calls.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel, ConfigDict, StrictBool, StrictStr

from phr.bench.metrics import (
    HALLUCINATION_AVOIDANCE,
    HALLUCINATION_COMPLIANCE,
    HEURISTIC_CORRECTION,
    RESOLUTIONS,
)
from phr.llm import LLM
from phr.llm.judge import JudgeItem, JudgeTemplate, LLMJudge

from .dataset import Instance

__all__ = [
    "PROMPT_PATH",
    "PROMPT_VERSION",
    "RESOLUTIONS",
    "TEMPLATE",
    "Resolution",
    "ResolutionJudgement",
    "insightful",
    "judge_resolutions",
    "prompt_hash",
    "resolution_judge",
    "resolution_label",
    "resolution_prompt",
]

PROMPT_PATH = Path(__file__).with_name("prompts") / "resolution_judge.txt"
_NONE = "(not given)"


class ResolutionJudgement(BaseModel):
    """The judge's JSON reply (booleans must be JSON booleans; extra keys are ignored)."""

    model_config = ConfigDict(extra="ignore")

    uses_premise: StrictBool  # A(r, h)
    corrects_premise: StrictBool  # C(r, h)
    rationale: StrictStr


@dataclass(frozen=True)
class Resolution:
    """One judged response: its label, the judge's two booleans (``accepts_premise`` is A(r, h)) and rationale,
    and the judge's spec."""

    label: str
    accepts_premise: bool
    corrects_premise: bool
    rationale: str
    judge: str


def resolution_label(accepts: bool, corrects: bool) -> str:
    """C(r,h) -> Heuristic Correction (even if h was also used); A(r,h) only -> Hallucination Compliance;
    neither -> Hallucination Avoidance (ours: the paper's rules after A(r,h) are lost)."""
    if corrects:
        return HEURISTIC_CORRECTION
    return HALLUCINATION_COMPLIANCE if accepts else HALLUCINATION_AVOIDANCE


def insightful(label: str, correct: bool) -> bool:
    """Insightful (paper §5.2): Heuristic Correction and a correct final answer."""
    if label not in RESOLUTIONS:
        raise ValueError(f"unknown resolution {label!r}: expected one of {', '.join(RESOLUTIONS)}")
    return label == HEURISTIC_CORRECTION and correct is True


#: The judge prompt, read once (``#`` header lines stripped; ``TEMPLATE.version`` is the file's SHA-256).
TEMPLATE = JudgeTemplate(PROMPT_PATH, syntax="format", comment="#")


#: The judge prompt's version (its header's "version N"): 2 = built around the paper's A(r, h).
def _prompt_version() -> int:
    found = re.search(r"version (\d+)", PROMPT_PATH.read_text(encoding="utf-8").splitlines()[0])
    if found is None:
        raise ValueError(f"{PROMPT_PATH}: its first line names no 'version N'")
    return int(found.group(1))


PROMPT_VERSION = _prompt_version()


def prompt_hash() -> str:
    """Hex SHA-256 of the judge prompt file (header included, so a version bump changes it)."""
    return TEMPLATE.version


def resolution_judge(max_tokens: int = 256, max_reasks: int = 2) -> LLMJudge[ResolutionJudgement]:
    """The resolution judge: ``TEMPLATE``, the ``ResolutionJudgement`` verdict, temperature 0, n = 1."""
    return LLMJudge(
        ResolutionJudgement, TEMPLATE, max_tokens=max_tokens, max_reasks=max_reasks, desc="judging resolution"
    )


def _check(inst: Instance) -> None:
    if inst.condition != "B+H" or not (inst.premise or "").strip():
        raise ValueError(
            f"instance {inst.id!r} ({inst.condition}) has no hallucinated premise: "
            "resolution is judged on B+H instances only"
        )


def _task(inst: Instance) -> str:
    """The instance prompt without its leading ``Premise: ...`` block (the whole prompt if it has none)."""
    head = f"Premise: {(inst.premise or '').strip()}"
    prompt = inst.prompt.strip()
    return prompt[len(head) :].strip() if prompt.startswith(head) else prompt


def _fields(inst: Instance, response: str) -> dict[str, str]:
    _check(inst)
    why = (
        "\n".join(
            f"{name}: {val.strip()}"
            for name, val in (
                ("Mutation type", inst.mutation_type),
                ("What was changed", inst.mutation_logic),
                ("Verification", inst.truth_verification),
            )
            if val and val.strip()
        )
        or _NONE
    )
    return {
        "question": _task(inst),
        "premise": (inst.premise or "").strip(),
        "why_false": why,
        "response": response.strip() or "(empty response)",
    }


def resolution_prompt(inst: Instance, response: str) -> str:
    """The judge's user prompt for one B+H instance and the model's response to it."""
    return TEMPLATE.render(_fields(inst, response))


def judge_resolutions(
    judge: LLM | str,
    items: Sequence[tuple[Instance, str]],
    *,
    max_reasks: int = 2,
    max_tokens: int = 256,
    desc: str = "judging resolution",
) -> list[Resolution | None]:
    """Label every ``(B+H instance, response)`` pair, in order.

    ``judge``: an LLM or a model spec. One temperature-0 request per item, tagged with the instance id.
    An item whose judge reply is still invalid after ``max_reasks`` re-asks gives None (unjudged). Raises
    ValueError, before any call, if an instance is not B+H (has no hallucinated premise).
    """
    work = [JudgeItem(_fields(inst, response), tag=inst.id) for inst, response in items]
    if not work:
        return []
    llm = judge if isinstance(judge, LLM) else LLM(judge)
    judged = resolution_judge(max_tokens, max_reasks).judge(llm, work, desc=desc)
    out: list[Resolution | None] = []
    for j in judged:
        v = j.verdict
        out.append(
            None
            if v is None
            else Resolution(
                resolution_label(v.uses_premise, v.corrects_premise),
                v.uses_premise,
                v.corrects_premise,
                v.rationale.strip(),
                llm.spec,
            )
        )
    return out
