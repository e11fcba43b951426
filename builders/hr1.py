"""Hallucination-R1 corpora (docs/hr1.md): the paraphrase corpus, the SFT corpus (App. E.1) and the GRPO prompt
corpus (App. C.1), each a Hub-layout folder (card with ``configs:``, content-hashed parquet, manifest.json)
written atomically: a failed build leaves nothing behind.

The steps are ``phr.hr1.pipeline``'s (cached, resumable, retried): a rerun of the same command makes no new
calls. Training corpora (SFT, GRPO) are checked for split leakage against the evaluation sets given and the
build fails on any violation (``validation.hr1_leakage``).
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any, TypedDict, TypeVar, Unpack

import pyarrow as pa

from phr.cards.hr1_card import render
from phr.core.errors import UsageError
from phr.core.fs import atomic_dir, atomic_write, json_text, refuse_existing
from phr.core.parquet import write_parquet_hashed
from phr.core.report import Rejection
from phr.hr1.corpora import DATA_DIR, MANIFEST, SCHEMAS, card_configs, sft_target
from phr.hr1.diversity import score_groups
from phr.hr1.failures import FailedCallsError, failed_calls
from phr.hr1.pipeline import Models, RunPlan, counts_as_correct, paraphrase_prompt, qa_messages, run_questions
from phr.hr1.prompts import versions
from phr.hr1.records import HQuestion, ParaphraseResult, QuestionResult
from phr.llm.summary import RunSummary
from phr.validation.hr1_leakage import LeakageConfig, TrainRow, check_split_leakage

from .hr1_sources import LoadResult, load_truthfulqa

T = TypeVar("T")


class HR1BuildError(UsageError):
    """A Hallucination-R1 corpus cannot be built as asked (the message says why and what to do)."""


class SplitLeakageError(HR1BuildError):
    """A training corpus shares questions with an evaluation set; nothing was written."""

    def __init__(self, violations: list[Rejection]):
        self.violations = violations
        shown = "\n".join(f"  {v.row_id}: {v.check}: {v.reason}" for v in violations[:20])
        more = f"\n  ... and {len(violations) - 20} more" if len(violations) > 20 else ""
        super().__init__(
            f"split leakage: {len(violations)} training row(s) overlap the evaluation sets; nothing was written\n"
            f"{shown}{more}"
        )


@dataclass
class HR1BuildResult:
    out: Path
    kind: str
    counts: dict[str, int]
    summary: RunSummary = field(default_factory=RunSummary)
    manifest: dict = field(default_factory=dict)
    settings: str = (
        ""  # the run's preset and the command that repeats it (set by ``phr.ops.build_hr1_paraphrases.run``)
    )


def smoke_questions() -> LoadResult:
    """The packaged 24 TruthfulQA rows (builders/curated/truthfulqa-smoke.csv) of the offline smoke corpus."""
    path = resources.files("phr.builders").joinpath("curated/truthfulqa-smoke.csv")
    with resources.as_file(path) as p:
        return load_truthfulqa(p)


def _paraphrase_row(r: QuestionResult) -> dict:
    q = r.question
    return {
        **q.model_dump(mode="json"),
        "answers": list(q.answers),
        "meta": [{"key": k, "value": v} for k, v in sorted(q.meta.items())],
        "qa_answer": r.qa_answer,
        "qa_extraction": r.qa_extraction,
        "factual_score": r.factual_score,
        "correctness": r.correctness,
        "paraphrases": [p.model_dump(mode="json", exclude={"failed"}) for p in r.paraphrases],
    }


def _write(
    out: Path,
    kind: str,
    tables: dict[tuple[str, str], list[dict]],
    manifest: dict,
    overwrite: bool,
    folder: str | None = None,
) -> None:
    """Write the folder: one parquet per (config, split), the card, the manifest (atomically). The card's usage
    loads ``folder``, the folder the build writes by default (default: the kind), never the path given: the
    files do not depend on where they are written."""
    refuse_existing(out, overwrite)
    with atomic_dir(out) as tmp:
        (tmp / DATA_DIR).mkdir()
        files: dict[str, list[tuple[str, str]]] = {}
        for (config, split), rows in sorted(tables.items()):
            table = pa.Table.from_pylist(rows, schema=SCHEMAS[kind])
            name = write_parquet_hashed(table, tmp / DATA_DIR, f"{config}-{split}")
            files.setdefault(config, []).append((split, f"{DATA_DIR}/{name}"))
        by_config = {c: [r for (cc, _s), rows in tables.items() if cc == c for r in rows] for c in files}
        card = render(kind, card_configs(files), manifest, by_config, folder=folder or kind)
        atomic_write(tmp / "README.md", card)
        atomic_write(tmp / MANIFEST, json_text(manifest))


def _complete(kind: str, results: list[QuestionResult], models: Models, rerun: str | None, summary: RunSummary) -> None:
    """A corpus is built from complete runs only: a call that failed after all retries stops the build (nothing
    written) with the missing values and the rerun command (``rerun``), which makes only those calls."""
    failures = failed_calls(results)
    if failures:
        raise FailedCallsError(f"build {kind}", failures, rerun, models.caches(), summary)


def _run_models(
    questions: Sequence[HQuestion],
    plan: RunPlan,
    llm_options: dict | None,
    *,
    paraphraser: str | None,
    qa: str | None,
    judge: str | None,
    diversity: bool = False,
    paraphrases: Mapping[str, Sequence[ParaphraseResult]] | None = None,
) -> tuple[list[QuestionResult], Models, RunSummary]:
    """Algorithm 1 over ``questions`` with the named models (None: that step is skipped), one client per model with
    ``llm_options``; ``diversity``: scored by MiniLM; ``paraphrases``: given ones (``run_questions``). -> (the results,
    the models, the calls' summary)."""
    models = Models(**(llm_options or {}))
    summary = RunSummary()
    results = run_questions(
        questions,
        paraphraser=models.get(paraphraser),
        qa=models.get(qa),
        judge=models.get(judge),
        plan=plan,
        diversity=score_groups if diversity else None,  # the MiniLM model loads on first use
        summary=summary,
        paraphrases=paraphrases,
    )
    return results, models, summary


def _manifest(
    kind: str,
    loads: Sequence[LoadResult],
    models: dict[str, str | None],
    plan: RunPlan | None,
    config: dict | None = None,
    **extra: Any,
) -> dict:
    """A corpus manifest; ``config``: the command's resolved settings (``OpConfig.result_record``), when built
    from the CLI."""
    return {
        "kind": kind,
        "paper": "arXiv 2609.21227v1",
        "models": {k: v for k, v in models.items() if v},
        "prompts": versions(),
        "sources": {f"{ld.source}": ld.origin for ld in loads},
        "skipped": {f"{ld.source}: {why}": n for ld in loads for why, n in ld.skipped.items()},
        "stand_in_splits": sorted({q.meta["stand_in"] for ld in loads for q in ld.questions if "stand_in" in q.meta}),
        **({"plan": plan.as_dict(), "k": plan.k} if plan else {}),
        **({"config": config} if config else {}),
        **extra,
    }


# ---- the paraphrase corpus -----------------------------------------------------------------------------


def build_paraphrase_corpus(
    out: str | Path,
    loads: Sequence[LoadResult],
    *,
    paraphraser: str,
    qa: str | None,
    judge: str,
    plan: RunPlan | None = None,
    limit: int | None = None,
    overwrite: bool = False,
    smoke: bool = False,
    diversity: bool = True,
    llm_options: dict | None = None,
    rerun: str | None = None,
    config: dict | None = None,
) -> HR1BuildResult:
    """Paraphrase every question of ``loads`` K times, judge consistency, score diversity, answer and grade;
    one config per source, split = the source split."""
    plan = plan or RunPlan()
    out = Path(out)
    refuse_existing(out, overwrite)
    questions = [q for ld in loads for q in (ld.questions[:limit] if limit else ld.questions)]
    if not questions:
        raise HR1BuildError("no questions to paraphrase (the sources are empty)")
    results, models, summary = _run_models(
        questions, plan, llm_options, paraphraser=paraphraser, qa=qa, judge=judge, diversity=diversity
    )
    _complete("hr1-paraphrases", results, models, rerun, summary)
    tables, paras = paraphrase_tables(results)
    counts = {
        "questions": len(results),
        "paraphrases": len(paras),
        "parsed": sum(p.text is not None for p in paras),
        "consistent": sum(bool(p.consistent) for p in paras),
        "unjudged": sum(p.text is not None and p.consistent is None for p in paras),
        "originally_correct": sum(counts_as_correct(r.correctness, plan.grading) for r in results),
    }
    manifest = _manifest(
        "hr1-paraphrases",
        loads,
        {"paraphraser": paraphraser, "qa": qa, "judge": judge},
        plan,
        config,
        smoke=smoke,
        counts=counts,
        parse_errors=dict(Counter(p.parse_error for p in paras if p.parse_error)),
    )
    _write(out, "hr1-paraphrases", tables, manifest, overwrite)
    return HR1BuildResult(out, "hr1-paraphrases", counts, summary, manifest)


def paraphrase_tables(results: list[QuestionResult]) -> tuple[dict[tuple[str, str], list[dict]], list]:
    """The rows of a paraphrase corpus, one table per (source, split), and all the paraphrases of ``results``."""
    tables: dict[tuple[str, str], list[dict]] = {}
    for r in results:
        tables.setdefault((r.question.source, r.question.split), []).append(_paraphrase_row(r))
    return tables, [p for r in results for p in r.paraphrases]


# ---- training corpora -----------------------------------------------------------------------------------


def _leaks(rows: list[TrainRow], eval_sets: Mapping[str, Sequence[HQuestion]], config: LeakageConfig | None) -> list:
    """The split-leakage violations of ``rows`` against the evaluation sets (at least one is required)."""
    if not eval_sets:
        raise HR1BuildError(
            "a training corpus needs the evaluation sets it must not overlap (--eval-set NAME=PATH, at least one)"
        )
    sets = {name: [(q.id, q.question) for q in qs] for name, qs in eval_sets.items()}
    return check_split_leakage(rows, sets, config or LeakageConfig()).rejections


def _screen(
    items: list[T],
    rows: list[TrainRow],
    eval_sets: Mapping[str, Sequence[HQuestion]],
    config: LeakageConfig | None,
    drop: bool,
) -> tuple[list[T], list[dict]]:
    """Check ``items`` (each checked as the TrainRow at the same position) for split leakage: a leaking one fails
    the build (nothing written) or, with ``drop``, is left out and listed (for the manifest)."""
    found = _leaks(rows, eval_sets, config)
    if found and not drop:
        raise SplitLeakageError(found)
    gone = {v.row_id for v in found}
    kept = [it for it, r in zip(items, rows, strict=True) if r.row_id not in gone]
    return kept, [{"row": v.row_id, "check": v.check, "reason": v.reason} for v in found]


def screen_questions(
    questions: list[HQuestion],
    eval_sets: Mapping[str, Sequence[HQuestion]],
    config: LeakageConfig | None,
    drop: bool,
) -> tuple[list[HQuestion], list[dict]]:
    """The training questions, screened before any model call (nothing is spent on a leaking one)."""
    return _screen(questions, [TrainRow(q.id, q.question, q.id) for q in questions], eval_sets, config, drop)


@dataclass
class Screened:
    """The training questions a build runs, screened for split leakage by its plan, and the rows it dropped."""

    questions: list[HQuestion]
    dropped: list[dict]


class TrainingOptions(TypedDict, total=False):
    """The settings the SFT and GRPO corpus builds share besides their models and evaluation sets: ``plan`` (default
    ``RunPlan()``), ``limit`` (the first questions only), ``overwrite``, ``leakage`` (the split-leakage settings),
    ``check_leakage`` (default on), ``drop_leaking`` (leave a leaking row out and list it instead of failing),
    ``llm_options``, ``rerun`` (the command a failed build names), ``config`` (the command's settings record) and
    ``screened`` (the questions as the plan screened them)."""

    plan: RunPlan | None
    limit: int | None
    overwrite: bool
    leakage: LeakageConfig | None
    check_leakage: bool
    drop_leaking: bool
    llm_options: dict | None
    rerun: str | None
    config: dict | None
    screened: Screened | None


@dataclass
class _TrainingRun:
    """A training corpus build once its model calls are made: what it writes where, how it screens, the screened
    training questions, their complete results, the rows dropped for leakage and the run summary."""

    kind: str
    out: Path
    train: LoadResult
    eval_sets: Mapping[str, Sequence[HQuestion]]
    plan: RunPlan
    leakage: LeakageConfig | None
    check_leakage: bool
    drop_leaking: bool
    overwrite: bool
    config: dict | None
    questions: list[HQuestion]
    results: list[QuestionResult]
    dropped: list[dict]
    summary: RunSummary

    def finish(
        self, rows: list[dict], counts: dict[str, int], models: dict[str, str | None], **extra: Any
    ) -> HR1BuildResult:
        """Write the corpus of ``rows`` (one table) with its manifest (``extra``: more of it)."""
        manifest = _manifest(
            self.kind,
            [self.train],
            models,
            self.plan,
            self.config,
            counts=counts,
            **extra,
            eval_sets=sorted(self.eval_sets),
            leakage_checked=self.check_leakage,
            dropped_for_leakage=self.dropped,
        )
        _write(self.out, self.kind, {("default", "train"): rows}, manifest, self.overwrite)
        return HR1BuildResult(self.out, self.kind, counts, self.summary, manifest)


def _training_run(
    kind: str,
    out: str | Path,
    train: LoadResult,
    eval_sets: Mapping[str, Sequence[HQuestion]] | None,
    *,
    paraphraser: str | None,
    qa: str | None,
    judge: str,
    plan: RunPlan | None = None,
    limit: int | None = None,
    overwrite: bool = False,
    leakage: LeakageConfig | None = None,
    check_leakage: bool = True,
    drop_leaking: bool = False,
    llm_options: dict | None = None,
    rerun: str | None = None,
    config: dict | None = None,
    screened: Screened | None = None,
) -> _TrainingRun:
    """The first steps of a training corpus: the questions (up to ``limit``), screened for split leakage before
    any call (``check_leakage``; ``screened``: as the plan screened them), run through the named models (None: that
    step is skipped), complete runs only."""
    plan = plan or RunPlan()
    if screened is not None:
        questions, dropped = list(screened.questions), list(screened.dropped)
    else:
        questions = train.questions[:limit] if limit else train.questions
        dropped = []
        if check_leakage:
            questions, dropped = screen_questions(questions, eval_sets or {}, leakage, drop_leaking)
    results, models, summary = _run_models(questions, plan, llm_options, paraphraser=paraphraser, qa=qa, judge=judge)
    _complete(kind, results, models, rerun, summary)
    return _TrainingRun(
        kind,
        Path(out),
        train,
        eval_sets or {},
        plan,
        leakage,
        check_leakage,
        drop_leaking,
        overwrite,
        config,
        questions,
        results,
        dropped,
        summary,
    )


def grpo_row(q: HQuestion) -> dict:
    """One GRPO prompt (App. C.1): the question under Listing B.1 as the user turn, with its gold answers."""
    return {
        "prompt_id": prompt_id(q),
        "question_id": q.id,
        "source": q.source,
        "split": q.split,
        "question": q.question,
        "answers": list(q.answers),
        "license": q.license,
        "prompt": [{"role": "user", "content": paraphrase_prompt(q.question)}],
    }


def sft_rows(q: HQuestion, paraphrases: Iterable[ParaphraseResult]) -> list[dict]:
    """The SFT pairs of one question (App. E.1): each consistent paraphrase as the user turn of Listing B.4, the
    gold answer in ``<answer>`` tags as the assistant turn."""
    rows = []
    for p in paraphrases:
        if p.consistent and p.text:
            system, _user = qa_messages(p.text)
            rows.append(
                {
                    "id": f"{q.id}-p{p.k}",
                    "question_id": q.id,
                    "source": q.source,
                    "split": q.split,
                    "question": q.question,
                    "paraphrase": p.text,
                    "answer": q.answer,
                    "license": q.license,
                    "messages": [
                        {"role": "system", "content": system.content},
                        {"role": "user", "content": p.text},
                        {"role": "assistant", "content": sft_target(q.answer)},
                    ],
                }
            )
    return rows


def build_sft_corpus(
    out: str | Path,
    train: LoadResult,
    *,
    paraphraser: str,
    judge: str,
    eval_sets: Mapping[str, Sequence[HQuestion]] | None,
    **options: Unpack[TrainingOptions],
) -> HR1BuildResult:
    """App. E.1: K (``plan.k``) paraphrases per training question (no QA filter), the consistent ones paired with the gold
    answer as chat ``messages``: system Listing B.4, user the paraphrase, assistant ``<answer>gold</answer>``
    (the target format the QA prompt asks for; the paper does not print it).

    Split leakage is checked against ``eval_sets`` twice: the questions before any call (``screened``: by the
    plan), the paraphrases after; a violation fails the build, or with ``drop_leaking`` the row is left out and
    listed. ``options``: :class:`TrainingOptions`."""
    run = _training_run("hr1-sft", out, train, eval_sets, paraphraser=paraphraser, qa=None, judge=judge, **options)
    rows = [row for r in run.results for row in sft_rows(r.question, r.paraphrases)]
    if run.check_leakage and rows:
        paraphrases = [TrainRow(r["id"], r["paraphrase"], r["question_id"]) for r in rows]
        rows, more = _screen(rows, paraphrases, run.eval_sets, run.leakage, run.drop_leaking)
        run.dropped += more
    if not rows:
        raise HR1BuildError("no consistent paraphrase: the SFT corpus would be empty (see the parse errors in the log)")
    counts = {"questions": len(run.results), "pairs": len(rows), "dropped_for_leakage": len(run.dropped)}
    return run.finish(rows, counts, {"paraphraser": paraphraser, "judge": judge})


def prompt_id(q: HQuestion) -> str:
    """A stable id of a GRPO prompt: the first 16 hex digits of SHA-256 over the question id and text."""
    return hashlib.sha256(f"{q.id}\n{q.question}".encode()).hexdigest()[:16]


def build_grpo_corpus(
    out: str | Path,
    train: LoadResult,
    *,
    qa: str,
    judge: str,
    eval_sets: Mapping[str, Sequence[HQuestion]] | None,
    **options: Unpack[TrainingOptions],
) -> HR1BuildResult:
    """App. C.1: the training questions the QA model answers correctly (B.4, greedy; graded by B.3 or exact
    match), each with a stable ``prompt_id``, Listing B.1 applied as a one-message chat ``prompt`` and the
    gold answers kept for the reward. Split leakage is checked before any call (fail, or ``drop_leaking``).
    ``options``: :class:`TrainingOptions`."""
    run = _training_run("hr1-grpo", out, train, eval_sets, paraphraser=None, qa=qa, judge=judge, **options)
    results = run.results
    rows = [grpo_row(r.question) for r in results if counts_as_correct(r.correctness, run.plan.grading)]
    if not rows:
        raise HR1BuildError(
            f"the QA model ({qa}) answered none of the {len(run.questions)} questions correctly: no prompts"
        )
    counts = {
        "asked": len(results),
        "prompts": len(rows),
        "unjudged": sum(r.correctness == "unjudged" for r in results),
        "dropped_for_leakage": len(run.dropped),
    }
    return run.finish(rows, counts, {"qa": qa, "judge": judge}, kept_of=len(results))
