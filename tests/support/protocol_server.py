"""A local HTTP server that speaks the OpenAI, Anthropic and Gemini chat protocols well enough for the real SDKs.

Endpoints (bound to 127.0.0.1 only, HTTP/1.1 keep-alive):

    POST /v1/chat/completions                    OpenAI (``n`` choices, ``usage``)
    GET  /v1/models                              OpenAI model list (the last model seen, or "echo")
    POST /v1/messages                            Anthropic (text content block, ``usage``, ``stop_reason``)
    POST /v1beta/models/{model}:generateContent  Gemini (``candidateCount`` candidates, ``usageMetadata``);
                                                 /v1/ too (google-genai 3.x defaults to API version v1)
    GET  /health                                 200 "ok"

Batch APIs (``srv.batches``: every batch created, by id, in order; docs/scaling.md "Batch mode"):

    POST /v1/files  GET /v1/files/{id}/content   OpenAI files (multipart upload; a batch's output/error JSONL)
    POST /v1/batches  GET /v1/batches/{id}       OpenAI Batch API over /v1/chat/completions lines (``metadata`` kept)
    GET  /v1/batches                             OpenAI list of batches, newest first (Gemini's with its key header)
    POST /v1/messages/batches                    Anthropic Message Batches; GET .../{id} and .../{id}/results
    GET  /v1/messages/batches                    Anthropic list of batches, newest first
    POST /v1beta/models/{model}:batchGenerateContent   Gemini Batch API, inlined requests (``displayName`` kept);
                                                 GET /v1beta/batches/{id}; GET /v1beta/batches (the list)

A batch is answered on its first poll (each line as the endpoint above answers it) unless ``srv.batch_hold`` is
set (it stays in progress, polled again and again); ``srv.batch_end = "expired"`` (or "cancelled") ends the next
polled batches that way with no answers; ``srv.batch_fail(body)``, when set, picks the lines (by their request
body) that fail inside the batch with a 400 error; ``srv.batch_edit(protocol, answers)``, when set, returns the
result lines a batch gives instead of ``answers`` (dicts in the protocol's result form, in order; a ``str`` is
written as it is: a line that is not JSON). A batch records its creation time (``created_at``, ``time.time()``).
Nothing depends on time.

Replies are deterministic: choice ``i`` of a request is ``f"echo[{model}] {last user message} #{k}"`` with
``" seed={seed}"`` appended when the request has a seed, where ``k = i + (choices already generated for the same
protocol, model, messages and seed)``. On a fresh server, n choices of one request are ``#0 .. #n-1``, and n
separate calls with the same prompt (Anthropic has no ``n``) also get ``#0 .. #n-1``.

Tokens are whitespace-separated words: prompt tokens = words in all messages (system included), completion
tokens = words in the reply. ``max_tokens`` truncates the reply (finish reason length / max_tokens / MAX_TOKENS);
a stop sequence cuts it (finish reason stop / stop_sequence / STOP).

Faults (``server.script(prefix, [fault, ...], match=None)``), consumed one per request whose path starts with
``prefix`` (``None``: any path) and, with ``match``, whose parsed JSON body ``match(body)`` accepts, in order:

    ("status", code)                    error response in the protocol's error format
    ("status", code, headers)           ... with extra headers, e.g. {"Retry-After": "1"}
    ("status", code, headers, body)     ... with this body (a dict is sent as JSON, a str as is)
    ("hang", seconds)                   wait, then answer normally (released early when the server stops)
    ("malformed",)                      200, Content-Type application/json, a body that is not JSON
    ("malformed", body)                 200 with this body (str, or dict sent as JSON: e.g. the wrong shape)
    ("drop",)                           read the request, then close the connection without answering
    ("lost",)                           do what the request asks (e.g. create a batch), then close the connection
                                        instead of sending the reply: a reply lost on its way
    ("hold", event)                     wait until ``event`` (a threading.Event) is set or the server stops, then
                                        answer normally (whether the client is still there or not)
"""

from __future__ import annotations

import argparse
import inspect
import json
import re
import socket
import threading
import time
import uuid
from collections import Counter, defaultdict, deque
from datetime import datetime, timezone
from http.server import BaseHTTPRequestHandler
from typing import Any

from tests.support.local_server import LocalServer

Fault = tuple


class ProtocolServer(LocalServer):
    """Fake OpenAI / Anthropic / Gemini endpoint. ``with ProtocolServer() as srv: srv.url``."""

    thread_name = "protocol-server"
    poll_interval = 0.05

    def __init__(self, port: int = 0, latency: float = 0.0, responder: Any = None):
        self.latency = latency
        #: Optional ``responder(model, messages, k) -> str``: the reply text for choice ``k`` of a request
        #: (messages as (role, text) pairs). Lets a test stand in a deterministic "model" behind the real
        #: protocol, e.g. one that answers with JSON. None: the echo reply. A responder with a ``seed``
        #: parameter also gets the request's seed (None when it has none).
        self.responder = responder
        self._responder_seed = responder is not None and "seed" in inspect.signature(responder).parameters
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._scripts: list[tuple[str | None, Any, deque[Fault]]] = []
        self._requests: list[dict[str, Any]] = []
        self._generated: dict[str, int] = defaultdict(int)
        self._last_model = "echo"
        #: the batch APIs' state: created batches by id (dicts: protocol, lines, status, answers), uploaded files
        self.batches: dict[str, dict[str, Any]] = {}
        self.files: dict[str, bytes] = {}
        self.batch_hold = False
        self.batch_end: str | None = None
        self.batch_fail: Any = None
        self.batch_edit: Any = None
        super().__init__(_make_handler(self), port)

    def stop(self) -> None:
        self._stop.set()  # releases the hanging requests first
        super().stop()

    # -- programming and inspection --------------------------------------------------------------
    def script(self, prefix: str | None, faults: list[Fault], match: Any = None) -> None:
        """Queue ``faults``, consumed one per request whose path starts with ``prefix`` (None: any) and whose
        JSON body ``match(body)`` accepts (None: any body), e.g. every attempt of one particular call."""
        for f in faults:
            if not f or f[0] not in ("status", "hang", "malformed", "drop", "lost", "hold"):
                raise ValueError(f"unknown fault {f!r}")
        with self._lock:
            self._scripts.append((prefix, match, deque(faults)))

    def reset(self) -> None:
        """Forget faults, the request log and the sample counters."""
        with self._lock:
            self._scripts.clear()
            self._requests.clear()
            self._generated.clear()

    def posts(self, path_part: str) -> int:
        """How many POST requests had ``path_part`` in their path (e.g. ``/batches``, ``chat/completions``)."""
        return sum(1 for r in self.requests if r["method"] == "POST" and path_part in r["path"])

    @property
    def requests(self) -> list[dict[str, Any]]:
        """A snapshot of the request log, oldest first: dicts with method, path, headers (lower-case keys), json
        (the parsed body or None), fault (the scripted fault applied, or None), time, and status and reply (what
        was sent back: a dict for JSON; both None while pending, after a drop, or while a hang holds the reply)."""
        with self._lock:
            return [dict(e) for e in self._requests]

    @property
    def count(self) -> int:
        with self._lock:
            return len(self._requests)

    def _next_fault(self, path: str, body: Any) -> Fault | None:
        for prefix, match, queue in self._scripts:
            if queue and (prefix is None or path.startswith(prefix)) and (match is None or match(body)):
                return queue.popleft()
        return None

    def _log(self, method: str, path: str, headers: dict[str, str], body: Any) -> tuple[Fault | None, dict]:
        with self._lock:
            fault = self._next_fault(path, body)
            entry = {
                "method": method,
                "path": path,
                "headers": headers,
                "json": body,
                "fault": fault,
                "time": time.time(),
                "status": None,
                "reply": None,
            }
            self._requests.append(entry)
            return fault, entry

    def _indices(self, key: str, n: int) -> list[int]:
        with self._lock:
            start = self._generated[key]
            self._generated[key] += n
            return list(range(start, start + n))


# -- protocol helpers ----------------------------------------------------------------------------


def _words(text: str) -> int:
    return len(text.split())


def _reply(model: str, last_user: str, k: int, seed: Any, max_tokens: int | None, stop: list[str]) -> tuple[str, str]:
    """The reply text and a neutral finish reason: 'stop', 'length' or 'stop_sequence'."""
    text = f"echo[{model}] {last_user} #{k}" + (f" seed={seed}" if seed is not None else "")
    for s in stop:
        if s and s in text:
            return text[: text.index(s)], "stop_sequence"
    words = text.split()
    if max_tokens is not None and len(words) > max_tokens:
        return " ".join(words[:max_tokens]), "length"
    return text, "stop"


def _text_of(content: Any) -> str:
    """Message content as text: a string, or a list of blocks/parts with ``text``."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(b.get("text", "")) for b in content if isinstance(b, dict))
    return ""


def _error_body(protocol: str, code: int, message: str) -> dict:
    if protocol == "anthropic":
        kind = {429: "rate_limit_error", 401: "authentication_error", 400: "invalid_request_error"}.get(
            code, "api_error"
        )
        return {"type": "error", "error": {"type": kind, "message": message}}
    if protocol == "gemini":
        return {"error": {"code": code, "message": message, "status": "RESOURCE_EXHAUSTED" if code == 429 else "ERROR"}}
    return {
        "error": {
            "message": message,
            "type": "server_error" if code >= 500 else "invalid_request_error",
            "param": None,
            "code": str(code),
        }
    }


_GEMINI = re.compile(r"^/v1(?:beta|alpha)?/models/([^/:]+):generateContent$")


def _protocol(path: str) -> str | None:
    if path.startswith("/v1/chat/completions"):
        return "openai"
    if path.startswith("/v1/messages"):
        return "anthropic"
    if _GEMINI.match(path):
        return "gemini"
    return None


class _Handler(BaseHTTPRequestHandler):
    """The test server's request handler; ``ps``: the ``ProtocolServer`` it answers for (set by ``_make_handler``)."""

    ps: ProtocolServer
    protocol_version = "HTTP/1.1"
    server_version = "PHRProtocolServer/1.0"

    _entry: dict[str, Any] | None = None
    _lose = False  # a "lost" fault: the reply is not sent, the connection is closed instead

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - silence stderr
        pass

    def _start(self, method: str, body: Any) -> Fault | None:
        fault, self._entry = self.ps._log(method, self.path, {k.lower(): v for k, v in self.headers.items()}, body)
        return fault

    def _send(
        self, code: int, body: Any, headers: dict[str, str] | None = None, content_type: str = "application/json"
    ) -> None:
        data = (
            body if isinstance(body, bytes) else (body.encode() if isinstance(body, str) else json.dumps(body).encode())
        )
        if self._entry is not None:
            with self.ps._lock:
                self._entry["status"], self._entry["reply"] = code, body
        if self._lose:
            return self._drop()
        self.send_response(code)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        for k, v in (headers or {}).items():
            self.send_header(k, str(v))
        self.end_headers()
        self.wfile.write(data)

    def _drop(self) -> None:
        self.close_connection = True
        try:
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    def do_GET(self) -> None:  # noqa: N802
        fault = self._start("GET", None)
        if fault and fault[0] == "drop":
            return self._drop()
        if self.path.startswith("/health"):
            return self._send(200, "ok", content_type="text/plain")
        if _batch_get(self.ps, self, self.path.split("?", 1)[0]):
            return None
        if self.path.startswith("/v1/models"):
            return self._send(
                200,
                {
                    "object": "list",
                    "data": [{"id": self.ps._last_model, "object": "model", "created": 0, "owned_by": "phr"}],
                },
            )
        self._send(404, {"error": {"message": f"no route {self.path}"}})

    def _scripted(self, fault: Fault, protocol: str | None) -> bool:
        """Play a scripted fault: True when it answered the request (dropped it, or sent a malformed body or an
        error status); a hang, a hold or a lost reply lets the request go on."""
        kind = fault[0]
        if kind == "drop":
            self._drop()
            return True
        if kind == "hang":
            self.ps._stop.wait(float(fault[1]))
        elif kind == "hold":
            while not fault[1].wait(0.05) and not self.ps._stop.is_set():
                pass
        elif kind == "lost":
            self._lose = True
        elif kind == "malformed":
            payload = fault[1] if len(fault) > 1 else '{"choices": [ this is not json'
            self._send(200, payload)
            return True
        elif kind == "status":
            code = int(fault[1])
            headers = fault[2] if len(fault) > 2 else {}
            payload = (
                fault[3] if len(fault) > 3 else _error_body(protocol or "openai", code, f"scripted fault: HTTP {code}")
            )
            self._send(code, payload, headers)
            return True
        return False

    def do_POST(self) -> None:  # noqa: N802
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        path = self.path.split("?", 1)[0]
        fault = self._start("POST", body)
        if self.ps.latency:
            self.ps._stop.wait(self.ps.latency)
        protocol = _protocol(path)
        if fault is not None and self._scripted(fault, protocol):
            return None
        if _batch_post(self.ps, self, path, body, raw):
            return None
        if protocol is None:
            return self._send(404, {"error": {"message": f"no route {path}"}})
        if not isinstance(body, dict):
            return self._send(400, _error_body(protocol, 400, "request body is not a JSON object"))
        try:
            out = getattr(self, f"_{protocol}")(path, body)
        except (KeyError, TypeError, ValueError, IndexError) as e:
            return self._send(400, _error_body(protocol, 400, f"bad request: {e!r}"))
        self._send(200, out)

    # -- protocols ---------------------------------------------------------------------
    def _samples(
        self,
        protocol: str,
        model: str,
        messages: list[tuple[str, str]],
        n: int,
        seed: Any,
        max_tokens: int | None,
        stop: list[str],
    ) -> tuple[list[tuple[str, str]], int]:
        self.ps._last_model = model
        last_user = next((c for r, c in reversed(messages) if r == "user"), "")
        key = json.dumps([protocol, model, messages, seed])
        if self.ps.responder is not None:
            kw = {"seed": seed} if self.ps._responder_seed else {}
            outs = [(self.ps.responder(model, messages, k, **kw), "stop") for k in self.ps._indices(key, n)]
        else:
            outs = [_reply(model, last_user, k, seed, max_tokens, stop) for k in self.ps._indices(key, n)]
        return outs, sum(_words(c) for _, c in messages)

    def _openai(self, path: str, b: dict) -> dict:
        msgs = [(m["role"], _text_of(m.get("content"))) for m in b["messages"]]
        stop = b.get("stop") or []
        stop = [stop] if isinstance(stop, str) else list(stop)
        max_tokens = b.get("max_completion_tokens", b.get("max_tokens"))
        outs, prompt = self._samples("openai", b["model"], msgs, int(b.get("n") or 1), b.get("seed"), max_tokens, stop)
        fin = {"stop": "stop", "stop_sequence": "stop", "length": "length"}
        completion = sum(_words(t) for t, _ in outs)
        return {
            "id": f"chatcmpl-{uuid.uuid4().hex[:12]}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": b["model"],
            "system_fingerprint": "phr-echo",
            "choices": [
                {
                    "index": i,
                    "message": {"role": "assistant", "content": t},
                    "logprobs": None,
                    "finish_reason": fin[f],
                }
                for i, (t, f) in enumerate(outs)
            ],
            "usage": {
                "prompt_tokens": prompt,
                "completion_tokens": completion,
                "total_tokens": prompt + completion,
            },
        }

    def _anthropic(self, path: str, b: dict) -> dict:
        system = b.get("system")
        msgs = ([("system", _text_of(system))] if system else []) + [
            (m["role"], _text_of(m.get("content"))) for m in b["messages"]
        ]
        if "max_tokens" not in b:
            raise KeyError("max_tokens is required")
        ((text, f),) = self._samples(
            "anthropic", b["model"], msgs, 1, None, b["max_tokens"], list(b.get("stop_sequences") or [])
        )[0]
        prompt = sum(_words(c) for _, c in msgs)
        stop_seq = next((s for s in b.get("stop_sequences") or [] if f == "stop_sequence"), None)
        return {
            "id": f"msg_{uuid.uuid4().hex[:12]}",
            "type": "message",
            "role": "assistant",
            "model": b["model"],
            "content": [{"type": "text", "text": text}],
            "stop_reason": {"stop": "end_turn", "length": "max_tokens", "stop_sequence": "stop_sequence"}[f],
            "stop_sequence": stop_seq,
            "usage": {"input_tokens": prompt, "output_tokens": _words(text)},
        }

    def _gemini(self, path: str, b: dict) -> dict:
        model = _GEMINI.match(path).group(1)  # type: ignore[union-attr]
        cfg = b.get("generationConfig") or {}
        msgs = []
        if b.get("systemInstruction"):
            msgs.append(("system", _text_of(b["systemInstruction"].get("parts"))))
        for c in b["contents"]:
            msgs.append(("user" if c.get("role", "user") == "user" else "assistant", _text_of(c.get("parts"))))
        outs, prompt = self._samples(
            "gemini",
            model,
            msgs,
            int(cfg.get("candidateCount") or 1),
            cfg.get("seed"),
            cfg.get("maxOutputTokens"),
            list(cfg.get("stopSequences") or []),
        )
        fin = {"stop": "STOP", "stop_sequence": "STOP", "length": "MAX_TOKENS"}
        completion = sum(_words(t) for t, _ in outs)
        return {
            "candidates": [
                {"content": {"role": "model", "parts": [{"text": t}]}, "finishReason": fin[f], "index": i}
                for i, (t, f) in enumerate(outs)
            ],
            "usageMetadata": {
                "promptTokenCount": prompt,
                "candidatesTokenCount": completion,
                "totalTokenCount": prompt + completion,
            },
            "modelVersion": model,
            "responseId": uuid.uuid4().hex[:12],
        }


def _make_handler(server: ProtocolServer) -> type[BaseHTTPRequestHandler]:
    """A handler class bound to ``server``."""
    return type("Handler", (_Handler,), {"ps": server})


# -- batch APIs ----------------------------------------------------------------------------------------------------

_GEMINI_BATCH = re.compile(r"^/v1(?:beta|alpha)?/models/([^/:]+):batchGenerateContent$")
_GEMINI_GET = re.compile(r"^/v1(?:beta|alpha)?/batches/([^/:]+)$")


def _multipart_file(handler: BaseHTTPRequestHandler, raw: bytes) -> bytes:
    from email import policy
    from email.parser import BytesParser

    head = f"Content-Type: {handler.headers.get('Content-Type')}\r\n\r\n".encode()
    msg = BytesParser(policy=policy.HTTP).parsebytes(head + raw)
    for part in msg.iter_parts():  # type: ignore[attr-defined]
        if part.get_param("name", header="content-disposition") == "file":
            return part.get_payload(decode=True) or b""
    raise ValueError("no file part")


def _batch_post(server: ProtocolServer, h: Any, path: str, body: Any, raw: bytes) -> bool:
    """Answer a batch API POST (True), or leave the request to the chat endpoints (False)."""
    new_id = uuid.uuid4().hex[:12]
    if path == "/v1/files":
        fid = f"file-{new_id}"
        server.files[fid] = _multipart_file(h, raw)
        h._send(200, {"id": fid, "object": "file", "bytes": len(server.files[fid]), "created_at": 0,
                      "filename": "batch.jsonl", "purpose": "batch", "status": "processed"})  # fmt: skip
        return True
    now = time.time()
    if path == "/v1/batches":
        fid = body["input_file_id"]
        lines = [json.loads(x) for x in server.files[fid].decode().splitlines() if x.strip()]
        b = server.batches[f"batch_{new_id}"] = {"protocol": "openai", "lines": lines, "status": "in_progress",
                                                 "input_file_id": fid, "metadata": body.get("metadata"),
                                                 "created_at": now}  # fmt: skip
        h._send(200, _openai_batch(server, f"batch_{new_id}", b))
        return True
    if path == "/v1/messages/batches":
        b = server.batches[f"msgbatch_{new_id}"] = {
            "protocol": "anthropic",
            "lines": body["requests"],
            "status": "in_progress",
            "created_at": now,
        }
        h._send(200, _anthropic_batch(server, f"msgbatch_{new_id}", b))
        return True
    m = _GEMINI_BATCH.match(path)
    if m:
        lines = body["batch"]["inputConfig"]["requests"]["requests"]
        b = server.batches[new_id] = {
            "protocol": "gemini",
            "model": m.group(1),
            "lines": lines,
            "status": "in_progress",
            "display_name": body["batch"].get("displayName"),
            "created_at": now,
        }
        h._send(200, _gemini_batch(new_id, b))
        return True
    return False


def _newest_first(server: ProtocolServer, protocol: str) -> list[tuple[str, dict]]:
    return [(bid, b) for bid, b in reversed(list(server.batches.items())) if b["protocol"] == protocol]


def _batch_get(server: ProtocolServer, h: Any, path: str) -> bool:
    """Answer a batch API GET (True), or leave another path alone (False)."""
    parts = path.strip("/").split("/")
    if re.fullmatch(r"/v1(?:beta|alpha)?/batches", path) and h.headers.get("x-goog-api-key"):  # Gemini's list
        h._send(200, {"operations": [_gemini_batch(bid, b) for bid, b in _newest_first(server, "gemini")]})
        return True
    if path == "/v1/batches":
        data = [_openai_batch(server, bid, b) for bid, b in _newest_first(server, "openai")]
        h._send(200, {"object": "list", "data": data, "has_more": False,
                      "first_id": data[0]["id"] if data else None, "last_id": data[-1]["id"] if data else None})  # fmt: skip
        return True
    if path == "/v1/messages/batches":
        data = [_anthropic_batch(server, bid, b) for bid, b in _newest_first(server, "anthropic")]
        h._send(200, {"data": data, "has_more": False,
                      "first_id": data[0]["id"] if data else None, "last_id": data[-1]["id"] if data else None})  # fmt: skip
        return True
    if path.startswith("/v1/files/") and path.endswith("/content"):
        h._send(200, server.files[parts[2]], content_type="application/octet-stream")
        return True
    asked = _GEMINI_GET.match(path) or re.match(r"^/v1/(?:messages/)?batches/([^/]+)", path)
    if asked and asked.group(1) not in server.batches:  # a batch id this server never made: 404, as the APIs do
        protocol = "gemini" if h.headers.get("x-goog-api-key") else "anthropic" if "/messages/" in path else "openai"
        h._send(404, _error_body(protocol, 404, f"no batch {asked.group(1)}"))
        return True
    if path.startswith("/v1/batches/") and server.batches.get(parts[2], {}).get("protocol") == "openai":
        bid = parts[2]
        _advance(server, h, bid)
        h._send(200, _openai_batch(server, bid, server.batches[bid]))
        return True
    if path.startswith("/v1/messages/batches/"):
        bid = parts[3]
        if path.endswith("/results"):
            data = "".join(_jsonl(r) for r in server.batches[bid]["answers"])
            h._send(200, data, content_type="application/binary")
            return True
        _advance(server, h, bid)
        h._send(200, _anthropic_batch(server, bid, server.batches[bid]))
        return True
    m = _GEMINI_GET.match(path)
    if m:
        _advance(server, h, m.group(1))
        h._send(200, _gemini_batch(m.group(1), server.batches[m.group(1)]))
        return True
    return False


def _advance(server: ProtocolServer, h: Any, bid: str) -> None:
    """A poll: answer a batch still in progress (unless held), or end it as ``batch_end`` says."""
    b = server.batches[bid]
    if b["status"] != "in_progress" or server.batch_hold:
        return
    if server.batch_end:
        b["status"], b["answers"] = server.batch_end, [_no_answer(b, line, server.batch_end) for line in b["lines"]]
        return
    b["answers"] = [_answer(server, h, b, line) for line in b["lines"]]
    if server.batch_edit is not None:
        b["answers"] = list(server.batch_edit(b["protocol"], b["answers"]))
    b["status"] = "ended"


def _jsonl(row: Any) -> str:
    """One result line: a dict as JSON, a str as it is (a line that is not JSON: ``srv.batch_edit``)."""
    return (row if isinstance(row, str) else json.dumps(row)) + "\n"


def _failing(server: ProtocolServer, body: dict) -> bool:
    return server.batch_fail is not None and bool(server.batch_fail(body))


def _answer(server: ProtocolServer, h: Any, b: dict, line: dict) -> dict:
    """One line's answer, in its protocol's result form."""
    if b["protocol"] == "openai":
        if _failing(server, line["body"]):
            error = {"error": {"message": "scripted batch failure", "type": "invalid_request_error", "code": "bad"}}
            return {"custom_id": line["custom_id"], "response": {"status_code": 400, "body": error}, "error": None}
        resp = {"status_code": 200, "request_id": "req", "body": h._openai(line["url"], line["body"])}
        return {"id": "r", "custom_id": line["custom_id"], "response": resp, "error": None}
    if b["protocol"] == "anthropic":
        if _failing(server, line["params"]):
            error = {"type": "error", "error": {"type": "invalid_request_error", "message": "scripted batch failure"}}
            return {"custom_id": line["custom_id"], "result": {"type": "errored", "error": error}}
        message = h._anthropic("/v1/messages", line["params"])
        return {"custom_id": line["custom_id"], "result": {"type": "succeeded", "message": message}}
    request = line["request"]
    if _failing(server, request):
        return {"error": {"code": 400, "message": "scripted batch failure"}, "metadata": line.get("metadata")}
    model = str(request.get("model") or b["model"]).removeprefix("models/")
    return {"response": h._gemini(f"/v1beta/models/{model}:generateContent", request), "metadata": line.get("metadata")}


def _no_answer(b: dict, line: dict, end: str) -> dict:
    if b["protocol"] == "anthropic":
        return {"custom_id": line["custom_id"], "result": {"type": "expired" if end == "expired" else "canceled"}}
    return {}


def _ok(answer: Any) -> bool:
    """An OpenAI result line for the output file (a line that is not a dict goes there as it is)."""
    return not isinstance(answer, dict) or (answer.get("response") or {}).get("status_code") == 200


def _openai_batch(server: ProtocolServer, bid: str, b: dict) -> dict:
    answers = b.get("answers") or []
    ok = [a for a in answers if _ok(a)]
    bad = [a for a in answers if not _ok(a) and a.get("response")]
    status = {"in_progress": "in_progress", "ended": "completed"}.get(b["status"], b["status"])
    out = {"id": bid, "object": "batch", "endpoint": "/v1/chat/completions", "input_file_id": b["input_file_id"],
           "status": status, "completion_window": "24h", "created_at": int(b["created_at"]), "output_file_id": None,
           "error_file_id": None, "metadata": b["metadata"],
           "request_counts": {"total": len(b["lines"]), "completed": len(ok), "failed": len(bad)}}  # fmt: skip
    for name, rows in (("output_file_id", ok), ("error_file_id", bad)):
        if rows:
            fid = f"file-{bid}-{name}"
            server.files[fid] = "".join(_jsonl(r) for r in rows).encode()
            out[name] = fid
    return out


def _iso(t: float) -> str:
    return datetime.fromtimestamp(t, timezone.utc).isoformat().replace("+00:00", "Z")


def _anthropic_batch(server: ProtocolServer, bid: str, b: dict) -> dict:
    answers = b.get("answers") or []
    kinds = Counter(a["result"]["type"] for a in answers if isinstance(a, dict) and isinstance(a.get("result"), dict))
    running = b["status"] == "in_progress"
    created = _iso(b["created_at"])
    return {"id": bid, "type": "message_batch", "processing_status": "in_progress" if running else "ended",
            "request_counts": {"processing": len(b["lines"]) if running else 0, "succeeded": kinds["succeeded"],
                               "errored": kinds["errored"], "canceled": kinds["canceled"], "expired": kinds["expired"]},
            "created_at": created, "expires_at": created, "ended_at": None if running else created,
            "archived_at": None, "cancel_initiated_at": None,
            "results_url": None if running else f"{server.url}/v1/messages/batches/{bid}/results"}  # fmt: skip


def _gemini_batch(bid: str, b: dict) -> dict:
    state = {"in_progress": "BATCH_STATE_RUNNING", "ended": "BATCH_STATE_SUCCEEDED", "expired": "BATCH_STATE_EXPIRED",
             "cancelled": "BATCH_STATE_CANCELLED"}[b["status"]]  # fmt: skip
    meta: dict[str, Any] = {"model": f"models/{b['model']}", "displayName": b.get("display_name"), "state": state,
                            "createTime": _iso(b["created_at"])}  # fmt: skip
    if b["status"] == "ended":
        meta["output"] = {"inlinedResponses": {"inlinedResponses": b["answers"]}}
    return {"name": f"batches/{bid}", "metadata": meta}


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description="Serve the OpenAI, Anthropic and Gemini protocols on 127.0.0.1.")
    ap.add_argument("--port", type=int, default=8000)
    ap.add_argument("--latency", type=float, default=0.0, help="seconds to sleep per request")
    args = ap.parse_args(argv)
    srv = ProtocolServer(port=args.port, latency=args.latency)
    print(f"serving on {srv.url} (openai: {srv.url}/v1, anthropic: {srv.url}, gemini: {srv.url})", flush=True)
    srv.start()
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        pass
    finally:
        srv.stop()


if __name__ == "__main__":
    main()
