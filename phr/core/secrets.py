"""Secrets come from the environment and must never reach logs, caches, cards or summaries."""

from __future__ import annotations

import logging
import os
import re

from phr.core.errors import MissingAPIKeyError

SECRET_ENV_PATTERN = re.compile(r"(KEY|TOKEN|SECRET|PASSWORD)", re.I)


def secret_values() -> list[str]:
    """Values of environment variables that look like secrets (at least 8 characters), longest first."""
    vals = {v for k, v in os.environ.items() if SECRET_ENV_PATTERN.search(k) and v and len(v) >= 8}
    return sorted(vals, key=len, reverse=True)


def redact(text: str) -> str:
    """Replace every secret value from the environment in ``text`` by ``***``."""
    for v in secret_values():
        if v in text:
            text = text.replace(v, "***")
    return text


class RedactingFilter(logging.Filter):
    """A logging filter that redacts secret values from every record it sees."""

    def filter(self, record: logging.LogRecord) -> bool:
        msg = record.getMessage()
        red = redact(msg)
        if red != msg:
            record.msg, record.args = red, None
        return True


def require_env(*names: str, purpose: str) -> str:
    """Return the first set variable of ``names``, or raise a clear error naming them."""

    for n in names:
        if os.environ.get(n):
            return os.environ[n]
    alts = " or ".join(names)
    raise MissingAPIKeyError(f"{purpose} needs an API key: set the environment variable {alts}.")
