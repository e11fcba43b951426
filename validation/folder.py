"""Validate a built PHRBench folder: card metadata, data files, ids, and every row-level check.

Rows are read back from the published parquet files, so a user can re-validate a download and an edit
to any premise is caught and named by its instance id.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from pydantic import ValidationError

from phr.bench.conditions import CONFIGS, condition_spec
from phr.bench.folder import CARD_CONFIGS, DATA_DIR, read_rows
from phr.bench.records import Augmentation, BaseQuestion, Condition, question_from_row
from phr.core.parquet import hashed_name_mismatch
from phr.core.report import Rejection, ValidationReport
from phr.hub.card import README, CardError, card_configs, missing_data_files
from phr.hub.kinds import ArtifactKind
from phr.validation.checks import run_checks
from phr.validation.expectations import SUITE_FILE, run_suite
from phr.validation.review import review_rejections


def _card_checks(folder: Path) -> list[Rejection]:
    try:
        configs = card_configs(folder)
    except CardError as e:
        return [Rejection(README, "card", str(e))]
    out = [
        Rejection(README, "card", f"no config {n!r} in the card's configs") for n in CARD_CONFIGS if n not in configs
    ]
    out += [
        Rejection(README, "card", f"config {name!r} names {p}, which does not exist")
        for name, p in missing_data_files(folder, configs)
    ]
    return out


def _hash_checks(folder: Path) -> list[Rejection]:
    """Each ``data/<name>-<hash>.parquet`` still holds the bytes its name was made from (phr.core.parquet):
    `datasets` caches by file path, so a file edited under its old name would serve stale rows."""
    out = []
    for p in sorted((folder / DATA_DIR).glob("*.parquet")):
        if (bad := hashed_name_mismatch(p)) is not None:
            out.append(
                Rejection(
                    f"{DATA_DIR}/{p.name}",
                    "content_hash",
                    f"the name says content hash {bad[0]}, the file's content hashes to {bad[1]}: "
                    "it was edited after the build; rebuild the folder instead of editing it",
                )
            )
    return out


def _first_error(e: Exception) -> str:
    if isinstance(e, ValidationError):
        err = e.errors()[0]
        return f"field {'.'.join(map(str, err['loc']))}: {err['msg']}"
    return f"missing column {e}"


def validate_folder(folder: str | Path) -> ValidationReport:

    folder = Path(folder)
    report = ValidationReport()
    if not folder.is_dir():
        report.extend([Rejection(str(folder), "folder", "not a folder")])
        return report
    report.extend(_card_checks(folder))
    report.extend(_hash_checks(folder))
    rows = read_rows(folder)
    for n in CONFIGS:
        if n not in rows:
            report.extend([Rejection(f"data/{n}-*.parquet", "folder", "missing data file")])
    # dataset-level expectations shipped with the data (validation/expectations.py, Great Expectations)

    if (folder / SUITE_FILE).exists():
        report.extend(run_suite(folder))
    else:
        report.extend([Rejection(SUITE_FILE, "expectations", "missing: the dataset ships no expectation suite")])
    if len(rows) < len(CONFIGS):
        return report
    ids = Counter(r["id"] for rs in rows.values() for r in rs)
    report.extend(Rejection(i, "ids", f"instance id appears {c} times") for i, c in ids.items() if c > 1)
    questions: dict[str, BaseQuestion] = {}
    for r in rows[condition_spec(Condition.B).config]:
        try:
            questions[r["question_id"]] = question_from_row(r)
        except (ValidationError, KeyError) as e:
            report.extend([Rejection(r.get("id") or "?", "schema:baseline", _first_error(e))])
    augs, instance_of = [], {}
    for kind, cfg in ((c.premise, c.config) for c in map(condition_spec, (Condition.B_T, Condition.B_H))):
        for r in rows[cfg]:
            if r["question_id"] not in questions:
                report.extend([Rejection(r["id"], "ids", f"question {r['question_id']} has no baseline row")])
                continue
            try:
                augs.append(
                    Augmentation(
                        id=r["augmentation_id"],
                        question_id=r["question_id"],
                        kind=kind,
                        statement=r["premise"] or "",
                        truth_verification=r["truth_verification"],
                        mutation_type=r["mutation_type"],
                        mutation_strategy=r["mutation_strategy"],
                        mutation_logic=r["mutation_logic"],
                        generator=r["generator"] or "",
                    )
                )
            except (ValidationError, KeyError) as e:
                report.extend([Rejection(r.get("id") or "?", f"schema:{cfg}", _first_error(e))])
                continue
            instance_of[r["augmentation_id"]] = r["id"]
    checked = run_checks(list(questions.values()), augs)
    report.extend(
        Rejection(
            f"{instance_of[x.row_id]} (augmentation {x.row_id})" if x.row_id in instance_of else x.row_id,
            x.check,
            x.reason,
        )
        for x in checked.rejections
    )
    # manual review round (validation/review.py): premises rejected by a reviewer, stale decisions

    report.extend(review_rejections(folder, rows))
    report.rows = {n: len(r) for n, r in rows.items()}
    return report


def is_phrbench_folder(folder: Path, configs: dict) -> bool:
    """A dataset folder whose card declares PHRBench's condition configs."""
    return set(CONFIGS) <= set(configs)


#: PHRBench datasets for the hub gate (entry point ``phr.hub.kinds``: phrbench).
PHRBENCH = ArtifactKind("phrbench", "dataset", is_phrbench_folder, validate_folder)
