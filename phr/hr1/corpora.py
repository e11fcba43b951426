"""The three Hallucination-R1 corpus kinds and their folder layout (Hub layout: ``README.md`` card with
``configs:``, ``data/<config>-<hash>.parquet``, ``manifest.json``).

- ``hr1-paraphrases``: one config per source (``simplequestions``, ``popqa``, ``truthfulqa``), split = the
  source split, and with more than one source the config ``all`` (the default: every data file, by split);
  one row per question with its K paraphrase results (``PARAPHRASE_COLUMNS``).
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
from pydantic import BaseModel

from phr.core.parquet import arrow_schema_of
from phr.hr1.records import HQuestion, ParaphraseResult, QuestionResult

KINDS = ("hr1-paraphrases", "hr1-sft", "hr1-grpo")
DATA_DIR = "data"
MANIFEST = "manifest.json"
KIND_FIELD = "phr_kind"  # card metadata field naming the corpus kind
ALL_CONFIG = "all"  # with several configs, the default one that holds every data file (as PHRBench's)


def card_configs(files: dict[str, list[tuple[str, str]]]) -> list[dict]:
    """The card's ``configs:`` from the data files of each config (``{config: [(split, path), ...]}``): one
    entry per config, and with more than one the ``all`` config, the default, listing every file by split (so
    that ``load_dataset(FOLDER)`` loads every row); a lone config is the default itself."""
    out: list[dict] = [
        {
            "config_name": c,
            "data_files": [{"split": s, "path": p} for s, p in parts],
            **({"default": True} if len(files) == 1 else {}),
        }
        for c, parts in files.items()
    ]
    if len(files) > 1:
        by_split: dict[str, list[str]] = {}
        for parts in files.values():
            for s, p in parts:
                by_split.setdefault(s, []).append(p)
        every = [{"split": s, "path": ps if len(ps) > 1 else ps[0]} for s, ps in by_split.items()]
        out.append({"config_name": ALL_CONFIG, "data_files": every, "default": True})
    return out


class ChatMessage(BaseModel):
    """One chat message of a corpus row (TRL's conversational format)."""

    role: str
    content: str


class SFTRow(BaseModel):
    """One ``hr1-sft`` row: a consistent paraphrase paired with the gold answer, as chat ``messages``."""

    id: str  # f"{question_id}-p{k}"
    question_id: str
    source: str
    split: str
    question: str
    paraphrase: str
    answer: str
    license: str
    messages: list[ChatMessage]


class GRPORow(BaseModel):
    """One ``hr1-grpo`` row: a question the QA model answers correctly, with Listing B.1 applied as ``prompt``."""

    prompt_id: str  # sha256 of (question id, question text)[:16], stable across builds
    question_id: str
    source: str
    split: str
    question: str
    answers: list[str]
    license: str
    prompt: list[ChatMessage]


# the narrow integer columns of the released files (the records say int)
_NARROW = {"k": pa.int32(), "factual_score": pa.int8()}

# a corpus is built from complete runs only (builders/hr1.py stops on a failed call), so ``failed`` is never a column
_RUN_ONLY = ("failed",)

PARAPHRASE_STRUCT = pa.struct(list(arrow_schema_of(ParaphraseResult, exclude=_RUN_ONLY, overrides=_NARROW)))

#: one schema per kind, derived from the records its rows are made of (``hr1-paraphrases``: a question's
#: ``HQuestion`` fields, its ``meta`` as key/value pairs, then its ``QuestionResult`` with the paraphrases)
SCHEMAS: dict[str, pa.Schema] = {
    "hr1-paraphrases": pa.schema(
        [
            *arrow_schema_of(HQuestion, overrides=_NARROW),
            *arrow_schema_of(
                QuestionResult, exclude=("question", *_RUN_ONLY), overrides=_NARROW
            ),  # no nested "question"
        ]
    ),
    "hr1-sft": arrow_schema_of(SFTRow),
    "hr1-grpo": arrow_schema_of(GRPORow),
}


def data_files(folder: str | Path) -> list[Path]:
    """Every ``data/*.parquet`` of a corpus folder, sorted."""
    return sorted((Path(folder) / DATA_DIR).glob("*.parquet"))


def sft_target(answer: str) -> str:
    """The assistant message of an SFT row: the gold answer in Listing B.4's tags (the paper does not print
    its SFT target format; this is the format its QA prompt asks for)."""
    return f"<answer>{answer}</answer>"
