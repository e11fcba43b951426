"""Every ranked number re-derived from its evidence (issue 32): results carry their samples, push-results and the
leaderboard recompute them, a failed call makes a result partial, the sandbox is the maintainer's.

Tried as a hostile submitter would: a `--limit` result with its coverage forged complete, removed or made
self-contradictory, an edited accuracy, a results repo edited by hand, stolen evidence, a weak sandbox."""

from __future__ import annotations

import json
import shutil

import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from phr.cli import app
from tests.support.answers import gold, wrong

runner = CliRunner()


def cli(*args):
    return runner.invoke(app, [str(a) for a in args], catch_exceptions=False)


def errors(output: str) -> list[str]:
    return [ln for ln in output.splitlines() if ln.startswith("error:")]


@pytest.fixture(scope="module")
def mini(mini_folder):
    from phr.eval.dataset import load_eval_dataset

    rows = {r["id"]: r for p in (mini_folder / "data").glob("*.parquet") for r in pq.read_table(p).to_pylist()}
    return load_eval_dataset(str(mini_folder)).instances, rows


def scored(tmp_path, mini, mini_folder, name: str, *, every_other_wrong: bool = False):
    """A submission of gold answers (every other one wrong) scored by `score`: its scored folder."""
    instances, rows = mini
    sub = tmp_path / f"{name}.jsonl"
    lines = [
        {"instance_id": i.id, "sample": 0, "response": wrong(i) if every_other_wrong and n % 2 else gold(i, rows)}
        for n, i in enumerate(instances)
    ]
    sub.write_text("".join(json.dumps(x) + "\n" for x in lines))
    sub.with_name(f"{name}.meta.json").write_text(json.dumps({"model": f"org/{name}", "revision": "v1"}))
    r = cli("score", sub, "--dataset", mini_folder, "--scorer", "none", "--no-plots")
    assert r.exit_code == 0, r.output
    return tmp_path / f"{name}.scored"


@pytest.fixture
def limited(fake_openai, mini_folder, tmp_path):
    """`eval phrbench --limit 2` (10 of 170 instances): its scores folder."""
    fake_openai()
    r = cli("eval", "phrbench", "--model", "openai:gpt-4o", "--dataset", mini_folder, "--limit", 2, "--samples", 1,
            "--scorer", "none", "--no-plots", "--out", tmp_path / "runs" / "limited")  # fmt: skip
    assert r.exit_code == 0, r.output
    return tmp_path / "runs" / "limited" / "scores"


def edit(folder, change):
    data = json.loads((folder / "results.json").read_text())
    change(data)
    (folder / "results.json").write_text(json.dumps(data, indent=2))
    return folder / "results.json"


def _forge_complete(d):
    d["coverage"]["complete"] = True


def _drop_coverage(d):
    d.pop("coverage")


def _contradict(d):
    d["coverage"] = {"complete": True, "by_condition": d["coverage"]["by_condition"]}


@pytest.mark.parametrize(
    ("forge", "named"),
    [
        (_forge_complete, "coverage.complete: claimed true, recomputed false"),
        (_drop_coverage, "coverage: claimed nothing, recomputed"),
        (_contradict, "coverage.complete: claimed true, recomputed false"),
    ],
    ids=["forged-complete", "removed", "self-contradictory"],
)
def test_forged_coverage_is_refused_by_push_results(limited, tmp_path, forge, named):
    hub = tmp_path / "hub"
    result = edit(limited, forge)
    r = cli("push-results", result, "--repo", "org/results", "--hub", hub, "--allow-partial")
    assert r.exit_code == 2, r.output
    assert len(errors(r.output)) == 1 and named in errors(r.output)[0], r.output
    assert "not what its evidence gives" in r.output and not (hub / "datasets").exists()
    # nor is it ranked by the leaderboard: shown unverified (and partial where the file admits it)
    r = cli("leaderboard", result, "--allow-partial", "--out", tmp_path / "lb")
    assert r.exit_code == 0 and "1 unverified" in r.output, r.output
    (row,) = pq.read_table(tmp_path / "lb" / "leaderboard.parquet").to_pylist()
    assert "unverified" in row["tags"] and "| — | openai:gpt-4o" in (tmp_path / "lb" / "leaderboard.md").read_text()


def test_edited_accuracy_is_refused_naming_the_field_and_both_values(tmp_path, mini, mini_folder):
    folder = scored(tmp_path, mini, mini_folder, "honest", every_other_wrong=True)
    claimed = json.loads((folder / "results.json").read_text())["metrics"]["accuracy_bh"]
    result = edit(folder, lambda d: d["metrics"].update(accuracy_bh=0.99))
    r = cli("push-results", result, "--repo", "org/results", "--hub", tmp_path / "hub", "--dataset", mini_folder)
    assert r.exit_code == 2, r.output
    assert f"metrics.accuracy_bh: claimed 0.99, recomputed {claimed}" in errors(r.output)[0], r.output


def test_a_verified_push_carries_its_evidence_and_a_hand_edit_is_unverified(tmp_path, mini, mini_folder):
    from phr.config.ops import PullConfig
    from phr.hub import pull

    hub = tmp_path / "hub"
    good = scored(tmp_path, mini, mini_folder, "good")
    half = scored(tmp_path, mini, mini_folder, "half", every_other_wrong=True)
    for folder in (good, half):
        r = cli(
            "push-results", folder / "results.json", "--repo", "org/results", "--hub", hub, "--dataset", mini_folder
        )
        assert r.exit_code == 0, r.output
    repo = pull(PullConfig(repo="org/results", out=tmp_path / "repo", hub=hub))
    samples = (good / "samples.jsonl").read_bytes()
    import hashlib

    stored = repo / "evidence" / f"{hashlib.sha256(samples).hexdigest()}.jsonl"
    assert stored.read_bytes() == samples  # content-addressed
    assert len(list((repo / "evidence").glob("*.jsonl"))) == 2
    card = (repo / "README.md").read_text()
    assert "| 1 | org/good" in card and "| 2 | org/half" in card

    # a hand edit of the repo: the weaker result's accuracy raised above the other's
    (res_file,) = (repo / "results" / "org--half").glob("*.json")
    data = json.loads(res_file.read_text())
    data["metrics"]["accuracy_bh"] = 1.0
    res_file.write_text(json.dumps(data, indent=2))
    r = cli("leaderboard", repo, "--out", tmp_path / "lb", "--dataset", mini_folder)
    assert r.exit_code == 0 and "leaderboard of 2 results (1 unverified, unranked" in r.output, r.output
    md = (tmp_path / "lb" / "leaderboard.md").read_text()
    rows = [ln for ln in md.splitlines() if ln.startswith("| ") and "org/" in ln]
    assert rows[0].startswith("| 1 | org/good") and rows[1].startswith("| — | org/half") and "unverified" in rows[1]
    lb = pq.read_table(tmp_path / "lb" / "leaderboard.parquet").to_pylist()
    assert [(x["model"], x["tags"]) for x in lb] == [("org/good", ""), ("org/half", "unverified")]

    r = cli("leaderboard-verify", repo, "--dataset", mini_folder)
    assert r.exit_code == 2, r.output
    assert "1 of 2 result(s) verified, 1 not" in r.output
    line = next(ln for ln in r.output.splitlines() if ln.startswith("results/org--half/") and "metrics" in ln)
    assert "metrics.accuracy_bh: claimed 1.0, recomputed" in line
    table = [ln for ln in r.output.splitlines() if ln.startswith("results/") and ln.rstrip().endswith("verified")]
    assert len(table) == 2 and table[0].endswith(" verified") and table[1].endswith("unverified")

    # without the dataset the local result cannot be checked: shown unverified, never ranked
    r = cli("leaderboard-verify", repo)
    assert r.exit_code == 2 and "pass --dataset" in r.output and "0 of 2 result(s) verified" in r.output


def test_evidence_belongs_to_one_result(tmp_path, mini, mini_folder):
    good = scored(tmp_path, mini, mini_folder, "good")
    thief = tmp_path / "thief"
    shutil.copytree(good, thief)
    edit(thief, lambda d: d.update(model="org/thief", run_id="stolen"))
    args = ["--repo", "org/results", "--hub", tmp_path / "hub", "--dataset", mini_folder]
    assert cli("push-results", good / "results.json", *args).exit_code == 0
    r = cli("push-results", thief / "results.json", *args)
    assert r.exit_code == 2 and "would be the evidence of" in r.output, r.output


def test_weak_sandbox_is_the_maintainers_call(tmp_path, mini, mini_folder):
    good = scored(tmp_path, mini, mini_folder, "good")
    rlimits = {"isolation": "rlimits", "best_available": "rlimits", "weak": True, "own_uid": True,
               "sockets_blocked": True, "files_confined": True, "timeout_s": 10, "memory_mb": 512}  # fmt: skip
    result = edit(good, lambda d: d["config"]["sandbox"].update(rlimits))
    hub = tmp_path / "hub"
    args = ["--repo", "org/results", "--hub", hub, "--dataset", mini_folder]
    r = cli("push-results", result, *args)
    assert r.exit_code == 2 and "weak code sandbox (rlimits" in errors(r.output)[0], r.output
    r = cli("push-results", result, *args, "--allow-weak-sandbox")
    assert r.exit_code == 0, r.output
    stored = json.loads(next((hub / "datasets").rglob("org--good/*.json")).read_text())
    assert stored["allow_weak_sandbox"] is True

    # the record edited from rlimits to bwrap: not a record this tool writes
    result = edit(good, lambda d: d["config"]["sandbox"].update(isolation="bwrap", best_available="bwrap", weak=False))
    r = cli("push-results", result, *args, "--replace")
    assert r.exit_code == 2 and "config.sandbox: the keys of an bwrap record" in r.output, r.output


def test_a_run_whose_calls_failed_is_partial_and_exits_nonzero(fake_openai, mini_folder, tmp_path):
    fake = fake_openai()
    fake.server.script(None, [("status", 400)] * 10)
    out = tmp_path / "runs" / "down"
    r = cli("eval", "phrbench", "--model", "openai:gpt-4o", "--dataset", mini_folder, "--limit", 1, "--samples", 1,
            "--scorer", "none", "--no-plots", "--out", out)  # fmt: skip
    assert r.exit_code == 1, r.output
    assert "PARTIAL: 5 of 5 responses missing" in r.output and "phr-publish eval phrbench" in r.output
    res = json.loads((out / "scores" / "results.json").read_text())
    assert res["coverage"]["complete"] is False and res["counts"]["missing"] == 5
    assert sum(c["missing"] for c in res["coverage"]["by_condition"].values()) == 5
    r = cli("push-results", out / "scores" / "results.json", "--repo", "org/r", "--hub", tmp_path / "hub")
    assert r.exit_code == 2 and "missing 5" in r.output, r.output


def test_consistently_forged_samples_are_regraded_against_the_dataset(tmp_path, mini, mini_folder):
    """A forger who rewrites the samples file, its digest and every number to match: the rule-graded verdicts are
    re-graded from the extracted answers against the dataset's gold, and a grader this scoring never uses is named."""
    from phr.eval.aggregate import aggregate
    from phr.eval.dataset import load_eval_dataset
    from phr.eval.evidence import read_samples, recompute, sha256_hex
    from phr.eval.results import coverage_of, read_result_file

    folder = scored(tmp_path, mini, mini_folder, "half", every_other_wrong=True)
    res = read_result_file(folder / "results.json")
    instances = load_eval_dataset(str(mini_folder)).instances
    scores, _ = read_samples((folder / "samples.jsonl").read_bytes())
    assert recompute(res, (folder / "samples.jsonl").read_bytes(), instances).problems == []

    def forged(change):
        rows = [s.as_dict() for s in scores]
        for row in rows:
            change(row)
        body = "".join(json.dumps(r) + "\n" for r in rows).encode()
        again, _ = read_samples(body)
        report = aggregate(again, res.bootstrap)
        fake = res.model_copy(
            update={
                "metrics": report.metrics,
                "standard_errors": report.standard_errors,
                "counts": report.counts,
                "tables": report.as_tables(),
                "coverage": coverage_of(again, instances),
                "evidence": res.evidence.model_copy(update={"samples_sha256": sha256_hex(body)}),
            }
        )
        return recompute(fake, body, instances).problems

    def all_correct(row):
        row["correct"] = True

    problems = forged(all_correct)
    assert problems and "but the choice grader gives False" in " ".join(problems)

    def no_grader(row):
        row["correct"], row["grader"] = True, None

    assert "grader None is not one this scoring used" in " ".join(forged(no_grader))

    def other_condition(row):
        if row["condition"] == "B":
            row["question_id"] = "someone-else"

    assert "question_id differ from the dataset's" in " ".join(forged(other_condition))
