"""The maintainers' queue (issue 32, item 6): model authors open submission pull requests with `submit --create-pr`;
`leaderboard-queue` scores each here and merges it with its result and evidence, or closes it with a comment naming
every problem; a rerun changes nothing. On a local hub and on the Hub-protocol server with the real client."""

from __future__ import annotations

import json

import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from phr.cli import app
from phr.hub.prs import list_pull_requests, pr_comments
from tests.support.answers import gold

runner = CliRunner()
REPO = "alice/results"


def cli(*args):
    return runner.invoke(app, [str(a) for a in args], catch_exceptions=False)


@pytest.fixture(scope="module")
def mini(mini_folder):
    from phr.eval.dataset import load_eval_dataset

    rows = {r["id"]: r for p in (mini_folder / "data").glob("*.parquet") for r in pq.read_table(p).to_pylist()}
    return load_eval_dataset(str(mini_folder)).instances, rows


def submission(tmp_path, mini, name: str, n: int | None = None):
    instances, rows = mini
    sub = tmp_path / f"{name}.jsonl"
    chosen = instances if n is None else instances[:n]
    sub.write_text("".join(json.dumps({"instance_id": i.id, "sample": 0, "response": gold(i, rows)}) + "\n"
                           for i in chosen))  # fmt: skip
    sub.with_name(f"{name}.meta.json").write_text(json.dumps({"model": f"org/{name}", "revision": "v1"}))
    return sub


def main_files(hub):
    """The files of the results repo's main (local hub ``hub``, else the Hub)."""
    from phr.hub.local import LocalHub, read_tree
    from phr.hub.online import read_files_online

    if hub is None:
        return read_files_online(REPO, "dataset", patterns=["**"], token=None, endpoint=None)
    return read_tree(LocalHub(hub), REPO, "dataset")


@pytest.mark.parametrize("where", ["local", "hub"])
def test_queue_merges_the_valid_pr_closes_the_partial_one_and_a_rerun_changes_nothing(
    where, tmp_path, mini, mini_folder, request
):
    hub_args: list = []
    hub = None
    if where == "local":
        hub = tmp_path / "hub"
        hub_args = ["--hub", hub]
        server = None
    else:
        server = request.getfixturevalue("hf")
        server.create_repo("dataset", REPO)
    valid, part = submission(tmp_path, mini, "good"), submission(tmp_path, mini, "part", n=10)
    common = ["--repo", REPO, "--dataset", mini_folder, "--scorer", "none", "--no-plots", *hub_args]
    r = cli("submit", valid, "--create-pr", *common)
    assert r.exit_code == 0 and "submission pull request" in r.output, r.output
    r = cli("submit", part, "--create-pr", "--allow-partial", *common)
    assert r.exit_code == 0, r.output
    opened = list_pull_requests(REPO, "dataset", hub=hub)
    assert [p.status for p in opened] == ["open", "open"]

    queue = ["leaderboard-queue", "--repo", REPO, "--dataset", mini_folder, "--scorer", "none", *hub_args]
    r = cli(*queue)
    assert r.exit_code == 0, r.output
    rows = {ln.split()[0]: ln for ln in r.output.splitlines() if ln.startswith("#")}
    first, second = (p.num for p in opened)
    assert "merged" in rows[f"#{first}"] and "org/good" in rows[f"#{first}"], r.output
    assert "closed" in rows[f"#{second}"] and "10 of 170 instances answered" in rows[f"#{second}"], r.output
    assert f"{REPO}: 1 merged, 1 closed, 0 skipped" in r.output

    after = {p.num: p.status for p in list_pull_requests(REPO, "dataset", hub=hub, status=None)}
    assert after == {first: "merged", second: "closed"}
    comment = "\n".join(pr_comments(REPO, "dataset", second, hub=hub))
    assert "missing 160 responses" in comment and "10 of 170 instances answered" in comment

    # main holds the maintainer's result, its evidence and the submission's responses
    files = main_files(hub)
    results = [p for p in files if p.startswith("results/org--good/")]
    assert len(results) == 1 and not any(p.startswith("results/org--part") for p in files)
    res = json.loads(files[results[0]])
    assert res["coverage"]["complete"] is True and res["metrics"]["accuracy_bh"] == 1.0
    assert f"evidence/{res['evidence']['samples_sha256']}.jsonl" in files
    assert any(p.startswith("submissions/org--good/") and p.endswith(".jsonl") for p in files)
    head = files  # the second run: nothing to decide, nothing written

    r = cli(*queue)
    assert r.exit_code == 0 and f"{REPO}: no open pull requests" in r.output, r.output
    again = main_files(hub)
    assert again == head

    # the results repo as the leaderboard: the queue's result is verified and ranked
    r = cli("leaderboard", "--repo", REPO, "--dataset", mini_folder, "--out", tmp_path / "lb", *hub_args)
    assert r.exit_code == 0 and "leaderboard of 1 results:" in r.output, r.output
    md = (tmp_path / "lb" / "leaderboard.md").read_text()
    assert "| 1 | org/good" in md


def test_a_queue_killed_between_publishing_and_merging_is_completed_by_the_rerun(
    tmp_path, mini, mini_folder, monkeypatch
):
    from phr.hub.local import LocalHub, read_tree
    from phr.ops import leaderboard_queue as queue_mod

    hub = tmp_path / "hub"
    valid = submission(tmp_path, mini, "good")
    common = ["--repo", REPO, "--dataset", mini_folder, "--scorer", "none", "--hub", hub]
    assert cli("submit", valid, "--create-pr", "--no-plots", *common).exit_code == 0

    def killed(*args, **kwargs):
        raise KeyboardInterrupt  # the maintainer's Ctrl-C (or a kill) after the result was published

    monkeypatch.setattr(queue_mod, "merge_pr", killed)
    with pytest.raises(KeyboardInterrupt):
        queue_mod.run(queue_mod.plan(queue_mod.LeaderboardQueueConfig(repo=REPO, dataset=str(mini_folder),
                                                                      scorer="none", hub=hub)))  # fmt: skip
    published = read_tree(LocalHub(hub), REPO, "dataset")
    assert any(p.startswith("results/org--good/") for p in published)
    assert [p.status for p in list_pull_requests(REPO, "dataset", hub=hub)] == ["open"]
    monkeypatch.undo()

    r = cli("leaderboard-queue", *common)
    assert r.exit_code == 0 and f"{REPO}: 1 merged, 0 closed, 0 skipped" in r.output, r.output
    after = read_tree(LocalHub(hub), REPO, "dataset")
    assert {p: b for p, b in after.items() if not p.startswith("submissions/")} == published  # nothing twice
    assert list_pull_requests(REPO, "dataset", hub=hub) == []
