"""GPQA (Rein et al. 2023): graduate-level, "Google-proof" questions in physics, chemistry and biology.

PHRBench uses GPQA open-ended (the default): the question without options, answer = "Correct Answer".
`multiple_choice=True` gives the 4-option form with a deterministic option order.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from phr.bench.records import BaseQuestion, Domain, TaskType

from .. import taxonomy
from . import _common as c

NAME = "gpqa"
TITLE = "GPQA"
LICENSE = "CC-BY-4.0"
HUB_ID = "Idavidrein/gpqa"  # gated: accept the terms on the Hub and log in first
PACKAGE: str | None = None
FILES = {"main": "gpqa_main.csv", "diamond": "gpqa_diamond.csv", "extended": "gpqa_extended.csv"}
FORMAT = (
    "gpqa_main.csv / gpqa_diamond.csv / gpqa_extended.csv (from the password-protected release zip): CSV with "
    'header incl. "Question", "Correct Answer", "Incorrect Answer 1".."3", "Subdomain", "High-level domain", '
    '"Record ID"'
)


def parse_row(row: dict, multiple_choice: bool = False) -> BaseQuestion:
    """One GPQA row (released CSV or Hub) -> open-ended (default) or multiple-choice question."""
    row_id = c.text(row, "Record ID")
    common: dict[str, Any] = dict(  # make()'s keyword arguments
        source=NAME,
        source_row_id=row_id,
        license=LICENSE,
        question=c.text(row, "Question"),
        label=c.optional(row, "Subdomain"),
        domain_label=c.text(row, "High-level domain"),
    )
    answer = c.text(row, "Correct Answer")
    if not multiple_choice:
        return c.make(task_type=TaskType.OPEN_ENDED, answer=answer, **common)
    wrong = [c.text(row, f"Incorrect Answer {k}") for k in (1, 2, 3)]
    options, answer_index = c.hashed_order(f"{NAME}/{row_id}", answer, wrong)
    return c.multiple_choice(options, answer_index, **common)


COLUMNS = ("Record ID", "Question", "Correct Answer", "High-level domain")  # read in both modes
MC_COLUMNS = (*COLUMNS, *(f"Incorrect Answer {k}" for k in (1, 2, 3)))  # and for multiple choice


def _domains(domains: str | Sequence[str] | None) -> set[Domain] | None:
    """PHRBench domains ("Biomedicine") or GPQA high-level domains ("Biology") -> PHRBench domains."""
    out: set[Domain] = set()
    for d in c.wanted_list(domains) or []:
        try:
            out.add(Domain(d))
        except ValueError:
            try:
                out.add(taxonomy.domain_for(NAME, d))
            except taxonomy.TaxonomyError as e:
                raise c.SourceOptionError(str(e)) from None
    return out or None


def load(
    source_dir: str | Path | None = None,
    *,
    online: bool = False,
    subset: str = "main",
    multiple_choice: bool = False,
    domains: str | Sequence[str] | None = None,
) -> list[BaseQuestion]:
    """GPQA questions of `subset` ("main", "diamond", "extended"), optionally only some `domains`.

    Row ids are GPQA's "Record ID" (e.g. "recXXXXXXXXXXXXXX"), so a question has the same id in every subset.
    """
    c.check_option(subset, list(FILES), "GPQA subset")
    keep = _domains(domains)
    out: list[BaseQuestion] = []
    ids = c.RowIndex(TITLE)
    if source_dir is not None:
        path = Path(source_dir).expanduser()
        base = path / "dataset" if path.is_dir() and (path / "dataset" / FILES[subset]).is_file() else path
        wanted = None if path.is_file() else [subset]
        for _part, file in c.source_files(base, FILES, wanted, key=NAME, on_missing=_missing):
            rows = c.csv_rows(file, required=MC_COLUMNS if multiple_choice else COLUMNS)
            out += c.parse_rows(str(file), rows, lambda row, _i: parse_row(row, multiple_choice), ids)
    elif online:
        data = c.hub_load(HUB_ID, TITLE, name=f"gpqa_{subset}", split="train")
        origin = f"hf://datasets/{HUB_ID} (gpqa_{subset}/train)"
        out = c.parse_rows(origin, c.hub_rows(data), lambda row, _i: parse_row(row, multiple_choice), ids)
    else:
        raise _missing()
    return c.check_unique([q for q in out if keep is None or q.domain in keep], TITLE)


def _missing(detail: str = "") -> c.SourceNotFoundError:
    return c.not_found(TITLE, f"{HUB_ID} (gated; config gpqa_main)", ", ".join(FILES.values()), PACKAGE, detail)
