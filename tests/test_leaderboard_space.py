"""The leaderboard as a static Hub Space (``leaderboard --space ORG/NAME``, phr.leaderboard.space): pushed through
the gate to a local hub and to the Hub (the Hub-protocol test server), its page opens in a real headless chromium
from the pushed files and ranks the results, and a rerun with unchanged results makes no commit."""

from __future__ import annotations

import subprocess

import pytest
from huggingface_hub import SpaceCard

from phr.api import plan, run
from phr.config.ops import LeaderboardConfig, PushConfig
from phr.hub import ValidationFailedError, push
from tests.support.browser import chromium, dump_dom
from tests.support.cli import invoke
from tests.support.scored import scored_result


@pytest.fixture(scope="module")
def results(mini_folder, tmp_path_factory):
    """Two verified, complete results: model-b answers more questions right than model-a."""
    tmp = tmp_path_factory.mktemp("space-results")
    return [
        scored_result(tmp / "a", mini_folder, "org/model-a", wrong_if=lambda n: n % 3 == 0),
        scored_result(tmp / "b", mini_folder, "org/model-b", wrong_if=lambda n: n % 5 == 0),
    ]


def _commits(space) -> int:
    out = subprocess.run(["git", "rev-list", "--count", "--all"], cwd=space, capture_output=True, text=True)
    return int(out.stdout)


def test_space_on_a_local_hub_opens_in_chromium_and_a_rerun_makes_no_commit(mini_folder, results, tmp_path):
    hub = tmp_path / "hub"
    args = ["leaderboard", *results, "--dataset", mini_folder, "--out", tmp_path / "lb", "--space", "org/lb"]
    first = invoke(*args, "--hub", hub)
    assert first.returncode == 0, first.stderr
    assert "space: created space repo org/lb on the local hub" in first.stdout
    space = hub / "spaces" / "org" / "lb"
    card = SpaceCard.load(space / "README.md").data
    assert (card.sdk, card.title, card.license, card.app_file) == (
        "static",
        "PHRBench leaderboard",
        "cc-by-4.0",
        "index.html",
    )
    assert sorted(p.name for p in space.iterdir() if not p.name.startswith(".")) == [
        "README.md",
        "index.html",
        "leaderboard.md",
        "results",
    ]
    assert len(list((space / "results").rglob("*.json"))) == 2

    # the served page, from the pushed files, in a real browser: the results ranked, each linking to its JSON
    page = dump_dom(chromium(), space / "index.html", "", tmp_path)
    assert page.column("model") == ["org/model-b", "org/model-a"]
    assert page.column("rank") == ["1", "2"]
    linked = [link for link in page.links if link and link.endswith(".json")]
    assert len(linked) == 2 and all((space / link).is_file() for link in linked)

    commits = _commits(space)
    again = invoke(*args, "--hub", hub)
    assert again.returncode == 0, again.stderr
    assert "space: no changes: org/lb already holds this folder" in again.stdout
    assert _commits(space) == commits


def test_space_on_the_hub_is_created_static_and_unchanged_results_make_no_commit(mini_folder, results, hf, tmp_path):
    cfg = LeaderboardConfig(
        sources=results, datasets=[str(mini_folder)], out=tmp_path / "lb", space="alice/lb", repo=None
    )
    first = run(plan(cfg)).space
    assert first is not None and first.created and first.revision
    assert hf.repo_exists("space", "alice/lb")
    files = hf.files("space", "alice/lb")
    assert {"README.md", "index.html", "leaderboard.md"} <= set(files) and "leaderboard.parquet" not in files
    assert b"sdk: static" in files["README.md"]
    assert sum(name.startswith("results/") for name in files) == 2
    history = len(hf.commits("space", "alice/lb"))

    again = run(plan(cfg)).space
    assert again is not None and again.revision is None and not again.changed
    assert len(hf.commits("space", "alice/lb")) == history


def test_a_space_folder_that_is_not_a_leaderboard_is_refused(tmp_path):
    folder = tmp_path / "space"
    (folder / "results").mkdir(parents=True)
    (folder / "index.html").write_text("<html></html>")
    (folder / "results" / "x.json").write_text('{"model": "m"}')
    (folder / "README.md").write_text("---\ntitle: t\nsdk: gradio\n---\n")
    with pytest.raises(ValidationFailedError) as e:
        push(PushConfig(folder=folder, repo="org/s", repo_type="space", hub=tmp_path / "hub"))
    text = str(e.value)
    assert "sdk is 'gradio', not 'static'" in text and "the card has no license" in text
    assert "results/x.json" in text and "not a PHRBench result" in text
    assert not (tmp_path / "hub" / "spaces" / "org" / "s" / ".git").exists()  # no repo was made


def test_the_space_card_links_the_results_dataset():
    from phr.leaderboard.space import space_card

    card = SpaceCard(space_card("PHRBench leaderboard", "cc-by-4.0", "org/phrbench-results", 3))
    assert card.data.datasets == ["org/phrbench-results"] and card.data.sdk == "static"
    assert "[org/phrbench-results](https://huggingface.co/datasets/org/phrbench-results)" in card.text
    assert "leaderboard of 3 results" in card.text
    bare = SpaceCard(space_card("T", "mit", None, 1))
    assert bare.data.datasets is None and "result JSON files" in bare.text
