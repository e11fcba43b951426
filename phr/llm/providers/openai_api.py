"""OpenAI chat completions, and any OpenAI-compatible endpoint (vLLM server, DeepSeek, ...), via ``openai.AsyncOpenAI``."""

from __future__ import annotations

import json
import os
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import openai
import pydantic
from openai.types.chat import ChatCompletion

from phr.config.defaults import CALL_TIMEOUT_S
from phr.core.secrets import require_env
from phr.llm.errors import BadRequest, CallError, from_http_status
from phr.llm.providers.base import (
    BATCH_CLOCK_SKEW_S,
    BATCH_LIST_MAX,
    BATCH_TAG_KEY,
    APIProvider,
    BatchLine,
    BatchResult,
    BatchStatus,
    RawCompletion,
    add_bad_line,
    add_result,
    result_lines,
    stainless_errors,
)
from phr.llm.types import GenerationParams, Message


class UnsupportedParam(BadRequest, ValueError):
    """A generation parameter this provider cannot send. Not retried."""


def clean_url(url: str) -> str:
    """``url`` without credentials, query or fragment, and without a trailing slash."""
    p = urlsplit(url)
    host = p.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    netloc = host + (f":{p.port}" if p.port else "")
    return urlunsplit((p.scheme, netloc, p.path.rstrip("/"), "", ""))


class OpenAIProvider(APIProvider):
    """``openai:<model>`` and ``openai-compatible:<base_url>#<model>``.

    Native n (up to 128 per call). Usage accounting: the API reports one usage for the whole call, so sample 0
    gets all the call's prompt tokens and the others 0, and the call's completion tokens are divided evenly over
    the samples (remainder to sample 0); summed over the samples, the numbers equal the call's usage.
    ``top_k`` is sent in ``extra_body`` to compatible endpoints (vLLM accepts it) and refused for ``openai:``.
    """

    kind = "openai"
    native_n = True
    max_n = 128
    response_kind = "a chat completion"
    errors = stainless_errors(openai)
    batch_api = True
    #: the Batch API's limits: 50,000 requests and a 200 MB input file per batch
    batch_max_requests = 50_000
    batch_max_bytes = 190_000_000
    batch_id_pattern = r"batch_[A-Za-z0-9_-]{1,200}"

    def __init__(
        self,
        model: str,
        base_url: str | None = None,
        compatible: bool = False,
        api_key: str | None = None,
        timeout: float = CALL_TIMEOUT_S,
    ):
        super().__init__(model)
        self.compatible = compatible
        if compatible:
            self.batch_api = False  # a server copying the chat protocol has no /v1/batches
            self.kind = "openai-compatible"
            if not base_url:
                raise ValueError("openai-compatible needs a base_url")
            api_key = api_key or os.environ.get("OPENAI_COMPATIBLE_API_KEY") or "EMPTY"
        else:
            api_key = api_key or require_env("OPENAI_API_KEY", purpose=f"openai:{model}")
            base_url = base_url or os.environ.get("OPENAI_BASE_URL") or None
        self.base_url = base_url
        self.timeout = timeout
        self._api_key = api_key

    def _new_client(self) -> openai.AsyncOpenAI:
        return openai.AsyncOpenAI(api_key=self._api_key, base_url=self.base_url, max_retries=0, timeout=self.timeout)

    @property
    def spec(self) -> str:
        return f"openai-compatible:{clean_url(self.base_url or '')}#{self.model}" if self.compatible else super().spec

    @property
    def cache_model_id(self) -> str:
        return f"{clean_url(self.base_url or '')}#{self.model}" if self.compatible else self.model

    def _request(self, messages: tuple[Message, ...], params: GenerationParams, n: int) -> dict:
        kw: dict = {"model": self.model, "messages": [{"role": m.role, "content": m.content} for m in messages]}
        if n != 1:
            kw["n"] = n
        for name in ("temperature", "top_p", "seed"):
            if getattr(params, name) is not None:
                kw[name] = getattr(params, name)
        if params.max_tokens is not None:
            # The OpenAI API wants max_completion_tokens (reasoning models refuse max_tokens); servers that
            # copy the protocol know max_tokens.
            kw["max_tokens" if self.compatible else "max_completion_tokens"] = params.max_tokens
        if params.stop:
            kw["stop"] = list(params.stop)
        if params.top_k is not None:
            if not self.compatible:
                raise UnsupportedParam(f"{self.spec}: the OpenAI API has no top_k; leave GenerationParams.top_k unset")
            kw["extra_body"] = {"top_k": params.top_k}
        return kw

    async def complete(
        self, messages: tuple[Message, ...], params: GenerationParams, n: int, timeout: float
    ) -> list[RawCompletion]:
        kw = self._request(messages, params, n)
        resp = await self._call(self._client.chat.completions.create(**kw, timeout=timeout), timeout)
        return self._parse(resp, n)

    def _parse(self, resp: Any, n: int) -> list[RawCompletion]:  # the SDK's ChatCompletion, read defensively
        try:
            choices = sorted(resp.choices, key=lambda c: c.index if c.index is not None else 0)
            texts = [(c.message.content or "", c.finish_reason) for c in choices]
            usage = resp.usage
            prompt = int(usage.prompt_tokens or 0) if usage is not None else 0
            completion = int(usage.completion_tokens or 0) if usage is not None else 0
        except (AttributeError, TypeError, ValueError) as e:
            raise self._malformed(e) from e
        return self._samples(texts, prompt, completion, n, f"n={n} choices (does the endpoint support n?)")

    # ---- the Batch API: a JSONL file of /v1/chat/completions requests, files.create + batches.create ----

    def batch_line(self, line: BatchLine) -> dict:
        body = self._request(line.messages, line.params, line.n)
        return {"custom_id": line.custom_id, "method": "POST", "url": "/v1/chat/completions", "body": body}

    async def upload_batch(self, lines: list[BatchLine]) -> str | None:
        data = "".join(json.dumps(self.batch_line(x), ensure_ascii=False) + "\n" for x in lines).encode()
        upload = await self._call(
            self._client.files.create(file=("phr-batch.jsonl", data), purpose="batch"), self.timeout
        )
        return upload.id

    async def create_batch(self, lines: list[BatchLine], tag: str, file_id: str | None) -> str:
        if not file_id:
            raise ValueError("an OpenAI batch is created from an uploaded file (upload_batch)")
        batch = await self._call(
            self._client.batches.create(
                input_file_id=file_id,
                endpoint="/v1/chat/completions",
                completion_window="24h",
                metadata={BATCH_TAG_KEY: tag},
            ),
            self.timeout,
        )
        return batch.id

    async def find_batch(
        self, tag: str, *, file_id: str | None, lines: int, since: float, exclude: set[str]
    ) -> str | None:
        """The batch whose metadata holds ``tag``, or that was created from ``file_id`` (the list is newest first:
        it is read back to the submission's time)."""

        async def scan() -> str | None:
            seen = 0
            async for b in self._client.batches.list(limit=100):
                if b.id not in exclude and (
                    (b.metadata or {}).get(BATCH_TAG_KEY) == tag or (file_id and b.input_file_id == file_id)
                ):
                    return b.id
                seen += 1
                if seen >= BATCH_LIST_MAX or (b.created_at or 0) < since - BATCH_CLOCK_SKEW_S:
                    return None
            return None

        return await self._unbounded(scan())

    async def poll_batch(self, batch_id: str) -> BatchStatus:
        b = await self._call(self._client.batches.retrieve(batch_id), self.timeout)
        counts = b.request_counts
        over = {"completed": "ended", "expired": "expired", "cancelled": "cancelled", "failed": "failed"}
        return BatchStatus(
            batch_id,
            b.status,
            b.status in over,
            counts.total if counts else None,
            counts.completed if counts else None,
            counts.failed if counts else None,
            over.get(b.status),
        )

    async def batch_results(self, batch_id: str, expected: dict[str, int]) -> dict[str, BatchResult]:
        b = await self._call(self._client.batches.retrieve(batch_id), self.timeout)
        out: dict[str, BatchResult] = {}
        for name, file_id in (("output", b.output_file_id), ("error", b.error_file_id)):
            if not file_id:
                continue
            content = await self._unbounded(self._client.files.content(file_id))
            for number, text, row in result_lines(content.text.splitlines()):
                if row is None:  # that request fails (where the line still names it); not the batch
                    add_bad_line(out, f"{name} line {number}", text, self._msg)
                    continue
                cid = str(row.get("custom_id"))
                add_result(out, cid, self._batch_row(row, expected.get(cid, 1)), self._msg)
        return out

    def _batch_row(self, row: dict, n: int) -> BatchResult:
        """One line of an output or error file: the samples, or the error it reports (a line of another shape:
        malformed)."""
        try:
            resp, err = row.get("response") or {}, row.get("error")
            status = int(resp.get("status_code") or 0)
            if err or status != 200:
                detail = (resp.get("body") or {}).get("error") or err or {}
                if not isinstance(detail, dict):
                    detail = {"message": detail}
                message = self._msg(f"in batch: {detail.get('code') or status}: {detail.get('message') or detail}")
                return from_http_status(status, message) if status >= 400 else CallError(message)
            parsed = ChatCompletion.model_validate(resp["body"])
            return self._parse(parsed, n)
        except CallError as e:
            return e
        except (pydantic.ValidationError, KeyError, TypeError, ValueError, AttributeError) as e:
            return self._malformed(e)

    def _http_error(self, e: Exception) -> tuple[int, str, str | None] | None:
        if not isinstance(e, openai.APIStatusError):
            return None
        return e.status_code, f"HTTP {e.status_code}: {e.message}", e.response.headers.get("retry-after")

    def _connection_failed(self, e: BaseException) -> str:
        return f"connection to {clean_url(str(self._client.base_url))} failed: {self._connection_why(e)}"

    async def _close_client(self, client: openai.AsyncOpenAI) -> None:
        await client.close()
