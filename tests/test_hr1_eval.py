"""`phr-publish eval hr1` against the local OpenAI-protocol server: Algorithm 1, the tables with standard errors,
Table 7 with a second judge and human labels, a cached rerun; the CLI as a user runs it."""

from __future__ import annotations

import json
import os

import pytest

from phr.builders.hr1_sources import load_truthfulqa
from phr.eval.hr1_runner import evaluate
from tests.support.cli import run
from tests.support.data import SHARED as DATA
from tests.support.data import needs
from tests.support.hr1_fixtures import hr1_responder

pytestmark = needs("truthfulqa")


@pytest.fixture(scope="module")
def tqa():
    return load_truthfulqa(DATA / "truthfulqa").questions[:6]


def test_robustness_tables_follow_algorithm_1(fake_openai, tmp_path, tqa):
    gold = {q.question: q.answer for q in tqa}
    srv = fake_openai(hr1_responder(gold, wrong=frozenset([tqa[0].question, tqa[1].question])))
    human = tmp_path / "labels.csv"
    rows = ["question_id,k,annotator,label"]
    for q in tqa:
        for k, label in enumerate([1, 1, 0, 0, 0]):  # k=4 (consistent for the judge) marked inconsistent
            rows += [f"{q.id},{k},a{i},{label}" for i in range(3)]
    human.write_text("\n".join(rows) + "\n")
    res = evaluate(
        {"truthfulqa": tqa},
        paraphraser="openai:gpt-4o",
        qa="openai:gpt-4o",
        judge="openai:gpt-4o",
        out=tmp_path / "run",
        judges=["openai:gpt-4o", "openai:gpt-4o-mini"],
        human=human,
        diversity=False,
    )
    t2 = res.tables["table2"]["truthfulqa"]
    # 6 questions, 2 answered wrongly: N_true = 4; per question p0 consistent + correct, p1 consistent + wrong
    assert (t2.true_count.value, t2.true_rate.value) == (4, pytest.approx(4 / 6))
    assert (t2.rf_at_1.value, t2.rf_at_k.value, t2.er_at_1.value, t2.wer_at_k.value) == (0, 4, 0.0, 1.0)
    assert t2.consis_at_1.value == pytest.approx(3 / 5)  # p0, p1, p4 of the first five
    t7 = res.tables["table7"]["truthfulqa"]
    assert list(t7.rows) == ["openai:gpt-4o", "openai:gpt-4o-mini", "Human"]
    judge = t7.rows["openai:gpt-4o"]
    assert (judge.consis_at_1.value, judge.consis_at_k.value, judge.majority_at_k.value) == (
        pytest.approx(0.6),
        1.0,
        1.0,
    )
    # against the human majority: the judge agrees on 4 of 5 pairs per question (k=4 differs)
    assert judge.agreement.accuracy.value == pytest.approx(0.8)
    out = json.loads((tmp_path / "run" / "results.json").read_text())
    assert out["settings"]["k"] == 5 and out["settings"]["plan"]["qa_scope"] == "originally_correct"
    assert set(out["settings"]["prompts"]) == {"paraphrase", "consistency_judge", "factual_judge", "qa"}
    assert out["tables"]["table2"]["truthfulqa"]["wer_at_k"]["value"] == 1.0
    assert out["tables"]["table2"]["truthfulqa"]["true_rate"]["se"] > 0
    report = (tmp_path / "run" / "report.md").read_text()
    assert "## Table 3: truthfulqa" in report and "Cohen" in report
    records = (tmp_path / "run" / "records" / "truthfulqa.jsonl").read_text().splitlines()
    assert len(records) == 6 and json.loads(records[0])["question"]["id"] == tqa[0].id
    calls = srv.server.count
    evaluate({"truthfulqa": tqa}, paraphraser="openai:gpt-4o", qa="openai:gpt-4o", judge="openai:gpt-4o",
             out=tmp_path / "run", judges=["openai:gpt-4o-mini"], human=human, diversity=False, overwrite=True)  # fmt: skip
    assert srv.server.count == calls  # resumable: every call cached


def test_table4_answers_every_consistent_paraphrase(fake_openai, tmp_path, tqa):
    gold = {q.question: q.answer for q in tqa}
    fake_openai(hr1_responder(gold))
    res = evaluate({"truthfulqa": tqa[:3]}, paraphraser="openai:gpt-4o", qa="openai:gpt-4o", judge="openai:gpt-4o",
                   out=tmp_path / "run", table="4", diversity=False)  # fmt: skip
    t4 = res.tables["table4"]["truthfulqa"]
    # 8 paraphrases: consistent k = 0, 1, 4, 5, 6, 7; all correct except k = 1 ("asked differently")
    assert (t4.k, t4.retained) == (8, 18)
    assert t4.para_acc.value == pytest.approx(15 / 18)
    assert (t4.robust_acc.value, t4.any_acc.value) == (0.0, 1.0)


def test_cli_eval_hr1(fake_openai, tmp_path, tqa):
    gold = {q.question: q.answer for q in tqa}
    srv = fake_openai(hr1_responder(gold))
    env = {k: os.environ[k] for k in ("OPENAI_BASE_URL", "PHR_CACHE")} | {"OPENAI_API_KEY": "sk-test-0123456789"}
    args = ["eval", "hr1", "--dataset", f"truthfulqa={DATA / 'truthfulqa'}", "--limit", "2", "--paraphraser", "openai:gpt-4o",
            "--qa-model", "openai:gpt-4o", "--judge", "openai:gpt-4o", "--k", "3", "--no-diversity", "--out", str(tmp_path / "run")]  # fmt: skip
    res = run(*args, env=env)
    assert res.returncode == 0, res.stderr
    assert "ER@1 / WER@3" in res.stdout and "LLM calls" in res.stdout + res.stderr
    assert srv.server.count > 0
    bad = run("eval", "hr1", "--table", "3", env=env)
    assert bad.returncode == 2 and "--table '3': Input should be '2' or '4' (2 (Tables 1-3: robustness)" in bad.stderr
