"""Pull requests of a hub repo, the same on a local hub (``hub``: its folder) and on the Hub (``hub=None``).

List them, read the files one proposes, commit more files onto one, comment, close one with a comment, or merge
one into main. A pull request's ``ref`` is the revision holding its head: ``pr/N`` on a local hub
(``phr.hub.local.read_tree(..., revision=ref)``), ``refs/pr/N`` on the Hub (any ``revision=``). Its changes are
taken against its base, the main commit it was opened on. The PR's opening description on the Hub is not one of
its comments (a local pull request has none).

On a local hub a pull request is the branch ``pr/N`` and its status and comments live in ``.NAME.hub/prs.json``
(``phr.hub.local.pr_state_path``), beside the repo's store and outside its versions, written atomically under the
repo's lock: a kill leaves it as it was or as it is after the step. A merge is one new commit on main (published
as a push publishes), then the status; killed in between, a rerun finds main already holding the changes, makes no
second commit and records the merge. On the Hub the client's calls are atomic on the server.

Errors: no such pull request, a status that forbids the operation (merging a closed one, committing to or closing
a merged one) and a conflicting merge are ``PullRequestError`` subclasses (a ``PublishError``, exit 2); a failure
of the Hub client is a ``PublishError`` when reading and a ``PushFailedError`` (exit 1) when writing, in one line
without the token.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from phr.core.errors import EnvironmentFault
from phr.core.fs import atomic_write, json_text
from phr.hub.errors import PublishError, PushFailedError, RepoNotFoundError
from phr.hub.local import (
    LocalHub,
    LocalPullRequest,
    commit_files,
    commit_to_pr_branch,
    local_pull_requests,
    merge_pr_branch,
    pr_diff,
    pr_state_path,
)
from phr.hub.online import _api, _check_online, _remote_files, _safe, differs, repo_url, resolve_token
from phr.hub.repo import PushResult

STATUSES = ("open", "merged", "closed")


@dataclass(frozen=True)
class PullRequest:
    num: int
    title: str
    status: str  # "open" | "merged" | "closed" (a draft on the Hub is "open")
    ref: str  # the revision holding its head: "refs/pr/N" on the Hub, "pr/N" on a local hub
    author: str | None = None


class PullRequestError(PublishError):
    """A pull request operation that cannot be done as asked; the message names the repo and the pull request."""


class PullRequestNotFoundError(PullRequestError):
    pass


class PullRequestStateError(PullRequestError):
    """The pull request's status forbids the operation (merging a closed one, committing to a merged one, ...)."""


class PullRequestConflictError(PullRequestError):
    """Main and the pull request both changed a path since its base: nothing was merged."""


def _line(text: object, token: str | None) -> str:
    """``text`` on one line, without the token."""
    return " ".join(_safe(text, token).split())


def _what(repo_id: str, repo_type: str, num: int) -> str:
    return f"pull request #{num} of {repo_type} repo {repo_id}"


def _conflict(repo_id: str, repo_type: str, num: int, detail: str) -> PullRequestConflictError:
    return PullRequestConflictError(
        f"{_what(repo_id, repo_type, num)} cannot be merged: {detail}; nothing was merged: close it and open a new "
        "pull request on the current main"
    )


# ---- the local hub ----------------------------------------------------------------------------------------------


def _load(lh: LocalHub, repo_id: str, repo_type: str) -> dict[str, Any]:
    """``{"N": {"status": ..., "comments": [...], "merge_commit": ...}}`` of the repo's pull requests."""
    path = pr_state_path(lh, repo_id, repo_type)
    try:
        state = json.loads(path.read_text(encoding="utf-8"))
        prs = state["pull_requests"]
        if not isinstance(prs, dict):
            raise TypeError("pull_requests is not a mapping")
        return prs
    except FileNotFoundError:
        return {}
    except (ValueError, KeyError, TypeError) as e:
        raise EnvironmentFault(
            f"{path}: the pull request state of the local hub {repo_type} repo {repo_id} is damaged ({e}): restore "
            "it from a backup, or remove it (every pull request then reads as open, without comments), then rerun"
        ) from None


def _write_state(lh: LocalHub, repo_id: str, repo_type: str, prs: dict[str, Any]) -> None:
    atomic_write(pr_state_path(lh, repo_id, repo_type), json_text({"schema_version": 1, "pull_requests": prs}))


def _local_pr(lh: LocalHub, repo_id: str, repo_type: str, num: int) -> LocalPullRequest:
    pr = local_pull_requests(lh, repo_id, repo_type, only=num).get(num)
    if pr is None:
        raise PullRequestNotFoundError(f"no {_what(repo_id, repo_type, num)} in the local hub {lh.root}")
    return pr


def _status(prs: dict[str, Any], num: int) -> str:
    return str(prs.get(str(num), {}).get("status", "open"))


def _update(lh: LocalHub, repo_id: str, repo_type: str, num: int, change: Callable[[dict[str, Any]], bool]) -> None:
    """Under the repo's lock: ``change(entry)`` edits pull request ``num``'s entry and says whether it did; an
    edited state is written atomically."""
    _local_pr(lh, repo_id, repo_type, num)  # before the lock: a missing repo gets no lock file
    with lh.lock(repo_id, repo_type):
        _local_pr(lh, repo_id, repo_type, num)
        prs = _load(lh, repo_id, repo_type)
        entry = prs.setdefault(str(num), {"status": "open", "comments": []})
        entry.setdefault("comments", [])
        if change(entry):
            _write_state(lh, repo_id, repo_type, prs)


def _comment(entry: dict[str, Any], text: str | None) -> None:
    if text and text.strip():
        entry["comments"].append(text.strip())


def _list_local(lh: LocalHub, repo_id: str, repo_type: str) -> list[PullRequest]:
    prs = _load(lh, repo_id, repo_type)
    return [
        PullRequest(num=n, title=pr.title, status=_status(prs, n), ref=f"pr/{n}")
        for n, pr in local_pull_requests(lh, repo_id, repo_type).items()
    ]


def _commit_local(
    lh: LocalHub, repo_id: str, repo_type: str, num: int, files: dict[str, bytes], message: str
) -> str | None:
    _local_pr(lh, repo_id, repo_type, num)

    def validate() -> None:
        if (status := _status(_load(lh, repo_id, repo_type), num)) != "open":
            raise PullRequestStateError(f"{_what(repo_id, repo_type, num)} is {status}: nothing can be committed to it")

    return commit_to_pr_branch(lh, repo_id, repo_type, num, dict(files), message=message, validate=validate)


def _close_local(lh: LocalHub, repo_id: str, repo_type: str, num: int, comment: str) -> None:
    def change(entry: dict[str, Any]) -> bool:
        if entry["status"] == "closed":
            return False
        if entry["status"] == "merged":
            raise PullRequestStateError(f"{_what(repo_id, repo_type, num)} is merged: it cannot be closed")
        _comment(entry, comment)
        entry["status"] = "closed"
        return True

    _update(lh, repo_id, repo_type, num, change)


def _merge_local(lh: LocalHub, repo_id: str, repo_type: str, num: int, comment: str | None) -> str:
    pr = _local_pr(lh, repo_id, repo_type, num)
    status = _status(_load(lh, repo_id, repo_type), num)
    if status == "merged":
        return lh.refs(repo_id, repo_type)["refs/heads/main"]
    closed = f"{_what(repo_id, repo_type, num)} is closed: it cannot be merged"
    if status == "closed":
        raise PullRequestStateError(closed)

    def validate(conflicts: list[str]) -> None:  # under the lock, before main moves
        if _status(_load(lh, repo_id, repo_type), num) == "closed":
            raise PullRequestStateError(closed)
        if conflicts:
            raise _conflict(
                repo_id, repo_type, num, "paths changed on both sides since its base: " + ", ".join(conflicts)
            )

    head, _ = merge_pr_branch(lh, repo_id, repo_type, num, message=f"{pr.title} (#{num})", validate=validate)

    def change(entry: dict[str, Any]) -> bool:
        if entry["status"] == "merged":
            return False
        _comment(entry, comment)
        entry.update(status="merged", merge_commit=head)
        return True

    _update(lh, repo_id, repo_type, num, change)
    return head


# ---- the Hub ----------------------------------------------------------------------------------------------------


def _connect(token: str | None, endpoint: str | None, *, write: bool) -> tuple[Any, str | None]:
    _check_online()
    token = resolve_token(token, required=write)
    return _api(token, endpoint), token


def _http_status(e: BaseException) -> tuple[int | None, str]:
    """(HTTP status, the server's message) of a client error, (None, "") for anything else."""
    try:
        status = getattr(getattr(e, "response", None), "status_code", None)
    except Exception:  # noqa: BLE001 -- an httpx error without a response raises on access
        status = None
    return (status if isinstance(status, int) else None), str(getattr(e, "server_message", None) or "")


@contextmanager
def _hub_call(what: str, api: Any, repo_id: str, repo_type: str, token: str | None, *, write: bool) -> Iterator[None]:
    """Turn a failure of the Hub client into a ``PublishError`` (reads) / ``PushFailedError`` (writes) naming
    ``what``, the repo and the server's reason."""
    try:
        yield
    except PublishError:
        raise
    except Exception as e:
        from huggingface_hub.errors import RepositoryNotFoundError

        url = repo_url(api, repo_id, repo_type)
        if isinstance(e, RepositoryNotFoundError):
            raise RepoNotFoundError(
                f"{repo_type} repo {repo_id} not found on {url} (or the token cannot read it): check the name and "
                "the repo type, and HF_TOKEN / `hf auth login` for private repos"
            ) from None
        status, reason = _http_status(e)
        if status in (401, 403):
            raise PublishError(
                f"{what} on {url} was refused ({status}: {_line(reason or e, token)}): the token needs write access "
                "to the repo (HF_TOKEN / `hf auth login`)"
            ) from None
        cls = PushFailedError if write else PublishError
        raise cls(f"{what} on {url} failed: {type(e).__name__}: {_line(e, token)}") from None


def _details(api: Any, repo_id: str, repo_type: str, num: int, token: str | None) -> Any:
    """The pull request's details (``DiscussionWithDetails``); a missing one or a plain discussion is refused."""
    from huggingface_hub.errors import HfHubHTTPError, RepositoryNotFoundError

    with _hub_call(f"reading {_what(repo_id, repo_type, num)}", api, repo_id, repo_type, token, write=False):
        try:
            d = api.get_discussion_details(repo_id, num, repo_type=repo_type)
        except HfHubHTTPError as e:
            if isinstance(e, RepositoryNotFoundError) or _http_status(e)[0] != 404:
                raise
            raise PullRequestNotFoundError(f"no {_what(repo_id, repo_type, num)}") from None
    if not d.is_pull_request:
        raise PullRequestNotFoundError(f"no {_what(repo_id, repo_type, num)}: #{num} is a discussion")
    return d


def _hub_status(status: str) -> str:
    return "open" if status == "draft" else status


def _main_head(api: Any, repo_id: str, repo_type: str, branch: str = "main") -> str:
    refs = api.list_repo_refs(repo_id, repo_type=repo_type)
    head = next((b.target_commit for b in refs.branches if b.name == branch), None)
    if head is None:
        raise PublishError(f"{repo_type} repo {repo_id} has no branch {branch}")
    return str(head)


def _list_hub(
    repo_id: str, repo_type: str, status: str | None, token: str | None, endpoint: str | None
) -> list[PullRequest]:
    api, token = _connect(token, endpoint, write=False)
    with _hub_call("listing the pull requests", api, repo_id, repo_type, token, write=False):
        found = api.get_repo_discussions(
            repo_id,
            repo_type=repo_type,
            discussion_type="pull_request",
            discussion_status=None if status is None else ("open" if status == "open" else "closed"),
        )
        return [
            PullRequest(num=d.num, title=d.title, status=_hub_status(d.status), ref=f"refs/pr/{d.num}", author=d.author)
            for d in found
        ]


def _changes_hub(repo_id: str, repo_type: str, num: int, token: str | None, endpoint: str | None) -> dict[str, bytes]:
    from huggingface_hub import hf_hub_download

    api, token = _connect(token, endpoint, write=False)
    d = _details(api, repo_id, repo_type, num, token)
    tmp = Path(tempfile.mkdtemp(prefix="phr-pr-"))
    try:
        with _hub_call(f"reading {_what(repo_id, repo_type, num)}", api, repo_id, repo_type, token, write=False):
            pr_history = [
                c.commit_id for c in api.list_repo_commits(repo_id, repo_type=repo_type, revision=f"refs/pr/{num}")
            ]
            target = (d.target_branch or "refs/heads/main").removeprefix("refs/heads/")
            main = {c.commit_id for c in api.list_repo_commits(repo_id, repo_type=repo_type, revision=target)}
            base = next((c for c in pr_history if c in main), None)
            head = pr_history[0]
            old = _remote_files(api, repo_id, repo_type, base)
            new = _remote_files(api, repo_id, repo_type, head)
            changed = sorted(p for p, f in new.items() if p not in old or old[p].blob_id != f.blob_id)
            out = {}
            for rel in changed:
                local = hf_hub_download(
                    repo_id, rel, repo_type=repo_type, revision=head, local_dir=tmp, token=token, endpoint=api.endpoint
                )
                out[rel] = Path(local).read_bytes()
            return out
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _commit_hub(
    repo_id: str,
    repo_type: str,
    num: int,
    files: dict[str, bytes],
    message: str,
    token: str | None,
    endpoint: str | None,
) -> str | None:
    from huggingface_hub import CommitOperationAdd
    from huggingface_hub.hf_api import RepoFile

    api, token = _connect(token, endpoint, write=True)
    d = _details(api, repo_id, repo_type, num, token)
    if (status := _hub_status(d.status)) != "open":
        raise PullRequestStateError(f"{_what(repo_id, repo_type, num)} is {status}: nothing can be committed to it")
    what = f"committing {len(files)} file(s) to {_what(repo_id, repo_type, num)}"
    with _hub_call(what, api, repo_id, repo_type, token, write=True):
        refs = api.list_repo_refs(repo_id, repo_type=repo_type, include_pull_requests=True)
        head = next((r.target_commit for r in refs.pull_requests or [] if r.ref == f"refs/pr/{num}"), None)
        if head is None:
            raise PullRequestNotFoundError(f"no {_what(repo_id, repo_type, num)}: the Hub lists no refs/pr/{num}")
        current = {
            f.path: f
            for f in api.get_paths_info(repo_id, list(files), revision=head, repo_type=repo_type)
            if isinstance(f, RepoFile)
        }
        ops = [
            CommitOperationAdd(path_in_repo=rel, path_or_fileobj=data)
            for rel, data in sorted(files.items())
            if rel not in current or differs(data, current[rel])
        ]
        if not ops:
            return None
        info = api.create_commit(
            repo_id, ops, commit_message=message, repo_type=repo_type, revision=f"refs/pr/{num}", parent_commit=head
        )
        return str(info.oid)


def _merge_hub(
    repo_id: str, repo_type: str, num: int, comment: str | None, token: str | None, endpoint: str | None
) -> str:
    from huggingface_hub.errors import HfHubHTTPError

    api, token = _connect(token, endpoint, write=True)
    d = _details(api, repo_id, repo_type, num, token)
    branch = (d.target_branch or "refs/heads/main").removeprefix("refs/heads/")
    with _hub_call(f"merging {_what(repo_id, repo_type, num)}", api, repo_id, repo_type, token, write=True):
        if d.status == "merged":
            return _main_head(api, repo_id, repo_type, branch)
        if d.status == "closed":
            raise PullRequestStateError(f"{_what(repo_id, repo_type, num)} is closed: it cannot be merged")
        try:
            api.merge_pull_request(repo_id, num, comment=comment, repo_type=repo_type)
        except HfHubHTTPError as e:
            status, reason = _http_status(e)
            if status == 409:
                raise _conflict(repo_id, repo_type, num, _line(reason or e, token)) from None
            raise
        merged = api.get_discussion_details(repo_id, num, repo_type=repo_type).merge_commit_oid
        return str(merged or _main_head(api, repo_id, repo_type, branch))


# ---- the interface ----------------------------------------------------------------------------------------------


def list_pull_requests(
    repo_id: str,
    repo_type: str,
    *,
    hub: Path | None,
    token: str | None = None,
    endpoint: str | None = None,
    status: str | None = "open",
) -> list[PullRequest]:
    """The repo's pull requests with ``status`` ("open", "merged", "closed"; None: all), sorted by number."""
    if status is not None and status not in STATUSES:
        raise PublishError(f"unknown pull request status {status!r}: one of {', '.join(STATUSES)}, or None for all")
    found = (
        _list_local(LocalHub(hub), repo_id, repo_type)
        if hub is not None
        else _list_hub(repo_id, repo_type, status, token, endpoint)
    )
    return sorted((p for p in found if status is None or p.status == status), key=lambda p: p.num)


def pr_changes(
    repo_id: str, repo_type: str, num: int, *, hub: Path | None, token: str | None = None, endpoint: str | None = None
) -> dict[str, bytes]:
    """The files pull request ``num`` adds or changes against its base, with their content at its head."""
    if hub is None:
        return _changes_hub(repo_id, repo_type, num, token, endpoint)
    lh = LocalHub(hub)
    pr = _local_pr(lh, repo_id, repo_type, num)
    return pr_diff(lh, repo_id, repo_type, pr.base, pr.head)[0]


def commit_to_pr(
    repo_id: str,
    repo_type: str,
    num: int,
    files: dict[str, bytes],
    *,
    message: str,
    hub: Path | None,
    token: str | None = None,
    endpoint: str | None = None,
) -> str | None:
    """Commit ``files`` onto open pull request ``num``'s head (an overlay); returns the new commit, or None when
    the pull request already holds exactly these bytes."""
    if hub is None:
        return _commit_hub(repo_id, repo_type, num, files, message, token, endpoint)
    return _commit_local(LocalHub(hub), repo_id, repo_type, num, files, message)


def comment_pr(
    repo_id: str,
    repo_type: str,
    num: int,
    text: str,
    *,
    hub: Path | None,
    token: str | None = None,
    endpoint: str | None = None,
) -> None:
    """Add a comment to pull request ``num``."""
    if not text.strip():
        raise PublishError(f"an empty comment on {_what(repo_id, repo_type, num)}: write some text")
    if hub is not None:

        def change(entry: dict[str, Any]) -> bool:
            _comment(entry, text)
            return True

        _update(LocalHub(hub), repo_id, repo_type, num, change)
        return
    api, token = _connect(token, endpoint, write=True)
    _details(api, repo_id, repo_type, num, token)
    with _hub_call(f"commenting on {_what(repo_id, repo_type, num)}", api, repo_id, repo_type, token, write=True):
        api.comment_discussion(repo_id, num, text.strip(), repo_type=repo_type)


def pr_comments(
    repo_id: str, repo_type: str, num: int, *, hub: Path | None, token: str | None = None, endpoint: str | None = None
) -> list[str]:
    """The texts of pull request ``num``'s comments, oldest first (not its opening description on the Hub)."""
    if hub is not None:
        lh = LocalHub(hub)
        _local_pr(lh, repo_id, repo_type, num)
        return list(_load(lh, repo_id, repo_type).get(str(num), {}).get("comments", []))
    api, token = _connect(token, endpoint, write=False)
    events = _details(api, repo_id, repo_type, num, token).events
    after_opening = events[1:] if events and events[0].type == "comment" else events
    return [e.content for e in after_opening if e.type == "comment" and not e.hidden]


def close_pr(
    repo_id: str,
    repo_type: str,
    num: int,
    comment: str,
    *,
    hub: Path | None,
    token: str | None = None,
    endpoint: str | None = None,
) -> None:
    """Comment on pull request ``num`` and close it; a closed one is left as it is, a merged one refused."""
    if hub is not None:
        _close_local(LocalHub(hub), repo_id, repo_type, num, comment)
        return
    api, token = _connect(token, endpoint, write=True)
    d = _details(api, repo_id, repo_type, num, token)
    if d.status == "closed":
        return
    if d.status == "merged":
        raise PullRequestStateError(f"{_what(repo_id, repo_type, num)} is merged: it cannot be closed")
    with _hub_call(f"closing {_what(repo_id, repo_type, num)}", api, repo_id, repo_type, token, write=True):
        api.change_discussion_status(repo_id, num, "closed", comment=comment, repo_type=repo_type)


def merge_pr(
    repo_id: str,
    repo_type: str,
    num: int,
    *,
    comment: str | None = None,
    hub: Path | None,
    token: str | None = None,
    endpoint: str | None = None,
) -> str:
    """Merge pull request ``num`` into main (main's tree plus its changes against its base, one new commit) and
    return main's new head; a merged one is left as it is (main's head is returned). A closed one and a path both
    sides changed are refused, nothing merged."""
    if hub is not None:
        return _merge_local(LocalHub(hub), repo_id, repo_type, num, comment)
    return _merge_hub(repo_id, repo_type, num, comment, token, endpoint)


def open_pr(
    repo_id: str,
    repo_type: str,
    files: dict[str, bytes],
    *,
    message: str,
    hub: Path | None,
    token: str | None = None,
    endpoint: str | None = None,
) -> PushResult:
    """Open a pull request adding ``files`` (path -> bytes) on top of main: on a local hub the branch ``pr/N`` (a
    new repo gets an empty main), on the Hub ``create_commit(create_pr=True)`` (the repo must exist)."""
    if hub is not None:
        return commit_files(
            LocalHub(hub), repo_id, repo_type, dict(files), message=message, replace=False, create_pr=True
        )
    from huggingface_hub import CommitOperationAdd

    api, token = _connect(token, endpoint, write=True)
    ops = [CommitOperationAdd(path_in_repo=p, path_or_fileobj=b) for p, b in sorted(files.items())]
    with _hub_call(f"opening a pull request on {repo_id}", api, repo_id, repo_type, token, write=True):
        info = api.create_commit(repo_id, ops, commit_message=message, repo_type=repo_type, create_pr=True)
    result = PushResult(repo_id=repo_id, repo_type=repo_type, revision=info.oid, url=repo_url(api, repo_id, repo_type))
    result.head, result.changed, result.files = info.oid, True, sorted(files)
    result.pr_url = info.pr_url
    result.pr_ref = f"refs/pr/{info.pr_num}" if getattr(info, "pr_num", None) else None
    return result
