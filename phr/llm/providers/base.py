"""What every provider adapter implements."""

from __future__ import annotations

import json
import logging
import os
import re
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, runtime_checkable

from phr.config.defaults import CALL_TIMEOUT_S
from phr.core.errors import PHRError
from phr.core.secrets import redact, require_env
from phr.core.text import clip
from phr.llm.errors import (
    BatchDuplicateId,
    CallError,
    CallTimeout,
    ConnectionFailed,
    MalformedResponse,
    from_http_status,
    parse_retry_after,
)
from phr.llm.types import GenerationParams, Message

if TYPE_CHECKING:  # asyncio is imported where it runs (a loop is running by then): the CLI starts faster
    import asyncio

T = TypeVar("T")


@dataclass(frozen=True)
class RawCompletion:
    text: str
    finish_reason: str | None
    prompt_tokens: int
    completion_tokens: int


@dataclass(frozen=True)
class BatchItem:
    """One sample to produce in a local batch: the prompt, its parameters and its sample index."""

    messages: tuple[Message, ...]
    params: GenerationParams
    index: int


@dataclass(frozen=True)
class BatchLine:
    """One request of a provider batch: the line's id (``custom_id``), the prompt, its parameters (the seed already
    offset to the first sample index) and the samples it asks for."""

    custom_id: str
    messages: tuple[Message, ...]
    params: GenerationParams
    n: int = 1


@dataclass(frozen=True)
class BatchStatus:
    """A submitted batch as its provider reports it: its own status word, whether it is over, and the counts it
    gives (None where the API gives none while it runs). ``outcome``: ``ended``, ``expired``, ``cancelled`` or
    ``failed`` once it is over."""

    batch_id: str
    status: str
    done: bool
    total: int | None = None
    completed: int | None = None
    failed: int | None = None
    outcome: str | None = None


#: what one batch line gave: its samples, or the error the provider reported for it
BatchResult = list[RawCompletion] | CallError

#: the key of a submission's tag in a batch's metadata (OpenAI ``metadata``; Gemini's ``display_name`` is the tag)
BATCH_TAG_KEY = "phr_tag"
#: seconds of clock difference allowed between this machine and a provider when a batch's creation time is compared
#: with the time a submission was recorded
BATCH_CLOCK_SKEW_S = 300.0
#: the most batches one lookup reads from a provider's list of batches
BATCH_LIST_MAX = 2000

_CUSTOM_ID = re.compile(r'"custom_id"\s*:\s*"([^"\\]{1,64})"')


def add_result(out: dict[str, BatchResult], cid: str, result: BatchResult, msg: Callable[[str], str]) -> None:
    """Put a result line's ``result`` under its request id ``cid``. A second line for the same id makes the request a
    ``BatchDuplicateId``: which of the answers is its own cannot be told, so none is kept. ``msg`` words a message
    (the provider's ``_msg``: its spec first, secrets masked)."""
    out[cid] = duplicate_id(cid, msg) if cid in out else result


def duplicate_id(cid: str, msg: Callable[[str], str]) -> BatchDuplicateId:
    """The failure of a request that more than one result line names."""
    why = "none is stored (which one is its own answer cannot be told); the rerun submits it again"
    return BatchDuplicateId(msg(f"in batch: more than one result line names request {cid}: {why}"))


def result_lines(lines: Iterable[str]) -> Iterator[tuple[int, str, dict | None]]:
    """The non-blank lines of a batch's result file, numbered from 1, each with its JSON object (None: a line that
    is not one, for ``add_bad_line``)."""
    for number, text in enumerate(lines, 1):
        if not text.strip():
            continue
        try:
            row = json.loads(text)
        except ValueError:
            row = None
        yield number, text, row if isinstance(row, dict) else None


def add_bad_line(out: dict[str, BatchResult], where: str, text: str, msg: Callable[[str], str]) -> str:
    """A result line that does not parse (``where``: e.g. ``output line 3``): the request it names, where its text
    still shows a ``custom_id``, fails as malformed; a line naming none is kept under ``<where: not JSON>`` (an id no
    request has: the batch reports it). Returns the id it is kept under."""
    error = MalformedResponse(msg(f"in batch: {where} is not JSON: {clip(text.strip(), 120)!r}"))
    found = _CUSTOM_ID.search(text)
    cid = found[1] if found else f"<{where}: not JSON>"
    add_result(out, cid, error, msg)
    return cid


class Provider(ABC):
    """An LLM backend. API providers implement ``complete``; in-process ones implement ``complete_batch``."""

    kind: str = ""
    #: True when one call can return several samples (OpenAI ``n``, Gemini ``candidate_count``).
    native_n: bool = False
    #: Largest n for one native-n call.
    max_n: int = 1
    #: True for models that run in this process (transformers, vLLM): batched, no rate limits.
    in_process: bool = False
    batch_size: int = 8
    #: Why this model is loaded ("as the reference scorer", "for generating"): the loading line says it.
    purpose: str | None = None
    #: True when the provider has a batch API (``submit_batch`` / ``poll_batch`` / ``batch_results``; --batch).
    batch_api: bool = False
    #: The most requests and bytes (of the request lines) one batch may hold: the provider's documented limits.
    batch_max_requests: int = 0
    batch_max_bytes: int = 0
    #: set on the provider of an ``LLM(..., batch=True)``: a plan prices its calls at the batch rate
    batched: bool = False
    #: what this provider's batch ids look like (a batch ledger row naming another is damaged, never polled)
    batch_id_pattern: str = r"[A-Za-z0-9_./-]{1,256}"

    def __init__(self, model: str, revision: str | None = None):
        self.model = model
        self.revision = revision

    @property
    def spec(self) -> str:
        return f"{self.kind}:{self.model}"

    @property
    def cache_model_id(self) -> str:
        """The model id that goes into cache keys (endpoint included where it matters)."""
        return self.model

    async def complete(
        self, messages: tuple[Message, ...], params: GenerationParams, n: int, timeout: float
    ) -> list[RawCompletion]:
        raise NotImplementedError

    def complete_batch(
        self, items: list[BatchItem], progress: Callable[[float], None] | None = None
    ) -> list[RawCompletion]:
        """One completion per item, in order. ``progress(done)``, where the provider can, reports the samples
        done so far within this call (a float: a sample half-way through its token budget counts 0.5)."""
        raise NotImplementedError

    async def aclose(self) -> None:  # noqa: B027 - optional hook
        pass

    # ---- batch APIs (phr.llm.batch) ----

    def batch_line(self, line: BatchLine) -> dict:
        """The JSON of one batch line as submitted (its size counts against ``batch_max_bytes``)."""
        raise NotImplementedError

    async def upload_batch(self, lines: list[BatchLine]) -> str | None:
        """Upload ``lines`` where the API takes a batch's requests as a file first (OpenAI): the file's id; None for
        an API that takes them with the batch."""
        return None

    async def create_batch(self, lines: list[BatchLine], tag: str, file_id: str | None) -> str:
        """Create one batch of ``lines`` (or of the uploaded file ``file_id``), tagged ``tag`` where the API keeps a
        client's metadata; return the batch id."""
        raise NotImplementedError

    async def find_batch(
        self, tag: str, *, file_id: str | None, lines: int, since: float, exclude: set[str]
    ) -> str | None:
        """The id of a batch that a submission recorded at ``since`` (``time.time()``) with ``tag`` and ``lines``
        requests (from ``file_id``, where there is one) created, from the provider's list of batches; None when
        there is none. ``exclude``: batches known to belong to other submissions."""
        return None

    async def poll_batch(self, batch_id: str) -> BatchStatus:
        raise NotImplementedError

    async def batch_results(self, batch_id: str, expected: dict[str, int]) -> dict[str, BatchResult]:
        """The answers of a finished batch by ``custom_id`` (``expected``: each line's number of samples); a line
        with no answer (an expired batch) is absent."""
        raise NotImplementedError


@dataclass(frozen=True)
class SDKErrors:
    """An SDK's exception classes for: no answer in time, no connection, a body that does not parse."""

    timeout: tuple[type[BaseException], ...]
    connection: tuple[type[BaseException], ...]
    malformed: tuple[type[BaseException], ...]


def stainless_errors(sdk: Any) -> SDKErrors:
    """The exception classes of the ``openai`` and ``anthropic`` SDKs (generated alike: the same names)."""
    import json

    import pydantic

    return SDKErrors(
        timeout=(sdk.APITimeoutError, TimeoutError),
        connection=(sdk.APIConnectionError,),
        malformed=(sdk.APIResponseValidationError, json.JSONDecodeError, pydantic.ValidationError),
    )


class APIProvider(Provider, ABC):
    """An HTTP API. Its SDK client is bound to an event loop, so one is made per loop and closed with it.

    The client is closed by :meth:`aclose`, or at the latest when its loop shuts down: a keeper task holds it
    and closes it when ``asyncio.run`` cancels the loop's remaining tasks. A client left open would be closed
    by the SDK's ``__del__`` in whatever loop runs at garbage collection, after its own loop is closed, which
    prints ``Task exception was never retrieved ... Event loop is closed``.
    """

    _sdk_client: Any = None  # the SDK's client (each adapter's own type)
    _sdk_loop: asyncio.AbstractEventLoop | None = None
    #: seconds a request may take (set by the subclasses' constructors)
    timeout: float = CALL_TIMEOUT_S
    _sdk_keeper: asyncio.Task | None = None

    def _new_client(self) -> Any:
        raise NotImplementedError

    async def _close_client(self, client: Any) -> None:  # noqa: B027 - optional hook
        pass

    @property
    def _client(self) -> Any:
        import asyncio

        loop = asyncio.get_running_loop()
        if self._sdk_client is None or self._sdk_loop is not loop:
            client = self._new_client()
            self._sdk_client, self._sdk_loop = client, loop
            self._sdk_keeper = loop.create_task(self._keep(client), name=f"phr-close-{self.kind}-client")
        return self._sdk_client

    async def _keep(self, client: Any) -> None:
        """Wait until cancelled (by :meth:`aclose` or the loop's shutdown), then close ``client``."""
        import asyncio

        try:
            await asyncio.Event().wait()
        finally:
            try:
                await self._close_client(client)
            except Exception:  # a client that cannot close cleanly is no reason to fail a finished run
                logging.getLogger("phr.llm").debug("closing the %s client failed", self.kind, exc_info=True)

    async def aclose(self) -> None:
        """Close the SDK client of the running loop (the client calls this at the end of every run)."""
        import asyncio

        keeper, loop = self._sdk_keeper, self._sdk_loop
        self._sdk_client, self._sdk_loop, self._sdk_keeper = None, None, None
        if keeper is not None and loop is asyncio.get_running_loop():
            await asyncio.sleep(0)  # a keeper made just now runs first, so it is inside its try when cancelled
            keeper.cancel()
            await asyncio.wait([keeper])

    @abstractmethod
    async def complete(
        self, messages: tuple[Message, ...], params: GenerationParams, n: int, timeout: float
    ) -> list[RawCompletion]: ...

    # ---- one SDK call and the translation of its exceptions into CallErrors ----
    _api_key: str | None = None
    #: What a response should parse as, for the MalformedResponse message ("a chat completion").
    response_kind = "a response"
    errors: SDKErrors

    async def _call(self, request: Awaitable[T], timeout: float) -> T:
        """Await the SDK's ``request`` within the call's deadline; its exceptions become CallErrors."""
        import asyncio

        try:
            async with asyncio.timeout(timeout + DEADLINE_GRACE_S):
                return await request
        except Exception as e:
            err = self._translate(e, timeout)
            if err is None:
                raise
            raise err from e

    async def _unbounded(self, request: Awaitable[T]) -> T:
        """Await the SDK's ``request`` (a download, a list of pages) with only the SDK's own per-read timeouts; its
        exceptions become CallErrors."""
        try:
            return await request
        except Exception as e:
            err = self._translate(e, self.timeout)
            if err is None:
                raise
            raise err from e

    def _msg(self, text: str) -> str:
        """``text`` after the spec, with this provider's key and every environment secret masked."""
        return safe_message(f"{self.spec}: {text}", self._api_key)

    def _http_error(self, e: Exception) -> tuple[int, str, str | None] | None:
        """``(status, "HTTP <status>: <detail>", Retry-After header)`` of an SDK HTTP error; None for any other."""
        return None

    def _connection_why(self, e: BaseException) -> str:
        """Why the connection failed: the transport exception under the SDK's, else the SDK's message."""
        cause = e.__cause__ or e.__context__
        return f"{type(cause).__name__}: {cause}" if cause else getattr(e, "message", str(e))

    def _connection_failed(self, e: BaseException) -> str:
        return f"connection failed: {self._connection_why(e)}"

    def _malformed(self, e: BaseException) -> MalformedResponse:
        return MalformedResponse(self._msg(f"response does not parse as {self.response_kind} ({type(e).__name__})"))

    def _samples(
        self, out: Sequence[tuple[str, str | None]], prompt_tokens: int, completion_tokens: int, n: int, asked: str
    ) -> list[RawCompletion]:
        """The ``n`` samples of one native-n call (:func:`native_samples`); a CallError saying what was ``asked``
        for when the endpoint returned another number."""
        if len(out) != n:
            raise CallError(self._msg(f"asked for {asked}, got {len(out)}"))
        return native_samples(out, prompt_tokens, completion_tokens)

    def _translate(self, e: Exception, timeout: float) -> CallError | None:
        """The CallError for an SDK exception; None for anything else (a bug: re-raised as is)."""
        http = self._http_error(e)
        if http is not None:
            status, text, retry_after = http
            return from_http_status(status, self._msg(text), parse_retry_after(retry_after))
        if isinstance(e, self.errors.timeout):
            return CallTimeout(self._msg(f"no response within {timeout:g}s"))
        if isinstance(e, self.errors.connection):
            return ConnectionFailed(self._msg(self._connection_failed(e)))
        if isinstance(e, self.errors.malformed):
            return self._malformed(e)
        return None


# ---- scoring: what an in-process model offers besides generation ------------------------------------------


@dataclass(frozen=True)
class TokenEncoding:
    """Token ids of a text (no special tokens) and each token's ``(start, end)`` character span; ``offsets`` is
    None when the tokenizer cannot give spans (a slow tokenizer)."""

    ids: list[int]
    offsets: list[tuple[int, int]] | None


@dataclass(frozen=True)
class ForwardOutput:
    """One forward pass over right-padded token rows. Tensors stay on the model's device (inference tensors).

    ``logits``: ``[rows, width, vocab]`` or None when not asked for. ``hidden``: ``[rows, width, hidden]`` of
    ``layer`` (0 = the embeddings, i = the output of block i, ``num_layers()`` = the final hidden state, which
    the output head reads), or None. Positions at or past ``lengths[r]`` of row r are padding."""

    lengths: tuple[int, ...]
    logits: Any = None
    hidden: Any = None
    layer: int | None = None


@dataclass(frozen=True)
class OutputHead:
    """The linear output head: ``logits = final_hidden @ weight.T (+ bias)``; weight ``[vocab, hidden]``
    (detached: no gradients)."""

    weight: Any
    bias: Any = None


@runtime_checkable
class ScoringProvider(Protocol):
    """An in-process model that can score text: prompt token ids, a forward pass (logits and / or the hidden
    states of a chosen layer) and its identity for cache keys. ``hf:`` and ``local:`` implement it; API models
    and ``vllm:`` do not (``require_scoring`` says so, naming the spec). Methods load the model on first use."""

    @property
    def spec(self) -> str: ...

    @property
    def fingerprint(self) -> str:
        """The weights' identity for cache keys: changes when the model, its files or its revision do."""
        ...

    def prompt_token_ids(self, messages: Any) -> list[int]:
        """The chat-templated prompt with the assistant turn opened (a string is one user message)."""
        ...

    def encode(self, text: str) -> TokenEncoding:
        """``text``'s token ids without special tokens (as an assistant turn's content), with offsets."""
        ...

    def num_layers(self) -> int:
        """The number of blocks: valid ``hidden_layer`` values are ``-(n + 1) .. n``."""
        ...

    def forward(
        self, rows: Sequence[Sequence[int]], *, logits: bool = True, hidden_layer: int | None = None
    ) -> ForwardOutput:
        """One forward pass over the token rows (right padding), no KV cache, no gradients."""
        ...

    def final_norm(self) -> Any:
        """The final normalisation applied before the output head, as a callable on hidden states, or None."""
        ...

    def output_head(self) -> OutputHead | None:
        """The head when ``logits == head(final hidden state)`` exactly (checked once), else None (e.g. a logit
        soft-cap): then only ``forward(logits=True)`` gives the logits."""
        ...


class KeyedAPIProvider(APIProvider):
    """An HTTP API reached with a key (given, else from the first set of the environment variables ``key_env``;
    none set is an error) at an endpoint (given, else ``$url_env``, else the SDK's default)."""

    key_env: tuple[str, ...] = ()
    url_env: str = ""

    def __init__(
        self, model: str, api_key: str | None = None, base_url: str | None = None, timeout: float = CALL_TIMEOUT_S
    ):
        super().__init__(model)
        self._api_key = api_key or require_env(*self.key_env, purpose=f"{self.kind}:{model}")
        self.base_url = base_url or os.environ.get(self.url_env) or None
        self.timeout = timeout


class CannotScoreError(PHRError, TypeError):
    """A model that cannot score (an API model, vLLM) was given where scoring needs one."""


def require_scoring(provider: Any, purpose: str = "scoring") -> ScoringProvider:
    """``provider`` as a ``ScoringProvider`` (loaded ``as`` the ``purpose``, which its loading line names), or a
    CannotScoreError naming its spec."""
    if isinstance(provider, ScoringProvider):
        if getattr(provider, "purpose", "") is None:
            setattr(provider, "purpose", f"as {purpose}")  # an attribute of the local providers only
        return provider
    spec = getattr(provider, "spec", None) or repr(provider)
    raise CannotScoreError(
        f"{purpose} needs an in-process transformers model (hf:<model> or local:smollm2); "
        f"{spec} cannot score (no prompt token ids / forward pass)"
    )


def split_system(messages: tuple[Message, ...]) -> tuple[str | None, list[Message]]:
    """Anthropic and Gemini take the system prompt apart from the turns."""
    system = "\n\n".join(m.content for m in messages if m.role == "system") or None
    return system, [m for m in messages if m.role != "system"]


#: Extra seconds past the per-call timeout before the whole call is abandoned (the SDK's timeouts are per read).
DEADLINE_GRACE_S = 1.0


def split_usage(total: int, n: int) -> list[int]:
    """Divide ``total`` tokens over ``n`` samples evenly, the remainder to the first, so the parts sum to it."""
    base, rem = divmod(max(total, 0), n)
    return [base + (rem if i == 0 else 0) for i in range(n)]


def native_samples(
    out: Sequence[tuple[str, str | None]], prompt_tokens: int, completion_tokens: int
) -> list[RawCompletion]:
    """The samples of one native-n call from its ``(text, finish reason)`` pairs and the call's usage: sample 0
    gets the prompt tokens, the others 0; the completion tokens are divided by :func:`split_usage`."""
    parts = split_usage(completion_tokens, len(out))
    return [RawCompletion(t, f, prompt_tokens if i == 0 else 0, parts[i]) for i, (t, f) in enumerate(out)]


def safe_message(text: str, api_key: str | None, limit: int = 800) -> str:
    """An error message with every secret (environment ones and this provider's key) replaced by ``***``."""

    if api_key and len(api_key) >= 8:
        text = text.replace(api_key, "***")
    return clip(redact(text), limit)
