"""Behavioural resolution judge: real OpenAI SDK against the protocol server, a deterministic JSON judge, real cache."""

import json

import pytest

from phr.eval.dataset import Instance
from phr.eval.resolution import (
    PROMPT_PATH,
    RESOLUTIONS,
    Resolution,
    ResolutionJudgement,
    insightful,
    judge_resolutions,
    prompt_hash,
    resolution_label,
    resolution_prompt,
)

REASK = "Your previous reply could not be used"


def H(n, premise="Standard gravity at sea level is 12 m/s^2.", **kw):
    task = "Question: What is g at Earth's surface in m/s^2?\nReason step by step."
    fields = dict(
        id=f"gpqa-{n}-bh",
        question_id=f"gpqa-{n}",
        condition="B+H",
        domain="Physics",
        subtype="mechanics",
        task_type="open_ended",
        source="gpqa",
        prompt=f"Premise: {premise}\n\n{task}",
        answer="9.8",
        premise=premise,
        mutation_type="State Distortion",
        mutation_logic="changed 9.8 m/s^2 to 12 m/s^2",
    )
    return Instance(**(fields | kw))


def judgement(accepts, corrects, why="ok"):
    return json.dumps({"uses_premise": accepts, "corrects_premise": corrects, "rationale": why, "extra": 1})


def responder(model, messages, k):
    """A judge keyed on marker phrases in the response shown in the first user message."""
    response = messages[0][1].split("<response>\n", 1)[1].split("\n</response>", 1)[0]
    reask = messages[-1][1].startswith(REASK)
    if "GARBAGE" in response:
        return "I cannot judge this."
    if "MALFORMED" in response and not reask:
        return '{"uses_premise": "yes", "corrects_premise": false'
    if "the premise is false" in response:
        return "```json\n" + judgement(False, True, "It rejects the premise.") + "\n```"
    if "given the premise" in response:
        return judgement(True, False, "It uses the premise.")
    return "Verdict: " + judgement(False, False, "It ignores the premise.")


@pytest.fixture
def fake(fake_openai):
    """The protocol server judging with ``responder`` (``fake.server``) and LLMs on it (``fake.llm()``)."""
    return fake_openai(responder)


@pytest.mark.parametrize(
    "accepts,corrects,label",
    [
        (False, False, "Hallucination Avoidance"),
        (True, False, "Hallucination Compliance"),
        (False, True, "Heuristic Correction"),
        (True, True, "Heuristic Correction"),
    ],
)
def test_label_table(accepts, corrects, label):
    assert resolution_label(accepts, corrects) == label and label in RESOLUTIONS


def test_insightful():
    assert insightful("Heuristic Correction", True)
    assert not insightful("Heuristic Correction", False) and not insightful("Hallucination Compliance", True)
    assert not insightful("Hallucination Avoidance", True)
    with pytest.raises(ValueError):
        insightful("Refusal", True)


def test_schema_is_strict():
    assert ResolutionJudgement.model_validate_json(judgement(True, False)).uses_premise is True  # extra ignored
    with pytest.raises(ValueError):
        ResolutionJudgement.model_validate({"uses_premise": "yes", "corrects_premise": False, "rationale": "x"})


def test_prompt_rendering():
    inst = H(1, truth_verification="g = 9.80665 m/s^2 by definition")
    p = resolution_prompt(inst, "Using 12 m/s^2, the answer is 12.\nAnswer: 12")
    assert "<premise>\nStandard gravity at sea level is 12 m/s^2.\n</premise>" in p
    assert "Using 12 m/s^2, the answer is 12.\nAnswer: 12" in p
    assert "changed 9.8 m/s^2 to 12 m/s^2" in p and "State Distortion" in p and "9.80665" in p
    task = p.split("<task>\n", 1)[1].split("\n</task>", 1)[0]
    assert task.startswith("Question: What is g") and "Premise:" not in task  # premise block stripped
    assert not p.startswith("#") and "version 1" not in p  # header stripped
    example = p.split("no other text:\n", 1)[1].strip()
    ResolutionJudgement.model_validate_json(example)  # the example (doubled braces) renders as valid JSON
    assert "(not given)" in resolution_prompt(H(2, mutation_type=None, mutation_logic=None), "x")
    assert len(prompt_hash()) == 64 and "version 2" in PROMPT_PATH.read_text().splitlines()[0]


def test_end_to_end_reask_failure_and_cache(fake):
    items = [
        (H(1), "Wait, the premise is false: g is 9.8 m/s^2.\nAnswer: 9.8"),
        (H(2), "So given the premise, g = 12.\nAnswer: 12"),
        (H(3), "g is about 9.8 m/s^2.\nAnswer: 9.8"),
        (H(4), "MALFORMED but given the premise, g = 12."),
        (H(5), "GARBAGE"),
    ]
    out = judge_resolutions(fake.llm(), items)
    assert [r.label if r else None for r in out] == [
        "Heuristic Correction",
        "Hallucination Compliance",
        "Hallucination Avoidance",
        "Hallucination Compliance",
        None,
    ]
    assert out[0] == Resolution("Heuristic Correction", False, True, "It rejects the premise.", "openai:gpt-4o")

    first = [r["json"] for r in fake.server.requests if not r["json"]["messages"][-1]["content"].startswith(REASK)]
    assert len(first) == len(items)
    assert all(
        b["temperature"] == 0 and b.get("n", 1) == 1 and b.get("max_completion_tokens", b.get("max_tokens")) == 256
        for b in first
    )
    reasks = [
        r["json"]["messages"][0]["content"]
        for r in fake.server.requests
        if r["json"]["messages"][-1]["content"].startswith(REASK)
    ]
    assert sum("MALFORMED" in m for m in reasks) == 1 and sum("GARBAGE" in m for m in reasks) == 2

    calls = fake.server.count
    assert judge_resolutions(fake.llm(), items) == out
    assert fake.server.count == calls  # everything from the cache


def test_spec_string_judge(fake, monkeypatch, tmp_path):
    monkeypatch.setenv("PHR_CACHE", str(tmp_path / "spec.sqlite"))
    (r,) = judge_resolutions("openai:gpt-4o", [(H(1), "given the premise, 12")])
    assert r.label == "Hallucination Compliance" and r.judge == "openai:gpt-4o"


def test_non_bh_instances_rejected_before_any_call(fake):
    b = H(1, condition="B", premise=None, prompt="Question: What is g?", mutation_type=None, mutation_logic=None)
    with pytest.raises(ValueError, match="B\\+H"):
        judge_resolutions(fake.llm(), [(H(2), "given the premise"), (b, "9.8")])
    with pytest.raises(ValueError):
        judge_resolutions(fake.llm(), [(H(3, condition="B+T"), "fine")])
    assert fake.server.count == 0
    assert judge_resolutions(fake.llm(), []) == []
