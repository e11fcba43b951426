"""The PHRBench instance row, declared once.

``Instance`` is the row a model is prompted with (one per question and condition). From it derive the Arrow
schema of the data files (``arrow_schema``), the column roles the pandera schema and the Great Expectations
suite check (``COLUMNS``), and the reader of a built row (``Instance.from_row``). A column's role is one of

- ``core``: in every instance frame, never null or empty;
- ``dataset``: never null in a built dataset (optional in partial frames, e.g. an evaluation's test rows);
- ``optional``: may be null.
"""

from __future__ import annotations

import types
import typing
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

import pyarrow as pa
from pydantic import BaseModel, ConfigDict, Field

from phr.bench.conditions import CONDITION_VALUES
from phr.bench.records import Domain, MutationType, TaskType

if TYPE_CHECKING:  # the Literals are built from the enums at run time (for pydantic), which mypy cannot follow
    ConditionValue = str
    DomainValue = str
    TaskTypeValue = str
    MutationTypeValue = str
else:
    ConditionValue = Literal[CONDITION_VALUES]
    DomainValue = Literal[tuple(d.value for d in Domain)]
    TaskTypeValue = Literal[tuple(t.value for t in TaskType)]
    MutationTypeValue = Literal[tuple(m.value for m in MutationType)]


def _dataset(default: Any = None) -> Any:
    return Field(default=default, json_schema_extra={"role": "dataset"})


class Instance(BaseModel):
    """One PHRBench row: a question under one condition (columns in data-file order)."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    id: str
    question_id: str
    condition: ConditionValue
    domain: DomainValue
    subtype: str
    task_type: TaskTypeValue
    source: str | None = _dataset()
    source_row_id: str | None = _dataset()
    license: str | None = _dataset()
    question: str | None = _dataset()
    options: tuple[str, ...] = ()
    answer: str | None = _dataset()
    answer_index: int | None = None
    code_signature: str | None = None
    entry_point: str | None = None
    code_tests: str | None = None
    reference_solution: str | None = None
    augmentation_id: str | None = None
    premise: str | None = None
    truth_verification: str | None = None
    mutation_type: MutationTypeValue | None = None
    mutation_strategy: str | None = None
    mutation_logic: str | None = None
    generator: str | None = None
    prompt: str

    @classmethod
    def from_row(cls, row: dict) -> Instance:
        """An instance from a data-file row (``options`` null -> empty)."""
        return cls.model_validate({**row, "options": tuple(row.get("options") or ())})


@dataclass(frozen=True)
class Column:
    name: str
    kind: str  # text | enum | list | int
    role: str  # core | dataset | optional
    values: tuple[str, ...] = ()  # the vocabulary of an enum column

    @property
    def not_null(self) -> bool:
        return self.role in ("core", "dataset")


def _unwrap(annotation: Any) -> tuple[Any, bool]:
    """(the type without ``| None``, whether None was allowed)."""
    if isinstance(annotation, types.UnionType) or typing.get_origin(annotation) is typing.Union:
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        return args[0], True
    return annotation, False


def _column(name: str, field: Any) -> Column:
    tp, _ = _unwrap(field.annotation)
    extra = field.json_schema_extra or {}
    role = "core" if field.is_required() else extra.get("role", "optional")
    if typing.get_origin(tp) is Literal:
        return Column(name, "enum", role, tuple(typing.get_args(tp)))
    if typing.get_origin(tp) is tuple:
        return Column(name, "list", role)
    return Column(name, "int" if tp is int else "text", role)


COLUMNS: tuple[Column, ...] = tuple(_column(n, f) for n, f in Instance.model_fields.items())
COLUMN_NAMES: tuple[str, ...] = tuple(c.name for c in COLUMNS)
NOT_NULL: tuple[str, ...] = tuple(c.name for c in COLUMNS if c.not_null)
#: the columns an augmentation fills (null under B): from augmentation_id up to the prompt
PREMISE_COLUMNS: tuple[str, ...] = COLUMN_NAMES[COLUMN_NAMES.index("augmentation_id") : COLUMN_NAMES.index("prompt")]
_ARROW = {"text": pa.string(), "enum": pa.string(), "list": pa.list_(pa.string()), "int": pa.int64()}


def arrow_schema() -> pa.Schema:
    """The Arrow schema of every PHRBench data file."""
    return pa.schema([(c.name, _ARROW[c.kind]) for c in COLUMNS])


def column(name: str) -> Column:
    return next(c for c in COLUMNS if c.name == name)


_CARD_DTYPE = {"text": "string", "enum": "string", "int": "int64"}


def card_features() -> list[dict]:
    """The ``dataset_info.features`` block of the card (the Hub's YAML form of the Arrow schema)."""
    return [
        {"name": c.name, "list": "string"} if c.kind == "list" else {"name": c.name, "dtype": _CARD_DTYPE[c.kind]}
        for c in COLUMNS
    ]
