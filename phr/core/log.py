"""Logging to stderr, with every secret value redacted: rich's handler on a terminal, plain one-line records in a
log (a file, a pipe, CI), where rich would wrap each message at 80 columns and pad it with spaces."""

from __future__ import annotations

import logging
import sys
from typing import TextIO

from phr.core.secrets import RedactingFilter

PLAIN_FORMAT = "[%(asctime)s] %(levelname)s %(name)s: %(message)s"


class StderrHandler(logging.StreamHandler):
    """A stream handler on whatever ``sys.stderr`` is when a record comes (a test runner swaps it), as rich's is."""

    @property
    def stream(self) -> TextIO:
        return sys.stderr

    @stream.setter
    def stream(self, value: TextIO) -> None:
        pass


def setup_logging(level: str = "WARNING") -> None:
    from phr.core.console import console

    con = console(stderr=True)
    if con.is_terminal:
        from rich.logging import RichHandler

        handler: logging.Handler = RichHandler(console=con, show_path=False, rich_tracebacks=False)
    else:
        handler = StderrHandler()
        handler.setFormatter(logging.Formatter(PLAIN_FORMAT, datefmt="%H:%M:%S"))
    handler.addFilter(RedactingFilter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    for noisy in ("httpx", "httpx2", "httpcore", "httpcore2", "urllib3"):
        logging.getLogger(noisy).setLevel(max(logging.WARNING, root.level))
