"""Anthropic Messages API via ``anthropic.AsyncAnthropic``."""

from __future__ import annotations

import os

import anthropic

from phr.config.defaults import CALL_TIMEOUT_S
from phr.core.secrets import require_env
from phr.llm.providers.base import APIProvider, RawCompletion, split_system, stainless_errors
from phr.llm.types import GenerationParams, Message

DEFAULT_MAX_TOKENS = 1024


class AnthropicProvider(APIProvider):
    """``anthropic:<model>``. ANTHROPIC_API_KEY is required; ANTHROPIC_BASE_URL is honoured.

    No native n: the executor makes one call per sample (``complete`` loops if given n > 1; each sample then
    carries its own call's usage). ``max_tokens`` is required by the API: None becomes 1024. The system
    messages go to the ``system`` field. ``seed`` is not supported by the API and is ignored.
    temperature/top_p/top_k are sent (in ``extra_body``: the SDK no longer types them) only when set; models
    that refuse sampling parameters answer 400, which becomes a non-retried BadRequest.
    The text is the concatenation of the reply's text blocks; the finish reason is ``stop_reason``.
    """

    kind = "anthropic"
    native_n = False
    max_n = 1
    response_kind = "a message"
    errors = stainless_errors(anthropic)

    def __init__(
        self, model: str, api_key: str | None = None, base_url: str | None = None, timeout: float = CALL_TIMEOUT_S
    ):
        super().__init__(model)
        self._api_key = api_key or require_env("ANTHROPIC_API_KEY", purpose=f"anthropic:{model}")
        self.base_url = base_url or os.environ.get("ANTHROPIC_BASE_URL") or None
        self.timeout = timeout

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
        try:
            text = "".join(b.text for b in msg.content if getattr(b, "type", None) == "text")
            return RawCompletion(
                text, msg.stop_reason, int(msg.usage.input_tokens or 0), int(msg.usage.output_tokens or 0)
            )
        except (AttributeError, TypeError, ValueError) as e:
            raise self._malformed(e) from e

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
