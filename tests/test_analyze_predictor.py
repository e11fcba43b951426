"""PHRBench §5.3 analyses: the 24 prompt features, the insightful-trajectory predictor and its CLI."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from typer.testing import CliRunner

from phr.bench.instance import Instance
from phr.cli import app
from phr.config.ops import PredictorFit
from phr.eval.features import (
    FEATURES,
    SEMANTIC,
    STRUCTURAL,
    count_numbers,
    count_sentences,
    extract_features,
    jaccard,
    structural_features,
)
from phr.eval.predictor import fit_predictor, grouped_folds, propensity
from phr.eval.scoring import SampleScore
from tests.support.predictor import mini_results

QUESTION = "What is the boiling point of water at 1 atm?"
PREMISE = "Water boils at 50 degrees Celsius at sea level. This is a well-known fact."


def make_instance(iid="q1-H1", qid="q1", premise=PREMISE, question=QUESTION, options=("100 C", "50 C")):
    prompt = f"Premise: {premise}\n\nQuestion: {question}\nCandidates: (1) 100 C; (2) 50 C"
    return Instance(
        id=iid,
        question_id=qid,
        condition="B+H",
        domain="Physics",
        subtype="Thermodynamics",
        task_type="multiple_choice",
        question=question,
        options=options,
        answer="100 C",
        premise=premise,
        prompt=prompt,
    )


def test_feature_set_has_24_with_the_papers_names():
    assert len(FEATURES) == 24 and len(STRUCTURAL) == 12 and len(SEMANTIC) == 12
    for name in ("Total Prompt Length", "Question Length", "Candidate Count"):
        assert name in STRUCTURAL.values()
    for name in ("Domain-Rule Violation", "Error Locality", "Applicability Mismatch"):
        assert name in SEMANTIC.values()


def test_structural_features_exact_values():
    f = structural_features(make_instance())
    # prompt = "Premise: " (9) + premise (74) + "\n\nQuestion: " (12) + question (44) + "\nCandidates: (1) 100 C; (2) 50 C" (32)
    assert len(PREMISE) == 74 and len(QUESTION) == 44
    assert f["total_prompt_length"] == 9 + 74 + 12 + 44 + 32
    # premise 15 words + question 10 + premise:, question:, candidates:, 1, 100, c, 2, 50, c = 9
    assert f["total_prompt_words"] == 34
    assert f["question_length"] == 44 and f["question_words"] == 10
    assert f["candidate_count"] == 2
    assert f["premise_length"] == 74 and f["premise_words"] == 15  # well-known -> well, known
    assert f["premise_sentences"] == 2
    # premise set: 14 distinct words, question set: 10; shared: water, at, is -> 3 / 21
    assert f["premise_question_overlap"] == pytest.approx(3 / 21)
    assert f["premise_numbers"] == 1 and f["question_numbers"] == 1
    assert f["premise_position"] == pytest.approx(9 / f["total_prompt_length"])


def test_structural_helpers_edge_cases():
    assert count_numbers("1,000 grams, 3.5e-2 mol and -4 K; H2O") == 3  # H2O's digit is part of a word
    assert count_sentences("One. Two! Three? tail") == 4 and count_sentences("   ") == 0
    assert jaccard("", "") == 0.0 and jaccard("A a b", "b c") == pytest.approx(1 / 3)
    f = structural_features(make_instance(options=()))
    assert f["candidate_count"] == 0


RATINGS = dict.fromkeys(SEMANTIC, 0)


def feature_responder(model, messages, k):
    """Ratings keyed on the premise: 'Water' -> rule violation 4, locality 3; 'GARBAGE' -> no JSON ever."""
    prompt = messages[0][1]
    premise = prompt.split("<premise>\n", 1)[1].split("\n</premise>", 1)[0]
    if "GARBAGE" in premise:
        return "I cannot rate this."
    ratings = RATINGS | (
        {"domain_rule_violation": 4, "error_locality": 3, "numeric_distortion": 1} if "Water" in premise else {}
    )
    return "```json\n" + json.dumps(ratings) + "\n```"


def test_semantic_features_through_the_judge(fake_openai):
    fake = fake_openai(feature_responder)
    good, bad = make_instance(), make_instance("q2-H1", "q2", premise="GARBAGE premise here.")
    table = extract_features([good, bad], fake.llm())
    assert table.instance_ids == ["q1-H1", "q2-H1"] and table.unjudged == ["q2-H1"]
    row = table.rows[0]
    assert (row["domain_rule_violation"], row["error_locality"], row["numeric_distortion"]) == (4.0, 3.0, 1.0)
    assert row["applicability_mismatch"] == 0.0
    assert all(math.isnan(table.rows[1][f]) for f in SEMANTIC)
    assert table.rows[1]["premise_words"] == 3  # structural features stay
    first = fake.server.count
    assert first == 1 + 3  # one call for the good item; the bad one asked and re-asked twice
    prompts = [r["json"]["messages"][0]["content"] for r in fake.server.requests]  # concurrent: any order
    prompt = next(p for p in prompts if "Water" in p)
    assert "<premise>\n" + PREMISE in prompt and "1. 100 C\n2. 50 C" in prompt and not prompt.startswith("#")
    again = extract_features([good, bad], fake.llm())  # cached: no new calls
    assert fake.server.count == first and again.rows[0] == row


def test_propensity_pooled_and_per_model():
    def s(iid, insightful, resolution="Heuristic Correction", cond="B+H"):
        return SampleScore(iid, 0, iid[:2], cond, "Physics", "t", "multiple_choice", "x", None, False, True,
                           resolution=resolution, insightful=insightful)  # fmt: skip

    by_model = {
        "m1": [s("q1-H1", True), s("q1-H1", False), s("q1-B", None, None, "B")],
        "m2": [s("q1-H1", True), s("q1-H1", None, None), s("q2-H1", False)],
    }
    pooled, counts = propensity(by_model, "pooled")
    assert pooled == {(None, "q1-H1"): 2 / 3, (None, "q2-H1"): 0.0}
    assert counts == {"judged": 4, "unjudged": 1}
    per_model, _ = propensity(by_model, "per_model")
    assert per_model == {("m1", "q1-H1"): 0.5, ("m2", "q1-H1"): 1.0, ("m2", "q2-H1"): 0.0}


def synthetic(seed: int, planted: bool, questions=60, per_question=5):
    rng = np.random.default_rng(seed)
    n = questions * per_question
    X = rng.normal(size=(n, len(FEATURES)))
    groups = [f"q{i // per_question}" for i in range(n)]
    if planted:
        y = 1 / (1 + np.exp(-3 * X[:, 0])) + rng.normal(scale=0.05, size=n)
    else:
        y = rng.uniform(size=n)
    return X, np.clip(y, 0, 1), groups


def test_grouped_folds_never_share_a_question():
    _, _, groups = synthetic(0, False, questions=23, per_question=7)
    splits = grouped_folds(groups, 5, seed=3)
    g = np.array(groups)
    seen: set[str] = set()
    for tr, te in splits:
        test_q = set(g[te])
        assert not test_q & set(g[tr]) and not test_q & seen
        seen |= test_q
    assert seen == set(groups)
    with pytest.raises(ValueError, match="at least 5 base questions"):
        grouped_folds(["a", "a", "b"], 5)


SETTINGS = PredictorFit(resamples=200, n_estimators=100, seed=0)


def test_predictor_recovers_a_planted_signal():
    X, y, groups = synthetic(1, planted=True)
    report = fit_predictor(X, y, groups, FEATURES, SETTINGS)
    assert report.auroc.value > 0.9 and report.accuracy.value > 0.8
    assert report.auroc.ci_low < report.auroc.value < report.auroc.ci_high
    assert report.importance[0].feature == FEATURES[0] and report.importance[0].share > 0.5
    assert sum(i.share for i in report.importance) == pytest.approx(1.0, abs=1e-4)
    m = np.array(report.interactions)
    assert m.shape == (24, 24) and np.allclose(m, m.T, atol=1e-6)
    folds = [set(f) for f in report.folds]
    assert sum(len(f) for f in folds) == len(set().union(*folds)) == 60


def test_predictor_on_noise_stays_near_chance():
    X, y, groups = synthetic(2, planted=False)
    report = fit_predictor(X, y, groups, FEATURES, SETTINGS)
    assert 0.35 < report.auroc.value < 0.65


def test_cli_writes_report_plots_and_json(fake_openai, mini_folder, tmp_path):
    srv = fake_openai(feature_responder)
    paths = mini_results(tmp_path, mini_folder)
    out = tmp_path / "pred"
    args = ["analyze", "predictor", "--results", *map(str, paths), "--dataset", str(mini_folder), "--out", str(out)]
    plan = CliRunner().invoke(app, [*args, "--dry-run"])  # one feature verdict per B+H prompt; nothing called
    assert plan.exit_code == 0 and "openai:gpt-4o: 102 requests, 102 samples (cached 0/102)" in plan.output
    assert srv.server.count == 0 and not out.exists()
    res = CliRunner().invoke(app, [*args, "--resamples", "50", "--folds", "3"])
    assert res.exit_code == 0, res.output
    again = CliRunner().invoke(app, [*args, "--dry-run"])
    assert "openai:gpt-4o: 102 requests, 102 samples (cached 102/102)" in again.output, again.output
    assert "fold 3/3" in res.output and "predictor: 102 rows, 34 questions" in res.output
    report = json.loads((out / "predictor.json").read_text())
    assert report["rows"] == 102 and report["notes"]["models"] == ["m1", "m2"]
    assert report["notes"]["judged_samples"] == 408 and report["paper_reference"]["auroc"] == 0.847
    for name in ("shap_importance.png", "shap_interactions.png"):
        assert (out / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "# Insightful-trajectory predictor" in (out / "predictor.md").read_text()
    assert len((out / "features.csv").read_text().splitlines()) == 103


def test_cli_default_judge_without_a_key_names_the_offline_flags_at_once(monkeypatch, tmp_path):
    """The default feature judge (openai:gpt-4o) without OPENAI_API_KEY: exit 2 before any results are read."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    res = CliRunner().invoke(
        app, ["analyze", "predictor", "--results", str(tmp_path / "missing.json"), "--dataset", "phrbench"]
    )
    assert res.exit_code == 2, res.output
    assert "--judge openai:gpt-4o: openai:gpt-4o needs an API key: set the environment variable OPENAI_API_KEY." in (
        res.output
    )
    assert "Offline: --judge none (the 12 semantic features are left missing) or --judge local:smollm2." in res.output
