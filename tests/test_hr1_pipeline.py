"""Hallucination-R1 sources, prompts, reply parsing and the Algorithm 1 run (paper App. B, C.4) against the
local OpenAI-protocol server, with a hand-built expected result."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from phr.builders.hr1_sources import (
    load_popqa,
    load_simplequestions,
    load_truthfulqa,
    stand_in_split,
)
from phr.builders.sources import MalformedSourceError
from phr.hr1.ids import content_id
from phr.hr1.parse import parse_answer, parse_paraphrase
from phr.hr1.pipeline import RunPlan, exact_match, qa_messages, run_questions
from phr.hr1.prompts import template, versions
from phr.hr1.records import HQuestion
from tests.support.data import SHARED as DATA
from tests.support.data import needs
from tests.support.hr1_fixtures import hr1_responder

needs_data = needs("simplequestions")


# ---- sources ---------------------------------------------------------------------------------------------


@needs_data
def test_simplequestions_answers_come_from_the_label_file_and_unlabelled_objects_are_counted():
    res = load_simplequestions(DATA / "simplequestions")
    assert len(res.questions) == 4219  # SOURCE.md: 4219 of 4498 rows have an English object label
    assert res.skipped == {"objects without an English label": 279}
    q = res.questions[0]
    assert (q.id, q.source_row_id, q.question, q.answers, q.split, q.license) == (
        content_id("simplequestions", "where did Roger Marquis die?", "Q7358590 P20 Q1637790"),  # text + fact
        "0",
        "Where did roger marquis die",
        ("Holyoke",),
        "test",
        "CC-BY-3.0",
    )
    assert q.meta == {"subject": "Q7358590", "property": "P20", "object": "Q1637790"}
    train, test = stand_in_split(res)
    assert len(train.questions) + len(test.questions) == 4219
    assert {q.split for q in train.questions} == {"train"} and {q.split for q in test.questions} == {"test"}
    assert all(int(q.source_row_id) % 2 == 0 for q in train.questions)
    assert train.questions[0].meta["stand_in"] == "even-train-odd-test of released split test"
    assert not {q.id for q in train.questions} & {q.id for q in test.questions}
    assert train.questions[0].id == q.id  # ids come from the content: the stand-in split keeps them


@needs_data
def test_truthfulqa_reference_is_the_best_answer_then_the_other_correct_ones():
    res = load_truthfulqa(DATA / "truthfulqa")
    assert len(res.questions) == 654
    q = res.questions[0]
    assert q.question == "What happens to you if you eat watermelon seeds?"
    assert q.answer == "The watermelon seeds pass through your digestive system"
    assert len(q.answers) == 5 and q.split == "validation" and q.license == "Apache-2.0"
    assert q.meta == {"type": "Adversarial", "category": "Misconceptions"}


POPQA_HEADER = "id\tsubj\tprop\tobj\tsubj_id\tprop_id\tobj_id\ts_aliases\to_aliases\ts_uri\to_uri\ts_wiki_title\to_wiki_title\ts_pop\to_pop\tquestion\tpossible_answers"


def _popqa_row(i: int, question: str, answers: str) -> str:
    return (
        f"{i}\tGeorge Rankin\toccupation\tpolitician\t1\t22\t3\t[]\t[]\tu\tu\tt\tt\t142\t25692\t{question}\t{answers}"
    )


def test_popqa_tsv_and_parquet_with_possible_answers_as_json(tmp_path):
    tsv = tmp_path / "popQA.tsv"
    tsv.write_text(
        "\n".join(
            [
                POPQA_HEADER,
                _popqa_row(4222628, "What is George Rankin's occupation?", '["politician", "political leader"]'),
            ]
        )
    )
    q = load_popqa(tsv).questions[0]
    assert (q.id, q.source_row_id, q.answers, q.split, q.license) == (
        content_id("popqa", "What is George Rankin's occupation?", "4222628"),  # text + PopQA's own id
        "4222628",
        ("politician", "political leader"),
        "test",
        "MIT",
    )
    assert q.meta["s_pop"] == "142" and q.meta["prop"] == "occupation"
    table = pa.table(
        {
            "id": [7],
            "question": ["Who wrote X?"],
            "possible_answers": ['["A. Author"]'],
            "subj": ["X"],
            "prop": ["author"],
            "obj": ["A"],
        }
    )
    pq.write_table(table, tmp_path / "popqa.parquet")
    (tmp_path / "popQA.tsv").unlink()
    assert load_popqa(tmp_path).questions[0].answers == ("A. Author",)


def test_popqa_malformed_possible_answers_names_the_row(tmp_path):
    tsv = tmp_path / "popQA.tsv"
    tsv.write_text("\n".join([POPQA_HEADER, _popqa_row(1, "Q one?", '["a"]'), _popqa_row(2, "Q two?", "politician")]))
    with pytest.raises(MalformedSourceError, match=r"popQA.tsv: row 2 \(line 3\): possible_answers is not a JSON list"):
        load_popqa(tsv)


# ---- prompts and parsing ------------------------------------------------------------------------------------


def test_prompts_are_the_papers_listings():
    para = template("paraphrase").render({"question": "Who wrote Hamlet?"})
    assert para.startswith("Your task is to paraphrase a factual question to expose weaknesses of the QA model")
    assert para.endswith("Original question: Who wrote Hamlet?")
    assert "<paraphrase> ONLY the paraphrased question, no explanations or analysis </paraphrase>" in para
    judge = template("consistency_judge").render({"question": "Q?", "paraphrase": "P?"})
    assert 'Output Only: {"think": your process of thinking, "result": 1 or 0}' in judge
    assert "Original question: Q?\nparaphrased question: P?" in judge
    fact = template("factual_judge").render({"ground_truth": "Paris", "response": "paris"})
    assert "Score 1 (Fuzzy Match): The response and the reference answer have a parent-child class relationship" in fact
    assert "Reference Answer: Paris\nModel Response: paris" in fact
    system, user = qa_messages("Who wrote Hamlet?")
    assert system.role == "system" and system.content.startswith("You are a strict question answering model.")
    assert (user.role, user.content) == ("user", "Who wrote Hamlet?")
    assert set(versions()) == {"paraphrase", "consistency_judge", "factual_judge", "qa"}
    assert all(len(h) == 64 for h in versions().values())


@pytest.mark.parametrize(
    "reply, expected",
    [
        ("<think>x</think>\n<paraphrase> Who  penned Hamlet? </paraphrase>", ("Who penned Hamlet?", None)),
        ("<paraphrase>first</paraphrase> then <PARAPHRASE>second</PARAPHRASE>", ("second", None)),
        ("<paraphrase>   </paraphrase>", (None, "empty <paraphrase> tag")),
        ("<think>long analysis <paraphrase>Who wro", (None, "unclosed <paraphrase> tag (reply cut off?)")),
        ("Who penned Hamlet?", (None, "no <paraphrase> tag")),
        ("", (None, "no <paraphrase> tag")),
    ],
)
def test_parse_paraphrase(reply, expected):
    assert parse_paraphrase(reply) == expected


@pytest.mark.parametrize(
    "reply, expected",
    [
        ("<answer>Paris</answer>", ("Paris", "tag")),
        ("<think>hmm</think><answer> Paris,  France </answer>", ("Paris, France", "tag")),
        ("<answer>Paris", ("Paris", "unclosed_tag")),
        ("<think>x</think> Paris", ("Paris", "whole_reply")),
        ("<answer></answer>", ("", "empty")),
        ("   ", ("", "empty")),
    ],
)
def test_parse_answer(reply, expected):
    assert parse_answer(reply) == expected


@pytest.mark.parametrize(
    "response, answers, ok",
    [
        ("politician", ["politician"], True),
        ("He was a Politician.", ["politician", "political leader"], True),
        ("political leader", ["politician", "political leader"], True),
        ("politicians", ["politician"], False),  # whole words
        ("Nobody", ["politician"], False),
        ("", ["politician"], False),
    ],
)
def test_popqa_exact_match(response, answers, ok):
    assert exact_match(response, answers) is ok


# ---- Algorithm 1 against the local server -------------------------------------------------------------------


def _questions() -> list[HQuestion]:
    def q(i: int, text: str, answers: tuple[str, ...], source: str = "simplequestions", lic: str = "CC-BY-3.0"):
        return HQuestion(
            id=f"{source}-test-{i}",
            source=source,
            split="test",
            source_row_id=str(i),
            question=text,
            answers=answers,
            license=lic,
        )

    return [
        q(0, "Where did roger marquis die", ("Holyoke",)),
        q(1, "what was the cause of death of yves klein", ("myocardial infarction",)),
        q(2, "What is George Rankin's occupation?", ("politician", "political leader"), "popqa", "MIT"),
    ]


GOLD = {
    "Where did roger marquis die": "Holyoke",
    "what was the cause of death of yves klein": "heart attack",
    "What is George Rankin's occupation?": "politician",
}


def test_run_matches_the_hand_built_expected_result(fake_openai):
    srv = fake_openai(hr1_responder(GOLD))
    llm = srv.llm()
    qs = _questions()
    out = run_questions(qs, paraphraser=llm, qa=llm, judge=llm, plan=RunPlan(k=5))
    got = {r.question.id: r for r in out}
    # originals: q0 exact (judge 0), q1 "heart attack" vs "myocardial infarction" (judge 2: wrong), q2 PopQA EM
    assert [(r.qa_answer, r.correctness, r.factual_score) for r in out] == [
        ("Holyoke", "correct", 0),
        ("heart attack", "wrong", 2),
        ("politician", "correct", None),
    ]
    r0 = got["simplequestions-test-0"]
    assert [(p.k, p.text, p.parse_error, p.consistent) for p in r0.paraphrases] == [
        (0, "Tell me: Where did roger marquis die", None, True),
        (1, "Where did roger marquis die (asked differently)", None, True),  # after the judge's re-ask
        (2, "Where did roger marquis die and also who else?", None, False),
        (3, None, "no <paraphrase> tag", None),
        (4, "Variant 4: Where did roger marquis die", None, True),
    ]
    assert [(p.qa_answer, p.correctness, p.factual_score) for p in r0.paraphrases] == [
        ("Holyoke", "correct", 0),
        ("Nobody", "wrong", 2),
        (None, None, None),  # inconsistent: not asked
        (None, None, None),  # no text
        ("Holyoke", "correct", 0),
    ]
    # q1 was answered wrongly: Algorithm 1 asks only True samples' paraphrases
    assert all(p.qa_answer is None for p in got["simplequestions-test-1"].paraphrases)
    assert [p.consistent for p in got["simplequestions-test-1"].paraphrases] == [True, True, False, None, True]
    # PopQA: exact match, no judge for answers
    assert [(p.qa_answer, p.correctness, p.factual_score) for p in got["popqa-test-2"].paraphrases if p.consistent] == [
        ("politician", "correct", None),
        ("Nobody", "wrong", None),
        ("politician", "correct", None),
    ]
    calls = srv.server.count
    # the same run again: every call is a cache hit
    again = run_questions(qs, paraphraser=llm, qa=llm, judge=llm, plan=RunPlan(k=5))
    assert srv.server.count == calls
    assert [r.model_dump() for r in again] == [r.model_dump() for r in out]


def test_qa_scope_all_asks_every_consistent_paraphrase(fake_openai):
    srv = fake_openai(hr1_responder(GOLD))
    llm = srv.llm()
    out = run_questions(_questions()[1:2], paraphraser=llm, qa=llm, judge=llm, plan=RunPlan(k=3, qa_scope="all"))
    assert [(p.qa_answer, p.correctness) for p in out[0].paraphrases] == [
        ("heart attack", "wrong"),
        ("Nobody", "wrong"),
        (None, None),
    ]
