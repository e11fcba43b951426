"""Provider-neutral call errors. Adapters translate their SDK's exceptions into these."""

from __future__ import annotations


class CallError(Exception):
    """A failed provider call. ``retryable`` ones are retried by the executor.

    A subclass names its ``reason`` (the failure counts' key) and whether it is ``retryable`` in its class line."""

    reason = "other"
    retryable = False

    def __init_subclass__(cls, reason: str | None = None, retryable: bool | None = None, **kw: object) -> None:
        super().__init_subclass__(**kw)
        if reason is not None:
            cls.reason = reason
        if retryable is not None:
            cls.retryable = retryable

    def __init__(self, message: str, *, retry_after: float | None = None, status: int | None = None):
        super().__init__(message)
        self.retry_after = retry_after
        self.status = status


class RateLimited(CallError, reason="rate_limit", retryable=True): ...


class ServerError(CallError, reason="server_error", retryable=True): ...


class CallTimeout(CallError, reason="timeout", retryable=True): ...


class ConnectionFailed(CallError, reason="connection", retryable=True): ...


class MalformedResponse(CallError, reason="malformed", retryable=True):
    """The endpoint answered with a body that does not parse as its protocol. Retried: often transient."""


class BadRequest(CallError, reason="bad_request"): ...


class AuthFailed(CallError, reason="auth"): ...


class BatchDuplicateId(CallError, reason="batch_duplicate_id"):
    """A provider batch's results name one request (``custom_id``) more than once: which answer is its own cannot be
    told, so none is stored. Not retried within the run (the rerun submits the request again)."""


def parse_retry_after(value: str | None) -> float | None:
    """Seconds from a Retry-After header (delta-seconds or HTTP date); None if absent or unparseable."""
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    from datetime import datetime, timezone
    from email.utils import parsedate_to_datetime

    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, (when - datetime.now(timezone.utc)).total_seconds())


def from_http_status(status: int, message: str, retry_after: float | None = None) -> CallError:
    if status == 429:
        return RateLimited(message, retry_after=retry_after, status=status)
    if status in (401, 403):
        return AuthFailed(message, status=status)
    if status == 408:
        return CallTimeout(message, status=status)
    if status >= 500:
        return ServerError(message, retry_after=retry_after, status=status)
    return BadRequest(message, status=status)
