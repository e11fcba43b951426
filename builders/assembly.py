"""Assemble PHRBench instances: every question under B, B+T and B+H, ids stable across rebuilds.

The augmentation is inserted as added premise context; the question text is never changed. Instance ids:
``<question id>-B``, ``<question id>-T`` and ``<question id>-H<k>`` (k = 1.. in the augmentations' order).
"""

from __future__ import annotations

from collections import defaultdict

from phr.bench.conditions import CONDITIONS, condition_spec
from phr.bench.instance import PREMISE_COLUMNS
from phr.bench.prompts import Templates
from phr.bench.records import Augmentation, BaseQuestion, Condition, question_row

_EMPTY_AUG = dict.fromkeys(PREMISE_COLUMNS)


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
    rows: dict[str, list[dict]] = {c.config: [] for c in CONDITIONS}
    base_c, truthful_c, hall_c = (condition_spec(c) for c in (Condition.B, Condition.B_T, Condition.B_H))
    for q in questions:
        base = question_row(q)  # every field: validation reads it back with question_from_row
        rows[base_c.config].append(
            {
                **base,
                **_EMPTY_AUG,
                "id": base_c.instance_id(q.id),
                "condition": base_c.value,
                "prompt": templates.prompt(q),
            }
        )
        hall = 0
        for a in by_q.get(q.id, []):
            aug = {
                "augmentation_id": a.id,
                "premise": a.statement,
                "truth_verification": a.truth_verification,
                "mutation_type": a.mutation_type.value if a.mutation_type else None,
                "mutation_strategy": a.mutation_strategy,
                "mutation_logic": a.mutation_logic,
                "generator": a.generator,
            }
            if a.kind == truthful_c.premise:
                rows[truthful_c.config].append(
                    {
                        **base,
                        **aug,
                        "id": truthful_c.instance_id(q.id),
                        "condition": truthful_c.value,
                        "prompt": templates.prompt(q, a.statement),
                    }
                )
            else:
                hall += 1
                rows[hall_c.config].append(
                    {
                        **base,
                        **aug,
                        "id": hall_c.instance_id(q.id, hall),
                        "condition": hall_c.value,
                        "prompt": templates.prompt(q, a.statement),
                    }
                )
    return rows
