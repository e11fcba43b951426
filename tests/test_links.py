"""Links never leave an artifact folder: `validate`, the push gate (local hub and the Hub protocol) and the file
walk refuse symbolic links (to a file, a folder, a parent, a loop) and files hard-linked from outside, naming each;
`pull --out LINK` refuses instead of emptying the folder the link points to."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from phr.cli import app
from phr.config.ops import PullConfig, PushConfig
from phr.core.fs import folder_links
from phr.hub import DestinationExistsError, PublishError, ValidationFailedError, folder_files, pull, push

runner = CliRunner()

LINKS = {
    "file": ("extra/passwd", "/etc/passwd"),
    "folder": ("etcdir", "/etc"),
    "parent": ("data/up", ".."),
    "loop": ("loop", "."),
}


@pytest.fixture
def outside(tmp_path) -> Path:
    d = tmp_path / "outside"
    d.mkdir()
    (d / "secret.txt").write_text("do not publish\n")
    return d


def hostile(mini_folder: Path, tmp_path: Path, kind: str) -> tuple[Path, str]:
    folder = tmp_path / f"hostile-{kind}"
    shutil.copytree(mini_folder, folder)
    rel, target = LINKS[kind]
    (folder / rel).parent.mkdir(parents=True, exist_ok=True)
    os.symlink(target, folder / rel)
    return folder, rel


@pytest.mark.parametrize("kind", list(LINKS))
def test_every_link_kind_is_named_by_validate_push_and_the_walk(mini_folder, tmp_path, kind):
    folder, rel = hostile(mini_folder, tmp_path, kind)
    assert [r for r, _ in folder_links(folder)] == [rel]
    with pytest.raises(PublishError, match="symbolic link") as e:
        folder_files(folder)
    assert rel in str(e.value)
    r = runner.invoke(app, ["validate", str(folder)])
    assert r.exit_code == 1, r.output
    assert rel in r.output and "link" in r.output
    hub = tmp_path / "hub"
    with pytest.raises(ValidationFailedError) as e:
        push(PushConfig(folder=folder, repo="org/hostile", hub=hub))
    assert rel in str(e.value) and "nothing was uploaded" in str(e.value)
    assert [(x.row_id, x.check) for x in e.value.report.rejections] == [(rel, "link")]
    assert not (hub / "datasets" / "org" / "hostile").exists()
    r = runner.invoke(app, ["push", str(folder), "--repo", "org/hostile", "--hub", str(hub)])
    assert r.exit_code != 0 and rel in r.output and "Traceback" not in r.output


def test_hard_link_from_outside_is_refused_and_inside_pairs_are_not(mini_folder, tmp_path, outside):
    folder = tmp_path / "hard"
    shutil.copytree(mini_folder, folder)
    os.link(outside / "secret.txt", folder / "secret.txt")
    links = folder_links(folder)
    assert [r for r, _ in links] == ["secret.txt"] and "hard link" in links[0][1]
    with pytest.raises(ValidationFailedError, match="secret.txt"):
        push(PushConfig(folder=folder, repo="org/hard", hub=tmp_path / "hub"))
    # two names of one file, both inside the folder, point nowhere else
    (folder / "secret.txt").unlink()
    os.link(folder / "manifest.json", folder / "manifest-copy.json")
    assert folder_links(folder) == []


def test_online_push_refuses_links_before_any_request(mini_folder, tmp_path, monkeypatch):
    hub_server = pytest.importorskip("tests.support.hub_server")
    token = "hf_links_test_token_0123456789"
    monkeypatch.delenv("PHR_HUB_DIR", raising=False)
    monkeypatch.setenv("HF_TOKEN", token)
    folder, rel = hostile(mini_folder, tmp_path, "folder")
    with hub_server.HubServer(tokens={token: "alice"}) as server, server.patch_clients():
        with pytest.raises(ValidationFailedError, match=rel):
            push(PushConfig(folder=folder, repo="alice/hostile", endpoint=server.url))
        assert not server.repo_exists("dataset", "alice/hostile")
        assert not [r for r in server.requests if r["method"] != "GET"]


def test_pull_refuses_a_symlinked_destination_and_keeps_its_target(mini_folder, tmp_path):
    hub = tmp_path / "hub"
    push(PushConfig(folder=mini_folder, repo="org/phrbench", hub=hub))
    mine = tmp_path / "my-unrelated-folder"
    mine.mkdir()
    (mine / "thesis.tex").write_text("years of work\n")
    link = tmp_path / "dl"
    os.symlink(mine, link)
    with pytest.raises(DestinationExistsError, match="symbolic link"):
        pull(PullConfig(repo="org/phrbench", out=link, hub=hub, overwrite=True))
    r = runner.invoke(app, ["pull", "org/phrbench", "--out", str(link), "--hub", str(hub), "--overwrite"])
    assert r.exit_code != 0 and "symbolic link" in r.output
    assert (mine / "thesis.tex").read_text() == "years of work\n" and sorted(os.listdir(mine)) == ["thesis.tex"]
    assert link.is_symlink()
