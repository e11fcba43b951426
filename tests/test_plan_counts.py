"""The plan counts the calls the run makes (issue 33, item 3). On a fresh call cache, each operation's planned
requests of a model equal the calls the run sends: the certain ones exactly; those that depend on earlier answers
(Algorithm 1 asks paraphrases only of questions first answered correctly; the B.2 judge sees only paraphrases
that parse) are planned as a bound with their condition, and the run makes exactly what that condition gives.

The models sit behind the local OpenAI-protocol server (the real client), answering by rule, so each count is
known by hand; one slow test does the same with the offline SmolLM2."""

from __future__ import annotations

import json
import re

import pytest

from phr.api import plan, run
from phr.builders.hr1_mini import load_mini
from phr.config.ops import BuildHr1ParaphrasesConfig, BuildHr1SftConfig, EvalHr1Config, EvalPhrbenchConfig
from phr.hr1.plan import FIRST_CORRECT, PARSED
from phr.llm.preflight import Usage
from tests.support.data import SHARED, needs

MODEL = "openai:gpt-4o"
K = 4


def _usage(p, spec: str = MODEL) -> Usage:
    return p.preflight.usage[spec]


def _mini_responder(right: set[str]):
    """QA: the gold answer to the originals in ``right``, a wrong one to every other question and paraphrase."""
    gold = {q.question: q.answer for q in load_mini().questions}

    def respond(model, messages, k):
        asked = messages[-1][1]
        return f"<answer>{gold[asked] if asked in right else 'Nobody at all'}</answer>"

    return respond


def _mini_expected() -> tuple[set[str], int]:
    """Half the mini's originals answered correctly, and the paraphrase answers Algorithm 1 then asks for: the
    consistent curated paraphrases (at most K) of those questions."""
    mini = load_mini()
    right = {q.question for q in mini.questions[::2]}
    asked = sum(
        len([p for p in mini.paraphrases[q.id] if p.consistent and p.text][:K])
        for q in mini.questions
        if q.question in right
    )
    return right, asked


@pytest.mark.parametrize("cls", [BuildHr1ParaphrasesConfig, EvalHr1Config], ids=["build hr1-paraphrases", "eval hr1"])
def test_algorithm_1_calls_are_planned_as_certain_plus_a_bound_and_made_as_the_answers_say(cls, fake_openai, tmp_path):
    right, asked = _mini_expected()
    srv = fake_openai(_mini_responder(right))
    p = plan(cls(preset="mini", qa_model=MODEL, diversity=False, out=tmp_path / "out"))
    u, n = _usage(p), len(load_mini().questions)
    assert (u.certain, u.conditional) == (n, n * K - 12)  # every original; every consistent paraphrase (12 are not)
    assert u.when == [FIRST_CORRECT] and u.expected == pytest.approx(0.5 * (n * K - 12))
    line = next(x for x in p.lines() if x.startswith(f"  {MODEL}:"))
    assert f"{n} requests + up to {n * K - 12} that depend on earlier answers ({FIRST_CORRECT}" in line
    res = run(p)
    assert srv.server.count == u.certain + asked  # 52 originals + the paraphrases of the 26 answered correctly
    assert res.summary.model(MODEL).calls == srv.server.count
    assert 0 < asked < u.conditional


def test_eval_phrbench_makes_exactly_the_planned_requests(fake_openai, mini_folder, tmp_path):
    srv = fake_openai(lambda model, messages, k: "The answer is (A).")
    p = plan(EvalPhrbenchConfig(model=MODEL, dataset=str(mini_folder), limit=3, samples=2, max_tokens=32,
                                score=False, out=tmp_path / "run"))  # fmt: skip
    u = _usage(p)
    assert (u.requests, u.samples, u.conditional) == (15, 30, 0)  # 3 questions: B, B+T, 3 x B+H; 2 samples each
    run(p)
    asked = [r["json"] for r in srv.server.requests if "chat/completions" in r["path"]]
    assert sum(body.get("n") or 1 for body in asked) == u.samples
    assert srv.server.count in (u.requests, u.samples)  # native n: one call a prompt; else one a sample


def _sft_responder(gold: dict[str, str]):
    """Paraphraser: K samples per question, the fourth without its <paraphrase> tag (a parse error); the B.2
    judge: consistent unless the paraphrase adds a question."""

    def respond(model, messages, k):
        first = messages[0][1]
        if first.startswith("Your task is to paraphrase"):
            q = re.search(r"Original question: (.*)$", first, re.S).group(1).strip()
            texts = [f"Tell me: {q}", f"{q} (asked differently)", f"{q} and also who else?"]
            return f"<paraphrase>{texts[k]}</paraphrase>" if k < 3 else "I would rather not."
        if first.startswith("Please help me determine"):
            para = re.search(r"paraphrased question: (.*?)\n", first).group(1)
            return json.dumps({"think": "checked", "result": 0 if "who else" in para else 1})
        raise AssertionError(f"unexpected prompt: {first[:80]!r}")

    return respond


@needs("simplequestions")
def test_build_hr1_sft_plans_the_judge_of_parsed_paraphrases_as_a_bound(fake_openai, tmp_path):
    srv = fake_openai(_sft_responder({}))
    cfg = BuildHr1SftConfig(
        source=[f"simplequestions={SHARED / 'simplequestions'}"], stand_in_split="even-train-odd-test",
        eval_set=["stand-in"], drop_leaking=True, paraphraser=MODEL, judge=MODEL, limit=4, k=K, out=tmp_path / "sft",
    )  # fmt: skip
    p = plan(cfg)
    u = _usage(p)
    screened = p.screened
    assert screened is not None and screened.questions
    q = len(screened.questions)  # the first 4 rows, less any the plan's leakage screen dropped (the run's own)
    assert (u.certain, u.conditional, u.when) == (q, q * K, [PARSED])  # K paraphrases a call; one verdict each
    res = run(p)
    parsed = q * (K - 1)
    judged = sum(1 for r in srv.server.requests if r["json"]["messages"][0]["content"].startswith("Please help me"))
    assert judged == parsed and srv.server.count == u.certain + parsed
    assert res.counts["questions"] == q and res.counts["dropped_for_leakage"] == len(screened.dropped)


@pytest.mark.slow
def test_smollm2_builds_hr1_mini_with_the_planned_calls(tmp_path, monkeypatch, smollm2):
    """With the offline model: 52 originals planned and asked; of the 196 conditional paraphrase answers, exactly
    those of the questions it answered correctly are asked (its own accuracy decides how many)."""
    monkeypatch.setenv("PHR_CACHE", str(tmp_path / "calls.sqlite"))
    p = plan(BuildHr1ParaphrasesConfig(diversity=False, out=tmp_path / "mini"))
    u = _usage(p, "local:smollm2")
    assert (u.certain, u.conditional) == (52, 196)
    res = run(p)
    mini = load_mini()
    correct = {r["id"] for r in _rows(tmp_path / "mini") if r["correctness"] == "correct"}
    asked = sum(len([x for x in mini.paraphrases[i] if x.consistent and x.text][:K]) for i in correct)
    assert res.counts["originally_correct"] == len(correct)
    assert res.summary.model("local:smollm2").samples == u.certain + asked


def _rows(folder) -> list[dict]:
    from datasets import load_dataset

    return [r for split in load_dataset(str(folder)).values() for r in split]
