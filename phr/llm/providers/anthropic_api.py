"""Anthropic Messages API via ``anthropic.AsyncAnthropic``."""

from __future__ import annotations

import asyncio
import json
import os

import anthropic
import pydantic

from phr.config.defaults import CALL_TIMEOUT_S
from phr.core.secrets import require_env
from phr.llm.errors import (
    CallError,
    CallTimeout,
    ConnectionFailed,
    MalformedResponse,
    from_http_status,
    parse_retry_after,
)
from phr.llm.providers.base import (
    DEADLINE_GRACE_S,
    APIProvider,
    RawCompletion,
    safe_message,
    split_system,
)
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
        try:
            async with asyncio.timeout(timeout + DEADLINE_GRACE_S):
                msg = await self._client.messages.create(**kw, timeout=timeout)
        except Exception as e:
            err = self._translate(e, timeout)
            if err is None:
                raise
            raise err from e
        try:
            text = "".join(b.text for b in msg.content if getattr(b, "type", None) == "text")
            return RawCompletion(
                text, msg.stop_reason, int(msg.usage.input_tokens or 0), int(msg.usage.output_tokens or 0)
            )
        except (AttributeError, TypeError, ValueError) as e:
            raise MalformedResponse(self._msg(f"response does not parse as a message ({type(e).__name__})")) from e

    def _msg(self, text: str) -> str:
        return safe_message(f"{self.spec}: {text}", self._api_key)

    def _translate(self, e: Exception, timeout: float) -> CallError | None:
        """The CallError for an SDK exception; None for anything else (a bug: re-raised as is)."""
        if isinstance(e, anthropic.APIStatusError):
            ra = parse_retry_after(e.response.headers.get("retry-after"))
            detail = e.api_message or e.message
            return from_http_status(e.status_code, self._msg(f"HTTP {e.status_code}: {detail}"), ra)
        if isinstance(e, (anthropic.APITimeoutError, TimeoutError)):
            return CallTimeout(self._msg(f"no response within {timeout:g}s"))
        if isinstance(e, anthropic.APIConnectionError):
            cause = e.__cause__ or e.__context__
            why = f"{type(cause).__name__}: {cause}" if cause else e.message
            return ConnectionFailed(self._msg(f"connection failed: {why}"))
        if isinstance(e, (anthropic.APIResponseValidationError, json.JSONDecodeError, pydantic.ValidationError)):
            return MalformedResponse(self._msg(f"response does not parse as a message ({type(e).__name__})"))
        return None

    async def _close_client(self, client: anthropic.AsyncAnthropic) -> None:
        await client.close()
