"""The cache survives SIGKILL mid-run and concurrent writer processes."""

import os
import signal
import sqlite3
import subprocess
import sys
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


def prompts_asked(srv, since=0):
    return [r["json"]["messages"][-1]["content"] for r in srv.requests[since:] if r["path"].endswith("/completions")]


def cached_prompts(db):
    try:
        rows = sqlite3.connect(db).execute("SELECT request FROM calls").fetchall()
    except sqlite3.OperationalError:  # the worker has created the file but not yet its tables
        return []
    return [r[0] for r in rows]


def test_sigkill_mid_run_loses_no_completed_call_and_duplicates_none(setup):
    srv, env, db = setup
    proc = subprocess.Popen(
        [sys.executable, str(WORKER), "0", "60", "4"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if db.exists() and len(cached_prompts(db)) >= 12:
            break
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert proc.returncode == -signal.SIGKILL
    conn = sqlite3.connect(db)
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    done_before = {r for r in cached_prompts(db)}
    n_before = len(done_before)
    assert 12 <= n_before < 60
    sent_before = srv.count

    out = subprocess.run(
        [sys.executable, str(WORKER), "0", "60", "4"], env=env, capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr
    calls, hits = map(int, out.stdout.split())
    assert hits == n_before and calls == 60 - n_before  # every completed call reused, the rest asked once
    rerun_prompts = prompts_asked(srv, sent_before)
    assert len(rerun_prompts) == len(set(rerun_prompts)) == 60 - n_before
    finished_before = {f"prompt {i}" for i in range(60)} - set(rerun_prompts)
    assert len(finished_before) == n_before  # no completed call was asked again
    final = cached_prompts(db)
    assert len(final) == len(set(final)) == 60
    assert sqlite3.connect(db).execute("PRAGMA integrity_check").fetchone()[0] == "ok"


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
