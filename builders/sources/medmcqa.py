"""MedMCQA (Pal et al. 2022): Indian medical entrance exam (AIIMS / NEET PG) 4-option questions -> Biomedicine."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from phr.bench.records import BaseQuestion

from . import _common as c

NAME = "medmcqa"
TITLE = "MedMCQA"
LICENSE = "Apache-2.0"  # as stated on the Hub card (openlifescienceai/medmcqa)
HUB_ID = "openlifescienceai/medmcqa"
PACKAGE: str | None = None
FILES = {"train": "train.json", "dev": "dev.json", "test": "test.json"}
FORMAT = (
    "train.json / dev.json (JSON Lines despite the .json name): question, opa, opb, opc, opd, "
    "cop (1-4), subject_name, topic_name, id, exp, choice_type"
)
DEFAULT_SPLITS = ("train", "dev")  # the released test split has no answers
_HUB_SPLITS = {"train": "train", "dev": "validation", "test": "test"}


def parse_row(row: dict, cop_base: int = 1) -> BaseQuestion:
    """One MedMCQA row -> multiple-choice question. `cop_base`: 1 for the released files, 0 on the Hub."""
    options = [c.text(row, k) for k in ("opa", "opb", "opc", "opd")]
    cop = row.get("cop")
    if cop is None:
        raise c.RowProblem("missing field 'cop' (the released test split has no answers)")
    try:
        index = int(str(cop).strip()) - cop_base
    except ValueError:
        index = -1
    if not 0 <= index < 4:
        raise c.RowProblem(f"bad answer label cop={cop!r} (expected {cop_base}-{cop_base + 3})")
    return c.multiple_choice(
        options,
        index,
        source=NAME,
        source_row_id=c.text(row, "id"),
        license=LICENSE,
        question=c.text(row, "question"),
        label=c.optional(row, "subject_name"),
    )


def load(
    source_dir: str | Path | None = None,
    *,
    online: bool = False,
    splits: str | Sequence[str] | None = None,
    subjects: str | Sequence[str] | None = None,
) -> list[BaseQuestion]:
    """MedMCQA questions; `splits` among train/dev/test (default: train and dev, those present locally);
    `subjects` keeps rows whose subject_name matches (case-insensitive). Row ids are MedMCQA's `id`.
    """
    wanted = c.wanted_list(splits)
    for s in wanted or ():
        c.check_option(s, list(FILES), "MedMCQA split")
    keep = {s.strip().lower() for s in c.wanted_list(subjects) or []}

    def parse(row: dict, cop_base: int) -> BaseQuestion | None:
        if keep and str(row.get("subject_name") or "").strip().lower() not in keep:
            return None
        return parse_row(row, cop_base)

    out: list[BaseQuestion] = []
    ids = c.RowIndex(TITLE)
    if source_dir is not None:
        defaults = {k: v for k, v in FILES.items() if wanted or k in DEFAULT_SPLITS}
        for _split, path in c.source_files(source_dir, defaults, wanted, key=NAME, on_missing=_missing):
            out += c.parse_rows(str(path), c.jsonl_rows(path), lambda row, _i: parse(row, 1), ids)
    elif online:
        for split in wanted or DEFAULT_SPLITS:
            data = c.hub_load(HUB_ID, TITLE, split=_HUB_SPLITS[split])
            origin = f"hf://datasets/{HUB_ID} ({_HUB_SPLITS[split]})"
            out += c.parse_rows(origin, c.hub_rows(data), lambda row, _i: parse(row, 0), ids)
    else:
        raise _missing()
    return c.check_unique(out, TITLE)


def _missing(detail: str = "") -> c.SourceNotFoundError:
    return c.not_found(TITLE, HUB_ID, "train.json, dev.json (test.json has no answers)", PACKAGE, detail)
