"""The 24 prompt-level features of PHRBench §5.3 (Appendix E.1 is lost: definitions in docs/analyses.md).

    table = extract_features(instances, judge="openai:gpt-4o")   # B+H instances -> FeatureTable
    table.matrix()                                                 # rows x 24 floats, NaN = missing

Twelve **structural** features are computed from the row (:func:`structural_features`); twelve **semantic**
ones are rated by an LLM judge through ``phr.llm.judge`` with the cited prompt
``prompts/feature_extraction.txt`` (:data:`SEMANTIC_JUDGE`): cached, re-asked on invalid JSON, and an item the
judge leaves unjudged gets NaN for every semantic feature and is counted (``FeatureTable.unjudged``).
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

from pydantic import BaseModel, ConfigDict, Field

from phr.bench.conditions import Condition
from phr.bench.instance import Instance
from phr.llm.client import LLM
from phr.llm.judge import JudgeItem, JudgeTemplate, LLMJudge

if TYPE_CHECKING:  # pragma: no cover - numpy is imported where a matrix is made
    import numpy as np

_WORD = re.compile(r"[a-z0-9]+")  # tokens for word counts and the Jaccard overlap: lower-cased alphanumeric runs
_NUMBER = re.compile(r"(?<![\w.])[-+]?\d+(?:[.,]\d+)*(?:[eE][-+]?\d+)?")
_SENTENCE_END = re.compile(r"[.!?]+(?:\s+|$)")

#: structural features, computed exactly (name -> the paper's name or ours; docs/analyses.md defines each)
STRUCTURAL: dict[str, str] = {
    "total_prompt_length": "Total Prompt Length",
    "total_prompt_words": "Total Prompt Words",
    "question_length": "Question Length",
    "question_words": "Question Words",
    "candidate_count": "Candidate Count",
    "premise_length": "Premise Length",
    "premise_words": "Premise Words",
    "premise_sentences": "Premise Sentences",
    "premise_question_overlap": "Premise-Question Overlap",
    "premise_numbers": "Numbers in Premise",
    "question_numbers": "Numbers in Question",
    "premise_position": "Premise Position",
}


Rating = Annotated[int, Field(ge=0, le=4)]  # a 0-4 scale of the judge
Flag = Annotated[int, Field(ge=0, le=1)]  # a 0/1 flag of the judge


class SemanticFeatures(BaseModel):
    """The judge's structured verdict: twelve integer ratings (0-4 scales; 0/1 flags)."""

    model_config = ConfigDict(extra="ignore")

    domain_rule_violation: Rating
    error_locality: Rating
    applicability_mismatch: Rating
    premise_plausibility: Rating
    answer_dependence: Rating
    expertise_required: Rating
    claim_explicitness: Rating
    reasoning_depth: Rating
    assertive_tone: Rating
    numeric_distortion: Flag
    terminology_misuse: Flag
    pseudoscientific_mechanism: Flag


SEMANTIC: dict[str, str] = {
    "domain_rule_violation": "Domain-Rule Violation",
    "error_locality": "Error Locality",
    "applicability_mismatch": "Applicability Mismatch",
    "premise_plausibility": "Premise Plausibility",
    "answer_dependence": "Answer Dependence",
    "expertise_required": "Expertise Required",
    "claim_explicitness": "Claim Explicitness",
    "reasoning_depth": "Reasoning Depth",
    "assertive_tone": "Assertive Tone",
    "numeric_distortion": "Numeric Distortion",
    "terminology_misuse": "Terminology Misuse",
    "pseudoscientific_mechanism": "Pseudoscientific Mechanism",
}
assert list(SEMANTIC) == list(SemanticFeatures.model_fields)
FEATURES: tuple[str, ...] = (*STRUCTURAL, *SEMANTIC)
LABELS: dict[str, str] = STRUCTURAL | SEMANTIC

PROMPT_FILE = Path(__file__).parent / "prompts" / "feature_extraction.txt"
SEMANTIC_JUDGE = LLMJudge(
    SemanticFeatures, JudgeTemplate(PROMPT_FILE, syntax="fields", comment="#"), max_tokens=400, desc="features"
)


def words(text: str | None) -> list[str]:
    """The word tokens of ``text``: lower-cased runs of ASCII letters and digits."""
    return _WORD.findall((text or "").lower())


def jaccard(a: str | None, b: str | None) -> float:
    """|A ∩ B| / |A ∪ B| of the two texts' word-token sets (0 when both are empty)."""
    sa, sb = set(words(a)), set(words(b))
    return len(sa & sb) / len(sa | sb) if sa | sb else 0.0


def count_numbers(text: str | None) -> int:
    """Numbers written with digits (an integer, decimal, thousands-separated or scientific literal counts once)."""
    return len(_NUMBER.findall(text or ""))


def count_sentences(text: str | None) -> int:
    """Sentences: runs of text ended by ``.``/``!``/``?`` followed by space or the end, plus an unended tail."""
    text = (text or "").strip()
    if not text:
        return 0
    parts = [p for p in _SENTENCE_END.split(text) if p.strip()]
    return len(parts)


def structural_features(inst: Instance) -> dict[str, float]:
    """The twelve structural features of a B+H row (lengths in characters unless named ``_words``)."""
    prompt, question, premise = inst.prompt, inst.question or "", inst.premise or ""
    at = prompt.find(premise) if premise else -1
    return {
        "total_prompt_length": float(len(prompt)),
        "total_prompt_words": float(len(words(prompt))),
        "question_length": float(len(question)),
        "question_words": float(len(words(question))),
        "candidate_count": float(len(inst.options)),
        "premise_length": float(len(premise)),
        "premise_words": float(len(words(premise))),
        "premise_sentences": float(count_sentences(premise)),
        "premise_question_overlap": jaccard(premise, question),
        "premise_numbers": float(count_numbers(premise)),
        "question_numbers": float(count_numbers(question)),
        "premise_position": at / len(prompt) if at >= 0 and prompt else math.nan,
    }


def judge_item(inst: Instance) -> JudgeItem:
    options = "\n".join(f"{i + 1}. {o}" for i, o in enumerate(inst.options)) or "(none: not multiple choice)"
    fields = {"question": inst.question or "", "options": options, "premise": inst.premise or "", "answer": inst.answer}
    return JudgeItem({k: v if v is not None else "" for k, v in fields.items()}, tag=inst.id)


@dataclass
class FeatureTable:
    """One row per B+H prompt: ids, the 24 features (NaN = missing), and the judge's bookkeeping."""

    instance_ids: list[str]
    question_ids: list[str]
    rows: list[dict[str, float]]
    judge: str | None = None
    judge_prompt_sha256: str | None = None
    unjudged: list[str] = field(default_factory=list)  # instance ids the judge left without a valid verdict

    def matrix(self) -> np.ndarray:
        import numpy as np

        return np.array([[r.get(f, math.nan) for f in FEATURES] for r in self.rows], dtype=np.float64)


def hallucinated(instances: Sequence[Instance]) -> list[Instance]:
    """The B+H rows, in order; a row without a premise is an error naming it."""
    out = [i for i in instances if i.condition == Condition.B_H.value]
    bad = [i.id for i in out if not i.premise]
    if bad:
        raise ValueError(f"B+H row(s) without a premise: {', '.join(bad[:5])}")
    return out


def extract_features(instances: Sequence[Instance], judge: LLM | str | None) -> FeatureTable:
    """The 24 features of every B+H instance; ``judge`` None leaves the semantic ones missing (NaN)."""
    rows_in = hallucinated(instances)
    rows = [structural_features(i) for i in rows_in]
    unjudged: list[str] = []
    if judge is None:
        unjudged = [i.id for i in rows_in]
        for r in rows:
            r.update(dict.fromkeys(SEMANTIC, math.nan))
    else:
        for r, inst, out in zip(rows, rows_in, SEMANTIC_JUDGE.judge(judge, [judge_item(i) for i in rows_in])):
            if out.verdict is None:
                unjudged.append(inst.id)
                r.update(dict.fromkeys(SEMANTIC, math.nan))
            else:
                r.update({k: float(v) for k, v in out.verdict.model_dump().items()})
    spec = None if judge is None else (judge if isinstance(judge, str) else getattr(judge, "spec", str(judge)))
    return FeatureTable(
        [i.id for i in rows_in],
        [i.question_id for i in rows_in],
        rows,
        judge=None if spec is None else str(spec),
        judge_prompt_sha256=SEMANTIC_JUDGE.version,
        unjudged=unjudged,
    )
