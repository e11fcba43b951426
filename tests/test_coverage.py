"""Coverage is part of a result (issue 25, item 1): a ``--limit`` run scores part of the dataset; push-results,
submit and leaderboard refuse it (exit 2, naming the coverage) unless --allow-partial, which is recorded and shows
it marked partial and unranked. The run's model: the local OpenAI-protocol server."""

from __future__ import annotations

import json

import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from phr.cli import app
from tests.support.answers import gold

runner = CliRunner()
PARTIAL = "partial: 10/170 instances, 2/34 questions"


def cli(*args):
    return runner.invoke(app, [str(a) for a in args], catch_exceptions=False)


@pytest.fixture
def mini_rows(mini_folder):
    from phr.eval.dataset import load_eval_dataset

    rows = {r["id"]: r for p in (mini_folder / "data").glob("*.parquet") for r in pq.read_table(p).to_pylist()}
    return load_eval_dataset(str(mini_folder)).instances, rows


@pytest.fixture
def limited_run(fake_openai, mini_folder, tmp_path):
    """`eval phrbench --limit 2`: the scored run folder."""
    fake_openai()
    r = cli(
        "eval", "phrbench", "--model", "openai:gpt-4o", "--dataset", mini_folder, "--limit", 2, "--samples", 1,
        "--scorer", "none", "--no-plots", "--out", tmp_path / "runs" / "limited",
    )  # fmt: skip
    assert r.exit_code == 0, r.output
    assert f"coverage: {PARTIAL} of local/phrbench" in r.output
    return tmp_path / "runs" / "limited"


def _gold_submission(path, instances, rows, model):
    path.write_text("".join(json.dumps({"instance_id": i.id, "sample": 0, "response": gold(i, rows)}) + "\n"
                            for i in instances))  # fmt: skip
    path.with_name(path.stem + ".meta.json").write_text(json.dumps({"model": model, "revision": "v1"}))
    return path


def test_a_limit_run_records_its_coverage_per_condition(limited_run, mini_rows):
    instances, _ = mini_rows
    res = json.loads((limited_run / "scores" / "results.json").read_text())
    cov = res["coverage"]
    assert cov["complete"] is False and cov["allow_partial"] is False
    want = {c: [i for i in instances if i.condition == c] for c in ("B", "B+T", "B+H")}
    assert {c: v["dataset_instances"] for c, v in cov["by_condition"].items()} == {c: len(v) for c, v in want.items()}
    assert cov["by_condition"]["B"] == {
        "instances": 2,
        "dataset_instances": 34,
        "questions": 2,
        "dataset_questions": 34,
        "missing": 0,
    }
    assert cov["by_condition"]["B+T"]["instances"] == 2 and cov["by_condition"]["B+H"]["instances"] == 6
    assert sum(v["instances"] for v in cov["by_condition"].values()) == res["counts"]["instances"] == 10


def test_partial_result_refused_by_push_results_submit_and_leaderboard(limited_run, mini_folder, mini_rows, tmp_path):
    instances, rows = mini_rows
    hub, results = tmp_path / "hub", limited_run / "scores" / "results.json"
    repo = hub / "datasets" / "org" / "results"

    r = cli("push-results", results, "--repo", "org/results", "--hub", hub)
    assert r.exit_code == 2 and f"is a partial result ({PARTIAL} of local/phrbench)" in r.output, r.output
    assert "--allow-partial" in r.output and not repo.exists()

    r = cli("leaderboard", tmp_path / "runs", "--out", tmp_path / "lb")
    assert r.exit_code == 2 and PARTIAL in r.output and not (tmp_path / "lb").exists(), r.output

    # the same instances as a submission: submit names the coverage and publishes nothing
    run_ids = json.loads((limited_run / "run.json").read_text())["instance_ids"]
    sub = _gold_submission(tmp_path / "part.jsonl", [i for i in instances if i.id in run_ids], rows, "org/part")
    submit = ["submit", sub, "--dataset", mini_folder, "--scorer", "none", "--no-plots", "--repo", "org/results",
              "--hub", hub]  # fmt: skip
    r = cli(*submit)
    assert r.exit_code == 2 and "missing 160 responses" in r.output, r.output
    assert "coverage: partial, 10 of 170 instances answered (--allow-partial" in r.output and not repo.exists()

    # --allow-partial: scored on the answered instances, recorded, published partial and unranked
    r = cli(*submit, "--allow-partial")
    assert r.exit_code == 0, r.output
    stored = json.loads(next((repo / "results" / "org--part").glob("*.json")).read_text())
    assert stored["coverage"]["allow_partial"] is True and stored["counts"]["instances"] == 10
    assert stored["metrics"]["accuracy_bh"] == 1.0  # gold answers: the partial result would rank first
    r = cli("push-results", results, "--repo", "org/results", "--hub", hub, "--allow-partial")
    assert r.exit_code == 0, r.output
    pushed = json.loads(next((repo / "results" / "openai--gpt-4o").glob("*.json")).read_text())
    assert pushed["coverage"]["allow_partial"] is True

    # a complete result beside them, half its answers wrong (below the partial results): the only ranked row
    full = _gold_submission(tmp_path / "full.jsonl", instances, rows, "org/full")
    lines = [json.loads(x) for x in full.read_text().splitlines()]
    for x in lines[::2]:
        x["response"] = "Final answer: none"
    full.write_text("".join(json.dumps(x) + "\n" for x in lines))
    r = cli(*[full if a == sub else a for a in submit])
    assert r.exit_code == 0, r.output
    card = (repo / "README.md").read_text()
    assert "| Coverage |" in card and "| 1 | org/full |" in card and "| — | org/part `partial`" in card
    assert "| complete |" in card and f"| {PARTIAL} |" in card

    # the results repo as the leaderboard: the published partial results are allowed (recorded), unranked
    r = cli("leaderboard", "--repo", "org/results", "--hub", hub, "--out", tmp_path / "lb", "--dataset", mini_folder)
    assert r.exit_code == 0 and "leaderboard of 3 results (2 partial, unranked" in r.output, r.output
    md = (tmp_path / "lb" / "leaderboard.md").read_text()
    body = [ln for ln in md.splitlines() if ln.startswith("| ")][1:]
    assert [ln.split(" | ")[0] for ln in body] == ["| 1", "| —", "| —"]
    assert "org/full" in body[0] and "| complete |" in body[0]
    assert all(f"| {PARTIAL} |" in ln for ln in body[1:])
    assert "3 submissions (2 partial, unranked: scored on part of the dataset)" in md
    page = (tmp_path / "lb" / "leaderboard.html").read_text()
    assert page.count('data-partial="true"') == 2 and f">{PARTIAL}</td>" in page
    lb = pq.read_table(tmp_path / "lb" / "leaderboard.parquet").to_pylist()
    assert [x["coverage"] for x in lb] == ["complete", PARTIAL, PARTIAL]

    # the runs folder with --allow-partial: shown, recorded in the result JSON next to the page
    r = cli("leaderboard", tmp_path / "runs", "--out", tmp_path / "lb2", "--allow-partial")
    assert r.exit_code == 0 and "(1 partial, unranked" in r.output, r.output
    shown = json.loads(next((tmp_path / "lb2" / "results").rglob("*.json")).read_text())
    assert shown["coverage"]["allow_partial"] is True


# ---- leaderboard DIR reads PHRBench results only (issue 25, item 4) ---------------------------------------------


def test_leaderboard_runs_skips_an_eval_hr1_result_with_a_note(fake_openai, mini_folder, tmp_path, monkeypatch):
    """The README's eval (a --limit run, shown with --allow-partial) and `eval hr1`, also written into the PHRBench
    runs folder (its default before runs-hr1/): `leaderboard runs` renders the PHRBench result, exit 0, and names
    the skipped hr1 result."""
    from tests.support.hr1_fixtures import hr1_responder

    fake_openai()  # echoes: PHRBench's responses
    monkeypatch.chdir(tmp_path)
    r = cli("eval", "phrbench", "--model", "openai:gpt-4o", "--dataset", mini_folder, "--samples", 1, "--limit", 2,
            "--scorer", "none", "--no-plots")  # fmt: skip
    assert r.exit_code == 0, r.output
    hr1 = ["eval", "hr1", "--paraphraser", "openai:gpt-4o", "--qa-model", "openai:gpt-4o", "--judge",
           "openai:gpt-4o", "--limit", 1, "--k", 2, "--no-diversity"]  # fmt: skip
    fake_openai(hr1_responder({}))  # the paraphraser, QA model and judges of eval hr1
    r = cli(*hr1)
    assert r.exit_code == 0, r.output
    assert json.loads((tmp_path / "runs-hr1" / "results.json").read_text())["benchmark"] == "hallucination-r1"
    assert not (tmp_path / "runs" / "hr1").exists()  # the default no longer lands in the PHRBench runs folder
    r = cli(*hr1, "--out", "runs/hr1")  # where eval hr1 wrote before: recognised
    assert r.exit_code == 0, r.output

    r = cli("leaderboard", "runs", "--allow-partial")
    assert r.exit_code == 0, r.output
    assert "note: skipped runs/hr1/results.json: a result of benchmark 'hallucination-r1'" in r.output
    assert "leaderboard of 1 results (1 partial, unranked" in r.output
    md = (tmp_path / "leaderboard" / "leaderboard.md").read_text()
    assert "| — | openai:gpt-4o `partial`" in md and "| partial: 10/170 instances, 2/34 questions |" in md

    r = cli("leaderboard", "runs")  # without --allow-partial: the --limit run is refused, naming its coverage
    assert r.exit_code == 2 and "partial: 10/170 instances, 2/34 questions" in r.output, r.output


def test_leaderboard_bad_input_exits_2(tmp_path):
    """A named file that is not a PHRBench result, a broken JSON in a runs folder, a missing path: exit 2."""
    hr1 = tmp_path / "hr1.json"
    hr1.write_text(json.dumps({"benchmark": "hallucination-r1", "settings": {}, "tables": {}}))
    r = cli("leaderboard", hr1, "--out", tmp_path / "lb")
    assert (
        r.exit_code == 2 and "hr1.json is not a PHRBench result: a result of benchmark 'hallucination-r1'" in r.output
    )
    broken = tmp_path / "runs" / "m" / "r1" / "scores" / "results.json"
    broken.parent.mkdir(parents=True)
    broken.write_text("{not json")
    r = cli("leaderboard", tmp_path / "runs", "--out", tmp_path / "lb")
    assert r.exit_code == 2 and "cannot read result JSON" in r.output and str(broken) in r.output
    broken.write_text(json.dumps({"benchmark": "phrbench", "metrics": {}}))
    r = cli("leaderboard", tmp_path / "runs", "--out", tmp_path / "lb")
    assert r.exit_code == 2 and "is not a valid result JSON" in r.output and "model: Field required" in r.output
    r = cli("leaderboard", tmp_path / "nothing", "--out", tmp_path / "lb")
    assert r.exit_code == 2 and "no such result JSON file or folder" in r.output
    assert not (tmp_path / "lb").exists()
