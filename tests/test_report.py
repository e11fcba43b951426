"""The cross-model report (phr.leaderboard.report) and `phr-publish report`: three scored submissions of PHRBench-mini
(gold, wrong, and one that keeps its answers only under Pseudoscientific Entanglement), judged by a deterministic
LLM judge on the local OpenAI-protocol server; the tables, the four figures and the page in headless chromium.
Hand-made scores check the correlations and the Figure 5 groups."""

from __future__ import annotations

import json

import pyarrow.parquet as pq
import pytest

from phr.bench.metrics import RESOLUTIONS, label, rate_of
from phr.config.ops import Scoring
from phr.eval.aggregate import aggregate
from phr.eval.dataset import load_eval_dataset
from phr.eval.pipeline import score_submission
from phr.eval.report import result_json
from phr.eval.scorers import ScoringRun
from phr.eval.scoring import SampleScore
from phr.eval.submission import SubmissionMeta
from phr.leaderboard.report import build_report, pearson, render_report_markdown
from tests.support.answers import gold, wrong
from tests.support.browser import chromium, dump_dom
from tests.support.cli import run

CORRECTS, ACCEPTS = "I think the premise is false", "given the premise"
PE = "Pseudoscientific Entanglement"


def judge(model, messages, k):
    """The resolution judge: A(r,h) and correction by a marker in the judged response."""
    response = messages[0][1].split("<response>\n", 1)[1].split("\n</response>", 1)[0]
    accepts, corrects = ACCEPTS in response, CORRECTS in response
    return json.dumps({"uses_premise": accepts, "corrects_premise": corrects, "rationale": "marker"})


def _submission(path, dataset, rows, answer):
    lines = [json.dumps({"instance_id": i.id, "sample": 0, "response": answer(i)}) for i in dataset.select()]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def rows(mini_folder):
    return {r["id"]: r for p in (mini_folder / "data").glob("*.parquet") for r in pq.read_table(p).to_pylist()}


def _answers(rows):
    def good(i):
        return gold(i, rows) + (f"\n{CORRECTS}." if i.condition == "B+H" else "")

    def bad(i):
        return wrong(i) + (f"\n{ACCEPTS}." if i.condition == "B+H" else "")

    def pe_only(i):  # right under B and T, and under H only against Pseudoscientific Entanglement
        return gold(i, rows) if i.condition != "B+H" or i.mutation_type == PE else wrong(i)

    return {"org/gold": (good, "open"), "org/wrong": (bad, "proprietary"), "org/pe-only": (pe_only, None)}


def _score_three(fake, dataset, rows, tmp_path) -> list:
    """The results.json of the three submissions of ``_answers``, scored with the judge on the fake server."""
    options = ScoringRun(  # the judge on the fake server, with its cache and fast retries
        Scoring(scorer="none", judge="openai:gpt-4o"),
        llm_options={
            "cache": fake.cache,
            "progress": False,
            "timeout": 5,
            "backoff_initial": 0.01,
            "backoff_max": 0.05,
        },
    )
    files = []
    for model, (answer, access) in _answers(rows).items():
        name = model.split("/")[1]
        sub = _submission(tmp_path / f"{name}.jsonl", dataset, rows, answer)
        meta = SubmissionMeta(model=model, revision="v1", link=f"https://example.org/{name}", model_access=access)
        _, out = score_submission(
            sub, dataset, meta, options, out=tmp_path / f"{name}.scored", progress=False, plots=False
        )
        files.append(out / "results.json")
    return files


def _assert_report_tables(rep: dict, pe_share: float) -> None:
    """report.json's Tables 1, 2, 5-11 and Figure 3 for the gold, wrong and PE-only submissions."""
    t1 = rep["table1"]
    assert (
        t1["rows"]["org/gold"]["retention"]["value"] == 1.0 and t1["rows"]["org/wrong"]["H"]["accuracy"]["value"] == 0
    )
    assert t1["rows"]["org/pe-only"]["H-T"]["accuracy"]["value"] == round(pe_share - 1, 6)
    mean_ht = round((0 + 0 + pe_share - 1) / 3, 6)
    assert t1["averages"]["all"]["H-T"]["accuracy"]["value"] == pytest.approx(mean_ht, abs=1e-6)
    # proprietary vs open (the --access override made pe-only open)
    assert t1["averages"]["proprietary"]["T"]["accuracy"]["value"] == 0.0
    assert t1["averages"]["open"]["H-T"]["accuracy"]["value"] == pytest.approx((pe_share - 1) / 2, abs=1e-6)
    # Table 2: the judge's markers
    correction, compliance, avoidance = RESOLUTIONS
    t2 = rep["table2"]
    assert t2["org/gold"]["proportions"][correction]["value"] == 1.0 and t2["org/gold"]["insightful"]["value"] == 1.0
    assert t2["org/wrong"]["proportions"][compliance]["value"] == 1.0
    assert t2["org/pe-only"]["proportions"][avoidance]["value"] == 1.0 and t2["org/pe-only"]["insightful"]["value"] == 0
    # Tables 5-8 and 9-11, Figure 3: pe-only keeps all of PE and none of RC / SD
    assert {b["table"] for b in rep["per_domain"].values()} == {5, 6, 7, 8}
    assert {t: b["table"] for t, b in rep["per_mutation_type"].items()} == {
        "Rule Contradiction": 9, "State Distortion": 10, PE: 11,
    }  # fmt: skip
    heat = rep["retention"]["rows"]["org/pe-only"]
    assert (heat[PE], heat["Rule Contradiction"], heat["State Distortion"], heat["Code"]) == (1.0, 0.0, 0.0, 0.0)
    assert rep["retention"]["rows"]["Average"][PE] == 1.0  # gold 1, pe-only 1; wrong has no retention (T is 0)
    assert rep["retention"]["rows"]["org/wrong"][PE] is None


def test_report_of_three_scored_submissions(fake_openai, mini_folder, rows, tmp_path):
    fake = fake_openai(judge)
    dataset = load_eval_dataset(mini_folder)
    files = _score_three(fake, dataset, rows, tmp_path)
    results = {json.loads(f.read_text())["model"]: json.loads(f.read_text()) for f in files}
    pe = results["org/pe-only"]
    assert results["org/gold"]["model_access"] == "open" and "model_access" not in pe
    # H - T and retention in the results: pe-only keeps exactly the PE share of B+H
    hall = [i for i in dataset.select(["B+H"])]
    science = [i for i in hall if i.domain != "Code"]
    pe_share = sum(i.mutation_type == PE for i in hall) / len(hall)
    assert pe["metrics"]["accuracy_bt"] == 1.0 and pe["metrics"]["accuracy_bh"] == round(pe_share, 6)
    assert pe["metrics"]["delta_accuracy"] == round(pe_share - 1, 6) and pe["metrics"]["retention"] == round(
        pe_share, 6
    )
    assert pe["standard_errors"]["delta_accuracy"] > 0 and pe["standard_errors"]["retention"] > 0
    # Tables 9-11: the science domains only (the mini build's Code premises are all State Distortion)
    sd = pe["tables"]["per_mutation_type"]["State Distortion"]
    assert (
        sd["n"]
        == sum(i.mutation_type == "State Distortion" for i in science)
        < sum(i.mutation_type == "State Distortion" for i in hall)
    )

    out = tmp_path / "report"
    r = run(
        "report", *map(str, files), "--out", str(out), "--access", "org/pe-only=open", "--dataset", str(mini_folder)
    )
    assert r.returncode == 0, r.stderr[-3000:]
    assert "report of 3 results" in r.stdout
    figures = sorted(p.name for p in (out / "figures").iterdir())
    assert figures == ["fig3_retention.png", "fig4_insightful.png", "fig5_insightful.png", "fig5_resolution.png"]
    assert all((out / "figures" / f).read_bytes().startswith(b"\x89PNG") for f in figures)

    _assert_report_tables(json.loads((out / "report.json").read_text()), pe_share)
    md = (out / "report.md").read_text()
    for heading in ("Table 1:", "Table 2:", "Table 5: Chemistry", "Table 8: Code", "Table 11: " + PE, "Figure 3"):
        assert heading in md
    assert "![Figure 4" in md

    # the page: H - T, retention, resolution and insightful columns with standard errors, in headless chromium
    exe = chromium()
    page = out / "leaderboard.html"
    t = dump_dom(exe, page, "", tmp_path)
    heads = {h["data-key"]: h for h in t.heads}
    for key in ("delta_accuracy", "retention", *(rate_of(r) for r in RESOLUTIONS), "insightful_rate"):
        assert key in heads and "paper:" in heads[key]["title"], key
    i = t.column("model").index("org/pe-only")
    assert float(t.column("retention")[i]) == round(pe_share, 6)
    assert t.column("model_access") == ["open", "open", "proprietary"]
    assert t.column("model") == ["org/gold", "org/pe-only", "org/wrong"]  # best Acc (H) first
    html_text = page.read_text()
    assert f"{pe_share - 1:+.3f} ± " in html_text and f"{pe_share:.3f} ± " in html_text
    assert f">{label('retention')}<" in html_text and f">{label('delta_accuracy')}<" in html_text
    assert t.sections["overall"].get("hidden") is None and t.sections["domain"].get("hidden") is not None
    assert len(t.images) == 4 and all(s.startswith("data:image/png;base64,") for s in t.images)
    assert sorted(u for u in t.links if u.startswith("results/")) == sorted(
        f"results/org--{m}/{json.loads((tmp_path / f'{m}.scored' / 'results.json').read_text())['run_id']}.json"
        for m in ("gold", "wrong", "pe-only")
    )
    t1 = dump_dom(exe, page, "", tmp_path, table_id="table1")  # Table 1 under the leaderboard, with averages
    assert [a.get("data-model") for a in t1.row_attrs] == ["org/gold", "org/pe-only", "org/wrong", None, None, None]
    # the model filter and the views, from the URL fragment
    t = dump_dom(exe, page, "#filter=pe-&view=type", tmp_path, table_id="type-state-distortion")
    assert t.body["data-view"] == "type" and t.sections["type"].get("hidden") is None
    shown = [a["data-model"] for a in t.row_attrs if "data-model" in a and a.get("hidden") is None]
    assert shown == ["org/pe-only"]


# ---- hand-made scores: correlations and Figure 5 ------------------------------------------------------------------


def _sample(q, cond, correct, *, ol, buf, bc):
    """A Physics multiple-choice sample of question ``q`` under ``cond`` (a Rule Contradiction under B+H)."""
    mt = "Rule Contradiction" if cond == "B+H" else None
    return SampleScore(f"{q}-{cond}", 0, q, cond, "Physics", "s", "multiple_choice", "x", mt, False, correct,
                       ol=ol, ui=1.0, buf=buf, bc=bc)  # fmt: skip


def _result_of(model, scores, access=None):
    return result_json(
        model=model, revision="r", dataset={"id": "ORG/phrbench", "revision": "v"}, report=aggregate(scores), config={},
        run_id="run", model_access=access,
    )  # fmt: skip


def _scores(ol_t, ol_h, buf, bc):
    out = []
    for q in ("q1", "q2"):
        for cond, ol in (("B", ol_t), ("B+T", ol_t), ("B+H", ol_h)):
            s = _sample(q, cond, cond != "B+H", ol=ol, buf=buf, bc=bc)
            if cond == "B+H":
                s.resolution = RESOLUTIONS[0] if q == "q1" else RESOLUTIONS[1]  # Heuristic Correction, Compliance
                s.insightful = False
            out.append(s)
    return out


def _result(model, *args):
    return _result_of(model, _scores(*args))


def test_pearson_and_figure5_groups():
    assert pearson([1, 2, 3], [2, 4, 6]) == 1.0 and pearson([1, 2, 3], [3, 2, 1]) == -1.0
    assert pearson([1, 2], [1, 2]) is None and pearson([1, 1, 1], [1, 2, 3]) is None
    results = [_result("a", 10, 20, 0.1, 1.0), _result("b", 20, 40, 0.2, 3.0), _result("c", 30, 50, 0.4, 2.0)]
    rep = build_report(results)
    # under H: OL (20, 40, 50) vs BUF (.1, .2, .4); under T the same BUF and BC
    assert rep.correlations["H"]["OL~BUF"] == pearson([20, 40, 50], [0.1, 0.2, 0.4])
    assert rep.correlations["T"]["OL~BC"] == pearson([10, 20, 30], [1.0, 3.0, 2.0]) == 0.5
    assert rep.correlations["H"]["BUF~BC"] == pearson([0.1, 0.2, 0.4], [1.0, 3.0, 2.0])
    groups = rep.trajectory_by_resolution["b"]
    assert set(groups) == set(RESOLUTIONS[:2]) and groups[RESOLUTIONS[0]]["OL"].value == 40.0
    assert rep.table1.rows["a"].retention.value == 0.0  # B+T accuracy 1, B+H 0
    md = render_report_markdown(rep)
    assert "| H | " in md and "Figure 5: trajectory metrics by resolution" in md


# ---- averages over ranked rows only; partial rows tagged (issue 32, item 7) ---------------------------------------


def _scored(model, acc_t, acc_h, ol, *, access=None, partial=False):
    """A result of 4 questions: B+T right on the first ``acc_t * 4``, B+H on the first ``acc_h * 4``; a partial one
    records that it scored 4 of 8 instances per condition."""
    out = [
        _sample(f"q{i}", cond, i < acc * 4, ol=ol, buf=ol / 100, bc=ol / 10)
        for i in range(4)
        for cond, acc in (("B", acc_t), ("B+T", acc_t), ("B+H", acc_h))
    ]
    res = _result_of(model, out, access)
    if partial:
        cell = {"instances": 4, "dataset_instances": 8, "questions": 4, "dataset_questions": 8}
        cov = {"complete": False, "allow_partial": True, "by_condition": {c: cell for c in ("B", "B+T", "B+H")}}
        res = res.model_validate({**res.as_json(), "coverage": cov})
    return res


@pytest.fixture
def with_partial():
    """Three complete results and a partial one whose figures would pull every average down."""
    return [
        _scored("org/a", 0.75, 0.5, 10, access="open"),
        _scored("org/b", 0.5, 0.25, 20, access="proprietary"),
        _scored("org/c", 1.0, 0.5, 40, access="open"),
        _scored("org/part", 0.0, 0.0, 90, access="open", partial=True),
    ]


def test_averages_are_over_ranked_rows_only(with_partial):
    from phr.leaderboard.page import render_html, render_markdown

    rep = build_report(with_partial)
    t1 = rep.table1
    assert set(t1.rows) == {"org/a", "org/b", "org/c", "org/part"}  # the partial row is shown...
    assert t1.averaged == ["org/a", "org/b", "org/c"]  # ...and not averaged
    ref = {m.key: m for m in rep.models}
    assert not ref["org/part"].ranked and ref["org/part"].tags == ["partial"] and ref["org/a"].ranked

    def mean(side, figure, keys):
        return round(sum(getattr(t1.rows[k], side)[figure].value for k in keys) / len(keys), 6)

    ranked = ["org/a", "org/b", "org/c"]
    avg = t1.averages["all"]
    assert avg.T["accuracy"].value == mean("T", "accuracy", ranked) == 0.75  # with the partial row: 0.5625
    assert avg.H["accuracy"].value == mean("H", "accuracy", ranked)
    assert avg.T["OL"].value == mean("T", "OL", ranked) and avg.H["BC"].value == mean("H", "BC", ranked)
    assert avg.h_minus_t["accuracy"].value == mean("h_minus_t", "accuracy", ranked)
    assert avg.retention.value == round(sum(t1.rows[k].retention.value for k in ranked) / 3, 6)
    assert t1.averages["open"].T["accuracy"].value == mean("T", "accuracy", ["org/a", "org/c"])
    assert t1.averages["proprietary"].T["accuracy"].value == 0.5
    # every other average and the correlations: the ranked rows only
    phys = rep.per_domain["Physics"]
    assert phys.averaged == ranked and phys.averages["all"].T["accuracy"].value == 0.75
    assert rep.retention.rows["Average"]["Physics"] == round(
        sum(rep.retention.rows[k]["Physics"] for k in ranked) / 3, 6
    )
    ols, bcs = [10, 20, 40], [1.0, 2.0, 4.0]
    assert rep.correlations["T"]["OL~BC"] == pearson(ols, bcs)

    md = render_report_markdown(rep)
    row = next(ln for ln in md.splitlines() if ln.startswith("| org/part"))
    assert row.startswith("| org/part `partial` | open | 0.000 ± 0.000 |")
    assert "Averages over the 3 ranked results; 1 unranked row (partial, unverified or weak sandbox" in md
    assert "| **Average** | | 0.750 |" in md
    assert "Across the 3 ranked results (r needs at least 3); the 1 unranked result is left out." in md

    # the page's Table 1 (under the leaderboard) and leaderboard.md: the tag next to the name, the note
    page = render_html(with_partial)
    table1 = page.split('<table id="table1">', 1)[1].split("</table>", 1)[0]
    assert '<tr data-model="org/part" class="partial"><td>org/part <span class="tag">partial</span></td>' in table1
    assert '<tr class="average"><td>Average</td><td></td><td class="num" data-value="0.75">0.750</td>' in table1
    after = page.split('<table id="table1">', 1)[1].split("</table>", 1)[1]
    assert after.lstrip().startswith('<p class="note">Averages over the 3 ranked results; 1 unranked row')
    overall = page.split('<table id="leaderboard"', 1)[1].split("</table>", 1)[0]
    assert '<td data-value="org/part">org/part <span class="tag">partial</span> <a class="result"' in overall
    board = render_markdown(with_partial)
    assert "| — | org/part `partial` |" in board


def test_no_ranked_result_means_no_averages(with_partial):
    rep = build_report(with_partial[3:])
    assert rep.table1.averages == {} and "Average" not in rep.retention.rows
    md = render_report_markdown(rep)
    assert "No ranked result, so no averages; 1 unranked row" in md and "**Average**" not in md


def test_report_refuses_a_partial_result_unless_allow_partial(with_partial, tmp_path):
    from typer.testing import CliRunner

    from phr.cli import app

    files = []
    for res in with_partial:
        data = res.as_json()
        if res.partial:
            data["coverage"]["allow_partial"] = False  # as eval wrote it: not yet allowed by anyone
        path = tmp_path / "runs" / res.model.replace("/", "--") / "results.json"
        path.parent.mkdir(parents=True)
        path.write_text(json.dumps(data))
        files.append(path)
    out = tmp_path / "report"
    r = CliRunner().invoke(app, ["report", str(tmp_path / "runs"), "--out", str(out)])
    assert r.exit_code == 2, r.output
    assert "is a partial result (partial: 12/24 instances, 4/8 questions of ORG/phrbench)" in r.output
    assert "--allow-partial" in r.output and not out.exists()
    r = CliRunner().invoke(app, ["report", str(tmp_path / "runs"), "--out", str(out), "--allow-partial"])
    assert r.exit_code == 0, r.output
    assert "report of 4 results (1 partial, unranked and not averaged: --allow-partial)" in r.output
    md = (out / "report.md").read_text()
    # hand-made results carry no evidence: the report re-derives nothing, so every row is unverified, none averaged
    assert "| org/part `partial` `unverified` | open |" in md and "org/a `unverified`" in md, md
    assert "**Average**" not in md
    rep = json.loads((out / "report.json").read_text())
    assert rep["table1"]["averaged"] == []
    assert rep["table1"]["averages"] == {}
