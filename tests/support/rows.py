"""Question and augmentation rows (the dicts the validation checks read) and evaluation instances, with defaults
for what a test does not care about."""

from __future__ import annotations

from phr.eval.dataset import Instance


def open_ended(qid: str, question: str, answer: str, domain: str = "Physics") -> dict:
    """An open-ended question ``qid`` (``<source>-<row id>``)."""
    return dict(
        id=qid,
        source=qid.split("-")[0],
        source_row_id=qid.split("-", 1)[1],
        license="CC0-1.0",
        domain=domain,
        subtype="Mechanics",
        task_type="open_ended",
        question=question,
        options=[],
        answer=answer,
        answer_index=None,
    )


def aug(
    aid: str,
    statement: str,
    *,
    qid: str = "sciq-train-0",
    kind: str = "hallucinated",
    mutation_type: str | None = "State Distortion",
    logic: str | None = "Changed one value, contradicting the rule.",
    strategy: str | None = "substitution",
) -> dict:
    """An augmentation ``aid`` of question ``qid``; the mutation fields are set on hallucinated ones only."""
    h = kind == "hallucinated"
    return dict(
        id=aid,
        question_id=qid,
        kind=kind,
        statement=statement,
        truth_verification=None if h else "Matches the textbook.",
        mutation_type=mutation_type if h else None,
        mutation_strategy=strategy if h else None,
        mutation_logic=logic if h else None,
        generator="test",
    )


def instance(n: int = 1, condition: str = "B", **fields) -> Instance:
    """Instance ``q{n}-{condition}`` of question ``q{n}`` (prompt "Question {n}?"): open-ended Physics unless
    ``fields`` say otherwise."""
    base = dict(id=f"q{n}-{condition}", question_id=f"q{n}", condition=condition, domain="Physics", subtype="s")
    return Instance(**(base | dict(task_type="open_ended", source="src", prompt=f"Question {n}?") | fields))
