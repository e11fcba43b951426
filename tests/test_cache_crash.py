"""The cache survives SIGKILL mid-run and concurrent writer processes."""

import json
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from tests.support.protocol_server import ProtocolServer

WORKER = Path(__file__).with_name("_cache_worker.py")


@pytest.fixture
def setup(tmp_path):
    with ProtocolServer(latency=0.15) as srv:
        env = dict(
            os.environ,
            OPENAI_API_KEY="sk-test-crash-0123456789",
            OPENAI_BASE_URL=srv.url + "/v1",
            PHR_CACHE=str(tmp_path / "calls.sqlite"),
        )
        yield srv, env, tmp_path / "calls.sqlite"


def cached_prompts(db):
    if not db.exists():
        return []
    try:
        rows = sqlite3.connect(db).execute("SELECT request FROM calls").fetchall()
    except sqlite3.OperationalError:  # the worker has created the file but not yet its tables
        return []
    return [r[0] for r in rows]


def complete_rows(db):
    """Every committed row, checked complete: (prompt, reply) with the echo reply naming its prompt."""
    rows = sqlite3.connect(db).execute("SELECT request, text, finish_reason FROM calls").fetchall()
    out = []
    for request, text, finish in rows:
        prompt = json.loads(request)["messages"][-1][1]
        assert prompt.startswith("prompt ") and f"] {prompt} #" in text and finish == "stop", (request, text)
        out.append((prompt, text))
    return out


def test_sigkill_mid_run_loses_no_completed_call_and_duplicates_none(setup):
    """No assertion depends on where the kill lands: prompts 40-59 are held by the server until the kill, so the
    first run can never finish, and the kill comes at any moment after 12 calls were committed (12 to 40 rows,
    possibly mid-commit). The rerun is told apart from the killed run's late requests by its API key."""
    srv, env, db = setup
    held = threading.Event()
    held.set()
    srv.script(None, [("hang", 600)] * 60, match=lambda b: held.is_set() and int(_prompt(b).split()[1]) >= 40)
    proc = subprocess.Popen(
        [sys.executable, str(WORKER), "0", "60", "4"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    deadline = time.monotonic() + 300  # a wait for a condition that comes, not a timing assumption
    while len(cached_prompts(db)) < 12 and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    held.clear()
    assert proc.returncode == -signal.SIGKILL
    assert sqlite3.connect(db).execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    done_before = [r[0] for r in complete_rows(db)]
    n_before = len(done_before)
    assert len(set(done_before)) == n_before and 12 <= n_before <= 40
    assert all(int(p.split()[1]) < 40 for p in done_before)

    rerun_env = dict(env, OPENAI_API_KEY="sk-test-rerun-0123456789")
    out = subprocess.run(
        [sys.executable, str(WORKER), "0", "60", "4"], env=rerun_env, capture_output=True, text=True, timeout=300
    )
    assert out.returncode == 0, out.stderr
    calls, hits = map(int, out.stdout.split())
    assert hits == n_before and calls == 60 - n_before  # every completed call reused, the rest asked once
    asked = [
        _prompt(r["json"])
        for r in srv.requests
        if r["path"].endswith("/completions") and "sk-test-rerun" in r["headers"].get("authorization", "")
    ]
    assert len(asked) == len(set(asked)) == 60 - n_before
    assert not set(asked) & set(done_before)  # no completed call was asked again
    final = [r[0] for r in complete_rows(db)]
    assert len(final) == len(set(final)) == 60
    assert sorted(final) == sorted(f"prompt {i}" for i in range(60))  # what an uninterrupted run holds
    assert sqlite3.connect(db).execute("PRAGMA integrity_check").fetchone()[0] == "ok"


def _prompt(body) -> str:
    return body["messages"][-1]["content"]


def test_concurrent_writer_processes(setup):
    srv, env, db = setup
    srv.latency = 0.02
    # three processes, overlapping ranges: 0-40, 20-60, 10-50
    procs = [
        subprocess.Popen(
            [sys.executable, str(WORKER), a, b, "4"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        for a, b in (("0", "40"), ("20", "60"), ("10", "50"))
    ]
    for p in procs:
        _, err = p.communicate(timeout=120)
        assert p.returncode == 0, err
    rows = cached_prompts(db)
    assert len(rows) == len(set(rows)) == 60
    assert sqlite3.connect(db).execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    before = srv.count
    out = subprocess.run([sys.executable, str(WORKER), "0", "60", "4"], env=env, capture_output=True, text=True)
    assert out.stdout.split() == ["0", "60"] and srv.count == before
