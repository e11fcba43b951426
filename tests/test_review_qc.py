"""Quality control in the paper's order (§A.2): rule checks that accept the paper's own premises, the manual
review's revise path (re-checked by the rules, put in place by the rebuild), semantic distinctness, and the
push gate of a recipe that requires every premise to be reviewed."""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from phr.bench.folder import MANIFEST, data_file
from phr.builders.phrbench import build_mini
from phr.validation.checks import leakage, run_checks
from phr.validation.config import ValidationConfig
from phr.validation.folder import validate_folder
from phr.validation.review import COLUMNS, ReviewSheetError, export_review, import_review, load_decisions
from phr.validation.semantic import semantic_distinctness

PAPER = json.loads((Path(__file__).parent / "fixtures" / "paper_examples.json").read_text(encoding="utf-8"))


def paper_rows():
    questions, augs = [], []
    for e in PAPER["examples"]:
        q = e["question"]
        questions.append(q)
        base = dict(question_id=q["id"], generator="paper")
        augs.append(
            dict(base, id=f"{q['id']}-aug-T", kind="truthful", statement=e["truthful"], truth_verification="§A.3")
        )
        augs.append(
            dict(
                base,
                id=f"{q['id']}-aug-H1",
                kind="hallucinated",
                statement=e["hallucinated"],
                mutation_type=e["mutation_type"],
                mutation_strategy=e["mutation_type"],
                mutation_logic=e["mutation_logic"],
            )
        )
    return questions, augs


# ---- the paper's eight example premises ---------------------------------------------------------------------------


def test_the_eight_paper_example_premises_pass_the_rule_checks():
    questions, augs = paper_rows()
    assert len(augs) == 8
    report = run_checks(questions, augs)
    assert report.ok, report.render()
    assert semantic_distinctness(augs) == []


def test_a_claim_about_the_gold_option_is_no_leak_but_naming_it_as_the_answer_is():
    questions, augs = paper_rows()
    bio = [a for a in augs if a["question_id"] == "paper-biomedicine"]
    named = dict(
        bio[1], id="named", statement="Since the correct answer is c-erbB1, all signaling genes suppress tumors."
    )
    after = dict(bio[1], id="after", statement="c-erbB1 is the correct option because it restrains cell growth.")
    out = leakage(questions, [*bio, named, after])
    assert sorted((r.row_id, r.reason) for r in out) == [
        ("after", "hallucinated premise reveals the gold answer text 'c-erbB1'"),
        ("named", "hallucinated premise reveals the gold answer text 'c-erbB1'"),
    ]
    # the former rule (every mention of the gold option) is still available by name
    strict = ValidationConfig.from_dict({"leakage": {"gold_text_in_hallucinated": "any"}})
    assert [r.row_id for r in leakage(questions, bio, strict)] == ["paper-biomedicine-aug-H1"]


# ---- semantic distinctness ----------------------------------------------------------------------------------------


def test_semantic_distinctness_rejects_one_error_said_twice():
    questions, augs = paper_rows()
    chem = [a for a in augs if a["question_id"] == "paper-chemistry"]
    para = dict(
        chem[1],
        id="para",
        statement="Branching an alcohol strengthens its intermolecular forces and raises its boiling point.",
    )
    other = dict(
        chem[1], id="other", statement="Butan-1-ol cannot form hydrogen bonds because its hydroxyl group is terminal."
    )
    out = semantic_distinctness([*chem, para, other])
    assert [r.row_id for r in out] == ["para"]
    assert out[0].check == "semantic_distinctness"
    assert "paper-chemistry-aug-H1 and para of question paper-chemistry" in out[0].reason
    # the lexical rule does not see it (different words)
    assert run_checks(questions, [*chem, para]).ok
    off = ValidationConfig.from_dict({"semantic": {"enabled": False}})
    assert semantic_distinctness([*chem, para], off) == []


# ---- review: revise --------------------------------------------------------------------------------------------


def _sheet(path):
    with open(path, encoding="utf-8", newline="") as f:
        return list(csv.DictReader(f))


def _write(path, rows):
    with open(path, "w", encoding="utf-8", newline="") as f:
        w = csv.DictWriter(f, fieldnames=COLUMNS, extrasaction="ignore")
        w.writeheader()
        w.writerows(rows)
    return path


def _premise(folder, aid):
    rows = pq.read_table(data_file(folder, "hallucinated")).to_pylist()
    return next(r["premise"] for r in rows if r["augmentation_id"] == aid)


REVISION = "Metals conduct electricity because their electrons are locked in fixed covalent bonds."


@pytest.fixture
def folder(mini_folder, tmp_path):
    return shutil.copytree(mini_folder, tmp_path / "phrbench")


def test_a_revised_premise_round_trips_and_is_rechecked(folder, tmp_path):
    sheet, _ = export_review(folder, tmp_path / "review.csv")
    rows = _sheet(sheet)
    assert "revised_premise" in rows[0]
    h = [r for r in rows if r["kind"] == "hallucinated" and r["domain"] != "Code"]
    good, bad = h[0], h[1]
    good.update(decision="revise", revised_premise=REVISION, reviewer="ann", note="clearer error")
    # a revision that breaks a rule (three sentences) is refused with the rule's reason; nothing is written
    bad.update(decision="revise", revised_premise="Heat flows. Cold flows. Both flow upward.", reviewer="ann")
    with pytest.raises(ReviewSheetError) as e:
        import_review(_write(tmp_path / "filled.csv", rows), folder)
    n = rows.index(bad) + 2
    assert [(p.row, p.column) for p in e.value.problems] == [(n, "revised_premise")]
    assert "the revision fails the rule checks: [single_mutation] hallucinated premise has 3 sentences (max 2)" in str(
        e.value
    )
    assert load_decisions(folder) == {}
    # a revise decision without text, and an edited text without revise, are refused too
    bad.update(revised_premise="")
    other = h[2]
    other.update(revised_premise="Some text.", decision="accept", reviewer="bob")
    with pytest.raises(ReviewSheetError) as e:
        import_review(_write(tmp_path / "filled.csv", rows), folder)
    assert [(p.row, p.column) for p in e.value.problems] == sorted(
        [(n, "revised_premise"), (rows.index(other) + 2, "revised_premise")]
    )
    bad.update(decision="", revised_premise="", reviewer="")
    other.update(revised_premise="")
    res = import_review(_write(tmp_path / "filled.csv", rows), folder)
    assert (res.accepted, res.revised, res.rejected) == (1, 1, 0)
    on_file = load_decisions(folder)[good["augmentation_id"]]
    assert on_file["decision"] == "revise" and on_file["revision"] == REVISION
    assert on_file["premise_sha"] == good["premise_sha"]

    # until the rebuild the folder still holds the old text: validate says so
    report = validate_folder(folder)
    assert [(x.row_id, x.check) for x in report] == [(good["instance_id"], "manual_review")]
    assert "rebuild the folder to put the revision in place" in report.rejections[0].reason

    # the rebuild puts the revision in place; it passes the rules again; the card counts it
    res = build_mini(folder, overwrite=True)
    assert _premise(folder, good["augmentation_id"]) == REVISION
    assert validate_folder(folder).ok
    assert res.qc["manual review: revised"] == 1 and res.qc["manual review: reviewed"] == 2
    assert res.qc["manual review: undecided"] == 136 - 2 and res.qc["manual review: removed"] == 0
    card = (folder / "README.md").read_text(encoding="utf-8")
    assert "| manual review: revised | 1 |" in card

    # the revised text is a new text: exported again it is reviewed as itself (a later accept keeps the history)
    rows2 = _sheet(export_review(folder, tmp_path / "again.csv")[0])
    r = next(x for x in rows2 if x["augmentation_id"] == good["augmentation_id"])
    assert r["premise"] == REVISION
    r.update(decision="accept", reviewer="cy")
    import_review(_write(tmp_path / "again-filled.csv", [r]), folder)
    d = load_decisions(folder)[good["augmentation_id"]]
    assert d["decision"] == "accept" and [x["decision"] for x in d["history"]] == ["revise"]
    res = build_mini(folder, overwrite=True)
    assert _premise(folder, good["augmentation_id"]) == REVISION
    assert res.qc["manual review: revised"] == 1 and res.qc["manual review: reviewed"] == 2


# ---- the push gate ------------------------------------------------------------------------------------------------


def test_push_refuses_undecided_premises_of_a_review_required_build(folder, tmp_path):
    from phr.cli import app

    manifest = json.loads((folder / MANIFEST).read_text(encoding="utf-8"))
    manifest["review_required"] = True  # as the paper recipe's builds record it
    (folder / MANIFEST).write_text(json.dumps(manifest), encoding="utf-8")
    assert validate_folder(folder).ok  # `phr-publish validate` reports content problems only
    report = validate_folder(folder, require_review=None)
    assert [(x.check, x.row_id) for x in report] == [("manual_review", "review/decisions.json")]
    assert report.rejections[0].reason.startswith("136 of 136 premises have no manual review decision")

    hub = tmp_path / "hub"
    runner = CliRunner()
    r = runner.invoke(app, ["push", str(folder), "--repo", "org/bench", "--hub", str(hub)])
    assert r.exit_code != 0
    assert "refusing to push" in r.output and "--allow-unreviewed" in r.output
    assert not (hub / "datasets" / "org" / "bench").exists() or not any((hub / "datasets" / "org" / "bench").iterdir())

    r = runner.invoke(app, ["push", str(folder), "--repo", "org/bench", "--hub", str(hub), "--allow-unreviewed"])
    assert r.exit_code == 0, r.output
