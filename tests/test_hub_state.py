"""A local hub checks its own state before writing (issue 26, items 2 and 5).

A repo whose current version is gone (a dangling link, a deleted version folder, a deleted link) or whose ``main``
is broken is refused with an error naming the repo, the cause and ``phr-publish repair``; it is never started
over as a new repo, and no push prunes a version holding a tag the current version lacks. A push that fails on the
environment (a full disk) exits 1, not 2.
"""

from __future__ import annotations

import errno
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from typer.testing import CliRunner

from phr.cli import app
from phr.config.ops import PushConfig
from phr.hub import PushFailedError, push
from phr.hub import local as local_hub
from phr.hub.local import LocalHub
from tests.support.local_hub import REPO, git, model_folder, push_twice


def tags(repo: Path) -> list[str]:
    return git(repo, "tag").split()


def snapshot(hub: Path) -> dict[str, str]:
    """Every entry under the hub (files, folders, links with their targets), except the lock file."""
    out = {}
    for p in sorted(hub.rglob("*")):
        if p.name.endswith(".lock"):
            continue
        out[str(p.relative_to(hub))] = os.readlink(p) if p.is_symlink() else ("dir" if p.is_dir() else "file")
    return out


@pytest.fixture
def pushed(tmp_path) -> tuple[Path, Path, Path]:
    """(hub, repo link, next folder): two pushes tagged v1 and v2, and a third folder to push."""
    return push_twice(tmp_path)


def dangle(repo: Path) -> None:
    os.unlink(repo)
    os.symlink(".x.hub/v/9", repo)


def delete_current(repo: Path) -> None:
    shutil.rmtree(repo.resolve())


def delete_link(repo: Path) -> None:
    os.unlink(repo)


def break_main(repo: Path) -> None:
    (repo / ".git" / "refs" / "heads" / "main").write_text("0" * 40 + "\n")


def remove_main(repo: Path) -> None:
    (repo / ".git" / "refs" / "heads" / "main").unlink()


DAMAGE = {
    "dangling link": (dangle, "points to a version that does not exist"),
    "deleted current version": (delete_current, "points to a version that does not exist"),
    "deleted link": (delete_link, "current-version link"),
    "main names a missing commit": (break_main, "its main branch names 0000000000000000000000000000000000000000"),
    "main missing": (remove_main, "its main branch (refs/heads/main) is missing"),
}


@pytest.mark.parametrize("damage", list(DAMAGE))
def test_a_damaged_repo_is_refused_with_the_repair_never_started_over(pushed, damage):
    hub, repo, folder = pushed
    make, cause = DAMAGE[damage]
    make(repo)
    before = snapshot(hub)
    runner = CliRunner()
    r = runner.invoke(
        app, ["push", str(folder), "--repo", REPO, "--repo-type", "model", "--tag", "v3", "--hub", str(hub)]
    )
    assert r.exit_code == 1, r.output
    line = r.output.strip()
    assert line.count("\n") == 0 and line.startswith("error: the local hub model repo org/x is damaged: ")
    assert cause in line and "Nothing was written" in line
    assert f"phr-publish repair org/x --repo-type model --hub {hub}" in line
    assert "created" not in line and "reset --hard" not in line  # not a new repo; not a hand edit
    assert snapshot(hub) == before  # nothing written, nothing pruned
    with pytest.raises(local_hub.LocalHubDamagedError, match="is damaged"):
        push(PushConfig(folder=folder, repo=REPO, repo_type="model", tag="v3", hub=hub))
    assert snapshot(hub) == before

    r = runner.invoke(app, ["repair", REPO, "--repo-type", "model", "--hub", str(hub)])
    assert r.exit_code == 0, r.output
    assert "repaired model repo org/x" in r.output and "tags: v1, v2" in r.output
    assert tags(repo) == ["v1", "v2"] and git(repo, "rev-list", "--count", "main") == "2"
    assert git(repo, "status", "--porcelain", "--untracked-files=all") == ""
    assert (repo / "config.json").read_text() == '{"n": 2}'
    res = push(PushConfig(folder=folder, repo=REPO, repo_type="model", tag="v3", hub=hub))
    assert res.changed and not res.created
    assert tags(repo) == ["v1", "v2", "v3"] and git(repo, "rev-list", "--count", "main") == "3"
    r = runner.invoke(app, ["repair", REPO, "--repo-type", "model", "--hub", str(hub)])
    assert r.exit_code == 0 and "is sound: nothing to repair" in r.output


def test_a_plain_repo_of_the_older_layout_with_a_broken_main_names_the_cause(tmp_path):
    """NAME a plain git repository (written by an older toolkit) whose main names no commit: the cause and the
    repair, not the "edits in its working tree ... reset --hard" hint."""
    repo = tmp_path / "hub" / "models" / REPO
    shutil.copytree(model_folder(tmp_path / "f1", 1), repo)
    git(repo, "init", "-q")
    git(repo, "symbolic-ref", "HEAD", "refs/heads/main")
    git(repo, "add", "-A")
    git(repo, "-c", "user.name=x", "-c", "user.email=x@y", "commit", "-q", "-m", "v1")
    break_main(repo)
    r = CliRunner().invoke(
        app,
        [
            "push",
            str(model_folder(tmp_path / "f2", 2)),
            "--repo",
            REPO,
            "--repo-type",
            "model",
            "--hub",
            str(tmp_path / "hub"),
        ],
    )
    assert r.exit_code == 1, r.output
    assert "its main branch names 0000000000000000000000000000000000000000" in r.output
    assert f"git -C {repo} update-ref refs/heads/main COMMIT" in r.output and "reset --hard" not in r.output


def test_pull_from_a_damaged_repo_names_the_damage(pushed, tmp_path):
    hub, repo, _ = pushed
    delete_current(repo)
    r = CliRunner().invoke(app, ["pull", REPO, "--repo-type", "model", "--hub", str(hub), "--out", str(tmp_path / "d")])
    assert r.exit_code == 1 and "is damaged" in r.output and "phr-publish repair org/x" in r.output
    assert not (tmp_path / "d").exists()


def test_a_version_holding_a_tag_is_never_pruned(pushed, tmp_path):
    """The link pointed back by hand at version 1 (a valid state whose refs lack tag v2): two more pushes keep
    version 2, which alone holds v2, and the store keeps its record of v2."""
    hub, repo, folder = pushed
    v2 = repo.resolve()
    v2_commit = git(repo, "rev-parse", "v2")
    os.unlink(repo)
    os.symlink(".x.hub/v/1", repo)
    push(PushConfig(folder=folder, repo=REPO, repo_type="model", tag="v3", hub=hub))
    push(PushConfig(folder=model_folder(tmp_path / "f4", 4), repo=REPO, repo_type="model", tag="v4", hub=hub))
    assert tags(repo) == ["v1", "v3", "v4"]
    assert v2.is_dir() and git(v2, "rev-parse", "v2") == v2_commit
    store = hub / "models" / "org" / ".x.hub" / "store.git"
    assert git(store, "rev-parse", "refs/tags/v2") == v2_commit


def test_repair_of_a_hub_without_recorded_refs_uses_the_newest_complete_version(pushed):
    """Hubs written before the store recorded refs: the repair falls back to the newest complete version and says
    that pushes after it are to be rerun."""
    hub, repo, _ = pushed
    store = hub / "models" / "org" / ".x.hub" / "store.git"
    for ref in git(store, "for-each-ref", "--format=%(refname)").split():
        git(store, "update-ref", "-d", ref)
    delete_current(repo)
    msg = local_hub.repair(LocalHub(hub), REPO, "model")
    assert "from version 1, its newest complete version (rerun the pushes made after it)" in msg
    assert tags(repo) == ["v1"] and (repo / "config.json").read_text() == '{"n": 1}'


def test_a_killed_first_push_is_still_cleaned_up(tmp_path):
    """A first push killed after building version 1 but before linking it left nothing published: the next push
    removes it and creates the repo (this is no damage)."""
    hub = tmp_path / "hub"
    push(PushConfig(folder=model_folder(tmp_path / "f1", 1), repo=REPO, repo_type="model", hub=hub))
    repo = hub / "models" / REPO
    os.unlink(repo)  # what a kill before the link leaves: a version, no link, no refs recorded
    store = repo.parent / ".x.hub" / "store.git"
    git(store, "update-ref", "-d", "refs/heads/main")
    res = push(PushConfig(folder=model_folder(tmp_path / "f2", 2), repo=REPO, repo_type="model", hub=hub))
    assert res.created and git(repo, "rev-list", "--count", "main") == "1"


# ---- environment faults exit 1 ---------------------------------------------------------------------------------

ENOSPC_GIT = b"error: unable to create temporary file: No space left on device\nfatal: unable to write loose object"


def test_git_failing_on_a_full_disk_exits_1_and_keeps_the_repo(pushed, monkeypatch):
    """git reports ENOSPC while writing the pushed files into the store (its exit status and message, as on a
    full disk): an environment fault, exit 1, the repo unchanged, the rerun named."""
    hub, repo, folder = pushed
    before = snapshot(hub)
    real = subprocess.run

    def run(cmd, *a, **k):
        if "hash-object" in cmd and "-w" in cmd:
            return subprocess.CompletedProcess(cmd, 128, b"", ENOSPC_GIT)
        return real(cmd, *a, **k)

    monkeypatch.setattr(local_hub.subprocess, "run", run)
    r = CliRunner().invoke(app, ["push", str(folder), "--repo", REPO, "--repo-type", "model", "--hub", str(hub)])
    assert r.exit_code == 1, r.output
    assert "No space left on device" in r.output and "the repo keeps its previous version" in r.output
    assert "The disk is full: free space on it first." in r.output
    assert f"Rerun: phr-publish push {folder} --repo org/x --repo-type model --hub {hub}" in r.output
    monkeypatch.undo()
    assert snapshot(hub) == before and tags(repo) == ["v1", "v2"]


@pytest.mark.parametrize("where", ["lock", "version"])
def test_an_oserror_enospc_anywhere_in_the_push_exits_1(pushed, monkeypatch, where):
    hub, repo, folder = pushed
    full = OSError(errno.ENOSPC, "No space left on device")
    if where == "lock":  # the lock file cannot be written
        monkeypatch.setattr(local_hub.LocalHub, "lock", lambda *a, **k: (_ for _ in ()).throw(full))
    else:  # the next version's HEAD cannot be written
        monkeypatch.setattr(local_hub, "_build_version", lambda *a, **k: (_ for _ in ()).throw(full))
    r = CliRunner().invoke(app, ["push", str(folder), "--repo", REPO, "--repo-type", "model", "--hub", str(hub)])
    assert r.exit_code == 1 and "No space left on device" in r.output and "Rerun: phr-publish push" in r.output
    assert tags(repo) == ["v1", "v2"]


def _tmpfs_available(tmp_path: Path) -> bool:
    if shutil.which("unshare") is None:
        return False
    mnt = tmp_path / "probe"
    mnt.mkdir()
    r = subprocess.run(["unshare", "-rm", "mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(mnt)], check=False)
    return r.returncode == 0


def test_a_real_full_disk_exits_1_and_leaves_no_repo(tmp_path):
    """The hub on a 200 KiB tmpfs (a mount namespace of its own), a 300 KiB file to push: git fails with ENOSPC."""
    if not _tmpfs_available(tmp_path):
        pytest.skip("needs `unshare -rm` and a tmpfs mount (user namespaces) to make a small full disk")
    folder = model_folder(tmp_path / "f", 1)
    (folder / "model.safetensors").write_bytes(os.urandom(300_000))
    hub = tmp_path / "hub"
    hub.mkdir()
    exe = shutil.which("phr-publish", path=str(Path(os.sys.executable).parent))
    script = (
        f'mount -t tmpfs -o size=200k tmpfs "{hub}" && "{exe}" push "{folder}" --repo org/x --repo-type model '
        f'--hub "{hub}"; echo "exit=$?"; ls -A "{hub}/models/org"'
    )
    r = subprocess.run(["unshare", "-rm", "sh", "-c", script], capture_output=True, text=True, timeout=120)
    assert "exit=1" in r.stdout, r.stdout + r.stderr
    assert (
        "No space left on device" in r.stderr
        and "The disk is full" in r.stderr
        and "Rerun: phr-publish push" in r.stderr
    )
    assert r.stdout.split("exit=1")[1].split() == [".x.lock"]  # no repo, no half-written store


# ---- online: a reply lost after the Hub applied the request ----------------------------------------------------


def test_lost_commit_reply_says_main_moved_and_the_tag_did_not(hf, hf_token, tmp_path):
    first = push(
        PushConfig(
            folder=model_folder(tmp_path / "f1", 1), repo="alice/x", repo_type="model", tag="v1", endpoint=hf.url
        )
    )
    folder = model_folder(tmp_path / "f2", 2)
    hf.drop_reply_next("/commit/")
    r = CliRunner().invoke(
        app, ["push", str(folder), "--repo", "alice/x", "--repo-type", "model", "--tag", "v2", "--endpoint", hf.url]
    )
    assert r.exit_code == 1, r.output
    main = hf.head("model", "alice/x")
    assert main != first.revision and hf.files("model", "alice/x")["config.json"] == b'{"n": 2}'
    assert f"main moved to the new commit {main} (this folder), but tag v2 was not created" in r.output
    assert "keeps its previous version" not in r.output and hf_token not in r.output
    assert f"Rerun: phr-publish push {folder} --repo alice/x --repo-type model --tag v2 --endpoint {hf.url}" in r.output
    commits = len(hf.commits("model", "alice/x"))
    again = push(
        PushConfig(folder=folder, repo="alice/x", repo_type="model", tag="v2", endpoint=hf.url)
    )  # the rerun repairs it
    assert not again.changed and again.tag_created and hf.head("model", "alice/x", "v2") == main
    assert len(hf.commits("model", "alice/x")) == commits


def test_lost_tag_reply_and_a_refused_commit_are_told_apart(hf, tmp_path):
    push(
        PushConfig(
            folder=model_folder(tmp_path / "f1", 1), repo="alice/x", repo_type="model", tag="v1", endpoint=hf.url
        )
    )
    hf.drop_reply_next("/tag/")
    with pytest.raises(PushFailedError) as e:
        push(
            PushConfig(
                folder=model_folder(tmp_path / "f2", 2), repo="alice/x", repo_type="model", tag="v2", endpoint=hf.url
            )
        )
    main = hf.head("model", "alice/x")
    assert hf.head("model", "alice/x", "v2") == main
    assert f"main moved to the new commit {main} (this folder) and tag v2 names it; nothing is left to do" in str(
        e.value
    )
    hf.fail_next("/commit/", 500)
    with pytest.raises(PushFailedError) as e:
        push(
            PushConfig(
                folder=model_folder(tmp_path / "f3", 3), repo="alice/x", repo_type="model", tag="v3", endpoint=hf.url
            )
        )
    assert f"The repo keeps its previous version (main is still {main};" in str(e.value)
    assert hf.head("model", "alice/x") == main


def test_lost_pull_request_reply_does_not_claim_the_repo_is_unchanged(hf, hf_token, tmp_path):
    from phr.hub.online import add_file_pr_online

    push(PushConfig(folder=model_folder(tmp_path / "f1", 1), repo="alice/x", repo_type="model", endpoint=hf.url))
    main = hf.head("model", "alice/x")
    hf.drop_reply_next("/commit/")
    with pytest.raises(PushFailedError) as e:
        push(
            PushConfig(
                folder=model_folder(tmp_path / "f2", 2),
                repo="alice/x",
                repo_type="model",
                create_pr=True,
                endpoint=hf.url,
            )
        )
    assert "the pull request may have been opened before its reply was lost" in str(e.value)
    hf.drop_reply_next("/commit/")
    with pytest.raises(PushFailedError) as e:
        add_file_pr_online("alice/x", "model", "NOTES.md", b"n\n", message="m", token=hf_token, endpoint=hf.url)
    assert "the repo is unchanged" not in str(e.value) and "may have been opened" in str(e.value)
    assert hf.head("model", "alice/x") == main
