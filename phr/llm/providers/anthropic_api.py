"""Anthropic Messages API via ``anthropic.AsyncAnthropic``."""

from __future__ import annotations

import anthropic

from phr.llm.errors import AuthFailed, BadRequest, CallError, RateLimited, ServerError
from phr.llm.providers.base import (
    BatchLine,
    BatchResult,
    BatchStatus,
    KeyedAPIProvider,
    RawCompletion,
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

    def _raw(self, msg) -> RawCompletion:
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

    async def submit_batch(self, lines: list[BatchLine]) -> str:
        requests = [self.batch_line(x) for x in lines]
        batch = await self._call(self._client.messages.batches.create(requests=requests), self.timeout)
        return batch.id

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
        out: dict[str, BatchResult] = {}
        decoder = await self._call(self._client.messages.batches.results(batch_id), self.timeout)
        async for row in decoder:
            result = row.result
            if result.type == "succeeded":
                try:
                    out[row.custom_id] = [self._raw(result.message)]
                except CallError as e:
                    out[row.custom_id] = e
            elif result.type == "errored":
                err = getattr(result.error, "error", None)
                kind = getattr(err, "type", "api_error")
                message = self._msg(f"in batch: {kind}: {getattr(err, 'message', err)}")
                out[row.custom_id] = _ERRORS.get(kind, ServerError)(message)
            # canceled / expired lines: no answer (the batch's outcome says why)
        return out

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
