"""ChemBench (Mirza et al. 2024): ~2,800 chemistry questions, multiple-choice and numeric -> Chemistry.

Released as one BIG-bench-style JSON task per file: {"name", "uuid", "description", "keywords",
"examples": [{"input", "target_scores": {option: 0|1} | "target": value}], "preferred_score", ...}.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from phr.bench.records import BaseQuestion, TaskType

from .. import taxonomy
from . import _common as c

log = logging.getLogger(__name__)

NAME = "chembench"
TITLE = "ChemBench"
LICENSE = "MIT"
HUB_ID = "jablonkagroup/ChemBench"  # one config per topic, split "train"; target_scores is a JSON string
PACKAGE: str | None = None
FORMAT = (
    "task JSON files (one task per file, any folder depth, e.g. data/<topic>/<task>.json): "
    '{"name", "uuid", "keywords", "examples": [{"input", "target_scores" or "target"}], ...}'
)
TOPICS = (
    "analytical_chemistry",
    "chemical_preference",
    "general_chemistry",
    "inorganic_chemistry",
    "materials_science",
    "organic_chemistry",
    "physical_chemistry",
    "technical_chemistry",
    "toxicity_and_safety",
)


def _scores(value: Any) -> dict[str, float] | None:
    if value in (None, "", {}):
        return None
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError as e:
            raise c.RowProblem(f"target_scores is not valid JSON ({e.msg})") from None
    if not isinstance(value, dict) or not value:
        raise c.RowProblem("target_scores must be a non-empty {option: score} object")
    try:
        return {str(k).strip(): float(v) for k, v in value.items()}
    except (TypeError, ValueError):
        raise c.RowProblem("target_scores values must be numbers") from None


def parse_example(task: dict, index: int, labels: list[str], multi_answer: str = "skip") -> BaseQuestion | None:
    """Example `index` of a task -> multiple-choice (target_scores) or open-ended (target) question.

    Row id: the task's uuid (else its name), plus "/<index>" when the task has several examples.
    Multiple-choice examples with several correct options are skipped (None) or, with
    multi_answer="error", a RowProblem.
    """
    if not isinstance(task, dict):
        raise c.RowProblem(f"expected a task object, got {type(task).__name__}")
    examples = task.get("examples")
    if not isinstance(examples, list) or not examples:
        raise c.RowProblem("field 'examples' must be a non-empty list")
    example = examples[index]
    if not isinstance(example, dict):
        raise c.RowProblem("example is not an object")
    task_id = c.optional(task, "uuid") or c.text(task, "name")
    keywords = [str(k) for k in task.get("keywords") or [] if isinstance(k, str)]
    common: dict[str, Any] = dict(
        source=NAME,
        source_row_id=task_id if len(examples) == 1 else f"{task_id}/{index}",
        license=LICENSE,
        question=c.text(example, "input"),
        label=[*labels, *keywords],
    )
    scores = _scores(example.get("target_scores"))
    if scores is None:
        target = example.get("target")
        if target is None or not str(target).strip():
            raise c.RowProblem("missing field 'target' or 'target_scores'")
        return c.make(task_type=TaskType.OPEN_ENDED, answer=str(target).strip(), **common)
    correct = [i for i, v in enumerate(scores.values()) if v >= 1]
    if not correct:
        raise c.RowProblem("no option in target_scores has score 1")
    if len(correct) > 1:
        if multi_answer == "error":
            raise c.RowProblem(f"{len(correct)} correct options (BaseQuestion holds one answer)")
        return None
    return c.multiple_choice(list(scores), correct[0], **common)


def _examples(prefix: str, task: Any, labels: list[str]) -> Iterator[c.Located]:
    """One located row per example: ('<prefix>example N', (task, N - 1, labels))."""
    examples = task.get("examples") if isinstance(task, dict) else None
    for i in range(len(examples) if isinstance(examples, list) and examples else 1):
        yield f"{prefix}example {i + 1}", (task, i, labels)


def _task_files(source_dir: Path) -> list[Path]:
    if source_dir.is_file():
        return [source_dir]
    if not source_dir.is_dir():
        raise _missing(f"{source_dir} does not exist")
    files = sorted(p for p in source_dir.rglob("*.json") if p.is_file())
    if not files:
        raise _missing(f"no *.json task files under {source_dir}")
    return files


def load(
    source_dir: str | Path | None = None,
    *,
    online: bool = False,
    topics: str | Sequence[str] | None = None,
    multi_answer: str = "skip",
) -> list[BaseQuestion]:
    """ChemBench questions, optionally only some `topics` (e.g. "organic_chemistry").

    The topic is the Hub config, or for local files the first folder name (or keyword) that the taxonomy
    maps to a ChemBench topic; unmapped tasks become "General Chemistry".
    """
    if multi_answer not in ("skip", "error"):
        raise c.SourceOptionError("multi_answer must be 'skip' or 'error'")
    wanted = c.wanted_list(topics)
    keep = {taxonomy.subtype_for(NAME, t) for t in wanted} if wanted else None

    skipped = 0

    def parse(item: tuple[dict, int, list[str]], _i: int) -> BaseQuestion | None:
        nonlocal skipped
        q = parse_example(*item, multi_answer=multi_answer)
        skipped += q is None
        return q

    out: list[BaseQuestion] = []
    ids = c.RowIndex(TITLE)
    if source_dir is not None:
        root = Path(source_dir).expanduser()
        for path in _task_files(root):
            try:
                data = json.loads(c.read_text(path))
            except json.JSONDecodeError as e:
                raise c.MalformedSourceError(f"{path}: invalid JSON at line {e.lineno} ({e.msg})") from None
            labels = list(reversed(path.relative_to(root).parent.parts)) if root.is_dir() else [path.parent.name]
            tasks = data if isinstance(data, list) else [data]
            rows = [r for n, t in enumerate(tasks) for r in _examples(f"task {n + 1}, " * (len(tasks) > 1), t, labels)]
            out += c.parse_rows(str(path), rows, parse, ids)
    elif online:
        for topic in ["_".join(t.lower().replace("-", " ").split()) for t in wanted or TOPICS]:
            data = c.hub_load(HUB_ID, TITLE, name=topic, split="train")
            rows = [r for where, t in c.hub_rows(data) for r in _examples(f"{where}, ", t, [topic])]
            out += c.parse_rows(f"hf://datasets/{HUB_ID} ({topic}/train)", rows, parse, ids)
    else:
        raise _missing()
    if skipped:
        log.warning("ChemBench: skipped %d multiple-choice examples with several correct options", skipped)
    return c.check_unique([q for q in out if keep is None or q.subtype in keep], TITLE)


def _missing(detail: str = "") -> c.SourceNotFoundError:
    return c.not_found(TITLE, f"{HUB_ID} (one config per topic)", "data/<topic>/<task>.json", PACKAGE, detail)
