"""pandera schemas for the DataFrames of base questions, augmentations and instances.

The columns are the fields of phr.bench.records.BaseQuestion / Augmentation / Instance (one row per record,
enums as their string values, `options` as a list). `validate_frame(df, which)` runs the schema lazily and
turns every failure into a Rejection naming the row id (or "<which>" for a frame-level problem such as a
missing column or a wrong dtype).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache
from typing import Any, Literal

import pandas as pd
import pandera.pandas as pa
from pandera.errors import SchemaError, SchemaErrors

from phr.bench.conditions import CONDITION_VALUES, PREMISE_KINDS
from phr.bench.instance import COLUMNS as INSTANCE_COLUMNS
from phr.bench.instance import Column
from phr.bench.records import Condition, Domain, MutationType, TaskType
from phr.core.report import Rejection

from .config import SchemaConfig

Which = Literal["questions", "augmentations", "instances"]
FRAMES: tuple[str, ...] = ("questions", "augmentations", "instances")

DOMAINS = [d.value for d in Domain]
TASK_TYPES = [t.value for t in TaskType]
MUTATION_TYPES = [m.value for m in MutationType]
CONDITIONS = list(CONDITION_VALUES)
KINDS = list(PREMISE_KINDS)

_NON_EMPTY = r"\s*\S"  # re.match: at least one non-space character


def _text(required: bool = True, nullable: bool = False, pattern: str | None = None, unique: bool = False) -> pa.Column:
    checks = [pa.Check.str_matches(_NON_EMPTY, name="non_empty", error="empty text")]
    if pattern:
        checks.append(pa.Check.str_matches(pattern, name="id_format", error=f"does not match {pattern}"))
    return pa.Column(str, checks=checks, nullable=nullable, required=required, unique=unique, coerce=nullable)


def _enum(values: list[str], nullable: bool = False, required: bool = True) -> pa.Column:
    return pa.Column(str, pa.Check.isin(values), nullable=nullable, required=required, coerce=nullable)


def _optional_text() -> pa.Column:
    # absent, None or text; no non-empty requirement (an empty optional field is odd but not invalid)
    return pa.Column(str, nullable=True, required=False, coerce=True)


# ---- frame-level (row-wise) rules ------------------------------------------------------------------


def _col(df: pd.DataFrame, name: str) -> pd.Series:
    return df[name] if name in df.columns else pd.Series([None] * len(df), index=df.index, dtype=object)


def _mc_consistent(df: pd.DataFrame) -> pd.Series:
    """Multiple-choice rows: >= 2 options, answer_index in range, options[answer_index] == answer."""
    is_mc = _col(df, "task_type").eq(TaskType.MULTIPLE_CHOICE.value).to_numpy()
    out = pd.Series(True, index=df.index)
    if not is_mc.any():
        return out
    sub = df[is_mc]
    ok = []
    for opts, idx, ans in zip(_col(sub, "options"), _col(sub, "answer_index"), _col(sub, "answer"), strict=True):
        try:
            i = int(idx)
            ok.append(isinstance(opts, list | tuple) and len(opts) >= 2 and 0 <= i < len(opts) and opts[i] == ans)
        except (TypeError, ValueError):
            ok.append(False)
    out[is_mc] = ok
    return out


def _code_consistent(df: pd.DataFrame) -> pd.Series:
    """Domain Code <=> task_type code; code rows carry an entry point and a reference solution."""
    dom_code = _col(df, "domain").eq(Domain.CODE.value)
    task_code = _col(df, "task_type").eq(TaskType.CODE.value)
    has = _col(df, "reference_solution").notna() & _col(df, "entry_point").notna()
    return dom_code.eq(task_code) & (~task_code | has)


def _condition_fields(df: pd.DataFrame) -> pd.Series:
    """B: no premise, no augmentation, no mutation type. B+T: premise + augmentation, no mutation type.
    B+H: premise + augmentation + mutation type."""
    cond = _col(df, "condition")
    premise = _col(df, "premise").notna()
    aug = _col(df, "augmentation_id").notna()
    mut = _col(df, "mutation_type").notna()
    is_b, is_t, is_h = (cond.eq(c.value) for c in (Condition.B, Condition.B_T, Condition.B_H))
    return (
        (is_b & ~premise & ~aug & ~mut)
        | (is_t & premise & aug & ~mut)
        | (is_h & premise & aug & mut)
        | ~(is_b | is_t | is_h)
    )


def _premise_in_prompt(df: pd.DataFrame) -> pd.Series:
    """A premise, when present, appears verbatim in the prompt."""
    if "prompt" not in df.columns:  # reported as a missing column
        return pd.Series(True, index=df.index)
    premise, prompt = _col(df, "premise"), _col(df, "prompt")
    ok = [not isinstance(p, str) or (isinstance(q, str) and p in q) for p, q in zip(premise, prompt, strict=True)]
    return pd.Series(ok, index=df.index)


_FRAME_RULES: dict[str, tuple[tuple[str, Callable[[pd.DataFrame], pd.Series], str], ...]] = {
    "questions": (
        ("mc_answer", _mc_consistent, "multiple-choice row needs >= 2 options and options[answer_index] == answer"),
        (
            "code_fields",
            _code_consistent,
            "domain Code must go with task_type code, which needs entry_point and reference_solution",
        ),
    ),
    "augmentations": (),
    "instances": (
        (
            "condition_fields",
            _condition_fields,
            "condition B has no premise/augmentation/mutation_type, B+T has premise and augmentation but no mutation_type, B+H has all three",
        ),
        ("premise_in_prompt", _premise_in_prompt, "the premise does not appear in the prompt"),
    ),
}


# ---- schemas ------------------------------------------------------------------------------------------


_ID_PATTERNS = {"id": "instance_id_pattern", "question_id": "question_id_pattern"}


def _instance_column(c: Column, config: SchemaConfig) -> pa.Column:
    """The pandera column of an instance-row column (phr.bench.instance): core columns are required and
    non-empty, dataset columns non-empty when present, optional ones may be null."""
    required, nullable = c.role == "core", c.role == "optional"
    if c.kind == "enum":
        return _enum(list(c.values), nullable=nullable, required=required)
    if c.kind == "list":
        return pa.Column(object, nullable=True, required=False)
    if c.kind == "int":
        return pa.Column(float, pa.Check.ge(0), nullable=True, required=False, coerce=True)
    if nullable:
        return _optional_text()
    pattern = getattr(config, _ID_PATTERNS[c.name]) if c.name in _ID_PATTERNS else None
    return _text(required=required, pattern=pattern, unique=c.name == "id")


@lru_cache(maxsize=16)
def schema(which: Which, config: SchemaConfig = SchemaConfig()) -> pa.DataFrameSchema:
    """The pandera schema of one frame ("questions", "augmentations" or "instances")."""
    if which == "questions":
        columns = {
            "id": _text(pattern=config.question_id_pattern, unique=True),
            "source": _text(),
            "source_row_id": _text(required=False),
            "license": _text(required=False),
            "domain": _enum(DOMAINS),
            "subtype": _text(),
            "task_type": _enum(TASK_TYPES),
            "question": _text(),
            "options": pa.Column(object, nullable=True, required=False),
            "answer": _text(),
            "answer_index": pa.Column(float, pa.Check.ge(0), nullable=True, required=False, coerce=True),
            "code_signature": _optional_text(),
            "code_tests": _optional_text(),
            "entry_point": _optional_text(),
            "reference_solution": _optional_text(),
        }
    elif which == "augmentations":
        columns = {
            "id": _text(pattern=config.augmentation_id_pattern, unique=True),
            "question_id": _text(pattern=config.question_id_pattern),
            "kind": _enum(KINDS),
            "statement": _text(),
            "truth_verification": _optional_text(),
            "mutation_type": _enum(MUTATION_TYPES, nullable=True, required=False),
            "mutation_strategy": _optional_text(),
            "mutation_logic": _optional_text(),
            "generator": _text(),
        }
    elif which == "instances":
        columns = {c.name: _instance_column(c, config) for c in INSTANCE_COLUMNS}
    else:
        raise ValueError(f"unknown frame {which!r}; expected one of {FRAMES}")
    checks = [pa.Check(fn, name=name, error=text) for name, fn, text in _FRAME_RULES[which]]
    return pa.DataFrameSchema(columns, checks=checks, strict=False, name=which)


# ---- DataFrames from records ---------------------------------------------------------------------------


def to_frame(rows: Any) -> pd.DataFrame:
    """A DataFrame from a DataFrame (returned as is), pydantic records, or dicts."""
    if isinstance(rows, pd.DataFrame):
        return rows
    rows = list(rows)
    return pd.DataFrame([r.model_dump(mode="json") if hasattr(r, "model_dump") else dict(r) for r in rows])


# ---- running a schema ------------------------------------------------------------------------------------


def _row_ids(df: pd.DataFrame, which: str) -> Callable[[Any], str]:
    ids = df["id"] if "id" in df.columns else None

    def row_id(index: Any) -> str:
        if index is None or (isinstance(index, float) and pd.isna(index)):
            return f"<{which}>"
        if ids is not None:
            try:
                value = ids.loc[index]
            except KeyError:
                value = None
            if isinstance(value, pd.Series):  # duplicated index label
                value = value.iloc[0]
            if isinstance(value, str) and value:
                return value
        return f"<{which}>[{index}]"

    return row_id


def _short(value: Any, n: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= n else text[: n - 3] + "..."


def _reason(case: dict[str, Any]) -> str:
    check = str(case.get("check"))
    column = case.get("column")
    value = case.get("failure_case")
    where = f"column {column!r}" if isinstance(column, str) and column and column != case.get("schema_context") else ""
    if check == "not_nullable":
        return f"{where}: missing value (null) in a required field"
    if check == "field_uniqueness":
        return f"{where}: duplicate value {_short(value)}"
    if check == "column_in_dataframe":
        return f"missing column {_short(value)}"
    if check.startswith("dtype("):
        return f"{where}: wrong dtype {_short(value)}, expected {check[6:-1]}"
    if check.startswith("coerce_dtype("):
        return f"{where}: value {_short(value)} cannot be read as {check[13:-1]}"
    return f"{where}: value {_short(value)} fails {check}".lstrip(": ")


def validate_frame(df: pd.DataFrame, which: Which, config: SchemaConfig | None = None) -> list[Rejection]:
    """Validate `df` against the `which` schema; every failure becomes a Rejection (check "schema:<which>")."""
    sch = schema(which, config or SchemaConfig())
    try:
        sch.validate(df, lazy=True)
    except SchemaErrors as e:
        cases = e.failure_cases
    except SchemaError as e:  # non-lazy failure modes (should not happen with lazy=True)
        return [Rejection(f"<{which}>", f"schema:{which}", str(e))]
    else:
        return []
    # frame-level checks: pandera reports them by their error text (older versions: by name)
    messages = {c.name: c.error for c in sch.checks} | {c.error: c.error for c in sch.checks}
    row_id = _row_ids(df, which)
    out: list[Rejection] = []
    seen: set[tuple[str, str]] = set()
    for case in cases.to_dict("records"):
        check, column, value = str(case.get("check")), case.get("column"), case.get("failure_case")
        rid = row_id(case.get("index"))
        if check in ("non_empty", "empty text"):
            text = f"column {column!r}: empty text"
        elif check == "id_format" or check.startswith("does not match "):
            text = f"column {column!r}: value {_short(value)} does not match the id format {check[15:] if check != 'id_format' else ''}".rstrip()
        elif check in messages:
            text = messages[check]
        else:
            text = _reason(case)
        key = (rid, text)
        if key in seen:  # frame-level checks report one case per column of a failing row
            continue
        seen.add(key)
        out.append(Rejection(rid, f"schema:{which}", text))
    return out
