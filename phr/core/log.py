"""Logging to stderr through rich, with every secret value redacted."""

from __future__ import annotations

import logging

from rich.console import Console
from rich.logging import RichHandler

from phr.core.secrets import RedactingFilter


def setup_logging(level: str = "WARNING") -> None:
    handler = RichHandler(console=Console(stderr=True), show_path=False, rich_tracebacks=False)
    handler.addFilter(RedactingFilter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    for noisy in ("httpx", "httpx2", "httpcore", "httpcore2", "urllib3"):
        logging.getLogger(noisy).setLevel(max(logging.WARNING, root.level))
