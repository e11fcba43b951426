"""The questions and premises a built PHRBench folder carries, read back from its rows (for the rule checks
of ``validate_folder`` and of a review import)."""

from __future__ import annotations

from dataclasses import dataclass, field

from pydantic import ValidationError

from phr.bench.conditions import condition_spec
from phr.bench.records import Augmentation, BaseQuestion, Condition, question_from_row
from phr.core.report import Rejection

PREMISE_CONDITIONS = (Condition.B_T, Condition.B_H)


@dataclass
class FolderPremises:
    """Questions (by id), premises, the instance id of each premise and the rows that did not parse."""

    questions: dict[str, BaseQuestion] = field(default_factory=dict)
    augmentations: list[Augmentation] = field(default_factory=list)
    instance_of: dict[str, str] = field(default_factory=dict)  # augmentation id -> instance id
    rejections: list[Rejection] = field(default_factory=list)


def first_error(e: Exception) -> str:
    if isinstance(e, ValidationError):
        err = e.errors()[0]
        return f"field {'.'.join(map(str, err['loc']))}: {err['msg']}"
    return f"missing column {e}"


def folder_premises(rows: dict[str, list[dict]]) -> FolderPremises:
    """Questions from the baseline rows and premises from the truthful / hallucinated rows of ``rows``
    (``phr.bench.folder.read_rows``); unusable rows become rejections naming the instance."""
    out = FolderPremises()
    for r in rows.get(condition_spec(Condition.B).config, []):
        try:
            out.questions[r["question_id"]] = question_from_row(r)
        except (ValidationError, KeyError) as e:
            out.rejections.append(Rejection(r.get("id") or "?", "schema:baseline", first_error(e)))
    for spec in map(condition_spec, PREMISE_CONDITIONS):
        kind = spec.premise
        assert kind is not None  # B+T and B+H insert a premise
        for r in rows.get(spec.config, []):
            if r["question_id"] not in out.questions:
                out.rejections.append(Rejection(r["id"], "ids", f"question {r['question_id']} has no baseline row"))
                continue
            try:
                out.augmentations.append(
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
                out.rejections.append(Rejection(r.get("id") or "?", f"schema:{spec.config}", first_error(e)))
                continue
            out.instance_of[r["augmentation_id"]] = r["id"]
    return out
