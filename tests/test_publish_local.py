"""Publishing (phr.hub) to a local hub: real git, real `datasets`, PHRBench-mini.

Online-path checks that need no server (offline mode, missing token) are here too; pushes through the real
huggingface_hub client to the Hub-protocol test server are at the end (skipped when it is not available).
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import yaml
from pydantic import ValidationError

from phr.bench.folder import data_file
from phr.config.ops import PullConfig, PushConfig, PushResultsConfig
from phr.core.parquet import write_parquet
from phr.hub import (
    DestinationExistsError,
    MissingTokenError,
    PublishError,
    PushFailedError,
    RepoTypeMismatchError,
    TagExistsError,
    ValidationFailedError,
    folder_files,
    pull,
    push,
)
from phr.hub import local as local_hub
from phr.hub.card import usage_for_repo
from phr.hub.repo import check_repo_id
from tests.support.scored import scored_result

REPO = "org/phrbench"


# ---- helpers ---------------------------------------------------------------------------------------------------


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=True).stdout.strip()


def repo_dir(hub: Path, repo_id: str = REPO, kind: str = "datasets") -> Path:
    return hub / kind / repo_id


def state(repo: Path) -> dict:
    """Everything a push may change: refs, commit count, working tree content, git status."""
    return {
        "refs": git(repo, "for-each-ref", "--format=%(refname) %(objectname)"),
        "commits": git(repo, "rev-list", "--all", "--count"),
        "files": {rel: p.read_bytes() for rel, p in folder_files(repo).items()},
        "status": git(repo, "status", "--porcelain", "--untracked-files=all"),
    }


def pushed_bytes(path: Path, rel: str, repo_id: str) -> bytes:
    """A built file as a push uploads it: the card's usage snippet names the repo, every other file as it is."""
    if rel == "README.md":
        return usage_for_repo(path.read_text(), repo_id).encode()
    return path.read_bytes()


def variant(src: Path, dest: Path, **files: str) -> Path:
    """A copy of ``src`` with extra or replaced text files (``name__sub`` -> ``name/sub``)."""
    shutil.copytree(src, dest)
    for name, text in files.items():
        p = dest / name.replace("__", "/")
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    return dest


def result_json(path: Path, model: str, *, bh: float, run_id: str | None = None, **metrics) -> Path:
    data = {
        "schema_version": 1,
        "model": model,
        "revision": "abc1234",
        "dataset": {"id": REPO, "revision": "v0.1.0"},
        "metrics": {"accuracy_b": 0.7, "accuracy_bt": 0.72, "accuracy_bh": bh, **metrics},
        "date": "2025-06-01",
    }
    if run_id:
        data["run_id"] = run_id
    path.write_text(json.dumps(data))
    return path


# ---- fixtures --------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def built(mini_folder) -> Path:
    return mini_folder


@pytest.fixture(scope="module")
def pristine(built, tmp_path_factory):
    """A local hub after the first push of PHRBench-mini with tag v0.1.0 (never modified: copy it)."""
    hub = tmp_path_factory.mktemp("pristine") / "hub"
    res = push(PushConfig(folder=built, repo=REPO, tag="v0.1.0", hub=hub))
    return hub, res


@pytest.fixture
def hub(pristine, tmp_path) -> Path:
    dest = tmp_path / "hub"
    shutil.copytree(pristine[0], dest, symlinks=True)
    return dest


# ---- datasets: push, load, idempotency, tags -------------------------------------------------------------------


def test_first_push_commits_tags_and_loads_with_datasets(built, pristine):
    from datasets import load_dataset

    hub, res = pristine
    repo = repo_dir(hub)
    assert res.changed and res.created and res.local and res.tag_created
    assert res.files == sorted(folder_files(built)) and res.deleted == []
    assert git(repo, "rev-parse", "main") == res.revision == res.head
    assert git(repo, "rev-parse", "v0.1.0^{commit}") == res.revision
    assert git(repo, "rev-list", "--count", "main") == "1"
    assert git(repo, "status", "--porcelain", "--untracked-files=all") == ""
    assert git(repo, "log", "-1", "--format=%an <%ae>") == "phr-publish <phr-publish@localhost>"
    for rel, p in folder_files(built).items():  # the working tree holds main's files, byte for byte
        assert (repo / rel).read_bytes() == pushed_bytes(p, rel, REPO), rel
    hub_rows = load_dataset(str(repo), "all")["test"].to_list()
    local_rows = load_dataset(str(built), "all")["test"].to_list()
    assert len(hub_rows) == 170 and hub_rows == local_rows


def test_identical_push_creates_no_commit_and_same_tag_is_a_noop(built, hub):
    repo = repo_dir(hub)
    before = state(repo)
    again = push(PushConfig(folder=built, repo=REPO, tag="v0.1.0", hub=hub))
    assert not again.changed and again.revision is None and not again.tag_created
    assert again.head == git(repo, "rev-parse", "main")
    plain = push(PushConfig(folder=built, repo=REPO, hub=hub))
    assert not plain.changed and plain.revision is None
    assert state(repo) == before
    # a new tag on an unchanged push names the current head, without a commit
    tagged = push(PushConfig(folder=built, repo=REPO, tag="v0.1.1", hub=hub))
    assert not tagged.changed and tagged.tag_created
    assert git(repo, "rev-parse", "v0.1.1^{commit}") == git(repo, "rev-parse", "main")
    assert git(repo, "rev-list", "--all", "--count") == before["commits"]


def test_changed_folder_makes_one_commit_deletions_and_immutable_tags(built, hub, tmp_path):
    repo = repo_dir(hub)
    v1 = git(repo, "rev-parse", "main")
    changed = variant(built, tmp_path / "v2", **{"NOTES.md": "release notes\n", "extra__a.txt": "a\n"})
    res = push(PushConfig(folder=changed, repo=REPO, tag="v0.2.0", hub=hub, message="v0.2.0: notes"))
    assert res.changed and res.files == ["NOTES.md", "extra/a.txt"] and res.deleted == []
    assert git(repo, "rev-list", "--count", "main") == "2"
    assert git(repo, "rev-parse", "main^") == v1
    assert git(repo, "log", "-1", "--format=%s", "main") == "v0.2.0: notes"
    assert git(repo, "rev-parse", "v0.2.0^{commit}") == res.revision
    assert (repo / "extra" / "a.txt").read_text() == "a\n"
    # v0.1.0 names an older commit: a push that reuses it is refused before anything changes
    before = state(repo)
    with pytest.raises(TagExistsError, match="v0.1.0"):
        push(PushConfig(folder=built, repo=REPO, tag="v0.1.0", hub=hub))
    assert state(repo) == before
    # the original folder again: one commit that deletes the extra files
    back = push(PushConfig(folder=built, repo=REPO, hub=hub))
    assert back.changed and back.files == [] and back.deleted == ["NOTES.md", "extra/a.txt"]
    assert not (repo / "NOTES.md").exists() and not (repo / "extra").exists()
    assert git(repo, "rev-list", "--count", "main") == "3"
    assert git(repo, "status", "--porcelain", "--untracked-files=all") == ""


def test_tag_at_head_with_a_changed_folder_is_refused(built, hub, tmp_path):
    repo = repo_dir(hub)
    before = state(repo)
    with pytest.raises(TagExistsError, match="immutable"):
        push(PushConfig(folder=variant(built, tmp_path / "c", **{"NOTES.md": "x\n"}), repo=REPO, tag="v0.1.0", hub=hub))
    assert state(repo) == before


def test_folder_failing_validation_is_refused_with_the_report(built, hub, tmp_path):
    repo = repo_dir(hub)
    before = state(repo)
    bad = variant(built, tmp_path / "bad")
    path = data_file(bad, "hallucinated")
    table = pq.read_table(path)
    rows = table.to_pylist()
    victim = next(r for r in rows if r["task_type"] == "multiple_choice" and len(r["answer"]) > 8)
    victim["premise"] = f"{victim['premise']} The correct answer is {victim['answer']}."
    write_parquet(table.from_pylist(rows, schema=table.schema), path)
    with pytest.raises(ValidationFailedError) as e:
        push(PushConfig(folder=bad, repo=REPO, tag="v0.3.0", hub=hub))
    msg = str(e.value)
    assert "validation FAILED" in msg and victim["id"] in msg and "leak" in msg.lower()
    assert "nothing was uploaded" in msg
    assert state(repo) == before
    # a new repo is not even created
    with pytest.raises(ValidationFailedError):
        push(PushConfig(folder=bad, repo="org/other", hub=hub))
    assert not repo_dir(hub, "org/other").exists()


def test_data_file_edited_under_its_hashed_name_is_refused(built, hub, tmp_path):
    """The content hash in a data file's name is checked by validate and by the push gate."""
    from phr.core.parquet import content_hash
    from phr.validation.folder import validate_folder

    repo = repo_dir(hub)
    before = state(repo)
    edited = variant(built, tmp_path / "edited")
    path = data_file(edited, "baseline")
    named = path.stem.rsplit("-", 1)[1]
    pq.write_table(pq.read_table(path), path, compression="snappy")  # the same rows, other bytes, the old name
    actual = content_hash(path)
    assert actual != named
    report = validate_folder(edited)
    assert [(r.row_id, r.check) for r in report.rejections] == [(f"data/{path.name}", "content_hash")]
    assert f"name says content hash {named}" in report.rejections[0].reason
    assert f"content hashes to {actual}" in report.rejections[0].reason
    with pytest.raises(ValidationFailedError) as e:
        push(PushConfig(folder=edited, repo=REPO, tag="v0.3.0", hub=hub))
    assert f"data/{path.name}" in str(e.value) and actual in str(e.value)
    assert state(repo) == before
    assert validate_folder(built).ok  # the built folder itself passes


def test_create_pr_makes_a_branch_and_leaves_main(built, hub, tmp_path):
    repo = repo_dir(hub)
    before = state(repo)
    changed = variant(built, tmp_path / "pr", **{"NOTES.md": "proposed\n"})
    res = push(PushConfig(folder=changed, repo=REPO, create_pr=True, hub=hub))
    assert res.changed and res.pr_ref == "pr/1" and res.pr_url.endswith("#pr/1")
    assert git(repo, "rev-parse", "pr/1") == res.revision
    assert git(repo, "rev-parse", "pr/1^") == git(repo, "rev-parse", "main")
    after = state(repo)
    assert after["files"] == before["files"] and after["status"] == ""
    assert git(repo, "rev-parse", "main") in before["refs"]
    second = push(
        PushConfig(
            folder=variant(built, tmp_path / "pr2", **{"NOTES.md": "other\n"}), repo=REPO, create_pr=True, hub=hub
        )
    )
    assert second.pr_ref == "pr/2"
    got = pull(PullConfig(repo=REPO, revision="pr/1", out=tmp_path / "got", hub=hub))
    assert (got / "NOTES.md").read_text() == "proposed\n"
    with pytest.raises(PublishError, match="--tag and --create-pr"):
        push(PushConfig(folder=changed, repo=REPO, create_pr=True, tag="v9", hub=hub))


def test_pull_by_tag_and_destination_rules(built, hub, tmp_path):
    push(PushConfig(folder=variant(built, tmp_path / "v2", **{"NOTES.md": "n\n"}), repo=REPO, tag="v0.2.0", hub=hub))
    dest = pull(PullConfig(repo=REPO, revision="v0.1.0", out=tmp_path / "old", hub=hub))
    assert {r: p.read_bytes() for r, p in folder_files(dest).items()} == {
        r: pushed_bytes(p, r, REPO) for r, p in folder_files(built).items()
    }
    assert not (dest / ".git").exists()
    latest = pull(PullConfig(repo=REPO, out=tmp_path / "new", hub=hub))
    assert (latest / "NOTES.md").exists()
    with pytest.raises(DestinationExistsError, match="overwrite"):
        pull(PullConfig(repo=REPO, revision="v0.2.0", out=tmp_path / "old", hub=hub))
    again = pull(PullConfig(repo=REPO, revision="v0.2.0", out=tmp_path / "old", hub=hub, overwrite=True))
    assert (again / "NOTES.md").exists()
    sha = git(repo_dir(hub), "rev-parse", "v0.1.0")
    assert not (pull(PullConfig(repo=REPO, revision=sha[:10], out=tmp_path / "bysha", hub=hub)) / "NOTES.md").exists()
    with pytest.raises(PublishError, match="not found"):
        pull(PullConfig(repo=REPO, revision="v9.9.9", out=tmp_path / "none", hub=hub))
    with pytest.raises(PublishError, match="no dataset repo"):
        pull(PullConfig(repo="org/missing", out=tmp_path / "none", hub=hub))


# ---- atomicity -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("step", ["_stage", "_commit", "_checkout"])
def test_failure_mid_push_leaves_main_and_working_tree_unchanged(built, hub, tmp_path, monkeypatch, step):
    repo = repo_dir(hub)
    monkeypatch.setattr(local_hub, "gate", lambda folder, repo_type, **policy: None)  # atomicity, not validation
    changed = variant(built, tmp_path / "c", **{"NOTES.md": "n\n"})
    (changed / "manifest.json").unlink()
    before = state(repo)

    def boom(*a, **k):
        raise RuntimeError(f"injected failure in {step}")

    if step == "_checkout":  # fail part-way through writing the next version's working tree
        real = local_hub._checkout

        def boom(repo_path):
            real(repo_path)
            (repo_path / "manifest.json").unlink()
            (repo_path / "half-written.tmp").write_text("x")
            raise RuntimeError("injected failure in _checkout")

    monkeypatch.setattr(local_hub, step, boom)
    with pytest.raises(PushFailedError) as e:
        push(PushConfig(folder=changed, repo=REPO, tag="v0.2.0", hub=hub))
    assert "previous version" in str(e.value) and "Rerun: phr-publish push" in str(e.value)
    assert "--tag v0.2.0" in str(e.value)
    assert {k: v for k, v in state(repo).items() if k != "commits"} == {
        k: v for k, v in before.items() if k != "commits"
    }
    assert [p.name for p in (repo.parent / f".{repo.name}.hub" / "v").iterdir()] == [repo.resolve().name]
    monkeypatch.undo()
    ok = push(PushConfig(folder=changed, repo=REPO, tag="v0.2.0", hub=hub))  # the rerun works
    assert ok.changed and git(repo, "rev-parse", "v0.2.0^{commit}") == ok.revision


def test_failure_in_a_new_repo_leaves_no_repo(built, tmp_path, monkeypatch):
    hub = tmp_path / "hub"
    monkeypatch.setattr(local_hub, "gate", lambda folder, repo_type, **policy: None)
    monkeypatch.setattr(local_hub, "_commit", lambda *a, **k: (_ for _ in ()).throw(OSError("disk full")))
    with pytest.raises(PushFailedError, match="disk full"):
        push(PushConfig(folder=built, repo=REPO, hub=hub))
    assert not repo_dir(hub).exists()
    assert not [p for p in repo_dir(hub).parent.iterdir() if not p.name.endswith(".lock")]


def test_hand_edited_working_tree_is_refused(built, hub):
    repo = repo_dir(hub)
    (repo / "README.md").write_text("edited\n")
    with pytest.raises(PublishError, match="reset --hard"):
        push(PushConfig(folder=built, repo=REPO, hub=hub))


def test_repo_type_mismatch_and_bad_arguments(built, hub, tmp_path):
    model = tmp_path / "m"
    model.mkdir()
    (model / "README.md").write_text("---\nlicense: mit\n---\n# m\n")
    with pytest.raises(RepoTypeMismatchError, match="--repo-type dataset"):
        push(PushConfig(folder=model, repo=REPO, repo_type="model", hub=hub))
    with pytest.raises(PublishError, match="invalid repo id"):
        push(PushConfig(folder=built, repo="no-slash", hub=hub))
    with pytest.raises(PublishError, match="invalid repo id"):
        push(PushConfig(folder=built, repo="../escape", hub=hub))
    with pytest.raises(PublishError, match="invalid tag"):
        push(PushConfig(folder=built, repo=REPO, tag="bad tag", hub=hub))
    with pytest.raises(ValidationError, match="repo_type"):  # the config refuses it before any push
        PushConfig(folder=built, repo=REPO, repo_type="notebook", hub=hub)


# names the Hub refuses (huggingface_hub's validator, and the Hub's rules it leaves out), with the words said
BAD_REPO_IDS = [
    ("org/x.git", "cannot end with '.git'"),
    ("org.git/x", "cannot end with '.git'"),
    ("org/x--y", "cannot hold '--' or '..'"),
    ("org--a/x", "cannot hold '--' or '..'"),
    ("org/x..y", "cannot hold '--' or '..'"),
    ("org/-x", "must use ASCII letters"),
    ("org/x.", "must use ASCII letters"),
    ("org/caf\u00e9", "must use ASCII letters"),
    ("org/" + "x" * 97, "has 97 characters (at most 96)"),
    ("../escape", "must use ASCII letters"),
    ("no-slash", "expected ORG/NAME"),
    ("a/b/c", "expected ORG/NAME"),
]


@pytest.mark.parametrize("repo_id,reason", BAD_REPO_IDS)
def test_repo_ids_follow_the_hub_rules_on_the_local_hub(built, tmp_path, repo_id, reason):
    from huggingface_hub.utils import HFValidationError, validate_repo_id

    hub = tmp_path / "hub"
    with pytest.raises(PublishError, match=f"invalid repo id .*{re.escape(reason)}"):
        push(PushConfig(folder=built, repo=repo_id, hub=hub))
    with pytest.raises(PublishError, match="invalid repo id"):
        pull(PullConfig(repo=repo_id, hub=hub, out=tmp_path / "dl"))
    assert not hub.exists() and not (tmp_path / "dl").exists()  # refused before anything was created
    if repo_id.count("/") == 1 and repo_id not in ("org.git/x",):  # the library's own validator agrees
        with pytest.raises(HFValidationError):
            validate_repo_id(repo_id)


def test_repo_ids_the_hub_accepts_are_accepted(built, tmp_path):
    from huggingface_hub.utils import validate_repo_id

    for repo_id in ("org/x", "Org-1/Foo_Bar.v1", "o/" + "x" * 96, "org/x.gitx"):
        validate_repo_id(repo_id)
        assert check_repo_id(repo_id) == repo_id
    assert push(PushConfig(folder=built, repo="Org-1/Foo_Bar.v1", hub=tmp_path / "hub")).changed


def test_phr_hub_dir_env_selects_the_local_hub(built, hub, monkeypatch):
    monkeypatch.setenv("PHR_HUB_DIR", str(hub))
    res = push(PushConfig(folder=built, repo=REPO))
    assert res.local and not res.changed


# ---- online path without a server: offline mode, missing token -------------------------------------------------


def test_online_push_refused_offline_and_without_token(built, tmp_path, monkeypatch):
    from huggingface_hub import constants

    monkeypatch.delenv("PHR_HUB_DIR", raising=False)
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    with pytest.raises(PublishError, match="HF_HUB_OFFLINE"):
        push(PushConfig(folder=built, repo=REPO))
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    for var in ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "HF_OIDC_RESOURCE"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setattr(constants, "HF_TOKEN_PATH", str(tmp_path / "no-token"))
    monkeypatch.setattr(constants, "HF_STORED_TOKENS_PATH", str(tmp_path / "no-tokens"))
    # an unreachable endpoint proves the token check comes before any request
    with pytest.raises(MissingTokenError, match="HF_TOKEN.*hf auth login.*--hub HUBDIR"):
        push(PushConfig(folder=built, repo=REPO, endpoint="http://127.0.0.1:9"))


# ---- models ----------------------------------------------------------------------------------------------------


def test_model_card_eval_results_push_and_pr(tmp_path):
    from huggingface_hub import ModelCard, parse_eval_result_entries

    from phr.cards.eval_yaml import model_eval_results_yaml
    from phr.cards.model_card import TRAINING_FILE, write_model_card
    from phr.eval.results import load_result
    from phr.leaderboard.repo import open_model_pr

    hub = tmp_path / "hub"
    ckpt = tmp_path / "tiny"
    ckpt.mkdir()
    (ckpt / "config.json").write_text('{"model_type": "llama"}')
    (ckpt / TRAINING_FILE).write_text(
        json.dumps(
            {
                "schema_version": 1,
                "base_model": "HuggingFaceTB/SmolLM2-135M-Instruct",
                "datasets": [{"id": "org/hallucination-r1", "revision": "v0.1.0"}],
                "hyperparameters": {"learning_rate": 1e-6, "num_generations": 8},
                "reward": {"name": "phr-reward"},
                "method": "GRPO",
                "trainer_extra": {"kept": True},
            }
        )
    )
    res = load_result(result_json(tmp_path / "r.json", "org/tiny", bh=0.41, OL=0.12))
    readme = write_model_card(ckpt, eval_results=[res], model_name="tiny")
    card = ModelCard.load(readme, ignore_metadata_errors=False)
    assert card.data.base_model == "HuggingFaceTB/SmolLM2-135M-Instruct"
    assert card.data.datasets == ["org/hallucination-r1"]
    assert "grpo" in card.data.tags and card.data.library_name == "transformers"
    assert "model-index:" in readme.read_text()
    by_metric = {r.metric_type: r for r in card.data.eval_results}
    assert set(by_metric) == {"accuracy_b", "accuracy_bt", "accuracy_bh", "OL"}
    assert by_metric["accuracy_bh"].metric_value == 0.41 and by_metric["accuracy_bh"].dataset_config == "hallucinated"
    assert by_metric["accuracy_bh"].dataset_revision == "v0.1.0"
    entries = parse_eval_result_entries(yaml.safe_load((ckpt / ".eval_results" / "phrbench.yaml").read_text()))
    assert {(e.task_id, e.value) for e in entries} >= {("accuracy_bh", 0.41), ("ol", 0.12)}
    meta = json.loads((ckpt / TRAINING_FILE).read_text())
    assert meta["trainer_extra"] == {"kept": True} and meta["hyperparameters"]["num_generations"] == 8
    assert "v0.1.0" in readme.read_text() and "num_generations" in readme.read_text()

    pushed = push(PushConfig(folder=ckpt, repo="org/tiny", repo_type="model", hub=hub))
    repo = repo_dir(hub, "org/tiny", "models")
    assert pushed.changed and (repo / ".eval_results" / "phrbench.yaml").exists()
    assert not push(PushConfig(folder=ckpt, repo="org/tiny", repo_type="model", hub=hub)).changed
    # the leaderboard's PR on the submitting model's repo
    other = load_result(result_json(tmp_path / "r2.json", "org/tiny", bh=0.55, run_id="second"))
    pr = open_model_pr("org/tiny", model_eval_results_yaml(other), to=hub)
    assert pr.pr_ref == "pr/1" and pr.files == [".eval_results/phrbench.yaml"]
    shown = git(repo, "show", "pr/1:.eval_results/phrbench.yaml")
    assert "0.55" in shown and git(repo, "rev-parse", "pr/1^") == git(repo, "rev-parse", "main")
    assert git(repo, "show", "pr/1:README.md") == git(repo, "show", "main:README.md")  # an overlay
    with pytest.raises(PublishError, match="no model repo"):
        open_model_pr("org/absent", model_eval_results_yaml(other), to=hub)
    # a model card whose metadata does not parse is refused
    (ckpt / "README.md").write_text("---\nmodel-index: [{name: x, results: [{task: 3}]}]\n---\n# x\n")
    with pytest.raises(ValidationFailedError, match="card"):
        push(PushConfig(folder=ckpt, repo="org/tiny", repo_type="model", hub=hub))
    # base_model is required
    bare = tmp_path / "bare"
    bare.mkdir()
    with pytest.raises(PublishError, match="base_model"):
        write_model_card(bare)
    write_model_card(bare, base_model="x/y", datasets=[("org/d", "v1")], hyperparameters={"lr": 1}, reward_config=None)
    assert json.loads((bare / TRAINING_FILE).read_text())["datasets"] == [{"id": "org/d", "revision": "v1"}]


# ---- leaderboard results ---------------------------------------------------------------------------------------


def test_results_repo_leaderboard(tmp_path, built):
    from datasets import load_dataset

    from phr.eval.results import ResultsError, load_result
    from phr.leaderboard.repo import push_results, result_path
    from phr.leaderboard.verify import evidence_path

    hub = tmp_path / "hub"
    r1 = scored_result(tmp_path / "r1", built, "org/model-a", wrong_if=lambda n: n % 3 == 0)
    r2 = scored_result(tmp_path / "r2", built, "org/model-b", wrong_if=lambda n: n % 5 == 0, run_id="greedy")

    def push_cfg(*results, **kw):
        return PushResultsConfig(results=list(results), repo="org/results", hub=hub, datasets=[str(built)], **kw)

    res = push_results(push_cfg(r1, r2, eval_yaml=built / "eval.yaml"))
    repo = repo_dir(hub, "org/results")
    assert res.changed and res.created
    assert (repo / "results" / "org--model-b" / "greedy.json").exists()
    assert len(list((repo / "results").rglob("*.json"))) == 2 and len(list((repo / "evidence").glob("*.jsonl"))) == 2
    assert (repo / "eval.yaml").read_bytes() == (built / "eval.yaml").read_bytes()
    table = pq.read_table(repo / "data" / "leaderboard.parquet").to_pylist()
    assert [r["model"] for r in table] == ["org/model-b", "org/model-a"]  # best B+H first
    a = table[1]
    assert a["delta_bh"] == pytest.approx(a["accuracy_bh"] - a["accuracy_b"])
    assert a["OL"] is None and a["revision"] == "abc1234" and a["tags"] == ""
    lb = load_dataset(str(repo), "leaderboard")
    assert lb["train"].num_rows == 2
    # idempotent: the same submissions again change nothing
    assert not push_results(push_cfg(r1, r2)).changed
    # a third submission: one commit (its result and evidence), the leaderboard rebuilt from all three
    r3 = scored_result(tmp_path / "r3", built, "org/model-c", wrong_if=lambda n: True)
    third = push_results(push_cfg(r3))
    assert third.changed and third.files == sorted(
        ["README.md", "data/leaderboard.parquet", result_path(load_result(r3)), evidence_path(load_result(r3))]
    )
    assert pq.read_table(repo / "data" / "leaderboard.parquet").num_rows == 3
    assert (repo / "eval.yaml").read_bytes() == (built / "eval.yaml").read_bytes()  # kept
    # same run id, other content: refused unless replace
    changed = scored_result(tmp_path / "r2b", built, "org/model-b", wrong_if=lambda n: n % 7 == 0, run_id="greedy")
    with pytest.raises(ResultsError, match="replace"):
        push_results(push_cfg(changed))
    assert push_results(push_cfg(changed, replace=True)).changed
    # an invalid submission
    bad = tmp_path / "bad.json"
    bad.write_text(
        json.dumps(
            {
                "model": "x/y",
                "revision": "r",
                "dataset": {"id": "a/b", "revision": "v"},
                "metrics": {"accuracy_b": 0.5, "accuracy_bt": 1.5},
            }
        )
    )
    with pytest.raises(ResultsError, match="accuracy_bh"):
        push_results(PushResultsConfig(results=[bad], repo="org/results", hub=hub))
    # a hand-edited results folder whose leaderboard no longer matches is refused by the gate
    folder = pull(PullConfig(repo="org/results", out=tmp_path / "res", hub=hub))
    (folder / "results" / "org--model-c").rename(folder / "results" / "zz")
    with pytest.raises(ValidationFailedError, match="belongs at"):
        push(PushConfig(folder=folder, repo="org/results", hub=hub))


# ---- CLI -------------------------------------------------------------------------------------------------------


def test_cli_push_pull(built, tmp_path, monkeypatch):
    from typer.testing import CliRunner

    from phr.cli import app

    runner = CliRunner()
    hub = tmp_path / "hub"
    r = runner.invoke(app, ["push", str(built), "--repo", "org/cli", "--tag", "v1.0.0", "--hub", str(hub)])
    assert r.exit_code == 0, r.output
    assert "committed" in r.output and "tag v1.0.0 created" in r.output and str(hub) in r.output
    monkeypatch.setenv("PHR_HUB_DIR", str(hub))
    r = runner.invoke(app, ["push", str(built), "--repo", "org/cli", "--tag", "v1.0.0"])
    assert r.exit_code == 0, r.output
    assert "no changes" in r.output
    r = runner.invoke(app, ["pull", "org/cli", "--revision", "v1.0.0", "--out", str(tmp_path / "dl")])
    assert r.exit_code == 0, r.output
    assert (tmp_path / "dl" / "README.md").exists() and "pulled dataset org/cli@v1.0.0" in r.output
    r = runner.invoke(app, ["pull", "org/cli", "--out", str(tmp_path / "dl"), "--hub", str(hub)])
    assert r.exit_code == 2 and "error:" in r.output and "--overwrite" in r.output
    r = runner.invoke(app, ["push", str(built), "--repo", "no-slash"])
    assert r.exit_code == 2 and "invalid repo id" in r.output
    r = runner.invoke(app, ["push", str(built), "--repo", "org/x.git"])
    assert r.exit_code == 2 and "invalid repo id 'org/x.git': 'x.git' cannot end with '.git'" in r.output
    assert not (hub / "datasets" / "org" / "x.git").exists()
    r = runner.invoke(app, ["push", str(built), "--repo", "org/cli", "--repo-type", "model"])
    assert r.exit_code == 2 and "error:" in r.output  # a dataset folder is no model card... or the type clash
    res = scored_result(tmp_path / "r", built, "org/m")
    r = runner.invoke(app, ["push-results", str(res), "--repo", "org/lb", "--dataset", str(built)])
    assert r.exit_code == 0, r.output
    assert (hub / "datasets" / "org" / "lb" / "data" / "leaderboard.parquet").exists()


# ---- the online path against the Hub-protocol test server (real huggingface_hub client) ------------------------


def test_hub_push_idempotent_tags_pr_and_pull(built, hf, tmp_path):
    res = push(PushConfig(folder=built, repo="alice/phrbench", tag="v0.1.0", endpoint=hf.url))
    assert res.changed and res.created and res.tag_created and not res.local
    assert res.url == f"{hf.url}/datasets/alice/phrbench"
    n = len(hf.commits("dataset", "alice/phrbench"))
    head = hf.head("dataset", "alice/phrbench")
    assert head == res.revision
    files = hf.files("dataset", "alice/phrbench")
    pushed = {r: pushed_bytes(p, r, "alice/phrbench") for r, p in folder_files(built).items()}
    assert pushed.items() <= files.items()
    # identical push: no commit, the same tag is a no-op
    again = push(PushConfig(folder=built, repo="alice/phrbench", tag="v0.1.0", endpoint=hf.url))
    assert not again.changed and again.revision is None and again.head == head
    assert len(hf.commits("dataset", "alice/phrbench")) == n
    # changed folder: exactly one commit with the additions and deletions
    v2 = variant(built, tmp_path / "v2", **{"NOTES.md": "n\n"})
    (v2 / "manifest.json").unlink()
    two = push(PushConfig(folder=v2, repo="alice/phrbench", tag="v0.2.0", endpoint=hf.url))
    assert two.changed and two.files == ["NOTES.md"] and two.deleted == ["manifest.json"]
    assert len(hf.commits("dataset", "alice/phrbench")) == n + 1
    assert ".gitattributes" in hf.files("dataset", "alice/phrbench")  # kept
    # an existing tag is never moved
    with pytest.raises(TagExistsError):
        push(PushConfig(folder=built, repo="alice/phrbench", tag="v0.1.0", endpoint=hf.url))
    assert hf.head("dataset", "alice/phrbench") == two.revision
    # pull request instead of main
    pr = push(PushConfig(folder=built, repo="alice/phrbench", create_pr=True, endpoint=hf.url))
    assert pr.changed and pr.pr_url and hf.head("dataset", "alice/phrbench") == two.revision
    # pull by tag
    old = pull(PullConfig(repo="alice/phrbench", revision="v0.1.0", out=tmp_path / "old", endpoint=hf.url))
    assert {r: p.read_bytes() for r, p in folder_files(old).items() if r != ".gitattributes"} == pushed
    with pytest.raises(PublishError, match="not found"):
        pull(PullConfig(repo="alice/phrbench", revision="v9", out=tmp_path / "none", endpoint=hf.url))


@pytest.mark.parametrize("repo_id", ["alice/x.git", "alice/x--y", "alice.git/x"])
def test_hub_push_refuses_names_the_hub_refuses_before_any_request(built, hf, repo_id):
    with pytest.raises(PublishError, match="invalid repo id"):
        push(PushConfig(folder=built, repo=repo_id, endpoint=hf.url))
    assert hf.requests == []


def test_hub_failure_mid_push_keeps_the_previous_version_and_hides_the_token(built, hf, hf_token, tmp_path):
    first = push(PushConfig(folder=built, repo="alice/phrbench", endpoint=hf.url))
    hf.fail_next("/commit/", 500, body={"error": f"boom (token {hf_token})"})
    changed = variant(built, tmp_path / "c", **{"NOTES.md": "n\n"})
    with pytest.raises(PushFailedError) as e:
        push(PushConfig(folder=changed, repo="alice/phrbench", tag="v0.2.0", endpoint=hf.url))
    msg = str(e.value)
    assert hf_token not in msg and "previous version" in msg
    assert f"Rerun: phr-publish push {changed} --repo alice/phrbench --tag v0.2.0" in msg
    assert hf.head("dataset", "alice/phrbench") == first.revision
    ok = push(PushConfig(folder=changed, repo="alice/phrbench", tag="v0.2.0", endpoint=hf.url))  # the rerun
    assert ok.changed and ok.tag_created


def test_hub_repo_type_clash_and_models_and_results(built, hf, tmp_path):
    from phr.cards.eval_yaml import model_eval_results_yaml
    from phr.cards.model_card import write_model_card
    from phr.eval.results import load_result
    from phr.leaderboard.repo import open_model_pr, push_results

    push(PushConfig(folder=built, repo="alice/thing", endpoint=hf.url))
    ckpt = tmp_path / "ckpt"
    ckpt.mkdir()
    (ckpt / "config.json").write_text("{}")
    r1 = load_result(result_json(tmp_path / "r1.json", "alice/m", bh=0.4))
    write_model_card(
        ckpt, base_model="x/base", datasets=[("alice/phrbench", "v0.1.0")], hyperparameters={}, eval_results=[r1]
    )
    with pytest.raises(RepoTypeMismatchError):
        push(PushConfig(folder=ckpt, repo="alice/thing", repo_type="model", endpoint=hf.url))
    m = push(PushConfig(folder=ckpt, repo="alice/m", repo_type="model", endpoint=hf.url))
    assert m.changed and ".eval_results/phrbench.yaml" in hf.files("model", "alice/m")
    s1 = scored_result(tmp_path / "s1", built, "alice/m")
    s2 = scored_result(tmp_path / "s2", built, "alice/n", wrong_if=lambda n: n % 2 == 0)
    kw = {"repo": "alice/results", "endpoint": hf.url, "datasets": [str(built)]}
    res = push_results(PushResultsConfig(results=[s1, s2], **kw))
    assert res.changed
    files = hf.files("dataset", "alice/results")
    table = pq.read_table(__import__("io").BytesIO(files["data/leaderboard.parquet"]))
    assert table.num_rows == 2 and sum(p.startswith("evidence/") for p in files) == 2
    assert not push_results(PushResultsConfig(results=[s1], **kw)).changed
    pr = open_model_pr(
        "alice/m",
        model_eval_results_yaml(load_result(result_json(tmp_path / "r3.json", "alice/m", bh=0.45, run_id="b"))),
        endpoint=hf.url,
    )
    assert pr.changed and pr.pr_url and pr.files == [".eval_results/phrbench.yaml"]
