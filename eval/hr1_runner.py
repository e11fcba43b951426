"""``phr-publish eval hr1``: robustness evaluation of a paraphraser against a QA model (paper §4, §5.1, §7,
App. C.4 Algorithm 1, App. F), with the paper's tables as JSON and Markdown (docs/hr1.md).

Every model call goes through the LLM layer's cache, so an interrupted run resumes where it stopped and a
rerun makes no calls. The run folder (default ``runs-hr1/``) holds ``results.json`` (``benchmark: hallucination-r1``, settings, models, prompt hashes, every table
with standard errors, whether the run is partial and its failed calls), ``report.md`` (the tables shaped like
the paper's), ``records/<dataset>.jsonl`` (one ``QuestionResult`` per question: every paraphrase, verdict,
answer and grade) and ``calls.json`` (the call summary: it differs between a fresh run and a cached rerun, so
it is kept apart from the results, which a rerun reproduces byte for byte).

A call that failed after all retries is a missing value (``phr.hr1.failures``): the run stops with
``FailedCallsError`` and writes nothing, unless ``partial=True`` asks for the tables anyway (the missing
values left out of their denominators, counted, the results marked ``partial``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

from phr.config.ops import DEFAULT_HR1_TABLE, HR1Decoding, HR1Table
from phr.core.errors import UsageError
from phr.core.fs import atomic_dir, atomic_write, json_text, refuse_existing
from phr.eval.hr1_metrics import (
    FAILED,
    Labels,
    MetricSettings,
    human_majority,
    labels_from_results,
    read_human_labels,
    table1,
    table1_markdown,
    table2,
    table2_markdown,
    table3_markdown,
    table4,
    table4_markdown,
    table7,
    table7_markdown,
    to_json,
)
from phr.hr1.diversity import score_groups
from phr.hr1.failures import FailedCallsError, failed_calls, rerun_hint
from phr.hr1.pipeline import Models, QAScope, RunPlan, failure_text, judge_consistency, run_questions
from phr.hr1.prompts import versions
from phr.hr1.records import HQuestion, ParaphraseResult, QuestionResult
from phr.hr1.settings import Grading
from phr.llm import LLM
from phr.llm.summary import RunSummary

#: ``results.json``'s ``benchmark``: tells it from a PHRBench result (which `leaderboard` reads)
BENCHMARK = "hallucination-r1"


@dataclass
class HR1EvalResult:
    out: Path
    tables: dict
    summary: RunSummary = field(default_factory=RunSummary)
    counts: dict = field(default_factory=dict)
    failures: list[tuple[str, str]] = field(default_factory=list)  # (where, "<step>: <reason>"): partial if any
    rerun: str = ""  # how to finish a partial run
    settings: str = (
        ""  # the run's preset and the command that repeats it (set by ``phr.ops.build_hr1_paraphrases.run``)
    )

    @property
    def partial(self) -> bool:
        return bool(self.failures)


def table_settings(
    table: HR1Table = DEFAULT_HR1_TABLE,
    k: int | None = None,
    grading: Grading | None = None,
    decoding: HR1Decoding | None = None,
) -> tuple[RunPlan, MetricSettings]:
    """The run plan and metric settings of ``table`` (the one place K is resolved for ``eval hr1``): ``"2"``
    (Tables 1–3: K paraphrases, default ``HR1_K``; only originally-correct questions' paraphrases are answered) or
    ``"4"`` (Table 4: default ``HR1_TABLE4_K`` paraphrases, every consistent one answered)."""
    grading = grading or Grading()
    base = MetricSettings(grading=grading)
    k = k or (base.table4_k if table == "4" else base.k)
    metrics = replace(base, k=min(base.k, k), table4_k=k if table == "4" else base.table4_k)
    scope: QAScope = "all" if table == "4" else "originally_correct"
    plan = RunPlan(k=k, decoding=decoding or HR1Decoding(), grading=grading, qa_scope=scope)
    return plan, metrics


def _dataset_tables(
    tables: dict, name: str, results: list[QuestionResult], *, table: HR1Table, metrics: MetricSettings, diversity: bool
) -> None:
    """Put one dataset's Table 1 (when diversity was scored) and its Table 2 or Table 4 into ``tables``."""
    if diversity:
        tables["table1"][name] = table1(results, metrics)
    if table == "2":
        tables["table2"][name] = table2(results, metrics)
    else:
        tables["table4"][name] = table4(results, metrics)


def _run_datasets(
    datasets: Mapping[str, Sequence[HQuestion]],
    models: Models,
    llms: tuple[LLM | None, LLM | None, LLM | None],
    *,
    judge: str,
    judges: Sequence[str],
    human: str | Path | None,
    table: HR1Table,
    plan: RunPlan,
    metrics: MetricSettings,
    diversity: bool,
    summary: RunSummary,
    paraphrases: Mapping[str, Sequence[ParaphraseResult]] | None,
) -> tuple[dict[str, list[QuestionResult]], dict, list[tuple[str, str]]]:
    """Algorithm 1 on every dataset with ``llms`` (paraphraser, QA model, judge): (the question results per
    dataset, the tables, the failed calls)."""
    para_llm, qa_llm, judge_llm = llms
    records: dict[str, list[QuestionResult]] = {}
    tables: dict = {"table1": {}, "table2": {}, "table4": {}, "table7": {}}
    failures: list[tuple[str, str]] = []
    for name, questions in datasets.items():
        results = run_questions(
            list(questions),
            paraphraser=para_llm,
            qa=qa_llm,
            judge=judge_llm,
            plan=plan,
            diversity=score_groups if diversity else None,
            summary=summary,
            paraphrases=paraphrases,
        )
        records[name] = results
        failures += [(f"{name}: {where}", why) for where, why in failed_calls(results)]
        _dataset_tables(tables, name, results, table=table, metrics=metrics, diversity=diversity)
        if judges or human:
            labels, lost = _judge_labels(name, results, judge, judges, models, plan, summary)
            failures += lost
            human_labels = human_majority(read_human_labels(human), metrics) if human else None
            tables["table7"][name] = table7(labels, human_labels, metrics)
    return records, tables, failures


def _results_payload(settings: dict, tables: dict, failures: list[tuple[str, str]]) -> dict:
    """``results.json``: the benchmark, the run's settings, whether it is partial, the failed calls and the
    tables."""
    return {
        "benchmark": BENCHMARK,  # not a PHRBench result: `leaderboard` skips it with a note
        "settings": settings,
        "partial": bool(failures),
        "failed_calls": [{"where": where, "reason": why} for where, why in failures],
        "tables": json.loads(_tables_json(tables)),
    }


def evaluate(
    datasets: Mapping[str, Sequence[HQuestion]],
    *,
    paraphraser: str,
    qa: str,
    judge: str,
    out: str | Path,
    table: HR1Table = DEFAULT_HR1_TABLE,
    plan: RunPlan | None = None,
    metrics: MetricSettings | None = None,
    judges: Sequence[str] = (),
    human: str | Path | None = None,
    diversity: bool = True,
    overwrite: bool = False,
    llm_options: dict | None = None,
    partial: bool = False,
    rerun: str | None = None,
    config: dict | None = None,
    paraphrases: Mapping[str, Sequence[ParaphraseResult]] | None = None,
) -> HR1EvalResult:
    """Run Algorithm 1 on every dataset and compute the tables.

    ``table``, ``plan`` and ``metrics``: what ``table_settings`` resolves (``plan``'s K and QA scope, the
    tables' settings; default: ``table_settings(table)``). ``judges``: more consistency judges for Table 7 (the
    run's ``judge`` is the first row), ``human``: a CSV of human labels (``question_id,k,annotator,label``).
    ``partial``: write the tables even when calls failed (see the module docstring); ``rerun``: the command that
    finishes the run, quoted in the failure message. ``paraphrases``: given paraphrases with their consistency
    labels per question id (H-R1-mini's curated ones, ``paraphraser`` names them): no paraphraser or B.2 judge is
    called."""
    out = Path(out)
    refuse_existing(out, overwrite)
    if not datasets or not any(datasets.values()):
        raise UsageError("no questions to evaluate (give --dataset NAME=PATH)")
    if plan is None or metrics is None:
        plan, metrics = table_settings(table)
    k = plan.k
    models = Models(**(llm_options or {}))
    para_llm = None if paraphrases is not None else models.get(paraphraser)
    qa_llm, judge_llm = models.get(qa), models.get(judge)
    summary = RunSummary()
    records, tables, failures = _run_datasets(
        datasets,
        models,
        (para_llm, qa_llm, judge_llm),
        judge=judge,
        judges=judges,
        human=human,
        table=table,
        plan=plan,
        metrics=metrics,
        diversity=diversity,
        summary=summary,
        paraphrases=paraphrases,
    )
    caches = models.caches()
    if failures and not partial:
        raise FailedCallsError("eval hr1", failures, rerun, caches, summary)
    hint = rerun_hint(rerun, caches) if failures else ""
    markdown = _markdown(tables, paraphraser, qa, k)
    settings = {
        "paraphraser": paraphraser,
        "qa_model": qa,
        "judge": judge,
        "judges": list(judges),
        "human_labels": str(human) if human else None,
        "table": table,
        "k": k,
        "plan": plan.as_dict(),
        "metrics": {k_: v for k_, v in asdict(metrics).items() if k_ != "grading"},
        "prompts": versions(),
        "datasets": {name: len(qs) for name, qs in datasets.items()},
        **({"config": config} if config else {}),
    }
    payload = _results_payload(settings, tables, failures)
    header = _report_header(f"Paraphraser `{paraphraser}`, QA model `{qa}`, judge `{judge}`; K = {k}; "
                            f"fuzzy B.3 answers count as {plan.grading.fuzzy}.", failures, hint)  # fmt: skip
    _write_run(out, payload, summary, "\n".join(header + markdown), records)
    counts = {name: len(rs) for name, rs in records.items()}
    return HR1EvalResult(out, tables, summary, counts, failures, hint)


def _judge_labels(
    name: str,
    results: list[QuestionResult],
    judge: str,
    judges: Sequence[str],
    models: Models,
    plan: RunPlan,
    summary: RunSummary,
) -> tuple[dict[str, Labels], list[tuple[str, str]]]:
    """Table 7's consistency labels of one set: the run's ``judge`` (from the results) and each of ``judges``
    (asked here, B.2), with the failed calls of those."""
    labels = {judge: labels_from_results(results)}
    pairs = [(f"{r.question.id}/p{p.k}", r.question.question, p.text) for r in results for p in r.paraphrases if p.text]
    keys = [(r.question.id, p.k) for r in results for p in r.paraphrases if p.text]
    failures: list[tuple[str, str]] = []
    for spec in judges:
        llm = None if spec == judge else models.get(spec)
        if llm is None:  # the run's judge (labelled above), or a judge given as none
            continue
        verdicts = judge_consistency(llm, pairs, plan.judges)
        summary.merge(llm.last_summary)
        got = {
            key: FAILED if v.failure else (None if v.verdict is None else v.verdict.result == 1)
            for key, v in zip(keys, verdicts, strict=True)
        }
        failures += [
            (f"{name}: {q}/p{k_} ({spec})", f"consistency judge: {failure_text(v.failure)}")
            for (q, k_), v in zip(keys, verdicts, strict=True)
            if v.failure
        ]
        labels[spec] = {key: got.get(key, False) for key in labels[judge]}
    return labels, failures


def _markdown(tables: dict, paraphraser: str, qa: str, k: int) -> list[str]:
    """The tables as Markdown, shaped like the paper's."""
    markdown: list[str] = []
    if tables["table1"]:
        markdown += ["## Table 1: consistency and diversity", ""]
        for name, t in tables["table1"].items():
            markdown += [f"### {name}", "", table1_markdown({paraphraser: t}), ""]
    if tables["table2"]:
        markdown += [
            "## Table 2: robustness (True(Acc), ER@1 / WER@K)",
            "",
            table2_markdown({qa: tables["table2"]}),
            "",
        ]
        for name, t in tables["table2"].items():
            markdown += [f"## Table 3: {name} (QA model {qa})", "", table3_markdown({paraphraser: t}), ""]
    if tables["table4"]:
        markdown += [
            f"## Table 4: Para / Robust / Any Acc over {k} paraphrases",
            "",
            table4_markdown({f"{paraphraser} → {qa}": tables["table4"]}),
            "",
        ]
    for name, t in tables["table7"].items():
        markdown += [f"## Table 7: judge validation ({name})", "", table7_markdown(t), ""]
    return markdown


def _report_header(run: str, failures: list[tuple[str, str]], hint: str) -> list[str]:
    """report.md's title, the ``run`` line (models, K, the fuzzy rule) and, for a partial run, what is missing."""
    partial_note = (
        [
            f"**Partial**: {len(failures)} value(s) are missing (a model call failed after all retries); they are "
            "left out of the tables' denominators and listed in results.json (`failed_calls`). " + hint,
            "",
        ]
        if failures
        else []
    )
    return [
        "# Hallucination-R1 evaluation",
        "",
        f"{run} Every figure ± its bootstrap standard error over questions. Settings: results.json.",
        "",
        *partial_note,
    ]


def _write_run(
    out: Path, payload: dict, summary: RunSummary, report: str, records: dict[str, list[QuestionResult]]
) -> None:
    """The run folder, atomically: results.json, calls.json, report.md and records/<set>.jsonl."""
    with atomic_dir(out) as tmp:
        atomic_write(tmp / "results.json", json_text(payload))
        atomic_write(tmp / "calls.json", json_text(summary.as_dict()))
        atomic_write(tmp / "report.md", report)
        (tmp / "records").mkdir()
        for name, results in records.items():
            atomic_write(tmp / "records" / f"{name}.jsonl", "".join(r.model_dump_json() + "\n" for r in results))


def _tables_json(tables: dict) -> str:
    return to_json({key: value for key, value in tables.items() if value})
