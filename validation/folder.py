"""Validate a built PHRBench folder: card metadata, data files, ids, and every row-level check.

Rows are read back from the published parquet files, so a user can re-validate a download and an edit
to any premise is caught and named by its instance id.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from phr.bench.conditions import CONFIGS
from phr.bench.folder import CARD_CONFIGS, DATA_DIR, MANIFEST, read_rows
from phr.core.parquet import hashed_name_mismatch
from phr.core.report import Rejection, ValidationReport
from phr.hub.card import README, CardError, card_configs, missing_data_files
from phr.hub.kinds import ArtifactKind
from phr.validation.config import rules_for_prompts
from phr.validation.expectations import SUITE_FILE, run_suite
from phr.validation.premises import FolderPremises, folder_premises
from phr.validation.review import (
    CHECK,
    DECISIONS_FILE,
    REVIEW_DIR,
    ReviewError,
    ReviewStatus,
    load_decisions,
    review_rejections,
    review_status,
)
from phr.validation.semantic import run_all_checks


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


def validate_folder(folder: str | Path, *, require_review: bool | None = False) -> ValidationReport:
    """Every check of a built PHRBench folder. ``require_review``: also refuse premises without a manual
    review decision (True), never (False, the default of ``phr-publish validate``), or when the build's
    manifest says its recipe requires review (None: the push gate; the paper recipe, §A.2 Quality Control)."""

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
    found = folder_premises(rows)
    report.extend(found.rejections)
    instance_of = found.instance_of
    checked = run_all_checks(
        list(found.questions.values()), found.augmentations, rules_for_prompts(_manifest(folder).get("prompts"))
    )
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
    if require_review is None:
        require_review = review_required(folder)
    if require_review:
        report.extend(_undecided(folder, found))
    report.rows = {n: len(r) for n, r in rows.items()}
    return report


def _manifest(folder: Path) -> dict:
    """The build's manifest ({} when missing or unreadable: the card and data checks report what is wrong)."""
    try:
        manifest = json.loads((Path(folder) / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return manifest if isinstance(manifest, dict) else {}


def review_required(folder: Path) -> bool:
    """Does the build's manifest require a manual review of every premise (``review_required``; builds that
    predate the field: the paper recipe)?"""
    manifest = _manifest(folder)
    return bool(manifest.get("review_required", manifest.get("recipe") == "paper"))


def _undecided(folder: Path, found: FolderPremises) -> list[Rejection]:
    try:
        decisions = load_decisions(folder)
    except ReviewError:
        return []  # review_rejections reports the unusable file
    st = review_status(decisions, {a.id: a.statement for a in found.augmentations})
    if not st.undecided:
        return _unjudged(folder, st)
    shown = ", ".join(found.instance_of.get(a, a) for a in st.undecided[:5]) + (
        ", ..." if len(st.undecided) > 5 else ""
    )
    return [
        Rejection(
            f"{REVIEW_DIR}/{DECISIONS_FILE}",
            CHECK,
            f"{len(st.undecided)} of {st.premises} premises have no manual review decision ({shown}): this build's "
            "recipe requires every premise to be reviewed (paper §A.2). Review them (phr-publish review export / "
            "import, then rebuild), or push with --allow-unreviewed",
        )
    ]


def _unjudged(folder: Path, st: ReviewStatus) -> list[Rejection]:
    """Premises of a paper-QC-order build (manifest ``qc_order: paper``) that waited for review when it was built:
    decided since, they have not been through the LLM judge, which runs on the rebuild (§A.2: judge after review)."""
    manifest = _manifest(folder)
    if manifest.get("qc_order") != "paper" or not manifest.get("judge"):
        return []
    waiting = [a for a in manifest.get("awaiting_review") or [] if a not in st.undecided]
    if not waiting:
        return []
    shown = ", ".join(waiting[:5]) + (", ..." if len(waiting) > 5 else "")
    return [
        Rejection(
            f"{REVIEW_DIR}/{DECISIONS_FILE}",
            CHECK,
            f"{len(waiting)} premise(s) were reviewed after the build and have not been through the LLM judge yet "
            f"({shown}): rebuild the folder (phr-publish build phrbench ... --overwrite; paper §A.2: the judge runs "
            "after the manual review)",
        )
    ]


def is_phrbench_folder(folder: Path, configs: dict) -> bool:
    """A dataset folder whose card declares PHRBench's condition configs."""
    return set(CONFIGS) <= set(configs)


def validate_for_push(folder: Path) -> ValidationReport:
    """The push gate's check: every check, plus the manual review the build's recipe requires."""
    return validate_folder(folder, require_review=None)


#: PHRBench datasets for the hub gate (entry point ``phr.hub.kinds``: phrbench); without the review requirement
#: (``validate_unreviewed``) for ``phr-publish push --allow-unreviewed`` and ``phr-publish validate``.
PHRBENCH = ArtifactKind(
    "phrbench", "dataset", is_phrbench_folder, validate_for_push, validate_unreviewed=validate_folder
)
