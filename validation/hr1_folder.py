"""Hub kinds of the three Hallucination-R1 corpora (``phr.hr1.corpora.KINDS``): a dataset folder is one of them
when its card's ``phr_kind`` metadata names it; ``validate`` checks the folder's structure and rows, each
problem a rejection naming the file, row and column (docs/hr1.md, "Corpus kinds and validation"). The
split-leakage check needs the evaluation sets, so ``phr-publish validate`` runs it separately
(validation/hr1_leakage.py ``check_corpus_folder``).
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from phr.core.parquet import hashed_name_mismatch
from phr.core.report import Rejection, ValidationReport
from phr.hr1.corpora import DATA_DIR, KIND_FIELD, KINDS, MANIFEST, SCHEMAS, data_files, sft_target
from phr.hub.card import README, CardConfig, CardError, card_configs, card_metadata, missing_data_files
from phr.hub.kinds import ArtifactKind


def card_kind(folder: Path) -> str | None:
    """The card's ``phr_kind`` (None when the card is missing, does not parse or has none)."""
    try:
        value = card_metadata(folder).get(KIND_FIELD)
    except CardError:
        return None
    return value if isinstance(value, str) else None


def _card_checks(folder: Path, kind: str) -> list[Rejection]:
    try:
        configs = card_configs(folder)
        found = card_metadata(folder).get(KIND_FIELD)
    except CardError as e:
        return [Rejection(README, "card", str(e))]
    out = []
    if found != kind:
        out.append(Rejection(README, "card", f"card metadata {KIND_FIELD} is {found!r}, expected {kind!r}"))
    if not configs:
        out.append(Rejection(README, "card", "the card declares no configs"))
    out += [
        Rejection(README, "card", f"config {name!r} names {p}, which does not exist")
        for name, p in missing_data_files(folder, configs)
    ]
    return out


def _manifest_checks(folder: Path) -> list[Rejection]:
    path = folder / MANIFEST
    if not path.is_file():
        return [Rejection(MANIFEST, "folder", "missing: the build writes a manifest")]
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        return [Rejection(MANIFEST, "folder", f"does not parse as JSON: {e}")]
    return [] if isinstance(data, dict) else [Rejection(MANIFEST, "folder", "is not a JSON object")]


def _schema_checks(rel: str, schema: pa.Schema, want: pa.Schema) -> list[Rejection]:
    out = [Rejection(rel, f"schema:{n}", "column missing") for n in want.names if n not in schema.names]
    out += [Rejection(rel, f"schema:{n}", "unexpected column") for n in schema.names if n not in want.names]
    out += [
        Rejection(rel, f"schema:{f.name}", f"type {schema.field(f.name).type}, expected {f.type}")
        for f in want
        if f.name in schema.names and not schema.field(f.name).type.equals(f.type)
    ]
    return out


def _row_name(rel: str, i: int, row: dict, key: str = "id") -> str:
    return f"{rel} row {i} ({row.get(key)})"


def _paraphrase_rows(rel: str, rows: list[dict]) -> list[Rejection]:
    out = []
    for i, r in enumerate(rows):
        for p in r["paraphrases"] or []:
            where = f"{_row_name(rel, i, r)} paraphrase k={p['k']}"
            if not (p["text"] or "").strip() and not (p["parse_error"] or "").strip():
                out.append(Rejection(where, "paraphrases.text", "neither a paraphrase text nor a parse_error"))
            if p["text"] is None and p["consistent"] is not None:
                out.append(Rejection(where, "paraphrases.consistent", "a consistency label without a paraphrase"))
    return out


def _sft_rows(rel: str, rows: list[dict]) -> list[Rejection]:
    out = []
    for i, r in enumerate(rows):
        where = _row_name(rel, i, r)
        msgs = r["messages"] or []
        if len(msgs) < 2 or msgs[-1]["role"] != "assistant" or msgs[-2]["role"] != "user":
            out.append(Rejection(where, "messages", "expected a user message then the assistant message last"))
            continue
        if msgs[-2]["content"] != r["paraphrase"] or not (r["paraphrase"] or "").strip():
            out.append(Rejection(where, "messages", "the user message is not the row's (non-empty) paraphrase"))
        if not (r["answer"] or "").strip() or msgs[-1]["content"] != sft_target(r["answer"]):
            out.append(
                Rejection(
                    where, "messages", "the assistant message is not the row's (non-empty) answer in <answer> tags"
                )
            )
    return out


def _grpo_rows(rel: str, rows: list[dict]) -> list[Rejection]:
    out = []
    for i, r in enumerate(rows):
        where = _row_name(rel, i, r, "prompt_id")
        if not r["answers"] or not all((a or "").strip() for a in r["answers"]):
            out.append(Rejection(where, "answers", "no gold answer for the reward (or an empty one)"))
        if not any(m["role"] == "user" and (m["content"] or "").strip() for m in r["prompt"] or []):
            out.append(Rejection(where, "prompt", "no non-empty user message"))
    return out


_ROW_CHECKS = {"hr1-paraphrases": _paraphrase_rows, "hr1-sft": _sft_rows, "hr1-grpo": _grpo_rows}
_ID = {"hr1-paraphrases": "id", "hr1-sft": "id", "hr1-grpo": "prompt_id"}


def validate_corpus(folder: str | Path, kind: str) -> ValidationReport:
    """Every structural check of a corpus folder of ``kind``: card (configs, ``phr_kind``, data files named),
    ``manifest.json``, each ``data/*.parquet`` readable with the kind's Arrow schema and its content hash,
    the rows of the kind, and ids unique across files."""
    folder = Path(folder)
    report = ValidationReport()
    if not folder.is_dir():
        report.extend([Rejection(str(folder), "folder", "not a folder")])
        return report
    report.extend(_card_checks(folder, kind))
    report.extend(_manifest_checks(folder))
    files = data_files(folder)
    if not files:
        report.extend([Rejection(f"{DATA_DIR}/*.parquet", "folder", "no data files")])
    ids: Counter[str] = Counter()
    for path in files:
        rel = f"{DATA_DIR}/{path.name}"
        if (bad := hashed_name_mismatch(path)) is not None:
            report.extend([Rejection(rel, "content_hash", f"name says {bad[0]}, content hashes to {bad[1]}")])
        try:
            table = pq.read_table(path)
        except Exception as e:  # any reader complaint makes the file unusable
            report.extend([Rejection(rel, "folder", f"unreadable parquet: {e}")])
            continue
        problems = _schema_checks(rel, table.schema, SCHEMAS[kind])
        report.extend(problems)
        report.rows[rel] = table.num_rows
        if problems:
            continue
        rows = table.to_pylist()
        report.extend(_ROW_CHECKS[kind](rel, rows))
        ids.update(r[_ID[kind]] for r in rows)
    report.extend(Rejection(i, _ID[kind], f"appears {n} times") for i, n in ids.items() if n > 1)
    return report


def _kind(name: str) -> ArtifactKind:
    def matches(folder: Path, configs: dict[str, CardConfig]) -> bool:
        return card_kind(Path(folder)) == name

    def validate(folder: Path) -> ValidationReport:
        return validate_corpus(folder, name)

    return ArtifactKind(name, "dataset", matches, validate)


HR1_PARAPHRASES, HR1_SFT, HR1_GRPO = (_kind(k) for k in KINDS)
