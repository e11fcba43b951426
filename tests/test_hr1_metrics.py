"""Hallucination-R1 Tables 1-4 and 7 (eval.hr1_metrics) on small hand-computed tables (docs/hr1.md, "Metrics")."""

from __future__ import annotations

import json

import numpy as np
import pytest

from phr.core.errors import PHRError
from phr.eval.bootstrap import QuestionResampler
from phr.eval.hr1_metrics import (
    FAILED,
    MetricSettings,
    cohen_kappa,
    human_majority,
    labels_from_results,
    read_human_labels,
    table1,
    table1_markdown,
    table2,
    table2_markdown,
    table3,
    table3_markdown,
    table4,
    table4_markdown,
    table7,
    table7_markdown,
    to_json,
)
from phr.hr1.records import HQuestion, ParaphraseResult, QuestionResult
from phr.hr1.settings import Grading


def P(k, consistent=True, correctness=None, text="para", mean_div=None):  # noqa: N802
    return ParaphraseResult(k=k, text=text, consistent=consistent, correctness=correctness, mean_div=mean_div)


def Q(qid, correctness, paras):  # noqa: N802
    q = HQuestion(id=qid, source="truthfulqa", split="test", source_row_id=qid, question=f"question {qid}?",
                  answers=("a",), license="apache-2.0")  # fmt: skip
    return QuestionResult(question=q, correctness=correctness, paraphrases=paras)


def robustness_table():
    """7 questions, 6 originally correct (N_true = 6)."""
    return [
        Q("q1", "correct", [P(0, True, "wrong"), P(1, True, "correct"), P(2, False)]),  # RF@1, RF@5
        Q("q2", "correct", [P(0, False, "wrong"), P(1, True, "wrong")]),  # inconsistent k=0: RF@5 only
        Q("q3", "correct", [P(0, True, "correct"), *(P(i, False) for i in range(1, 5))]),  # no failure
        Q("q4", "correct", [P(0, True, "fuzzy")]),  # a failure iff fuzzy counts as wrong
        Q("q5", "correct", [P(0, None, text=None), P(5, True, "wrong")]),  # k=5 is beyond @5
        Q("q6", "wrong", [P(0, True, "wrong")]),  # not originally correct: out of ER/WER
        Q("q7", "correct", [P(0, True, "unjudged")]),  # unjudged answer: not a failure
    ]


def test_table2_inconsistent_paraphrases_stay_in_the_denominator():
    t = table2(robustness_table())
    assert (t.true_count.value, t.true_rate.value) == (6, pytest.approx(6 / 7))
    assert (t.rf_at_1.value, t.rf_at_k.value) == (2, 3)  # q1, q4 / q1, q2, q4
    assert t.er_at_1.value == pytest.approx(2 / 6) and t.wer_at_k.value == pytest.approx(3 / 6)
    # Consis@1: consistent / (K x questions): the 21 slots with no paraphrase record are not consistent
    assert t.consis_at_1.value == pytest.approx(7 / 35)
    assert (t.missing_paraphrases, t.unjudged_answers) == (2 + 3 + 0 + 4 + 4 + 4, 1)
    lenient = table2(robustness_table(), MetricSettings(grading=Grading(fuzzy="correct")))
    assert (lenient.rf_at_1.value, lenient.rf_at_k.value) == (1, 2)
    at1 = table2(robustness_table(), MetricSettings(k=1))
    assert at1.rf_at_k.value == at1.rf_at_1.value == 2


def test_bootstrap_errors_are_the_shared_resampler_draws():
    results = robustness_table()
    t = table2(results)
    rs = QuestionResampler([r.question.id for r in results], resamples=1000, seed=0)
    true = np.array([1, 1, 1, 1, 1, 0, 1], float)  # ids sorted: q1..q7
    assert t.true_rate.se == pytest.approx(round(float((rs.weights @ true / 7).std(ddof=1)), 6))
    assert t.true_count.se == pytest.approx(float((rs.weights @ true).std(ddof=1)), abs=1e-6)
    fail1 = np.array([1, 0, 0, 1, 0, 0, 0], float)
    er = (rs.weights @ fail1) / (rs.weights @ true)
    assert t.er_at_1.se == pytest.approx(round(float(er[np.isfinite(er)].std(ddof=1)), 6))
    assert table2(results[:1]).er_at_1.se is None  # fewer than two questions


def test_table3_per_paraphraser_and_markdown():
    base = robustness_table()
    other = [r.model_copy(update={"paraphrases": [P(0, False)]}) for r in base]
    t3 = table3({"H-R1": base, "Qwen2.5-3B": other})
    assert t3["Qwen2.5-3B"].consis_at_1.value == 0 and t3["Qwen2.5-3B"].wer_at_k.value == 0
    assert t3["H-R1"].true_rate.se == t3["Qwen2.5-3B"].true_rate.se  # paired draws
    md = table3_markdown(t3)
    header = "| Paraphraser | Consis@1 | Unjudged | Failed | RF@1 | RF@5 | ER@1 | WER@5 |"
    assert md.startswith("N_true = 6\n") and header in md
    assert "| H-R1 | 20.00% ± " in md and " | 2 ± " in md and "33.33% ± " in md
    md2 = table2_markdown({"Qwen2.5-3B": {"TruthfulQA": t3["H-R1"]}})
    assert "| Qwen2.5-3B | 6 ± " in md2 and "(85.71% ± " in md2 and "| QA model | TruthfulQA ER@1 / WER@5 |" in md2
    assert json.loads(to_json(t3))["H-R1"]["rf_at_k"]["value"] == 3


def test_table1_consis_mean_div_ratio():
    results = [
        Q("q1", None, [P(0, True, mean_div=0.95), P(1, True, mean_div=0.5), P(2, False, mean_div=0.99),
                       P(3, None, text=None)]),
        Q("q2", None, [P(0, True, mean_div=0.92), P(1, None, mean_div=0.3)]),
    ]  # fmt: skip
    t = table1(results)
    assert (t.paraphrases, t.consistent, t.no_text, t.unjudged) == (6, 3, 1, 1)
    assert t.consis.value == pytest.approx(0.5)
    assert t.mean_div.value == pytest.approx((0.95 + 0.5 + 0.92) / 3)
    assert t.ratio_div.value == pytest.approx(2 / 3)
    assert t.consis_x_mean_div.value == pytest.approx(0.5 * 2.37 / 3)
    every = table1(results, MetricSettings(div_set="all"))
    assert every.mean_div.value == pytest.approx(3.66 / 5) and every.ratio_div.value == pytest.approx(3 / 5)
    md = table1_markdown({"H-R1-3B": t})
    assert (
        "| Paraphrase model | Consis. | Unjudged | Failed | Mean Div. | Ratio (Div. > 0.9) | Consis. × Mean Div. |"
        in md
    )
    assert "| H-R1-3B | 50.00% ± 0.00 | 1 | 0 | 0.790000 ± " in md  # the unjudged paraphrase beside the rate it lowers
    assert "| H-R1-3B | 50.00% ± " in md and "0.790000 ± " in md and "39.50% ± " in md
    unscored = [Q("q1", None, [P(0, True)])]
    with pytest.raises(PHRError, match="'q1' paraphrase k=0 has no mean_div"):
        table1(unscored)


def test_a_consistency_rate_over_nothing_judged_is_na_never_0_percent():
    """`eval hr1` printed Consis. 0.00% when no paraphrase was judged (0 of 2), beside n/a for Mean Div. of the
    same empty set: a rate over an empty set is n/a (0 judged), in Tables 1, 3 and 7 and their JSON."""
    none = [Q("q1", "correct", [P(0, None, mean_div=0.4), P(1, None, mean_div=0.5)])]  # 2 paraphrases, 0 judged
    t1 = table1(none)
    assert (t1.paraphrases, t1.unjudged) == (2, 2)
    assert t1.consis.value is None and t1.consis_x_mean_div.value is None and t1.mean_div.value is None
    row = table1_markdown({"H-R1": t1}).splitlines()[-1]
    assert row == "| H-R1 | n/a (0 judged) | 2 | 0 | n/a | n/a | n/a |", row
    assert json.loads(to_json(t1))["consis"] == {"value": None, "se": None}
    t3 = table3({"H-R1": none}, MetricSettings(k=2))
    assert t3["H-R1"].consis_at_1.value is None and t3["H-R1"].unjudged_paraphrases == 2
    assert "| H-R1 | n/a (0 judged) | 2 | 0 |" in table3_markdown(t3)
    t7 = table7({"J": labels_from_results(none)}, settings=MetricSettings(k=2))
    assert t7.rows["J"].consis_at_1.value is None and "| J | n/a (0 judged) |" in table7_markdown(t7)
    # one verdict is enough for a rate: the unjudged one counts as not consistent, as before
    one = [Q("q1", "correct", [P(0, True, mean_div=0.4), P(1, None, mean_div=0.5)])]
    assert table1(one).consis.value == pytest.approx(0.5)
    assert table3({"H-R1": one}, MetricSettings(k=2))["H-R1"].consis_at_1.value == pytest.approx(0.5)
    # text-less paraphrases are known not consistent (no judge needed): 0 % is a rate, not an empty set
    empty = [Q("q1", "correct", [P(0, None, text=None), P(1, None, text=None)])]
    assert table1(empty).consis.value == 0.0


def test_table4_robust_any_with_a_question_left_without_paraphrases():
    results = [
        Q("q1", None, [P(0, True, "correct"), P(1, True, "correct"), P(2, True, "wrong"), P(3, False, "wrong")]),
        Q("q2", None, [P(0, True, "correct"), P(1, True, "correct"), P(8, True, "wrong")]),  # k=8: beyond 8
        Q("q3", None, [P(0, False, "wrong"), P(1, None, text=None)]),  # none retained
        Q("q4", None, [P(0, True, "fuzzy")]),
    ]
    t = table4(results)
    assert (t.retained, t.no_retained, t.no_retained_rule) == (6, 1, "exclude")
    assert t.para_acc.value == pytest.approx(4 / 6)
    assert t.robust_acc.value == pytest.approx(1 / 3) and t.any_acc.value == pytest.approx(2 / 3)
    wrong = table4(results, MetricSettings(no_retained="wrong"))
    assert wrong.robust_acc.value == pytest.approx(1 / 4) and wrong.any_acc.value == pytest.approx(2 / 4)
    lenient = table4(results, MetricSettings(grading=Grading(fuzzy="correct")))
    assert (lenient.para_acc.value, lenient.robust_acc.value, lenient.any_acc.value) == pytest.approx((5 / 6, 2 / 3, 1))
    md = table4_markdown({"H-R1 → Qwen3-8B": {"PopQA": t}})
    assert "| Paraphraser → QA model | PopQA Para. Acc. | PopQA Robust Acc. | PopQA Any Acc. |" in md
    assert "| H-R1 → Qwen3-8B | 66.67% ± " in md


HUMAN_CSV = """question_id,k,annotator,label
{rows}
"""


def write_human(tmp_path, human):
    """Three annotators per pair whose majority is ``human[(q, k)]``; (q2, 4) split 1-1 (a tie)."""
    rows = []
    for (q, k), label in human.items():
        votes = [1, 0] if (q, k) == ("q2", 4) else [label, label, 1 - label]
        rows += [f"{q},{k},ann{i},{v}" for i, v in enumerate(votes)]
    path = tmp_path / "labels.csv"
    path.write_text(HUMAN_CSV.format(rows="\n".join(rows)), encoding="utf-8")
    return path


def test_table7_consis_majority_and_kappa(tmp_path):
    judge = {("q1", i): v for i, v in enumerate([1, 1, 0, 0, 0])}
    judge |= {("q2", i): False for i in range(5)}
    judge |= {("q3", i): v for i, v in enumerate([1, 1, 1, 0, None])}
    judge = {key: (None if v is None else bool(v)) for key, v in judge.items()}
    human = {("q1", i): v for i, v in enumerate([1, 1, 1, 0, 0])}
    human |= {("q2", i): 0 for i in range(5)}
    human |= {("q3", i): v for i, v in enumerate([1, 1, 1, 1, 0])}
    votes = read_human_labels(write_human(tmp_path, human))
    assert votes[("q2", 4)] == [1, 0] and votes[("q1", 0)] == [1, 1, 0]
    majority = human_majority(votes)
    assert majority[("q2", 4)] is False  # tie -> not consistent
    t = table7({"DeepSeek-V3": judge}, majority)
    row = t.rows["DeepSeek-V3"]
    assert row.consis_at_1.value == pytest.approx(5 / 15)
    assert row.consis_at_k.value == pytest.approx(2 / 3) and row.majority_at_k.value == pytest.approx(1 / 3)
    # cells (judge, human): n11 = 5, n10 = 0, n01 = 2, n00 = 8 -> po 13/15, pe 23/45, kappa 16/22
    assert row.agreement.pairs == 15 and row.agreement.accuracy.value == pytest.approx(13 / 15)
    assert row.agreement.kappa.value == pytest.approx(16 / 22)
    assert row.agreement.kappa.se is not None and row.agreement.kappa.se > 0
    h = t.rows["Human"]
    assert (h.consis_at_1.value, h.consis_at_k.value, h.majority_at_k.value) == pytest.approx((7 / 15, 2 / 3, 2 / 3))
    dropped = table7({"J": judge}, human_majority(votes, MetricSettings(human_tie="drop")))
    assert dropped.rows["J"].agreement.pairs == 14 and dropped.rows["J"].agreement.kappa.value == pytest.approx(5 / 7)
    md = table7_markdown(t)
    assert "| Judge | Consis@1 | Consis@5 | Majority@5 | Unjudged | Failed | Agreement (acc.) | Cohen's κ |" in md
    assert row.unjudged == 1 and " | 1 | 0 | 86.67% ± " in md  # q3's fifth pair had no verdict
    assert "| DeepSeek-V3 | 33.33% ± " in md and "0.727 ± " in md


def test_consis_at_1_counts_a_missing_pair_as_not_consistent_and_leaves_a_failed_one_out():
    """One rule for Consis@1 (docs/hr1.md, Table 7): K slots per question; a missing pair is not consistent,
    a pair whose call failed is a missing value (left out, and its question out of Consis@K / Majority@K)."""
    labels = {("q1", 0): True, ("q1", 1): True, ("q1", 2): False, ("q1", 4): False}  # (q1, 3) missing
    labels |= {("q2", 0): True, ("q2", 1): FAILED, ("q2", 2): False, ("q2", 3): False, ("q2", 4): False}
    row = table7({"J": labels}).rows["J"]
    # q1: 2 consistent of 5 slots; q2: 1 of 4 (k=1 failed): 3 / 9 (the old code gave 3 / 8)
    assert row.consis_at_1.value == pytest.approx(3 / 9)
    assert (row.questions, row.pairs, row.failed) == (2, 9, 1)
    assert (row.consis_at_k.value, row.majority_at_k.value) == (1.0, 0.0)  # q1 only
    # Table 3's Consis@1 follows the same rule on the run's rows
    results = [Q("q1", "correct", [P(0), P(1), P(2, False), P(4, False)])]
    assert table2(results).consis_at_1.value == pytest.approx(2 / 5)


def test_cohen_kappa_against_sklearn():
    from sklearn.metrics import cohen_kappa_score

    a, b = [1, 1, 0, 0, 1, 0, 1, 1], [1, 0, 0, 0, 1, 1, 1, 1]
    assert cohen_kappa(a, b) == pytest.approx(cohen_kappa_score(a, b))
    assert cohen_kappa([1, 1, 0, 0], [1, 0, 0, 0]) == pytest.approx(0.5)
    assert cohen_kappa([1, 1], [1, 1]) is None  # chance agreement 1: undefined


def test_labels_from_results_and_bad_csv(tmp_path):
    labels = labels_from_results([Q("q1", None, [P(0, True), P(1, None, text=None), P(2, None)])])
    assert labels == {("q1", 0): True, ("q1", 1): False, ("q1", 2): None}
    bad = tmp_path / "bad.csv"
    bad.write_text("question_id,k,annotator,label\nq1,0,ann,2\n", encoding="utf-8")
    with pytest.raises(PHRError, match="bad.csv line 2: needs a question_id, an annotator and a label 0 or 1"):
        read_human_labels(bad)
    bad.write_text("question_id,k,annotator,label\nq1,0,ann,1\nq1,0,ann,0\n", encoding="utf-8")
    with pytest.raises(PHRError, match="line 3: annotator 'ann' labels"):
        read_human_labels(bad)
    bad.write_text("qid,k,who,label\n", encoding="utf-8")
    with pytest.raises(PHRError, match="header must be question_id,k,annotator,label"):
        read_human_labels(bad)
