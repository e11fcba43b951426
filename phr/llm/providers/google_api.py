"""Gemini API via ``google.genai`` (``client.aio.models.generate_content``)."""

from __future__ import annotations

import json

import httpx2
import pydantic
from google import genai
from google.genai import errors as genai_errors
from google.genai import types as gt

from phr.llm.errors import CallError, MalformedResponse, from_http_status
from phr.llm.providers.base import (
    BATCH_LIST_MAX,
    BatchLine,
    BatchResult,
    BatchStatus,
    KeyedAPIProvider,
    RawCompletion,
    SDKErrors,
    duplicate_id,
    split_system,
)
from phr.llm.types import GenerationParams, Message


class GoogleProvider(KeyedAPIProvider):
    """``google:<model>``. GEMINI_API_KEY (or GOOGLE_API_KEY) is required; GOOGLE_GEMINI_BASE_URL is honoured.

    Native n through ``candidate_count`` (up to 8). The SDK is built without retry options, so it never retries.
    Usage: sample 0 gets the call's prompt tokens, the others 0; the call's output tokens (candidates plus
    thinking tokens, as billed) are divided evenly over the samples, remainder to sample 0. The text is the
    concatenation of a candidate's non-thought text parts; the finish reason is the API's (``STOP``, ``MAX_TOKENS``..).
    """

    kind = "google"
    key_env = ("GEMINI_API_KEY", "GOOGLE_API_KEY")
    url_env = "GOOGLE_GEMINI_BASE_URL"
    native_n = True
    max_n = 8
    response_kind = "generateContent"
    errors = SDKErrors(
        timeout=(httpx2.TimeoutException, TimeoutError),
        connection=(httpx2.TransportError, OSError),
        malformed=(json.JSONDecodeError, pydantic.ValidationError),
    )
    batch_api = True
    #: the Batch API with inlined requests: one request body of at most 20 MB
    batch_max_requests = 10_000
    batch_max_bytes = 19_000_000
    batch_id_pattern = r"batches/[A-Za-z0-9_-]{1,200}"

    def _new_client(self) -> genai.Client:
        # an httpx transport of our own keeps the SDK on httpx: with aiohttp installed (inspect-ai and lm-eval bring
        # it) it would switch its async calls to aiohttp, whose errors and retries are not these
        return genai.Client(
            api_key=self._api_key,
            vertexai=False,
            http_options=gt.HttpOptions(
                base_url=self.base_url,
                timeout=int(self.timeout * 1000),
                async_client_args={"transport": httpx2.AsyncHTTPTransport()},
            ),
        )

    def _config(
        self, messages: tuple[Message, ...], params: GenerationParams, n: int, timeout: float
    ) -> tuple[list[gt.Content], gt.GenerateContentConfig]:
        system, turns = split_system(messages)
        contents = [
            gt.Content(role="model" if m.role == "assistant" else "user", parts=[gt.Part(text=m.content)])
            for m in turns
        ]
        config = gt.GenerateContentConfig(
            system_instruction=system,
            temperature=params.temperature,
            top_p=params.top_p,
            top_k=params.top_k,
            max_output_tokens=params.max_tokens,
            seed=params.seed,
            stop_sequences=list(params.stop) or None,
            candidate_count=n if n != 1 else None,
            http_options=gt.HttpOptions(timeout=max(1, int(timeout * 1000))),
        )
        return contents, config

    async def complete(
        self, messages: tuple[Message, ...], params: GenerationParams, n: int, timeout: float
    ) -> list[RawCompletion]:
        contents, config = self._config(messages, params, n, timeout)
        request = self._client.aio.models.generate_content(model=self.model, contents=contents, config=config)
        return self._parse(await self._call(request, timeout), n)

    def _parse(self, resp: gt.GenerateContentResponse, n: int) -> list[RawCompletion]:
        try:
            cands = list(resp.candidates or [])
            cands.sort(key=lambda c: c.index or 0)
            out = []
            for c in cands:
                parts = (c.content.parts or []) if c.content is not None else []
                text = "".join(p.text for p in parts if p.text and not p.thought)
                fin = c.finish_reason
                out.append((text, getattr(fin, "value", fin)))
            um = resp.usage_metadata
            prompt = int(um.prompt_token_count or 0) if um else 0
            completion = int((um.candidates_token_count or 0) + (um.thoughts_token_count or 0)) if um else 0
        except (AttributeError, TypeError, ValueError) as e:
            raise self._malformed(e) from e
        if not out:
            feedback = getattr(resp, "prompt_feedback", None)
            block = getattr(feedback, "block_reason", None)
            if block is not None:
                raise CallError(self._msg(f"prompt blocked: {getattr(block, 'value', block)}"))
            raise MalformedResponse(self._msg("response has no candidates"))
        return self._samples(out, prompt, completion, n, f"{n} candidates")

    # ---- the Batch API with inlined requests: batches.create / get; the answers come inlined in the job ----

    def _inlined(self, line: BatchLine) -> gt.InlinedRequest:
        contents, config = self._config(line.messages, line.params, line.n, self.timeout)
        config.http_options = None
        return gt.InlinedRequest(contents=contents, config=config, metadata={"key": line.custom_id})

    def batch_line(self, line: BatchLine) -> dict:
        return self._inlined(line).model_dump(mode="json", exclude_none=True)

    async def create_batch(self, lines: list[BatchLine], tag: str, file_id: str | None) -> str:
        src = [self._inlined(x) for x in lines]
        job = await self._call(
            self._client.aio.batches.create(model=self.model, src=src, config={"display_name": tag}), self.timeout
        )
        return str(job.name)

    async def find_batch(
        self, tag: str, *, file_id: str | None, lines: int, since: float, exclude: set[str]
    ) -> str | None:
        """The batch job whose display name is ``tag``."""

        async def scan() -> str | None:
            seen = 0
            async for job in await self._client.aio.batches.list(config={"page_size": 100}):
                if job.display_name == tag and job.name and job.name not in exclude:
                    return str(job.name)
                seen += 1
                if seen >= BATCH_LIST_MAX:
                    break
            return None

        return await self._unbounded(scan())

    async def poll_batch(self, batch_id: str) -> BatchStatus:
        job = await self._call(self._client.aio.batches.get(name=batch_id), self.timeout)
        state = getattr(job.state, "value", str(job.state))
        over = {
            "JOB_STATE_SUCCEEDED": "ended",
            "JOB_STATE_EXPIRED": "expired",
            "JOB_STATE_CANCELLED": "cancelled",
            "JOB_STATE_FAILED": "failed",
        }
        stats = job.completion_stats
        done_n = failed_n = None
        if stats is not None:
            done_n, failed_n = stats.successful_count, stats.failed_count
        return BatchStatus(batch_id, state, state in over, None, done_n, failed_n, over.get(state))

    async def batch_results(self, batch_id: str, expected: dict[str, int]) -> dict[str, BatchResult]:
        job = await self._call(self._client.aio.batches.get(name=batch_id), self.timeout)
        answers = (job.dest.inlined_responses if job.dest else None) or []
        order = list(expected)
        out: dict[str, BatchResult] = {}
        named: set[str] = set()
        for i, answer in enumerate(answers):
            cid = str((answer.metadata or {}).get("key") or (order[i] if i < len(order) else f"<answer {i + 1}>"))
            result: BatchResult | None = None
            if answer.error is not None:
                code = int(answer.error.code or 500)
                result = from_http_status(code, self._msg(f"in batch: {code}: {answer.error.message}"))
            elif answer.response is not None:
                try:
                    result = self._parse(answer.response, expected.get(cid, 1))
                except CallError as e:
                    result = e
            if cid in named:
                out[cid] = duplicate_id(cid, self._msg)
            elif result is not None:
                out[cid] = result
            named.add(cid)
        return out

    def _http_error(self, e: Exception) -> tuple[int, str, str | None] | None:
        if not isinstance(e, genai_errors.APIError):
            return None
        headers = getattr(getattr(e, "response", None), "headers", None) or {}
        code = int(e.code) if isinstance(e.code, int) or str(e.code).isdigit() else 500
        return code, f"HTTP {code} {e.status or ''}: {e.message or e.details}", headers.get("retry-after")

    def _connection_failed(self, e: BaseException) -> str:
        return f"connection failed: {type(e).__name__}: {e}"

    async def _close_client(self, client: genai.Client) -> None:
        await client.aio.aclose()
