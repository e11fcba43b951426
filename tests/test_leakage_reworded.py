"""The `reworded` split-leakage stage (validation/hr1_reworded.py): recall on the packaged hand-written rewordings
of evaluation questions (validation/data/reworded_questions.jsonl) >= 90 % where MiniLM alone at its 0.85
threshold stays below it, no hard negative (same topic, another question) flagged by the stage, and no flag on
1,000 real training rows: SimpleQuestions stand-in train questions (even rows of ../shared/data's test file)
that today's checks pass, screened against the odd rows of the same lines (docs/hr1.md, "Split leakage")."""

import csv
from fractions import Fraction

import pytest

from phr.validation.hr1_leakage import LeakageConfig, TrainRow, check_split_leakage, find_leaks, normalize
from phr.validation.hr1_reworded import Analyser, labelled_pairs, numbers, same_question
from tests.support.data import SHARED, needs

LINES = 2400  # the first lines of the SimpleQuestions test file: even -> training rows, odd -> evaluation questions
CLEAN = 1000
STAGE_OFF = LeakageConfig(reworded=False)


def _groups() -> list[dict]:
    return labelled_pairs()


def test_labelled_set_is_large_enough_and_well_formed():
    groups = _groups()
    same = [t for g in groups for t in g["same"]]
    different = [d for g in groups for d in g["different"]]
    assert len(same) >= 60 and len(different) >= 40
    assert {g["style"] for g in groups} == {"factoid", "truthfulqa", "math", "science"}
    assert len({g["id"] for g in groups}) == len(groups)
    assert all(d["why"] and d["text"] for d in different)
    assert len({normalize(t) for t in same}) == len(same)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("two and a half hours at sixty miles an hour", {Fraction(5, 2), 60}),
        ("sells three quarters of the thirty-six muffins", {Fraction(3, 4), 36}),
        ("sells 3/4 of the 36 muffins", {Fraction(3, 4), 36}),
        ("a dozen pencils, twice as old", {12, 2}),
        ("$240 bike, fifteen dollars a week, 1,500 km", {240, 15, 1500}),
        ("after 8pm / after eight in the evening", {8}),
        ("the largest one that is not located on water", set()),
    ],
)
def test_numbers_in_digits_and_words(text, expected):
    assert numbers(text) == frozenset(Fraction(x) for x in expected)


@pytest.mark.parametrize(
    ("train", "question", "same"),
    [
        ("Leo Erdody breathed his last in which city?", "which city did leo erdody die", True),
        ("Which city was Leo Erdody born in?", "which city did leo erdody die", False),  # another relation
        ("In which city did Leo Erdody pass away?", "which city did leo erdovy die", True),  # a typo
        ("Name a person who died in Uppsala", "Name a person who died in Helsinki", False),  # another entity
        ("Tom has twelve pencils and gives 5 away. How many pencils remain?",
         "Tom has 12 pencils and gives five away. How many pencils are left?", True),
        ("Tom has twelve pencils and gives 6 away. How many pencils remain?",
         "Tom has 12 pencils and gives five away. How many pencils are left?", False),  # other numbers
    ],
)  # fmt: skip
def test_same_question_by_words(train, question, same):
    a, b = Analyser()([train, question])
    assert same_question(a, b) is same


def test_config_bounds():
    with pytest.raises(ValueError, match="reworded_floor"):
        LeakageConfig(reworded_floor=0.9)  # above semantic_threshold
    with pytest.raises(ValueError, match="reworded_candidates"):
        LeakageConfig(reworded_candidates=0)
    with pytest.raises(ValueError, match="semantic_threshold"):
        LeakageConfig(semantic_threshold=1.5)


def _stand_in_halves() -> tuple[list[tuple[int, str]], list[tuple[int, str]]]:
    """(line, question) of the first LINES lines of the SimpleQuestions test file: even lines, odd lines."""
    path = SHARED / "simplequestions" / "annotated_wd_data_test_answerable.txt"
    with path.open(encoding="utf-8", newline="") as f:
        rows = [(i, " ".join(r[3].split())) for i, r in enumerate(csv.reader(f, delimiter="\t")) if i < LINES]
    return [r for r in rows if r[0] % 2 == 0], [r for r in rows if r[0] % 2 == 1]


@pytest.fixture(scope="module")
def measured():
    """One MiniLM pass (embeddings are cached per process), then the screen with the stage off and on."""
    groups = _groups()
    even, odd = _stand_in_halves()
    labelled = {normalize(g["question"]) for g in groups}
    evals = {
        "labelled": [(g["id"], g["question"]) for g in groups],
        "sq-test (odd lines)": [(f"sq-{i}", q) for i, q in odd if normalize(q) not in labelled],
    }
    # the rewordings of one question are one training question (its paraphrases share the question id)
    pos = [TrainRow(f"{g['id']}/s{k}", t, f"pos-{g['id']}") for g in groups for k, t in enumerate(g["same"])]
    neg = [TrainRow(f"{g['id']}/d{k}", d["text"], f"neg-{g['id']}-{k}") for g in groups for k, d in enumerate(g["different"])]  # fmt: skip
    real = [TrainRow(f"sq-{i}", q, f"sq-{i}") for i, q in even if normalize(q) not in labelled]
    rows = pos + neg + real
    off, on = find_leaks(rows, evals, STAGE_OFF), find_leaks(rows, evals, LeakageConfig())
    flagged_today = {x.row_id for x in off}
    clean = [r.row_id for r in real if r.row_id not in flagged_today][:CLEAN]

    def recall(leaks) -> float:
        hit = {x.row_id for x in leaks if x.eval_set == "labelled" and x.eval_id == x.row_id.split("/")[0]}
        return sum(r.row_id in hit for r in pos) / len(pos)

    return {"pos": pos, "neg": neg, "clean": clean, "off": off, "on": on, "recall": recall, "evals": evals}


@needs("simplequestions")
def test_recall_at_least_90_percent_only_with_the_stage(measured):
    on, off = measured["recall"](measured["on"]), measured["recall"](measured["off"])
    assert on >= 0.9, f"recall with the reworded stage {on:.3f}"
    assert off < 0.9, f"MiniLM alone already reaches {off:.3f}: the labelled set no longer tests the stage"
    assert on > off


@needs("simplequestions")
def test_no_flag_on_1000_clean_training_rows(measured):
    clean = set(measured["clean"])
    assert len(clean) == CLEAN
    assert [x for x in measured["on"] if x.row_id in clean] == []


@needs("simplequestions")
def test_hard_negatives_not_flagged_by_the_stage(measured):
    neg = {r.row_id for r in measured["neg"]}
    assert [(x.text, x.eval_text) for x in measured["on"] if x.row_id in neg and x.check == "reworded"] == []


@needs("simplequestions")
def test_reworded_leaks_are_named_and_reported(measured):
    reworded = [x for x in measured["on"] if x.check == "reworded"]
    assert reworded and all(x.eval_set == "labelled" and x.detail.startswith("words ") for x in reworded)
    leak = next(x for x in reworded if x.text == "Saskatchewan's seat of government is in which city?")
    assert leak.eval_text == "What is the capital of Saskatchewan?" and 0.65 <= leak.similarity < 0.85
    pos = {r.row_id: r for r in measured["pos"]}
    report = check_split_leakage([pos[leak.row_id]], measured["evals"])
    (rejection,) = report.for_row(leak.row_id)
    assert rejection.check == "leakage:reworded" and "rewords (MiniLM cosine" in rejection.reason
