"""One leak definition (issue 19 item 2): the answer named AS the answer or directly implied is a leak, a claim
about the correct candidate is not. The rule checks and both judge prompts state and apply the same definition;
the paper's eight §A.3 premises pass; the truthful judge checks the paper's "does not conflict with the original
task"; the hallucinated judge's own gates (plausible, single_claim) are switchable and off by default."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from phr.bench.records import Augmentation, BaseQuestion
from phr.validation.checks import leakage, run_checks
from phr.validation.judge import (
    LEAK_DEFINITION,
    OPTIONAL_CRITERIA,
    JudgeConfig,
    JudgeVerdict,
    failed_criteria,
    judge_prompt,
)
from tests.support.rows import aug

PAPER = json.loads((Path(__file__).parent / "fixtures" / "paper_examples.json").read_text(encoding="utf-8"))
BIO = next(e for e in PAPER["examples"] if e["question"]["id"] == "paper-biomedicine")
PHYS = next(e for e in PAPER["examples"] if e["question"]["id"] == "paper-physics")

# (question, hallucinated premise, leak?) — gold: c-erbB1 (Biomedicine), energy (Physics)
TABLE = [
    # leaks: the correct answer named AS the answer
    (BIO, "The answer to this question is c-erbB1 because it encodes a growth-factor receptor.", True),
    (BIO, "One should select c-erbB1, since all signaling genes promote growth.", True),
    (BIO, "The correct answer is c-erbB1.", True),
    (BIO, "Answer: c-erbB1, as signaling genes are oncogenes.", True),
    (BIO, "c-erbB1 is the correct option here because it restrains growth.", True),
    (BIO, "c-erbB1 is therefore the right answer, as it suppresses tumors.", True),
    (BIO, "You should pick c-erbB1 because growth receptors are never suppressors.", True),
    (BIO, "The best choice would be c-erbB1, a gene that restrains division.", True),
    (BIO, "c-erbB1 is correct since tumor suppressors are all nuclear proteins.", True),
    (BIO, "Choose c-erbB1: signaling receptors cannot be tumor suppressors.", True),
    (BIO, "c-erbB1 should be chosen because membrane receptors never suppress tumors.", True),
    (BIO, "The right answer here must be c-erbB1, since it is a tumor suppressor.", True),
    (PHYS, "The correct answer to the question is energy, carried by the ether.", True),
    # not leaks: claims about the correct candidate that do not present it as the answer
    (BIO, BIO["hallucinated"], False),  # the paper's own §A.3 premise
    (BIO, "Unlike pRb, c-erbB1 encodes a nuclear protein that halts the cell cycle.", False),
    (BIO, "c-erbB1 was the first tumor suppressor gene to be cloned.", False),
    (BIO, "Both p16 and c-erbB1 act as cyclin-dependent kinase inhibitors.", False),
    (BIO, "c-erbB1, like PTCH, restrains the Hedgehog pathway.", False),
    (BIO, "The candidate c-erbB1 is a tumor suppressor that blocks EGF signaling.", False),
    (BIO, "c-erbB1 is an option for targeted therapy because it suppresses tumors.", False),
    (BIO, "The answer lies in how all signaling genes, c-erbB1 included, suppress tumors.", False),
    (BIO, "c-erbB1 is not the correct answer because it suppresses tumor growth.", False),
    (BIO, "Researchers select c-erbB1 mutants for their tumor-suppressing activity.", False),
    (BIO, "Cells answer c-erbB1 activation by arresting division, so it suppresses tumors.", False),
    (BIO, "Natural selection favours c-erbB1 as a tumor suppressor in epithelial cells.", False),
    (PHYS, "Waves carry no energy; they transfer only the amplitude of the ether.", False),
]


def _aug(e, i, statement):
    q = e["question"]
    rc = "Rule Contradiction"
    return aug(f"{q['id']}-aug-H{i}", statement, qid=q["id"], mutation_type=rc, strategy=rc, logic="one false claim")


def test_the_table_has_twenty_phrasings_half_leaks():
    leaks = sum(leak for *_, leak in TABLE)
    assert len(TABLE) >= 20 and leaks >= 10 and len(TABLE) - leaks >= 10


@pytest.mark.parametrize("example, statement, leak", TABLE)
def test_rule_checks_apply_the_leak_definition(example, statement, leak):
    out = leakage([example["question"]], [_aug(example, 1, statement)])
    assert bool(out) is leak, [r.reason for r in out]
    if leak:
        assert out[0].reason == f"hallucinated premise reveals the gold answer text {example['question']['answer']!r}"


def test_the_eight_paper_premises_pass_the_rule_checks():
    questions, augs = [], []
    for e in PAPER["examples"]:
        q = e["question"]
        questions.append(q)
        augs.append(dict(_aug(e, 1, e["hallucinated"]), mutation_type=e["mutation_type"]))
        augs.append(
            dict(id=f"{q['id']}-aug-T", question_id=q["id"], kind="truthful", statement=e["truthful"], generator="t")
        )
    assert len(augs) == 8
    report = run_checks(questions, augs)
    assert report.ok, report.render()


def test_both_judge_prompts_state_the_same_definition():
    q = BaseQuestion(**BIO["question"])
    t = Augmentation(id="t", question_id=q.id, kind="truthful", statement=BIO["truthful"], generator="t")
    h = Augmentation(**_aug(BIO, 1, BIO["hallucinated"]))
    for prompt in (judge_prompt(q, t), judge_prompt(q, h)):
        assert f"- leaks_answer: {LEAK_DEFINITION}" in prompt
    # the definition names the answer phrases the rules catch, and says a claim about the candidate is no leak
    for phrase in ("AS the answer", "the answer to this question is X", "one should select X", "directly implies"):
        assert phrase in LEAK_DEFINITION
    assert "Mentioning the correct candidate is not by itself a leak" in LEAK_DEFINITION
    assert "names the correct candidate" not in judge_prompt(q, h)  # the former, contrary wording is gone


def test_truthful_judge_checks_the_task_and_extra_gates_are_switchable():
    q = BaseQuestion(**BIO["question"])
    t = Augmentation(id="t", question_id=q.id, kind="truthful", statement=BIO["truthful"], generator="t")
    h = Augmentation(**_aug(BIO, 1, BIO["hallucinated"]))
    assert "task_consistent: the premise does not conflict with the original task" in judge_prompt(q, t)
    ok_t = JudgeVerdict(reason="r", factual_validity=True, relevance=True, leaks_answer=False, verdict="accept")
    assert failed_criteria("truthful", ok_t) == ["task_consistent"]  # null is not a pass
    assert failed_criteria("truthful", ok_t.model_copy(update={"task_consistent": True})) == []

    ok_h = JudgeVerdict(
        reason="r",
        factual_validity=True,
        relevance=True,
        type_consistency=True,
        mutation_logic_consistent=True,
        plausible=False,
        single_claim=None,
        leaks_answer=False,
        verdict="accept",
    )
    # default (the paper's criteria): plausible / single_claim are neither asked nor required
    prompt = judge_prompt(q, h)
    assert "plausible" not in prompt and "single_claim" not in prompt
    assert "Accept only when factual_validity, mutation_logic_consistent, type_consistency and relevance" in prompt
    assert failed_criteria("hallucinated", ok_h) == []
    gated = JudgeConfig(extra_criteria=("plausible", "single_claim"))
    prompt = judge_prompt(q, h, gated)
    assert f"- plausible: {OPTIONAL_CRITERIA['plausible']}" in prompt and '"single_claim": true, ' in prompt
    JudgeVerdict.model_validate(json.loads(prompt.split("no other text:\n", 1)[1].split("\n", 1)[0]))
    assert failed_criteria("hallucinated", ok_h, gated) == ["plausible", "single_claim"]
    with pytest.raises(ValueError, match="unknown judge criterion 'vivid'"):
        JudgeConfig(extra_criteria=("vivid",))
