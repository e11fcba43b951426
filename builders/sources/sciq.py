"""SciQ (Welbl et al. 2017): crowd-sourced science exam questions with three distractors -> Physics."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from phr.bench.records import BaseQuestion

from . import _common as c

NAME = "sciq"
TITLE = "SciQ"
LICENSE = "CC-BY-NC-3.0"
HUB_ID = "allenai/sciq"
PACKAGE: str | None = None
FILES = {"train": "train.json", "valid": "valid.json", "test": "test.json"}
FORMAT = (
    "train.json / valid.json / test.json: JSON arrays of {question, distractor1, distractor2, distractor3, "
    "correct_answer, support}"
)
SPLITS = tuple(FILES)
_HUB_SPLITS = {"train": "train", "valid": "validation", "test": "test"}


def parse_row(row: dict, split: str, index: int) -> BaseQuestion:
    """One SciQ row (released file or Hub) -> a multiple-choice question: the answer and the distinct distractors
    (4 options, fewer when they repeat; fewer than 2 rejects the row)."""
    row_id = f"{split}/{index}"
    options, answer_index = c.hashed_order(
        f"{NAME}/{row_id}", c.text(row, "correct_answer"), [c.text(row, f"distractor{k}") for k in (1, 2, 3)]
    )
    return c.multiple_choice(
        options, answer_index, source=NAME, source_row_id=row_id, license=LICENSE, question=c.text(row, "question")
    )


def load(
    source_dir: str | Path | None = None, *, online: bool = False, splits: str | Sequence[str] | None = None
) -> list[BaseQuestion]:
    """SciQ questions from `source_dir` (released JSON files) or, with online=True, from the Hub.

    `splits`: any of "train", "valid", "test" (default: every split present). Row ids are
    "<split>/<0-based index in the file>".
    """
    wanted = c.wanted_list(splits)
    for s in wanted or ():
        if s not in FILES:
            raise c.SourceOptionError(f"unknown SciQ split {s!r}; expected one of {list(FILES)}")
    out: list[BaseQuestion] = []
    ids = c.RowIndex(TITLE)
    if source_dir is not None:
        for split, path in c.source_files(source_dir, FILES, wanted, key=NAME, on_missing=_missing):
            out += c.parse_rows(str(path), c.json_array_rows(path), lambda row, i: parse_row(row, split, i), ids)
    elif online:
        for split in wanted or SPLITS:
            data = c.hub_load(HUB_ID, TITLE, split=_HUB_SPLITS[split])
            origin = f"hf://datasets/{HUB_ID} ({_HUB_SPLITS[split]})"
            out += c.parse_rows(origin, c.hub_rows(data), lambda row, i: parse_row(row, split, i), ids)
    else:
        raise _missing()
    return c.check_unique(out, TITLE)


def _missing(detail: str = "") -> c.SourceNotFoundError:
    return c.not_found(TITLE, HUB_ID, ", ".join(FILES.values()), PACKAGE, detail)
