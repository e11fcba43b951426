"""The prompt templates of PHRBench's conditions: B renders the task; B+T and B+H put the premise before it."""

from __future__ import annotations

from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from phr.bench.records import BaseQuestion, TaskType

NAMES = ("multiple_choice", "open_ended", "code", "with_premise")


@dataclass(frozen=True)
class Templates:
    multiple_choice: str
    open_ended: str
    code: str
    with_premise: str

    @classmethod
    def load(cls, directory: str | Path | None = None) -> "Templates":
        """The packaged templates, or same-named ``.txt`` files from ``directory``."""
        base = Path(directory) if directory else resources.files("phr.bench").joinpath("templates")
        return cls(**{n: base.joinpath(f"{n}.txt").read_text(encoding="utf-8").rstrip("\n") for n in NAMES})

    def task(self, q: BaseQuestion) -> str:
        if q.task_type is TaskType.MULTIPLE_CHOICE:
            cands = "; ".join(f"({i}) {opt}" for i, opt in enumerate(q.options, 1))
            return self.multiple_choice.format(question=q.question, candidates=cands)
        if q.task_type is TaskType.CODE:
            return self.code.format(signature=(q.code_signature or q.question).rstrip("\n"))
        return self.open_ended.format(question=q.question)

    def prompt(self, q: BaseQuestion, premise: str | None = None) -> str:
        task = self.task(q)
        return task if premise is None else self.with_premise.format(premise=premise, task=task)
