"""Assemble PHRBench instances: every question under B, B+T and B+H, ids stable across rebuilds.

The augmentation is inserted as added premise context; the question text is never changed. Instance ids:
``<question id>-B``, ``<question id>-T`` and ``<question id>-H<k>`` (k = 1.. in the augmentations' order).
"""

from __future__ import annotations

from collections import defaultdict

import pyarrow as pa

from phr.builders.templates import Templates
from phr.records import Augmentation, BaseQuestion, Condition, question_row

CONFIGS = {"baseline": Condition.B, "truthful": Condition.B_T, "hallucinated": Condition.B_H}

SCHEMA = pa.schema([
    ("id", pa.string()),
    ("question_id", pa.string()),
    ("condition", pa.string()),
    ("domain", pa.string()),
    ("subtype", pa.string()),
    ("task_type", pa.string()),
    ("source", pa.string()),
    ("source_row_id", pa.string()),
    ("license", pa.string()),
    ("question", pa.string()),
    ("options", pa.list_(pa.string())),
    ("answer", pa.string()),
    ("answer_index", pa.int64()),
    ("code_signature", pa.string()),
    ("entry_point", pa.string()),
    ("code_tests", pa.string()),
    ("reference_solution", pa.string()),
    ("augmentation_id", pa.string()),
    ("premise", pa.string()),
    ("truth_verification", pa.string()),
    ("mutation_type", pa.string()),
    ("mutation_strategy", pa.string()),
    ("mutation_logic", pa.string()),
    ("generator", pa.string()),
    ("prompt", pa.string()),
])


_EMPTY_AUG = dict.fromkeys(
    ("augmentation_id", "premise", "truth_verification", "mutation_type", "mutation_strategy", "mutation_logic",
     "generator")
)


def assemble(
    questions: list[BaseQuestion], augmentations: list[Augmentation], templates: Templates | None = None
) -> dict[str, list[dict]]:
    """Rows per config (baseline, truthful, hallucinated), questions in the given order."""
    templates = templates or Templates.load()
    by_q: dict[str, list[Augmentation]] = defaultdict(list)
    for a in augmentations:
        by_q[a.question_id].append(a)
    known = {q.id for q in questions}
    orphans = sorted(set(by_q) - known)
    if orphans:
        raise ValueError(f"augmentations reference unknown question ids: {', '.join(orphans[:5])}")
    rows: dict[str, list[dict]] = {name: [] for name in CONFIGS}
    for q in questions:
        base = question_row(q)  # every field: validation reads it back with question_from_row
        rows["baseline"].append({**base, **_EMPTY_AUG, "id": f"{q.id}-B", "condition": Condition.B.value,
                                 "prompt": templates.prompt(q)})
        hall = 0
        for a in by_q.get(q.id, []):
            aug = {
                "augmentation_id": a.id, "premise": a.statement, "truth_verification": a.truth_verification,
                "mutation_type": a.mutation_type.value if a.mutation_type else None,
                "mutation_strategy": a.mutation_strategy, "mutation_logic": a.mutation_logic,
                "generator": a.generator,
            }
            if a.kind == "truthful":
                rows["truthful"].append({**base, **aug, "id": f"{q.id}-T", "condition": Condition.B_T.value,
                                         "prompt": templates.prompt(q, a.statement)})
            else:
                hall += 1
                rows["hallucinated"].append({**base, **aug, "id": f"{q.id}-H{hall}",
                                             "condition": Condition.B_H.value,
                                             "prompt": templates.prompt(q, a.statement)})
    return rows


def to_table(rows: list[dict]) -> pa.Table:
    return pa.Table.from_pylist(rows, schema=SCHEMA)
