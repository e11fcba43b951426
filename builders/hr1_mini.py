"""Hallucination-R1-mini: the offline default of ``build hr1-paraphrases`` and ``eval hr1`` (docs/hr1.md,
"Hallucination-R1-mini"), in the spirit of PHRBench-mini.

52 packaged questions (TruthfulQA and SimpleQuestions rows, text and gold answers in
``builders/curated/hr1-mini.jsonl``), each with K = 4 paraphrases written and labelled for consistency (Listing
B.2's sense) by the maintainers, a few of them deliberately inconsistent. Nothing generates or judges them: the
build scores their diversity (sacreBLEU + MiniLM, ``phr.hr1.diversity``), asks the offline QA model
(``local:smollm2``, 16-token answers) the originals and, as Algorithm 1, the consistent paraphrases of the
originally correct ones, and grades the answers by
alias match (the PopQA rule, every source), so no judge model is needed. The same file gives the tiny training
corpora of the smoke sequence (``build hr1-sft`` / ``build hr1-grpo`` with no ``--source``) and the GRPO format
warm-up pairs.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from phr.config.defaults import OFFLINE_MODEL
from phr.config.ops import HR1_MINI_K, HR1Decoding
from phr.core.errors import UsageError
from phr.core.fs import refuse_existing
from phr.hr1.pipeline import RunPlan, counts_as_correct, paraphrase_prompt
from phr.hr1.records import SOURCES, HQuestion, ParaphraseResult
from phr.hr1.settings import Grading
from phr.llm.summary import RunSummary

from .hr1 import (
    HR1BuildResult,
    _manifest,
    _run_models,
    _write,
    grpo_row,
    paraphrase_tables,
    screen_questions,
    sft_rows,
)
from .hr1_sources import LoadResult, _q, stand_in_split

MINI_FILE = "curated/hr1-mini.jsonl"
MINI_QA = OFFLINE_MODEL
MINI_K = HR1_MINI_K  # the curated paraphrases per question (the file's K; the presets mini say it too)
MINI_PARAPHRASER = "curated"  # the paraphraser name recorded for the maintainers' paraphrases
MINI_LABELS = "curated (maintainers' labels, Listing B.2 sense)"
#: every source graded by alias match (the PopQA rule): no judge model offline
MINI_GRADING = Grading(exact_match_sources=SOURCES)
MINI_NOTICE = (
    "**Hallucination-R1-mini.** {n} packaged questions (TruthfulQA and SimpleQuestions rows), each with K = {k} "
    "paraphrases written by the toolkit's maintainers and labelled by them for consistency (Listing B.2's sense; "
    "{bad} are deliberately inconsistent, each with the reason in `consistency_think`). No paraphraser or judge "
    "model was run. Answers: the offline `local:smollm2` (SmolLM2-135M-Instruct, 16-token answers), graded by "
    "alias match (a normalised gold answer occurs in the answer: PopQA's rule, used here for every source). "
    "An offline test set for the toolkit, not the paper's models: do not report its numbers as the paper's."
)


class MiniParaphrase(BaseModel):
    """One curated paraphrase: its text, the maintainers' B.2 label and, for an inconsistent one, why."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    text: str = Field(min_length=1)
    consistent: bool
    why: str | None = None


class MiniRow(BaseModel):
    """One line of ``hr1-mini.jsonl``: a source question, its gold answers and K curated paraphrases."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    source: str
    split: str
    source_row_id: str
    question: str = Field(min_length=1)
    answers: tuple[str, ...] = Field(min_length=1)
    meta: dict[str, str] = Field(default_factory=dict)  # the loader's source fields (SimpleQuestions: the triple)
    paraphrases: tuple[MiniParaphrase, ...]

    @property
    def key(self) -> str | None:
        """The source's own key of the row, as its loader gives it to the id function (SimpleQuestions: the
        subject, property and object ids), so a packaged question has the loader's id."""
        if self.source == "simplequestions":
            return " ".join(self.meta.get(k, "") for k in ("subject", "property", "object"))
        return None

    @field_validator("source")
    @classmethod
    def _known(cls, v: str) -> str:
        if v not in SOURCES:
            raise ValueError(f"unknown source {v!r}; known: {', '.join(SOURCES)}")
        return v

    @field_validator("paraphrases")
    @classmethod
    def _k(cls, v: tuple[MiniParaphrase, ...]) -> tuple[MiniParaphrase, ...]:
        if len(v) != MINI_K:
            raise ValueError(f"{len(v)} paraphrases; expected K = {MINI_K}")
        for p in v:
            if not p.consistent and not (p.why or "").strip():
                raise ValueError(f"inconsistent paraphrase {p.text!r} has no 'why'")
        return v


@dataclass(frozen=True)
class Mini:
    """H-R1-mini loaded: the questions per source, their curated paraphrases by question id, the file's hash."""

    loads: list[LoadResult]
    paraphrases: dict[str, list[ParaphraseResult]]
    sha256: str

    @property
    def questions(self) -> list[HQuestion]:
        return [q for ld in self.loads for q in ld.questions]


def read_mini(text: str, name: str = MINI_FILE) -> list[MiniRow]:
    """The rows of a curated file's text; a bad line is an error naming the file, line and field."""
    rows: list[MiniRow] = []
    seen: set[tuple[str, str]] = set()
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = MiniRow.model_validate(json.loads(line))
        except json.JSONDecodeError as e:
            raise UsageError(f"{name}: line {n}: not JSON ({e.msg})") from None
        except ValidationError as e:
            err = e.errors()[0]
            where = ".".join(str(x) for x in err["loc"]) or "row"
            raise UsageError(f"{name}: line {n}: {where}: {err['msg']}") from None
        key = (row.source, row.source_row_id)
        if key in seen:
            raise UsageError(f"{name}: line {n}: {row.source} row {row.source_row_id} appears twice")
        seen.add(key)
        rows.append(row)
    if not rows:
        raise UsageError(f"{name}: no rows")
    return rows


def load_mini(path: str | Path | None = None) -> Mini:
    """H-R1-mini from the packaged file (or ``path``): ``HQuestion`` rows (ids by the loaders' id function) and
    their curated ``ParaphraseResult`` rows (k = 0..3, label, the reason of an inconsistent one)."""
    if path is None:
        text = resources.files("phr.builders").joinpath(MINI_FILE).read_text(encoding="utf-8")
        name = f"builders/{MINI_FILE}"
    else:
        text, name = Path(path).read_text(encoding="utf-8"), str(path)
    rows = read_mini(text, name)
    by_source: dict[str, list[HQuestion]] = {}
    paras: dict[str, list[ParaphraseResult]] = {}
    for r in rows:
        q = _q(r.source, r.split, r.source_row_id, r.question, r.answers, r.key, **r.meta)
        by_source.setdefault(r.source, []).append(q)
        paras[q.id] = [
            ParaphraseResult(
                k=k,
                text=p.text,
                consistent=p.consistent,
                consistency_think=f"curated: {'consistent' if p.consistent else 'inconsistent: ' + (p.why or '')}",
            )
            for k, p in enumerate(r.paraphrases)
        ]
    origin = f"builders/{MINI_FILE}" if path is None else str(path)
    loads = [LoadResult(src, qs, origin=origin) for src, qs in sorted(by_source.items())]
    return Mini(loads, paras, hashlib.sha256(text.encode("utf-8")).hexdigest())


def mini_plan(decoding: HR1Decoding, k: int = MINI_K) -> RunPlan:
    """The run plan on the mini's questions: ``k`` paraphrases, the config's decoding (its preset mini: 16-token
    answers hold a tagged short answer), alias-match grading, Algorithm 1's QA scope (only a question answered
    correctly can fail on a paraphrase)."""
    return RunPlan(k=k, decoding=decoding, grading=MINI_GRADING, qa_scope="originally_correct")


def describe(mini: Mini, plan: RunPlan) -> str:
    """One line naming the preset and what it holds (the CLI prints it)."""
    n = Counter(q.source for q in mini.questions)
    bad = sum(not p.consistent for ps in mini.paraphrases.values() for p in ps)
    parts = ", ".join(f"{v} {k}" for k, v in sorted(n.items()))
    return (
        f"preset mini: Hallucination-R1-mini ({len(mini.questions)} packaged questions: {parts}; K = {MINI_K} "
        f"curated paraphrases with the maintainers' consistency labels, {bad} deliberately inconsistent); "
        f"QA {MINI_QA} ({plan.decoding.qa_max_tokens}-token answers), alias-match grading, no judge model"
    )


def describe_eval(mini: Mini, *, paraphraser: str | None, judge: str | None, qa: str, k: int, limit: int | None) -> str:
    """The line ``eval hr1`` prints on the mini's questions: what this run uses (``paraphraser`` None: the curated
    paraphrases), its judge (None: none), QA model, K and the questions ``limit`` keeps per source."""
    n = Counter(q.source for q in mini.questions)
    kept = {s: min(v, limit) if limit else v for s, v in sorted(n.items())}
    parts = ", ".join(f"{v} {s}" for s, v in kept.items())
    paras = (
        f"K = {k} curated paraphrases with the maintainers' consistency labels"
        if paraphraser is None
        else f"K = {k} paraphrases by {paraphraser}"
    )
    return (
        f"preset mini: Hallucination-R1-mini ({sum(kept.values())} of {len(mini.questions)} packaged questions: "
        f"{parts}); {paras}; QA {qa}, alias-match grading, {f'judge {judge}' if judge else 'no judge model'}"
    )


def _mini_manifest(
    mini: Mini,
    kind: str,
    loads: list[LoadResult],
    models: dict,
    plan: RunPlan | None,
    config: dict | None = None,
    **extra: Any,
) -> dict:
    bad = sum(not p.consistent for ps in mini.paraphrases.values() for p in ps)
    return _manifest(
        kind,
        loads,
        models,
        plan,
        config,
        preset="mini",
        curated={"file": f"builders/{MINI_FILE}", "sha256": mini.sha256, "inconsistent_paraphrases": bad},
        consistency_labels=MINI_LABELS,
        notices=[MINI_NOTICE.format(n=len(mini.questions), bad=bad, k=MINI_K)],
        **extra,
    )


def build_mini(
    out: str | Path,
    plan: RunPlan,
    *,
    qa: str = MINI_QA,
    overwrite: bool = False,
    diversity: bool = True,
    llm_options: dict | None = None,
    mini: Mini | None = None,
    config: dict | None = None,
) -> HR1BuildResult:
    """The H-R1-mini paraphrase corpus: the curated paraphrases and labels, their diversity, the QA model's
    answers to the originals and (Algorithm 1) to the consistent paraphrases of the originally correct ones,
    graded by alias match."""
    mini = mini or load_mini()
    out = Path(out)
    refuse_existing(out, overwrite)
    results, _models, summary = _run_models(
        mini.questions,
        plan,
        llm_options,
        paraphraser=None,
        qa=qa,
        judge=None,
        diversity=diversity,
        paraphrases=mini.paraphrases,
    )
    tables, paras = paraphrase_tables(results)
    counts = {
        "questions": len(results),
        "paraphrases": len(paras),
        "consistent": sum(bool(p.consistent) for p in paras),
        "originally_correct": sum(counts_as_correct(r.correctness, plan.grading) for r in results),
        "paraphrases_correct": sum(counts_as_correct(p.correctness, plan.grading) for p in paras),
    }
    manifest = _mini_manifest(
        mini,
        "hr1-paraphrases",
        mini.loads,
        {"paraphraser": MINI_PARAPHRASER, "qa": qa, "judge": MINI_LABELS},
        plan,
        config,
        smoke=False,
        counts=counts,
    )
    _write(out, "hr1-paraphrases", tables, manifest, overwrite, folder="hr1-mini")  # the build's default folder
    return HR1BuildResult(out, "hr1-paraphrases", counts, summary, manifest)


# ---- the training smoke corpora ------------------------------------------------------------------------------


def mini_train_and_eval(mini: Mini | None = None) -> tuple[LoadResult, dict[str, list[HQuestion]]]:
    """The smoke training questions and the evaluation sets they must not overlap: the mini's SimpleQuestions
    rows split by the stand-in rule (even rows train, odd rows test) and its TruthfulQA rows."""
    mini = mini or load_mini()
    sq = next((ld for ld in mini.loads if ld.source == "simplequestions"), None)
    if sq is None:
        raise UsageError("the mini file has no SimpleQuestions rows to train on")
    train, test = stand_in_split(sq)
    evals = {f"simplequestions (mini, {test.stand_in})": test.questions}
    evals.update({f"{ld.source} (mini)": ld.questions for ld in mini.loads if ld.source != "simplequestions"})
    return train, evals


def _train_paraphrases(mini: Mini, q: HQuestion) -> list[ParaphraseResult]:
    """The curated paraphrases of a stand-in train question (its id carries the new split)."""
    ids = {(m.source, m.source_row_id): m.id for m in mini.questions}
    return mini.paraphrases[ids[(q.source, q.source_row_id)]]


def build_mini_sft(
    out: str | Path, *, overwrite: bool = False, mini: Mini | None = None, config: dict | None = None
) -> HR1BuildResult:
    """The smoke SFT corpus (App. E.1's format) without a model: the curated consistent paraphrases of the mini's
    stand-in train questions with their gold answer; leakage-checked against the rest of the mini."""
    mini = mini or load_mini()
    train, evals = mini_train_and_eval(mini)
    questions, _ = screen_questions(train.questions, evals, None, drop=False)
    rows = [row for q in questions for row in sft_rows(q, _train_paraphrases(mini, q))]
    counts = {"questions": len(questions), "pairs": len(rows), "dropped_for_leakage": 0}
    manifest = _mini_manifest(
        mini,
        "hr1-sft",
        [train],
        {"paraphraser": MINI_PARAPHRASER, "judge": MINI_LABELS},
        None,
        config,
        counts=counts,
        eval_sets=sorted(evals),
        leakage_checked=True,
        dropped_for_leakage=[],
    )
    _write(Path(out), "hr1-sft", {("default", "train"): rows}, manifest, overwrite)
    return HR1BuildResult(Path(out), "hr1-sft", counts, RunSummary(), manifest)


def build_mini_grpo(
    out: str | Path, *, overwrite: bool = False, mini: Mini | None = None, config: dict | None = None
) -> HR1BuildResult:
    """The smoke GRPO prompt corpus (App. C.1's format) without a model: every stand-in train question of the
    mini (no QA filter, the card says so); leakage-checked against the rest of the mini."""
    mini = mini or load_mini()
    train, evals = mini_train_and_eval(mini)
    questions, _ = screen_questions(train.questions, evals, None, drop=False)
    rows = [grpo_row(q) for q in questions]
    counts = {"asked": 0, "prompts": len(rows), "unjudged": 0, "dropped_for_leakage": 0}
    manifest = _mini_manifest(
        mini,
        "hr1-grpo",
        [train],
        {},
        None,
        config,
        counts=counts,
        kept_of=len(rows),
        qa_filter="none (smoke corpus: every stand-in train question of H-R1-mini, not filtered by a QA model)",
        eval_sets=sorted(evals),
        leakage_checked=True,
        dropped_for_leakage=[],
    )
    _write(Path(out), "hr1-grpo", {("default", "train"): rows}, manifest, overwrite)
    return HR1BuildResult(Path(out), "hr1-grpo", counts, RunSummary(), manifest)


def format_pairs(mini: Mini | None = None) -> list[tuple[str, str]]:
    """(Listing B.1 prompt, ``<paraphrase>text</paraphrase>``) for every consistent curated paraphrase of the
    mini's stand-in train questions: the format warm-up of the GRPO smoke policy."""
    mini = mini or load_mini()
    train, _ = mini_train_and_eval(mini)
    return [
        (paraphrase_prompt(q.question), f"<paraphrase>{p.text}</paraphrase>")
        for q in train.questions
        for p in _train_paraphrases(mini, q)
        if p.consistent and p.text
    ]
