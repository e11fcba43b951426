"""phr.hub.prs: the same pull-request operations on a local hub and on the Hub-protocol server (real client)."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from phr.hub import prs
from phr.hub.errors import MissingTokenError, PublishError, PushFailedError
from phr.hub.local import LocalHub, check_state, commit_files, pr_state_path, read_tree, repair
from phr.hub.prs import (
    PullRequest,
    PullRequestConflictError,
    PullRequestNotFoundError,
    PullRequestStateError,
    close_pr,
    comment_pr,
    commit_to_pr,
    list_pull_requests,
    merge_pr,
    pr_changes,
    pr_comments,
)

REPO, TYPE = "alice/results", "dataset"


@dataclass
class Backend:
    name: str
    hub: Path | None
    endpoint: str | None
    push_main: Callable[[dict[str, bytes]], None]
    open_pr: Callable[..., int]  # (files, title, delete=()) -> its number
    files_at: Callable[[str], dict[str, bytes]]  # the files of a revision (without .gitattributes)

    @property
    def kw(self) -> dict:
        return {"hub": self.hub, "endpoint": self.endpoint}

    def ref(self, num: int) -> str:
        return f"pr/{num}" if self.hub is not None else f"refs/pr/{num}"


def _local(tmp_path: Path) -> Backend:
    lh = LocalHub(tmp_path / "hub")

    def push_main(files: dict[str, bytes]) -> None:
        commit_files(lh, REPO, TYPE, dict(files), message="update main", replace=False)

    def open_pr(files: dict[str, bytes], title: str, delete: tuple[str, ...] = ()) -> int:
        content: dict = {p: d for p, d in read_tree(lh, REPO, TYPE).items() if p not in delete} | files
        res = commit_files(lh, REPO, TYPE, content, message=title, replace=True, create_pr=True)
        assert res.pr_ref is not None
        return int(res.pr_ref.removeprefix("pr/"))

    return Backend("local", lh.root, None, push_main, open_pr, lambda rev: read_tree(lh, REPO, TYPE, revision=rev))


def _online(server, token: str) -> Backend:
    from huggingface_hub import CommitOperationAdd, CommitOperationDelete, HfApi

    api = HfApi(endpoint=server.url, token=token)
    api.create_repo(REPO, repo_type=TYPE)

    def ops(files: dict[str, bytes]) -> list:
        return [CommitOperationAdd(path_in_repo=p, path_or_fileobj=d) for p, d in files.items()]

    def push_main(files: dict[str, bytes]) -> None:
        api.create_commit(REPO, ops(files), commit_message="update main", repo_type=TYPE)

    def open_pr(files: dict[str, bytes], title: str, delete: tuple[str, ...] = ()) -> int:
        changes = ops(files) + [CommitOperationDelete(path_in_repo=p) for p in delete]
        return int(api.create_commit(REPO, changes, commit_message=title, repo_type=TYPE, create_pr=True).pr_num)

    def files_at(rev: str) -> dict[str, bytes]:
        return {p: d for p, d in server.files(TYPE, REPO, revision=rev).items() if p != ".gitattributes"}

    return Backend("hub", None, server.url, push_main, open_pr, files_at)


@pytest.fixture(params=["local", "hub"])
def backend(request, tmp_path) -> Backend:
    if request.param == "local":
        b = _local(tmp_path)
    else:
        b = _online(request.getfixturevalue("hf"), request.getfixturevalue("hf_token"))
    b.push_main({"results/base.json": b"base\n"})
    return b


def test_pull_request_lifecycle(backend: Backend):
    kw = backend.kw
    one = backend.open_pr({"results/a.json": b"a\n"}, "Add a")
    two = backend.open_pr({"results/b.json": b"b\n"}, "Add b")
    assert (one, two) == (1, 2)

    listed = list_pull_requests(REPO, TYPE, **kw)
    assert [(p.num, p.title, p.status, p.ref) for p in listed] == [
        (1, "Add a", "open", backend.ref(1)),
        (2, "Add b", "open", backend.ref(2)),
    ]
    assert backend.files_at(listed[0].ref)["results/a.json"] == b"a\n"
    assert pr_changes(REPO, TYPE, 1, **kw) == {"results/a.json": b"a\n"}

    sha = commit_to_pr(REPO, TYPE, 1, {"results/a.meta.json": b"meta\n"}, message="Add metadata", **kw)
    assert sha and backend.files_at(backend.ref(1))["results/a.meta.json"] == b"meta\n"
    assert commit_to_pr(REPO, TYPE, 1, {"results/a.meta.json": b"meta\n"}, message="Add metadata", **kw) is None
    assert pr_changes(REPO, TYPE, 1, **kw) == {"results/a.json": b"a\n", "results/a.meta.json": b"meta\n"}
    assert list_pull_requests(REPO, TYPE, **kw)[0].title == "Add a"  # the title is the first commit's

    comment_pr(REPO, TYPE, 1, "looks good", **kw)
    assert pr_comments(REPO, TYPE, 1, **kw) == ["looks good"]

    close_pr(REPO, TYPE, 2, "duplicate of #1", **kw)
    assert [p.num for p in list_pull_requests(REPO, TYPE, **kw)] == [1]
    assert [(p.num, p.status) for p in list_pull_requests(REPO, TYPE, status=None, **kw)] == [
        (1, "open"),
        (2, "closed"),
    ]
    assert [p.num for p in list_pull_requests(REPO, TYPE, status="closed", **kw)] == [2]
    close_pr(REPO, TYPE, 2, "closing again", **kw)  # a no-op
    assert pr_comments(REPO, TYPE, 2, **kw) == ["duplicate of #1"]
    with pytest.raises(PullRequestStateError, match=rf"pull request #2 of dataset repo {REPO} is closed"):
        merge_pr(REPO, TYPE, 2, **kw)
    with pytest.raises(PullRequestStateError, match="is closed"):
        commit_to_pr(REPO, TYPE, 2, {"x.json": b"x\n"}, message="m", **kw)

    backend.push_main({"results/other.json": b"other\n"})  # main moves on, on an unrelated path
    head = merge_pr(REPO, TYPE, 1, comment="merged, thanks", **kw)
    assert backend.files_at("main") == {
        "results/base.json": b"base\n",
        "results/other.json": b"other\n",
        "results/a.json": b"a\n",
        "results/a.meta.json": b"meta\n",
    }
    assert backend.files_at(head) == backend.files_at("main")
    assert [(p.num, p.status) for p in list_pull_requests(REPO, TYPE, status=None, **kw)] == [
        (1, "merged"),
        (2, "closed"),
    ]
    assert list_pull_requests(REPO, TYPE, status="merged", **kw) == [
        PullRequest(1, "Add a", "merged", backend.ref(1), list_pull_requests(REPO, TYPE, status=None, **kw)[0].author)
    ]
    assert pr_comments(REPO, TYPE, 1, **kw) == ["looks good", "merged, thanks"]
    assert merge_pr(REPO, TYPE, 1, comment="again", **kw) == head  # a no-op
    assert pr_comments(REPO, TYPE, 1, **kw) == ["looks good", "merged, thanks"]
    with pytest.raises(PullRequestStateError, match="is merged"):
        close_pr(REPO, TYPE, 1, "no", **kw)
    with pytest.raises(PullRequestStateError, match="is merged"):
        commit_to_pr(REPO, TYPE, 1, {"x.json": b"x\n"}, message="m", **kw)

    three = backend.open_pr({"results/base.json": b"from the pr\n", "results/c.json": b"c\n"}, "Change base")
    backend.push_main({"results/base.json": b"from main\n"})
    main_before = backend.files_at("main")
    with pytest.raises(PullRequestConflictError) as e:
        merge_pr(REPO, TYPE, three, **kw)
    assert f"pull request #{three} of dataset repo {REPO} cannot be merged" in str(e.value)
    assert "results/base.json" in str(e.value) and "\n" not in str(e.value)
    assert backend.files_at("main") == main_before
    assert list_pull_requests(REPO, TYPE, **kw)[-1].status == "open"

    for call in (
        lambda: pr_changes(REPO, TYPE, 99, **kw),
        lambda: comment_pr(REPO, TYPE, 99, "hi", **kw),
        lambda: merge_pr(REPO, TYPE, 99, **kw),
        lambda: close_pr(REPO, TYPE, 99, "bye", **kw),
    ):
        with pytest.raises(PullRequestNotFoundError, match=rf"no pull request #99 of dataset repo {REPO}"):
            call()


def test_merge_applies_the_deletions_of_a_pull_request(backend: Backend):
    backend.push_main({"results/old.json": b"old\n"})
    num = backend.open_pr({"results/new.json": b"new\n"}, "Replace old", delete=("results/old.json",))
    assert pr_changes(REPO, TYPE, num, **backend.kw) == {"results/new.json": b"new\n"}
    backend.push_main({"results/other.json": b"other\n"})
    merge_pr(REPO, TYPE, num, **backend.kw)
    assert backend.files_at("main") == {
        "results/base.json": b"base\n",
        "results/new.json": b"new\n",
        "results/other.json": b"other\n",
    }


def test_local_state_beside_the_store_and_repo_stays_sound(tmp_path):
    b = _local(tmp_path)
    b.push_main({"results/base.json": b"base\n"})
    b.open_pr({"results/a.json": b"a\n"}, "Add a")
    b.open_pr({"results/b.json": b"b\n"}, "Add b")
    close_pr(REPO, TYPE, 2, "no", **b.kw)
    merge_pr(REPO, TYPE, 1, **b.kw)
    lh = LocalHub(tmp_path / "hub")
    state = pr_state_path(lh, REPO, TYPE)
    assert state == tmp_path / "hub" / "datasets" / "alice" / ".results.hub" / "prs.json" and state.is_file()
    check_state(lh, REPO, TYPE)
    assert "is sound" in repair(lh, REPO, TYPE)
    b.push_main({"results/later.json": b"later\n"})  # later pushes keep the state and the pull requests
    assert [(p.num, p.status) for p in list_pull_requests(REPO, TYPE, status=None, **b.kw)] == [
        (1, "merged"),
        (2, "closed"),
    ]
    assert read_tree(lh, REPO, TYPE, revision="pr/2") == {"results/base.json": b"base\n", "results/b.json": b"b\n"}


class Killed(BaseException):
    pass


def test_local_merge_killed_before_its_status_is_completed_by_a_rerun(tmp_path, monkeypatch):
    b = _local(tmp_path)
    b.push_main({"results/base.json": b"base\n"})
    b.open_pr({"results/a.json": b"a\n"}, "Add a")
    b.push_main({"results/other.json": b"other\n"})

    def killed(*a, **k):
        raise Killed

    monkeypatch.setattr(prs, "_write_state", killed)
    with pytest.raises(Killed):
        merge_pr(REPO, TYPE, 1, comment="thanks", **b.kw)
    monkeypatch.undo()
    repo = LocalHub(tmp_path / "hub").repo_path(REPO, TYPE)
    merged = subprocess.run(["git", "-C", str(repo), "rev-parse", "main"], capture_output=True, text=True).stdout
    assert list_pull_requests(REPO, TYPE, **b.kw)[0].status == "open"  # main moved; the status did not
    assert merge_pr(REPO, TYPE, 1, comment="thanks", **b.kw) == merged.strip()  # no second commit
    assert list_pull_requests(REPO, TYPE, status="merged", **b.kw)[0].num == 1
    assert pr_comments(REPO, TYPE, 1, **b.kw) == ["thanks"]
    assert "results/a.json" in b.files_at("main")


def test_local_damaged_state_is_one_clear_line(tmp_path):
    from phr.core.errors import EnvironmentFault

    b = _local(tmp_path)
    b.push_main({"results/base.json": b"base\n"})
    b.open_pr({"results/a.json": b"a\n"}, "Add a")
    pr_state_path(LocalHub(tmp_path / "hub"), REPO, TYPE).write_text("{trunc")
    with pytest.raises(EnvironmentFault, match="prs.json: the pull request state .* is damaged"):
        list_pull_requests(REPO, TYPE, **b.kw)


def test_hub_routes_permissions_and_errors(monkeypatch):
    import huggingface_hub
    from huggingface_hub import CommitOperationAdd, HfApi
    from huggingface_hub.errors import HfHubHTTPError

    from tests.support.hub_server import HubServer

    monkeypatch.delenv("HF_TOKEN", raising=False)
    with HubServer(tokens={"hf_a": "alice", "hf_b": "bob"}, orgs={}) as server, server.patch_clients():
        alice, bob = HfApi(endpoint=server.url, token="hf_a"), HfApi(endpoint=server.url, token="hf_b")
        alice.create_repo(REPO, repo_type=TYPE)
        add = [CommitOperationAdd(path_in_repo="r.json", path_or_fileobj=b"r\n")]
        num = bob.create_commit(REPO, add, commit_message="From bob", repo_type=TYPE, create_pr=True).pr_num
        kw = {"hub": None, "endpoint": server.url}

        comment_pr(REPO, TYPE, num, "hello from bob", token="hf_b", **kw)  # anyone logged in may comment
        with pytest.raises(PublishError, match=r"merging pull request #1 .* was refused \(403"):
            merge_pr(REPO, TYPE, num, token="hf_b", **kw)
        with pytest.raises(HfHubHTTPError) as e:
            bob.merge_pull_request(REPO, num, repo_type=TYPE)
        assert e.value.response.status_code == 403
        bob.change_discussion_status(REPO, num, "closed", comment="withdrawn", repo_type=TYPE)  # its author may
        alice.change_discussion_status(REPO, num, "open", repo_type=TYPE)
        with pytest.raises(HfHubHTTPError) as e:
            alice.change_discussion_status(REPO, num, "open", repo_type=TYPE)
        assert e.value.response.status_code == 400
        details = alice.get_discussion_details(REPO, num, repo_type=TYPE)
        assert [ev.type for ev in details.events] == ["comment", "commit", "comment", "comment", *["status-change"] * 2]
        assert pr_comments(REPO, TYPE, num, token="hf_a", **kw) == ["hello from bob", "withdrawn"]

        head = merge_pr(REPO, TYPE, num, token="hf_a", **kw)
        details = alice.get_discussion_details(REPO, num, repo_type=TYPE)
        assert details.status == "merged" and details.merge_commit_oid == head == server.head(TYPE, REPO)
        assert server.files(TYPE, REPO)["r.json"] == b"r\n"
        with pytest.raises(HfHubHTTPError) as e:
            alice.merge_pull_request(REPO, num, repo_type=TYPE)
        assert e.value.response.status_code == 400 and "already merged" in str(e.value)

        server.fail_next("/discussions/1/comment", status=400)
        with pytest.raises(PushFailedError, match="commenting on pull request #1 .* failed") as e:
            comment_pr(REPO, TYPE, num, "late", token="hf_a", **kw)
        assert "hf_a" not in str(e.value)
        monkeypatch.setattr(huggingface_hub, "get_token", lambda: None)  # no saved login either
        with pytest.raises(MissingTokenError):
            comment_pr(REPO, TYPE, num, "anonymous", **kw)
        assert server.errors == []
