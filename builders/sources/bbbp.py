"""MoleculeNet BBBP (blood-brain barrier penetration) -> Chemistry, as a yes/no multiple-choice question.

Offline, with no `source_dir`, the installed B3DB package (qc-b3db) stands in for BBBP: a larger,
CC0 BBB-permeability database with the same BBB+/BBB- labels. Its rows have source "b3db".
"""

from __future__ import annotations

from pathlib import Path

from phr.bench.records import BaseQuestion

from . import _common as c

NAME = "bbbp"
TITLE = "MoleculeNet BBBP"
LICENSE = "unknown"  # MoleculeNet/DeepChem distribute BBBP without an explicit data license
# A Hub dataset repo holding the original MoleculeNet BBBP.csv (num,name,p_np,smiles); the file is read with
# the same parser as a local copy, so ids match. (Scaffold-split copies such as zpn/bbbp drop `num`.)
HUB_ID = "chao1224/MoleculeSTM"
HUB_FILE = "MoleculeNet_data/bbbp/raw/BBBP.csv"
PACKAGE: str | None = "qc-b3db"  # the offline stand-in (B3DB), not BBBP itself
FILES = {"bbbp": "BBBP.csv"}
FORMAT = "BBBP.csv: CSV with header num,name,p_np,smiles (p_np 1 = penetrates, 0 = does not)"

STANDIN_SOURCE = "b3db"
STANDIN_TITLE = "B3DB (Meng et al. 2021, classification set)"
STANDIN_LICENSE_FALLBACK = "CC0-1.0"
STANDIN_FILE = ("B3DB", "B3DB_classification.tsv")
STANDIN_NOTE = (
    "MoleculeNet BBBP was not available offline, so its questions were built from B3DB "
    "(B3DB_classification.tsv of the qc-b3db package; Meng et al., Sci. Data 8:289, 2021; CC0-1.0), "
    "a curated BBB-permeability database compiled from 50 published sources, with the same BBB+/BBB- label "
    "semantics; compounds, counts and class balance differ from BBBP. "
    "Rows have source 'b3db' and B3DB's own compound numbers as ids."
)

COLUMNS = ("num", "p_np", "smiles")  # the columns read (name is optional)
STANDIN_COLUMNS = ("NO.", "SMILES", "BBB+/BBB-")

OPTIONS = ["Yes, it is BBB-permeable (BBB+)", "No, it is not BBB-permeable (BBB-)"]


def question_text(smiles: str, name: str | None) -> str:
    """The question; purely numeric BBBP 'names' (compound codes) are left out."""
    label = f" ({name})" if name and not name.isdigit() else ""
    return f"Can the molecule with SMILES {smiles}{label} cross the blood-brain barrier?"


def _question(source: str, license: str, row_id: str, smiles: str, name: str | None, permeable: bool) -> BaseQuestion:
    return c.multiple_choice(
        OPTIONS,
        0 if permeable else 1,
        source=source,
        source_row_id=row_id,
        license=license,
        question=question_text(smiles, name),
    )


def parse_row(row: dict) -> BaseQuestion:
    """One BBBP.csv row -> question (row id: BBBP's `num`)."""
    label = c.text(row, "p_np")
    if label not in ("0", "1"):
        raise c.RowProblem(f"bad p_np label {label!r} (expected 0 or 1)")
    return _question(NAME, LICENSE, c.text(row, "num"), c.text(row, "smiles"), c.optional(row, "name"), label == "1")


def parse_b3db_row(row: dict, license: str = STANDIN_LICENSE_FALLBACK) -> BaseQuestion:
    """One B3DB_classification.tsv row -> question (row id: B3DB's `NO.`)."""
    label = c.text(row, "BBB+/BBB-")
    if label not in ("BBB+", "BBB-"):
        raise c.RowProblem(f"bad BBB+/BBB- label {label!r} (expected BBB+ or BBB-)")
    name = c.optional(row, "compound_name")
    return _question(STANDIN_SOURCE, license, c.text(row, "NO."), c.text(row, "SMILES"), name, label == "BBB+")


def load_b3db(path: str | Path | None = None) -> list[BaseQuestion]:
    """The B3DB stand-in: `path` or the installed qc-b3db package's B3DB_classification.tsv."""
    file = Path(path) if path is not None else c.package_file(*STANDIN_FILE)
    if file is None or not file.is_file():
        raise _missing(f"{path or 'the qc-b3db package'} has no {STANDIN_FILE[1]}")
    license = c.package_license(PACKAGE or "", STANDIN_LICENSE_FALLBACK)
    rows = c.csv_rows(file, delimiter="\t", required=STANDIN_COLUMNS)
    parsed = c.parse_rows(str(file), rows, lambda row, _i: parse_b3db_row(row, license), c.RowIndex(STANDIN_TITLE))
    return c.check_unique(parsed, STANDIN_TITLE)


def load(source_dir: str | Path | None = None, *, online: bool = False) -> list[BaseQuestion]:
    """BBBP questions from `source_dir` (BBBP.csv, or B3DB_classification.tsv for the stand-in).

    Without `source_dir`: the Hub copy when online=True (the stand-in is a different dataset, so an
    explicit online request wins over it), else the installed B3DB stand-in (source "b3db").
    """
    if source_dir is not None:
        if Path(source_dir).name == STANDIN_FILE[1]:
            return load_b3db(source_dir)
        out: list[BaseQuestion] = []
        ids = c.RowIndex(TITLE)
        for _part, path in c.source_files(source_dir, FILES, None, key=NAME, on_missing=_missing):
            out += c.parse_rows(str(path), c.csv_rows(path, required=COLUMNS), lambda row, _i: parse_row(row), ids)
        return c.check_unique(out, TITLE)
    if online:
        try:
            from huggingface_hub import hf_hub_download

            downloaded = hf_hub_download(HUB_ID, HUB_FILE, repo_type="dataset")
        except Exception as e:  # noqa: BLE001 - network, offline mode...
            raise c.SourceNotFoundError(f"could not download {HUB_FILE} from {HUB_ID}: {type(e).__name__}: {e}") from e
        rows = c.csv_rows(Path(downloaded), required=COLUMNS)
        parsed = c.parse_rows(downloaded, rows, lambda row, _i: parse_row(row), c.RowIndex(TITLE))
        return c.check_unique(parsed, TITLE)
    if c.package_file(*STANDIN_FILE) is not None:
        return load_b3db()
    raise _missing()


def _missing(detail: str = "") -> c.SourceNotFoundError:
    return c.not_found(TITLE, f"{HUB_ID} (file {HUB_FILE})", FILES["bbbp"], f"{PACKAGE} (the B3DB stand-in)", detail)
