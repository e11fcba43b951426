"""The three Hallucination-R1 corpus kinds and their folder layout (Hub layout: ``README.md`` card with
``configs:``, ``data/<config>-<hash>.parquet``, ``manifest.json``).

- ``hr1-paraphrases``: one config per source (``simplequestions``, ``popqa``, ``truthfulqa``), split = the
  source split; one row per question with its K paraphrase results (``PARAPHRASE_COLUMNS``).
- ``hr1-sft`` (App. E.1): consistent paraphrases of SimpleQuestions train paired with the gold answer, as chat
  ``messages`` for TRL's SFTTrainer; config ``default``, split ``train``.
- ``hr1-grpo`` (App. C.1): SimpleQuestions train questions the QA model answers correctly, with a stable
  ``prompt_id``, the paraphrase prompt applied (``prompt``, chat messages) and the gold answer for the reward;
  config ``default``, split ``train``.

The card's ``phr_kind`` field names the kind (the hub gate's ``matches`` reads it).
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa

KINDS = ("hr1-paraphrases", "hr1-sft", "hr1-grpo")
DATA_DIR = "data"
MANIFEST = "manifest.json"
KIND_FIELD = "phr_kind"  # card metadata field naming the corpus kind

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

SCHEMAS: dict[str, pa.Schema] = {
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


def data_files(folder: str | Path) -> list[Path]:
    """Every ``data/*.parquet`` of a corpus folder, sorted."""
    return sorted((Path(folder) / DATA_DIR).glob("*.parquet"))


def sft_target(answer: str) -> str:
    """The assistant message of an SFT row: the gold answer in Listing B.4's tags (the paper does not print
    its SFT target format; this is the format its QA prompt asks for)."""
    return f"<answer>{answer}</answer>"
