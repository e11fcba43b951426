"""End to end, as a user runs it: local:smollm2 on PHRBench-mini -> results -> results repo -> leaderboard page
(checked in headless chromium); a gold submission through `submit`; shards through `eval merge`."""

import json

import pytest
from datasets import load_dataset

from phr.config.ops import PushConfig
from tests.support.answers import gold
from tests.support.browser import chromium, dump_dom
from tests.support.cli import run


@pytest.fixture(scope="module")
def rows(mini_folder):
    import pyarrow.parquet as pq

    return {r["id"]: r for p in (mini_folder / "data").glob("*.parquet") for r in pq.read_table(p).to_pylist()}


def eval_smollm2(cache: str, mini_folder, *options: str, runs: str):
    """`phr eval phrbench` of local:smollm2 on PHRBench-mini with the call cache ``cache``, its runs under ``runs``."""
    argv = ["--cache", cache, "eval", "phrbench", "--model", "local:smollm2", "--dataset", str(mini_folder)]
    return run(*argv, *options, "--runs", runs, timeout=900)


def submit(submission, mini_folder, hub, *options: str):
    """`phr submit` of ``submission`` on PHRBench-mini, unscored, to org/phrbench-results of the local hub ``hub``."""
    argv = ["submit", str(submission), "--dataset", str(mini_folder), "--scorer", "none"]
    return run(*argv, "--repo", "org/phrbench-results", "--hub", str(hub), *options)


def test_smollm2_run_results_leaderboard(smollm2, mini_folder, rows, tmp_path):
    cache, hub = str(tmp_path / "calls.sqlite"), tmp_path / "hub"
    r = eval_smollm2(
        cache, mini_folder, "--samples", "2", "--limit", "1", "--max-tokens", "24", runs=str(tmp_path / "runs")
    )
    assert r.returncode == 0, r.stderr[-3000:]
    results = next((tmp_path / "runs").glob("local--smollm2/*/scores/results.json"))
    res = json.loads(results.read_text())
    m = res["metrics"]
    assert res["counts"] == {"samples": 10, "missing": 0, "instances": 5, "questions": 1}
    assert {"accuracy_b", "accuracy_bt", "accuracy_bh", "OL", "UI", "BUF", "BC"} <= set(m)
    assert 0 < m["OL_b"] <= 24 and m["UI"] > 0 and 0 <= m["BUF"] <= 1
    assert res["config"]["reference_scorer"]["spec"] == "local:smollm2" and res["config"]["samples"] == 2
    assert res["dataset"]["id"] == "local/phrbench" and res["revision"] != "unspecified"
    assert "B+H" in r.stdout and "results:" in r.stdout

    # shards 1/2 and 2/2 of a 2-question run, merged and scored (cache shared with the run above)
    for i in (1, 2):
        r = eval_smollm2(
            cache,
            mini_folder,
            "--limit",
            "2",
            "--max-tokens",
            "24",
            "--samples",
            "1",
            "--shard",
            f"{i}/2",
            runs=str(tmp_path / "sh"),
        )
        assert r.returncode == 0 and "eval merge" in r.stdout, r.stderr[-3000:]
    shard_dirs = sorted((tmp_path / "sh" / "local--smollm2").iterdir())
    r = run(
        "--cache",
        cache,
        "eval",
        "merge",
        *map(str, shard_dirs),
        "--out",
        str(tmp_path / "merged"),
        "--scorer",
        "none",
        "--no-plots",
    )
    assert r.returncode == 0, r.stderr[-3000:]
    merged = json.loads((tmp_path / "merged" / "scores" / "results.json").read_text())
    assert merged["counts"]["questions"] == 2

    # publish: the run's result, then a gold submission through `submit`
    # the --limit run is partial: refused by default (tests/test_coverage.py), published unranked when allowed
    r = run("push-results", str(results), "--repo", "org/phrbench-results", "--hub", str(hub), "--allow-partial")
    assert r.returncode == 0, r.stderr
    sub = tmp_path / "gold.jsonl"
    sub.write_text(
        "".join(json.dumps({"instance_id": i, "sample": 0, "response": gold_of(row)}) + "\n" for i, row in rows.items())
    )
    (tmp_path / "gold.meta.json").write_text(
        json.dumps({"model": "org/gold", "revision": "v1", "link": "https://example.org/gold"})
    )
    from phr.cards.model_card import write_model_card
    from phr.hub import push

    ckpt = tmp_path / "gold-model"
    ckpt.mkdir()
    (ckpt / "config.json").write_text("{}")
    write_model_card(ckpt, base_model="x/base", datasets=[], hyperparameters={}, eval_results=[])
    push(PushConfig(folder=ckpt, repo="org/gold", repo_type="model", hub=hub))
    r = submit(sub, mini_folder, hub, "--model-pr")
    assert r.returncode == 0, r.stderr[-3000:]
    assert "model repo org/gold: pull request" in r.stdout
    import subprocess

    pr_yaml = subprocess.run(
        ["git", "-C", str(hub / "models" / "org" / "gold"), "show", "pr/1:.eval_results/phrbench.yaml"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "accuracy_bh" in pr_yaml and "value: 1.0" in pr_yaml
    lb = load_dataset(str(hub / "datasets" / "org" / "phrbench-results"), "leaderboard", split="train")
    assert lb["model"] == ["org/gold", "local:smollm2"] and lb["accuracy_bh"][0] == 1.0

    r = run("leaderboard", "--repo", "org/phrbench-results", "--hub", str(hub), "--out", str(tmp_path / "lb"),
            "--dataset", str(mini_folder))  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert "leaderboard of 2 results (1 partial, unranked" in r.stdout, r.stdout  # both re-derived: none unverified
    page = dump_dom(chromium(), tmp_path / "lb" / "leaderboard.html", "#sort=accuracy_bh&dir=asc", tmp_path)
    assert page.column("model") == ["local:smollm2", "org/gold"]

    # a defective submission: a clear reason, nothing published
    bad = tmp_path / "bad.jsonl"
    bad.write_text(sub.read_text().splitlines()[0] + "\n")
    r = submit(bad, mini_folder, hub, "--model", "org/bad", "--model-revision", "1")
    assert r.returncode == 2 and "missing 169 responses" in r.stderr, r.stderr
    assert len(load_dataset(str(hub / "datasets" / "org" / "phrbench-results"), "leaderboard", split="train")) == 2


def gold_of(row):
    from phr.eval.dataset import Instance

    return gold(Instance.from_row(row), {row["id"]: row})
