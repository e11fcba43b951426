"""Failed calls are missing values (issue 21 item 3): a call that fails after all retries at any step (paraphrase,
consistency judge, QA, grading) stops `eval hr1` and every H-R1 corpus build with the missing values named and
the rerun command, writing nothing; the rerun makes only the missing calls and ends byte-identical to a run that
never failed. With --partial, eval hr1 writes the tables marked partial, the missing values out of the
denominators. Faults come from the local OpenAI-protocol server, matched by the request's content."""

from __future__ import annotations

import json
import os
import shlex
from pathlib import Path

import pytest

from phr.builders.hr1 import build_grpo_corpus, build_paraphrase_corpus, build_sft_corpus
from phr.builders.hr1_sources import load_simplequestions, load_truthfulqa, stand_in_split
from phr.eval.hr1_runner import evaluate
from phr.hr1.failures import FailedCallsError
from phr.hr1.pipeline import RunPlan
from tests.support.cli import run
from tests.support.data import SHARED as DATA
from tests.support.data import needs
from tests.support.hr1_fixtures import hr1_responder

pytestmark = needs("truthfulqa", "simplequestions")

FAST = {"max_attempts": 2, "backoff_initial": 0.01, "backoff_max": 0.02, "progress": False}
FAULTS = [("status", 503)] * FAST["max_attempts"]  # every attempt of the call fails
MODELS = dict(paraphraser="openai:gpt-4o", qa="openai:gpt-4o", judge="openai:gpt-4o")


def _first(body) -> str:
    return body["messages"][0]["content"]


def position(step: str, questions) -> callable:
    """A matcher of the one request of ``step`` to fail (by its content)."""
    q = {"paraphrase": 1, "judge": 2, "qa": 0, "grading": 3}[step]
    q = questions[q % len(questions)]
    return {
        "paraphrase": lambda b: _first(b).startswith("Your task is to paraphrase") and q.question in _first(b),
        "judge": lambda b: _first(b).startswith("Please help me determine") and f"Tell me: {q.question}" in _first(b),
        "qa": lambda b: (
            _first(b).startswith("You are a strict question") and b["messages"][-1]["content"] == q.question
        ),
        "grading": lambda b: (
            _first(b).startswith("Your task is to evaluate") and f"Model Response: {q.answer}\n" in _first(b)
        ),
    }[step]


def _files(folder: Path, skip: tuple[str, ...] = ()) -> dict[str, bytes]:
    return {
        str(p.relative_to(folder)): p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if p.is_file() and p.name not in skip
    }


@pytest.fixture(scope="module")
def tqa():
    return load_truthfulqa(DATA / "truthfulqa").questions[:4]


@pytest.fixture(scope="module")
def halves():
    return stand_in_split(load_simplequestions(DATA / "simplequestions"))


def _fault_then_rerun(fake_openai, responder, tmp_path, match, make):
    """Run ``make(out, options)`` fault-free (own server and cache), then with the matched call failing (it
    must raise FailedCallsError and write nothing), then again: the rerun makes only calls the faulty run did
    not complete, and the two together make exactly the fault-free run's calls. Returns (reference, rerun,
    error)."""
    ref_srv = fake_openai(responder)
    make(tmp_path / "ref", {**FAST, "cache": tmp_path / "ref.sqlite"})
    reference = {_body(r) for r in ref_srv.server.requests}
    srv = fake_openai(responder)  # a fresh server; the test's own cache (PHR_CACHE)
    srv.server.script("/v1/chat/completions", FAULTS, match=match)
    with pytest.raises(FailedCallsError) as err:
        make(tmp_path / "out", FAST)
    assert not (tmp_path / "out").exists()  # nothing half-written
    faulty = srv.server.requests
    assert sum(r["fault"] is not None for r in faulty) == FAST["max_attempts"]
    make(tmp_path / "out", FAST)  # the rerun, fault removed (consumed)
    answered = {_body(r) for r in faulty if r["fault"] is None}
    rerun = [_body(r) for r in srv.server.requests[len(faulty) :]]
    assert not answered & set(rerun) and len(set(rerun)) == len(rerun)  # only the missing calls
    assert answered | set(rerun) == reference
    return tmp_path / "ref", tmp_path / "out", err.value


def _body(request) -> str:
    return json.dumps(request["json"], sort_keys=True)


@pytest.mark.parametrize("step", ["paraphrase", "judge", "qa", "grading"])
def test_eval_hr1_failed_call_is_missing_and_the_rerun_is_byte_identical(fake_openai, tmp_path, tqa, step):
    responder = hr1_responder({q.question: q.answer for q in tqa})

    def make(out, options):
        return evaluate({"truthfulqa": tqa}, **MODELS, out=out, diversity=False, llm_options=options, rerun="RERUN-CMD")

    ref, out, err = _fault_then_rerun(fake_openai, responder, tmp_path, position(step, tqa), make)
    label = {"paraphrase": "paraphrase", "judge": "consistency judge", "qa": "qa", "grading": "grading"}[step]
    lost = 5 if step == "paraphrase" else 1  # one request with n = K = 5 samples
    assert len(err.failures) == lost and err.failures[0][1].startswith(f"{label}: server_error: ")
    assert f"eval hr1: {lost} value(s) of 1 question(s) are missing" in str(err) and "\n  RERUN-CMD" in str(err)
    assert f"Failed calls by model and reason: openai:gpt-4o: server_error={lost}\n" in str(err)
    assert _files(out, skip=("calls.json",)) == _files(ref, skip=("calls.json",))
    assert json.loads((out / "results.json").read_text())["partial"] is False


def test_eval_hr1_partial_tables_leave_the_failed_answer_out(fake_openai, tmp_path, tqa):
    srv = fake_openai(hr1_responder({q.question: q.answer for q in tqa}))
    srv.server.script("/v1/chat/completions", FAULTS, match=position("qa", tqa))  # question 0's own answer
    res = evaluate({"truthfulqa": tqa}, **MODELS, out=tmp_path / "run", diversity=False, llm_options=FAST,
                   partial=True, rerun="RERUN-CMD")  # fmt: skip
    t2 = res.tables["table2"]["truthfulqa"]
    # 4 questions, all answered correctly but question 0, whose QA call failed: it is missing, not wrong.
    # The old code graded it "" -> wrong: N_true 3 of 4 (75 %). Now N_true = 3 of the 3 known (100 %).
    assert (t2.true_count.value, t2.true_rate.value, t2.failed_questions) == (3, 1.0, 1)
    # per true question: p0 consistent + correct, p1 consistent + wrong ("asked differently"): WER 3 / 3
    assert (t2.rf_at_k.value, t2.wer_at_k.value, t2.er_at_1.value) == (3, 1.0, 0.0)
    assert t2.consis_at_1.value == pytest.approx(12 / 20)  # paraphrases need no QA: all 4 questions count
    assert res.partial and res.failures[0][0] == f"truthfulqa: {tqa[0].id}"
    saved = json.loads((tmp_path / "run" / "results.json").read_text())
    assert saved["partial"] is True and saved["failed_calls"][0]["reason"].startswith("qa: server_error: ")
    report = (tmp_path / "run" / "report.md").read_text()
    assert "**Partial**: 1 value(s) are missing" in report and "RERUN-CMD" in report
    record = json.loads((tmp_path / "run" / "records" / "truthfulqa.jsonl").read_text().splitlines()[0])
    assert (record["correctness"], record["qa_answer"], record["failed"][:18]) == ("failed", "", "qa: server_error: ")


@pytest.mark.parametrize("step", ["paraphrase", "grading"])
def test_paraphrase_corpus_build_fails_then_reruns_byte_identically(fake_openai, tmp_path, tqa, step):
    responder = hr1_responder({q.question: q.answer for q in tqa})

    def make(out, options):
        build_paraphrase_corpus(out, [load_truthfulqa(DATA / "truthfulqa").head(4)], **MODELS,
                                plan=RunPlan(k=5, qa_scope="all"), diversity=False, llm_options=options, rerun="RR")  # fmt: skip

    ref, out, err = _fault_then_rerun(fake_openai, responder, tmp_path, position(step, tqa), make)
    assert f"build hr1-paraphrases: {5 if step == 'paraphrase' else 1} value(s)" in str(
        err
    ) and "(nothing was written)" in str(err)
    assert _files(out) == _files(ref)


@pytest.mark.parametrize("kind", ["hr1-sft", "hr1-grpo"])
def test_training_corpus_build_fails_then_reruns_byte_identically(fake_openai, tmp_path, halves, kind):
    train, held_out = halves[0].head(3), halves[1].head(20)
    responder = hr1_responder({q.question: q.answer for q in train.questions})
    evals = {"stand-in": held_out.questions}
    step = "judge" if kind == "hr1-sft" else "qa"

    def make(out, options):
        if kind == "hr1-sft":
            build_sft_corpus(out, train, paraphraser="openai:gpt-4o", judge="openai:gpt-4o", eval_sets=evals,
                             llm_options=options)  # fmt: skip
        else:
            build_grpo_corpus(out, train, qa="openai:gpt-4o", judge="openai:gpt-4o", eval_sets=evals,
                              llm_options=options)  # fmt: skip

    ref, out, err = _fault_then_rerun(fake_openai, responder, tmp_path, position(step, train.questions), make)
    assert f"build {kind}: 1 value(s)" in str(err)
    assert _files(out) == _files(ref)


def test_cli_eval_hr1_exits_1_with_the_rerun_command(fake_openai, tmp_path, tqa):
    srv = fake_openai(hr1_responder({q.question: q.answer for q in tqa}))
    # the CLI's client retries with its own backoff: fail every attempt of question 0's first paraphrase request
    srv.server.script("/v1/chat/completions", [("status", 400)], match=position("paraphrase", tqa))
    env = {k: os.environ[k] for k in ("OPENAI_BASE_URL", "PHR_CACHE")} | {"OPENAI_API_KEY": "sk-test-0123456789"}
    args = ["eval", "hr1", "--dataset", f"truthfulqa={DATA / 'truthfulqa'}", "--limit", "4", "--paraphraser", "openai:gpt-4o",
            "--qa-model", "openai:gpt-4o", "--judge", "openai:gpt-4o", "--no-diversity", "--out", str(tmp_path / "run")]  # fmt: skip
    res = run(*args, env=env)
    assert res.returncode == 1, res.stderr
    assert "5 value(s) of 1 question(s) are missing" in res.stderr and "Traceback" not in res.stderr
    assert not (tmp_path / "run").exists()
    rerun = res.stderr.rsplit("\n  ", 1)[-1].strip()
    assert rerun.startswith("phr-publish --cache ") and "eval hr1" in rerun
    again = run(*shlex.split(rerun)[1:], env=env)
    assert again.returncode == 0, again.stderr
    assert json.loads((tmp_path / "run" / "results.json").read_text())["partial"] is False
