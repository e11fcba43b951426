"""Split leakage: planted exact / near-duplicate / paraphrase overlaps with real SimpleQuestions and TruthfulQA
questions (../shared/data) are caught with the training row and evaluation id named; different questions are not."""

from pathlib import Path

import pytest

from phr.builders.hr1_sources import load_simplequestions, load_truthfulqa, stand_in_split
from phr.hr1.ids import legacy_map
from phr.validation.hr1_leakage import (
    LeakageConfig,
    TrainRow,
    check_corpus_folder,
    check_split_leakage,
    find_leaks,
    normalize,
)
from tests.support.data import SHARED as DATA
from tests.support.data import missing
from tests.support.hr1_corpora import ROWS, make_folder

PARAPHRASES = Path(__file__).parent / "fixtures" / "hr1_leakage_paraphrases.tsv"
LEXICAL = LeakageConfig(semantic=False)
needs_data = pytest.mark.skipif(bool(missing("simplequestions")), reason=str(missing("simplequestions")))


@pytest.fixture(scope="module")
def sq():
    return load_simplequestions(DATA / "simplequestions")


@pytest.fixture(scope="module")
def evals(sq):
    tqa = load_truthfulqa(DATA / "truthfulqa").questions
    return {
        "simplequestions-test": [(q.id, q.question) for q in sq.questions],
        "truthfulqa": [(q.id, q.question) for q in tqa],
    }


@pytest.fixture(scope="module")
def ids(sq):
    """{old positional id: content id}: the expected ids below are written as rows of the files."""
    return legacy_map([*sq.questions, *load_truthfulqa(DATA / "truthfulqa").questions])


def _pairs(leaks):
    return {(x.row_id, x.check, x.eval_set, x.eval_id) for x in leaks}


def test_normalize():
    assert normalize("  What's  the ＣＡＰＩＴＡＬ of\tFrance?! ") == "whats the capital of france"
    assert normalize("Where did roger marquis die") == normalize("WHERE did Roger Marquis die?")
    assert normalize("snake_case—dash") == "snake case dash"


@needs_data
def test_planted_exact_and_near_duplicate_and_provenance(evals, ids):
    train = [
        TrainRow("t-exact", "WHERE did Roger Marquis die?", "simplequestions-train-0"),
        TrainRow("t-near", "which military personel was involved in world war ii", "simplequestions-train-1"),
        TrainRow("t-prov", "Which organisation did J. A. Folger set up?", ids["simplequestions-test-31"]),
        TrainRow("t-clean", "Who wrote the novel middlemarch?", "simplequestions-train-3"),
    ]
    leaks = find_leaks(train, evals, LEXICAL)
    assert _pairs(leaks) == {
        ("t-exact", "exact", "simplequestions-test", ids["simplequestions-test-0"]),
        ("t-near", "near_duplicate", "simplequestions-test", ids["simplequestions-test-3196"]),
        ("t-prov", "provenance", "simplequestions-test", ids["simplequestions-test-31"]),
    }
    near = next(x for x in leaks if x.check == "near_duplicate")
    assert near.eval_text == "which military personnel was involved in world war ii"  # one letter dropped
    assert 0.8 <= near.similarity < 1
    report = check_split_leakage(train, evals, LEXICAL)
    assert not report.ok and report.rejected_ids() == {"t-exact", "t-near", "t-prov"}
    msg = report.for_row("t-near")[0]
    assert msg.check == "leakage:near_duplicate" and ids["simplequestions-test-3196"] in msg.reason


def _small(evals):
    """The first 500 SimpleQuestions and 100 TruthfulQA questions (they hold every paraphrased source question)
    keep the MiniLM tests fast."""
    return {"simplequestions-test": evals["simplequestions-test"][:500], "truthfulqa": evals["truthfulqa"][:100]}


def _paraphrases():
    rows = [line.rstrip("\n").split("\t") for line in PARAPHRASES.read_text().splitlines() if line[:1] != "#"]
    return [(qid, q, p) for qid, q, p in rows]


@needs_data
def test_real_paraphrases_caught_by_meaning_without_provenance(evals, ids):
    """The training rows carry a different question id, so only the MiniLM check can find them; 20 of the 23
    hand-written paraphrases reach the 0.85 threshold (docs/hr1.md), each named with its own source question."""
    paras = _paraphrases()
    train = [TrainRow(f"para-{i}", p, f"simplequestions-train-{i}") for i, (_, _, p) in enumerate(paras)]
    leaks = find_leaks(train, _small(evals), LeakageConfig())
    sem = {x.row_id: x for x in leaks if x.check == "semantic"}
    caught = {f"para-{i}": ids[qid] for i, (qid, _, _) in enumerate(paras) if f"para-{i}" in sem}
    assert len(caught) == 20
    assert all(sem[r].eval_id == qid for r, qid in caught.items())
    roger = sem["para-0"]
    assert (roger.text, roger.eval_id, roger.eval_set) == (
        "In which place did Roger Marquis pass away?",
        ids["simplequestions-test-0"],
        "simplequestions-test",
    )
    assert roger.similarity == pytest.approx(0.928, abs=0.01)
    # below 0.85, the reworded stage (tests/test_leakage_reworded.py) finds the one its words show, at its source
    rew = [(x.text, x.eval_id) for x in leaks if x.check == "reworded"]
    assert rew == [("What does Angie Estes do for a living?", ids["simplequestions-test-8"])]
    assert {x.check for x in leaks} == {"semantic", "reworded"}


@needs_data
def test_paraphrase_with_its_source_id_caught_by_provenance_first(evals, ids):
    train = [
        TrainRow(
            "simplequestions-test-0-p0", "In which place did Roger Marquis pass away?", ids["simplequestions-test-0"]
        )
    ]
    leaks = find_leaks(train, _small(evals), LeakageConfig())
    # the same (row, evaluation question) pair is reported once, by provenance (semantic would find it too)
    assert _pairs(leaks) == {
        ("simplequestions-test-0-p0", "provenance", "simplequestions-test", ids["simplequestions-test-0"])
    }


@needs_data
def test_different_real_questions_are_clean(sq, evals):
    """TruthfulQA questions as training rows against the SimpleQuestions test file: nothing in common."""
    tqa = evals["truthfulqa"][100:250]
    train = [TrainRow(f"tr-{qid}", text, f"tr-{qid}") for qid, text in tqa]
    assert find_leaks(train, {"simplequestions-test": evals["simplequestions-test"][:500]}, LeakageConfig()) == []


@needs_data
def test_stand_in_split_flags_only_genuine_duplicates(sq, ids):
    """SimpleQuestions' even/odd stand-in halves (lexical checks): the flagged pairs are the file's own
    repeated questions (same text up to case/punctuation), one one-word rewording and one article apart."""
    train, test = stand_in_split(sq)
    rows = [TrainRow(q.id, q.question, q.id) for q in train.questions]
    leaks = find_leaks(rows, {"sq-test": [(q.id, q.question) for q in test.questions]}, LEXICAL)
    assert all(normalize(x.text) == normalize(x.eval_text) for x in leaks if x.check == "exact")
    assert {normalize(x.text) for x in leaks if x.check == "exact"} == {
        "who plays the piano",
        "what album was produced by kaci brown",
        "name an actor",
        "who was born in chicago",
        "who was born in prague",
        "what is a drama film",
    }
    assert [(x.row_id, x.eval_id) for x in leaks if x.check == "near_duplicate"] == [
        (
            ids["simplequestions-test-3196"],
            ids["simplequestions-test-3817"],
        )  # which / what military personnel ... ww ii
    ]
    assert [(x.text, x.eval_text) for x in leaks if x.check == "one_word_edit"] == [
        ("Who plays piano?", "who plays the piano?")  # the same question, one article apart
    ]
    assert len(leaks) == 22


@needs_data
def test_corpus_folder_rows_checked(tmp_path, evals, ids):
    rows = ROWS["hr1-sft"]()
    rows[0]["question_id"] = ids["simplequestions-test-0"]  # built from an evaluation question
    folder = make_folder(tmp_path, "hr1-sft", rows)
    report = check_corpus_folder(folder, "hr1-sft", evals, LEXICAL)
    assert {(r.row_id, r.check) for r in report} == {
        ("simplequestions-train-0-p0", "leakage:provenance"),
        ("simplequestions-train-0-p0 (question)", "leakage:exact"),
    }
    grpo = make_folder(tmp_path / "g", "hr1-grpo")
    got = {(r.row_id, r.check) for r in check_corpus_folder(grpo, "hr1-grpo", evals, LEXICAL)}
    assert got == {("p0", "leakage:exact"), ("p1", "leakage:exact")}  # both ask simplequestions-test-0
    assert check_corpus_folder(make_folder(tmp_path / "p", "hr1-paraphrases"), "hr1-paraphrases", {}, LEXICAL).ok
