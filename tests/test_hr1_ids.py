"""H-R1 question ids from content (issue 19 item 4): two different files of one source (made from ../shared/data:
reordered, subset, case and spacing changed) give the same question the same id and different questions
different ids, so split leakage's provenance means "the same question": the 24 packaged smoke questions are
not flagged against a held-out TruthfulQA file that does not contain them (the old positional ids flagged
24 of 24). Old corpora keep loading; their ids map to the new ones with ``legacy_map``."""

from __future__ import annotations

import csv
import shutil

import pytest

from phr.builders.hr1 import smoke_questions
from phr.builders.hr1_sources import load_simplequestions, load_truthfulqa
from phr.hr1.ids import content_id, legacy_id, legacy_map, normalize_text
from phr.validation.hr1_leakage import LeakageConfig, TrainRow, find_leaks
from tests.support.data import SHARED as DATA
from tests.support.data import missing

pytestmark = pytest.mark.skipif(bool(missing("truthfulqa") or missing("simplequestions")), reason="no shared data")
LEXICAL = LeakageConfig(semantic=False)


def _tqa_rows() -> tuple[list[str], list[dict]]:
    with open(DATA / "truthfulqa" / "TruthfulQA.csv", newline="", encoding="utf-8") as fh:
        reader = csv.DictReader(fh)
        return list(reader.fieldnames or []), list(reader)


def _write_tqa(path, header, rows):
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(fh, fieldnames=header)
        w.writeheader()
        w.writerows(rows)
    return path


def test_truthfulqa_two_files_same_question_same_id(tmp_path):
    header, rows = _tqa_rows()
    full = load_truthfulqa(DATA / "truthfulqa").questions
    # another file of the source: every third row, in reverse order, upper-cased with extra spaces for some
    other = [dict(r) for r in rows[::3]][::-1]
    for r in other[::2]:
        r["Question"] = "  " + r["Question"].upper().replace(" ", "  ")
    other.append({**rows[0], "Question": rows[0]["Question"].replace("watermelon", "pumpkin")})  # a new question
    second = load_truthfulqa(_write_tqa(tmp_path / "b" / "TruthfulQA.csv", header, other)).questions
    by_text = {normalize_text(q.question): q.id for q in full}
    assert len(by_text) == len({q.id for q in full}) == 654  # different questions, different ids
    same = [q for q in second if normalize_text(q.question) in by_text]
    assert len(same) == len(rows[::3]) == 218
    assert all(q.id == by_text[normalize_text(q.question)] for q in same)  # same question, same id
    assert [q.source_row_id for q in same[:2]] == ["0", "1"]  # ... whatever its row in this file
    new = second[-1]
    assert new.question.startswith("What happens to you if you eat pumpkin") and new.id not in set(by_text.values())
    # the old positional ids named different questions in the two files
    old_full = {legacy_id(q.source, q.split, q.source_row_id): q.question for q in full}
    clashes = [q for q in second if old_full.get(legacy_id(q.source, q.split, q.source_row_id), "") != q.question]
    assert len(clashes) > 200


def test_simplequestions_two_files_same_question_same_id(tmp_path):
    src = DATA / "simplequestions"
    lines = (src / "annotated_wd_data_test_answerable.txt").read_text(encoding="utf-8").splitlines()
    other = tmp_path / "sq"
    other.mkdir()
    shutil.copy(src / "reverse_vocab_wikidata_en.json", other)
    subset = lines[1::2][::-1]  # the odd rows, reversed
    (other / "annotated_wd_data_test_answerable.txt").write_text("\n".join(subset) + "\n", encoding="utf-8")
    full = load_simplequestions(src).questions
    second = load_simplequestions(other).questions
    ids = {q.id: q for q in full}
    assert len(ids) == len(full) == 4219  # "Name an actor." x 7: told apart by their subject/property/object
    assert all(q.id in ids and ids[q.id].question == q.question and ids[q.id].answers == q.answers for q in second)
    assert len(second) == len({q.id for q in second}) > 2000
    actors = [q for q in full if normalize_text(q.question) == "name an actor"]
    assert len(actors) == 7 and len({q.id for q in actors}) == 7


def test_smoke_questions_are_not_flagged_against_a_held_out_file_without_them(tmp_path):
    header, rows = _tqa_rows()
    smoke = smoke_questions().questions
    assert len(smoke) == 24
    theirs = {normalize_text(q.question) for q in smoke}
    held_out_rows = [r for r in rows if normalize_text(r["Question"]) not in theirs][::-1]
    held_out = load_truthfulqa(_write_tqa(tmp_path / "held-out" / "TruthfulQA.csv", header, held_out_rows)).questions
    train = [TrainRow(q.id, q.question, q.id) for q in smoke]
    evals = {"truthfulqa-held-out": [(q.id, q.question) for q in held_out]}
    assert find_leaks(train, evals, LEXICAL) == []
    # the old positional ids: every smoke question "was" a held-out question by id (issue 19: 24 of 24)
    old = [TrainRow(q.id, q.question, legacy_id(q.source, q.split, q.source_row_id)) for q in smoke]
    old_evals = {"truthfulqa-held-out": [(legacy_id(q.source, q.split, q.source_row_id), q.question) for q in held_out]}
    assert len([x for x in find_leaks(old, old_evals, LEXICAL) if x.check == "provenance"]) == 24
    # and a file that does hold one of them flags it by provenance: the same question
    with_one = load_truthfulqa(_write_tqa(tmp_path / "with-one" / "TruthfulQA.csv", header, held_out_rows + [
        next(r for r in rows if normalize_text(r["Question"]) == normalize_text(smoke[0].question))]))  # fmt: skip
    para = [TrainRow(f"{smoke[0].id}-p0", "A paraphrase in other words entirely", smoke[0].id)]
    leaks = find_leaks(para, {"tqa": [(q.id, q.question) for q in with_one.questions]}, LEXICAL)
    assert [(x.check, x.eval_id) for x in leaks] == [("provenance", smoke[0].id)]


def test_content_id_rule_and_the_legacy_map():
    a = content_id("truthfulqa", "What's the capital of France?")
    assert a == content_id("truthfulqa", "  WHATS the capital of  france ") and a.startswith("truthfulqa-")
    assert len(a) == len("truthfulqa-") + 16
    assert a != content_id("simplequestions", "What's the capital of France?")  # the source is part of it
    assert content_id("popqa", "Q?", "1") != content_id("popqa", "Q?", "2")  # the source's own id too
    sq = load_simplequestions(DATA / "simplequestions").questions
    old = legacy_map(sq)
    assert old["simplequestions-test-0"] == sq[0].id and len(old) == 4219
