"""Issue 35, items 6-8: every wedged local hub state is repaired by ``repair`` (garbled store refs, a commit made by
hand in the served folder) or named with its manual step; never a git plumbing message. Push says a cut parquet
file in one line; a rerun hint names only paths that exist; a full disk under a new repo says no repo was made; a
lock timeout exits 1.
"""

from __future__ import annotations

import fcntl
import shutil
import subprocess
from pathlib import Path

import pytest
from typer.testing import CliRunner

from phr.cli import app
from phr.config.ops import PushConfig, PushResultsConfig
from phr.hub import local as local_hub
from phr.hub import push
from phr.hub.local import LocalHub
from tests.support.local_hub import REPO, git, model_folder, push_twice

PLUMBING = ("cannot lock ref", "nonexistent object", "fatal:", "unexpected line", "git update-ref", "git cat-file")


def hand_git(repo: Path, *args: str) -> str:
    return git(repo, "-c", "user.name=h", "-c", "user.email=h@h", *args)


@pytest.fixture
def pushed(tmp_path) -> tuple[Path, Path, Path]:
    """(hub, repo link, next folder): two pushes tagged v1 and v2, and a third folder to push."""
    return push_twice(tmp_path)


def cli(*args: str):
    return CliRunner().invoke(app, [str(a) for a in args])


def no_plumbing(text: str) -> None:
    assert not any(p in text for p in PLUMBING), text
    assert "Traceback" not in text, text


def refused_or_done(code: int, *args: object) -> str:
    """``phr-publish ARGS`` exits ``code`` and says nothing of git's plumbing (nor a traceback); what it says."""
    r = cli(*args)
    assert r.exit_code == code, r.output
    no_plumbing(r.output)
    return r.output


def repair(hub: Path, code: int = 0) -> str:
    return refused_or_done(code, "repair", REPO, "--repo-type", "model", "--hub", hub)


def store(hub: Path) -> Path:
    return hub / "models" / "org" / ".x.hub" / "store.git"


def garble_files(hub: Path, repo: Path) -> None:
    (store(hub) / "refs" / "heads" / "main").write_text("not a commit id\n")
    (store(hub) / "refs" / "tags" / "v1").write_text("xx\n")


def garble_packed(hub: Path, repo: Path) -> None:
    (store(hub) / "packed-refs").write_text("garbage line\n")


@pytest.mark.parametrize("garble", [garble_files, garble_packed], ids=["ref files", "packed-refs"])
def test_garbled_store_refs_are_rebuilt_from_the_versions(pushed, garble):
    hub, repo, folder = pushed
    main = git(repo, "rev-parse", "main")
    garble(hub, repo)
    out = refused_or_done(1, "push", folder, "--repo", REPO, "--repo-type", "model", "--tag", "v3", "--hub", hub)
    assert "the refs its store records are garbled" in out and "phr-publish repair org/x" in out
    out = repair(hub)
    assert "rebuilt its store's refs from its versions" in out and f"main {main}, tags: v1, v2" in out
    assert git(store(hub), "rev-parse", "refs/heads/main") == main
    r = cli("push", folder, "--repo", REPO, "--repo-type", "model", "--tag", "v3", "--hub", hub)
    assert r.exit_code == 0, r.output
    assert git(repo, "tag").split() == ["v1", "v2", "v3"] and git(repo, "rev-list", "--count", "main") == "3"


def test_a_hand_commit_that_keeps_the_history_is_adopted(pushed, tmp_path):
    """results.json (here config.json) edited and committed with git in the served folder: push refuses naming
    the repair; repair adopts it (a descendant of the last push, passing the checks); the next push builds on it."""
    hub, repo, folder = pushed
    (repo / "config.json").write_text('{"n": 99}')
    hand_git(repo, "commit", "-qam", "hand edit")
    hand = git(repo, "rev-parse", "main")
    for args in (
        ("push", folder, "--repo", REPO, "--repo-type", "model", "--hub", hub),
        ("pull", REPO, "--repo-type", "model", "--hub", hub, "--out", tmp_path / "pulled"),
    ):
        out = refused_or_done(1, *args)
        assert "holds a commit made by hand in the served folder" in out and "phr-publish repair" in out
    assert f"adopted the commit made by hand (main {hand})" in repair(hub)
    assert git(store(hub), "rev-parse", "refs/heads/main") == hand and (repo / "config.json").read_text() == '{"n": 99}'
    assert "sound" in cli("repair", REPO, "--repo-type", "model", "--hub", hub).output
    res = push(PushConfig(folder=folder, repo=REPO, repo_type="model", tag="v3", hub=hub))
    assert res.changed and git(repo, "rev-parse", "main~1") == hand


def test_a_hand_commit_that_rewrites_the_history_is_set_aside(pushed, tmp_path):
    hub, repo, folder = pushed
    last = git(repo, "rev-parse", "main")
    (repo / "config.json").write_text('{"n": 98}')
    hand_git(repo, "commit", "-q", "--amend", "-am", "hand amend")
    hand = git(repo, "rev-parse", "main")
    out = repair(hub)
    assert f"set aside the commit made by hand (main {hand}" in out and f"(main {last})" in out
    assert git(repo, "rev-parse", "main") == last and (repo / "config.json").read_text() == '{"n": 2}'
    assert git(store(hub), "rev-parse", "refs/phr/set-aside/1/heads/main") == hand
    assert f"--revision {hand} --out DIR" in out
    r = cli("pull", REPO, "--repo-type", "model", "--hub", hub, "--revision", hand, "--out", tmp_path / "kept")
    assert r.exit_code == 0, r.output
    assert (tmp_path / "kept" / "config.json").read_text() == '{"n": 98}'
    res = push(PushConfig(folder=folder, repo=REPO, repo_type="model", tag="v3", hub=hub))
    assert res.changed and git(repo, "tag").split() == ["v1", "v2", "v3"]
    assert "refs/phr" not in git(repo, "for-each-ref")  # never published


def test_a_deleted_store_says_to_copy_the_served_files_first(pushed):
    hub, repo, _ = pushed
    served = repo.resolve()
    shutil.rmtree(store(hub))
    line = repair(hub, code=1).strip()
    assert line.count("\n") == 0 and "copy the files it serves first" in line and f"cp -r {served} COPY" in line
    assert line.index("copy the files") < line.index("remove ") and "push the copy again" in line


# ---- item 7: a cut parquet file in a pushed folder -------------------------------------------------------------


def test_push_of_a_cut_parquet_file_is_one_line(tmp_path, monkeypatch):
    import pyarrow as pa
    import pyarrow.parquet as pq

    folder = model_folder(tmp_path / "f", 1)
    cut = folder / "data.parquet"
    pq.write_table(pa.table({"a": list(range(1000))}), cut)
    cut.write_bytes(cut.read_bytes()[: cut.stat().st_size // 2])
    monkeypatch.setattr(local_hub, "gate", lambda folder, repo_type, **k: pq.read_table(cut))  # the kind reads it
    r = cli("push", folder, "--repo", REPO, "--repo-type", "model", "--hub", tmp_path / "hub")
    assert r.exit_code == 2, r.output
    assert "Traceback" not in r.output and "ArrowInvalid" not in r.output
    line = r.output.strip()
    assert line.count("\n") == 0 and line.startswith(f"error: {cut}: cannot be read as parquet (")
    assert "truncated or damaged" in line


# ---- item 8 ----------------------------------------------------------------------------------------------------


def test_push_results_rerun_names_the_command_not_its_temporary_folder(tmp_path, monkeypatch):
    from phr.leaderboard import repo as results_repo

    result = tmp_path / "results.json"
    result.write_text("{}")
    monkeypatch.setattr(results_repo, "_admitted", lambda cfg, datasets: ({}, {}))
    monkeypatch.setattr(results_repo, "_existing", lambda *a, **k: {})
    monkeypatch.setattr(results_repo, "write_results_folder", lambda folder, *a, **k: None)
    seen = {}

    def fake_push(cfg, *, token=None, rerun=None):
        seen["folder"], seen["rerun"] = cfg.folder, rerun or cfg.rerun()
        return None

    monkeypatch.setattr(results_repo, "push", fake_push)
    results_repo.push_results(PushResultsConfig(results=[result], repo="org/results", hub=tmp_path / "hub"))
    assert seen["rerun"].startswith("phr-publish push-results ") and str(result) in seen["rerun"]
    assert str(seen["folder"]) not in seen["rerun"] and not Path(seen["folder"]).exists()


def test_a_full_disk_under_a_new_repo_says_no_repo_was_made(tmp_path, monkeypatch):
    """git's checkout fails on a full disk with "Could not reset index file" (no ENOSPC in its words): the push
    says the disk is full and, the repo being new, that no repo was created (not "keeps its previous version")."""
    hub, folder = tmp_path / "hub", model_folder(tmp_path / "f", 1)
    real = subprocess.run

    def run(cmd, *a, **k):
        if "reset" in cmd and "--hard" in cmd:
            return subprocess.CompletedProcess(cmd, 128, b"", b"fatal: Could not reset index file to revision 'HEAD'.")
        return real(cmd, *a, **k)

    monkeypatch.setattr(local_hub.subprocess, "run", run)
    monkeypatch.setattr(local_hub.shutil, "disk_usage", lambda p: shutil._ntuple_diskusage(10**6, 10**6, 0))
    r = cli("push", folder, "--repo", REPO, "--repo-type", "model", "--hub", hub)
    assert r.exit_code == 1, r.output
    assert "No space left on device" in r.output and "The disk is full" in r.output
    assert "the repo was not created" in r.output and "keeps its previous version" not in r.output
    assert "Could not reset index file" not in r.output
    assert not (hub / "models" / "org" / "x").exists() and not (hub / "models" / "org" / ".x.hub").exists()


def test_a_lock_timeout_exits_1(pushed, monkeypatch):
    hub, _, folder = pushed
    lockfile = hub / "models" / "org" / ".x.lock"
    monkeypatch.setenv("PHR_HUB_LOCK_TIMEOUT", "0.2")
    with open(lockfile, "a+") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        r = cli("push", folder, "--repo", REPO, "--repo-type", "model", "--hub", hub)
    assert r.exit_code == 1, r.output
    assert "is locked by another push" in r.output


def test_repair_of_a_sound_repo_still_says_so(pushed):
    hub, _, _ = pushed
    assert "is sound: nothing to repair" in local_hub.repair(LocalHub(hub), REPO, "model")
