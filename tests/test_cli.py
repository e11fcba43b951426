"""`phr-publish` as a user runs it: the installed entry point, in a subprocess."""

import json
import os
import subprocess
from pathlib import Path

import pytest

from tests.support.cli import EXE, run
from tests.support.protocol_server import ProtocolServer

KEY = "sk-cli-SECRET-0123456789"


@pytest.fixture
def server():
    with ProtocolServer() as srv:
        yield srv


def test_help_lists_command_groups():
    r = run("--help")
    assert r.returncode == 0
    for word in ("llm", "cache", "--cache", "--log-level"):
        assert word in r.stdout


def test_ping_openai_prints_reply_and_usage_then_cache_stats_and_clear(server, tmp_path):
    env = {"OPENAI_API_KEY": KEY, "OPENAI_BASE_URL": server.url + "/v1"}
    cache = str(tmp_path / "c.sqlite")
    r = run("--cache", cache, "llm", "ping", "openai:gpt-4o", "--prompt", "hi there", env=env)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "echo[gpt-4o] hi there #0"
    assert "prompt_tokens=2" in r.stderr and "completion_tokens=4" in r.stderr and "cached=False" in r.stderr
    again = run("--cache", cache, "llm", "ping", "openai:gpt-4o", "--prompt", "hi there", env=env)
    assert "cached=True" in again.stderr and server.count == 1
    stats = run("--cache", cache, "cache", "stats", "--json")
    data = json.loads(stats.stdout)
    assert data["entries"] == 1 and data["models"][0]["model"] == "gpt-4o"
    cleared = run("--cache", cache, "cache", "clear", "--yes")
    assert "deleted 1 entries" in cleared.stdout
    assert json.loads(run("--cache", cache, "cache", "stats", "--json").stdout)["entries"] == 0
    assert KEY not in r.stdout + r.stderr + stats.stdout + Path(cache).read_bytes().decode("latin-1")


def test_clear_errors(tmp_path):
    r = run("llm", "ping", "foo:bar")
    assert r.returncode == 2 and "unknown model spec 'foo:bar'" in r.stderr and "anthropic:<model>" in r.stderr
    r = run("llm", "ping", "openai:gpt-4o")
    assert r.returncode == 2 and "OPENAI_API_KEY" in r.stderr
    r = run("llm", "ping", "google:gemini-x")
    assert r.returncode == 2 and "GEMINI_API_KEY" in r.stderr
    r = run("llm", "ping", f"hf:{tmp_path}/no-such-model", env={"HF_HUB_OFFLINE": "1"})
    assert r.returncode == 2 and "download" in r.stderr
    r = run("--log-level", "LOUD", "cache", "stats")
    assert r.returncode == 2


def test_unreachable_endpoint_says_which_and_why(tmp_path):
    env = {"OPENAI_API_KEY": KEY, "OPENAI_BASE_URL": "http://127.0.0.1:9/v1"}
    r = run("--cache", str(tmp_path / "c.sqlite"), "llm", "ping", "openai:gpt-4o", "--timeout", "2", env=env)
    assert r.returncode == 1
    assert "127.0.0.1:9" in r.stderr and "connection" in r.stderr and KEY not in r.stderr


@pytest.mark.slow
def test_ping_local_smollm2_offline(tmp_path, smollm2):
    env = {"HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}
    r = run("--cache", str(tmp_path / "c.sqlite"), "llm", "ping", "local:smollm2", env=env)
    assert r.returncode == 0, r.stderr
    assert "Paris" in r.stdout and "model=smollm2" in r.stderr


def test_build_paper_without_keys_fails_before_any_work(tmp_path):
    r = subprocess.run(
        [EXE, "build", "phrbench", "--recipe", "paper"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env={k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")},
    )
    assert r.returncode == 2 and "API key" in r.stderr and "GEMINI_API_KEY" in r.stderr
    assert list(tmp_path.iterdir()) == []
    r = run("build", "phrbench", "--recipe", "mini", "--generator", "openai:gpt-4o", "--out", str(tmp_path / "x"))
    assert r.returncode == 2 and "curated premises" in r.stderr
