"""Typed rows of the Hallucination-R1 pipeline: source questions, paraphrases, judgements, QA answers.

Every stage takes and returns these, so the corpus builders, the evaluation and the GRPO rewards share one
vocabulary (paper §3.1 notation: x the question, y a paraphrase, z the QA model's answer).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from phr.hr1.names import SOURCES  # noqa: F401 (re-exported)


class HQuestion(BaseModel):
    """One source question x with its gold answer(s).

    ``answers[0]`` is the reference answer given to the B.3 judge; every entry counts for PopQA exact match.
    ``id`` is derived from the content (``phr.hr1.ids.content_id``): the same question has the same id in every
    file; ``source_row_id`` is the row in the file it was read from (``ids.legacy_id`` rebuilds the old id)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    source: str
    split: str
    source_row_id: str
    question: str = Field(min_length=1)
    answers: tuple[str, ...] = Field(min_length=1)
    license: str
    meta: dict[str, str] = Field(default_factory=dict)  # source fields kept as text (subject id, popularity, ...)

    @field_validator("answers")
    @classmethod
    def _answers_not_blank(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        if not all(a.strip() for a in v):
            raise ValueError("a gold answer is empty")
        return v

    @property
    def answer(self) -> str:
        """The reference answer (the first)."""
        return self.answers[0]


def question_id(source: str, split: str, row_id: str) -> str:
    """The old, positional id (``phr.hr1.ids.legacy_id``); loaders now use ``phr.hr1.ids.content_id``."""
    return f"{source}-{split}-{row_id}".replace("/", "-")


class Paraphrase(BaseModel):
    """Sample k of the paraphraser for question ``question_id``: the ``<paraphrase>`` text, or None with the
    reason it could not be read (``parse_error``); ``raw`` is the whole reply."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    question_id: str
    k: int
    raw: str
    text: str | None
    parse_error: str | None = None
    finish_reason: str | None = None
    failed: str | None = None  # the call failed after retries (the reason): a missing value


class ConsistencyVerdict(BaseModel):
    """Listing B.2's output: ``result`` 1 = the paraphrase keeps the question's meaning."""

    model_config = ConfigDict(extra="ignore")

    think: str = ""
    result: Literal[0, 1]

    @field_validator("think", mode="before")
    @classmethod
    def _think_text(cls, v: object) -> str:
        return v if isinstance(v, str) else "" if v is None else str(v)


class FactualVerdict(BaseModel):
    """Listing B.3's output: 0 exact match, 1 fuzzy match (parent-child class or abbreviation), 2 mismatch."""

    model_config = ConfigDict(extra="ignore")

    think: str = ""
    result: Literal[0, 1, 2]

    @field_validator("think", mode="before")
    @classmethod
    def _think_text(cls, v: object) -> str:
        return v if isinstance(v, str) else "" if v is None else str(v)


class QAAnswer(BaseModel):
    """The QA model's reply to one question text: the ``<answer>`` content, or the recorded fallback."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    text: str  # the answer used for grading
    raw: str
    extraction: Literal["tag", "unclosed_tag", "whole_reply", "empty"]
    finish_reason: str | None = None
    failed: str | None = None  # the call failed after retries (the reason): no answer, a missing value


Correctness = Literal["correct", "fuzzy", "wrong", "unjudged", "failed"]


class ParaphraseResult(BaseModel):
    """Everything known about paraphrase k of one question after a run: its text (or why there is none),
    the B.2 consistency verdict, the diversity scores (App. A.1, filled when computed), and the target QA
    model's answer to it with its grade.

    ``consistent`` is None when there is no paraphrase text or the judge left it unjudged: for the metrics
    it is not consistent (it cannot be a robustness failure), and the counts of such rows are reported.

    ``failed`` names the step whose model call failed after all retries and why (``paraphrase``, ``consistency
    judge``, ``qa`` or ``grading``): the value is missing, not measured; the tables leave it out of their
    denominators and the run is partial (docs/hr1.md, "Failed calls")."""

    model_config = ConfigDict(extra="forbid")

    k: int
    text: str | None
    parse_error: str | None = None
    consistent: bool | None = None
    consistency_think: str | None = None
    s_selfbleu: float | None = None
    s_embed: float | None = None
    r_div: float | None = None
    mean_div: float | None = None  # Table 1's per-paraphrase diversity score (docs/hr1.md, "Mean Div")
    qa_answer: str | None = None
    qa_extraction: str | None = None
    factual_score: int | None = None  # B.3: 0 exact, 1 fuzzy, 2 mismatch (None: not judged / EM graded)
    correctness: Correctness | None = None  # None: not asked (inconsistent or no text)
    failed: str | None = None  # "<step>: <reason>" of a call that failed after retries (a missing value)


class QuestionResult(BaseModel):
    """One question of a run: the original question's QA answer and grade, and its paraphrase results."""

    model_config = ConfigDict(extra="forbid")

    question: HQuestion
    qa_answer: str | None = None
    qa_extraction: str | None = None
    factual_score: int | None = None
    correctness: Correctness | None = None
    failed: str | None = None  # "<step>: <reason>" when the original question's QA or grading call failed
    paraphrases: list[ParaphraseResult] = Field(default_factory=list)

    @property
    def originally_correct(self) -> bool:
        return self.correctness == "correct"
