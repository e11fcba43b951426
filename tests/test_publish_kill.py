"""Kills (SIGKILL and SIGTERM to the process group) at every step of a push to a local hub, in a loop.

A push runs in a subprocess that stops before its N-th git command, before its N-th file removal (inside the
removal of an old version), or at a named step of the local hub (``local_hub._step``), or after a random delay; the test kills its process group there and checks what readers
see: ``main`` and the tag name the old commit or the new one, the working tree (what ``load_dataset`` reads) holds
exactly main's files, git sees no edits; then the same push again succeeds and leaves no temporary behind.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from phr.config.ops import PushConfig
from phr.hub import PushFailedError, folder_files, push
from phr.hub import local as local_hub
from phr.hub.local import LocalHub, RepoLockedError, read_tree

REPO = "org/tiny"
KIND = "model"  # the model gate (a card that parses) is cheap: the kills are about the hub, not validation

DRIVER = r"""
import json, os, sys, time
from pathlib import Path
from phr.hub import local as local_hub
from phr.config.ops import PushConfig
from phr.hub import push

folder, repo, tag, hub, pause, notice = sys.argv[1:7]
calls, first = [], []
def hold():
    Path(notice).write_text(str(os.getpid()))
    time.sleep(600)
real = local_hub._git
def git(*a, **k):
    calls.append(a[1] if len(a) > 1 else "")
    first[:] = first or [time.time()]
    if pause == f"git:{len(calls)}":
        hold()
    return real(*a, **k)
local_hub._git = git
unlinks, real_unlink = [], os.unlink
def unlink(*a, **k):  # every file removal (shutil.rmtree's too): a kill while a version is being removed
    unlinks.append(1)
    if pause == f"unlink:{len(unlinks)}":
        hold()
    return real_unlink(*a, **k)
os.unlink = unlink
local_hub._step = lambda name: hold() if pause == f"step:{name}" else None
local_hub.gate = lambda folder, repo_type, **policy: None  # validation is not what is killed here
push(PushConfig(folder=folder, repo=repo, repo_type="model", tag=tag or None, hub=hub))
print(json.dumps({"calls": calls, "unlinks": len(unlinks), "first_git": first[0], "end": time.time()}))
"""


# ---- folders and processes ---------------------------------------------------------------------------------------


def model_folder(dest: Path, variant: int) -> Path:
    """A small model repo; variants differ by changed, added and deleted files."""
    rng = random.Random(variant)
    dest.mkdir(parents=True)
    (dest / "README.md").write_text(f"---\nlicense: mit\ntags: [v{variant}]\n---\n# tiny v{variant}\n")
    (dest / "config.json").write_text(json.dumps({"model_type": "llama", "variant": variant}))
    (dest / "model.safetensors").write_bytes(rng.randbytes(1 << 18))
    for i in range(20):
        (dest / "shards" / f"part-{i:02d}-{variant % 2}.txt").parent.mkdir(exist_ok=True)
        (dest / "shards" / f"part-{i:02d}-{variant % 2}.txt").write_text(f"{variant} {i}\n" * 50)
    return dest


def files_of(folder: Path) -> dict[str, bytes]:
    return {rel: p.read_bytes() for rel, p in folder_files(folder).items()}


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=True).stdout.strip()


def run_driver(hub: Path, folder: Path, tag: str, pause: str, tmp: Path, repo: str = REPO) -> subprocess.Popen:
    notice = tmp / f"notice-{time.monotonic_ns()}"
    proc = subprocess.Popen(
        [sys.executable, "-c", DRIVER, str(folder), repo, tag, str(hub), pause, str(notice)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    proc.notice = notice
    return proc


def kill_at(hub: Path, folder: Path, tag: str, pause: str, sig: int, tmp: Path) -> None:
    """Run the push until it stops at ``pause``, then kill its process group with ``sig``."""
    proc = run_driver(hub, folder, tag, pause, tmp)
    deadline = time.monotonic() + 30
    while not proc.notice.exists():
        if proc.poll() is not None:
            out, err = proc.communicate()
            pytest.fail(f"the push ended (exit {proc.returncode}) before reaching {pause}: {err[-2000:]}")
        assert time.monotonic() < deadline, f"the push never reached {pause}"
        time.sleep(0.01)
    os.killpg(proc.pid, sig)
    proc.communicate(timeout=30)


def calibrate(hub: Path, folder: Path, tmp: Path) -> dict:
    """One push left to run (on a copy of ``hub``): the git commands it runs and when."""
    copy = tmp / f"calib-{time.monotonic_ns()}"
    if hub.exists():
        shutil.copytree(hub, copy, symlinks=True)
    start = time.time()
    proc = run_driver(copy, folder, "calib", "none", tmp)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    info = json.loads(out.strip().splitlines()[-1])
    shutil.rmtree(copy)
    return {**info, "start": start}


# ---- what readers see --------------------------------------------------------------------------------------------


def visible(hub: Path) -> dict | None:
    """``None`` when the repo does not exist; else its refs after checking that the working tree holds exactly
    main's files, byte for byte, and that git sees no edits."""
    lh = LocalHub(hub)
    if not lh.exists(REPO, KIND):
        return None
    repo = lh.repo_path(REPO, KIND)
    refs = lh.refs(REPO, KIND)
    main = read_tree(lh, REPO, KIND, refs["refs/heads/main"])
    assert files_of(repo) == main, "the working tree differs from main"
    assert git(repo, "status", "--porcelain", "--untracked-files=all") == ""
    return {"refs": refs, "files": main}


def check_after_kill(hub: Path, old: dict | None, new_files: dict, tag: str) -> str:
    """The repo is at the old version or the new one, entirely: return which."""
    now = visible(hub)
    if now is None:
        assert old is None, "the repo disappeared"
        return "old"
    main = now["refs"]["refs/heads/main"]
    if old is not None and main == old["refs"]["refs/heads/main"]:
        assert now["refs"] == old["refs"] and now["files"] == old["files"]
        return "old"
    assert now["files"] == new_files
    assert now["refs"].get(f"refs/tags/{tag}") == main, "main moved without its tag"
    return "new"


def check_clean_hub(hub: Path) -> None:
    """After a push: no temporary of a killed push is left, at most two versions, and the store records every
    ref readers see (what ``repair`` restores)."""
    path = LocalHub(hub).repo_path(REPO, KIND)
    assert sorted(p.name for p in path.parent.iterdir()) == sorted(
        [path.name, f".{path.name}.hub", f".{path.name}.lock"]
    )
    hubdir = path.parent / f".{path.name}.hub"
    assert sorted(p.name for p in hubdir.iterdir()) == ["store.git", "v"]
    versions = sorted(p.name for p in (hubdir / "v").iterdir())
    assert len(versions) <= 2 and all(v.isdigit() for v in versions), versions
    assert (hubdir / "v" / max(versions, key=int)).resolve() == path.resolve()
    assert not list((hubdir / "store.git").glob("phr-index-*"))
    recorded, seen = recorded_refs(hub), LocalHub(hub).refs(REPO, KIND)
    assert {r: recorded.get(r) for r in seen} == seen, "the store does not record what readers see"


def recorded_refs(hub: Path) -> dict[str, str]:
    store = LocalHub(hub).repo_path(REPO, KIND).parent / ".tiny.hub" / "store.git"
    return dict(
        line.split(" ") for line in git(store, "for-each-ref", "--format=%(refname) %(objectname)").splitlines()
    )


def push_again(hub: Path, folder: Path, tag: str) -> None:
    res = push(PushConfig(folder=folder, repo=REPO, repo_type=KIND, tag=tag, hub=hub))
    now = visible(hub)
    assert now["files"] == files_of(folder)
    assert now["refs"][f"refs/tags/{tag}"] == now["refs"]["refs/heads/main"] == res.head
    check_clean_hub(hub)


# ---- the loops ---------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def variants(tmp_path_factory):
    base = tmp_path_factory.mktemp("variants")
    return [model_folder(base / f"v{i}", i) for i in (1, 2)]


def test_kill_at_every_step_of_a_push_to_an_existing_repo(variants, tmp_path):
    hub = tmp_path / "hub"
    push(PushConfig(folder=variants[0], repo=REPO, repo_type=KIND, tag="t0", hub=hub))
    calls = calibrate(hub, variants[1], tmp_path)["calls"]
    plan = [(f"git:{n}", (signal.SIGKILL, signal.SIGTERM)[n % 2]) for n in range(1, len(calls) + 1)]
    plan += [
        (f"step:{s}", sig)
        for s in ("staged", "committed", "built", "swapped")
        for sig in (signal.SIGKILL, signal.SIGTERM)
    ]
    outcomes = {}
    for i, (point, sig) in enumerate(plan, start=1):
        target, tag, old = variants[i % 2], f"t{i}", visible(hub)
        kill_at(hub, target, tag, point, sig, tmp_path)
        outcomes[point, sig] = check_after_kill(hub, old, files_of(target), tag)
        push_again(hub, target, tag)
    # a kill before the link swap leaves the old version, after it (recording the refs in the store, removing the
    # oldest version) the new one
    swap = swap_index(calls)
    last = (f"git:{swap}", (signal.SIGKILL, signal.SIGTERM)[swap % 2])
    assert {k for k, v in outcomes.items() if v == "new"} == {
        ("step:swapped", signal.SIGKILL),
        ("step:swapped", signal.SIGTERM),
    } | {(f"git:{n}", (signal.SIGKILL, signal.SIGTERM)[n % 2]) for n in range(swap + 1, len(calls) + 1)}
    assert outcomes[last] == "old"  # killed before the checkout of the next version


def swap_index(calls: list[str]) -> int:
    """The number of git commands a push runs before its link swap: the last is the checkout of the new version;
    after the swap it records the refs in the store and removes old versions."""
    n = len(calls) - calls[::-1].index("reset")
    assert calls[n:] and set(calls[n:]) <= {"for-each-ref", "update-ref"}, calls
    return n


def check_tags_kept(hub: Path, published: dict[str, str]) -> None:
    """Every tag published so far names its commit, in what readers see and in the refs the store records (what
    ``repair`` restores)."""
    recorded, seen = recorded_refs(hub), visible(hub)["refs"]
    for name, sha in published.items():
        assert seen.get(name) == sha, f"{name} lost"
        assert recorded.get(name) == sha, f"{name} not recorded in the store"


def test_kill_at_every_file_removal_of_a_push(variants, tmp_path):
    """Killed while the push removes its oldest version (after the link swap): that version is removed whole or
    not at all, so the next push removes it (at most two versions); no published tag is lost."""
    hub = tmp_path / "hub"
    for n, tag in enumerate(("t0", "t1")):
        push(
            PushConfig(folder=variants[n], repo=REPO, repo_type=KIND, tag=tag, hub=hub)
        )  # two versions: the next push removes one
    published = {r: sha for r, sha in visible(hub)["refs"].items() if r.startswith("refs/tags/")}
    unlinks = calibrate(hub, variants[0], tmp_path)["unlinks"]
    assert unlinks > 20  # a version's files and .git, and the push's temporaries
    for n in range(1, unlinks + 1):
        target, tag, old = variants[n % 2], f"u{n}", visible(hub)
        kill_at(hub, target, tag, f"unlink:{n}", signal.SIGKILL, tmp_path)
        check_after_kill(hub, old, files_of(target), tag)
        push_again(hub, target, tag)
        published[f"refs/tags/{tag}"] = visible(hub)["refs"]["refs/heads/main"]
        check_tags_kept(hub, published)


def test_kill_at_every_step_of_the_push_that_creates_the_repo(variants, tmp_path):
    calls = calibrate(tmp_path / "none", variants[0], tmp_path)["calls"]
    after_swap = {f"git:{n}" for n in range(swap_index(calls) + 1, len(calls) + 1)} | {"step:swapped"}
    for n, point in enumerate([f"git:{n}" for n in range(1, len(calls) + 1)] + ["step:built", "step:swapped"]):
        hub = tmp_path / f"hub{n}"
        kill_at(hub, variants[0], "t1", point, (signal.SIGKILL, signal.SIGTERM)[n % 2], tmp_path)
        state = check_after_kill(hub, None, files_of(variants[0]), "t1")
        assert state == ("new" if point in after_swap else "old"), point
        push_again(hub, variants[0], "t1")


def test_kill_after_random_delays(variants, tmp_path):
    """Kills at arbitrary instants, also inside a git command (the checkout of the next version)."""
    hub = tmp_path / "hub"
    push(PushConfig(folder=variants[0], repo=REPO, repo_type=KIND, tag="t0", hub=hub))
    timing = calibrate(hub, variants[1], tmp_path)
    lo, hi = timing["first_git"] - timing["start"], timing["end"] - timing["start"]
    rng = random.Random(14)
    for i in range(1, 7):
        target, tag, old = variants[i % 2], f"r{i}", visible(hub)
        proc = run_driver(hub, target, tag, "none", tmp_path)
        time.sleep(rng.uniform(lo, hi))
        try:
            os.killpg(proc.pid, (signal.SIGKILL, signal.SIGTERM)[i % 2])
        except ProcessLookupError:
            pass  # it finished first
        proc.communicate(timeout=30)
        check_after_kill(hub, old, files_of(target), tag)
        push_again(hub, target, tag)


# ---- locks and leftovers -----------------------------------------------------------------------------------------


def dead_pid() -> int:
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    return p.pid


def test_leftovers_of_dead_processes_are_removed_and_a_stale_git_lock_does_not_block(variants, tmp_path):
    hub = tmp_path / "hub"
    push(PushConfig(folder=variants[0], repo=REPO, repo_type=KIND, tag="t0", hub=hub))
    repo = LocalHub(hub).repo_path(REPO, KIND)
    hubdir = repo.parent / f".{repo.name}.hub"
    pid = dead_pid()
    (repo / ".git" / "index.lock").write_text("")  # a git command killed in the working tree
    (hubdir / "store.git" / f"phr-index-{pid}-x1").write_text("")
    (hubdir / "store.git" / f"phr-index-{pid}-x1.lock").write_text("")
    for ref in ("refs/heads/main", "refs/tags/t1"):  # what a kill inside the store's update-ref leaves
        (hubdir / "store.git" / f"{ref}.lock").write_text("")
    (hubdir / "v" / f".build-{pid}-x2").mkdir()
    (hubdir / "v" / "99").mkdir()  # a version built but never linked
    os.symlink("nowhere", hubdir / f".link-{pid}")
    (repo.parent / f".{repo.name}.new-abc123").mkdir()  # a new repo of an older version, killed
    live = hubdir / "store.git" / f"phr-index-{os.getppid()}-live"  # a live process's index is kept
    live.write_text("")
    push(PushConfig(folder=variants[1], repo=REPO, repo_type=KIND, tag="t1", hub=hub))
    assert live.exists()
    live.unlink()
    check_clean_hub(hub)
    assert visible(hub)["files"] == files_of(variants[1])


def test_a_live_lock_holder_is_named_and_a_dead_one_is_ignored(variants, tmp_path, monkeypatch):
    hub = tmp_path / "hub"
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time; from phr.hub.local import LocalHub\n"
            f"with LocalHub({str(hub)!r}).lock({REPO!r}, {KIND!r}):\n    print('held', flush=True); time.sleep(600)",
        ],
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    assert holder.stdout.readline().strip() == "held"
    monkeypatch.setenv(local_hub.LOCK_TIMEOUT_ENV, "0.5")
    outcome: list = []

    def attempt():
        try:
            outcome.append(push(PushConfig(folder=variants[0], repo=REPO, repo_type=KIND, hub=hub)))
        except Exception as e:  # noqa: BLE001 -- the test inspects it
            outcome.append(e)

    t = threading.Thread(target=attempt, daemon=True)
    t.start()
    t.join(20)
    assert not t.is_alive(), "the push waited on a live lock holder without a word"
    assert isinstance(outcome[0], RepoLockedError) and f"process {holder.pid}" in str(outcome[0])
    assert not LocalHub(hub).exists(REPO, KIND)
    os.killpg(holder.pid, signal.SIGKILL)
    holder.wait()
    assert push(
        PushConfig(folder=variants[0], repo=REPO, repo_type=KIND, tag="t0", hub=hub)
    ).changed  # the dead holder's lock is free
    assert visible(hub)["files"] == files_of(variants[0])


# ---- a repo written by the previous layout (a plain git repository at NAME) ----------------------------------------


def legacy_repo(hub: Path, folder: Path, tag: str) -> Path:
    """What the previous version of the local hub wrote: NAME a git repository whose working tree serves main."""
    repo = LocalHub(hub).repo_path(REPO, KIND)
    shutil.copytree(folder, repo)
    git(repo, "init", "-q")
    git(repo, "symbolic-ref", "HEAD", "refs/heads/main")
    git(repo, "add", "-A")
    git(repo, "-c", "user.name=x", "-c", "user.email=x@y", "commit", "-q", "-m", "v1")
    git(repo, "tag", tag)
    return repo


def test_killed_push_of_the_previous_layout_is_repaired(variants, tmp_path):
    """The state issue 14 found: main and the tag moved, a truncated file, a stale index.lock; the next push
    converts the repo and serves main."""
    hub = tmp_path / "hub"
    repo = legacy_repo(hub, variants[0], "t0")
    old_main = git(repo, "rev-parse", "main")
    other = legacy_repo(tmp_path / "scratch", variants[1], "x")  # the new commit's objects
    git(repo, "fetch", "-q", str(other), "main:refs/heads/incoming")
    new = git(repo, "rev-parse", "incoming")
    git(repo, "update-ref", "-d", "refs/heads/incoming")
    git(repo, "update-ref", "refs/heads/main", new, old_main)
    git(repo, "tag", "t1", new)
    (repo / ".git" / "phr-push-in-progress").write_text(f"{old_main} {new}\n")
    (repo / ".git" / "index.lock").write_text("")
    (repo / "model.safetensors").write_bytes((repo / "model.safetensors").read_bytes()[:1000])
    res = push(PushConfig(folder=variants[1], repo=REPO, repo_type=KIND, tag="t1", hub=hub))
    assert not res.changed and res.head == new
    assert visible(hub)["files"] == files_of(variants[1])
    assert git(repo, "rev-parse", "t0") == old_main and repo.is_symlink()
    check_clean_hub(hub)


def test_kill_while_converting_the_previous_layout(variants, tmp_path):
    """Killed during the conversion: the repo is the old one or the converted one (same refs, same files); killed
    between the conversion's two renames the folder is missing until the next push, which restores it."""
    calls = None
    for n, point in enumerate(["git:3", "git:5", "git:7", "git:8", "step:moved-aside", "git:9"]):
        hub = tmp_path / f"hub{n}"
        repo = legacy_repo(hub, variants[0], "t0")
        old = visible(hub)
        if calls is None:
            calls = calibrate(hub, variants[1], tmp_path)["calls"]
            assert calls[:10] == [
                "rev-parse",  # main names a commit
                "status",
                "init",
                "config",
                "for-each-ref",
                "init",
                "update-ref",
                "reset",
                "for-each-ref",
                "update-ref",
            ]  # the conversion (its refs recorded in the store), then the push itself
        kill_at(hub, variants[1], "t1", point, signal.SIGKILL, tmp_path)
        if point == "step:moved-aside":
            assert not os.path.lexists(repo)
        else:
            assert check_after_kill(hub, old, files_of(variants[1]), "t1") == "old"
            assert repo.is_symlink() == (point == "git:9")
        push_again(hub, variants[1], "t1")
        assert git(repo, "rev-parse", "t0") == old["refs"]["refs/tags/t0"]


def test_failure_after_nothing_visible_changed_keeps_the_old_version(variants, tmp_path, monkeypatch):
    hub = tmp_path / "hub"
    push(PushConfig(folder=variants[0], repo=REPO, repo_type=KIND, tag="t0", hub=hub))
    old = visible(hub)
    monkeypatch.setattr(local_hub, "_swap", lambda *a: (_ for _ in ()).throw(OSError("disk full")))
    with pytest.raises(PushFailedError, match="disk full"):
        push(PushConfig(folder=variants[1], repo=REPO, repo_type=KIND, tag="t1", hub=hub))
    assert visible(hub) == old
    monkeypatch.undo()
    push_again(hub, variants[1], "t1")


# ---- online: the same kills against the Hub-protocol test server -------------------------------------------------

ONLINE_DRIVER = r"""
import sys
import phr.hub.online as online
from phr.config.ops import PushConfig
from phr.hub import push

online.gate = lambda folder, repo_type, **policy: None
folder, repo, tag, endpoint = sys.argv[1:5]
push(PushConfig(folder=folder, repo=repo, repo_type="model", tag=tag, endpoint=endpoint))
"""
TOKEN = "hf_kill_test_token_0123456789"


def online_push(
    server, folder: Path, tag: str, env: dict, kill_after: int | None = None, repo: str = "alice/tiny"
) -> int:
    """Push in a subprocess; with ``kill_after``, kill its process group once the server has handled that many of
    its requests (before the client reads the answer). Returns how many requests the server saw."""
    seen, held, release = [0], threading.Event(), threading.Event()
    real = server._handle

    def handle(*a, **k):
        reply = real(*a, **k)
        seen[0] += 1
        if seen[0] == kill_after:
            held.set()
            release.wait(30)
        return reply

    server._handle = handle
    try:
        proc = subprocess.Popen(
            [sys.executable, "-c", ONLINE_DRIVER, str(folder), repo, tag, server.url],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        if kill_after is not None:
            while not held.wait(0.02):
                assert proc.poll() is None, f"the push ended before its request {kill_after}"
            os.killpg(proc.pid, (signal.SIGKILL, signal.SIGTERM)[kill_after % 2])
            release.set()
            proc.communicate(timeout=30)
        else:
            _, err = proc.communicate(timeout=60)
            assert proc.returncode == 0, err
        return seen[0]
    finally:
        server._handle = real


def test_online_kill_after_each_request(tmp_path, monkeypatch):
    """What docs/publishing.md says a killed online push leaves: main at the old or the new commit (one atomic
    commit; uploaded files no commit names are not visible); the tag is created after the commit, so a kill
    between the two leaves main new without the tag; the same push again creates the tag without a second commit.
    A kill right after the push created the repo leaves the new repo empty (its initial commit)."""
    from tests.support.hub_server import HubServer

    monkeypatch.setenv("HF_TOKEN", TOKEN)
    monkeypatch.delenv("PHR_HUB_DIR", raising=False)
    with HubServer(tokens={TOKEN: "alice"}) as server, server.patch_clients():
        env = {**server.client_env(tmp_path / "home"), "HF_TOKEN": TOKEN}
        first = model_folder(tmp_path / "o0", 100)
        online_push(server, first, "t0", env)
        before = len(server.requests)
        online_push(server, model_folder(tmp_path / "o1", 101), "t1", env)  # calibration: new files, a tag
        paths = [f"{r['method']} {r['path']}" for r in server.requests[before:]]
        assert [p.split("/")[-2] for p in paths[-3:-1]] == ["verify", "commit"] and "/tag/" in paths[-1]
        seen = {}
        for k in range(1, len(paths) + 1):
            target, tag = model_folder(tmp_path / f"o{k + 1}", 101 + k), f"k{k}"
            old_main = server.head("model", "alice/tiny")
            commits = len(server.commits("model", "alice/tiny"))
            online_push(server, target, tag, env, kill_after=k)
            main, tagged = server.head("model", "alice/tiny"), _has_tag(server, tag)
            if main == old_main:
                assert not tagged and len(server.commits("model", "alice/tiny")) == commits
            else:
                assert {
                    p: b for p, b in server.files("model", "alice/tiny").items() if p != ".gitattributes"
                } == files_of(target)
                assert len(server.commits("model", "alice/tiny")) == commits + 1
                assert not tagged or server.head("model", "alice/tiny", tag) == main
            seen[paths[k - 1]] = "old" if main == old_main else "new, tagged" if tagged else "new, no tag"
            push(
                PushConfig(folder=target, repo="alice/tiny", repo_type="model", tag=tag, endpoint=server.url)
            )  # the same push again
            assert server.head("model", "alice/tiny", tag) == server.head("model", "alice/tiny")
            assert len(server.commits("model", "alice/tiny")) == commits + 1
        assert seen[paths[-2]] == "new, no tag" and seen[paths[-1]] == "new, tagged"
        assert set(list(seen.values())[:-2]) == {"old"}
        # killed right after creating the repo: an empty repo, which the same push again fills
        create = next(i for i, r in enumerate(server.requests, 1) if r["path"] == "/api/repos/create")
        online_push(server, first, "t0", env, kill_after=create, repo="alice/fresh")
        assert set(server.files("model", "alice/fresh")) <= {".gitattributes"}
        assert push(
            PushConfig(folder=first, repo="alice/fresh", repo_type="model", tag="t0", endpoint=server.url)
        ).changed
        assert {p: b for p, b in server.files("model", "alice/fresh").items() if p != ".gitattributes"} == files_of(
            first
        )
        assert server.errors == []


def _has_tag(server, tag: str) -> bool:
    try:
        server.head("model", "alice/tiny", tag)
    except Exception:  # noqa: BLE001 -- the fake raises for an unknown revision
        return False
    return True
