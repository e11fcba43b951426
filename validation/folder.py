"""Validate a built PHRBench folder: card metadata, data files, ids, and every row-level check.

Rows are read back from the published parquet files, so a user can re-validate a download and an edit
to any premise is caught and named by its instance id.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pyarrow.parquet as pq
from pydantic import ValidationError

from phr.records import Augmentation, BaseQuestion
from phr.validation.report import Rejection, ValidationReport

CONFIGS = ("baseline", "truthful", "hallucinated")


def _card_checks(folder: Path) -> list[Rejection]:
    from datasets.utils.metadata import MetadataConfigs
    from huggingface_hub import DatasetCard

    readme = folder / "README.md"
    if not readme.exists():
        return [Rejection("README.md", "card", "missing README.md (dataset card)")]
    try:
        card = DatasetCard.load(readme)
        configs = MetadataConfigs.from_dataset_card_data(card.data)
        for name, cfg in configs.items():
            MetadataConfigs._raise_if_data_files_field_not_valid(cfg)
    except Exception as e:  # any parser complaint is a card failure
        return [Rejection("README.md", "card", f"card metadata does not parse: {e}")]
    missing = [n for n in (*CONFIGS, "all") if n not in configs]
    out = [Rejection("README.md", "card", f"no config {n!r} in the card's configs") for n in missing]
    for name, cfg in configs.items():
        for df in cfg.get("data_files", []):
            paths = df["path"] if isinstance(df["path"], list) else [df["path"]]
            out += [Rejection("README.md", "card", f"config {name!r} names {p}, which does not exist")
                    for p in paths if not any(folder.glob(p))]
    return out


def data_file(folder: Path, name: str) -> Path | None:
    """``data/<name>-<hash>.parquet`` (or ``data/<name>.parquet``) of a built folder."""
    found = sorted((folder / "data").glob(f"{name}-*.parquet")) or sorted((folder / "data").glob(f"{name}.parquet"))
    return found[0] if found else None


def _hash_checks(folder: Path) -> list[Rejection]:
    """Each ``data/<name>-<hash>.parquet`` still holds the bytes its name was made from (builders/hub_folder.py):
    `datasets` caches by file path, so a file edited under its old name would serve stale rows."""
    from phr.builders.hub_folder import hashed_name_mismatch

    out = []
    for p in sorted((folder / "data").glob("*.parquet")):
        if (bad := hashed_name_mismatch(p)) is not None:
            out.append(Rejection(f"data/{p.name}", "content_hash",
                                 f"the name says content hash {bad[0]}, the file's content hashes to {bad[1]}: "
                                 "it was edited after the build; rebuild the folder instead of editing it"))
    return out


def load_rows(folder: Path) -> dict[str, list[dict]]:
    return {n: pq.read_table(p).to_pylist() for n in CONFIGS if (p := data_file(folder, n)) is not None}


def _first_error(e: Exception) -> str:
    if isinstance(e, ValidationError):
        err = e.errors()[0]
        return f"field {'.'.join(map(str, err['loc']))}: {err['msg']}"
    return f"missing column {e}"


def _question(r: dict) -> BaseQuestion:
    return BaseQuestion(
        id=r["question_id"], source=r["source"], source_row_id=r["source_row_id"], license=r["license"],
        domain=r["domain"], subtype=r["subtype"], task_type=r["task_type"], question=r["question"],
        options=r["options"] or [], answer=r["answer"], answer_index=r["answer_index"],
        entry_point=r["entry_point"], code_tests=r["code_tests"], reference_solution=r["reference_solution"],
    )


def validate_folder(folder: str | Path) -> ValidationReport:
    from phr.validation.checks import run_checks

    folder = Path(folder)
    report = ValidationReport()
    if not folder.is_dir():
        report.extend([Rejection(str(folder), "folder", "not a folder")])
        return report
    report.extend(_card_checks(folder))
    report.extend(_hash_checks(folder))
    rows = load_rows(folder)
    for n in CONFIGS:
        if n not in rows:
            report.extend([Rejection(f"data/{n}-*.parquet", "folder", "missing data file")])
    # dataset-level expectations shipped with the data (validation/expectations.py, Great Expectations)
    from phr.validation.expectations import SUITE_FILE, run_suite

    if (folder / SUITE_FILE).exists():
        report.extend(run_suite(folder))
    else:
        report.extend([Rejection(SUITE_FILE, "expectations", "missing: the dataset ships no expectation suite")])
    if len(rows) < len(CONFIGS):
        return report
    ids = Counter(r["id"] for rs in rows.values() for r in rs)
    report.extend(Rejection(i, "ids", f"instance id appears {c} times") for i, c in ids.items() if c > 1)
    questions: dict[str, BaseQuestion] = {}
    for r in rows["baseline"]:
        try:
            questions[r["question_id"]] = _question(r)
        except (ValidationError, KeyError) as e:
            report.extend([Rejection(r.get("id") or "?", "schema:baseline", _first_error(e))])
    augs, instance_of = [], {}
    for kind, cfg in (("truthful", "truthful"), ("hallucinated", "hallucinated")):
        for r in rows[cfg]:
            if r["question_id"] not in questions:
                report.extend([Rejection(r["id"], "ids", f"question {r['question_id']} has no baseline row")])
                continue
            try:
                augs.append(Augmentation(
                    id=r["augmentation_id"], question_id=r["question_id"], kind=kind, statement=r["premise"] or "",
                    truth_verification=r["truth_verification"], mutation_type=r["mutation_type"],
                    mutation_strategy=r["mutation_strategy"], mutation_logic=r["mutation_logic"],
                    generator=r["generator"] or "",
                ))
            except (ValidationError, KeyError) as e:
                report.extend([Rejection(r.get("id") or "?", f"schema:{cfg}", _first_error(e))])
                continue
            instance_of[r["augmentation_id"]] = r["id"]
    checked = run_checks(list(questions.values()), augs)
    report.extend(
        Rejection(f"{instance_of[x.row_id]} (augmentation {x.row_id})" if x.row_id in instance_of else x.row_id,
                  x.check, x.reason)
        for x in checked.rejections
    )
    # manual review round (validation/review.py): premises rejected by a reviewer, stale decisions
    from phr.validation.review import review_rejections

    report.extend(review_rejections(folder, rows))
    report.rows = {n: len(r) for n, r in rows.items()}
    return report
