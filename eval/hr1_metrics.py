"""Hallucination-R1's evaluation tables (paper §4 Table 1, §5.1 / App. C.4 Tables 2-3, §7 / App. E.3 Table 4,
App. F Table 7) as pure functions over ``QuestionResult`` rows and plain label maps.

Every figure carries a bootstrap standard error over questions (phr.eval.bootstrap: seed 0, 1000 resamples of
the question ids; a rate over paraphrases is, per resample, the drawn paraphrases' mean, the same estimator as
the point value). Results built from the same question ids share their draws, so rows of one table (e.g. Table
3's paraphrasers) are paired. Definitions and the choices the paper leaves open: docs/hr1.md, "Metrics
(Tables 1–4, 7)".

A paraphrase is *consistent* when ``consistent is True`` and it has text; one without text or left unjudged
counts as not consistent (never a robustness failure) and is counted. An answer is *correct* / *wrong* by
``Grading.fuzzy`` (B.3 score 1); an unjudged answer is neither, so it is never a failure (Tables 2-3) nor a
success (Table 4), and is counted.

A value whose model call failed after all retries (``failed`` on the row: the paraphrase, its consistency
verdict, an answer or its grade) is *missing*: it is left out of every denominator it would enter, counted
(``failed_*``), and the run is partial (``eval hr1`` exits 1 unless partial tables are asked for). Which
figures a missing value leaves: docs/hr1.md, "Failed calls".
"""

from __future__ import annotations

import csv
import json
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict

from phr.config.ops import HR1_K, HR1_TABLE4_K
from phr.core.errors import PHRError
from phr.eval.bootstrap import QuestionResampler, standard_error
from phr.hr1.records import Correctness, ParaphraseResult, QuestionResult
from phr.hr1.settings import Grading

FAILED = "failed"  # a label whose paraphrase or judge call failed after retries: missing, left out of denominators
Labels = dict[tuple[str, int], bool | None | str]  # (question id, k) -> consistent (None: unjudged; FAILED)
HUMAN_COLUMNS = ("question_id", "k", "annotator", "label")


@dataclass(frozen=True)
class MetricSettings:
    """Named choices of the tables (docs/hr1.md). ``k``: the @K of Tables 2, 3 and 7 (paper: 5); ``table4_k``:
    paraphrases per question in Table 4 (paper: 8); ``div_set``: the paraphrases Mean Div and Ratio(Div >
    ``div_threshold``) average over; ``no_retained``: a Table 4 question with no consistent paraphrase is left
    out of Robust / Any Acc (``exclude``) or counted as wrong (``wrong``); ``human_tie``: an even split of the
    human votes on a pair is ``inconsistent`` (no majority for consistent) or the pair is dropped (``drop``)."""

    k: int = HR1_K
    table4_k: int = HR1_TABLE4_K
    div_threshold: float = 0.9
    div_set: Literal["consistent", "all"] = "consistent"
    no_retained: Literal["exclude", "wrong"] = "exclude"
    human_tie: Literal["inconsistent", "drop"] = "inconsistent"
    grading: Grading = field(default_factory=Grading)
    resamples: int = 1000
    seed: int = 0


DEFAULT = MetricSettings()


class Figure(BaseModel):
    """A figure and its bootstrap standard error (None when undefined or fewer than two questions count)."""

    model_config = ConfigDict(frozen=True)

    value: float | None
    se: float | None


class Table1(BaseModel):
    paraphrases: int
    consistent: int
    no_text: int
    unjudged: int
    div_set: str
    div_threshold: float
    consis: Figure
    mean_div: Figure
    ratio_div: Figure
    consis_x_mean_div: Figure
    failed: int = 0  # paraphrases whose generation or consistency call failed: left out of Consis.


class Table2(BaseModel):
    """One (paraphraser, QA model, dataset) cell: True(Acc) and the robustness failures over the N_true
    originally-correct questions; ``consis_at_1`` (Table 3) is the consistency rate of the first K paraphrases."""

    questions: int
    k: int
    true_count: Figure
    true_rate: Figure
    consis_at_1: Figure
    rf_at_1: Figure
    rf_at_k: Figure
    er_at_1: Figure
    wer_at_k: Figure
    missing_paraphrases: int  # (true question, k < K) with no paraphrase record: a non-failure
    unjudged_answers: int  # consistent paraphrases of true questions with no correct/wrong grade: non-failures
    failed_questions: int = 0  # original QA or grading call failed: left out of every figure but Consis@1
    failed_paraphrases: int = 0  # slots (question, k < K) with a failed call: see docs/hr1.md, "Failed calls"
    unjudged_paraphrases: int = 0  # slots (question, k < K) with a text and no verdict: not consistent in Consis@1


class Table4(BaseModel):
    questions: int
    k: int
    retained: int
    no_retained: int
    no_retained_rule: str
    unjudged_answers: int
    para_acc: Figure
    robust_acc: Figure
    any_acc: Figure
    failed_paraphrases: int = 0  # retained paraphrases whose QA or grading call failed: left out of Para. Acc.
    failed_questions: int = 0  # questions with a failed call among their first K: left out of Robust / Any Acc.


class Agreement(BaseModel):
    pairs: int
    accuracy: Figure
    kappa: Figure


class JudgeRow(BaseModel):
    questions: int
    pairs: int
    consis_at_1: Figure
    consis_at_k: Figure
    majority_at_k: Figure
    failed: int = 0  # pairs (question, k < K) whose call failed: left out (their questions too, for @K)
    unjudged: int = 0  # pairs (question, k < K) with no verdict: not consistent
    agreement: Agreement | None = None  # with the human majority; None for the human row or without labels


class Table7(BaseModel):
    k: int
    human_tie: str
    rows: dict[str, JudgeRow]


# ---- shared pieces ------------------------------------------------------------------------------------------


def is_correct(c: Correctness | None, grading: Grading = DEFAULT.grading) -> bool:
    return c == "correct" or (c == "fuzzy" and grading.fuzzy == "correct")


def is_wrong(c: Correctness | None, grading: Grading = DEFAULT.grading) -> bool:
    return c == "wrong" or (c == "fuzzy" and grading.fuzzy == "wrong")


def consistent(p: ParaphraseResult | None) -> bool:
    return p is not None and p.consistent is True and p.text is not None


def label_failed(p: ParaphraseResult) -> bool:
    """The paraphrase or its consistency verdict is missing: its generation or judge call failed."""
    return bool(p.failed) and p.correctness != "failed"


def _resampler(ids: Iterable[str], s: MetricSettings) -> QuestionResampler:
    return QuestionResampler(ids, resamples=s.resamples, seed=s.seed)


def _check_unique(results: Sequence[QuestionResult]) -> None:
    dup = [q for q, n in Counter(r.question.id for r in results).items() if n > 1]
    if dup:
        raise PHRError(f"question id {dup[0]!r} appears more than once in the results ({len(dup)} duplicated ids)")


def _mean(rs: QuestionResampler, pairs: list[tuple[str, float]]) -> tuple[float | None, np.ndarray]:
    value = sum(v for _, v in pairs) / len(pairs) if pairs else None
    return value, rs.means(pairs)


def _fig(value: float | None, draws: np.ndarray | None) -> Figure:
    return Figure(value=value, se=standard_error(draws) if value is not None else None)


def _rate(rs: QuestionResampler, pairs: list[tuple[str, float]]) -> Figure:
    return _fig(*_mean(rs, pairs))


def _count(rs: QuestionResampler, per_question: dict[str, float]) -> Figure:
    vec = np.zeros(len(rs.index))
    for q, v in per_question.items():
        vec[rs.index[q]] = v
    draws = rs.weights @ vec if len(rs.index) >= 2 else None
    return _fig(float(vec.sum()), draws)


def _first_k(r: QuestionResult, k: int) -> dict[int, ParaphraseResult]:
    return {p.k: p for p in r.paraphrases if 0 <= p.k < k}


# ---- Table 1 ------------------------------------------------------------------------------------------------


def table1(results: Sequence[QuestionResult], settings: MetricSettings = DEFAULT) -> Table1:
    """Consis (consistent / all paraphrases), Mean Div and Ratio(Div > threshold) over ``div_set`` (needs
    ``mean_div`` filled: phr.hr1.diversity.score_results), and Consis x Mean Div."""
    _check_unique(results)
    rs = _resampler((r.question.id for r in results), settings)
    paras = [(r.question.id, p) for r in results for p in r.paraphrases]
    con = [(q, float(consistent(p))) for q, p in paras if not label_failed(p)]
    in_set = [(q, p) for q, p in paras if p.text is not None and (settings.div_set == "all" or consistent(p))]
    for q, p in in_set:
        if p.mean_div is None:
            raise PHRError(f"question {q!r} paraphrase k={p.k} has no mean_div: score the run's diversity first")
    known = sum(p.text is None or p.consistent is not None for q, p in paras if not label_failed(p))
    c_val, c_draws = _mean(rs, con) if known else (None, None)  # nothing judged: a rate over nothing is n/a
    divs = [(q, p.mean_div) for q, p in in_set if p.mean_div is not None]  # every one (checked above)
    d_val, d_draws = _mean(rs, divs)
    product = c_val * d_val if c_val is not None and d_val is not None else None
    return Table1(
        paraphrases=len(paras),
        consistent=int(sum(v for _, v in con)),
        no_text=sum(p.text is None and not label_failed(p) for _, p in paras),
        unjudged=sum(p.text is not None and p.consistent is None and not label_failed(p) for _, p in paras),
        div_set=settings.div_set,
        div_threshold=settings.div_threshold,
        consis=_fig(c_val, c_draws),
        mean_div=_fig(d_val, d_draws),
        ratio_div=_rate(rs, [(q, float(d > settings.div_threshold)) for q, d in divs]),
        consis_x_mean_div=_fig(product, c_draws * d_draws if product is not None else None),
        failed=sum(label_failed(p) for _, p in paras),
    )


# ---- Tables 2 and 3 -----------------------------------------------------------------------------------------


def consis_slots(results: Sequence[QuestionResult], k: int) -> list[tuple[str, float]]:
    """Consis@1's terms (Tables 3 and 7, one rule): a slot per (question, k < K) of every question; a missing
    slot (no paraphrase record), a text-less or unjudged paraphrase is not consistent (0); a slot whose
    paraphrase or judge call failed is a missing value and left out."""
    out = []
    for r in results:
        first = _first_k(r, k)
        out += [(r.question.id, float(consistent(first.get(i)))) for i in range(k)
                if i not in first or not label_failed(first[i])]  # fmt: skip
    return out


def table2(results: Sequence[QuestionResult], settings: MetricSettings = DEFAULT) -> Table2:
    """True(Acc); RF@1 (paraphrase k=0 consistent and answered wrong), RF@K (any of k < K), ER@1 = RF@1 / N_true,
    WER@K = RF@K / N_true over the originally-correct questions (Algorithm 1: an inconsistent or missing
    paraphrase stays in the denominator as a non-failure); Consis@1 over the first K paraphrase slots of all
    questions (:func:`consis_slots`). Failed calls: a question whose original QA or grading call failed is left
    out of True(Acc) and the failure rates; a true question whose slot 0 (any of k < K) lost a call is left out
    of RF@1 / ER@1 (RF@K / WER@K)."""
    _check_unique(results)
    g, k = settings.grading, settings.k
    rs = _resampler((r.question.id for r in results), settings)
    true = {r.question.id: float(is_correct(r.correctness, g)) for r in results if r.correctness != "failed"}
    fail1, failk, missing, unjudged, failed_slots, unjudged_slots = {}, {}, 0, 0, 0, 0
    for r in results:
        first = _first_k(r, k)
        lost = {i for i, p in first.items() if p.failed}
        failed_slots += len(lost)
        unjudged_slots += sum(p.text is not None and p.consistent is None and not p.failed for p in first.values())
        if not true.get(r.question.id):
            continue
        missing += k - len(first)
        unjudged += sum(consistent(p) and not is_wrong(p.correctness, g) and not is_correct(p.correctness, g)
                        and not p.failed for p in first.values())  # fmt: skip
        fails = {i for i, p in first.items() if consistent(p) and is_wrong(p.correctness, g)}
        if 0 not in lost:
            fail1[r.question.id] = float(0 in fails)
        if not lost:
            failk[r.question.id] = float(bool(fails))
    slots = consis_slots(results, k)
    return Table2(
        questions=len(results),
        k=k,
        true_count=_count(rs, true),
        true_rate=_rate(rs, list(true.items())),
        consis_at_1=_rate(rs, slots) if len(slots) > unjudged_slots else _fig(None, None),  # none judged: n/a
        rf_at_1=_count(rs, fail1),
        rf_at_k=_count(rs, failk),
        er_at_1=_rate(rs, list(fail1.items())),
        wer_at_k=_rate(rs, list(failk.items())),
        missing_paraphrases=missing,
        unjudged_answers=unjudged,
        failed_questions=len(results) - len(true),
        failed_paraphrases=failed_slots,
        unjudged_paraphrases=unjudged_slots,
    )


def table3(
    by_paraphraser: dict[str, Sequence[QuestionResult]], settings: MetricSettings = DEFAULT
) -> dict[str, Table2]:
    """Consis@1, RF@1, RF@K, ER@1, WER@K per paraphraser (one QA model, one dataset); paired bootstrap draws."""
    return {name: table2(results, settings) for name, results in by_paraphraser.items()}


# ---- Table 4 ------------------------------------------------------------------------------------------------


def table4(results: Sequence[QuestionResult], settings: MetricSettings = DEFAULT) -> Table4:
    """Para Acc over retained (consistent) paraphrases among the first ``table4_k``; Robust Acc: questions whose
    retained paraphrases are all correct; Any Acc: at least one correct. Questions with none: ``no_retained``."""
    _check_unique(results)
    g = settings.grading
    rs = _resampler((r.question.id for r in results), settings)
    para, robust, any_, empty, unjudged, failed_p, failed_q = [], [], [], 0, 0, 0, 0
    for r in results:
        first = _first_k(r, settings.table4_k).values()
        kept = [p for p in first if consistent(p) and not p.failed]
        ok = [is_correct(p.correctness, g) for p in kept]
        unjudged += sum(not is_correct(p.correctness, g) and not is_wrong(p.correctness, g) for p in kept)
        para += [(r.question.id, float(o)) for o in ok]
        failed_p += sum(p.correctness == "failed" for p in first)
        if any(p.failed for p in first):  # a missing value: Robust / Any Acc unknown
            failed_q += 1
            continue
        if not kept:
            empty += 1
            if settings.no_retained == "exclude":
                continue
        robust.append((r.question.id, float(bool(kept) and all(ok))))
        any_.append((r.question.id, float(any(ok))))
    return Table4(
        questions=len(results),
        k=settings.table4_k,
        retained=len(para),
        no_retained=empty,
        no_retained_rule=settings.no_retained,
        unjudged_answers=unjudged,
        para_acc=_rate(rs, para),
        robust_acc=_rate(rs, robust),
        any_acc=_rate(rs, any_),
        failed_paraphrases=failed_p,
        failed_questions=failed_q,
    )


# ---- Table 7 ------------------------------------------------------------------------------------------------


def labels_from_results(results: Sequence[QuestionResult]) -> Labels:
    """A judge's consistency labels of a run (text-less paraphrases: not consistent; a failed paraphrase or
    judge call: ``FAILED``)."""
    return {
        (r.question.id, p.k): FAILED if label_failed(p) else (p.consistent if p.text is not None else False)
        for r in results
        for p in r.paraphrases
    }


def read_human_labels(path: str | Path) -> dict[tuple[str, int], list[int]]:
    """Votes per (question_id, k) from a CSV with the header ``question_id,k,annotator,label`` (label 0 / 1);
    an annotator voting twice on a pair is an error."""
    votes: dict[tuple[str, int], dict[str, int]] = defaultdict(dict)
    with open(path, newline="", encoding="utf-8") as fh:
        reader = csv.DictReader(fh)
        if tuple(reader.fieldnames or ()) != HUMAN_COLUMNS:
            raise PHRError(f"{path}: header must be {','.join(HUMAN_COLUMNS)}, got {reader.fieldnames}")
        for line, row in enumerate(reader, start=2):
            try:
                key, label = (row["question_id"], int(row["k"])), int(row["label"])
            except (TypeError, ValueError):
                raise PHRError(f"{path} line {line}: k and label must be integers: {row}") from None
            if label not in (0, 1) or not row["question_id"] or not row["annotator"]:
                raise PHRError(f"{path} line {line}: needs a question_id, an annotator and a label 0 or 1: {row}")
            if row["annotator"] in votes[key]:
                raise PHRError(f"{path} line {line}: annotator {row['annotator']!r} labels {key} twice")
            votes[key][row["annotator"]] = label
    return {key: list(v.values()) for key, v in votes.items()}


def human_majority(votes: dict[tuple[str, int], list[int]], settings: MetricSettings = DEFAULT) -> Labels:
    """Majority vote per pair; an even split follows ``human_tie``."""
    out: Labels = {}
    for key, v in votes.items():
        yes, no = sum(v), len(v) - sum(v)
        if yes == no and settings.human_tie == "drop":
            continue
        out[key] = yes > no
    return out


def cohen_kappa(a: Sequence[int], b: Sequence[int]) -> float | None:
    """Cohen's kappa of two binary raters; None when chance agreement is 1 (both constant and equal)."""
    cells = np.zeros(4)
    for x, y in zip(a, b, strict=True):
        cells[2 * int(x) + int(y)] += 1
    value = _kappa(cells[None, :])[0]
    return None if np.isnan(value) else float(value)


def _kappa(cells: np.ndarray) -> np.ndarray:
    """Kappa per row of counts (n00, n01, n10, n11); NaN where undefined."""
    n = cells.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        po = (cells[:, 0] + cells[:, 3]) / n
        a1, b1 = (cells[:, 2] + cells[:, 3]) / n, (cells[:, 1] + cells[:, 3]) / n
        pe = a1 * b1 + (1 - a1) * (1 - b1)
        k = (po - pe) / (1 - pe)
    k[~np.isfinite(k)] = np.nan
    return k


def _agreement(judge: Labels, human: Labels, settings: MetricSettings) -> Agreement:
    shared = sorted(key for key in human if key in judge and judge[key] != FAILED)
    rs = _resampler((q for q, _ in shared), settings)
    cells = np.zeros((len(rs.index), 4))
    for key in shared:
        cells[rs.index[key[0]], 2 * int(judge[key] is True) + int(human[key] is True)] += 1
    total = cells.sum(axis=0)
    value = _kappa(total[None, :])[0] if shared else np.nan
    draws = _kappa(rs.weights @ cells) if len(rs.index) >= 2 else None
    same = [(key[0], float((judge[key] is True) == (human[key] is True))) for key in shared]
    return Agreement(
        pairs=len(shared),
        accuracy=_rate(rs, same),
        kappa=_fig(None if np.isnan(value) else float(value), draws),
    )


def judge_row(labels: Labels, settings: MetricSettings = DEFAULT, human: Labels | None = None) -> JudgeRow:
    """Over the questions of ``labels``, one rule for the pairs (question, k < K) (docs/hr1.md, Table 7): a
    missing or unjudged pair is not consistent, a ``FAILED`` pair is a missing value. Consis@1 = consistent
    pairs / (K x questions - failed pairs); Consis@K = questions with >= 1 of K consistent; Majority@K =
    questions with > K/2 consistent; a question with a failed pair is left out of Consis@K and Majority@K."""
    k = settings.k
    per_q: dict[str, dict[int, bool | None | str]] = defaultdict(dict)
    for (q, i), v in labels.items():
        if 0 <= i < k:
            per_q[q][i] = v
    rs = _resampler(per_q, settings)
    slots = [(q, float(v.get(i) is True)) for q, v in per_q.items() for i in range(k) if v.get(i) != FAILED]
    whole = {q: sum(x is True for x in v.values()) for q, v in per_q.items() if FAILED not in v.values()}
    judged = any(isinstance(x, bool) for v in per_q.values() for x in v.values())
    return JudgeRow(
        questions=len(per_q),
        pairs=sum(len(v) for v in per_q.values()),
        consis_at_1=_rate(rs, slots) if judged else _fig(None, None),  # nothing judged: n/a, never 0 %
        consis_at_k=_rate(rs, [(q, float(n >= 1)) for q, n in whole.items()]),
        majority_at_k=_rate(rs, [(q, float(n > k / 2)) for q, n in whole.items()]),
        failed=sum(x == FAILED for v in per_q.values() for x in v.values()),
        unjudged=sum(x is None for v in per_q.values() for x in v.values()),
        agreement=_agreement(labels, human, settings) if human is not None else None,
    )


def table7(judges: dict[str, Labels], human: Labels | None = None, settings: MetricSettings = DEFAULT) -> Table7:
    """One row per judge (with its agreement with the human majority when given) and a "Human" row."""
    rows = {name: judge_row(labels, settings, human) for name, labels in judges.items()}
    if human is not None:
        rows["Human"] = judge_row(human, settings)
    return Table7(k=settings.k, human_tie=settings.human_tie, rows=rows)


# ---- output -------------------------------------------------------------------------------------------------


def _plain(obj: object) -> object:
    if isinstance(obj, BaseModel):
        return obj.model_dump(mode="json")
    if isinstance(obj, dict):
        return {str(k): _plain(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_plain(v) for v in obj]
    return obj


def to_json(obj: object) -> str:
    """A table result (or a dict / list of them) as indented JSON."""
    return json.dumps(_plain(obj), indent=2, sort_keys=True)


#: the counts beside every consistency figure: paraphrases with a text and no verdict (counted not consistent) and
#: those whose paraphrase or judge call failed (left out); with none judged the rate is ``n/a (0 judged)``
CONSIS_COUNTS = ("Unjudged", "Failed")
#: a consistency rate over an empty set (no paraphrase judged and none without text): never 0.00 %
NONE_JUDGED = "n/a (0 judged)"


def _pct(f: Figure, sign: bool = True) -> str:
    if f.value is None:
        return "n/a"
    out = f"{100 * f.value:.2f}" + ("%" if sign else "")
    return out + (f" ± {100 * f.se:.2f}" if f.se is not None else "")


def _consis(f: Figure) -> str:
    """A consistency rate; undefined only when nothing was judged (:data:`NONE_JUDGED`)."""
    return NONE_JUDGED if f.value is None else _pct(f)


def _num(f: Figure, digits: int = 6) -> str:
    if f.value is None:
        return "n/a"
    return f"{f.value:.{digits}f}" + (f" ± {f.se:.{digits}f}" if f.se is not None else "")


def _int(f: Figure) -> str:
    if f.value is None:
        return "n/a"
    return f"{int(f.value)}" + (f" ± {f.se:.1f}" if f.se is not None else "")


def _table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return "\n".join(lines + ["| " + " | ".join(r) + " |" for r in rows]) + "\n"


def table1_markdown(rows: dict[str, Table1]) -> str:
    t = next(iter(rows.values()), None)
    thr = t.div_threshold if t else DEFAULT.div_threshold
    header = [
        "Paraphrase model",
        "Consis.",
        *CONSIS_COUNTS,
        "Mean Div.",
        f"Ratio (Div. > {thr:g})",
        "Consis. × Mean Div.",
    ]
    body = [
        [
            n,
            _consis(r.consis),
            str(r.unjudged),
            str(r.failed),
            _num(r.mean_div),
            _pct(r.ratio_div),
            _pct(r.consis_x_mean_div),
        ]
        for n, r in rows.items()
    ]
    return _table(header, body)


def table2_markdown(rows: dict[str, dict[str, Table2]]) -> str:
    """Two tables like the paper's Table 2: True(Acc) per QA model and dataset, then ER@1 / WER@K (%)."""
    datasets = list(dict.fromkeys(d for cells in rows.values() for d in cells))
    k = next((c.k for cells in rows.values() for c in cells.values()), DEFAULT.k)
    true = [[m] + [f"{_int(c[d].true_count)} ({_pct(c[d].true_rate)})" if d in c else "" for d in datasets]
            for m, c in rows.items()]  # fmt: skip
    err = [[m] + [f"{_pct(c[d].er_at_1, False)} / {_pct(c[d].wer_at_k, False)}" if d in c else "" for d in datasets]
           for m, c in rows.items()]  # fmt: skip
    return (
        _table(["QA model", *(f"{d} True (Acc)" for d in datasets)], true)
        + "\n"
        + _table(["QA model", *(f"{d} ER@1 / WER@{k}" for d in datasets)], err)
    )


def table3_markdown(rows: dict[str, Table2]) -> str:
    k = next((r.k for r in rows.values()), DEFAULT.k)
    header = ["Paraphraser", "Consis@1", *CONSIS_COUNTS, "RF@1", f"RF@{k}", "ER@1", f"WER@{k}"]
    body = [[n, _consis(r.consis_at_1), str(r.unjudged_paraphrases), str(r.failed_paraphrases), _int(r.rf_at_1),
             _int(r.rf_at_k), _pct(r.er_at_1), _pct(r.wer_at_k)] for n, r in rows.items()]  # fmt: skip
    n_true = {int(r.true_count.value) for r in rows.values() if r.true_count.value is not None}
    return f"N_true = {', '.join(map(str, sorted(n_true)))}\n\n" + _table(header, body)


def table4_markdown(rows: dict[str, dict[str, Table4]]) -> str:
    """Rows: "paraphraser → QA model" labels; per dataset Para / Robust / Any Acc (%)."""
    datasets = list(dict.fromkeys(d for cells in rows.values() for d in cells))
    header = [
        "Paraphraser → QA model",
        *(f"{d} {m}" for d in datasets for m in ("Para. Acc.", "Robust Acc.", "Any Acc.")),
    ]
    body = [[n] + [_pct(getattr(c[d], m)) if d in c else "" for d in datasets for m in ("para_acc", "robust_acc", "any_acc")]
            for n, c in rows.items()]  # fmt: skip
    return _table(header, body)


def table7_markdown(t: Table7) -> str:
    header = ["Judge", "Consis@1", f"Consis@{t.k}", f"Majority@{t.k}", *CONSIS_COUNTS, "Agreement (acc.)", "Cohen's κ"]
    body = []
    for name, r in t.rows.items():
        a = r.agreement
        extra = [_pct(a.accuracy), _num(a.kappa, 3)] if a else ["", ""]
        counts = [str(r.unjudged), str(r.failed)]
        body.append([name, _consis(r.consis_at_1), _pct(r.consis_at_k), _pct(r.majority_at_k), *counts, *extra])
    return _table(header, body)
