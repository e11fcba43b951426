"""The LLM client end to end: real SDKs against the local protocol server, real SQLite cache."""

import json
import logging
import sqlite3
import threading
import time

import pytest
from pydantic import BaseModel

from phr.core.errors import MissingAPIKeyError
from phr.llm import ChatRequest, GenerationParams, as_messages, generate_structured
from tests.support.llm import API_KEY as KEY
from tests.support.llm import fast_llm as make


@pytest.fixture
def server(api_server):
    return api_server


def req(text, n=1, **params):
    return ChatRequest(as_messages(text), GenerationParams(**params), n=n)


@pytest.mark.parametrize(
    "spec, calls_for_n3", [("openai:gpt-4o", 1), ("anthropic:claude-x", 3), ("google:gemini-x", 1)]
)
def test_n_samples_then_warm_cache_makes_no_calls(server, spec, calls_for_n3):
    llm = make(spec)
    res = llm.generate([req("hello", n=3, temperature=0.7), req("bye", n=2, temperature=0.7)])
    assert [len(r.texts) for r in res] == [3, 2]
    assert len(set(res[0].texts)) == 3 and all("hello" in t for t in res[0].texts)
    first = llm.last_summary.model(spec)
    assert first.calls == server.count == calls_for_n3 + (2 if calls_for_n3 == 3 else 1)
    assert first.samples == 5 and first.cache_hits == 0
    assert first.completion_tokens == sum(s.completion_tokens for r in res for s in r.samples) > 0
    again = make(spec).generate([req("hello", n=3, temperature=0.7), req("bye", n=2, temperature=0.7)])
    assert server.count == first.calls  # nothing sent
    assert [r.texts for r in again] == [r.texts for r in res]
    assert all(s.cached for r in again for s in r.samples)


def test_different_model_param_or_sample_index_is_a_different_key(server):
    make().generate([req("q", n=2, temperature=0.5)])
    assert server.count == 1
    make().generate([req("q", n=3, temperature=0.5)])  # samples 0,1 cached; only index 2 asked
    assert server.count == 2 and server.requests[-1]["json"].get("n", 1) == 1
    make().generate([req("q", n=2, temperature=0.6)])
    assert server.count == 3
    make("openai:gpt-4o-mini").generate([req("q", n=2, temperature=0.5)])
    assert server.count == 4
    make().generate([ChatRequest(as_messages("q"), GenerationParams(temperature=0.5), n=1, first_index=7)])
    assert server.count == 5


def test_429_with_retry_after_is_honoured(server):
    server.script(None, [("status", 429, {"Retry-After": "1"})])
    llm = make()
    t0 = time.monotonic()
    res = llm.generate([req("slow down")])
    assert res[0].ok and time.monotonic() - t0 >= 1.0
    st = llm.last_summary.model("openai:gpt-4o")
    assert st.retries == 1 and st.calls == 2 and not st.failures


@pytest.mark.parametrize("fault", [("status", 500), ("status", 503), ("malformed",), ("drop",), ("hang", 3)])
def test_transient_faults_are_retried(server, fault):
    server.script(None, [fault, fault])
    llm = make(timeout=1)  # cuts the hang short; a slow answer under load may time out too, and is retried
    res = llm.generate([req("retry me")])
    assert res[0].ok, res[0].failures
    assert [r["fault"] for r in server.requests][:2] == [fault, fault]  # both faults met, then an answer
    assert llm.last_summary.model("openai:gpt-4o").retries == server.count - 1 >= 2


def test_final_failure_is_recorded_not_dropped(tmp_path, server):
    server.script(None, [("status", 500)] * 3)
    llm = make(max_attempts=3)
    res = llm.generate([req("doomed", n=2)])
    assert not res[0].ok
    f = res[0].failures
    assert [x.index for x in f] == [0, 1] and {x.reason for x in f} == {"server_error"}
    assert "after 3 attempt(s)" in f[0].message
    assert dict(llm.last_summary.failures) == {"server_error": 2}
    rows = sqlite3.connect(tmp_path / "calls.sqlite").execute("SELECT reason, attempts FROM failures").fetchall()
    assert rows == [("server_error", 3), ("server_error", 3)]
    # a rerun asks again for the failed samples only
    before = server.count
    assert make().generate([req("doomed", n=2)])[0].ok
    assert server.count == before + 1


def test_bad_request_is_not_retried(server):
    server.script(None, [("status", 400)])
    llm = make()
    res = llm.generate([req("bad")])
    assert res[0].failures[0].reason == "bad_request" and server.count == 1


def test_unreachable_endpoint_names_it(server, monkeypatch):
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    res = make(max_attempts=2).generate([req("anyone?")])
    f = res[0].failures[0]
    assert f.reason == "connection" and "127.0.0.1:9" in f.message and "after 2 attempt(s)" in f.message


def test_missing_key_fails_before_any_work(server, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY")
    with pytest.raises(MissingAPIKeyError, match="OPENAI_API_KEY"):
        make()
    assert server.count == 0


def test_concurrency_is_bounded_and_used(server):
    """No clock: the server answers only when 8 calls wait at once (a barrier), and counts the most in flight."""
    lock, inflight, most = threading.Lock(), [0], [0]
    barrier = threading.Barrier(8, timeout=120)  # the timeout only ends a failing run

    def responder(model, messages, k):
        with lock:
            inflight[0] += 1
            most[0] = max(most[0], inflight[0])
        try:
            barrier.wait()
        finally:
            with lock:
                inflight[0] -= 1
        return "ok"

    server.responder = responder
    llm = make(concurrency=8, timeout=300)
    res = llm.generate([req(f"q{i}") for i in range(16)])
    assert all(r.ok for r in res) and server.count == 16
    assert most[0] == 8  # two waves of 8 at once: used, and never more


def test_requests_per_minute_limit(server):
    llm = make(requests_per_minute=60 * 5)  # 5 per second, burst capacity spread over the minute
    llm.generate([req(f"r{i}") for i in range(4)])
    assert server.count == 4


def test_no_key_in_cache_logs_or_summary(tmp_path, server, caplog, capsys):
    from phr.core.log import setup_logging

    setup_logging("DEBUG")
    server.script(None, [("status", 401, {}, {"error": {"message": f"Incorrect API key provided: {KEY}"}})])
    with caplog.at_level(logging.DEBUG):
        llm = make(show_summary=True, max_attempts=2)
        llm.generate([req("leak?"), req("fine", n=2)])
        llm.last_summary.print()
    blob = (tmp_path / "calls.sqlite").read_bytes()
    for p in tmp_path.glob("calls.sqlite*"):
        blob += p.read_bytes()
    captured = capsys.readouterr()
    texts = [caplog.text, captured.out, captured.err, json.dumps(llm.last_summary.as_dict()), blob.decode("latin-1")]
    assert all(KEY not in t for t in texts)
    assert any(h["headers"].get("authorization") == f"Bearer {KEY}" for h in server.requests)
    logging.getLogger().handlers[:] = []


class Premise(BaseModel):
    statement: str
    truth_verification: str


def _openai_body(content):
    return {
        "id": "x",
        "object": "chat.completion",
        "created": 0,
        "model": "gpt-4o",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 3, "completion_tokens": 4, "total_tokens": 7},
    }


def test_structured_output_reasks_with_the_error(server):
    good = '{"statement": "Water boils at 100 C at sea level.", "truth_verification": "standard fact"}'
    server.script(
        None,
        [
            ("status", 200, {}, _openai_body('Sure! ```json\n{"statement": "only this"}\n```')),
            ("status", 200, {}, _openai_body(f"Here you go:\n{good}")),
        ],
    )
    llm = make()
    [[res]] = generate_structured(llm, [req("make a premise")], Premise, max_reasks=2)
    assert res.ok and res.value.statement.startswith("Water boils")
    assert len(res.raw_texts) == 2 and "truth_verification: Field required" in res.errors[0]
    reask = server.requests[1]["json"]["messages"]
    assert reask[-2]["role"] == "assistant" and "truth_verification: Field required" in reask[-1]["content"]


def test_structured_output_final_failure_keeps_raw_texts(tmp_path, server):
    server.script(None, [("status", 200, {}, _openai_body("no json here"))] * 3)
    llm = make()
    [[res]] = generate_structured(llm, [req("make a premise")], Premise, max_reasks=2)
    assert not res.ok and res.raw_texts == ["no json here"] * 3 and len(res.errors) == 3
    assert llm.last_summary.failures["invalid_output"] == 1
    row = (
        sqlite3.connect(tmp_path / "calls.sqlite")
        .execute("SELECT message FROM failures WHERE reason = 'invalid_output'")
        .fetchone()
    )
    assert json.loads(row[0])["raw_texts"] == ["no json here"] * 3
