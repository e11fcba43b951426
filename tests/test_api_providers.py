"""The API providers, with their real SDKs, against the local ProtocolServer."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from phr.core.errors import MissingAPIKeyError, UnknownProviderError
from phr.llm.errors import (
    AuthFailed,
    BadRequest,
    CallError,
    CallTimeout,
    ConnectionFailed,
    MalformedResponse,
    RateLimited,
    ServerError,
)
from phr.llm.providers.anthropic_api import AnthropicProvider
from phr.llm.providers.google_api import GoogleProvider
from phr.llm.providers.openai_api import OpenAIProvider, UnsupportedParam
from phr.llm.spec import known_forms, make_provider
from phr.llm.types import GenerationParams, Message
from tests.support.protocol_server import ProtocolServer

KEY = "sk-test-SECRET-abc123"
MSGS = (Message("system", "be brief"), Message("user", "hello there"))
KINDS = ["openai", "compatible", "anthropic", "google"]
MODEL = {"openai": "gpt-test", "compatible": "my-model", "anthropic": "claude-test", "google": "gemini-test"}
ENV = [
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "OPENAI_COMPATIBLE_API_KEY",
    "OPENAI_CUSTOM_HEADERS",
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_AUTH_TOKEN",
    "ANTHROPIC_BASE_URL",
    "ANTHROPIC_CUSTOM_HEADERS",
    "GEMINI_API_KEY",
    "GOOGLE_API_KEY",
    "GOOGLE_GEMINI_BASE_URL",
    "GOOGLE_GENAI_USE_VERTEXAI",
    "GOOGLE_GENAI_API_VERSION",
]


@pytest.fixture(autouse=True)
def keys(monkeypatch):
    for k in ENV:
        monkeypatch.delenv(k, raising=False)
    for k in ("OPENAI_API_KEY", "OPENAI_COMPATIBLE_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY"):
        monkeypatch.setenv(k, KEY)


@pytest.fixture
def srv():
    with ProtocolServer() as s:
        yield s


def make(kind: str, url: str, **kw):
    if kind == "openai":
        return OpenAIProvider(MODEL[kind], base_url=f"{url}/v1", **kw)
    if kind == "compatible":
        return OpenAIProvider(MODEL[kind], base_url=f"{url}/v1", compatible=True, **kw)
    if kind == "anthropic":
        return AnthropicProvider(MODEL[kind], base_url=url, **kw)
    return GoogleProvider(MODEL[kind], base_url=url, **kw)


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


async def fail(kind: str, url: str, *, timeout: float = 60.0, params: GenerationParams | None = None) -> CallError:
    """Run one call that must fail; check the error is a CallError that does not leak the key."""
    p = make(kind, url)
    try:
        with pytest.raises(CallError) as ei:
            await p.complete(MSGS, params or GenerationParams(), 1, timeout)
    finally:
        await p.aclose()
    err = ei.value
    assert KEY not in str(err) and KEY not in repr(err) and KEY not in str(err.args)
    return err


@pytest.mark.parametrize("kind", KINDS)
async def test_n_samples_texts_and_usage(srv, kind):
    p = make(kind, srv.url)
    out = await p.complete(MSGS, GenerationParams(seed=7, temperature=0.5), 3, 60.0)
    await p.aclose()
    seed = "" if kind == "anthropic" else " seed=7"  # Anthropic has no seed: it is not sent
    assert [c.text for c in out] == [f"echo[{MODEL[kind]}] hello there #{i}{seed}" for i in range(3)]
    assert len({c.text for c in out}) == 3
    replies = [r["reply"] for r in srv.requests]
    assert len(replies) == (3 if kind == "anthropic" else 1)
    if kind == "anthropic":
        assert sum(c.prompt_tokens for c in out) == sum(r["usage"]["input_tokens"] for r in replies)
        assert sum(c.completion_tokens for c in out) == sum(r["usage"]["output_tokens"] for r in replies)
        assert [c.finish_reason for c in out] == ["end_turn"] * 3
    elif kind == "google":
        u = replies[0]["usageMetadata"]
        assert [c.prompt_tokens for c in out] == [u["promptTokenCount"], 0, 0]
        assert sum(c.completion_tokens for c in out) == u["candidatesTokenCount"]
        assert [c.finish_reason for c in out] == ["STOP"] * 3
    else:
        u = replies[0]["usage"]
        assert [c.prompt_tokens for c in out] == [u["prompt_tokens"], 0, 0]
        assert sum(c.completion_tokens for c in out) == u["completion_tokens"]
        assert [c.finish_reason for c in out] == ["stop"] * 3
    for r in srv.requests:  # auth is sent, with the key
        assert any(KEY in v for v in r["headers"].values())


@pytest.mark.parametrize("kind", KINDS)
async def test_request_mapping(srv, kind):
    params = GenerationParams(
        temperature=0.2, top_p=0.9, top_k=None if kind == "openai" else 5, max_tokens=3, seed=11, stop=("zzz",)
    )
    p = make(kind, srv.url)
    (out,) = await p.complete(MSGS, params, 1, 60.0)
    await p.aclose()
    body = srv.requests[0]["json"]
    assert len(out.text.split()) == 3 and out.completion_tokens == 3  # max_tokens truncates on the server
    if kind in ("openai", "compatible"):
        assert body["messages"][0] == {"role": "system", "content": "be brief"}
        assert body["temperature"] == 0.2 and body["top_p"] == 0.9 and body["seed"] == 11 and body["stop"] == ["zzz"]
        assert "n" not in body
        if kind == "openai":
            assert body["max_completion_tokens"] == 3 and "top_k" not in body
        else:
            assert body["max_tokens"] == 3 and body["top_k"] == 5
        assert out.finish_reason == "length"
    elif kind == "anthropic":
        assert body["system"] == "be brief" and body["messages"] == [{"role": "user", "content": "hello there"}]
        assert (body["temperature"], body["top_p"], body["top_k"], body["max_tokens"]) == (0.2, 0.9, 5, 3)
        assert body["stop_sequences"] == ["zzz"] and "seed" not in body
        assert out.finish_reason == "max_tokens"
    else:
        cfg = body["generationConfig"]
        assert body["systemInstruction"]["parts"][0]["text"] == "be brief"
        assert (cfg["temperature"], cfg["topP"], cfg["topK"], cfg["maxOutputTokens"], cfg["seed"]) == (
            0.2,
            0.9,
            5,
            3,
            11,
        )
        assert cfg["stopSequences"] == ["zzz"] and "candidateCount" not in cfg
        assert out.finish_reason == "MAX_TOKENS"


async def test_anthropic_default_max_tokens(srv):
    p = make("anthropic", srv.url)
    await p.complete(MSGS, GenerationParams(max_tokens=None), 1, 60.0)
    await p.aclose()
    assert srv.requests[0]["json"]["max_tokens"] == 1024


async def test_openai_top_k_refused(srv):
    p = make("openai", srv.url)
    with pytest.raises(UnsupportedParam, match="top_k") as ei:
        await p.complete(MSGS, GenerationParams(top_k=5), 1, 60.0)
    await p.aclose()
    assert isinstance(ei.value, BadRequest) and isinstance(ei.value, ValueError) and not ei.value.retryable
    assert srv.count == 0


@pytest.mark.parametrize("kind", KINDS)
async def test_rate_limited_with_retry_after(srv, kind):
    srv.script(None, [("status", 429, {"Retry-After": "1"})])
    err = await fail(kind, srv.url)
    assert isinstance(err, RateLimited) and err.retryable and err.retry_after == 1.0 and err.status == 429


@pytest.mark.parametrize("kind", KINDS)
async def test_server_error(srv, kind):
    srv.script(None, [("status", 500)])
    err = await fail(kind, srv.url)
    assert isinstance(err, ServerError) and err.retryable and err.status == 500


@pytest.mark.parametrize("kind", KINDS)
async def test_timeout(srv, kind):
    srv.script(None, [("hang", 120)])
    t0 = time.monotonic()
    err = await fail(kind, srv.url, timeout=0.3)
    assert isinstance(err, CallTimeout) and err.retryable
    assert time.monotonic() - t0 < 60  # not the 120 s hang


@pytest.mark.parametrize("body", [None, {"unexpected": True}, "[1, 2]"], ids=["not-json", "wrong-shape", "list"])
@pytest.mark.parametrize("kind", KINDS)
async def test_malformed(srv, kind, body):
    srv.script(None, [("malformed",) if body is None else ("malformed", body)])
    err = await fail(kind, srv.url)
    assert isinstance(err, MalformedResponse) and err.retryable


@pytest.mark.parametrize("kind", KINDS)
async def test_dropped_connection(srv, kind):
    srv.script(None, [("drop",)])
    err = await fail(kind, srv.url)
    assert isinstance(err, ConnectionFailed) and err.retryable


@pytest.mark.parametrize("kind", KINDS)
async def test_connection_refused(kind):
    err = await fail(kind, f"http://127.0.0.1:{closed_port()}")
    assert isinstance(err, ConnectionFailed) and err.retryable


@pytest.mark.parametrize("kind", KINDS)
async def test_auth_error_never_shows_key(srv, kind):
    """Even when the endpoint echoes the key back in its error body, the raised message has it redacted."""
    srv.script(
        None, [("status", 401, {}, {"error": {"message": f"invalid key {KEY}", "type": "auth"}, "type": "error"})]
    )
    err = await fail(kind, srv.url)
    assert isinstance(err, AuthFailed) and not err.retryable


async def test_key_passed_as_argument_is_redacted_too(srv, monkeypatch):
    other = "sk-only-in-argument-987654"
    monkeypatch.delenv("OPENAI_API_KEY")
    srv.script(None, [("status", 400, {}, {"error": {"message": f"bad {other}"}})])
    p = OpenAIProvider("gpt-test", base_url=f"{srv.url}/v1", api_key=other)
    with pytest.raises(BadRequest) as ei:
        await p.complete(MSGS, GenerationParams(), 1, 60.0)
    await p.aclose()
    assert other not in str(ei.value) and "***" in str(ei.value)
    assert srv.requests[0]["headers"]["authorization"] == f"Bearer {other}"


@pytest.mark.parametrize(
    ("kind", "names"),
    [
        ("openai", ["OPENAI_API_KEY"]),
        ("anthropic", ["ANTHROPIC_API_KEY"]),
        ("google", ["GEMINI_API_KEY", "GOOGLE_API_KEY"]),
    ],
)
def test_missing_key_raised_at_construction(monkeypatch, kind, names):
    for n in names:
        monkeypatch.delenv(n, raising=False)
    with pytest.raises(MissingAPIKeyError) as ei:
        make(kind, "http://127.0.0.1:9")
    for n in names:
        assert n in str(ei.value)


async def test_google_accepts_google_api_key(srv, monkeypatch):
    monkeypatch.delenv("GEMINI_API_KEY")
    monkeypatch.setenv("GOOGLE_API_KEY", "AIza-test-other-key-42")
    p = make("google", srv.url)
    await p.complete(MSGS, GenerationParams(), 1, 60.0)
    await p.aclose()
    assert srv.requests[0]["headers"]["x-goog-api-key"] == "AIza-test-other-key-42"


async def test_compatible_key_is_optional(srv, monkeypatch):
    monkeypatch.delenv("OPENAI_COMPATIBLE_API_KEY")
    monkeypatch.delenv("OPENAI_API_KEY")
    p = make_provider(f"openai-compatible:{srv.url}/v1#my-model")
    (out,) = await p.complete(MSGS, GenerationParams(), 1, 60.0)
    await p.aclose()
    assert out.text == "echo[my-model] hello there #0"
    assert srv.requests[0]["headers"]["authorization"] == "Bearer EMPTY"


async def test_base_url_from_env(srv, monkeypatch):
    monkeypatch.setenv("OPENAI_BASE_URL", f"{srv.url}/v1")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", srv.url)
    monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", srv.url)
    for spec in ("openai:gpt-test", "anthropic:claude-test", "google:gemini-test"):
        p = make_provider(spec)
        await p.complete(MSGS, GenerationParams(), 1, 60.0)
        await p.aclose()
    assert srv.count == 3


def test_unknown_spec_lists_known_forms():
    for bad in ("nope:model", "gpt-4", "openai-compatible:http://host/v1"):
        with pytest.raises(UnknownProviderError) as ei:
            make_provider(bad)
        for form in known_forms().values():
            assert form in str(ei.value)


def test_compatible_spec_parsing_and_cache_id():
    p = make_provider("openai-compatible:http://user:pw@host.example:8000/v1/?token=abc#org/model-7b")
    assert isinstance(p, OpenAIProvider) and p.kind == "openai-compatible" and p.native_n and p.max_n == 128
    assert p.model == "org/model-7b"
    assert p.base_url == "http://user:pw@host.example:8000/v1/?token=abc"
    assert p.cache_model_id == "http://host.example:8000/v1#org/model-7b"
    assert p.spec == "openai-compatible:http://host.example:8000/v1#org/model-7b"
    assert "pw" not in p.cache_model_id and "abc" not in p.spec
    q = make_provider("openai:gpt-test")
    assert (q.kind, q.cache_model_id, q.spec) == ("openai", "gpt-test", "openai:gpt-test")
    assert not AnthropicProvider("c").native_n and GoogleProvider("g").max_n == 8


def test_server_latency_count_and_cli(srv):
    srv.latency = 0.2
    t0 = time.monotonic()
    req = urllib.request.Request(
        f"{srv.url}/v1/chat/completions",
        method="POST",
        data=b'{"model": "m", "messages": [{"role": "user", "content": "hi"}], "n": 2}',
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(req, timeout=5) as r:
        assert r.status == 200
    assert time.monotonic() - t0 >= 0.2 and srv.count == 1
    assert [c["message"]["content"] for c in srv.requests[0]["reply"]["choices"]] == ["echo[m] hi #0", "echo[m] hi #1"]
    port = closed_port()
    root = Path(__file__).resolve().parents[1]
    with subprocess.Popen(
        [sys.executable, "-m", "tests.support.protocol_server", "--port", str(port)],
        stdout=subprocess.PIPE,
        text=True,
        cwd=root,
    ) as proc:
        try:
            assert "serving on" in proc.stdout.readline()
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=5) as r:
                assert r.read() == b"ok"
        finally:
            proc.terminate()
