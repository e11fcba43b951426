"""Source files with a renamed header, a NUL byte or repeated rows (issue 21, item 5): a renamed or missing column
is named at header level (with the header found), a NUL byte is an error naming file, row and field, and the
Hallucination-R1 loaders keep a repeated row once, counting it in the load summary and the corpus manifest."""

from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from phr.builders.hr1 import _manifest
from phr.builders.hr1_sources import load_popqa, load_simplequestions, load_truthfulqa
from phr.builders.sources import MalformedSourceError, bbbp, gpqa, sciq

TQA_HEADER = "Type,Category,Question,Best Answer,Correct Answers,Incorrect Answers,Source"
TQA_ROW = "Adversarial,Misconceptions,What happens if you eat seeds?,Nothing happens,Nothing; You digest them,You die,w"
POPQA_HEADER = "id\tsubj\tprop\tobj\tquestion\tpossible_answers"


def popqa_row(i: int, question: str = "What is George Rankin's occupation?") -> str:
    return f"{i}\tGeorge Rankin\toccupation\tpolitician\t{question}\t" + '["politician", "political leader"]'


def sq_folder(tmp_path, lines: list[str]):
    tmp_path.mkdir(exist_ok=True)
    (tmp_path / "annotated_wd_data_test_answerable.txt").write_text("".join(line + "\n" for line in lines))
    (tmp_path / "reverse_vocab_wikidata_en.json").write_text(json.dumps({"Holyoke": "Q1", "Paris": "Q2"}))
    return tmp_path


def error(loader, *args) -> str:
    with pytest.raises(MalformedSourceError) as e:
        loader(*args)
    return str(e.value)


# ---- header-level messages ----------------------------------------------------------------------------------


def test_renamed_truthfulqa_header_is_named_with_the_header_found(tmp_path):
    path = tmp_path / "TruthfulQA.csv"
    path.write_text(TQA_HEADER.replace("Best Answer", "Best answer") + "\n" + TQA_ROW + "\n")
    assert error(load_truthfulqa, path) == (
        f"column 'Best Answer' (is 'Best answer' it, renamed?) not found in header of {path}; found: 'Type', "
        "'Category', 'Question', 'Best answer', 'Correct Answers', 'Incorrect Answers', 'Source'"
    )
    path.write_text(TQA_HEADER.replace("Question,Best Answer,", "") + "\n" + "a,b,c,d,e\n")
    assert error(load_truthfulqa, path).startswith(f"columns 'Question', 'Best Answer' not found in header of {path};")
    path.write_text(TQA_HEADER + "\n" + TQA_ROW + "\n")  # the released header loads
    assert load_truthfulqa(path).questions[0].answers == ("Nothing happens", "Nothing", "You digest them")


def test_popqa_missing_columns_in_tsv_and_parquet_are_named_at_header_level(tmp_path):
    tsv = tmp_path / "popQA.tsv"
    tsv.write_text(POPQA_HEADER.replace("possible_answers", "answers") + "\n" + popqa_row(0) + "\n")
    assert error(load_popqa, tsv) == (
        f"column 'possible_answers' not found in header of {tsv}; found: 'id', 'subj', 'prop', 'obj', 'question', "
        "'answers'"
    )
    parquet = tmp_path / "pq" / "popqa.parquet"
    parquet.parent.mkdir()
    pq.write_table(pa.table({"id": [1], "Question": ["q?"], "possible_answers": ['["a"]']}), parquet)
    assert error(load_popqa, parquet.parent) == (
        f"column 'question' (is 'Question' it, renamed?) not found in header of {parquet}; found: 'id', "
        "'Question', 'possible_answers'"
    )


def test_phrbench_csv_sources_name_a_renamed_column_at_header_level(tmp_path):
    path = tmp_path / "BBBP.csv"
    path.write_text("num,name,p_np,SMILES\n1,a,1,CCO\n")
    assert error(bbbp.load, tmp_path) == (
        f"column 'smiles' (is 'SMILES' it, renamed?) not found in header of {path}; found: 'num', 'name', 'p_np', "
        "'SMILES'"
    )
    b3db = tmp_path / "B3DB_classification.tsv"
    b3db.write_text("NO.\tcompound_name\tSMILES\tBBB\n1\ta\tCCO\tBBB+\n")
    assert error(bbbp.load_b3db, b3db).startswith(f"column 'BBB+/BBB-' not found in header of {b3db}; found: ")
    g = tmp_path / "gpqa" / "gpqa_main.csv"
    g.parent.mkdir()
    g.write_text(
        "Record ID,Question,Correct answer,Incorrect Answer 1,Incorrect Answer 2,Incorrect Answer 3\nr,q,a,b,c,d\n"
    )
    assert error(gpqa.load, g.parent) == (
        f"columns 'Correct Answer' (is 'Correct answer' it, renamed?), 'High-level domain' not found in header of "
        f"{g}; found: 'Record ID', 'Question', 'Correct answer', 'Incorrect Answer 1', 'Incorrect Answer 2', "
        "'Incorrect Answer 3'"
    )
    g.write_text("Record ID,Question,Correct Answer,High-level domain\nr,q,a,Physics\n")
    assert gpqa.load(g.parent)[0].answer == "a"  # open-ended: the incorrect answers are not read
    with pytest.raises(MalformedSourceError) as e:
        gpqa.load(g.parent, multiple_choice=True)
    assert str(e.value).startswith(
        f"columns 'Incorrect Answer 1', 'Incorrect Answer 2', 'Incorrect Answer 3' not found in header of {g};"
    )


# ---- NUL bytes ----------------------------------------------------------------------------------------------


def test_nul_byte_in_a_question_names_file_row_and_field(tmp_path):
    path = tmp_path / "TruthfulQA.csv"
    path.write_text(TQA_HEADER + "\n" + TQA_ROW + "\n" + TQA_ROW.replace("eat seeds", "eat\x00seeds") + "\n")
    assert error(load_truthfulqa, path) == (
        f"{path}: row 2 (line 3): NUL byte (\\x00) in field 'question'; the file is damaged: remove the byte"
    )
    folder = sq_folder(tmp_path / "sq", ["Q7\tP20\tQ1\twhere did roger die", "Q8\tP20\tQ2\twhere did \x00 die"])
    assert error(load_simplequestions, folder) == (
        f"{folder / 'annotated_wd_data_test_answerable.txt'}: row 2 (line 2): NUL byte (\\x00) in field 'question'; "
        "the file is damaged: remove the byte"
    )
    tsv = tmp_path / "popQA.tsv"
    tsv.write_text(POPQA_HEADER + "\n" + popqa_row(0, "Who\x00?") + "\n")
    assert error(load_popqa, tsv).startswith(f"{tsv}: row 1 (line 2): NUL byte (\\x00) in field 'question'")
    (tmp_path / "sciq").mkdir()
    row = {"question": "Which gas?\x00", "correct_answer": "oxygen", "support": ""}
    row |= {"distractor1": "neon", "distractor2": "argon", "distractor3": "xenon"}
    (tmp_path / "sciq" / "test.json").write_text(json.dumps([row]))
    assert error(sciq.load, tmp_path / "sciq").startswith(
        f"{tmp_path / 'sciq' / 'test.json'}: row 1 (index 0): NUL byte (\\x00) in field 'question'"
    )


# ---- repeated rows ------------------------------------------------------------------------------------------


def test_duplicate_simplequestions_rows_are_kept_once_and_counted_in_summary_and_manifest(tmp_path):
    first = "Q7\tP20\tQ1\twhere did roger die"
    folder = sq_folder(tmp_path, [first, "Q8\tP19\tQ2\twhere was ann born", first, "Q9\tP1\tQ404\tno label", first])
    res = load_simplequestions(folder)
    assert [q.source_row_id for q in res.questions] == ["0", "1"]
    assert res.skipped == {"duplicate rows (kept once)": 2, "objects without an English label": 1}
    assert res.summary() == (
        f"SimpleQuestions (Wikidata): 2 questions from {folder} (2 duplicate rows (kept once); "
        "1 objects without an English label)"
    )
    path = folder / "annotated_wd_data_test_answerable.txt"
    assert res.examples[0] == (
        f"{path}: row 3 (line 3): duplicate row, kept once (same content as {path}: row 1 (line 1))"
    )
    manifest = _manifest("hr1-paraphrases", [res], {}, None)
    assert manifest["skipped"] == {
        "simplequestions: duplicate rows (kept once)": 2,
        "simplequestions: objects without an English label": 1,
    }


def test_duplicate_rows_in_truthfulqa_and_popqa_are_kept_once(tmp_path):
    path = tmp_path / "TruthfulQA.csv"
    path.write_text("\n".join([TQA_HEADER, TQA_ROW, TQA_ROW.replace("seeds", "pits"), TQA_ROW]) + "\n")
    res = load_truthfulqa(path)
    assert [q.source_row_id for q in res.questions] == ["0", "1"]
    assert res.skipped == {"duplicate rows (kept once)": 1}
    tsv = tmp_path / "popQA.tsv"
    tsv.write_text("\n".join([POPQA_HEADER, popqa_row(7), popqa_row(8, "Other?"), popqa_row(9)]) + "\n")
    res = load_popqa(tsv)
    assert [q.source_row_id for q in res.questions] == ["7", "8"]
    assert res.skipped == {"duplicate rows (kept once)": 1}
    assert "1 duplicate rows (kept once)" in res.summary()
