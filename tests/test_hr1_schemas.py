"""Hallucination-R1 Arrow schemas derived from their records (phr.core.parquet.arrow_schema_of), as PHRBench's
are from ``Instance``: the same files as the schemas written out by hand before, and a new record field is a new
column without a second edit."""

from __future__ import annotations

import pyarrow as pa
import pytest
from pydantic import BaseModel

from phr.core.parquet import arrow_schema_of, arrow_type
from phr.hr1.corpora import SCHEMAS, GRPORow, SFTRow
from phr.hr1.records import ParaphraseResult

# the schemas as they were written out by hand (main at f496069): the released files keep this layout
_MSG = pa.list_(pa.struct([("role", pa.string()), ("content", pa.string())]))

PARAPHRASE_STRUCT = pa.struct(
    [
        ("k", pa.int32()),
        ("text", pa.string()),
        ("parse_error", pa.string()),
        ("consistent", pa.bool_()),
        ("consistency_think", pa.string()),
        ("s_selfbleu", pa.float64()),
        ("s_embed", pa.float64()),
        ("r_div", pa.float64()),
        ("mean_div", pa.float64()),
        ("qa_answer", pa.string()),
        ("qa_extraction", pa.string()),
        ("factual_score", pa.int8()),
        ("correctness", pa.string()),
    ]
)

WRITTEN = {
    "hr1-paraphrases": pa.schema(
        [
            ("id", pa.string()),
            ("source", pa.string()),
            ("split", pa.string()),
            ("source_row_id", pa.string()),
            ("question", pa.string()),
            ("answers", pa.list_(pa.string())),
            ("license", pa.string()),
            ("meta", pa.list_(pa.struct([("key", pa.string()), ("value", pa.string())]))),  # source fields
            ("qa_answer", pa.string()),
            ("qa_extraction", pa.string()),
            ("factual_score", pa.int8()),
            ("correctness", pa.string()),
            ("paraphrases", pa.list_(PARAPHRASE_STRUCT)),
        ]
    ),
    "hr1-sft": pa.schema(
        [
            ("id", pa.string()),  # f"{question_id}-p{k}"
            ("question_id", pa.string()),
            ("source", pa.string()),
            ("split", pa.string()),
            ("question", pa.string()),
            ("paraphrase", pa.string()),
            ("answer", pa.string()),
            ("license", pa.string()),
            ("messages", _MSG),
        ]
    ),
    "hr1-grpo": pa.schema(
        [
            ("prompt_id", pa.string()),  # sha256 of (question id, question text)[:16], stable across builds
            ("question_id", pa.string()),
            ("source", pa.string()),
            ("split", pa.string()),
            ("question", pa.string()),
            ("answers", pa.list_(pa.string())),
            ("license", pa.string()),
            ("prompt", _MSG),
        ]
    ),
}


@pytest.mark.parametrize("kind", sorted(WRITTEN))
def test_derived_schemas_are_the_released_layout(kind):
    assert SCHEMAS[kind].equals(WRITTEN[kind], check_metadata=True), SCHEMAS[kind]


def test_a_new_record_field_is_a_new_column():
    class Extended(ParaphraseResult):
        judge_model: str | None = None
        scores: tuple[float, ...] = ()

    schema = arrow_schema_of(Extended, overrides={"k": pa.int32()})
    assert schema.names[-2:] == ["judge_model", "scores"]
    assert schema.field("scores").type == pa.list_(pa.float64()) and schema.field("k").type == pa.int32()


def test_rows_the_builders_write_are_their_records():
    sft = {
        "id": "q-p0", "question_id": "q", "source": "simplequestions", "split": "train", "question": "Who?",
        "paraphrase": "Who is it?", "answer": "Ann", "license": "CC-BY-3.0",
        "messages": [{"role": "user", "content": "Who is it?"}, {"role": "assistant", "content": "<answer>Ann</answer>"}],
    }  # fmt: skip
    assert SFTRow.model_validate(sft).model_dump() == sft
    table = pa.Table.from_pylist([sft], schema=SCHEMAS["hr1-sft"])
    assert table.to_pylist() == [sft]
    with pytest.raises(ValueError):
        GRPORow.model_validate({**sft, "prompt_id": "x"})  # no answers, no prompt


def test_types_without_an_arrow_form_are_named():
    class Odd(BaseModel):
        when: complex

    with pytest.raises(TypeError, match="field 'when': no Arrow type"):
        arrow_schema_of(Odd)
    with pytest.raises(TypeError, match="field 'x': no Arrow type for the union"):
        arrow_type(int | str, "x")
