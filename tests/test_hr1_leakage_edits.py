"""The lexical near-duplicate stage for short questions (issue 19 item 5), measured on ../shared/data: one-word
edits (with case / punctuation changes) of TruthfulQA- and SimpleQuestions-length questions are caught with
``semantic=False`` (>= 19 of 20; character 5-gram shingles alone catch about half), and no pair of different
SimpleQuestions questions is flagged. bench/leakage.py prints the same numbers."""

from __future__ import annotations

import pytest

from phr.builders.hr1_sources import load_simplequestions, load_truthfulqa
from phr.validation.hr1_leakage import LeakageConfig, TrainRow, find_leaks, keeps_the_question
from phr.validation.hr1_leakage_probe import caught_edits, false_positives
from tests.support.data import SHARED as DATA
from tests.support.data import missing

pytestmark = pytest.mark.skipif(bool(missing("truthfulqa") or missing("simplequestions")), reason="no shared data")
LEXICAL = LeakageConfig(semantic=False)
WITHOUT = LeakageConfig(semantic=False, one_word_edits=False)


@pytest.fixture(scope="module")
def sources():
    return {
        "truthfulqa": [q.question for q in load_truthfulqa(DATA / "truthfulqa").questions],
        "simplequestions": [q.question for q in load_simplequestions(DATA / "simplequestions").questions],
    }


@pytest.mark.parametrize("source", ["truthfulqa", "simplequestions"])
@pytest.mark.parametrize("seed", [0, 1])
def test_one_word_edits_are_caught_without_minilm(sources, source, seed):
    m = caught_edits(sources[source], 20, seed, LEXICAL)
    assert m.caught >= 19, m.missed
    assert caught_edits(sources[source], 20, seed, WITHOUT).caught <= 14  # shingles alone: the failure


def test_no_false_positives_among_distinct_simplequestions(sources):
    n, leaks = false_positives(sources["simplequestions"], LEXICAL)
    assert n == 4199  # distinct normalised questions, even checked against odd
    # the one pair flagged asks the same thing ("who plays the piano" / "who plays piano"): not a false positive
    assert [(x.check, x.detail, x.text, x.eval_text) for x in leaks] == [
        ("one_word_edit", "'the' -> '(none)'", "who plays the piano", "who plays piano")
    ]
    n, leaks = false_positives(sources["simplequestions"][:1500], LEXICAL)
    assert n >= 1000 and leaks == []


def test_entity_swaps_stay_apart_and_rewordings_are_caught():
    evals = {"sq": [("e0", "who was born in cairo"), ("e1", "which military personnel was involved in world war ii"),
                    ("e2", "Name a drama film"), ("e3", "what is the mouth of the roanoke river")]}  # fmt: skip
    rows = [
        TrainRow("swap", "Who was born in Boston?", "t0"),  # a different question: never a near-duplicate
        TrainRow("frame", "WHAT military personnel was involved in World War II", "t1"),
        TrainRow("typo", "who was born in ciaro", "t2"),
        TrainRow("frame2", "what's a drama film?", "t3"),
        TrainRow("river", "What is the mouth of the schuylkill river?", "t4"),  # entity swap, 8 words
    ]
    got = {(x.row_id, x.check, x.eval_id, x.detail) for x in find_leaks(rows, evals, LEXICAL)}
    assert got == {
        ("frame", "near_duplicate", "e1", ""),  # long enough for the shingles (Jaccard 0.82)
        ("typo", "one_word_edit", "e0", "'ciaro' -> 'cairo'"),
        ("frame2", "one_word_edit", "e2", "'whats' -> 'name'"),
    }
    cfg = LeakageConfig()
    assert keeps_the_question("the", "", 3, cfg) and not keeps_the_question("cairo", "boston", 5, cfg)
    assert not keeps_the_question("1921", "1971", 6, cfg)  # numbers are never typos
    assert keeps_the_question("watermelon", "", 9, cfg) and not keeps_the_question("watermelon", "", 7, cfg)
