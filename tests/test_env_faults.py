"""Issue 26, item 4 and the signal parts of item 5: a broken environment is one `error:` line naming the file and
the remedy (exit 1; 2 for an input that does not parse), never a traceback; stored answers carry a checksum;
SIGINT / SIGTERM print the command that resumes the work.

Full disks are real where the platform lets an unprivileged process mount a small tmpfs in its own namespaces
(`unshare -rm`): the command runs inside, on a disk filled to the brim (or to a given free size); elsewhere those
tests are skipped, and the in-process ones (fsync and SQLite's own SQLITE_FULL) still run everywhere.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import random
import re
import shutil
import signal
import sqlite3
import subprocess
import time
from functools import cache
from pathlib import Path

import pytest
from typer.testing import CliRunner

from phr.cli import app
from tests.support.cli import EXE, run
from tests.support.protocol_server import ProtocolServer

KEY = "sk-env-SECRET-0123456789"
API_ENV = {"OPENAI_API_KEY": KEY}
_SMALL_DISK = """
mnt=$1; size=$2; free=$3; listing=$4; shift 4
mount -t tmpfs -o size=${size}k tmpfs "$mnt" || exit 99
head -c $(( (size - free) * 1024 )) /dev/zero > "$mnt/.fill" 2>/dev/null
"$@"; rc=$?
ls -A "$mnt" > "$listing"
exit $rc
"""


@cache
def _small_disks() -> bool:
    """Whether `unshare -rm` may mount a tmpfs here (user and mount namespaces)."""
    exe = shutil.which("unshare")
    if exe is None:
        return False
    probe = subprocess.run([exe, "-rm", "sh", "-c", "mount -t tmpfs -o size=8k tmpfs /mnt"], capture_output=True)
    return probe.returncode == 0


needs_small_disk = pytest.mark.skipif(not _small_disks(), reason="no user/mount namespaces for a small tmpfs")


def on_small_disk(tmp_path: Path, *args, size_kb: int = 256, free_kb: int = 0, env=None):
    """``phr-publish ARGS`` with ``tmp_path/disk`` a tmpfs of ``size_kb`` with ``free_kb`` left free ("{disk}" in
    an argument is that folder). Returns the process and what the disk held when the command ended."""
    disk, listing, script = tmp_path / "disk", tmp_path / "listing", tmp_path / "small_disk.sh"
    disk.mkdir()
    script.write_text(_SMALL_DISK)
    argv = [str(a).replace("{disk}", str(disk)) for a in args]
    clean = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")} | {"OPENAI_API_KEY": KEY} | (env or {})
    cmd = ["unshare", "-rm", "sh", str(script), str(disk), str(size_kb), str(free_kb), str(listing), EXE, *argv]
    r = subprocess.run(cmd, env=clean, capture_output=True, text=True)
    assert r.returncode != 99, r.stderr
    return r, sorted(listing.read_text().split())


def one_error_line(stderr: str) -> str:
    """The one `error:` line of ``stderr`` (other lines: progress and loading notes only, no traceback)."""
    assert "Traceback" not in stderr, stderr
    errors = [line for line in stderr.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1, stderr
    return errors[0]


@pytest.fixture
def api(monkeypatch):
    """The OpenAI protocol server, the real client's environment pointed at it (inherited by subprocesses)."""
    with ProtocolServer() as srv:
        monkeypatch.setenv("OPENAI_API_KEY", KEY)
        monkeypatch.setenv("OPENAI_BASE_URL", srv.url + "/v1")
        yield srv


def _eval(dataset, out, *more) -> list[str]:
    base = ["eval", "phrbench", "--model", "openai:gpt-4o", "--dataset", str(dataset), "--limit", "2"]
    return [*base, "--samples", "1", "--scorer", "none", "--no-plots", "--out", str(out), *more]


# ---- a full disk --------------------------------------------------------------------------------------------------


@needs_small_disk
def test_full_disk_during_build_names_the_output_and_leaves_nothing(tmp_path):
    r, left = on_small_disk(tmp_path, "build", "phrbench", "--out", "{disk}/phrbench")
    line = one_error_line(r.stderr)
    assert r.returncode == 1
    assert line.startswith(f"error: {tmp_path}/disk/phrbench: No space left on device (ENOSPC): free space")
    assert left == [".fill"]  # no half-written folder, no temporary sibling


@needs_small_disk
def test_full_disk_during_eval_output(tmp_path, api, mini_folder):
    cache = tmp_path / "calls.sqlite"
    r, left = on_small_disk(tmp_path, "--cache", cache, *_eval(mini_folder, "{disk}/run"))
    line = one_error_line(r.stderr)
    assert r.returncode == 1 and line.startswith(f"error: {tmp_path}/disk/run: No space left on device (ENOSPC)")
    assert left == [".fill"]
    assert sqlite3.connect(cache).execute("SELECT COUNT(*) FROM calls").fetchone()[0] == 10  # the rerun asks nothing


@needs_small_disk
def test_full_disk_during_pull(tmp_path):
    folder = tmp_path / "m"
    folder.mkdir()
    (folder / "README.md").write_text("---\nlicense: mit\n---\n# m\n")
    (folder / "config.json").write_text(json.dumps({"words": ["x" * 64] * 64}))
    assert run("push", folder, "--repo", "org/m", "--repo-type", "model", "--hub", tmp_path / "hub").returncode == 0
    args = ("pull", "org/m", "--repo-type", "model", "--hub", tmp_path / "hub", "--out", "{disk}/m")
    r, left = on_small_disk(tmp_path, *args, size_kb=64, free_kb=4)
    line = one_error_line(r.stderr)
    assert r.returncode == 1 and line.startswith(f"error: {tmp_path}/disk/m: No space left on device (ENOSPC)")
    assert left == [".fill"]


@needs_small_disk
def test_full_disk_during_call_cache_write(tmp_path, api, mini_folder):
    """The disk fills while answers are stored (after the server was asked): one line naming the cache, no run
    folder."""
    args = ("--cache", "{disk}/calls.sqlite", *_eval(mini_folder, tmp_path / "run"))
    r, _ = on_small_disk(tmp_path, *args, size_kb=512, free_kb=112)
    line = one_error_line(r.stderr)
    assert r.returncode == 1 and not (tmp_path / "run").exists()
    assert line == (
        f"error: {tmp_path}/disk/calls.sqlite: database or disk is full: free space on that disk, then rerun "
        "(finished calls are kept)"
    )
    assert api.count >= 1


def test_enospc_in_process_names_the_file(tmp_path, api, mini_folder, monkeypatch):
    """The same faults without a small disk: fsync reporting ENOSPC on the run's files, and SQLite's own
    SQLITE_FULL on the call cache (its page limit reached)."""
    from phr.core import sqlite as phr_sqlite

    def full_fsync(fd):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    cache = tmp_path / "calls.sqlite"
    monkeypatch.setenv("PHR_CACHE", str(cache))  # restored after the test (--cache sets it in this process)
    with monkeypatch.context() as m:
        m.setattr(os, "fsync", full_fsync)
        r = CliRunner().invoke(app, ["--cache", str(cache), *_eval(mini_folder, tmp_path / "run")])
    assert r.exit_code == 1 and not (tmp_path / "run").exists(), r.output
    assert f"error: {tmp_path / 'run'}: No space left on device (ENOSPC): free space on that disk" in r.output
    assert "Traceback" not in r.output

    connect = phr_sqlite.connect

    def small(path, **kw):
        conn = connect(path, **kw)
        pages = conn.execute("PRAGMA page_count").fetchone()[0]
        conn.execute(f"PRAGMA max_page_count = {pages + 1}")
        return conn

    monkeypatch.setattr(phr_sqlite, "connect", small)
    monkeypatch.setattr("phr.llm.cache.connect", small)
    r = CliRunner().invoke(app, ["--cache", str(tmp_path / "c2.sqlite"), *_eval(mini_folder, tmp_path / "run2")])
    assert r.exit_code == 1 and not (tmp_path / "run2").exists(), r.output
    assert f"error: {tmp_path / 'c2.sqlite'}: database or disk is full: free space on that disk" in r.output


# ---- damaged files ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("damage", ["garbled", "truncated"])
def test_damaged_call_cache_is_named(tmp_path, api, damage, monkeypatch):
    from phr.llm import LLM, ChatRequest, GenerationParams, as_messages

    cache = tmp_path / "calls.sqlite"
    monkeypatch.setenv("PHR_CACHE", str(cache))  # 40 answers cached in one in-process call (a page or more)
    requests = [ChatRequest(as_messages(f"fill {k} " * 40), GenerationParams(max_tokens=64)) for k in range(40)]
    assert all(r.ok for r in LLM("openai:gpt-4o", progress=False, show_summary=False).generate(requests))
    with contextlib.closing(sqlite3.connect(cache)) as db:  # the answers into the main file, as at a process's end
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    data = cache.read_bytes()
    if damage == "garbled":
        rng = random.Random(7)
        data = bytes(rng.randrange(256) for _ in range(len(data)))
    else:
        data = data[: len(data) // 2 + 100]  # cut mid-page
    cache.write_bytes(data)
    for p in tmp_path.glob("calls.sqlite-*"):
        p.unlink()
    r = run("--cache", cache, "llm", "ping", "openai:gpt-4o", "--prompt", "fill 3 " * 40, env=API_ENV)
    line = one_error_line(r.stderr)
    assert r.returncode == 1
    assert line.startswith(f"error: {cache}: ")
    assert f"the SQLite file is damaged: move it aside (mv {cache} {cache}.bad) and rerun" in line


def test_truncated_responses_jsonl_is_named(tmp_path, api, mini_folder, monkeypatch):
    cache = tmp_path / "calls.sqlite"
    monkeypatch.setenv("PHR_CACHE", str(cache))  # restored after the test (--cache sets it in this process)
    r = CliRunner().invoke(app, ["--cache", str(cache), *_eval(mini_folder, tmp_path / "run")])
    assert r.exit_code == 0, r.output
    responses = tmp_path / "run" / "responses.jsonl"
    text = responses.read_text()
    responses.write_text(text[: text.index("\n", len(text) // 2) + 20])  # a line cut in the middle
    cut = text[: text.index("\n", len(text) // 2) + 20].count("\n") + 1
    r = run("eval", "score", tmp_path / "run", "--scorer", "none")
    line = one_error_line(r.stderr)
    assert r.returncode == 2
    assert line.startswith(f"error: {responses}: line {cut} is not JSON (")
    assert "truncated or damaged: write the run again with phr-publish eval phrbench" in line


def test_missing_git_object_on_pull(tmp_path):
    folder = tmp_path / "m"
    folder.mkdir()
    (folder / "README.md").write_text("---\nlicense: mit\n---\n# m\n")
    (folder / "config.json").write_text('{"a": 1}\n')
    hub = tmp_path / "hub"
    assert run("push", folder, "--repo", "org/m", "--repo-type", "model", "--hub", hub).returncode == 0
    store = hub / "models" / "org" / ".m.hub" / "store.git"

    def git(*args):
        return subprocess.run(
            ["git", "-C", str(hub / "models" / "org" / "m"), *args], capture_output=True, text=True, check=True
        ).stdout

    blob = git("rev-parse", "main:config.json").strip()
    (store / "objects" / blob[:2] / blob[2:]).unlink()
    r = run("pull", "org/m", "--repo-type", "model", "--hub", hub, "--out", tmp_path / "out")
    line = one_error_line(r.stderr)
    assert r.returncode == 1 and not (tmp_path / "out").exists()
    assert blob in line and f"the local hub's object store ({store}) is missing objects or damaged" in line

    commit = git("rev-parse", "main").strip()
    (store / "objects" / commit[:2] / commit[2:]).unlink()
    r = run("pull", "org/m", "--repo-type", "model", "--hub", hub, "--out", tmp_path / "out")
    line = one_error_line(r.stderr)
    assert r.returncode == 1 and not (tmp_path / "out").exists()
    # the hub's own state check (phr.hub.local) sees it first: the damage and the repair, never a new repo
    assert f"the local hub model repo org/m is damaged: its main branch names {commit}" in line
    assert "phr-publish repair org/m --repo-type model" in line


# ---- checksums of stored answers -----------------------------------------------------------------------------


def _ping(cache, prompt):
    return run("--cache", cache, "llm", "ping", "openai:gpt-4o", "--prompt", prompt, env={"COLUMNS": "200", **API_ENV})


def test_edited_cache_answer_is_a_miss_asked_again_and_counted(tmp_path, api):
    cache = tmp_path / "calls.sqlite"
    first = _ping(cache, "what is stored here")
    assert first.returncode == 0 and first.stdout.strip() == "echo[gpt-4o] what is stored here #0"
    sqlite3.connect(cache).execute("PRAGMA wal_checkpoint(TRUNCATE)").close()
    data = cache.read_bytes()
    assert data.count(b"what is stored here #0") == 1  # the answer (the request JSON holds the prompt only)
    cache.write_bytes(data.replace(b"what is stored here #0", b"what is STORED here #0"))  # same length
    again = _ping(cache, "what is stored here")
    assert again.returncode == 0, again.stderr
    assert again.stdout.strip() == "echo[gpt-4o] what is stored here #1"  # asked again: the server's next sample
    assert api.count == 2 and "cached=False" in again.stderr
    assert "0 (corrupt: 1)" in again.stderr and "failed their checksum" in again.stderr
    third = _ping(cache, "what is stored here")  # the fresh answer replaced the edited row
    assert third.stdout.strip() == "echo[gpt-4o] what is stored here #1" and api.count == 2
    assert "cached=True" in third.stderr and "corrupt" not in third.stderr


def test_cache_written_before_checksums_is_migrated(tmp_path, api):
    from phr.llm.cache import SCHEMA, CallCache, answer_checksum

    cache = tmp_path / "old.sqlite"
    old_schema = SCHEMA.replace(",\n    checksum TEXT\n", "\n")
    assert "checksum" not in old_schema
    first = _ping(cache, "an old answer")
    assert first.returncode == 0
    con = sqlite3.connect(cache)  # rebuild the file as an older toolkit wrote it: no checksum column
    rows = con.execute("SELECT * FROM calls").fetchall()
    con.close()
    cache.unlink()
    for p in tmp_path.glob("old.sqlite-*"):
        p.unlink()
    con = sqlite3.connect(cache)
    con.executescript(old_schema)
    con.executemany(f"INSERT INTO calls VALUES ({','.join('?' * 12)})", [r[:12] for r in rows])
    con.commit()
    con.close()
    again = _ping(cache, "an old answer")  # trusted as it was, and given its checksum
    assert again.stdout == first.stdout and "cached=True" in again.stderr and api.count == 1
    key, text, finish, pt, ct, checksum = (
        sqlite3.connect(cache)
        .execute("SELECT key, text, finish_reason, prompt_tokens, completion_tokens, checksum FROM calls")
        .fetchone()
    )
    assert checksum == answer_checksum(key, text, finish, pt, ct)
    CallCache(cache)  # opening a migrated file again changes nothing
    assert sqlite3.connect(cache).execute("SELECT checksum FROM calls").fetchone()[0] == checksum


# ---- SIGTERM / SIGINT --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("sig, code", [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_signal_while_waiting_prints_the_rerun_command(tmp_path, api, mini_folder, sig, code):
    """The signal comes once a request waits on the server (held there until the test ends): no timing."""
    api.script(None, [("hang", 600)] * 20)
    args = ["--cache", str(tmp_path / "calls.sqlite"), *_eval(mini_folder, tmp_path / "run")]
    clean = {k: v for k, v in os.environ.items() if k != "PHR_PROGRESS_EVERY"}
    proc = subprocess.Popen([EXE, *args], env=clean, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        while api.count == 0 and proc.poll() is None:
            time.sleep(0.05)
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=300)
    finally:
        proc.kill()
    assert proc.returncode == code, err
    assert "Traceback" not in err
    assert err.splitlines()[-1] == f"interrupted; rerun to resume: phr-publish {' '.join(args)}"
    assert not (tmp_path / "run").exists()


@pytest.mark.slow
def test_local_generation_stops_within_one_token(smollm2):
    """A stop request (what SIGINT / SIGTERM set) ends a running generation at the next token and raises instead
    of returning cut answers."""
    from phr.core import interrupt
    from phr.llm.providers.base import BatchItem
    from phr.llm.types import GenerationParams, as_messages

    ticks: list[float] = []

    def progress(done: float) -> None:
        ticks.append(done)
        if len(ticks) == 3:
            interrupt.request_stop(signal.SIGTERM)

    items = [
        BatchItem(as_messages(f"Write a long story number {i}."), GenerationParams(max_tokens=400), i) for i in (0, 1)
    ]
    try:
        with pytest.raises(interrupt.Interrupted) as e:
            smollm2.complete_batch(items, progress=progress)
    finally:
        interrupt.clear()
    assert e.value.exit_code == 143
    assert len(ticks) == 4  # the token during which the request came, then one more check: stopped


@pytest.mark.slow
def test_ctrl_c_stops_local_model_eval(tmp_path, smollm2, mini_folder):
    """Ctrl-C once the local model is generating (a progress line inside the first batch): the command ends with
    the rerun line and exit 130, and no cut answer is cached."""
    cache = tmp_path / "calls.sqlite"
    args = ["--cache", str(cache), "eval", "phrbench", "--model", "local:smollm2", "--dataset", str(mini_folder)]
    args += ["--limit", "2", "--samples", "1", "--max-tokens", "2000", "--scorer", "none", "--no-plots"]
    env = {**os.environ, "PHR_PROGRESS_EVERY": "0", "HF_HUB_OFFLINE": "1"}
    proc = subprocess.Popen([EXE, *args], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    seen = []
    try:
        for line in proc.stderr:
            seen.append(line)
            if re.match(r"\[progress\] local:smollm2 .*: 0/10 \(0%\)", line):  # its first batch is running
                break
        proc.send_signal(signal.SIGINT)
        _, rest = proc.communicate(timeout=300)
    finally:
        proc.kill()
    err = "".join(seen) + rest
    assert proc.returncode == 130, err
    assert "Traceback" not in err
    assert err.splitlines()[-1] == f"interrupted; rerun to resume: phr-publish {' '.join(args)}"
    assert sqlite3.connect(cache).execute("SELECT COUNT(*) FROM calls").fetchone()[0] == 0


def test_describe_words_each_fault(tmp_path):
    """phr.core.faults.describe: the file, the reason and the remedy, and the exit code, per kind of fault."""
    from phr.core.faults import describe

    def raised(exc_or_fn):
        try:
            exc_or_fn()
        except Exception as e:  # noqa: BLE001 - the fault under test, whatever it is
            return e
        raise AssertionError("no fault")

    def denied():
        raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(tmp_path / "out"))

    assert describe(raised(denied)) == (
        f"{tmp_path / 'out'}: Permission denied (EACCES): give this user access to it (or use another path), then rerun",
        1,
    )
    read_only = OSError(errno.EROFS, os.strerror(errno.EROFS), "/ro/x")
    assert describe(read_only)[0].startswith("/ro/x: Read-only file system (EROFS): the file system is read-only")
    msg, code = describe(raised(lambda: open(tmp_path / "absent.json")))
    assert code == 2 and msg == f"{tmp_path / 'absent.json'}: No such file or directory (ENOENT): check the path"

    target = tmp_path / "half.jsonl"

    def full_write():
        with open(target, "w") as f:  # the open file in the frame names it: a failed write names nothing itself
            f.write('{"a": ')
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    assert describe(raised(full_write))[0].startswith(f"{target}: No space left on device (ENOSPC): free space")

    def bad_json():
        with open(target) as f:
            json.loads(f.read())

    msg, code = describe(raised(bad_json))
    assert code == 2 and msg.startswith(
        f"{target}: not valid JSON at line 1 column 7 (Expecting value): the file is truncated"
    )
    git = subprocess.CalledProcessError(128, ["git", "-C", "/h", "archive"], stderr=b"fatal: bad object abc\n")
    assert describe(git) == ("git -C /h archive failed: fatal: bad object abc", 1)
