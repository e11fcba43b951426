"""Score responses to PHRBench, one record per (instance, sample): the runner and submissions share this.

    scores = score_responses(instances, responses, samples=2, options=ScoreOptions(judge="openai:gpt-4o"))

- accuracy: multiple choice by the extracted candidate number, open-ended by the final answer
  (phr.eval.extract), code by running the extracted program against the problem's tests in the sandbox;
- trajectory metrics OL, UI, BUF, BC under the reference scorer (``options.scorer``; None skips them);
- behavioural resolution of every B+H response by the judge (``options.judge``; None skips it) and
  insightful = Correction and correct.

A missing response (a failed call in a run) scores as incorrect with no metrics, and is counted.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, fields
from typing import Any

from phr.eval.dataset import Instance
from phr.eval.extract import (
    extract_choice,
    extract_code,
    extract_final,
    open_ended_correct,
)


@dataclass
class SampleScore:
    instance_id: str
    sample: int
    question_id: str
    condition: str
    domain: str
    subtype: str
    task_type: str
    source: str
    mutation_type: str | None
    missing: bool
    correct: bool
    extracted: str | None = None  # the candidate number, the final answer line, or the sandbox verdict
    ol: int | None = None
    ui: float | None = None
    buf: float | None = None
    bc: float | None = None
    steps: int | None = None
    resolution: str | None = None
    accepts_premise: bool | None = None
    corrects_premise: bool | None = None
    insightful: bool | None = None
    judge_rationale: str | None = None

    def as_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> SampleScore:
        names = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in d.items() if k in names})


@dataclass(frozen=True)
class ScoreOptions:
    scorer: Any = "local:smollm2"  # spec, TrajectoryScorer, or None
    judge: Any = None  # spec, LLM, or None
    scorer_batch_size: int = 4
    judge_max_reasks: int = 2
    code_timeout_s: float = 10.0
    code_memory_mb: int = 512
    workers: int | None = None
    resolution_conditions: tuple[str, ...] = ("B+H",)
    cache: Any = None  # trajectory metrics cache file (None: the call cache file, $PHR_CACHE; False: off)


def answer_correct(inst: Instance, response: str) -> tuple[bool, str | None]:
    """(correct, what was extracted) for a multiple-choice or open-ended instance."""
    if inst.task_type == "multiple_choice":
        idx = extract_choice(response, list(inst.options))
        return (idx is not None and idx == inst.answer_index), (None if idx is None else str(idx + 1))
    if inst.task_type == "open_ended":
        return open_ended_correct(response, inst.answer or ""), extract_final(response)
    raise ValueError(f"{inst.id}: not a multiple-choice or open-ended instance ({inst.task_type})")


_IMPORT = re.compile(r"^(?:from\s+\S+\s+import\s+.+|import\s+.+)$", re.MULTILINE)


def code_program(inst: Instance, response: str) -> str:
    """The program to test: the reply's last ```python block (else the reply); when it does not define the
    entry point at top level and the question is a function stub (HumanEval), the stub + the reply (a
    completion of the body). The question's import lines always come first."""
    code = extract_code(response)
    stub = inst.question or ""
    ep = inst.entry_point
    defines = ep is None or re.search(rf"^(?:async\s+)?def\s+{re.escape(ep)}\s*\(", code, re.MULTILINE)
    if not defines and ep and re.search(rf"^def\s+{re.escape(ep)}\s*\(", stub, re.MULTILINE):
        return stub.rstrip("\n") + "\n" + code
    imports = "\n".join(_IMPORT.findall(stub))
    return f"{imports}\n\n{code}" if imports else code


def _progress(enabled: bool):
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeRemainingColumn,
    )

    return Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
                    disable=not enabled, transient=False)


def score_responses(instances: Sequence[Instance], responses: Mapping[tuple[str, int], str], *, samples: int,
                    options: ScoreOptions = ScoreOptions(), progress: bool = True) -> list[SampleScore]:
    """Score samples 0..samples-1 of every instance (in order); see the module docstring."""
    from phr.eval.sandbox import run_many

    rows: list[SampleScore] = []
    present: list[tuple[SampleScore, Instance, str]] = []
    for inst in instances:
        for k in range(samples):
            text = responses.get((inst.id, k))
            s = SampleScore(inst.id, k, inst.question_id, inst.condition, inst.domain, inst.subtype, inst.task_type,
                            inst.source, inst.mutation_type, missing=text is None, correct=False)
            rows.append(s)
            if text is not None:
                present.append((s, inst, text))

    code = [(s, i, t) for s, i, t in present if i.task_type == "code"]
    for s, inst, text in present:
        if inst.task_type != "code":
            s.correct, s.extracted = answer_correct(inst, text)
    if code:
        with _progress(progress) as bar:
            task = bar.add_task(f"running {len(code)} programs in the sandbox", total=len(code))
            verdicts = run_many(
                [{"program": code_program(i, t), "tests": i.code_tests or "", "entry_point": i.entry_point}
                 for _, i, t in code],
                workers=options.workers, timeout_s=options.code_timeout_s, memory_mb=options.code_memory_mb)
            bar.update(task, completed=len(code))
        for (s, _, _), v in zip(code, verdicts):
            s.correct, s.extracted = v.passed, v.status

    if options.scorer is not None and present:
        _trajectory(present, options, progress)
    if options.judge is not None:
        _resolution([p for p in present if p[1].condition in options.resolution_conditions], options)
    return rows


def _trajectory(present, options: ScoreOptions, progress: bool) -> None:
    from phr.eval.metric_cache import MetricCache, metric_key, scorer_identity
    from phr.eval.trajectory import TrajectoryScorer

    scorer = options.scorer
    if not isinstance(scorer, TrajectoryScorer):
        scorer = TrajectoryScorer(scorer, batch_size=options.scorer_batch_size)
    cache = None if options.cache is False else MetricCache(options.cache)
    ident = scorer_identity(scorer)
    spec = f"{ident['provider']}:{ident['model']}"
    keyed = [(s, i, t, metric_key(ident, i.prompt, t)) for s, i, t in present]
    hits = cache.get_many([k for *_, k in keyed]) if cache else {}

    def apply(s: SampleScore, m) -> None:
        s.ol, s.ui, s.buf, s.bc, s.steps = m.ol, m.ui, m.buf, m.bc, m.steps

    todo = []
    for s, i, t, k in keyed:
        if k in hits:
            apply(s, hits[k])
        else:
            todo.append((s, i, t, k))
    chunk = max(8, 4 * scorer.batch_size)
    with _progress(progress) as bar:
        task = bar.add_task(f"trajectory metrics ({len(present)} responses, {len(hits)} cached)", total=len(present),
                            completed=len(hits))
        for j in range(0, len(todo), chunk):
            part = todo[j : j + chunk]
            metrics = scorer.score([(i.prompt, t) for _, i, t, _ in part])
            for (s, _, _, _), m in zip(part, metrics):
                apply(s, m)
            if cache:
                cache.put_many(spec, [(k, m) for (_, _, _, k), m in zip(part, metrics)])
            bar.update(task, advance=len(part))


def _resolution(items, options: ScoreOptions) -> None:
    from phr.eval.resolution import insightful, judge_resolutions

    if not items:
        return
    verdicts = judge_resolutions(options.judge, [(i, t) for _, i, t in items], max_reasks=options.judge_max_reasks)
    for (s, _, _), r in zip(items, verdicts):
        if r is None:
            continue
        s.resolution, s.accepts_premise, s.corrects_premise = r.label, r.accepts_premise, r.corrects_premise
        s.judge_rationale = r.rationale
        s.insightful = insightful(r.label, s.correct)
