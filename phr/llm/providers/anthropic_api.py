"""Anthropic Messages API via ``anthropic.AsyncAnthropic``."""

from __future__ import annotations

from typing import Any

import anthropic
import pydantic
from anthropic.types import Message as AnthropicMessage

from phr.llm.errors import AuthFailed, BadRequest, CallError, RateLimited, ServerError
from phr.llm.providers.base import (
    BATCH_CLOCK_SKEW_S,
    BATCH_LIST_MAX,
    DEADLINE_GRACE_S,
    BatchLine,
    BatchResult,
    BatchStatus,
    KeyedAPIProvider,
    RawCompletion,
    add_bad_line,
    duplicate_id,
    result_lines,
    split_system,
    stainless_errors,
)
from phr.llm.types import GenerationParams, Message

DEFAULT_MAX_TOKENS = 1024


class AnthropicProvider(KeyedAPIProvider):
    """``anthropic:<model>``. ANTHROPIC_API_KEY is required; ANTHROPIC_BASE_URL is honoured.

    No native n: the executor makes one call per sample (``complete`` loops if given n > 1; each sample then
    carries its own call's usage). ``max_tokens`` is required by the API: None becomes 1024. The system
    messages go to the ``system`` field. ``seed`` is not supported by the API and is ignored.
    temperature/top_p/top_k are sent (in ``extra_body``: the SDK no longer types them) only when set; models
    that refuse sampling parameters answer 400, which becomes a non-retried BadRequest.
    The text is the concatenation of the reply's text blocks; the finish reason is ``stop_reason``.
    """

    kind = "anthropic"
    key_env = ("ANTHROPIC_API_KEY",)
    url_env = "ANTHROPIC_BASE_URL"
    native_n = False
    max_n = 1
    response_kind = "a message"
    errors = stainless_errors(anthropic)
    batch_api = True
    #: the Message Batches API's limits: 100,000 requests or 256 MB per batch
    batch_max_requests = 100_000
    batch_max_bytes = 250_000_000
    batch_id_pattern = r"msgbatch_[A-Za-z0-9_-]{1,200}"

    def _new_client(self) -> anthropic.AsyncAnthropic:
        return anthropic.AsyncAnthropic(
            api_key=self._api_key, base_url=self.base_url, max_retries=0, timeout=self.timeout
        )

    def _request(self, messages: tuple[Message, ...], params: GenerationParams) -> dict:
        system, turns = split_system(messages)
        kw: dict = {
            "model": self.model,
            "max_tokens": params.max_tokens or DEFAULT_MAX_TOKENS,
            "messages": [{"role": m.role, "content": m.content} for m in turns],
        }
        if system:
            kw["system"] = system
        # anthropic>=1.0 dropped temperature/top_p/top_k from create()'s signature (they are deprecated in the
        # API, and newer models answer 400 to them): they go in extra_body, and only when set.
        sampling = {k: getattr(params, k) for k in ("temperature", "top_p", "top_k") if getattr(params, k) is not None}
        if sampling:
            kw["extra_body"] = sampling
        if params.stop:
            kw["stop_sequences"] = list(params.stop)
        return kw

    async def complete(
        self, messages: tuple[Message, ...], params: GenerationParams, n: int, timeout: float
    ) -> list[RawCompletion]:
        kw = self._request(messages, params)
        return [await self._one(kw, timeout) for _ in range(n)]

    async def _one(self, kw: dict, timeout: float) -> RawCompletion:
        msg = await self._call(self._client.messages.create(**kw, timeout=timeout), timeout)
        return self._raw(msg)

    def _raw(self, msg: Any) -> RawCompletion:  # an AnthropicMessage; a malformed one is a MalformedResponse
        try:
            text = "".join(b.text for b in msg.content if getattr(b, "type", None) == "text")
            return RawCompletion(
                text, msg.stop_reason, int(msg.usage.input_tokens or 0), int(msg.usage.output_tokens or 0)
            )
        except (AttributeError, TypeError, ValueError) as e:
            raise self._malformed(e) from e

    # ---- the Message Batches API: messages.batches.create / retrieve / results ----

    def batch_line(self, line: BatchLine) -> dict:
        kw = self._request(line.messages, line.params)
        kw.update(kw.pop("extra_body", {}))  # a batch line's params are the request body itself
        return {"custom_id": line.custom_id, "params": kw}

    async def create_batch(self, lines: list[BatchLine], tag: str, file_id: str | None) -> str:
        requests = [self.batch_line(x) for x in lines]
        batch = await self._call(self._client.messages.batches.create(requests=requests), self.timeout)
        return batch.id

    async def find_batch(
        self, tag: str, *, file_id: str | None, lines: int, since: float, exclude: set[str]
    ) -> str | None:
        """Message Batches keep no client metadata: the batch created within the submission's call (from ``since``
        to ``since`` + the timeout, allowing for clock skew) with ``lines`` requests that no other submission of the
        ledger holds, the earliest of them (the list is newest first: it is read back to the submission's time).
        A batch taken wrongly cannot give a wrong answer: its results are matched to the requests by their ids,
        which are the samples' cache keys."""

        async def scan() -> str | None:
            found, seen = None, 0
            async for b in self._client.messages.batches.list(limit=100):
                created = b.created_at.timestamp()
                if created < since - BATCH_CLOCK_SKEW_S:
                    break
                c = b.request_counts
                total = c.processing + c.succeeded + c.errored + c.canceled + c.expired
                near = created <= since + self.timeout + DEADLINE_GRACE_S + BATCH_CLOCK_SKEW_S
                if near and total == lines and b.id not in exclude:
                    found = b.id  # keep reading: the earliest one is the submission's
                seen += 1
                if seen >= BATCH_LIST_MAX:
                    break
            return found

        return await self._unbounded(scan())

    async def poll_batch(self, batch_id: str) -> BatchStatus:
        b = await self._call(self._client.messages.batches.retrieve(batch_id), self.timeout)
        c = b.request_counts
        failed = c.errored + c.canceled + c.expired
        total = c.processing + c.succeeded + failed
        done = b.processing_status == "ended"
        outcome = None
        if done:
            outcome = "expired" if c.expired else "cancelled" if c.canceled else "ended"
        return BatchStatus(batch_id, b.processing_status, done, total, c.succeeded, failed, outcome)

    async def batch_results(self, batch_id: str, expected: dict[str, int]) -> dict[str, BatchResult]:
        """The results file read line by line (not the SDK's decoder, which stops at a line that does not parse:
        such a line fails the request it names only)."""

        async def read() -> list[str]:
            results = self._client.messages.batches.with_streaming_response.results(batch_id)
            async with results as resp:
                return [line async for line in resp.iter_lines()]

        out: dict[str, BatchResult] = {}
        named: set[str] = set()
        for number, text, row in result_lines(await self._unbounded(read())):
            if row is None:  # that request fails (where the line still names it); not the batch
                named.add(add_bad_line(out, f"results line {number}", text, self._msg))
                continue
            cid, result = str(row.get("custom_id")), self._batch_row(row.get("result"))
            if cid in named:
                out[cid] = duplicate_id(cid, self._msg)
            elif result is not None:
                out[cid] = result
            named.add(cid)
        return out

    def _batch_row(self, result: Any) -> BatchResult | None:
        """One result: the answer, the error it reports, or None for a canceled / expired request (no answer: the
        batch's outcome says why)."""
        kind = result.get("type") if isinstance(result, dict) else None
        if kind == "succeeded":
            try:
                return [self._raw(AnthropicMessage.model_validate(result["message"]))]
            except CallError as e:
                return e
            except (pydantic.ValidationError, KeyError, TypeError) as e:
                return self._malformed(e)
        if kind == "errored":
            body = result.get("error") or {}
            err = body.get("error", body) if isinstance(body, dict) else {}
            err = err if isinstance(err, dict) else {}
            error_type = str(err.get("type") or "api_error")
            message = self._msg(f"in batch: {error_type}: {err.get('message', err)}")
            return _ERRORS.get(error_type, ServerError)(message)
        if kind in ("canceled", "expired"):
            return None
        return self._malformed(ValueError(f"a result of type {kind!r}"))

    def _http_error(self, e: Exception) -> tuple[int, str, str | None] | None:
        if not isinstance(e, anthropic.APIStatusError):
            return None
        return (
            e.status_code,
            f"HTTP {e.status_code}: {e.api_message or e.message}",
            e.response.headers.get("retry-after"),
        )

    async def _close_client(self, client: anthropic.AsyncAnthropic) -> None:
        await client.close()


#: the error classes of a batch line's error types (invalid_request_error, ...); others are server errors
_ERRORS: dict[str, type[CallError]] = {
    "invalid_request_error": BadRequest,
    "authentication_error": AuthFailed,
    "permission_error": AuthFailed,
    "not_found_error": BadRequest,
    "request_too_large": BadRequest,
    "rate_limit_error": RateLimited,
}
