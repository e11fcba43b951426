"""The LLM-judge pass: real OpenAI SDK against the protocol server, a deterministic JSON judge, real cache."""

import json

import pytest

from phr.bench.records import Augmentation, BaseQuestion
from phr.llm import LLM
from phr.validation.judge import JudgeVerdict, judge_augmentations, judge_prompt

REASK = "Your previous reply could not be used"


def question(qid: str, task_type: str, domain: str, subtype: str, text: str, answer: str, **fields) -> BaseQuestion:
    """Question ``qid`` (``<source>-<row id>``) with what the judge prompt does not read filled in."""
    source, row_id = qid.split("-", 1)
    return BaseQuestion(
        **dict(id=qid, source=source, source_row_id=row_id, license="CC-BY", domain=domain, subtype=subtype)
        | dict(task_type=task_type, question=text, answer=answer)
        | fields
    )


MC = question(
    "sciq-1",
    "multiple_choice",
    "Chemistry",
    "acids",
    "Which gas is released when zinc reacts with HCl?",
    "Hydrogen",
    options=["Oxygen", "Hydrogen", "Chlorine"],
    answer_index=1,
)
OPEN = question("gpqa-2", "open_ended", "Physics", "mechanics", "What is g at Earth's surface in m/s^2?", "9.8")
CODE = question(
    "humaneval-3",
    "code",
    "Code",
    "lists",
    "Add two numbers.",
    "def add(a, b): return a + b",
    license="MIT",
    code_signature='def add(a, b):\n    """Return a + b."""',
    code_tests="assert add(1, 2) == 3  # SECRET_TEST",
    entry_point="add",
    reference_solution="def add(a, b):\n    return a + b",
)


def T(i, q, text):
    return Augmentation(id=f"{q.id}-t{i}", question_id=q.id, kind="truthful", statement=text, generator="test")


def H(i, q, text, mtype="State Distortion", logic="changed 9.8 to 12"):
    return Augmentation(
        id=f"{q.id}-h{i}",
        question_id=q.id,
        kind="hallucinated",
        statement=text,
        generator="test",
        mutation_type=mtype,
        mutation_strategy="value swap",
        mutation_logic=logic,
    )


def verdict(**kw):
    v = {
        "reason": "fine",
        "factual_validity": True,
        "relevance": True,
        "leaks_answer": False,
        "verdict": "accept",
        "type_consistency": None,
        "mutation_logic_consistent": None,
        "plausible": None,
        "single_claim": None,
    }
    return v | kw


def responder(model, messages, k):
    """A judge keyed on marker words in the premise of the first user message."""
    prompt = messages[0][1]
    premise = prompt.split("<premise>\n", 1)[1].split("\n</premise>", 1)[0]
    hallucinated = "HALLUCINATED" in prompt
    base = verdict(
        **(
            {c: True for c in ("type_consistency", "mutation_logic_consistent", "plausible", "single_claim")}
            if hallucinated
            else {"task_consistent": True}
        )
    )
    if "GARBAGE" in premise:
        return "I would rather not say."
    if "MALFORMED" in premise and not messages[-1][1].startswith(REASK):
        return '{"reason": "oops", "factual_validity": "maybe"'
    if "WRONGTYPE" in premise:
        base |= {"type_consistency": False, "verdict": "reject", "reason": "the error is a value, not a rule"}
    if "LEAKY" in premise:
        base |= {"leaks_answer": True, "verdict": "reject", "reason": "it names hydrogen"}
    if "VERDICTONLY" in premise:
        base |= {"verdict": "reject", "reason": "too vague"}
    if "NULLS" in premise:
        base |= {"type_consistency": None}
    return "Here is my review:\n```json\n" + json.dumps(base) + "\n```"


@pytest.fixture
def server(fake_openai):
    """The protocol server judging with ``responder``; OPENAI_* and PHR_CACHE point at it."""
    return fake_openai(responder).server


def make():
    return LLM("openai:gpt-4o", progress=False, timeout=30, backoff_initial=0.01, backoff_max=0.05)


AUGS = [
    T(1, MC, "Zinc is more reactive than hydrogen in the activity series."),
    H(1, OPEN, "Standard gravity at sea level is 12 m/s^2."),
    H(2, OPEN, "WRONGTYPE gravity is 12 m/s^2 at sea level."),
    T(2, MC, "LEAKY the gas released is hydrogen."),
    H(3, OPEN, "MALFORMED gravity at sea level is 12 m/s^2."),
    T(3, MC, "GARBAGE zinc chloride forms."),
    T(4, CODE, "VERDICTONLY Python adds integers with +."),
    H(4, CODE, "NULLS the + operator concatenates integers.", logic="addition described as concatenation"),
]
QS = [MC, OPEN, CODE]


def by_id(outcome):
    rej = {}
    for r in outcome.rejections:
        rej.setdefault(r.row_id, []).append(r)
    return rej, {j.target_id: j for j in outcome.judgements}


def test_judge_outcomes_reasks_and_cache(server):
    out = judge_augmentations(QS, AUGS, make())
    rej, jud = by_id(out)
    assert len(out.judgements) == len(AUGS) and {j.judge for j in out.judgements} == {"openai:gpt-4o"}

    for good in ("sciq-1-t1", "gpqa-2-h1"):
        assert good not in rej and jud[good].label == "accept" and jud[good].passed
    assert [(r.check, r.reason) for r in rej["gpqa-2-h2"]] == [
        ("judge", "type_consistency: the error is a value, not a rule")
    ]
    assert [(r.check, r.reason) for r in rej["sciq-1-t2"]] == [("judge_leakage", "leaks_answer: it names hydrogen")]
    assert [(r.check, r.reason) for r in rej["humaneval-3-t4"]] == [("judge", "verdict: too vague")]
    assert jud["sciq-1-t2"].label == "reject" and jud["sciq-1-t2"].passed is False

    # malformed first, valid after one re-ask
    assert "gpqa-2-h3" not in rej and jud["gpqa-2-h3"].passed
    reasks = [r for r in server.requests if r["json"]["messages"][-1]["content"].startswith(REASK)]
    assert any("MALFORMED" in r["json"]["messages"][0]["content"] for r in reasks)

    # always invalid -> rejected, raw texts kept, never accepted
    (g,) = rej["sciq-1-t3"]
    assert g.check == "judge" and g.reason.startswith("judge output invalid: no JSON object")
    fail = {f.augmentation_id: f for f in out.failures}
    assert fail["sciq-1-t3"].raw_texts == ["I would rather not say."] * 3  # first reply + 2 re-asks
    assert jud["sciq-1-t3"].label == "reject"
    # null hallucinated-only criteria -> invalid, not accepted
    assert rej["humaneval-3-h4"][0].reason.startswith("judge output invalid: null type_consistency")
    assert set(fail) == {"sciq-1-t3", "humaneval-3-h4"}

    # one temperature-0, n=1 call per augmentation (+ re-asks)
    first = [r["json"] for r in server.requests if not r["json"]["messages"][-1]["content"].startswith(REASK)]
    assert len(first) == len(AUGS) and all(b["temperature"] == 0 and b.get("n", 1) == 1 for b in first)

    calls = server.count
    again = judge_augmentations(QS, AUGS, make())
    assert server.count == calls  # everything from the cache
    assert again.rejections == out.rejections and again.judgements == out.judgements


def test_prompts_show_what_the_judge_needs(server):
    mc = judge_prompt(MC, AUGS[0])
    assert (
        "Candidates: (1) Oxygen; (2) Hydrogen; (3) Chlorine" in mc and "(2) Hydrogen" in mc.split("Correct answer")[1]
    )
    assert "TRUTHFUL" in mc and "mutation_logic" in mc  # field listed as null-only
    h = judge_prompt(OPEN, AUGS[1])
    assert all(
        s in h
        for s in (
            "Declared mutation type: State Distortion",
            "value swap",
            "changed 9.8 to 12",
            "Rule Contradiction:",
            "Pseudoscientific Entanglement:",
            "Correct answer (for your review only; never shown with the premise): 9.8",
        )
    )
    code = judge_prompt(CODE, AUGS[6])
    assert 'def add(a, b):\n    """Return a + b."""' in code and "return a + b" in code and "SECRET_TEST" not in code
    assert "$" not in mc + h + code
    JudgeVerdict.model_validate(json.loads(h.split("no other text:\n", 1)[1].split("\n", 1)[0]))  # the example parses


def test_missing_question_and_empty_input(server):
    orphan = T(9, BaseQuestion(**(MC.model_dump() | {"id": "sciq-404"})), "Zinc is a metal.")
    out = judge_augmentations([MC], [orphan], make())
    assert [(r.check, r.reason) for r in out.rejections] == [("judge", "judge skipped: question 'sciq-404' not found")]
    assert server.count == 0
    assert judge_augmentations(QS, [], make()).judgements == []
