"""Bad source files (issue 14, items 4, 5 and 8): each problem is named by file and row, line or byte offset.

Options that collapse to fewer than two, bytes that are not UTF-8, duplicate ids, CSV rows with extra fields and
empty files: the loaders reject them with a reason, the build agrees with ``validate``, the CLI exits 2 with one
line and writes nothing.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from phr.builders.recipe import RecipeError, load_recipe, select_questions
from phr.builders.sources import MalformedSourceError, _common, bbbp, chembench, mbpp, medmcqa, mmlu, sciq
from phr.core.errors import PHRError
from tests.support.bbbp_faults import malformed_bbbp
from tests.support.paper_fixtures import write_sources

REPO = Path(__file__).resolve().parents[1]


def sciq_row(question: str, answer: str, *distractors: str) -> dict:
    d = (list(distractors) + [""] * 3)[:3]
    return {
        "question": question,
        "distractor3": d[2],
        "distractor1": d[0],
        "distractor2": d[1],
        "correct_answer": answer,
        "support": "",
    }


# ---- item 4: options collapse -------------------------------------------------------------------------------


def test_sciq_row_whose_distractors_equal_the_answer_is_rejected_with_its_reason(tmp_path):
    rows = [
        sciq_row("What is 1?", "one", "two", "three", "four"),
        sciq_row("What gas?", "oxygen", "oxygen", "oxygen", "oxygen"),
        sciq_row("Which side?", "north", "west", "south", "west"),
    ]
    path = tmp_path / "train.json"
    path.write_text(json.dumps(rows, indent=16))
    with _common.collect_rejected() as rejected:
        qs = sciq.load(tmp_path)
    assert [q.source_row_id for q in qs] == ["train/0", "train/2"]
    assert sorted(qs[1].options) == ["north", "south", "west"]  # the repeated distractor appears once
    assert qs[1].options[qs[1].answer_index] == "north"
    assert rejected == [
        f"{path}: row 2 (index 1): fewer than two distinct options (answer 'oxygen', "
        "options after removing duplicates: ['oxygen'])"
    ]


def test_multiple_choice_options_are_deduplicated_for_every_source(tmp_path):
    (tmp_path / "college_physics_test.csv").write_text("q1,a,b,a,c,B\nq2,x,x,y,x,A\nq3,x,x,x,x,C\n")
    with _common.collect_rejected() as rejected:
        qs = mmlu.load(tmp_path, subjects="college_physics")
    assert [(q.options, q.answer_index, q.answer) for q in qs] == [(["a", "b", "c"], 1, "b"), (["x", "y"], 0, "x")]
    assert len(rejected) == 1 and "row 3 (line 3): fewer than two distinct options" in rejected[0]


def test_a_source_with_no_usable_rows_says_why_in_the_shortfall(tmp_path):
    src = write_sources(tmp_path / "src", n=8)
    rows = [sciq_row(f"Q{i}?", "same", "same", "same", "same") for i in range(60)]
    (src / "sciq" / "train.json").write_text(json.dumps(rows))
    with pytest.raises(RecipeError) as err:
        select_questions(load_recipe("paper"), src)
    msg = str(err.value)
    assert "sciq (Physics, no filters): 0 of 50 questions available" in msg
    assert "60 source row(s) rejected" in msg and "fewer than two distinct options" in msg
    assert str(src / "sciq" / "train.json") in msg


# ---- item 5: bytes that are not UTF-8 -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("loader", "filename", "head", "bad_line"),
    [
        (bbbp, "BBBP.csv", b"num,name,p_np,smiles\r\n1,a,1,CCO\r\n2,b", 3),
        (mbpp, "mbpp.jsonl", b'{"text": "t"}\n{"text": "caf', 2),
        (sciq, "train.json", b'[\n  {"question": "caf', 2),
        (medmcqa, "train.json", b'{"question": "q"}\n\n{"question": "x', 3),
        (chembench, "task.json", b'{"name": "t",\n "examples": [{"input": "caf', 2),
    ],
)
def test_non_utf8_bytes_name_file_line_and_byte_offset(tmp_path, loader, filename, head, bad_line):
    path = tmp_path / filename
    path.write_bytes(head + b'\xe9 au lait"}]\n')
    with pytest.raises(_common.SourceEncodingError) as err:
        loader.load(tmp_path)
    assert isinstance(err.value, PHRError)
    assert str(err.value) == (
        f"{path}: line {bad_line}, byte offset {len(head)}: invalid UTF-8 (byte 0xe9: "
        "invalid continuation byte); save the file as UTF-8"
    )


def test_non_utf8_after_a_bom_counts_the_bom_bytes(tmp_path):
    path = tmp_path / "BBBP.csv"
    path.write_bytes(b"\xef\xbb\xbfnum,name,p_np,smiles\n1,\xff,1,C\n")
    with pytest.raises(_common.SourceEncodingError, match=r"line 2, byte offset 26: invalid UTF-8 \(byte 0xff"):
        bbbp.load(tmp_path)


def test_cli_build_with_non_utf8_source_exits_2_names_the_byte_and_writes_nothing(tmp_path):
    src = write_sources(tmp_path / "src", n=60)
    path = src / "mbpp" / "mbpp.jsonl"
    lines = path.read_bytes().split(b"\n")
    offset = len(b"\n".join(lines[:6])) + 1 + lines[6].index(b"adds")
    lines[6] = lines[6].replace(b"adds", b"\xff\xfeadds", 1)
    path.write_bytes(b"\n".join(lines))
    out = tmp_path / "out"
    env = {
        **os.environ,
        "OPENAI_API_KEY": "sk-test-0123456789",
        "OPENAI_BASE_URL": "http://127.0.0.1:9/v1",
        "PHR_CACHE": str(tmp_path / "calls.sqlite"),
        "COLUMNS": "300",
    }
    proc = subprocess.run(
        [
            sys.executable,
            "-c",
            "from phr.cli import main; main()",
            "build",
            "phrbench",
            "--recipe",
            "paper",
            "--source-dir",
            str(src),
            "--out",
            str(out),
            "--generator",
            "openai:gpt-4o",
            "--judge",
            "none",
        ],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=300,
    )
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr and proc.stdout == ""
    assert proc.stderr.strip() == (
        f"error: {path}: line 7, byte offset {offset}: invalid UTF-8 (byte 0xff: invalid "
        "start byte); save the file as UTF-8"
    )
    assert not out.exists() and not list(tmp_path.glob(".out*"))


# ---- item 8: duplicate ids, extra CSV fields, empty files ---------------------------------------------------


def test_duplicate_ids_name_the_file_and_both_rows(tmp_path):
    path, message = malformed_bbbp(tmp_path, "num,name,p_np,smiles\n1,a,1,CCO\n2,b,0,CCN\n1,c,0,CCC\n")
    assert message == (
        f"MoleculeNet BBBP: duplicate question id 'bbbp-1' (source row id '1'): "
        f"{path}: row 1 (line 2) and {path}: row 3 (line 4)"
    )


def test_duplicate_ids_across_files_name_both_files(tmp_path):
    row = {"question": "q", "opa": "a", "opb": "b", "opc": "c", "opd": "d", "cop": 1, "id": "same-id"}
    (tmp_path / "train.json").write_text(json.dumps(row) + "\n")
    (tmp_path / "dev.json").write_text(json.dumps({**row, "question": "other"}) + "\n")
    with pytest.raises(MalformedSourceError) as err:
        medmcqa.load(tmp_path)
    assert str(err.value) == (
        f"MedMCQA: duplicate question id 'medmcqa-same-id' (source row id 'same-id'): "
        f"{tmp_path / 'train.json'}: row 1 (line 1) and {tmp_path / 'dev.json'}: row 1 (line 1)"
    )


@pytest.mark.parametrize(
    ("row", "problem"),
    [
        ("2,b,0,CCN,extra", "5 fields, the header has 4 (extra: ['extra'])"),
        ("2,b,0", "3 fields, the header has 4 (missing: ['smiles'])"),
    ],
)
def test_csv_row_with_extra_or_missing_fields_is_rejected_with_file_and_line(tmp_path, row, problem):
    path, message = malformed_bbbp(tmp_path, f"num,name,p_np,smiles\r\n1,a,1,CCO\r\n\r\n{row}\r\n3,c,1,CO\r\n")
    assert message == f"{path}: row 2 (line 4): {problem}"


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        ("", "the file is empty"),
        ("num,name,p_np,smiles\r\n", "the file has a header line but no data rows"),
        ("num,name,p_np,smiles\r\n\r\n  \r\n", "the file has a header line but no data rows"),
    ],
)
def test_empty_csv_says_the_file_is_empty(tmp_path, content, problem):
    path, message = malformed_bbbp(tmp_path, content)
    assert message == f"{path}: {problem}"


@pytest.mark.parametrize(
    ("loader", "filename", "content"),
    [
        (sciq, "train.json", "[]"),
        (mbpp, "mbpp.jsonl", "\n\n"),
        (mmlu, "college_physics_test.csv", ""),
    ],
)
def test_empty_files_of_other_formats_say_so(tmp_path, loader, filename, content):
    path = tmp_path / filename
    path.write_text(content)
    with pytest.raises(MalformedSourceError, match=r"(the file is empty|the JSON array is empty)") as err:
        loader.load(tmp_path)
    assert str(err.value).startswith(f"{path}: ")


def test_recipe_with_an_empty_bbbp_csv_names_the_file(tmp_path):
    src = write_sources(tmp_path / "src", n=8)
    (src / "bbbp" / "BBBP.csv").write_text("")
    with pytest.raises(MalformedSourceError, match=r"BBBP\.csv: the file is empty$"):
        select_questions(load_recipe("paper"), src)
