"""Issue 14, items 6 and 10: the Retry-After cap and per-call timeout (library and CLI), SDK clients closed
with their event loop, output modes that honour the umask, failure messages that name the model once, and
error messages clipped at a word boundary. Real SDKs against the local protocol server."""

import json
import os
import sqlite3
import stat
import subprocess
import sys
import time
from contextlib import contextmanager
from email.utils import formatdate

import pytest
from typer.testing import CliRunner

from phr.core.text import clip
from phr.llm import ChatRequest, GenerationParams, as_messages
from tests.support.llm import API_KEY as KEY
from tests.support.llm import fast_llm as make
from tests.support.protocol_server import ProtocolServer


@pytest.fixture
def server(api_server):
    return api_server


def req(text, n=1):
    return ChatRequest(as_messages(text), GenerationParams(temperature=0.5), n=n)


def failure_rows(cache) -> list[tuple]:
    with sqlite3.connect(cache) as con:
        return con.execute("SELECT reason, message, attempts FROM failures").fetchall()


# ---- item 6: Retry-After is capped ------------------------------------------------------------------


def test_huge_retry_after_fails_at_once_with_the_reason(tmp_path, server):
    server.script(None, [("status", 429, {"Retry-After": "86400"})])
    llm = make()
    assert llm.max_retry_after == 600
    t0 = time.monotonic()
    res = llm.generate([req("slow down", n=2)])
    assert time.monotonic() - t0 < 300  # honouring it would wait a day
    assert server.count == 1  # not retried
    fails = res[0].failures
    assert [f.index for f in fails] == [0, 1] and {f.reason for f in fails} == {"rate_limit"}
    msg = fails[0].message
    assert fails[0].attempts == 1 and "after 1 attempt(s)" in msg
    assert "the server asked to wait 86400 s (Retry-After), more than the cap of 600 s" in msg
    assert "LLM(max_retry_after=...)" in msg and "--max-retry-after" in msg
    assert dict(llm.last_summary.failures) == {"rate_limit": 2}
    assert [r[0] for r in failure_rows(tmp_path / "calls.sqlite")] == ["rate_limit", "rate_limit"]
    # a rerun (the server no longer limits) asks again and succeeds
    assert make().generate([req("slow down", n=2)])[0].ok


def test_retry_after_as_http_date_beyond_the_cap(server):
    server.script(None, [("status", 503, {"Retry-After": formatdate(time.time() + 7200, usegmt=True)})])
    res = make(max_retry_after=60).generate([req("later")])
    f = res[0].failures[0]
    assert f.reason == "server_error" and server.count == 1
    assert "more than the cap of 60 s" in f.message


def test_retry_after_within_the_cap_is_honoured(server):
    server.script(None, [("status", 429, {"Retry-After": "1"})])
    llm = make(max_retry_after=1)
    t0 = time.monotonic()
    res = llm.generate([req("wait a second")])
    assert res[0].ok and time.monotonic() - t0 >= 1.0
    st = llm.last_summary.model("openai:gpt-4o")
    assert st.retries == 1 and st.calls == 2 and server.count == 2


def test_cap_is_configurable(server):
    server.script(None, [("status", 429, {"Retry-After": "2"})])
    res = make(max_retry_after=1.5).generate([req("too long for me")])
    assert server.count == 1
    assert "asked to wait 2 s (Retry-After), more than the cap of 1.5 s" in res[0].failures[0].message
    with pytest.raises(ValueError, match="max_retry_after"):
        make(max_retry_after=-1)
    with pytest.raises(ValueError, match="timeout"):
        make(timeout=0)


def test_llm_ping_max_retry_after(server):
    from phr.cli import app

    server.script(None, [("status", 429, {"Retry-After": "30"})])
    r = CliRunner().invoke(app, ["llm", "ping", "openai:gpt-4o", "--max-retry-after", "5", "--cache-mode", "off"])
    assert r.exit_code == 1 and server.count == 1
    assert "asked to wait 30 s (Retry-After), more than the cap of 5 s" in " ".join(r.output.split())


RECIPE = """name: small
seed: 1
models: {generator: openai:gpt-4o, judge: none}
slots:
  science: {truthful: 1, hallucinated: [Rule Contradiction, State Distortion]}
  code: {truthful: 1, hallucinated: [State Distortion]}
sources:
  - {source: sciq, domain: Physics, count: 2}
  - {source: mbpp, domain: Code, count: 2}
generation: {temperature: 0.9, max_tokens: 512, regeneration_rounds: 2}
"""


@pytest.fixture
def premise_server():
    from tests.support.paper_fixtures import v0_responder

    with ProtocolServer(responder=v0_responder()) as srv:
        yield srv


@pytest.fixture
def small_build(monkeypatch, premise_server, tmp_path):
    from tests.support.paper_fixtures import write_sources

    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("OPENAI_BASE_URL", premise_server.url + "/v1")
    monkeypatch.setenv("PHR_CACHE", str(tmp_path / "calls.sqlite"))
    write_sources(tmp_path / "sources", n=8)
    (tmp_path / "small.yaml").write_text(RECIPE)
    return tmp_path


def test_build_phrbench_timeout_and_max_retry_after_options(small_build, premise_server):
    """--timeout cuts a hanging call (retried), --max-retry-after refuses a long Retry-After at once."""
    from phr.cli import app

    root = small_build
    premise_server.script("/v1/chat", [("hang", 600), ("status", 429, {"Retry-After": "86400"})])
    t0 = time.monotonic()
    CliRunner().invoke(
        app,
        [
            "build",
            "phrbench",
            "--recipe",
            str(root / "small.yaml"),
            "--judge",
            "none",
            "--source-dir",
            str(root / "sources"),
            "--out",
            str(root / "out"),
            "--allow-short",
            "--prompts",
            "v0",
            "--timeout",
            "1",
            "--max-retry-after",
            "5",
        ],
    )
    assert time.monotonic() - t0 < 100  # the default timeout (120 s) would wait 120 s on the 600 s hang
    rows = failure_rows(root / "calls.sqlite")
    assert [r[0] for r in rows if r[0] != "invalid_output"] == ["rate_limit"]
    assert "more than the cap of 5 s" in [r[1] for r in rows if r[0] == "rate_limit"][0]


def eval_one(mini_folder, out, conditions: str, *options: str):
    """``phr eval phrbench`` of openai:gpt-4o on the first instance of the mini set, one sample; the CLI result."""
    from phr.cli import app

    args = ["--model", "openai:gpt-4o", "--dataset", str(mini_folder), "--limit", "1", "--samples", "1"]
    return CliRunner().invoke(app, ["eval", "phrbench", *args, "--conditions", conditions, *options, "--out", str(out)])


def test_eval_phrbench_timeout_and_max_retry_after_options(server, mini_folder, tmp_path):
    server.script("/v1/chat", [("hang", 600), ("status", 429, {"Retry-After": "86400"})])
    t0 = time.monotonic()
    options = ("--no-score", "--timeout", "1", "--max-retry-after", "5")
    r = eval_one(mini_folder, tmp_path / "run", "B,B+T", *options)
    assert r.exit_code == 0, r.output
    assert time.monotonic() - t0 < 100  # the default timeout (120 s) would wait 120 s on the 600 s hang
    rows = [json.loads(x) for x in (tmp_path / "run" / "generations.jsonl").read_text().splitlines()]
    fails = [x for x in rows if "failure" in x]
    assert len(rows) == 2 and [x["failure"] for x in fails] == ["rate_limit"]
    assert "asked to wait 86400 s (Retry-After), more than the cap of 5 s" in fails[0]["message"]


# ---- item 10a: SDK clients closed with their loop --------------------------------------------------

SCRIPT = r"""
import asyncio, gc, os, sys
from pydantic import BaseModel
from phr.llm import LLM, ChatRequest, GenerationParams, as_messages, generate_structured

class Out(BaseModel):
    statement: str

llm = LLM(sys.argv[1], progress=False, show_summary=False)
for prompt in ("round one", "round two"):  # two event loops, as in a build's generation rounds
    res = generate_structured(llm, [ChatRequest(as_messages(prompt), GenerationParams(), n=2)], Out)
    assert all(r.ok for r in res[0]), res

async def later():  # garbage collection while another loop runs, as in the next stage of a build
    gc.collect()
    await asyncio.sleep(0.2)

asyncio.run(later())
print("done")
"""


@pytest.mark.parametrize("spec", ["openai:gpt-4o", "anthropic:claude-x", "google:gemini-x"])
def test_no_event_loop_is_closed_noise(server, spec):
    with ProtocolServer(responder=lambda model, messages, k: json.dumps({"statement": f"s{k}"})) as srv:
        run_env = {
            **os.environ,
            "OPENAI_BASE_URL": srv.url + "/v1",
            "ANTHROPIC_BASE_URL": srv.url,
            "GOOGLE_GEMINI_BASE_URL": srv.url,
        }
        r = subprocess.run(
            [sys.executable, "-c", SCRIPT, spec], capture_output=True, text=True, env=run_env, timeout=120
        )
    assert r.returncode == 0 and r.stdout.strip() == "done", r.stderr
    assert "Task exception was never retrieved" not in r.stderr, r.stderr
    assert "Event loop is closed" not in r.stderr, r.stderr
    assert "was destroyed but it is pending" not in r.stderr, r.stderr


async def test_client_closed_by_aclose_and_by_loop_shutdown(server):
    """aclose() closes the loop's client; a loop that ends without aclose() (asyncio.run) closes it too."""
    import asyncio
    import threading

    from phr.llm.providers.openai_api import OpenAIProvider

    p = OpenAIProvider("gpt-4o")
    client = p._client
    await p.aclose()
    assert client.is_closed()

    async def use():
        await p.complete(as_messages("hi"), GenerationParams(), 1, 5.0)
        return p._client

    box = []
    t = threading.Thread(target=lambda: box.append(asyncio.run(use())))  # a loop of its own, never aclose()d
    t.start()
    t.join()
    assert box[0].is_closed()


# ---- item 10b: output modes honour the umask ---------------------------------------------------------


@contextmanager
def umask(mask):
    old = os.umask(mask)
    try:
        yield
    finally:
        os.umask(old)


def mode(path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


@pytest.mark.parametrize("mask, dir_mode, file_mode", [(0o022, 0o755, 0o644), (0o027, 0o750, 0o640)])
def test_run_results_and_submission_modes(server, mini_folder, tmp_path, mask, dir_mode, file_mode):
    from dataclasses import replace

    from phr.api import plan
    from phr.api import run as execute
    from phr.config.ops import EvalPhrbenchConfig, Scoring
    from phr.eval.pipeline import score_run
    from phr.eval.submission import SubmissionMeta, write_submission

    cfg = EvalPhrbenchConfig(
        model="openai:gpt-4o", dataset=str(mini_folder), conditions="B", samples=1, limit=1, scorer="none",
        score=False, out=tmp_path / "runs" / "r1",
    )  # fmt: skip
    with umask(mask):
        run = execute(replace(plan(cfg), llm=make())).run
        _, scores = score_run(run.path, Scoring(scorer="none"), progress=False, plots=False)
        sub = tmp_path / "sub" / "responses.jsonl"
        write_submission(sub, [("x", 0, "y")], SubmissionMeta(model="m", revision="r", samples=1))
    assert mode(run.path) == dir_mode and mode(scores) == dir_mode
    assert {p.name: mode(p) for p in run.path.iterdir() if p.is_file()} == {
        "responses.jsonl": file_mode,
        "generations.jsonl": file_mode,
        "run.json": file_mode,
    }
    assert all(mode(p) == file_mode for p in scores.iterdir() if p.is_file())
    assert mode(sub) == file_mode and mode(sub.with_name("responses.meta.json")) == file_mode


# ---- item 10c: a failure message names the model and endpoint once ----------------------------------


@pytest.mark.parametrize("spec", ["openai:gpt-4o", "anthropic:claude-x", "google:gemini-x"])
def test_failure_message_names_the_model_once(server, spec):
    server.script(None, [("status", 500)] * 2)
    f = make(spec, max_attempts=2).generate([req("doomed")])[0].failures[0]
    assert f.message.count(spec) == 1, f.message
    assert f.message.count(server.url) == 1, f.message
    assert f.message.startswith(f"{spec} at {server.url}") and "server_error after 2 attempt(s): HTTP 500" in f.message


def test_connection_failure_names_the_endpoint_once(server, monkeypatch):
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    f = make(max_attempts=1).generate([req("anyone?")])[0].failures[0]
    assert f.message.count("openai:gpt-4o") == 1 and f.message.count("127.0.0.1:9") == 1, f.message
    assert f.message.startswith("openai:gpt-4o: connection after 1 attempt(s): connection to http://127.0.0.1:9/v1")


# ---- item 10d: messages clipped at a word boundary --------------------------------------------------


def test_clip():
    text = "Exceeds the limit (4300 digits) for integer string conversion: value has 5000 digits; use more"
    assert clip(text, 200) == text
    assert clip(text, 80) == (
        "Exceeds the limit (4300 digits) for integer string conversion: value has 5000… "
        f"({len(text)} characters in all)"
    )
    assert clip(text, 76).startswith("Exceeds the limit (4300 digits) for integer string conversion: value has…")
    assert clip("a" * 300, 50) == "a" * 50 + "… (300 characters in all)"


def test_submission_huge_integer_message_is_whole(tmp_path, mini_folder):
    from phr.eval.dataset import load_eval_dataset
    from phr.eval.submission import SubmissionError, SubmissionMeta, validate_submission

    ds = load_eval_dataset(mini_folder)
    first = ds.select(("B",))[0]
    line = '{"instance_id": "%s", "sample": %s, "response": "x"}' % (first.id, "9" * 5000)
    (tmp_path / "s.jsonl").write_text(line + "\n")
    with pytest.raises(SubmissionError) as e:
        validate_submission(tmp_path / "s.jsonl", ds, SubmissionMeta(model="m", revision="r", samples=1))
    assert "value has 5000 digits" in str(e.value)
    assert "5000 di)" not in str(e.value) and "5000 di\n" not in str(e.value)


def test_provider_message_clipped_at_word_boundary():
    from phr.llm.providers.base import safe_message

    msg = safe_message("HTTP 400: " + "word " * 300, None, limit=100)
    assert msg.startswith("HTTP 400: word") and msg.endswith("… (1510 characters in all)")
    assert "wor…" not in msg


def test_eval_phrbench_judge_gets_the_call_options(server, mini_folder, tmp_path):
    from phr.config.ops import Scoring
    from phr.eval.scorers import ScoringRun, build_scorers

    asked = Scoring(scorer="none", judge="openai:judge-model")
    made = build_scorers(ScoringRun(asked, llm_options={"timeout": 7.0, "max_retry_after": 9.0}), progress=False)
    judge = made[-1].judge
    assert (judge.spec, judge.timeout, judge.max_retry_after) == ("openai:judge-model", 7.0, 9.0)
    assert build_scorers(asked, progress=False)[-1].judge == "openai:judge-model"
    options = ("--scorer", "none", "--judge", "openai:judge-model", "--no-plots", "--timeout", "7")
    r = eval_one(mini_folder, tmp_path / "run", "B+H", *options)
    assert r.exit_code == 0, r.output
    result = json.loads((tmp_path / "run" / "scores" / "results.json").read_text())
    assert result["config"]["resolution_judge"]["spec"] == "openai:judge-model"
