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
never submits (pays for) them twice. Submitting is idempotent too: each submission is recorded in the ledger (its
tag, which goes into the batch's metadata, and the uploaded file's id) before the request that creates the batch; a
submission whose reply was lost (a dropped connection, a command killed while the request was in flight) is looked
for in the provider's list of batches, in the same run and by the rerun, and the batch found is waited for, not
submitted again. A request that fails inside a batch, or gets no answer because its batch expired or was cancelled,
or whose result line does not parse or names it twice (``batch_duplicate_id``: never another request's answer), is a
failed call (a ``CallFailure`` with its reason, a row in the cache's failure table) and its ledger row goes, so the
rerun command submits only those again. Result lines naming no request of the batch are reported and ignored. Ledger
rows that do not read as written are one error naming the cache and the batch (``LedgerDamaged``), never polled.

Two ways to use it:

- ``LLM(spec, batch=True).generate(requests)`` alone: each ``generate`` submits its missing samples as batches
  and waits for them.
- ``phr.api.run(plan)`` of a config with ``batch: true`` opens a deferring :class:`BatchSession`: a
  missing sample ends the call as a missing value of reason ``batch_pending``; when the operation returns, the
  session submits everything it collected, waits, and runs the operation again (its next step's calls, e.g. the
  judge of answers that just arrived, are collected the same way) until a pass leaves nothing pending. The last
  pass finds every answer in the cache. The call table of the run is printed once, when the session ends: it counts
  the batches, the answers they gave and their cost at the batch rate (``LLM`` hands the session its table instead
  of printing it after each pass).

Only ``openai:``, ``anthropic:`` and ``google:`` models have a batch API; any other with ``--batch`` is a problem
the preflight names (:func:`require_batch`), never a silent fallback to one call at a time.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import logging
import os
import re
import sys
import threading
import time
import uuid
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from phr.config.defaults import BATCH_POLL_S
from phr.core.aio import run_sync
from phr.core.errors import PHRError
from phr.llm.cache import BatchIntent, CallCache, LedgerDamaged, LedgerRow
from phr.llm.errors import CallError
from phr.llm.providers.base import BatchLine, BatchStatus, Provider, RawCompletion
from phr.llm.summary import RunSummary
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


class BatchSubmitFailed(PHRError):
    """Submitting a batch failed; its samples stay in the ledger where the provider may have created the batch."""


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
        #: the batch that answered (or failed) each key of ``resolved`` and ``failed``
        self.batch_of: dict[str, str] = {}
        #: batches this session created (one found after its creation's reply was lost included; a batch of an
        #: earlier run, polled or adopted, is not)
        self.submitted: list[str] = []
        #: the call tables of the current pass, printed as one when the session ends (``show_summary``)
        self._tables: list[RunSummary] = []

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

    # ---- the call table ---------------------------------------------------------------------------------------

    def show_summary(self, summary: RunSummary) -> None:
        """Keep a call table of this pass for :meth:`print_summary` (printed once, after the batches)."""
        with self._lock:
            if not any(t is summary for t in self._tables):
                self._tables.append(summary)

    def print_summary(self) -> None:
        """The call tables of the last pass as one, once (a pass before it is superseded by its rerun)."""
        with self._lock:
            tables, self._tables = self._tables, []
        merged = RunSummary()
        for t in tables:
            merged.merge(t)
        merged.print()

    # ---- submitting and waiting -------------------------------------------------------------------------------

    def process(self) -> None:
        """Submit what is queued, wait for every batch it is in, store the answers (blocking)."""
        run_sync(self.aprocess())

    async def aprocess(self) -> None:
        with self._lock:
            groups, self._groups = list(self._groups.values()), {}
            self._tables = []  # the pass that queued these samples runs again: its rerun's tables are the ones shown
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
        earlier: dict[str, list[Pending]] = {}  # batch id or submission tag -> its samples, from the ledger
        for item in group.items.values():
            bid = cache.ledger_batch(item.key, spec, endpoint)
            if bid is None:
                new.append(item)
            else:
                earlier.setdefault(bid, []).append(item)
        intents: list[BatchIntent] = []
        for bid in earlier:  # every row read and checked before anything is polled or submitted
            intent = cache.ledger_intent(bid) if isinstance(bid, str) else None
            _check_ledger(llm, bid, intent)
            if intent is not None:
                intents.append(intent)
            else:
                waiting[bid] = None
                self.echo(
                    f"[batch] {spec}: batch {bid} was submitted by an earlier run: polling it (not submitted again)"
                )
        for intent in sorted(intents, key=lambda i: i.created_at):
            bid = await self._resume(llm, intent)
            if bid is None:
                new += earlier[intent.tag]
            else:
                waiting[bid] = None
        for lines, rows in _chunks(provider, _lines(provider, new)):
            bid = await self._submit(llm, lines, rows)
            waiting[bid] = None
            self.echo(f"[batch] {spec}: batch {bid} submitted: {len(lines)} request(s), {len(rows)} sample(s)")
        await self._wait(llm, list(waiting))

    async def _submit(self, llm: LLM, lines: list[BatchLine], rows: list[LedgerRow]) -> str:
        """Submit one batch, idempotently: the submission (its tag, then its uploaded file) is in the ledger before
        the request that creates the batch; a create whose reply is lost is looked for in the provider's list."""
        provider, cache = llm.provider, llm.cache
        spec, endpoint = provider.spec, _endpoint(provider)
        intent = BatchIntent(f"phr-{uuid.uuid4().hex}", spec, endpoint, None, len(lines), time.time())
        cache.ledger_intend(intent, rows)  # before any request: a killed command finds it on the rerun
        try:
            file_id = await provider.upload_batch(lines)
        except CallError as e:  # no batch can exist without its file
            cache.ledger_forget(intent.tag)
            raise _submit_failed(spec, e, kept=False) from e
        if file_id:
            cache.ledger_uploaded(intent.tag, file_id)
            intent = replace(intent, file_id=file_id)
        try:
            bid = await provider.create_batch(lines, intent.tag, file_id)
        except CallError as e:
            if not e.retryable:  # refused: nothing was created
                cache.ledger_forget(intent.tag)
                raise _submit_failed(spec, e, kept=False) from e
            found = await self._find(llm, intent)  # the reply may be lost after the batch was made: look for it
            if found is None:
                raise _submit_failed(spec, e, kept=True) from e
            bid = found
            self.echo(
                f"[batch] {spec}: the reply to the batch's creation was lost ({e.reason}); batch {bid} was created "
                "from this submission: polling it (not submitted again)"
            )
        cache.ledger_created(intent.tag, bid)  # before any wait: a killed command resumes this batch
        self.submitted.append(bid)
        return bid

    async def _find(self, llm: LLM, intent: BatchIntent) -> str | None:
        """The batch the submission ``intent`` created, from the provider's list (None: there is none)."""
        cache = llm.cache
        known = cache.ledger_batch_ids(intent.spec, intent.endpoint) - {intent.tag}
        try:
            return await llm.provider.find_batch(
                intent.tag, file_id=intent.file_id, lines=intent.lines, since=intent.created_at, exclude=known
            )
        except CallError as e:
            raise BatchSubmitFailed(
                f"{intent.spec}: a batch submission of an earlier run has no batch id (its reply was lost) and the "
                f"provider's list of batches cannot be read to find it: {e}; rerun the command to look again (it "
                "submits nothing before it knows)"
            ) from e

    async def _resume(self, llm: LLM, intent: BatchIntent) -> str | None:
        """A submission an earlier run recorded without learning its batch id: the batch it created (adopted), one
        created now from its uploaded file, or None (no batch: its samples are submitted as new ones)."""
        provider, cache, spec = llm.provider, llm.cache, llm.provider.spec
        bid = await self._find(llm, intent)
        if bid is not None:
            cache.ledger_created(intent.tag, bid)
            self.echo(
                f"[batch] {spec}: batch {bid} was created by an earlier run whose reply was lost: polling it (not "
                "submitted again)"
            )
            return bid
        if intent.file_id:  # uploaded, never created: create it from that file (its rows are in the ledger)
            try:
                bid = await provider.create_batch([], intent.tag, intent.file_id)
            except CallError as e:
                if e.retryable:
                    raise _submit_failed(spec, e, kept=True) from e
                cache.ledger_forget(intent.tag)  # the file is gone or refused: the samples go as new ones
                return None
            cache.ledger_created(intent.tag, bid)
            self.submitted.append(bid)
            n = len(cache.ledger_rows(bid))
            self.echo(
                f"[batch] {spec}: batch {bid} submitted from the file an earlier run uploaded: {intent.lines} "
                f"request(s), {n} sample(s)"
            )
            return bid
        cache.ledger_forget(intent.tag)  # the earlier run created no batch: submitted as new samples
        return None

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
        """Store the answers of batch ``bid``; record every sample without one as failed; clear its ledger rows;
        report result lines that name no request of the batch."""
        rows = llm.cache.ledger_rows(bid)
        stored = Counter[str]()
        for row in rows:
            res = results.get(row.custom_id)
            self.batch_of[row.key] = bid
            if isinstance(res, list) and 0 <= row.position < len(res):
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
        strays = sorted(set(results) - {r.custom_id for r in rows})
        if strays:
            shown = ", ".join(strays[:5]) + (f" and {len(strays) - 5} more" if len(strays) > 5 else "")
            self.echo(
                f"[batch] {llm.provider.spec}: batch {bid}: {len(strays)} result line(s) name no request of this "
                f"batch (ignored, nothing stored for them): {shown}"
            )

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


def _submit_failed(spec: str, e: CallError, kept: bool) -> BatchSubmitFailed:
    if kept:
        then = (
            "the provider may have created the batch all the same: rerun the command; it looks for that batch in "
            "the provider's list first and submits again only if there is none (never twice)"
        )
    else:
        then = "no batch was created; rerun the command to submit it again"
    return BatchSubmitFailed(f"{spec}: submitting a batch failed ({e.reason}): {e}; {then}")


_KEY = re.compile(r"[0-9a-f]{64}")


def _check_ledger(llm: LLM, bid: Any, intent: BatchIntent | None) -> None:
    """LedgerDamaged naming the cache and ``bid`` unless the ledger's rows of ``bid`` (a batch id, or the tag of a
    submission ``intent``) read as the toolkit wrote them."""
    what = _ledger_damage(llm.provider, bid, intent, llm.cache.ledger_rows(bid))
    if what:
        raise LedgerDamaged(llm.cache.path, bid, llm.provider.spec, what)


def _ledger_damage(provider: Provider, bid: Any, intent: BatchIntent | None, rows: list[LedgerRow]) -> str | None:
    """What is wrong with the ledger rows of ``bid``, or None."""
    if intent is not None:
        what = _intent_damage(intent)
        if what:
            return what
    elif not isinstance(bid, str) or not re.fullmatch(provider.batch_id_pattern, bid):
        return f"{bid!r} is not a {provider.kind} batch id"
    by_line: dict[Any, list[LedgerRow]] = defaultdict(list)
    for n, r in enumerate(rows, 1):
        what = _row_damage(r)
        if what:
            return f"row {n}: {what}"
        by_line[r.custom_id].append(r)
    most = provider.max_n if provider.native_n else 1
    for cid, line in by_line.items():
        places = sorted(r.position for r in line)
        if places != list(range(len(places))) or len(places) > most:
            return f"request {cid}: its samples' places {places} are not 0 to {len(places) - 1} (at most {most})"
        if next(r for r in line if r.position == 0).key[:64] != cid:
            return f"request {cid}: the id is not its first sample's key"
    return None


def _intent_damage(i: BatchIntent) -> str | None:
    if type(i.lines) is not int or i.lines < 1 or not isinstance(i.created_at, int | float):
        return f"its submission's record is not one the toolkit wrote (lines {i.lines!r}, time {i.created_at!r})"
    if i.file_id is not None and not isinstance(i.file_id, str):
        return f"its submission's file id {i.file_id!r} is not one"
    return None


def _row_damage(r: LedgerRow) -> str | None:
    if not isinstance(r.key, str) or not _KEY.fullmatch(r.key):
        return f"{r.key!r} is not a cache key"
    if not isinstance(r.request, str) or hashlib.sha256(r.request.encode()).hexdigest() != r.key:
        return "its request is not the one its key was made from"
    if not isinstance(r.custom_id, str) or not 0 < len(r.custom_id) <= 64:
        return f"{r.custom_id!r} is not a request id"
    if type(r.position) is not int or r.position < 0:
        return f"{r.position!r} is not a place among its request's samples"
    if type(r.index) is not int or r.index < 0:
        return f"{r.index!r} is not a sample index"
    if not isinstance(r.created_at, int | float):
        return f"{r.created_at!r} is not a time"
    return None


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


def show_summary(summary: RunSummary) -> None:
    """Print ``summary``'s call table; in a batch session (a command with --batch), hand it to the session instead,
    which prints the tables of its last pass as one, after the batches."""
    session = active_session()
    if session is None:
        summary.print()
    else:
        session.show_summary(summary)


@contextlib.contextmanager
def batch_session(**kw: Any) -> Iterator[BatchSession]:
    """Open a session: every ``LLM`` made in it with ``batch`` unset sends its misses through the batch API (one
    without a batch API is refused: BatchUnsupported); they wait in the session for ``process``."""
    global _ACTIVE
    session = BatchSession(**kw)
    previous, _ACTIVE = _ACTIVE, session
    try:
        yield session
    finally:
        _ACTIVE = previous
        session.print_summary()  # once, after the batches


def pending_failure(llm: LLM, item: Pending) -> CallFailure:
    return CallFailure(
        item.index,
        BATCH_PENDING,
        f"{llm.spec}: queued for the provider's batch API; answered when its batch ends",
        0,
        llm.provider.cache_model_id,
    )
