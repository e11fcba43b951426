"""Manual review round trip of a built PHRBench folder: export sheet -> fill -> import -> validate."""

import csv
import json
import shutil

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from phr.bench.folder import data_file
from phr.core.errors import PHRError
from phr.core.parquet import write_parquet
from phr.validation.folder import validate_folder
from phr.validation.review import (
    COLUMNS,
    ReviewSheetError,
    decisions_path,
    export_review,
    import_review,
    premise_sha,
    render_html,
)


@pytest.fixture(scope="module")
def built(mini_folder):
    return mini_folder


@pytest.fixture
def folder(built, tmp_path):
    """A private copy of the built folder (imports write into it)."""
    return shutil.copytree(built, tmp_path / "phrbench")


def read_sheet(path):
    with open(path, encoding="utf-8", newline="") as f:
        return list(csv.DictReader(f))


def write_sheet(path, rows, fieldnames=COLUMNS):
    with open(path, "w", encoding="utf-8", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fieldnames, extrasaction="ignore")
        w.writeheader()
        w.writerows(rows)
    return path


def premises(folder):
    return {
        r["augmentation_id"]: r
        for n in ("truthful", "hallucinated")
        for r in pq.read_table(data_file(folder, n)).to_pylist()
    }


def fill(rows):
    """Reject two premises (with notes), accept three, leave the rest undecided."""
    hall = [i for i, r in enumerate(rows) if r["kind"] == "hallucinated"]
    truth = [i for i, r in enumerate(rows) if r["kind"] == "truthful"]
    rej = [hall[0], next(i for i in hall if rows[i]["domain"] == "Code")]
    acc = [hall[1], truth[0], truth[-1]]
    for i in rej:
        rows[i].update(decision="Reject", reviewer="ann", note=f"too vague: {rows[i]['instance_id']} <&>")
    for i in acc:
        rows[i].update(decision=" accept ", reviewer="bob")
    return rows, rej, acc


def test_export_sheet_and_page(folder, tmp_path):
    sheet, page = export_review(folder, tmp_path / "out" / "review.csv")
    assert sheet == tmp_path / "out" / "review.csv" and page == tmp_path / "out" / "review.html"
    assert not [p for p in sheet.parent.iterdir() if p.name.startswith(".")]  # no temp files left
    rows = read_sheet(sheet)
    assert len(rows) == 136 and tuple(rows[0]) == COLUMNS
    assert {r["kind"] for r in rows} == {"truthful", "hallucinated"}
    by_aug = premises(folder)
    for r in rows:
        src = by_aug[r["augmentation_id"]]
        assert r["premise"] == src["premise"]  # exact text, line breaks and quotes included
        assert r["premise_sha"] == premise_sha(src["premise"]) and len(r["premise_sha"]) == 16
        assert r["instance_id"] == src["id"] and r["decision"] == r["reviewer"] == r["note"] == ""
    key = [(r["domain"], r["question_id"], r["instance_id"]) for r in rows]
    assert key == sorted(key)
    mc = next(r for r in rows if by_aug[r["augmentation_id"]]["options"])
    opts = by_aug[mc["augmentation_id"]]["options"]
    assert f"\n1. {opts[0]}" in mc["question"]
    assert mc["gold_answer"].endswith(by_aug[mc["augmentation_id"]]["answer"])
    text = page.read_text(encoding="utf-8")
    assert text.count('<section class="q"') == 34 and "<style>" in text
    assert "<script" not in text and "<link" not in text and "src=" not in text
    # same export twice: identical bytes; baseline rows on request
    again, _ = export_review(folder, tmp_path / "again.csv")
    assert again.read_bytes() == sheet.read_bytes()
    with_base, _ = export_review(folder, tmp_path / "base.csv", include_baseline=True)
    assert len(read_sheet(with_base)) == 170


def test_render_html_escapes_everything():
    nasty = "<script>alert(\"x\")</script> & 'q' </td></table>"
    row = dict.fromkeys(COLUMNS, "")
    row.update(
        instance_id="q1-H1",
        augmentation_id="q1-aug-H1",
        question_id='q1"><b>',
        kind="hallucinated",
        question="Is 1 < 2 & 3 > 2?",
        gold_answer="<yes>",
        premise=nasty,
        mutation_type="State Distortion",
        mutation_logic="a<b",
        note="<i>n</i>",
    )
    out = render_html([row], title="t <x>", sheet_name="s&.csv")
    assert "<script" not in out and "</td></table>" not in out and "<i>n" not in out and '"><b>' not in out
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &#x27;q&#x27;" in out
    assert "Is 1 &lt; 2 &amp; 3 &gt; 2?" in out and "&lt;yes&gt;" in out and "t &lt;x&gt;" in out
    assert "s&amp;.csv" in out and "a&lt;b" in out


def test_import_writes_decisions_and_validate_reports_rejections(folder, tmp_path):
    assert validate_folder(folder).ok
    sheet, _ = export_review(folder, tmp_path / "review.csv")
    rows, rej, acc = fill(read_sheet(sheet))
    res = import_review(write_sheet(tmp_path / "filled.csv", rows), folder)
    assert (res.accepted, res.rejected, res.undecided) == (3, 2, 131)
    path = decisions_path(folder)
    assert path == folder / "review" / "decisions.json" and res.path == path
    expected = {}
    for i in rej + acc:
        r = rows[i]
        expected[r["augmentation_id"]] = {
            "decision": "reject" if i in rej else "accept",
            "reviewer": "ann" if i in rej else "bob",
            "note": f"too vague: {r['instance_id']} <&>" if i in rej else "",
            "premise_sha": r["premise_sha"],
            "instance_id": r["instance_id"],
        }
    text = path.read_text(encoding="utf-8")
    assert json.loads(text) == expected and list(json.loads(text)) == sorted(expected)
    assert text == json.dumps(dict(sorted(expected.items())), indent=2, ensure_ascii=False) + "\n"
    assert res.decisions == expected

    report = validate_folder(folder)
    assert not report.ok
    assert {(x.row_id, x.check) for x in report} == {(rows[i]["instance_id"], "manual_review") for i in rej}
    r0 = rows[rej[0]]
    assert (
        report.for_row(r0["instance_id"])[0].reason == f"rejected in review by ann: too vague: {r0['instance_id']} <&>"
    )

    # a later import overrides the same id and keeps the others; blank decisions change nothing
    later = [dict(rows[rej[0]], decision="accept", reviewer="cy", note="fine after all")]
    res2 = import_review(write_sheet(tmp_path / "later.csv", later), folder, reviewer=None)
    assert (res2.accepted, res2.rejected, res2.changed, res2.total_rejected) == (1, 0, 1, 1)
    on_file = json.loads(path.read_text(encoding="utf-8"))
    assert on_file == {
        **expected,
        r0["augmentation_id"]: {
            **expected[r0["augmentation_id"]],
            "decision": "accept",
            "reviewer": "cy",
            "note": "fine after all",
        },
    }
    assert validate_folder(folder).rejected_ids("manual_review") == {rows[rej[1]]["instance_id"]}


def test_changed_premise_makes_decision_stale_and_blocks_import(folder, tmp_path):
    sheet, _ = export_review(folder, tmp_path / "review.csv")
    rows, rej, acc = fill(read_sheet(sheet))
    filled = write_sheet(tmp_path / "filled.csv", rows)
    import_review(filled, folder)
    # edit one accepted premise in the folder after the review
    target = rows[acc[0]]
    p = data_file(folder, "hallucinated")
    table = pq.read_table(p).to_pylist()
    for r in table:
        if r["augmentation_id"] == target["augmentation_id"]:
            r["premise"] += " Edited."
    write_parquet(pa.Table.from_pylist(table, schema=pq.read_schema(p)), p)
    report = validate_folder(folder)
    stale = report.for_row(target["instance_id"])
    assert [(x.check, x.reason) for x in stale] == [
        ("manual_review", "decision is stale: premise changed after review")
    ]
    assert len(report.rejected_ids("manual_review")) == 3
    # re-importing the old sheet now fails on that row, naming it
    before = decisions_path(folder).read_bytes()
    with pytest.raises(ReviewSheetError) as e:
        import_review(filled, folder)
    n = acc[0] + 2
    assert [(x.row, x.column) for x in e.value.problems] == [(n, "premise_sha")]
    assert f"row {n}" in str(e.value)
    assert f"premise of {target['instance_id']} changed since export; re-export" in str(e.value)
    assert decisions_path(folder).read_bytes() == before


def _bad(rows):
    """(name, sheet rows, fieldnames, expected [(row, column)]) of each kind of bad sheet."""

    def edit(i, **kw):
        out = [dict(r) for r in rows]
        out[i].update(kw)
        return out

    return [
        ("bad decision", edit(3, decision="maybe", reviewer="x"), COLUMNS, [(5, "decision")]),
        (
            "unknown instance",
            edit(4, instance_id="nope-H1", decision="accept", reviewer="x"),
            COLUMNS,
            [(6, "instance_id")],
        ),
        ("unknown augmentation", edit(4, augmentation_id="nope-aug-H1"), COLUMNS, [(6, "augmentation_id")]),
        # row 6 claims row 7's premise: wrong instance for it, and row 7 then repeats that premise
        (
            "mismatched ids",
            edit(4, augmentation_id=rows[5]["augmentation_id"]),
            COLUMNS,
            [(6, "augmentation_id"), (7, "augmentation_id")],
        ),
        (
            "changed premise",
            edit(7, premise_sha="0" * 16, decision="accept", reviewer="x"),
            COLUMNS,
            [(9, "premise_sha")],
        ),
        ("reject without note", edit(2, decision="reject", reviewer="x", note=" "), COLUMNS, [(4, "note")]),
        ("decision without reviewer", edit(2, decision="accept"), COLUMNS, [(4, "reviewer")]),
        ("duplicate row", [*rows, dict(rows[1])], COLUMNS, [(len(rows) + 2, "augmentation_id")]),
        ("missing column", rows, [c for c in COLUMNS if c != "note"], [(1, "note")]),
        (
            "several at once",
            edit(3, decision="nah") + [dict(rows[0], decision="reject", reviewer="x")],
            COLUMNS,
            [(5, "decision"), (len(rows) + 2, "augmentation_id")],
        ),
    ]


def test_bad_sheets_are_rejected_whole_naming_row_and_column(folder, tmp_path):
    sheet, _ = export_review(folder, tmp_path / "review.csv")
    rows = read_sheet(sheet)
    good, _, _ = fill([dict(r) for r in rows])
    import_review(write_sheet(tmp_path / "good.csv", good), folder)
    before = decisions_path(folder).read_bytes()
    for name, bad_rows, fields, where in _bad(rows):
        path = write_sheet(tmp_path / f"{name}.csv", bad_rows, fields)
        with pytest.raises(ReviewSheetError) as e:
            import_review(path, folder)
        assert isinstance(e.value, PHRError)
        assert [(p.row, p.column) for p in e.value.problems] == where, name
        for row, column in where:
            assert f"row {row}" in str(e.value) and f"column {column}" in str(e.value), name
        assert decisions_path(folder).read_bytes() == before, name
    assert not [p for p in (folder / "review").iterdir() if p.name != "decisions.json"]


def test_cli_round_trip(folder, tmp_path):
    from phr.cli import app

    runner = CliRunner()
    out = tmp_path / "sheet" / "review.csv"
    r = runner.invoke(app, ["review", "export", str(folder), "--out", str(out)])
    assert r.exit_code == 0, r.output
    assert "136" in r.stdout and str(out) in r.stdout and str(out.with_suffix(".html")) in r.stdout
    rows, rej, _ = fill(read_sheet(out))
    filled = write_sheet(tmp_path / "filled.csv", rows)
    r = runner.invoke(app, ["review", "import", str(filled), "--folder", str(folder)])
    assert r.exit_code == 0, r.output
    assert "3 accepted, 2 rejected, 131 undecided" in r.stdout
    bad = [dict(x) for x in rows]
    bad[0]["decision"] = "perhaps"
    bad[1].update(decision="reject", note="")
    r = runner.invoke(app, ["review", "import", str(write_sheet(tmp_path / "bad.csv", bad)), "--folder", str(folder)])
    assert r.exit_code == 2
    assert "2 problem(s)" in r.stderr and "row 2" in r.stderr and "column decision" in r.stderr
    assert "row 3" in r.stderr and "column note" in r.stderr
    r = runner.invoke(app, ["review", "export", str(tmp_path / "nowhere")])
    assert r.exit_code == 2 and "not a folder" in r.stderr


def test_spreadsheet_export_with_bom_and_semicolons_is_accepted(folder, tmp_path):
    sheet, _ = export_review(folder, tmp_path / "review.csv")
    rows, rej, acc = fill(read_sheet(sheet))
    path = tmp_path / "excel.csv"
    with open(path, "w", encoding="utf-8-sig", newline="") as f:  # what "CSV UTF-8" in some locales writes
        w = csv.DictWriter(f, fieldnames=COLUMNS, delimiter=";")
        w.writeheader()
        w.writerows(rows + [dict.fromkeys(COLUMNS, "")] * 2)  # trailing blank rows
    res = import_review(path, folder)
    assert (res.accepted, res.rejected, res.undecided) == (3, 2, 131)
