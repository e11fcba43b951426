"""PHRBench records: the vocabularies (domains, task types, mutation types, conditions) and the rows that cross
module boundaries before assembly (base questions, augmentations, judgements).

Every stage (sources -> augmentation -> assembly -> evaluation -> judging) reads and writes these,
so a field renamed here is renamed everywhere. They are pydantic models: constructing one validates it.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import Enum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

PremiseKind = Literal["truthful", "hallucinated"]  # what an augmentation inserts as premise


class _Record(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Domain(str, Enum):
    CHEMISTRY = "Chemistry"
    BIOMEDICINE = "Biomedicine"
    PHYSICS = "Physics"
    CODE = "Code"


class TaskType(str, Enum):
    MULTIPLE_CHOICE = "multiple_choice"
    OPEN_ENDED = "open_ended"
    CODE = "code"


class MutationType(str, Enum):
    RULE_CONTRADICTION = "Rule Contradiction"
    STATE_DISTORTION = "State Distortion"
    PSEUDOSCIENTIFIC_ENTANGLEMENT = "Pseudoscientific Entanglement"


class Condition(str, Enum):
    """PHRBench evaluation conditions: baseline, baseline + truthful, baseline + hallucinated."""

    B = "B"
    B_T = "B+T"
    B_H = "B+H"


class BaseQuestion(_Record):
    """One standardized question taken from a source benchmark."""

    id: str
    source: str
    source_row_id: str
    license: str
    domain: Domain
    subtype: str
    task_type: TaskType
    question: str
    options: list[str] = Field(default_factory=list)
    answer: str
    answer_index: int | None = None
    code_signature: str | None = None
    code_tests: str | None = None
    entry_point: str | None = None
    reference_solution: str | None = None


def question_row(q: BaseQuestion) -> dict[str, Any]:
    """The columns of a dataset row that carry question ``q`` (every field; the id as ``question_id``).

    With :func:`question_from_row` this is the one place that decides what a question is, so a question read
    back from a built dataset is the question the builder checked (e.g. the code signature the model sees)."""
    row = q.model_dump(mode="json")
    row["question_id"] = row.pop("id")
    return row


def question_from_row(row: Mapping[str, Any]) -> BaseQuestion:
    """The BaseQuestion a dataset row carries (inverse of :func:`question_row`); pydantic's ValidationError
    names a missing or bad field. Columns an older dataset lacks are read as unset."""
    fields = {name: row.get("question_id" if name == "id" else name) for name in BaseQuestion.model_fields}
    fields["options"] = list(fields["options"] if fields["options"] is not None else [])
    return BaseQuestion.model_validate(fields)


class Augmentation(_Record):
    """A premise statement added to a question: truthful (T) or hallucinated (H)."""

    id: str
    question_id: str
    kind: PremiseKind
    statement: str
    truth_verification: str | None = None
    mutation_type: MutationType | None = None
    mutation_strategy: str | None = None
    mutation_logic: str | None = None
    generator: str


class Judgement(_Record):
    """An LLM judge's verdict on a response or an augmentation."""

    target_id: str
    sample: int | None = None
    judge: str
    label: str
    passed: bool | None = None
    rationale: str | None = None
