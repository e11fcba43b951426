"""Scoring, aggregation (hand-computed), code programs, results files, judge integration."""

import json

import pyarrow.parquet as pq
import pytest

from phr.config.ops import Scoring
from phr.eval.aggregate import aggregate
from phr.eval.dataset import load_eval_dataset
from phr.eval.pipeline import score_submission
from phr.eval.results import normalize
from phr.eval.scorers import ScoringRun, TrajectoryMetricsScorer
from phr.eval.scoring import SampleScore, code_program, score_responses
from phr.eval.submission import SubmissionError, SubmissionMeta, write_submission
from tests.support.answers import gold, wrong
from tests.support.protocol_server import ProtocolServer
from tests.support.rows import instance


def S(iid, k, q, cond, dom, mt, correct, ol=None, ui=None, buf=None, bc=None, res=None, missing=False):
    s = SampleScore(
        iid,
        k,
        q,
        cond,
        dom,
        "sub",
        "multiple_choice",
        "src",
        mt,
        missing=missing,
        correct=correct,
        ol=ol,
        ui=ui,
        buf=buf,
        bc=bc,
        resolution=res,
    )
    s.insightful = None if res is None else (res == "Heuristic Correction" and correct)
    return s


HAND = [
    S("q1-B", 0, "q1", "B", "Physics", None, True, 10, 1.0, 0.5, 2.0),
    S("q1-T", 0, "q1", "B+T", "Physics", None, True, 20, 2.0, 0.0, 0.0),
    S("q1-H1", 0, "q1", "B+H", "Physics", "Rule Contradiction", False, 30, 3.0, 1.0, 4.0, "Hallucination Compliance"),
    S("q1-H1", 1, "q1", "B+H", "Physics", "Rule Contradiction", True, 50, 1.0, 0.5, 0.0, "Heuristic Correction"),
    S("q2-B", 0, "q2", "B", "Code", None, False, 4, 0.5, 0.0, 0.0),
    S("q2-T", 0, "q2", "B+T", "Code", None, False, missing=True),
    S("q2-H1", 0, "q2", "B+H", "Code", "State Distortion", True, 40, 2.0, 0.25, 1.0, "Hallucination Avoidance"),
]


def test_aggregate_hand_computed():
    r = aggregate(HAND)
    m = r["metrics"]
    assert (m["accuracy_b"], m["accuracy_bt"], m["accuracy_bh"]) == (0.5, 0.5, 0.666667)
    assert (m["OL_b"], m["OL_bt"], m["OL_bh"], m["OL"], m["delta_OL"]) == (7.0, 20.0, 40.0, 40.0, 20.0)
    assert (m["UI"], m["BUF"], m["BC"]) == (2.0, 0.583333, 1.666667)
    assert m["delta_BUF"] == 0.583333 and m["delta_UI"] == 0.0
    assert (m["correction_rate"], m["compliance_rate"], m["avoidance_rate"]) == (0.333333,) * 3
    assert m["insightful_rate"] == 0.333333
    assert r["counts"] == {"samples": 7, "missing": 1, "instances": 6, "questions": 2}
    assert r["by_condition"]["B+T"] == {
        "n": 2,
        "accuracy": 0.5,
        "missing": 1,
        "OL": 20.0,
        "UI": 2.0,
        "BUF": 0.0,
        "BC": 0.0,
    }
    br = r["by_resolution"]
    assert (br["Hallucination Compliance"]["accuracy"], br["Hallucination Compliance"]["OL"]) == (0.0, 30.0)
    assert (
        br["Heuristic Correction"]["accuracy"],
        br["Heuristic Correction"]["OL"],
        br["Hallucination Avoidance"]["OL"],
    ) == (1.0, 50.0, 40.0)
    # Tables 9-11 cover the science domains only (paper §C.2): q2 (Code, State Distortion) is not in them
    assert set(r["per_mutation_type"]) == {"Rule Contradiction"}
    rc = r["per_mutation_type"]["Rule Contradiction"]
    assert (rc["n"], rc["accuracy"], rc["OL"], rc["H-T"]["accuracy"], rc["H-T"]["OL"]) == (2, 0.5, 40.0, -0.5, 20.0)
    # the paper's headline: overall accuracy H - T and retention H / T (0.666667 / 0.5)
    assert (m["delta_accuracy"], m["retention"]) == (0.166667, 1.333333)
    phys = r["per_domain"]["Physics"]
    assert (phys["B"]["accuracy"], phys["B+H"]["accuracy"], phys["H-T"]["accuracy"], phys["H-T"]["OL"]) == (
        1.0,
        0.5,
        -0.5,
        20.0,
    )
    assert r["resolution"]["per_domain"]["Code"] == {
        "Heuristic Correction": 0.0,
        "Hallucination Compliance": 0.0,
        "Hallucination Avoidance": 1.0,
    }


def test_no_judge_no_resolution_metrics():
    r = aggregate([S("q-B", 0, "q", "B", "Physics", None, True)])
    assert r["resolution"]["judged"] == 0 and "insightful_rate" not in r["metrics"]
    assert r["metrics"] == {"accuracy_b": 1.0}


def test_retention_absent_when_truthful_accuracy_is_zero():
    r = aggregate([S("q-T", 0, "q", "B+T", "Physics", None, False), S("q-H", 0, "q", "B+H", "Physics", "x", True)])
    assert r["metrics"]["delta_accuracy"] == 1.0 and "retention" not in r["metrics"]


def _code(**kw):
    """A code instance: HumanEval's form (the stub of ``add`` to complete) unless ``kw`` say otherwise."""
    stub = 'from typing import List\n\n\ndef add(a: int, b: int) -> int:\n    """Add."""\n'
    code = dict(domain="Code", task_type="code", source="humaneval", entry_point="add", question=stub)
    return instance(1, **(code | kw))


def test_code_program_forms():
    inst = _code()
    full = code_program(inst, "Here:\n```python\ndef add(a, b):\n    return a + b\n```")
    assert full.startswith("from typing import List") and "def add(a, b)" in full and '"""Add."""' not in full
    body = code_program(inst, "```python\n    return a + b\n```")  # a completion of the stub's body
    assert body == inst.question + "    return a + b\n"
    mbpp = _code(source="mbpp", question="Write a function add.", entry_point="add")
    assert code_program(mbpp, "def add(a,b): return a+b") == "def add(a,b): return a+b"


@pytest.fixture(scope="module")
def ds(mini_folder):
    return load_eval_dataset(mini_folder)


@pytest.fixture(scope="module")
def rows(ds):
    return {r["id"]: r for f in ds.files for r in pq.read_table(ds.path / f).to_pylist()}


def test_gold_scores_one_and_wrong_scores_zero(ds, rows):
    resp = {(i.id, 0): gold(i, rows) for i in ds.instances} | {(i.id, 1): wrong(i) for i in ds.instances}
    scores = score_responses(ds.instances, resp, samples=2, scoring=Scoring(scorer="none"), progress=False)
    assert len(scores) == 340
    assert all(s.correct for s in scores if s.sample == 0)
    assert not any(s.correct for s in scores if s.sample == 1)
    code = [s for s in scores if s.task_type == "code"]
    assert {s.extracted for s in code if s.sample == 0} == {"passed"} and len(code) == 80
    m = aggregate(scores)["metrics"]
    assert m["accuracy_b"] == m["accuracy_bt"] == m["accuracy_bh"] == 0.5


def judge_model(model, messages, k):
    response = messages[0][1].split("<response>\n", 1)[1].split("\n</response>", 1)[0]
    fixed = "premise is wrong" in response
    return json.dumps({"rationale": "r", "uses_premise": not fixed, "corrects_premise": fixed})


def test_submission_scored_with_judge_into_results(ds, rows, tmp_path, monkeypatch):
    hall = ds.select(("B+H",))
    # even-numbered instances: corrected and right (insightful); odd: complied and wrong
    resp = {}
    for n, i in enumerate(hall):
        resp[(i.id, 0)] = ("The premise is wrong. " + gold(i, rows)) if n % 2 == 0 else wrong(i)
    sub = tmp_path / "sub.jsonl"
    write_submission(sub, ((i, k, t) for (i, k), t in resp.items()))
    meta = SubmissionMeta(model="org/m", revision="abc", samples=1, conditions=("B+H",), link="https://x.org/m")
    with ProtocolServer(responder=judge_model) as srv:
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test-0123456789")
        monkeypatch.setenv("OPENAI_BASE_URL", srv.url + "/v1")
        judged = ScoringRun(
            Scoring(scorer="none", judge="openai:gpt-4o"),
            llm_options={"cache": tmp_path / "j.sqlite", "progress": False, "timeout": 5},
        )
        result, out = score_submission(sub, ds, meta, judged, out=tmp_path / "scored", progress=False)
        assert srv.count == 102
    m = result["metrics"]
    assert m["accuracy_bh"] == 0.5 and m["correction_rate"] == 0.5 and m["compliance_rate"] == 0.5
    assert m["insightful_rate"] == 0.5 and m["avoidance_rate"] == 0.0
    assert result["tables"]["by_resolution"]["Heuristic Correction"]["accuracy"] == 1.0
    assert result["config"]["resolution_judge"]["spec"] == "openai:gpt-4o"
    assert result["dataset"] == ds.ref() and result["source_url"] == "https://x.org/m"
    saved = json.loads((out / "results.json").read_text())
    assert saved["samples_file"]["path"] == "samples.jsonl" and len(saved["samples_file"]["sha256"]) == 64
    assert len((out / "samples.jsonl").read_text().splitlines()) == 102
    assert sorted(p.name for p in (out / "plots").iterdir()) == [
        "accuracy_by_domain.png",
        "resolution.png",
        "trajectory_by_condition.png",
        "trajectory_by_resolution.png",
    ]
    assert (out / "plots" / "resolution.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "Heuristic Correction" in (out / "report.md").read_text()
    with pytest.raises(Exception, match="accuracy_b"):  # B+H only: not a leaderboard result
        normalize(saved)


def test_full_submission_is_a_leaderboard_result(ds, rows, tmp_path):
    sub = tmp_path / "gold.jsonl"
    write_submission(sub, ((i.id, 0, gold(i, rows)) for i in ds.instances))
    meta = SubmissionMeta(model="org/gold", revision="v1")
    result, out = score_submission(
        sub, ds, meta, Scoring(scorer="none"), out=tmp_path / "s", progress=False, plots=False
    )
    rec = normalize(json.loads((out / "results.json").read_text()))
    assert rec["metrics"]["accuracy_bh"] == 1.0 and rec["run_id"].startswith("sub-")
    assert rec["tables"]["by_condition"]["B"]["n"] == 34
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"instance_id": "nope", "sample": 0, "response": "x"}\n')
    with pytest.raises(SubmissionError, match="unknown"):
        score_submission(bad, ds, meta, Scoring(scorer="none"), out=tmp_path / "b", progress=False)
    assert not (tmp_path / "b").exists()


def test_trajectory_metrics_cached_and_resumed(smollm2, ds, tmp_path, monkeypatch):
    from phr.eval.metric_cache import MetricCache
    from phr.eval.trajectory import TrajectoryScorer

    insts = ds.instances[:3]
    resp = {(i.id, 0): f"First step. Wait, maybe not. Answer: {n + 1}" for n, i in enumerate(insts)}
    cache = tmp_path / "calls.sqlite"

    def metrics(engine):
        return [TrajectoryMetricsScorer(engine, cache=cache, progress=False)]

    first = score_responses(insts, resp, samples=1, scorers=metrics(TrajectoryScorer(smollm2)), progress=False)
    assert MetricCache(cache).count() == 3 and all(s.ol and s.steps == 3 for s in first)

    scorer = TrajectoryScorer(smollm2)
    monkeypatch.setattr(scorer, "score", lambda items: pytest.fail("recomputed a cached response"))
    again = score_responses(insts, resp, samples=1, scorers=metrics(scorer), progress=False)
    assert [(s.ol, s.ui, s.buf, s.bc) for s in again] == [(s.ol, s.ui, s.buf, s.bc) for s in first]

    other_tau = TrajectoryScorer(smollm2, tau=50.0)  # another tau is another key: computed again
    third = score_responses(insts, resp, samples=1, scorers=metrics(other_tau), progress=False)
    assert MetricCache(cache).count() == 6 and all(s.buf == 0.0 for s in third)


def test_report_says_whether_a_judge_ran():
    from phr.eval.report import render_report, result_json

    scores = [S("q-H1", 0, "q", "B+H", "Physics", "Rule Contradiction", True, 5, 1.0, 0.0, 0.0)]
    ds_ref = {"id": "org/phrbench", "revision": "v1"}
    for judge, text in ((None, "Not judged (no judge given)."), ({"spec": "openai:x"}, "No judgement parsed (1 B+H")):
        res = result_json(
            model="m", revision="r", dataset=ds_ref, report=aggregate(scores), config={"resolution_judge": judge}
        )
        assert text in render_report(res)
