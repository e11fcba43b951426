"""Batch mode (``--batch``): hosted calls through the providers' batch APIs, at about half the token price.

A call that misses the call cache is not sent on its own: its samples go into a provider batch (OpenAI: a JSONL
file of ``/v1/chat/completions`` requests, ``files.create`` + ``batches.create``; Anthropic:
``messages.batches.create``; Google: ``batches.create`` with inlined requests), within the provider's limits of
requests and bytes per batch. The batch ids go into the batch ledger (``batch_requests`` in the call cache file,
keyed by the samples' cache keys) before the command waits; then it polls, printing one line per batch and poll::

    [batch] openai:gpt-4o: batch batch_abc submitted: 120 request(s), 1200 sample(s)
    [batch] openai:gpt-4o: batch batch_abc: in_progress, 120 request(s): 37 completed, 0 failed

and stores the answers in the call cache, where every later run (with or without ``--batch``) finds them. A
command killed while waiting finds its samples in the ledger when it is run again and polls the same batches: it
never submits (pays for) them twice. A request that fails inside a batch, or gets no answer because its batch
expired or was cancelled, is a failed call (a ``CallFailure`` with its reason, a row in the cache's failure table)
and its ledger row goes, so the rerun command submits only those again.

Two ways to use it:

- ``LLM(spec, batch=True).generate(requests)`` alone: each ``generate`` submits its missing samples as batches
  and waits for them.
- ``phr.api.run(plan)`` of a config with ``batch: true`` opens a deferring :class:`BatchSession`: a
  missing sample ends the call as a missing value of reason ``batch_pending``; when the operation returns, the
  session submits everything it collected, waits, and runs the operation again (its next step's calls, e.g. the
  judge of answers that just arrived, are collected the same way) until a pass leaves nothing pending. The last
  pass finds every answer in the cache.

Only ``openai:``, ``anthropic:`` and ``google:`` models have a batch API; any other with ``--batch`` is a problem
the preflight names (:func:`require_batch`), never a silent fallback to one call at a time.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import sys
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from phr.config.defaults import BATCH_POLL_S
from phr.core.aio import run_sync
from phr.core.errors import PHRError
from phr.llm.cache import CallCache, LedgerRow
from phr.llm.errors import CallError
from phr.llm.providers.base import BatchLine, BatchStatus, Provider, RawCompletion
from phr.llm.types import CallFailure, GenerationParams, Message, Sample


class LLM(Protocol):
    """What a batch needs of the ``phr.llm.LLM`` that queued it (its provider, call cache and spec)."""

    spec: str
    provider: Provider
    cache: CallCache


log = logging.getLogger("phr.llm")

#: the reason of a sample queued for a batch and not answered yet (a missing value of the pass that queued it)
BATCH_PENDING = "batch_pending"
#: seconds between two polls ($PHR_BATCH_POLL_S; default phr.config.defaults.BATCH_POLL_S)
POLL_ENV = "PHR_BATCH_POLL_S"
#: the provider kinds with a batch API
BATCH_KINDS = ("openai", "anthropic", "google")
#: the reason of a sample whose batch ended without its answer, by the batch's outcome
_NO_ANSWER = {"expired": "batch_expired", "cancelled": "batch_cancelled", "failed": "batch_failed"}


class BatchUnsupported(PHRError, ValueError):
    """--batch for a model without a batch API, or without a call cache to put the answers in."""


def no_batch_api(spec: str) -> str:
    return (
        f"{spec}: no batch API: --batch works for openai:, anthropic: and google: models only (not "
        "openai-compatible servers, hf:, local: or vllm:); run this model without --batch"
    )


def require_batch(provider: Provider) -> None:
    """Raise BatchUnsupported naming ``provider``'s spec unless it has a batch API."""
    if not provider.batch_api:
        raise BatchUnsupported(no_batch_api(provider.spec))


def poll_seconds() -> float:
    try:
        return max(0.0, float(os.environ.get(POLL_ENV, BATCH_POLL_S)))
    except ValueError:
        return BATCH_POLL_S


#: the config fields that name models a command sends prompts to (a comma-separated list for ``judges``); the
#: reference scorer of PHRBench is not one (it scores text in process, it is never called)
CALLED_ROLES = ("model", "generator", "judge", "judges", "grader", "paraphraser", "qa_model")


def _called_specs(cfg: Any) -> list[str]:
    from phr.config.defaults import is_no_model

    specs: list[str] = []
    for role in CALLED_ROLES:
        value = getattr(cfg, role, None)
        if isinstance(value, str):
            specs += [s.strip() for s in value.split(",") if ":" in s and not is_no_model(s.strip())]
    return specs


def plan_batch(pf: Any, cfg: Any = None) -> None:
    """A batch run's plan (``pf``: its ``phr.llm.preflight.Preflight``): every model the plan has calls for, and every model ``cfg`` names in a calling role,
    must have a batch API (else a problem naming it); the calls are priced at the batch rate, and a note says so."""
    for spec, usage in pf.usage.items():
        if spec.partition(":")[0] in BATCH_KINDS:
            usage.batch = True
        else:
            pf.problem(no_batch_api(spec))
    for spec in _called_specs(cfg):
        if spec.partition(":")[0] not in BATCH_KINDS and spec not in pf.usage:
            pf.problem(no_batch_api(spec))
    pf.note(
        "batch mode: calls not in the cache go through the providers' batch APIs, priced at the batch rate "
        "(phr/llm/prices.toml [batch]); answers can take up to 24 h; the batch ids are kept in the call cache, so "
        "a command stopped while waiting resumes the same batches when run again"
    )


@dataclass(frozen=True)
class Pending:
    """One sample waiting for a batch: its cache key and canonical request, its index, prompt and parameters."""

    key: str
    request_json: str
    index: int
    messages: tuple[Message, ...]
    params: GenerationParams


@dataclass
class _Group:
    """The samples of one model, endpoint and call cache: they go into the same batches."""

    llm: LLM
    items: dict[str, Pending] = field(default_factory=dict)


def _endpoint(provider: Provider) -> str | None:
    from phr.llm.providers.openai_api import clean_url

    url = getattr(provider, "base_url", None)
    return clean_url(str(url)) if url else None


def _stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


class BatchSession:
    """Samples collected for the batch APIs, and the outcomes of the batches this session waited for."""

    #: called with every poll's status after its line is printed (tests stop a command there)
    on_poll: Callable[[BatchStatus], None] | None = None

    def __init__(self, poll_s: float | None = None, echo: Callable[[str], None] | None = None):
        self.poll_s = poll_seconds() if poll_s is None else poll_s
        self.echo = echo or _stderr
        self._lock = threading.Lock()
        self._groups: dict[tuple, _Group] = {}
        self.resolved: dict[str, Sample] = {}
        self.failed: dict[str, CallFailure] = {}
        #: batches this session submitted (a resumed one is not counted)
        self.submitted: list[str] = []

    # ---- collecting -------------------------------------------------------------------------------------------

    def outcome(self, key: str) -> Sample | CallFailure | None:
        """What a batch of this session gave for ``key`` (None: nothing yet)."""
        return self.resolved.get(key) or self.failed.get(key)

    def add(self, llm: LLM, items: list[Pending]) -> None:
        """Queue ``items`` of ``llm`` (those this session has an outcome for are left out)."""
        group_key = (str(llm.cache.path), llm.provider.spec, _endpoint(llm.provider))
        with self._lock:
            group = self._groups.setdefault(group_key, _Group(llm))
            for item in items:
                if self.outcome(item.key) is None:
                    group.items.setdefault(item.key, item)

    @property
    def pending(self) -> int:
        with self._lock:
            return sum(len(g.items) for g in self._groups.values())

    # ---- submitting and waiting -------------------------------------------------------------------------------

    def process(self) -> None:
        """Submit what is queued, wait for every batch it is in, store the answers (blocking)."""
        run_sync(self.aprocess())

    async def aprocess(self) -> None:
        with self._lock:
            groups, self._groups = list(self._groups.values()), {}
        for group in groups:
            try:
                await self._process(group)
            finally:
                await group.llm.provider.aclose()

    async def _process(self, group: _Group) -> None:
        llm = group.llm
        provider, cache = llm.provider, llm.cache
        spec, endpoint = provider.spec, _endpoint(provider)
        waiting: dict[str, None] = {}
        new: list[Pending] = []
        for item in group.items.values():
            bid = cache.ledger_batch(item.key, spec, endpoint)
            if bid is None:
                new.append(item)
            elif bid not in waiting:
                waiting[bid] = None
                self.echo(
                    f"[batch] {spec}: batch {bid} was submitted by an earlier run: polling it (not submitted again)"
                )
        for lines, rows in _chunks(provider, _lines(provider, new)):
            bid = await provider.submit_batch(lines)
            cache.ledger_add(bid, spec, endpoint, rows)  # before any wait: a killed command resumes this batch
            self.submitted.append(bid)
            waiting[bid] = None
            self.echo(f"[batch] {spec}: batch {bid} submitted: {len(lines)} request(s), {len(rows)} sample(s)")
        await self._wait(llm, list(waiting))

    async def _wait(self, llm: LLM, batch_ids: list[str]) -> None:
        left = list(batch_ids)
        while left:
            for bid in list(left):
                status = await self._poll(llm, bid)
                if status is None or status.done:
                    left.remove(bid)
            if left:
                await asyncio.sleep(self.poll_s)

    async def _poll(self, llm: LLM, bid: str) -> BatchStatus | None:
        """One poll of ``bid`` and its line; a finished batch's answers stored. None: the batch cannot be read
        (its samples recorded as failed)."""
        spec = llm.provider.spec
        try:
            status = await llm.provider.poll_batch(bid)
        except CallError as e:
            if e.retryable:
                self.echo(f"[batch] {spec}: batch {bid}: polling failed ({e.reason}), trying again: {e}")
                return BatchStatus(bid, "unknown", False)
            self._settle(llm, bid, {}, e.reason, f"{spec}: batch {bid} cannot be read: {e}")
            return None
        if status.total is None:  # an API that gives no counts while it runs: the lines submitted
            status = replace(status, total=len({r.custom_id for r in llm.cache.ledger_rows(bid)}))
        self.echo(_line(spec, status))
        if self.on_poll is not None:
            self.on_poll(status)
        if status.done:
            await self._collect(llm, status)
        return status

    async def _collect(self, llm: LLM, status: BatchStatus) -> None:
        provider, bid = llm.provider, status.batch_id
        expected = Counter(r.custom_id for r in llm.cache.ledger_rows(bid))
        reason = _NO_ANSWER.get(status.outcome or "", "batch_no_answer")
        why = f"{provider.spec}: batch {bid} {status.status}: no answer for this request (rerun to submit it again)"
        try:
            results = await provider.batch_results(bid, dict(expected))
        except CallError as e:
            results, reason, why = {}, e.reason, f"{provider.spec}: batch {bid}: its answers cannot be read: {e}"
        self._settle(llm, bid, results, reason, why)

    def _settle(self, llm: LLM, bid: str, results: dict, reason: str, why: str) -> None:
        """Store the answers of batch ``bid``; record every sample without one as failed; clear its ledger rows."""
        rows = llm.cache.ledger_rows(bid)
        stored = Counter[str]()
        for row in rows:
            res = results.get(row.custom_id)
            if isinstance(res, list) and row.position < len(res):
                self.resolved[row.key] = self._store(llm, row, res[row.position], len(res))
                stored["stored"] += 1
            else:
                r, message = (
                    (res.reason, f"{llm.spec}: batch {bid}: {res}") if isinstance(res, CallError) else (reason, why)
                )
                self.failed[row.key] = self._fail(llm, row, r, message)
                stored[r] += 1
        llm.cache.ledger_clear([r.key for r in rows])
        ok = stored.pop("stored", 0)
        failed = f", {sum(stored.values())} failed ({dict(stored)})" if stored else ""
        self.echo(f"[batch] {llm.provider.spec}: batch {bid}: {ok} answer(s) stored in the call cache{failed}")

    def _store(self, llm: LLM, row: LedgerRow, raw: RawCompletion, batch_size: int) -> Sample:
        p = llm.provider
        sample = Sample(
            row.index,
            raw.text,
            raw.finish_reason,
            raw.prompt_tokens,
            raw.completion_tokens,
            max(0.0, time.time() - row.created_at),  # from the batch's submission
            p.cache_model_id,
            batch_size=batch_size,
        )
        llm.cache.put(row.key, row.request, p.kind, row.revision, sample)
        return sample

    def _fail(self, llm: LLM, row: LedgerRow, reason: str, message: str) -> CallFailure:
        from phr.core.secrets import redact

        p = llm.provider
        message = redact(message)
        llm.cache.record_failure(row.key, p.kind, p.cache_model_id, row.index, reason, message, 1)
        return CallFailure(row.index, reason, message, 1, p.cache_model_id)


def _line(spec: str, s: BatchStatus) -> str:
    def n(x: int | None) -> str:
        return "?" if x is None else str(x)

    return f"[batch] {spec}: batch {s.batch_id}: {s.status}, {n(s.total)} request(s): {n(s.completed)} completed, {n(s.failed)} failed"


def _lines(provider: Provider, items: list[Pending]) -> list[tuple[BatchLine, list[LedgerRow]]]:
    """The batch lines of ``items``, with the ledger rows of their samples. Samples of one prompt and parameters
    with consecutive indices share a line where the provider returns several samples per request (OpenAI ``n``,
    Gemini ``candidate_count``), the seed offset by the line's first index as in a direct call."""
    by_prompt: dict[tuple, list[Pending]] = defaultdict(list)
    for item in items:
        by_prompt[(item.messages, item.params)].append(item)
    step = provider.max_n if provider.native_n else 1
    out = []
    for group in by_prompt.values():
        group.sort(key=lambda p: p.index)
        for i in range(0, len(group), step):
            unit = group[i : i + step]
            params = unit[0].params
            if params.seed is not None:
                params = replace(params, seed=params.seed + unit[0].index)
            cid = unit[0].key[:64]
            rows = [
                LedgerRow(p.key, cid, pos, p.index, p.request_json, provider.revision) for pos, p in enumerate(unit)
            ]
            out.append((BatchLine(cid, unit[0].messages, params, len(unit)), rows))
    return out


def _chunks(
    provider: Provider, lines: list[tuple[BatchLine, list[LedgerRow]]]
) -> Iterator[tuple[list[BatchLine], list[LedgerRow]]]:
    """``lines`` cut into batches within the provider's limits of requests and bytes."""
    batch: list[BatchLine] = []
    rows: list[LedgerRow] = []
    size = 0
    for line, line_rows in lines:
        n = len(json.dumps(provider.batch_line(line), ensure_ascii=False).encode()) + 1
        if batch and (len(batch) >= provider.batch_max_requests or size + n > provider.batch_max_bytes):
            yield batch, rows
            batch, rows, size = [], [], 0
        batch.append(line)
        rows.extend(line_rows)
        size += n
    if batch:
        yield batch, rows


# ---- the session of phr.api.run ------------------------------------------------------------------------------------

_ACTIVE: BatchSession | None = None


def active_session() -> BatchSession | None:
    return _ACTIVE


@contextlib.contextmanager
def batch_session(**kw: Any) -> Iterator[BatchSession]:
    """Open a session: every ``LLM`` made in it with ``batch`` unset sends its misses through the batch API (one
    without a batch API is refused: BatchUnsupported); they wait in the session for ``process``."""
    global _ACTIVE
    previous, _ACTIVE = _ACTIVE, BatchSession(**kw)
    try:
        yield _ACTIVE
    finally:
        _ACTIVE = previous


def pending_failure(llm: LLM, item: Pending) -> CallFailure:
    return CallFailure(
        item.index,
        BATCH_PENDING,
        f"{llm.spec}: queued for the provider's batch API; answered when its batch ends",
        0,
        llm.provider.cache_model_id,
    )
