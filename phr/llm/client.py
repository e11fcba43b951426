"""The LLM client: cache lookups, bounded concurrency, rate limits, retries, batching, accounting.

    llm = LLM("openai:gpt-4o", concurrency=8)
    results = llm.generate([ChatRequest(as_messages("Hi"), GenerationParams(temperature=0.7), n=10)])

Every sample is looked up in the call cache first; only the missing sample indices are requested. API
providers run under a semaphore and per-minute request/token limiters, with exponential backoff and jitter
on 429 (honouring Retry-After up to ``max_retry_after`` seconds; a longer one fails the call at once with
the reason), 5xx, timeouts, connection errors and malformed bodies. In-process
providers (hf, local, vllm) get the missing samples in batches. Every call that finally fails becomes a
CallFailure in its result slot and a row in the cache's failure table: nothing is dropped.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections import defaultdict
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Sequence

from aiolimiter import AsyncLimiter
from tenacity import (
    AsyncRetrying,
    RetryCallState,
    retry_if_exception,
    stop_after_attempt,
    wait_exponential_jitter,
)

from phr.config.defaults import CALL_TIMEOUT_S, CONCURRENCY, MAX_RETRY_AFTER_S
from phr.core.aio import run_sync
from phr.core.progress import ProgressDisplay, progress_bar
from phr.core.secrets import redact
from phr.llm.cache import CacheMode, CallCache, call_key
from phr.llm.errors import CallError, CallTimeout, MalformedResponse
from phr.llm.pricing import PriceTable
from phr.llm.providers.base import BatchItem, Provider, RawCompletion
from phr.llm.spec import make_provider
from phr.llm.summary import ModelStats, RunSummary
from phr.llm.types import (
    CallFailure,
    ChatRequest,
    GenerationParams,
    Message,
    RequestResult,
    Sample,
    as_messages,
)

if TYPE_CHECKING:  # pragma: no cover - the batch API is imported where a batch runs
    from phr.llm.batch import BatchSession

log = logging.getLogger("phr.llm")

#: Default cap on an honoured Retry-After (seconds): a server asking for a longer wait fails the call at once.
DEFAULT_MAX_RETRY_AFTER = MAX_RETRY_AFTER_S


@dataclass
class _Slot:
    """One missing sample: which request, which slot, its cache key and canonical request JSON."""

    req: int
    index: int
    key: str
    request_json: str


class LLM:
    """One model behind one spec string, with the call cache and the execution policy around it."""

    def __init__(
        self,
        spec: str,
        *,
        cache: CallCache | str | Path | None = None,
        cache_mode: CacheMode | str = CacheMode.USE,
        concurrency: int = CONCURRENCY,
        requests_per_minute: float | None = None,
        tokens_per_minute: float | None = None,
        timeout: float = CALL_TIMEOUT_S,
        max_attempts: int = 6,
        backoff_initial: float = 1.0,
        backoff_max: float = 60.0,
        max_retry_after: float = DEFAULT_MAX_RETRY_AFTER,
        prices: PriceTable | None = None,
        progress: bool = True,
        show_summary: bool | None = None,
        provider: Provider | None = None,
        batch: bool | None = None,
        **provider_options: Any,
    ) -> None:
        if concurrency < 1:
            raise ValueError("concurrency must be >= 1")
        if timeout <= 0:
            raise ValueError("timeout must be > 0 seconds")
        if max_retry_after < 0:
            raise ValueError("max_retry_after must be >= 0 seconds")
        self.spec = spec
        self.provider = provider or make_provider(spec, **provider_options)
        self.cache = cache if isinstance(cache, CallCache) else CallCache(cache, mode=cache_mode)
        self.concurrency = concurrency
        self.requests_per_minute = requests_per_minute
        self.tokens_per_minute = tokens_per_minute
        self.timeout = timeout
        self.max_attempts = max_attempts
        self.backoff_initial = backoff_initial
        self.backoff_max = backoff_max
        #: The longest Retry-After (seconds) honoured; a server asking for more fails the call at once.
        self.max_retry_after = max_retry_after
        self.prices = prices or PriceTable.load()
        self.progress = progress
        self.show_summary = progress if show_summary is None else show_summary
        self.last_summary = RunSummary()
        #: True: misses go through the provider's batch API (phr.llm.batch); None: so when made in a batch session
        #: (a command with --batch; ``phr.api.run`` of a config with ``batch: true``); False: never
        self.batch = batch
        if batch is None:
            from phr.llm.batch import active_session

            batch = self.batch = True if active_session() is not None else None
        if batch:
            from phr.llm.batch import BatchUnsupported, require_batch

            require_batch(self.provider)
            if self.cache.mode is CacheMode.OFF:
                raise BatchUnsupported(f"{spec}: --batch needs the call cache (its answers are stored there)")
            self.provider.batched = True  # a plan's calls of this provider are priced at the batch rate

    # ---- public API -------------------------------------------------------------------------------

    def generate(self, requests: Sequence[ChatRequest], desc: str = "generating") -> list[RequestResult]:
        """Synchronous wrapper around :meth:`agenerate` (safe to call inside a running event loop)."""
        return run_sync(self.agenerate(requests, desc))

    def chat(self, prompt: str | list, *, n: int = 1, **params: Any) -> RequestResult:
        """One prompt (text or messages) with sampling parameters as keywords."""
        return self.generate([ChatRequest(as_messages(prompt), GenerationParams(**params), n=n)])[0]

    async def agenerate(
        self, requests: Sequence[ChatRequest], desc: str = "generating", summary: RunSummary | None = None
    ) -> list[RequestResult]:
        """Produce every sample of every request. Pass ``summary`` to accumulate several runs into one."""
        own_summary = summary is None
        summary = self.last_summary = summary or RunSummary()
        stats = summary.model(self.spec)
        results = [RequestResult(r, [None] * r.n) for r in requests]  # type: ignore[list-item]
        missing = self._lookup(requests, results, stats)
        if stats.cache_corrupt:
            log.warning(
                "call cache %s: %d stored answer(s) of %s failed their checksum (edited or damaged): asking again",
                self.cache.path,
                stats.cache_corrupt,
                redact(self.spec),
            )
        total = sum(r.n for r in requests)
        if missing and self._batching():
            await self._batch(requests, results, missing, summary)
            missing = []
        if missing and self.provider.in_process:
            await self._load_before_the_bar(desc)
        with self._progress() as bar:
            task = bar.add_task(desc, total=total, completed=total - len(missing))
            finished, running = [total - len(missing)], [0.0]  # stored samples; a running batch's share

            def done(slot: _Slot, outcome: Sample | CallFailure) -> None:
                req = requests[slot.req]
                results[slot.req].samples[slot.index - req.first_index] = outcome
                finished[0] += 1
                running[0] = max(0.0, running[0] - 1)  # a stored sample moves from the batch's share to the count
                bar.update(task, completed=finished[0] + running[0])

            def partial(part: float) -> None:  # an in-process batch's samples done so far (from its thread)
                running[0] = part
                bar.update(task, completed=finished[0] + part)

            if missing:
                if self.provider.in_process:
                    await self._run_in_process(requests, missing, done, summary, partial)
                else:
                    await self._run_api(requests, missing, done, summary)
        if own_summary:
            await self.provider.aclose()
        if self.show_summary and own_summary:
            from phr.llm.batch import show_summary

            show_summary(summary)
        fails = summary.failures
        if fails:
            log.warning("%s: %d sample(s) failed: %s", redact(self.spec), sum(fails.values()), dict(fails))
        return results

    def _lookup(self, requests: Sequence[ChatRequest], results: list[RequestResult], stats: ModelStats) -> list[_Slot]:
        """Fill ``results`` with the samples found in the call cache; return the missing ones. In a batch session, an
        answer one of its batches gave (and stored) counts as that batch's response, not as a cache hit."""
        missing: list[_Slot] = []
        session = self._session()
        for ri, req in enumerate(requests):
            for k in range(req.n):
                index = req.first_index + k
                key, request_json = call_key(
                    self.provider.kind,
                    self.provider.cache_model_id,
                    self.provider.revision,
                    req.params,
                    req.messages,
                    index,
                )
                found = self.cache.lookup(key)
                if found.sample is not None:
                    results[ri].samples[k] = found.sample
                    via = session.batch_of.get(key) if session is not None else None
                    if via is not None:
                        self._count(found.sample, stats, batch=True)
                        stats.batch_ids.add(via)
                    else:
                        stats.cache_hits += 1
                else:
                    stats.cache_corrupt += found.corrupt  # a stored answer that failed its checksum: asked again
                    missing.append(_Slot(ri, index, key, request_json))
        return missing

    # ---- batch mode (phr.llm.batch) ---------------------------------------------------------------------------

    def _batching(self) -> bool:
        return bool(self.batch)

    def _session(self) -> BatchSession | None:
        """The batch session this LLM's misses are queued in (a command with --batch), or None."""
        if not self._batching():
            return None
        from phr.llm.batch import active_session

        return active_session()

    async def _batch(
        self, requests: Sequence[ChatRequest], results: list[RequestResult], missing: list[_Slot], summary: RunSummary
    ) -> None:
        """The missing samples through the batch API: queued in the open session (each a ``batch_pending``
        missing value until the session's batches end), or, without one, submitted and waited for here."""
        from phr.llm.batch import BatchSession, Pending, active_session, pending_failure

        active = active_session()
        own = active is None
        session = BatchSession() if active is None else active
        items = [
            Pending(s.key, s.request_json, s.index, requests[s.req].messages, requests[s.req].params) for s in missing
        ]
        session.add(self, items)
        if own:
            await session.aprocess()
        stats = summary.model(self.spec)
        queued = 0
        for slot, item in zip(missing, items):
            outcome = session.outcome(slot.key)
            if outcome is None:
                outcome, queued = pending_failure(self, item), queued + 1
                results[slot.req].samples[slot.index - requests[slot.req].first_index] = outcome
                continue
            if slot.key in session.batch_of:
                stats.batch_ids.add(session.batch_of[slot.key])
            if isinstance(outcome, CallFailure):
                stats.failures[outcome.reason] += 1
            else:
                self._count(outcome, stats, batch=True)
            results[slot.req].samples[slot.index - requests[slot.req].first_index] = outcome
        if queued:
            log.info("%s: %d sample(s) queued for the batch API", redact(self.spec), queued)

    # ---- execution --------------------------------------------------------------------------------

    async def _load_before_the_bar(self, desc: str) -> None:
        """Load an in-process model (converting it on first use) before the step's bar starts, so the bar's
        elapsed time and rate count the step's own work. A load that fails is left to the batches, which meet the
        same error and record it per sample."""
        if self.provider.purpose is None:
            self.provider.purpose = f"for {desc}"
        load = getattr(self.provider, "load", None)
        if load is None:
            return
        try:
            await asyncio.to_thread(load)
        except Exception:  # noqa: BLE001 - recorded by the batches (one failure per sample)
            log.debug("loading %s before the bar failed", redact(self.spec), exc_info=True)

    def _progress(self) -> ProgressDisplay:
        """A live bar on a terminal, periodic one-line progress in logs (phr.core.progress)."""
        return progress_bar(self.progress)

    def _store(
        self, slot: _Slot, raw: RawCompletion, latency: float, summary: RunSummary, batch_size: int = 1
    ) -> Sample:
        sample = Sample(
            slot.index,
            raw.text,
            raw.finish_reason,
            raw.prompt_tokens,
            raw.completion_tokens,
            latency,
            self.provider.cache_model_id,
            batch_size=batch_size,
        )
        self.cache.put(slot.key, slot.request_json, self.provider.kind, self.provider.revision, sample)
        self._count(sample, summary.model(self.spec))
        return sample

    def _count(self, sample: Sample, stats: ModelStats, batch: bool = False) -> None:
        """A fresh sample's tokens and estimated cost (``batch``: at the batch rate) in the run's accounting."""
        stats.samples += 1
        stats.prompt_tokens += sample.prompt_tokens
        stats.completion_tokens += sample.completion_tokens
        spec = f"{self.provider.kind}:{self.provider.model}"
        cost = self.prices.cost(spec, sample.prompt_tokens, sample.completion_tokens, batch=batch)
        stats.cost_usd = None if cost is None or stats.cost_usd is None else stats.cost_usd + cost

    def _fail(self, slot: _Slot, reason: str, message: str, attempts: int, summary: RunSummary) -> CallFailure:
        message = redact(message)
        self.cache.record_failure(
            slot.key, self.provider.kind, self.provider.cache_model_id, slot.index, reason, message, attempts
        )
        summary.model(self.spec).failures[reason] += 1
        return CallFailure(slot.index, reason, message, attempts, self.provider.cache_model_id)

    def _too_long(self, e: BaseException) -> bool:
        """True when ``e`` asks to wait longer than ``max_retry_after``: not worth retrying."""
        retry_after = getattr(e, "retry_after", None)
        return retry_after is not None and retry_after > self.max_retry_after

    def _retryable(self, e: BaseException) -> bool:
        return isinstance(e, CallError) and e.retryable and not self._too_long(e)

    def _failure_message(self, e: CallError, attempts: int) -> str:
        """``spec [at url]: reason after k attempt(s): detail``, naming the model and endpoint once."""
        detail = str(e)
        prefix = f"{self.provider.spec}: "
        if detail.startswith(prefix):  # adapters prefix their messages with the spec for direct callers
            detail = detail[len(prefix) :]
        url = getattr(self.provider, "base_url", None)
        where = f" at {url}" if url and str(url).rstrip("/") not in detail else ""
        msg = f"{self.spec}{where}: {e.reason} after {attempts} attempt(s): {detail}"
        if self._too_long(e):
            msg += (
                f"; the server asked to wait {_secs(e.retry_after or 0.0)} s (Retry-After), more than the cap of "
                f"{_secs(self.max_retry_after)} s, so the call was not retried (raise the cap with "
                "LLM(max_retry_after=...) or --max-retry-after, or rerun later: successes are cached)"
            )
        return msg

    def _wait(self, retry_state: RetryCallState) -> float:
        exc = retry_state.outcome.exception()  # type: ignore[union-attr]  # a wait follows an attempt: it has an outcome
        retry_after = getattr(exc, "retry_after", None)
        if retry_after is not None:
            return retry_after + random.uniform(0, 0.1 * max(retry_after, 0.1))
        return wait_exponential_jitter(initial=self.backoff_initial, max=self.backoff_max)(retry_state)

    async def _run_api(
        self,
        requests: Sequence[ChatRequest],
        missing: list[_Slot],
        done: Callable[[_Slot, Sample | CallFailure], None],
        summary: RunSummary,
    ) -> None:
        by_req: dict[int, list[_Slot]] = defaultdict(list)
        for slot in missing:
            by_req[slot.req].append(slot)
        units: list[list[_Slot]] = []
        for slots in by_req.values():
            step = self.provider.max_n if self.provider.native_n else 1
            units += [slots[i : i + step] for i in range(0, len(slots), step)]
        sem = asyncio.Semaphore(self.concurrency)
        rpm = AsyncLimiter(self.requests_per_minute, 60) if self.requests_per_minute else None
        tpm = AsyncLimiter(self.tokens_per_minute, 60) if self.tokens_per_minute else None
        tasks = [
            asyncio.ensure_future(self._run_unit(requests[u[0].req], u, sem, rpm, tpm, done, summary)) for u in units
        ]
        try:
            await asyncio.gather(*tasks)
        except BaseException:  # a fault that stops the run (a full disk): no further calls, one error
            for t in tasks:
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)  # every outcome read: none logged at shutdown
            raise

    async def _call_once(
        self,
        req: ChatRequest,
        params: GenerationParams,
        n: int,
        tokens: int,
        limits: tuple[asyncio.Semaphore, AsyncLimiter | None, AsyncLimiter | None],
        stats: ModelStats,
    ) -> tuple[list[RawCompletion], float]:
        """One attempt of a call for ``n`` samples, within ``limits`` (the concurrency semaphore, the requests
        and tokens per minute): (the provider's completions, the latency in seconds)."""
        sem, rpm, tpm = limits
        async with sem:
            if rpm:
                await rpm.acquire()
            if tpm:
                await tpm.acquire(min(tokens, self.tokens_per_minute or tokens))
            stats.calls += 1
            t0 = time.monotonic()
            try:
                raws = await asyncio.wait_for(
                    self.provider.complete(req.messages, params, n, self.timeout), self.timeout * 1.5 + 1
                )
            except asyncio.TimeoutError as e:
                raise CallTimeout(f"no answer within {self.timeout:.0f} s") from e
            latency = time.monotonic() - t0
            if len(raws) != n:
                raise MalformedResponse(f"asked for {n} samples, got {len(raws)}")
        return raws, latency

    async def _run_unit(
        self,
        req: ChatRequest,
        slots: list[_Slot],
        sem: asyncio.Semaphore,
        rpm: AsyncLimiter | None,
        tpm: AsyncLimiter | None,
        done: Callable[[_Slot, Sample | CallFailure], None],
        summary: RunSummary,
    ) -> None:
        stats = summary.model(self.spec)
        params = req.params
        if params.seed is not None:
            params = replace(params, seed=params.seed + slots[0].index)
        n = len(slots)
        tokens = _estimate_tokens(req.messages, params, n)
        attempts = 0
        try:
            async for attempt in AsyncRetrying(
                stop=stop_after_attempt(self.max_attempts),
                wait=self._wait,
                retry=retry_if_exception(self._retryable),
                reraise=True,
            ):
                with attempt:
                    attempts = attempt.retry_state.attempt_number
                    if attempts > 1:
                        stats.retries += 1
                    raws, latency = await self._call_once(req, params, n, tokens, (sem, rpm, tpm), stats)
        except CallError as e:
            msg = self._failure_message(e, attempts)
            for slot in slots:
                done(slot, self._fail(slot, e.reason, msg, attempts, summary))
        except Exception as e:  # an adapter bug or an unexpected SDK error: recorded, never lost
            log.exception("unexpected error from %s", redact(self.spec))
            for slot in slots:
                done(slot, self._fail(slot, "other", f"{type(e).__name__}: {e}", attempts, summary))
        else:  # outside the try: a cache that cannot be written (a full disk) stops the run, it is not a failed call
            for slot, raw in zip(slots, raws):
                done(slot, self._store(slot, raw, latency, summary))

    async def _run_in_process(
        self,
        requests: Sequence[ChatRequest],
        missing: list[_Slot],
        done: Callable[[_Slot, Sample | CallFailure], None],
        summary: RunSummary,
        partial: Callable[[float], None] | None = None,
    ) -> None:
        """The missing samples in batches; ``partial(part)`` gets the provider's progress within a batch."""
        stats = summary.model(self.spec)
        groups: dict[GenerationParams, list[_Slot]] = defaultdict(list)
        for slot in missing:
            groups[requests[slot.req].params].append(slot)
        for params, slots in groups.items():
            for i in range(0, len(slots), self.provider.batch_size):
                batch = slots[i : i + self.provider.batch_size]
                items = [BatchItem(requests[s.req].messages, params, s.index) for s in batch]
                stats.batches += 1
                t0 = time.monotonic()
                try:
                    raws = await asyncio.to_thread(self._complete_batch, items, partial)
                    if len(raws) != len(items):
                        raise MalformedResponse(f"batch of {len(items)} gave {len(raws)} completions")
                except Exception as e:
                    log.exception("batch failed on %s", redact(self.spec))
                    reason = e.reason if isinstance(e, CallError) else "other"
                    for s in batch:
                        done(s, self._fail(s, reason, f"{type(e).__name__}: {e}", 1, summary))
                    continue
                latency = time.monotonic() - t0  # the batch's wall time: every response of it took that long
                for s, raw in zip(batch, raws):
                    done(s, self._store(s, raw, latency, summary, batch_size=len(items)))

    def _complete_batch(self, items: list[BatchItem], partial: Callable[[float], None] | None) -> list[RawCompletion]:
        """``complete_batch`` with per-token progress where the provider reports it (hf:, local:)."""
        if partial is None:
            return self.provider.complete_batch(items)
        return self.provider.complete_batch(items, progress=partial)


#: the completion tokens a request without ``max_tokens`` is estimated at (rate limits, the preflight's plan)
ESTIMATED_COMPLETION_TOKENS = 512


def estimate_prompt_tokens(messages: Sequence[Message]) -> int:
    """A prompt's tokens, estimated: four characters a token, four tokens a message."""
    return sum(len(m.content) for m in messages) // 4 + 4 * len(messages)


def estimate_completion_tokens(params: GenerationParams) -> int:
    """One sample's completion tokens at most: its ``max_tokens`` (else ``ESTIMATED_COMPLETION_TOKENS``)."""
    return params.max_tokens or ESTIMATED_COMPLETION_TOKENS


def _estimate_tokens(messages: tuple[Message, ...], params: GenerationParams, n: int) -> int:
    return estimate_prompt_tokens(messages) + n * estimate_completion_tokens(params)


def _secs(x: float) -> str:
    """Seconds as short text: 86400, 0.5, 600.4."""
    return f"{x:.1f}".rstrip("0").rstrip(".")
